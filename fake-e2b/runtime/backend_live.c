/*
 * fake-e2b/runtime/backend_live.c — live restore (backend_int.h), in Docker's live-restore shape:
 * a live-restore runtime's boxes do not depend on its process (their PID 1 watches no pipe of
 * ours, backend_init.c), and the next runtime on the same state dir adopts them instead of
 * killing them. What it needs to find one again is recorded at each boot in
 * <state>/.live/<id> (0600 in a 0700 directory, host root's): the PID 1's pid, its start time
 * (/proc/<pid>/stat) and the host's boot id. A record is believed only while all three match a
 * process named fk-init in the box's own cgroup, checked before and after its pidfd is taken,
 * so a pid reused by another process (or after a reboot) is never adopted; from then on
 * everything of it is reached through that pidfd or /proc opened while it lives
 * (fk__box_init_open): its user namespace (ns/user, uid_map), its id range claim (pidfd_getfd of
 * the fd its PID 1 keeps), its disk (the loop device its mount namespace still holds, mounted
 * once more), its cgroups (the state dir's own, box_cgroups.c) and whether they are frozen; its
 * egress proxy and port binding program are started again.
 */
#define _GNU_SOURCE
#include "backend_int.h"
#include "box_cgroups.h"
#include "egress_int.h"
#include "linux/net.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LIVE_DIR   ".live"
#define LIVE_MAGIC "fake-e2b-live 1"

/* Field 22 of /proc/<pid>/stat: when the process started (clock ticks since boot). */
static int start_time(pid_t pid, unsigned long long *out)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *s = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!s)
		return -1;
	s++;
	/* fields 3 (state) .. 21, then 22 */
	for (int i = 3; i < 22; i++) {
		s = strchr(s + 1, ' ');
		if (!s)
			return -1;
	}
	char *end;
	errno = 0;
	*out = strtoull(s + 1, &end, 10);
	return errno || end == s + 1 ? -1 : 0;
}

/* The host's boot id (36 characters). */
static int boot_id(char out[40])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, out, 39);
	close(fd);
	if (n < 36)
		return -1;
	out[36] = 0;
	return 0;
}

/* A box's port binding program (backend_int.h): at each boot and at its adoption. */
bool fk__ns_box_bind_root(fk_box *b)
{
	if (b->bind_links[0] >= 0)
		return true;
	static int warned;
	int cg = fk__cg_box_v2_open(b);
	int rc = cg < 0 ? -1 : fk_lx_bind_root_attach(cg, (uint32_t)b->id_base, b->bind_links);
	int e = errno;
	if (cg >= 0)
		close(cg);
	if (rc < 0 && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(
		    stderr,
		    "fake-e2b: no BPF cgroup bind program (cgroup v2, Linux >= 5.12): %s; every "
		    "user of a sandbox may bind ports below 1024, not only its root\n",
		    fk_strerror(e));
	return rc == 0;
}

static void record_path(const fk_rt *rt, const char *id, char *out, size_t n)
{
	snprintf(out, n, "%s/" LIVE_DIR "/%s", rt->state_dir, id);
}

int fk__live_record(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->live || b->init_pid <= 0)
		return 0;
	char dir[4200], path[4300], tmp[4400], boot[40], line[128];
	unsigned long long st;
	snprintf(dir, sizeof(dir), "%s/" LIVE_DIR, rt->state_dir);
	record_path(rt, b->id, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || start_time(b->init_pid, &st) < 0 ||
	    boot_id(boot) < 0)
		return fk__fail(err, FK_EIO, errno, "recording the sandbox's PID 1: %s",
		                fk_strerror(errno));
	int n =
	    snprintf(line, sizeof(line), LIVE_MAGIC " %d %llu %s\n", (int)b->init_pid, st, boot);
	/* no fsync: the record matters only while this boot lasts (a reboot changes the boot id,
	 * and a torn record is refused, its box then swept) */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, line, (size_t)n) == n;
	int e = errno;
	if (fd >= 0 && close(fd) < 0 && ok) {
		ok = false;
		e = errno;
	}
	if (ok && rename(tmp, path) < 0) {
		ok = false;
		e = errno;
	}
	if (!ok) {
		unlink(tmp);
		return fk__fail(err, FK_EIO, e, "recording the sandbox's PID 1: %s",
		                fk_strerror(e));
	}
	return 0;
}

