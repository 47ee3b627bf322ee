/*
 * e2b/provider_exec.c: running commands in a sandbox — the seed's run(),
 * killer(), reboot(), fileOp() and the exec / kill_all / kill_tagged
 * methods of createE2BSandbox (docs/contract.md "exec", "Files"). The file operations built on
 * fileOp() live in provider_files.c.
 *
 * run() drives one envd Start stream in the calling thread. Output goes into
 * two capped buffers that share one budget (max_output_bytes): bytes past the
 * budget are counted and dropped, never stored. On timeout or abort an exec
 * runs the kill script as a separate command, then SendSignal SIGKILL on the
 * pid, then gives the stream 3 s to end; when the kill script failed or the
 * grace passed, the sandbox is rebooted (pause + cold connect) and the call
 * still returns its timed-out / aborted result.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "contract/utf8.h"
#include "e2b/exit_status.h"
#include "e2b/provider_int.h"
#include "e2b/run.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define TIMEOUT_MARGIN_SECONDS 120    /* TIMEOUT_MARGIN_SECONDS: connect covers the command */
#define KILL_GRACE_MS          3000   /* KILL_GRACE_MS: stream end after the kill */
#define FILE_OP_TIMEOUT_MS     120000 /* FILE_OP_TIMEOUT_MS */
#define KILL_OUTPUT_BYTES      4096   /* the kill script's output budget */
#define KILL_TIMEOUT_MS        15000  /* the kill script's command timeout */
#define KILL_DEADLINE_MS       20000  /* the kill script's own abort deadline */
#define KILL_SCRIPT_TRIES      5      /* kill_all / kill_tagged: starts at most */
#define KILL_RETRY_WAIT_MS     100    /* before the 2nd start; doubled for each next */
#define SIGNAL_DEADLINE_MS     15000  /* SendSignal's deadline */
#define REBOOT_DEADLINE_MS     120000 /* pause + cold connect together */
#define MAX_OUTPUT_CAP         (SIZE_MAX / 4) /* a larger budget is clamped */

typedef sbx__run_opts run_opts;

/*
 * envd refused the request because the sandbox is not running: E2B's proxy
 * answers 502 with its own JSON body {"code":502,"message":"The sandbox was
 * not found",...} for a paused or missing sandbox, so no process started and
 * no byte was written. A 502 with any other body comes from a gateway in
 * front of E2B, which may have passed the request on: not this case (envd
 * Start is never sent twice, docs/reliability.md).
 */
bool sbx__e2b_not_running(int error, const sbx_error *e)
{
	return error == SBX_EHTTP && e->http_status == 502 && strcmp(e->e2b_code, "502") == 0;
}
typedef sbx__run_result run_result;

int sbx__e2b_with_attach(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                         uint64_t min_seconds, const sbx__e2b_step *step, sbx_signal *sig,
                         sbx_error *local, sbx_error *err)
{
	bool cached = false, retried = false;
	int error;

	for (;;) {
		memset(local, 0, sizeof(*local));
		if ((error = sbx__e2b_attach_cached(p, t, id, min_seconds, &cached, sig, err)) < 0)
			return error;
		error = step->run(p, t, step->ctx, local);
		if (!cached || retried || !sbx__e2b_not_running(error, local) ||
		    (step->again && !step->again(step->ctx)))
			return error;
		retried = true; /* paused or gone behind our back: connect (resume) and go again */
		sbx__e2b_attach_forget(p, id);
		sbx__envd_target_dispose(t);
		if (step->reset)
			step->reset(step->ctx);
	}
}

void sbx__e2b_run_result_init(run_result *r, size_t max_output)
{
	memset(r, 0, sizeof(*r));
	if (max_output > MAX_OUTPUT_CAP)
		max_output = MAX_OUTPUT_CAP;
	sbx_buf_init(&r->out, max_output);
	sbx_buf_init(&r->err, max_output);
}

