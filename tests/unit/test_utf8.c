/* Unit tests of contract/utf8.c: the output's cut at a character boundary (docs/exec.md "Output:
 * one budget, truncation at a character boundary"). */
#include "unit.h"

#include "contract/utf8.h"

static const struct {
	const char *name;
	unsigned char bytes[4];
	size_t len;
} seqs[] = {
    {"1-byte", {'a'}, 1},
    {"2-byte", {0xc3, 0xa9}, 2},             /* é */
    {"3-byte", {0xe2, 0x82, 0xac}, 3},       /* € */
    {"4-byte", {0xf0, 0x9f, 0x98, 0x80}, 4}, /* 😀 */
};

static void test_utf8__cut_sequence_is_dropped_only_when_truncated(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++) {
		for (size_t cut = 0; cut <= seqs[s].len; cut++) {
			unsigned char buf[8] = {'x', 'y'};
			memcpy(buf + 2, seqs[s].bytes, cut);
			size_t len = 2 + cut;
			bool complete = cut == 0 || cut == seqs[s].len;
			print_message("%s cut at %zu\n", seqs[s].name, cut);
			assert_int_equal(sbx__utf8_keep_len(buf, len, true), complete ? len : 2);
			assert_int_equal(sbx__utf8_keep_len(buf, len, false), len);
		}
	}
}

static void test_utf8__a_cut_sequence_at_the_start_leaves_nothing(void **state)
{
	(void)state;
	static const unsigned char b[] = {0xf0, 0x9f, 0x98};
	assert_int_equal(sbx__utf8_keep_len(b, 3, true), 0);
	assert_int_equal(sbx__utf8_keep_len(b, 1, true), 0);
	assert_int_equal(sbx__utf8_keep_len(b, 0, true), 0);
}

static void test_utf8__looks_back_at_most_four_bytes(void **state)
{
	(void)state;
	/* Four continuation bytes: no lead within 4 bytes, nothing dropped. */
	static const unsigned char b[] = {'x', 0x80, 0x80, 0x80, 0x80};
	assert_int_equal(sbx__utf8_keep_len(b, sizeof(b), true), sizeof(b));
	/* A lead byte 5 back is out of reach. */
	static const unsigned char c[] = {0xf0, 0x80, 0x80, 0x80, 0x80};
	assert_int_equal(sbx__utf8_keep_len(c, sizeof(c), true), sizeof(c));
}

static void test_utf8__complete_or_ascii_tails_are_kept(void **state)
{
	(void)state;
	static const unsigned char a[] = "hello";
	assert_int_equal(sbx__utf8_keep_len(a, 5, true), 5);
	/* "é" then a stray continuation: lead found 3 back, complete, kept. */
	static const unsigned char b[] = {0xc3, 0xa9, 0x80};
	assert_int_equal(sbx__utf8_keep_len(b, 3, true), 3);
	/* An invalid lead byte is sized by value like any (contract/utf8.c): 0xff needs 4. */
	static const unsigned char c[] = {'a', 0xff};
	assert_int_equal(sbx__utf8_keep_len(c, 2, true), 1);
	static const unsigned char d[] = {'a', 0xf8, 0x80, 0x80, 0x80};
	assert_int_equal(sbx__utf8_keep_len(d, 5, true), 5);
	assert_int_equal(sbx__utf8_keep_len(NULL, 0, true), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_utf8__cut_sequence_is_dropped_only_when_truncated),
	    cmocka_unit_test(test_utf8__a_cut_sequence_at_the_start_leaves_nothing),
	    cmocka_unit_test(test_utf8__looks_back_at_most_four_bytes),
	    cmocka_unit_test(test_utf8__complete_or_ascii_tails_are_kept),
	};
	return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
