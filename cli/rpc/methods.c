/*
 * cli/rpc/methods.c: one handler per contract method of `serve`
 * (bindings/protocol/methods.md).
 *
 * Each method has a parse step (params → serve_args, no I/O: wrong, missing
 * or unknown fields are -32602 naming the field, as "params.limits.cpu") and a
 * run step (one library call, then the result in the shape of the CLI's
 * --json output, bytes as "key" or "key_b64"). The library validates values
 * (names, paths, tags, env keys, limits) exactly as for the CLI.
 */
#include "cli.h"
#include "rpc.h"
#include "shapes.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVE_DEFAULT_READ_MAX ((size_t)16 << 20)
#define SERVE_MAX_LIST         4096

/* ---- params ---------------------------------------------------------------------------- */

/* Fail unless every key of obj is in allowed (NULL-terminated). `where`: "params", ... */
static int only_keys(json_t *obj, const char *const *allowed, const char *where, serve_fail *f)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		bool ok = false;
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(key, allowed[i]) == 0;
		if (!ok)
			return serve_failf(f, RPC_INVALID_PARAMS, "%s.%.100s: unknown field", where,
			                   key);
	}
	return 0;
}

/* A string field without NUL bytes; absent leaves *out as is unless required. */
static int get_str(json_t *obj, const char *key, bool required, const char *where, const char **out,
                   serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s is required (a string)",
			                   where, key);
		return 0;
	}
	if (!json_is_string(v))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must be a string", where, key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must not contain NUL characters",
		                   where, key);
	*out = json_string_value(v);
	return 0;
}

/* A non-negative integer field, at most max. */
static int get_uint(json_t *obj, const char *key, const char *where, uint64_t min, uint64_t max,
                    uint64_t *out, bool *given, serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (given)
		*given = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "%s.%s must be an integer from %llu to %llu", where, key,
		                   (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	if (given)
		*given = true;
	return 0;
}

static int get_bool(json_t *obj, const char *key, const char *where, bool *out, serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must be true or false", where,
		                   key);
	*out = json_is_true(v);
	return 0;
}

static int get_number(json_t *obj, const char *key, const char *where, double *out, serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must be a number", where, key);
	*out = json_number_value(v);
	return 0;
}

/* An array of strings (at most SERVE_MAX_LIST) into a malloc'd array of borrowed pointers. */
static int get_str_array(json_t *obj, const char *key, bool required, const char *where,
                         const char ***out, size_t *n, serve_fail *f)
{
	json_t *v = json_object_get(obj, key), *e;
	size_t i;

	if (!v || json_is_null(v)) {
		if (required)
			return serve_failf(f, RPC_INVALID_PARAMS,
			                   "%s.%s is required (an array of strings)", where, key);
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) > SERVE_MAX_LIST)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "%s.%s must be an array of at most %d strings", where, key,
		                   SERVE_MAX_LIST);
	if (!(*out = calloc(json_array_size(v) + 1, sizeof(**out))))
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
			return serve_failf(f, RPC_INVALID_PARAMS,
			                   "%s.%s[%zu] must be a string without NUL characters",
			                   where, key, i);
		(*out)[i] = json_string_value(e);
	}
	*n = json_array_size(v);
	return 0;
}

/* An object of strings under `key` (absent or null: none) into a new array of pairs. */
static int get_str_map(json_t *p, const char *key, sbx_env_var **out, size_t *n, serve_fail *f)
{
	json_t *m = json_object_get(p, key), *v;
	const char *k;

	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m) || json_object_size(m) > SERVE_MAX_LIST)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.%s must be an object of at most %d strings", key,
		                   SERVE_MAX_LIST);
	if (!(*out = calloc(json_object_size(m) + 1, sizeof(**out))))
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return serve_failf(
			    f, RPC_INVALID_PARAMS,
			    "params.%s.%.100s must be a string without NUL characters", key, k);
		(*out)[*n].key = k;
		(*out)[*n].value = json_string_value(v);
		(*n)++;
	}
	return 0;
}

static int parse_id(json_t *p, serve_args *a, serve_fail *f)
{
	return get_str(p, "id", true, "params", &a->id, f);
}

