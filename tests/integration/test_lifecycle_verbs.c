/*
 * tests/integration/test_lifecycle_verbs.c: resume, suspend, destroy and destroy_by_name of the
 * E2B provider against fake-e2b, checked through its request log (docs/contract.md
 * "Lifecycle"). Part of test_lifecycle (main in test_lifecycle.c).
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

/* ---- resume / suspend / destroy ---- */

void test_resume__resumed_then_gone_after_destroy(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "res");
	char *id = h_create(h, NULL, name);
	sbx_resume_status rs = SBX_RESUME_GONE;
	sbx_error err = {0};
	h_reset(h);
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 1);
	json_t *c = json_array_get(log, 0);
	char path[128];
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	assert_string_equal(h_entry_path(c), path);
	assert_string_equal(h_entry_method(c), "POST");
	json_t *b = h_entry_json(c);
	assert_json_eq(b, "{\"timeout\":3600}");
	json_decref(b);
	json_decref(log);

	/* paused → resumed (201) */
	assert_int_equal(sbx_sandbox_suspend(h->p, id, NULL, &err), 0);
	char *st = h_fake_state(h, id);
	assert_string_equal(st, "paused");
	free(st);
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	st = h_fake_state(h, id);
	assert_string_equal(st, "running");
	free(st);

	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	rs = SBX_RESUMED;
	assert_int_equal(sbx_sandbox_resume(&rs, h->p, id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUME_GONE);
	h_note_err(h, &err);
	sbx_free(id);
}

void test_suspend__twice_and_missing_are_success(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "susp");
	char *id = h_create(h, NULL, name);
	sbx_error err = {0};
	h_reset(h);
	assert_int_equal(sbx_sandbox_suspend(h->p, id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_suspend(h->p, id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_suspend(h->p, "i0missing0000000000000", NULL, &err), 0);
	h_note_err(h, &err);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 3);
	int want[] = {204, 409, 404};
	for (int i = 0; i < 3; i++) {
		json_t *e = json_array_get(log, (size_t)i);
		assert_string_equal(h_entry_method(e), "POST");
		assert_int_equal(h_entry_status(e), want[i]);
		json_t *b = h_entry_json(e);
		assert_json_eq(b, "{}");
		json_decref(b);
	}
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	assert_string_equal(h_entry_path(json_array_get(log, 0)), path);
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	sbx_free(id);
}

void test_destroy__missing_is_success(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "dst");
	char *id = h_create(h, NULL, name);
	sbx_error err = {0};
	h_reset(h);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	h_note_err(h, &err);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "DELETE", "/sandboxes/"), 2);
	assert_int_equal(h_entry_status(json_array_get(log, 0)), 204);
	assert_int_equal(h_entry_status(json_array_get(log, 1)), 404);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	assert_string_equal(h_entry_path(json_array_get(log, 0)), path);
	json_decref(log);
	assert_null(h_fake_state(h, id));
	sbx_free(id);
}

void test_destroy_by_name__deletes_all_of_that_name_only(void **state)
{
	h_ctx *h = *state;
	char name[64], other[64];
	h_name(name, sizeof(name), "dbn");
	h_name(other, sizeof(other), "dbn-other");
	char *a = h_raw_create(h, name), *b = h_raw_create(h, name), *c = h_raw_create(h, other);
	char path[128];
	long st = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", b);
	json_decref(h_http(h, "POST", path, "{}", &st, NULL));
	assert_int_equal(st, 204);
	h_reset(h);
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_destroy_by_name(h->p, name, NULL, &err), 0);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes"), 1);
	assert_int_equal(h_count(log, "DELETE", "/sandboxes/"), 2);
	json_decref(log);
	assert_null(h_fake_state(h, a));
	assert_null(h_fake_state(h, b));
	char *sc = h_fake_state(h, c);
	assert_non_null(sc);
	free(sc);
	/* none left: success, no delete */
	h_reset(h);
	assert_int_equal(sbx_sandbox_destroy_by_name(h->p, name, NULL, &err), 0);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "DELETE", NULL), 0);
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(h->p, c, NULL, &err), 0);
	free(a);
	free(b);
	free(c);
}
