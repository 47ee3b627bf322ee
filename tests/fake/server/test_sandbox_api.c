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
		assert_non_null(json_string_value(json_object_get(e, "level")));
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

/* The messages of GET /v2/sandboxes/<id>/logs<query>. */
static void v2_messages(const char *id, const char *query, char *out, size_t cap)
{
	json_t *j = get_logs("/v2", id, query);
	messages(j, "logs", out, cap);
	json_decref(j);
}

/* ms since the epoch of an RFC 3339 UTC timestamp ("2026-12-01T23:50:01.123456789Z"). */
static int64_t ts_ms(const char *ts)
{
	struct tm tm = {0};
	const char *rest = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
	assert_non_null(rest);
	int64_t ms = (int64_t)timegm(&tm) * 1000;
	if (*rest == '.')
		ms += (int64_t)(strtod(rest, NULL) * 1000);
	return ms;
}

/* What every line of sandbox `id` carries (E2B's logs pipeline), plus `own` (stolen). */
static json_t *with_common(json_t *own, const char *id, const char *tpl, int control)
{
	json_object_set_new(own, "buildID", json_string("unknown"));
	json_object_set_new(own, "category", json_string("default"));
	json_object_set_new(own, "source_type", json_string("http_server"));
	json_object_set_new(own, "envID", json_string(tpl));
	json_object_set_new(own, "instanceID", json_string(id));
	json_object_set_new(own, "sandboxID", json_string(id));
	json_object_set_new(own, "teamID", json_string("6d9c3b4e-2a1f-4c8e-9b7a-e2b0fa4e0001"));
	if (control) {
		char pid[16];
		snprintf(pid, sizeof(pid), "%d", (int)g_srv.pid);
		json_object_set_new(own, "pid", json_string(pid));
		json_object_set_new(own, "templateID", json_string(tpl));
		json_object_set_new(own, "logger", json_object_get(own, "service"));
		json_incref(json_object_get(own, "service"));
	}
	return own;
}

static void assert_fields(json_t *entry, json_t *want)
{
	json_t *got = json_object_get(entry, "fields");
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);
		fail_msg("fields\n got  %s\n want %s", g, w);
	}
	json_decref(want);
}

/* The pid in "Process with pid N started". */
static unsigned pid_of(json_t *entry)
{
	unsigned pid = 0;
	assert_int_equal(sscanf(json_string_value(json_object_get(entry, "message")),
	                        "Process with pid %u", &pid),
	                 1);
	return pid;
}

static void lifecycle_call(const char *method, const char *id, const char *what, const char *body,
                           long status)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/%s", id, what);
	fkr *r = api(method, path, body);
	assert_int_equal(r->status, status);
	fkr_free(r);
}

/* GET /sandboxes/{id}/logs and /v2/...: what E2B's envd, API and orchestrator log about a
 * sandbox, and fake-e2b's OOM line, through create -> exec -> pause -> resume -> an OOM kill ->
 * kill; every filter; read after the kill, as E2B's store keeps them. */