static int parse_only_id(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", NULL};
	if (only_keys(p, keys, "params", f) < 0)
		return -1;
	return parse_id(p, a, f);
}

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
	if (only_keys(p, keys, "params", f) < 0 ||
	    get_str(p, "name", true, "params", &a->name, f) ||
	    get_uint(p, "timeout_seconds", "params", 1, SBX_MAX_TIMEOUT_SECONDS,
	             &a->create.timeout_seconds, NULL, f) < 0 ||
	    get_str_map(p, "env", &a->env, &a->nenv, f) < 0 ||
	    get_str_map(p, "metadata", &a->meta, &a->nmeta, f) < 0)
		return -1;
	a->create.env = a->env;
	a->create.env_count = a->nenv;
	a->create.metadata = a->meta;
	a->create.metadata_count = a->nmeta;
	if (!(l = json_object_get(p, "limits")) || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.limits must be an object");
	if (only_keys(l, lkeys, "params.limits", f) < 0 ||
	    get_number(l, "cpu", "params.limits", &a->limits.cpu, f) < 0 ||
	    get_number(l, "memory_mb", "params.limits", &a->limits.memory_mb, f) < 0 ||
	    get_number(l, "disk_mb", "params.limits", &a->limits.disk_mb, f) < 0 ||
	    get_str(l, "egress", false, "params.limits", &egress, f) < 0 ||
	    get_str_array(l, "allow_hosts", false, "params.limits", &a->hosts,
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
	if (only_keys(p, keys, "params", f) < 0)
		return -1;
	return get_str(p, "name", true, "params", &a->name, f);
}

static int parse_kill_tagged(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "tags", NULL};
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0)
		return -1;
	return get_str_array(p, "tags", true, "params", &a->tags, &a->ntags, f);
}

static int parse_read_file(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "max_bytes", NULL};
	uint64_t n = SERVE_DEFAULT_READ_MAX;

	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "path", true, "params", &a->path, f) < 0 ||
	    get_uint(p, "max_bytes", "params", 0, SIZE_MAX / 4, &n, NULL, f) < 0)
		return -1;
	a->max_bytes = (size_t)n;
	return 0;
}

static int parse_stat(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", NULL};
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0)
		return -1;
	return get_str(p, "path", true, "params", &a->path, f);
}

/* Decode base64 (RFC 4648, padded, whitespace-free) into a malloc'd buffer. */
static int b64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
	unsigned char *buf;
	int got;
	size_t pad = 0;

	if (n % 4 != 0 || n > (size_t)INT32_MAX)
		return -1;
	if (!(buf = malloc(n / 4 * 3 + 1)))
		return -2;
	if (n && (got = EVP_DecodeBlock(buf, (const unsigned char *)s, (int)n)) < 0) {
		free(buf);
		return -1;
	}
	for (size_t i = n; i > 0 && s[i - 1] == '=' && pad < 2; i--)
		pad++;
	/* '=' only as padding: EVP_DecodeBlock would read "a=bc" as data. */
	for (size_t i = 0; i + pad < n; i++)
		if (s[i] == '=') {
			free(buf);
			return -1;
		}
	*out = buf;
	*len = n / 4 * 3 - pad;
	return 0;
}

/*
 * Bytes given as `key` (UTF-8 text) or `key`_b64 (base64) into a->data (owned).
 * Neither: an error when required, else nothing. Both: an error.
 */
static int get_bytes(json_t *p, const char *key, bool required, serve_args *a, serve_fail *f)
{
	char b64key[32];
	json_t *d, *b;

	snprintf(b64key, sizeof(b64key), "%s_b64", key);
	d = json_object_get(p, key);
	b = json_object_get(p, b64key);
	if (d && json_is_null(d))
		d = NULL;
	if (b && json_is_null(b))
		b = NULL;
	if (!d && !b && !required)
		return 0;
	if (!d == !b)
		return serve_failf(
		    f, RPC_INVALID_PARAMS,
		    "params.%s (UTF-8 text) or params.%s (base64) is required, not both", key,
		    b64key);
	if (d) {
		if (!json_is_string(d))
			return serve_failf(f, RPC_INVALID_PARAMS, "params.%s must be a string",
			                   key);
		a->data_len = json_string_length(d);
		if (!(a->data = malloc(a->data_len + 1)))
			return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
		memcpy(a->data, json_string_value(d), a->data_len);
		return 0;
	}
	if (!json_is_string(b))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.%s must be a string", b64key);
	switch (b64_decode(json_string_value(b), json_string_length(b), &a->data, &a->data_len)) {
	case 0:
		return 0;
	case -2:
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	default:
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.%s must be base64 (RFC 4648, with padding)", b64key);
	}
}

static int parse_user(json_t *p, serve_args *a, serve_fail *f);

