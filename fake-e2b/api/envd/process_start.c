/*
 * fake-e2b/api/envd/process_start.c: process.Process/Start (docs/internals/wire.md
 * "Process start"): a StartRequest becomes a runtime spec; the output streams back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd.h"

/* A StartRequest as a runtime spec; the strings are borrowed from `req`. */
typedef struct start_args {
	fk_proc_spec spec;
	const char **argv, **keys, **vals;
} start_args;

static void start_args_dispose(start_args *a)
{
	free(a->argv);
	free(a->keys);
	free(a->vals);
}

/* Sizes a StartRequest may have. envd itself sets none (connect-go reads any message), but
 * what it starts goes through execve, whose limits these are: one argument or environment
 * string at most MAX_ARG_STRLEN with its NUL (131071 bytes, "NAME=value" for a variable), all of
 * them with their pointers at most ARG_MAX at the default 8 MiB stack (2 MiB), a cwd under
 * PATH_MAX. The tag only names the process (List shows it): 256 bytes. */
#define TAG_MAX        256u
#define ARG_STR_MAX    131071u
#define ARGS_TOTAL_MAX (2u * 1024u * 1024u)
#define CWD_MAX        4095u

/* A field past its size: the message envd's caller gets (invalid_argument). */
static int too_long(fk_err *err, const char *what, size_t n, size_t max)
{
	snprintf(err->message, sizeof(err->message), "%s is %zu bytes, more than %zu", what, n,
	         max);
	return -1;
}

/* Each string and all of them within the sizes above; 0, else -1 with the message in err. */
static int start_args_sizes(json_t *req, fk_err *err)
{
	json_t *p = json_object_get(req, "process"), *v;
	const char *tag = fk_json_str(req, "tag"), *cwd = fk_json_str(p, "cwd"),
	           *cmd = fk_json_str(p, "cmd"), *k;
	size_t total = 0, i;
	if (tag && strlen(tag) > TAG_MAX)
		return too_long(err, "tag", strlen(tag), TAG_MAX);
	if (cwd && strlen(cwd) > CWD_MAX)
		return too_long(err, "process.cwd", strlen(cwd), CWD_MAX);
	if (cmd && strlen(cmd) > ARG_STR_MAX)
		return too_long(err, "process.cmd", strlen(cmd), ARG_STR_MAX);
	total += cmd ? strlen(cmd) + 1 + sizeof(char *) : 0;
	json_array_foreach(json_object_get(p, "args"), i, v)
	{
		size_t n = json_string_length(v);
		if (n > ARG_STR_MAX) {
			char what[48];
			snprintf(what, sizeof(what), "process.args[%zu]", i);
			return too_long(err, what, n, ARG_STR_MAX);
		}
		total += n + 1 + sizeof(char *);
	}
	json_object_foreach(json_object_get(p, "envs"), k, v)
	{
		size_t n = strlen(k) + 1 + json_string_length(v);
		if (n > ARG_STR_MAX) {
			char what[64];
			snprintf(what, sizeof(what), "process.envs entry '%.20s%s'", k,
			         strlen(k) > 20 ? "..." : "");
			return too_long(err, what, n, ARG_STR_MAX);
		}
		total += n + 1 + sizeof(char *);
	}
	if (total > ARGS_TOTAL_MAX)
		return too_long(err, "process.cmd, args and envs together", total, ARGS_TOTAL_MAX);
	return 0;
}

/* 0, or -1 when the request is malformed (or OOM). */
static int start_args_parse(start_args *a, json_t *req, const char *user)
{
	json_t *p = json_object_get(req, "process"), *v;
	json_t *args = json_object_get(p, "args"), *envs = json_object_get(p, "envs");
	size_t nargs = json_array_size(args), nenv = json_object_size(envs), i = 0;
	const char *k;
	memset(a, 0, sizeof(*a));
	a->argv = calloc(nargs + 1, sizeof(char *));
	a->keys = calloc(nenv + 1, sizeof(char *));
	a->vals = calloc(nenv + 1, sizeof(char *));
	int bad = !json_is_object(p) || !fk_json_str(p, "cmd") || !a->argv || !a->keys || !a->vals;
	json_array_foreach(args, i, v)
	{
		bad |= !json_is_string(v);
		if (!bad)
			a->argv[i] = json_string_value(v);
	}
	i = 0;
	json_object_foreach(envs, k, v)
	{
		bad |= !json_is_string(v);
		a->keys[i] = k;
		a->vals[i++] = json_is_string(v) ? json_string_value(v) : "";
	}
	a->spec =
	    (fk_proc_spec){.cmd = fk_json_str(p, "cmd"),
	                   .args = a->argv,
	                   .n_args = nargs,
	                   .env_keys = a->keys,
	                   .env_values = a->vals,
	                   .n_envs = nenv,
	                   .cwd = fk_json_str(p, "cwd"),
	                   .user = user,
	                   .tag = fk_json_str(req, "tag"),
	                   /* stdin absent means true (docs/internals/wire.md "Process start") */
	                   .stdin_pipe = !json_is_false(json_object_get(req, "stdin"))};
	/* pty {size {cols, rows}}: a terminal instead of pipes */
	json_t *pty = json_object_get(req, "pty");
	if (json_is_object(pty)) {
		bad |= fk_envd_pty_size(json_object_get(pty, "size"), &a->spec.pty_cols,
		                        &a->spec.pty_rows) < 0;
		a->spec.pty = true;
	}
	return bad ? -1 : 0;
}

