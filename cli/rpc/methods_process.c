/*
 * cli/rpc/methods_process.c: the command methods of `serve` (bindings/protocol/methods.md):
 * exec, the background commands (ps, wait, send_stdin, close_stdin, kill_process) and the
 * terminals (pty_*). Their rows are in methods.c's table.
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

int serve_parse_exec(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {
	    "id",   "command", "cwd",   "env",       "timeout_ms", "max_output_bytes",
	    "tag",  "stream",  "stdin", "stdin_b64", "background", "stdin_open",
	    "user", NULL};
	sbx_exec_options *o = &a->cmd;
	uint64_t n;

	*o = (sbx_exec_options)SBX_EXEC_OPTIONS_INIT;
	n = o->max_output_bytes;
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "command", true, "params", &a->command, f) < 0 ||
	    serve_get_str(p, "cwd", false, "params", &o->cwd, f) < 0 ||
	    serve_get_str(p, "tag", false, "params", &o->tag, f) < 0 ||
	    serve_get_uint(p, "timeout_ms", "params", 1, UINT64_MAX / 2, &o->timeout_ms, NULL, f) <
	        0 ||
	    serve_get_uint(p, "max_output_bytes", "params", 0, SIZE_MAX / 2, &n, NULL, f) < 0 ||
	    serve_get_bool(p, "stream", "params", &a->stream, f) < 0 ||
	    serve_get_bytes(p, "stdin", false, a, f) < 0 ||
	    serve_get_bool(p, "background", "params", &a->background, f) < 0 ||
	    serve_get_bool(p, "stdin_open", "params", &a->stdin_open, f) < 0 ||
	    serve_parse_user(p, a, f) < 0)
		return -1;
	if (a->background && a->data)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.stdin: not with background; start with "
		                   "\"stdin_open\": true and use send_stdin");
	if (a->stdin_open && !a->background)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.stdin_open needs \"background\": true (use stdin)");
	o->max_output_bytes = (size_t)n;
	return serve_parse_env(p, a, f);
}

/* Streamed output: one `output` notification per chunk, sent before the response. */
static int on_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	serve_call *c = payload;

	serve_notify_output(serve_writer_of(c->srv), c->id, 0,
	                    stream == SBX_STREAM_STDERR ? "stderr" : "stdout", data, len);
	return 0;
}

int serve_run_exec(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_exec_options o = a->cmd;
	sbx_exec_result r = {0};
	sbx_error err = {0};
	int rc;

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
		rc = serve_finish(rc, &err,
		                  rc < 0 ? NULL
		                         : cli_shape_process_started(
		                               a->id, sbx_process_pid(serve_proc_handle(p))),
		                  out, f);
		serve_proc_put(p);
		return rc;
	}
	rc = sbx_sandbox_exec(&r, c->prov, a->id, a->command, &o, c->sig, &err);
	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_exec_result(&r), out, f);
	sbx_exec_result_free(&r);
	return rc;
}

/* ---- background commands: ps, wait, send_stdin, close_stdin, kill_process -------------------- */

static int parse_pid(json_t *p, const char *const *keys, serve_args *a, serve_fail *f)
{
	uint64_t pid = 0;

	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_uint(p, "pid", "params", 1, UINT32_MAX, &pid, NULL, f) < 0)
		return -1;
	if (!pid)
		return serve_failf(f, RPC_INVALID_PARAMS, "params.pid is required (an integer)");
	a->pid = (uint32_t)pid;
	return 0;
}

int serve_parse_wait(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", "max_output_bytes", "stream", NULL};
	uint64_t n = 1024 * 1024;

	if (parse_pid(p, keys, a, f) < 0 ||
	    serve_get_uint(p, "max_output_bytes", "params", 0, SIZE_MAX / 2, &n, NULL, f) < 0 ||
	    serve_get_bool(p, "stream", "params", &a->stream, f) < 0)
		return -1;
	a->max_output_bytes = (size_t)n;
	return 0;
}

int serve_parse_pid_only(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", NULL};
	return parse_pid(p, keys, a, f);
}

int serve_parse_send_stdin(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", "pid", "data", "data_b64", NULL};
	if (parse_pid(p, keys, a, f) < 0)
		return -1;
	return serve_get_bytes(p, "data", true, a, f);
}

int serve_run_ps(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	sbx_process_info_list *l = NULL;
	sbx_error err = {0};
	int rc = sbx_process_list(&l, c->prov, a->id, c->sig, &err);

	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_process_list(a->id, l), out, f);
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
int serve_run_wait(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
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
	rc = serve_finish(rc, &err, rc < 0 ? NULL : cli_shape_exec_result(&r), out, f);
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

int serve_run_send_stdin(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!p)
		return no_handle(a, f);
	rc = sbx_process_send_stdin(serve_proc_handle(p), a->data, a->data_len, c->sig, &err);
	serve_proc_put(p);
	return serve_finish(rc, &err,
	                    rc < 0
	                        ? NULL
	                        : json_pack("{s:b,s:s,s:I,s:I}", "ok", 1, "id", a->id, "pid",
	                                    (json_int_t)a->pid, "bytes", (json_int_t)a->data_len),
	                    out, f);
}

