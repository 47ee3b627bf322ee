/*
 * tests/support/cmocka_run.c: every cmocka group of the tests runs through here. The tests link
 * with --wrap=_cmocka_run_group_tests (tests/CMakeLists.txt puts it on cmocka's target), so
 * cmocka_run_group_tests() and cmocka_run_group_tests_name() of any test program land in
 * __wrap__cmocka_run_group_tests, which
 *   - keeps only the tests FK_TEST_FILTER names, when it is set and not empty: '|'-separated
 *     globs (fnmatch) of the test functions' names, e.g. '*fork_bomb|*destroy_leaves_nothing';
 *     a filter that names none of the group's tests is a failure, not a pass of 0 tests;
 *   - fails the run when the group teardown fails (an assert in it, or a non-zero return),
 *     which cmocka 1.1 prints but does not count;
 *   - fails the run when the program exits while its tests run (an exit(0) on any of its
 *     threads would end it with 0: the tests after it never ran);
 *   - exits 1 for any count of failures (cmocka returns the count: 256 failures would be 0, 77
 *     a skip where a test sets SKIP_RETURN_CODE).
 * A failed assert in a test or in its setup or teardown, and a crash cmocka catches (SIGSEGV,
 * SIGFPE, SIGILL, SIGBUS, SIGSYS), are cmocka's own failures; any other signal kills the program,
 * which ctest reports as failed. tests/support/check_cmocka_run.sh checks each of these.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

int __real__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests,
                                   const size_t num_tests, CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown);
int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests,
                                   const size_t num_tests, CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown);

static const char *g_group; /* the group running, NULL between groups */
static pid_t g_pid;         /* the test program's own pid (a forked child's exit is its own) */
static CMFixtureFunction g_teardown;
static bool g_teardown_ok; /* the group teardown returned 0 (an assert in it jumps past) */

static int teardown_watched(void **state)
{
	g_teardown_ok = false;
	int rc = g_teardown(state);
	g_teardown_ok = rc == 0;
	return rc;
}

static void exit_during_group(void)
{
	if (g_group && getpid() == g_pid) {
		fprintf(stderr, "[  FAILED  ] %s: the program exited while its tests ran\n",
		        g_group);
		fflush(NULL);
		_exit(1);
	}
}

static bool wanted(const char *filter, const char *name)
{
	char *copy = strdup(filter), *save = NULL;
	bool hit = false;
	if (!copy)
		abort();
	for (char *p = strtok_r(copy, "|", &save); p && !hit; p = strtok_r(NULL, "|", &save))
		hit = fnmatch(p, name, 0) == 0;
	free(copy);
	return hit;
}

int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests,
                                   const size_t num_tests, CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown)
{
	static bool hooked;
	if (!hooked && atexit(exit_during_group) == 0)
		hooked = true;
	const char *filter = getenv("FK_TEST_FILTER");
	struct CMUnitTest *sel = calloc(num_tests ? num_tests : 1, sizeof(*sel));
	if (!sel)
		abort();
	size_t k = 0;
	for (size_t i = 0; i < num_tests; i++)
		if (!filter || !*filter || (tests[i].name && wanted(filter, tests[i].name)))
			sel[k++] = tests[i];
	if (k == 0 && num_tests > 0) {
		fprintf(stderr,
		        "[  FAILED  ] %s: FK_TEST_FILTER '%s' names none of its %zu tests\n",
		        group_name, filter, num_tests);
		free(sel);
		return 1;
	}
	g_group = group_name;
	g_pid = getpid();
	g_teardown = group_teardown;
	g_teardown_ok = true;
	int rc = __real__cmocka_run_group_tests(group_name, sel, k, group_setup,
	                                        group_teardown ? teardown_watched : NULL);
	g_group = NULL;
	free(sel);
	if (!g_teardown_ok) {
		fprintf(stderr, "[  FAILED  ] %s: its group teardown failed\n", group_name);
		rc = 1;
	}
	return rc != 0;
}
