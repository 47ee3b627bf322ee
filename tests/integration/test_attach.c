/*
 * tests/integration/test_attach.c: the attach cache (docs/contract.md "Lifecycle"). A call skips
 * the connect while the provider's last connect to the sandbox still covers
 * it (command timeout + 120 s), and the contract's guarantees (docs/contract.md
 * "Connect before use") still hold: a sandbox paused behind the provider's back
 * is resumed by the next call, a call that would outlive the extended timeout
 * extends it first, a destroyed sandbox is still gone, and concurrent calls share one connect.
 * Create lists the same-name sandboxes beside its own request and still leaves only the new one.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *make(h_ctx *h, sbx_provider *p, const char *prefix)
{
	char name[64];
	h_name(name, sizeof(name), prefix);
	return h_create(h, p, name);
}

static void exec_ok(h_ctx *h, sbx_provider *p, const char *id, const char *cmd, uint64_t timeout_ms,
                    const char *want)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	o.timeout_ms = timeout_ms;
	if (sbx_sandbox_exec(&r, p, id, cmd, &o, NULL, &err) != 0)
		fail_msg("exec %s: %s", cmd, err.message);
	h_note_err(h, &err);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(r.stdout_len, strlen(want));
	assert_memory_equal(r.stdout_data, want, r.stdout_len);
	sbx_exec_result_free(&r);
}

static void pause_behind_back(h_ctx *h, const char *id)
{
	char path[128];
	long st = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	json_decref(h_http(h, "POST", path, "{}", &st, NULL));
	assert_int_equal(st, 204);
	char *state = h_fake_state(h, id);
	assert_string_equal(state, "paused");
	free(state);
}

/* Steady state: one request per exec and per file operation, no connect. */
static void test_attach__steady_state_one_request_per_call(void **state)
{
	h_ctx *h = *state;
	char *id = make(h, h->p, "one");
	exec_ok(h, h->p, id, "true", 60000, ""); /* covered by the create's timeout */
	h_reset(h);
	for (int i = 0; i < 5; i++)
		exec_ok(h, h->p, id, "echo hi", 60000, "hi\n");
	sbx_stat st;
	assert_int_equal(sbx_sandbox_stat(&st, h->p, id, "/workspace", NULL, NULL), 0);
	assert_true(st.exists);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 6);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), 6);
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

/* Paused by someone else: envd's 502 before anything ran, one connect (resume), one retry. */
static void test_attach__paused_behind_back_is_resumed(void **state)
{
	h_ctx *h = *state;
	char *id = make(h, h->p, "pz");
	exec_ok(h, h->p, id, "echo one >/workspace/f", 60000, "");
	pause_behind_back(h, id);
	h_reset(h);
	exec_ok(h, h->p, id, "cat /workspace/f", 60000, "one\n");
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 3);
	assert_int_equal(h_entry_status(h_find(log, "POST", "/process.Process/Start", 0)), 502);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes/"), 1); /* the connect */
	assert_int_equal(h_entry_status(h_find(log, "POST", "/process.Process/Start", 1)), 200);
	json_decref(log);
	char *st = h_fake_state(h, id);
	assert_string_equal(st, "running");
	free(st);

	/* file operations too: an upload refused with 502 stored nothing, so it is sent again */
	pause_behind_back(h, id);
	assert_int_equal(sbx_sandbox_write_file(h->p, id, "/workspace/g", "two", 3, NULL, NULL), 0);
	pause_behind_back(h, id);
	sbx_file *f = NULL;
	assert_int_equal(sbx_sandbox_read_file(&f, h->p, id, "/workspace/g", 100, NULL, NULL), 0);
	assert_non_null(f);
	assert_int_equal(f->len, 3);
	assert_memory_equal(f->data, "two", 3);
	sbx_file_free(f);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

