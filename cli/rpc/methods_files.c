/*
 * cli/rpc/methods_files.c: the file methods of `serve` (bindings/protocol/methods.md):
 * read_file, write_file, write_files, stat, list_dir, path_info, remove, make_dir, rename,
 * and watch. Their rows are in methods.c's table.
 */

#include "cli.h"
#include "methods_int.h"
#include "rpc.h"
#include "shapes.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVE_DEFAULT_READ_MAX ((size_t)16 << 20)

int serve_parse_read_file(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "max_bytes", NULL};
	uint64_t n = SERVE_DEFAULT_READ_MAX;

	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "path", true, "params", &a->path, f) < 0 ||
	    serve_get_uint(p, "max_bytes", "params", 0, SIZE_MAX / 4, &n, NULL, f) < 0)
		return -1;
	a->max_bytes = (size_t)n;
	return 0;
}

int serve_parse_stat(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0)
		return -1;
	return serve_get_str(p, "path", true, "params", &a->path, f);
}

int serve_parse_write_file(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "data", "data_b64", NULL};

	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "path", true, "params", &a->path, f) < 0)
		return -1;
	return serve_get_bytes(p, "data", true, a, f);
}

int serve_run_read_file(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	sbx_file *file = NULL;
	int rc = sbx_sandbox_read_file(&file, c->prov, a->id, a->path, a->max_bytes, c->sig, &err);

	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_file(a->path, file), out, f);
	sbx_file_free(file);
	return rc;
}

int serve_run_write_file(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc =
	    sbx_sandbox_write_file(c->prov, a->id, a->path, a->data, a->data_len, c->sig, &err);

	return serve_finish(rc, &err,
	                    rc < 0 ? NULL
	                           : json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a->path, "bytes",
	                                       (json_int_t)a->data_len),
	                    out, f);
}

int serve_run_stat(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	sbx_stat st = {0};
	int rc = sbx_sandbox_stat(&st, c->prov, a->id, a->path, c->sig, &err);

	return serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_stat(a->path, &st), out, f);
}

int serve_run_list_dir(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_dir *d = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_list_dir(&d, c->prov, a->id, a->path, c->sig, &err);

	rc = serve_finish(rc, &err,
	                  rc < 0 ? NULL
	                  : d    ? cli_shape_dir(a->path, d)
	                         : json_pack("{s:s,s:b}", "path", a->path, "exists", 0),
	                  out, f);
	sbx_dir_free(d);
	return rc;
}

/* ---- path_info, remove, make_dir, rename (sandbox/paths.h) ---------------------------------- */

int serve_parse_path_op(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "user", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "path", true, "params", &a->path, f) < 0)
		return -1;
	return serve_parse_user(p, a, f);
}

int serve_parse_rename(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "from", "to", "user", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "from", true, "params", &a->path, f) < 0 ||
	    serve_get_str(p, "to", true, "params", &a->to, f) < 0)
		return -1;
	return serve_parse_user(p, a, f);
}

static json_t *entry_or_missing(const sbx_entry_info *e, const char *path)
{
	return e ? cli_shape_entry_info(e) : json_pack("{s:s,s:b}", "path", path, "exists", 0);
}

int serve_run_path_info(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_entry_info *e = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_path_info(&e, c->prov, a->id, a->path, &a->popts, c->sig, &err);

	rc = serve_finish(rc, &err, rc < 0 ? NULL : entry_or_missing(e, a->path), out, f);
	sbx_entry_info_free(e);
	return rc;
}

int serve_run_remove(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_remove(c->prov, a->id, a->path, &a->popts, c->sig, &err);

	return serve_finish(
	    rc, &err, rc < 0 ? NULL : json_pack("{s:b,s:s}", "ok", 1, "path", a->path), out, f);
}

int serve_run_make_dir(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	bool created = false;
	int rc = sbx_sandbox_make_dir(&created, c->prov, a->id, a->path, &a->popts, c->sig, &err);

	return serve_finish(
	    rc, &err, rc < 0 ? NULL : json_pack("{s:s,s:b}", "path", a->path, "created", created),
	    out, f);
}

