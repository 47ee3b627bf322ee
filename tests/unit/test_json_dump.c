/*
 * Unit tests of e2b/api.c's sbx__json_dump: byte for byte what jansson's
 * json_dumpb(JSON_COMPACT | JSON_ENCODE_ANY) writes (the request bodies' text), the same
 * failures (a string that is not UTF-8), and the buffer unchanged on failure.
 */
#include "unit.h"

#include <jansson.h>
#include <sandbox/error.h>
#include <stdio.h>
#include <stdlib.h>

#include "e2b/api.h"
#include "util/buf.h"

/* What jansson writes for j (NULL when it cannot), malloc'd. */
static char *jansson_text(const json_t *j, size_t *len)
{
	size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
	char *t;

	*len = n;
	if (n == 0)
		return NULL;
	t = malloc(n + 1);
	assert_non_null(t);
	assert_int_equal(json_dumpb(j, t, n, JSON_COMPACT | JSON_ENCODE_ANY), n);
	t[n] = '\0';
	return t;
}

/* sbx__json_dump(j) after a prefix matches jansson's text, or fails where jansson fails. */
static void check_same(json_t *j)
{
	sbx_buf b = SBX_BUF_INIT(1 << 20);
	size_t n;
	char *want = jansson_text(j, &n);

	assert_int_equal(sbx_buf_puts(&b, "pre:"), 0);
	if (!want) {
		assert_int_equal(sbx__json_dump(&b, j), SBX_ENOMEM);
		assert_int_equal(b.len, 4);
		assert_string_equal((char *)b.ptr, "pre:");
	} else {
		assert_int_equal(sbx__json_dump(&b, j), 0);
		assert_int_equal(b.len, 4 + n);
		assert_memory_equal(b.ptr + 4, want, n);
		assert_int_equal(b.ptr[b.len], '\0');
	}
	free(want);
	sbx_buf_dispose(&b);
	json_decref(j);
}

static void test_json_dump__values_match_jansson(void **state)
{
	(void)state;
	check_same(json_null());
	check_same(json_true());
	check_same(json_false());
	check_same(json_integer(0));
	check_same(json_integer(INT64_MIN));
	check_same(json_integer(INT64_MAX));
	check_same(json_real(0.1));
	check_same(json_real(-1e300));
	check_same(json_real(3.0));
	check_same(json_string(""));
	check_same(json_object());
	check_same(json_array());
	check_same(
	    json_pack("{s:[s,i,{}],s:{s:b,s:n},s:f}", "args", "a", 7, "o", "x", 1, "y", "z", 2.5));
}

static void test_json_dump__strings_escape_as_jansson(void **state)
{
	char all[128];

	(void)state;
	for (int i = 0; i < 127; i++)
		all[i] = (char)(i + 1); /* every ASCII byte but NUL, DEL included */
	all[127] = '\0';
	check_same(json_string(all));
	check_same(json_stringn("a\0b", 3)); /* NUL: \u0000 */
	check_same(json_string("quote \" back \\ slash / tab\t nl\n cr\r bs\b ff\f"));
	check_same(
	    json_string("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf")); /* é € 😀 */
	/* an object's keys are strings too, in insertion order */
	json_t *o = json_object();
	json_object_set_new(o, "z\"key\n", json_integer(1));
	json_object_set_new(o, "a", json_string("\x01"));
	json_object_set_new(o, "m\xc3\xa9", json_null());
	json_object_set_new(o, "z\"key\n", json_integer(2)); /* replaced in place */
	check_same(o);
}

static void test_json_dump__non_utf8_fails_as_jansson(void **state)
{
	static const char *bad[] = {
	    "\x80",             /* a continuation byte first */
	    "\xc0\xaf",         /* overlong '/' */
	    "\xc1\xbf",         /* overlong */
	    "\xe0\x80\xaf",     /* overlong, 3 bytes */
	    "\xf0\x80\x80\xaf", /* overlong, 4 bytes */
	    "\xed\xa0\x80",     /* a surrogate (U+D800) */
	    "\xf4\x90\x80\x80", /* above U+10FFFF */
	    "\xf5\x80\x80\x80", /* no such lead byte */
	    "\xff",
	    "\xc3",         /* cut short */
	    "\xe2\x82",     /* cut short */
	    "ok \xc3\x28",  /* a continuation byte missing */
	    "\xe2\x28\xa1", /* a continuation byte missing */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		check_same(json_stringn_nocheck(bad[i], strlen(bad[i])));
		check_same(
		    json_pack("{s:[o]}", "args", json_stringn_nocheck(bad[i], strlen(bad[i]))));
	}
}

/* Random bytes (mostly valid UTF-8, some not) as strings, 2,000 of them. */
static void test_json_dump__random_strings_match_jansson(void **state)
{
	static const char *pieces[] = {"a",
	                               "\"",
	                               "\\",
	                               "\n",
	                               "\x1f",
	                               "\x7f",
	                               "/",
	                               "\xc3",
	                               "\xc3\xa9",
	                               "\xe2\x82\xac",
	                               "\xed\xa0",
	                               "\xf0\x9f",
	                               "\xf0\x9f\x98\x80"};
	char s[64];
	unsigned seed = 12345;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		size_t len = 0;
		int n = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 12;
		for (int k = 0; k < n; k++) {
			const char *p = pieces[((seed = seed * 1103515245u + 12345u) >> 16) %
			                       (sizeof(pieces) / sizeof(pieces[0]))];
			memcpy(s + len, p, strlen(p));
			len += strlen(p);
		}
		check_same(json_stringn_nocheck(s, len));
	}
}

static void test_json_dump__full_buffer_is_toolarge_and_unchanged(void **state)
{
	sbx_buf b = SBX_BUF_INIT(10);
	json_t *j = json_pack("[s]", "0123456789");

	(void)state;
	assert_int_equal(sbx_buf_puts(&b, "ab"), 0);
	assert_int_equal(sbx__json_dump(&b, j), SBX_ETOOLARGE);
	assert_int_equal(b.len, 2);
	assert_string_equal((char *)b.ptr, "ab");
	sbx_buf_dispose(&b);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_dump__values_match_jansson),
	    cmocka_unit_test(test_json_dump__strings_escape_as_jansson),
	    cmocka_unit_test(test_json_dump__non_utf8_fails_as_jansson),
	    cmocka_unit_test(test_json_dump__random_strings_match_jansson),
	    cmocka_unit_test(test_json_dump__full_buffer_is_toolarge_and_unchanged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