/* A command that would outlive the last connect's timeout extends it first. */
static void test_attach__long_command_extends_first(void **state)
{
	h_ctx *h = *state;
	char *id = make(h, h->p, "long");
	h_reset(h);
	/* the create asked for 3600 s; 3480001 ms + 120 s needs 3601 s */
	exec_ok(h, h->p, id, "echo x", 3480001, "x\n");
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 2);
	json_t *c = json_array_get(log, 0);
	char path[128];
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	assert_string_equal(h_entry_path(c), path);
	json_t *b = h_entry_json(c);
	assert_int_equal(json_integer_value(json_object_get(b, "timeout")), 3601);
	json_decref(b);
	assert_string_equal(h_entry_path(json_array_get(log, 1)), "/process.Process/Start");
	json_decref(log);
	/* a short one right after is covered by that connect */
	h_reset(h);
	exec_ok(h, h->p, id, "echo y", 60000, "y\n");
	log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 1);
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

/* Destroyed through another provider: the next exec finds it gone (SBX_EGONE). */
static void test_attach__destroyed_elsewhere_is_gone(void **state)
{
	h_ctx *h = *state;
	char *id = make(h, h->p, "gone");
	exec_ok(h, h->p, id, "true", 60000, "");
	sbx_provider *other = h_provider_new(h, NULL, NULL);
	assert_int_equal(sbx_sandbox_destroy(other, id, NULL, NULL), 0);
	sbx_provider_free(other);
	h_reset(h);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_exec(&r, h->p, id, "true", &o, NULL, &err), SBX_EGONE);
	h_note_err(h, &err);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 2); /* Start (502), connect (404) */
	assert_int_equal(h_entry_status(h_find(log, "POST", "/process.Process/Start", 0)), 502);
	assert_int_equal(h_entry_status(h_find(log, "POST", "/v2/sandboxes/", 0)), 404);
	json_decref(log);
	/* and through this provider: destroy forgets it, an exec is gone without an envd call */
	char *id2 = make(h, h->p, "gone2");
	assert_int_equal(sbx_sandbox_destroy(h->p, id2, NULL, NULL), 0);
	h_reset(h);
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_exec(&r, h->p, id2, "true", &o, NULL, &err), SBX_EGONE);
	log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 1);
	assert_int_equal(h_count_envd(log), 0);
	json_decref(log);
	sbx_free(id);
	sbx_free(id2);
}

typedef struct job {
	h_ctx *h;
	sbx_provider *p;
	const char *id;
	int rc;
} job;

static void *job_main(void *arg)
{
	job *j = arg;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	j->rc = sbx_sandbox_exec(&r, j->p, j->id, "echo c", &o, NULL, NULL);
	if (j->rc == 0 && (r.stdout_len != 2 || memcmp(r.stdout_data, "c\n", 2) != 0))
		j->rc = -1000;
	if (j->rc == 0)
		sbx_exec_result_free(&r);
	return NULL;
}

