/*
 * fake-e2b/runtime/linux/caps.c — capability limits of the calling task (prctl + capset; the
 * masks are computed by the caller with libcap, policy.c).
 */
#define _GNU_SOURCE
#include "caps.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int fk_lx_caps_limit(uint64_t keep, int last_cap)
{
	for (int c = 0; c <= last_cap && c < 64; c++)
		if (!(keep & ((uint64_t)1 << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			return -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -1;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	uint32_t lo = (uint32_t)keep, hi = (uint32_t)(keep >> 32);
	d[0].effective &= lo;
	d[0].permitted &= lo;
	d[0].inheritable &= lo;
	d[1].effective &= hi;
	d[1].permitted &= hi;
	d[1].inheritable &= hi;
	return (int)syscall(SYS_capset, &h, d);
}
