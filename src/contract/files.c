/*
 * contract/files.c: the public calls of sandbox/files.h (directory listings,
 * streamed reads and writes) and their free functions. Shared checks first
 * (aborted signal, NULL pointers, the path), then the provider's vtable.
 */
#define _GNU_SOURCE /* strerrordesc_np: async-safe, thread-safe (no locale, no buffer) */
#include "contract/provider.h"

#include <errno.h>
#include <sandbox/validate.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/err.h"

/* aborted signal, provider, id, path: in the order of the contract's file calls */
static int check_file_call(const sbx_provider *p, const char *id, const char *path,
                           const sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0)
		return error;
	if (!path)
		return sbx__missing(err, "path");
	return sbx_validate_path(path, strlen(path), err);
}

void sbx_dir_free(sbx_dir *dir)
{
	if (!dir)
		return;
	for (size_t i = 0; i < dir->count; i++)
		sbx__free(dir->entries[i].name);
	sbx__free(dir->entries);
	sbx__free(dir);
}

int sbx_sandbox_list_dir(sbx_dir **out, sbx_provider *p, const char *id, const char *path,
                         sbx_signal *sig, sbx_error *err)
{
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT, out, NULL, err)) < 0 ||
	    (error = check_file_call(p, id, path, sig, err)) < 0)
		return error;
	if (!p->vt->list_dir)
		return sbx__unsupported(err, p, "list_dir");
	if ((error = p->vt->list_dir(p->impl, out, id, path, sig, err)) < 0) {
		sbx_dir_free(*out);
		*out = NULL;
	}
	return error;
}

static int check_file_options(const sbx_file_options *o, sbx_error *err)
{
	if (o->version != SBX_FILE_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_file_options version %u",
		                      o->version);
	return 0;
}

int sbx_sandbox_read_file_to(sbx_read_result *out, sbx_provider *p, const char *id,
                             const char *path, sbx_sink_fn sink, void *payload,
                             const sbx_file_options *opts, sbx_signal *sig, sbx_error *err)
{
	static const sbx_file_options defaults = SBX_FILE_OPTIONS_INIT;
	int error;

	if (out)
		memset(out, 0, sizeof(*out));
	if ((error = check_file_call(p, id, path, sig, err)) < 0)
		return error;
	if (!out)
		return sbx__missing(err, "out");
	if (!sink)
		return sbx__missing(err, "sink");
	if (!opts)
		opts = &defaults;
	if ((error = check_file_options(opts, err)) < 0)
		return error;
	if (!p->vt->read_stream)
		return sbx__unsupported(err, p, "read_stream");
	if ((error = p->vt->read_stream(p->impl, out, id, path, sink, payload, opts, sig, err)) < 0)
		memset(out, 0, sizeof(*out));
	return error;
}

int sbx_sandbox_write_file_from(sbx_provider *p, const char *id, const char *path,
                                sbx_input_fn source, void *payload, const sbx_file_options *opts,
                                sbx_signal *sig, sbx_error *err)
{
	static const sbx_file_options defaults = SBX_FILE_OPTIONS_INIT;
	int error;

	if ((error = check_file_call(p, id, path, sig, err)) < 0)
		return error;
	if (!source)
		return sbx__missing(err, "source");
	if (!opts)
		opts = &defaults;
	if ((error = check_file_options(opts, err)) < 0)
		return error;
	if (!p->vt->write_stream)
		return sbx__unsupported(err, p, "write_stream");
	return p->vt->write_stream(p->impl, id, path, source, payload, opts, sig, err);
}

/* An fd as a sink or source; errno of a failed write(2)/read(2) is kept for the message. */
typedef struct fd_io {
	int fd;
	int saved_errno;
} fd_io;

static int fd_sink(const unsigned char *data, size_t len, void *payload)
{
	fd_io *f = payload;
	while (len > 0) {
		ssize_t n = write(f->fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			f->saved_errno = n < 0 ? errno : EIO;
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int fd_source(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	fd_io *f = payload;
	ssize_t n;
	do
		n = read(f->fd, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		f->saved_errno = errno;
		return -1;
	}
	*len_out = (size_t)n;
	return 0;
}

/* A callback's failure worded with the fd's errno. */
static int fd_error(int error, const fd_io *f, const char *what, sbx_error *err)
{
	char msg[128];
	if (error == SBX_EUSER && f->saved_errno && err) {
		snprintf(msg, sizeof(msg), "%s file descriptor %d failed: %s", what, f->fd,
		         strerrordesc_np(f->saved_errno) ? strerrordesc_np(f->saved_errno) : "?");
		sbx_error_clear(err);
		sbx__error_set(err, SBX_EUSER, "%s", msg);
	}
	return error;
}

int sbx_sandbox_read_file_fd(sbx_read_result *out, sbx_provider *p, const char *id,
                             const char *path, int fd, const sbx_file_options *opts,
                             sbx_signal *sig, sbx_error *err)
{
	fd_io f = {fd, 0};
	if (fd < 0) {
		if (out)
			memset(out, 0, sizeof(*out));
		return sbx__error_set(err, SBX_EINVALID, "fd is negative");
	}
	return fd_error(sbx_sandbox_read_file_to(out, p, id, path, fd_sink, &f, opts, sig, err), &f,
	                "writing to", err);
}

int sbx_sandbox_write_file_fd(sbx_provider *p, const char *id, const char *path, int fd,
                              const sbx_file_options *opts, sbx_signal *sig, sbx_error *err)
{
	fd_io f = {fd, 0};
	if (fd < 0)
		return sbx__error_set(err, SBX_EINVALID, "fd is negative");
	return fd_error(sbx_sandbox_write_file_from(p, id, path, fd_source, &f, opts, sig, err), &f,
	                "reading from", err);
}
