/*
 * fake-e2b/runtime/private/box_cgroups.h — a box's cgroups (box_cgroups.c), for the namespace
 * backend: on a cgroup v1 (hybrid) machine one directory per box in each v1 controller fake-e2b
 * uses (freezer: pause; pids, memory, cpu: limits from policy.c; cpuacct: the CPU time metrics
 * report); on a cgroup v2-only machine one v2 directory per box with the same controllers and
 * two leaves for its processes. Always under fake-e2b/rt-<pid>-<n>-<ns>/ (locked for the
 * runtime's life) or a live-restore runtime's kept-<dev>-<ino>/, so runtimes never share one.
 */
#ifndef FAKE_E2B_BOX_CGROUPS_H
#define FAKE_E2B_BOX_CGROUPS_H

#include "runtime_int.h"

/* Picks v1 or v2 (statfs of /sys/fs/cgroup), probes the controllers (v2: enables memory, pids
 * and cpu from /sys/fs/cgroup down), sweeps what dead runtimes left, makes and locks this
 * runtime's directories (closed by fk__cg_rt_fini); sets rt->cg_ctl, rt->cg_rel, rt->cg_root,
 * rt->cg2_dir, rt->cg_v2 and rt->freezer. Prints what is missing. */
void fk__cg_rt_init(fk_rt *rt);
void fk__cg_rt_fini(fk_rt *rt);

/* Creates the box's directories (idempotent) and writes its limits. */
int fk__cg_box_setup(fk_box *b, fk_err *err);
/* Where a new task of the box goes (cg_join.h): the v2 cgroup it is made in and the v1 tasks
 * files it joins. When the box's processes use all but 16 slots of their pids limit, the start
 * goes to the reserve (the box's own cgroup) so envd keeps working under a fork bomb; with
 * `reserve`, j also gets the reserve for a start that finds the limit reached (the v2 leaf to be
 * made in, the file a clone at the limit moves its task to). 0 (close with fk__cg_join_close)
 * or FK_EIO, nothing held. */
int fk__cg_box_join_open(fk_box *b, fk_cg_join *j, bool reserve, fk_err *err);
void fk__cg_box_remove(fk_box *b);
/* The box's cgroup v2 directory (O_DIRECTORY, for BPF cgroup programs; on a v2-only machine the
 * box's own cgroup, whose leaves inherit them), or -1 (ENOENT without the unified hierarchy).
 * Caller closes. */
int fk__cg_box_v2_open(fk_box *b);

/* The box's use as its cgroups count it (linux/cgroup.h, fk_lx_cg1_usage / fk_lx_cg2_usage):
 * CPU time (ns), memory without page cache, page cache, the memory limit (UINT64_MAX or a
 * huge number: none) and the processes the OOM killer killed in it. A controller that is
 * missing leaves its fields 0. */
void fk__cg_box_usage(fk_box *b, uint64_t *cpu_ns, uint64_t *mem_used, uint64_t *mem_cache,
                      uint64_t *mem_limit, uint64_t *oom_kills);
/* Where the box's OOM kills are counted: its memory cgroup's directory in `dir` and the file
 * with the `oom_kill` line in *file (v1 memory.oom_control, v2 memory.events), read with
 * fk_lx_cg_read_u64 without any of the box's locks (a box gone meanwhile: the read fails).
 * False without the memory controller. */
bool fk__cg_box_oom_file(const fk_box *b, char *dir, size_t cap, const char **file);

/* Pause (freeze) or resume every process of the box: v1 freezer.state, v2 cgroup.freeze; waits
 * until the kernel says it is done (at most ~10 s). 0, -1 with errno, or 1 when the box has no
 * freezer (the caller stops its processes with SIGSTOP instead). */
int fk__cg_box_freeze(fk_box *b, bool freeze);
/* Is the box's cgroup frozen (or being frozen)? For a box a dead runtime left. */
bool fk__cg_box_frozen(fk_box *b);
/* v2: SIGKILL to every process of the box's cgroup (cgroup.kill), frozen ones included; best
 * effort, nothing on v1. */
void fk__cg_box_kill(fk_box *b);

/* At start: the box cgroups runtimes that died left (fake-e2b/rt-<dead pid>-<n>/<id>, never a
 * live runtime's) whose box id `ours` claims (a box whose files are in this runtime's state
 * dir): every process in them killed (frozen ones thawed after their SIGKILL is queued), waited
 * for (at most 10 s), the directories removed. `ended` (may be NULL) hears of each box that had
 * processes: its id, its runtime's pid, how many were signalled. */
void fk__cg_sweep_orphans(fk_rt *rt, bool (*ours)(const char *id, void *ud),
                          void (*ended)(const char *id, int pid, int n, void *ud), void *ud);

/* A live-restore runtime's own directories (fake-e2b/kept-<state dir>, which dead runtimes on
 * the same state dir left boxes in): the same for the boxes there that `ours` claims (pid 0). */
void fk__cg_sweep_own(fk_rt *rt, bool (*ours)(const char *id, void *ud),
                      void (*ended)(const char *id, int pid, int n, void *ud), void *ud);

#endif /* FAKE_E2B_BOX_CGROUPS_H */
