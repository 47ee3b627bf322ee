/*
 * tests/live/test_live.c: the core sandbox@1 scenarios against a real E2B
 * (docs/contract.md, as the seed's own live tests cover it): the sandbox user, files, /skills
 * read-only (a write through a symlink rejected), output truncation, kill on
 * timeout (nohup and setsid children), abort, same-name replacement,
 * pause / resume, gone after destroy.
 *
 * Runs only when CAPYBARA_TEST_E2B_API_KEY and CAPYBARA_TEST_E2B_TEMPLATE are
 * set (optional CAPYBARA_TEST_E2B_API_URL, CAPYBARA_TEST_E2B_DOMAIN,
 * CAPYBARA_TEST_E2B_ENVD_URL); otherwise exits 77 (ctest: skipped). Uses the
 * public API only. Assumptions only real E2B can confirm, to check on the
 * first run: the template has user sandbox (uid 1000, HOME /workspace),
 * /skills root 0755, /opt/capybara root 0700, util-linux, procps, coreutils;
 * connect with memory:false cold-boots a paused sandbox (reboot fallback).
 */
#define _GNU_SOURCE
#include <sandbox.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

static sbx_provider *g_p;
static char *g_id;
static const char *g_key;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_leaks;

static void check_secret_free(const char *text)
{
	if (g_key && *g_key && strstr(text, g_key)) {
		pthread_mutex_lock(&g_mu);
		g_leaks++;
		pthread_mutex_unlock(&g_mu);
	}
}

static void on_log(sbx_log_level level, const char *message, const sbx_log_field *fields,
                   size_t nfields, void *payload)
{
	(void)payload;
	check_secret_free(message);
	for (size_t i = 0; i < nfields; i++)
		if (fields[i].value)
			check_secret_free(fields[i].value);
	if (level >= SBX_LOG_WARN || getenv("ITEST_VERBOSE"))
		fprintf(stderr, "[%s] %s\n", sbx_log_level_name(level), message);
}

static void name_of(char *out, size_t len, const char *what)
{
	static int n;
	snprintf(out, len, "live-%s-%d-%ld-%d", what, (int)getpid(), (long)time(NULL) % 100000,
	         ++n);
}

static char *create(const char *name)
{
	sbx_limits l = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	sbx_error err = {0};
	char *id = NULL;
	int rc = sbx_sandbox_create(&id, g_p, name, &l, NULL, &err);
	check_secret_free(err.message);
	if (rc != 0)
		fail_msg("create %s: %s %s", name, sbx_error_code_name(rc), err.message);
	return id;
}

static int run(sbx_exec_result *r, const char *cmd, uint64_t timeout_ms, size_t max,
               sbx_signal *sig)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.timeout_ms = timeout_ms;
	o.max_output_bytes = max;
	sbx_error err = {0};
	int rc = sbx_sandbox_exec(r, g_p, g_id, cmd, &o, sig, &err);
	check_secret_free(err.message);
	if (rc != 0)
		print_error("exec %s: %s %s\n", cmd, sbx_error_code_name(rc), err.message);
	return rc;
}

/* stdout of a command that must exit 0, as a string; caller free()s. */
static char *sh(const char *cmd)
{
	sbx_exec_result r;
	assert_int_equal(run(&r, cmd, 60000, 1 << 20, NULL), 0);
	if (!r.has_exit_code || r.exit_code != 0)
		fail_msg("%s: exit %d, stderr %.*s", cmd, r.exit_code, (int)r.stderr_len,
		         r.stderr_data);
	char *s = strndup((const char *)r.stdout_data, r.stdout_len);
	sbx_exec_result_free(&r);
	return s;
}

static void assert_sh(const char *cmd, const char *want)
{
	char *s = sh(cmd);
	if (strcmp(s, want) != 0)
		fail_msg("%s:\n got  [%s]\n want [%s]", cmd, s, want);
	free(s);
}

