/*
 * fake-e2b/api/control/info.c: GET /sandboxes/{id} (§1.7) and
 * GET /sandboxes/{id}/metrics (§1.12).
 */
#include <stdlib.h>

#include "clock.h"
#include "control.h"

enum MHD_Result fk_control_get(fk_call *c)
{
	fk_registry *g = c->app->reg;
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	fk_registry_lock(g);
	json_t *j = sb->deleted ? NULL : fk_sandbox_detail_json(sb);
	fk_registry_unlock(g);
	fk_sandbox_release(g, sb);
	if (!j)
		return fk_control_not_found(c);
	return fk_reply_json(c->req, 200, j);
}

/* E2B's step for a range (clickhouse utils CalculateStep), in seconds. */
static int64_t metrics_step(int64_t range_s)
{
	return range_s < 3600            ? 5
	       : range_s < 6 * 3600      ? 30
	       : range_s < 12 * 3600     ? 60
	       : range_s < 24 * 3600     ? 120
	       : range_s < 7 * 24 * 3600 ? 300
	                                 : 900;
}

/* `start`/`end` query parameters: unix seconds. 1 and *out when present and valid, 0 when
 * absent, -1 when not an integer. */
static int unix_param(fk_req *r, const char *name, int64_t *out)
{
	char *v = fk_query(r, name), *end = NULL;
	if (!v)
		return 0;
	long long x = strtoll(v, &end, 10);
	int ok = *v && !*end && x >= 0 && x < 253402300800LL; /* before year 10000 */
	free(v);
	if (!ok)
		return -1;
	*out = x;
	return 1;
}

/* GET /sandboxes/{id}/metrics?start=&end= (unix seconds; defaults: the sandbox's start, now).
 * As E2B: start after end is a 400; one sample per step-sized bucket (5 s under an hour) of
 * the range that the sandbox lived in, timestamped at the bucket's start, so a range before the
 * sandbox existed is empty. The fake measures nothing: every sample has the sandbox's size
 * (2 CPUs, 512 MiB, 1 GiB of disk) and zero use. */
enum MHD_Result fk_control_metrics(fk_call *c)
{
	fk_registry *g = c->app->reg;
	int64_t start = 0, end = 0, now = (fk_now_ns() + FK_NS - 1) / FK_NS; /* ceil: see below */
	int hs = unix_param(c->req, "start", &start), he = unix_param(c->req, "end", &end);
	if (hs < 0 || he < 0)
		return fk_reply_error(c->req, 400, "Invalid time range for metrics");
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	fk_registry_lock(g);
	int64_t born = sb->started_ns / FK_NS;
	fk_registry_unlock(g);
	fk_sandbox_release(g, sb);
	if (!hs)
		start = born;
	if (!he)
		end = now;
	if (start > end)
		return fk_reply_error(c->req, 400, "Invalid time range for metrics");
	int64_t step = metrics_step(end - start);
	/* a client's "now" may round up to the next second (the SDK rounds ms to s) */
	int64_t from = (start > born ? start : born), to = end < now ? end : now;
	json_t *arr = json_array();
	for (int64_t t = from - from % step; arr && t <= to; t += step) {
		char ts[48];
		fk_format_time(ts, sizeof(ts), t * FK_NS);
		json_array_append_new(arr, json_pack("{s:I,s:s,s:i,s:f,s:I,s:I,s:I,s:I,s:I}",
		                                     "timestampUnix", (json_int_t)t, "timestamp",
		                                     ts, "cpuCount", 2, "cpuUsedPct", 0.0,
		                                     "memUsed", (json_int_t)0, "memTotal",
		                                     (json_int_t)512 * 1024 * 1024, "memCache",
		                                     (json_int_t)0, "diskUsed", (json_int_t)0,
		                                     "diskTotal", (json_int_t)1024 * 1024 * 1024));
	}
	if (!arr)
		return fk_reply_error(c->req, 500, "out of memory");
	return fk_reply_json(c->req, 200, arr);
}
