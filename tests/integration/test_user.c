/*
 * tests/integration/test_user.c: the `user` option of exec (sbx_exec_options
 * version 3) and of background commands (sbx_process_options version 2)
 * against fake-e2b (docs/exec.md "As root"): who the command runs as, its
 * HOME, that the kill on a timeout, an abort or sbx_process_kill() runs as
 * root and leaves nothing, the older option versions still meaning the
 * sandbox user, and the checks made before any request.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "user", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static void run(h_ctx *h, sbx_exec_result *r, const char *cmd, sbx_user user, uint64_t ms,
                sbx_signal *sig, int want)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_error err = {0};
	o.user = user;
	if (ms)
		o.timeout_ms = ms;
	int rc = sbx_sandbox_exec(r, h->p, g_id, cmd, &o, sig, &err);
	if (rc != want)
		fail_msg("exec %s: %d (%s), want %d", cmd, rc, err.message, want);
}

static char *out_as(h_ctx *h, const char *cmd, sbx_user user)
{
	sbx_exec_result r;
	run(h, &r, cmd, user, 0, NULL, 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	char *s = strndup((const char *)r.stdout_data, r.stdout_len);
	sbx_exec_result_free(&r);
	return s;
}

/* How many processes whose command line is exactly `cmdline` run in the sandbox (as root). */
static int count_procs(h_ctx *h, const char *cmdline)
{
	char cmd[256], *s;
	snprintf(cmd, sizeof(cmd), "pgrep -c -x -f '%s' || true", cmdline);
	s = out_as(h, cmd, SBX_USER_ROOT);
	int n = atoi(s);
	free(s);
	return n;
}

static void test_exec__as_root_and_as_sandbox(void **state)
{
	h_ctx *h = *state;
	char *s;

	s = out_as(h, "id -un; id -u; echo $HOME; pwd", SBX_USER_ROOT);
	assert_string_equal(s, "root\n0\n/root\n/workspace\n");
	free(s);
	s = out_as(h, "id -un; id -u; echo $HOME", SBX_USER_SANDBOX);
	assert_string_equal(s, "sandbox\n1000\n/workspace\n");
	free(s);
	/* root can do what the sandbox user cannot */
	s = out_as(h, "echo r > /etc/capy-user-test && stat -c %U /etc/capy-user-test",
	           SBX_USER_ROOT);
	assert_string_equal(s, "root\n");
	free(s);
	sbx_exec_result r;
	run(h, &r, "rm -f /etc/capy-user-test", SBX_USER_SANDBOX, 0, NULL, 0);
	assert_int_equal(r.exit_code, 1);
	sbx_exec_result_free(&r);
}

static void test_exec__older_versions_mean_sandbox(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};

	/* version 2 ends before `user`: whatever lies there is not read */
	o.version = 2;
	o.user = SBX_USER_ROOT;
	assert_int_equal(sbx_sandbox_exec(&r, h->p, g_id, "id -un", &o, NULL, &err), 0);
	assert_int_equal(r.stdout_len, 8);
	assert_memory_equal(r.stdout_data, "sandbox\n", 8);
	sbx_exec_result_free(&r);
	o.version = 1;
	assert_int_equal(sbx_sandbox_exec(&r, h->p, g_id, "id -un", &o, NULL, &err), 0);
	assert_memory_equal(r.stdout_data, "sandbox\n", 8);
	sbx_exec_result_free(&r);
}

static void test_exec__root_timeout_and_abort_kill_the_tree(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;

	/* the kill script must run as root: as the sandbox user it could not kill these, and
	 * the provider would fall back to rebooting the sandbox (pause + cold connect) */
	char pause[128];
	snprintf(pause, sizeof(pause), "/sandboxes/%s/pause", g_id);
	h_reset(h);
	run(h, &r, "sleep 3141 & sleep 3142", SBX_USER_ROOT, 1500, NULL, 0);
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	sbx_exec_result_free(&r);
	assert_int_equal(count_procs(h, "sleep 3141"), 0);
	assert_int_equal(count_procs(h, "sleep 3142"), 0);

	sbx_signal *sig;
	h_aborter ab;
	pthread_t t;
	assert_int_equal(sbx_signal_new(&sig), 0);
	ab.sig = sig;
	ab.delay_ms = 1500;
	assert_int_equal(pthread_create(&t, NULL, h_abort_later, &ab), 0);
	run(h, &r, "sleep 2718 & sleep 2719", SBX_USER_ROOT, 60000, sig, 0);
	pthread_join(t, NULL);
	sbx_signal_free(sig);
	assert_true(r.aborted);
	sbx_exec_result_free(&r);
	assert_int_equal(count_procs(h, "sleep 2718"), 0);
	assert_int_equal(count_procs(h, "sleep 2719"), 0);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", pause), 0);
	json_decref(log);
}

static void test_process__root_background_and_kill(void **state)
{
	h_ctx *h = *state;
	sbx_process_options po = SBX_PROCESS_OPTIONS_INIT;
	sbx_process *p = NULL;
	sbx_exec_result r;
	sbx_error err = {0};

	po.user = SBX_USER_ROOT;
	assert_int_equal(
	    sbx_process_start(&p, h->p, g_id, "id -u; exec sleep 1618", &po, NULL, &err), 0);
	assert_true(sbx_process_pid(p) > 0);
	char pause[128];
	snprintf(pause, sizeof(pause), "/sandboxes/%s/pause", g_id);
	h_reset(h);
	for (int i = 0; i < 200 && count_procs(h, "sleep 1618") == 0; i++)
		usleep(50000);
	assert_int_equal(count_procs(h, "sleep 1618"), 1);
	char *s = out_as(h, "ps -o user= -C sleep | sort -u", SBX_USER_ROOT);
	assert_string_equal(s, "root\n");
	free(s);
	assert_int_equal(sbx_process_kill(p, NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r, p, NULL, &err), 0);
	assert_true(r.aborted);
	assert_int_equal(r.stdout_len, 2);
	assert_memory_equal(r.stdout_data, "0\n", 2);
	sbx_exec_result_free(&r);
	sbx_process_free(p);
	assert_int_equal(count_procs(h, "sleep 1618"), 0);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", pause), 0);
	json_decref(log);
}

static void test_user__checked_before_any_request(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_process_options po = SBX_PROCESS_OPTIONS_INIT;
	sbx_process *p = NULL;
	sbx_exec_result r;
	sbx_error err = {0};

	h_reset(h);
	o.user = (sbx_user)2;
	assert_int_equal(sbx_sandbox_exec(&r, h->p, g_id, "true", &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message,
	                    "exec user must be SBX_USER_SANDBOX or SBX_USER_ROOT, not 2");
	sbx_error_clear(&err);
	po.user = (sbx_user)-1;
	assert_int_equal(sbx_process_start(&p, h->p, g_id, "true", &po, NULL, &err), SBX_EINVALID);
	assert_null(p);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exec__as_root_and_as_sandbox),
	    cmocka_unit_test(test_exec__older_versions_mean_sandbox),
	    cmocka_unit_test(test_exec__root_timeout_and_abort_kill_the_tree),
	    cmocka_unit_test(test_process__root_background_and_kill),
	    cmocka_unit_test(test_user__checked_before_any_request),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