static int setup(void **state)
{
	(void)state;
	const char *url = getenv("CAPYBARA_TEST_E2B_API_URL");
	const char *domain = getenv("CAPYBARA_TEST_E2B_DOMAIN");
	json_t *cfg = json_pack("{s:s, s:s}", "apiKey", g_key, "template",
	                        getenv("CAPYBARA_TEST_E2B_TEMPLATE"));
	if (url && *url)
		json_object_set_new(cfg, "apiUrl", json_string(url));
	if (domain && *domain)
		json_object_set_new(cfg, "domain", json_string(domain));
	char *text = json_dumps(cfg, JSON_COMPACT);
	json_decref(cfg);
	sbx_e2b_config *c = NULL;
	sbx_error err = {0};
	if (sbx_e2b_config_parse(&c, text, strlen(text), &err) < 0) {
		fprintf(stderr, "config: %s\n", err.message);
		free(text);
		return -1;
	}
	free(text);
	sbx_e2b_options o = SBX_E2B_OPTIONS_INIT;
	const char *envd = getenv("CAPYBARA_TEST_E2B_ENVD_URL");
	if (envd && *envd)
		o.envd_url = envd;
	o.logger.fn = on_log;
	int rc = sbx_e2b_provider_new(&g_p, c, &o, &err);
	sbx_e2b_config_free(c);
	if (rc < 0) {
		fprintf(stderr, "provider: %s\n", err.message);
		return -1;
	}
	char name[96];
	name_of(name, sizeof(name), "main");
	sbx_limits l = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	if (sbx_sandbox_create(&g_id, g_p, name, &l, NULL, &err) < 0) {
		fprintf(stderr, "create: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (g_id)
		sbx_sandbox_destroy(g_p, g_id, NULL, NULL);
	sbx_free(g_id);
	sbx_provider_free(g_p);
	return 0;
}

static void test_live__sandbox_user_and_workspace(void **state)
{
	(void)state;
	assert_sh("id -un; id -u; pwd; echo $HOME; echo $LANG", "sandbox\n1000\n/workspace\n"
	                                                        "/workspace\nC.UTF-8\n");
	assert_sh("stat -c '%U %a' /skills /opt/capybara", "root 755\nroot 700\n");
	sbx_exec_result r;
	assert_int_equal(run(&r, "echo o; echo e >&2; kill -SEGV $$", 60000, 1 << 20, NULL), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 139);
	assert_int_equal(r.stdout_len, 2);
	/* "e\n", then the wrapper shell may report the signal ("Segmentation fault") */
	assert_true(r.stderr_len >= 2);
	assert_memory_equal(r.stderr_data, "e\n", 2);
	sbx_exec_result_free(&r);
}

static void test_live__files_round_trip(void **state)
{
	(void)state;
	unsigned char data[512];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)i;
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_write_file(g_p, g_id, "/workspace/live/a/b.bin", data,
	                                        sizeof(data), NULL, &err),
	                 0);
	sbx_file *f = NULL;
	assert_int_equal(
	    sbx_sandbox_read_file(&f, g_p, g_id, "/workspace/live/a/b.bin", 1000, NULL, &err), 0);
	assert_non_null(f);
	assert_int_equal(f->len, sizeof(data));
	assert_memory_equal(f->data, data, sizeof(data));
	assert_false(f->truncated);
	sbx_file_free(f);
	assert_int_equal(
	    sbx_sandbox_read_file(&f, g_p, g_id, "/workspace/live/a/b.bin", 10, NULL, &err), 0);
	assert_int_equal(f->len, 10);
	assert_true(f->truncated);
	sbx_file_free(f);
	assert_int_equal(sbx_sandbox_read_file(&f, g_p, g_id, "/workspace/nope", 10, NULL, &err),
	                 0);
	assert_null(f);
	assert_int_equal(sbx_sandbox_read_file(&f, g_p, g_id, "/workspace/live", 10, NULL, &err),
	                 0);
	assert_null(f);
	sbx_stat st;
	assert_int_equal(sbx_sandbox_stat(&st, g_p, g_id, "/workspace/live/a/b.bin", NULL, &err),
	                 0);
	assert_true(st.exists);
	assert_int_equal(st.size, sizeof(data));
	assert_false(st.is_dir);
	assert_int_equal(sbx_sandbox_stat(&st, g_p, g_id, "/workspace/live/a", NULL, &err), 0);
	assert_true(st.is_dir);
	assert_int_equal(sbx_sandbox_stat(&st, g_p, g_id, "/workspace/none", NULL, &err), 0);
	assert_false(st.exists);
	assert_sh("stat -c '%u' /workspace/live /workspace/live/a /workspace/live/a/b.bin",
	          "1000\n1000\n1000\n");
}

