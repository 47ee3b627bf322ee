/*
 * e2b/provider_pty.c: terminals on E2B (sandbox/pty.h, docs/pty.md).
 *
 * envd's process.Process/Start with "pty":{"size":{cols,rows}} runs the
 * command on a pseudo-terminal of its own (the command leads a new session
 * with it as its controlling tty); the terminal's output comes as data
 * events {"pty":<base64>}, typed bytes go as SendInput {"input":{"pty"}},
 * Update {"pty":{"size"}} resizes it, SendSignal SIGKILL kills it, and
 * Connect {"process":{"pid"}} follows it again by pid (E2B's js-sdk
 * sandbox/pty.ts does the same calls).
 *
 * The start runs on the calling thread until envd reported the pid (through
 * sbx__e2b_with_attach: a sandbox paused behind our back is connected and the
 * start sent again, nothing having run); then the stream moves to a reader
 * thread of the handle's own, which hands output to the callback and records
 * the end. Nothing is collected: memory is one envd frame at most.
 *
 * Locking: `mu` guards done, error, err and res once the reader runs; the
 * reader alone touches the stream. done_fd becomes readable once and stays
 * so, for waiters polling it with their abort signal.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "e2b/envelope.h"
#include "e2b/exit_status.h"
#include "e2b/provider_int.h"
#include "e2b/run.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define PID_DEADLINE_MS SBX_E2B_API_TIMEOUT_MS /* the start event, as E2B's requestTimeoutMs */

/*
 * The user's login shell from the passwd database, bash without one, as an
 * interactive login shell; `exec` keeps envd's pid. Ours: E2B's pty.create
 * always runs /bin/bash -i -l.
 */
static const char login_shell_script[] =
    "s=$(getent passwd \"$(id -un)\" 2>/dev/null | cut -d: -f7); exec \"${s:-/bin/bash}\" -i -l";

typedef struct pty {
	sbx__e2b_provider *p;
	sbx_envd_target t;
	sbx_envd_stream *s;
	sbx_pty_output_fn cb;
	void *cb_payload;
	sbx_signal *stop; /* kill (after its grace) and free end the reader through it */
	pthread_t thread;
	bool thread_started;
	int done_fd;
	/* the stream's state: the start thread's, then the reader's alone */
	bool starting; /* yield once the pid is known */
	sbx_buf early; /* output that came with the start event: the reader hands it over first */
	bool have_pid;
	uint32_t pid;
	bool got_end;
	bool user_stop;
	int user_rc;
	bool early_lost; /* `early` could not hold it (no memory): the start fails */
	int pending;     /* a stream failure seen during the start, after the pid */
	sbx_error pending_err;
	_Atomic bool killing; /* sbx_pty_kill() sent the signal */
	_Atomic bool detach;  /* free: disconnect only */
	/* the outcome, under mu once the reader runs */
	pthread_mutex_t mu;
	bool done;
	int error;
	sbx_error err;
	sbx_pty_result res;
} pty;

static void on_start(uint32_t pid, void *payload)
{
	pty *h = payload;
	if (pid == 0 || h->have_pid)
		return; /* no usable pid: never a SendSignal to pid 0 */
	h->have_pid = true;
	h->pid = pid;
}

static bool wants_output(void *payload)
{
	const pty *h = payload;
	return h->cb && !h->user_stop;
}

static void on_output(int stream, const unsigned char *p, size_t n, void *payload)
{
	pty *h = payload;
	int rc;

	(void)stream; /* 3 (the terminal); a process without one, followed by pid: 1 and 2 */
	if (!p || n == 0 || !h->cb || h->user_stop)
		return;
	if (h->starting) { /* the callback runs on the reader thread only */
		if (sbx_buf_put(&h->early, p, n) < 0)
			h->early_lost = true;
		return;
	}
	if ((rc = h->cb(p, n, h->cb_payload)) != 0) {
		h->user_stop = true;
		h->user_rc = rc;
	}
}

static void on_end(bool exited, int exit_code, const char *status, void *payload)
{
	pty *h = payload;
	h->got_end = true;
	h->res.has_exit_code = sbx__e2b_exit_code(exited, exit_code, status, &h->res.exit_code);
	if (!h->res.has_exit_code)
		h->res.exit_code = 0;
}

static bool on_yield(void *payload)
{
	const pty *h = payload;
	return h->user_stop || (h->starting && h->have_pid);
}

