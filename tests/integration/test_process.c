/*
 * tests/integration/test_process.c: background commands against fake-e2b
 * (sandbox/process.h, docs/exec.md "Background commands"): start / wait
 * from two threads, stdin, kill of the whole tree, attach from a second
 * provider, envd List, kill by pid, the timeout, and a handle freed without
 * waiting that leaves no unbounded command behind.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *g_id; /* one sandbox for the whole file */

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "process", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static sbx_process *start(h_ctx *h, sbx_provider *p, const char *cmd, const sbx_process_options *o)
{
	sbx_process *proc = NULL;
	sbx_error err = {0};
	int rc = sbx_process_start(&proc, p ? p : h->p, g_id, cmd, o, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("start %s: %s (%s)", cmd, sbx_error_code_name(rc), err.message);
	assert_true(sbx_process_pid(proc) > 0);
	return proc;
}

/* Pids of running processes whose command line matches an ERE (pgrep -f), as text. */
static char *pgrep(h_ctx *h, const char *ere)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "pgrep -f '%s' || true", ere);
	return h_sh(h, g_id, cmd);
}

typedef struct waiter {
	sbx_process *proc;
	sbx_exec_result res;
	int rc;
} waiter;

static void *wait_thread(void *arg)
{
	waiter *w = arg;
	w->rc = sbx_process_wait(&w->res, w->proc, NULL, NULL);
	return NULL;
}

static void test_process__start_then_wait_from_two_threads(void **state)
{
	h_ctx *h = *state;
	sbx_process *proc = start(h, NULL, "echo a; sleep 0.3; echo b >&2; exit 5", NULL);
	waiter w[2] = {{proc, {0}, -1}, {proc, {0}, -1}};
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].rc, 0);
		assert_true(w[i].res.has_exit_code);
		assert_int_equal(w[i].res.exit_code, 5);
		assert_string_equal((char *)w[i].res.stdout_data, "a\n");
		assert_string_equal((char *)w[i].res.stderr_data, "b\n");
		sbx_exec_result_free(&w[i].res);
	}
	/* waiting again gives the same result; kill after the end is a no-op */
	assert_int_equal(sbx_process_wait(&w[0].res, proc, NULL, NULL), 0);
	assert_int_equal(w[0].res.exit_code, 5);
	sbx_exec_result_free(&w[0].res);
	assert_int_equal(sbx_process_kill(proc, NULL, NULL), 0);
	sbx_process_free(proc);
}

