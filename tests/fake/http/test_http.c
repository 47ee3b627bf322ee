/*
 * tests/fake/http/test_http.c: fake-e2b's HTTP surface, black box. Starts the
 * binary (argv[1]) on port 0 and exercises the control plane (create, connect
 * 200/201, list paging with the metadata filter, pause 409, delete 404, auth
 * 401, error bodies, timeouts), envd (token, 502, Start stream framing, files)
 * and the admin API (faults, request log). No timing assertions except
 * generous upper bounds.
 *
 * This file: the control plane's sandboxes (auth, routes, create, ids, connect, pause, delete,
 * list paging, end times) and main. The others: test_http_templates.c (template builds,
 * limits, logs, references), test_http_admin.c (faults, the request log), test_http_envd.c
 * (envd: token, 502, PID 1, auto-resume, streams, signals, files, stream faults),
 * test_http_streams.c (concurrent streams), http_support.c (the server, the client, helpers).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"
#include "http_test.h"

/* ---- control plane ---------------------------------------------------------------------- */

static void test_control__missing_or_bad_key_is_401(void **state)
{
	(void)state;
	const char *none[] = {"-", NULL};
	resp *r = http_raw("GET", "/v2/sandboxes", NULL, NULL, 0, none, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
	const char *bad[] = {"-", "x-api-key: e2b_wrong", NULL};
	r = http_raw("POST", "/v2/sandboxes", "application/json", "{}", 2, bad, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
}

static void test_control__unknown_route_404_wrong_method_405(void **state)
{
	(void)state;
	resp *r = http("GET", "/nope", NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
	r = http("PUT", "/v2/sandboxes", "{}");
	assert_e2b_error(r, 405);
	resp_free(r);
}

static void test_control__create_v2_returns_sandbox_with_token(void **state)
{
	(void)state;
	resp *r = http(
	    "POST", "/v2/sandboxes",
	    "{\"templateID\":\"capybara-sandbox\",\"secure\":true,\"metadata\":{\"a\":\"b\"}}");
	assert_int_equal(r->status, 201);
	const char *id = json_string_value(json_object_get(r->json, "sandboxID"));
	assert_non_null(id);
	assert_int_equal(strlen(id), 21);
	assert_int_equal(id[0], 'i');
	for (const char *p = id; *p; p++)
		assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'));
	assert_string_equal(json_string_value(json_object_get(r->json, "templateID")),
	                    "capybara-sandbox");
	assert_string_equal(json_string_value(json_object_get(r->json, "clientID")), "6532622b");
	assert_string_equal(json_string_value(json_object_get(r->json, "envdVersion")), "0.6.13");
	const char *tok = json_string_value(json_object_get(r->json, "envdAccessToken"));
	assert_true(is_hex64(tok));
	char *id2 = strdup(id), *tok2 = strdup(tok);
	resp_free(r);

	char *t = sandbox_token(id2); /* GET returns the same token */
	assert_string_equal(t, tok2);
	free(t);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id2);
	r = http("GET", path, NULL);
	assert_string_equal(json_string_value(json_object_get(r->json, "state")), "running");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(r->json, "lifecycle"), "onTimeout")),
	    "kill");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(r->json, "metadata"), "a")), "b");
	resp_free(r);
	delete_sandbox(id2);
	free(id2);
	free(tok2);
}

static void test_control__legacy_create_token_only_when_secure(void **state)
{
	(void)state;
	resp *r = http("POST", "/sandboxes", "{\"templateID\":\"capybara-sandbox\"}");
	assert_int_equal(r->status, 201);
	assert_null(json_object_get(r->json, "envdAccessToken"));
	char *a = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	r = http("POST", "/sandboxes", "{\"templateID\":\"capybara-sandbox\",\"secure\":true}");
	assert_int_equal(r->status, 201);
	assert_true(is_hex64(json_string_value(json_object_get(r->json, "envdAccessToken"))));
	char *b = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	/* an unsecured sandbox's envd takes requests without a token */
	char hid[64];
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", a);
	const char *h[] = {"-", hid, NULL};
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, h, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", b);
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, h, NULL);
	assert_int_equal(r->status, 401);
	resp_free(r);
	char path[128];
	/* the sample taken at create is there at once: the first bucket (5 s steps, stamped at
	 * the bucket's start) is the one of a moment between the sandbox's start and now; how
	 * many follow depends on how long this machine took since, so only the first is checked */
	snprintf(path, sizeof(path), "/sandboxes/%s", a);
	r = http("GET", path, NULL);
	struct tm tm = {0};
	assert_non_null(strptime(json_string_value(json_object_get(r->json, "startedAt")),
	                         "%Y-%m-%dT%H:%M:%S", &tm));
	long born = (long)timegm(&tm);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", a);
	r = http("GET", path, NULL);
	long now = (long)time(NULL);
	assert_int_equal(r->status, 200);
	assert_true(json_array_size(r->json) >= 1);
	json_t *first = json_array_get(r->json, 0);
	long stamp = (long)json_integer_value(json_object_get(first, "timestampUnix"));
	assert_int_equal(stamp % 5, 0);
	assert_in_range(stamp, born - born % 5, now);
	assert_int_equal(json_integer_value(json_object_get(first, "memTotal")), 512LL << 20);
	assert_int_equal(json_integer_value(json_object_get(first, "cpuCount")), 2);
	resp_free(r);
	delete_sandbox(a);
	delete_sandbox(b);
	free(a);
	free(b);
}