void sbx__e2b_run_result_dispose(run_result *r)
{
	sbx_buf_dispose(&r->out);
	sbx_buf_dispose(&r->err);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void on_start(uint32_t pid, void *payload)
{
	run_result *r = payload;
	if (pid == 0)
		return; /* envd sent no usable pid: no SendSignal backstop (never to pid 0) */
	r->have_pid = true;
	r->pid = pid;
	if (r->on_pid)
		r->on_pid(r->pid_ctx);
}

static bool wants_output(void *payload)
{
	const run_result *r = payload;
	return r->used < r->out.max;
}

/*
 * Hand the caller the bytes of one stream that the result will keep for
 * sure: all of them at the end (`final`), else all but a trailing UTF-8
 * sequence that a truncation would cut (detach_output's rule), which waits
 * for the stream's next bytes. The cut point only moves forward as bytes are
 * added, so the chunks concatenate to exactly the result's bytes.
 */
static void deliver(run_result *r, int stream, bool final)
{
	const sbx_buf *b = stream == 1 ? &r->out : &r->err;
	size_t *sent = &r->sent[stream == 1 ? 0 : 1];
	size_t upto = final ? b->len : sbx__utf8_keep_len(b->ptr, b->len, true);
	int rc;

	if (!r->cb || r->user_stop || upto <= *sent)
		return;
	rc = r->cb(stream == 1 ? SBX_STREAM_STDOUT : SBX_STREAM_STDERR, b->ptr + *sent,
	           upto - *sent, r->cb_payload);
	*sent = upto;
	if (rc != 0) {
		r->user_stop = true;
		r->user_rc = rc;
		r->user_what = "on_output";
	}
}

/* The held-back tails once no more output comes: kept unless the output was truncated. */
static void deliver_rest(run_result *r)
{
	if (r->truncated || r->oom)
		return; /* detach_output cuts exactly what deliver() held back */
	deliver(r, 1, true);
	deliver(r, 2, true);
}

/* collect(): one shared budget; bytes past it set truncated and are dropped. */
static void on_output(int stream, const unsigned char *p, size_t n, void *payload)
{
	run_result *r = payload;
	size_t room = r->out.max - r->used, keep = n < room ? n : room;

	if (stream == 3)
		stream = 1; /* a PTY process followed by pid: its terminal is its stdout */
	if (n > room)
		r->truncated = true;
	if (keep == 0 || !p)
		return;
	if (sbx_buf_put(stream == 1 ? &r->out : &r->err, p, keep) < 0) {
		r->oom = true;
		return;
	}
	r->used += keep;
	deliver(r, stream, false);
}

static bool on_yield(void *payload)
{
	const run_result *r = payload;
	return r->user_stop || (r->yield_for_pid && r->have_pid);
}

static void on_end(bool exited, int exit_code, const char *status, void *payload)
{
	run_result *r = payload;
	r->got_end = true;
	r->has_exit_code = sbx__e2b_exit_code(exited, exit_code, status, &r->exit_code);
}

/* killer(t, ctl): the kill script as its own command. True when it exited 0. */
bool sbx__e2b_kill_script_as(sbx__e2b_provider *p, const sbx_envd_target *t, const char *ctl,
                             const char *user)
{
	const char *args[] = {"-c", sbx__e2b_kill_script, "capybara-kill", ctl};
	run_opts ko = {0};
	run_result kr;
	bool ok;

	ko.user = user ? user : SBX_E2B_SANDBOX_USER;
	ko.cmd = "/bin/sh";
	ko.args = args;
	ko.nargs = 4;
	ko.cwd = "/";
	ko.max_output = KILL_OUTPUT_BYTES;
	ko.timeout_ms = KILL_TIMEOUT_MS;
	ko.abort_after_ms = KILL_DEADLINE_MS;
	sbx__e2b_run_result_init(&kr, ko.max_output);
	ok = sbx__e2b_run(p, t, &ko, &kr, NULL) == 0 && !kr.timed_out && !kr.aborted &&
	     kr.has_exit_code && kr.exit_code == 0;
	sbx__e2b_run_result_dispose(&kr);
	return ok;
}

bool sbx__e2b_kill_script_ok(sbx__e2b_provider *p, const sbx_envd_target *t, const char *ctl)
{
	return sbx__e2b_kill_script_as(p, t, ctl, NULL);
}

/* SendSignal SIGKILL on the pid: a backstop that only ends the session's first process. */
static void kill_pid(sbx__e2b_provider *p, const sbx_envd_target *t, const run_result *r)
{
	if (r->have_pid)
		(void)sbx__envd_kill(p->http, t, r->pid, sbx__now_ms() + SIGNAL_DEADLINE_MS, NULL,
		                     NULL);
}

/* reboot(id): pause (409 ok) then connect {timeout, memory:false}; failures only logged. */
static void reboot(sbx__e2b_provider *p, const char *id)
{
	sbx_log_field f[2] = {{"sandboxId", id}, {"err", NULL}};
	uint64_t deadline = sbx__now_ms() + REBOOT_DEADLINE_MS, now, left;
	sbx_error e = {0};
	char msg[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	int error;

	sbx__e2b_log(p, SBX_LOG_WARN,
	             "sandbox-e2b: could not stop a command cleanly; rebooting the sandbox", f, 1);
	sbx__e2b_attach_forget(p, id); /* rebooted: the next call connects */
	error = sbx__e2b_pause(p, id, false, SBX_E2B_API_TIMEOUT_MS, NULL, &e);
	if (error == 0) {
		now = sbx__now_ms();
		left = deadline > now ? deadline - now : 1;
		error = sbx__e2b_reconnect_cold(
		    p, id, left < SBX_E2B_API_TIMEOUT_MS ? left : SBX_E2B_API_TIMEOUT_MS, &e);
	}
	if (error == 0)
		return;
	snprintf(msg, sizeof(msg), "%.500s", e.message);
	f[1].value = msg;
	sbx__e2b_log(p, SBX_LOG_WARN,
	             "sandbox-e2b: sandbox reboot failed; the stuck command may still be running",
	             f, 2);
}

/*
 * After a timeout or abort: stop the command (exec only), then disconnect.
 * Returns true when the sandbox must be rebooted ("wedged").
 *
 * Order: the kill script, then up to 3 s for the stream to end, then
 * SendSignal on the pid. The seed sends SendSignal before the grace, but
 * envd's SendSignal also ends the stream while an escaped process (own
 * session, e.g. `setsid cmd &`) still holds the output pipes, which would hide
 * exactly the case its README reboots for ("the output stream still has not
 * ended 3 seconds after the kill"). Watching the stream first keeps that
 * promise; the signal is still sent in every case.
 */
static bool stop_command(sbx__e2b_provider *p, const sbx_envd_target *t, const run_opts *o,
                         run_result *r, sbx_envd_stream *s)
{
	uint64_t grace = sbx__now_ms() + KILL_GRACE_MS;
	bool wedged;
	int error;

	if (!o->ctl)
		return false; /* no killer: just disconnect */
	if (!sbx__e2b_kill_script_as(p, t, o->ctl, o->ctl_user)) {
		kill_pid(p, t, r);
		return true;
	}
	/* data arriving meanwhile is still collected, and handed to the callback (chunks = result)
	 */
	while ((error = sbx__envd_stream_wait(s, grace, NULL, NULL)) == SBX_HTTP_YIELD)
		;
	wedged = error == SBX_ETIMEOUT;
	kill_pid(p, t, r);
	return wedged;
}

/*
 * An SBX_EHTTP from SendInput/CloseStdin that envd itself gave (a Connect
 * code): the process is gone, or its stdin is closed or broken. The command
 * just stopped reading, as a shell pipe's reader may; no error for the exec.
 */
static bool input_refused(int error, const sbx_error *e)
{
	static const char *const codes[] = {"not_found", "internal", "unknown",
	                                    "failed_precondition"};
	if (error != SBX_EHTTP)
		return false;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(e->e2b_code, codes[i]) == 0)
			return true;
	return false;
}

/* The next stdin chunk into data and n (0 = end). SBX_EUSER when the read callback stopped. */
static int next_input(const run_opts *o, run_result *r, unsigned char *chunk, size_t *off,
                      const unsigned char **data, size_t *n)
{
	int rc;

	if (!o->stdin_read) {
		*n = o->stdin_len - *off < SBX_ENVD_MAX_INPUT_CHUNK ? o->stdin_len - *off
		                                                    : SBX_ENVD_MAX_INPUT_CHUNK;
		*data = (const unsigned char *)o->stdin_data + *off;
		*off += *n;
		return 0;
	}
	*n = 0;
	if ((rc = o->stdin_read(n, chunk, SBX_ENVD_MAX_INPUT_CHUNK, o->stdin_payload)) != 0) {
		r->user_stop = true;
		r->user_rc = rc;
		r->user_what = "stdin_read";
		return SBX_EUSER;
	}
	if (*n > SBX_ENVD_MAX_INPUT_CHUNK)
		*n = SBX_ENVD_MAX_INPUT_CHUNK; /* a callback that overstates: never read past buf */
	*data = chunk;
	return 0;
}

/*
 * Send stdin in chunks, then close it, each request joined to the stream so
 * output keeps flowing meanwhile. Stops quietly when the command ended or
 * stopped reading. Returns 0, SBX_ETIMEOUT / SBX_EABORTED (the run's
 * deadline or signal), SBX_EUSER, or a transport failure (in `local`).
 */
static int feed_stdin(sbx__e2b_provider *p, const sbx_envd_target *t, const run_opts *o,
                      run_result *r, sbx_envd_stream *s, uint64_t until, sbx_error *local)
{
	unsigned char *chunk = NULL;
	const unsigned char *data;
	size_t off = 0, n;
	sbx_error e;
	int error = 0;

	if (o->stdin_read && !(chunk = sbx__malloc(SBX_ENVD_MAX_INPUT_CHUNK)))
		return sbx__error_set(local, SBX_ENOMEM, "out of memory");
	while (!sbx__envd_stream_ended(s)) {
		if ((error = next_input(o, r, chunk, &off, &data, &n)) < 0 || n == 0)
			break;
		memset(&e, 0, sizeof(e));
		error = sbx__envd_send_input(p->http, t, r->pid, data, n, s, until, o->sig, &e);
		if (r->user_stop)
			error = SBX_EUSER;
		if (error < 0 && input_refused(error, &e)) {
			error = 0;
			break; /* nobody reads it any more: stop sending */
		}
		if (error < 0) {
			sbx__e2b_pass_error(local, &e);
			break;
		}
	}
	sbx__free(chunk);
	if (error < 0 || sbx__envd_stream_ended(s))
		return error;
	memset(&e, 0, sizeof(e));
	error = sbx__envd_close_stdin(p->http, t, r->pid, s, until, o->sig, &e);
	if (r->user_stop)
		return SBX_EUSER;
	if (error < 0 && !input_refused(error, &e)) {
		sbx__e2b_pass_error(local, &e);
		return error;
	}
	return 0;
}

/* Wait for the stream, first feeding stdin once the pid is known. As sbx__envd_stream_wait(). */
static int drive(sbx__e2b_provider *p, const sbx_envd_target *t, const run_opts *o, run_result *r,
                 sbx_envd_stream *s, uint64_t until, sbx_error *local)
{
	int error;

	if (o->stdin_data || o->stdin_read) {
		r->yield_for_pid = true;
		while ((error = sbx__envd_stream_wait(s, until, o->sig, local)) == SBX_HTTP_YIELD &&
		       !r->have_pid && !r->user_stop)
			;
		r->yield_for_pid = false;
		if (r->user_stop)
			return SBX_EUSER;
		if (error != SBX_HTTP_YIELD)
			return error; /* ended (no stdin needed any more) or failed */
		if ((error = feed_stdin(p, t, o, r, s, until, local)) < 0)
			return error;
	}
	while ((error = sbx__envd_stream_wait(s, until, o->sig, local)) == SBX_HTTP_YIELD &&
	       !r->user_stop)
		;
	return r->user_stop ? SBX_EUSER : error;
}

bool sbx__e2b_no_sandbox_user(int error, const sbx_error *e)
{
	return error == SBX_EHTTP && strcmp(e->e2b_code, "unauthenticated") == 0 &&
	       strstr(e->message, "invalid username: 'sandbox'");
}

bool sbx__e2b_runuser_no_sandbox(const sbx_buf *e)
{
	char text[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	return strstr(sbx__e2b_stderr_text(e, text, sizeof(text)),
	              "runuser: user sandbox does not exist") != NULL;
}

int sbx__e2b_template_error(sbx__e2b_provider *p, const sbx_envd_target *t, sbx_error *err)
{
	const char *args[] = {"-c", sbx__e2b_template_check_script, "capybara-check"};
	run_opts o = {0};
	run_result r;
	char missing[400];
	size_t n = 0;

	o.user = SBX_E2B_ROOT_USER;
	o.cmd = "/bin/sh";
	o.args = args;
	o.nargs = 3;
	o.cwd = "/";
	o.max_output = sizeof(missing);
	o.timeout_ms = KILL_TIMEOUT_MS;
	o.abort_after_ms = KILL_DEADLINE_MS;
	sbx__e2b_run_result_init(&r, o.max_output);
	missing[0] = '\0';
	if (sbx__e2b_run(p, t, &o, &r, NULL) == 0 && r.out.len > 0) {
		/* one missing convention a line: "a; b; c" */
		for (size_t i = 0; i < r.out.len && n + 3 < sizeof(missing); i++) {
			char ch = (char)r.out.ptr[i];
			if (ch == '\n') {
				if (i + 1 < r.out.len) {
					missing[n++] = ';';
					missing[n++] = ' ';
				}
			} else if (ch >= 0x20 && ch < 0x7f) {
				missing[n++] = ch;
			}
		}
		missing[n] = '\0';
	}
	sbx__e2b_run_result_dispose(&r);
	return sbx__error_set(err, SBX_ESANDBOX,
	                      "template %s lacks what sandbox-e2b needs (%s); build "
	                      "templates/capybara-sandbox (its README.md) and name it in "
	                      "\"template\"",
	                      p->template_id, missing[0] ? missing : "the user sandbox, uid 1000");
}

int sbx__e2b_run(sbx__e2b_provider *p, const sbx_envd_target *t, const run_opts *o, run_result *r,
                 sbx_error *err)
{
	sbx_envd_process proc = {o->cmd, o->args, o->nargs, o->env, o->nenv, o->cwd, 0, 0, 0};
	sbx_envd_handler h = {.on_start = on_start,
	                      .on_output = on_output,
	                      .wants_output = wants_output,
	                      .on_end = on_end,
	                      .yield = on_yield,
	                      .payload = r};
	sbx_envd_stream *s = NULL;
	sbx_error local = {0};
	uint64_t start = sbx__now_ms(), timer = add_sat(start, o->timeout_ms), until = timer;
	bool wedged = false, stdin_open = o->stdin_open || o->stdin_data || o->stdin_read;
	int error;

	if ((error = sbx__e2b_aborted(o->sig, err)) < 0)
		return error;
	r->cb = o->on_output;
	r->cb_payload = o->output_payload;
	if (o->abort_after_ms && add_sat(start, o->abort_after_ms) < until)
		until = add_sat(start, o->abort_after_ms);
	if (o->attach_pid)
		error = sbx__envd_connect(&s, p->http, t, o->attach_pid, &h, err);
	else
		error = sbx__envd_start(&s, p->http, t, o->user, &proc, stdin_open, &h, err);
	if (error < 0)
		return error;
	error = drive(p, t, o, r, s, until, &local);
	if (error == SBX_ETIMEOUT) {
		if (sbx__now_ms() >= timer)
			r->timed_out = true;
		else
			r->aborted = true; /* the abort_after deadline acts as an abort signal */
	} else if (error == SBX_EABORTED) {
		r->aborted = true;
	}
	if (r->aborted && r->detach) {
		/* a background handle let go: disconnect only, the in-sandbox backstop bounds it */
	} else if (r->timed_out || r->aborted || r->user_stop) {
		wedged = stop_command(p, t, o, r, s);
	} else if (error < 0 && r->have_pid && !r->got_end && o->ctl) {
		/* the stream broke while the command may still run: stop it (no reboot for a
		 * network fault), and keep what it printed for the caller */
		(void)sbx__e2b_kill_script_as(p, t, o->ctl, o->ctl_user);
		kill_pid(p, t, r);
	}
	sbx__envd_stream_free(s); /* disconnect; the process does not depend on it */
	if (wedged)
		reboot(p, o->sandbox_id);
	if (r->oom)
		return sbx__error_set(err, SBX_ENOMEM, "out of memory collecting command output");
	if (r->user_stop)
		return sbx__error_set(err, SBX_EUSER, "exec stopped: %s callback returned %d",
		                      r->user_what, r->user_rc);
	if (r->timed_out || r->aborted) {
		r->has_exit_code = false;
		deliver_rest(r);
		return 0;
	}
	if (error == 0 && !r->got_end)
		error = sbx__error_set(&local, SBX_EPROTOCOL,
		                       "E2B process stream ended without an exit status");
	if (error < 0 && !r->have_pid && o->user && strcmp(o->user, SBX_E2B_SANDBOX_USER) == 0 &&
	    sbx__e2b_no_sandbox_user(error, &local))
		return sbx__e2b_template_error(
		    p, t, err); /* the template lacks the user: say what it lacks */
	if (error < 0) {
		r->partial = error == SBX_EPROTOCOL && r->have_pid;
		if (r->partial) {
			if (!r->got_end)
				r->has_exit_code = false;
			deliver_rest(r);
		}
		sbx__e2b_pass_error(err, &local);
		return error;
	}
	deliver_rest(r);
	return 0;
}

/* Hand a buffer to the caller, cut at a UTF-8 boundary when truncated (decodeOutput). */
static int detach_output(sbx_buf *b, bool truncated, unsigned char **data, size_t *len)
{
	size_t keep = sbx__utf8_keep_len(b->ptr, b->len, truncated);
	int error;

	if ((error = sbx_buf_detach(b, data, len)) < 0)
		return error;
	if (keep < *len) {
		(*data)[keep] = '\0';
		*len = keep;
	}
	return 0;
}

/* exec_begin without the attach: control path, environment, argv, run options. */
static int exec_prepare(sbx__exec_cmd *c, const char *command, const sbx_exec_options *opts,
                        sbx_signal *sig, sbx_error *err)
{
	run_opts *o = &c->o;
	int error;

	memset(c, 0, sizeof(*c));
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if ((error = sbx__e2b_exec_control_path(c->ctl, sizeof(c->ctl), opts->tag)) < 0)
		return sbx__error_set(err, error, "cannot make an exec control path");
	if (opts->env_count > SIZE_MAX / sizeof(*c->env) - 2 ||
	    !(c->env = sbx__calloc(opts->env_count + 2, sizeof(*c->env))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	c->env[0] = (sbx_env_var){"HOME", opts->user == SBX_USER_ROOT ? "/root" : "/workspace"};
	c->env[1] = (sbx_env_var){"LANG", "C.UTF-8"};
	for (size_t i = 0; i < opts->env_count; i++)
		c->env[i + 2] = opts->env[i];
	sbx__e2b_exec_args(c->args, c->secs, sizeof(c->secs), c->ctl, command, opts->timeout_ms);
	o->user = opts->user == SBX_USER_ROOT ? SBX_E2B_ROOT_USER : SBX_E2B_SANDBOX_USER;
	o->ctl_user = o->user; /* the kill on timeout or abort, as the command's user */
	o->cmd = "setsid";
	o->args = c->args;
	o->nargs = SBX_E2B_EXEC_ARGC;
	o->env = c->env;
	o->nenv = opts->env_count + 2;
	o->cwd = opts->cwd ? opts->cwd : "/workspace";
	o->max_output = opts->max_output_bytes;
	o->timeout_ms = opts->timeout_ms;
	o->sig = sig;
	o->ctl = c->ctl;
	o->on_output = opts->on_output;
	o->output_payload = opts->output_payload;
	o->stdin_data = opts->stdin_data;
	o->stdin_len = opts->stdin_len;
	o->stdin_read = opts->stdin_read;
	o->stdin_payload = opts->stdin_payload;
	return 0;
}

/* What the sandbox's timeout must cover for a command of timeout_ms: it + 120 s. */
static uint64_t exec_min_seconds(uint64_t timeout_ms)
{
	return timeout_ms / 1000 + (timeout_ms % 1000 != 0) + TIMEOUT_MARGIN_SECONDS;
}

int sbx__e2b_exec_begin(sbx__exec_cmd *c, sbx__e2b_provider *p, const char *id, const char *command,
                        const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	int error;

	if ((error = exec_prepare(c, command, opts, sig, err)) < 0 ||
	    (error = sbx__e2b_attach(p, &c->t, id, exec_min_seconds(opts->timeout_ms), sig, err)) <
	        0)
		return error;
	c->o.sandbox_id = c->t.sandbox_id;
	return 0;
}

void sbx__e2b_exec_end(sbx__exec_cmd *c)
{
	sbx__envd_target_dispose(&c->t);
	sbx__free(c->env);
	memset(c, 0, sizeof(*c));
}

int sbx__e2b_result_out(sbx_exec_result *out, run_result *r, sbx_error *err)
{
	int rc;

	if ((rc = detach_output(&r->out, r->truncated, &out->stdout_data, &out->stdout_len)) < 0 ||
	    (rc = detach_output(&r->err, r->truncated, &out->stderr_data, &out->stderr_len)) < 0)
		return sbx__error_set(err, rc, "out of memory");
	out->has_exit_code = r->has_exit_code;
	out->exit_code = r->has_exit_code ? r->exit_code : 0;
	out->truncated = r->truncated;
	out->timed_out = r->timed_out;
	out->aborted = r->aborted;
	return 0;
}

/* exec's step for sbx__e2b_with_attach: the command on the attached target. */
typedef struct exec_step {
	sbx__exec_cmd *c;
	run_result *r;
	size_t max_output;
} exec_step;

static int exec_step_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	exec_step *x = ctx;
	x->c->o.sandbox_id = t->sandbox_id;
	return sbx__e2b_run(p, t, &x->c->o, x->r, local);
}

/* Started again only when the refused run handed nothing out (no output, no stdin read). */
static bool exec_step_again(void *ctx)
{
	const exec_step *x = ctx;
	return !x->r->partial;
}

static void exec_step_reset(void *ctx)
{
	exec_step *x = ctx;
	sbx__e2b_run_result_dispose(x->r);
	sbx__e2b_run_result_init(x->r, x->max_output);
}

int sbx__e2b_exec(void *impl, sbx_exec_result *out, const char *id, const char *command,
                  const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx__exec_cmd c;
	run_result r;
	exec_step x = {&c, &r, opts->max_output_bytes};
	sbx__e2b_step step = {exec_step_run, exec_step_again, exec_step_reset, &x};
	sbx_error local = {0};
	int error, rc;

	sbx__e2b_run_result_init(&r, opts->max_output_bytes);
	/*
	 * No connect while the provider's last one still covers the command; when
	 * envd says the sandbox is not running (paused or gone behind our back),
	 * nothing ran (no output, no stdin read): connect (resume, or find it
	 * gone) and start again, once.
	 */
	if ((error = exec_prepare(&c, command, opts, sig, err)) < 0)
		goto done;
	error = sbx__e2b_with_attach(impl, &c.t, id, exec_min_seconds(opts->timeout_ms), &step, sig,
	                             &local, err);
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	/* a stream that broke after start still hands over its output (with the error) */
	if (error < 0 && !r.partial)
		goto done;
	if ((rc = sbx__e2b_result_out(out, &r, err)) < 0)
		error = rc;
done:
	sbx__e2b_exec_end(&c);
	sbx__e2b_run_result_dispose(&r);
	return error;
}

/*
 * fileOp(): /bin/sh in "/", timeout_ms (the seed: 120 s); a timeout is an
 * error, an abort is SBX_EABORTED. Unlike the seed, the script runs as an
 * exec does: in its own session under the file-op wrapper, with an
 * in-sandbox `timeout -s KILL` backstop, and on a timeout or abort the kill
 * path (kill script as `user`, SIGKILL, reboot as the last resort) stops it,
 * so no process is left behind (a read of a FIFO blocks forever). The kill
 * scripts themselves (kill_all, kill_tagged) run bare, as the seed's do:
 * `bare` is their shell, started with `args` directly; they end on their
 * own. NULL: the wrapped /bin/sh.
 */
static int file_op(sbx__e2b_provider *p, const sbx_envd_target *t, const char *user,
                   const char *const *args, size_t nargs, size_t max_output, uint64_t timeout_ms,
                   const char *bare, sbx_signal *sig, run_result *r, sbx_error *err)
{
	bool killable = !bare;
	char ctl[128], secs[32];
	const char **wargs = NULL;
	run_opts o = {0};
	int error;

	sbx__e2b_run_result_init(r, max_output);
	if ((error = sbx__e2b_fileop_control_path(ctl, sizeof(ctl))) < 0)
		return sbx__error_set(err, error, "cannot make a file-op control path");
	if (nargs > SIZE_MAX / sizeof(*wargs) - SBX_E2B_FILEOP_ARGC ||
	    !(wargs = sbx__calloc(nargs + SBX_E2B_FILEOP_ARGC, sizeof(*wargs))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	sbx__e2b_fileop_args(wargs, secs, sizeof(secs), ctl, timeout_ms);
	for (size_t i = 0; i < nargs; i++)
		wargs[SBX_E2B_FILEOP_ARGC + i] = args[i];
	o.user = user;
	o.cmd = killable ? "setsid" : bare;
	o.args = killable ? wargs : args;
	o.nargs = killable ? nargs + SBX_E2B_FILEOP_ARGC : nargs;
	o.cwd = "/";
	o.max_output = max_output;
	o.timeout_ms = timeout_ms;
	o.sig = sig;
	o.ctl = killable ? ctl : NULL;
	o.ctl_user = user;
	o.sandbox_id = t->sandbox_id;
	error = sbx__e2b_run(p, t, &o, r, err);
	sbx__free(wargs);
	if (error < 0)
		return error;
	if (r->aborted)
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	if (r->timed_out)
		return sbx__error_set(err, SBX_ETIMEOUT, "sandbox file operation timed out");
	return 0;
}

int sbx__e2b_file_op(sbx__e2b_provider *p, const sbx_envd_target *t, const char *user,
                     const char *const *args, size_t nargs, size_t max_output, uint64_t timeout_ms,
                     sbx_signal *sig, sbx__file_op *res, sbx_error *err)
{
	run_result r;
	int error = file_op(p, t, user, args, nargs, max_output,
	                    timeout_ms ? timeout_ms : FILE_OP_TIMEOUT_MS, NULL, sig, &r, err);

	res->out = r.out; /* the buffers move to res */
	res->err = r.err;
	res->truncated = r.truncated;
	res->has_exit_code = r.has_exit_code;
	res->exit_code = r.exit_code;
	return error;
}

/* A file operation as a step of sbx__e2b_with_attach. */
typedef struct file_op_step {
	const char *user;
	const char *const *args;
	size_t nargs, max_output;
	uint64_t timeout_ms;
	const char *bare; /* NULL: the wrapped /bin/sh; else run_result `r` and file_op() bare */
	sbx_signal *sig;
	sbx__file_op *res;
	run_result *r;
} file_op_step;

static int file_op_step_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	file_op_step *x = ctx;
	if (x->bare)
		return file_op(p, t, x->user, x->args, x->nargs, x->max_output, x->timeout_ms,
		               x->bare, x->sig, x->r, local);
	return sbx__e2b_file_op(p, t, x->user, x->args, x->nargs, x->max_output, x->timeout_ms,
	                        x->sig, x->res, local);
}

static void file_op_step_reset(void *ctx)
{
	file_op_step *x = ctx;
	if (x->bare)
		sbx__e2b_run_result_dispose(x->r);
	else
		sbx__e2b_file_op_dispose(x->res);
}

int sbx__e2b_attached_file_op(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                              const char *user, const char *const *args, size_t nargs,
                              size_t max_output, uint64_t timeout_ms, sbx_signal *sig,
                              sbx__file_op *res, sbx_error *err)
{
	uint64_t ms = timeout_ms ? timeout_ms : FILE_OP_TIMEOUT_MS;
	file_op_step x = {user, args, nargs, max_output, timeout_ms, NULL, sig, res, NULL};
	sbx__e2b_step step = {file_op_step_run, NULL, file_op_step_reset, &x};
	sbx_error local;
	int error;

	memset(res, 0, sizeof(*res));
	error = sbx__e2b_with_attach(p, t, id, exec_min_seconds(ms), &step, sig, &local, err);
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	return error;
}

void sbx__e2b_file_op_dispose(sbx__file_op *res)
{
	sbx_buf_dispose(&res->out);
	sbx_buf_dispose(&res->err);
	memset(res, 0, sizeof(*res));
}

static bool exited_with(const run_result *r, int code)
{
	return r->has_exit_code && r->exit_code == code;
}

static const char *stderr_of(run_result *r, char *buf, size_t buflen)
{
	return sbx__e2b_stderr_text(&r->err, buf, buflen);
}

/*
 * The in-sandbox scripts run as `sh -c SCRIPT capybara-NAME ...`, so dash names
 * its errors "capybara-write: 1: cannot create /etc/passwd: Permission denied".
 * Drop that prefix (an internal name), and say a refused permission as
 * "permission denied for PATH".
 */
static void reword_script_error(char *buf, size_t buflen)
{
	static const char denied[] = ": Permission denied";
	static const char *const leads[] = {"cannot create directory ", "cannot create ",
	                                    "cannot open directory ",   "cannot open ",
	                                    "cannot remove ",           "can't cd to "};
	char subject[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	size_t n, dl = sizeof(denied) - 1, sl;
	const char *from = NULL;

	if (strncmp(buf, "capybara-", 9) == 0) {
		const char *p = buf + 9;
		while (*p && *p != ':' && *p != ' ')
			p++;
		if (p[0] == ':' && p[1] == ' ' && p[2] >= '0' && p[2] <= '9') {
			p += 2;
			while (*p >= '0' && *p <= '9')
				p++;
			if (p[0] == ':' && p[1] == ' ')
				memmove(buf, p + 2, strlen(p + 2) + 1);
		}
	}
	n = strlen(buf);
	if (strstr(buf, "cannot move ")) /* mv names two paths: its own words say which */
		return;
	if (strchr(buf, '\n') || n <= dl || strcmp(buf + n - dl, denied) != 0 ||
	    n - dl >= sizeof(subject))
		return;
	for (size_t i = 0; !from && i < sizeof(leads) / sizeof(leads[0]); i++) {
		const char *at = strstr(buf, leads[i]);
		if (at && at + strlen(leads[i]) <= buf + n - dl)
			from = at + strlen(leads[i]);
	}
	if (!from) { /* "cat: /root/x: Permission denied": the tool's name first */
		const char *colon = strstr(buf, ": ");
		from = colon && colon < buf + n - dl ? colon + 2 : buf;
	}
	sl = (size_t)(buf + n - dl - from);
	memcpy(subject, from, sl);
	subject[sl] = '\0';
	if (subject[0] == '\'' || subject[0] == '"') { /* "'/x' for reading": the quoted part */
		char *close = strchr(subject + 1, subject[0]);
		if (close) {
			*close = '\0';
			memmove(subject, subject + 1, strlen(subject + 1) + 1);
		}
	}
	if (subject[0] && strlen("permission denied for ") + strlen(subject) < buflen)
		snprintf(buf, buflen, "permission denied for %s", subject);
}

const char *sbx__e2b_stderr_text(const sbx_buf *err, char *buf, size_t buflen)
{
	const unsigned char *s = err->ptr ? err->ptr : (const unsigned char *)"";
	size_t a = 0, b = err->len, n;

	while (a < b && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r')))
		a++;
	while (b > a && (s[b - 1] == ' ' || (s[b - 1] >= '\t' && s[b - 1] <= '\r')))
		b--;
	n = b - a;
	if (n > SBX_E2B_STDERR_MESSAGE_MAX)
		n = sbx__utf8_keep_len(s + a, SBX_E2B_STDERR_MESSAGE_MAX, true);
	if (n >= buflen)
		n = buflen - 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = s[a + i] ? (char)s[a + i] : ' ';
	buf[n] = '\0';
	reword_script_error(buf, buflen);
	return buf;
}

/* attach + the kill script as the sandbox user, once more after a fresh connect on envd's 502. */
static int attached_run(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                        const char *const *args, size_t nargs, sbx_signal *sig, run_result *r,
                        sbx_error *err)
{
	file_op_step x = {SBX_E2B_SANDBOX_USER,
	                  args,
	                  nargs,
	                  SBX_E2B_STDERR_ROOM,
	                  FILE_OP_TIMEOUT_MS,
	                  SBX_E2B_KILL_SHELL,
	                  sig,
	                  NULL,
	                  r};
	sbx__e2b_step step = {file_op_step_run, NULL, file_op_step_reset, &x};
	sbx_error local;
	int error = sbx__e2b_with_attach(p, t, id, exec_min_seconds(FILE_OP_TIMEOUT_MS), &step, sig,
	                                 &local, err);

	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	return error;
}

/* s holds word, ASCII letters compared without case. */
static bool has_words(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; *s; s++)
		if (strncasecmp(s, word, n) == 0)
			return true;
	return false;
}

/*
 * envd refused to start the kill script for want of a process slot or of
 * memory (envd: invalid_argument "error starting process ...: fork/exec ...:
 * resource temporarily unavailable" or "cannot allocate memory"): nothing
 * ran, so starting it again is safe.
 */
static bool start_refused(int error, const sbx_error *e, const run_result *r)
{
	if (error != SBX_EHTTP || r->have_pid)
		return false;
	if (strcmp(e->e2b_code, "invalid_argument") != 0 &&
	    strcmp(e->e2b_code, "resource_exhausted") != 0)
		return false;
	return has_words(e->message, "resource temporarily unavailable") ||
	       has_words(e->message, "cannot allocate memory");
}

/*
 * The attach + kill script + exit-status check shared by kill_all and
 * kill_tagged. The script needs no process once its shell runs, but the
 * start itself needs a slot and memory, and the box's OOM killer may pick
 * the shell: when envd refused the start for want of either
 * (start_refused) or the script ended by a signal (status 128 + n), it is
 * started again, at most KILL_SCRIPT_TRIES times in all after waits of
 * 100, 200, 400 and 800 ms (each retry logged at warn level). The kill is
 * idempotent. An abort ends a wait at once (SBX_EABORTED).
 */
static int kill_script(sbx__e2b_provider *p, const char *id, const char *const *args, size_t nargs,
                       const char *failure, sbx_signal *sig, sbx_error *err)
{
	char se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	int error;

	for (unsigned n = 0;; n++) {
		sbx_envd_target t = {0};
		run_result r = {0};
		sbx_error local = {0};
		bool again, signalled = false;

		error = attached_run(p, &t, id, args, nargs, sig, &r, &local);
		if (error == 0 && !exited_with(&r, 0)) {
			signalled = !r.has_exit_code || r.exit_code > 128;
			const char *why = stderr_of(&r, se, sizeof(se));
			if (*why)
				error =
				    sbx__error_set(&local, SBX_ESANDBOX, "%s: %s", failure, why);
			else if (r.has_exit_code)
				error = sbx__error_set(&local, SBX_ESANDBOX, "%s: exit status %d",
				                       failure, r.exit_code);
			else
				error = sbx__error_set(&local, SBX_ESANDBOX, "%s: no exit status",
				                       failure);
		}
		again = error < 0 && n + 1 < KILL_SCRIPT_TRIES &&
		        (signalled || start_refused(error, &local, &r));
		sbx__e2b_run_result_dispose(&r);
		sbx__envd_target_dispose(&t);
		if (!again) {
			if (error < 0)
				sbx__e2b_pass_error(err, &local);
			return error;
		}
		uint64_t wait_ms = KILL_RETRY_WAIT_MS << n;
		char attempt[16], ms[24];
		sbx_log_field f[4] = {{"sandboxId", id},
		                      {"cause", local.message},
		                      {"attempt", attempt},
		                      {"delayMs", ms}};
		snprintf(attempt, sizeof(attempt), "%u", n + 2);
		snprintf(ms, sizeof(ms), "%llu", (unsigned long long)wait_ms);
		sbx__e2b_log(p, SBX_LOG_WARN, "sandbox-e2b: starting the kill script again", f, 4);
		if ((error = sbx__http_sleep(wait_ms, sig, err)) < 0)
			return error;
	}
}

int sbx__e2b_kill_all(void *impl, const char *id, sbx_signal *sig, sbx_error *err)
{
	const char *args[] = {"-c", sbx__e2b_kill_all_script, "capybara-killall"};
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	return kill_script(impl, id, args, 3, "cannot stop leftover commands", sig, err);
}

int sbx__e2b_kill_tagged(void *impl, const char *id, const char *const *tags, size_t ntags,
                         sbx_signal *sig, sbx_error *err)
{
	const char **args;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if (ntags == 0)
		return 0;
	if (ntags > SIZE_MAX / sizeof(*args) - 3 || !(args = sbx__calloc(ntags + 3, sizeof(*args))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	args[0] = "-c";
	args[1] = sbx__e2b_kill_tagged_script;
	args[2] = "capybara-killtagged";
	for (size_t i = 0; i < ntags; i++)
		args[i + 3] = tags[i];
	error = kill_script(impl, id, args, ntags + 3, "cannot stop crashed holders' commands", sig,
	                    err);
	sbx__free(args);
	return error;
}
