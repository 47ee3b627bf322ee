/*
 * fake-e2b/runtime/backend_boot.c — a box's boot and kill, host side (backend.h): its PID 1's
 * arguments made on the host (paths, the host trees idmapped for its user namespace, its disk's
 * tree, its cgroups), the init cloned into its namespaces (backend_init.c) and waited for, then
 * taken as the box's PID 1 (pidfd, OOM exemption, live restore's record, the egress proxy); and
 * its end.
 */
#define _GNU_SOURCE
#include "backend_init.h"
#include "box_cgroups.h"
#include "cg_join.h"
#include "egress_int.h"
#include "linux/cgroup.h"
#include "linux/net.h"
#include "linux/userns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define INIT_STACK (256 * 1024)

static const char *const dev_link_names[4] = {"fd", "stdin", "stdout", "stderr"};

/* Writes a new random boot id (the kernel's format: a version 4 UUID and a newline) to `path`. */
static int write_boot_id(const char *path)
{
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	char text[40];
	int n = snprintf(text, sizeof(text),
	                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
	                 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
	                 r[12], r[13], r[14], r[15]);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	int rc = write(fd, text, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

/* Egress none always; allowlist and open when the runtime has its egress proxy. */
static void init_args_fill(fk_box *b, struct init_args *a)
{
	snprintf(a->root, sizeof(a->root), "%s", b->root);
	snprintf(a->dir, sizeof(a->dir), "%s", b->dir);
	for (size_t i = 0; i < N_HOST_DIRS; i++) {
		struct stat st;
		char host[64];
		snprintf(host, sizeof(host), "/%s", host_dirs[i]);
		if (lstat(host, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		struct init_bind *bd = &a->binds[a->n_binds++];
		snprintf(bd->src, sizeof(bd->src), "%s", host);
		snprintf(bd->dst, sizeof(bd->dst), "%s/%s", b->root, host_dirs[i]);
		bd->tree_fd = -1;
	}
	a->userns_fd = b->userns_fd;
	a->dev_owner = (uid_t)b->id_base;
	snprintf(a->dev_opts, sizeof(a->dev_opts), "mode=755,size=65536k,uid=%u,gid=%u",
	         (unsigned)b->id_base, (unsigned)b->id_base);
	/* /dev/shm is RAM: capped (its pages count against the box's memory cgroup too) */
	snprintf(a->shm_opts, sizeof(a->shm_opts), "mode=1777,size=%lluk,uid=%u,gid=%u",
	         (unsigned long long)(b->limits.shm_bytes / 1024), (unsigned)b->id_base,
	         (unsigned)b->id_base);
	snprintf(a->dev, sizeof(a->dev), "%s/dev", b->root);
	for (size_t i = 0; i < N_DEV_NODES; i++)
		snprintf(a->dev_files[i], sizeof(a->dev_files[i]), "%s/%s", a->dev, dev_nodes[i]);
	for (int i = 0; i < 4; i++)
		snprintf(a->dev_links[i], sizeof(a->dev_links[i]), "%s/%s", a->dev,
		         dev_link_names[i]);
	snprintf(a->dev_pts, sizeof(a->dev_pts), "%s/pts", a->dev);
	snprintf(a->dev_shm, sizeof(a->dev_shm), "%s/shm", a->dev);
	snprintf(a->dev_ptmx, sizeof(a->dev_ptmx), "%s/ptmx", a->dev);
	snprintf(a->proc, sizeof(a->proc), "%s/proc", b->root);
	snprintf(a->proc_sys, sizeof(a->proc_sys), "%s/sys", a->proc);
	snprintf(a->proc_sysrq, sizeof(a->proc_sysrq), "%s/sysrq-trigger", a->proc);
	static const char *const masked[] = {"kcore", "keys", "timer_list", "sched_debug", "kmsg"};
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		char host[64];
		snprintf(host, sizeof(host), "/proc/%s", masked[i]);
		if (access(host, F_OK) == 0)
			snprintf(a->masked[a->n_masked++], sizeof(a->masked[0]), "%s/%s", a->proc,
			         masked[i]);
	}
	a->seccomp = b->rt->seccomp.filter ? &b->rt->seccomp : NULL;
	a->last_cap = b->rt->last_cap;
	snprintf(a->proc_boot_id, sizeof(a->proc_boot_id), "%s/sys/kernel/random/boot_id", a->proc);
	snprintf(a->boot_id, sizeof(a->boot_id), "%s/boot_id", b->dir);
	char boot_id[4200];
	snprintf(boot_id, sizeof(boot_id), "%s/boot_id", b->hdir);
	if (write_boot_id(boot_id) < 0)
		a->boot_id[0] = 0; /* the box sees the host's boot id */
	a->own_net = box_own_net(b);
	if (a->own_net && !b->net_none) {
		a->anyip_len = fk_lx_route_local_all_msg(a->anyip, sizeof(a->anyip));
		a->own_addr_len =
		    fk_lx_addr_msg(a->own_addr, sizeof(a->own_addr), htonl(FK_BOX_ADDR));
	}
	if (fk__ns_box_etc_template(b)) {
		snprintf(a->etc, sizeof(a->etc), "%s/etc", b->root);
		snprintf(a->etc_template, sizeof(a->etc_template), "%s",
		         fk__ns_box_etc_template(b));
	}
	/* argv[0] (program_invocation_name) starts the kernel's arg area; its length is that of
	 * /proc/self/cmdline. Only used when the first string matches. */
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[8192];
		ssize_t n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n > 0 && (size_t)n < sizeof(buf) && !strcmp(buf, program_invocation_name)) {
			a->argv_area = program_invocation_name;
			a->argv_len = (size_t)n;
		}
	}
}

/* Host groups whose set-group-id programs a box runs from the host's /usr (Debian's): PAM's
 * unix_chkpwd, chage and expiry (shadow), utempter (utmp), ssh-agent (_ssh; ssh before Debian
 * 12), write and wall (tty), crontab, dotlockfile (mail). */
static const char *const setgid_groups[] = {"tty", "shadow",  "utmp", "_ssh",
                                            "ssh", "crontab", "mail"};
#define N_SETGID_GROUPS (sizeof(setgid_groups) / sizeof(setgid_groups[0]))

static uint32_t tree_gids[1 + N_SETGID_GROUPS];
static size_t n_tree_gids;

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

/* gid 0 and those of setgid_groups the host has (below FK_IDS_SIZE), ascending, once. */
static void tree_gids_find(void)
{
	tree_gids[n_tree_gids++] = 0;
	for (size_t i = 0; i < N_SETGID_GROUPS; i++) {
		struct group g, *res = NULL;
		char buf[16384];
		if (getgrnam_r(setgid_groups[i], &g, buf, sizeof(buf), &res) != 0 || !res ||
		    res->gr_gid == 0 || res->gr_gid >= FK_IDS_SIZE)
			continue;
		bool dup = false;
		for (size_t j = 0; j < n_tree_gids; j++)
			dup = dup || tree_gids[j] == (uint32_t)res->gr_gid;
		if (!dup)
			tree_gids[n_tree_gids++] = (uint32_t)res->gr_gid;
	}
	qsort(tree_gids, n_tree_gids, sizeof(tree_gids[0]), cmp_u32);
}

/* The host trees a box with a user namespace sees (/usr; /bin, /lib... when directories),
 * read-only and idmapped through a namespace of their own that maps only host uid 0 and gid 0
 * (and the groups of setgid programs) onto the box's: a file of host root is its root's, the
 * setuid and setgid programs work, and every other host user's files are owned by an unmapped
 * id (shown as nobody): no box user has their owner's or group's rights, and box root's
 * CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH do not apply to them (the kernel grants those only
 * on an inode whose owner and group both map into the caller's namespace). The box's /etc
 * template, made by the server of files every host user may read, uses the box's own map.
 * Made here, attached by its init. */
static int idmapped_trees(fk_box *b, struct init_args *a, fk_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (b->userns_fd < 0)
		return 0;
	if (a->n_binds > 0) {
		pthread_once(&once, tree_gids_find);
		static const uint32_t root_uid[] = {0};
		int ns =
		    fk_lx_userns_new_ids((uid_t)b->id_base, root_uid, 1, tree_gids, n_tree_gids);
		if (ns < 0)
			return fk__fail(err, FK_EIO, errno, "user namespace for the host trees: %s",
			                fk_strerror(errno));
		for (int i = 0; i < a->n_binds; i++) {
			a->binds[i].tree_fd = fk_lx_idmapped_tree(a->binds[i].src, ns, true, true);
			if (a->binds[i].tree_fd < 0) {
				int e = errno;
				close(ns);
				return fk__fail(err, FK_EIO, e, "idmapped mount of %s: %s",
				                a->binds[i].src, fk_strerror(e));
			}
		}
		close(ns);
	}
	if (a->etc[0]) {
		a->etc_lower_fd =
		    fk_lx_idmapped_tree(fk__ns_box_etc_template(b), b->userns_fd, false, true);
		if (a->etc_lower_fd < 0)
			return fk__fail(err, FK_EIO, errno, "idmapped mount of /etc: %s",
			                fk_strerror(errno));
	}
	return 0;
}

/* The memory cgroup's OOM killer must pick a process inside the box, never its PID 1 (its death
 * ends the box: a full /dev/shm plus an allocator made it the last pick). Written by the server
 * (host root): from inside its user namespace PID 1 cannot lower its score, which needs
 * CAP_SYS_RESOURCE in the initial namespace. The box's processes do not inherit it: proc.c
 * spawns them from the server, resetting theirs to 0; PID 1 itself never forks. */
static void init_oom_exempt(pid_t pid)
{
	static int warned;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", (int)pid);
	if (fk_lx_write_str(p, "-1000") < 0 && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr,
		        "fake-e2b: cannot exempt sandboxes' PID 1 from the OOM killer (%s): a box "
		        "out of memory may lose its PID 1 and end\n",
		        fk_strerror(errno));
}

bool fk__backend_box_init_gone(fk_box *b)
{
	if (b->init_pidfd < 0)
		return false;
	struct pollfd pfd = {.fd = b->init_pidfd, .events = POLLIN};
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLIN | POLLHUP)) != 0;
}