static int parse_exec(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {
	    "id",   "command", "cwd",   "env",       "timeout_ms", "max_output_bytes",
	    "tag",  "stream",  "stdin", "stdin_b64", "background", "stdin_open",
	    "user", NULL};
	sbx_exec_options d = SBX_EXEC_OPTIONS_INIT;
	uint64_t n = d.max_output_bytes;

	a->timeout_ms = d.timeout_ms;
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "command", true, "params", &a->command, f) < 0 ||
	    get_str(p, "cwd", false, "params", &a->cwd, f) < 0 ||
	    get_str(p, "tag", false, "params", &a->tag, f) < 0 ||
	    get_uint(p, "timeout_ms", "params", 1, UINT64_MAX / 2, &a->timeout_ms, NULL, f) < 0 ||
	    get_uint(p, "max_output_bytes", "params", 0, SIZE_MAX / 2, &n, NULL, f) < 0 ||
	    get_bool(p, "stream", "params", &a->stream, f) < 0 ||
	    get_bytes(p, "stdin", false, a, f) < 0 ||
	    get_bool(p, "background", "params", &a->background, f) < 0 ||
	    get_bool(p, "stdin_open", "params", &a->stdin_open, f) < 0 || parse_user(p, a, f) < 0)
		return -1;
	if (a->background && a->data)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.stdin: not with background; start with "
		                   "\"stdin_open\": true and use send_stdin");
	if (a->stdin_open && !a->background)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.stdin_open needs \"background\": true (use stdin)");
	a->max_output_bytes = (size_t)n;
	return get_str_map(p, "env", &a->env, &a->nenv, f);
}

static int parse_write_file(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "data", "data_b64", NULL};

	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "path", true, "params", &a->path, f) < 0)
		return -1;
	return get_bytes(p, "data", true, a, f);
}

static int parse_initialize(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"config", "envd_url", "log", "log_level", NULL};
	static const char *const levels[] = {"debug", "info", "warn", "error"};
	const char *level = NULL;

	if (only_keys(p, keys, "params", f) < 0 ||
	    get_str(p, "envd_url", false, "params", &a->envd_url, f) < 0 ||
	    get_str(p, "log", false, "params", &a->log_mode, f) < 0 ||
	    get_str(p, "log_level", false, "params", &level, f) < 0)
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

void serve_args_free(serve_args *a)
{
	for (size_t i = 0; a->wbufs && i < a->nwfiles; i++)
		free(a->wbufs[i]);
	free(a->wbufs);
	free(a->wfiles);
	free(a->hosts);
	free(a->env);
	free(a->meta);
	free(a->tags);
	if (a->data) {
		memset(a->data, 0, a->data_len); /* file contents may be private */
		free(a->data);
	}
	memset(a, 0, sizeof(*a));
}

/* ---- results (the CLI's --json shapes) ------------------------------------------------- */

static json_t *ok_with(const char *key, const char *value)
{
	return json_pack("{s:b,s:s}", "ok", 1, key, value);
}

/* ---- handlers ---------------------------------------------------------------------------- */

/* Finish a library call: 0 and the result (NULL result: out of memory), or -1 with f filled. */
static int finish(int rc, const sbx_error *err, json_t *result, json_t **out, serve_fail *f)
{
	if (rc < 0) {
		json_decref(result);
		f->rpc_code = rc == SBX_EABORTED ? RPC_REQUEST_CANCELED : RPC_LIBRARY_ERROR;
		f->lib = *err;
		if (!f->lib.code)
			f->lib.code = rc;
		snprintf(f->message, sizeof(f->message), "%s",
		         err->message[0] ? cli_lib_message(err->message) : sbx_error_code_name(rc));
		return -1;
	}
	if (!result)
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	*out = result;
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
	return finish(rc, &err, r, out, f);
}

static int run_resume(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	sbx_resume_status st = SBX_RESUME_GONE;
	int rc = sbx_sandbox_resume(&st, c->prov, a->id, c->sig, &err);

	return finish(rc, &err, rc < 0 ? NULL : cli_shape_resume(a->id, st), out, f);
}

typedef int (*id_fn)(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err);

static int run_id_call(serve_call *c, id_fn fn, const char *id, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = fn(c->prov, id, c->sig, &err);

	return finish(rc, &err, rc < 0 ? NULL : ok_with("id", id), out, f);
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

	return finish(rc, &err, rc < 0 ? NULL : ok_with("name", a->name), out, f);
}

static int run_kill_tagged(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_kill_tagged(c->prov, a->id, a->tags, a->ntags, c->sig, &err);

	return finish(rc, &err, rc < 0 ? NULL : ok_with("id", a->id), out, f);
}

/* Streamed output: one `output` notification per chunk, sent before the response. */
static int on_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	serve_call *c = payload;

	serve_notify_output(serve_writer_of(c->srv), c->id, 0,
	                    stream == SBX_STREAM_STDERR ? "stderr" : "stdout", data, len);
	return 0;
}

