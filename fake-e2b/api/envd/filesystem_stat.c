/*
 * fake-e2b/api/envd/filesystem_stat.c: filesystem.Filesystem/Stat (docs/internals/wire.md
 * "Filesystem RPCs").
 */
#include "envd.h"

enum MHD_Result fk_envd_fs_stat(fk_call *c, json_t *req)
{
	const char *path = fk_json_str(req, "path");
	fk_err err = {0};
	fk_entry e = {0};
	if (!path)
		return fk_connect_error(c->req, "invalid_argument", "path is required");
	int rc = fk_file_stat(c->app->rt, c->sb->id, path, c->user, &e, &err);
	return fk_envd_entry_reply(c, rc, &e, &err);
}
