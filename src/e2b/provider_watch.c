/*
 * e2b/provider_watch.c: directory watches on E2B (sandbox/watch.h,
 * docs/watch.md).
 *
 * One in-sandbox check as the watch's user (WATCH_CHECK_SCRIPT: a directory
 * the user may list), then envd's filesystem.Filesystem/WatchDir stream
 * {path, recursive} as that user, through sbx__e2b_with_attach (a sandbox
 * paused behind our back: connected, the watch sent again). The start
 * returns once envd's {"start":{}} came. sbx_watch_next() drives the stream
 * on the caller's thread, yielding as soon as an event is queued; the queue
 * holds what one network read brought beyond that, at most
 * SBX_WATCH_QUEUE_MAX events (a read that would pass it fails the watch:
 * envd sends a few hundred bytes per read at most, so that is a hostile peer).
 */
#include <stdio.h>
#include <string.h>

#include "e2b/provider_int.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define START_DEADLINE_MS SBX_E2B_API_TIMEOUT_MS /* envd's start message */

typedef struct watch {
	sbx__e2b_provider *p;
	sbx_envd_target t;
	sbx_envd_stream *s;
	bool started;
	bool opening; /* the start waits for envd's start message: yield once it came */
	bool failed;  /* the stream ended: `error` and `err` say how, for every later call */
	int error;
	sbx_error err;
	sbx_watch_event q[SBX_WATCH_QUEUE_MAX];
	size_t head, count;
} watch;

static int op_of(const char *type, sbx_watch_op *op)
{
	static const struct {
		const char *name;
		sbx_watch_op op;
	} ops[] = {{"EVENT_TYPE_CREATE", SBX_WATCH_CREATE},
	           {"EVENT_TYPE_WRITE", SBX_WATCH_WRITE},
	           {"EVENT_TYPE_REMOVE", SBX_WATCH_REMOVE},
	           {"EVENT_TYPE_RENAME", SBX_WATCH_RENAME},
	           {"EVENT_TYPE_CHMOD", SBX_WATCH_CHMOD}};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(type, ops[i].name) == 0) {
			*op = ops[i].op;
			return 0;
		}
	return -1;
}

