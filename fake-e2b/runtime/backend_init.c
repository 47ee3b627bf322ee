/*
 * fake-e2b/runtime/backend_init.c — a box's PID 1 (backend_init.h): cloned by the server into new
 * PID, mount and network namespaces with every path, mount and netlink request made on the host
 * (backend_boot.c), it runs its stages (enum init_stage: a failure names its stage) with system
 * calls only: cgroups, the box's tree, /dev, /proc, the network, the pivot into the box's root,
 * its user namespace and the capabilities and system calls dropped; then it reaps orphans until
 * the server's life pipe closes (fake-e2b/README.md "Isolation: what a sandbox can and cannot
 * do").
 */
#define _GNU_SOURCE
#include "backend_init.h"
#include "cg_join.h"
#include "etc_layer.h"
#include "linux/caps.h"
#include "linux/cgroup.h"
#include "linux/net.h"
#include "linux/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

const char *fk__init_stage_name(int stage)
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
	if (fk__cg_join_self(&a->cg) < 0)
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
int fk__init_main(void *arg)
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
