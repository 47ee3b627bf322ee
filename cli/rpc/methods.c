/*
 * cli/rpc/methods.c: the method table of `serve` (bindings/protocol/methods.md)
 * and the lifecycle handlers (create, resume, suspend, destroy, kill, set_timeout,
 * host, metrics, initialize, list, info). The file handlers are in
 * methods_files.c, the command ones in methods_process.c, what they share in
 * methods_params.c (methods_int.h).
 *
 * Each method has a parse step (params → serve_args, no I/O: wrong, missing
 * or unknown fields are -32602 naming the field, as "params.limits.cpu") and a
 * run step (one library call, then the result in the shape of the CLI's
 * --json output, bytes as "key" or "key_b64"). The library validates values
 * (names, paths, tags, env keys, limits) exactly as for the CLI.
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

static int parse_create(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"name", "limits",   "timeout_seconds",
	                                   "env",  "metadata", NULL};
	static const char *const lkeys[] = {"cpu",    "memory_mb",   "disk_mb",
	                                    "egress", "allow_hosts", NULL};
	const char *egress = "none";
	json_t *l;

	a->create = (sbx_create_options)SBX_CREATE_OPTIONS_INIT;

	/* The CLI's defaults: 1 cpu, 2048 MiB, 10240 MiB, no egress. */
	a->limits = (sbx_limits){1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	if (serve_only_keys(p, keys, "params", f) < 0 ||
	    serve_get_str(p, "name", true, "params", &a->name, f) ||
	    serve_get_uint(p, "timeout_seconds", "params", 1, SBX_MAX_TIMEOUT_SECONDS,
	                   &a->create.timeout_seconds, NULL, f) < 0 ||
	    serve_get_str_map(p, "env", &a->env, &a->nenv, f) < 0 ||
	    serve_get_str_map(p, "metadata", &a->meta, &a->nmeta, f) < 0)
		return -1;
	a->create.env = a->env;
	a->create.env_count = a->nenv;
	a->create.metadata = a->meta;
	a->create.metadata_count = a->nmeta;
	if (!(l = json_object_get(p, "limits")) || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.limits must be an object");
	if (serve_only_keys(l, lkeys, "params.limits", f) < 0 ||
	    serve_get_number(l, "cpu", "params.limits", &a->limits.cpu, f) < 0 ||
	    serve_get_number(l, "memory_mb", "params.limits", &a->limits.memory_mb, f) < 0 ||
	    serve_get_number(l, "disk_mb", "params.limits", &a->limits.disk_mb, f) < 0 ||
	    serve_get_str(l, "egress", false, "params.limits", &egress, f) < 0 ||
	    serve_get_str_array(l, "allow_hosts", false, "params.limits", &a->hosts,
	                        &a->limits.allow_hosts_count, f) < 0)
		return -1;
	if (strcmp(egress, "none") == 0)
		a->limits.egress = SBX_EGRESS_NONE;
	else if (strcmp(egress, "allowlist") == 0)
		a->limits.egress = SBX_EGRESS_ALLOWLIST;
	else if (strcmp(egress, "open") == 0)
		a->limits.egress = SBX_EGRESS_OPEN;
	else
		return serve_failf(
		    f, RPC_INVALID_PARAMS,
		    "params.limits.egress must be \"none\", \"allowlist\" or \"open\"");
	a->limits.allow_hosts = a->hosts;
	return 0;
}

static int parse_by_name(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"name", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0)
		return -1;
	return serve_get_str(p, "name", true, "params", &a->name, f);
}

static int parse_kill_tagged(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "tags", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0)
		return -1;
	return serve_get_str_array(p, "tags", true, "params", &a->tags, &a->ntags, f);
}

static int parse_initialize(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"config", "envd_url", "log", "log_level", NULL};
	static const char *const levels[] = {"debug", "info", "warn", "error"};
	const char *level = NULL;

	if (serve_only_keys(p, keys, "params", f) < 0 ||
	    serve_get_str(p, "envd_url", false, "params", &a->envd_url, f) < 0 ||
	    serve_get_str(p, "log", false, "params", &a->log_mode, f) < 0 ||
	    serve_get_str(p, "log_level", false, "params", &level, f) < 0)
		return -1;
	a->log_min = -1;
	for (int i = 0; level && i < 4; i++)
		if (strcmp(level, levels[i]) == 0)
			a->log_min = i;
	if (level && a->log_min < 0)
		return serve_failf(
		    f, RPC_INVALID_PARAMS,
		    "params.log_level must be \"debug\", \"info\", \"warn\" or \"error\"");
	a->config = json_object_get(p, "config");
	if (a->config && json_is_null(a->config))
		a->config = NULL;
	if (a->config && !json_is_object(a->config))
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.config must be the deployment config object");
	if (a->log_mode && strcmp(a->log_mode, "notify") != 0 && strcmp(a->log_mode, "stderr") != 0)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.log must be \"notify\" or \"stderr\"");
	return 0;
}