static int run_exec(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r = {0};
	sbx_error err = {0};
	int rc;

	o.cwd = a->cwd;
	o.env = a->env;
	o.env_count = a->nenv;
	o.timeout_ms = a->timeout_ms;
	o.max_output_bytes = a->max_output_bytes;
	o.tag = a->tag;
	o.user = a->popts.user;
	if (a->stream) {
		o.on_output = on_output;
		o.output_payload = c;
	}
	if (a->data) {
		o.stdin_data = a->data;
		o.stdin_len = a->data_len;
	}
	if (a->background) {
		serve_proc *p = NULL;
		rc = serve_proc_start(&p, c, a, &err);
		rc = finish(rc, &err,
		            rc < 0 ? NULL
		                   : cli_shape_process_started(
		                         a->id, sbx_process_pid(serve_proc_handle(p))),
		            out, f);
		serve_proc_put(p);
		return rc;
	}
	rc = sbx_sandbox_exec(&r, c->prov, a->id, a->command, &o, c->sig, &err);
	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_exec_result(&r), out, f);
	sbx_exec_result_free(&r);
	return rc;
}

static int run_read_file(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	sbx_file *file = NULL;
	int rc = sbx_sandbox_read_file(&file, c->prov, a->id, a->path, a->max_bytes, c->sig, &err);

	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_file(a->path, file), out, f);
	sbx_file_free(file);
	return rc;
}

static int run_write_file(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc =
	    sbx_sandbox_write_file(c->prov, a->id, a->path, a->data, a->data_len, c->sig, &err);

	return finish(rc, &err,
	              rc < 0 ? NULL
	                     : json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a->path, "bytes",
	                                 (json_int_t)a->data_len),
	              out, f);
}

static int run_stat(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	sbx_stat st = {0};
	int rc = sbx_sandbox_stat(&st, c->prov, a->id, a->path, c->sig, &err);

	return finish(rc, &err, rc < 0 ? NULL : cli_shape_stat(a->path, &st), out, f);
}

static int parse_set_timeout(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "timeout_seconds", NULL};
	a->create.timeout_seconds = 0;
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0)
		return -1;
	if (!json_object_get(p, "timeout_seconds"))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.timeout_seconds is required");
	return get_uint(p, "timeout_seconds", "params", 0, SBX_MAX_TIMEOUT_SECONDS,
	                &a->create.timeout_seconds, NULL, f);
}

static int run_set_timeout(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_set_timeout(c->prov, a->id, a->create.timeout_seconds, c->sig, &err);

	return finish(rc, &err,
	              rc < 0 ? NULL
	                     : json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->id, "timeout_seconds",
	                                 (json_int_t)a->create.timeout_seconds),
	              out, f);
}

static int parse_host(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "port", NULL};
	uint64_t port = 0;
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0)
		return -1;
	if (!json_object_get(p, "port"))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.port is required");
	if (get_uint(p, "port", "params", 1, 65535, &port, NULL, f) < 0)
		return -1;
	a->pid = (uint32_t)port; /* the number this call takes */
	return 0;
}

static int run_host(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_host *h = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_host(&h, c->prov, a->id, a->pid, c->sig, &err);

	rc = finish(rc, &err,
	            rc < 0
	                ? NULL
	                : json_pack("{s:s,s:s,s:I,s:s?}", "url", h->url, "hostname", h->hostname,
	                            "port", (json_int_t)a->pid, "traffic_token", h->traffic_token),
	            out, f);
	sbx_host_free(h);
	return rc;
}

static int parse_metrics(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "start", "end", NULL};
	uint64_t start = 0, end = 0;
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_uint(p, "start", "params", 0, 253402300799ULL, &start, NULL, f) < 0 ||
	    get_uint(p, "end", "params", 0, 253402300799ULL, &end, NULL, f) < 0)
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

	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_metrics(a->id, m), out, f);
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

/* ---- list, info, list_dir ------------------------------------------------------------------- */

static int parse_list(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"name", "state", "all", NULL};
	const char *state = NULL;

	if (only_keys(p, keys, "params", f) < 0 ||
	    get_str(p, "name", false, "params", &a->name, f) < 0 ||
	    get_str(p, "state", false, "params", &state, f) < 0 ||
	    get_bool(p, "all", "params", &a->list_all, f) < 0)
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
	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_info_list(l), out, f);
	sbx_info_list_free(l);
	return rc;
}

