/*
 * fake-e2b/runtime/policy.h — what a box may do, as data (policy.c): the system calls denied to
 * its processes, the capabilities root inside keeps, and its limits (memory, processes, CPU)
 * from the box options. No system calls here: backends turn this into filters and cgroups.
 */
#ifndef FAKE_E2B_POLICY_H
#define FAKE_E2B_POLICY_H

#include "linux/seccomp_bpf.h"
#include "runtime.h"

#include <stdint.h>

/* The seccomp policy (modelled on the default profile of Docker/containerd/podman, as a deny
 * list: mount and namespace calls, kernel modules, keyrings, BPF, perf, kexec, reboot, clocks,
 * swap, syslog, handle-based opens, io_uring, userfaultfd; and the terminal requests TIOCSTI and
 * TIOCLINUX). */
extern const fk_lx_seccomp_policy fk__policy_seccomp;

/* Capabilities kept by root inside a box (bit n = capability n): the default set of container
 * runtimes minus CAP_NET_RAW and CAP_MKNOD. *last_cap_out: the highest capability this kernel
 * knows. */
uint64_t fk__policy_caps_keep(int *last_cap_out);

typedef struct fk_limits {
	uint64_t memory_bytes; /* memory cgroup limit (RSS + page cache), 0 = none */
	unsigned pids_max;     /* processes and threads of the box's own processes */
	unsigned pids_reserve; /* extra slots only process starts through envd can use */
	unsigned cpu_count;    /* CFS quota in whole CPUs, 0 = none */
	uint64_t disk_bytes;   /* size of the box's file system image */
	uint64_t shm_bytes;    /* size of its /dev/shm (tmpfs, host RAM): half its memory, as a
	                          VM's kernel sizes it */
} fk_limits;

void fk__policy_limits(const fk_box_options *o, fk_limits *out);

#endif /* FAKE_E2B_POLICY_H */
