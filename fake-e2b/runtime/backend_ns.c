/*
 * fake-e2b/runtime/backend_ns.c — the namespace backend (backend.h): a box's files on the host,
 * its PID 1 in hand-built namespaces (mount, PID, cgroup, network for egress none), the
 * system call filter and capability limits of everything inside (policy.c).
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
#include "backend.h"
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

#define INIT_STACK (256 * 1024)

/* Host top-level entries the box gets from the host: a symlink is copied as a symlink
 * (merged /usr), a directory is bind-mounted read-only. */
static const char *const host_dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
#define N_HOST_DIRS (sizeof(host_dirs) / sizeof(host_dirs[0]))

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define N_DEV_NODES (sizeof(dev_nodes) / sizeof(dev_nodes[0]))

/* ------------------------------------------------------------ files on the host */

/* mkdir <box root>/<rel> owned by the box's `uid`:`gid` (box ids) */
static void mkdir_mode(const fk_box *b, const char *rel, mode_t mode, uid_t uid, gid_t gid)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", b->hroot, rel);
	if (mkdir(p, mode) == 0) {
		chmod(p, mode); /* umask */
		if (chown(p, fk__host_id(b, uid), fk__host_id(b, gid)) < 0 && geteuid() == 0)
			fprintf(stderr, "fake-e2b: chown %s: %s\n", p, fk_strerror(errno));
	}
}

/* mkdir -p of a template directory: missing parents root-owned 0755, the directory itself
 * with the template's mode and owner. */
static void mkdir_template_dir(const fk_box *b, const fk_template *t, const fk_template_dir *d)
{
	char rel[4096];
	snprintf(rel, sizeof(rel), "%s", d->path + (d->path[0] == '/'));
	for (char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir_mode(b, rel, 0755, 0, 0);
		*s = '/';
	}
	mkdir_mode(b, rel, d->mode, d->user_owned ? t->uid : 0, d->user_owned ? t->gid : 0);
}

