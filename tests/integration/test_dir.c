/*
 * tests/integration/test_dir.c: sbx_sandbox_list_dir() against fake-e2b
 * (docs/files.md): entry names, types and sizes as the sandbox user sees
 * them, a symlinked directory followed, odd names intact, the error cases.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "dir", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static void check_listing(const sbx_dir *d)
{
	assert_non_null(d);
	assert_false(d->truncated);
	assert_int_equal(d->count, 5);
	assert_string_equal(d->entries[0].name, "a b");
	assert_int_equal(d->entries[0].type, SBX_ENTRY_FILE);
	assert_int_equal(d->entries[0].size, 3);
	assert_string_equal(d->entries[1].name, "fifo");
	assert_int_equal(d->entries[1].type, SBX_ENTRY_OTHER);
	assert_string_equal(d->entries[2].name, "link");
	assert_int_equal(d->entries[2].type, SBX_ENTRY_SYMLINK);
	assert_int_equal(d->entries[2].size, 3); /* the link's own length: "a b" */
	assert_string_equal(d->entries[3].name, "new\nline");
	assert_int_equal(d->entries[3].type, SBX_ENTRY_FILE);
	assert_int_equal(d->entries[3].size, 0);
	assert_string_equal(d->entries[4].name, "sub");
	assert_int_equal(d->entries[4].type, SBX_ENTRY_DIR);
}

static void test_list_dir__entries_types_sizes(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_dir *d = NULL;

	free(h_sh(h, g_id,
	          "set -e; mkdir -p /workspace/d/sub; printf abc > '/workspace/d/a b'; "
	          "ln -s 'a b' /workspace/d/link; mkfifo /workspace/d/fifo; "
	          ": > $'/workspace/d/new\\nline'; "
	          "ln -s /workspace/d /workspace/dl"));
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "/workspace/d", NULL, &err), 0);
	check_listing(d);
	sbx_dir_free(d);
	/* a symlink to a directory is followed */
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "/workspace/dl", NULL, &err), 0);
	check_listing(d);
	sbx_dir_free(d);
	/* empty directory: a listing with no entries */
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "/workspace/d/sub", NULL, &err), 0);
	assert_non_null(d);
	assert_int_equal(d->count, 0);
	assert_null(d->entries);
	sbx_dir_free(d);
}

static void test_list_dir__missing_file_and_denied(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_dir *d = (sbx_dir *)1;

	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "/workspace/nope", NULL, &err), 0);
	assert_null(d);
	free(h_sh(h, g_id, "printf x > /workspace/plain"));
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "/workspace/plain", NULL, &err),
	                 SBX_ESANDBOX);
	assert_null(d);
	assert_string_equal(err.message,
	                    "cannot list /workspace/plain: it is a file, not a directory");
	assert_string_equal(err.e2b_code, "invalid_argument"); /* the reason as data */
	sbx_error_clear(&err);
	/* root-only: the sandbox user may not read it, so neither may list_dir */
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "/opt/capybara", NULL, &err),
	                 SBX_ESANDBOX);
	assert_string_equal(err.message,
	                    "cannot list /opt/capybara: permission denied for /opt/capybara");
	h_note_err(h, &err);
	sbx_error_clear(&err);
	/* bad arguments: nothing sent */
	h_reset(h);
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, "relative", NULL, &err),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, g_id, NULL, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_list_dir(NULL, h->p, g_id, "/", NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_list_dir(&d, h->p, "bad id", "/", NULL, &err), SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_list_dir__entries_types_sizes),
	    cmocka_unit_test(test_list_dir__missing_file_and_denied),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
