/*
 * fake-e2b/api/envd/files_post.c: POST /files (docs/internals/wire.md "envd's HTTP routes"):
 * multipart or octet-stream bodies streamed to disk as they arrive (a gzip
 * Content-Encoding inflated on the way, encoding.c), X-Metadata-* headers as
 * extended attributes, the token or a v1 signature.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "envd.h"

typedef struct upload {
	fk_call *c;
	char *user, *path_q;
	unsigned status; /* first error; 0 = fine */
	char msg[300];
	struct MHD_PostProcessor *pp;
	fk_writer *w;
	char *cur_abs;
	char *cur_name;
	size_t cur_written;
	uint64_t received; /* body bytes so far (capped at the app's max_upload) */
	uint64_t inflated; /* bytes out of the gzip body so far (capped the same) */
	fk_gunzip *gz;     /* Content-Encoding: gzip */
	json_t *results;
} upload;

static void upload_fail(upload *u, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void upload_fail(upload *u, unsigned status, const char *fmt, ...)
{
	if (u->status)
		return;
	u->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof(u->msg), fmt, ap);
	va_end(ap);
}

static void upload_close_part(upload *u)
{
	if (!u->w)
		return;
	fk_err err = {0};
	if (fk_writer_close(u->w, &err) < 0)
		upload_fail(u, fk_envd_file_error_status(fk_envd_code(err.code, &err)), "%s",
		            err.message);
	u->w = NULL;
	free(u->cur_abs);
	free(u->cur_name);
	u->cur_abs = u->cur_name = NULL;
}

static void upload_free(void *p)
{
	upload *u = p;
	upload_close_part(u);
	if (u->pp)
		MHD_destroy_post_processor(u->pp);
	fk_gunzip_free(u->gz);
	json_decref(u->results);
	free(u->user);
	free(u->path_q);
	free(u);
}

/* Copy X-Metadata-<key> headers to the file's user.e2b.<key> xattrs. */
static enum MHD_Result meta_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	upload *u = cls;
	if (u->w && strncasecmp(key, "X-Metadata-", 11) == 0 && key[11]) {
		char k[128];
		size_t i;
		for (i = 0; key[11 + i] && i < sizeof(k) - 1; i++)
			k[i] = (char)((key[11 + i] >= 'A' && key[11 + i] <= 'Z') ? key[11 + i] + 32
			                                                         : key[11 + i]);
		k[i] = '\0';
		/* the reply carries what was stored (envd reads it back) */
		json_t *last = json_array_get(u->results, json_array_size(u->results) - 1);
		if (fk_writer_set_meta(u->w, k, value, NULL) == 0 && last) {
			json_t *m = json_object_get(last, "metadata");
			if (!m)
				json_object_set_new(last, "metadata", m = json_object());
			json_object_set_new(m, k, json_string(value));
		}
	}
	return MHD_YES;
}

static void upload_open_part(upload *u, const char *filename)
{
	const char *target = u->path_q && *u->path_q ? u->path_q : filename;
	fk_err err = {0};
	upload_close_part(u);
	if (!target || !*target) {
		upload_fail(u, 400, "%s", "missing path: give the path query or a part filename");
		return;
	}
	/* a path given twice is refused before the file is opened (opening truncates it) */
	char *resolved = NULL;
	int rc = fk_file_resolve(u->c->app->rt, u->c->sb->id, target, u->user, &resolved, &err);
	size_t i;
	json_t *v;
	json_array_foreach(u->results, i, v)
	{
		if (rc == 0 && !strcmp(json_string_value(json_object_get(v, "path")), resolved)) {
			upload_fail(u, 400, "path '%s' was given more than once", resolved);
			free(resolved);
			return;
		}
	}
	free(resolved);
	if (rc == 0)
		rc = fk_file_write_open(u->c->app->rt, u->c->sb->id, target, u->user, &u->w,
		                        &u->cur_abs, &err);
	if (rc < 0) {
		if (rc == FK_ENOUSER)
			upload_fail(u, 401, "invalid username: '%s'", u->user ? u->user : "");
		else
			upload_fail(u, fk_envd_file_error_status(fk_envd_code(rc, &err)), "%s",
			            err.message);
		u->w = NULL;
		return;
	}
	const char *abs = u->cur_abs ? u->cur_abs : target;
	const char *base = strrchr(abs, '/');
	json_array_append_new(u->results, json_pack("{s:s,s:s,s:s}", "path", abs, "name",
	                                            base ? base + 1 : abs, "type", "file"));
	u->cur_name = filename ? strdup(filename) : NULL;
	u->cur_written = 0;
	MHD_get_connection_values(u->c->req->conn, MHD_HEADER_KIND, meta_header, u);
}

