/*
 * tests/integration/test_malformed.c: malformed and hostile server replies
 * (fake-e2b faults stream_garbage, stream_oversize, stream_keepalive_only,
 * stream_no_end, HTML and non-JSON bodies) give clean errors: no crash, no
 * hang, no raw server bytes beyond a short quote, and the provider keeps working.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "malf", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

/* The provider still works after a fault. */
static void still_works(h_ctx *h)
{
	h_faults_clear(h);
	char *s = h_sh(h, g_id, "echo ok");
	assert_string_equal(s, "ok\n");
	free(s);
}

static int exec_with_fault(h_ctx *h, const char *kind, uint64_t timeout_ms, sbx_exec_result *r,
                           sbx_error *err, uint64_t *took)
{
	h_reset(h);
	h_fault_kind(h, "POST", "/process.Process/Start", kind, 1);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.timeout_ms = timeout_ms;
	uint64_t t0 = h_now_ms();
	int rc = h_exec_opts(h, r, g_id, "echo hi; sleep 2; echo bye", &o, NULL, err);
	*took = h_now_ms() - t0;
	print_message("%s: rc %s (%s) after %llu ms\n", kind, sbx_error_code_name(rc), err->message,
	              (unsigned long long)*took);
	return rc;
}

static void test_malformed__stream_garbage_is_protocol_error(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	sbx_error err = {0};
	uint64_t took;
	int rc = exec_with_fault(h, "stream_garbage", 30000, &r, &err, &took);
	assert_int_equal(rc, SBX_EPROTOCOL);
	assert_int_equal(err.code, SBX_EPROTOCOL); /* not its 30 s timeout */
	sbx_exec_result_free(&r); /* SBX_EPROTOCOL after start: the output so far is ours */
	still_works(h);
}

static void test_malformed__stream_oversize_fails_without_allocating(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	sbx_error err = {0};
	uint64_t took;
	int rc = exec_with_fault(h, "stream_oversize", 30000, &r, &err, &took);
	assert_true(rc == SBX_ETOOLARGE || rc == SBX_EPROTOCOL); /* not its 30 s timeout */
	sbx_exec_result_free(&r);
	still_works(h);
}

static void test_malformed__stream_no_end_is_protocol_error(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	sbx_error err = {0};
	uint64_t took;
	int rc = exec_with_fault(h, "stream_no_end", 30000, &r, &err, &took);
	/* seed: "E2B process stream ended without an end-of-stream message" */
	assert_int_equal(rc, SBX_EPROTOCOL); /* not its 30 s timeout */
	/* the output so far stays with the caller (docs/exec.md), who frees it */
	assert_string_equal((char *)r.stdout_data, "hi\nbye\n");
	sbx_exec_result_free(&r);
	still_works(h);
}

static void test_malformed__stream_no_end_after_timeout_is_timed_out(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	sbx_error err = {0};
	uint64_t took;
	int rc = exec_with_fault(h, "stream_no_end", 500, &r, &err, &took);
	assert_int_equal(rc, 0);
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	sbx_exec_result_free(&r);
	still_works(h);
}

static void test_malformed__keepalive_only_stream_ends_at_timeout(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	sbx_error err = {0};
	uint64_t took;
	int rc = exec_with_fault(h, "stream_keepalive_only", 1500, &r, &err, &took);
	assert_int_equal(rc, 0);
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	sbx_exec_result_free(&r);
	assert_true(took >= 1500);
	still_works(h);
}

static void test_malformed__html_500_bodies_are_http_errors(void **state)
{
	h_ctx *h = *state;
	char html[4096];
	int n = snprintf(html, sizeof(html),
	                 "<!DOCTYPE html><html><head><title>500 Internal Server "
	                 "Error</title></head><body>");
	while (n < 3000)
		n += snprintf(html + n, sizeof(html) - (size_t)n, "<p>filler filler filler</p>");
	snprintf(html + n, sizeof(html) - (size_t)n, "MARKER-AT-THE-END</body></html>");
	static const struct {
		const char *method, *path;
	} routes[] = {{"POST", "/v2/sandboxes"},
	              {"GET", "/v2/sandboxes"},
	              {"POST", "/v2/sandboxes/*/connect"},
	              {"POST", "/process.Process/Start"},
	              {"POST", "/files"}};
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		h_reset(h);
		h_fault_status(h, routes[i].method, routes[i].path, 500, html, 1);
		sbx_error err = {0};
		int rc;
		if (i < 2) {
			char *id = NULL;
			sbx_limits l = h_limits(SBX_EGRESS_NONE);
			char name[64];
			h_name(name, sizeof(name), "html");
			rc = sbx_sandbox_create(&id, h->p, name, &l, NULL, &err);
			assert_null(id);
		} else if (i == 2) {
			/* a fresh provider connects first (h->p's last connect covers the call) */
			sbx_exec_result r;
			sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
			sbx_provider *fresh = h_provider_new(h, NULL, NULL);
			rc = sbx_sandbox_exec(&r, fresh, g_id, "true", &o, NULL, &err);
			sbx_provider_free(fresh);
		} else if (i < 4) {
			sbx_exec_result r;
			rc = h_exec_opts(h, &r, g_id, "true", NULL, NULL, &err);
		} else {
			rc = sbx_sandbox_write_file(h->p, g_id, "/workspace/h", "x", 1, NULL, &err);
		}
		h_note_err(h, &err);
		print_message("HTML 500 on %s %s: %s %s\n", routes[i].method, routes[i].path,
		              sbx_error_code_name(rc), err.message);
		assert_int_equal(rc, SBX_EHTTP);
		assert_int_equal(err.http_status, 500);
		assert_non_null(strstr(err.message, "500"));
		assert_null(strstr(err.message, "MARKER-AT-THE-END"));
		assert_true(strlen(err.message) < SBX_ERROR_MESSAGE_MAX);
	}
	still_works(h);
}