static int run_create(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	char *id = NULL;
	int rc =
	    sbx_sandbox_create_with(&id, c->prov, a->name, &a->limits, &a->create, c->sig, &err);
	json_t *r = rc < 0 ? NULL : cli_shape_created(id, a->name);

	sbx_free(id);
	return serve_finish(rc, &err, r, out, f);
}

static int run_resume(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	sbx_resume_status st = SBX_RESUME_GONE;
	int rc = sbx_sandbox_resume(&st, c->prov, a->id, c->sig, &err);

	return serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_resume(a->id, st), out, f);
}

typedef int (*id_fn)(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err);

static int run_id_call(serve_call *c, id_fn fn, const char *id, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = fn(c->prov, id, c->sig, &err);

	return serve_finish(rc, &err, rc < 0 ? NULL : serve_ok_with("id", id), out, f);
}

static int run_suspend(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_id_call(c, sbx_sandbox_suspend, a->id, out, f);
}

static int run_destroy(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_id_call(c, sbx_sandbox_destroy, a->id, out, f);
}

static int run_kill_all(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_id_call(c, sbx_sandbox_kill_all, a->id, out, f);
}

static int run_destroy_by_name(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_destroy_by_name(c->prov, a->name, c->sig, &err);

	return serve_finish(rc, &err, rc < 0 ? NULL : serve_ok_with("name", a->name), out, f);
}

static int run_kill_tagged(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_kill_tagged(c->prov, a->id, a->tags, a->ntags, c->sig, &err);

	return serve_finish(rc, &err, rc < 0 ? NULL : serve_ok_with("id", a->id), out, f);
}

static int parse_set_timeout(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "timeout_seconds", NULL};
	a->create.timeout_seconds = 0;
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0)
		return -1;
	if (!json_object_get(p, "timeout_seconds"))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.timeout_seconds is required");
	return serve_get_uint(p, "timeout_seconds", "params", 0, SBX_MAX_TIMEOUT_SECONDS,
	                      &a->create.timeout_seconds, NULL, f);
}

static int run_set_timeout(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_set_timeout(c->prov, a->id, a->create.timeout_seconds, c->sig, &err);

	return serve_finish(rc, &err,
	                    rc < 0 ? NULL
	                           : json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->id,
	                                       "timeout_seconds",
	                                       (json_int_t)a->create.timeout_seconds),
	                    out, f);
}

static int parse_host(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "port", NULL};
	uint64_t port = 0;
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0)
		return -1;
	if (!json_object_get(p, "port"))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.port is required");
	if (serve_get_uint(p, "port", "params", 1, 65535, &port, NULL, f) < 0)
		return -1;
	a->pid = (uint32_t)port; /* the number this call takes */
	return 0;
}

static int run_host(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_host *h = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_host(&h, c->prov, a->id, a->pid, c->sig, &err);

	rc = serve_finish(rc, &err,
	                  rc < 0 ? NULL
	                         : json_pack("{s:s,s:s,s:I,s:s?}", "url", h->url, "hostname",
	                                     h->hostname, "port", (json_int_t)a->pid,
	                                     "traffic_token", h->traffic_token),
	                  out, f);
	sbx_host_free(h);
	return rc;
}

static int parse_metrics(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "start", "end", NULL};
	uint64_t start = 0, end = 0;
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_uint(p, "start", "params", 0, 253402300799ULL, &start, NULL, f) < 0 ||
	    serve_get_uint(p, "end", "params", 0, 253402300799ULL, &end, NULL, f) < 0)
		return -1;
	a->metrics_start = (int64_t)start;
	a->metrics_end = (int64_t)end;
	return 0;
}

static int run_metrics(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_metrics *m = NULL;
	sbx_error err = {0};
	int rc =
	    sbx_sandbox_metrics(&m, c->prov, a->id, a->metrics_start, a->metrics_end, c->sig, &err);

	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_metrics(a->id, m), out, f);
	sbx_metrics_free(m);
	return rc;
}