/* A provider that knows nothing of the sandbox: 8 concurrent execs share one connect. */
static void test_attach__concurrent_calls_share_one_connect(void **state)
{
	h_ctx *h = *state;
	enum { N = 8 };
	char *id = make(h, h->p, "conc");
	sbx_provider *fresh = h_provider_new(h, NULL, NULL);
	pthread_t th[N];
	job jobs[N];
	h_reset(h);
	for (int i = 0; i < N; i++) {
		jobs[i] = (job){h, fresh, id, -1};
		assert_int_equal(pthread_create(&th[i], NULL, job_main, &jobs[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(jobs[i].rc, 0);
	}
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes/"), 1);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), N);
	json_decref(log);
	sbx_provider_free(fresh);
	assert_int_equal(sbx_sandbox_destroy(h->p, id, NULL, NULL), 0);
	sbx_free(id);
}

/* Create + destroy: two round trips, same-name sandboxes still replaced. */
static void test_create__lists_beside_create_and_replaces_same_name(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "par");
	char *old1 = h_raw_create(h, name), *old2 = h_raw_create(h, name);
	h_reset(h);
	char *id = h_create(h, h->p, name);
	assert_int_equal(h_fake_count_named(h, name), 1);
	assert_null(h_fake_state(h, old1));
	assert_null(h_fake_state(h, old2));
	char *st = h_fake_state(h, id);
	assert_string_equal(st, "running");
	free(st);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/v2/sandboxes"), 1);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes"), 1);
	assert_int_equal(h_count(log, "DELETE", "/sandboxes/"), 2);
	json_decref(log);

	/* the list and the create overlap: each held 1.5 s by the server, in flight at once */
	h_reset(h);
	h_fault(h, "{\"method\":\"GET\",\"path\":\"/v2/sandboxes\",\"kind\":\"delay\","
	           "\"delayMs\":1500,\"times\":1}");
	h_fault(h, "{\"method\":\"POST\",\"path\":\"/v2/sandboxes\",\"kind\":\"delay\","
	           "\"delayMs\":1500,\"times\":1}");
	uint64_t t0 = h_now_ms();
	char *idp = h_create(h, h->p, name);
	uint64_t took = h_now_ms() - t0;
	print_message("create with a 1.5 s list and a 1.5 s create took %llu ms\n",
	              (unsigned long long)took);
	assert_true(took >= 1500);
	log = h_reqlog(h);
	json_t *list = h_find(log, "GET", "/v2/sandboxes", 0),
	       *post = h_find(log, "POST", "/v2/sandboxes", 0);
	assert_non_null(list);
	assert_non_null(post);
	json_int_t l0 = json_integer_value(json_object_get(list, "arrived_ms")),
	           l1 = l0 + json_integer_value(json_object_get(list, "duration_ms")),
	           p0 = json_integer_value(json_object_get(post, "arrived_ms")),
	           p1 = p0 + json_integer_value(json_object_get(post, "duration_ms"));
	json_decref(log);
	print_message("server: list held %lld..%lld ms, create %lld..%lld ms\n", (long long)0,
	              (long long)(l1 - l0), (long long)(p0 - l0), (long long)(p1 - l0));
	assert_true(l1 - l0 >= 1500 && p1 - p0 >= 1500); /* both were held */
	assert_true(p0 < l1 && l0 < p1);                 /* and in flight at the same time */
	assert_null(h_fake_state(h, id));
	sbx_free(id);
	id = idp;

	/* at the concurrency limit (429): the create is sent again once the old one is gone */
	h_reset(h);
	h_fault_status(h, "POST", "/v2/sandboxes", 429, NULL, 1);
	char *id2 = h_create(h, h->p, name);
	assert_int_equal(h_fake_count_named(h, name), 1);
	assert_null(h_fake_state(h, id));
	log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes"), 2);
	json_decref(log);

	/* the list fails: the create fails (docs/contract.md "Lifecycle"), and the sandbox made
	 * meanwhile is gone */
	h_reset(h);
	h_fault_status(h, "GET", "/v2/sandboxes", 500, NULL, 1);
	char *id3 = NULL;
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_create(&id3, h->p, name, &l, NULL, &err), SBX_EHTTP);
	assert_int_equal(err.http_status, 500);
	assert_null(id3);
	assert_int_equal(h_fake_count_named(h, name), 1); /* id2, untouched */
	h_faults_clear(h);
	assert_int_equal(sbx_sandbox_destroy(h->p, id2, NULL, NULL), 0);
	assert_int_equal(h_fake_count_named(h, name), 0);
	free(old1);
	free(old2);
	sbx_free(id);
	sbx_free(id2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_attach__steady_state_one_request_per_call),
	    cmocka_unit_test(test_attach__paused_behind_back_is_resumed),
	    cmocka_unit_test(test_attach__long_command_extends_first),
	    cmocka_unit_test(test_attach__destroyed_elsewhere_is_gone),
	    cmocka_unit_test(test_attach__concurrent_calls_share_one_connect),
	    cmocka_unit_test(test_create__lists_beside_create_and_replaces_same_name),
	};
	return cmocka_run_group_tests_name("integration_attach", tests, h_group_setup,
	                                   h_group_teardown);
}
