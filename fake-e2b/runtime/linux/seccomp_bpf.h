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
} fk_lx_seccomp_rule;

/* Compiles "allow everything but these" for the native architecture (calls from any other ABI
 * kill the process), and denies clone() with any namespace flag (EPERM) and clone3 (ENOSYS, so
 * libc falls back to clone). Names this kernel/libseccomp does not know are skipped. 0 and
 * *out filled (free out->filter with free()), or -1 with errno. */
int fk_lx_seccomp_compile(const fk_lx_seccomp_rule *deny, size_t n, struct sock_fprog *out);

/* Installs `prog` on the calling thread (needs CAP_SYS_ADMIN or no_new_privs). Only system
 * calls: safe between clone and exec. 0 or -1 with errno. */
int fk_lx_seccomp_install(const struct sock_fprog *prog);

#endif /* FAKE_E2B_LINUX_SECCOMP_BPF_H */
