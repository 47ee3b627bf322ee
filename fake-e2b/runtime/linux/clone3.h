/*
 * fake-e2b/runtime/linux/clone3.h — clone3(2) for tasks made straight into a cgroup v2
 * (CLONE_INTO_CGROUP, Linux 5.7), on a stack of the caller's or fork-like. glibc has no wrapper:
 * the one on a stack is a few instructions of assembly (x86-64, AArch64; elsewhere it answers
 * ENOSYS and the caller falls back to clone(2) and a cgroup.procs write).
 *
 * Why: a task moved into a cgroup by writing cgroup.procs (v1 or v2) makes the kernel take its
 * global threadgroup lock for writing, which waits out an RCU grace period (several ms) unless
 * another writer took it moments before; a task made inside the cgroup takes it for reading only
 * (docs/internals/exec-cost.md, "Joining the box's cgroups"). A v1 tasks file written "0" by a
 * single-threaded task moves that one thread without the lock.
 */
#ifndef FAKE_E2B_LINUX_CLONE3_H
#define FAKE_E2B_LINUX_CLONE3_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* fn(arg) in a new task on the stack [stack, stack + size) (its top 16-byte aligned), made with
 * clone `flags` (CLONE_VM, CLONE_VFORK, CLONE_NEW*, ...; the exit signal is SIGCHLD) and, when
 * `cgroup_fd` >= 0 (a cgroup v2 directory, O_PATH will do), born in that cgroup. The task exits
 * with fn's return value. Its pid, or -1 with errno: ENOSYS without clone3 (or on another
 * architecture), EAGAIN when the cgroup is at its pids.max, ... (as clone3). Async-signal-safe. */
pid_t fk_lx_clone3_run(uint64_t flags, int cgroup_fd, char *stack, size_t size, int (*fn)(void *),
                       void *arg);

/* Fork-like: the new task (exit signal SIGCHLD, `flags` as above, never CLONE_VM) continues from
 * here on a copy of the caller's memory, getting 0; the caller gets its pid, or -1 with errno. No
 * atfork handler runs: the child makes system calls only. */
pid_t fk_lx_clone3_fork(uint64_t flags, int cgroup_fd);

#endif /* FAKE_E2B_LINUX_CLONE3_H */