static int run_info(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_sandbox_info *info = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_get_info(&info, c->prov, a->id, c->sig, &err);

	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_sandbox_info(info), out, f);
	sbx_sandbox_info_free(info);
	return rc;
}

static int run_list_dir(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_dir *d = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_list_dir(&d, c->prov, a->id, a->path, c->sig, &err);

	rc = finish(rc, &err,
	            rc < 0 ? NULL
	            : d    ? cli_shape_dir(a->path, d)
	                   : json_pack("{s:s,s:b}", "path", a->path, "exists", 0),
	            out, f);
	sbx_dir_free(d);
	return rc;
}

/* ---- path_info, remove, make_dir, rename (sandbox/paths.h) ---------------------------------- */

/* "user": "sandbox" (default) or "root" into a->popts. */
static int parse_user(json_t *p, serve_args *a, serve_fail *f)
{
	const char *user = "sandbox";
	a->popts = (sbx_path_options)SBX_PATH_OPTIONS_INIT;
	if (get_str(p, "user", false, "params", &user, f) < 0)
		return -1;
	if (strcmp(user, "root") == 0)
		a->popts.user = SBX_USER_ROOT;
	else if (strcmp(user, "sandbox") != 0)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.user must be \"sandbox\" or \"root\"");
	return 0;
}

static int parse_path_op(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "user", NULL};
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "path", true, "params", &a->path, f) < 0)
		return -1;
	return parse_user(p, a, f);
}

static int parse_rename(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "from", "to", "user", NULL};
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "from", true, "params", &a->path, f) < 0 ||
	    get_str(p, "to", true, "params", &a->to, f) < 0)
		return -1;
	return parse_user(p, a, f);
}

static json_t *entry_or_missing(const sbx_entry_info *e, const char *path)
{
	return e ? cli_shape_entry_info(e) : json_pack("{s:s,s:b}", "path", path, "exists", 0);
}

static int run_path_info(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_entry_info *e = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_path_info(&e, c->prov, a->id, a->path, &a->popts, c->sig, &err);

	rc = finish(rc, &err, rc < 0 ? NULL : entry_or_missing(e, a->path), out, f);
	sbx_entry_info_free(e);
	return rc;
}

static int run_remove(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_remove(c->prov, a->id, a->path, &a->popts, c->sig, &err);

	return finish(rc, &err, rc < 0 ? NULL : json_pack("{s:b,s:s}", "ok", 1, "path", a->path),
	              out, f);
}

static int run_make_dir(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	bool created = false;
	int rc = sbx_sandbox_make_dir(&created, c->prov, a->id, a->path, &a->popts, c->sig, &err);

	return finish(rc, &err,
	              rc < 0 ? NULL : json_pack("{s:s,s:b}", "path", a->path, "created", created),
	              out, f);
}

static int run_rename(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_entry_info *e = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_rename(&e, c->prov, a->id, a->path, a->to, &a->popts, c->sig, &err);

	rc = finish(rc, &err, rc < 0 ? NULL : entry_or_missing(e, a->path), out, f);
	sbx_entry_info_free(e);
	return rc;
}

/* ---- background commands: ps, wait, send_stdin, close_stdin, kill_process -------------------- */

static int parse_pid(json_t *p, const char *const *keys, serve_args *a, serve_fail *f)
{
	uint64_t pid = 0;

	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_uint(p, "pid", "params", 1, UINT32_MAX, &pid, NULL, f) < 0)
		return -1;
	if (!pid)
		return serve_failf(f, RPC_INVALID_PARAMS, "params.pid is required (an integer)");
	a->pid = (uint32_t)pid;
	return 0;
}

static int parse_wait(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", "max_output_bytes", "stream", NULL};
	uint64_t n = 1024 * 1024;

	if (parse_pid(p, keys, a, f) < 0 ||
	    get_uint(p, "max_output_bytes", "params", 0, SIZE_MAX / 2, &n, NULL, f) < 0 ||
	    get_bool(p, "stream", "params", &a->stream, f) < 0)
		return -1;
	a->max_output_bytes = (size_t)n;
	return 0;
}

static int parse_pid_only(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", NULL};
	return parse_pid(p, keys, a, f);
}

static int parse_send_stdin(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", "data", "data_b64", NULL};
	if (parse_pid(p, keys, a, f) < 0)
		return -1;
	return get_bytes(p, "data", true, a, f);
}

static int run_ps(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_process_info_list *l = NULL;
	sbx_error err = {0};
	int rc = sbx_process_list(&l, c->prov, a->id, c->sig, &err);

	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_process_list(a->id, l), out, f);
	sbx_process_info_list_free(l);
	return rc;
}

