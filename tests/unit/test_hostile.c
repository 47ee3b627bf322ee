/*
 * Hostile server replies, unit by unit: each test is named after a fault
 * found by the fuzzers (tests/fuzz) or by the attack review, and feeds the
 * exact bytes of that fault to the code that handles it: the envd Start
 * stream decoder (sbx__envd_stream_feed, nothing sent), the connect reply
 * (sbx__e2b_target_of) and a list page (sbx__e2b_collect_page).
 */
#include "unit.h"

#include <jansson.h>
#include <stdio.h>

#include "e2b/api.h"
#include "e2b/envd.h"
#include "e2b/envelope.h"
#include "e2b/exit_status.h"
#include "e2b/provider_int.h"
#include "util/buf.h"

/* ---- envd Start stream ---- */

typedef struct events {
	int starts, ends;
	uint32_t pid;
	bool exited;
	int code;
	const char *status;
	size_t out;
} events;

static void ev_start(uint32_t pid, void *payload)
{
	events *e = payload;
	e->starts++;
	e->pid = pid;
}

static void ev_output(int stream, const unsigned char *p, size_t n, void *payload)
{
	(void)stream;
	(void)p;
	((events *)payload)->out += n;
}

static void ev_end(bool exited, int code, const char *status, void *payload)
{
	events *e = payload;
	e->ends++;
	e->exited = exited;
	e->code = code;
	e->status = status ? "set" : NULL;
}

static sbx_http *http;

static int setup(void **state)
{
	(void)state;
	return sbx__http_new(&http, NULL);
}

static int teardown(void **state)
{
	(void)state;
	sbx__http_free(http);
	return 0;
}

/* Feed one envelope holding `json` (flags 0, or 2 for end-stream) to a fresh stream. */
static int feed_frames(events *ev, sbx_error *err, const char *const *msgs, size_t n)
{
	static const char *const args[] = {"-c", "true"};
	char url[] = "http://127.0.0.1:9", sid[] = "box1", tok[] = "tok-secret-1";
	sbx_envd_target t = {url, sid, tok, "e2b_key_secret", NULL, NULL};
	sbx_envd_process proc = {"/bin/sh", args, 2, NULL, 0, NULL, 0, 0, 0};
	sbx_envd_handler h = {ev_start, ev_output, NULL, ev_end, NULL, ev, NULL, false, NULL, NULL};
	sbx_buf wire = SBX_BUF_INIT(1 << 20);
	sbx_envd_stream *s;
	int rc;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(sbx__envelope_encode(&wire, msgs[i][0] == '!' ? 2 : 0,
		                                      msgs[i] + (msgs[i][0] == '!'),
		                                      strlen(msgs[i] + (msgs[i][0] == '!'))),
		                 0);
	assert_int_equal(sbx__envd_start(&s, http, &t, "user", &proc, false, &h, NULL), 0);
	rc = sbx__envd_stream_feed(s, wire.ptr, wire.len, err);
	sbx__envd_stream_free(s);
	sbx_buf_dispose(&wire);
	return rc;
}

static void test_hostile__start_pid_minus_one_is_no_pid(void **state)
{
	const char *m[] = {"{\"event\":{\"start\":{\"pid\":-1}}}"};
	events ev = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, NULL, m, 1), 0);
	assert_int_equal(ev.starts, 1);
	assert_int_equal(ev.pid, 0); /* was 4294967295: a SendSignal to a made-up pid */
}

static void test_hostile__start_pid_two_to_the_forty_is_no_pid(void **state)
{
	const char *m[] = {"{\"event\":{\"start\":{\"pid\":1099511627776}}}"};
	events ev = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, NULL, m, 1), 0);
	assert_int_equal(ev.pid, 0); /* was 0 by wrap-around, silently */
}

static void test_hostile__start_pid_as_decimal_string_is_read(void **state)
{
	const char *m[] = {"{\"event\":{\"start\":{\"pid\":\"4294967295\"}}}",
	                   "{\"event\":{\"start\":{\"pid\":\"12x\"}}}"};
	events ev = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, NULL, m, 1), 0);
	assert_int_equal(ev.pid, 4294967295u);
	assert_int_equal(feed_frames(&ev, NULL, m + 1, 1), 0);
	assert_int_equal(ev.pid, 0);
}

static void test_hostile__exit_code_as_string_is_read_as_protobuf_json(void **state)
{
	const char *m[] = {"{\"event\":{\"end\":{\"exited\":true,\"exitCode\":\"7\"}}}"};
	events ev = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, NULL, m, 1), 0);
	assert_true(ev.exited);
	assert_int_equal(ev.code, 7);
}

