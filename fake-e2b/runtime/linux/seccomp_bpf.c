/*
 * fake-e2b/runtime/linux/seccomp_bpf.c — seccomp filters through libseccomp (compile once, export
 * the BPF, install with one prctl in each child).
 */
#define _GNU_SOURCE
#include "seccomp_bpf.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const unsigned long ns_flags[] = {CLONE_NEWNS,     CLONE_NEWUTS, CLONE_NEWIPC,
                                         CLONE_NEWUSER,   CLONE_NEWPID, CLONE_NEWNET,
                                         CLONE_NEWCGROUP, CLONE_NEWTIME};

static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	int fd = memfd_create("fk-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = seccomp_export_bpf(ctx, fd);
	struct stat st;
	if (rc < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0) {
		close(fd);
		errno = rc < 0 ? -rc : EINVAL;
		return -1;
	}
	struct sock_filter *f = malloc((size_t)st.st_size);
	if (!f || pread(fd, f, (size_t)st.st_size, 0) != st.st_size) {
		free(f);
		close(fd);
		errno = EIO;
		return -1;
	}
	close(fd);
	out->filter = f;
	out->len = (unsigned short)((size_t)st.st_size / sizeof(struct sock_filter));
	return 0;
}

static bool family_allowed(const fk_lx_seccomp_policy *p, int family)
{
	for (size_t i = 0; i < p->n_families; i++)
		if (p->families[i] == family)
			return true;
	return false;
}

/* The number to deny for `r`: libseccomp's when it knows the name (a negative pseudo-number for a
 * call this architecture lacks, which seccomp_rule_add takes and adds nothing for), else the
 * x86_64 fallback on x86_64, else __NR_SCMP_ERROR. */
static int rule_nr(const fk_lx_seccomp_rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);
	if (nr != __NR_SCMP_ERROR)
		return nr;
#if defined(__x86_64__)
	if (r->nr_x86_64 > 0)
		return r->nr_x86_64;
#endif
	return __NR_SCMP_ERROR;
}

int fk_lx_seccomp_compile(const fk_lx_seccomp_policy *p, struct sock_fprog *out,
                          const char **unknown)
{
	memset(out, 0, sizeof(*out));
	if (unknown)
		*unknown = NULL;
	for (size_t i = 0; i < p->n_deny; i++)
		if (rule_nr(&p->deny[i]) == __NR_SCMP_ERROR) {
			if (unknown)
				*unknown = p->deny[i].name;
			errno = ENOENT;
			return -1;
		}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		errno = ENOMEM;
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < p->n_deny; i++) {
		int nr = rule_nr(&p->deny[i]);
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)p->deny[i].errnum), nr, 0);
	}
	/* the kernel reads an ioctl's request as 32 bits: compare only those, or a request with
	 * high bits set would pass the filter and still reach the driver (flatpak's CVE-2019-10063
	 * for TIOCSTI) */
	for (size_t i = 0; rc == 0 && i < p->n_ioctl_deny; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)p->ioctl_errnum),
		                      SCMP_SYS(ioctl), 1,
		                      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, p->ioctl_deny[i]));
	/* socket(family): each family below 64 that is not listed, and every value from 64 up (the
	 * kernel reads an int; the filter sees 64 bits: a value with any higher bit set, high half
	 * included, is at least 64 and refused, so no listed family can be faked by high bits) */
	for (int f = 0; rc == 0 && p->n_families && f < 64; f++)
		if (!family_allowed(p, f))
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)p->family_errnum),
			                      SCMP_SYS(socket), 1,
			                      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)f, 0));
	if (rc == 0 && p->n_families)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)p->family_errnum),
		                      SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GE, 64, 0));
	for (size_t i = 0; rc == 0 && i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		                      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	int clone3 = seccomp_syscall_resolve_name("clone3");
	if (rc == 0 && clone3 != __NR_SCMP_ERROR)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), clone3, 0);
	if (rc == 0)
		rc = export_bpf(ctx, out) < 0 ? -errno : 0;
	seccomp_release(ctx);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

int fk_lx_seccomp_install(const struct sock_fprog *prog)
{
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0);
}
