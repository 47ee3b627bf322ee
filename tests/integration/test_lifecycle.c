/*
 * tests/integration/test_lifecycle.c: create / resume / suspend / destroy /
 * destroy_by_name of the E2B provider against fake-e2b, checked on the wire
 * through fake-e2b's request log (docs/contract.md "Lifecycle", "Egress").
 *
 * This file: create (validation before any request, the request's body and headers, egress
 * mapping) and main. The others: test_lifecycle_verbs.c (resume, suspend, destroy,
 * destroy_by_name), test_lifecycle_errors.c (connect conflicts and errors, no envd token,
 * secrets echoed, every method after destroy, a wrong API key).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "lifecycle_test.h"

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SEED_OPEN_REFUSED                                                                          \
	"Sandbox egress \"open\" (sandbox.limits.egress) is refused: the sandbox-e2b plugin "      \
	"setting allowOpenEgress is false. Set extensionConfig.\"sandbox-e2b\".allowOpenEgress "   \
	"to true (trusted environments only), or set sandbox.limits.egress to \"allowlist\" or "   \
	"\"none\"."

/* ---- helpers ---- */

void assert_json_eq(json_t *got, const char *want_text)
{
	json_t *want = json_loads(want_text, 0, NULL);
	assert_non_null(want);
	if (!got || !json_equal(got, want)) {
		char *g = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : strdup("(none)");
		char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("JSON mismatch\n  got:  %s\n  want: %s", g, w);
	}
	json_decref(want);
}

static void assert_no_requests(h_ctx *h)
{
	json_t *log = h_reqlog(h);
	if (json_array_size(log) != 0) {
		char *t = json_dumps(log, JSON_COMPACT);
		fail_msg("expected no requests, got %s", t);
	}
	json_decref(log);
}

/* ---- create: validation ---- */

static void test_create__invalid_name_sends_no_request(void **state)
{
	h_ctx *h = *state;
	static const char *bad[] = {"", "-lead", ".lead", "a b", "x/y", "caf\xc3\xa9", "a$b", NULL};
	char longname[103];
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	h_reset(h);
	for (size_t i = 0; bad[i]; i++) {
		sbx_error err = {0};
		char *id = NULL;
		assert_int_equal(sbx_sandbox_create(&id, h->p, bad[i], &l, NULL, &err),
		                 SBX_EINVALID);
		assert_int_equal(err.code, SBX_EINVALID);
		assert_null(id);
		h_note_err(h, &err);
	}
	memset(longname, 'a', 102);
	longname[102] = '\0'; /* 102 > 101 characters */
	sbx_error err = {0};
	char *id = NULL;
	assert_int_equal(sbx_sandbox_create(&id, h->p, longname, &l, NULL, &err), SBX_EINVALID);
	longname[101] =
	    '\0'; /* exactly 101: valid, so only validate-fail cases stay request-free */
	assert_no_requests(h);
}

static void test_create__invalid_limits_send_no_request(void **state)
{
	h_ctx *h = *state;
	static const char *bad_hosts[][1] = {{"Example.com"}, {"http://x.com"}, {"*.*.x.com"},
	                                     {"x"},           {"1.2.3.4/33"},   {""}};
	char name[64];
	h_name(name, sizeof(name), "lim");
	h_reset(h);
	sbx_limits cases[6];
	for (int i = 0; i < 6; i++)
		cases[i] = h_limits(SBX_EGRESS_NONE);
	cases[0].cpu = 0;
	cases[1].cpu = -1;
	cases[2].memory_mb = 0;
	cases[3].disk_mb = NAN;
	cases[4].cpu = INFINITY;
	cases[5].disk_mb = -0.5;
	for (int i = 0; i < 6; i++) {
		sbx_error err = {0};
		char *id = NULL;
		assert_int_equal(sbx_sandbox_create(&id, h->p, name, &cases[i], NULL, &err),
		                 SBX_EINVALID);
		h_note_err(h, &err);
	}
	for (size_t i = 0; i < sizeof(bad_hosts) / sizeof(bad_hosts[0]); i++) {
		sbx_limits l = h_limits(SBX_EGRESS_ALLOWLIST);
		l.allow_hosts = bad_hosts[i];
		l.allow_hosts_count = 1;
		sbx_error err = {0};
		char *id = NULL;
		assert_int_equal(sbx_sandbox_create(&id, h->p, name, &l, NULL, &err), SBX_EINVALID);
		h_note_err(h, &err);
	}
	assert_no_requests(h);
}

static void test_create__open_refused_with_seed_message(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "open");
	h_reset(h);
	sbx_limits l = h_limits(SBX_EGRESS_OPEN);
	sbx_error err = {0};
	char *id = NULL;
	assert_int_equal(sbx_sandbox_create(&id, h->p, name, &l, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message, SEED_OPEN_REFUSED);
	assert_null(id);
	assert_no_requests(h);
}

