/*
 * tests/integration/test_metrics.c: sbx_sandbox_metrics() against fake-e2b
 * (docs/sandboxes.md "Metrics"): the samples equal field by field what
 * GET /sandboxes/{id}/metrics answers for the same range, the query sent,
 * an empty range, a paused sandbox left paused, a missing one, and the
 * checks made before any request.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "metrics", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static sbx_metrics *metrics(h_ctx *h, int64_t start, int64_t end)
{
	sbx_metrics *m = NULL;
	sbx_error err = {0};
	int rc = sbx_sandbox_metrics(&m, h->p, g_id, start, end, NULL, &err);
	if (rc != 0)
		fail_msg("metrics: %d %s", rc, err.message);
	assert_non_null(m);
	return m;
}

static void test_metrics__samples_as_e2b_answers(void **state)
{
	h_ctx *h = *state;
	sbx_metrics *m = NULL;
	char path[256];

	/* a sample every 5 s while it runs: wait for two */
	for (int i = 0; i < 300; i++) {
		sbx_metrics_free(m);
		m = metrics(h, 0, 0);
		if (m->count >= 2)
			break;
		struct timespec ts = {0, 100 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_true(m->count >= 2);
	int64_t start = m->items[0].timestamp_unix, end = m->items[1].timestamp_unix;
	sbx_metrics_free(m);

	/* a closed range: the same answer for the library and for a raw GET */
	h_reset(h);
	m = metrics(h, start, end);
	json_t *log = h_reqlog(h);
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", g_id);
	json_t *e = h_find(log, "GET", path, 0);
	assert_non_null(e);
	char want[32];
	snprintf(want, sizeof(want), "%lld", (long long)start);
	assert_string_equal(h_entry_query(e, "start"), want);
	snprintf(want, sizeof(want), "%lld", (long long)end);
	assert_string_equal(h_entry_query(e, "end"), want);
	json_decref(log);

	char q[320];
	long status = 0;
	snprintf(q, sizeof(q), "%s?start=%lld&end=%lld", path, (long long)start, (long long)end);
	json_t *raw = h_http(h, "GET", q, NULL, &status, NULL);
	assert_int_equal(status, 200);
	assert_int_equal(json_array_size(raw), m->count);
	assert_true(m->count >= 1);
	for (size_t i = 0; i < m->count; i++) {
		json_t *r = json_array_get(raw, i);
		const sbx_metric *x = &m->items[i];
		assert_int_equal(x->timestamp_unix,
		                 json_integer_value(json_object_get(r, "timestampUnix")));
		assert_int_equal(x->cpu_count, json_integer_value(json_object_get(r, "cpuCount")));
		assert_true(x->cpu_used_pct == json_number_value(json_object_get(r, "cpuUsedPct")));
		assert_int_equal(x->mem_used, json_integer_value(json_object_get(r, "memUsed")));
		assert_int_equal(x->mem_total, json_integer_value(json_object_get(r, "memTotal")));
		assert_int_equal(x->mem_cache, json_integer_value(json_object_get(r, "memCache")));
		assert_int_equal(x->disk_used, json_integer_value(json_object_get(r, "diskUsed")));
		assert_int_equal(x->disk_total,
		                 json_integer_value(json_object_get(r, "diskTotal")));
		assert_true(x->cpu_count >= 1);
		assert_true(x->mem_used > 0 && x->mem_used <= x->mem_total);
		assert_true(x->disk_total > 0);
	}
	assert_true(m->items[0].timestamp_unix >= start);
	json_decref(raw);
	sbx_metrics_free(m);

	/* a range before the sandbox: no samples */
	m = metrics(h, 1000, 2000);
	assert_int_equal(m->count, 0);
	assert_null(m->items);
	sbx_metrics_free(m);
}

static void test_metrics__paused_stays_paused_missing_gone(void **state)
{
	h_ctx *h = *state;
	sbx_metrics *m = NULL;
	sbx_error err = {0};

	assert_int_equal(sbx_sandbox_suspend(h->p, g_id, NULL, &err), 0);
	m = metrics(h, 0, 0);
	assert_true(m->count >= 1); /* the samples of its running time */
	sbx_metrics_free(m);
	char *st = h_fake_state(h, g_id);
	assert_string_equal(st, "paused");
	free(st);
	assert_int_equal(sbx_sandbox_metrics(&m, h->p, "i0missing0000000000000", 0, 0, NULL, &err),
	                 SBX_EGONE);
	assert_null(m);
	h_note_err(h, &err);
}

static void test_metrics__checked_before_any_request(void **state)
{
	h_ctx *h = *state;
	sbx_metrics *m = (sbx_metrics *)1;
	sbx_error err = {0};

	h_reset(h);
	assert_int_equal(sbx_sandbox_metrics(&m, h->p, g_id, 20, 10, NULL, &err), SBX_EINVALID);
	assert_null(m);
	assert_string_equal(err.message, "metrics start is after end");
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_metrics(&m, h->p, g_id, -1, 0, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_metrics(&m, h->p, g_id, 0, 253402300800LL, NULL, &err),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_metrics(NULL, h->p, g_id, 0, 0, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_metrics(&m, h->p, "bad id", 0, 0, NULL, &err), SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics__samples_as_e2b_answers),
	    cmocka_unit_test(test_metrics__paused_stays_paused_missing_gone),
	    cmocka_unit_test(test_metrics__checked_before_any_request),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
