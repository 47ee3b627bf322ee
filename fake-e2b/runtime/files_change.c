/*
 * fake-e2b/runtime/files_change.c — envd's MakeDir, Remove and Move (docs/internals/wire.md
 * "Filesystem RPCs"): parents made for the user, recursive removal, a rename whose destination's
 * parents are made; none of them goes into the box's /proc, and Remove and Move never touch a
 * mount point of the box.
 */
#define _GNU_SOURCE
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether `base` in directory `pfd` is a mount point of the box (its mount differs from its
 * directory's; "." is the box's "/"). The server is in the host's mount namespace, where the
 * box's mount points (/usr, /etc, /dev, /proc...) are plain directories: the kernel's EBUSY
 * guards only the caller's own namespace, so removing one detached the box's mount, renaming one
 * carried it elsewhere and renaming onto one detached it. */
static bool is_mount_point(int pfd, const char *base)
{
	if (!strcmp(base, ".") || !strcmp(base, "/"))
		return true;
	struct statx sp, se;
	return statx(pfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sp) == 0 &&
	       statx(pfd, base, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &se) == 0 &&
	       (sp.stx_mask & se.stx_mask & STATX_MNT_ID) && sp.stx_mnt_id != se.stx_mnt_id;
}

int fk_file_mkdir(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                  fk_err *err)
{
	fk_fctx c;
	if (out)
		memset(out, 0, sizeof(*out));
	int rc = fk__fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	const char *base;
	int pfd = fk__open_parent(&c, c.abs, &base);
	rc = pfd >= 0 ? fk__refuse_proc(pfd, c.abs, err) : 0;
	if (pfd >= 0)
		close(pfd);
	if (rc < 0)
		goto done;
	int fd = fk__open_in(c.rootfd, c.abs, O_PATH, 0);
	if (fd >= 0) {
		struct stat st;
		bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
		close(fd);
		rc = dir ? fk__fail(err, FK_EEXIST, EEXIST, "directory '%s' already exists", c.abs)
		         : fk__fail(err, FK_ENOTDIR, EEXIST,
		                    "path '%s' already exists and is not a directory", c.abs);
		goto done;
	}
	fd = fk__mkdir_parents(&c, c.abs, err);
	if (fd < 0) {
		rc = fd;
		goto done;
	}
	close(fd);
	if (out)
		rc = fk__stat_abs(&c, c.abs, out, err);
done:
	fk__fctx_close(&c);
	return rc;
}

int fk_file_remove(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_err *err)
{
	fk_fctx c;
	int rc = fk__fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	if (!strcmp(c.abs, "/")) {
		rc = fk__fail(err, FK_EINVAL, 0, "cannot remove '/'");
		goto done;
	}
	const char *base;
	int pfd = fk__open_parent(&c, c.abs, &base);
	if (pfd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			rc = fk__fail(err, FK_EIO, errno, "remove '%s': %s", c.abs,
			              fk_strerror(errno));
		goto done;
	}
	if ((rc = fk__refuse_proc(pfd, c.abs, err)) < 0) {
		close(pfd);
		goto done;
	}
	if (is_mount_point(pfd, base)) {
		close(pfd);
		rc = fk__fail(err, FK_EINVAL, EBUSY, "remove '%s': a mount point of the sandbox",
		              c.abs);
		goto done;
	}
	/* O_PATH fds cannot be used with unlinkat's directory walk: reopen for reading */
	int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	if (dfd < 0 || fk_tree_remove(dfd, base) < 0)
		rc = fk__fail(err, fk__errno_code(errno), errno, "remove '%s': %s", c.abs,
		              fk_strerror(errno));
	if (dfd >= 0)
		close(dfd);
done:
	fk__fctx_close(&c);
	return rc;
}

int fk_file_move(fk_rt *rt, const char *box_id, const char *src, const char *dst, const char *user,
                 fk_entry *out, fk_err *err)
{
	fk_fctx c;
	char *dabs = NULL;
	int sfd = -1, dfd = -1;
	if (out)
		memset(out, 0, sizeof(*out));
	int rc = fk__fctx_open(&c, rt, box_id, src, user, err);
	if (rc < 0)
		goto done;
	if (!(dabs = fk__path_resolve(dst, c.user.home))) {
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		goto done;
	}
	const char *sbase, *dbase;
	sfd = fk__open_parent(&c, c.abs, &sbase);
	if (sfd < 0 || faccessat(sfd, sbase, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = fk__fail(err, FK_ENOTFOUND, errno, "path '%s' does not exist", c.abs);
		goto done;
	}
	dfd = fk__mkdir_parent_of(&c, dabs, err);
	if (dfd < 0) {
		rc = dfd;
		goto done;
	}
	dbase = fk__base_of(dabs);
	if ((rc = fk__refuse_proc(sfd, c.abs, err)) < 0 ||
	    (rc = fk__refuse_proc(dfd, dabs, err)) < 0)
		goto done;
	if (is_mount_point(sfd, sbase)) {
		rc = fk__fail(err, FK_EINVAL, EBUSY,
		              "move '%s' to '%s': a mount point of the sandbox", c.abs, dabs);
		goto done;
	}
	if (is_mount_point(dfd, dbase)) {
		rc = fk__fail(err, FK_EINVAL, EBUSY,
		              "move '%s' to '%s': '%s' is a mount point of the sandbox", c.abs,
		              dabs, dabs);
		goto done;
	}
	if (renameat(sfd, sbase, dfd, dbase) < 0) {
		rc = fk__fail(err, fk__errno_code(errno), errno, "move '%s' to '%s': %s", c.abs,
		              dabs, fk_strerror(errno));
		goto done;
	}
	if (out)
		rc = fk__stat_abs(&c, dabs, out, err);
done:
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	free(dabs);
	fk__fctx_close(&c);
	return rc;
}