/* One WatchDir message: start, keepalive, or a filesystem event (queued). */
static int on_message(json_t *msg, void *payload, sbx_error *err)
{
	watch *w = payload;
	json_t *fs = json_object_get(msg, "filesystem"), *name, *type;
	sbx_watch_event *e;
	sbx_watch_op op;

	if (json_object_get(msg, "start")) {
		w->started = true;
		return 0;
	}
	if (!fs)
		return 0; /* keepalive, or a message of a newer envd */
	name = json_object_get(fs, "name");
	type = json_object_get(fs, "type");
	if (!json_is_string(name) || !json_is_string(type) ||
	    strlen(json_string_value(name)) != json_string_length(name))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B watch stream: an event without a name and a type");
	if (op_of(json_string_value(type), &op) < 0)
		return 0; /* an operation envd may add later: not ours to report */
	if (w->count == SBX_WATCH_QUEUE_MAX)
		return sbx__error_set(err, SBX_ETOOLARGE,
		                      "E2B watch stream: more than %d events in one read",
		                      SBX_WATCH_QUEUE_MAX);
	e = &w->q[(w->head + w->count) % SBX_WATCH_QUEUE_MAX];
	if (!(e->name = sbx__strdup(json_string_value(name))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	e->op = op;
	w->count++;
	return 0;
}

static bool on_yield(void *payload)
{
	const watch *w = payload;
	return w->count > 0 || (w->opening && w->started);
}

typedef struct open_ctx {
	watch *w;
	const char *path, *user;
	bool recursive;
	sbx_signal *sig;
} open_ctx;

/* Open the stream and wait for envd's start message. */
static int open_step(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	open_ctx *c = ctx;
	watch *w = c->w;
	sbx_envd_handler h = {.yield = on_yield, .payload = w, .on_message = on_message};
	uint64_t until = sbx__now_ms() + START_DEADLINE_MS;
	int error;

	if ((error = sbx__envd_watch_dir(&w->s, p->http, t, c->user, c->path, c->recursive, &h,
	                                 local)) < 0)
		return error;
	w->opening = true;
	while (!w->started &&
	       (error = sbx__envd_stream_wait(w->s, until, c->sig, local)) == SBX_HTTP_YIELD)
		;
	w->opening = false;
	if (w->started)
		return 0;
	if (error == SBX_ETIMEOUT)
		return sbx__error_set(local, SBX_ETIMEOUT, "E2B watch start timed out");
	if (error == SBX_EABORTED)
		return sbx__error_set(local, SBX_EABORTED, "aborted");
	if (error == 0)
		return sbx__error_set(local, SBX_EPROTOCOL,
		                      "E2B watch stream ended before its start");
	return error;
}

static void open_reset(void *ctx)
{
	open_ctx *c = ctx;
	sbx__envd_stream_free(c->w->s);
	c->w->s = NULL;
}

static void watch_free(watch *w)
{
	if (!w)
		return;
	sbx__envd_stream_free(w->s);
	sbx__envd_target_dispose(&w->t);
	for (size_t i = 0; i < w->count; i++)
		sbx_watch_event_dispose(&w->q[(w->head + i) % SBX_WATCH_QUEUE_MAX]);
	sbx__free(w);
}

/*
 * The check as the user: a directory it may list. A refusal carries, as e2b_code, the Connect
 * code envd's WatchDir gives for the same path (docs/watch.md "Errors"): the packages branch
 * on it, never on the message.
 */
static int check_dir(sbx__e2b_provider *p, sbx_envd_target *t, const char *id, const char *path,
                     const char *user, sbx_signal *sig, sbx_error *err)
{
	const char *args[] = {"-c", sbx__e2b_watch_check_script, "capybara-watch", path};
	sbx__file_op r = {0};
	int error;

	error = sbx__e2b_attached_file_op(p, t, id, user, args, 4, 4096, 0, sig, &r, err);
	if (error == 0 && !(r.has_exit_code && r.exit_code == 0)) {
		int code = r.has_exit_code ? r.exit_code : -1;
		if (code == 3)
			error = sbx__error_set_http(err, SBX_ESANDBOX, 0, "not_found",
			                            "cannot watch %s: no such directory", path);
		else if (code == 4)
			error = sbx__error_set_http(err, SBX_ESANDBOX, 0, "invalid_argument",
			                            "cannot watch %s: not a directory", path);
		else if (code == 5)
			error = sbx__error_set_http(err, SBX_ESANDBOX, 0, "permission_denied",
			                            "cannot watch %s: permission denied for %s",
			                            path, path);
		else
			error = sbx__error_set(err, SBX_ESANDBOX, "cannot watch %s: check exit %d",
			                       path, code);
	}
	sbx__e2b_file_op_dispose(&r);
	return error;
}

int sbx__e2b_watch_dir(void *impl, void **h_out, const char *id, const char *path,
                       const sbx_watch_options *o, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	const char *user = sbx__e2b_user_name(o->user);
	open_ctx c = {NULL, path, user, o->recursive, sig};
	sbx__e2b_step step = {open_step, NULL, open_reset, &c};
	sbx_envd_target check = {0};
	sbx_error local = {0};
	watch *w;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	error = check_dir(p, &check, id, path, user, sig, err);
	sbx__envd_target_dispose(&check);
	if (error < 0)
		return error;
	if (!(w = sbx__calloc(1, sizeof(*w))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	w->p = p;
	c.w = w;
	if ((error = sbx__e2b_with_attach(p, &w->t, id, 0, &step, sig, &local, err)) < 0) {
		sbx__e2b_pass_error(err, &local);
		watch_free(w);
		return error;
	}
	*h_out = w;
	return 0;
}

int sbx__e2b_watch_next(void *h, sbx_watch_event *out, uint64_t timeout_ms, sbx_signal *sig,
                        sbx_error *err)
{
	watch *w = h;
	uint64_t until = timeout_ms == UINT64_MAX ? 0 : sbx__now_ms() + timeout_ms;
	int error;

	if (timeout_ms == 0)
		until = sbx__now_ms(); /* what has arrived: one look, no wait */
	while (w->count == 0 && !w->failed) {
		error = sbx__envd_stream_wait(w->s, until ? until : 0, sig, &w->err);
		if (error == SBX_HTTP_YIELD)
			continue;
		if (error == SBX_ETIMEOUT && w->count == 0)
			return sbx__error_set(err, SBX_ETIMEOUT, "no event in time");
		if (error == SBX_EABORTED && w->count == 0)
			return sbx__error_set(err, SBX_EABORTED, "aborted");
		if (error == SBX_ETIMEOUT || error == SBX_EABORTED)
			break;
		/* the stream ended: a clean end-stream too, which envd sends only when it stops */
		w->failed = true;
		w->error = error < 0
		               ? error
		               : sbx__error_set(&w->err, SBX_EPROTOCOL, "E2B watch stream ended");
	}
	if (w->count == 0) {
		sbx__e2b_pass_error(err, &w->err);
		return w->error;
	}
	*out = w->q[w->head];
	memset(&w->q[w->head], 0, sizeof(w->q[w->head]));
	w->head = (w->head + 1) % SBX_WATCH_QUEUE_MAX;
	w->count--;
	return 0;
}

void sbx__e2b_watch_free(void *h)
{
	watch_free(h);
}
