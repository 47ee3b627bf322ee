/* Unit tests of contract/provider.c: shared checks before the vtable, output zeroing. */
#include "unit.h"

#include <sandbox.h>
#include <stdlib.h>

#include "contract/provider.h"
#include "util/alloc.h"

/* A fake provider that counts calls and records what it was given. */
typedef struct fake {
	int calls;
	int freed;
	int fail;                   /* return this from every method */
	sbx_exec_options exec_opts; /* a copy: the contract passes a normalised local */
	size_t ntags;
} fake;

static int f_create(void *impl, char **id_out, const char *name, const sbx_limits *limits,
                    sbx_signal *sig, sbx_error *err)
{
	fake *f = impl;
	f->calls++;
	*id_out = sbx__strdup("sbx-1");
	return f->fail;
}

static int f_resume(void *impl, sbx_resume_status *out, const char *id, sbx_signal *sig,
                    sbx_error *err)
{
	((fake *)impl)->calls++;
	*out = SBX_RESUME_GONE;
	return ((fake *)impl)->fail;
}

static int f_id(void *impl, const char *id, sbx_signal *sig, sbx_error *err)
{
	((fake *)impl)->calls++;
	return ((fake *)impl)->fail;
}

static int f_kill_tagged(void *impl, const char *id, const char *const *tags, size_t ntags,
                         sbx_signal *sig, sbx_error *err)
{
	fake *f = impl;
	f->calls++;
	f->ntags = ntags;
	return f->fail;
}

static int f_exec(void *impl, sbx_exec_result *out, const char *id, const char *command,
                  const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	fake *f = impl;
	f->calls++;
	f->exec_opts = *opts;
	out->stdout_data = sbx__malloc(3);
	memcpy(out->stdout_data, "hi", 3);
	out->stdout_len = 2;
	out->has_exit_code = true;
	return f->fail; /* on failure the contract layer frees out */
}

static int f_read(void *impl, sbx_file **out, const char *id, const char *path, size_t max_bytes,
                  sbx_signal *sig, sbx_error *err)
{
	fake *f = impl;
	f->calls++;
	*out = sbx__calloc(1, sizeof(**out));
	(*out)->data = sbx__malloc(1);
	(*out)->data[0] = 0;
	return f->fail;
}

static int f_write(void *impl, const char *id, const char *path, const void *data, size_t len,
                   sbx_signal *sig, sbx_error *err)
{
	((fake *)impl)->calls++;
	return ((fake *)impl)->fail;
}

static int f_stat(void *impl, sbx_stat *out, const char *id, const char *path, sbx_signal *sig,
                  sbx_error *err)
{
	((fake *)impl)->calls++;
	out->exists = true;
	out->size = 5;
	return ((fake *)impl)->fail;
}

static void f_free(void *impl)
{
	((fake *)impl)->freed++;
}

static const sbx_provider_vtable fake_vt = {
    .name = "fake",
    .concurrent_exec = true,
    .create = f_create,
    .resume = f_resume,
    .suspend = f_id,
    .destroy = f_id,
    .destroy_by_name = f_id,
    .kill_all = f_id,
    .kill_tagged = f_kill_tagged,
    .exec = f_exec,
    .read_file = f_read,
    .write_file = f_write,
    .stat = f_stat,
    .free = f_free,
};

typedef struct fixture {
	fake f;
	sbx_provider *p;
	sbx_signal *aborted;
} fixture;

static int setup(void **state)
{
	fixture *x = calloc(1, sizeof(*x));
	if (sbx__provider_new(&x->p, &fake_vt, &x->f, NULL) < 0 || sbx_signal_new(&x->aborted) < 0)
		return -1;
	sbx_signal_abort(x->aborted);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	fixture *x = *state;
	sbx_provider_free(x->p);
	assert_int_equal(x->f.freed, 1);
	sbx_signal_free(x->aborted);
	free(x);
	return 0;
}

static const sbx_limits limits = {1, 512, 1024, SBX_EGRESS_NONE, NULL, 0};

static void expect_aborted(int rc, sbx_error *e)
{
	assert_int_equal(rc, SBX_EABORTED);
	assert_int_equal(e->code, SBX_EABORTED);
	assert_string_equal(e->message, "aborted");
	sbx_error_clear(e);
}