/* The init's arguments made on the host: paths, the host trees (idmapped for a user
 * namespace), its disk's tree, its cgroups made and their tasks files opened, the fds it keeps. */
static int boot_args(fk_box *b, struct init_args *a, fk_err *err)
{
	init_args_fill(b, a);
	int rc = idmapped_trees(b, a, err);
	if (rc == 0 && b->disk_fd >= 0) {
		a->disk_tree_fd = (int)syscall(SYS_open_tree, b->disk_fd, "",
		                               OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (a->disk_tree_fd < 0)
			rc = fk__fail(err, FK_EIO, errno, "the sandbox's disk: %s",
			              fk_strerror(errno));
	}
	if (rc == 0)
		rc = fk__cg_box_setup(b, err);
	if (rc == 0)
		rc = fk__cg_box_join_open(b, &a->cg, false, err);
	if (rc < 0)
		return rc;
	a->ports_open = b->userns_fd >= 0 && box_own_net(b) && !fk__ns_box_bind_root(b);
	a->life_fd = b->rt->live ? -1 : b->rt->life_pipe[0];
	a->claim_fd = b->rt->live ? b->idrange_fd : -1;
	return 0;
}

/* What boot_args opened, closed (the init has its own copies), and `a` freed. */
static void boot_args_free(struct init_args *a)
{
	if (!a)
		return;
	fk__cg_join_close(&a->cg);
	for (int i = 0; i < a->n_binds; i++)
		if (a->binds[i].tree_fd >= 0)
			close(a->binds[i].tree_fd);
	if (a->etc_lower_fd >= 0)
		close(a->etc_lower_fd);
	if (a->disk_tree_fd >= 0)
		close(a->disk_tree_fd);
	free(a);
}

/* Clones the init into its namespaces on `stack` and waits until it says it is ready: its pid,
 * or a negative FK_E* (a failed stage named by number and name; the init killed and reaped). */
static int boot_clone(fk_box *b, struct init_args *a, char *stack, fk_err *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
	a->ready_fd = pipefd[1];
	/* The network namespace belongs to the host's user namespace (made here, by the server):
	 * nothing in the box holds CAP_NET_ADMIN over it, and PID 1 configures it (lo, AnyIP
	 * route, address) with the server's capabilities. A user namespace for the box must come
	 * after that (unshare(CLONE_NEWUSER) in the init once the network is set up), never in
	 * these flags: with CLONE_NEWUSER here the network namespace would be the box's own. */
	int flags = CLONE_NEWPID | CLONE_NEWNS | (box_own_net(b) ? CLONE_NEWNET : 0);
	/* made in the box's cgroup v2 (cg_join.h: no cgroup.procs write, whose global lock costs
	 * several ms after an idle moment) */
	pid_t pid = fk__cg_spawn(&a->cg, (uint64_t)flags, stack, INIT_STACK, fk__init_main, a);
	int clone_errno = errno;
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		return fk__fail(err, FK_EIO, clone_errno, "clone: %s", fk_strerror(clone_errno));
	}
	int msg[2] = {-1, EPIPE};
	ssize_t n;
	while ((n = read(pipefd[0], msg, sizeof(msg))) < 0 && errno == EINTR)
		;
	close(pipefd[0]);
	if (n == sizeof(msg) && msg[0] == 0)
		return pid;
	int rc = fk__fail(err, FK_EIO, msg[1], "sandbox init failed at stage %d (%s): %s", msg[0],
	                  fk__init_stage_name(msg[0]), fk_strerror(msg[1]));
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return rc;
}

