/*
 * fake-e2b/api/envd/filesystem_watch.c: filesystem.Filesystem/WatchDir (e2b-protocol.md §5.5),
 * a server stream over a runtime directory watch (dirwatch.h): `start`, then one `filesystem`
 * event per operation ({name relative to the path, type, entry when includeEntry and the
 * operation is a create, write or chmod}), keepalives after Keepalive-Ping-Interval seconds
 * without events. It ends when the client leaves or the sandbox pauses or goes (the proxy drops
 * the connection, as for process streams).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dirwatch.h"
#include "envd.h"

#define WATCH_DEFAULT_KEEPALIVE_S 90
#define WATCH_SLICE_MS            500 /* how often an idle watch checks its client and sandbox */

typedef struct watch_stream {
	fk_app *app;
	fk_sandbox *sb;
	fk_watch sbw; /* the sandbox's pause/delete */
	fk_dirwatch *dw;
	char *user;
	bool include_entry;
	bool abort;  /* drop the connection */
	bool finish; /* the end-stream frame is queued */
	fk_obuf out;
	int keepalive_ms;
	int64_t last_send_ms;
	int sock;
} watch_stream;

static void watch_free(void *cls)
{
	watch_stream *s = cls;
	if (s->sb)
		fk_sandbox_unwatch(s->app->reg, s->sb, &s->sbw);
	fk_dirwatch_free(s->dw);
	pthread_cond_destroy(&s->sbw.cond);
	fk_sandbox_release(s->app->reg, s->sb);
	free(s->user);
	free(s->out.ptr);
	free(s);
}

static int client_gone(const watch_stream *s)
{
	if (s->sock < 0)
		return 0;
	struct pollfd p = {.fd = s->sock, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static void queue_event(watch_stream *s, const fk_dirwatch_event *ev)
{
	static const char *const types[] = {NULL,
	                                    "EVENT_TYPE_CREATE",
	                                    "EVENT_TYPE_WRITE",
	                                    "EVENT_TYPE_REMOVE",
	                                    "EVENT_TYPE_RENAME",
	                                    "EVENT_TYPE_CHMOD"};
	json_t *fs = json_pack("{s:s,s:s}", "name", ev->name, "type", types[ev->op]);
	if (s->include_entry && (ev->op == FK_DIRWATCH_CREATE || ev->op == FK_DIRWATCH_WRITE ||
	                         ev->op == FK_DIRWATCH_CHMOD)) {
		/* best effort, as envd: an entry gone meanwhile is simply left out */
		fk_entry e = {0};
		if (fk_file_stat(s->app->rt, s->sb->id, ev->path, s->user, &e, NULL) == 0)
			json_object_set_new(fs, "entry", fk_envd_entry_json(&e));
		fk_entry_clear(&e);
	}
	fk_obuf_frame(&s->out, 0, json_pack("{s:o}", "filesystem", fs));
}

/* Produce the next frames into s->out, blocking until something is due. */
static void watch_step(watch_stream *s)
{
	for (;;) {
		if (fk_watch_broken(s->app->reg, &s->sbw) || client_gone(s)) {
			s->abort = true;
			return;
		}
		int64_t now = fk_mono_ms();
		int64_t due = s->last_send_ms + s->keepalive_ms;
		if (now >= due) {
			fk_obuf_frame(&s->out, 0, json_pack("{s:{}}", "keepalive"));
			s->last_send_ms = now;
			return;
		}
		int wait = due - now > WATCH_SLICE_MS ? WATCH_SLICE_MS : (int)(due - now);
		fk_dirwatch_event ev;
		int rc = fk_dirwatch_next(s->dw, &ev, wait);
		if (rc == FK_ETIMEOUT)
			continue;
		if (rc < 0) {
			fk_obuf_frame(&s->out, 2,
			              fk_connect_end_error("internal", "watcher error"));
			s->finish = true;
			return;
		}
		queue_event(s, &ev);
		fk_dirwatch_event_clear(&ev);
		s->last_send_ms = fk_mono_ms();
		return;
	}
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	watch_stream *s = cls;
	(void)pos;
	for (;;) {
		if (s->out.off < s->out.len) {
			size_t n = s->out.len - s->out.off;
			if (n > max)
				n = max;
			memcpy(buf, s->out.ptr + s->out.off, n);
			s->out.off += n;
			return (ssize_t)n;
		}
		if (s->abort)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (s->finish)
			return MHD_CONTENT_READER_END_OF_STREAM;
		s->out.len = s->out.off = 0;
		watch_step(s);
	}
}

enum MHD_Result fk_envd_fs_watch_dir(fk_call *c)
{
	json_t *req = fk_connect_request(c->req, 1);
	const char *path = fk_json_str(req, "path");
	fk_err err = {0};
	fk_dirwatch *dw = NULL;
	int rc =
	    path ? fk_dirwatch_new(c->app->rt, c->sb->id, path, c->user,
	                           json_is_true(json_object_get(req, "recursive")), &dw, NULL, &err)
	         : FK_EINVAL;
	bool include_entry = json_is_true(json_object_get(req, "includeEntry"));
	json_decref(req);
	if (rc < 0) {
		if (rc == FK_ENOUSER)
			return fk_connect_stream_error(c->req, "unauthenticated",
			                               "invalid username");
		return fk_connect_stream_error(c->req, fk_connect_code_of(rc),
		                               err.message[0] ? err.message : "path is required");
	}
	watch_stream *s = calloc(1, sizeof(*s));
	if (!s || (c->user && !(s->user = strdup(c->user)))) {
		fk_dirwatch_free(dw);
		free(s);
		return fk_connect_stream_error(c->req, "resource_exhausted", "out of memory");
	}
	s->app = c->app;
	s->dw = dw;
	s->include_entry = include_entry;
	s->sock = fk_req_socket(c->req);
	pthread_cond_init(&s->sbw.cond, NULL);
	const char *ka = fk_header(c->req, "Keepalive-Ping-Interval");
	char *end = NULL;
	long secs = ka ? strtol(ka, &end, 10) : 0;
	s->keepalive_ms =
	    1000 * (ka && *ka && !*end && secs > 0 && secs < 86400 ? (int)secs
	                                                           : WATCH_DEFAULT_KEEPALIVE_S);
	s->sb = fk_sandbox_ref(c->app->reg, c->sb);
	if (fk_sandbox_watch(c->app->reg, c->sb, &s->sbw) < 0) {
		enum MHD_Result ret = fk_envd_not_found_502(c->req, c->sb->id);
		fk_sandbox_release(c->app->reg, s->sb);
		s->sb = NULL;
		watch_free(s);
		return ret;
	}
	fk_obuf_frame(&s->out, 0, json_pack("{s:{}}", "start"));
	s->last_send_ms = fk_mono_ms();
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
	                                                              watch_read, s, watch_free);
	if (!resp) {
		watch_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
	return fk_reply_response(c->req, 200, resp);
}