/* initialize: the new config, then what the server is and has (dispatch.c runs it alone). */
static int run_initialize(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	json_t *r;

	if (serve_configure(c->srv, a->config, a->envd_url, a->log_mode, a->log_min, f) < 0)
		return -1;
	r = json_pack("{s:s,s:s,s:i,s:o,s:[sssss]}", "server", "sandbox-e2b", "version",
	              sbx_version(), "protocol", SERVE_PROTOCOL_VERSION, "methods",
	              serve_method_names(), "notifications", "output", "log", "attached",
	              "watch_started", "watch_event");
	if (!r || serve_server_describe(c->srv, r) < 0) {
		json_decref(r);
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	}
	*out = r;
	return 0;
}

/* ---- list, info ------------------------------------------------------------------------------ */

static int parse_list(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"name", "state", "all", NULL};
	const char *state = NULL;

	if (serve_only_keys(p, keys, "params", f) < 0 ||
	    serve_get_str(p, "name", false, "params", &a->name, f) < 0 ||
	    serve_get_str(p, "state", false, "params", &state, f) < 0 ||
	    serve_get_bool(p, "all", "params", &a->list_all, f) < 0)
		return -1;
	if (!state || strcmp(state, "any") == 0)
		a->state = SBX_STATE_ANY;
	else if (strcmp(state, "running") == 0)
		a->state = SBX_STATE_RUNNING;
	else if (strcmp(state, "paused") == 0)
		a->state = SBX_STATE_PAUSED;
	else
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.state must be \"running\", \"paused\" or \"any\"");
	return 0;
}

static int run_list(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	sbx_error err = {0};
	int rc;

	lo.name = a->name;
	lo.state = a->state;
	lo.all = a->list_all;
	rc = sbx_sandbox_list(&l, c->prov, &lo, c->sig, &err);
	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_info_list(l), out, f);
	sbx_info_list_free(l);
	return rc;
}

static int run_info(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_sandbox_info *info = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_get_info(&info, c->prov, a->id, c->sig, &err);

	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_sandbox_info(info), out, f);
	sbx_sandbox_info_free(info);
	return rc;
}

/* The method table, in the contract's order (bindings/protocol/methods.md). */
static const serve_method methods[] = {
    {"initialize", parse_initialize, run_initialize, false},
    {"create", parse_create, run_create, true},
    {"resume", serve_parse_only_id, run_resume, true},
    {"suspend", serve_parse_only_id, run_suspend, true},
    {"destroy", serve_parse_only_id, run_destroy, true},
    {"destroy_by_name", parse_by_name, run_destroy_by_name, true},
    {"kill_all", serve_parse_only_id, run_kill_all, true},
    {"kill_tagged", parse_kill_tagged, run_kill_tagged, true},
    {"exec", serve_parse_exec, serve_run_exec, true},
    {"read_file", serve_parse_read_file, serve_run_read_file, true},
    {"write_file", serve_parse_write_file, serve_run_write_file, true},
    {"stat", serve_parse_stat, serve_run_stat, true},
    {"list", parse_list, run_list, true},
    {"info", serve_parse_only_id, run_info, true},
    {"set_timeout", parse_set_timeout, run_set_timeout, true},
    {"host", parse_host, run_host, true},
    {"metrics", parse_metrics, run_metrics, true},
    {"list_dir", serve_parse_stat, serve_run_list_dir, true},
    {"ps", serve_parse_only_id, serve_run_ps, true},
    {"wait", serve_parse_wait, serve_run_wait, true},
    {"send_stdin", serve_parse_send_stdin, serve_run_send_stdin, true},
    {"close_stdin", serve_parse_pid_only, serve_run_close_stdin, true},
    {"kill_process", serve_parse_pid_only, serve_run_kill_process, true},
    {"path_info", serve_parse_path_op, serve_run_path_info, true},
    {"remove", serve_parse_path_op, serve_run_remove, true},
    {"make_dir", serve_parse_path_op, serve_run_make_dir, true},
    {"rename", serve_parse_rename, serve_run_rename, true},
    {"pty_start", serve_parse_pty_start, serve_run_pty_start, true},
    {"pty_attach", serve_parse_pid_only, serve_run_pty_attach, true},
    {"pty_input", serve_parse_send_stdin, serve_run_pty_input, true},
    {"pty_resize", serve_parse_pty_resize, serve_run_pty_resize, true},
    {"pty_kill", serve_parse_pid_only, serve_run_pty_kill, true},
    {"pty_wait", serve_parse_pid_only, serve_run_pty_wait, true},
    {"watch", serve_parse_watch, serve_run_watch, true},
    {"write_files", serve_parse_write_files, serve_run_write_files, true},
};

const serve_method *serve_method_find(const char *name)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

json_t *serve_method_names(void)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < sizeof(methods) / sizeof(methods[0]); i++)
		json_array_append_new(a, json_string(methods[i].name));
	return a;
}