static void test_create__already_aborted_sends_no_request(void **state)
{
	h_ctx *h = *state;
	char name[64];
	sbx_signal *sig = NULL;
	h_name(name, sizeof(name), "abrt");
	assert_int_equal(sbx_signal_new(&sig), 0);
	sbx_signal_abort(sig);
	h_reset(h);
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	char *id = NULL;
	const char *tags[] = {"a"};
	sbx_exec_result r;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_file *f = NULL;
	sbx_stat st;
	sbx_resume_status rs;
	const char *sid = "i0000000000000000000a";
	assert_int_equal(sbx_sandbox_create(&id, h->p, name, &l, sig, &err), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, sid, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_suspend(h->p, sid, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_destroy(h->p, sid, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_destroy_by_name(h->p, name, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_kill_all(h->p, sid, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_kill_tagged(h->p, sid, tags, 1, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_exec(&r, h->p, sid, "true", &o, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_read_file(&f, h->p, sid, "/x", 10, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_write_file(h->p, sid, "/x", "a", 1, sig, NULL), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_stat(&st, h->p, sid, "/x", sig, NULL), SBX_EABORTED);
	assert_no_requests(h);
	sbx_signal_free(sig);
}

/* ---- create: the request ---- */

/* Create `name` with limits on provider p; return the logged create body (new ref). */
static json_t *create_body(h_ctx *h, sbx_provider *p, const char *name, const sbx_limits *l,
                           char **id_out)
{
	sbx_error err = {0};
	h_reset(h);
	int rc = sbx_sandbox_create(id_out, p, name, l, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("create: %s %s", sbx_error_code_name(rc), err.message);
	json_t *log = h_reqlog(h);
	/* the same-name list first, then the create */
	json_t *list = h_find(log, "GET", "/v2/sandboxes$", 0);
	assert_non_null(list);
	char meta[160];
	snprintf(meta, sizeof(meta), "capybara-sandbox-name=%s", name);
	assert_string_equal(h_entry_query(list, "metadata"), meta);
	assert_string_equal(h_entry_query(list, "state"), "running,paused");
	assert_string_equal(h_entry_query(list, "limit"), "100");
	assert_null(h_entry_query(list, "nextToken"));
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes$"), 1);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes$"), 1);
	json_t *c = h_find(log, "POST", "/v2/sandboxes$", 0);
	assert_string_equal(h_entry_path(c), "/v2/sandboxes");
	assert_int_equal(h_entry_status(c), 201);
	json_t *body = h_entry_json(c);
	json_decref(log);
	return body;
}

static void want_body(json_t *body, const char *name, const char *egress_json)
{
	char want[1024];
	snprintf(
	    want, sizeof(want),
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"capybara-sandbox-name\":\"%s\"},"
	    "\"timeout\":3600,\"autoPause\":true,\"secure\":true,%s}",
	    name, egress_json);
	assert_json_eq(body, want);
}

static void test_create__egress_none(void **state)
{
	h_ctx *h = *state;
	char name[64], *id = NULL;
	h_name(name, sizeof(name), "eg-none");
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	json_t *b = create_body(h, h->p, name, &l, &id);
	want_body(b, name, "\"allow_internet_access\":false");
	assert_true(strlen(id) > 0);
	json_decref(b);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

static void test_create__egress_allowlist(void **state)
{
	h_ctx *h = *state;
	char name[64], *id = NULL;
	const char *hosts[] = {"pypi.org", "*.github.com", "10.1.2.3", "192.168.0.0/16"};
	h_name(name, sizeof(name), "eg-allow");
	sbx_limits l = h_limits(SBX_EGRESS_ALLOWLIST);
	l.allow_hosts = hosts;
	l.allow_hosts_count = 4;
	json_t *b = create_body(h, h->p, name, &l, &id);
	want_body(b, name,
	          "\"network\":{\"allowOut\":[\"pypi.org\",\"*.github.com\",\"10.1.2.3\","
	          "\"192.168.0.0/16\"],\"denyOut\":[\"0.0.0.0/0\"]}");
	json_decref(b);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

static void test_create__egress_empty_allowlist_is_none(void **state)
{
	h_ctx *h = *state;
	char name[64], *id = NULL;
	h_name(name, sizeof(name), "eg-empty");
	sbx_limits l = h_limits(SBX_EGRESS_ALLOWLIST);
	json_t *b = create_body(h, h->p, name, &l, &id);
	want_body(b, name, "\"allow_internet_access\":false");
	json_decref(b);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

static void test_create__egress_open_when_allowed(void **state)
{
	h_ctx *h = *state;
	char name[64], *id = NULL;
	sbx_provider *p = h_provider_new(h, "\"allowOpenEgress\":true", NULL);
	assert_non_null(p);
	h_name(name, sizeof(name), "eg-open");
	sbx_limits l = h_limits(SBX_EGRESS_OPEN);
	json_t *b = create_body(h, p, name, &l, &id);
	want_body(b, name, "\"allow_internet_access\":true");
	json_decref(b);
	assert_int_equal(sbx_sandbox_destroy(p, id, NULL, NULL), 0);
	sbx_free(id);
	sbx_provider_free(p);
}

static void test_create__allowlist_degrades_to_none_with_warning(void **state)
{
	h_ctx *h = *state;
	char name[64], *id = NULL;
	const char *hosts[] = {"pypi.org"};
	sbx_provider *p = h_provider_new(h, "\"domainAllowlist\":false", NULL);
	assert_non_null(p);
	h_name(name, sizeof(name), "eg-degr");
	size_t before = h_log_count(h, SBX_LOG_WARN, "egress allowlist degraded to none");
	sbx_limits l = h_limits(SBX_EGRESS_ALLOWLIST);
	l.allow_hosts = hosts;
	l.allow_hosts_count = 1;
	json_t *b = create_body(h, p, name, &l, &id);
	want_body(b, name, "\"allow_internet_access\":false");
	json_decref(b);
	assert_int_equal(
	    h_log_count(h, SBX_LOG_WARN,
	                "sandbox-e2b: domain allowlists are disabled for this deployment "
	                "(domainAllowlist is false); egress allowlist degraded to none"),
	    before + 1);
	assert_int_equal(sbx_sandbox_destroy(p, id, NULL, NULL), 0);
	sbx_free(id);
	sbx_provider_free(p);
}

static void test_create__timeout_seconds_from_config(void **state)
{
	h_ctx *h = *state;
	char name[64], *id = NULL;
	sbx_provider *p = h_provider_new(h, "\"timeoutSeconds\":600", NULL);
	h_name(name, sizeof(name), "tmo");
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	json_t *b = create_body(h, p, name, &l, &id);
	assert_int_equal(json_integer_value(json_object_get(b, "timeout")), 600);
	json_decref(b);
	assert_int_equal(sbx_sandbox_destroy(p, id, NULL, NULL), 0);
	sbx_free(id);
	sbx_provider_free(p);
}

static void test_create__control_plane_headers(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "hdr");
	h_reset(h);
	char *id = h_create(h, NULL, name);
	json_t *log = h_reqlog(h);
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e)
	{
		json_t *hd = json_object_get(e, "headers");
		assert_string_equal(json_string_value(json_object_get(hd, "x-api-key")), "***");
		assert_null(json_object_get(hd, "x-access-token"));
		if (strcmp(h_entry_method(e), "POST") == 0)
			assert_string_equal(json_string_value(json_object_get(hd, "content-type")),
			                    "application/json");
	}
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create__invalid_name_sends_no_request),
	    cmocka_unit_test(test_create__invalid_limits_send_no_request),
	    cmocka_unit_test(test_create__open_refused_with_seed_message),
	    cmocka_unit_test(test_create__already_aborted_sends_no_request),
	    cmocka_unit_test(test_create__egress_none),
	    cmocka_unit_test(test_create__egress_allowlist),
	    cmocka_unit_test(test_create__egress_empty_allowlist_is_none),
	    cmocka_unit_test(test_create__egress_open_when_allowed),
	    cmocka_unit_test(test_create__allowlist_degrades_to_none_with_warning),
	    cmocka_unit_test(test_create__timeout_seconds_from_config),
	    cmocka_unit_test(test_resume__resumed_then_gone_after_destroy),
	    cmocka_unit_test(test_suspend__twice_and_missing_are_success),
	    cmocka_unit_test(test_destroy__missing_is_success),
	    cmocka_unit_test(test_destroy_by_name__deletes_all_of_that_name_only),
	    cmocka_unit_test(test_resume__409_retried_five_times),
	    cmocka_unit_test(test_resume__six_409_fail),
	    cmocka_unit_test(test_resume__abort_during_409_wait_returns_promptly),
	    cmocka_unit_test(test_resume__bare_404_401_5xx_are_ordinary_errors),
	    cmocka_unit_test(test_resume__network_error_is_ordinary_error),
	    cmocka_unit_test(test_connect__no_token_is_gone_and_sends_no_envd_request),
	    cmocka_unit_test(test_gone__every_method_after_destroy),
	    cmocka_unit_test(test_auth__wrong_api_key_is_http_401),
	    cmocka_unit_test(test_create__control_plane_headers),
	    cmocka_unit_test(test_secrets__echoed_by_server_never_reach_errors_or_logs),
	};
	return cmocka_run_group_tests_name("integration_lifecycle", tests, h_group_setup,
	                                   h_group_teardown);
}
