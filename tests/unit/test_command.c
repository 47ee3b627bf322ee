/*
 * Unit tests of contract/command.c: the command fields exec, a background command and a
 * terminal share, read out of each one's options, and exec's rules on them
 * (docs/contract.md "exec"), and e2b's environment for them (docs/exec.md "How a command
 * runs").
 */
#include "unit.h"

#include "contract/command.h"
#include "e2b/run.h"
#include "util/alloc.h"

#include <string.h>

static const sbx_env_var one_env[] = {{"A", "1"}};

static void test_command__each_options_struct_gives_the_same_fields(void **state)
{
	(void)state;
	sbx_exec_options e = SBX_EXEC_OPTIONS_INIT;
	sbx_process_options p = SBX_PROCESS_OPTIONS_INIT;
	sbx_pty_options t = SBX_PTY_OPTIONS_INIT;
	sbx__command c;

	e.cwd = p.cwd = t.cwd = "/tmp";
	e.env = p.env = t.env = one_env;
	e.env_count = p.env_count = t.env_count = 1;
	e.timeout_ms = p.timeout_ms = t.timeout_ms = 1234;
	e.max_output_bytes = p.max_output_bytes = 99;
	e.tag = p.tag = "holder-1";
	e.user = p.user = t.user = SBX_USER_ROOT;
	for (int i = 0; i < 3; i++) {
		c = i == 0   ? sbx__command_of_exec(&e)
		    : i == 1 ? sbx__command_of_process(&p)
		             : sbx__command_of_pty(&t);
		assert_string_equal(c.cwd, "/tmp");
		assert_ptr_equal(c.env, one_env);
		assert_int_equal(c.env_count, 1);
		assert_int_equal(c.timeout_ms, 1234);
		assert_int_equal(c.user, SBX_USER_ROOT);
		assert_int_equal(c.max_output_bytes, i < 2 ? 99 : 0);
		if (i < 2)
			assert_string_equal(c.tag, "holder-1");
		else
			assert_null(c.tag); /* a terminal has no tag */
	}
}

static void test_command__checks_in_exec_order(void **state)
{
	(void)state;
	static const sbx_env_var bad_key[] = {{"1A", "x"}}, null_value[] = {{"A", NULL}};
	sbx__command c = {NULL, NULL, 0, 0, 0, "bad tag", 7};
	sbx_error err = {0};

	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, SBX__CMD_TIMEOUT, &err),
	                 SBX_EINVALID); /* the tag first */
	assert_string_equal(err.message, "invalid sandbox tag");
	c.tag = NULL;
	c.env_count = 1;
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, SBX__CMD_TIMEOUT, &err), SBX_EINVALID);
	assert_string_equal(err.message, "env is NULL");
	c.env = bad_key;
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, SBX__CMD_TIMEOUT, &err), SBX_EINVALID);
	c.env = null_value;
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, SBX__CMD_TIMEOUT, &err), SBX_EINVALID);
	assert_string_equal(err.message, "environment variable A has a NULL value");
	c.env = one_env;
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, SBX__CMD_TIMEOUT, &err), SBX_EINVALID);
	assert_string_equal(err.message, "exec timeout_ms must be positive");
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, 0, &err), 0); /* a terminal: 0 = no limit */
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check_user(&c, &err), SBX_EINVALID);
	assert_string_equal(err.message,
	                    "exec user must be SBX_USER_SANDBOX or SBX_USER_ROOT, not 7");
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check(&c, SBX__CMD_USER, &err), SBX_EINVALID);
	c.user = SBX_USER_ROOT;
	err = (sbx_error){0};
	assert_int_equal(sbx__command_check_user(&c, &err), 0);
}

static void test_command__env_is_home_lang_more_then_the_callers(void **state)
{
	(void)state;
	static const sbx_env_var term = {"TERM", "xterm-256color"};
	sbx__command c = {NULL, one_env, 1, 1000, 0, NULL, SBX_USER_SANDBOX};
	size_t n = 0;
	sbx_env_var *env = sbx__e2b_command_env(&c, &term, 1, &n);

	assert_non_null(env);
	assert_int_equal(n, 4);
	assert_string_equal(env[0].key, "HOME");
	assert_string_equal(env[0].value, "/workspace");
	assert_string_equal(env[1].key, "LANG");
	assert_string_equal(env[1].value, "C.UTF-8");
	assert_string_equal(env[2].key, "TERM");
	assert_string_equal(env[3].key, "A");
	sbx__free(env);
	c.user = SBX_USER_ROOT;
	env = sbx__e2b_command_env(&c, NULL, 0, &n);
	assert_non_null(env);
	assert_int_equal(n, 3);
	assert_string_equal(env[0].value, "/root");
	assert_string_equal(env[2].key, "A");
	sbx__free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_command__each_options_struct_gives_the_same_fields),
	    cmocka_unit_test(test_command__checks_in_exec_order),
	    cmocka_unit_test(test_command__env_is_home_lang_more_then_the_callers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
