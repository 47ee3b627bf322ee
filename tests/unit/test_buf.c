/* Unit tests of util/buf.c: the capped buffer. */
#include "unit.h"

#include <malloc.h>
#include <sandbox/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"

static void test_buf__put_appends_and_keeps_a_nul(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(100);
	assert_int_equal(sbx_buf_put(&b, "ab", 2), 0);
	assert_int_equal(sbx_buf_puts(&b, "cd"), 0);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.ptr, "abcd", 5);
	sbx_buf_dispose(&b);
	assert_null(b.ptr);
	assert_int_equal(b.max, 100);
}

static void test_buf__exactly_max_fits_one_more_is_too_large(void **state)
{
	(void)state;
	sbx_buf b;
	sbx_buf_init(&b, 5);
	assert_int_equal(sbx_buf_put(&b, "abc", 3), 0);
	assert_int_equal(sbx_buf_put(&b, "de", 2), 0);
	assert_int_equal(sbx_buf_put(&b, "f", 1), SBX_ETOOLARGE);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.ptr, "abcde", 6);
	assert_true(b.cap <= b.max + 1);
	assert_int_equal(sbx_buf_put(&b, "", 0), 0);
	sbx_buf_dispose(&b);
}

static void test_buf__huge_length_is_too_large_not_overflow(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(16);
	assert_int_equal(sbx_buf_put(&b, "x", 1), 0);
	assert_int_equal(sbx_buf_put(&b, "x", SIZE_MAX), SBX_ETOOLARGE);
	assert_int_equal(sbx_buf_put(&b, "x", SIZE_MAX - 1), SBX_ETOOLARGE);
	unsigned char *tail;
	assert_int_equal(sbx_buf_reserve(&b, SIZE_MAX, &tail), SBX_ETOOLARGE);
	assert_int_equal(b.len, 1);
	sbx_buf_dispose(&b);
}

static void test_buf__unchecked_huge_max_is_clamped(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(SIZE_MAX); /* the macro cannot assert max <= SIZE_MAX / 2 */
	assert_int_equal(sbx_buf_put(&b, "abc", 3), 0);
	assert_int_equal(sbx_buf_put(&b, "x", SIZE_MAX / 2), SBX_ETOOLARGE);
	assert_int_equal(sbx_buf_put(&b, "x", SIZE_MAX), SBX_ETOOLARGE);
	assert_int_equal(b.len, 3);
	sbx_buf_dispose(&b);
}

static void test_buf__zero_max_holds_nothing(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(0);
	assert_int_equal(sbx_buf_put(&b, "", 0), 0);
	assert_int_equal(sbx_buf_put(&b, "a", 1), SBX_ETOOLARGE);
	assert_int_equal(b.len, 0);
	sbx_buf_dispose(&b);
}

static void test_buf__oom_leaves_the_buffer_unchanged(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(1 << 20);
	assert_int_equal(sbx_buf_put(&b, "abc", 3), 0);
	char big[200];
	memset(big, 'x', sizeof(big));
	sbx__alloc_fail_after(0);
	assert_int_equal(sbx_buf_put(&b, big, sizeof(big)), SBX_ENOMEM);
	assert_int_equal(sbx_buf_printf(&b, "%200s", "y"), SBX_ENOMEM);
	sbx__alloc_fail_after(-1);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.ptr, "abc", 4);
	sbx_buf_dispose(&b);

	sbx_buf e = SBX_BUF_INIT(10);
	sbx__alloc_fail_after(0);
	assert_int_equal(sbx_buf_put(&e, "a", 1), SBX_ENOMEM);
	sbx__alloc_fail_after(-1);
	assert_null(e.ptr);
	assert_int_equal(e.len, 0);
}

static void test_buf__growth_is_capped_at_max_plus_one(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(sbx_buf_put(&b, "z", 1), 0);
	assert_int_equal(b.len, 1000);
	assert_int_equal(b.cap, 1001);
	assert_int_equal(b.ptr[1000], 0);
	assert_int_equal(sbx_buf_put(&b, "z", 1), SBX_ETOOLARGE);
	sbx_buf_dispose(&b);
}

static void test_buf__printf_formats_and_respects_the_cap(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(10);
	assert_int_equal(sbx_buf_printf(&b, "%d-%s", 42, "ab"), 0);
	assert_string_equal((char *)b.ptr, "42-ab");
	assert_int_equal(sbx_buf_printf(&b, "%s", "123456"), SBX_ETOOLARGE);
	assert_string_equal((char *)b.ptr, "42-ab");
	assert_int_equal(sbx_buf_printf(&b, "%s", "12345"), 0);
	assert_int_equal(b.len, 10);
	sbx_buf_dispose(&b);
}

/* Texts on both sides of the one-pass size (255, 256, 300 bytes) come out whole. */
static void test_buf__printf_long_texts_are_whole(void **state)
{
	(void)state;
	for (int n = 254; n <= 300; n += (n < 257 ? 1 : 43)) {
		sbx_buf b = SBX_BUF_INIT(4096);
		assert_int_equal(sbx_buf_printf(&b, "<%*d>", n - 2, 7), 0);
		assert_int_equal(b.len, (size_t)n);
		assert_int_equal(b.ptr[0], '<');
		assert_int_equal(b.ptr[n - 2], '7');
		assert_int_equal(b.ptr[n - 1], '>');
		assert_int_equal(b.ptr[n], 0);
		assert_int_equal(sbx_buf_printf(&b, "%s", "x"), 0);
		assert_int_equal(b.len, (size_t)n + 1);
		sbx_buf_dispose(&b);
	}
	sbx_buf c = SBX_BUF_INIT(299);
	assert_int_equal(sbx_buf_printf(&c, "%300s", "y"), SBX_ETOOLARGE);
	assert_int_equal(c.len, 0);
	sbx_buf_dispose(&c);
}