int serve_run_rename(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_entry_info *e = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_rename(&e, c->prov, a->id, a->path, a->to, &a->popts, c->sig, &err);

	rc = serve_finish(rc, &err, rc < 0 ? NULL : entry_or_missing(e, a->path), out, f);
	sbx_entry_info_free(e);
	return rc;
}

/* ---- watch: a directory's events as notifications until the call is cancelled ------------ */

int serve_parse_watch(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "recursive", "user", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "path", true, "params", &a->path, f) < 0 ||
	    serve_get_bool(p, "recursive", "params", &a->recursive, f) < 0)
		return -1;
	return serve_parse_user(p, a, f);
}

/*
 * watch: `watch_started` once envd watches, then `watch_event` notifications under this
 * call's id until it is cancelled
 * ($/cancelRequest, shutdown), then {"ok":true,"path","events"}; a stream that ended is the
 * call's error.
 */
int serve_run_watch(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_watch_options o = SBX_WATCH_OPTIONS_INIT;
	sbx_watch *w = NULL;
	sbx_watch_event e;
	sbx_error err = {0};
	json_int_t n = 0;
	int rc;

	o.recursive = a->recursive;
	o.user = a->popts.user;
	if ((rc = sbx_sandbox_watch_dir(&w, c->prov, a->id, a->path, &o, c->sig, &err)) < 0)
		return serve_finish(rc, &err, NULL, out, f);
	/* the library returns once envd's start frame came: a client may change things now */
	serve_notify_watch_started(serve_writer_of(c->srv), c->id, a->path);
	while ((rc = sbx_watch_next(&e, w, UINT64_MAX, c->sig, &err)) == 0) {
		serve_notify_watch(serve_writer_of(c->srv), c->id, sbx_watch_op_name(e.op), e.name);
		sbx_watch_event_dispose(&e);
		n++;
	}
	sbx_watch_free(w);
	if (rc == SBX_EABORTED) /* the normal end of a watch */
		return serve_finish(
		    0, &err, json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a->path, "events", n), out,
		    f);
	return serve_finish(rc, &err, NULL, out, f);
}

/* ---- write_files: E2B's files.write([...]) in one upload ----------------------------------- */

int serve_parse_write_files(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "files", "user", NULL};
	static const char *const fkeys[] = {"path", "data", "data_b64", NULL};
	json_t *files = json_object_get(p, "files"), *it;
	size_t i, n;

	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_parse_user(p, a, f) < 0)
		return -1;
	if (!json_is_array(files) || (n = json_array_size(files)) == 0 || n > SBX_WRITE_FILES_MAX)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.files must be an array of 1..%d {path, data | data_b64}",
		                   SBX_WRITE_FILES_MAX);
	if (!(a->wfiles = calloc(n, sizeof(*a->wfiles))) ||
	    !(a->wbufs = calloc(n, sizeof(*a->wbufs))))
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	a->nwfiles = n;
	json_array_foreach(files, i, it)
	{
		serve_args one = {0};
		char where[48];
		snprintf(where, sizeof(where), "params.files[%zu]", i);
		if (!json_is_object(it))
			return serve_failf(f, RPC_INVALID_PARAMS, "%s must be an object", where);
		if (serve_only_keys(it, fkeys, where, f) < 0 ||
		    serve_get_str(it, "path", true, where, &a->wfiles[i].path, f) < 0 ||
		    serve_get_bytes(it, "data", true, &one, f) < 0) {
			free(one.data);
			return -1;
		}
		a->wbufs[i] = one.data; /* owned here from now on */
		a->wfiles[i].data = one.data;
		a->wfiles[i].len = one.data_len;
	}
	return 0;
}

int serve_run_write_files(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	json_int_t bytes = 0;
	int rc =
	    sbx_sandbox_write_files(c->prov, a->id, a->wfiles, a->nwfiles, &a->popts, c->sig, &err);

	for (size_t i = 0; i < a->nwfiles; i++)
		bytes += (json_int_t)a->wfiles[i].len;
	return serve_finish(rc, &err,
	                    rc < 0 ? NULL
	                           : json_pack("{s:b,s:I,s:I}", "ok", 1, "files",
	                                       (json_int_t)a->nwfiles, "bytes", bytes),
	                    out, f);
}
