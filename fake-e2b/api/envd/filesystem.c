/*
 * fake-e2b/api/envd/filesystem.c: what the filesystem.Filesystem RPCs share
 * (docs/internals/wire.md "Filesystem RPCs"): EntryInfo as protobuf JSON.
 */
#include <stdio.h>
#include <time.h>

#include "envd.h"

/* protobuf-JSON Timestamp: RFC 3339 with 0, 3, 6 or 9 fractional digits. */
static json_t *timestamp_json(int64_t sec, int32_t nsec)
{
	char base[40], buf[64];
	time_t t = (time_t)sec;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (nsec == 0)
		snprintf(buf, sizeof(buf), "%sZ", base);
	else if (nsec % 1000000 == 0)
		snprintf(buf, sizeof(buf), "%s.%03dZ", base, (int)(nsec / 1000000));
	else if (nsec % 1000 == 0)
		snprintf(buf, sizeof(buf), "%s.%06dZ", base, (int)(nsec / 1000));
	else
		snprintf(buf, sizeof(buf), "%s.%09dZ", base, (int)nsec);
	return json_string(buf);
}

/* EntryInfo (docs/internals/wire.md "Filesystem RPCs"), defaults omitted. */
json_t *fk_envd_entry_json(const fk_entry *e)
{
	/* envd sends FILE_TYPE_SYMLINK for no entry it stats */
	static const char *const types[] = {NULL, "FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY", NULL,
	                                    NULL};
	/* a symlink is reported with the type and mode of where it leads, none when that is
	 * nowhere (infra shared/pkg/filesystem GetEntryInfo); its size, permissions, owner and
	 * time are the link's own */
	bool link = e->type == FK_FT_SYMLINK;
	fk_file_type type = link ? e->target_type : e->type;
	uint32_t mode = link ? e->target_mode & 0777 : e->mode & 07777;
	json_t *j = json_object();
	if (e->name && *e->name)
		json_object_set_new(j, "name", json_string(e->name));
	if (type >= 1 && type <= 4 && types[type])
		json_object_set_new(j, "type", json_string(types[type]));
	if (e->path && *e->path)
		json_object_set_new(j, "path", json_string(e->path));
	if (e->size) {
		char sz[32];
		snprintf(sz, sizeof(sz), "%lld", (long long)e->size);
		json_object_set_new(j, "size", json_string(sz));
	}
	if (mode)
		json_object_set_new(j, "mode", json_integer(mode));
	if (e->permissions[0])
		json_object_set_new(j, "permissions", json_string(e->permissions));
	if (e->owner && *e->owner)
		json_object_set_new(j, "owner", json_string(e->owner));
	if (e->group && *e->group)
		json_object_set_new(j, "group", json_string(e->group));
	json_object_set_new(j, "modifiedTime", timestamp_json(e->mtime_sec, e->mtime_nsec));
	if (e->symlink_target)
		json_object_set_new(j, "symlinkTarget", json_string(e->symlink_target));
	if (e->n_meta) {
		json_t *m = json_object();
		for (size_t i = 0; i < e->n_meta; i++)
			json_object_set_new(m, e->meta_keys[i], json_string(e->meta_values[i]));
		json_object_set_new(j, "metadata", m);
	}
	return j;
}

enum MHD_Result fk_envd_entry_reply(fk_call *c, int rc, fk_entry *e, const fk_err *err)
{
	if (rc < 0)
		return fk_connect_runtime_error(c->req, rc, err);
	json_t *out = json_pack("{s:o}", "entry", fk_envd_entry_json(e));
	fk_entry_clear(e);
	return fk_reply_json(c->req, 200, out);
}
