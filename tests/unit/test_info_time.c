/* Unit tests of e2b/provider_info.c's RFC 3339 parsing (startedAt, endAt of E2B's list and get). */
#include "unit.h"

#include "e2b/provider_int.h"

static void test_info_time__valid_forms(void **state)
{
	(void)state;
	int64_t ms = -1;
	assert_true(sbx__e2b_parse_time("1970-01-01T00:00:00Z", &ms));
	assert_int_equal(ms, 0);
	assert_true(sbx__e2b_parse_time("2025-03-04T05:06:07Z", &ms));
	assert_int_equal(ms, 1741064767000LL);
	/* fractions: ms kept, finer digits dropped (Go's RFC3339Nano) */
	assert_true(sbx__e2b_parse_time("2025-03-04T05:06:07.123456789Z", &ms));
	assert_int_equal(ms, 1741064767123LL);
	assert_true(sbx__e2b_parse_time("2025-03-04T05:06:07.5Z", &ms));
	assert_int_equal(ms, 1741064767500LL);
	/* offsets */
	assert_true(sbx__e2b_parse_time("2025-03-04T07:06:07+02:00", &ms));
	assert_int_equal(ms, 1741064767000LL);
	assert_true(sbx__e2b_parse_time("2025-03-04T00:36:07-04:30", &ms));
	assert_int_equal(ms, 1741064767000LL);
	/* leap day and before the epoch */
	assert_true(sbx__e2b_parse_time("2024-02-29T00:00:00z", &ms));
	assert_int_equal(ms, 1709164800000LL);
	assert_true(sbx__e2b_parse_time("1969-12-31T23:59:59Z", &ms));
	assert_int_equal(ms, -1000);
}

static void test_info_time__invalid_forms(void **state)
{
	(void)state;
	const char *bad[] = {"",
	                     "2025-03-04",
	                     "2025-03-04T05:06:07",
	                     "2025-03-04T05:06:07.Z",
	                     "2025-13-04T05:06:07Z",
	                     "2025-03-04T24:06:07Z",
	                     "2025-03-04T05:06:07+2:00",
	                     "2025-03-04T05:06:07Zjunk",
	                     "2025-03-04X05:06:07Z",
	                     "20a5-03-04T05:06:07Z"};
	int64_t ms = 42;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_false(sbx__e2b_parse_time(bad[i], &ms));
	assert_int_equal(ms, 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_info_time__valid_forms),
	    cmocka_unit_test(test_info_time__invalid_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
