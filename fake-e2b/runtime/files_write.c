/*
 * fake-e2b/runtime/files_write.c — uploads (envd's POST /files, docs/internals/wire.md "envd's
 * HTTP routes"): the target resolved, its missing parents made and given to the user, the file
 * opened as root following symlinks inside the box, given to the user, truncated and stripped of
 * its old metadata; then a writer that takes the bytes and the X-Metadata-* attributes.
 */
#define _GNU_SOURCE
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

struct fk_writer {
	int fd;
	char *path;
};

static int open_for_write(fk_fctx *c, fk_err *err)
{
	int pfd = fk__mkdir_parent_of(c, c->abs, err);
	if (pfd < 0)
		return pfd;
	close(pfd);
	/* one open that follows a final symlink inside the box and creates its target if needed;
	 * no O_TRUNC: an existing file is chowned to the user before it is truncated (envd
	 * upload.go), a new one is chowned the same way */
	const char *why;
	int fd = fk__open_file_in(c->rootfd, c->abs, O_WRONLY | O_CREAT, 0644, &why);
	if (fd < 0) {
		if (why)
			return fk__fail(err, FK_EINVAL, EINVAL, "path '%s' %s", c->abs, why);
		if (errno == EISDIR)
			return fk__fail(err, FK_EISDIR, EISDIR, "path is a directory: %s", c->abs);
		return fk__fail(err, fk__errno_code(errno), errno, "error opening file '%s': %s",
		                c->abs, fk_strerror(errno));
	}
	/* without root (degraded mode) files simply stay ours */
	bool chown_ok =
	    fchown(fd, fk__host_id(c->b, c->user.uid), fk__host_id(c->b, c->user.gid)) == 0 ||
	    geteuid() != 0;
	if (!chown_ok || ftruncate(fd, 0) < 0) {
		int e = errno;
		close(fd);
		return fk__fail(err, fk__errno_code(e), e, "error opening file '%s': %s", c->abs,
		                fk_strerror(e));
	}
	fk__meta_clear(fd);
	return fd;
}

int fk_file_resolve(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    char **abs_path_out, fk_err *err)
{
	fk_fctx c;
	*abs_path_out = NULL;
	int rc = fk__fctx_open(&c, rt, box_id, path ? path : "", user, err);
	if (rc == 0 && !(*abs_path_out = strdup(c.abs)))
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	fk__fctx_close(&c);
	return rc;
}

int fk_file_write_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                       fk_writer **out, char **abs_path_out, fk_err *err)
{
	fk_fctx c;
	*out = NULL;
	if (abs_path_out)
		*abs_path_out = NULL;
	int rc = fk__fctx_open(&c, rt, box_id, path, user, err);
	if (rc == 0)
		rc = open_for_write(&c, err);
	if (rc >= 0) {
		fk_writer *w = calloc(1, sizeof(*w));
		char *ap = abs_path_out ? strdup(c.abs) : NULL;
		if (!w || (abs_path_out && !ap)) {
			close(rc);
			free(w);
			free(ap);
			rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		} else {
			w->fd = rc;
			w->path = NULL;
			*out = w;
			if (abs_path_out)
				*abs_path_out = ap;
			rc = 0;
		}
	}
	fk__fctx_close(&c);
	return rc;
}

int fk_writer_write(fk_writer *w, const void *data, size_t len, fk_err *err)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fk__fail(err, fk__errno_code(errno), errno, "write: %s",
			                fk_strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fk_writer_set_meta(fk_writer *w, const char *key, const char *value, fk_err *err)
{
	char name[300];
	snprintf(name, sizeof(name), "user.e2b.%s", key);
	for (char *s = name; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
	if (fsetxattr(w->fd, name, value, strlen(value), 0) < 0)
		return fk__fail(err, fk__errno_code(errno), errno, "setxattr: %s",
		                fk_strerror(errno));
	return 0;
}

int fk_writer_close(fk_writer *w, fk_err *err)
{
	if (!w)
		return 0;
	int rc = 0;
	if (close(w->fd) < 0 && errno != EINTR)
		rc = fk__fail(err, fk__errno_code(errno), errno, "close: %s", fk_strerror(errno));
	free(w->path);
	free(w);
	return rc;
}
