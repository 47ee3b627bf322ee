/*
 * tests/integration/test_info.c: sandbox/info.h against fake-e2b: the
 * deployment's sandboxes across list pages, the name and state filters, one
 * sandbox's info, and the faults (missing sandbox, another sandboxID, bad
 * arguments before any request). docs/sandboxes.md.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <cmocka.h>

static int64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static size_t count_state(const sbx_info_list *l, sbx_sandbox_state st)
{
	size_t n = 0;
	for (size_t i = 0; i < l->count; i++)
		n += l->items[i].state == st;
	return n;
}

static bool has_id(const sbx_info_list *l, const char *id)
{
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->items[i].id, id) == 0)
			return true;
	return false;
}

static void pause_raw(h_ctx *h, const char *id)
{
	char path[128];
	long st = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	json_decref(h_http(h, "POST", path, "{}", &st, NULL));
	assert_int_equal(st, 204);
}

/* 101 same-name sandboxes (2 paused), one other name, one without our metadata. */
static void test_list__all_pages_filters_and_only_ours(void **state)
{
	h_ctx *h = *state;
	enum { N = 101 };
	char name[64], other[64];
	char *ids[N];
	long st = 0;
	sbx_error err = {0};
	sbx_info_list *l = NULL;
	sbx_list_options o = SBX_LIST_OPTIONS_INIT;
	int64_t t0 = wall_ms();

	h_name(name, sizeof(name), "many");
	h_name(other, sizeof(other), "other");
	for (int i = 0; i < N; i++)
		ids[i] = h_raw_create(h, name);
	char *other_id = h_raw_create(h, other);
	json_t *j = h_http(h, "POST", "/v2/sandboxes",
	                   "{\"templateID\":\"capybara-sandbox\",\"timeout\":900}", &st, NULL);
	assert_int_equal(st, 201);
	char *foreign = strdup(json_string_value(json_object_get(j, "sandboxID")));
	h_add_secret(h, json_string_value(json_object_get(j, "envdAccessToken")));
	json_decref(j);
	pause_raw(h, ids[10]);
	pause_raw(h, ids[70]);
	int64_t t1 = wall_ms();

	/* by name: two pages, every item ours and named so */
	h_reset(h);
	o.name = name;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_non_null(l);
	assert_int_equal(l->count, N);
	for (int i = 0; i < N; i++)
		assert_true(has_id(l, ids[i]));
	for (size_t i = 0; i < l->count; i++) {
		assert_string_equal(l->items[i].name, name);
		assert_string_equal(l->items[i].template_id, "capybara-sandbox");
		assert_true(l->items[i].started_at_ms >= t0 - 2000);
		assert_true(l->items[i].started_at_ms <= t1 + 2000);
		assert_true(l->items[i].end_at_ms >= l->items[i].started_at_ms);
	}
	assert_int_equal(count_state(l, SBX_STATE_PAUSED), 2);
	assert_int_equal(count_state(l, SBX_STATE_RUNNING), N - 2);
	sbx_info_list_free(l);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, NULL, NULL), 2);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes$"), 2);
	json_t *p1 = h_find(log, "GET", "/v2/sandboxes$", 0),
	       *p2 = h_find(log, "GET", "/v2/sandboxes$", 1);
	assert_string_equal(h_entry_query(p1, "state"), "running,paused");
	assert_string_equal(h_entry_query(p1, "limit"), "100");
	assert_non_null(h_entry_query(p1, "metadata"));
	assert_null(h_entry_query(p1, "nextToken"));
	assert_non_null(h_entry_query(p2, "nextToken"));
	json_decref(log);

	/* state filters are E2B's */
	h_reset(h);
	o.state = SBX_STATE_PAUSED;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_int_equal(l->count, 2);
	assert_true(has_id(l, ids[10]) && has_id(l, ids[70]));
	assert_int_equal(count_state(l, SBX_STATE_PAUSED), 2);
	sbx_info_list_free(l);
	log = h_reqlog(h);
	assert_string_equal(h_entry_query(h_find(log, "GET", "/v2/sandboxes$", 0), "state"),
	                    "paused");
	json_decref(log);
	o.state = SBX_STATE_RUNNING;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_int_equal(l->count, N - 2);
	assert_int_equal(count_state(l, SBX_STATE_RUNNING), N - 2);
	assert_false(has_id(l, ids[10]));
	sbx_info_list_free(l);

	/* no name: every sandbox with our metadata (both names), not the foreign one */
	h_reset(h);
	assert_int_equal(sbx_sandbox_list(&l, h->p, NULL, NULL, &err), 0);
	assert_int_equal(l->count, N + 1);
	assert_true(has_id(l, other_id));
	assert_false(has_id(l, foreign));
	sbx_info_list_free(l);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes$"), 2);
	assert_null(h_entry_query(h_find(log, "GET", "/v2/sandboxes$", 0), "metadata"));
	json_decref(log);

	/* all (version 2): the foreign one too, without a name */
	sbx_list_options every = SBX_LIST_OPTIONS_INIT;
	every.all = true;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &every, NULL, &err), 0);
	assert_int_equal(l->count, N + 2);
	assert_true(has_id(l, foreign) && has_id(l, other_id));
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->items[i].id, foreign) == 0)
			assert_null(l->items[i].name);
	sbx_info_list_free(l);
	/* a version 1 struct ends before `all`: never read, only ours */
	every.version = 1;
	sbx_list_options *v1 = malloc(offsetof(sbx_list_options, all));
	assert_non_null(v1);
	memcpy(v1, &every, offsetof(sbx_list_options, all));
	assert_int_equal(sbx_sandbox_list(&l, h->p, v1, NULL, &err), 0);
	assert_int_equal(l->count, N + 1);
	assert_false(has_id(l, foreign));
	sbx_info_list_free(l);
	free(v1);

	/* a name no sandbox has: empty, not NULL */
	o.name = "nobody-has-this-name";
	o.state = SBX_STATE_ANY;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), 0);
	assert_non_null(l);
	assert_int_equal(l->count, 0);
	assert_null(l->items);
	sbx_info_list_free(l);

	for (int i = 0; i < N; i++) {
		assert_int_equal(sbx_sandbox_destroy(h->p, ids[i], NULL, NULL), 0);
		free(ids[i]);
	}
	assert_int_equal(sbx_sandbox_destroy(h->p, other_id, NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_destroy(h->p, foreign, NULL, NULL), 0);
	free(other_id);
	free(foreign);
}

