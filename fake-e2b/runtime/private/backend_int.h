/*
 * fake-e2b/runtime/private/backend_int.h — the namespace backend's insides (backend.h is its face),
 * shared by its files, each using only those below it: backend_ns.c (the runtime's probes,
 * the box verbs, entering a box) and backend_boot.c (a box's boot: its PID 1's arguments made
 * on the host, the clone, its end) over backend_init.c (the PID 1 itself, its named stages;
 * backend_init.h) and backend_files.c (a box's files on the host: root,
 * /etc, layers, id ranges, prepare, commit, copy, restore) and backend_sweep.c (the start-up
 * sweep of what dead servers left) over backend_live.c (live restore: a box's PID 1 recorded,
 * checked, adopted) over backend_disk.c (a box's disk image: make, reserve, check, mount).
 */
#ifndef FAKE_E2B_BACKEND_INT_H
#define FAKE_E2B_BACKEND_INT_H

#include "backend.h"

extern char **environ;

/* Host top-level entries the box gets from the host: a symlink is copied as a symlink
 * (merged /usr), a directory is bind-mounted read-only. */
static const char *const host_dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
#define N_HOST_DIRS (sizeof(host_dirs) / sizeof(host_dirs[0]))

/* ---- backend_disk.c ---- */
/* The box's disk: <state>/<id>.disk made (or, `existing`, the one a closed box left checked
 * and mounted again), b->disk_fd and its paths set. A no-op without per-box disks. */
int fk__ns_box_disk(fk_box *b, bool existing, fk_err *err);
/* Live restore: the disk of an adopted box, whose PID 1's mount namespace still holds it,
 * mounted once more from its loop device (linux/loopfs.h fk_lx_loop_remount). */
int fk__ns_box_disk_live(fk_box *b, fk_err *err);
/* Probes per-box disks (rt->disks, rt->disk_reserve), saying at start what is missing. */
void fk__ns_rt_disks(fk_rt *rt);
/* The state dir's free space (bytes), and FK_ENOSPC for `what` needing `need` of it. */
uint64_t fk__ns_state_free(const fk_rt *rt);
int fk__ns_no_room(const fk_rt *rt, const char *what, uint64_t need, fk_err *err);

/* ---- backend_files.c ---- */
/* The template's directories and the mount points a box's root needs (idempotent). */
void fk__ns_box_prepare_fs(fk_box *b);
/* The /etc templates of the runtime's templates, and whether a user namespace per box works. */
void fk__ns_rt_etc_templates(fk_rt *rt);
void fk__ns_rt_userns(fk_rt *rt);
/* The box's /etc template on the host (overlay lower layer), NULL when it gets a copy. */
const char *fk__ns_box_etc_template(const fk_box *b);

/* The fd number at which a live-restore box's PID 1 keeps its id range claim. */
#define FK_INIT_CLAIM_FD 3

/* ---- backend_live.c: live restore (under backend_files.c, over backend_disk.c) ---- */
/* A box with a user namespace: its root (host uid id_base) may bind ports below 1024 in its
 * network namespace, nobody else there (BPF programs on its cgroup v2, kept until it is
 * destroyed; attached at its boot, and again when a box is adopted). False when the machine
 * cannot: then the namespace lets everyone. */
bool fk__ns_box_bind_root(fk_box *b);
/* After a boot (live-restore runtimes only): <state>/.live/<id> records its PID 1 (pid, start
 * time, the host's boot id) for the next runtime to verify. 0, or FK_EIO. */
int fk__live_record(fk_box *b, fk_err *err);
/* The record removed (the box's PID 1 is being killed: nothing to adopt). */
void fk__live_forget(fk_box *b);
/* The box is destroyed: what live restore kept of it (its shims' socket directory) goes. */
void fk__live_remove(fk_box *b);
/* Waits until an adopted PID 1 (not our child) and every process of its box are gone. */
void fk__live_wait_gone(fk_box *b);
/* Is id's recorded PID 1 still the one that was recorded (pid, start time, boot)? Its pid. */
pid_t fk__live_check(fk_rt *rt, const char *id);
/* Adopts box b's PID 1 when its record checks: its pidfd, user namespace, id range claim,
 * disk, frozen state, cgroups, egress proxy and port binding taken over. 1 adopted; 0 no live
 * PID 1 (the caller restores its files cold); <0 an error (fk_err). */
int fk__live_adopt(fk_box *b, fk_err *err);

/* Does the box get a network namespace of its own (egress none, or behind its proxy)? */
static inline bool box_own_net(const fk_box *b)
{
	return b->net_none || b->rt->egress_ns;
}

#endif /* FAKE_E2B_BACKEND_INT_H */