static void test_hostile__exit_code_garbage_is_unknown_not_zero(void **state)
{
	const char *bad[] = {"{\"event\":{\"end\":{\"exited\":true,\"exitCode\":\"seven\"}}}",
	                     "{\"event\":{\"end\":{\"exited\":true,\"exitCode\":4294967296}}}",
	                     ("{\"event\":{\"end\":{\"exited\":true,\"exitCode\":1.5,"
	                      "\"status\":\"exit status 1\"}}}"),
	                     "{\"event\":{\"end\":{\"exited\":true,\"exitCode\":[1]}}}"};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		events ev = {0};
		int code = -1;
		assert_int_equal(feed_frames(&ev, NULL, bad + i, 1), 0);
		assert_int_equal(ev.ends, 1);
		assert_false(ev.exited);
		assert_null(ev.status);
		/* so the provider finds no exit status (was: exit code 0, success) */
		assert_false(sbx__e2b_exit_code(ev.exited, ev.code, NULL, &code));
	}
}

static void test_hostile__events_before_start_and_end_twice_do_not_crash(void **state)
{
	const char *m[] = {"{\"event\":{\"end\":{\"exited\":true,\"exitCode\":1}}}",
	                   "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}",
	                   "{\"event\":{\"start\":{\"pid\":5}}}",
	                   "{\"event\":{\"end\":{\"exited\":true,\"exitCode\":2}}}", "!{}"};
	events ev = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, NULL, m, 5), 1);
	assert_int_equal(ev.ends, 2);
	assert_int_equal(ev.code, 2); /* the last end event wins */
	assert_int_equal(ev.out, 2);
}

static void test_hostile__data_with_invalid_base64_is_a_protocol_error(void **state)
{
	const char *m[] = {"{\"event\":{\"data\":{\"stdout\":\"@@@@\"}}}"};
	events ev = {0};
	sbx_error err = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, &err, m, 1), SBX_EPROTOCOL);
	assert_string_equal(err.message, "E2B process stream: invalid base64 in a data event");
}

static void test_hostile__stdout_as_a_number_is_ignored(void **state)
{
	const char *m[] = {"{\"event\":{\"data\":{\"stdout\":12,\"stderr\":null}}}"};
	events ev = {0};
	(void)state;
	assert_int_equal(feed_frames(&ev, NULL, m, 1), 0);
	assert_int_equal(ev.out, 0);
}

static void test_hostile__a_million_keepalives_in_one_stream(void **state)
{
	static const char *const args[] = {"-c", "true"};
	static const char ka[] = "{\"event\":{\"keepalive\":{}}}";
	char url[] = "http://127.0.0.1:9", sid[] = "box1", tok[] = "tok-secret-1";
	sbx_envd_target t = {url, sid, tok, NULL, NULL, NULL};
	sbx_envd_process proc = {"/bin/sh", args, 2, NULL, 0, NULL, 0, 0, 0};
	events ev = {0};
	sbx_envd_handler h = {ev_start, ev_output, NULL,  ev_end, NULL,
	                      &ev,      NULL,      false, NULL,   NULL};
	sbx_buf one = SBX_BUF_INIT(256);
	sbx_envd_stream *s;
	(void)state;
	assert_int_equal(sbx__envelope_encode(&one, 0, ka, strlen(ka)), 0);
	assert_int_equal(sbx__envd_start(&s, http, &t, "user", &proc, false, &h, NULL), 0);
	/* memory stays bounded by one frame: they are decoded as they come */
	for (int i = 0; i < 1000000; i++)
		assert_int_equal(sbx__envd_stream_feed(s, one.ptr, one.len, NULL), 0);
	assert_int_equal(ev.starts + ev.ends, 0);
	sbx__envd_stream_free(s);
	sbx_buf_dispose(&one);
}

/* ---- connect reply (targetOf) ---- */

static int target(const char *json, sbx_error *err)
{
	char domain[] = "e2b.app";
	sbx__e2b_provider p;
	sbx_envd_target t;
	json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
	int rc;

	memset(&p, 0, sizeof(p));
	p.domain = domain;
	rc = sbx__e2b_target_of(&p, &t, j, "abc", err);
	sbx__envd_target_dispose(&t);
	json_decref(j);
	return rc;
}

static void test_hostile__long_domain_is_quoted_not_stack_bytes(void **state)
{
	char z[501], json[700], want[160];
	sbx_error err = {0};
	(void)state;
	memset(z, 'z', 500);
	z[500] = '\0';
	snprintf(json, sizeof(json), "{\"domain\":\"%s\",\"envdAccessToken\":\"t\"}", z);
	assert_int_equal(target(json, &err), SBX_EPROTOCOL);
	/* json_dumpb() into a too-small array left it undefined: stack bytes were quoted */
	snprintf(want, sizeof(want), "E2B returned an invalid sandbox domain: \"%.63s...", z);
	assert_string_equal(err.message, want);
}

