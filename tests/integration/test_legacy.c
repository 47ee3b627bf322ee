/*
 * tests/integration/test_legacy.c: the library against fake-e2b
 * --legacy-routes, an older self-hosted E2B API without the /v2 routes
 * (docs/reliability.md "Self-hosted E2B without the /v2 routes"): create,
 * exec, suspend and resume work through the legacy routes; the /v2 route's
 * "no matching operation" 404 is never read as a gone sandbox; each provider
 * learns the fallback once; a deleted sandbox is still gone.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int setup(void **state)
{
	setenv("ITEST_FAKE_E2B_ARG", "--legacy-routes", 1);
	return h_group_setup(state);
}

static void test_legacy__the_contract_works_through_the_legacy_routes(void **state)
{
	h_ctx *h = *state;
	char name[64], *id, *out;
	sbx_resume_status rs = SBX_RESUME_GONE;
	sbx_error err = {0};
	json_t *log;

	h_reqlog_clear(h);
	h_name(name, sizeof(name), "legacy");
	id = h_create(h, NULL, name);
	h_learn_token(h, id);
	out = h_sh(h, id, "echo hi");
	assert_string_equal(out, "hi\n");
	free(out);

	/* resume of a running sandbox, then of a paused one: resumed, never gone */
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	assert_int_equal(sbx_sandbox_suspend(h->p, id, NULL, &err), 0);
	rs = SBX_RESUME_GONE;
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	out = h_sh(h, id, "echo again");
	assert_string_equal(out, "again\n");
	free(out);

	/* the provider asked a /v2 route at most once per kind, then used the legacy ones */
	log = h_reqlog(h);
	/* the same-name list runs beside create's POST: whichever meets the 404 first teaches the
	 * provider, so the POST tries /v2 once or not at all */
	assert_true(h_count(log, "POST", "/v2/sandboxes") <= 1);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes"), 1);
	assert_true(h_count(log, "POST", "/sandboxes$") == 1);
	assert_true(h_count(log, "POST", "/sandboxes/") >= 3); /* legacy connects and pause */
	json_decref(log);
	assert_int_equal(h_log_count(h, SBX_LOG_WARN, "has no /v2 routes"), 1);

	/* a deleted sandbox is gone on the legacy route too */
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	rs = SBX_RESUMED;
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUME_GONE);
	h_note_err(h, &err);
	sbx_free(id);
}

/* A fresh provider's first connect meets the /v2 404: it must fall back, not call it gone. */
static void test_legacy__a_fresh_provider_does_not_read_the_missing_route_as_gone(void **state)
{
	h_ctx *h = *state;
	char name[64], *id;
	sbx_provider *p2 = h_provider_new(h, NULL, NULL);
	sbx_resume_status rs = SBX_RESUME_GONE;
	sbx_error err = {0};
	json_t *log;

	h_name(name, sizeof(name), "legacy2");
	id = h_create(h, NULL, name);
	h_learn_token(h, id);
	h_reqlog_clear(h);
	assert_int_equal(sbx_sandbox_resume(&rs, p2, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes/"), 1);
	assert_int_equal(h_entry_status(h_find(log, "POST", "/v2/sandboxes/", 0)), 404);
	assert_int_equal(h_count(log, "POST", "/sandboxes/"), 1);
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(p2, id, NULL, &err), 0);
	h_note_err(h, &err);
	sbx_provider_free(p2);
	sbx_free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_legacy__the_contract_works_through_the_legacy_routes),
	    cmocka_unit_test(test_legacy__a_fresh_provider_does_not_read_the_missing_route_as_gone),
	};
	return cmocka_run_group_tests_name("legacy", tests, setup, h_group_teardown);
}
