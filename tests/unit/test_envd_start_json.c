/*
 * Unit tests of e2b/envd.c's Start request JSON: written straight out, it is byte for byte
 * what the jansson tree makes (the library's way past 64 env vars), envs' duplicate keys
 * included (the first place, the last value), and it fails where the tree fails.
 */
#include "unit.h"

#include <sandbox/error.h>
#include <stdio.h>

#include "e2b/envd.h"
#include "util/buf.h"

static const char *const ARGS[] = {"-c", "echo \"hi\"\n\ttab \\ back", "caf\xc3\xa9", ""};

/* Both ways for proc and stdin_open; they must agree, and equal `want` when given. */
static void check_both(const sbx_envd_process *proc, bool stdin_open, const char *want)
{
	sbx_buf a = SBX_BUF_INIT(1 << 20), b = SBX_BUF_INIT(1 << 20);
	int ra = sbx__envd_start_json(&a, proc, stdin_open, false);
	int rb = sbx__envd_start_json(&b, proc, stdin_open, true);

	assert_int_equal(ra, rb);
	if (ra == 0) {
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.ptr, b.ptr, a.len);
		if (want)
			assert_string_equal((char *)a.ptr, want);
	} else {
		assert_int_equal(a.len, 0);
		assert_int_equal(b.len, 0);
	}
	sbx_buf_dispose(&a);
	sbx_buf_dispose(&b);
}

static void test_envd_start_json__plain_exec(void **state)
{
	sbx_env_var env[] = {{"HOME", "/root"}, {"LANG", "C.UTF-8"}};
	sbx_envd_process p = {"/bin/sh", ARGS, 4, env, 2, "/workspace", 0, 0, 0};

	(void)state;
	check_both(&p, false,
	           "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo \\\"hi\\\"\\n\\ttab "
	           "\\\\ back\",\"caf\xc3\xa9\",\"\"],\"envs\":{\"HOME\":\"/root\",\"LANG\":\"C."
	           "UTF-8\"},\"cwd\":\"/workspace\"},\"stdin\":false}");
	check_both(&p, true, NULL);
}

static void test_envd_start_json__optional_members(void **state)
{
	sbx_envd_process p = {"/bin/bash", ARGS, 0, NULL, 0, NULL, 0, 0, 0};
	sbx_env_var none[1] = {{"X", "y"}};

	(void)state;
	check_both(&p, true, "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[]},\"stdin\":true}");
	p.env = none; /* env given, empty: an empty envs object */
	check_both(&p, false,
	           "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[],\"envs\":{}},\"stdin\":false}");
	p.pty_cols = 80;
	p.pty_rows = 24; /* a terminal: pty instead of stdin */
	check_both(
	    &p, true,
	    "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[],\"envs\":{}},\"pty\":{\"size\":{"
	    "\"cols\":80,\"rows\":24}}}");
	p.pty_rows = 0; /* both sizes or none */
	check_both(&p, true, NULL);
}

static void test_envd_start_json__later_env_keys_win_in_the_first_place(void **state)
{
	sbx_env_var env[] = {{"A", "1"}, {"B", "2"}, {"A", "3"},
	                     {"C", "4"}, {"B", "5"}, {"A", "6"}};
	sbx_envd_process p = {"/bin/sh", ARGS, 1, env, 6, NULL, 0, 0, 0};

	(void)state;
	check_both(
	    &p, false,
	    "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\"],\"envs\":{\"A\":\"6\",\"B\":"
	    "\"5\",\"C\":\"4\"}},\"stdin\":false}");
}

/* 64 variables (the most written straight out) with many repeats, as the tree writes them. */
static void test_envd_start_json__many_envs_match_the_tree(void **state)
{
	sbx_env_var env[64];
	char keys[64][8], values[64][8];
	sbx_envd_process p = {"/bin/sh", ARGS, 2, env, 64, "/", 0, 0, 0};

	(void)state;
	for (int i = 0; i < 64; i++) {
		snprintf(keys[i], sizeof(keys[i]), "K%d", (i * 7) % 23);
		snprintf(values[i], sizeof(values[i]), "v%d", i);
		env[i] = (sbx_env_var){keys[i], values[i]};
	}
	check_both(&p, false, NULL);
}

static void test_envd_start_json__non_utf8_fails_as_the_tree(void **state)
{
	const char *bad_args[] = {"-c", "\xc3\x28"};
	sbx_env_var bad_key[] = {{"K\xff", "v"}}, bad_value[] = {{"K", "\xed\xa0\x80"}};
	sbx_envd_process p = {"/bin/sh", bad_args, 2, NULL, 0, NULL, 0, 0, 0};

	(void)state;
	check_both(&p, false, NULL);
	p.nargs = 1;
	p.env = bad_key;
	p.nenv = 1;
	check_both(&p, false, NULL);
	p.env = bad_value;
	check_both(&p, false, NULL);
	p.env = NULL;
	p.nenv = 0;
	p.cwd = "/tmp/\x80";
	check_both(&p, false, NULL);
	/* and each of them does fail */
	sbx_buf b = SBX_BUF_INIT(1 << 20);
	assert_int_equal(sbx__envd_start_json(&b, &p, false, false), SBX_ENOMEM);
	sbx_buf_dispose(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_envd_start_json__plain_exec),
	    cmocka_unit_test(test_envd_start_json__optional_members),
	    cmocka_unit_test(test_envd_start_json__later_env_keys_win_in_the_first_place),
	    cmocka_unit_test(test_envd_start_json__many_envs_match_the_tree),
	    cmocka_unit_test(test_envd_start_json__non_utf8_fails_as_the_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
