/*
 * e2b/provider_metrics.c: sandbox/metrics.h for E2B: GET
 * /sandboxes/{id}/metrics?start=&end= (unix seconds) answers an array of
 * SandboxMetric (e2b-dev/infra packages/api/internal/handlers/
 * sandbox_metrics.go; the SDK's getMetrics).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "e2b/names.h"
#include "e2b/provider_int.h"
#include "util/alloc.h"
#include "util/err.h"

/* A non-negative integer field (absent: 0). false when it has another type or sign. */
static bool get_u64(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static int parse_metric(sbx_metric *m, json_t *o)
{
	json_t *ts = json_object_get(o, "timestampUnix"), *pct = json_object_get(o, "cpuUsedPct");
	uint64_t cpus;

	if (!json_is_object(o) || !json_is_integer(ts) || json_integer_value(ts) < 0 ||
	    !get_u64(o, "cpuCount", &cpus) || cpus > UINT32_MAX ||
	    (pct && !json_is_null(pct) && !json_is_number(pct)) ||
	    !get_u64(o, "memUsed", &m->mem_used) || !get_u64(o, "memTotal", &m->mem_total) ||
	    !get_u64(o, "memCache", &m->mem_cache) || !get_u64(o, "diskUsed", &m->disk_used) ||
	    !get_u64(o, "diskTotal", &m->disk_total))
		return -1;
	m->timestamp_unix = json_integer_value(ts);
	m->cpu_count = (uint32_t)cpus;
	m->cpu_used_pct = pct && json_is_number(pct) ? json_number_value(pct) : 0;
	return isfinite(m->cpu_used_pct) ? 0 : -1;
}

int sbx__e2b_metrics(void *impl, sbx_metrics **out, const char *id, int64_t start, int64_t end,
                     sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_e2b_reply reply = {0};
	sbx_error local = {0};
	sbx_metrics *m = NULL;
	char path[256], query[64];
	size_t n, i;
	json_t *v;
	int error;

	*out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_sandbox_id(id, err)) < 0)
		return error;
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", id); /* ids are <= 128 bytes */
	query[0] = '\0';
	if (start)
		snprintf(query, sizeof(query), "start=%" PRId64, start);
	if (end)
		snprintf(query + strlen(query), sizeof(query) - strlen(query), "%send=%" PRId64,
		         start ? "&" : "", end);
	error = sbx__e2b_api_call(&reply, &p->api, "GET", path, query[0] ? query : NULL, NULL, 0,
	                          sig, &local);
	if (error == SBX_EHTTP && reply.not_found) {
		error = sbx__error_set_http(err, SBX_EGONE, 404, "404",
		                            "E2B sandbox %s does not exist", id);
		goto done;
	}
	if (error < 0) {
		sbx__e2b_pass_error(err, &local);
		goto done;
	}
	if (!json_is_array(reply.json)) {
		error = sbx__error_set(err, SBX_EPROTOCOL,
		                       "E2B GET /sandboxes/{id}/metrics returned no array");
		goto done;
	}
	if ((n = json_array_size(reply.json)) > SBX_METRICS_MAX) {
		error = sbx__error_set(err, SBX_ETOOLARGE,
		                       "E2B GET /sandboxes/{id}/metrics returned over %d samples",
		                       SBX_METRICS_MAX);
		goto done;
	}
	if (!(m = sbx__calloc(1, sizeof(*m))) ||
	    (n && !(m->items = sbx__calloc(n, sizeof(*m->items))))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	json_array_foreach(reply.json, i, v)
	{
		if (parse_metric(&m->items[i], v) < 0) {
			error =
			    sbx__error_set(err, SBX_EPROTOCOL,
			                   "E2B GET /sandboxes/{id}/metrics returned a malformed "
			                   "sample (#%zu)",
			                   i);
			goto done;
		}
	}
	m->count = n;
	*out = m;
	m = NULL;
done:
	sbx_metrics_free(m);
	sbx__e2b_reply_dispose(&reply);
	return error;
}