/* A failed fk_proc_start as envd answers it: 200 + end-stream error, or the proxy's 502. */
static enum MHD_Result start_error(fk_call *c, int rc, const fk_err *err)
{
	char msg[300];
	if (rc == FK_ESTATE || rc == FK_ENOTFOUND) /* paused or deleted meanwhile */
		return fk_envd_not_found_502(c->req, c->sb->id);
	if (rc == FK_ENOUSER)
		snprintf(msg, sizeof(msg), "invalid username: '%s'", c->user ? c->user : "");
	else
		snprintf(msg, sizeof(msg), "%s", err->message[0] ? err->message : fk_code_name(rc));
	return fk_connect_stream_error(c->req, fk_connect_code_of(rc), msg);
}

/* envd's `process_start` line of the sandbox's logs (infra envd services/process/handler Start):
 * "Process with pid N started", the command as the user gave it (cmd and args joined by
 * spaces; its first FK_LOG_CMD_MAX bytes here: the logs are bounded) and Connect-Timeout-Ms. */
#define FK_LOG_CMD_MAX 1024
static void log_start(fk_call *c, const fk_proc_spec *spec, uint32_t pid)
{
	char cmd[FK_LOG_CMD_MAX + 1];
	size_t n = (size_t)snprintf(cmd, sizeof(cmd), "%s", spec->cmd);
	for (size_t i = 0; i < spec->n_args && n < FK_LOG_CMD_MAX; i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " %s", spec->args[i]);
	/* cut at a character's end: the line must stay valid UTF-8 */
	size_t len = strlen(cmd), i = len;
	while (i > 0 && ((unsigned char)cmd[i - 1] & 0xC0) == 0x80)
		i--;
	if (i > 0) {
		unsigned char lead = (unsigned char)cmd[i - 1];
		size_t need = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
		if (i - 1 + need > len)
			len = i - 1;
	}
	const char *to = fk_header(c->req, "Connect-Timeout-Ms");
	char *end = NULL;
	long long ms = to ? strtoll(to, &end, 10) : 0;
	if (!to || !*to || *end || ms < 0)
		ms = 0;
	json_t *fields =
	    json_pack("{s:s,s:I,s:s%,s:I}", "event_type", "process_start", "pid", (json_int_t)pid,
	              "command", cmd, len, "request_timeout_ms", (json_int_t)ms);
	fk_sandbox_log(c->app->reg, c->sb, FK_SBLOG_ENVD, FK_SBLOG_INFO, fields,
	               "Process with pid %u started", (unsigned)pid);
}

enum MHD_Result fk_envd_process_start(fk_call *c)
{
	json_t *req = fk_connect_request(c->req, 1);
	start_args a;
	fk_proc *proc = NULL;
	fk_sub *sub = NULL;
	fk_err err = {0};
	enum MHD_Result ret;
	int rc = start_args_parse(&a, req, c->user) < 0 || start_args_sizes(req, &err) < 0
	             ? FK_EINVAL
	             : fk_proc_start(c->app->rt, c->sb->id, &a.spec, &proc, &sub, &err);
	if (rc == FK_EINVAL && !err.message[0])
		snprintf(err.message, sizeof(err.message), "invalid StartRequest");
	if (rc < 0) {
		ret = start_error(c, rc, &err);
	} else {
		if (c->fault.kind == FK_FAULT_KILL_IGNORED)
			fk_sandbox_set_immune(c->app->reg, c->sb, fk_proc_pid(proc));
		log_start(c, &a.spec, fk_proc_pid(proc));
		ret = fk_envd_open_stream(c, proc, sub, 1);
	}
	start_args_dispose(&a);
	json_decref(req);
	return ret;
}