static void test_buf__reserve_then_commit_reads_into_the_tail(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(64);
	unsigned char *tail;
	assert_int_equal(sbx_buf_put(&b, "ab", 2), 0);
	assert_int_equal(sbx_buf_reserve(&b, 10, &tail), 0);
	memcpy(tail, "cdef", 4);
	sbx_buf_commit(&b, 4);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.ptr, "abcdef", 7);
	assert_int_equal(sbx_buf_reserve(&b, 59, &tail), SBX_ETOOLARGE);
	assert_int_equal(sbx_buf_reserve(&b, 58, &tail), 0);
	sbx_buf_dispose(&b);
}

static void test_buf__consume_clear_detach(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(64);
	unsigned char *out;
	size_t len;
	assert_int_equal(sbx_buf_puts(&b, "hello world"), 0);
	sbx_buf_consume(&b, 6);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.ptr, "world", 6);
	sbx_buf_consume(&b, 0);
	assert_int_equal(sbx_buf_detach(&b, &out, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal((char *)out, "world");
	assert_null(b.ptr);
	assert_int_equal(b.len, 0);
	sbx__free(out);

	assert_int_equal(sbx_buf_detach(&b, &out, &len), 0); /* empty gives "" */
	assert_non_null(out);
	assert_int_equal(len, 0);
	assert_string_equal((char *)out, "");
	sbx__free(out);

	assert_int_equal(sbx_buf_puts(&b, "abc"), 0);
	sbx_buf_clear(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal((char *)b.ptr, "");
	sbx_buf_dispose(&b);
	sbx_buf_dispose(&b); /* twice is harmless */
}

static void test_buf__binary_data_with_nul_bytes(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(16);
	static const unsigned char bin[] = {0, 1, 0, 255};
	assert_int_equal(sbx_buf_put(&b, bin, sizeof(bin)), 0);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.ptr, bin, 4);
	sbx_buf_dispose(&b);
}

/*
 * The mapping of /proc/self/smaps that holds `p`: its bounds and whether its VmFlags carry
 * "hg" (MADV_HUGEPAGE). Fails the test when no mapping holds p.
 */
static void mapping_of(const void *p, uintptr_t *from, uintptr_t *to, int *huge)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			if (in) {
				*from = lo;
				*to = hi;
			}
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			*huge = strstr(line, " hg") != NULL;
			found = 1;
			in = 0;
		}
	}
	fclose(f);
	assert_true(found);
}

/*
 * A buffer of 4 MiB or more asks for huge pages on the whole glibc mapping that holds it,
 * never on a part: the mapping stays one, from the page of ptr to ptr + malloc_usable_size,
 * so realloc's mremap can go on growing it without a copy (docs/internals/exec-cost.md
 * "Fresh pages"). A smaller buffer is left alone.
 */
static void test_buf__big_buffer_asks_huge_pages_on_its_whole_mapping(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	skip(); /* the sanitizers' allocators do not map a block of its own */
#endif
	const char *preload = getenv("LD_PRELOAD");
	if (preload && strstr(preload, "vgpreload"))
		skip(); /* nor does valgrind's */
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
		skip(); /* a kernel without transparent huge pages refuses the advice */
	/* a fixed threshold: glibc's dynamic one could serve a few MiB from the heap */
	assert_int_equal(mallopt(M_MMAP_THRESHOLD, 128 * 1024), 1);

	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from, to;
	int huge = -1;
	unsigned char *tail;
	sbx_buf b = SBX_BUF_INIT(64u << 20);

	assert_int_equal(sbx_buf_reserve(&b, (1u << 20) - 1, &tail), 0);
	mapping_of(b.ptr, &from, &to, &huge);
	assert_false(huge);

	for (size_t want = 4u << 20; want <= 32u << 20; want *= 2) {
		assert_int_equal(sbx_buf_reserve(&b, want - 1, &tail), 0);
		assert_int_equal(b.cap, want);
		huge = -1;
		mapping_of(b.ptr, &from, &to, &huge);
		assert_true(huge);
		assert_int_equal(from, (uintptr_t)b.ptr & ~(page - 1));
		assert_int_equal(to, (uintptr_t)b.ptr + malloc_usable_size(b.ptr));
	}
	sbx_buf_dispose(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_buf__put_appends_and_keeps_a_nul),
	    cmocka_unit_test(test_buf__exactly_max_fits_one_more_is_too_large),
	    cmocka_unit_test(test_buf__huge_length_is_too_large_not_overflow),
	    cmocka_unit_test(test_buf__unchecked_huge_max_is_clamped),
	    cmocka_unit_test(test_buf__zero_max_holds_nothing),
	    cmocka_unit_test(test_buf__oom_leaves_the_buffer_unchanged),
	    cmocka_unit_test(test_buf__growth_is_capped_at_max_plus_one),
	    cmocka_unit_test(test_buf__printf_formats_and_respects_the_cap),
	    cmocka_unit_test(test_buf__printf_long_texts_are_whole),
	    cmocka_unit_test(test_buf__reserve_then_commit_reads_into_the_tail),
	    cmocka_unit_test(test_buf__consume_clear_detach),
	    cmocka_unit_test(test_buf__binary_data_with_nul_bytes),
	    cmocka_unit_test(test_buf__big_buffer_asks_huge_pages_on_its_whole_mapping),
	};
	return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
