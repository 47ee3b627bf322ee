/*
 * Unit tests of e2b/provider_fileop.c's sbx__e2b_stderr_text: the in-sandbox script's
 * stderr as it goes into an error message (trimmed, its internal name dropped, a
 * refused permission said as "permission denied for PATH").
 */
#include "unit.h"

#include "e2b/provider_int.h"
#include "util/buf.h"

#include <string.h>

static const char *text_of(const char *stderr_bytes, char *out, size_t outlen)
{
	sbx_buf b = SBX_BUF_INIT(4096);
	const char *r;

	assert_int_equal(sbx_buf_puts(&b, stderr_bytes), 0);
	r = sbx__e2b_stderr_text(&b, out, outlen);
	sbx_buf_dispose(&b);
	return r;
}

static void test_stderr_text__permission_denied_names_the_path(void **state)
{
	(void)state;
	char o[501];
	assert_string_equal(
	    text_of("capybara-write: 1: cannot create /etc/passwd: Permission denied\n", o,
	            sizeof(o)),
	    "permission denied for /etc/passwd");
	assert_string_equal(
	    text_of("capybara-read: 3: cannot open /root/x: Permission denied", o, sizeof(o)),
	    "permission denied for /root/x");
	assert_string_equal(
	    text_of("mkdir: cannot create directory '/etc/a': Permission denied", o, sizeof(o)),
	    "permission denied for /etc/a");
	assert_string_equal(
	    text_of("head: cannot open '/root/x' for reading: Permission denied", o, sizeof(o)),
	    "permission denied for /root/x");
	assert_string_equal(text_of("find: '/opt/capybara': Permission denied", o, sizeof(o)),
	                    "permission denied for /opt/capybara");
	assert_string_equal(text_of("cat: /root/secret: Permission denied", o, sizeof(o)),
	                    "permission denied for /root/secret");
	assert_string_equal(
	    text_of("capybara-stat: 2: can't cd to /root: Permission denied", o, sizeof(o)),
	    "permission denied for /root");
}

static void test_stderr_text__other_errors_lose_only_the_script_name(void **state)
{
	(void)state;
	char o[501];
	assert_string_equal(
	    text_of("  capybara-write: 12: cannot create /x/y: Directory nonexistent\n", o,
	            sizeof(o)),
	    "cannot create /x/y: Directory nonexistent");
	assert_string_equal(text_of("head: error reading 'x': Is a directory", o, sizeof(o)),
	                    "head: error reading 'x': Is a directory");
	/* not dash's "NAME: LINE: " shape: kept whole */
	assert_string_equal(text_of("capybara-write: no line number", o, sizeof(o)),
	                    "capybara-write: no line number");
	/* two lines: kept whole, never reworded */
	assert_string_equal(text_of("a: Permission denied\nb: Permission denied", o, sizeof(o)),
	                    "a: Permission denied\nb: Permission denied");
	assert_string_equal(text_of(": Permission denied", o, sizeof(o)), ": Permission denied");
	assert_string_equal(text_of("", o, sizeof(o)), "");
}

static void test_stderr_text__a_small_buffer_is_never_overrun(void **state)
{
	(void)state;
	char o[24];
	/* "permission denied for /etc/passwd" does not fit in 24: the cut text stays */
	assert_string_equal(text_of("cannot create /etc/passwd: Permission denied", o, sizeof(o)),
	                    "cannot create /etc/pass");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stderr_text__permission_denied_names_the_path),
	    cmocka_unit_test(test_stderr_text__other_errors_lose_only_the_script_name),
	    cmocka_unit_test(test_stderr_text__a_small_buffer_is_never_overrun),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
