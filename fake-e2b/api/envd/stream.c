/*
 * fake-e2b/api/envd/stream.c: the server stream of process.Process/Start and
 * /Connect (docs/internals/wire.md "Process start", "Other process RPCs"): start, data, keepalive
 * and end events, Connect-Timeout-Ms, and breaking the stream when the sandbox pauses or goes. An
 * MHD content reader that blocks on the runtime's subscription.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "b64.h"
#include "clock.h"
#include "envd.h"
#include "go_status.h"

#define FK_DEFAULT_KEEPALIVE_S 90
#define FK_STREAM_SLICE_MS     1000 /* how often an idle stream checks its client is still there */

/* The end event (docs/internals/wire.md "Process start") from a waitpid status. */
static json_t *end_event_json(int ws)
{
	char status[96];
	int code;
	fk_go_process_status(ws, status, sizeof(status), &code);
	json_t *end = json_object();
	if (code)
		json_object_set_new(end, "exitCode", json_integer(code));
	if (WIFEXITED(ws))
		json_object_set_new(end, "exited", json_true());
	json_object_set_new(end, "status", json_string(status));
	if (code)
		json_object_set_new(end, "error", json_string(status));
	return json_pack("{s:{s:o}}", "event", "end", end);
}

/* ---- process streams --------------------------------------------------------------------- */

enum st_phase { ST_EVENTS, ST_IDLE, ST_FINISH, ST_ABORT };

typedef struct fk_stream {
	fk_app *app;
	fk_sandbox *sb;
	fk_watch watch;
	fk_proc *proc;
	fk_sub *sub;
	uint32_t pid;
	enum fk_fault_kind fault;
	int immune;
	int kill_on_deadline; /* Start: Connect-Timeout-Ms bounds the process */
	enum st_phase phase;
	fk_obuf out;
	int keepalive_ms;
	int64_t deadline_ms; /* monotonic; 0 = none (Connect-Timeout-Ms) */
	int64_t last_send_ms;
	int sock;
} fk_stream;

static void stream_free(void *cls)
{
	fk_stream *s = cls;
	/* the client left before Connect-Timeout-Ms: the process is still bounded by it
	 * (docs/internals/wire.md "Process start") */
	if (s->sb && s->proc && s->kill_on_deadline && s->deadline_ms && !s->immune &&
	    s->phase != ST_FINISH && !fk_proc_ended(s->proc, NULL))
		fk_registry_kill_at(s->app->reg, s->sb->id, s->proc, s->deadline_ms);
	if (s->sb)
		fk_sandbox_unwatch(s->app->reg, s->sb, &s->watch);
	fk_sub_free(s->sub);
	fk_proc_unref(s->proc);
	pthread_cond_destroy(&s->watch.cond);
	fk_sandbox_release(s->app->reg, s->sb);
	free(s->out.ptr);
	free(s);
}

