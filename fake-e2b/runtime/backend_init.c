/*
 * fake-e2b/runtime/backend_init.c — a box's PID 1 (backend_int.h): the server prepares every
 * path, mount and netlink request on the host (init_args_fill), clones the init into new PID,
 * mount and network namespaces, and the init runs its stages (enum init_stage: a failure names
 * its stage) with system calls only, then reaps orphans until the server's life pipe closes.
 */
#define _GNU_SOURCE
#include "backend_int.h"
#include "box_cgroups.h"
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
#include <grp.h>
#include <linux/magic.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
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

#define INIT_STACK (256 * 1024)

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define N_DEV_NODES (sizeof(dev_nodes) / sizeof(dev_nodes[0]))

/* ------------------------------------------------------------ PID 1 */

struct init_bind {
	char src[64];
	char dst[4096];
	int tree_fd; /* idmapped read-only copy of src (user namespace), -1: bind src */
};

struct init_args {
	char root[4096];
	struct init_bind binds[N_HOST_DIRS];
	int n_binds;
	char dev[4096];
	char dev_files[N_DEV_NODES][4200];
	char dev_pts[4200], dev_shm[4200], dev_ptmx[4200];
	char dev_links[4][4200];
	char proc[4200], proc_sys[4300], proc_sysrq[4300];
	char boot_id[4200], proc_boot_id[4300]; /* this boot's id, bound over the kernel's */
	char etc[4200];          /* overlay mount point, "" when /etc is a plain copy */
	char etc_template[4200]; /* the /etc template on the host (bound when no etc_lower_fd) */
	char dir[4200];          /* the box's dir: where disk_tree_fd is attached */
	int disk_tree_fd;        /* a copy of the box's disk, -1 if it has none */
	int etc_lower_fd;        /* idmapped copy of the /etc template, -1 if none */
	int userns_fd;           /* the box's user namespace, -1 if none */
	char dev_opts[128];      /* /dev and /dev/shm tmpfs options (owner: the box's root) */
	uid_t dev_owner;         /* the box's root on the host: owner of its /dev nodes */
	char shm_opts[128];
	int ready_fd;              /* write end: {stage (enum init_stage), errno} */
	int cg_fds[FK_CG_MAX_FDS]; /* cgroup tasks files to join */
	int n_cg;
	char masked[5][4300]; /* /proc files hidden behind /dev/null */
	int n_masked;
	const struct sock_fprog *seccomp; /* installed last, with the capabilities dropped */
	int last_cap;
	int life_fd;     /* read end of the runtime's life pipe, -1: live restore (none) */
	int claim_fd;    /* live restore: the id range claim it holds for its life, -1 if none */
	bool own_net;    /* a network namespace of its own: bring `lo` up */
	bool ports_open; /* ip_unprivileged_port_start 0 (no bind program for the box's root) */
	_Alignas(8) char anyip[64];    /* netlink request (read as an nlmsghdr): every IPv4 address
	                                  local, for the proxy */
	size_t anyip_len;              /* 0: egress none */
	_Alignas(8) char own_addr[64]; /* netlink request: the box's address (FK_BOX_ADDR) on
	                                  `lo` */
	size_t own_addr_len;
	char *argv_area; /* the server's argv strings (/proc/1/cmdline), wiped in the init */
	size_t argv_len;
};

static const char *const dev_link_names[4] = {"fd", "stdin", "stdout", "stderr"};
static const char *const dev_link_targets[4] = {"/proc/self/fd", "/proc/self/fd/0",
                                                "/proc/self/fd/1", "/proc/self/fd/2"};

/* The init's stages, each a step a failure names ("sandbox init failed at stage 19 (attach
 * its disk): ..."); the numbers stay as they were, for logs read before the names. */
