/*
 * e2b/envd_files.c: envd's /files routes with streamed bodies (upload from a
 * callback, download into a callback). The request carries the same three
 * envd headers as every other envd call (E2b-Sandbox-Id, E2b-Sandbox-Port,
 * X-Access-Token, the last a secret that never reaches a message).
 */
#include "e2b/envd_files.h"

#include <sandbox/e2b.h>
#include <string.h>

#include "e2b/api.h"
#include "util/alloc.h"
#include "util/err.h"

typedef struct files_call {
	sbx_buf url;
	sbx_buf hdr[3];
	const char *lines[3];
} files_call;

static void files_call_dispose(files_call *f)
{
	sbx_buf_dispose(&f->url);
	for (int i = 0; i < 3; i++) {
		if (f->hdr[i].ptr)
			memset(f->hdr[i].ptr, 0, f->hdr[i].len); /* the token */
		sbx_buf_dispose(&f->hdr[i]);
	}
}

static int files_call_init(files_call *f, const sbx_envd_target *t, const char *path,
                           const char *user, sbx_error *err)
{
	memset(f, 0, sizeof(*f));
	sbx_buf_init(&f->url, 64 * 1024);
	for (int i = 0; i < 3; i++)
		sbx_buf_init(&f->hdr[i], 4096);
	/* no path: each part's filename is its target (envd's multi-file write) */
	if (sbx_buf_printf(&f->url, "%s/files?", t->url) < 0 ||
	    (path && (sbx_buf_puts(&f->url, "path=") < 0 ||
	              sbx__form_urlencode(&f->url, path, strlen(path)) < 0 ||
	              sbx_buf_puts(&f->url, "&") < 0)) ||
	    sbx_buf_puts(&f->url, "username=") < 0 ||
	    sbx__form_urlencode(&f->url, user, strlen(user)) < 0 ||
	    sbx_buf_printf(&f->hdr[0], "E2b-Sandbox-Id: %s", t->sandbox_id) < 0 ||
	    sbx_buf_printf(&f->hdr[1], "E2b-Sandbox-Port: %d", SBX_ENVD_PORT) < 0 ||
	    sbx_buf_printf(&f->hdr[2], "X-Access-Token: %s", t->token) < 0) {
		files_call_dispose(f);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	for (int i = 0; i < 3; i++)
		f->lines[i] = (const char *)f->hdr[i].ptr;
	return 0;
}

/* POST /files: the part's bytes from memory (data, len) or, when pull is set, pulled from it. */
static int upload(sbx_http *http, const sbx_envd_target *t, const char *path, const char *user,
                  const void *data, size_t len, sbx__envd_pull_fn pull, void *payload,
                  uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	const char *slash = strrchr(path, '/');
	sbx_http_req req = {0};
	files_call f;
	int error;

	if ((error = files_call_init(&f, t, path, user, err)) < 0)
		return error;
	req.what = "E2B file upload";
	req.unreachable = SBX_E2B_ENVD_UNAVAILABLE;
	req.method = "POST";
	req.url = (const char *)f.url.ptr;
	req.headers = f.lines;
	req.nheaders = 3;
	req.upload_part = "file";
	req.upload_filename = slash ? slash + 1 : path; /* path.split("/").pop() */
	if (pull) {
		req.upload_fn = pull;
		req.upload_payload = payload;
	} else {
		req.upload_data = data;
		req.upload_len = len;
	}
	error = sbx__envd_unary(http, t, &req, "file upload", deadline_ms, sig, err);
	files_call_dispose(&f);
	return error;
}

int sbx__envd_upload(sbx_http *http, const sbx_envd_target *t, const char *path, const char *user,
                     const void *data, size_t len, uint64_t deadline_ms, sbx_signal *sig,
                     sbx_error *err)
{
	return upload(http, t, path, user, data, len, NULL, NULL, deadline_ms, sig, err);
}

int sbx__envd_upload_stream(sbx_http *http, const sbx_envd_target *t, const char *path,
                            const char *user, sbx__envd_pull_fn pull, void *payload,
                            uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	return upload(http, t, path, user, NULL, 0, pull, payload, deadline_ms, sig, err);
}

/* The GET /files request of a download of `f` (a bulk call: an HTTP/1.1 pair, docs/files.md). */
static void download_req(sbx_http_req *req, const files_call *f)
{
	req->what = "E2B file download";
	req->unreachable = SBX_E2B_ENVD_UNAVAILABLE;
	req->method = "GET";
	req->bulk = true;
	req->url = (const char *)f->url.ptr;
	req->headers = f->lines;
	req->nheaders = 3;
}

int sbx__envd_download(sbx_http *http, const sbx_envd_target *t, const char *path, const char *user,
                       sbx_http_data_fn on_data, void *payload, uint64_t deadline_ms,
                       sbx_signal *sig, sbx_error *err)
{
	sbx_http_req req = {0};
	files_call f;
	int error;

	if ((error = files_call_init(&f, t, path, user, err)) < 0)
		return error;
	download_req(&req, &f);
	req.on_data = on_data;
	req.payload = payload;
	error = sbx__envd_unary(http, t, &req, "file download", deadline_ms, sig, err);
	files_call_dispose(&f);
	return error;
}

int sbx__envd_download_buf(sbx_http *http, const sbx_envd_target *t, const char *path,
                           const char *user, sbx_buf *out, size_t max, uint64_t deadline_ms,
                           sbx_signal *sig, sbx_error *err)
{
	sbx_http_req req = {0};
	sbx_http_call *call = NULL;
	const sbx_buf *b;
	files_call f;
	long status;
	int error;

	if ((error = files_call_init(&f, t, path, user, err)) < 0)
		return error;
	download_req(&req, &f);
	req.max_body = max;
	if ((error = sbx__http_perform(&call, http, &req, deadline_ms, sig, err)) < 0)
		goto done;
	status = sbx__http_call_status(call);
	if (status < 200 || status >= 300) {
		b = sbx__http_call_body(call);
		error = sbx__e2b_http_error(err, "file download", status, b->ptr, b->len, t->token,
		                            t->api_key, NULL);
	} else {
		sbx__http_call_take_body(call, out);
	}
done:
	sbx__http_call_free(call);
	files_call_dispose(&f);
	return error;
}

int sbx__envd_upload_many(sbx_http *http, const sbx_envd_target *t, const char *user,
                          const sbx_http_part *parts, size_t n, uint64_t deadline_ms,
                          sbx_signal *sig, sbx_error *err)
{
	sbx_http_req req = {0};
	files_call f;
	int error;

	if (n == 0)
		return 0;
	if ((error = files_call_init(&f, t, NULL, user, err)) < 0)
		return error;
	req.what = "E2B file upload";
	req.unreachable = SBX_E2B_ENVD_UNAVAILABLE;
	req.method = "POST";
	req.url = (const char *)f.url.ptr;
	req.headers = f.lines;
	req.nheaders = 3;
	req.upload_part = "file";
	req.upload_filename = parts[0].filename;
	req.upload_data = parts[0].data;
	req.upload_len = parts[0].len;
	req.more_parts = parts + 1;
	req.nmore_parts = n - 1;
	error = sbx__envd_unary(http, t, &req, "file upload", deadline_ms, sig, err);
	files_call_dispose(&f);
	return error;
}