/* The ready init becomes the box's PID 1: its pidfd, out of the OOM killer's reach, recorded
 * for live restore, the box's egress proxy started; killed again when one of those fails. */
static int boot_adopt_init(fk_box *b, pid_t pid, fk_err *err)
{
	b->init_pid = pid;
	b->adopted = false;
	init_oom_exempt(pid);
	b->init_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (b->init_pidfd >= 0)
		fcntl(b->init_pidfd, F_SETFD, FD_CLOEXEC);
	int rc = fk__live_record(b, err);
	if (rc == 0)
		rc = fk__egress_box_start(b, err);
	if (rc < 0)
		fk__backend_box_kill(b);
	return rc;
}

int fk__backend_box_boot(fk_box *b, fk_err *err)
{
	if (!b->rt->isolated)
		return 0;
	struct init_args *a = calloc(1, sizeof(*a));
	char *stack = malloc(INIT_STACK);
	int rc;
	if (a) {
		a->etc_lower_fd = a->disk_tree_fd = -1;
		fk__cg_join_init(&a->cg, b->rt);
	}
	if (!a || !stack)
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	else
		rc = boot_args(b, a, err);
	if (rc == 0)
		rc = boot_clone(b, a, stack, err);
	if (rc > 0)
		rc = boot_adopt_init(b, (pid_t)rc, err);
	boot_args_free(a);
	free(stack);
	return rc;
}