enum init_stage {
	ST_CGROUP_JOIN = 1,
	ST_MOUNT_PRIVATE = 2,
	ST_ROOT_BIND = 3,
	ST_HOST_BIND = 4,
	ST_HOST_READONLY = 5,
	ST_PROC = 6,
	ST_ENTER_ROOT = 7,
	ST_PIVOT = 8,
	ST_DETACH_HOST = 9,
	ST_CHDIR = 10,
	ST_ETC_OVERLAY = 11,
	ST_CGROUP_NS = 12,
	ST_PROC_MASK = 13,
	ST_SECCOMP = 14,
	ST_CAPS = 15,
	ST_ETC_LOWER = 16,
	ST_USERNS = 17,
	ST_IPC_UTS = 18,
	ST_DISK = 19,
	ST_DEV = 20,
	ST_DEV_NODE = 21,
	ST_DEV_LINK = 22,
	ST_PTMX = 23,
	ST_SHM = 24,
	ST_STDIO = 25,
	ST_SESSION = 26,
	ST_HOSTNAME = 27,
	ST_LO_SOCKET = 30,
	ST_LO_FLAGS = 31,
	ST_LO_UP = 32,
	ST_ANYIP = 33,
	ST_OWN_ADDR = 34,
	ST_PORTS = 35,
};

static const char *const stage_names[] = {
    [ST_CGROUP_JOIN] = "join its cgroups",
    [ST_MOUNT_PRIVATE] = "make its mounts private",
    [ST_ROOT_BIND] = "bind its root",
    [ST_HOST_BIND] = "bind a host tree",
    [ST_HOST_READONLY] = "make a host tree read-only",
    [ST_PROC] = "mount /proc",
    [ST_ENTER_ROOT] = "enter its root",
    [ST_PIVOT] = "pivot_root",
    [ST_DETACH_HOST] = "detach the host root",
    [ST_CHDIR] = "chdir /",
    [ST_ETC_OVERLAY] = "mount the /etc overlay",
    [ST_CGROUP_NS] = "unshare its cgroup namespace",
    [ST_PROC_MASK] = "mask /proc files",
    [ST_SECCOMP] = "install the system call filter",
    [ST_CAPS] = "drop capabilities",
    [ST_ETC_LOWER] = "attach the /etc template",
    [ST_USERNS] = "enter its user namespace",
    [ST_IPC_UTS] = "unshare IPC and UTS",
    [ST_DISK] = "attach its disk",
    [ST_DEV] = "mount /dev",
    [ST_DEV_NODE] = "make a /dev node",
    [ST_DEV_LINK] = "link /dev/fd and stdio",
    [ST_PTMX] = "link /dev/ptmx",
    [ST_SHM] = "mount /dev/shm",
    [ST_STDIO] = "make /dev/null its stdio",
    [ST_SESSION] = "leave the server's session",
    [ST_HOSTNAME] = "set its host name",
    [ST_LO_SOCKET] = "open a socket for lo",
    [ST_LO_FLAGS] = "read lo's flags",
    [ST_LO_UP] = "bring lo up",
    [ST_ANYIP] = "make every IPv4 address local",
    [ST_OWN_ADDR] = "give lo the box's address",
    [ST_PORTS] = "open the ports below 1024",
};

static const char *stage_name(int stage)
{
	size_t n = sizeof(stage_names) / sizeof(stage_names[0]);
	return stage > 0 && (size_t)stage < n && stage_names[stage] ? stage_names[stage] : "?";
}

static void init_fail(struct init_args *a, enum init_stage stage)
{
	int msg[2] = {stage, errno};
	if (write(a->ready_fd, msg, sizeof(msg)) < 0)
		_exit(126);
	_exit(127);
}

