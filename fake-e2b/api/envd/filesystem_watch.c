/*
 * fake-e2b/api/envd/filesystem_watch.c: filesystem.Filesystem/WatchDir (docs/internals/wire.md
 * "Filesystem RPCs"),
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

/* FilesystemEvent {name, type, entry when include_entry and the operation is a create, write
 * or chmod} of a watch of box `box_id` as `user`. */
static json_t *event_json(fk_app *app, const char *box_id, const char *user, bool include_entry,
                          const fk_dirwatch_event *ev)
{
	static const char *const types[] = {NULL,
	                                    "EVENT_TYPE_CREATE",
	                                    "EVENT_TYPE_WRITE",
	                                    "EVENT_TYPE_REMOVE",
	                                    "EVENT_TYPE_RENAME",
	                                    "EVENT_TYPE_CHMOD"};
	json_t *fs = json_pack("{s:s,s:s}", "name", ev->name, "type", types[ev->op]);
	if (fs && include_entry &&
	    (ev->op == FK_DIRWATCH_CREATE || ev->op == FK_DIRWATCH_WRITE ||
	     ev->op == FK_DIRWATCH_CHMOD)) {
		/* best effort, as envd: an entry gone meanwhile is simply left out */
		fk_entry e = {0};
		if (fk_file_stat(app->rt, box_id, ev->path, user, &e, NULL) == 0)
			json_object_set_new(fs, "entry", fk_envd_entry_json(&e));
		fk_entry_clear(&e);
	}
	return fs;
}

static void queue_event(watch_stream *s, const fk_dirwatch_event *ev)
{
	fk_obuf_frame(&s->out, 0,
	              json_pack("{s:o}", "filesystem",
	                        event_json(s->app, s->sb->id, s->user, s->include_entry, ev)));
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

/* ---- the polling watchers (envd watch_sync.go): CreateWatcher, GetWatcherEvents,
 * RemoveWatcher. Each is a directory watch the sandbox holds (registry/pwatch.c) until removed;
 * its events wait in its inotify queue (the kernel's bound, fs.inotify.max_queued_events), or
 * read ahead after a MakeDir or Move (fk_sandbox_pwatches_catch_up: a new directory is watched
 * before that call answers), and each GetWatcherEvents answers those since the last call, at
 * most PWATCH_EVENTS_MAX (the rest come with the next call). */

#define PWATCH_EVENTS_MAX 10000

enum MHD_Result fk_envd_fs_create_watcher(fk_call *c, json_t *req)
{
	const char *path = fk_json_str(req, "path");
	if (!path)
		return fk_connect_error(c->req, "invalid_argument", "path is required");
	fk_err err = {0};
	fk_dirwatch *dw = NULL;
	int rc = fk_dirwatch_new(c->app->rt, c->sb->id, path, c->user,
	                         json_is_true(json_object_get(req, "recursive")), &dw, NULL, &err);
	if (rc == FK_ENOUSER)
		return fk_connect_error(c->req, "unauthenticated", "invalid username");
	if (rc < 0)
		return fk_connect_runtime_error(c->req, rc, &err);
	char id[FK_PWATCH_ID_LEN + 1];
	if (fk_sandbox_pwatch_add(c->app->reg, c->sb, dw, c->user,
	                          json_is_true(json_object_get(req, "includeEntry")), id) < 0) {
		fk_dirwatch_free(dw);
		return fk_envd_not_found_502(c->req, c->sb->id);
	}
	json_t *reply = json_pack("{s:s}", "watcherId", id);
	return reply ? fk_reply_json(c->req, 200, reply)
	             : fk_connect_error(c->req, "resource_exhausted", "out of memory");
}

static enum MHD_Result no_watcher(fk_call *c, const char *id, int busy)
{
	if (busy)
		return fk_connect_error(c->req, "unavailable", "watcher with id %s is busy", id);
	return fk_connect_error(c->req, "not_found", "watcher with id %s not found", id);
}

enum MHD_Result fk_envd_fs_get_watcher_events(fk_call *c, json_t *req)
{
	const char *id = fk_json_str(req, "watcherId");
	int busy = 0;
	fk_pwatch *pw = id ? fk_sandbox_pwatch_take(c->app->reg, c->sb, id, &busy) : NULL;
	if (!pw)
		return no_watcher(c, id ? id : "", busy);
	json_t *events = json_array();
	int rc = 0;
	for (size_t n = 0; events && n < PWATCH_EVENTS_MAX; n++) {
		fk_dirwatch_event ev;
		rc = fk_sandbox_pwatch_next(pw, &ev);
		if (rc < 0)
			break;
		json_array_append_new(
		    events, event_json(c->app, c->sb->id, pw->user, pw->include_entry, &ev));
		fk_dirwatch_event_clear(&ev);
	}
	fk_sandbox_pwatch_put(c->app->reg, pw);
	if (rc < 0 && rc != FK_ETIMEOUT) {
		json_decref(events);
		return fk_connect_error(c->req, "internal", "watcher error");
	}
	/* protojson leaves an empty list out */
	json_t *reply = !events                   ? NULL
	                : json_array_size(events) ? json_pack("{s:o}", "events", events)
	                                          : (json_decref(events), json_object());
	return reply ? fk_reply_json(c->req, 200, reply)
	             : fk_connect_error(c->req, "resource_exhausted", "out of memory");
}

enum MHD_Result fk_envd_fs_remove_watcher(fk_call *c, json_t *req)
{
	const char *id = fk_json_str(req, "watcherId");
	if (!id || fk_sandbox_pwatch_remove(c->app->reg, c->sb, id) < 0)
		return no_watcher(c, id ? id : "", 0);
	return fk_reply_json(c->req, 200, json_object());
}