static void test_control__create_validation_400(void **state)
{
	(void)state;
	resp *r =
	    http("POST", "/v2/sandboxes", "{\"templateID\":\"capybara-sandbox\",\"timeout\":0}");
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "Timeout must be greater than 0");
	resp_free(r);
	r = http("POST", "/v2/sandboxes", "{\"timeout\":10}");
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http(
	    "POST", "/v2/sandboxes",
	    "{\"templateID\":\"capybara-sandbox\",\"network\":{\"allowOut\":[\"example.com\"]}}");
	assert_e2b_error(r, 400);
	assert_non_null(
	    strstr(json_string_value(json_object_get(r->json, "message")), "ALL_TRAFFIC"));
	resp_free(r);
	r = http("POST", "/v2/sandboxes", "not json");
	assert_e2b_error(r, 400);
	resp_free(r);
}

static void test_control__invalid_sandbox_id_400(void **state)
{
	(void)state;
	resp *r = http("GET", "/sandboxes/ABC", NULL);
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "Invalid sandbox ID");
	resp_free(r);
	r = http("POST", "/v2/sandboxes/a-b-c/connect", "{}");
	assert_e2b_error(r, 400);
	resp_free(r);
}

static void test_control__connect_pause_delete_lifecycle(void **state)
{
	(void)state;
	char *id = create_sandbox(NULL), path[160];
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	resp *r = http("POST", path, "{\"timeout\":600}");
	assert_int_equal(r->status, 200); /* running: extended */
	assert_string_equal(json_string_value(json_object_get(r->json, "sandboxID")), id);
	assert_true(is_hex64(json_string_value(json_object_get(r->json, "envdAccessToken"))));
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 409);
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", id);
	r = http("POST", path, "{\"timeout\":30}");
	assert_e2b_error(r, 404); /* not running */
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = http("GET", path, NULL);
	assert_string_equal(json_string_value(json_object_get(r->json, "state")), "paused");
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	r = http("POST", path, "{}"); /* legacy needs timeout */
	assert_e2b_error(r, 400);
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	r = http("POST", path, "{\"timeout\":60}");
	assert_int_equal(r->status, 201); /* resumed */
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/resume", id);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 409); /* already running */
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", id);
	r = http("POST", path, "{\"timeout\":30}");
	assert_int_equal(r->status, 204);
	resp_free(r);

	delete_sandbox(id);
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = http("DELETE", path, NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 404);
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 404);
	resp_free(r);
	free(id);
}

/* The SDK's encoding: URLSearchParams of encodeURIComponent'd pairs, encoded once more. */
static char *enc(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1), *w = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-_.!~*'()", *p))
			*w++ = (char)*p;
		else
			w += sprintf(w, "%%%02X", *p);
	}
	*w = '\0';
	return out;
}

/* metadata=<enc( form(enc(k)) "=" form(enc(v)) )>; form() = enc() for these inputs. */
static char *metadata_query(const char *k, const char *v)
{
	char *ek = enc(k), *ev = enc(v), *ek2 = enc(ek), *ev2 = enc(ev), *pair = NULL;
	if (asprintf(&pair, "%s=%s", ek2, ev2) < 0)
		pair = NULL;
	char *out = pair ? enc(pair) : NULL;
	free(ek);
	free(ev);
	free(ek2);
	free(ev2);
	free(pair);
	return out;
}

static void test_control__list_paging_and_metadata_filter(void **state)
{
	(void)state;
	char *ids[3];
	ids[0] = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc&def\"}}");
	ids[1] = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc&def\"}}");
	ids[2] = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc&def\"}}");
	char *other =
	    create_sandbox("{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc\"}}");
	char *mq = metadata_query("user", "abc&def"), path[600];
	assert_string_equal(mq, "user%3Dabc%252526def");
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&limit=2", mq);
	resp *r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 2);
	assert_true(r->has_next);
	assert_null(json_object_get(json_array_get(r->json, 0), "envdAccessToken"));
	char seen[3][32];
	for (int i = 0; i < 2; i++)
		snprintf(
		    seen[i], sizeof(seen[i]), "%s",
		    json_string_value(json_object_get(json_array_get(r->json, i), "sandboxID")));
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&limit=2&nextToken=%s", mq,
	         r->next_token);
	resp_free(r);
	r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	assert_false(r->has_next);
	snprintf(seen[2], sizeof(seen[2]), "%s",
	         json_string_value(json_object_get(json_array_get(r->json, 0), "sandboxID")));
	resp_free(r);
	/* newest first: the reverse creation order */
	for (int i = 0; i < 3; i++)
		assert_string_equal(seen[i], ids[2 - i]);

	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s", mq);
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 3);
	assert_false(r->has_next);
	resp_free(r);

	r = http("GET", "/v2/sandboxes?limit=0", NULL);
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("GET", "/v2/sandboxes?limit=101", NULL);
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("GET", "/v2/sandboxes?nextToken=garbage", NULL);
	assert_e2b_error(r, 400);
	resp_free(r);

	/* state filter: pause one */
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", ids[1]);
	resp_free(http("POST", path, "{}"));
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&state=paused", mq);
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(r->json, 0), "sandboxID")), ids[1]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(r->json, 0), "state")),
	                    "paused");
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&state=paused&state=running", mq);
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 3);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes?metadata=%s", mq); /* legacy: running only */
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 2);
	resp_free(r);

	for (int i = 0; i < 3; i++) {
		delete_sandbox(ids[i]);
		free(ids[i]);
	}
	delete_sandbox(other);
	free(other);
	free(mq);
}

