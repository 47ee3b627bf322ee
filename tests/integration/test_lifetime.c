/*
 * tests/integration/test_lifetime.c: sandbox/lifetime.h against fake-e2b
 * (docs/sandboxes.md "Lifetime"): create with a timeout, envs and metadata
 * (the create body, what the sandbox sees, the name tag kept and reserved),
 * set_timeout shortening and lengthening exactly, resuming a paused sandbox,
 * a missing one, and every check made before any request.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static int setup(void **state)
{
	return h_group_setup(state);
}

static int teardown(void **state)
{
	return h_group_teardown(state);
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* end_at - now, seconds, from the control plane (info does not connect) */
static int64_t seconds_left(h_ctx *h, const char *id)
{
	sbx_sandbox_info *info = NULL;
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_get_info(&info, h->p, id, NULL, &err), 0);
	assert_non_null(info);
	int64_t left = (info->end_at_ms - wall_ms()) / 1000;
	sbx_sandbox_info_free(info);
	return left;
}

static void test_create_with__timeout_envs_metadata(void **state)
{
	h_ctx *h = *state;
	sbx_create_options o = SBX_CREATE_OPTIONS_INIT;
	sbx_env_var env[] = {{"MODE", "ci"}, {"A", "1"}, {"A", "2"}};
	sbx_env_var md[] = {{"owner", "ana"}, {"team", "x y"}};
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	char name[64], *id = NULL;

	h_name(name, sizeof(name), "life");
	o.timeout_seconds = 120;
	o.env = env;
	o.env_count = 3;
	o.metadata = md;
	o.metadata_count = 2;
	h_reset(h);
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, name, &l, &o, NULL, &err), 0);
	json_t *log = h_reqlog(h);
	json_t *body = h_entry_json(h_find(log, "POST", "/v2/sandboxes$", 0));
	assert_non_null(body);
	assert_int_equal(json_integer_value(json_object_get(body, "timeout")), 120);
	json_t *ev = json_object_get(body, "envVars"), *m = json_object_get(body, "metadata");
	assert_int_equal(json_object_size(ev), 2);
	assert_string_equal(json_string_value(json_object_get(ev, "MODE")), "ci");
	assert_string_equal(json_string_value(json_object_get(ev, "A")), "2"); /* later wins */
	assert_int_equal(json_object_size(m), 3);
	assert_string_equal(json_string_value(json_object_get(m, "owner")), "ana");
	assert_string_equal(json_string_value(json_object_get(m, "team")), "x y");
	assert_string_equal(json_string_value(json_object_get(m, "capybara-sandbox-name")), name);
	json_decref(body);
	json_decref(log);
	int64_t left = seconds_left(h, id);
	assert_true(left >= 100 && left <= 120);
	/* every process sees the envs; exec's own come after them */
	char *out = h_sh(h, id, "echo \"$MODE $A $HOME\"");
	assert_string_equal(out, "ci 2 /workspace\n");
	free(out);
	/* found by its name as any create's sandbox */
	assert_int_equal(h_fake_count_named(h, name), 1);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	sbx_free(id);
}

static void test_create_with__checked_before_any_request(void **state)
{
	h_ctx *h = *state;
	sbx_create_options o = SBX_CREATE_OPTIONS_INIT;
	sbx_env_var md[] = {{"capybara-sandbox-name", "other"}};
	sbx_env_var bad_key[] = {{"a b", "v"}};
	sbx_env_var twice[] = {{"k", "1"}, {"k", "2"}};
	sbx_env_var ctl[] = {{"k", "a\nb"}};
	sbx_env_var env[] = {{"1X", "v"}};
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	char *id = NULL;

	h_reset(h);
	o.metadata = md;
	o.metadata_count = 1;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message,
	                    "metadata key capybara-sandbox-name is reserved for the name");
	sbx_error_clear(&err);
	o.metadata = bad_key;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message, "metadata keys must be printable ASCII without spaces");
	sbx_error_clear(&err);
	o.metadata = twice;
	o.metadata_count = 2;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message, "metadata key k is given twice");
	sbx_error_clear(&err);
	o.metadata = ctl;
	o.metadata_count = 1;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message, "metadata value of k has a control character");
	sbx_error_clear(&err);
	o.metadata_count = 0;
	o.env = env;
	o.env_count = 1;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	sbx_error_clear(&err);
	o.env_count = 0;
	o.timeout_seconds = 86401;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message,
	                    "create timeout_seconds must be 1..86400 (0: the config's)");
	sbx_error_clear(&err);
	o.timeout_seconds = 0;
	o.version = 2;
	assert_int_equal(sbx_sandbox_create_with(&id, h->p, "n", &l, &o, NULL, &err), SBX_EINVALID);
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_set_timeout(h->p, "i0", 86401, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message, "timeout_seconds must be 0..86400");
	assert_int_equal(sbx_sandbox_set_timeout(h->p, NULL, 10, NULL, &err), SBX_EINVALID);
	assert_null(id);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