static int client_gone(fk_stream *s)
{
	if (s->sock < 0)
		return 0;
	struct pollfd p = {.fd = s->sock, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int queue_data(fk_stream *s, const fk_event *ev)
{
	char *b64 = fk_b64_encode(ev->data, ev->len);
	if (!b64)
		return -1;
	json_t *m = json_pack("{s:{s:{s:s}}}", "event", "data",
	                      ev->type == FK_EV_PTY      ? "pty"
	                      : ev->type == FK_EV_STDOUT ? "stdout"
	                                                 : "stderr",
	                      b64);
	free(b64);
	return fk_obuf_frame(&s->out, 0, m);
}

static void queue_keepalive(fk_stream *s)
{
	fk_obuf_frame(&s->out, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
}

/* After the end event: immune/keepalive-only streams idle; no_end stops; else end-stream {}. */
static void on_end(fk_stream *s, int ws)
{
	int forward = s->fault != FK_FAULT_STREAM_KEEPALIVE_ONLY;
	if (s->immune || s->fault == FK_FAULT_STREAM_KEEPALIVE_ONLY) {
		fk_watch_set_sub(s->app->reg, &s->watch, NULL);
		fk_sub_free(s->sub); /* nothing more to read; keep the stream open */
		s->sub = NULL;
		s->phase = ST_IDLE;
		return;
	}
	if (forward)
		fk_obuf_frame(&s->out, 0, end_event_json(ws));
	if (s->fault != FK_FAULT_STREAM_NO_END)
		fk_obuf_frame(&s->out, 2, json_object());
	s->phase = ST_FINISH;
}

/* Produce the next bytes into s->out, blocking until something is due. */
static void stream_step(fk_stream *s)
{
	fk_registry *g = s->app->reg;
	for (;;) {
		int64_t now = fk_mono_ms();
		if (fk_watch_broken(g, &s->watch) || client_gone(s)) {
			s->phase = ST_ABORT;
			return;
		}
		if (s->deadline_ms && now >= s->deadline_ms) {
			/* envd: the context ends, the pid is SIGKILLed, the stream ends with
			 * deadline_exceeded, usually without an end event (docs/internals/wire.md
			 * "Process start") */
			if (!s->immune && s->kill_on_deadline)
				fk_proc_signal(s->app->rt, s->sb->id, s->pid, SIGKILL, NULL);
			fk_obuf_frame(
			    &s->out, 2,
			    fk_connect_end_error("deadline_exceeded", "context deadline exceeded"));
			s->phase = ST_FINISH;
			return;
		}
		int64_t due = s->last_send_ms + s->keepalive_ms;
		if (now >= due) {
			queue_keepalive(s);
			s->last_send_ms = now;
			return;
		}
		int64_t wait = due - now;
		if (s->deadline_ms && s->deadline_ms - now < wait)
			wait = s->deadline_ms - now;
		if (wait > FK_STREAM_SLICE_MS)
			wait = FK_STREAM_SLICE_MS;
		if (!s->sub) {
			fk_watch_sleep(g, &s->watch, (int)wait);
			continue;
		}
		fk_event ev = {0};
		int rc = fk_sub_next(s->sub, &ev, (int)wait);
		if (rc == FK_ETIMEOUT)
			continue;
		if (rc < 0) { /* runtime gone (box destroyed): drop the connection */
			s->phase = ST_ABORT;
			return;
		}
		if (ev.type == FK_EV_END) {
			on_end(s, ev.wait_status);
			fk_event_clear(&ev);
			if (s->phase == ST_IDLE)
				continue;
			return;
		}
		if (s->fault != FK_FAULT_STREAM_KEEPALIVE_ONLY) {
			queue_data(s, &ev);
			s->last_send_ms = fk_mono_ms();
			fk_event_clear(&ev);
			return;
		}
		fk_event_clear(&ev);
	}
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	fk_stream *s = cls;
	for (;;) {
		if (s->out.off < s->out.len) {
			size_t n = s->out.len - s->out.off;
			if (n > max)
				n = max;
			memcpy(buf, s->out.ptr + s->out.off, n);
			s->out.off += n;
			return (ssize_t)n;
		}
		switch (s->phase) {
		case ST_FINISH:
			return s->fault == FK_FAULT_STREAM_GARBAGE ||
			               s->fault == FK_FAULT_STREAM_OVERSIZE
			           ? MHD_CONTENT_READER_END_WITH_ERROR
			           : MHD_CONTENT_READER_END_OF_STREAM;
		case ST_ABORT:
			return MHD_CONTENT_READER_END_WITH_ERROR;
		default:
			stream_step(s);
		}
	}
}

enum MHD_Result fk_envd_open_stream(fk_call *c, fk_proc *proc, fk_sub *sub, int kill_on_deadline)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	fk_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		fk_sub_free(sub);
		fk_proc_unref(proc);
		return fk_connect_stream_error(r, "resource_exhausted", "out of memory");
	}
	s->app = c->app;
	s->sb = fk_sandbox_ref(g, c->sb);
	s->proc = proc;
	s->sub = sub;
	s->kill_on_deadline = kill_on_deadline;
	s->pid = fk_proc_pid(proc);
	s->fault = c->fault.kind;
	s->immune = s->fault == FK_FAULT_KILL_IGNORED || fk_sandbox_is_immune(g, c->sb, s->pid);
	pthread_cond_init(&s->watch.cond, NULL);
	s->watch.sub = sub;
	const char *ka = fk_header(r, "Keepalive-Ping-Interval");
	char *end = NULL;
	long secs = ka ? strtol(ka, &end, 10) : 0;
	s->keepalive_ms =
	    1000 *
	    (ka && *ka && !*end && secs > 0 && secs < 86400 ? (int)secs : FK_DEFAULT_KEEPALIVE_S);
	const char *to = fk_header(r, "Connect-Timeout-Ms");
	long long ms = to ? strtoll(to, &end, 10) : 0;
	if (to && *to && !*end && ms > 0)
		s->deadline_ms = fk_mono_ms() + ms;
	s->sock = fk_req_socket(r);
	if (fk_sandbox_watch(g, c->sb, &s->watch) < 0) {
		enum MHD_Result ret = fk_envd_not_found_502(r, c->sb->id);
		fk_sandbox_release(g, s->sb);
		s->sb = NULL; /* not watched */
		stream_free(s);
		return ret;
	}
	fk_obuf_frame(&s->out, 0,
	              json_pack("{s:{s:{s:I}}}", "event", "start", "pid", (json_int_t)s->pid));
	if (s->fault == FK_FAULT_STREAM_GARBAGE) {
		fk_obuf_frame_raw(&s->out, 0, "garb!", 5);
		s->phase = ST_FINISH;
	} else if (s->fault == FK_FAULT_STREAM_OVERSIZE) {
		static const unsigned char hdr[5] = {0, 0x80, 0, 0, 0};
		fk_obuf_put(&s->out, hdr, 5);
		s->phase = ST_FINISH;
	}
	s->last_send_ms = fk_mono_ms();
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
	                                                              stream_read, s, stream_free);
	if (!resp) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
	return fk_reply_response(r, 200, resp);
}
