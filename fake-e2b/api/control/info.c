/*
 * fake-e2b/api/control/info.c: GET /sandboxes/{id} (§1.7) and
 * GET /sandboxes/{id}/metrics (§1.12).
 */
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

/* One constant sample; the fake measures nothing. */
enum MHD_Result fk_control_metrics(fk_call *c)
{
	fk_registry *g = c->app->reg;
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	fk_sandbox_release(g, sb);
	int64_t now = fk_now_ns();
	char ts[48];
	fk_format_time(ts, sizeof(ts), now);
	json_t *m = json_pack("{s:I,s:s,s:i,s:f,s:I,s:I,s:I,s:I,s:I}", "timestampUnix",
	                      (json_int_t)(now / FK_NS), "timestamp", ts, "cpuCount", 2,
	                      "cpuUsedPct", 0.0, "memUsed", (json_int_t)0, "memTotal",
	                      (json_int_t)512 * 1024 * 1024, "memCache", (json_int_t)0, "diskUsed",
	                      (json_int_t)0, "diskTotal", (json_int_t)1024 * 1024 * 1024);
	return fk_reply_json(c->req, 200, json_pack("[o]", m));
}
