/*
 * e2b/provider_run.c: one command in a sandbox, to its end, timeout or abort
 * (run.h; docs/exec.md "How a command runs", "Timeout, abort and the kill
 * tree", "Streamed output", "stdin"), driving one envd Start (or Connect)
 * stream in the calling thread (docs/internals/wire.md "Process start",
 * "Other process RPCs"). exec (provider_exec.c), the file operations
 * (provider_fileop.c), the kill scripts (provider_kill.c) and background
 * commands (provider_process.c) all run through sbx__e2b_run().
 *
 * Output goes into two capped buffers that share one budget
 * (max_output_bytes): bytes past the budget are counted and dropped, never
 * stored. On timeout or abort an exec runs the kill script as a separate
 * command, then SendSignal SIGKILL on the pid, then gives the stream 3 s to
 * end; when the kill script failed or the grace passed, the sandbox is
 * rebooted (pause + cold connect) and the call still returns its timed-out /
 * aborted result.
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <string.h>

#include "contract/utf8.h"
#include "e2b/exit_status.h"
#include "e2b/provider_int.h"
#include "e2b/run.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define TIMEOUT_MARGIN_SECONDS 120    /* connect covers the command and this margin */
#define KILL_OUTPUT_BYTES      4096   /* the kill script's output budget */
#define KILL_TIMEOUT_MS        15000  /* the kill script's command timeout */
#define KILL_DEADLINE_MS       20000  /* the kill script's own abort deadline */
#define REBOOT_DEADLINE_MS     120000 /* pause + cold connect together */

typedef sbx__run_opts run_opts;
typedef sbx__run_result run_result;

uint64_t sbx__e2b_run_min_seconds(uint64_t timeout_ms)
{
	return timeout_ms / 1000 + (timeout_ms % 1000 != 0) + TIMEOUT_MARGIN_SECONDS;
}

void sbx__e2b_run_result_init(run_result *r, size_t max_output)
{
	memset(r, 0, sizeof(*r));
	if (max_output > SBX_E2B_MAX_OUTPUT_CAP)
		max_output = SBX_E2B_MAX_OUTPUT_CAP;
	sbx_buf_init(&r->out, max_output);
	sbx_buf_init(&r->err, max_output);
	sbx_buf_init(&r->pre, SBX_E2B_MARK_HOLD + SBX_E2B_EXEC_MARK_LEN);
}