static void test_logs__lifecycle_processes_oom(void **state)
{
	(void)state;
	fks_need_root();
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", b.id);
	fkr *r = api("GET", path, NULL);
	assert_int_equal(r->status, 200);
	char tpl[64], end_time[40];
	snprintf(tpl, sizeof(tpl), "%s", json_string_value(json_object_get(r->json, "templateID")));
	/* endAt "2026-12-01T23:55:01.123Z" -> Go's "2006-01-02 15:04:05 -07:00" of it */
	const char *end_at = json_string_value(json_object_get(r->json, "endAt"));
	assert_non_null(end_at);
	snprintf(end_time, sizeof(end_time), "%.10s %.8s +00:00", end_at, end_at + 11);
	fkr_free(r);

	fks_box_sh(&g_srv, &b, "echo hi");
	lifecycle_call("POST", b.id, "pause", NULL, 204);
	lifecycle_call("POST", b.id, "connect", "{\"timeout\":60}", 201);
	/* past the box's memory limit (512 MiB, E2B's default sandbox): the kernel kills it */
	assert_false(fks_box_run(&g_srv, &b, "tail /dev/zero"));
	char m[2048];
	v2_messages(b.id, "?level=warn", m, sizeof(m));
	assert_string_equal(
	    m, "Out of memory: the kernel killed 1 process of the sandbox (memory limit 512 MiB)");
	json_t *before_kill = get_logs("/v2", b.id, "?limit=1");
	int64_t kill_ms =
	    ts_ms(json_string_value(json_object_get(
	        json_array_get(json_object_get(before_kill, "logs"), 0), "timestamp"))) +
	    1;
	json_decref(before_kill);
	for (struct timespec t0, t1; clock_gettime(CLOCK_REALTIME, &t0) == 0;) {
		usleep(2000); /* the kill a ms after the last line: the cursors below split there */
		clock_gettime(CLOCK_REALTIME, &t1);
		if ((int64_t)t1.tv_sec * 1000 + t1.tv_nsec / 1000000 > kill_ms)
			break;
	}
	fks_box_delete(&g_srv, KEY, &b);

	json_t *j = get_logs("/v2", b.id, "?direction=forward");
	messages(j, "logs", m, sizeof(m));
	json_t *logs = json_object_get(j, "logs");
	unsigned p1 = pid_of(json_array_get(logs, 2)), p2 = pid_of(json_array_get(logs, 8));
	char want[2048];
	snprintf(want, sizeof(want),
	         "Started creating sandbox|Sandbox created|Process with pid %u started|"
	         "Process with pid %u ended|Pausing sandbox|Sandbox stopped|"
	         "Started resuming sandbox|Sandbox created|Process with pid %u started|"
	         "Out of memory: the kernel killed 1 process of the sandbox (memory limit 512 MiB)|"
	         "Process with pid %u ended|Killing sandbox|Sandbox stopped",
	         p1, p1, p2, p2);
	assert_string_equal(m, want);
	static const char *const levels[] = {"debug", "info",  "info", "info", "info",
	                                     "info",  "debug", "info", "info", "warn",
	                                     "info",  "info",  "info"};
	for (size_t i = 0; i < 13; i++)
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(logs, i), "level")),
		    levels[i]);
	const char *id = b.id;
	assert_fields(json_array_get(logs, 0),
	              with_common(json_pack("{s:s}", "service", "orchestration-api"), id, tpl, 1));
	assert_fields(json_array_get(logs, 1),
	              with_common(json_pack("{s:s,s:s}", "service", "orchestration-api", "end_time",
	                                    end_time),
	                          id, tpl, 1));
	char p1s[16], p2s[16];
	snprintf(p1s, sizeof(p1s), "%u", p1);
	snprintf(p2s, sizeof(p2s), "%u", p2);
	assert_fields(json_array_get(logs, 2),
	              with_common(json_pack("{s:s,s:s,s:s,s:s,s:s}", "service", "envd",
	                                    "event_type", "process_start", "pid", p1s, "command",
	                                    "/bin/sh -c echo hi", "request_timeout_ms", "0"),
	                          id, tpl, 0));
	/* envd's process_result is an object: not a field (E2B's parser drops it), in the line */
	assert_fields(json_array_get(logs, 3),
	              with_common(json_pack("{s:s,s:s,s:s,s:s,s:s}", "service", "envd",
	                                    "event_type", "process_end", "stdout_bytes", "3",
	                                    "stderr_bytes", "0", "pty_bytes", "0"),
	                          id, tpl, 0));
	assert_fields(json_array_get(logs, 4),
	              with_common(json_pack("{s:s}", "service", "orchestrator"), id, tpl, 1));
	assert_fields(json_array_get(logs, 8),
	              with_common(json_pack("{s:s,s:s,s:s,s:s,s:s}", "service", "envd",
	                                    "event_type", "process_start", "pid", p2s, "command",
	                                    "/bin/sh -c tail /dev/zero", "request_timeout_ms", "0"),
	                          id, tpl, 0));
	assert_fields(json_array_get(logs, 9),
	              with_common(json_pack("{s:s,s:s,s:s}", "service", "fake-e2b", "oom_kills",
	                                    "1", "memory_mb", "512"),
	                          id, tpl, 1));
	assert_fields(
	    json_array_get(logs, 11),
	    with_common(json_pack("{s:s,s:s}", "service", "orchestrator", "kill_reason", "request"),
	                id, tpl, 1));
	json_decref(j);

	/* v1: oldest first, both shapes; the line is what E2B's store holds (sorted keys) */
	j = get_logs("", b.id, "");
	messages(j, "logEntries", m, sizeof(m));
	assert_string_equal(m, want);
	json_t *lines = json_object_get(j, "logs");
	assert_int_equal(json_array_size(lines), 13);
	json_t *line = json_loads(
	    json_string_value(json_object_get(json_array_get(lines, 3), "line")), 0, NULL);
	json_t *result = json_pack("{s:b,s:s}", "exited", 1, "status", "exit status 0");
	assert_true(json_equal(json_object_get(line, "process_result"), result));
	assert_int_equal(json_integer_value(json_object_get(line, "stdout_bytes")), 3);
	assert_string_equal(json_string_value(json_object_get(line, "level")), "info");
	json_decref(result);
	json_decref(line);
	line = json_loads(json_string_value(json_object_get(json_array_get(lines, 10), "line")), 0,
	                  NULL);
	const char *st =
	    json_string_value(json_object_get(json_object_get(line, "process_result"), "status"));
	assert_non_null(st);
	/* sh ends with its killed child's status, or is the child itself (exec) */
	if (strcmp(st, "exit status 137"))
		assert_string_equal(st, "signal: killed");
	json_decref(line);
	json_decref(j);

	/* the filters */
	v2_messages(b.id, "", m, sizeof(m)); /* backward: newest first */
	assert_non_null(strstr(m, "Sandbox stopped|Killing sandbox|Process with pid"));
	assert_int_equal(strncmp(m, "Sandbox stopped|Killing sandbox|", 32), 0);
	v2_messages(b.id, "?direction=forward&limit=3", m, sizeof(m));
	snprintf(want, sizeof(want),
	         "Started creating sandbox|Sandbox created|Process with pid %u started", p1);
	assert_string_equal(m, want);
	v2_messages(b.id, "?level=info&direction=forward&limit=2", m, sizeof(m));
	snprintf(want, sizeof(want), "Sandbox created|Process with pid %u started", p1);
	assert_string_equal(m, want);
	v2_messages(b.id, "?level=error", m, sizeof(m));
	assert_string_equal(m, "");
	v2_messages(b.id, "?search=pid&direction=forward", m, sizeof(m));
	snprintf(want, sizeof(want),
	         "Process with pid %u started|Process with pid %u ended|Process with pid %u "
	         "started|Process with pid %u ended",
	         p1, p1, p2, p2);
	assert_string_equal(m, want);
	char q[128];
	snprintf(q, sizeof(q), "?direction=forward&cursor=%lld", (long long)kill_ms);
	v2_messages(b.id, q, m, sizeof(m));
	assert_string_equal(m, "Killing sandbox|Sandbox stopped");
	snprintf(q, sizeof(q), "?cursor=%lld&limit=2", (long long)kill_ms);
	v2_messages(b.id, q, m, sizeof(m)); /* backward: before the cursor */
	snprintf(want, sizeof(want),
	         "Process with pid %u ended|Out of memory: the kernel killed 1 process of the "
	         "sandbox (memory limit 512 MiB)",
	         p2);
	assert_string_equal(m, want);
	snprintf(q, sizeof(q), "?start=%lld", (long long)kill_ms);
	j = get_logs("", b.id, q);
	messages(j, "logEntries", m, sizeof(m));
	assert_string_equal(m, "Killing sandbox|Sandbox stopped");
	json_decref(j);
	j = get_logs("", b.id, "?limit=1&start=0");
	messages(j, "logEntries", m, sizeof(m));
	assert_string_equal(m, "Started creating sandbox");
	json_decref(j);
	/* E2B reads logs by id: one it never had has none */
	v2_messages("ifk0000000000000000000", "", m, sizeof(m));
	assert_string_equal(m, "");
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/logs?limit=1001", b.id);
	r = api("GET", path, NULL);
	assert_int_equal(r->status, 400);
	fkr_free(r);
}

