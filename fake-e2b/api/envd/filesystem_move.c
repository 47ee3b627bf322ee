/*
 * fake-e2b/api/envd/filesystem_move.c: filesystem.Filesystem/Move (docs/internals/wire.md
 * "Filesystem RPCs").
 */
#include "envd.h"

enum MHD_Result fk_envd_fs_move(fk_call *c, json_t *req)
{
	const char *src = fk_json_str(req, "source"), *dst = fk_json_str(req, "destination");
	fk_err err = {0};
	fk_entry e = {0};
	if (!src || !dst)
		return fk_connect_error(c->req, "invalid_argument",
		                        "source and destination required");
	int rc = fk_file_move(c->app->rt, c->sb->id, src, dst, c->user, &e, &err);
	if (rc == 0) /* a directory moved in: watched before the client's next call */
		fk_sandbox_pwatches_catch_up(c->app->reg, c->sb);
	return fk_envd_entry_reply(c, rc, &e, &err);
}
