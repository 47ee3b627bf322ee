/*
 * tests/fake/server/test_sandbox_api.c: what the control plane answers about a running
 * sandbox, as E2B's API shapes it: the metrics' cpuUsedPct as the 32-bit float the spec types
 * it as (Go prints a float32 in its shortest decimal, never a double's 17 digits); its logs
 * (what the server and envd recorded about it) with E2B's parameters.
 * Needs root (sandboxes); skips otherwise.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fkserver.h"

#define KEY "e2b_sandbox_api_test_key"

static fks g_srv;

static fkr *api(const char *method, const char *path, const char *body)
{
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	return fks_req(&g_srv, method, path, h, body, body ? strlen(body) : 0);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The shortest decimal that reads back as float32 `f`, as Go prints it (%g's form). */
static void float32_text(float f, char *buf, size_t cap)
{
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, cap, "%.*g", p, (double)f);
		if ((float)strtod(buf, NULL) == f)
			break;
	}
	if (!strpbrk(buf, ".e"))
		strncat(buf, ".0", cap - strlen(buf) - 1); /* jansson's mark of a real */
}

/* Each "cpuUsedPct": value in `body` is a float32's shortest text; how many were not 0. */
static int assert_float32_texts(const char *body)
{
	int nonzero = 0;
	for (const char *p = strstr(body, "\"cpuUsedPct\":"); p;
	     p = strstr(p + 1, "\"cpuUsedPct\":")) {
		const char *v = p + strlen("\"cpuUsedPct\":");
		size_t n = strspn(v, "0123456789.eE+-");
		char got[40], want[40];
		assert_true(n > 0 && n < sizeof(got));
		memcpy(got, v, n);
		got[n] = 0;
		float f = (float)strtod(got, NULL);
		float32_text(f, want, sizeof(want));
		if (strcmp(got, want))
			fail_msg("cpuUsedPct %s is not the float32 %s", got, want);
		nonzero += f != 0;
	}
	return nonzero;
}

static void test_metrics__cpu_used_pct_is_a_float32(void **state)
{
	(void)state;
	fks_need_root();
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	/* CPU time the 5 s samples measure: a fraction with all of a double's digits */
	fks_box_sh(&g_srv, &b, "timeout 2 sh -c 'while :; do :; done'; true");
	char path[128], many[160];
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", b.id);
	snprintf(many, sizeof(many), "/sandboxes/metrics?sandbox_ids=%s", b.id);
	int busy = 0;
	for (double end = mono_s() + 30; !busy && mono_s() < end; usleep(200 * 1000)) {
		fkr *r = api("GET", path, NULL);
		assert_int_equal(r->status, 200);
		busy = assert_float32_texts(r->body);
		fkr_free(r);
	}
	assert_true(busy > 0);
	fkr *r = api("GET", many, NULL);
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->body, "\"cpuUsedPct\":"));
	assert_float32_texts(r->body);
	fkr_free(r);
	fks_box_delete(&g_srv, KEY, &b);
}

/* The messages of a logs answer's entries (`key`: "logs" or "logEntries"), joined by '|'. */
static void messages(json_t *reply, const char *key, char *out, size_t cap)
{
	json_t *logs = json_object_get(reply, key);
	assert_true(json_is_array(logs));
	out[0] = 0;
	for (size_t i = 0; i < json_array_size(logs); i++) {
		json_t *e = json_array_get(logs, i);
		assert_non_null(json_string_value(json_object_get(e, "timestamp")));
		assert_string_equal(json_string_value(json_object_get(e, "level")), "info");
		assert_true(json_is_object(json_object_get(e, "fields")));
		const char *m = json_string_value(json_object_get(e, "message"));
		assert_non_null(m);
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "|" : "", m);
	}
}