/* The messages of sandbox `id`'s logs (forward) once its last is `last` (within 30 s). */
static void wait_last(const char *id, const char *last, char *m, size_t cap)
{
	for (double end = mono_s() + 30; mono_s() < end; usleep(50 * 1000)) {
		v2_messages(id, "?direction=forward", m, cap);
		size_t n = strlen(m), k = strlen(last);
		if (n >= k && !strcmp(m + n - k, last))
			return;
	}
	fail_msg("logs of %s never ended with %s: %s", id, last, m);
}

/* A sandbox's timeout (here 0: at once): the reaper kills it (kill_reason timeout), or pauses
 * it with autoPause, and the orchestrator's lines say so. */
static void test_logs__timeout_kills_or_pauses(void **state)
{
	(void)state;
	fks_need_root();
	fks_box killed, paused;
	fks_box_create(&g_srv, KEY, NULL, &killed);
	fks_box_create(&g_srv, KEY, "{\"templateID\":\"base\",\"autoPause\":true}", &paused);
	lifecycle_call("POST", killed.id, "timeout", "{\"timeout\":0}", 204);
	lifecycle_call("POST", paused.id, "timeout", "{\"timeout\":0}", 204);
	char m[1024];
	wait_last(killed.id, "|Sandbox stopped", m, sizeof(m));
	assert_string_equal(
	    m, "Started creating sandbox|Sandbox created|Killing sandbox|Sandbox stopped");
	json_t *j = get_logs("/v2", killed.id, "?search=Killing");
	json_t *f = json_object_get(json_array_get(json_object_get(j, "logs"), 0), "fields");
	assert_string_equal(json_string_value(json_object_get(f, "kill_reason")), "timeout");
	json_decref(j);
	wait_last(paused.id, "|Sandbox stopped", m, sizeof(m));
	assert_string_equal(
	    m, "Started creating sandbox|Sandbox created|Pausing sandbox|Sandbox stopped");
	fks_box_delete(&g_srv, KEY, &paused);
}

