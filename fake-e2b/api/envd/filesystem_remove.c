/*
 * fake-e2b/api/envd/filesystem_remove.c: filesystem.Filesystem/Remove (docs/internals/wire.md
 * "Filesystem RPCs").
 */
#include "envd.h"

enum MHD_Result fk_envd_fs_remove(fk_call *c, json_t *req)
{
	const char *path = fk_json_str(req, "path");
	fk_err err = {0};
	if (!path)
		return fk_connect_error(c->req, "invalid_argument", "path is required");
	int rc = fk_file_remove(c->app->rt, c->sb->id, path, c->user, &err);
	if (rc < 0)
		return fk_connect_runtime_error(c->req, rc, &err);
	return fk_reply(c->req, 200, "application/json", "{}", 2);
}