int serve_run_close_stdin(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!p)
		return no_handle(a, f);
	rc = sbx_process_close_stdin(serve_proc_handle(p), c->sig, &err);
	serve_proc_put(p);
	return serve_finish(
	    rc, &err,
	    rc < 0 ? NULL
	           : json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->id, "pid", (json_int_t)a->pid),
	    out, f);
}

/* kill_process: the handle's kill (whole tree, then its reader ends), else by pid (tree too). */
int serve_run_kill_process(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	serve_proc *p = serve_proc_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	/* a broken handle takes its command for ended: by pid then */
	int rc = p && !serve_proc_broken(p)
	             ? sbx_process_kill(serve_proc_handle(p), c->sig, &err)
	             : sbx_process_kill_pid(c->prov, a->id, a->pid, c->sig, &err);

	serve_proc_put(p);
	return serve_finish(
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

	if (serve_get_uint(p, "cols", "params", 1, UINT16_MAX, &cols, &gc, f) < 0 ||
	    serve_get_uint(p, "rows", "params", 1, UINT16_MAX, &rows, &gr, f) < 0)
		return -1;
	if (required && (!gc || !gr))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.%s is required (an integer)",
		                   !gc ? "cols" : "rows");
	a->cols = (uint16_t)cols;
	a->rows = (uint16_t)rows;
	return 0;
}

int serve_parse_pty_start(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id",  "command",    "cols", "rows", "cwd",
	                                   "env", "timeout_ms", "user", NULL};
	sbx_pty_options d = SBX_PTY_OPTIONS_INIT;
	sbx_exec_options *o = &a->cmd;

	*o = (sbx_exec_options)SBX_EXEC_OPTIONS_INIT;
	a->cols = d.cols;
	a->rows = d.rows;
	o->timeout_ms = d.timeout_ms;
	if (serve_only_keys(p, keys, "params", f) < 0 || serve_parse_id(p, a, f) < 0 ||
	    serve_get_str(p, "command", false, "params", &a->command, f) < 0 ||
	    get_size(p, a, false, f) < 0 ||
	    serve_get_str(p, "cwd", false, "params", &o->cwd, f) < 0 ||
	    serve_get_uint(p, "timeout_ms", "params", 0, UINT64_MAX / 2, &o->timeout_ms, NULL, f) <
	        0 ||
	    serve_parse_user(p, a, f) < 0)
		return -1;
	return serve_parse_env(p, a, f);
}

int serve_parse_pty_resize(json_t *p, serve_args *a, serve_fail *f)
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

	rc = serve_finish(rc, &err, rc < 0 ? NULL : pty_started(a->id, serve_pty_pid(t)), out, f);
	serve_pty_put(t);
	return rc;
}

int serve_run_pty_start(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_pty_open(c, a, 0, out, f);
}

int serve_run_pty_attach(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
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

static int pty_input(sbx_pty *h, const serve_args *a, sbx_signal *sig, sbx_error *err)
{
	return sbx_pty_send_input(h, a->data, a->data_len, sig, err);
}

static int pty_resize(sbx_pty *h, const serve_args *a, sbx_signal *sig, sbx_error *err)
{
	return sbx_pty_resize(h, a->cols, a->rows, sig, err);
}

static int pty_kill(sbx_pty *h, const serve_args *a, sbx_signal *sig, sbx_error *err)
{
	(void)a;
	return sbx_pty_kill(h, sig, err);
}

/* pty_input, pty_resize, pty_kill: `op` on the terminal (a->id, a->pid), answered with pid_ok. */
static int run_on_pty(serve_call *c, const serve_args *a,
                      int (*op)(sbx_pty *h, const serve_args *a, sbx_signal *sig, sbx_error *err),
                      json_t **out, serve_fail *f)
{
	serve_pty *t = serve_pty_get(c->srv, a->id, a->pid);
	sbx_error err = {0};
	int rc;

	if (!t)
		return no_pty(a, f);
	rc = op(serve_pty_handle(t), a, c->sig, &err);
	serve_pty_put(t);
	return serve_finish(rc, &err, rc < 0 ? NULL : pid_ok(a), out, f);
}

int serve_run_pty_input(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_on_pty(c, a, pty_input, out, f);
}

int serve_run_pty_resize(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_on_pty(c, a, pty_resize, out, f);
}

int serve_run_pty_kill(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
{
	return run_on_pty(c, a, pty_kill, out, f);
}

/* pty_wait: the end; the handle is then forgotten (a later pty_attach finds it ended). */
int serve_run_pty_wait(serve_call *c, const serve_args *a, json_t **out, serve_fail *f)
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
	return serve_finish(
	    rc, &err,
	    rc < 0
	        ? NULL
	        : json_pack("{s:s,s:I,s:o,s:b,s:b}", "id", a->id, "pid", (json_int_t)a->pid,
	                    "exit_code", r.has_exit_code ? json_integer(r.exit_code) : json_null(),
	                    "timed_out", r.timed_out, "killed", r.killed),
	    out, f);
}