void sbx__e2b_run_result_dispose(run_result *r)
{
	sbx_buf_dispose(&r->out);
	sbx_buf_dispose(&r->err);
	sbx_buf_dispose(&r->pre);
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
	/* while the marker is looked for, stderr is decoded whatever the budget says */
	return r->used < r->out.max || (r->marked && !r->mark_seen && !r->mark_gave_up);
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
static void collect(run_result *r, int stream, const unsigned char *p, size_t n)
{
	size_t room = r->out.max - r->used, keep = n < room ? n : room;

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

/* The held stderr as output, as it came: no marker in it (or no room to look further). */
static void mark_give_up(run_result *r)
{
	r->mark_gave_up = true;
	if (r->pre.len)
		collect(r, 2, r->pre.ptr, r->pre.len);
	sbx_buf_dispose(&r->pre);
}

/* stderr of the direct form until the exec helper's marker: held, then the marker taken out. */
static void mark_look(run_result *r, const unsigned char *p, size_t n)
{
	const unsigned char *at;
	size_t before;

	if (n == 0)
		return; /* nothing to look in (and memmem's haystack may not be NULL) */
	if (n > SBX_E2B_MARK_HOLD + SBX_E2B_EXEC_MARK_LEN - r->pre.len) {
		/* more than could be held: look in what is held and this chunk's head only */
		size_t take = SBX_E2B_MARK_HOLD + SBX_E2B_EXEC_MARK_LEN - r->pre.len;
		mark_look(r, p, take);
		if (r->mark_seen || r->mark_gave_up) {
			if (!r->oom)
				collect(r, 2, p + take, n - take);
			return;
		}
		p += take;
		n -= take;
	}
	if (sbx_buf_put(&r->pre, p, n) < 0) {
		r->oom = true;
		return;
	}
	at = memmem(r->pre.ptr, r->pre.len, SBX_E2B_EXEC_MARK, SBX_E2B_EXEC_MARK_LEN);
	if (!at) {
		if (r->pre.len >= SBX_E2B_MARK_HOLD + SBX_E2B_EXEC_MARK_LEN)
			mark_give_up(r);
		return;
	}
	r->mark_seen = true;
	before = (size_t)(at - r->pre.ptr);
	if (before)
		collect(r, 2, r->pre.ptr, before);
	if (r->pre.len > before + SBX_E2B_EXEC_MARK_LEN)
		collect(r, 2, at + SBX_E2B_EXEC_MARK_LEN,
		        r->pre.len - before - SBX_E2B_EXEC_MARK_LEN);
	sbx_buf_dispose(&r->pre);
}

void sbx__e2b_run_output(run_result *r, int stream, const unsigned char *p, size_t n)
{
	if (stream == 3)
		stream = 1; /* a PTY process followed by pid: its terminal is its stdout */
	if (stream == 2 && r->marked && !r->mark_seen && !r->mark_gave_up && p) {
		mark_look(r, p, n);
		return;
	}
	collect(r, stream, p, n);
}

static void on_output(int stream, const unsigned char *p, size_t n, void *payload)
{
	sbx__e2b_run_output(payload, stream, p, n);
}

/* The stream is over: stderr held without a marker is output as it came, unless the helper
 * never ran (the caller then runs the exec line and drops this result). */
void sbx__e2b_run_output_end(run_result *r)
{
	if (r->marked && !r->mark_seen && !r->mark_gave_up && !sbx__e2b_mark_not_run(r))
		mark_give_up(r);
}

bool sbx__e2b_mark_not_run(const run_result *r)
{
	return r->marked && !r->mark_seen && !r->mark_gave_up && r->got_end && r->has_exit_code &&
	       r->exit_code >= 125 && r->exit_code <= 127 && !r->timed_out && !r->aborted &&
	       !r->user_stop && !r->oom && r->out.len == 0 && r->sent[0] == 0 && r->sent[1] == 0 &&
	       !r->truncated;
}

/* The buffer that keeps all n bytes of a chunk of `stream`, which on_output would copy in. */
static sbx_buf *output_sink(int stream, size_t n, void *payload)
{
	run_result *r = payload;

	if (r->oom || n > r->out.max - r->used)
		return NULL; /* on_output: truncated, or the state of a failed copy */
	if (stream == 2 && r->marked && !r->mark_seen && !r->mark_gave_up)
		return NULL; /* on_output looks for the exec helper's marker first */
	return stream == 2 ? &r->err : &r->out;
}

/* on_output's bookkeeping for n bytes the stream decoded into output_sink's buffer. */
static void output_stored(int stream, size_t n, void *payload)
{
	run_result *r = payload;

	r->used += n;
	deliver(r, stream == 2 ? 2 : 1, false);
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
		(void)sbx__envd_kill(p->http, t, r->pid, sbx__now_ms() + SBX_E2B_SIGNAL_DEADLINE_MS,
		                     NULL, NULL);
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
	uint64_t grace = sbx__now_ms() + SBX_E2B_KILL_GRACE_MS;
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
	/* the reason as data too (sandbox/error.h e2b_code): a caller never matches the text */
	return sbx__error_set_http(err, SBX_ESANDBOX, 0, "failed_precondition",
	                           "template %s lacks what sandbox-e2b needs (%s); build "
	                           "templates/capybara-sandbox (its README.md) and name it in "
	                           "\"template\"",
	                           p->template_id,
	                           missing[0] ? missing : "the user sandbox, uid 1000");
}

/* The stream's handler: the events into `r`. A blocking command that streams nothing (no output
 * callback, no stdin, no pid watcher, no attach) needs them only at its end (wake_at_end). */
static sbx_envd_handler handler_of(const run_opts *o, run_result *r)
{
	return (sbx_envd_handler){.on_start = on_start,
	                          .on_output = on_output,
	                          .wants_output = wants_output,
	                          .sink = output_sink,
	                          .stored = output_stored,
	                          .on_end = on_end,
	                          .yield = on_yield,
	                          .payload = r,
	                          .wake_at_end = !o->on_output && !o->stdin_open &&
	                                         !o->stdin_data && !o->stdin_read && !r->on_pid &&
	                                         !o->attach_pid};
}

int sbx__e2b_run(sbx__e2b_provider *p, const sbx_envd_target *t, const run_opts *o, run_result *r,
                 sbx_error *err)
{
	sbx_envd_process proc = {o->cmd, o->args, o->nargs, o->env, o->nenv, o->cwd, 0, 0, 0};
	sbx_envd_handler h = handler_of(o, r);
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
	sbx__e2b_run_output_end(r);
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