static int wait_state(const char *id, const char *want, long within_ms)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	for (long deadline = fk_mono_ms() + within_ms; fk_mono_ms() < deadline; fk_sleep_ms(100)) {
		resp *r = http("GET", path, NULL);
		int hit =
		    want ? r->status == 200 &&
		               !strcmp(json_string_value(json_object_get(r->json, "state")), want)
		         : r->status == 404;
		resp_free(r);
		if (hit)
			return 1;
	}
	return 0;
}

static void test_control__reaper_kills_or_pauses_at_end_time(void **state)
{
	(void)state;
	char *a = create_sandbox("{\"templateID\":\"capybara-sandbox\",\"timeout\":1}");
	char *b = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"timeout\":1,\"autoPause\":true}");
	assert_true(wait_state(a, NULL, 20000));
	assert_true(wait_state(b, "paused", 20000));
	delete_sandbox(b);
	free(a);
	free(b);
}

/* POST /timeout with 0 (the spec's minimum) ends the sandbox at once, as its lifecycle says. */
static void test_control__timeout_zero_ends_it_now(void **state)
{
	(void)state;
	char *a = create_sandbox("{\"templateID\":\"capybara-sandbox\",\"timeout\":3600}");
	char *b = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"timeout\":3600,\"autoPause\":true}");
	char path[128];
	char *ids[] = {a, b};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/sandboxes/%s/timeout", ids[i]);
		resp *r = http("POST", path, "{\"timeout\":0}");
		assert_int_equal(r->status, 204);
		resp_free(r);
	}
	assert_true(wait_state(a, NULL, 20000));
	assert_true(wait_state(b, "paused", 20000));
	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", b);
	resp *r = http("POST", path, "{\"timeout\":-1}");
	assert_e2b_error(r, 400);
	resp_free(r);
	delete_sandbox(b);
	free(a);
	free(b);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_control__missing_or_bad_key_is_401),
	    cmocka_unit_test(test_control__unknown_route_404_wrong_method_405),
	    cmocka_unit_test(test_control__create_v2_returns_sandbox_with_token),
	    cmocka_unit_test(test_control__legacy_create_token_only_when_secure),
	    cmocka_unit_test(test_control__create_validation_400),
	    cmocka_unit_test(test_control__invalid_sandbox_id_400),
	    cmocka_unit_test(test_control__template_build_requests),
	    cmocka_unit_test(test_control__sandbox_limits_and_alias_follow_template),
	    cmocka_unit_test(test_control__build_log_entries_carry_step),
	    cmocka_unit_test(test_control__template_delete_in_use_follows_base_template),
	    cmocka_unit_test(test_control__template_references_update_and_delete),
	    cmocka_unit_test(test_control__connect_pause_delete_lifecycle),
	    cmocka_unit_test(test_control__list_paging_and_metadata_filter),
	    cmocka_unit_test(test_control__reaper_kills_or_pauses_at_end_time),
	    cmocka_unit_test(test_control__timeout_zero_ends_it_now),
	    cmocka_unit_test(test_admin__fault_409_times_then_success),
	    cmocka_unit_test(test_admin__request_log_masks_secrets),
	    cmocka_unit_test(test_admin__request_log_arrival_order),
	    cmocka_unit_test(test_envd__health_token_and_502),
	    cmocka_unit_test(test_envd__dead_pid1_is_sandbox_not_found),
	    cmocka_unit_test(test_envd__auto_resume_on_traffic),
	    cmocka_unit_test(test_envd__start_stream_frames_start_data_end),
	    cmocka_unit_test(test_envd__send_signal_unknown_pid_404),
	    cmocka_unit_test(test_envd__files_upload_download_stat),
	    cmocka_unit_test(test_envd__stream_faults),
	    cmocka_unit_test(test_envd__kill_ignored_survives_signal_until_pause),
	    cmocka_unit_test(test_envd__300_concurrent_streams),
	};
	/* FK_TEST_FILTER picks a few (tests/support/cmocka_run.c) */
	int rc = cmocka_run_group_tests_name("fake_http", tests, server_start, server_stop);
	curl_global_cleanup();
	return rc;
}
