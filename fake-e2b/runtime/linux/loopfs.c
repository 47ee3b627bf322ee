/*
 * fake-e2b/runtime/linux/loopfs.c — image files as detached mounts (loopfs.h).
 */
#define _GNU_SOURCE
#include "loopfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define LOOP_MAJOR_NR 7
#define COPY_BUF      (256 * 1024)

/* Discard off on loop device `n`: a discard through it punches a hole in the image, which would
 * give back space the image's reservation (fallocate) holds. 0, or -1 with errno. */
static int loop_nodiscard(int n)
{
	char path[96];
	snprintf(path, sizeof(path), "/sys/block/loop%d/queue/discard_max_bytes", n);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, "0", 1);
	int e = errno;
	close(fd);
	errno = w == 1 ? 0 : e;
	return w == 1 ? 0 : -1;
}

/* A free loop device configured over `imgfd` (autoclear, discard off: *discard_err is 0 or
 * why discard stays on); its fd, and its path in `dev`. */
static int loop_attach(int imgfd, char *dev, size_t size, int *discard_err)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -1;
	int e = EBUSY;
	/* another process may take the device we were told is free: try again */
	for (int tries = 0; tries < 64; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			e = errno;
			break;
		}
		snprintf(dev, size, "/dev/loop%d", n);
		int fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT &&
		    mknod(dev, S_IFBLK | 0600, makedev(LOOP_MAJOR_NR, (unsigned)n)) == 0)
			fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			e = errno;
			break;
		}
		struct loop_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)imgfd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
			close(ctl);
			*discard_err = loop_nodiscard(n) == 0 ? 0 : errno;
			return fd;
		}
		e = errno;
		close(fd);
		if (e != EBUSY)
			break;
	}
	close(ctl);
	errno = e;
	return -1;
}

/* One option of the mount being made (fsconfig): 0, or -1 with errno. */
static int fs_opt(int fs, const char *key, const char *value)
{
	return (int)syscall(SYS_fsconfig, fs, value ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, key,
	                    value, 0);
}

int fk_lx_loop_mount(const char *img, const char *fstype, int *discard_err)
{
	int unused;
	if (!discard_err)
		discard_err = &unused;
	*discard_err = 0;
	int imgfd = open(img, O_RDWR | O_CLOEXEC);
	if (imgfd < 0)
		return -1;
	char dev[64];
	int loopfd = loop_attach(imgfd, dev, sizeof(dev), discard_err);
	int e = errno;
	close(imgfd); /* the loop device holds the file */
	if (loopfd < 0) {
		errno = e;
		return -1;
	}
	int mnt = -1;
	int fs = (int)syscall(SYS_fsopen, fstype, FSOPEN_CLOEXEC);
	/* ext4: no lazy inode table init, which would zero every table in the background (the
	 * image's holes read as zeros already); no discard, which would punch holes in the image;
	 * an error in its metadata makes it read-only, so every later write fails (EROFS) rather
	 * than seeming to succeed */
	bool ext4 = strcmp(fstype, "ext4") == 0;
	if (fs >= 0 && fs_opt(fs, "source", dev) == 0 &&
	    (!ext4 ||
	     (fs_opt(fs, "noinit_itable", NULL) == 0 && fs_opt(fs, "nodiscard", NULL) == 0 &&
	      fs_opt(fs, "errors", "remount-ro") == 0)) &&
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
	e = errno;
	if (fs >= 0)
		close(fs);
	/* the mount holds the device now; without one, closing it detaches (autoclear) */
	close(loopfd);
	errno = e;
	return mnt;
}

/* Does loop device `fd` read the file `st` (its device and inode)? */
static bool loop_backs(int fd, const struct stat *st)
{
	struct loop_info64 li;
	return ioctl(fd, LOOP_GET_STATUS64, &li) == 0 && li.lo_device == (uint64_t)st->st_dev &&
	       li.lo_inode == (uint64_t)st->st_ino;
}

int fk_lx_loop_remount(const char *img, const char *fstype)
{
	struct stat st;
	char real[4096];
	if (stat(img, &st) < 0 || !realpath(img, real))
		return -1;
	DIR *d = opendir("/sys/block");
	int mnt = -1, e = ENOENT;
	for (struct dirent *de; d && mnt < 0 && (de = readdir(d));) {
		int n;
		char p[300], file[4096] = "";
		if (sscanf(de->d_name, "loop%d", &n) != 1)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		FILE *f = fopen(p, "re");
		bool got = f && fgets(file, sizeof(file), f);
		if (f)
			fclose(f);
		file[strcspn(file, "\n")] = 0;
		if (!got || strcmp(file, real))
			continue;
		snprintf(p, sizeof(p), "/dev/loop%d", n);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || !loop_backs(fd, &st)) { /* the name said so; the device did not */
			if (fd >= 0)
				close(fd);
			continue;
		}
		/* through the fd: the device checked, whatever the name now stands for */
		char src[64];
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
		int fs = (int)syscall(SYS_fsopen, fstype, FSOPEN_CLOEXEC);
		if (fs >= 0 && fs_opt(fs, "source", src) == 0 &&
		    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
			mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
		e = errno;
		if (fs >= 0)
			close(fs);
		/* still ours once mounted: the mount is of the superblock on this image */
		if (mnt >= 0 && !loop_backs(fd, &st)) {
			close(mnt);
			mnt = -1;
			e = ESTALE;
		}
		close(fd);
	}
	if (d)
		closedir(d);
	errno = e;
	return mnt;
}

int fk_lx_sparse_copy(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	char *buf = malloc(COPY_BUF);
	struct stat st;
	int rc = out >= 0 && buf && fstat(in, &st) == 0 && ftruncate(out, st.st_size) == 0 ? 0 : -1;
	if (!buf)
		errno = ENOMEM;
	for (off_t pos = 0; rc == 0 && pos < st.st_size;) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0) {
			if (errno != ENXIO) /* ENXIO: no data after pos */
				rc = -1;
			break;
		}
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0) {
			rc = -1;
			break;
		}
		while (rc == 0 && data < hole) {
			size_t want =
			    (size_t)(hole - data) < COPY_BUF ? (size_t)(hole - data) : COPY_BUF;
			ssize_t n = pread(in, buf, want, data);
			if (n > 0 && pwrite(out, buf, (size_t)n, data) != n)
				n = -1;
			if (n <= 0) {
				if (n == 0)
					errno = EIO; /* the file shrank */
				rc = -1;
			}
			data += n > 0 ? n : 0;
		}
		pos = hole;
	}
	int e = errno;
	free(buf);
	if (out >= 0 && close(out) < 0 && rc == 0) {
		e = errno;
		rc = -1;
	}
	close(in);
	errno = e;
	return rc;
}