static void test_malformed__non_json_success_bodies_are_protocol_errors(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_resume_status rs;
	h_reset(h);
	h_fault_status(h, "POST", "/v2/sandboxes/*/connect", 200, "{not json", 1);
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, g_id, NULL, &err), SBX_EPROTOCOL);
	h_note_err(h, &err);

	/* create answered without a sandboxID */
	sbx_error_clear(&err);
	h_fault_status(h, "POST", "/v2/sandboxes", 201, "{\"templateID\":\"capybara-sandbox\"}", 1);
	char *id = NULL, name[64];
	h_name(name, sizeof(name), "noid");
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	assert_true(sbx_sandbox_create(&id, h->p, name, &l, NULL, &err) < 0);
	assert_null(id);
	h_note_err(h, &err);

	/* create answered with a hostile sandboxID */
	sbx_error_clear(&err);
	h_fault_status(h, "POST", "/v2/sandboxes", 201,
	               "{\"sandboxID\":\"../../etc/passwd\",\"envdAccessToken\":\"x\"}", 1);
	assert_true(sbx_sandbox_create(&id, h->p, name, &l, NULL, &err) < 0);
	assert_null(id);
	h_note_err(h, &err);

	/* list answered with an object instead of an array */
	sbx_error_clear(&err);
	h_fault_status(h, "GET", "/v2/sandboxes", 200, "{\"a\":1}", 1);
	assert_true(sbx_sandbox_destroy_by_name(h->p, name, NULL, &err) < 0);
	h_note_err(h, &err);

	/* deeply nested JSON */
	char deep[20010];
	for (int i = 0; i < 10000; i++) {
		deep[i] = '[';
		deep[10000 + i] = ']';
	}
	deep[20000] = '\0';
	sbx_error_clear(&err);
	h_fault_status(h, "POST", "/v2/sandboxes/*/connect", 200, deep, 1);
	assert_true(sbx_sandbox_resume(&rs, h->p, g_id, NULL, &err) < 0);
	h_note_err(h, &err);
	still_works(h);
}

/*
 * The server's message is kept to its first 300 bytes (include/sandbox/error.h states
 * the rule), with control bytes made harmless, whatever the server sends.
 */
static void test_malformed__errors_quote_at_most_300_bytes_without_control_bytes(void **state)
{
	h_ctx *h = *state;
	char body[1024];
	int n = snprintf(body, sizeof(body), "\x1b[31mred\x01\x7f");
	for (int i = 0; n < 900; i++)
		n += snprintf(body + n, sizeof(body) - (size_t)n, "%03d-abcdefgh|", i);
	h_reset(h);
	h_fault_status(h, "POST", "/v2/sandboxes/*/connect", 500, body, 1);
	sbx_resume_status rs;
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, g_id, NULL, &err), SBX_EHTTP);
	h_note_err(h, &err);
	print_message("message: %s\n", err.message);
	for (const char *p = err.message; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			fail_msg("raw control byte 0x%02x in the message", (unsigned char)*p);
	/* 10 bytes of prefix + 22 groups of 13 = 296: group 021 is whole, 023 is cut */
	assert_non_null(strstr(err.message, "021-abcdefgh|"));
	assert_null(strstr(err.message, "023-abcdefgh"));
	h_faults_clear(h);
}

/* A connect held 30 s; the resume is most likely inside it after 0.5 s, and either way only the
 * abort can end the call before the fault's 30 s are up. */
static void arm_hanging_connect(h_ctx *h)
{
	json_t *f =
	    json_pack("{s:s, s:s, s:s, s:i, s:i}", "method", "POST", "path",
	              "/v2/sandboxes/*/connect", "kind", "delay", "delayMs", 30000, "times", 1);
	char *text = json_dumps(f, JSON_COMPACT);
	h_fault(h, text);
	free(text);
	json_decref(f);
}

static void wait_half_a_second(h_ctx *h)
{
	(void)h;
	usleep(500 * 1000);
}

/* A connect that hangs for 30 s: an abort still returns within milliseconds, measured robustly
 * (h_assert_resume_aborts_promptly). */
static void test_malformed__hanging_connect_aborts_promptly(void **state)
{
	h_ctx *h = *state;
	h_assert_resume_aborts_promptly(h, g_id, arm_hanging_connect, wait_half_a_second,
	                                "hanging connect");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_malformed__stream_garbage_is_protocol_error),
	    cmocka_unit_test(test_malformed__stream_oversize_fails_without_allocating),
	    cmocka_unit_test(test_malformed__stream_no_end_is_protocol_error),
	    cmocka_unit_test(test_malformed__stream_no_end_after_timeout_is_timed_out),
	    cmocka_unit_test(test_malformed__keepalive_only_stream_ends_at_timeout),
	    cmocka_unit_test(test_malformed__html_500_bodies_are_http_errors),
	    cmocka_unit_test(test_malformed__non_json_success_bodies_are_protocol_errors),
	    cmocka_unit_test(test_malformed__errors_quote_at_most_300_bytes_without_control_bytes),
	    cmocka_unit_test(test_malformed__hanging_connect_aborts_promptly),
	};
	return cmocka_run_group_tests_name("integration_malformed", tests, setup, teardown);
}
