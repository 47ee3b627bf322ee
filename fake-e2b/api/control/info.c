/*
 * fake-e2b/api/control/info.c: GET /sandboxes/{id} (docs/protocol.md "Get") and
 * GET /sandboxes/{id}/metrics (docs/internals/wire.md "Control plane").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* `x` as the float32 the spec types cpuUsedPct as, in the shortest decimal that reads back as
 * that float32 (what Go's encoding/json prints for a float32): the double nearest to that
 * decimal, which reply_metrics prints with 9 significant digits, trailing zeros dropped. */
static double float32_value(double x)
{
	float f = (float)x;
	char buf[32];
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof(buf), "%.*g", p, (double)f);
		if ((float)strtod(buf, NULL) == f)
			break;
	}
	return strtod(buf, NULL);
}

/* A metrics answer: its reals (cpuUsedPct, float32_value's) printed with 9 significant digits,
 * a float32's most, rather than a double's 17. */
static enum MHD_Result reply_metrics(fk_call *c, json_t *steal)
{
	char *s = steal ? json_dumps(steal, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	json_decref(steal);
	if (!s)
		return fk_reply_error(c->req, 500, "out of memory");
	enum MHD_Result ret = fk_reply(c->req, 200, "application/json", s, strlen(s));
	free(s);
	return ret;
}

/* SandboxMetric of a sample (or a bucket of them) stamped `ts_ns`. */
static json_t *metric_json(const fk_metric *m, int64_t ts_ns)
{
	char ts[48];
	fk_format_time(ts, sizeof(ts), ts_ns);
	return json_pack("{s:I,s:s,s:i,s:f,s:I,s:I,s:I,s:I,s:I}", "timestampUnix",
	                 (json_int_t)(ts_ns / FK_NS), "timestamp", ts, "cpuCount",
	                 (int)m->cpu_count, "cpuUsedPct", float32_value(m->cpu_pct), "memUsed",
	                 (json_int_t)m->mem_used, "memTotal", (json_int_t)m->mem_total, "memCache",
	                 (json_int_t)m->mem_cache, "diskUsed", (json_int_t)m->disk_used,
	                 "diskTotal", (json_int_t)m->disk_total);
}

#define MAX_OF(a, b) ((a) > (b) ? (a) : (b))

/* GET /sandboxes/{id}/metrics?start=&end= (unix seconds; defaults: the sandbox's start, now).
 * As E2B: start after end is a 400; the samples (every 5 s while it runs, metrics.c) taken
 * from start to end, grouped into buckets of the range's step (5 s under an hour, ...), each
 * bucket stamped at its start with the largest value of each field in it (E2B's query:
 * toStartOfInterval, maxIf), oldest first; a range without samples is []. */
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
	if (!hs)
		start = born;
	if (!he)
		end = now; /* a client's "now" may round up to the next second too */
	if (start > end) {
		fk_sandbox_release(g, sb);
		return fk_reply_error(c->req, 400, "Invalid time range for metrics");
	}
	int64_t step = metrics_step(end - start);
	fk_metric *v = NULL;
	/* E2B compares the samples' times with whole seconds: up to `end` itself */
	long n = fk_sandbox_metrics(g, sb, start * FK_NS, end * FK_NS, &v);
	fk_sandbox_release(g, sb);
	json_t *arr = n >= 0 ? json_array() : NULL;
	for (long i = 0; arr && i < n;) {
		int64_t bucket = v[i].ts_ns / FK_NS - (v[i].ts_ns / FK_NS) % step;
		fk_metric m = v[i];
		for (i++; i < n && v[i].ts_ns / FK_NS - (v[i].ts_ns / FK_NS) % step == bucket;
		     i++) {
			m.cpu_count = MAX_OF(m.cpu_count, v[i].cpu_count);
			m.cpu_pct = MAX_OF(m.cpu_pct, v[i].cpu_pct);
			m.mem_used = MAX_OF(m.mem_used, v[i].mem_used);
			m.mem_total = MAX_OF(m.mem_total, v[i].mem_total);
			m.mem_cache = MAX_OF(m.mem_cache, v[i].mem_cache);
			m.disk_used = MAX_OF(m.disk_used, v[i].disk_used);
			m.disk_total = MAX_OF(m.disk_total, v[i].disk_total);
		}
		json_array_append_new(arr, metric_json(&m, bucket * FK_NS));
	}
	free(v);
	if (!arr)
		return fk_reply_error(c->req, 500, "out of memory");
	return reply_metrics(c, arr);
}

/* GET /sandboxes/metrics?sandbox_ids=a,b: {"sandboxes": {id: the latest sample}} of the
 * listed sandboxes that have one (E2B: argMax by timestamp); at most 100 ids, no repeats. */
enum MHD_Result fk_control_metrics_many(fk_call *c)
{
	fk_registry *g = c->app->reg;
	char *ids = fk_query_joined(c->req, "sandbox_ids");
	if (!ids || !*ids) {
		free(ids);
		return fk_reply_error(c->req, 400,
		                      "parameter \"sandbox_ids\" in query has an error: value is "
		                      "required but missing");
	}
	json_t *seen = json_object(), *out = json_object();
	const char *why = NULL;
	size_t count = 0;
	char *save = NULL;
	for (char *id = strtok_r(ids, ",", &save); id && !why && seen && out;
	     id = strtok_r(NULL, ",", &save)) {
		char short_id[FK_ID_LEN + 1];
		if (++count > 100)
			why = "parameter \"sandbox_ids\" in query has an error: at most 100 items";
		else if (json_object_get(seen, id))
			why = "parameter \"sandbox_ids\" in query has an error: duplicate items";
		else if (fk_control_short_id(id, short_id, sizeof(short_id)) == 0) {
			json_object_set_new(seen, id, json_true());
			fk_sandbox *sb = fk_registry_acquire(g, short_id);
			fk_metric *v = NULL;
			long n = sb ? fk_sandbox_metrics(g, sb, 0, INT64_MAX, &v) : 0;
			if (n > 0)
				json_object_set_new(out, short_id,
				                    metric_json(&v[n - 1], v[n - 1].ts_ns));
			free(v);
			fk_sandbox_release(g, sb);
		} else {
			json_object_set_new(seen, id, json_true());
		}
	}
	free(ids);
	json_decref(seen);
	if (why) {
		json_decref(out);
		return fk_reply_error(c->req, 400, "%s", why);
	}
	json_t *reply = out ? json_pack("{s:o}", "sandboxes", out) : NULL;
	return reply ? reply_metrics(c, reply) : fk_reply_error(c->req, 500, "out of memory");
}