static void test_provider__aborted_signal_fails_every_call_before_the_provider(void **state)
{
	fixture *x = *state;
	sbx_signal *s = x->aborted;
	sbx_error e = {0};
	char *id = (char *)1;
	sbx_resume_status rs = SBX_RESUME_GONE;
	sbx_exec_result res;
	sbx_file *file = (sbx_file *)1;
	sbx_stat st;
	const char *tags[] = {"t"};
	memset(&res, 0xff, sizeof(res));
	memset(&st, 0xff, sizeof(st));

	expect_aborted(sbx_sandbox_create(&id, x->p, "n", &limits, s, &e), &e);
	assert_null(id);
	expect_aborted(sbx_sandbox_resume(&rs, x->p, "i", s, &e), &e);
	assert_int_equal(rs, SBX_RESUMED);
	expect_aborted(sbx_sandbox_suspend(x->p, "i", s, &e), &e);
	expect_aborted(sbx_sandbox_destroy(x->p, "i", s, &e), &e);
	expect_aborted(sbx_sandbox_destroy_by_name(x->p, "n", s, &e), &e);
	expect_aborted(sbx_sandbox_kill_all(x->p, "i", s, &e), &e);
	expect_aborted(sbx_sandbox_kill_tagged(x->p, "i", tags, 1, s, &e), &e);
	expect_aborted(sbx_sandbox_kill_tagged(x->p, "i", NULL, 0, s, &e), &e);
	expect_aborted(sbx_sandbox_exec(&res, x->p, "i", "true", NULL, s, &e), &e);
	assert_null(res.stdout_data);
	assert_false(res.has_exit_code);
	assert_int_equal(res.stdout_len, 0);
	expect_aborted(sbx_sandbox_read_file(&file, x->p, "i", "/a", 10, s, &e), &e);
	assert_null(file);
	expect_aborted(sbx_sandbox_write_file(x->p, "i", "/a", "x", 1, s, &e), &e);
	expect_aborted(sbx_sandbox_stat(&st, x->p, "i", "/a", s, &e), &e);
	assert_false(st.exists);
	assert_int_equal(st.size, 0);
	/* an aborted signal wins over bad arguments (docs/contract.md "Methods") */
	expect_aborted(sbx_sandbox_read_file(&file, x->p, "i", "relative", 10, s, &e), &e);
	expect_aborted(sbx_sandbox_exec(&res, NULL, NULL, NULL, NULL, s, &e), &e);
	assert_int_equal(x->f.calls, 0);
}

