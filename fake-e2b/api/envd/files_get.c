/*
 * fake-e2b/api/envd/files_get.c: GET /files (docs/internals/wire.md "envd's HTTP routes"): a file's
 * bytes, streamed from its fd (gzip-encoded when Accept-Encoding asks, encoding.c); the token
 * or a v1 signature.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "envd.h"

unsigned fk_envd_file_error_status(int rc)
{
	switch (rc) {
	case FK_ENOTFOUND:
		return 404;
	case FK_EISDIR:
	case FK_EINVAL:
		return 400;
	case FK_ENOUSER:
		return 401;
	case FK_ENOSPC:
		return 507;
	default:
		return 500;
	}
}

enum MHD_Result fk_envd_files_get(fk_call *c)
{
	fk_req *r = c->req;
	int bad_path = 0, bad_user = 0;
	char *path = fk_query_strict(r, "path", &bad_path),
	     *user = fk_query_strict(r, "username", &bad_user);
	enum MHD_Result ret;
	int fd = -1;
	uint64_t size = 0;
	fk_err err = {0};
	if (bad_path || bad_user) { /* %00 would cut the path short */
		ret = fk_reply_error(r, 400, "invalid %s: badly escaped or holds a NUL byte",
		                     bad_path ? "path" : "username");
		goto done;
	}
	const char *denied = fk_envd_files_auth(c, "read", path, user);
	if (denied) {
		ret = fk_reply_error(r, 401, "%s", denied);
		goto done;
	}
	if (!path || !*path) {
		ret = fk_reply_error(r, 400, "path is required");
		goto done;
	}
	int gzip = 0;
	const char *ae = fk_header(r, "Accept-Encoding");
	int rc = fk_file_read_open(c->app->rt, c->sb->id, path, user && *user ? user : NULL, &fd,
	                           &size, &err);
	if (rc < 0) {
		if (rc == FK_ENOUSER)
			ret = fk_reply_error(r, 401, "invalid username: '%s'", user ? user : "");
		else
			ret = fk_reply_error(r, fk_envd_file_error_status(fk_envd_code(rc, &err)),
			                     "%s", err.message[0] ? err.message : fk_code_name(rc));
		goto done;
	}
	/* envd checks the file first (404, 400 for a directory), then Accept-Encoding */
	if (fk_envd_accept_gzip(ae, &gzip) < 0) {
		close(fd);
		ret = fk_reply_error(r, 406,
		                     "error parsing Accept-Encoding: no acceptable encoding found, "
		                     "supported: [gzip]");
		goto done;
	}
	struct MHD_Response *resp =
	    gzip ? fk_envd_gzip_response(fd) : MHD_create_response_from_fd64(size, fd);
	if (!resp) {
		close(fd);
		ret = MHD_NO;
		goto done;
	}
	const char *base = strrchr(path, '/');
	char disp[3 * 4096 + 64];
	MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	if (gzip)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        gzip ? fk_envd_mime_type(path) : "application/octet-stream");
	if (fk_content_disposition(disp, sizeof(disp), "inline", base ? base + 1 : path) == 0)
		MHD_add_response_header(resp, "Content-Disposition", disp);
	ret = fk_reply_response(r, 200, resp);
done:
	free(path);
	free(user);
	return ret;
}
