/*
 * fake-e2b/api/envd/filesystem_dir.c: filesystem.Filesystem/MakeDir and
 * /ListDir (§5.5).
 */
#include "envd.h"

enum MHD_Result fk_envd_fs_make_dir(fk_call *c, json_t *req)
{
	const char *path = fk_json_str(req, "path");
	fk_err err = {0};
	fk_entry e = {0};
	if (!path)
		return fk_connect_error(c->req, "invalid_argument", "path is required");
	int rc = fk_file_mkdir(c->app->rt, c->sb->id, path, c->user, &e, &err);
	return fk_envd_entry_reply(c, rc, &e, &err);
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
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, fk_envd_entry_json(&list[i]));
	fk_entries_free(list, n);
	json_t *out = json_object();
	if (json_array_size(arr))
		json_object_set_new(out, "entries", arr);
	else
		json_decref(arr);
	return fk_reply_json(c->req, 200, out);
}
