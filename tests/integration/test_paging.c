/*
 * tests/integration/test_paging.c: create replaces every same-name sandbox,
 * following the list's X-Next-Token across pages of 100 (docs/contract.md
 * "Lifecycle"; docs/protocol.md "List"). Its own
 * executable: making 101 sandboxes takes a while, and ctest -j runs it beside
 * the others.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* 101 same-name sandboxes (some paused) need two list pages of 100: all are destroyed. */
static void test_create__replaces_same_name_across_list_pages(void **state)
{
	h_ctx *h = *state;
	char name[64], other[64];
	enum { N = 101 };
	char *ids[N];
	h_name(name, sizeof(name), "same");
	h_name(other, sizeof(other), "other");
	uint64_t t0 = h_now_ms();
	char *other_id = h_raw_create(h, other);
	for (int i = 0; i < N; i++)
		ids[i] = h_raw_create(h, name);
	print_message("%d sandboxes made behind the provider's back in %llu ms\n", N + 1,
	              (unsigned long long)(h_now_ms() - t0));
	for (int i = 0; i < 3; i++) {
		char path[128];
		long st = 0;
		snprintf(path, sizeof(path), "/sandboxes/%s/pause", ids[i * 40]);
		json_decref(h_http(h, "POST", path, "{}", &st, NULL));
		assert_int_equal(st, 204);
	}
	assert_int_equal(h_fake_count_named(h, name), N);
	h_reset(h);
	t0 = h_now_ms();
	char *id = h_create(h, NULL, name);
	print_message("create replacing %d same-name sandboxes took %llu ms\n", N,
	              (unsigned long long)(h_now_ms() - t0));
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes"), 2);
	json_t *page2 = h_find(log, "GET", "/v2/sandboxes", 1);
	assert_non_null(h_entry_query(page2, "nextToken"));
	assert_true(strlen(h_entry_query(page2, "nextToken")) > 0);
	assert_int_equal(h_count(log, "DELETE", "/sandboxes/"), N);
	long total = 0;
	for (size_t k = 0; k < N; k++)
		total += (long)json_integer_value(
		    json_object_get(h_find(log, "DELETE", "/sandboxes/", k), "duration_ms"));
	print_message("fake-e2b spent %ld ms per DELETE on average\n", total / N);
	/* each old sandbox deleted exactly once (fake-e2b logs at completion, so the
	 * log's order is not the client's order and is not checked) */
	for (int k = 0; k < N; k++) {
		char path[128];
		snprintf(path, sizeof(path), "/sandboxes/%s$", ids[k]);
		assert_int_equal(h_count(log, "DELETE", path), 1);
	}
	json_decref(log);
	assert_int_equal(h_fake_count_named(h, name), 1);
	char *st = h_fake_state(h, other_id);
	assert_non_null(st);
	free(st);
	for (int k = 0; k < N; k++) {
		assert_null(h_fake_state(h, ids[k]));
		free(ids[k]);
	}
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_destroy(h->p, other_id, NULL, NULL), 0);
	sbx_free(id);
	free(other_id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create__replaces_same_name_across_list_pages),
	};
	return cmocka_run_group_tests_name("integration_paging", tests, h_group_setup,
	                                   h_group_teardown);
}