static void init_dev(struct init_args *a)
{
	if (mount("tmpfs", a->dev, "tmpfs", MS_NOSUID | MS_NOEXEC, a->dev_opts) < 0)
		init_fail(a, ST_DEV);
	/* nodes of the box's own (its /dev/tty opens the caller's controlling terminal, which no
	 * box process shares with the server); bound from the host's only where mknod is refused
	 * (a server in a container without CAP_MKNOD) */
	for (size_t i = 0; i < N_DEV_NODES; i++) {
		char src[32] = "/dev/";
		memcpy(src + 5, dev_nodes[i], strlen(dev_nodes[i]) + 1);
		struct stat st;
		if (stat(src, &st) == 0 && S_ISCHR(st.st_mode) &&
		    mknod(a->dev_files[i], S_IFCHR | 0666, st.st_rdev) == 0 &&
		    chmod(a->dev_files[i], 0666) == 0 &&
		    chown(a->dev_files[i], a->dev_owner, a->dev_owner) == 0)
			continue;
		int fd = open(a->dev_files[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd >= 0)
			close(fd);
		if (mount(src, a->dev_files[i], NULL, MS_BIND, NULL) < 0)
			init_fail(a, ST_DEV_NODE);
	}
	for (int i = 0; i < 4; i++)
		if (symlink(dev_link_targets[i], a->dev_links[i]) < 0)
			init_fail(a, ST_DEV_LINK);
	mkdir(a->dev_pts, 0755);
	mkdir(a->dev_shm, 01777);
	if (mount("devpts", a->dev_pts, "devpts", MS_NOSUID | MS_NOEXEC,
	          "newinstance,ptmxmode=0666,mode=0620") == 0) {
		if (symlink("pts/ptmx", a->dev_ptmx) < 0)
			init_fail(a, ST_PTMX);
	}
	if (mount("tmpfs", a->dev_shm, "tmpfs", MS_NOSUID | MS_NODEV, a->shm_opts) < 0)
		init_fail(a, ST_SHM);
}

static void init_lo_up(struct init_args *a)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		init_fail(a, ST_LO_SOCKET);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		init_fail(a, ST_LO_FLAGS);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		init_fail(a, ST_LO_UP);
	close(s);
}

/* Reaps orphans; exits when the server is gone (EOF on `life_fd`, whose write end only the
 * server holds), which makes the kernel kill every process of the box: a crashed ephemeral
 * fake-e2b leaves no sandbox running. With live restore (`life_fd` -1) it never exits on its
 * own: the box runs on without the server, for the next one to adopt (backend_live.c). */
static void init_loop(int life_fd)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
		                        {.fd = life_fd, .events = POLLIN}};
		if (poll(pfd, 2, sfd < 0 ? 1000 : -1) < 0)
			continue;
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
		}
		char c;
		if (pfd[1].revents && read(life_fd, &c, 1) <= 0)
			_exit(0);
	}
}

/* The init's last stage: stdio on the box's /dev/null, only the fds it keeps (the life pipe, or
 * with live restore the id range claim), ready said, then reaping for the box's life. */