static void fd_raise(int fd)
{
	uint64_t one = 1;
	ssize_t n;
	do
		n = write(fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
}

/* Wait until `fd` is readable, `sig` aborts (SBX_EABORTED) or `ms` pass (SBX_ETIMEOUT, 0 = never).
 */
static int wait_fd(int fd, uint64_t ms, sbx_signal *sig, sbx_error *err)
{
	struct pollfd pfd[2] = {{fd, POLLIN, 0}, {sig ? sbx_signal_fd(sig) : -1, POLLIN, 0}};
	uint64_t until = ms ? sbx__now_ms() + ms : 0, now;
	int n;

	for (;;) {
		if (sbx_signal_aborted(sig))
			return sbx__error_set(err, SBX_EABORTED, "aborted");
		now = sbx__now_ms();
		if (until && now >= until)
			return SBX_ETIMEOUT;
		n = poll(pfd, 2, until ? (int)(until - now) : -1);
		if (n < 0 && errno != EINTR)
			return sbx__error_set(err, SBX_EINTERNAL, "poll failed");
		if (n > 0 && pfd[0].revents)
			return 0;
	}
}

static void send_kill(pty *h)
{
	if (h->have_pid)
		(void)sbx__envd_kill(h->p->http, &h->t, h->pid,
		                     sbx__now_ms() + SBX_E2B_SIGNAL_DEADLINE_MS, NULL, NULL);
}

/* After SIGKILL: the stream's end (its exit status) for up to SBX_E2B_KILL_GRACE_MS, output
 * dropped. */
static void drain_end(pty *h)
{
	uint64_t until = sbx__now_ms() + SBX_E2B_KILL_GRACE_MS;

	h->cb = NULL;
	while (!h->got_end && sbx__envd_stream_wait(h->s, until, NULL, NULL) == SBX_HTTP_YIELD)
		;
}

static void *reader(void *arg)
{
	pty *h = arg;
	sbx_error e = {0};
	int error = h->pending;

	if (h->early.len > 0 && h->cb) {
		int rc = h->cb(h->early.ptr, h->early.len, h->cb_payload);
		if (rc != 0) {
			h->user_stop = true;
			h->user_rc = rc;
		}
	}
	sbx_buf_dispose(&h->early);
	if (h->user_stop)
		error = 0;
	else if (error < 0)
		e = h->pending_err;
	else
		while ((error = sbx__envd_stream_wait(h->s, 0, h->stop, &e)) == SBX_HTTP_YIELD &&
		       !h->user_stop)
			;
	if (h->user_stop) {
		send_kill(h); /* the callback asked to stop: kill it, as exec does */
		drain_end(h);
		memset(&e, 0, sizeof(e));
		error = sbx__error_set(
		    &e, SBX_EUSER, "terminal stopped: on_output callback returned %d", h->user_rc);
		h->res.killed = true;
	} else if (error == SBX_EABORTED) {
		/* free (detach): just disconnect; kill: the signal went, its grace passed */
		error = 0;
		h->res.killed = atomic_load(&h->killing);
		if (!h->got_end)
			h->res.has_exit_code = false;
	} else if (error == SBX_EHTTP && strcmp(e.e2b_code, "deadline_exceeded") == 0) {
		/* Connect-Timeout-Ms passed: envd killed it, usually without an end event */
		error = 0;
		memset(&e, 0, sizeof(e));
		h->res.timed_out = true;
		h->res.has_exit_code = false;
		h->res.exit_code = 0;
	} else if (error == 0 && !h->got_end) {
		error = sbx__error_set(&e, SBX_EPROTOCOL,
		                       "E2B terminal stream ended without the command's end");
	} else if (error == 0) {
		h->res.killed = atomic_load(&h->killing);
	}
	pthread_mutex_lock(&h->mu);
	h->error = error;
	h->err = e;
	h->done = true;
	pthread_mutex_unlock(&h->mu);
	fd_raise(h->done_fd);
	return NULL;
}

static void pty_free(pty *h)
{
	if (!h)
		return;
	if (h->thread_started) {
		atomic_store(&h->detach, true);
		sbx_signal_abort(h->stop);
		pthread_join(h->thread, NULL);
	}
	sbx__envd_stream_free(h->s);
	sbx__envd_target_dispose(&h->t);
	sbx_buf_dispose(&h->early);
	sbx_signal_free(h->stop);
	if (h->done_fd >= 0)
		close(h->done_fd);
	pthread_mutex_destroy(&h->mu);
	sbx__free(h);
}

static int pty_new(pty **out, sbx__e2b_provider *p, const sbx_pty_options *o, sbx_error *err)
{
	pty *h;

	*out = NULL;
	if (!(h = sbx__calloc(1, sizeof(*h))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	h->p = p;
	h->done_fd = -1;
	h->cb = o->on_output;
	h->cb_payload = o->output_payload;
	sbx_buf_init(&h->early, SBX_MAX_ENVELOPE);
	if (pthread_mutex_init(&h->mu, NULL) != 0) {
		sbx__free(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a mutex");
	}
	if (sbx_signal_new(&h->stop) < 0 ||
	    (h->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		pty_free(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create an eventfd");
	}
	*out = h;
	return 0;
}

/* What the start step needs: Start (proc, user) or Connect (attach_pid). */
typedef struct open_ctx {
	pty *h;
	const sbx_envd_process *proc;
	const char *user;
	uint32_t attach_pid;
	sbx_signal *sig;
} open_ctx;

/*
 * Drive the new stream until the pid: 0 with h->have_pid, or the failure.
 * An abort or the pid deadline before the pid still waits up to
 * SBX_E2B_KILL_GRACE_MS for it (not abortable), so that a command that did start is
 * killed rather than left on a terminal nobody reads.
 */
static int wait_pid(pty *h, sbx_signal *sig, sbx_error *local)
{
	uint64_t until = sbx__now_ms() + PID_DEADLINE_MS;
	int error;

	h->starting = true;
	while ((error = sbx__envd_stream_wait(h->s, until, sig, local)) == SBX_HTTP_YIELD &&
	       !h->have_pid && !h->user_stop)
		;
	if (!h->have_pid && (error == SBX_EABORTED || error == SBX_ETIMEOUT)) {
		uint64_t grace = sbx__now_ms() + SBX_E2B_KILL_GRACE_MS;
		while (!h->have_pid &&
		       sbx__envd_stream_wait(h->s, grace, NULL, NULL) == SBX_HTTP_YIELD)
			;
		send_kill(h);
		h->starting = false;
		return error == SBX_EABORTED
		           ? sbx__error_set(local, SBX_EABORTED, "aborted")
		           : sbx__error_set(local, SBX_ETIMEOUT,
		                            "E2B terminal start timed out: no pid within %d s",
		                            PID_DEADLINE_MS / 1000);
	}
	h->starting = false;
	if (h->early_lost)
		return sbx__error_set(local, SBX_ENOMEM, "out of memory holding the first output");
	if (h->have_pid) {
		if (error < 0) { /* the stream broke right after the start: the reader reports it */
			h->pending = error;
			h->pending_err = *local;
			memset(local, 0, sizeof(*local));
		}
		return 0;
	}
	if (error == 0 || error == SBX_HTTP_YIELD)
		return sbx__error_set(local, SBX_EPROTOCOL,
		                      "E2B process stream ended before a pid");
	return error;
}

static int open_step(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	open_ctx *c = ctx;
	pty *h = c->h;
	sbx_envd_handler hd = {.on_start = on_start,
	                       .on_output = on_output,
	                       .wants_output = wants_output,
	                       .on_end = on_end,
	                       .yield = on_yield,
	                       .payload = h};
	int error;

	if (c->attach_pid)
		error = sbx__envd_connect(&h->s, p->http, t, c->attach_pid, &hd, local);
	else
		error = sbx__envd_start(&h->s, p->http, t, c->user, c->proc, false, &hd, local);
	if (error < 0)
		return error;
	return wait_pid(h, c->sig, local);
}

static void open_reset(void *ctx)
{
	open_ctx *c = ctx;
	sbx__envd_stream_free(c->h->s);
	c->h->s = NULL;
	sbx_buf_clear(&c->h->early);
}

/* Connect (cached), open the stream, wait for the pid, start the reader. */
static int pty_open(pty *h, const char *id, open_ctx *c, uint64_t min_seconds, sbx_signal *sig,
                    sbx_error *err)
{
	sbx__e2b_step step = {open_step, NULL, open_reset, c};
	sbx_error local;
	int error;

	c->h = h;
	c->sig = sig;
	error = sbx__e2b_with_attach(h->p, &h->t, id, min_seconds, &step, sig, &local, err);
	if (error < 0) {
		if (!h->have_pid && !c->attach_pid && c->user &&
		    strcmp(c->user, SBX_E2B_SANDBOX_USER) == 0 &&
		    sbx__e2b_no_sandbox_user(error, &local))
			return sbx__e2b_template_error(h->p, &h->t, err);
		sbx__e2b_pass_error(err, &local);
		return error;
	}
	if (pthread_create(&h->thread, NULL, reader, h) != 0) {
		send_kill(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot start a reader thread");
	}
	h->thread_started = true;
	return 0;
}

int sbx__e2b_pty_start(void *impl, void **h_out, uint32_t *pid_out, const char *id,
                       const char *command, const sbx_pty_options *o, sbx_signal *sig,
                       sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	const char *shell_args[] = {"-c", login_shell_script, "capybara-pty"};
	const char *cmd_args[] = {"-l", "-c", command};
	static const sbx_env_var term = {"TERM", "xterm-256color"};
	sbx__command cmd = sbx__command_of_pty(o);
	sbx_env_var *env = NULL;
	sbx_envd_process proc = {0};
	open_ctx c = {0};
	uint64_t min_seconds = 0;
	pty *h = NULL;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if (!(env = sbx__e2b_command_env(&cmd, &term, 1, &proc.nenv)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	proc.cmd = command ? "/bin/bash" : "/bin/sh";
	proc.args = command ? cmd_args : shell_args;
	proc.nargs = 3;
	proc.env = env;
	proc.cwd = cmd.cwd ? cmd.cwd : "/workspace";
	proc.pty_cols = o->cols;
	proc.pty_rows = o->rows;
	proc.timeout_ms = cmd.timeout_ms;
	if (cmd.timeout_ms)
		min_seconds = sbx__e2b_run_min_seconds(cmd.timeout_ms);
	c.proc = &proc;
	c.user = sbx__e2b_user_name(cmd.user);
	if ((error = pty_new(&h, p, o, err)) < 0 ||
	    (error = pty_open(h, id, &c, min_seconds, sig, err)) < 0) {
		pty_free(h);
		sbx__free(env);
		return error;
	}
	sbx__free(env);
	*pid_out = h->pid;
	*h_out = h;
	return 0;
}

int sbx__e2b_pty_attach(void *impl, void **h_out, const char *id, uint32_t pid,
                        const sbx_pty_options *o, sbx_signal *sig, sbx_error *err)
{
	open_ctx c = {0};
	pty *h = NULL;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	c.attach_pid = pid;
	if ((error = pty_new(&h, impl, o, err)) < 0 ||
	    (error = pty_open(h, id, &c, 0, sig, err)) < 0) {
		pty_free(h);
		return error;
	}
	*h_out = h;
	return 0;
}

int sbx__e2b_pty_send_input(void *hv, const void *data, size_t len, sbx_signal *sig, sbx_error *err)
{
	pty *h = hv;
	size_t off = 0, n;
	int error;

	while (off < len) {
		n = len - off < SBX_ENVD_MAX_INPUT_CHUNK ? len - off : SBX_ENVD_MAX_INPUT_CHUNK;
		if ((error = sbx__envd_send_pty(
		         h->p->http, &h->t, h->pid, (const unsigned char *)data + off, n,
		         sbx__now_ms() + SBX_E2B_API_TIMEOUT_MS, sig, err)) < 0)
			return error;
		off += n;
	}
	return 0;
}

int sbx__e2b_pty_resize(void *hv, uint16_t cols, uint16_t rows, sbx_signal *sig, sbx_error *err)
{
	pty *h = hv;
	return sbx__envd_resize(h->p->http, &h->t, h->pid, cols, rows,
	                        sbx__now_ms() + SBX_E2B_API_TIMEOUT_MS, sig, err);
}

int sbx__e2b_pty_kill(void *hv, sbx_signal *sig, sbx_error *err)
{
	pty *h = hv;
	bool done, ended;
	int error;

	pthread_mutex_lock(&h->mu);
	done = h->done;
	ended = done && (h->got_end || h->res.timed_out); /* the reader wrote them before done */
	pthread_mutex_unlock(&h->mu);
	if (done && ended)
		return 0;
	atomic_store(&h->killing, true);
	/* a pid envd no longer knows (it just ended) is success */
	if ((error = sbx__envd_kill(h->p->http, &h->t, h->pid,
	                            sbx__now_ms() + SBX_E2B_SIGNAL_DEADLINE_MS, sig, err)) < 0 ||
	    done) /* the reader gave up on a broken stream: the signal is all there is */
		return error;
	if ((error = wait_fd(h->done_fd, SBX_E2B_KILL_GRACE_MS, sig, err)) != SBX_ETIMEOUT)
		return error;
	sbx_signal_abort(h->stop); /* no end within the grace: the reader disconnects */
	return wait_fd(h->done_fd, 0, sig, err);
}

int sbx__e2b_pty_wait(void *hv, sbx_pty_result *out, sbx_signal *sig, sbx_error *err)
{
	pty *h = hv;
	int error;

	if ((error = wait_fd(h->done_fd, 0, sig, err)) < 0)
		return error;
	pthread_mutex_lock(&h->mu);
	error = h->error;
	if (error < 0)
		sbx__e2b_pass_error(err, &h->err);
	if (error == 0 || error == SBX_EUSER)
		*out = h->res;
	pthread_mutex_unlock(&h->mu);
	return error;
}

void sbx__e2b_pty_free(void *h)
{
	pty_free(h);
}