static void test_provider__null_arguments_are_invalid(void **state)
{
	fixture *x = *state;
	sbx_error e = {0};
	char *id;
	sbx_exec_result res;
	sbx_file *file;
	sbx_stat st;
	assert_int_equal(sbx_sandbox_create(&id, NULL, "n", &limits, NULL, &e), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_create(NULL, x->p, "n", &limits, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_create(&id, x->p, NULL, &limits, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_create(&id, x->p, "n", NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_resume(NULL, x->p, "i", NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_suspend(x->p, NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_destroy(NULL, "i", NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_destroy_by_name(x->p, NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_kill_all(x->p, NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_kill_tagged(x->p, "i", NULL, 2, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_exec(NULL, x->p, "i", "c", NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", NULL, NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_read_file(&file, x->p, "i", NULL, 1, NULL, NULL),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_write_file(x->p, "i", "/a", NULL, 1, NULL, NULL),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_stat(&st, x->p, NULL, "/a", NULL, NULL), SBX_EINVALID);
	assert_int_equal(x->f.calls, 0);
}

static void test_provider__kill_tagged_validates_every_tag_then_skips_empty(void **state)
{
	fixture *x = *state;
	sbx_error e = {0};
	const char *bad[] = {"ok", "not ok"};
	assert_int_equal(sbx_sandbox_kill_tagged(x->p, "i", bad, 2, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "invalid sandbox tag");
	const char *null_tag[] = {NULL};
	assert_int_equal(sbx_sandbox_kill_tagged(x->p, "i", null_tag, 1, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_kill_tagged(x->p, "i", NULL, 0, NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_kill_tagged(x->p, "i", bad, 0, NULL, NULL), 0);
	assert_int_equal(x->f.calls, 0);
	assert_int_equal(sbx_sandbox_kill_tagged(x->p, "i", bad, 1, NULL, NULL), 0);
	assert_int_equal(x->f.calls, 1);
	assert_int_equal(x->f.ntags, 1);
}

static void expect_exec_invalid(fixture *x, const sbx_exec_options *o, const char *message)
{
	sbx_exec_result res;
	sbx_error e = {0};
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", "true", o, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, message);
	assert_null(res.stdout_data);
}

static void test_provider__exec_checks_options_in_the_seed_order(void **state)
{
	fixture *x = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_env_var env[] = {{"GOOD", "1"}, {"1BAD", "2"}};

	o.version = 4;
	expect_exec_invalid(x, &o, "unsupported sbx_exec_options version 4");
	o.version = 0;
	expect_exec_invalid(x, &o, "unsupported sbx_exec_options version 0");
	o.version = SBX_EXEC_OPTIONS_VERSION;
	o.user = (sbx_user)5;
	expect_exec_invalid(x, &o, "exec user must be SBX_USER_SANDBOX or SBX_USER_ROOT, not 5");
	o.user = SBX_USER_SANDBOX;
	o.stdin_len = 1;
	expect_exec_invalid(x, &o, "stdin_data is NULL");
	o.stdin_data = "x";
	o.stdin_read = (sbx_input_fn)1; /* never called: refused before */
	expect_exec_invalid(x, &o, "exec takes stdin_data or stdin_read, not both");
	o.stdin_data = NULL;
	o.stdin_len = 0;
	o.stdin_read = NULL;
	o.tag = "bad tag";
	o.env = env;
	o.env_count = 2;
	expect_exec_invalid(x, &o, "invalid sandbox tag"); /* tag before env: contract.md "exec" */
	o.tag = "good";
	expect_exec_invalid(x, &o, "invalid environment variable name: 1BAD");
	o.env_count = 1;
	o.timeout_ms = 0;
	expect_exec_invalid(x, &o, "exec timeout_ms must be positive");
	o.timeout_ms = 1;
	env[0].value = NULL;
	expect_exec_invalid(x, &o, "environment variable GOOD has a NULL value");
	o.env = NULL;
	expect_exec_invalid(x, &o, "env is NULL");
	assert_int_equal(x->f.calls, 0);
}

static void test_provider__exec_dispatches_with_defaults_and_frees_on_failure(void **state)
{
	fixture *x = *state;
	sbx_exec_result res;
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", "echo", NULL, NULL, NULL), 0);
	assert_int_equal(x->f.calls, 1);
	assert_int_equal(x->f.exec_opts.timeout_ms, 60000);
	assert_int_equal(x->f.exec_opts.max_output_bytes, 1024 * 1024);
	assert_null(x->f.exec_opts.cwd);
	assert_int_equal(res.stdout_len, 2);
	assert_string_equal((char *)res.stdout_data, "hi");
	sbx_exec_result_free(&res);
	assert_null(res.stdout_data);
	sbx_exec_result_free(NULL);

	x->f.fail = SBX_EHTTP;
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", "echo", NULL, NULL, NULL), SBX_EHTTP);
	assert_null(res.stdout_data); /* freed by the contract layer: ASan sees no leak */
	assert_false(res.has_exit_code);
}

/* A caller built against version 1 has a shorter struct: nothing past `tag` may be read. */
static void test_provider__exec_version_1_options_are_read_only_up_to_tag(void **state)
{
	fixture *x = *state;
	size_t v1 = offsetof(sbx_exec_options, on_output);
	sbx_exec_options full = {0};
	void *o = malloc(v1); /* ASan flags any read past v1 */
	sbx_exec_result res;

	assert_non_null(o);
	full.version = 1;
	full.timeout_ms = 1234;
	full.max_output_bytes = 7;
	full.cwd = "/tmp";
	memcpy(o, &full, v1);
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", "echo", o, NULL, NULL), 0);
	assert_int_equal(x->f.exec_opts.version, SBX_EXEC_OPTIONS_VERSION);
	assert_int_equal(x->f.exec_opts.timeout_ms, 1234);
	assert_int_equal(x->f.exec_opts.max_output_bytes, 7);
	assert_string_equal(x->f.exec_opts.cwd, "/tmp");
	assert_null(x->f.exec_opts.on_output);
	assert_null(x->f.exec_opts.stdin_data);
	assert_null(x->f.exec_opts.stdin_read);
	sbx_exec_result_free(&res);
	free(o);
}

/* Version 2 ends at stdin_payload: `user` is never read, the command is the sandbox user's. */
static void test_provider__exec_version_2_options_are_read_only_up_to_stdin(void **state)
{
	fixture *x = *state;
	size_t v2 = offsetof(sbx_exec_options, user);
	sbx_exec_options full = SBX_EXEC_OPTIONS_INIT;
	void *o = malloc(v2); /* ASan flags any read past v2 */
	sbx_exec_result res;

	assert_non_null(o);
	full.version = 2;
	full.timeout_ms = 4321;
	memcpy(o, &full, v2);
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", "echo", o, NULL, NULL), 0);
	assert_int_equal(x->f.exec_opts.version, SBX_EXEC_OPTIONS_VERSION);
	assert_int_equal(x->f.exec_opts.timeout_ms, 4321);
	assert_int_equal(x->f.exec_opts.user, SBX_USER_SANDBOX);
	sbx_exec_result_free(&res);
	free(o);
}

/* The output so far of a stream that broke after start stays with the caller (SBX_EPROTOCOL). */
static void test_provider__exec_protocol_failure_keeps_the_output_for_the_caller(void **state)
{
	fixture *x = *state;
	sbx_exec_result res;

	x->f.fail = SBX_EPROTOCOL;
	assert_int_equal(sbx_sandbox_exec(&res, x->p, "i", "echo", NULL, NULL, NULL),
	                 SBX_EPROTOCOL);
	assert_int_equal(res.stdout_len, 2);
	assert_string_equal((char *)res.stdout_data, "hi");
	sbx_exec_result_free(&res);
	x->f.fail = 0;
}

/* Background commands: arguments first, then a provider without them is SBX_EINTERNAL. */
static void test_provider__process_calls_check_arguments_then_need_the_methods(void **state)
{
	fixture *x = *state;
	sbx_process_options po = SBX_PROCESS_OPTIONS_INIT;
	sbx_process *h = (sbx_process *)1;
	sbx_process_info_list *l = (sbx_process_info_list *)1;
	sbx_exec_result res;
	sbx_error e = {0};

	assert_int_equal(sbx_process_start(&h, x->p, "i", "true", &po, NULL, &e), SBX_EINTERNAL);
	assert_string_equal(e.message, "provider fake does not implement process_start");
	assert_null(h);
	assert_int_equal(sbx_process_list(&l, x->p, "i", NULL, NULL), SBX_EINTERNAL);
	assert_null(l);
	assert_int_equal(sbx_process_kill_pid(x->p, "i", 3, NULL, NULL), SBX_EINTERNAL);
	assert_int_equal(sbx_process_attach(&h, NULL, "i", 3, NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_process_wait(&res, NULL, NULL, NULL), SBX_EINVALID);
	assert_null(res.stdout_data);
	assert_int_equal(sbx_process_send_stdin(NULL, "x", 1, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_process_close_stdin(NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_process_kill(NULL, NULL, NULL), SBX_EINVALID);
	assert_int_equal(sbx_process_pid(NULL), 0);
	sbx_process_free(NULL);
	sbx_process_info_list_free(NULL);
	assert_int_equal(x->f.calls, 0);
}

/* A terminal's calls: the handle first, then its other arguments, then the abort signal. */
static void test_provider__pty_calls_check_the_handle_first(void **state)
{
	fixture *x = *state;
	sbx_pty *h = (sbx_pty *)1;
	sbx_pty_result r;
	sbx_error e = {0};

	assert_int_equal(sbx_pty_start(&h, x->p, "i", NULL, NULL, NULL, &e), SBX_EINTERNAL);
	assert_string_equal(e.message, "provider fake does not implement pty_start");
	assert_null(h);
	e = (sbx_error){0};
	assert_int_equal(sbx_pty_send_input(NULL, NULL, 1, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "handle is NULL");
	e = (sbx_error){0};
	assert_int_equal(sbx_pty_resize(NULL, 0, 0, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "handle is NULL");
	e = (sbx_error){0};
	assert_int_equal(sbx_pty_kill(NULL, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "handle is NULL");
	e = (sbx_error){0};
	assert_int_equal(sbx_pty_wait(&r, NULL, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "handle is NULL");
	e = (sbx_error){0};
	assert_int_equal(sbx_pty_attach(&h, x->p, "i", 0, NULL, NULL, &e), SBX_EINTERNAL);
	assert_int_equal(sbx_pty_pid(NULL), 0);
	sbx_pty_free(NULL);
	assert_int_equal(x->f.calls, 0);
}

static void test_provider__paths_are_validated_before_the_provider(void **state)
{
	fixture *x = *state;
	sbx_error e = {0};
	sbx_file *file;
	sbx_stat st;
	assert_int_equal(sbx_sandbox_read_file(&file, x->p, "i", "rel", 1, NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "invalid sandbox path \"rel\": must be absolute");
	assert_int_equal(sbx_sandbox_write_file(x->p, "i", "/a/../b", "x", 1, NULL, NULL),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_stat(&st, x->p, "i", "/a//b", NULL, NULL), SBX_EINVALID);
	assert_int_equal(x->f.calls, 0);
}

static void test_provider__success_paths_reach_the_provider(void **state)
{
	fixture *x = *state;
	char *id = NULL;
	sbx_resume_status rs;
	sbx_file *file = NULL;
	sbx_stat st;
	assert_int_equal(sbx_sandbox_create(&id, x->p, "n", &limits, NULL, NULL), 0);
	assert_string_equal(id, "sbx-1");
	sbx_free(id);
	assert_int_equal(sbx_sandbox_resume(&rs, x->p, "i", NULL, NULL), 0);
	assert_int_equal(rs, SBX_RESUME_GONE);
	assert_int_equal(sbx_sandbox_suspend(x->p, "i", NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_destroy(x->p, "i", NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_destroy_by_name(x->p, "n", NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_kill_all(x->p, "i", NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_read_file(&file, x->p, "i", "/a", 1, NULL, NULL), 0);
	assert_non_null(file);
	sbx_file_free(file);
	sbx_file_free(NULL);
	assert_int_equal(sbx_sandbox_write_file(x->p, "i", "/a", NULL, 0, NULL, NULL), 0);
	assert_int_equal(sbx_sandbox_stat(&st, x->p, "i", "/a", NULL, NULL), 0);
	assert_true(st.exists);
	assert_int_equal(st.size, 5);
	assert_int_equal(x->f.calls, 9);
	assert_true(sbx_provider_concurrent_exec(x->p));
	assert_false(sbx_provider_concurrent_exec(NULL));

	x->f.fail = SBX_EGONE; /* failures leave outputs empty, nothing leaks */
	assert_int_equal(sbx_sandbox_create(&id, x->p, "n", &limits, NULL, NULL), SBX_EGONE);
	assert_null(id);
	assert_int_equal(sbx_sandbox_read_file(&file, x->p, "i", "/a", 1, NULL, NULL), SBX_EGONE);
	assert_null(file);
	assert_int_equal(sbx_sandbox_stat(&st, x->p, "i", "/a", NULL, NULL), SBX_EGONE);
	assert_false(st.exists);
}

static void test_provider__new_out_of_memory_leaves_impl_alone(void **state)
{
	(void)state;
	fake f = {0};
	sbx_provider *p = (sbx_provider *)1;
	sbx_error e = {0};
	sbx__alloc_fail_after(0);
	assert_int_equal(sbx__provider_new(&p, &fake_vt, &f, &e), SBX_ENOMEM);
	sbx__alloc_fail_after(-1);
	assert_null(p);
	assert_int_equal(e.code, SBX_ENOMEM);
	assert_int_equal(f.freed, 0);
	sbx_provider_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_provider__aborted_signal_fails_every_call_before_the_provider, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(test_provider__null_arguments_are_invalid, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_provider__kill_tagged_validates_every_tag_then_skips_empty, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_provider__exec_checks_options_in_the_seed_order,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_provider__exec_dispatches_with_defaults_and_frees_on_failure, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_provider__exec_version_1_options_are_read_only_up_to_tag, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_provider__exec_version_2_options_are_read_only_up_to_stdin, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_provider__exec_protocol_failure_keeps_the_output_for_the_caller, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        test_provider__process_calls_check_arguments_then_need_the_methods, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(test_provider__pty_calls_check_the_handle_first, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_provider__paths_are_validated_before_the_provider,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_provider__success_paths_reach_the_provider, setup,
	                                    teardown),
	    cmocka_unit_test(test_provider__new_out_of_memory_leaves_impl_alone),
	};
	return cmocka_run_group_tests_name("provider", tests, NULL, NULL);
}
