/*
 * fake-e2b/api/control/snapshots.c: snapshots and forks (infra handlers
 * snapshot_template_create.go, snapshot_template_list.go, sandbox_fork.go):
 * POST /sandboxes/{id}/snapshots, GET /snapshots, DELETE /templates/{templateID},
 * POST /sandboxes/{id}/fork. The files are the sandbox's, copied while it is frozen
 * (tstore/snapshots.c); processes and memory are not kept: a sandbox made from a
 * snapshot or a fork boots anew.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

#define FK_MAX_FORKS 100

typedef struct take_ctx {
	fk_registry *g;
	fk_sandbox *sb;
} take_ctx;

/* The store's callback: the sandbox's files into layer_dir, under its op_lock. */
static int take_files(void *ud, const char *layer_dir, fk_err *err)
{
	take_ctx *t = ud;
	int rc = fk_registry_snapshot(t->g, t->sb, layer_dir, err);
	return rc == FK_LC_OK ? 0 : rc == FK_LC_GONE ? -1 : -2;
}

/* The sandbox's templateID (copied under the lock), NULL when it is gone. */
static char *template_of(fk_registry *g, fk_sandbox *sb)
{
	fk_registry_lock(g);
	char *t = sb->deleted ? NULL : strdup(sb->template_id);
	fk_registry_unlock(g);
	return t;
}

enum MHD_Result fk_control_snapshot_create(fk_call *c)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	json_t *body = fk_body_json(r, 1);
	json_t *name = json_object_get(body, "name");
	if (!json_is_object(body) || (name && !json_is_null(name) && !json_is_string(name))) {
		json_decref(body);
		return fk_reply_error(r, 400,
		                      "Error when parsing request: the body must be "
		                      "{\"name\"?: string}");
	}
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	char *tpl = sb ? template_of(g, sb) : NULL;
	if (!tpl) {
		fk_sandbox_release(g, sb);
		json_decref(body);
		return fk_control_not_found(c);
	}
	take_ctx t = {g, sb};
	json_t *reply = NULL;
	char msg[300] = "";
	int rc = fk_tstore_snapshot(c->app->templates, sb->id, tpl,
	                            json_is_string(name) ? json_string_value(name) : NULL,
	                            take_files, &t, &reply, msg, sizeof(msg));
	free(tpl);
	fk_sandbox_release(g, sb);
	json_decref(body);
	switch (rc) {
	case FK_T_OK:
		return fk_reply_json(r, 201, reply);
	case FK_T_INVALID:
		return fk_reply_error(r, 400, "%s", msg);
	case FK_T_NOTFOUND:
		return fk_control_not_found(c);
	case FK_T_NOSPACE: /* E2B's shape for a full disk: envd's 507 */
		return fk_reply_error(r, 507, "%s", msg);
	default:
		return fk_reply_error(r, 500, "%s", msg);
	}
}

enum MHD_Result fk_control_snapshot_list(fk_call *c)
{
	fk_req *r = c->req;
	char *sid = fk_query(r, "sandboxID"), *name = fk_query(r, "name");
	char *limit = fk_query(r, "limit"), *next = fk_query(r, "nextToken");
	char short_id[128];
	const char *why = NULL;
	long lim = 100, first = 0;
	if (sid && fk_control_short_id(sid, short_id, sizeof(short_id)) < 0)
		why = "Invalid sandbox ID";
	if (!why && limit) {
		char *end;
		lim = strtol(limit, &end, 10);
		if (!*limit || *end || lim < 1 || lim > 100)
			why = "validation error: limit must be between 1 and 100";
	}
	if (!why && next && *next) { /* our token: the index of the page's first item */
		char *end;
		first = strtol(next, &end, 10);
		if (*end || first < 0)
			why = "Invalid next token";
	}
	json_t *all = NULL;
	if (!why && fk_tstore_snapshots(c->app->templates, sid ? short_id : NULL, name, &all) < 0)
		why = "";
	free(sid);
	free(name);
	free(limit);
	free(next);
	if (why)
		return *why ? fk_reply_error(r, 400, "%s", why)
		            : fk_reply_error(r, 500, "Error listing snapshot templates");
	size_t n = json_array_size(all), last = (size_t)first + (size_t)lim;
	json_t *page = json_array();
	for (size_t i = (size_t)first; page && i < n && i < last; i++)
		json_array_append(page, json_array_get(all, i));
	json_decref(all);
	char *text = page ? json_dumps(page, JSON_COMPACT) : NULL;
	json_decref(page);
	if (!text)
		return fk_reply_error(r, 500, "out of memory");
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return fk_reply_error(r, 500, "out of memory");
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (last < n) {
		char tok[24];
		snprintf(tok, sizeof(tok), "%zu", last);
		MHD_add_response_header(resp, "X-Next-Token", tok);
	}
	return fk_reply_response(r, 200, resp);
}

typedef struct in_use {
	const char *template_id;
	int running, paused;
} in_use;

static void count_use(fk_sandbox *sb, void *ud)
{
	in_use *u = ud;
	if (!sb->deleted && sb->template_id && !strcmp(sb->template_id, u->template_id)) {
		if (sb->state == FK_SB_RUNNING)
			u->running++;
		else
			u->paused++;
	}
}