/* The output of a wait's attach, under the wait's id (the handle ends before the call does). */
static int on_attach_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	serve_call *c = payload;

	serve_notify_output(serve_writer_of(c->srv), c->id, c->args.pid,
	                    stream == SBX_STREAM_STDERR ? "stderr" : "stdout", data, len);
	return 0;
}

/*
 * wait: the handle this server started, else an attach by pid (output from now on, streamed with
 * "stream"). When that handle's stream broke before the command's end (the sandbox was paused, the
 * network failed), the entry is kept (shutdown still kills the command) and every later wait
 * attaches anew, so a wait after a resume gets the rest and the end.
 */
static int run_wait(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_process *h = p && !serve_proc_broken(p) ? serve_proc_handle(p) : NULL;
	bool attached = !h;
	sbx_process_options o = SBX_PROCESS_OPTIONS_INIT;
	sbx_exec_result r = {0};
	sbx_error err = {0};
	int rc = 0;

	o.max_output_bytes = a->max_output_bytes;
	if (a->stream) {
		o.on_output = on_attach_output;
		o.output_payload = c;
	}
	if (attached)
		rc = sbx_process_attach(&h, c->prov, a->id, a->pid, &o, c->sig, &err);
	if (rc == 0 && attached && a->stream)
		serve_notify_attached(serve_writer_of(c->srv), c->id, a->pid);
	if (rc == 0)
		rc = sbx_process_wait(&r, h, c->sig, &err);
	if (p && rc == 0)
		serve_proc_forget(p); /* it ended: the next wait attaches (envd keeps it 30 s) */
	else if (p && !attached && (rc == SBX_ENETWORK || rc == SBX_EPROTOCOL))
		serve_proc_set_broken(p);
	rc = finish(rc, &err, rc < 0 ? NULL : cli_shape_exec_result(&r), out, f);
	sbx_exec_result_free(&r);
	if (p)
		serve_proc_put(p);
	if (attached)
		sbx_process_free(h);
	return rc;
}

static int no_handle(const serve_args *a, serve_fail *f)
{
	return serve_failf(f, RPC_INVALID_PARAMS,
	                   "params.pid: no background command %u of sandbox %.128s was started "
	                   "through this server with \"stdin_open\": true",
	                   (unsigned)a->pid, a->id);
}

static int run_send_stdin(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!p)
		return no_handle(a, f);
	rc = sbx_process_send_stdin(serve_proc_handle(p), a->data, a->data_len, c->sig, &err);
	serve_proc_put(p);
	return finish(rc, &err,
	              rc < 0 ? NULL
	                     : json_pack("{s:b,s:s,s:I,s:I}", "ok", 1, "id", a->id, "pid",
	                                 (json_int_t)a->pid, "bytes", (json_int_t)a->data_len),
	              out, f);
}

static int run_close_stdin(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!p)
		return no_handle(a, f);
	rc = sbx_process_close_stdin(serve_proc_handle(p), c->sig, &err);
	serve_proc_put(p);
	return finish(
	    rc, &err,
	    rc < 0 ? NULL
	           : json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->id, "pid", (json_int_t)a->pid),
	    out, f);
}

/* kill_process: the handle's kill (whole tree, then its reader ends), else by pid (tree too). */
static int run_kill_process(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	/* a broken handle takes its command for ended: by pid then */
	int rc = p && !serve_proc_broken(p)
	             ? sbx_process_kill(serve_proc_handle(p), c->sig, &err)
	             : sbx_process_kill_pid(c->prov, a->id, a->pid, c->sig, &err);

	serve_proc_put(p);
	return finish(
	    rc, &err,
	    rc < 0 ? NULL
	           : json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->id, "pid", (json_int_t)a->pid),
	    out, f);
}

/* ---- terminals: pty_start, pty_attach, pty_input, pty_resize, pty_kill, pty_wait ------------- */

static int get_size(json_t *p, serve_args *a, bool required, serve_fail *f)
{
	uint64_t cols = a->cols, rows = a->rows;
	bool gc = false, gr = false;

	if (get_uint(p, "cols", "params", 1, UINT16_MAX, &cols, &gc, f) < 0 ||
	    get_uint(p, "rows", "params", 1, UINT16_MAX, &rows, &gr, f) < 0)
		return -1;
	if (required && (!gc || !gr))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.%s is required (an integer)",
		                   !gc ? "cols" : "rows");
	a->cols = (uint16_t)cols;
	a->rows = (uint16_t)rows;
	return 0;
}

