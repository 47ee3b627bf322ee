/*
 * fake-e2b/runtime/files_read.c — downloads (envd's GET /files, docs/internals/wire.md "envd's
 * HTTP routes"): the file opened for reading as root inside the box, following symlinks there,
 * only a regular file outside /proc; the route streams the fd (api/envd/files_get.c).
 */
#define _GNU_SOURCE
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int fk_file_read_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                      int *fd_out, uint64_t *size_out, fk_err *err)
{
	fk_fctx c;
	*fd_out = -1;
	int rc = fk__fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	const char *why;
	int fd = fk__open_file_in(c.rootfd, c.abs, O_RDONLY, 0, &why);
	struct stat st;
	if (fd < 0) {
		rc = why ? fk__fail(err, FK_EINVAL, 0, "path '%s' %s", c.abs, why)
		     : errno == EISDIR
		         ? fk__fail(err, FK_EISDIR, EISDIR, "path '%s' is a directory", c.abs)
		     : errno == ENOENT || errno == ENOTDIR || errno == ELOOP
		         ? fk__fail(err, FK_ENOTFOUND, errno, "path '%s' does not exist", c.abs)
		         : fk__fail(err, fk__errno_code(errno), errno, "cannot open '%s': %s",
		                    c.abs, fk_strerror(errno));
		goto done;
	}
	if (fstat(fd, &st) < 0) {
		rc = fk__fail(err, fk__errno_code(errno), errno, "cannot open '%s': %s", c.abs,
		              fk_strerror(errno));
		close(fd);
		goto done;
	}
	*fd_out = fd;
	*size_out = (uint64_t)st.st_size;
done:
	fk__fctx_close(&c);
	return rc;
}
