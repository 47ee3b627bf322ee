/*
 * fake-e2b/runtime/policy.c — a box's policy as data: denied system calls, kept capabilities,
 * limits. See policy.h.
 */
#define _GNU_SOURCE
#include "policy.h"

#include <errno.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static const fk_lx_seccomp_rule seccomp_deny[] = {
    /* mounts and namespaces: host paths stay read-only, no new views of the system */
    {"mount", EPERM, 0},
    {"umount", EPERM, 0},
    {"umount2", EPERM, 0},
    {"pivot_root", EPERM, 0},
    {"move_mount", EPERM, 0},
    {"open_tree", EPERM, 0},
    {"fsopen", EPERM, 0},
    {"fsconfig", EPERM, 0},
    {"fsmount", EPERM, 0},
    {"fspick", EPERM, 0},
    {"mount_setattr", EPERM, 0},
    /* Linux 6.8 and 6.15: libseccomp 2.5.4 knows not their names, so their x86_64 numbers
     * (the kernel's arch/x86/entry/syscalls/syscall_64.tbl) */
    {"statmount", EPERM, 457},
    {"listmount", EPERM, 458},
    {"open_tree_attr", EPERM, 467},
    {"unshare", EPERM, 0},
    {"setns", EPERM, 0},
    /* the kernel itself */
    {"init_module", EPERM, 0},
    {"finit_module", EPERM, 0},
    {"delete_module", EPERM, 0},
    {"create_module", EPERM, 0},
    {"kexec_load", EPERM, 0},
    {"kexec_file_load", EPERM, 0},
    {"reboot", EPERM, 0},
    {"swapon", EPERM, 0},
    {"swapoff", EPERM, 0},
    {"syslog", EPERM, 0},
    {"acct", EPERM, 0},
    {"quotactl", EPERM, 0},
    {"quotactl_fd", EPERM, 0},
    {"sysfs", EPERM, 0},
    {"_sysctl", EPERM, 0},
    {"ustat", EPERM, 0},
    {"uselib", EPERM, 0},
    {"vhangup", EPERM, 0},
    {"nfsservctl", EPERM, 0},
    {"iopl", EPERM, 0},
    {"ioperm", EPERM, 0},
    {"lookup_dcookie", EPERM, 0},
    {"get_kernel_syms", EPERM, 0},
    {"query_module", EPERM, 0},
    /* clocks are the host's */
    {"settimeofday", EPERM, 0},
    {"stime", EPERM, 0},
    {"clock_settime", EPERM, 0},
    {"clock_settime64", EPERM, 0},
    {"clock_adjtime", EPERM, 0},
    {"clock_adjtime64", EPERM, 0},
    {"adjtimex", EPERM, 0},
    /* big attack surfaces containers do not need */
    {"bpf", EPERM, 0},
    {"perf_event_open", EPERM, 0},
    {"keyctl", EPERM, 0},
    {"add_key", EPERM, 0},
    {"request_key", EPERM, 0},
    {"open_by_handle_at", EPERM, 0},
    {"name_to_handle_at", EPERM, 0},
    {"userfaultfd", EPERM, 0},
    {"io_uring_setup", EPERM, 0},
    {"io_uring_enter", EPERM, 0},
    {"io_uring_register", EPERM, 0},
    {"fanotify_init", EPERM, 0},
    {"kcmp", EPERM, 0},
    {"process_vm_writev", EPERM, 0},
    {"pidfd_getfd", EPERM, 0},
};

/* Terminal requests no box process may make, even on its own PTY: TIOCSTI pushes bytes into a
 * terminal's input as if typed (into whatever shell reads it: CVE-2017-5226, which bubblewrap and
 * flatpak close the same way), TIOCLINUX reaches the virtual console (its selection paste does the
 * same). */
static const unsigned long ioctl_deny[] = {TIOCSTI, TIOCLINUX};

/* The address families a box may open sockets of; socket() of any other fails EAFNOSUPPORT, as
 * on a kernel built without it (what programs probing a family expect). Each one is confined by
 * the box's namespaces:
 * - AF_UNIX: local IPC (paths live in the box's mount namespace, abstract names in its network
 *   namespace); everything from shells to Python uses it.
 * - AF_INET, AF_INET6: the network, in the box's network namespace behind its egress proxy.
 * - AF_NETLINK: the box's own network namespace's routing and addresses (`ip`, getaddrinfo's
 *   AI_ADDRCONFIG); it cannot change them (no CAP_NET_ADMIN over that namespace).
 * Refused: AF_VSOCK (no network namespace: boxes and the host share one port space, and on a VM
 * host it reaches the hypervisor), AF_PACKET (no CAP_NET_RAW anyway), AF_ALG (the kernel's
 * crypto API, a history of kernel bugs), AF_KEY, AF_XDP, AF_TIPC, AF_RDS, AF_BLUETOOTH, AF_CAN
 * and every other: none is needed by a program of a box, several reach past the namespace. Docker's
 * default profile refuses AF_VSOCK alone; this is an allowlist. */
static const int socket_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

const fk_lx_seccomp_policy fk__policy_seccomp = {
    .deny = seccomp_deny,
    .n_deny = sizeof(seccomp_deny) / sizeof(seccomp_deny[0]),
    .ioctl_deny = ioctl_deny,
    .n_ioctl_deny = sizeof(ioctl_deny) / sizeof(ioctl_deny[0]),
    .ioctl_errnum = EPERM,
    .families = socket_families,
    .n_families = sizeof(socket_families) / sizeof(socket_families[0]),
    .family_errnum = EAFNOSUPPORT,
};

static const char *const caps_keep_names[] = {
    "cap_chown",  "cap_dac_override",     "cap_fsetid",     "cap_fowner",
    "cap_setgid", "cap_setuid",           "cap_setpcap",    "cap_setfcap",
    "cap_kill",   "cap_net_bind_service", "cap_sys_chroot", "cap_audit_write",
};

uint64_t fk__policy_caps_keep(int *last_cap_out)
{
	uint64_t keep = 0;
	for (size_t i = 0; i < sizeof(caps_keep_names) / sizeof(caps_keep_names[0]); i++) {
		cap_value_t v;
		if (cap_from_name(caps_keep_names[i], &v) == 0 && v >= 0 && v < 64)
			keep |= (uint64_t)1 << v;
	}
	*last_cap_out = (int)cap_max_bits() - 1;
	return keep;
}

#define MIB (1024ull * 1024ull)

void fk__policy_limits(const fk_box_options *o, fk_limits *out)
{
	out->memory_bytes =
	    (o && o->memory_mb ? (uint64_t)o->memory_mb : FK_BOX_DEFAULT_MEMORY_MB) * MIB;
	out->pids_max = o && o->pids_max ? o->pids_max : 1024;
	out->pids_reserve = 64;
	out->cpu_count = o && o->cpu_count ? o->cpu_count : FK_BOX_DEFAULT_CPUS;
	out->disk_bytes = (o && o->disk_mb ? (uint64_t)o->disk_mb : 1024) * MIB;
	out->shm_bytes = out->memory_bytes / 2;
}
