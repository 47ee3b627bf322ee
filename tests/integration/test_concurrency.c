/*
 * tests/integration/test_concurrency.c: one provider shared by 8 threads
 * running 32 execs plus file operations at once (the contract's
 * concurrentExec = true). A separate executable so CI can also run it under
 * ThreadSanitizer (-DSBX_TSAN=ON).
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

#define THREADS    8
#define PER_THREAD 4

static char *g_id;

typedef struct worker {
	h_ctx *h;
	sbx_provider *p;
	int n;
	int failures;
	char why[512];
} worker;

static void failf(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(worker *w, const char *fmt, ...)
{
	va_list ap;
	if (w->failures++)
		return;
	va_start(ap, fmt);
	vsnprintf(w->why, sizeof(w->why), fmt, ap);
	va_end(ap);
}

static void *work(void *arg)
{
	worker *w = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		char cmd[256], want_out[64], want_err[64], tag[32], path[64], data[64];
		int code = (w->n * PER_THREAD + i) % 100;
		snprintf(cmd, sizeof(cmd),
		         "echo out-%d-%d; sleep 0.$((RANDOM %% 5)); echo err-%d-%d >&2; exit %d",
		         w->n, i, w->n, i, code);
		snprintf(want_out, sizeof(want_out), "out-%d-%d\n", w->n, i);
		snprintf(want_err, sizeof(want_err), "err-%d-%d\n", w->n, i);
		snprintf(tag, sizeof(tag), "t%d", w->n);
		sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
		o.tag = tag;
		o.timeout_ms = 60000;
		sbx_exec_result r;
		sbx_error err = {0};
		int rc = sbx_sandbox_exec(&r, w->p, g_id, cmd, &o, NULL, &err);
		h_note_err(w->h, &err);
		if (rc != 0) {
			failf(w, "exec %d/%d: %s %s", w->n, i, sbx_error_code_name(rc),
			      err.message);
			continue;
		}
		if (!r.has_exit_code || r.exit_code != code)
			failf(w, "exec %d/%d: exit %d (has %d), want %d", w->n, i, r.exit_code,
			      r.has_exit_code, code);
		if (r.stdout_len != strlen(want_out) ||
		    memcmp(r.stdout_data, want_out, r.stdout_len))
			failf(w, "exec %d/%d: stdout [%.*s]", w->n, i, (int)r.stdout_len,
			      r.stdout_data);
		if (r.stderr_len != strlen(want_err) ||
		    memcmp(r.stderr_data, want_err, r.stderr_len))
			failf(w, "exec %d/%d: stderr [%.*s]", w->n, i, (int)r.stderr_len,
			      r.stderr_data);
		sbx_exec_result_free(&r);

		/* a file of our own, written and read back */
		snprintf(path, sizeof(path), "/workspace/c/%d/%d.txt", w->n, i);
		int dl = snprintf(data, sizeof(data), "data %d %d", w->n, i);
		rc = sbx_sandbox_write_file(w->p, g_id, path, data, (size_t)dl, NULL, &err);
		h_note_err(w->h, &err);
		if (rc != 0) {
			failf(w, "write %s: %s %s", path, sbx_error_code_name(rc), err.message);
			continue;
		}
		sbx_file *f = NULL;
		rc = sbx_sandbox_read_file(&f, w->p, g_id, path, 1024, NULL, &err);
		h_note_err(w->h, &err);
		if (rc != 0 || !f || f->len != (size_t)dl || memcmp(f->data, data, f->len))
			failf(w, "read %s: rc %d", path, rc);
		sbx_file_free(f);
		sbx_stat st;
		rc = sbx_sandbox_stat(&st, w->p, g_id, path, NULL, &err);
		if (rc != 0 || !st.exists || st.size != (uint64_t)dl)
			failf(w, "stat %s: rc %d", path, rc);
	}
	return NULL;
}

static void test_concurrency__32_execs_from_8_threads(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "conc");
	g_id = h_create(h, NULL, name);
	worker w[THREADS];
	pthread_t t[THREADS];
	h_reset(h);
	uint64_t t0 = h_now_ms();
	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker){h, h->p, i, 0, ""};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	int failures = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		if (w[i].failures) {
			print_error("thread %d: %d failure(s), first: %s\n", i, w[i].failures,
			            w[i].why);
			failures += w[i].failures;
		}
	}
	print_message("%d execs + %d file round trips in %llu ms\n", THREADS * PER_THREAD,
	              THREADS * PER_THREAD, (unsigned long long)(h_now_ms() - t0));
	assert_int_equal(failures, 0);
	json_t *log = h_reqlog(h);
	/* exec + write script + read + stat per round, plus one upload each */
	assert_int_equal(h_count(log, "POST", "/files"), THREADS * PER_THREAD);
	json_decref(log);
	assert_int_equal(sbx_sandbox_destroy(h->p, g_id, NULL, NULL), 0);
	sbx_free(g_id);
}

/* Several providers (replicas) on the same sandboxes at once: no shared state. */
static void test_concurrency__two_providers_same_sandbox(void **state)
{
	h_ctx *h = *state;
	char name[64];
	h_name(name, sizeof(name), "conc2");
	g_id = h_create(h, NULL, name);
	sbx_provider *other = h_provider_new(h, NULL, NULL);
	assert_non_null(other);
	worker w[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker){h, i % 2 ? other : h->p, 100 + i, 0, ""};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	int failures = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		if (w[i].failures)
			print_error("worker %d: %s\n", i, w[i].why);
		failures += w[i].failures;
	}
	assert_int_equal(failures, 0);
	sbx_provider_free(other);
	assert_int_equal(sbx_sandbox_destroy(h->p, g_id, NULL, NULL), 0);
	sbx_free(g_id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_concurrency__32_execs_from_8_threads),
	    cmocka_unit_test(test_concurrency__two_providers_same_sandbox),
	};
	return cmocka_run_group_tests_name("integration_concurrency", tests, h_group_setup,
	                                   h_group_teardown);
}
