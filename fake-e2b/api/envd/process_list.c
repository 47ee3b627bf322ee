/*
 * fake-e2b/api/envd/process_list.c: process.Process/List (docs/internals/wire.md "Other process
 * RPCs").
 */
#include "envd.h"

static json_t *strings_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

enum MHD_Result fk_envd_process_list(fk_call *c, json_t *req)
{
	fk_proc_info *infos = NULL;
	size_t n = 0;
	fk_err err = {0};
	(void)req;
	int rc = fk_proc_list(c->app->rt, c->sb->id, &infos, &n, &err);
	if (rc < 0)
		return fk_connect_runtime_error(c->req, rc, &err);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *cfg = json_pack("{s:s}", "cmd", infos[i].cmd ? infos[i].cmd : "");
		if (infos[i].n_args)
			json_object_set_new(cfg, "args",
			                    strings_json(infos[i].args, infos[i].n_args));
		if (infos[i].n_envs) {
			json_t *e = json_object();
			for (size_t j = 0; j < infos[i].n_envs; j++)
				json_object_set_new(e, infos[i].env_keys[j],
				                    json_string(infos[i].env_values[j]));
			json_object_set_new(cfg, "envs", e);
		}
		if (infos[i].cwd)
			json_object_set_new(cfg, "cwd", json_string(infos[i].cwd));
		json_t *pj = json_pack("{s:I,s:o}", "pid", (json_int_t)infos[i].pid, "config", cfg);
		if (infos[i].tag)
			json_object_set_new(pj, "tag", json_string(infos[i].tag));
		json_array_append_new(arr, pj);
	}
	fk_proc_info_free(infos, n);
	json_t *out = json_object();
	if (json_array_size(arr))
		json_object_set_new(out, "processes", arr);
	else
		json_decref(arr);
	return fk_reply_json(c->req, 200, out);
}