static void test_hostile__bad_domains_are_protocol_errors(void **state)
{
	static const char *const bad[] = {
	    "{\"domain\":\"evil.com/x\",\"envdAccessToken\":\"t\"}",
	    "{\"domain\":\"E2B.app\",\"envdAccessToken\":\"t\"}",
	    "{\"domain\":\"a.b:1@c.d\",\"envdAccessToken\":\"t\"}",
	    "{\"domain\":7,\"envdAccessToken\":\"t\"}",
	    "{\"domain\":{\"x\":[1,2]},\"envdAccessToken\":\"t\"}",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_error err = {0};
		assert_int_equal(target(bad[i], &err), SBX_EPROTOCOL);
		assert_non_null(strstr(err.message, "invalid sandbox domain"));
	}
}

static void test_hostile__domain_holding_a_secret_is_quoted_redacted(void **state)
{
	char domain[] = "e2b.app", key[] = "e2b_attack_api_key";
	sbx__e2b_provider p;
	sbx_envd_target t;
	sbx_error err = {0};
	json_t *j = json_loads("{\"domain\":\"x.e2b_attack_api_key/envd-tok-1\","
	                       "\"envdAccessToken\":\"envd-tok-1\"}",
	                       0, NULL);
	(void)state;
	memset(&p, 0, sizeof(p));
	p.domain = domain;
	p.api.api_key = key;
	/* found by fuzz_api_reply: the domain quote used to carry the API key */
	assert_int_equal(sbx__e2b_target_of(&p, &t, j, "abc", &err), SBX_EPROTOCOL);
	assert_string_equal(err.message, "E2B returned an invalid sandbox domain: "
	                                 "\"x.[redacted]/[redacted]\"");
	sbx__envd_target_dispose(&t);
	json_decref(j);
}

static void test_hostile__server_sandbox_id_is_checked_as_server_data(void **state)
{
	static const char *const bad[] = {
	    "{\"sandboxID\":\"../x\",\"envdAccessToken\":\"t\"}",
	    "{\"sandboxID\":\"a/b\",\"envdAccessToken\":\"t\"}",
	    "{\"sandboxID\":\"\",\"envdAccessToken\":\"t\"}",
	    "{\"sandboxID\":42,\"envdAccessToken\":\"t\"}",
	    "{\"sandboxID\":true,\"envdAccessToken\":\"t\"}",
	};
	char big[11000];
	sbx_error err = {0};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(target(bad[i], &err), SBX_EPROTOCOL);
	}
	snprintf(big, sizeof(big), "{\"sandboxID\":\"%010240d\",\"envdAccessToken\":\"t\"}", 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(target(big, &err), SBX_EPROTOCOL);
	assert_true(strlen(err.message) < 400); /* quoted at most 64 bytes */
}

static void test_hostile__missing_or_odd_token_is_gone(void **state)
{
	static const char *const bad[] = {
	    "{\"sandboxID\":\"abc\"}",
	    "{\"sandboxID\":\"abc\",\"envdAccessToken\":\"\"}",
	    "{\"sandboxID\":\"abc\",\"envdAccessToken\":123}",
	    "{\"sandboxID\":\"abc\",\"envdAccessToken\":null}",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_error err = {0};
		assert_int_equal(target(bad[i], &err), SBX_EGONE);
	}
	assert_int_equal(target("[]", NULL), SBX_EGONE);    /* not an object: no token */
	assert_int_equal(target("\"x\"", NULL), SBX_EGONE); /* a string */
}

static void test_hostile__token_with_crlf_cannot_inject_headers(void **state)
{
	static const char *const bad[] = {
	    "{\"envdAccessToken\":\"sekrit\\r\\nX-Evil: 1\"}",
	    "{\"envdAccessToken\":\"sekrit en\"}",
	    "{\"envdAccessToken\":\"t\\u00e9\"}",
	};
	char big[1100];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_error err = {0};
		assert_int_equal(target(bad[i], &err), SBX_EPROTOCOL);
		assert_null(strstr(err.message, "sekrit"));
	}
	memset(big, 'k', sizeof(big));
	memcpy(big, "{\"envdAccessToken\":\"", 20);
	memcpy(big + sizeof(big) - 3, "\"}", 3);
	assert_int_equal(target(big, NULL), SBX_EPROTOCOL);
}

