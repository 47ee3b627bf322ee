/*
 * fake-e2b/runtime/backend_ns.c — the namespace backend (backend.h): a box's files on the host,
 * its PID 1 in hand-built namespaces (mount, PID, cgroup, network for egress none), the
 * system call filter and capability limits of everything inside (policy.c). This file holds
 * the runtime's probes, the box verbs and entering a box; a box's boot is backend_boot.c, its
 * PID 1 backend_init.c, its files on the host backend_files.c, its disk backend_disk.c
 * (backend_int.h).
 *
 * A box's files live in <state>/<id>/root, a plain directory on the host (so they survive
 * pause, resume and reboot): a private /etc (an overlay whose lower layer is the template's
 * /etc, <state>/.etc-<template>, made by etc_layer.c and mounted by the init; or a copy), the
 * template's directories (seed README "Template") and empty mount points. Its PID 1 is cloned
 * into new PID + mount + network namespaces (egress none: only `lo`; allowlist and open: `lo`
 * with every IPv4 address local, whose connections the egress proxy takes, egress.h); in its mount
 * namespace it binds the host's /usr (and /bin, /lib... when they are directories) read-only into
 * the root, builds /dev and /proc and pivots into the root. Every mount therefore lives only in the
 * box's mount namespace and disappears with it: nothing has to be unmounted on the host.
 *
 * User namespace (when the kernel has idmapped mounts): each box claims a block of 65,536 host
 * ids (linux/userns.h) and gets a user namespace mapping its ids 0..65535 onto it, made by the
 * server. Its files on the host are owned by the block's ids; the host trees it sees (/usr, the
 * /etc template) are idmapped read-only copies made by the server and attached by the init, so
 * host root's files look root's inside. The init does every mount and configures the network as
 * host root, then enters the box's user namespace as its root and unshares IPC and UTS there: the
 * mount, PID, cgroup and network namespaces stay owned by the host's user namespace, so nothing
 * inside can ever mount or reconfigure the network, whatever its capabilities (so the box's root
 * binds ports below 1024 through a BPF cgroup bind program, box_bind_root, and its other users
 * cannot, as on E2B).
 *
 * The server is multithreaded, so the cloned child only makes system calls on data prepared
 * before the clone (async-signal-safe), then loops reaping orphans.
 */
#define _GNU_SOURCE
#include "backend_int.h"
#include "box_cgroups.h"
#include "cg_join.h"
#include "egress_int.h"
#include "etc_layer.h"
#include "linux/caps.h"
#include "linux/cgroup.h"
#include "linux/loopfs.h"
#include "linux/net.h"
#include "linux/userns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int fk__backend_box_egress(fk_box *b, bool lets_out, fk_err *err)
{
	if (!b->net_none || !lets_out || !b->rt->isolated) {
		fk__egress_box_rules(b);
		b->net_none = b->net_none && !lets_out && b->rt->isolated;
		return 0;
	}
	if (!b->rt->egress_ns)
		return fk__fail(err, FK_ESTATE, EOPNOTSUPP, "%s", FK_EGRESS_REFUSED_MSG);
	if (b->init_pid <= 0) { /* its next boot sets it up */
		b->net_none = false;
		return 0;
	}
	/* what init_main does for an allowlist box: every IPv4 address local, the box's own one on
	 * `lo`; then the proxy takes the namespace's connections */
	_Alignas(8) char anyip[64], own[64];
	size_t anyip_len = fk_lx_route_local_all_msg(anyip, sizeof(anyip));
	size_t own_len = fk_lx_addr_msg(own, sizeof(own), htonl(FK_BOX_ADDR));
	int ns = fk__box_init_open(b, "ns/net", O_RDONLY);
	int rc = ns < 0 || fk_lx_netlink_send_in_netns(ns, anyip, anyip_len) < 0 ||
	                 fk_lx_netlink_send_in_netns(ns, own, own_len) < 0
	             ? -1
	             : 0;
	int e = errno;
	if (ns >= 0)
		close(ns);
	if (rc < 0)
		return fk__fail(err, FK_EIO, e, "sandbox network: %s", fk_strerror(e));
	b->net_none = false;
	rc = fk__egress_box_start(b, err);
	if (rc < 0)
		b->net_none = true; /* its next boot makes it egress none again */
	return rc;
}

/* ------------------------------------------------------------ the runtime */

static bool probe_isolation(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "fake-e2b: not running as root: sandboxes are NOT isolated (no "
		                "namespaces, no users, no freezer); processes run in a per-sandbox "
		                "directory on the host\n");
		return false;
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWNS | CLONE_NEWPID) == 0 ? 0 : 1);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fake-e2b: cannot create mount/PID namespaces: sandboxes are NOT "
		                "isolated\n");
		return false;
	}
	return true;
}

