/*
 * fake-e2b/runtime/backend_disk.c — a box's disk (backend_int.h): an ext4 image of the box's size
 * under the state dir, made from a per-size template, reserved whole where the file system
 * allows, checked and mounted again when a kept box is restored, mounted detached.
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

/* Runs e2fsprogs' `tool` (/usr/sbin, else /sbin) with `argv`, its output to /dev/null: 0 when
 * it exits with at most `ok_max`, -1 with errno (EIO: a worse exit or a signal). */
static int run_e2fsprogs(const char *tool, char *const argv[], int ok_max)
{
	char paths[2][64];
	snprintf(paths[0], sizeof(paths[0]), "/usr/sbin/%s", tool);
	snprintf(paths[1], sizeof(paths[1]), "/sbin/%s", tool);
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
	if (!WIFEXITED(st) || WEXITSTATUS(st) > ok_max) {
		errno = EIO;
		return -1;
	}
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
	return run_e2fsprogs("mke2fs", argv, 0);
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
uint64_t fk__ns_state_free(const fk_rt *rt)
{
	struct statvfs sv;
	return statvfs(rt->state_dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
}

/* FK_ENOSPC: `what` needs `need` bytes of the state dir's file system, which has less. */
int fk__ns_no_room(const fk_rt *rt, const char *what, uint64_t need, fk_err *err)
{
	return fk__fail(err, FK_ENOSPC, ENOSPC,
	                "not enough disk space for %s: it needs %llu MiB, the state directory's "
	                "file system has %llu MiB free",
	                what, (unsigned long long)((need + (1u << 20) - 1) >> 20),
	                (unsigned long long)(fk__ns_state_free(rt) >> 20));
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
	/* 0 clean, 1 errors fixed; 2 and up: a reboot wanted, or not fixed */
	return run_e2fsprogs("e2fsck", argv, 1);
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

/* hdir and hroot through the box's disk (b->disk_fd). */
static int disk_paths(fk_box *b, fk_err *err)
{
	char *hdir = NULL, *hroot = NULL;
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

/* The box's disk (its size cap): <state>/<id>.disk, an ext4 image holding everything of the
 * box (its "/", the /etc upper layer, its boot id), mounted detached for its whole life; its
 * init attaches a copy at <state>/<id> in the box's mount namespace. The host's mount table
 * never shows it, and a crashed server leaves only the image file. */
int fk__ns_box_disk(fk_box *b, bool existing, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->disks || b->disk_fd >= 0)
		return 0;
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
		return fk__ns_no_room(rt, "the sandbox's disk", b->limits.disk_bytes, err);
	if (b->disk_fd < 0)
		return fk__fail(err, FK_EIO, errno, "the sandbox's disk: %s", fk_strerror(errno));
	return disk_paths(b, err);
}

int fk__ns_box_disk_live(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->disks || b->disk_fd >= 0)
		return 0;
	free(b->disk_img);
	if (asprintf(&b->disk_img, "%s/%s.disk", rt->state_dir, b->id) < 0) {
		b->disk_img = NULL;
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	b->disk_fd = fk_lx_loop_remount(b->disk_img, "ext4");
	if (b->disk_fd < 0)
		return fk__fail(err, FK_EIO, errno, "the sandbox's disk: %s", fk_strerror(errno));
	return disk_paths(b, err);
}

/* Can this machine give each box a disk (loop devices, mke2fs, the new mount API)? Tried
 * with a disk of the default size, which makes its template. */
void fk__ns_rt_disks(fk_rt *rt)
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
