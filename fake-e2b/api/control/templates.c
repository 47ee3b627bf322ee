/*
 * fake-e2b/api/control/templates.c: template builds as E2B's API serves them (the SDK's
 * Template.build flow): POST /v3/templates, upload links for COPY archives
 * (GET /templates/{id}/files/{hash}, then a PUT to the link, signed so it needs no API key),
 * POST /v2/templates/{id}/builds/{buildID}, build status with logs, alias lookup and tags. The
 * store and the builder are tstore/builds.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

static enum MHD_Result store_error(fk_req *r, int rc, const char *msg)
{
	unsigned status = rc == FK_T_NOTFOUND   ? 404
	                  : rc == FK_T_INVALID  ? 400
	                  : rc == FK_T_CONFLICT ? 409
	                                        : 500;
	return fk_reply_error(r, status, "%s", msg && *msg ? msg : "template store failure");
}

/* An optional integer field within [min, max]: 0 when fine (*out set, dflt when absent). */
static int uint_field(json_t *body, const char *key, unsigned dflt, unsigned min, unsigned max,
                      unsigned *out)
{
	json_t *v = json_object_get(body, key);
	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return -1;
	*out = (unsigned)json_integer_value(v);
	return 0;
}

enum MHD_Result fk_control_template_request(fk_call *c)
{
	fk_req *r = c->req;
	json_t *body = fk_body_json(r, 0);
	if (!json_is_object(body)) {
		json_decref(body);
		return fk_reply_error(r, 400,
		                      "validation error: request body must be a JSON object");
	}
	json_t *name = json_object_get(body, "name");
	if (!json_is_string(name))
		name = json_object_get(body, "alias");
	unsigned cpu, mem;
	if (!json_is_string(name)) {
		json_decref(body);
		return fk_reply_error(r, 400, "validation error: name is required");
	}
	/* the build sandbox's limits: E2B's minimums, and at most what one sandbox may have here */
	if (uint_field(body, "cpuCount", 2, 1, 8, &cpu) < 0 ||
	    uint_field(body, "memoryMB", 1024, 128, 8192, &mem) < 0) {
		json_decref(body);
		return fk_reply_error(r, 400,
		                      "validation error: cpuCount must be 1 to 8 and memoryMB 128 "
		                      "to 8192");
	}
	json_t *reply = NULL;
	char msg[300] = "";
	int rc =
	    fk_tstore_request(c->app->templates, json_string_value(name),
	                      json_object_get(body, "tags"), cpu, mem, &reply, msg, sizeof(msg));
	json_decref(body);
	if (rc < 0)
		return store_error(r, rc, msg);
	return fk_reply_json(r, 202, reply);
}

enum MHD_Result fk_control_template_build_start(fk_call *c)
{
	fk_req *r = c->req;
	json_t *body = fk_body_json(r, 0);
	char msg[300] = "";
	int rc = fk_tstore_build_start(c->app->templates, c->id, c->id2, body, msg, sizeof(msg));
	json_decref(body);
	if (rc < 0)
		return store_error(r, rc, msg);
	return fk_reply(r, 202, NULL, "", 0);
}

/* A non-negative integer query argument, dflt when absent; -1 when malformed. */
static long query_count(fk_req *r, const char *name, long dflt)
{
	char *v = fk_query(r, name), *end = NULL;
	if (!v)
		return dflt;
	long n = strtol(v, &end, 10);
	int ok = *v && end && !*end && n >= 0;
	free(v);
	return ok ? n : -1;
}

enum MHD_Result fk_control_template_build_status(fk_call *c)
{
	fk_req *r = c->req;
	long offset = query_count(r, "logsOffset", 0), limit = query_count(r, "limit", 100);
	if (offset < 0 || limit < 0 || limit > 100)
		return fk_reply_error(r, 400,
		                      "validation error: logsOffset must be >= 0 and limit "
		                      "between 0 and 100");
	char *lv = fk_query(r, "level");
	int level = lv ? fk_tstore_level(lv) : 0;
	free(lv);
	if (level < 0)
		return fk_reply_error(r, 400,
		                      "validation error: level must be debug, info, warn or error");
	if (!fk_control_uuid_ok(c->id2))
		return fk_reply_error(r, 400, "Invalid build id");
	json_t *reply = NULL;
	int rc = fk_tstore_build_status(c->app->templates, c->id, c->id2, (size_t)offset,
	                                (size_t)limit, level, &reply);
	if (rc == FK_T_NOTFOUND) /* E2B's answer for a build it does not know */
		return fk_reply_error(r, 400, "Build '%s' not found", c->id2);
	if (rc < 0)
		return store_error(r, rc, NULL);
	return fk_reply_json(r, 200, reply);
}

/* The Host the client reached us by, if it is a plain host[:port]; else 127.0.0.1. */
static const char *link_host(fk_req *r)
{
	const char *h = fk_header(r, "Host");
	if (!h || !*h || strlen(h) > 255 ||
	    strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
	        strlen(h))
		return "127.0.0.1";
	return h;
}

enum MHD_Result fk_control_template_file_link(fk_call *c)
{
	fk_req *r = c->req;
	int present = 0;
	char token[65];
	int rc = fk_tstore_file_link(c->app->templates, c->id, c->id2, &present, token);
	if (rc == FK_T_INVALID)
		return fk_reply_error(r, 400, "invalid files hash '%.80s': 64 hex digits expected",
		                      c->id2);
	if (rc == FK_T_NOTFOUND)
		return fk_reply_error(r, 404, "template '%s' not found", c->id);
	if (rc < 0)
		return store_error(r, rc, NULL);
	char *url = NULL;
	if (asprintf(&url, "%s://%s/templates/%s/files/%s?token=%s", c->app->tls ? "https" : "http",
	             link_host(r), c->id, c->id2, token) < 0)
		return fk_reply_error(r, 500, "out of memory");
	/* the link comes even when present, so the SDK's forceUpload can send the files again */
	json_t *reply = json_pack("{s:b,s:s}", "present", present, "url", url);
	free(url);
	return fk_reply_json(r, 201, reply);
}

