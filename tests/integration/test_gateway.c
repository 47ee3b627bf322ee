/*
 * tests/integration/test_gateway.c: client reliability end to end against
 * fake-e2b (docs/reliability.md): a create whose POST the server holds past
 * the client's deadline and then carries out leaves no sandbox behind; a
 * gateway's 503 on an idempotent call is retried and logged without secrets,
 * envd Start is never sent twice; a connect reply naming another sandbox is
 * a protocol error and no envd request goes to that sandbox.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define HTML_503 "<html><body>503 Service Temporarily Unavailable</body></html>"
#define HTML_502 "<html><body>502 Bad Gateway</body></html>"

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "gw", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static size_t listed_named(h_ctx *h, const char *name)
{
	sbx_list_options o = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	sbx_error err = {0};
	size_t n;

	o.name = name;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	n = l->count;
	sbx_info_list_free(l);
	return n;
}

/*
 * The server holds the create 61 s (the client gives up at 60 s, SBX_E2B_API_TIMEOUT_MS)
 * and then makes the sandbox. The library's cleanup lists the name again after 1, 2, 4
 * and 8 s: it finds the late sandbox and deletes it before create returns.
 */
static void test_gateway__create_past_the_deadline_leaves_nothing(void **state)
{
	h_ctx *h = *state;
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	char name[64], *id = NULL;
	json_t *log, *e;
	const char *path;

	h_reset(h);
	h_fault(h, "{\"method\":\"POST\",\"path\":\"/v2/sandboxes\",\"kind\":\"delay\","
	           "\"delayMs\":61000,\"times\":1}");
	h_name(name, sizeof(name), "late");
	assert_int_equal(sbx_sandbox_create(&id, h->p, name, &l, NULL, &err), SBX_ETIMEOUT);
	h_note_err(h, &err);
	assert_null(id);
	assert_int_equal(h_fake_count_named(h, name), 0);
	assert_int_equal(listed_named(h, name), 0);

	log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes$"), 1); /* never sent again */
	e = h_find(log, "POST", "/v2/sandboxes$", 0);
	assert_int_equal(h_entry_status(e), 201); /* the server did make it */
	assert_int_equal(h_count(log, "DELETE", "/sandboxes/"), 1);
	e = h_find(log, "DELETE", "/sandboxes/", 0);
	path = h_entry_path(e);
	assert_non_null(path);
	assert_int_equal(strlen(path), strlen("/sandboxes/") + 21); /* a sandbox id: i + 20 */
	assert_int_equal(h_entry_status(e), 204);
	json_decref(log);
	assert_int_equal(
	    h_log_count(h, SBX_LOG_WARN, "removed the sandbox a failed create had made"), 1);
}

static void test_gateway__idempotent_calls_retried_start_never(void **state)
{
	h_ctx *h = *state;
	sbx_list_options o = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	sbx_exec_result r;
	sbx_error err = {0};
	size_t before;
	json_t *log;

	/* the list: two gateway 503s, then the answer */
	h_reset(h);
	before = h_log_count(h, SBX_LOG_WARN, "retrying an E2B call after a gateway fault");
	h_fault_status(h, "GET", "/v2/sandboxes", 503, HTML_503, 2);
	o.name = "nothing-has-this-name";
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_int_equal(l->count, 0);
	sbx_info_list_free(l);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes$"), 3);
	json_decref(log);
	assert_int_equal(
	    h_log_count(h, SBX_LOG_WARN, "retrying an E2B call after a gateway fault") - before, 2);
	assert_int_equal(
	    h_log_count(h, SBX_LOG_WARN, "request=E2B GET /v2/sandboxes cause=HTTP 503"), 2);

	/* envd Start answered by a gateway's 502: one Start, the error is the caller's */
	h_reset(h);
	before = h_log_count(h, SBX_LOG_WARN, "retrying");
	h_fault_status(h, "POST", "/process.Process/Start", 502, HTML_502, 1);
	assert_int_equal(
	    h_exec_opts(h, &r, g_id, "echo once >> /workspace/starts", NULL, NULL, &err),
	    SBX_EHTTP);
	h_note_err(h, &err);
	assert_int_equal(err.http_status, 502);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), 1);
	json_decref(log);
	assert_int_equal(h_log_count(h, SBX_LOG_WARN, "retrying") - before, 0);
	h_assert_secret_free(h);
}

/* A connect reply for another (real) sandbox: SBX_EPROTOCOL, and nothing is sent to it. */
static void test_gateway__connect_reply_for_another_sandbox(void **state)
{
	h_ctx *h = *state;
	sbx_provider *fresh = h_provider_new(h, NULL, NULL);
	sbx_exec_result r;
	sbx_error err = {0};
	char name[64], path[128], body[512], expect[256], *other, *tok;
	json_t *log;

	h_name(name, sizeof(name), "other");
	other = h_raw_create(h, name);
	tok = h_token_of(h, other);
	assert_non_null(tok);
	h_add_secret(h, tok);
	h_reset(h);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", g_id);
	snprintf(body, sizeof(body),
	         "{\"sandboxID\":\"%s\",\"templateID\":\"base\",\"clientID\":\"6532622b\","
	         "\"envdVersion\":\"0.6.13\",\"envdAccessToken\":\"%s\"}",
	         other, tok);
	h_fault_status(h, "POST", path, 200, body, 1);
	{
		sbx_exec_options eo = SBX_EXEC_OPTIONS_INIT;
		assert_int_equal(sbx_sandbox_exec(&r, fresh, g_id, "touch /workspace/redirected",
		                                  &eo, NULL, &err),
		                 SBX_EPROTOCOL);
	}
	h_note_err(h, &err);
	snprintf(expect, sizeof(expect),
	         "E2B connect for sandbox %s answered for another sandbox, %s", g_id, other);
	assert_string_equal(err.message, expect);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", path), 1);
	assert_int_equal(h_count_envd(log), 0);
	json_decref(log);
	sbx_provider_free(fresh);
	assert_int_equal(sbx_sandbox_destroy(h->p, other, NULL, NULL), 0);
	free(tok);
	free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gateway__idempotent_calls_retried_start_never),
	    cmocka_unit_test(test_gateway__connect_reply_for_another_sandbox),
	    cmocka_unit_test(test_gateway__create_past_the_deadline_leaves_nothing),
	};
	return cmocka_run_group_tests_name("gateway", tests, setup, teardown);
}
