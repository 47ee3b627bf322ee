/*
 * fake-e2b/api/envd/filesystem_dir.c: filesystem.Filesystem/MakeDir and
 * /ListDir (docs/internals/wire.md "Filesystem RPCs").
 */
#include "envd.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum MHD_Result fk_envd_fs_make_dir(fk_call *c, json_t *req)
{
	const char *path = fk_json_str(req, "path");
	fk_err err = {0};
	fk_entry e = {0};
	if (!path)
		return fk_connect_error(c->req, "invalid_argument", "path is required");
	int rc = fk_file_mkdir(c->app->rt, c->sb->id, path, c->user, &e, &err);
	if (rc == 0) /* a recursive polling watcher watches it before the client's next call */
		fk_sandbox_pwatches_catch_up(c->app->reg, c->sb);
	return fk_envd_entry_reply(c, rc, &e, &err);
}

typedef struct sbuf {
	char *s;
	size_t len, cap;
	bool failed;
} sbuf;

static void sbuf_put(sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (b->len + n + 1 > nc)
			nc *= 2;
		char *ns = realloc(b->s, nc);
		if (!ns) {
			b->failed = true;
			return;
		}
		b->s = ns;
		b->cap = nc;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
}

/* {"entries":[...]} written one entry at a time, each entry freed once written: the reply never
 * holds a JSON tree of the whole listing (about 2 KB per entry) beside the text, and the text is
 * handed to the daemon without a copy. */
static enum MHD_Result list_reply(fk_call *c, fk_entry *list, size_t n)
{
	sbuf b = {0};
	sbuf_put(&b, n ? "{\"entries\":[" : "{}", n ? 12 : 2);
	for (size_t i = 0; i < n; i++) {
		json_t *j = fk_envd_entry_json(&list[i]);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		fk_entry_clear(&list[i]);
		if (!s)
			b.failed = true;
		if (i)
			sbuf_put(&b, ",", 1);
		if (s)
			sbuf_put(&b, s, strlen(s));
		free(s);
	}
	free(list);
	if (n)
		sbuf_put(&b, "]}", 2);
	if (b.failed) {
		free(b.s);
		return fk_connect_error(c->req, "resource_exhausted", "out of memory");
	}
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(b.len, b.s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(b.s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return fk_reply_response(c->req, 200, resp);
}

enum MHD_Result fk_envd_fs_list_dir(fk_call *c, json_t *req)
{
	const char *path = fk_json_str(req, "path");
	fk_err err = {0};
	if (!path)
		return fk_connect_error(c->req, "invalid_argument", "path is required");
	json_t *d = json_object_get(req, "depth");
	unsigned depth =
	    json_is_integer(d) && json_integer_value(d) > 0 ? (unsigned)json_integer_value(d) : 1;
	fk_entry *list = NULL;
	size_t n = 0;
	int rc = fk_file_list(c->app->rt, c->sb->id, path, c->user, depth, &list, &n, &err);
	if (rc < 0)
		return fk_connect_runtime_error(c->req, rc, &err);
	return list_reply(c, list, n);
}
