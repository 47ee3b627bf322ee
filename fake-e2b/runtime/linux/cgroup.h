/*
 * fake-e2b/runtime/linux/cgroup.h — cgroup v1 primitives (the machines fake-e2b runs on mount
 * one hierarchy per controller under /sys/fs/cgroup/<controller>). Knows no box: paths in,
 * -1 and errno out.
 */
#ifndef FAKE_E2B_LINUX_CGROUP_H
#define FAKE_E2B_LINUX_CGROUP_H

/* Writes `s` to the file at `path` (one write). 0, or -1 with errno. */
int fk_lx_write_str(const char *path, const char *s);

/* Removes the empty cgroups that a dead process left under `top`: a directory named
 * rt-<pid>-<n> whose pid is gone, with its children. Best effort. */
void fk_lx_cg_sweep(const char *top);

/* Writes FROZEN or THAWED to <dir>/freezer.state and waits until the kernel reports that state
 * (FREEZING is transient). 0, or -1 with errno (ETIMEDOUT after ~10 s). */
int fk_lx_cg_freezer_set(const char *dir, const char *state);

#endif /* FAKE_E2B_LINUX_CGROUP_H */