/* ---- error bodies (the message include/sandbox/error.h states) ---- */

static void test_hostile__error_code_holding_a_secret_is_scrubbed(void **state)
{
	static const char body[] = "{\"code\":\"e2b_attack_key\\n\",\"message\":\"m\"}";
	sbx_error err = {0};
	(void)state;
	assert_int_equal(sbx__e2b_http_error(&err, "GET /x", 400, (const unsigned char *)body,
	                                     strlen(body), "e2b_attack_key", NULL, NULL),
	                 SBX_EHTTP);
	/* e2b_code was copied raw: the API key and a newline reached the caller */
	assert_string_equal(err.e2b_code, "[redacted] ");
	assert_string_equal(err.message, "E2B GET /x failed: HTTP 400: m");
}

/* ---- list page ---- */

static int page(const char *json, json_t **ids, sbx_error *err)
{
	json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
	int rc;
	*ids = json_array();
	rc = sbx__e2b_collect_page(j, "box", *ids, err);
	json_decref(j);
	return rc;
}

static void test_hostile__list_item_without_sandbox_id_is_a_protocol_error(void **state)
{
	json_t *ids;
	sbx_error err = {0};
	(void)state;
	/* was: "" appended, then DELETE refused later as an invalid argument */
	assert_int_equal(page("[{\"metadata\":{\"capybara-sandbox-name\":\"box\"}}]", &ids, &err),
	                 SBX_EPROTOCOL);
	assert_string_equal(err.message,
	                    "E2B GET /v2/sandboxes returned a sandbox without a sandboxID");
	json_decref(ids);
	assert_int_equal(page("[{\"sandboxID\":\"../../x\",\"metadata\":{\"capybara-sandbox-name\":"
	                      "\"box\"}}]",
	                      &ids, NULL),
	                 SBX_EPROTOCOL);
	json_decref(ids);
}

static void test_hostile__list_shapes_that_are_not_arrays(void **state)
{
	json_t *ids;
	(void)state;
	assert_int_equal(page("{\"sandboxes\":[]}", &ids, NULL), SBX_EPROTOCOL);
	json_decref(ids);
	assert_int_equal(page("\"x\"", &ids, NULL), SBX_EPROTOCOL);
	json_decref(ids);
	assert_int_equal(page("null", &ids, NULL), 0); /* r.data ?? [] */
	json_decref(ids);
	/* items of other names, or without metadata, are skipped */
	assert_int_equal(
	    page("[1,null,{},{\"metadata\":7},{\"metadata\":{\"capybara-sandbox-name\":"
	         "5}},{\"sandboxID\":\"ok1\",\"metadata\":{\"capybara-sandbox-name\":"
	         "\"box\"}}]",
	         &ids, NULL),
	    0);
	assert_int_equal(json_array_size(ids), 1);
	assert_string_equal(json_string_value(json_array_get(ids, 0)), "ok1");
	json_decref(ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostile__start_pid_minus_one_is_no_pid),
	    cmocka_unit_test(test_hostile__start_pid_two_to_the_forty_is_no_pid),
	    cmocka_unit_test(test_hostile__start_pid_as_decimal_string_is_read),
	    cmocka_unit_test(test_hostile__exit_code_as_string_is_read_as_protobuf_json),
	    cmocka_unit_test(test_hostile__exit_code_garbage_is_unknown_not_zero),
	    cmocka_unit_test(test_hostile__events_before_start_and_end_twice_do_not_crash),
	    cmocka_unit_test(test_hostile__data_with_invalid_base64_is_a_protocol_error),
	    cmocka_unit_test(test_hostile__stdout_as_a_number_is_ignored),
	    cmocka_unit_test(test_hostile__a_million_keepalives_in_one_stream),
	    cmocka_unit_test(test_hostile__long_domain_is_quoted_not_stack_bytes),
	    cmocka_unit_test(test_hostile__bad_domains_are_protocol_errors),
	    cmocka_unit_test(test_hostile__domain_holding_a_secret_is_quoted_redacted),
	    cmocka_unit_test(test_hostile__server_sandbox_id_is_checked_as_server_data),
	    cmocka_unit_test(test_hostile__missing_or_odd_token_is_gone),
	    cmocka_unit_test(test_hostile__token_with_crlf_cannot_inject_headers),
	    cmocka_unit_test(test_hostile__error_code_holding_a_secret_is_scrubbed),
	    cmocka_unit_test(test_hostile__list_item_without_sandbox_id_is_a_protocol_error),
	    cmocka_unit_test(test_hostile__list_shapes_that_are_not_arrays),
	};
	return cmocka_run_group_tests_name("hostile", tests, setup, teardown);
}
