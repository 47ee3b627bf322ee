/*
 * fake-e2b/api/control/template_info.c: what E2B's API tells of templates beyond building them
 * (e2b-dev/infra templates_list.go, template_get.go, template_update.go,
 * template_build_logs.go): GET /templates, GET /templates/{templateID} with its builds,
 * PATCH /templates/{templateID} and /v2/templates/{templateID} (public), and a build's logs
 * (GET /templates/{templateID}/builds/{buildID}/logs). The store is tstore/builds.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

/* GET /templates?teamID=: fake-e2b has one team (its one API key), FK_TEAM_ID. */
enum MHD_Result fk_control_template_list(fk_call *c)
{
	char *team = fk_query(c->req, "teamID");
	int mismatch = team && strcmp(team, FK_TEAM_ID) != 0;
	free(team);
	if (mismatch)
		return fk_reply_error(c->req, 400, "Team ID param mismatch with the API key");
	json_t *reply = NULL;
	if (fk_tstore_list(c->app->templates, &reply) < 0)
		return fk_reply_error(c->req, 500, "Error when getting templates");
	return fk_reply_json(c->req, 200, reply);
}

/* An integer query parameter within [min, max]: 1 and *out when present, 0 when absent, -1
 * when malformed or out of range. */
static int int_param(fk_req *r, const char *name, long long min, long long max, long long *out)
{
	char *v = fk_query(r, name), *end = NULL;
	if (!v)
		return 0;
	long long x = strtoll(v, &end, 10);
	int ok = *v && !*end && x >= min && x <= max;
	free(v);
	if (!ok)
		return -1;
	*out = x;
	return 1;
}

/* GET /templates/{templateID}?limit=&nextToken= */
enum MHD_Result fk_control_template_get(fk_call *c)
{
	fk_req *r = c->req;
	long long limit = 100;
	if (int_param(r, "limit", 1, 100, &limit) < 0)
		return fk_reply_error(
		    r, 400,
		    "parameter \"limit\" in query has an error: an integer from 1 "
		    "to 100 is expected");
	fk_tcursor after, next;
	char *tok = fk_query(r, "nextToken");
	int bad = tok && *tok && fk_control_cursor_parse(tok, &after.ns, after.id, 36) < 0;
	int have = tok && *tok && !bad;
	free(tok);
	if (bad)
		return fk_reply_error(r, 400, "Invalid next token");
	json_t *reply = NULL;
	int rc = fk_tstore_get(c->app->templates, c->id, have ? &after : NULL, (size_t)limit,
	                       &reply, &next);
	if (rc == FK_T_NOTFOUND)
		return fk_reply_error(r, 404, "Template %s not found", c->id);
	if (rc == FK_T_FORBIDDEN)
		return fk_reply_error(r, 403, "You don't have access to this sandbox template (%s)",
		                      c->id);
	if (rc < 0)
		return fk_reply_error(r, 500, "Error when getting template");
	char *body = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	char *cursor = next.id[0] ? fk_control_cursor_make(next.ns, next.id) : NULL;
	struct MHD_Response *resp =
	    body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
	         : NULL;
	if (!resp || (next.id[0] && !cursor)) {
		if (resp)
			MHD_destroy_response(resp);
		else
			free(body);
		free(cursor);
		return fk_reply_error(r, 500, "out of memory");
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (cursor)
		MHD_add_response_header(resp, "X-Next-Token", cursor);
	free(cursor);
	return fk_reply_response(r, 200, resp);
}

/* PATCH /templates/{id} (v1: 200 `null`) and /v2/templates/{id} (200 {names}). */
static enum MHD_Result update(fk_call *c, int v2)
{
	fk_req *r = c->req;
	json_t *body = fk_body_json(r, 1);
	json_t *pub = json_object_get(body, "public");
	if (!json_is_object(body) || (pub && !json_is_boolean(pub))) {
		json_decref(body);
		return fk_reply_error(
		    r, 400, "Invalid request body: the body must be {\"public\"?: boolean}");
	}
	int is_public = pub ? json_is_true(pub) : -1;
	json_decref(body);
	json_t *names = NULL;
	char msg[300] = "";
	int rc = fk_tstore_update(c->app->templates, c->id, is_public, &names, msg, sizeof(msg));
	if (rc < 0)
		return fk_reply_error(r,
		                      rc == FK_T_NOTFOUND    ? 404
		                      : rc == FK_T_FORBIDDEN ? 403
		                                             : 500,
		                      "%s", msg);
	if (!v2) {
		json_decref(names);
		return fk_reply(r, 200, "application/json", "null", 4);
	}
	json_t *reply = json_pack("{s:o}", "names", names);
	return reply ? fk_reply_json(r, 200, reply) : fk_reply_error(r, 500, "out of memory");
}

enum MHD_Result fk_control_template_update(fk_call *c)
{
	return update(c, 0);
}

enum MHD_Result fk_control_template_update_v2(fk_call *c)
{
	return update(c, 1);
}

/* An enum query parameter: its index in `values`, -2 when absent, -1 when another value. */
static int enum_param(fk_req *r, const char *name, const char *const *values, int n)
{
	char *v = fk_query(r, name);
	if (!v)
		return -2;
	int found = -1;
	for (int i = 0; i < n && found < 0; i++)
		if (!strcmp(v, values[i]))
			found = i;
	free(v);
	return found;
}

/* GET /templates/{id}/builds/{buildID}/logs?cursor=&limit=&direction=&level=&source= */
enum MHD_Result fk_control_template_build_logs(fk_call *c)
{
	fk_req *r = c->req;
	static const char *const directions[] = {"forward", "backward"};
	static const char *const levels[] = {"debug", "info", "warn", "error"};
	static const char *const sources[] = {"temporary", "persistent"};
	long long cursor = -1, limit = 100;
	int dir = enum_param(r, "direction", directions, 2);
	int level = enum_param(r, "level", levels, 4);
	const char *bad = int_param(r, "cursor", 0, INT64_MAX, &cursor) < 0 ? "cursor"
	                  : int_param(r, "limit", 0, 100, &limit) < 0       ? "limit"
	                  : dir == -1                                       ? "direction"
	                  : level == -1                                     ? "level"
	                  : enum_param(r, "source", sources, 2) == -1       ? "source"
	                                                                    : NULL;
	if (bad)
		return fk_reply_error(r, 400,
		                      "parameter \"%s\" in query has an error: value is not "
		                      "valid",
		                      bad);
	if (!fk_control_uuid_ok(c->id2))
		return fk_reply_error(r, 400, "Invalid build id");
	json_t *reply = NULL;
	int rc = fk_tstore_build_logs(c->app->templates, c->id, c->id2, cursor, dir == 1,
	                              level < 0 ? 0 : level, (size_t)limit, &reply);
	if (rc == FK_T_NOTFOUND)
		return fk_reply_error(r, 400, "Build '%s' not found", c->id2);
	if (rc < 0)
		return fk_reply_error(r, 500, "Error when getting template");
	return fk_reply_json(r, 200, reply);
}