int fk__backend_rt_init(fk_rt *rt, const fk_rt_options *opts, fk_err *err)
{
	rt->isolated = !(opts && opts->no_isolation) && probe_isolation();
	if (rt->isolated) {
		fk__cg_rt_init(rt);
		rt->caps_keep = fk__policy_caps_keep(&rt->last_cap);
		const char *unknown = NULL;
		if (fk_lx_seccomp_compile(&fk__policy_seccomp, &rt->seccomp, &unknown) < 0) {
			int e = errno;
			if (unknown)
				return fk__fail(
				    err, FK_EIO, e,
				    "seccomp filter: libseccomp does not know the system "
				    "call '%s' of the deny list (runtime/policy.c)",
				    unknown);
			return fk__fail(err, FK_EIO, e, "seccomp filter: %s", fk_strerror(e));
		}
	}
#if defined(__SANITIZE_THREAD__)
	prctl(PR_SET_CHILD_SUBREAPER, 1); /* proc.c forks instead of clone(CLONE_PARENT) */
#endif
	if (rt->isolated && pipe2(rt->life_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		return fk__fail(err, FK_EIO, e, "pipe: %s", fk_strerror(e));
	}
	rt->unsafe_shared_network = opts && opts->unsafe_shared_network;
	if (rt->isolated) {
		rt->egress_ns = !(opts && opts->no_sk_lookup) && fk__egress_probe();
		if (!rt->egress_ns && rt->unsafe_shared_network)
			fprintf(stderr,
			        "fake-e2b: no BPF sk_lookup (Linux >= 5.9, bpf() allowed) and "
			        "--unsafe-shared-network: sandboxes with egress allowlist or "
			        "open share the host's network (they reach the host, this "
			        "server and each other; the allowlist is NOT enforced)\n");
		else if (!rt->egress_ns)
			fprintf(stderr, "fake-e2b: no BPF sk_lookup (Linux >= 5.9, bpf() allowed): "
			                "sandboxes with egress allowlist or open are refused (only "
			                "egress none, allow_internet_access false, is served)\n");
	}
	int rc =
	    opts ? fk__egress_hosts_parse(rt, opts->egress_hosts, opts->n_egress_hosts, err) : 0;
	if (rc < 0)
		return rc;
	if (rt->isolated) {
		fk__ns_rt_etc_templates(rt);
		fk__ns_rt_userns(rt);
		fk__ns_rt_disks(rt);
	}
	return 0;
}

void fk__backend_rt_fini(fk_rt *rt)
{
	free(rt->egress_hosts);
	rt->egress_hosts = NULL;
	rt->n_egress_hosts = 0;
	fk__cg_rt_fini(rt);
	free(rt->seccomp.filter);
	rt->seccomp.filter = NULL;
	for (int i = 0; i < 2; i++)
		if (rt->life_pipe[i] >= 0)
			close(rt->life_pipe[i]);
	rt->life_pipe[0] = rt->life_pipe[1] = -1;
	size_t n;
	fk_templates(&n);
	for (size_t i = 0; rt->etc_templates && i < n; i++) {
		fk_tree_remove(AT_FDCWD, rt->etc_templates[i]);
		free(rt->etc_templates[i]);
	}
	free(rt->etc_templates);
	rt->etc_templates = NULL;
	free(rt->idrange_dir);
	rt->idrange_dir = NULL;
	while (rt->disk_tpls) {
		fk_disk_tpl *t = rt->disk_tpls;
		rt->disk_tpls = t->next;
		unlink(t->path);
		free(t->path);
		free(t);
	}
}

void fk__backend_rt_leave(fk_rt *rt)
{
	/* no box left: the shims of its last processes are ending (their server let go of them),
	 * which their cgroup waits for, at most 2 s; a cgroup directory with a box's below it is
	 * not removed (EBUSY) */
	if (!rt->boxes && rt->cg2_dir) {
		char p[600];
		snprintf(p, sizeof(p), "%s/.shims", rt->cg2_dir);
		for (int i = 0; i < 200 && rmdir(p) < 0 && errno == EBUSY; i++)
			usleep(10000);
	}
	fk__cg_rt_fini(rt);
}

/* ------------------------------------------------------------ box verbs */

void fk__backend_box_reset(fk_box *b)
{
	fk__ns_box_prepare_fs(b);
}

int fk__backend_box_freeze(fk_box *b, bool freeze)
{
	return fk__cg_box_freeze(b, freeze);
}

void fk__backend_box_remove(fk_box *b, bool keep_files)
{
	if (b->rt->isolated)
		fk__cg_box_remove(b);
	/* every init is gone: this was the last reference to the disk (its loop device goes) */
	if (b->disk_fd >= 0)
		close(b->disk_fd);
	b->disk_fd = -1;
	if (b->disk_img && !keep_files)
		unlink(b->disk_img);
	if (!keep_files)
		fk__live_remove(b);
	/* hdir and hroot named the closed fd's number, which the next open may reuse */
	char *hdir = strdup(b->dir), *hroot = strdup(b->root);
	if (hdir && hroot) {
		free(b->hdir);
		free(b->hroot);
		b->hdir = hdir;
		b->hroot = hroot;
	} else {
		free(hdir);
		free(hroot);
	}
}

int fk__backend_enter(fk_box *b, fk_enter *e, fk_err *err)
{
	e->isolated = b->rt->isolated;
	e->life_w = b->rt->life_pipe[1];
	e->init_pidfd = b->init_pidfd;
	e->ns_flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWCGROUP | CLONE_NEWIPC | CLONE_NEWUTS |
	              (box_own_net(b) ? CLONE_NEWNET : 0) | (b->userns_fd >= 0 ? CLONE_NEWUSER : 0);
	fk__cg_join_init(&e->cg, b->rt);
	e->seccomp = b->rt->seccomp.filter ? &b->rt->seccomp : NULL;
	e->caps_keep = b->rt->caps_keep;
	e->last_cap = b->rt->last_cap;
	if (!e->isolated)
		return 0;
	return fk__cg_box_join_open(b, &e->cg, true, err);
}
