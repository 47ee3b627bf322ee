/*
 * fake-e2b/runtime/cg_join.c — a box's new task made in its cgroups (private/cg_join.h).
 */
#define _GNU_SOURCE
#include "cg_join.h"
#include "linux/clone3.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/* TSan cannot follow a task made by a raw clone3 (its fork() and clone() interceptors set the
 * child up; a box's PID 1 made without them died at once): there every task is made as before
 * and moves itself */
#if defined(__SANITIZE_THREAD__)
#define RAW_CLONE_OK 0
#else
#define RAW_CLONE_OK 1
#endif

void fk__cg_join_init(fk_cg_join *j, const fk_rt *rt)
{
	*j = (fk_cg_join){.v2 = -1, .v2_reserve = -1, .reserve = -1};
	j->no_clone3 = rt->no_clone3;
	j->moves = rt->cg_moves;
}

void fk__cg_join_close(fk_cg_join *j)
{
	for (int i = 0; i < j->n_tasks; i++)
		if (j->tasks[i] >= 0)
			close(j->tasks[i]);
	j->n_tasks = 0;
	int *fds[] = {&j->v2, &j->v2_reserve, &j->reserve};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static pid_t clone3_in(uint64_t flags, int cg, char *stack, size_t size, int (*fn)(void *),
                       void *arg)
{
	return stack ? fk_lx_clone3_run(flags, cg, stack, size, fn, arg)
	             : fk_lx_clone3_fork(flags, cg);
}

pid_t fk__cg_spawn(fk_cg_join *j, uint64_t flags, char *stack, size_t size, int (*fn)(void *),
                   void *arg)
{
	if (j && j->v2 >= 0 && !j->no_clone3 && RAW_CLONE_OK) {
		/* set before: a task sharing our memory reads it */
		j->in_v2 = true;
		pid_t pid = clone3_in(flags, j->v2, stack, size, fn, arg);
		/* at procs' pids.max a birth there fails where a move would not: the reserve */
		if (pid < 0 && errno == EAGAIN && j->v2_reserve >= 0)
			pid = clone3_in(flags, j->v2_reserve, stack, size, fn, arg);
		if (pid >= 0)
			return pid;
		/* refused (or both full): made as before, it moves itself, which at the cap
		 * reaches the reserve as a move always did */
	}
	if (j)
		j->in_v2 = false;
	if (stack)
		return clone(fn, stack + size, (int)flags | SIGCHLD, arg);
	return fork();
}

/* "0" (the writer itself) to `fd`; for a cgroup.procs, counted. */
static int write_self(int fd, uint64_t *moves)
{
	if (write(fd, "0", 1) != 1)
		return -1;
	if (moves)
		__atomic_add_fetch(moves, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int fk__cg_join_self(const fk_cg_join *j)
{
	if (j->v2 >= 0 && !j->in_v2) {
		int fd = openat(j->v2, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		int rc = fd < 0 ? -1 : write_self(fd, j->moves);
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (rc < 0)
			return errno = e, -1;
	}
	for (int i = 0; i < j->n_tasks; i++)
		if (write_self(j->tasks[i], NULL) < 0)
			return -1;
	return 0;
}

int fk__cg_join_reserve(const fk_cg_join *j)
{
	if (j->reserve < 0)
		return errno = EAGAIN, -1;
	return write_self(j->reserve, j->v2_reserve >= 0 ? j->moves : NULL);
}