static void box_prepare_fs(fk_box *b)
{
	const char *r = b->hroot;
	for (size_t i = 0; i < b->tpl->n_dirs; i++)
		mkdir_template_dir(b, b->tpl, &b->tpl->dirs[i]);
	mkdir_mode(b, "tmp", 01777, 0, 0);
	mkdir_mode(b, "var", 0755, 0, 0);
	mkdir_mode(b, "var/tmp", 01777, 0, 0);
	mkdir_mode(b, "root", 0700, 0, 0);
	mkdir_mode(b, "home", 0755, 0, 0);
	mkdir_mode(b, "run", 0755, 0, 0);
	mkdir_mode(b, "proc", 0555, 0, 0);
	mkdir_mode(b, "dev", 0755, 0, 0);
	mkdir_mode(b, "sys", 0555, 0, 0);
	mkdir_mode(b, "mnt", 0755, 0, 0);
	for (size_t i = 0; i < N_HOST_DIRS; i++) {
		char host[64], dst[4096], target[4096];
		struct stat st;
		snprintf(host, sizeof(host), "/%s", host_dirs[i]);
		snprintf(dst, sizeof(dst), "%s/%s", r, host_dirs[i]);
		if (lstat(host, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(host, target, sizeof(target) - 1);
			if (n > 0) {
				target[n] = 0;
				if (symlink(target, dst) < 0 && errno != EEXIST)
					fprintf(stderr, "fake-e2b: symlink %s: %s\n", dst,
					        fk_strerror(errno));
			}
		} else if (S_ISDIR(st.st_mode)) {
			mkdir(dst, 0755);
		}
	}
}

static void overlay_opts(char *buf, size_t size, const char *lower, const char *dir)
{
	int n = snprintf(buf, size, "lowerdir=%s,upperdir=%s/etc-upper,workdir=%s/etc-work", lower,
	                 dir, dir);
	if (n < 0 || (size_t)n >= size)
		buf[0] = 0; /* too long: the mount fails (probe) or the box fails to boot */
}

/* Can this kernel mount an overlay with the template as lower layer (in a throwaway mount
 * namespace)? With `lower_fd` >= 0 (an idmapped copy of the template) the lower layer is that
 * copy, attached first. The child only makes system calls. */
static bool overlay_works(const char *state_dir, const char *lower, int lower_fd)
{
	char dir[4096], up[4200], work[4200], mnt[4200], low[4200], opts[4096];
	snprintf(dir, sizeof(dir), "%s/.overlay-probe", state_dir);
	snprintf(up, sizeof(up), "%s/etc-upper", dir);
	snprintf(work, sizeof(work), "%s/etc-work", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(low, sizeof(low), "%s/etc-lower", dir);
	overlay_opts(opts, sizeof(opts), lower_fd >= 0 ? low : lower, dir);
	bool ok = false;
	if (mkdir(dir, 0700) == 0 && mkdir(up, 0755) == 0 && mkdir(work, 0755) == 0 &&
	    mkdir(mnt, 0755) == 0 && mkdir(low, 0755) == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			if (unshare(CLONE_NEWNS) < 0 ||
			    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    (lower_fd >= 0 && fk_lx_mount_move(lower_fd, low) < 0) ||
			    mount("overlay", mnt, "overlay", 0, opts) < 0)
				_exit(1);
			_exit(0);
		}
		int st = 0;
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		ok = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	fk_tree_remove(AT_FDCWD, dir);
	return ok;
}

/* Makes every template's /etc under the state dir, if overlayfs can use them as lower layers;
 * otherwise leaves rt->etc_templates NULL (each box copies /etc). */
static void rt_etc_templates(fk_rt *rt)
{
	size_t n;
	const fk_template *t = fk_templates(&n);
	char **v = calloc(n, sizeof(char *));
	bool ok = v != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		ok = asprintf(&v[i], "%s/.etc-%s", rt->state_dir, t[i].id) >= 0;
		if (!ok) {
			v[i] = NULL;
			break;
		}
		fk_tree_remove(AT_FDCWD, v[i]);
		ok = fk__etc_make(v[i], &t[i], rt->egress_ns) == 0;
	}
	if (ok && overlay_works(rt->state_dir, v[0], -1)) {
		rt->etc_templates = v;
		return;
	}
	fprintf(stderr, "fake-e2b: no overlayfs: every sandbox gets its own copy of /etc (slower "
	                "create)\n");
	for (size_t i = 0; v && i < n; i++) {
		if (v[i])
			fk_tree_remove(AT_FDCWD, v[i]);
		free(v[i]);
	}
	free(v);
}

/* The lower layer of box `b`'s /etc, NULL when boxes copy /etc. */
static const char *box_etc_template(const fk_box *b)
{
	size_t n;
	const fk_template *t = fk_templates(&n);
	return b->rt->etc_templates ? b->rt->etc_templates[b->tpl - t] : NULL;
}

/* Owner ids of a committed layer's files moved into the range of the box copying them: a box
 * id N stored as another range's host id (or, from a box without a user namespace, as N
 * itself) becomes base + N. chown clears setuid bits: the mode is put back. */
static int box_from_layer_copy(fk_box *b, fk_err *err);

static uid_t shift_one(uid_t base, uid_t id)
{
	uid_t n = id >= FK_IDS_FIRST ? (id - FK_IDS_FIRST) % FK_IDS_SIZE
	                             : (id < FK_IDS_SIZE ? id : FK_ID_NOBODY);
	return base + n;
}

static int shift_entry(const fk_tree_ent *e, void *ud)
{
	uid_t base = *(const uid_t *)ud;
	const struct stat *st = e->st;
	uid_t u = shift_one(base, st->st_uid), g = shift_one(base, st->st_gid);
	if (!e->post && (u != st->st_uid || g != st->st_gid) &&
	    fchownat(e->dirfd, e->name, u, g, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) &&
	    (st->st_mode & (S_ISUID | S_ISGID)))
		fchmodat(e->dirfd, e->name, st->st_mode & 07777, 0);
	return FK_TREE_GO;
}

/* Iterative (fstree.h): the layer is as deep as the sandbox that made it. */
static int shift_ids(const char *path, uid_t base)
{
	return fk_tree_walk(AT_FDCWD, path, shift_entry, &base);
}

/* A new box's files from a committed layer (fk_box_commit): a copy of its root and, when boxes
 * have an /etc overlay, of its /etc upper layer; with a user namespace, owned by its range. */
static int box_from_layer(fk_box *b, fk_err *err)
{
	int rc = box_from_layer_copy(b, err);
	if (rc < 0 || !b->id_base)
		return rc;
	char p[4200];
	snprintf(p, sizeof(p), "%s/etc-upper", b->hdir);
	if (shift_ids(b->hroot, b->id_base) < 0 ||
	    (access(p, F_OK) == 0 && shift_ids(p, b->id_base) < 0))
		return fk__fail(err, FK_EIO, errno,
		                "giving the template's files to the sandbox: %s",
		                fk_strerror(errno));
	snprintf(p, sizeof(p), "%s/etc-lower", b->hdir);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", p, fk_strerror(errno));
	return 0;
}

static int box_from_layer_copy(fk_box *b, fk_err *err)
{
	char src[4200], dst[4200];
	snprintf(src, sizeof(src), "%s/root", b->layer_dir);
	if (fk_tree_copy(AT_FDCWD, src, AT_FDCWD, b->hroot) < 0)
		return fk__fail(err, FK_EIO, errno, "copying the template's files: %s",
		                fk_strerror(errno));
	if (!box_etc_template(b))
		return 0;
	snprintf(src, sizeof(src), "%s/etc-upper", b->layer_dir);
	snprintf(dst, sizeof(dst), "%s/etc-upper", b->hdir);
	if (access(src, F_OK) == 0 ? fk_tree_copy(AT_FDCWD, src, AT_FDCWD, dst) < 0
	                           : mkdir(dst, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "copying the template's /etc: %s",
		                fk_strerror(errno));
	snprintf(dst, sizeof(dst), "%s/etc-work", b->hdir);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", dst, fk_strerror(errno));
	snprintf(dst, sizeof(dst), "%s/etc", b->hroot);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", dst, fk_strerror(errno));
	return 0;
}

/* A user namespace per box needs idmapped mounts of the host's trees and an overlay over an
 * idmapped template (Linux 5.19), and a directory for the range claims (shared by every fake-e2b
 * on this machine). */
static void rt_userns(fk_rt *rt)
{
	const char *why = "overlay for /etc";
	if (rt->etc_templates) {
		why = "directory for id range claims";
		const char *dir = "/run/fake-e2b/idranges";
		if ((mkdir("/run/fake-e2b", 0700) == 0 || errno == EEXIST) &&
		    (mkdir(dir, 0700) == 0 || errno == EEXIST))
			rt->idrange_dir = strdup(dir);
	}
	if (rt->idrange_dir) {
		why = "user namespaces";
		int ns = fk_lx_userns_new(FK_IDS_FIRST, FK_IDS_SIZE);
		int usr = -1, etc = -1;
		if (ns >= 0) {
			why = "idmapped mounts";
			usr = fk_lx_idmapped_tree("/usr", ns, true, true);
			etc = fk_lx_idmapped_tree(rt->etc_templates[0], ns, false, true);
		}
		if (usr >= 0 && etc >= 0) {
			why = "overlay over an idmapped layer";
			rt->userns = overlay_works(rt->state_dir, rt->etc_templates[0], etc);
		}
		int fds[3] = {ns, usr, etc};
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	if (!rt->userns)
		fprintf(stderr,
		        "fake-e2b: no %s: sandboxes have NO user namespace (root inside is host "
		        "root with fewer capabilities)\n",
		        why);
}

/* The box's own id range and user namespace, kept for its whole life (its files are owned by
 * the range's ids across pause, resume and reboot). */
static int box_userns(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->userns || b->userns_fd >= 0)
		return 0;
	uint32_t k = 0;
	pthread_mutex_lock(&rt->lock);
	b->idrange_fd =
	    fk_lx_idrange_claim(rt->idrange_dir, FK_IDS_RANGES, &rt->idrange_cursor, &k);
	pthread_mutex_unlock(&rt->lock);
	if (b->idrange_fd < 0)
		return fk__fail(err, FK_EIO, errno, "no free id range for the sandbox: %s",
		                fk_strerror(errno));
	b->id_base = FK_IDS_FIRST + k * FK_IDS_SIZE;
	b->userns_fd = fk_lx_userns_new(b->id_base, FK_IDS_SIZE);
	if (b->userns_fd < 0)
		return fk__fail(err, FK_EIO, errno, "user namespace: %s", fk_strerror(errno));
	return 0;
}

/* mke2fs of `img` (`bytes` long): ext4 without a journal (a sandbox's files need no crash
 * consistency; no journal blocks taken from its size), no reserved blocks, an inode per 8 KiB,
 * tables initialised lazily so the sparse image stays small. */
static int run_mke2fs(const char *img, uint64_t bytes)
{
	char size[32];
	snprintf(size, sizeof(size), "%lluk", (unsigned long long)(bytes / 1024));
	char *argv[] = {"mke2fs",
	                "-q",
	                "-F",
	                "-t",
	                "ext4",
	                "-m",
	                "0",
	                "-i",
	                "8192",
	                "-O",
	                "^has_journal",
	                "-E",
	                "lazy_itable_init=1,nodiscard",
	                (char *)img,
	                size,
	                NULL};
	static const char *const paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid = -1;
	int rc = ENOENT;
	for (size_t i = 0; i < 2 && rc == ENOENT; i++)
		rc = posix_spawn(&pid, paths[i], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* A fresh ext4 image of `bytes` at `img` (sparse). */
static int image_make(const char *img, uint64_t bytes)
{
	int fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int rc = ftruncate(fd, (off_t)bytes);
	int e = errno;
	close(fd);
	if (rc < 0 || run_mke2fs(img, bytes) < 0) {
		e = rc < 0 ? e : errno;
		unlink(img);
		errno = e;
		return -1;
	}
	return 0;
}

/* The empty ext4 image of `bytes` every box's disk of that size is copied from:
 * <state>/.disk-template-<MiB>, made by mke2fs at its first use (one per disk size; freed with
 * the runtime). mke2fs costs 40-90 ms on the loaded test machine, copying its 600 KB of
 * metadata (a 1 GiB image) about 1 ms. NULL with errno if it cannot be made. */
static const char *disk_template(fk_rt *rt, uint64_t bytes)
{
	pthread_mutex_lock(&rt->disk_lock);
	fk_disk_tpl *t = rt->disk_tpls;
	while (t && t->bytes != bytes)
		t = t->next;
	int e = 0;
	if (!t && (t = calloc(1, sizeof(*t))) != NULL) {
		t->bytes = bytes;
		if (asprintf(&t->path, "%s/.disk-template-%llu", rt->state_dir,
		             (unsigned long long)(bytes >> 20)) < 0) {
			t->path = NULL;
			e = ENOMEM;
		} else {
			unlink(t->path); /* a crashed run's */
			if (image_make(t->path, bytes) < 0)
				e = errno;
		}
		if (e) {
			free(t->path);
			free(t);
			t = NULL;
		} else {
			t->next = rt->disk_tpls;
			rt->disk_tpls = t;
		}
	} else if (!t) {
		e = ENOMEM;
	}
	pthread_mutex_unlock(&rt->disk_lock);
	errno = e;
	return t ? t->path : NULL;
}

/* The state dir's file system's free space for an unprivileged writer (f_bavail: the root
 * reserve stays the host's), in bytes; 0 when it cannot be read. */
static uint64_t state_free(const fk_rt *rt)
{
	struct statvfs sv;
	return statvfs(rt->state_dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
}

/* FK_ENOSPC: `what` needs `need` bytes of the state dir's file system, which has less. */
static int no_room(const fk_rt *rt, const char *what, uint64_t need, fk_err *err)
{
	return fk__fail(err, FK_ENOSPC, ENOSPC,
	                "not enough disk space for %s: it needs %llu MiB, the state directory's "
	                "file system has %llu MiB free",
	                what, (unsigned long long)((need + (1u << 20) - 1) >> 20),
	                (unsigned long long)(state_free(rt) >> 20));
}

/* A box's disk of `bytes` at `img` (a sparse copy of the template, made fresh), mounted
 * detached: its fd. With `reserve`, the image's whole size is allocated first (fallocate: its
 * holes become unwritten extents, which read as zeros and take no time to make), so the box's
 * writes never need space of the state dir's file system that someone else may have taken;
 * ENOSPC when it does not fit. *discard_err as fk_lx_loop_mount's. */
static int disk_make(fk_rt *rt, const char *img, uint64_t bytes, bool reserve, int *discard_err)
{
	const char *tpl = disk_template(rt, bytes);
	if (!tpl)
		return -1;
	unlink(img); /* no sandbox of ours has this id: a crashed run's */
	int fd = -1, mnt = -1;
	if (fk_lx_sparse_copy(tpl, img) == 0 &&
	    (!reserve ||
	     ((fd = open(img, O_RDWR | O_CLOEXEC)) >= 0 && fallocate(fd, 0, 0, (off_t)bytes) == 0)))
		mnt = fk_lx_loop_mount(img, "ext4", discard_err);
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (mnt < 0) {
		unlink(img); /* what fallocate took goes back with it */
		errno = e;
	}
	return mnt;
}

/* e2fsck -p of an image a restore mounts again: nothing to do for one unmounted cleanly (its
 * server stopped, or died and the kernel let go of the mount); a host crash can leave one
 * unclean (the disks have no journal), which preen mode repairs or refuses. 0 (clean, or
 * repaired), -1 with errno EIO. */
static int run_e2fsck(const char *img)
{
	char *argv[] = {"e2fsck", "-p", (char *)img, NULL};
	static const char *const paths[] = {"/usr/sbin/e2fsck", "/sbin/e2fsck"};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid = -1;
	int rc = ENOENT;
	for (size_t i = 0; i < 2 && rc == ENOENT; i++)
		rc = posix_spawn(&pid, paths[i], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	/* 0 clean, 1 errors fixed; 2 and up: a reboot wanted, or not fixed */
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* The disk image `img` a closed box left, mounted again (detached): its fd, -1 with errno. Its
 * whole size is reserved again where disks are (it was at create; a no-op then), so the
 * promise holds for a disk kept across servers too. */
static int disk_reopen(fk_rt *rt, const char *img)
{
	struct stat st;
	if (stat(img, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	if (rt->disk_reserve) {
		int fd = open(img, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		int ok = fd >= 0 && fallocate(fd, 0, 0, st.st_size) == 0;
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (!ok) {
			errno = e;
			return -1;
		}
	}
	if (run_e2fsck(img) < 0)
		return -1;
	return fk_lx_loop_mount(img, "ext4", NULL);
}

/* The box's disk (its size cap): <state>/<id>.disk, an ext4 image holding everything of the
 * box (its "/", the /etc upper layer, its boot id), mounted detached for its whole life; its
 * init attaches a copy at <state>/<id> in the box's mount namespace. The host's mount table
 * never shows it, and a crashed server leaves only the image file. */
static int box_disk(fk_box *b, bool existing, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->disks || b->disk_fd >= 0)
		return 0;
	char *hdir = NULL, *hroot = NULL;
	free(b->disk_img);
	if (asprintf(&b->disk_img, "%s/%s.disk", rt->state_dir, b->id) < 0) {
		b->disk_img = NULL;
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	/* existing (restore): the image a closed box or a dead server left, checked first */
	b->disk_fd = existing
	                 ? disk_reopen(rt, b->disk_img)
	                 : disk_make(rt, b->disk_img, b->limits.disk_bytes, rt->disk_reserve, NULL);
	if (b->disk_fd < 0 && (errno == ENOSPC || errno == EDQUOT)) /* another create came first */
		return no_room(rt, "the sandbox's disk", b->limits.disk_bytes, err);
	if (b->disk_fd < 0)
		return fk__fail(err, FK_EIO, errno, "the sandbox's disk: %s", fk_strerror(errno));
	/* /proc/<our pid>, not /proc/self: the same path for every thread and any child */
	if (asprintf(&hdir, "/proc/%d/fd/%d", (int)getpid(), b->disk_fd) < 0 ||
	    asprintf(&hroot, "/proc/%d/fd/%d/root", (int)getpid(), b->disk_fd) < 0) {
		free(hdir);
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	free(b->hdir);
	free(b->hroot);
	b->hdir = hdir;
	b->hroot = hroot;
	return 0;
}

/* Can this machine give each box a disk (loop devices, mke2fs, the new mount API)? Tried
 * with a disk of the default size, which makes its template. */
static void rt_disks(fk_rt *rt)
{
	char *img;
	if (asprintf(&img, "%s/.disk-probe", rt->state_dir) < 0)
		return;
	fk_limits l;
	fk__policy_limits(NULL, &l);
	l.disk_bytes = (uint64_t)rt->default_disk_mb << 20;
	/* not reserved: this file system need not hold a whole disk to tell what it can do */
	int discard_err = 0;
	int fd = disk_make(rt, img, l.disk_bytes, false, &discard_err);
	int e = errno;
	/* can its space be reserved (fallocate)? Tried on the probe's first MiB, which its file
	 * system's metadata holds already */
	int rfd = fd < 0 ? -1 : open(img, O_RDWR | O_CLOEXEC);
	rt->disk_reserve = rfd >= 0 && fallocate(rfd, 0, 0, 1 << 20) == 0;
	int reserve_err = errno;
	if (rfd >= 0)
		close(rfd);
	/* each boot clones the disk's detached mount for the box's PID 1 (open_tree), which Linux
	 * allows from 6.15 on; an older kernel (Debian 12's 6.1) says EINVAL, and every create
	 * would fail: no disks there */
	int clone = fd < 0 ? -1
	                   : (int)syscall(SYS_open_tree, fd, "",
	                                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	const char *why =
	    fd < 0 ? "loop device, mke2fs" : "cloning a detached mount, Linux >= 6.15";
	if (fd >= 0 && clone < 0)
		e = errno;
	if (clone >= 0)
		close(clone);
	if (fd >= 0)
		close(fd);
	unlink(img);
	free(img);
	rt->disks = clone >= 0;
	struct statfs sf;
	if (statfs(rt->state_dir, &sf) == 0 &&
	    (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC))
		fprintf(stderr,
		        "fake-e2b: the state dir %s is in RAM (tmpfs): sandboxes' files take the "
		        "host's memory; give --state-dir a directory on disk\n",
		        rt->state_dir);
	if (!rt->disks)
		fprintf(stderr,
		        "fake-e2b: no per-sandbox disk (%s): %s; sandboxes' files "
		        "share the state dir's file system with NO size cap\n",
		        why, fk_strerror(e));
	if (rt->disks && !rt->disk_reserve)
		fprintf(
		    stderr,
		    "fake-e2b: sandboxes' disks cannot be reserved on the state dir's file system "
		    "(fallocate: %s): a create is refused when its disk does not fit the free "
		    "space, but a full file system fails the writes of every sandbox\n",
		    fk_strerror(reserve_err));
	if (rt->disks && discard_err)
		fprintf(
		    stderr,
		    "fake-e2b: discard stays on for sandboxes' loop devices (%s): a discard "
		    "through one (only the host's root can ask for one) would give back part of "
		    "its disk's reservation\n",
		    fk_strerror(discard_err));
}

/* A machine id of the box's own in its /etc (the upper layer of its overlay, or its copy): a new
 * box, from a layer or not, is a new machine. */
static int box_machine_id(fk_box *b, fk_err *err)
{
	char p[4200];
	if (box_etc_template(b))
		snprintf(p, sizeof(p), "%s/etc-upper/machine-id", b->hdir);
	else
		snprintf(p, sizeof(p), "%s/etc/machine-id", b->hroot);
	if (fk__etc_machine_id(p, fk__host_id(b, 0)) < 0)
		return fk__fail(err, FK_EIO, errno, "the sandbox's machine id: %s",
		                fk_strerror(errno));
	return 0;
}

int fk__backend_box_prepare(fk_box *b, fk_err *err)
{
	/* its disk must fit the state dir's file system (reserved below, disk_make): refused
	 * before anything of the box is made */
	if (b->rt->disks && b->disk_fd < 0 && b->limits.disk_bytes > state_free(b->rt))
		return no_room(b->rt, "the sandbox's disk", b->limits.disk_bytes, err);
	int rc = box_userns(b, err);
	if (rc < 0)
		return rc;
	/* 0700, the host's root's: a local user who knows a sandbox id cannot reach what its root
	 * left in its tree (a setuid copy of a shell owned by the box's root). Only the server
	 * and the box's PID 1 go through it, as the host's root, before PID 1 pivots into its
	 * root and enters its user namespace; the box's processes never see this path. */
	if ((mkdir(b->dir, 0700) < 0 && errno != EEXIST) || chmod(b->dir, 0700) < 0)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", b->dir, fk_strerror(errno));
	rc = box_disk(b, false, err);
	if (rc < 0)
		return rc;
	/* the disk's own top (attached at b->dir in the box's mount namespace): 0700 too */
	if (b->disk_fd >= 0 && chmod(b->hdir, 0700) < 0)
		return fk__fail(err, FK_EIO, errno, "chmod the sandbox's disk: %s",
		                fk_strerror(errno));
	if (b->layer_dir && access(b->hroot, F_OK) < 0) {
		rc = box_from_layer(b, err);
		if (rc < 0)
			return rc;
		box_prepare_fs(b);
		return box_machine_id(b, err);
	}
	bool fresh = mkdir(b->hroot, 0755) == 0;
	if (!fresh && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", b->root, fk_strerror(errno));
	/* the box's "/" belongs to its root */
	if (fresh && b->id_base && chown(b->hroot, b->id_base, b->id_base) < 0)
		return fk__fail(err, FK_EIO, errno, "chown %s: %s", b->root, fk_strerror(errno));
	if (fresh && box_etc_template(b)) {
		/* /etc = overlay of the runtime's template (mounted by the init); with a user
		 * namespace the template is seen through an idmapped mount at etc-lower */
		static const char *const sub[] = {"root/etc", "etc-upper", "etc-work", "etc-lower"};
		for (size_t i = 0; i < 4; i++) {
			char p[4200];
			snprintf(p, sizeof(p), "%s/%s", b->hdir, sub[i]);
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", p,
				                fk_strerror(errno));
			/* the upper layer's root is /etc's inode: root's inside the box */
			if (i == 1 && b->id_base && chown(p, b->id_base, b->id_base) < 0)
				return fk__fail(err, FK_EIO, errno, "chown %s: %s", p,
				                fk_strerror(errno));
		}
	} else if (fresh) {
		char etc[4200];
		snprintf(etc, sizeof(etc), "%s/etc", b->hroot);
		if (fk__etc_make(etc, b->tpl, b->rt->egress_ns) != 0)
			return fk__fail(err, FK_EIO, errno, "writing the box's /etc failed");
	}
	box_prepare_fs(b);
	return fresh ? box_machine_id(b, err) : 0;
}

#define COPY_WHAT "a copy of the sandbox's files"

/* A copy of a box's files out of its disk (a layer: commit, snapshot) needs what the disk
 * holds on the state dir's file system: refused up front when that is more than it has free.
 * *need: those bytes (0 without a disk: commit then moves the files, a copy shares the file
 * system the box already fills). */
static int copy_room(fk_box *b, uint64_t *need, fk_err *err)
{
	struct statvfs sv;
	*need = 0;
	if (b->disk_fd < 0 || fstatvfs(b->disk_fd, &sv) < 0)
		return 0;
	*need = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	return *need > state_free(b->rt) ? no_room(b->rt, COPY_WHAT, *need, err) : 0;
}

/* After a failed copy into `layer_dir`: removes it, and says ENOSPC when the copy ran out of
 * space (another writer took it meanwhile: less than a MiB is left), else `fallback`. */
static int copy_failed(fk_box *b, const char *layer_dir, uint64_t need, int fallback_errno,
                       const char *fallback, fk_err *err)
{
	bool full = need && state_free(b->rt) < (1u << 20);
	fk_tree_remove(AT_FDCWD, layer_dir);
	if (full)
		return no_room(b->rt, COPY_WHAT, need, err);
	return fk__fail(err, FK_EIO, fallback_errno, "%s", fallback);
}

int fk__backend_box_commit(fk_box *b, const char *layer_dir, fk_err *err)
{
	uint64_t need;
	int rc = copy_room(b, &need, err);
	if (rc < 0)
		return rc;
	if (mkdir(layer_dir, 0700) < 0)
		return fk__fail(err, errno == EEXIST ? FK_EEXIST : FK_EIO, errno, "mkdir %s: %s",
		                layer_dir, fk_strerror(errno));
	static const char *const parts[] = {"root", "etc-upper"};
	for (size_t i = 0; i < 2; i++) {
		char src[4200], dst[4200];
		snprintf(src, sizeof(src), "%s/%s", b->hdir, parts[i]);
		snprintf(dst, sizeof(dst), "%s/%s", layer_dir, parts[i]);
		bool failed;
		if (b->disk_fd >= 0) { /* from the box's disk: a copy (another file system) */
			failed = access(src, F_OK) == 0 &&
			         fk_tree_copy(AT_FDCWD, src, AT_FDCWD, dst) < 0;
		} else {
			failed = rename(src, dst) < 0 && errno != ENOENT;
		}
		if (failed) {
			int e = errno;
			char why[160];
			snprintf(why, sizeof(why), "moving the sandbox's files: %s",
			         fk_strerror(e));
			return copy_failed(b, layer_dir, need, e, why, err);
		}
	}
	return 0;
}

int fk__backend_box_copy(fk_box *b, const char *layer_dir, fk_err *err)
{
	uint64_t need;
	int rc = copy_room(b, &need, err);
	if (rc < 0)
		return rc;
	if (mkdir(layer_dir, 0700) < 0)
		return fk__fail(err, errno == EEXIST ? FK_EEXIST : FK_EIO, errno, "mkdir %s: %s",
		                layer_dir, fk_strerror(errno));
	static const char *const parts[] = {"root", "etc-upper"};
	for (size_t i = 0; i < 2; i++) {
		char src[4200], dst[4200];
		snprintf(src, sizeof(src), "%s/%s", b->hdir, parts[i]);
		snprintf(dst, sizeof(dst), "%s/%s", layer_dir, parts[i]);
		if (access(src, F_OK) < 0 && errno == ENOENT)
			continue;
		if (fk_tree_copy(AT_FDCWD, src, AT_FDCWD, dst) < 0) {
			int e = errno;
			char why[160];
			snprintf(why, sizeof(why), "copying the sandbox's files: %s",
			         fk_strerror(e));
			return copy_failed(b, layer_dir, need, e, why, err);
		}
	}
	return 0;
}

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
	int ready_fd;              /* write end: {stage, errno} */
	int cg_fds[FK_CG_MAX_FDS]; /* cgroup tasks files to join */
	int n_cg;
	char masked[5][4300]; /* /proc files hidden behind /dev/null */
	int n_masked;
	const struct sock_fprog *seccomp; /* installed last, with the capabilities dropped */
	int last_cap;
	int life_fd;     /* read end of the runtime's life pipe */
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

static void init_fail(struct init_args *a, int stage)
{
	int msg[2] = {stage, errno};
	if (write(a->ready_fd, msg, sizeof(msg)) < 0)
		_exit(126);
	_exit(127);
}

static void init_dev(struct init_args *a)
{
	if (mount("tmpfs", a->dev, "tmpfs", MS_NOSUID | MS_NOEXEC, a->dev_opts) < 0)
		init_fail(a, 20);
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
			init_fail(a, 21);
	}
	for (int i = 0; i < 4; i++)
		if (symlink(dev_link_targets[i], a->dev_links[i]) < 0)
			init_fail(a, 22);
	mkdir(a->dev_pts, 0755);
	mkdir(a->dev_shm, 01777);
	if (mount("devpts", a->dev_pts, "devpts", MS_NOSUID | MS_NOEXEC,
	          "newinstance,ptmxmode=0666,mode=0620") == 0) {
		if (symlink("pts/ptmx", a->dev_ptmx) < 0)
			init_fail(a, 23);
	}
	if (mount("tmpfs", a->dev_shm, "tmpfs", MS_NOSUID | MS_NODEV, a->shm_opts) < 0)
		init_fail(a, 24);
}

static void init_lo_up(struct init_args *a)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		init_fail(a, 30);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		init_fail(a, 31);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		init_fail(a, 32);
	close(s);
}

/* Reaps orphans; exits when the server is gone (EOF on `life_fd`, whose write end only the
 * server holds), which makes the kernel kill every process of the box: a crashed fake-e2b
 * leaves no sandbox running. */
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

static int init_main(void *arg)
{
	struct init_args *a = arg;
	/* out of the server's session: it may have a controlling terminal (fake-e2b started from
	 * a shell), which PID 1 and every process it adopts would otherwise share */
	if (setsid() < 0)
		init_fail(a, 26);
	for (int i = 0; i < a->n_cg; i++)
		if (write(a->cg_fds[i], "0", 1) < 0)
			init_fail(a, 1);
	/* its own cgroup namespace: /proc/self/cgroup shows "/", host cgroups stay unnamed */
	if (unshare(CLONE_NEWCGROUP) < 0)
		init_fail(a, 12);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		init_fail(a, 2);
	if (a->disk_tree_fd >= 0 && fk_lx_mount_move(a->disk_tree_fd, a->dir) < 0)
		init_fail(a, 19);
	if (mount(a->root, a->root, NULL, MS_BIND, NULL) < 0)
		init_fail(a, 3);
	if (a->etc[0]) {
		/* the overlay's options name its layers relative to the box's dir (the cwd here):
		 * the box's mountinfo shows them, and no host path may be seen there. The template
		 * is attached at etc-lower (idmapped, or bound), which the pivot below detaches. */
		if (chdir(a->dir) < 0 || (mkdir("etc-lower", 0755) < 0 && errno != EEXIST))
			init_fail(a, 16);
		if (a->etc_lower_fd >= 0
		        ? fk_lx_mount_move(a->etc_lower_fd, "etc-lower") < 0
		        : mount(a->etc_template, "etc-lower", NULL, MS_BIND, NULL) < 0)
			init_fail(a, 16);
		if (mount("overlay", a->etc, "overlay", MS_NOSUID,
		          "lowerdir=etc-lower,upperdir=etc-upper,workdir=etc-work") < 0)
			init_fail(a, 11);
	}
	for (int i = 0; i < a->n_binds; i++) {
		if (a->binds[i].tree_fd >= 0) {
			/* made read-only and idmapped by the server */
			if (fk_lx_mount_move(a->binds[i].tree_fd, a->binds[i].dst) < 0)
				init_fail(a, 4);
			continue;
		}
		if (mount(a->binds[i].src, a->binds[i].dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			init_fail(a, 4);
		if (mount(NULL, a->binds[i].dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
			init_fail(a, 5);
	}
	init_dev(a);
	if (mount("proc", a->proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		init_fail(a, 6);
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
			init_fail(a, 13);
	if (a->own_net)
		init_lo_up(a);
	if (a->anyip_len && fk_lx_netlink_send(a->anyip, a->anyip_len) < 0)
		init_fail(a, 33);
	if (a->own_addr_len && fk_lx_netlink_send(a->own_addr, a->own_addr_len) < 0)
		init_fail(a, 34);
	/* root inside has no capability over this namespace (the host's user namespace owns it):
	 * its bind program lets it bind ports below 1024 as E2B's root can, while the others stay
	 * under Linux's default 1024 as on E2B; without the program, everyone may */
	if (a->own_net && a->ports_open &&
	    fk_lx_write_str("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0") < 0)
		init_fail(a, 35);
	if (chdir(a->root) < 0)
		init_fail(a, 7);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		init_fail(a, 8);
	if (umount2(".", MNT_DETACH) < 0)
		init_fail(a, 9);
	if (chdir("/") < 0)
		init_fail(a, 10);
	/* the init is a copy of the server: hide its command line (it may carry the API key) and
	 * its memory from the box's users */
	prctl(PR_SET_NAME, "fk-init");
	if (a->argv_area && a->argv_len > 0) {
		memset(a->argv_area, 0, a->argv_len);
		memcpy(a->argv_area, "fk-init", a->argv_len > 8 ? 8 : a->argv_len - 1);
	}
	/* from here on the box's root, not the host's: its own user namespace (ids mapped to the
	 * box's range), and IPC and host name namespaces owned by it */
	if (a->userns_fd >= 0 && fk_lx_userns_enter_as_root(a->userns_fd) < 0)
		init_fail(a, 17);
	if (unshare(CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		init_fail(a, 18);
	/* E2B's host name (its /etc/hostname and /etc/hosts say the same) */
	if (sethostname(FK_BOX_HOSTNAME, sizeof(FK_BOX_HOSTNAME) - 1) < 0)
		init_fail(a, 27);
	prctl(PR_SET_DUMPABLE, 0);
	/* PID 1 only reaps from now on: no capabilities, the boxes' system call filter */
	if (a->seccomp && fk_lx_seccomp_install(a->seccomp) < 0)
		init_fail(a, 14);
	if (fk_lx_caps_limit(0, a->last_cap) < 0)
		init_fail(a, 15);
	/* stdin, stdout and stderr (the server's: its terminal, perhaps) become the box's
	 * /dev/null before the box can run anything; the pipes it keeps move above them */
	int life = fcntl(a->life_fd, F_DUPFD_CLOEXEC, 10);
	int ready = fcntl(a->ready_fd, F_DUPFD_CLOEXEC, 10);
	if (ready >= 0)
		a->ready_fd = ready;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (life < 0 || ready < 0 || fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
	    dup2(fd, 2) < 0)
		init_fail(a, 25);
	int ok[2] = {0, 0};
	if (write(a->ready_fd, ok, sizeof(ok)) < 0)
		_exit(126);
	/* nothing else: the init must not hold other processes' pipes (their end events wait
	 * for EOF) */
	close_range(3, (unsigned)life - 1, 0);
	close_range((unsigned)life + 1, ~0U, 0);
	init_loop(life);
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
static bool box_own_net(const fk_box *b)
{
	return b->net_none || b->rt->egress_ns;
}

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
	if (box_etc_template(b)) {
		snprintf(a->etc, sizeof(a->etc), "%s/etc", b->root);
		snprintf(a->etc_template, sizeof(a->etc_template), "%s", box_etc_template(b));
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

/* The host trees a box with a user namespace sees, idmapped to its range (a file of host root
 * is its root's) and read-only: made here, attached by its init. */
static int idmapped_trees(fk_box *b, struct init_args *a, fk_err *err)
{
	if (b->userns_fd < 0)
		return 0;
	for (int i = 0; i < a->n_binds; i++) {
		a->binds[i].tree_fd =
		    fk_lx_idmapped_tree(a->binds[i].src, b->userns_fd, true, true);
		if (a->binds[i].tree_fd < 0)
			return fk__fail(err, FK_EIO, errno, "idmapped mount of %s: %s",
			                a->binds[i].src, fk_strerror(errno));
	}
	if (a->etc[0]) {
		a->etc_lower_fd =
		    fk_lx_idmapped_tree(box_etc_template(b), b->userns_fd, false, true);
		if (a->etc_lower_fd < 0)
			return fk__fail(err, FK_EIO, errno, "idmapped mount of /etc: %s",
			                fk_strerror(errno));
	}
	return 0;
}

/* A box with a user namespace: its root (host uid id_base) may bind ports below 1024 in its
 * network namespace, nobody else there (BPF programs on its cgroup v2, kept until it is
 * destroyed). False when the machine cannot: then the namespace lets everyone. */
static bool box_bind_root(fk_box *b)
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

int fk__backend_box_boot(fk_box *b, fk_err *err)
{
	if (!b->rt->isolated)
		return 0;
	struct init_args *a = calloc(1, sizeof(*a));
	char *stack = malloc(INIT_STACK);
	int pipefd[2] = {-1, -1};
	int rc = 0;
	if (a)
		a->etc_lower_fd = a->disk_tree_fd = -1;
	if (!a || !stack) {
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		goto done;
	}
	init_args_fill(b, a);
	rc = idmapped_trees(b, a, err);
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
		goto done;
	a->ports_open = b->userns_fd >= 0 && box_own_net(b) && !box_bind_root(b);
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		rc = fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
		goto done;
	}
	a->ready_fd = pipefd[1];
	a->life_fd = b->rt->life_pipe[0];
	/* The network namespace belongs to the host's user namespace (made here, by the server):
	 * nothing in the box holds CAP_NET_ADMIN over it, and PID 1 configures it (lo, AnyIP
	 * route, address) with the server's capabilities. A user namespace for the box must come
	 * after that (unshare(CLONE_NEWUSER) in the init once the network is set up), never in
	 * these flags: with CLONE_NEWUSER here the network namespace would be the box's own. */
	int flags = CLONE_NEWPID | CLONE_NEWNS | (box_own_net(b) ? CLONE_NEWNET : 0) | SIGCHLD;
	pid_t pid = clone(init_main, stack + INIT_STACK, flags, a);
	if (pid < 0) {
		rc = fk__fail(err, FK_EIO, errno, "clone: %s", fk_strerror(errno));
		goto done;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	int msg[2] = {-1, EPIPE};
	ssize_t n;
	while ((n = read(pipefd[0], msg, sizeof(msg))) < 0 && errno == EINTR)
		;
	if (n != sizeof(msg) || msg[0] != 0) {
		rc = fk__fail(err, FK_EIO, msg[1], "sandbox init failed at stage %d: %s", msg[0],
		              fk_strerror(msg[1]));
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto done;
	}
	b->init_pid = pid;
	init_oom_exempt(pid);
	b->init_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (b->init_pidfd >= 0)
		fcntl(b->init_pidfd, F_SETFD, FD_CLOEXEC);
	rc = fk__egress_box_start(b, err);
	if (rc < 0)
		fk__backend_box_kill(b);
done:
	for (int i = 0; a && i < a->n_cg; i++)
		close(a->cg_fds[i]);
	for (int i = 0; a && i < a->n_binds; i++)
		if (a->binds[i].tree_fd >= 0)
			close(a->binds[i].tree_fd);
	if (a && a->etc_lower_fd >= 0)
		close(a->etc_lower_fd);
	if (a && a->disk_tree_fd >= 0)
		close(a->disk_tree_fd);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	free(stack);
	free(a);
	return rc;
}

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
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)b->init_pid);
	int ns = open(p, O_RDONLY | O_CLOEXEC);
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
		if (fk_lx_seccomp_compile(&fk__policy_seccomp, &rt->seccomp) < 0) {
			int e = errno;
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
		rt_etc_templates(rt);
		rt_userns(rt);
		rt_disks(rt);
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

/* ------------------------------------------------------------ box verbs */

void fk__backend_box_reset(fk_box *b)
{
	box_prepare_fs(b);
}

/* The kernel keeps PID 1 unreapable until every task of the namespace is reaped, and proc.c's
 * threads reap theirs once told to stop forwarding (the lifecycle did that first). */
bool fk__backend_box_kill(fk_box *b)
{
	bool had_init = b->init_pid > 0;
	fk__egress_box_stop(b); /* its sockets keep the namespace alive */
	if (had_init) {
		kill(b->init_pid, SIGKILL);
		fk__cg_box_kill(b); /* v2: the box's processes at once, a start's helper too */
		/* a frozen task cannot die (v1): thaw after the kill is queued */
		if (b->frozen)
			fk__cg_box_freeze(b, false);
		while (waitpid(b->init_pid, NULL, 0) < 0 && errno == EINTR)
			;
		b->init_pid = 0;
	}
	if (b->init_pidfd >= 0)
		close(b->init_pidfd);
	b->init_pidfd = -1;
	return had_init || b->rt->isolated;
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
	e->n_cg = 0;
	e->reserve_fd = -1;
	e->seccomp = b->rt->seccomp.filter ? &b->rt->seccomp : NULL;
	e->caps_keep = b->rt->caps_keep;
	e->last_cap = b->rt->last_cap;
	if (!e->isolated)
		return 0;
	return fk__cg_box_open_tasks(b, e->cg_fds, &e->n_cg, &e->reserve_fd, err);
}

/* ------------------------------------------------------------ keeping boxes */

/* The id range (index k) owning `path`, FK_IDS_RANGES when none does. */
static uint32_t owner_range(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0 || st.st_uid < FK_IDS_FIRST)
		return FK_IDS_RANGES;
	uint32_t k = (st.st_uid - FK_IDS_FIRST) / FK_IDS_SIZE;
	return k < FK_IDS_RANGES ? k : FK_IDS_RANGES;
}

int fk__backend_box_adopt(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	struct stat st;
	if (lstat(b->dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fk__fail(err, FK_ENOTFOUND, errno ? errno : ENOTDIR,
		                "sandbox %s has no files here", b->id);
	if (rt->disks) {
		int rc = box_disk(b, true, err);
		if (rc < 0)
			return rc == FK_EIO && errno == ENOENT
			           ? fk__fail(err, FK_ENOTFOUND, ENOENT, "sandbox %s has no disk",
			                      b->id)
			           : rc;
	}
	if (lstat(b->hroot, &st) < 0 || !S_ISDIR(st.st_mode))
		return fk__fail(err, FK_ENOTFOUND, ENOENT, "sandbox %s has no root", b->id);
	if (rt->userns) {
		/* its files' own range when it is free (nothing to change), else another */
		uint32_t k = owner_range(b->hroot);
		if (k < FK_IDS_RANGES) {
			pthread_mutex_lock(&rt->lock);
			rt->idrange_cursor = k;
			pthread_mutex_unlock(&rt->lock);
		}
		int rc = box_userns(b, err);
		if (rc < 0)
			return rc;
		if (k != (b->id_base - FK_IDS_FIRST) / FK_IDS_SIZE) {
			char p[4200];
			snprintf(p, sizeof(p), "%s/etc-upper", b->hdir);
			if (shift_ids(b->hroot, b->id_base) < 0 ||
			    (access(p, F_OK) == 0 && shift_ids(p, b->id_base) < 0))
				return fk__fail(err, FK_EIO, errno,
				                "giving the sandbox's files its new ids: %s",
				                fk_strerror(errno));
		}
	}
	box_prepare_fs(b);
	return 0;
}

typedef struct sweep_ctx {
	fk_rt *rt;
	const char *const *keep;
	size_t n_keep;
} sweep_ctx;

/* Is `name` a box's entry of this state dir: <id>/ (a directory) or <id>.disk? *id gets the id. */
static bool box_entry(int dfd, const char *name, char id[FK_BOX_ID_MAX + 1], bool *is_disk)
{
	size_t n = strlen(name);
	*is_disk = n > 5 && !strcmp(name + n - 5, ".disk");
	if (*is_disk)
		n -= 5;
	if (n == 0 || n > FK_BOX_ID_MAX)
		return false;
	snprintf(id, FK_BOX_ID_MAX + 1, "%.*s", (int)n, name);
	struct stat st;
	if (!fk__valid_id(id) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return *is_disk ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode);
}

/* A box whose files are in this state dir (a dead runtime's box there is ours to end). */
static bool sweep_ours(const char *id, void *ud)
{
	sweep_ctx *c = ud;
	if (!fk__valid_id(id))
		return false;
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s.disk", c->rt->state_dir, id);
	if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
		return true;
	snprintf(p, sizeof(p), "%s/%s", c->rt->state_dir, id);
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void sweep_ended(const char *id, int pid, int n, void *ud)
{
	(void)ud;
	fprintf(stderr,
	        "fake-e2b: sweep: sandbox %s: %d process(es) left by a dead server (pid %d) "
	        "killed, its cgroups removed\n",
	        id, n, pid);
}

static bool kept(const sweep_ctx *c, const char *id)
{
	for (size_t i = 0; i < c->n_keep; i++)
		if (!strcmp(c->keep[i], id))
			return true;
	return false;
}

/* Loop devices still backed by a file of this state dir (autoclear ones go with their last
 * mount, which the killed boxes held): each detached, and said. */
static void sweep_loops(fk_rt *rt)
{
	DIR *d = opendir("/sys/block");
	size_t n = strlen(rt->state_dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (strncmp(de->d_name, "loop", 4))
			continue;
		char p[300], file[4200] = "";
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		FILE *f = fopen(p, "re");
		bool got = f && fgets(file, sizeof(file), f);
		if (f)
			fclose(f);
		if (!got || strncmp(file, rt->state_dir, n) || file[n] != '/')
			continue;
		file[strcspn(file, "\n")] = 0;
		fprintf(stderr, "fake-e2b: sweep: /dev/%s still holds %s\n", de->d_name, file);
	}
	if (d)
		closedir(d);
}

void fk__backend_rt_sweep(fk_rt *rt, const char *const *keep, size_t n_keep)
{
	sweep_ctx c = {.rt = rt, .keep = keep, .n_keep = n_keep};
	if (rt->isolated)
		fk__cg_sweep_orphans(rt, sweep_ours, sweep_ended, &c);
	int dfd = open(rt->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
	for (struct dirent *de; d && (de = readdir(d));) {
		char id[FK_BOX_ID_MAX + 1];
		bool is_disk;
		if (de->d_name[0] == '.' || !box_entry(dfd, de->d_name, id, &is_disk) ||
		    kept(&c, id))
			continue;
		if (is_disk)
			unlinkat(dfd, de->d_name, 0);
		else
			fk_tree_remove(dfd, de->d_name);
		fprintf(stderr, "fake-e2b: sweep: removed %s/%s (no sandbox of this server's)\n",
		        rt->state_dir, de->d_name);
	}
	if (d)
		closedir(d);
	if (dfd >= 0)
		close(dfd);
	sweep_loops(rt);
}