static int parse_pty_start(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id",  "command",    "cols", "rows", "cwd",
	                                   "env", "timeout_ms", "user", NULL};
	sbx_pty_options d = SBX_PTY_OPTIONS_INIT;

	a->cols = d.cols;
	a->rows = d.rows;
	a->timeout_ms = d.timeout_ms;
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "command", false, "params", &a->command, f) < 0 ||
	    get_size(p, a, false, f) < 0 || get_str(p, "cwd", false, "params", &a->cwd, f) < 0 ||
	    get_uint(p, "timeout_ms", "params", 0, UINT64_MAX / 2, &a->timeout_ms, NULL, f) < 0 ||
	    parse_user(p, a, f) < 0)
		return -1;
	return get_str_map(p, "env", &a->env, &a->nenv, f);
}

static int parse_pty_resize(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", "cols", "rows", NULL};
	if (parse_pid(p, keys, a, f) < 0)
		return -1;
	return get_size(p, a, true, f);
}

static json_t *pty_started(const char *id, uint32_t pid)
{
	return json_pack("{s:s,s:I}", "id", id, "pid", (json_int_t)pid);
}

static int run_pty_open(serve_call *c, const serve_args *a, uint32_t pid, json_t **out,
                        serve_fail *f)
{
	serve_pty *t = NULL;
	sbx_error err = {0};
	int rc = serve_pty_open(&t, c, a, pid, &err);

	rc = finish(rc, &err, rc < 0 ? NULL : pty_started(a->id, serve_pty_pid(t)), out, f);
	serve_pty_put(t);
	return rc;
}

static int run_pty_start(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_pty_open(c, a, 0, out, f);
}

static int run_pty_attach(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_pty_open(c, a, a->pid, out, f);
}

static int no_pty(const serve_args *a, serve_fail *f)
{
	return serve_failf(f, RPC_INVALID_PARAMS,
	                   "params.pid: no terminal %u of sandbox %.128s was started or attached "
	                   "through this server (pty_attach follows one by pid)",
	                   (unsigned)a->pid, a->id);
}

static json_t *pid_ok(const serve_args *a)
{
	return json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->id, "pid", (json_int_t)a->pid);
}

static int run_pty_input(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_pty *t = serve_pty_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!t)
		return no_pty(a, f);
	rc = sbx_pty_send_input(serve_pty_handle(t), a->data, a->data_len, c->sig, &err);
	serve_pty_put(t);
	return finish(rc, &err, rc < 0 ? NULL : pid_ok(a), out, f);
}

static int run_pty_resize(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_pty *t = serve_pty_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!t)
		return no_pty(a, f);
	rc = sbx_pty_resize(serve_pty_handle(t), a->cols, a->rows, c->sig, &err);
	serve_pty_put(t);
	return finish(rc, &err, rc < 0 ? NULL : pid_ok(a), out, f);
}

static int run_pty_kill(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_pty *t = serve_pty_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!t)
		return no_pty(a, f);
	rc = sbx_pty_kill(serve_pty_handle(t), c->sig, &err);
	serve_pty_put(t);
	return finish(rc, &err, rc < 0 ? NULL : pid_ok(a), out, f);
}

/* pty_wait: the end; the handle is then forgotten (a later pty_attach finds it ended). */
static int run_pty_wait(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_pty *t = serve_pty_get(c->srv, a->id, a->pid);
	sbx_pty_result r = {0};
	sbx_error err = {0};
	int rc;

	if (!t)
		return no_pty(a, f);
	rc = sbx_pty_wait(&r, serve_pty_handle(t), c->sig, &err);
	if (rc == 0 || rc == SBX_EUSER || rc == SBX_ENETWORK || rc == SBX_EPROTOCOL)
		serve_pty_forget(t); /* it ended, or its stream did: pty_attach follows it anew */
	serve_pty_put(t);
	return finish(rc, &err,
	              rc < 0 ? NULL
	                     : json_pack("{s:s,s:I,s:o,s:b,s:b}", "id", a->id, "pid",
	                                 (json_int_t)a->pid, "exit_code",
	                                 r.has_exit_code ? json_integer(r.exit_code) : json_null(),
	                                 "timed_out", r.timed_out, "killed", r.killed),
	              out, f);
}

/* ---- watch: a directory's events as notifications until the call is cancelled ------------ */

static int parse_watch(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "path", "recursive", "user", NULL};
	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 ||
	    get_str(p, "path", true, "params", &a->path, f) < 0 ||
	    get_bool(p, "recursive", "params", &a->recursive, f) < 0)
		return -1;
	return parse_user(p, a, f);
}