static void test_live__skills_read_only_and_no_symlink_escape(void **state)
{
	(void)state;
	sbx_error err = {0};
	assert_int_equal(
	    sbx_sandbox_write_file(g_p, g_id, "/skills/live/SKILL.md", "# s\n", 4, NULL, &err), 0);
	assert_sh(
	    "stat -c '%U %a' /skills/live/SKILL.md; touch /skills/x 2>/dev/null && echo rw || "
	    "echo ro",
	    "root 644\nro\n");
	char *before = sh("md5sum /etc/passwd; ls /etc | md5sum");
	assert_sh("ln -sfn /etc /workspace/etc-link; echo ok", "ok\n");
	assert_true(
	    sbx_sandbox_write_file(g_p, g_id, "/workspace/etc-link/evil", "x", 1, NULL, &err) < 0);
	check_secret_free(err.message);
	char *after = sh("md5sum /etc/passwd; ls /etc | md5sum");
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_live__output_truncation(void **state)
{
	(void)state;
	sbx_exec_result r;
	assert_int_equal(run(&r, "head -c 300000 /dev/zero | tr '\\0' a", 60000, 1000, NULL), 0);
	assert_true(r.truncated);
	assert_int_equal(r.stdout_len, 1000);
	assert_int_equal(r.exit_code, 0);
	sbx_exec_result_free(&r);
}

static void timeout_leaves_nothing(const char *cmd, const char *pattern)
{
	sbx_exec_result r;
	assert_int_equal(run(&r, cmd, 2000, 1 << 20, NULL), 0);
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	assert_int_equal(r.stdout_len, 8);
	assert_memory_equal(r.stdout_data, "started\n", 8);
	sbx_exec_result_free(&r);
	char check[256], *s;
	snprintf(check, sizeof(check), "pgrep -af '%s' || true", pattern);
	s = sh(check);
	if (*s) {
		snprintf(check, sizeof(check), "pkill -9 -f '%s'; true", pattern);
		free(sh(check));
		fail_msg("left running after the timeout: %s", s);
	}
	free(s);
}

static void test_live__timeout_kills_nohup_children(void **state)
{
	(void)state;
	timeout_leaves_nothing("nohup sleep 300 >/dev/null 2>&1 & nohup sleep 301 & echo started; "
	                       "sleep 302",
	                       "sleep 30[0-2]");
}

/* A child in its own session still holding the output: the reboot fallback (docs/contract.md
 * "exec", last resort). */
static void test_live__timeout_kills_setsid_children(void **state)
{
	(void)state;
	timeout_leaves_nothing("setsid sleep 311 & echo started; sleep 312", "sleep 31[12]");
}

typedef struct aborter {
	sbx_signal *sig;
	unsigned ms;
} aborter;

static void *abort_later(void *arg)
{
	aborter *a = arg;
	usleep(a->ms * 1000u);
	sbx_signal_abort(a->sig);
	return NULL;
}

static void test_live__abort_returns_output_so_far(void **state)
{
	(void)state;
	aborter a = {NULL, 2000};
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	pthread_t t;
	pthread_create(&t, NULL, abort_later, &a);
	sbx_exec_result r;
	assert_int_equal(run(&r, "echo started; sleep 120", 60000, 1 << 20, a.sig), 0);
	pthread_join(t, NULL);
	assert_true(r.aborted);
	assert_false(r.timed_out);
	assert_false(r.has_exit_code);
	assert_int_equal(r.stdout_len, 8);
	assert_memory_equal(r.stdout_data, "started\n", 8);
	sbx_exec_result_free(&r);
	sbx_signal_free(a.sig);
	assert_sh("pgrep -f 'sleep 12[0]' || true", "");
}

static void test_live__pause_resume_keeps_files_and_processes(void **state)
{
	(void)state;
	assert_sh("echo kept > /tmp/live-kept; (sleep 900 >/dev/null 2>&1 &); echo ok", "ok\n");
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_suspend(g_p, g_id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_suspend(g_p, g_id, NULL, &err), 0); /* already paused */
	sbx_resume_status rs = SBX_RESUME_GONE;
	assert_int_equal(sbx_sandbox_resume(&rs, g_p, g_id, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	assert_sh("cat /tmp/live-kept; pgrep -c -f 'sleep 90[0]'", "kept\n1\n");
	sbx_sandbox_kill_all(g_p, g_id, NULL, NULL);
	assert_sh("pkill -f 'sleep 90[0]'; echo ok", "ok\n");
}

static void test_live__same_name_replaced_and_gone_after_destroy(void **state)
{
	(void)state;
	char name[96];
	name_of(name, sizeof(name), "same");
	char *a = create(name);
	char *b = create(name);
	assert_string_not_equal(a, b);
	sbx_resume_status rs = SBX_RESUMED;
	sbx_error err = {0};
	assert_int_equal(sbx_sandbox_resume(&rs, g_p, a, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUME_GONE);
	assert_int_equal(sbx_sandbox_resume(&rs, g_p, b, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUMED);
	assert_int_equal(sbx_sandbox_destroy(g_p, b, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_destroy(g_p, b, NULL, &err), 0); /* missing is success */
	assert_int_equal(sbx_sandbox_resume(&rs, g_p, b, NULL, &err), 0);
	assert_int_equal(rs, SBX_RESUME_GONE);
	assert_int_equal(sbx_sandbox_destroy_by_name(g_p, name, NULL, &err), 0);
	sbx_free(a);
	sbx_free(b);
}

static void test_live__no_secret_in_logs_or_errors(void **state)
{
	(void)state;
	assert_int_equal(g_leaks, 0);
}

int main(void)
{
	g_key = getenv("CAPYBARA_TEST_E2B_API_KEY");
	const char *tpl = getenv("CAPYBARA_TEST_E2B_TEMPLATE");
	if (!g_key || !*g_key || !tpl || !*tpl) {
		printf("live E2B tests skipped: set CAPYBARA_TEST_E2B_API_KEY and "
		       "CAPYBARA_TEST_E2B_TEMPLATE to run them\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_live__sandbox_user_and_workspace),
	    cmocka_unit_test(test_live__files_round_trip),
	    cmocka_unit_test(test_live__skills_read_only_and_no_symlink_escape),
	    cmocka_unit_test(test_live__output_truncation),
	    cmocka_unit_test(test_live__timeout_kills_nohup_children),
	    cmocka_unit_test(test_live__timeout_kills_setsid_children),
	    cmocka_unit_test(test_live__abort_returns_output_so_far),
	    cmocka_unit_test(test_live__pause_resume_keeps_files_and_processes),
	    cmocka_unit_test(test_live__same_name_replaced_and_gone_after_destroy),
	    cmocka_unit_test(test_live__no_secret_in_logs_or_errors),
	};
	return cmocka_run_group_tests_name("live_e2b", tests, setup, teardown);
}