/* DELETE /templates/{templateID}: as E2B (infra handlers/template_delete.go), refused (400)
 * while a sandbox's base template is this one: first a running one ("running"), then a paused
 * one ("paused": ExistsTemplateSnapshots, a snapshot row of base_env_id = the template). A
 * sandbox's base template is the template it was created from (handlers/sandbox_create.go
 * BaseTemplateID: env.TemplateID), a snapshot when created from one, and a fork keeps its
 * source's (sandbox_resume.go snap.BaseEnvID): so a snapshot is held by the sandboxes created
 * from it, and the template the snapshotted sandbox came from is not. */
enum MHD_Result fk_control_template_delete(fk_call *c)
{
	char msg[300] = "", id[21];
	int rc = fk_tstore_template_id(c->app->templates, c->id, id);
	if (rc == FK_T_OK) {
		in_use u = {id, 0, 0};
		fk_registry_foreach(c->app->reg, count_use, &u);
		if (u.running || u.paused)
			return fk_reply_error(c->req, 400,
			                      "cannot delete template '%s' because there are %s "
			                      "sandboxes using it",
			                      id, u.running ? "running" : "paused");
	}
	switch (fk_tstore_delete(c->app->templates, c->id, msg, sizeof(msg))) {
	case FK_T_OK:
		return fk_reply(c->req, 204, NULL, NULL, 0);
	case FK_T_NOTFOUND:
		return fk_reply_error(c->req, 404, "%s", msg);
	case FK_T_CONFLICT:
		return fk_reply_error(c->req, 409, "%s", msg);
	case FK_T_FORBIDDEN:
		return fk_reply_error(c->req, 403, "%s", msg);
	default:
		return fk_reply_error(c->req, 500, "%s", msg);
	}
}

/* The create body a fork is made from: what the source was created with (metadata, envVars,
 * network, internet access, lifecycle). */
static json_t *fork_body(fk_registry *g, fk_sandbox *sb)
{
	fk_registry_lock(g);
	json_t *b =
	    json_pack("{s:s,s:O,s:b,s:b,s:{s:b}}", "templateID", sb->template_id, "metadata",
	              sb->metadata, "autoPause", sb->auto_pause, "autoPauseMemory",
	              sb->auto_pause_memory, "autoResume", "enabled", sb->auto_resume);
	if (b && sb->env_vars)
		json_object_set_new(b, "envVars", json_deep_copy(sb->env_vars));
	if (b && sb->network)
		json_object_set_new(b, "network", json_deep_copy(sb->network));
	if (b && sb->allow_internet)
		json_object_set_new(b, "allow_internet_access", json_deep_copy(sb->allow_internet));
	json_t *copy = b ? json_deep_copy(b) : NULL; /* no reference into sb's objects */
	json_decref(b); /* under the lock: sb->metadata's count is not atomic */
	fk_registry_unlock(g);
	return copy;
}

enum MHD_Result fk_control_fork(fk_call *c)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	json_t *body = fk_body_json(r, 1);
	long timeout = 15, count = 1;
	const char *why = json_is_object(body) ? NULL : "Error when parsing request: not an object";
	if (!why)
		why = fk_control_timeout_field(body, "timeout", 15, 0, &timeout);
	json_t *cnt = json_object_get(body, "count");
	if (!why && cnt && !json_is_null(cnt)) {
		if (!json_is_integer(cnt))
			why = "Error when parsing request: count must be an integer";
		else
			count = (long)json_integer_value(cnt);
	}
	if (!why && count < 1)
		why = "Count must be at least 1";
	if (!why && count > FK_MAX_FORKS)
		why = "Count cannot be greater than 100";
	json_decref(body);
	if (why)
		return fk_reply_error(r, 400, "%s", why);
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	char *tpl = sb ? template_of(g, sb) : NULL;
	json_t *create = tpl ? fork_body(g, sb) : NULL;
	fk_tboot boot;
	fk_err err = {0};
	take_ctx t = {g, sb};
	int rc = create ? fk_tstore_fork_layer(c->app->templates, tpl, take_files, &t, &boot, &err)
	         : tpl  ? -2
	                : -1;
	free(tpl);
	fk_sandbox_release(g, sb);
	if (rc < 0) {
		json_decref(create);
		if (rc == -1)
			return fk_control_not_found(c);
		return fk_reply_error(r, err.code == FK_ENOSPC ? 507 : 500,
		                      "Error forking sandbox: %s", err.message);
	}
	/* each fork succeeds or fails on its own; the results are in request order */
	json_t *results = json_array();
	for (long i = 0; results && i < count; i++) {
		unsigned status = 0;
		char msg[300];
		json_t *s = fk_control_start_sandbox(c, create, 1, timeout, &boot, &status, msg,
		                                     sizeof(msg));
		json_array_append_new(results, s ? json_pack("{s:o}", "sandbox", s)
		                                 : json_pack("{s:{s:i,s:s}}", "error", "code",
		                                             (int)status, "message", msg));
	}
	fk_tstore_fork_layer_drop(&boot);
	json_decref(create);
	if (!results)
		return fk_reply_error(r, 500, "out of memory");
	return fk_reply_json(r, 201, results);
}
