/*
 * tests/integration/test_write_files.c: sbx_sandbox_write_files against
 * fake-e2b (sandbox/paths.h, docs/files.md "Many files in one call"): one
 * multipart POST /files without a path query for every file, the files'
 * exact bytes and owners, parents made, /skills written by root 0644, no
 * staging file left, the first failure as the sandbox user stops the rest,
 * root writes where the sandbox user may not, and what is refused before any
 * request.
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
	return h_group_setup_sandbox(state, "wfiles", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static char *root_sh(h_ctx *h, const char *cmd)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	char *s;
	o.user = SBX_USER_ROOT;
	assert_int_equal(sbx_sandbox_exec(&r, h->p, g_id, cmd, &o, NULL, NULL), 0);
	assert_int_equal(r.exit_code, 0);
	s = strndup((const char *)r.stdout_data, r.stdout_len);
	sbx_exec_result_free(&r);
	return s;
}

static void test_write_files__one_upload_exact_bytes(void **state)
{
	h_ctx *h = *state;
	static const unsigned char bin[] = {0, 1, 2, 0xff, 0, 'x'};
	sbx_write_entry f[] = {{"/workspace/m/a/b.txt", "hello\n", 6},
	                       {"/workspace/m/bin", bin, sizeof(bin)},
	                       {"/workspace/m/empty", NULL, 0},
	                       {"/skills/m/SKILL.md", "# s\n", 4}};
	sbx_error err = {0};
	sbx_file *got = NULL;

	h_reset(h);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, f, 4, NULL, NULL, &err), 0);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/files$"), 1);
	json_t *e = h_find(log, "POST", "/files$", 0);
	assert_null(h_entry_query(e, "path"));
	assert_string_equal(h_entry_query(e, "username"), "root");
	assert_int_equal(h_entry_status(e), 200);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), 1); /* one step */
	json_decref(log);
	assert_int_equal(
	    sbx_sandbox_read_file(&got, h->p, g_id, "/workspace/m/a/b.txt", 100, NULL, NULL), 0);
	assert_int_equal(got->len, 6);
	assert_memory_equal(got->data, "hello\n", 6);
	sbx_file_free(got);
	assert_int_equal(
	    sbx_sandbox_read_file(&got, h->p, g_id, "/workspace/m/bin", 100, NULL, NULL), 0);
	assert_int_equal(got->len, sizeof(bin));
	assert_memory_equal(got->data, bin, sizeof(bin));
	sbx_file_free(got);
	char *s = h_sh(h, g_id,
	               "stat -c '%U %s' /workspace/m/a/b.txt /workspace/m/empty; stat -c '%U %a' "
	               "/skills/m/SKILL.md");
	assert_string_equal(s, "sandbox 6\nsandbox 0\nroot 644\n");
	free(s);
	s = root_sh(h, "ls -A /opt/capybara/upload | wc -l");
	assert_string_equal(s, "0\n");
	free(s);
}

static void test_write_files__first_failure_stops_the_rest(void **state)
{
	h_ctx *h = *state;
	sbx_write_entry f[] = {
	    {"/workspace/ok1", "1", 1}, {"/root/no", "2", 1}, {"/workspace/never", "3", 1}};
	sbx_path_options o = SBX_PATH_OPTIONS_INIT;
	sbx_error err = {0};

	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, f, 3, NULL, NULL, &err), SBX_ESANDBOX);
	assert_string_equal(err.message, "cannot write /root/no: permission denied for /root/no");
	char *s = h_sh(h, g_id, "cat /workspace/ok1; test -e /workspace/never || echo absent");
	assert_string_equal(s, "1absent\n");
	free(s);
	s = root_sh(h, "ls -A /opt/capybara/upload | wc -l; test -e /root/no || echo absent");
	assert_string_equal(s, "0\nabsent\n");
	free(s);
	/* as root it may */
	o.user = SBX_USER_ROOT;
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, f + 1, 1, &o, NULL, &err), 0);
	s = root_sh(h, "stat -c '%U' /root/no; cat /root/no");
	assert_string_equal(s, "root\n2");
	free(s);
}

static void test_write_files__refused_before_any_request(void **state)
{
	h_ctx *h = *state;
	static char one[1];
	sbx_write_entry dup[] = {{"/workspace/a", "x", 1}, {"/workspace/a", "y", 1}};
	sbx_write_entry rel[] = {{"workspace/a", "x", 1}};
	sbx_write_entry nul[] = {{"/workspace/a", NULL, 3}};
	sbx_write_entry big[] = {{"/workspace/a", one, SBX_WRITE_FILES_MAX_BYTES},
	                         {"/workspace/b", one, 1}};
	sbx_write_entry root[] = {{"/", "x", 1}};
	sbx_error err = {0};

	h_reset(h);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, dup, 0, NULL, NULL, &err),
	                 SBX_EINVALID);
	assert_string_equal(err.message, "write_files takes 1..1000 files, not 0");
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, dup, 2, NULL, NULL, &err),
	                 SBX_EINVALID);
	assert_string_equal(err.message, "/workspace/a is given twice");
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, rel, 1, NULL, NULL, NULL),
	                 SBX_EINVALID);
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, nul, 1, NULL, NULL, &err),
	                 SBX_EINVALID);
	assert_string_equal(err.message, "data of /workspace/a is NULL");
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, big, 2, NULL, NULL, &err),
	                 SBX_EINVALID);
	assert_string_equal(err.message, "write_files takes at most 67108864 bytes in all");
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, root, 1, NULL, NULL, NULL),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_write_files(h->p, g_id, NULL, 1, NULL, NULL, NULL),
	                 SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_files__one_upload_exact_bytes),
	    cmocka_unit_test(test_write_files__first_failure_stops_the_rest),
	    cmocka_unit_test(test_write_files__refused_before_any_request),
	};
	return cmocka_run_group_tests_name("write_files", tests, setup, teardown);
}
