/*
 * fake-e2b/runtime/linux/userns.c — user namespace primitives (userns.h): namespaces made by a
 * short-lived child whose maps we write, idmapped mounts (open_tree + mount_setattr, Linux 5.12),
 * range claims by flock.
 */
#define _GNU_SOURCE
#include "userns.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOLDER_STACK (64 * 1024)

/* Writes `n` "inside outside 1" lines (one id each; ids[] ascending, no repeats) or, n 0, one
 * "0 base count" line. */
static int write_map(pid_t pid, const char *file, uid_t base, uint32_t count, const uint32_t *ids,
                     size_t n_ids)
{
	char path[64], text[FK_LX_USERNS_MAX_IDS * 24 + 32];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int n = 0;
	if (n_ids == 0)
		n = snprintf(text, sizeof(text), "0 %u %u\n", (unsigned)base, (unsigned)count);
	for (size_t i = 0; i < n_ids; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "%u %u 1\n", (unsigned)ids[i],
		              (unsigned)(base + ids[i]));
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, text, (size_t)n);
	int e = errno;
	close(fd);
	errno = e;
	return w == n ? 0 : -1;
}

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define HOLDER_SHARES_VM 0
#else
#define HOLDER_SHARES_VM 1
#endif

#if HOLDER_SHARES_VM
/* Runs on its own stack in our memory: only a raw system call until it is killed. */
static int holder_main(void *arg)
{
	(void)arg;
	for (;;)
		syscall(SYS_pause);
	return 0;
}
#endif

static int userns_make(uid_t base, uint32_t count, const uint32_t *uids, size_t n_uids,
                       const uint32_t *gids, size_t n_gids)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
#if HOLDER_SHARES_VM
	/* the holder shares our memory (no page tables copied) and only sleeps */
	char *stack = mmap(NULL, HOLDER_STACK, PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t pid = -1;
	if (stack != MAP_FAILED)
		pid = clone(holder_main, stack + HOLDER_STACK, CLONE_VM | CLONE_NEWUSER | SIGCHLD,
		            NULL);
#else
	/* sanitizers cannot follow a task on a stack they do not know: a forked holder */
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0);
	if (pid == 0)
		for (;;)
			syscall(SYS_pause);
#endif
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	int fd = -1;
	if (pid > 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)pid);
		if (write_map(pid, "uid_map", base, count, uids, n_uids) == 0 &&
		    write_map(pid, "gid_map", base, count, gids, n_gids) == 0)
			fd = open(p, O_RDONLY | O_CLOEXEC);
		e = errno;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
#if HOLDER_SHARES_VM
	if (stack != MAP_FAILED)
		munmap(stack, HOLDER_STACK);
#endif
	errno = e;
	return fd;
}

int fk_lx_userns_new(uid_t base, uint32_t count)
{
	return userns_make(base, count, NULL, 0, NULL, 0);
}

int fk_lx_userns_new_ids(uid_t base, const uint32_t *uids, size_t n_uids, const uint32_t *gids,
                         size_t n_gids)
{
	if (n_uids == 0 || n_gids == 0 || n_uids > FK_LX_USERNS_MAX_IDS ||
	    n_gids > FK_LX_USERNS_MAX_IDS) {
		errno = EINVAL;
		return -1;
	}
	return userns_make(base, 0, uids, n_uids, gids, n_gids);
}

int fk_lx_idmapped_tree(const char *path, int userns_fd, bool recursive, bool rdonly)
{
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path, flags);
	if (fd < 0)
		return -1;
	struct mount_attr attr = {
	    .attr_set = MOUNT_ATTR_IDMAP | (rdonly ? MOUNT_ATTR_RDONLY : 0),
	    .userns_fd = (uint64_t)userns_fd,
	};
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
	            &attr, sizeof(attr)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int fk_lx_mount_move(int tree_fd, const char *dst)
{
	return (int)syscall(SYS_move_mount, tree_fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH);
}

int fk_lx_userns_enter_as_root(int userns_fd)
{
	if (setns(userns_fd, CLONE_NEWUSER) < 0)
		return -1;
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, 0, 0, 0) < 0 ||
	    syscall(SYS_setresuid, 0, 0, 0) < 0)
		return -1;
	return 0;
}

int fk_lx_idrange_claim(const char *dir, uint32_t count, uint32_t *cursor, uint32_t *k_out)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	int e = EAGAIN;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t k = (*cursor + i) % count;
		char name[16];
		snprintf(name, sizeof(name), "%u", (unsigned)k);
		int fd = openat(dfd, name, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			e = errno;
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(dfd);
			*cursor = (k + 1) % count;
			*k_out = k;
			return fd;
		}
		close(fd);
	}
	close(dfd);
	errno = e;
	return -1;
}