static void init_serve(struct init_args *a)
{
	/* stdin, stdout and stderr (the server's: its terminal, perhaps) become the box's
	 * /dev/null before the box can run anything; the pipes it keeps move above them */
	int life = a->life_fd < 0 ? -1 : fcntl(a->life_fd, F_DUPFD_CLOEXEC, 11);
	int claim = a->claim_fd < 0 ? -1 : fcntl(a->claim_fd, F_DUPFD_CLOEXEC, 11);
	int ready = fcntl(a->ready_fd, F_DUPFD_CLOEXEC, 11);
	if (ready >= 0)
		a->ready_fd = ready;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if ((a->life_fd >= 0 && life < 0) || (a->claim_fd >= 0 && claim < 0) || ready < 0 ||
	    fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		init_fail(a, ST_STDIO);
	/* live restore: the box's id range stays claimed while it runs (an flock, shared by
	 * every fd of its open file), at the number the next server takes it from */
	if (claim >= 0 && dup2(claim, FK_INIT_CLAIM_FD) < 0)
		init_fail(a, ST_STDIO);
	int ok[2] = {0, 0};
	if (write(a->ready_fd, ok, sizeof(ok)) < 0)
		_exit(126);
	/* nothing else: the init must not hold other processes' pipes (their end events wait
	 * for EOF) */
	unsigned keep = claim >= 0 ? FK_INIT_CLAIM_FD : 2;
	if (life >= 0) {
		close_range(keep + 1, (unsigned)life - 1, 0);
		close_range((unsigned)life + 1, ~0U, 0);
	} else {
		close_range(keep + 1, ~0U, 0);
	}
	init_loop(life);
}

/* Out of the server's session (it may have a controlling terminal, fake-e2b started from a
 * shell, which PID 1 and every process it adopts would otherwise share), into the box's cgroups
 * and a cgroup namespace of its own (/proc/self/cgroup shows "/", host cgroups stay unnamed),
 * its mounts private. */
static void init_join(struct init_args *a)
{
	if (setsid() < 0)
		init_fail(a, ST_SESSION);
	for (int i = 0; i < a->n_cg; i++)
		if (write(a->cg_fds[i], "0", 1) < 0)
			init_fail(a, ST_CGROUP_JOIN);
	if (unshare(CLONE_NEWCGROUP) < 0)
		init_fail(a, ST_CGROUP_NS);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		init_fail(a, ST_MOUNT_PRIVATE);
}

/* The box's tree: its disk attached, its root bound onto itself, its /etc overlay, the host's
 * trees read-only. */
static void init_root(struct init_args *a)
{
	if (a->disk_tree_fd >= 0 && fk_lx_mount_move(a->disk_tree_fd, a->dir) < 0)
		init_fail(a, ST_DISK);
	if (mount(a->root, a->root, NULL, MS_BIND, NULL) < 0)
		init_fail(a, ST_ROOT_BIND);
	if (a->etc[0]) {
		/* the overlay's options name its layers relative to the box's dir (the cwd here):
		 * the box's mountinfo shows them, and no host path may be seen there. The template
		 * is attached at etc-lower (idmapped, or bound), which the pivot below detaches. */
		if (chdir(a->dir) < 0 || (mkdir("etc-lower", 0755) < 0 && errno != EEXIST))
			init_fail(a, ST_ETC_LOWER);
		if (a->etc_lower_fd >= 0
		        ? fk_lx_mount_move(a->etc_lower_fd, "etc-lower") < 0
		        : mount(a->etc_template, "etc-lower", NULL, MS_BIND, NULL) < 0)
			init_fail(a, ST_ETC_LOWER);
		if (mount("overlay", a->etc, "overlay", MS_NOSUID,
		          "lowerdir=etc-lower,upperdir=etc-upper,workdir=etc-work") < 0)
			init_fail(a, ST_ETC_OVERLAY);
	}
	for (int i = 0; i < a->n_binds; i++) {
		if (a->binds[i].tree_fd >= 0) {
			/* made read-only and idmapped by the server */
			if (fk_lx_mount_move(a->binds[i].tree_fd, a->binds[i].dst) < 0)
				init_fail(a, ST_HOST_BIND);
			continue;
		}
		if (mount(a->binds[i].src, a->binds[i].dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			init_fail(a, ST_HOST_BIND);
		if (mount(NULL, a->binds[i].dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
			init_fail(a, ST_HOST_READONLY);
	}
}

/* The box's /proc: its boot id, the kernel's settings read-only, what container runtimes
 * mask. */
static void init_proc(struct init_args *a)
{
	if (mount("proc", a->proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		init_fail(a, ST_PROC);
	/* a fresh boot id per boot, as a VM would have (E2B: each cold boot) */
	if (a->boot_id[0] && mount(a->boot_id, a->proc_boot_id, NULL, MS_BIND, NULL) == 0)
		mount(NULL, a->proc_boot_id, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
	/* the box's root is the host's root: keep it from changing kernel settings through /proc
	 * (best effort, like container runtimes) */
	for (int i = 0; i < 2; i++) {
		const char *p = i == 0 ? a->proc_sys : a->proc_sysrq;
		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) == 0)
			mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
	}
	/* what container runtimes mask: kernel memory, keys, timers, the kernel log */
	/* (behind the box's own /dev/null: a bind of the host's would let a box's root without a
	 * user namespace chmod the host's node) */
	for (int i = 0; i < a->n_masked; i++)
		if (mount(a->dev_files[0], a->masked[i], NULL, MS_BIND, NULL) < 0 &&
		    errno != ENOENT)
			init_fail(a, ST_PROC_MASK);
}

/* The box's network namespace, set up with the server's capabilities: lo up, every IPv4 address
 * local (for the egress proxy), the box's address, the low ports. */
static void init_net(struct init_args *a)
{
	if (a->own_net)
		init_lo_up(a);
	if (a->anyip_len && fk_lx_netlink_send(a->anyip, a->anyip_len) < 0)
		init_fail(a, ST_ANYIP);
	if (a->own_addr_len && fk_lx_netlink_send(a->own_addr, a->own_addr_len) < 0)
		init_fail(a, ST_OWN_ADDR);
	/* root inside has no capability over this namespace (the host's user namespace owns it):
	 * its bind program lets it bind ports below 1024 as E2B's root can, while the others stay
	 * under Linux's default 1024 as on E2B; without the program, everyone may */
	if (a->own_net && a->ports_open &&
	    fk_lx_write_str("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0") < 0)
		init_fail(a, ST_PORTS);
}

/* Into the box's root for good (pivot_root, the host's root detached), the server's command
 * line hidden (it may carry the API key) with its memory: the init is a copy of the server. */
static void init_pivot(struct init_args *a)
{
	if (chdir(a->root) < 0)
		init_fail(a, ST_ENTER_ROOT);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		init_fail(a, ST_PIVOT);
	if (umount2(".", MNT_DETACH) < 0)
		init_fail(a, ST_DETACH_HOST);
	if (chdir("/") < 0)
		init_fail(a, ST_CHDIR);
	prctl(PR_SET_NAME, "fk-init");
	if (a->argv_area && a->argv_len > 0) {
		memset(a->argv_area, 0, a->argv_len);
		memcpy(a->argv_area, "fk-init", a->argv_len > 8 ? 8 : a->argv_len - 1);
	}
}

/* From here on the box's root, not the host's: its own user namespace (ids mapped to the box's
 * range), IPC and host name namespaces owned by it, E2B's host name; then PID 1 only reaps: no
 * capabilities, the boxes' system call filter. */
static void init_drop(struct init_args *a)
{
	if (a->userns_fd >= 0 && fk_lx_userns_enter_as_root(a->userns_fd) < 0)
		init_fail(a, ST_USERNS);
	if (unshare(CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		init_fail(a, ST_IPC_UTS);
	/* E2B's host name (its /etc/hostname and /etc/hosts say the same) */
	if (sethostname(FK_BOX_HOSTNAME, sizeof(FK_BOX_HOSTNAME) - 1) < 0)
		init_fail(a, ST_HOSTNAME);
	prctl(PR_SET_DUMPABLE, 0);
	if (a->seccomp && fk_lx_seccomp_install(a->seccomp) < 0)
		init_fail(a, ST_SECCOMP);
	if (fk_lx_caps_limit(0, a->last_cap) < 0)
		init_fail(a, ST_CAPS);
}

/* PID 1: its stages in order, each step failing with its stage's number (init_fail). */
static int init_main(void *arg)
{
	struct init_args *a = arg;
	init_join(a);
	init_root(a);
	init_dev(a);
	init_proc(a);
	init_net(a);
	init_pivot(a);
	init_drop(a);
	init_serve(a);
	return 0;
}

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
		rc = fk__cg_box_open_tasks(b, a->cg_fds, &a->n_cg, NULL, err);
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
	for (int i = 0; i < a->n_cg; i++)
		close(a->cg_fds[i]);
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
	int flags = CLONE_NEWPID | CLONE_NEWNS | (box_own_net(b) ? CLONE_NEWNET : 0) | SIGCHLD;
	pid_t pid = clone(init_main, stack + INIT_STACK, flags, a);
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
	                  stage_name(msg[0]), fk_strerror(msg[1]));
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
	if (a)
		a->etc_lower_fd = a->disk_tree_fd = -1;
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
