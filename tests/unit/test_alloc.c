/* Unit tests of util/alloc.c: the allocator wrappers and the failure hook. */
#include "unit.h"

#include "util/alloc.h"

static void test_alloc__fail_after_zero_fails_the_next_and_later(void **state)
{
	(void)state;
	sbx__alloc_fail_after(0);
	assert_null(sbx__malloc(8));
	assert_null(sbx__calloc(1, 8));
	assert_null(sbx__strdup("x"));
	sbx__alloc_fail_after(-1);
	void *p = sbx__malloc(8);
	assert_non_null(p);
	sbx__free(p);
}

static void test_alloc__fail_after_n_lets_n_succeed(void **state)
{
	(void)state;
	sbx__alloc_fail_after(2);
	void *a = sbx__malloc(1), *b = sbx__malloc(1), *c = sbx__malloc(1);
	sbx__alloc_fail_after(-1);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(c);
	sbx__free(a);
	sbx__free(b);
}

static void test_alloc__realloc_failure_keeps_the_block(void **state)
{
	(void)state;
	char *p = sbx__malloc(4);
	assert_non_null(p);
	memcpy(p, "abc", 4);
	sbx__alloc_fail_after(0);
	assert_null(sbx__realloc(p, 1024));
	sbx__alloc_fail_after(-1);
	assert_string_equal(p, "abc");
	sbx__free(p);
}

static void test_alloc__calloc_overflow_is_null(void **state)
{
	(void)state;
	assert_null(sbx__calloc(SIZE_MAX / 2, 4));
	char *z = sbx__calloc(4, 4);
	assert_non_null(z);
	for (int i = 0; i < 16; i++)
		assert_int_equal(z[i], 0);
	sbx__free(z);
}

static void test_alloc__strndup_copies_at_most_n(void **state)
{
	(void)state;
	char *a = sbx__strndup("abcdef", 3), *b = sbx__strdup("hello"), *c = sbx__strndup("ab", 10);
	assert_string_equal(a, "abc");
	assert_string_equal(b, "hello");
	assert_string_equal(c, "ab");
	sbx__free(a);
	sbx__free(b);
	sbx__free(c);
	sbx__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_alloc__fail_after_zero_fails_the_next_and_later),
	    cmocka_unit_test(test_alloc__fail_after_n_lets_n_succeed),
	    cmocka_unit_test(test_alloc__realloc_failure_keeps_the_block),
	    cmocka_unit_test(test_alloc__calloc_overflow_is_null),
	    cmocka_unit_test(test_alloc__strndup_copies_at_most_n),
	};
	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