static void test_set_timeout__shortens_lengthens_resumes_gone(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	char name[64], path[128];
	char *id;

	h_name(name, sizeof(name), "life");
	id = h_create(h, h->p, name);
	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", id);
	assert_true(seconds_left(h, id) > 3000); /* the config's 3600 s */
	h_reset(h);
	assert_int_equal(sbx_sandbox_set_timeout(h->p, id, 30, NULL, &err), 0);
	int64_t left = seconds_left(h, id);
	assert_true(left >= 25 && left <= 30);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", path), 1);
	json_t *body = h_entry_json(h_find(log, "POST", path, 0));
	assert_int_equal(json_integer_value(json_object_get(body, "timeout")), 30);
	assert_int_equal(json_object_size(body), 1);
	json_decref(body);
	json_decref(log);
	/* the attach cache's window was dropped: the next exec connects again */
	h_reset(h);
	free(h_sh(h, id, "true"));
	log = h_reqlog(h);
	char conn[128];
	snprintf(conn, sizeof(conn), "/v2/sandboxes/%s/connect", id);
	assert_int_equal(h_count(log, "POST", conn), 1);
	json_decref(log);
	assert_int_equal(sbx_sandbox_set_timeout(h->p, id, 7200, NULL, &err), 0);
	left = seconds_left(h, id);
	assert_true(left >= 7190 && left <= 7200);

	/* paused: E2B answers 404; the sandbox is resumed and the timeout set */
	assert_int_equal(sbx_sandbox_suspend(h->p, id, NULL, &err), 0);
	h_reset(h);
	assert_int_equal(sbx_sandbox_set_timeout(h->p, id, 600, NULL, &err), 0);
	char *st = h_fake_state(h, id);
	assert_string_equal(st, "running");
	free(st);
	left = seconds_left(h, id);
	assert_true(left >= 590 && left <= 600);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", path), 2);
	assert_int_equal(h_count(log, "POST", conn), 1);
	json_decref(log);

	/* 0: E2B's minimum; the sandbox ends at once (paused, autoPause), a later call resumes it
	 */
	h_reset(h);
	assert_int_equal(sbx_sandbox_set_timeout(h->p, id, 0, NULL, &err), 0);
	log = h_reqlog(h);
	body = h_entry_json(h_find(log, "POST", path, 0));
	assert_true(json_is_integer(json_object_get(body, "timeout")));
	assert_int_equal(json_integer_value(json_object_get(body, "timeout")), 0);
	json_decref(body);
	json_decref(log);
	uint64_t until = h_now_ms() + 30000;
	for (;;) { /* the fake's reaper acts on its own clock: wait for the state to change */
		st = h_fake_state(h, id);
		bool paused = st && strcmp(st, "paused") == 0;
		free(st);
		if (paused)
			break;
		if (h_now_ms() > until)
			fail_msg("the sandbox did not end after set_timeout(0)");
		usleep(50 * 1000);
	}
	free(h_sh(h, id, "true")); /* resumed by the next call */
	st = h_fake_state(h, id);
	assert_string_equal(st, "running");
	free(st);

	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_set_timeout(h->p, id, 60, NULL, &err), SBX_EGONE);
	h_note_err(h, &err);
	sbx_free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create_with__timeout_envs_metadata),
	    cmocka_unit_test(test_create_with__checked_before_any_request),
	    cmocka_unit_test(test_set_timeout__shortens_lengthens_resumes_gone),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