static void upload_write(upload *u, const char *data, size_t len)
{
	fk_err err = {0};
	if (u->status || !u->w || !len)
		return;
	if (fk_writer_write(u->w, data, len, &err) < 0 && err.code == FK_ENOSPC) {
		/* envd's words (upload.go): the request's Content-Length when it has one */
		const char *cl = fk_header(u->c->req, "Content-Length");
		unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
		if (n > 0)
			upload_fail(
			    u, 507,
			    "attempted to write %llu bytes: not enough disk space available", n);
		else
			upload_fail(u, 507, "not enough disk space available");
	} else if (err.code) {
		upload_fail(u, fk_envd_file_error_status(fk_envd_code(err.code, &err)), "%s",
		            err.message);
	}
	u->cur_written += len;
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
	upload *u = cls;
	if (u->status || !key || strcmp(key, "file") != 0)
		return MHD_YES;
	int same = u->w && u->cur_written == 0 &&
	           ((!filename && !u->cur_name) ||
	            (filename && u->cur_name && !strcmp(filename, u->cur_name)));
	if (off == 0 && !same)
		upload_open_part(u, filename);
	upload_write(u, data, size);
	return MHD_YES;
}

/* The body as sent (or as inflated), to the multipart parser or the file. */
static int upload_body(void *ud, const char *data, size_t len)
{
	upload *u = ud;
	if (!u->pp && !u->w && !u->status && json_array_size(u->results) == 0)
		upload_open_part(u, NULL); /* a gzip body opens its file once it inflates */
	if (u->pp) {
		if (MHD_post_process(u->pp, data, len) != MHD_YES)
			upload_fail(u, 400, "%s", "malformed multipart body");
	} else {
		upload_write(u, data, len);
	}
	return u->status ? -1 : 0;
}

/* What a gzip body inflates to counts against the same limit (a small body may inflate to
 * gigabytes). */
static int upload_inflated(void *ud, const char *data, size_t len)
{
	upload *u = ud;
	if (len > u->c->app->max_upload - u->inflated) {
		upload_fail(u, 413, "upload larger than %llu MiB",
		            (unsigned long long)(u->c->app->max_upload >> 20));
		return -1;
	}
	u->inflated += len;
	return upload_body(u, data, len);
}

static void files_sink(fk_req *r, const char *data, size_t len)
{
	upload *u = r->sink_state;
	if (!u || u->status)
		return;
	if (len > u->c->app->max_upload - u->received) {
		upload_fail(u, 413, "upload larger than %llu MiB",
		            (unsigned long long)(u->c->app->max_upload >> 20));
		return;
	}
	u->received += len;
	if (!u->gz)
		upload_body(u, data, len);
	else if (fk_gunzip_feed(u->gz, data, len, upload_inflated, u) == -1)
		upload_fail(u, 400, "%s", "error decompressing request body: gzip: invalid data");
}