static void test_info__running_paused_and_gone(void **state)
{
	h_ctx *h = *state;
	char name[64];
	sbx_error err = {0};
	sbx_sandbox_info *info = NULL;
	int64_t t0 = wall_ms();

	h_name(name, sizeof(name), "info");
	char *id = h_create(h, NULL, name);
	int64_t t1 = wall_ms();
	h_reset(h);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, id, NULL, &err), 0);
	assert_string_equal(info->id, id);
	assert_string_equal(info->name, name);
	assert_string_equal(info->template_id, "capybara-sandbox");
	assert_int_equal(info->state, SBX_STATE_RUNNING);
	assert_true(info->started_at_ms >= t0 - 2000 && info->started_at_ms <= t1 + 2000);
	/* created with the deployment's timeoutSeconds (3600 by default) */
	assert_true(info->end_at_ms >= info->started_at_ms + 3590 * 1000);
	assert_true(info->end_at_ms <= info->started_at_ms + 3610 * 1000);
	sbx_sandbox_info_free(info);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, NULL, NULL), 1);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s$", id);
	assert_int_equal(h_count(log, "GET", path), 1);
	json_decref(log);

	/* paused: reported, and left paused */
	assert_int_equal(sbx_sandbox_suspend(h->p, id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, id, NULL, &err), 0);
	assert_int_equal(info->state, SBX_STATE_PAUSED);
	sbx_sandbox_info_free(info);
	char *st = h_fake_state(h, id);
	assert_string_equal(st, "paused");
	free(st);

	/* gone */
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	info = (sbx_sandbox_info *)1;
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, id, NULL, &err), SBX_EGONE);
	assert_null(info);
	assert_int_equal(err.http_status, 404);
	h_note_err(h, &err);
	sbx_free(id);
}

/* A reply naming another sandbox, or with an unknown state, is a protocol error. */
static void test_info__malformed_replies(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_sandbox_info *info = NULL;
	sbx_info_list *l = NULL;

	h_reset(h);
	h_fault_status(h, "GET", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa", 200,
	               "{\"sandboxID\":\"ibbbbbbbbbbbbbbbbbbbb\",\"state\":\"running\"}", 1);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, "iaaaaaaaaaaaaaaaaaaaa", NULL, &err),
	                 SBX_EPROTOCOL);
	assert_null(info);
	assert_non_null(strstr(err.message, "another sandbox"));
	sbx_error_clear(&err);
	h_fault_status(h, "GET", "/sandboxes/iaaaaaaaaaaaaaaaaaaaa", 200,
	               "{\"sandboxID\":\"iaaaaaaaaaaaaaaaaaaaa\",\"state\":\"exploded\"}", 1);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, "iaaaaaaaaaaaaaaaaaaaa", NULL, &err),
	                 SBX_EPROTOCOL);
	assert_non_null(strstr(err.message, "unknown state"));
	sbx_error_clear(&err);
	h_fault_status(h, "GET", "/v2/sandboxes", 200, "{\"not\":\"an array\"}", 1);
	assert_int_equal(sbx_sandbox_list(&l, h->p, NULL, NULL, &err), SBX_EPROTOCOL);
	assert_null(l);
	sbx_error_clear(&err);
	h_fault_status(h, "GET", "/v2/sandboxes", 200,
	               "[{\"sandboxID\":\"../etc\",\"state\":\"running\",\"metadata\":"
	               "{\"capybara-sandbox-name\":\"x\"}}]",
	               1);
	assert_int_equal(sbx_sandbox_list(&l, h->p, NULL, NULL, &err), SBX_EPROTOCOL);
	assert_null(l);
	h_faults_clear(h);
}

/* Bad arguments are refused before any request. */
static void test_info__bad_arguments_send_nothing(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_info_list *l = NULL;
	sbx_sandbox_info *info = NULL;
	sbx_list_options o = SBX_LIST_OPTIONS_INIT;

	h_reset(h);
	o.name = "-bad name";
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), SBX_EINVALID);
	sbx_error_clear(&err);
	o.name = NULL;
	o.state = (sbx_sandbox_state)7;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), SBX_EINVALID);
	sbx_error_clear(&err);
	o.state = SBX_STATE_ANY;
	o.version = 99;
	assert_int_equal(sbx_sandbox_list(&l, h->p, &o, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_list(NULL, h->p, NULL, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, "bad/id", NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, NULL, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_get_info(&info, NULL, "i1", NULL, &err), SBX_EINVALID);
	sbx_signal *sig = NULL;
	assert_int_equal(sbx_signal_new(&sig), 0);
	sbx_signal_abort(sig);
	assert_int_equal(sbx_sandbox_list(&l, h->p, NULL, sig, &err), SBX_EABORTED);
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, "i1", sig, &err), SBX_EABORTED);
	sbx_signal_free(sig);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_list__all_pages_filters_and_only_ours),
	    cmocka_unit_test(test_info__running_paused_and_gone),
	    cmocka_unit_test(test_info__malformed_replies),
	    cmocka_unit_test(test_info__bad_arguments_send_nothing),
	};
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
