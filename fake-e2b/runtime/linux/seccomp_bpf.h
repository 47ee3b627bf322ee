/*
 * fake-e2b/runtime/linux/seccomp_bpf.h — seccomp filters: compile a deny list with libseccomp into
 * a classic BPF program once, install the program in a child (async-signal-safe). Knows no box.
 */
#ifndef FAKE_E2B_LINUX_SECCOMP_BPF_H
#define FAKE_E2B_LINUX_SECCOMP_BPF_H

#include <linux/filter.h>
#include <stddef.h>

typedef struct fk_lx_seccomp_rule {
	const char *name; /* syscall name as libseccomp knows it */
	int errnum;       /* the errno it fails with */
	/* its x86_64 number, for calls newer than the libseccomp this is built with (2.5.4 knows no
	 * name past Linux 6.0's); 0: none, the name must be known */
	int nr_x86_64;
} fk_lx_seccomp_rule;

typedef struct fk_lx_seccomp_policy {
	const fk_lx_seccomp_rule *deny; /* system calls refused whatever their arguments */
	size_t n_deny;
	/* ioctl requests refused (compared on the low 32 bits, all the kernel reads of them) */
	const unsigned long *ioctl_deny;
	size_t n_ioctl_deny;
	int ioctl_errnum;
	/* socket() address families allowed, every other refused with family_errnum (so is any
	 * value of 64 or more, high 32 bits included); n_families 0: all */
	const int *families;
	size_t n_families;
	int family_errnum;
} fk_lx_seccomp_policy;

/* Compiles "allow everything but what `p` refuses" for the native architecture (calls from any
 * other ABI kill the process), and denies clone() with any namespace flag (EPERM) and clone3
 * (ENOSYS, so libc falls back to clone). A name libseccomp does not know is denied by its
 * nr_x86_64 on x86_64; one with no number to fall back on (or on another architecture) fails the
 * compile with ENOENT and *unknown set to it, so a deny list never silently loses a call. Names
 * libseccomp knows but this architecture lacks (stime on x86_64) add nothing.
 * 0 and *out filled (free out->filter with free()), or -1 with errno. */
int fk_lx_seccomp_compile(const fk_lx_seccomp_policy *p, struct sock_fprog *out,
                          const char **unknown);

/* Installs `prog` on the calling thread (needs CAP_SYS_ADMIN or no_new_privs). Only system
 * calls: safe between clone and exec. 0 or -1 with errno. */
int fk_lx_seccomp_install(const struct sock_fprog *prog);

#endif /* FAKE_E2B_LINUX_SECCOMP_BPF_H */
