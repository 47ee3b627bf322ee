/*
 * tests/integration/test_template.c: a sandbox made from a template without
 * templates/capybara-sandbox's conventions (fake-e2b's stock "base", like
 * E2B's) against fake-e2b: exec, read and write as the sandbox user fail with
 * SBX_ESANDBOX naming what the template lacks (found by a check run as root),
 * not envd's "invalid username"; exec as root still works.
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
	return h_group_setup(state);
}

static int teardown(void **state)
{
	return h_group_teardown(state);
}

static const char WANT[] = "template base lacks what sandbox-e2b needs (user sandbox with uid "
                           "1000; /workspace; /skills (root, 0755); /opt/capybara (root, "
                           "0700)); build templates/capybara-sandbox (its README.md) and name it "
                           "in \"template\"";

static void test_template__base_says_what_it_lacks(void **state)
{
	h_ctx *h = *state;
	char json[512];
	sbx_e2b_config *cfg = NULL;
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_provider *p = NULL;
	sbx_error err = {0};
	sbx_exec_result r;
	sbx_file *f = NULL;
	char name[64], *id = NULL;

	if (h->srv.tls)
		skip(); /* the provider below takes the plain address */
	snprintf(json, sizeof(json),
	         "{\"apiKey\":\"" H_API_KEY "\",\"template\":\"base\",\"apiUrl\":\"%s\"}",
	         h->srv.url);
	assert_int_equal(sbx_e2b_config_parse(&cfg, json, strlen(json), &err), 0);
	opts.envd_url = h->srv.url;
	assert_int_equal(sbx_e2b_provider_new(&p, cfg, &opts, &err), 0);
	sbx_e2b_config_free(cfg);
	h_name(name, sizeof(name), "tpl");
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	assert_int_equal(sbx_sandbox_create(&id, p, name, &l, NULL, &err), 0);
	h_learn_token(h, id);

	assert_int_equal(sbx_sandbox_exec(&r, p, id, "true", NULL, NULL, &err), SBX_ESANDBOX);
	assert_string_equal(err.message, WANT);
	assert_string_equal(err.e2b_code, "failed_precondition"); /* the reason as data */
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_read_file(&f, p, id, "/etc/hostname", 100, NULL, &err),
	                 SBX_ESANDBOX);
	assert_string_equal(err.message, WANT);
	assert_string_equal(err.e2b_code, "failed_precondition");
	sbx_error_clear(&err);
	/* the write step runs as root and hands the bytes to runuser, which finds no user */
	assert_int_equal(sbx_sandbox_write_file(p, id, "/tmp/x", "x", 1, NULL, &err), SBX_ESANDBOX);
	assert_string_equal(err.message, WANT);
	assert_string_equal(err.e2b_code, "failed_precondition");
	sbx_error_clear(&err);
	/* root needs no template convention */
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.user = SBX_USER_ROOT;
	o.cwd = "/";
	assert_int_equal(sbx_sandbox_exec(&r, p, id, "id -un", &o, NULL, &err), 0);
	assert_int_equal(r.stdout_len, 5);
	assert_memory_equal(r.stdout_data, "root\n", 5);
	sbx_exec_result_free(&r);
	assert_int_equal(sbx_sandbox_destroy(p, id, NULL, &err), 0);
	sbx_free(id);
	sbx_provider_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_template__base_says_what_it_lacks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
