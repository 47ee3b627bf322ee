/*
 * fake-e2b/runtime/private/cg_join.h — a box's new task made in its cgroups (cg_join.c): born in
 * the box's cgroup v2 by clone3(CLONE_INTO_CGROUP), then joining the v1 hierarchies itself by
 * writing "0" to their tasks files. Both skip the kernel's global threadgroup lock, which a write
 * to any cgroup.procs takes for writing and which then waits out an RCU grace period, several ms
 * after an idle moment (docs/internals/exec-cost.md, "Joining the box's cgroups"). Where the
 * kernel refuses clone3 (older than 5.7, a container's seccomp: ENOSYS, EPERM, E2BIG, EINVAL...)
 * the task is made as before and moves itself with a cgroup.procs write: correct everywhere,
 * fast where the kernel allows.
 */
#ifndef FAKE_E2B_CG_JOIN_H
#define FAKE_E2B_CG_JOIN_H

#include "runtime_int.h"

/* A new task for `j` (NULL, or no v2 cgroup: a plain clone): fn(arg) on the stack [stack,
 * stack + size) with clone `flags` (exit signal SIGCHLD), or, stack NULL and flags 0, fork-like
 * (0 in the child, which makes system calls only). Made in j->v2 where clone3 allows it, in
 * j->v2_reserve when j->v2 is at its pids.max (EAGAIN); j->in_v2 says whether it was. Its pid,
 * or -1 with errno. */
pid_t fk__cg_spawn(fk_cg_join *j, uint64_t flags, char *stack, size_t size, int (*fn)(void *),
                   void *arg);

/* In the new task, first thing: into the v2 cgroup with a cgroup.procs write when it was not
 * made there (counted in j->moves), then into each v1 one (tasks, "0": this thread, which must
 * be its process's only one). 0, or -1 with errno. Async-signal-safe. */
int fk__cg_join_self(const fk_cg_join *j);

/* In the task, once one of its clones hit the pids limit: itself into the box's reserve
 * (j->reserve), counted when that is a cgroup.procs (v2). 0, or -1 with errno. */
int fk__cg_join_reserve(const fk_cg_join *j);

/* Closes what j holds; every fd -1 after. */
void fk__cg_join_close(fk_cg_join *j);
/* An empty join (every fd -1), counting in rt's moves. */
void fk__cg_join_init(fk_cg_join *j, const fk_rt *rt);

#endif /* FAKE_E2B_CG_JOIN_H */
