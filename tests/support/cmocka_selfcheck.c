/*
 * tests/support/cmocka_selfcheck.c: a cmocka program that fails on purpose, the way
 * CMOCKA_SELFCHECK names, for tests/support/check_cmocka_run.sh: every way must end the program
 * with a failure that ctest reports, whether FK_TEST_FILTER is set or not
 * (tests/support/cmocka_run.c). "pass" fails nowhere.
 *   assert, setup, teardown      a failed assert in test_selfcheck__fails, its setup, teardown
 *   group_setup, group_teardown  a failed assert in the group's setup or teardown
 *   group_teardown_rc            the group teardown returns -1
 *   segv, abort                  test_selfcheck__fails crashes
 *   exit0                        test_selfcheck__fails calls exit(0)
 *   many                         256 failing tests (cmocka's count of failures, 256, is exit 0)
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *g_mode = "pass";

static int fails_here(const char *where)
{
	return strcmp(g_mode, where) == 0;
}

static int group_setup(void **state)
{
	(void)state;
	assert_false(fails_here("group_setup"));
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	assert_false(fails_here("group_teardown"));
	return fails_here("group_teardown_rc") ? -1 : 0;
}

static int setup(void **state)
{
	(void)state;
	assert_false(fails_here("setup"));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_false(fails_here("teardown"));
	return 0;
}

static void test_selfcheck__passes(void **state)
{
	(void)state;
}

static void test_selfcheck__fails(void **state)
{
	(void)state;
	assert_false(fails_here("assert"));
	if (fails_here("segv"))
		raise(SIGSEGV);
	if (fails_here("abort"))
		abort();
	if (fails_here("exit0"))
		exit(0);
}

static void test_selfcheck__one_of_many(void **state)
{
	(void)state;
	fail_msg("one of 256");
}

int main(void)
{
	const char *mode = getenv("CMOCKA_SELFCHECK");
	if (mode && *mode)
		g_mode = mode;
	if (fails_here("many")) {
		static struct CMUnitTest many[256];
		for (size_t i = 0; i < 256; i++)
			many[i] = (struct CMUnitTest)cmocka_unit_test(test_selfcheck__one_of_many);
		return _cmocka_run_group_tests("cmocka_selfcheck", many, 256, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_selfcheck__passes),
	    cmocka_unit_test_setup_teardown(test_selfcheck__fails, setup, teardown),
	};
	return cmocka_run_group_tests_name("cmocka_selfcheck", tests, group_setup, group_teardown);
}