/*
 * watch: `watch_started` once envd watches, then `watch_event` notifications under this
 * call's id until it is cancelled
 * ($/cancelRequest, shutdown), then {"ok":true,"path","events"}; a stream that ended is the
 * call's error.
 */
static int run_watch(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
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
		return finish(rc, &err, NULL, out, f);
	/* the library returns once envd's start frame came: a client may change things now */
	serve_notify_watch_started(serve_writer_of(c->srv), c->id, a->path);
	while ((rc = sbx_watch_next(&e, w, UINT64_MAX, c->sig, &err)) == 0) {
		serve_notify_watch(serve_writer_of(c->srv), c->id, sbx_watch_op_name(e.op), e.name);
		sbx_watch_event_dispose(&e);
		n++;
	}
	sbx_watch_free(w);
	if (rc == SBX_EABORTED) /* the normal end of a watch */
		return finish(0, &err,
		              json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a->path, "events", n),
		              out, f);
	return finish(rc, &err, NULL, out, f);
}

/* ---- write_files: E2B's files.write([...]) in one upload ----------------------------------- */

static int parse_write_files(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "files", "user", NULL};
	static const char *const fkeys[] = {"path", "data", "data_b64", NULL};
	json_t *files = json_object_get(p, "files"), *it;
	size_t i, n;

	if (only_keys(p, keys, "params", f) < 0 || parse_id(p, a, f) < 0 || parse_user(p, a, f) < 0)
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
		if (only_keys(it, fkeys, where, f) < 0 ||
		    get_str(it, "path", true, where, &a->wfiles[i].path, f) < 0 ||
		    get_bytes(it, "data", true, &one, f) < 0) {
			free(one.data);
			return -1;
		}
		a->wbufs[i] = one.data; /* owned here from now on */
		a->wfiles[i].data = one.data;
		a->wfiles[i].len = one.data_len;
	}
	return 0;
}

static int run_write_files(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_error err = {0};
	json_int_t bytes = 0;
	int rc =
	    sbx_sandbox_write_files(c->prov, a->id, a->wfiles, a->nwfiles, &a->popts, c->sig, &err);

	for (size_t i = 0; i < a->nwfiles; i++)
		bytes += (json_int_t)a->wfiles[i].len;
	return finish(rc, &err,
	              rc < 0 ? NULL
	                     : json_pack("{s:b,s:I,s:I}", "ok", 1, "files", (json_int_t)a->nwfiles,
	                                 "bytes", bytes),
	              out, f);
}

/* The method table, in the contract's order (bindings/protocol/methods.md). */
static const serve_method methods[] = {
    {"initialize", parse_initialize, run_initialize, false},
    {"create", parse_create, run_create, true},
    {"resume", parse_only_id, run_resume, true},
    {"suspend", parse_only_id, run_suspend, true},
    {"destroy", parse_only_id, run_destroy, true},
    {"destroy_by_name", parse_by_name, run_destroy_by_name, true},
    {"kill_all", parse_only_id, run_kill_all, true},
    {"kill_tagged", parse_kill_tagged, run_kill_tagged, true},
    {"exec", parse_exec, run_exec, true},
    {"read_file", parse_read_file, run_read_file, true},
    {"write_file", parse_write_file, run_write_file, true},
    {"stat", parse_stat, run_stat, true},
    {"list", parse_list, run_list, true},
    {"info", parse_only_id, run_info, true},
    {"set_timeout", parse_set_timeout, run_set_timeout, true},
    {"host", parse_host, run_host, true},
    {"metrics", parse_metrics, run_metrics, true},
    {"list_dir", parse_stat, run_list_dir, true},
    {"ps", parse_only_id, run_ps, true},
    {"wait", parse_wait, run_wait, true},
    {"send_stdin", parse_send_stdin, run_send_stdin, true},
    {"close_stdin", parse_pid_only, run_close_stdin, true},
    {"kill_process", parse_pid_only, run_kill_process, true},
    {"path_info", parse_path_op, run_path_info, true},
    {"remove", parse_path_op, run_remove, true},
    {"make_dir", parse_path_op, run_make_dir, true},
    {"rename", parse_rename, run_rename, true},
    {"pty_start", parse_pty_start, run_pty_start, true},
    {"pty_attach", parse_pid_only, run_pty_attach, true},
    {"pty_input", parse_send_stdin, run_pty_input, true},
    {"pty_resize", parse_pty_resize, run_pty_resize, true},
    {"pty_kill", parse_pid_only, run_pty_kill, true},
    {"pty_wait", parse_pid_only, run_pty_wait, true},
    {"watch", parse_watch, run_watch, true},
    {"write_files", parse_write_files, run_write_files, true},
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