void fk__live_forget(fk_box *b)
{
	if (!b->rt->live)
		return;
	char path[4300];
	record_path(b->rt, b->id, path, sizeof(path));
	unlink(path);
}

void fk__live_remove(fk_box *b)
{
	if (!b->rt->live)
		return;
	char path[4300];
	/* its process shims' sockets (proc_shim.c): their processes are gone with the box */
	snprintf(path, sizeof(path), "%s/" LIVE_DIR "/%s.p", b->rt->state_dir, b->id);
	fk_tree_remove(AT_FDCWD, path);
}

/* Is process `pid` in the box's own cgroup (<cg_rel>/<id>, or a leaf of it), by the first
 * hierarchy that names it? True when the runtime has no cgroups. */
static bool in_box_cgroup(const fk_rt *rt, pid_t pid, const char *id)
{
	if (!rt->cg_rel)
		return true;
	char p[64], want[512], line[1024];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	int w = snprintf(want, sizeof(want), ":/%s/%s", rt->cg_rel, id);
	if (w <= 0 || (size_t)w >= sizeof(want))
		return false;
	FILE *f = fopen(p, "re");
	bool in = false;
	while (f && !in && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, want);
		in = at && (at[w] == '\n' || at[w] == '/');
	}
	if (f)
		fclose(f);
	return in;
}

pid_t fk__live_check(fk_rt *rt, const char *id)
{
	if (!rt->live || !fk__valid_id(id))
		return 0;
	char path[4300], buf[256], boot[40], rec_boot[40], comm[32] = "";
	record_path(rt, id, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	int pid = 0;
	unsigned long long rec_st = 0, st = 0;
	if (sscanf(buf, LIVE_MAGIC " %d %llu %36s", &pid, &rec_st, rec_boot) != 3 || pid <= 1 ||
	    boot_id(boot) < 0 || strcmp(boot, rec_boot) || start_time(pid, &st) < 0 || st != rec_st)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, comm, sizeof(comm) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0 || strncmp(comm, "fk-init\n", 8) || !in_box_cgroup(rt, pid, id))
		return 0;
	return (pid_t)pid;
}

