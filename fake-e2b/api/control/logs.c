/*
 * fake-e2b/api/control/logs.c: a sandbox's logs (infra handlers/sandbox_logs.go,
 * clusters/resources.go LogQueryWindow): GET /sandboxes/{id}/logs?start=&limit= (deprecated:
 * {"logs": [SandboxLog], "logEntries": [SandboxLogEntry]}, oldest first) and
 * GET /v2/sandboxes/{id}/logs?cursor=&limit=&direction=&level=&search= ({"logs":
 * [SandboxLogEntry]}, newest first unless direction=forward). The entries: registry/sblogs.c.
 * As E2B, which reads them from its log store by id, a deleted sandbox's stay readable (the last
 * FK_SBLOGS_GONE) and an unknown sandbox has none (200).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "control.h"

#define LOGS_OLDEST_MS (7LL * 24 * 3600 * 1000) /* E2B's retention: 7 days */

/* An integer query parameter: 0 absent, 1 set in [min, max], -1 otherwise. */
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

static enum MHD_Result bad_param(fk_req *r, const char *name)
{
	return fk_reply_error(r, 400, "parameter \"%s\" in query has an error: value is not valid",
	                      name);
}

static enum MHD_Result logs_reply(fk_call *c, const fk_sblog_query *q, int v2)
{
	json_t *entries = NULL, *lines = NULL;
	int rc = fk_sandbox_logs(c->app->reg, c->id, q, &entries, v2 ? NULL : &lines);
	if (rc < 0)
		return fk_reply_error(c->req, 500, "Failed to fetch sandbox logs");
	json_t *reply = v2 ? json_pack("{s:o}", "logs", entries)
	                   : json_pack("{s:o,s:o}", "logs", lines, "logEntries", entries);
	return reply ? fk_reply_json(c->req, 200, reply)
	             : fk_reply_error(c->req, 500, "out of memory");
}

enum MHD_Result fk_control_sandbox_logs(fk_call *c)
{
	long long start = -1, limit = 1000;
	if (int_param(c->req, "start", 0, INT64_MAX, &start) < 0)
		return bad_param(c->req, "start");
	if (int_param(c->req, "limit", 0, INT32_MAX, &limit) < 0)
		return bad_param(c->req, "limit");
	int64_t now_ms = fk_now_ns() / 1000000;
	fk_sblog_query q = {.start_ms = start >= 0 ? start : now_ms - LOGS_OLDEST_MS,
	                    .end_ms = now_ms,
	                    .limit = (size_t)limit};
	return logs_reply(c, &q, 0);
}

enum MHD_Result fk_control_sandbox_logs_v2(fk_call *c)
{
	fk_req *r = c->req;
	static const char *const directions[] = {"forward", "backward"};
	static const char *const levels[] = {"debug", "info", "warn", "error"};
	long long cursor = -1, limit = 1000;
	int dir = enum_param(r, "direction", directions, 2);
	int level = enum_param(r, "level", levels, 4);
	if (int_param(r, "cursor", 0, INT64_MAX, &cursor) < 0)
		return bad_param(r, "cursor");
	if (int_param(r, "limit", 0, 1000, &limit) < 0)
		return bad_param(r, "limit");
	if (dir == -1)
		return bad_param(r, "direction");
	if (level == -1)
		return bad_param(r, "level");
	char *search = fk_query(r, "search");
	if (search && strlen(search) > 256) {
		free(search);
		return bad_param(r, "search");
	}
	int backward = dir != 0; /* E2B's default: backward */
	int64_t now_ms = fk_now_ns() / 1000000, oldest = now_ms - LOGS_OLDEST_MS;
	int64_t start = oldest, end = now_ms;
	if (cursor >= 0 && !backward) {
		start = cursor;
		end = cursor > INT64_MAX - LOGS_OLDEST_MS ? INT64_MAX : cursor + LOGS_OLDEST_MS;
	} else if (cursor >= 0) {
		end = cursor - 1; /* up to the cursor, not at it (the page before it) */
		start = end - LOGS_OLDEST_MS;
	}
	if (start < oldest)
		start = oldest;
	if (end < oldest)
		end = oldest;
	fk_sblog_query q = {.start_ms = start,
	                    .end_ms = end,
	                    .limit = (size_t)limit,
	                    .backward = backward,
	                    .min_level = level < 0 ? 0 : level,
	                    .search = search && *search ? search : NULL};
	enum MHD_Result ret = logs_reply(c, &q, 1);
	free(search);
	return ret;
}