static void test_process__stdin_is_sent_then_closed(void **state)
{
	h_ctx *h = *state;
	sbx_process_options o = SBX_PROCESS_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	sbx_process *proc;

	o.stdin_open = true;
	proc = start(h, NULL, "tr a-z A-Z", &o);
	assert_int_equal(sbx_process_send_stdin(proc, "hello ", 6, NULL, &err), 0);
	assert_int_equal(sbx_process_send_stdin(proc, "world", 5, NULL, &err), 0);
	assert_int_equal(sbx_process_close_stdin(proc, NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r, proc, NULL, &err), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.stdout_data, "HELLO WORLD");
	sbx_exec_result_free(&r);
	sbx_process_free(proc);

	/* without stdin_open the command has /dev/null: sending is refused before any request */
	proc = start(h, NULL, "cat", NULL);
	assert_int_equal(sbx_process_send_stdin(proc, "x", 1, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_process_wait(&r, proc, NULL, NULL), 0);
	assert_int_equal(r.stdout_len, 0);
	sbx_exec_result_free(&r);
	sbx_process_free(proc);
}

static void test_process__kill_ends_the_whole_tree(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	sbx_process *proc = start(h, NULL, "sleep 300 & sleep 301; echo never", NULL);
	char *left;

	assert_int_equal(sbx_process_kill(proc, NULL, NULL), 0);
	assert_int_equal(sbx_process_wait(&r, proc, NULL, NULL), 0);
	assert_true(r.aborted);
	assert_false(r.has_exit_code);
	assert_int_equal(r.stdout_len, 0);
	sbx_exec_result_free(&r);
	sbx_process_free(proc);
	left = pgrep(h, "sleep 30[01]");
	assert_string_equal(left, "");
	free(left);
}

static void test_process__attach_from_a_second_provider(void **state)
{
	h_ctx *h = *state;
	sbx_provider *p2 = h_provider_new(h, NULL, NULL);
	sbx_process_options o = SBX_PROCESS_OPTIONS_INIT;
	sbx_exec_result r1, r2;
	sbx_error err = {0};
	sbx_process *a, *b;
	char *left;

	/* the command waits for a line, so the attacher sees all its output */
	o.stdin_open = true;
	a = start(h, NULL, "read x; echo got $x", &o);
	assert_int_equal(sbx_process_attach(&b, p2, g_id, sbx_process_pid(a), NULL, NULL, &err), 0);
	assert_int_equal(sbx_process_pid(b), sbx_process_pid(a));
	assert_int_equal(sbx_process_send_stdin(a, "hi\n", 3, NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r2, b, NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r1, a, NULL, &err), 0);
	assert_string_equal((char *)r2.stdout_data, "got hi\n");
	assert_string_equal((char *)r1.stdout_data, "got hi\n");
	assert_int_equal(r2.exit_code, 0);
	sbx_exec_result_free(&r1);
	sbx_exec_result_free(&r2);
	sbx_process_free(b);
	sbx_process_free(a);

	/* kill through the attached handle: the tree dies, the starter sees the end */
	a = start(h, NULL, "sleep 302 & sleep 303", NULL);
	assert_int_equal(sbx_process_attach(&b, p2, g_id, sbx_process_pid(a), NULL, NULL, &err), 0);
	assert_int_equal(sbx_process_kill(b, NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r1, a, NULL, &err), 0);
	assert_false(r1.has_exit_code && r1.exit_code == 0);
	sbx_exec_result_free(&r1);
	sbx_process_free(b);
	sbx_process_free(a);
	left = pgrep(h, "sleep 30[23]");
	assert_string_equal(left, "");
	free(left);

	/* a pid envd does not know */
	assert_int_equal(sbx_process_attach(&b, p2, g_id, 999999, NULL, NULL, &err), SBX_EHTTP);
	assert_string_equal(err.e2b_code, "not_found");
	assert_null(b);
	h_note_err(h, &err);
	sbx_provider_free(p2);
}

static void test_process__list_names_our_commands_and_kill_pid_ends_them(void **state)
{
	h_ctx *h = *state;
	sbx_process *proc = start(h, NULL, "sleep 304", NULL);
	sbx_process_info_list *l = NULL;
	sbx_exec_result r;
	sbx_error err = {0};
	const sbx_process_info *mine = NULL;

	assert_int_equal(sbx_process_list(&l, h->p, g_id, NULL, &err), 0);
	for (size_t i = 0; i < l->count; i++)
		if (l->items[i].pid == sbx_process_pid(proc))
			mine = &l->items[i];
	assert_non_null(mine);
	assert_string_equal(mine->cmd, "/bin/sh");
	assert_int_equal(mine->nargs, 7);
	assert_string_equal(mine->command, "sleep 304");
	sbx_process_info_list_free(l);

	assert_int_equal(sbx_process_kill_pid(h->p, g_id, sbx_process_pid(proc), NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r, proc, NULL, &err), 0);
	assert_false(r.has_exit_code && r.exit_code == 0);
	sbx_exec_result_free(&r);
	/* gone from the list; killing it again is still success */
	assert_int_equal(sbx_process_list(&l, h->p, g_id, NULL, &err), 0);
	for (size_t i = 0; i < l->count; i++)
		assert_int_not_equal(l->items[i].pid, sbx_process_pid(proc));
	sbx_process_info_list_free(l);
	assert_int_equal(sbx_process_kill_pid(h->p, g_id, sbx_process_pid(proc), NULL, &err), 0);
	sbx_process_free(proc);
}

static void test_process__timeout_kills_like_exec(void **state)
{
	h_ctx *h = *state;
	sbx_process_options o = SBX_PROCESS_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_process *proc;
	char *left;

	o.timeout_ms = 1500;
	proc = start(h, NULL, "echo up; sleep 305", &o);
	assert_int_equal(sbx_process_wait(&r, proc, NULL, NULL), 0);
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	assert_string_equal((char *)r.stdout_data, "up\n");
	sbx_exec_result_free(&r);
	sbx_process_free(proc);
	left = pgrep(h, "sleep 30[5]");
	assert_string_equal(left, "");
	free(left);
}

/* Free without wait: the command runs on, and its in-sandbox backstop (timeout + 5 s) ends it. */
static void test_process__free_without_wait_leaves_no_unbounded_command(void **state)
{
	h_ctx *h = *state;
	sbx_process_options o = SBX_PROCESS_OPTIONS_INIT;
	sbx_process *proc;
	char *left = NULL;
	uint64_t t0;

	o.timeout_ms = 1000;
	proc = start(h, NULL, "sleep 306", &o);
	t0 = h_now_ms();
	sbx_process_free(proc); /* no kill, no wait: had it waited, the backstop had ended it */
	left = pgrep(h, "sleep 30[6]");
	assert_string_not_equal(left, ""); /* still running: free does not kill */
	do {
		free(left);
		usleep(500 * 1000);
		left = pgrep(h, "sleep 30[6]");
	} while (left[0] && h_now_ms() - t0 < 60000);
	assert_string_equal(left, ""); /* ended by the backstop, 6 s after start */
	free(left);
}

static void test_process__abort_stops_a_wait_not_the_command(void **state)
{
	h_ctx *h = *state;
	sbx_process *proc = start(h, NULL, "sleep 307", NULL);
	sbx_exec_result r;
	sbx_signal *sig;
	h_aborter ab;
	pthread_t t;
	sbx_error err = {0};

	assert_int_equal(sbx_signal_new(&sig), 0);
	ab.sig = sig;
	ab.delay_ms = 200;
	assert_int_equal(pthread_create(&t, NULL, h_abort_later, &ab), 0);
	assert_int_equal(sbx_process_wait(&r, proc, sig, &err), SBX_EABORTED);
	uint64_t back = h_now_ms();
	assert_null(r.stdout_data);
	pthread_join(t, NULL);
	/* the wait on a sleep 307 could only end by the abort */
	print_message("wait returned %llu ms after the abort\n",
	              (unsigned long long)(back - ab.at));
	sbx_signal_free(sig);
	assert_int_equal(sbx_process_kill(proc, NULL, NULL), 0);
	sbx_process_free(proc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_process__start_then_wait_from_two_threads),
	    cmocka_unit_test(test_process__stdin_is_sent_then_closed),
	    cmocka_unit_test(test_process__kill_ends_the_whole_tree),
	    cmocka_unit_test(test_process__attach_from_a_second_provider),
	    cmocka_unit_test(test_process__list_names_our_commands_and_kill_pid_ends_them),
	    cmocka_unit_test(test_process__timeout_kills_like_exec),
	    cmocka_unit_test(test_process__free_without_wait_leaves_no_unbounded_command),
	    cmocka_unit_test(test_process__abort_stops_a_wait_not_the_command),
	};
	return cmocka_run_group_tests_name("process", tests, setup, teardown);
}