/* Sum of the v1 lines' bytes and their count. */
static size_t line_bytes(const char *id, size_t *count)
{
	json_t *j = get_logs("", id, "?start=0");
	json_t *lines = json_object_get(j, "logs");
	size_t n = 0;
	for (size_t i = 0; i < json_array_size(lines); i++)
		n += strlen(json_string_value(json_object_get(json_array_get(lines, i), "line")));
	*count = json_array_size(lines);
	json_decref(j);
	return n;
}

/* A sandbox keeps its last 1,000 lines, and at most 512 KiB of them: the oldest go. */
static void test_logs__bounded_per_sandbox(void **state)
{
	(void)state;
	fks_need_root();
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	/* a number field as Go's FormatFloat(v, 'G', -1, 64) writes it (E2B's line parser) */
	fks_box_sh(&g_srv, &b, "head -c 10485760 /dev/zero");
	json_t *j = get_logs("/v2", b.id, "?limit=1");
	json_t *end = json_object_get(json_array_get(json_object_get(j, "logs"), 0), "fields");
	assert_string_equal(json_string_value(json_object_get(end, "stdout_bytes")),
	                    "1.048576E+07");
	assert_string_equal(json_string_value(json_object_get(end, "stderr_bytes")), "0");
	json_decref(j);
	/* 2 lines per process: 504 more, after create's 2 and those 2, are 1,012 lines: 12 go */
	for (int i = 0; i < 504; i++)
		fks_box_sh(&g_srv, &b, "true");
	size_t count;
	line_bytes(b.id, &count);
	assert_int_equal(count, 1000);
	char m[64];
	j = get_logs("", b.id, "?start=0&limit=1");
	messages(j, "logEntries", m, sizeof(m));
	json_decref(j);
	assert_int_equal(strncmp(m, "Process with pid ", 17), 0); /* create's lines went */
	/* long commands (1,000 bytes each, kept whole up to 1,024): the bytes bound first */
	char cmd[1100] = "true ";
	memset(cmd + 5, 'x', 995);
	cmd[1000] = 0;
	for (int i = 0; i < 330; i++)
		fks_box_sh(&g_srv, &b, cmd);
	size_t bytes = line_bytes(b.id, &count);
	assert_true(bytes <= 512 * 1024);
	assert_true(bytes > 512 * 1024 - 1600); /* full: within one start line of the bound */
	assert_true(count < 1000);
	/* the oldest kept is a long command's: every short one went */
	j = get_logs("", b.id, "?start=0&limit=2");
	json_t *e = json_array_get(json_object_get(j, "logEntries"), 0);
	const char *c0 =
	    json_string_value(json_object_get(json_object_get(e, "fields"), "command"));
	if (!c0) /* an end line first: the next is a start */
		c0 = json_string_value(json_object_get(
		    json_object_get(json_array_get(json_object_get(j, "logEntries"), 1), "fields"),
		    "command"));
	assert_non_null(c0);
	assert_int_equal(strlen(c0), strlen("/bin/sh -c ") + 1000);
	json_decref(j);
	fks_box_delete(&g_srv, KEY, &b);
}

int main(int argc, char **argv)
{
	if (fks_root_init(argc, argv, KEY, &g_srv, NULL) < 0)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics__cpu_used_pct_is_a_float32),
	    cmocka_unit_test(test_logs__lifecycle_processes_oom),
	    cmocka_unit_test(test_logs__timeout_kills_or_pauses),
	    cmocka_unit_test(test_logs__bounded_per_sandbox),
	};
	int rc = cmocka_run_group_tests_name("fake_sandbox_api", tests, fks_root_setup,
	                                     fks_root_teardown);
	curl_global_cleanup();
	return rc;
}