/* The kernel keeps PID 1 unreapable until every task of the namespace is reaped, and proc.c's
 * threads reap theirs once told to stop forwarding (the lifecycle did that first). */
bool fk__backend_box_kill(fk_box *b)
{
	bool had_init = b->init_pid > 0;
	fk__egress_box_stop(b); /* its sockets keep the namespace alive */
	if (had_init) {
		fk__live_forget(b); /* no later runtime adopts it */
		/* an adopted PID 1 is signalled through its pidfd: its pid may be another's once it
		 * is gone */
		if (b->adopted && b->init_pidfd >= 0)
			syscall(SYS_pidfd_send_signal, b->init_pidfd, SIGKILL, NULL, 0);
		else if (!b->adopted)
			kill(b->init_pid, SIGKILL);
		fk__cg_box_kill(b); /* v2: the box's processes at once, a start's helper too */
		/* a frozen task cannot die (v1): thaw after the kill is queued */
		if (b->frozen)
			fk__cg_box_freeze(b, false);
		if (b->adopted)
			fk__live_wait_gone(b);
		else
			while (waitpid(b->init_pid, NULL, 0) < 0 && errno == EINTR)
				;
		b->init_pid = 0;
		b->adopted = false;
	}
	if (b->init_pidfd >= 0)
		close(b->init_pidfd);
	b->init_pidfd = -1;
	return had_init || b->rt->isolated;
}