/* POST /files, first call: checks, then stream the body to disk as it arrives. */
void fk_envd_files_post_begin(fk_call *c)
{
	fk_req *r = c->req;
	upload *u = calloc(1, sizeof(*u));
	if (!u)
		return;
	u->c = c;
	u->results = json_array();
	r->sink = files_sink;
	r->sink_state = u;
	r->sink_free = upload_free;
	const char *id = c->sandbox_id;
	c->sb = id ? fk_registry_acquire(c->app->reg, id) : NULL;
	if (!c->sb || !fk_sandbox_ensure_running(c->app->reg, c->sb)) {
		u->status = 502;
		return;
	}
	int bad_path = 0, bad_user = 0;
	u->path_q = fk_query_strict(r, "path", &bad_path);
	u->user = fk_query_strict(r, "username", &bad_user);
	if (bad_path || bad_user) { /* %00 would cut the path short */
		upload_fail(u, 400, "invalid %s: badly escaped or holds a NUL byte",
		            bad_path ? "path" : "username");
		return;
	}
	if (u->user && !*u->user) {
		free(u->user);
		u->user = NULL;
	}
	const char *denied = fk_envd_files_auth(c, "write", u->path_q, u->user ? u->user : "");
	if (denied) {
		upload_fail(u, 401, "%s", denied);
		return;
	}
	if (c->fault.kind == FK_FAULT_RESPOND) {
		u->status = 1; /* answered by the router (fault); write nothing */
		return;
	}
	const char *cl = fk_header(r, "Content-Length");
	if (cl && strtoull(cl, NULL, 10) > c->app->max_upload) {
		upload_fail(u, 413, "upload larger than %llu MiB",
		            (unsigned long long)(c->app->max_upload >> 20));
		return;
	}
	int gzip = 0;
	const char *ce = fk_header(r, "Content-Encoding");
	if (fk_envd_content_encoding(ce, &gzip) < 0) {
		upload_fail(
		    u, 400,
		    "error decompressing request body: unsupported Content-Encoding: %.100s, "
		    "supported: [gzip]",
		    ce);
		return;
	}
	if (gzip && !(u->gz = fk_gunzip_new())) {
		upload_fail(u, 500, "%s", "out of memory");
		return;
	}
	const char *ct = fk_header(r, "Content-Type");
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		u->pp = MHD_create_post_processor(r->conn, 64 * 1024, post_iter, u);
		if (!u->pp)
			upload_fail(u, 400, "%s", "malformed multipart body");
	} else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
		if (!u->path_q || !*u->path_q)
			upload_fail(u, 400, "%s", "path is required for application/octet-stream");
		else if (!gzip) /* gzip: once the body proves to be gzip, as envd (upload_body) */
			upload_open_part(u, NULL);
	} else {
		upload_fail(u, 400, "unsupported Content-Type: %.100s", ct ? ct : "(none)");
	}
}

int fk_envd_files_post_refused(fk_call *c)
{
	const upload *u = c->req->sink == files_sink ? c->req->sink_state : NULL;
	return u && u->status > 1; /* 1: a fault answers it */
}

enum MHD_Result fk_envd_files_post_finish(fk_call *c)
{
	fk_req *r = c->req;
	upload *u = r->sink_state;
	if (!u)
		return fk_reply_error(r, 500, "out of memory");
	if (u->status == 502)
		return fk_envd_not_found_502(r, c->sandbox_id);
	if (!u->status && u->gz && fk_gunzip_finish(u->gz) < 0)
		upload_fail(u, 400, "%s", "error decompressing request body: unexpected EOF");
	if (!u->status && u->gz && !u->pp && json_array_size(u->results) == 0)
		upload_open_part(u, NULL); /* a gzip body of no bytes: an empty file */
	if (!u->status && u->pp && json_array_size(u->results) == 0 && u->path_q && *u->path_q)
		upload_open_part(u, NULL); /* a multipart body whose file part was empty */
	upload_close_part(u);
	if (!u->status && json_array_size(u->results) == 0)
		upload_fail(u, 400, "%s", "no file part in the request");
	if (u->status)
		return fk_reply_error(r, u->status, "%s", u->msg);
	return fk_reply_json(r, 200, json_incref(u->results));
}
