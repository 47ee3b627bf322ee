/*
 * fake-e2b/runtime/linux/cgroup.h — cgroup primitives, v1 (one hierarchy per controller under
 * /sys/fs/cgroup/<controller>) and v2 (the unified hierarchy: /sys/fs/cgroup itself on a v2-only
 * machine). Knows no box: directories in, -1 and errno out. Every function works on any
 * directory holding the files it names (the unit tests lay such trees out).
 */
#ifndef FAKE_E2B_LINUX_CGROUP_H
#define FAKE_E2B_LINUX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes `s` to the file at `path` (one write). 0, or -1 with errno. */
int fk_lx_write_str(const char *path, const char *s);

/* This process's PID namespace: the inode of /proc/self/ns/pid, 0 when unknown. */
uint64_t fk_lx_pidns(void);

/* A runtime's directory `dir` (<hierarchy>/fake-e2b/rt-<pid>-<n>-<pid namespace, hex>), made
 * when absent, claimed for the caller's life: an exclusive flock on an fd of it (O_CLOEXEC),
 * which tells a sweeper in any PID namespace that it is live. The fd, or -1 with errno
 * (EWOULDBLOCK: another process holds its lock still). Made again when a sweeper removed it
 * between its mkdir and the lock. */
int fk_lx_cg_rt_claim(const char *dir);

/* Is `top`/`name` a dead runtime's directory? Only one named rt-<pid>-... whose lock is free
 * and, when it names this PID namespace (or none: an older fake-e2b's), whose pid is gone:
 * then an fd of it holding its lock (the caller's until it has removed it), *pid its pid.
 * -1 for anything else, which stays untouched. */
int fk_lx_cg_rt_dead(const char *top, const char *name, int *pid);

/* Removes the empty cgroups that dead runtimes left under `top` (fk_lx_cg_rt_dead), with their
 * children. Best effort. */
void fk_lx_cg_sweep(const char *top);

/* Writes FROZEN or THAWED to <dir>/freezer.state and waits until the kernel reports that state
 * (FREEZING is transient). 0, or -1 with errno (ETIMEDOUT after ~10 s). */
int fk_lx_cg_freezer_set(const char *dir, const char *state);

/* Writes the decimal `v` to <dir>/<file>. 0, or -1 with errno. */
int fk_lx_cg_write_u64(const char *dir, const char *file, uint64_t v);

/* Reads <dir>/<file> (at most 64 KiB): its first number, or with `key` the number on its line
 * "<key> N" (memory.stat, cpu.stat). "max" (v2's "no limit") reads as UINT64_MAX. 0, or -1
 * with errno (ENODATA: no such line, or no number there). */
int fk_lx_cg_read_u64(const char *dir, const char *file, const char *key, uint64_t *out);

/* True if <dir>/<file> (a space-separated list: cgroup.controllers, cgroup.subtree_control)
 * holds the word `name`. */
bool fk_lx_cg_has_word(const char *dir, const char *file, const char *name);

/* True if <dir>'s pids.current is within `headroom` of its pids.max ("max": never). False when
 * either is unreadable. */
bool fk_lx_cg_pids_nearly_full(const char *dir, unsigned headroom);

/* cgroup v2: enables, for <dir>'s children, those of the controllers `names[0..n)` that <dir>
 * has (cgroup.controllers) and has not enabled yet (cgroup.subtree_control). Returns a mask:
 * bit i set when names[i] is enabled for the children (already, or now). One write of them all
 * ("+a +b"), then one per controller if that write is refused (one the kernel will not enable,
 * such as cpu while a real-time task runs outside the root, leaves the others enabled). */
unsigned fk_lx_cg2_enable(const char *dir, const char *const *names, size_t n);

/* cgroup v2: writes the limits of <dir>, each only when non-zero: memory.max (and
 * memory.swap.max 0 when that file exists: no swap), cpu.max "<cpu_count * 100000> 100000"
 * (cpu_count CPUs' worth in each 100 ms), pids.max. 0, or -1 with errno and *what (may be NULL)
 * naming the controller that refused. */
int fk_lx_cg2_set_limits(const char *dir, uint64_t memory_bytes, unsigned cpu_count,
                         uint64_t pids_max, const char **what);

/* cgroup v2: writes 1 (freeze) or 0 (thaw) to <dir>/cgroup.freeze and waits until
 * <dir>/cgroup.events says "frozen 1" (or "frozen 0"), at most `timeout_ms`. 0, or -1 with
 * errno (ETIMEDOUT). */
int fk_lx_cg2_freeze(const char *dir, bool freeze, int timeout_ms);

/* cgroup v2 (Linux >= 5.14): SIGKILL to every process in <dir> and below (cgroup.kill),
 * frozen ones included. 0, or -1 with errno (ENOENT on older kernels). */
int fk_lx_cg2_kill(const char *dir);

/* A cgroup's use as the kernel counts it. */
typedef struct fk_lx_cg_usage {
	uint64_t cpu_ns;    /* CPU time */
	uint64_t mem_used;  /* memory charged, less the page cache (tmpfs included in the cache) */
	uint64_t mem_cache; /* page cache */
	uint64_t mem_limit; /* the memory limit, UINT64_MAX for none, 0 unknown */
	uint64_t oom_kills; /* processes the OOM killer killed in it (its `oom_kill` count) */
} fk_lx_cg_usage;

/* v1: cpuacct.usage in `cpuacct_dir`; memory.usage_in_bytes less memory.stat's total_cache,
 * that cache, memory.limit_in_bytes and memory.oom_control's oom_kill in `memory_dir`. A NULL dir,
 * or a file that cannot be read, leaves its fields 0. */
void fk_lx_cg1_usage(const char *cpuacct_dir, const char *memory_dir, fk_lx_cg_usage *u);
/* v2, all in `dir`: cpu.stat's usage_usec; memory.current less memory.stat's file (page cache,
 * tmpfs included), that file count, memory.max and memory.events's oom_kill. What cannot be read
 * stays 0. */
void fk_lx_cg2_usage(const char *dir, fk_lx_cg_usage *u);

#endif /* FAKE_E2B_LINUX_CGROUP_H */
