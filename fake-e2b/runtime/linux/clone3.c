/*
 * fake-e2b/runtime/linux/clone3.c — clone3(2) with CLONE_INTO_CGROUP (see clone3.h).
 */
#define _GNU_SOURCE
#include "clone3.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* struct clone_args as of Linux 5.7 (CLONE_ARGS_SIZE_VER2), the first with `cgroup` */
struct fk_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

static void args_fill(struct fk_clone_args *a, uint64_t flags, int cgroup_fd)
{
	memset(a, 0, sizeof(*a));
	a->flags = flags;
	a->exit_signal = SIGCHLD;
	if (cgroup_fd >= 0) {
		a->flags |= CLONE_INTO_CGROUP;
		a->cgroup = (uint64_t)cgroup_fd;
	}
}

#if defined(__x86_64__) || defined(__aarch64__)
/* raw clone3(args, size); the child, on its own stack, calls fn(arg) and exits with its value:
 * it never returns through a frame of the caller's (whose memory it may share). The parent gets
 * the syscall's return (a pid, or -errno). */
long fk_lx__clone3_raw(struct fk_clone_args *args, size_t size, int (*fn)(void *), void *arg)
    __attribute__((visibility("hidden")));
#if defined(__x86_64__)
/* syscall keeps every register but rax, rcx and r11; the child starts with the caller's and its
 * stack pointer at the stack's top */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl fk_lx__clone3_raw\n"
        ".hidden fk_lx__clone3_raw\n"
        ".type fk_lx__clone3_raw,@function\n"
        "fk_lx__clone3_raw:\n"
        "	movq %rdx, %r8\n"
        "	movq %rcx, %r9\n"
        "	movl $435, %eax\n" /* __NR_clone3 */
        "	syscall\n"
        "	testq %rax, %rax\n"
        "	jz 1f\n"
        "	ret\n"
        "1:	xorl %ebp, %ebp\n"
        "	movq %r9, %rdi\n"
        "	callq *%r8\n"
        "	movl %eax, %edi\n"
        "	movl $60, %eax\n" /* __NR_exit */
        "	syscall\n"
        "	hlt\n"
        ".size fk_lx__clone3_raw, .-fk_lx__clone3_raw\n");
#else
/* svc keeps every register but x0 */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl fk_lx__clone3_raw\n"
        ".hidden fk_lx__clone3_raw\n"
        ".type fk_lx__clone3_raw,%function\n"
        "fk_lx__clone3_raw:\n"
        "	mov x9, x2\n"
        "	mov x10, x3\n"
        "	mov x8, #435\n"
        "	svc #0\n"
        "	cbz x0, 1f\n"
        "	ret\n"
        "1:	mov x29, xzr\n"
        "	mov x30, xzr\n"
        "	mov x0, x10\n"
        "	blr x9\n"
        "	mov x8, #93\n"
        "	svc #0\n"
        "	brk #0\n"
        ".size fk_lx__clone3_raw, .-fk_lx__clone3_raw\n");
#endif

pid_t fk_lx_clone3_run(uint64_t flags, int cgroup_fd, char *stack, size_t size, int (*fn)(void *),
                       void *arg)
{
	struct fk_clone_args a;
	args_fill(&a, flags, cgroup_fd);
	a.stack = (uint64_t)(uintptr_t)stack;
	a.stack_size = size;
	long r = fk_lx__clone3_raw(&a, sizeof(a), fn, arg);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (pid_t)r;
}
#else
pid_t fk_lx_clone3_run(uint64_t flags, int cgroup_fd, char *stack, size_t size, int (*fn)(void *),
                       void *arg)
{
	(void)flags, (void)cgroup_fd, (void)stack, (void)size, (void)fn, (void)arg;
	errno = ENOSYS;
	return -1;
}
#endif

pid_t fk_lx_clone3_fork(uint64_t flags, int cgroup_fd)
{
#ifdef SYS_clone3
	struct fk_clone_args a;
	args_fill(&a, flags, cgroup_fd);
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
#else
	(void)flags, (void)cgroup_fd;
	errno = ENOSYS;
	return -1;
#endif
}