/* GET <prefix>/sandboxes/<id>/logs<query> (prefix "" or "/v2"): its JSON, which must be 200. */
static json_t *get_logs(const char *prefix, const char *id, const char *query)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/sandboxes/%s/logs%s", prefix, id, query);
	fkr *r = api("GET", path, NULL);
	if (r->status != 200)
		fail_msg("GET %s: %ld %s", path, r->status, r->body ? r->body : "");
	json_t *j = json_incref(r->json);
	fkr_free(r);
	return j;
}

/* GET /sandboxes/{id}/logs and /v2/...: what happened to it, E2B's shapes and parameters. */
static void test_logs__lifecycle_and_processes(void **state)
{
	(void)state;
	fks_need_root();
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	fks_box_sh(&g_srv, &b, "true");
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", b.id);
	fkr *r = api("POST", path, NULL);
	assert_int_equal(r->status, 204);
	fkr_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", b.id);
	r = api("POST", path, "{\"timeout\":60}");
	assert_int_equal(r->status, 201);
	fkr_free(r);

	char m[512];
	const char *v1 = "", *v2 = "/v2";
	json_t *j = get_logs(v2, b.id, ""); /* newest first */
	messages(j, "logs", m, sizeof(m));
	assert_string_equal(m, "Sandbox resumed|Sandbox paused|Process started|Sandbox started");
	json_t *proc = json_object_get(json_array_get(json_object_get(j, "logs"), 2), "fields");
	assert_string_equal(json_string_value(json_object_get(proc, "cmd")), "/bin/sh");
	assert_string_equal(json_string_value(json_object_get(proc, "logger")), "process");
	json_decref(j);
	j = get_logs(v2, b.id, "?direction=forward&limit=2");
	messages(j, "logs", m, sizeof(m));
	assert_string_equal(m, "Sandbox started|Process started");
	json_decref(j);
	j = get_logs(v2, b.id, "?search=paused");
	messages(j, "logs", m, sizeof(m));
	assert_string_equal(m, "Sandbox paused");
	json_decref(j);
	j = get_logs(v2, b.id, "?level=warn");
	messages(j, "logs", m, sizeof(m));
	assert_string_equal(m, "");
	json_decref(j);
	/* forward from a cursor far ahead: none; backward from it: all */
	j = get_logs(v2, b.id, "?direction=forward&cursor=32503680000000");
	messages(j, "logs", m, sizeof(m));
	assert_string_equal(m, "");
	json_decref(j);
	j = get_logs(v1, b.id, ""); /* oldest first, both shapes */
	messages(j, "logEntries", m, sizeof(m));
	assert_string_equal(m, "Sandbox started|Process started|Sandbox paused|Sandbox resumed");
	json_t *logs = json_object_get(j, "logs");
	assert_int_equal(json_array_size(logs), 4);
	json_t *line = json_loads(
	    json_string_value(json_object_get(json_array_get(logs, 2), "line")), 0, NULL);
	assert_string_equal(json_string_value(json_object_get(line, "message")), "Sandbox paused");
	json_decref(line);
	json_decref(j);
	j = get_logs(v1, b.id, "?limit=1&start=0");
	messages(j, "logEntries", m, sizeof(m));
	assert_string_equal(m, "Sandbox started");
	json_decref(j);
	/* E2B reads logs by id: one it never had has none */
	j = get_logs(v2, "ifk0000000000000000000", "");
	messages(j, "logs", m, sizeof(m));
	assert_string_equal(m, "");
	json_decref(j);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/logs?limit=1001", b.id);
	r = api("GET", path, NULL);
	assert_int_equal(r->status, 400);
	fkr_free(r);
	fks_box_delete(&g_srv, KEY, &b);
}

int main(int argc, char **argv)
{
	if (fks_root_init(argc, argv, KEY, &g_srv, NULL) < 0)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics__cpu_used_pct_is_a_float32),
	    cmocka_unit_test(test_logs__lifecycle_and_processes),
	};
	int rc = cmocka_run_group_tests_name("fake_sandbox_api", tests, fks_root_setup,
	                                     fks_root_teardown);
	curl_global_cleanup();
	return rc;
}