void fk__live_wait_gone(fk_box *b)
{
	struct pollfd pfd = {.fd = b->init_pidfd, .events = POLLIN};
	/* readable once it has exited, which a PID 1 does only after every other task of its
	 * namespace is gone */
	while (b->init_pidfd >= 0 && poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
}

/* An adoption that cannot be completed: the box's PID 1 and every process of it killed (its
 * disk must never be mounted twice), what was taken of it let go; the caller restores it cold. */
static void give_up(fk_box *b, const char *why)
{
	fprintf(stderr,
	        "fake-e2b: state: sandbox %s: its PID 1 (pid %d) could not be adopted (%s): "
	        "killed; it boots cold at its resume\n",
	        b->id, (int)b->init_pid, why);
	fk__egress_box_stop(b);
	syscall(SYS_pidfd_send_signal, b->init_pidfd, SIGKILL, NULL, 0);
	fk__cg_box_kill(b);
	fk__cg_box_freeze(b, false); /* a frozen task dies once thawed (v1) */
	fk__live_wait_gone(b);
	fk__live_forget(b);
	close(b->init_pidfd);
	b->init_pidfd = -1;
	b->init_pid = 0;
	b->adopted = false;
	b->frozen = false;
	if (b->disk_fd >= 0)
		close(b->disk_fd);
	b->disk_fd = -1;
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
	if (b->userns_fd >= 0)
		close(b->userns_fd);
	if (b->idrange_fd >= 0)
		close(b->idrange_fd);
	b->userns_fd = b->idrange_fd = -1;
	b->id_base = 0;
}

/* The user namespace and id range of the adopted PID 1 (none when it shares ours): 0, or -1
 * with *why. */
static int adopt_userns(fk_box *b, const char **why)
{
	fk_rt *rt = b->rt;
	struct stat mine, its;
	int ns = fk__box_init_open(b, "ns/user", O_RDONLY);
	if (ns < 0 || fstat(ns, &its) < 0 || stat("/proc/self/ns/user", &mine) < 0) {
		*why = "its user namespace";
		goto fail;
	}
	if (its.st_ino == mine.st_ino && its.st_dev == mine.st_dev) {
		close(ns); /* made without one (no idmapped mounts then): none now either */
		return 0;
	}
	char map[128] = "";
	int fd = fk__box_init_open(b, "uid_map", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, map, sizeof(map) - 1);
	if (fd >= 0)
		close(fd);
	unsigned long inside = 1, base = 0, count = 0;
	if (n <= 0 || sscanf(map, "%lu %lu %lu", &inside, &base, &count) != 3 || inside != 0 ||
	    count != FK_IDS_SIZE || base < FK_IDS_FIRST || (base - FK_IDS_FIRST) % FK_IDS_SIZE ||
	    (base - FK_IDS_FIRST) / FK_IDS_SIZE >= FK_IDS_RANGES || !rt->idrange_dir) {
		*why = "its id map";
		goto fail;
	}
	/* the claim its PID 1 holds (the same open file: one flock), checked to be that range's */
	char p[4200];
	snprintf(p, sizeof(p), "%s/%lu", rt->idrange_dir, (base - FK_IDS_FIRST) / FK_IDS_SIZE);
	struct stat want, got;
	int claim = (int)syscall(SYS_pidfd_getfd, b->init_pidfd, FK_INIT_CLAIM_FD, 0);
	if (claim < 0 || fstat(claim, &got) < 0 || stat(p, &want) < 0 ||
	    got.st_ino != want.st_ino || got.st_dev != want.st_dev) {
		if (claim >= 0)
			close(claim);
		*why = "its id range claim";
		goto fail;
	}
	b->userns_fd = ns;
	b->idrange_fd = claim;
	b->id_base = (uid_t)base;
	return 0;
fail:
	if (ns >= 0)
		close(ns);
	return -1;
}

int fk__live_adopt(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->live || !rt->isolated)
		return 0;
	pid_t pid = fk__live_check(rt, b->id);
	if (pid <= 0)
		return 0;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return 0;
	/* the pidfd's process is the recorded one: it still was once the pidfd was taken */
	if (fk__live_check(rt, b->id) != pid) {
		close(pidfd);
		return 0;
	}
	fcntl(pidfd, F_SETFD, FD_CLOEXEC);
	b->init_pid = pid;
	b->init_pidfd = pidfd;
	b->adopted = true;
	const char *why = NULL;
	if (rt->userns && adopt_userns(b, &why) < 0) {
		give_up(b, why);
		return 0;
	}
	fk_err e2 = {0};
	b->frozen = fk__cg_box_frozen(b);
	if (b->userns_fd >= 0 && box_own_net(b))
		fk__ns_box_bind_root(b);
	if (fk__egress_box_start(b, &e2) < 0) {
		give_up(b, "its egress proxy");
		return 0;
	}
	if (fk__ns_box_disk_live(b, &e2) < 0) {
		give_up(b, "its disk");
		return 0;
	}
	/* still running now that everything of it is ours */
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	if (poll(&pfd, 1, 0) != 0) {
		give_up(b, "it ended meanwhile");
		return 0;
	}
	(void)err;
	return 1;
}
