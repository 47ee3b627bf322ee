/*
 * tests/integration/test_watch.c: directory watches against fake-e2b
 * (sandbox/watch.h, docs/watch.md): the events of a create, write, chmod,
 * rename and remove in order, names below a recursive watch, the check as the
 * watch's user (missing, not a directory, permission denied; root may),
 * next's timeout and abort, the request log, and what is refused before any
 * request. Waits are for events, each with a guard.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *g_id; /* one sandbox for the whole file */

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "watch", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static sbx_watch *watch(h_ctx *h, const char *path, bool recursive, sbx_user user)
{
	sbx_watch_options o = SBX_WATCH_OPTIONS_INIT;
	sbx_watch *w = NULL;
	sbx_error err = {0};
	int rc;

	o.recursive = recursive;
	o.user = user;
	rc = sbx_sandbox_watch_dir(&w, h->p, g_id, path, &o, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("watch %s: %s (%s)", path, sbx_error_code_name(rc), err.message);
	return w;
}

/* The next event must be (op, name), within 30 s. */
static void expect(sbx_watch *w, sbx_watch_op op, const char *name)
{
	sbx_watch_event e;
	sbx_error err = {0};
	int rc = sbx_watch_next(&e, w, 30000, NULL, &err);

	if (rc != 0)
		fail_msg("no event (%s %s): %s %s", sbx_watch_op_name(op), name,
		         sbx_error_code_name(rc), err.message);
	if (e.op != op || strcmp(e.name, name) != 0)
		fail_msg("event %s %s, want %s %s", sbx_watch_op_name(e.op), e.name,
		         sbx_watch_op_name(op), name);
	sbx_watch_event_dispose(&e);
}

/* Events while one read ago there was nothing: none is left over. */
static void expect_none(sbx_watch *w)
{
	sbx_watch_event e;
	sbx_error err = {0};
	assert_int_equal(sbx_watch_next(&e, w, 0, NULL, &err), SBX_ETIMEOUT);
	assert_null(e.name);
}

static void test_watch__events_in_order(void **state)
{
	h_ctx *h = *state;

	free(h_sh(h, g_id, "mkdir -p /workspace/w"));
	h_reset(h);
	sbx_watch *w = watch(h, "/workspace/w", false, SBX_USER_SANDBOX);
	expect_none(w);
	free(h_sh(h, g_id, "printf hi > /workspace/w/a.txt"));
	expect(w, SBX_WATCH_CREATE, "a.txt");
	expect(w, SBX_WATCH_WRITE, "a.txt");
	free(h_sh(h, g_id, "chmod 600 /workspace/w/a.txt"));
	expect(w, SBX_WATCH_CHMOD, "a.txt");
	free(h_sh(h, g_id, "mv /workspace/w/a.txt /workspace/w/b.txt"));
	expect(w, SBX_WATCH_RENAME, "a.txt");
	expect(w, SBX_WATCH_CREATE, "b.txt");
	free(h_sh(h, g_id, "rm /workspace/w/b.txt"));
	expect(w, SBX_WATCH_REMOVE, "b.txt");
	expect_none(w);
	sbx_watch_free(w);

	/* the wire: the check as the user, then WatchDir {path, recursive} as the user */
	json_t *log = h_reqlog(h);
	json_t *e = h_find(log, "POST", "/filesystem.Filesystem/WatchDir", 0);
	assert_non_null(e);
	json_t *body = h_entry_json(e);
	assert_string_equal(json_string_value(json_object_get(body, "path")), "/workspace/w");
	assert_true(json_is_false(json_object_get(body, "recursive")));
	json_decref(body);
	assert_int_equal(h_count(log, "POST", "/filesystem.Filesystem/WatchDir"), 1);
	json_decref(log);
}

static void test_watch__recursive_names_below(void **state)
{
	h_ctx *h = *state;

	free(h_sh(h, g_id, "mkdir -p /workspace/r/sub"));
	sbx_watch *w = watch(h, "/workspace/r", true, SBX_USER_SANDBOX);
	free(h_sh(h, g_id, "touch /workspace/r/sub/c"));
	expect(w, SBX_WATCH_CREATE, "sub/c");
	sbx_watch_free(w);
	/* not recursive: below is not watched */
	w = watch(h, "/workspace/r", false, SBX_USER_SANDBOX);
	free(h_sh(h, g_id, "touch /workspace/r/sub/d; touch /workspace/r/top"));
	expect(w, SBX_WATCH_CREATE, "top");
	sbx_watch_free(w);
}

/* refused with `msg` and, as data, envd's Connect code for the path (`e2b`) */
static void expect_refused(h_ctx *h, const char *path, sbx_user user, const char *e2b,
                           const char *msg)
{
	sbx_watch_options o = SBX_WATCH_OPTIONS_INIT;
	sbx_watch *w = (sbx_watch *)1;
	sbx_error err = {0};

	o.user = user;
	assert_int_equal(sbx_sandbox_watch_dir(&w, h->p, g_id, path, &o, NULL, &err), SBX_ESANDBOX);
	assert_null(w);
	assert_string_equal(err.message, msg);
	assert_string_equal(err.e2b_code, e2b);
	assert_int_equal(err.http_status, 0);
}

static void test_watch__checked_as_the_user(void **state)
{
	h_ctx *h = *state;

	free(h_sh(h, g_id, "touch /workspace/plain"));
	h_reset(h);
	expect_refused(h, "/workspace/nope", SBX_USER_SANDBOX, "not_found",
	               "cannot watch /workspace/nope: no such directory");
	expect_refused(h, "/workspace/plain", SBX_USER_SANDBOX, "invalid_argument",
	               "cannot watch /workspace/plain: not a directory");
	expect_refused(h, "/root", SBX_USER_SANDBOX, "permission_denied",
	               "cannot watch /root: permission denied for /root");
	json_t *log = h_reqlog(h); /* envd's watch (as root) was never asked */
	assert_int_equal(h_count(log, "POST", "/filesystem.Filesystem/WatchDir"), 0);
	json_decref(log);
	sbx_watch *w = watch(h, "/root", false, SBX_USER_ROOT); /* root may */
	sbx_exec_options eo = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	eo.user = SBX_USER_ROOT;
	assert_int_equal(sbx_sandbox_exec(&r, h->p, g_id, "touch /root/x", &eo, NULL, NULL), 0);
	sbx_exec_result_free(&r);
	expect(w, SBX_WATCH_CREATE, "x");
	sbx_watch_free(w);
}

static void test_watch__next_times_out_and_aborts(void **state)
{
	h_ctx *h = *state;
	sbx_signal *sig = NULL;
	sbx_watch_event e;
	sbx_error err = {0};

	free(h_sh(h, g_id, "mkdir -p /workspace/q"));
	sbx_watch *w = watch(h, "/workspace/q", false, SBX_USER_SANDBOX);
	uint64_t t0 = h_now_ms();
	assert_int_equal(sbx_watch_next(&e, w, 300, NULL, &err), SBX_ETIMEOUT);
	assert_true(h_now_ms() - t0 >= 300);
	assert_int_equal(sbx_signal_new(&sig), 0);
	sbx_signal_abort(sig);
	sbx_error_clear(&err);
	assert_int_equal(sbx_watch_next(&e, w, UINT64_MAX, sig, &err), SBX_EABORTED);
	sbx_signal_free(sig);
	/* the watch goes on after both */
	free(h_sh(h, g_id, "touch /workspace/q/after"));
	expect(w, SBX_WATCH_CREATE, "after");
	sbx_watch_free(w);
}

static void test_watch__refused_before_any_request(void **state)
{
	h_ctx *h = *state;
	sbx_watch_options o = SBX_WATCH_OPTIONS_INIT;
	sbx_watch *w = NULL;
	sbx_error err = {0};

	h_reset(h);
	assert_int_equal(sbx_sandbox_watch_dir(&w, h->p, g_id, "relative", NULL, NULL, &err),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_watch_dir(&w, h->p, g_id, "/a/../b", NULL, NULL, &err),
	                 SBX_EINVALID);
	o.version = 7;
	assert_int_equal(sbx_sandbox_watch_dir(&w, h->p, g_id, "/workspace", &o, NULL, &err),
	                 SBX_EINVALID);
	o = (sbx_watch_options)SBX_WATCH_OPTIONS_INIT;
	o.user = (sbx_user)5;
	assert_int_equal(sbx_sandbox_watch_dir(&w, h->p, g_id, "/workspace", &o, NULL, &err),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_watch_dir(&w, h->p, "bad id", "/workspace", NULL, NULL, &err),
	                 SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watch__events_in_order),
	    cmocka_unit_test(test_watch__recursive_names_below),
	    cmocka_unit_test(test_watch__checked_as_the_user),
	    cmocka_unit_test(test_watch__next_times_out_and_aborts),
	    cmocka_unit_test(test_watch__refused_before_any_request),
	};
	return cmocka_run_group_tests_name("watch", tests, setup, teardown);
}
