/*
 * tests/fake/support/test_filter.c: see test_filter.h.
 */
#define _GNU_SOURCE
#include "test_filter.h"

#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool wanted(const char *filter, const char *name)
{
	char *copy = strdup(filter), *save = NULL;
	bool hit = false;
	assert_non_null(copy);
	for (char *p = strtok_r(copy, "|", &save); p && !hit; p = strtok_r(NULL, "|", &save))
		hit = fnmatch(p, name, 0) == 0;
	free(copy);
	return hit;
}

int fkt_run_filtered(const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
                     CMFixtureFunction teardown)
{
	const char *filter = getenv("FK_TEST_FILTER");
	if (!filter || !*filter)
		return _cmocka_run_group_tests("tests", tests, n, setup, teardown);
	struct CMUnitTest *sel = calloc(n ? n : 1, sizeof(*sel));
	assert_non_null(sel);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (wanted(filter, tests[i].name))
			sel[k++] = tests[i];
	int rc = _cmocka_run_group_tests("tests", sel, k, setup, teardown);
	free(sel);
	return rc;
}
