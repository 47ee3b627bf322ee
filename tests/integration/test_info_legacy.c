/*
 * tests/integration/test_info_legacy.c: sbx_sandbox_list and
 * sbx_sandbox_get_info against fake-e2b --legacy-routes, an older
 * self-hosted E2B without GET /v2/sandboxes (docs/sandboxes.md "Older
 * control planes"): the list falls back to GET /sandboxes (running
 * sandboxes only), the state filter still holds, info works.
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

static void test_info_legacy__list_falls_back_running_only(void **state)
{
	h_ctx *h = *state;
	char a[64], b[64];
	sbx_error err = {0};
	sbx_info_list *l = NULL;
	sbx_list_options o = SBX_LIST_OPTIONS_INIT;
	sbx_sandbox_info *info = NULL;

	h_name(a, sizeof(a), "lega");
	h_name(b, sizeof(b), "legb");
	char *ida = h_create(h, NULL, a), *idb = h_create(h, NULL, b);
	assert_int_equal(sbx_sandbox_suspend(h->p, idb, NULL, &err), 0);

	h_reqlog_clear(h);
	assert_int_equal(sbx_sandbox_list(&l, h->p, NULL, NULL, &err), 0);
	assert_int_equal(l->count, 1); /* the legacy route lists running sandboxes only */
	assert_string_equal(l->items[0].id, ida);
	assert_string_equal(l->items[0].name, a);
	assert_int_equal(l->items[0].state, SBX_STATE_RUNNING);
	sbx_info_list_free(l);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/sandboxes$"), 1);
	json_decref(log);

	o.name = a;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_int_equal(l->count, 1);
	assert_string_equal(l->items[0].id, ida);
	sbx_info_list_free(l);
	o.name = NULL;
	o.state = SBX_STATE_PAUSED; /* never a running one, whatever the route returns */
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_int_equal(l->count, 0);
	sbx_info_list_free(l);

	/* GET /sandboxes/{id} is an old route: info sees the paused one too */
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, idb, NULL, &err), 0);
	assert_int_equal(info->state, SBX_STATE_PAUSED);
	assert_string_equal(info->name, b);
	sbx_sandbox_info_free(info);

	assert_int_equal(sbx_sandbox_destroy(h->p, ida, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_destroy(h->p, idb, NULL, &err), 0);
	sbx_free(ida);
	sbx_free(idb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_info_legacy__list_falls_back_running_only),
	};
	return cmocka_run_group_tests(tests, setup, h_group_teardown);
}
