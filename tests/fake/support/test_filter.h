/*
 * tests/fake/support/test_filter.h: run a cmocka group, or only those of its tests that
 * FK_TEST_FILTER names (tests/vm/v2-checks.sh runs a few tests of a program at once).
 */
#ifndef FKT_TEST_FILTER_H
#define FKT_TEST_FILTER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* cmocka_run_group_tests over tests[0..n), keeping only the tests whose name matches one of the
 * '|'-separated globs of FK_TEST_FILTER (fnmatch) when it is set and not empty. */
int fkt_run_filtered(const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
                     CMFixtureFunction teardown);

#endif