/* ---- the upload (a PUT to the link) -------------------------------------------------------- */

typedef struct upload_state {
	fk_upload *u; /* NULL when the link was refused or after finish */
	int refused;  /* the token or template did not check out */
	int failed;   /* too large or a disk error: FK_T_FAILED, the disk is full: FK_T_NOSPACE */
} upload_state;

static void upload_sink(fk_req *r, const char *data, size_t len)
{
	upload_state *st = r->sink_state;
	int rc = st->u && !st->failed ? fk_tstore_upload_write(st->u, data, len) : FK_T_OK;
	if (rc < 0)
		st->failed = rc;
}

static void upload_free(void *p)
{
	upload_state *st = p;
	fk_tstore_upload_finish(st->u, 0);
	free(st);
}

/* "/templates/<id>/files/<hash>" → id, hash; 0 or -1. */
static int upload_path(const char *path, char *id, char *hash, size_t cap)
{
	const char *p = path;
	if (strncmp(p, "/templates/", 11))
		return -1;
	p += 11;
	size_t n = strcspn(p, "/");
	if (!n || n >= cap || strncmp(p + n, "/files/", 7))
		return -1;
	memcpy(id, p, n);
	id[n] = '\0';
	p += n + 7;
	n = strcspn(p, "/");
	if (!n || n >= cap || p[n])
		return -1;
	memcpy(hash, p, n);
	hash[n] = '\0';
	return 0;
}

void fk_control_template_upload_begin(fk_call *c)
{
	fk_req *r = c->req;
	char id[128], hash[128];
	if (upload_path(r->path, id, hash, sizeof(id)) < 0)
		return;
	upload_state *st = calloc(1, sizeof(*st));
	if (!st)
		return;
	char *token = fk_query(r, "token");
	if (fk_tstore_upload_begin(c->app->templates, id, hash, token, c->app->max_upload, &st->u) <
	    0)
		st->refused = 1;
	free(token);
	r->sink = upload_sink;
	r->sink_state = st;
	r->sink_free = upload_free;
}

int fk_control_template_upload_refused(fk_call *c)
{
	const upload_state *st = c->req->sink == upload_sink ? c->req->sink_state : NULL;
	return st && st->refused;
}

enum MHD_Result fk_control_template_file_upload(fk_call *c)
{
	fk_req *r = c->req;
	upload_state *st = r->sink == upload_sink ? r->sink_state : NULL;
	if (!st || st->refused)
		return fk_reply_error(r, 403, "the upload link is not valid");
	if (st->failed) {
		fk_tstore_upload_finish(st->u, 0); /* nothing of it is kept */
		st->u = NULL;
		if (st->failed == FK_T_NOSPACE) /* envd's 507 for a full disk */
			return fk_reply_error(
			    r, 507,
			    "not enough disk space to store the upload: the server's "
			    "state directory is full");
		return fk_reply_error(r, 413, "upload too large or not stored");
	}
	int rc = fk_tstore_upload_finish(st->u, 1);
	st->u = NULL;
	if (rc < 0)
		return fk_reply_error(r, 500, "the upload could not be stored");
	return fk_reply(r, 200, NULL, "", 0);
}

/* ---- aliases and tags ---------------------------------------------------------------------- */

enum MHD_Result fk_control_template_alias(fk_call *c)
{
	json_t *reply = NULL;
	int rc = fk_tstore_alias(c->app->templates, c->id, &reply);
	if (rc == FK_T_NOTFOUND)
		return fk_reply_error(c->req, 404, "template '%s' not found", c->id);
	if (rc < 0)
		return store_error(c->req, rc, NULL);
	return fk_reply_json(c->req, 200, reply);
}

enum MHD_Result fk_control_template_tags_assign(fk_call *c)
{
	json_t *body = fk_body_json(c->req, 0), *reply = NULL;
	json_t *target = json_object_get(body, "target");
	char msg[300] = "";
	int rc = fk_tstore_tags_assign(c->app->templates, json_string_value(target),
	                               json_object_get(body, "tags"), &reply, msg, sizeof(msg));
	json_decref(body);
	if (rc < 0)
		return store_error(c->req, rc, msg);
	return fk_reply_json(c->req, 201, reply);
}

enum MHD_Result fk_control_template_tags_remove(fk_call *c)
{
	json_t *body = fk_body_json(c->req, 0);
	char msg[300] = "";
	int rc = fk_tstore_tags_remove(c->app->templates,
	                               json_string_value(json_object_get(body, "name")),
	                               json_object_get(body, "tags"), msg, sizeof(msg));
	json_decref(body);
	if (rc < 0)
		return store_error(c->req, rc, msg);
	return fk_reply(c->req, 204, NULL, "", 0);
}

enum MHD_Result fk_control_template_tags_list(fk_call *c)
{
	json_t *reply = NULL;
	int rc = fk_tstore_tags_list(c->app->templates, c->id, &reply);
	if (rc == FK_T_NOTFOUND)
		return fk_reply_error(c->req, 404, "template '%s' not found", c->id);
	if (rc < 0)
		return store_error(c->req, rc, NULL);
	return fk_reply_json(c->req, 200, reply);
}
