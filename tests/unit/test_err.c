/* Unit tests of util/err.c and contract/error.c, common.c: errors, quoting, names. */
#include "unit.h"

#include <sandbox.h>

#include "util/err.h"

static void test_err__first_error_stays(void **state)
{
	(void)state;
	sbx_error e = {0};
	assert_int_equal(sbx__error_set(&e, SBX_EGONE, "gone %d", 1), SBX_EGONE);
	assert_int_equal(sbx__error_set(&e, SBX_EHTTP, "later"), SBX_EHTTP);
	assert_int_equal(sbx__error_set_http(&e, SBX_EHTTP, 500, "x", "later"), SBX_EHTTP);
	assert_int_equal(e.code, SBX_EGONE);
	assert_int_equal(e.http_status, 0);
	assert_string_equal(e.message, "gone 1");
	sbx_error_clear(&e);
	assert_int_equal(e.code, 0);
	assert_string_equal(e.message, "");
	sbx_error_clear(NULL);
}

static void test_err__null_error_still_returns_the_code(void **state)
{
	(void)state;
	assert_int_equal(sbx__error_set(NULL, SBX_EINVALID, "x"), SBX_EINVALID);
	assert_int_equal(sbx__error_set_http(NULL, SBX_EHTTP, 404, "404", "x"), SBX_EHTTP);
}

static void test_err__http_records_status_and_code(void **state)
{
	(void)state;
	sbx_error e = {0};
	sbx__error_set_http(&e, SBX_EHTTP, 404, "not_found", "E2B %s failed: HTTP %d", "GET /x",
	                    404);
	assert_int_equal(e.code, SBX_EHTTP);
	assert_int_equal(e.http_status, 404);
	assert_string_equal(e.e2b_code, "not_found");
	assert_string_equal(e.message, "E2B GET /x failed: HTTP 404");
	sbx_error f = {0};
	sbx__error_set_http(&f, SBX_EHTTP, 500, NULL, "m");
	assert_string_equal(f.e2b_code, "");
	sbx_error g = {0};
	sbx__error_set_http(&g, SBX_EHTTP, 500, "0123456789012345678901234567890123456789", "m");
	assert_int_equal(strlen(g.e2b_code), 31);
}

static void test_err__long_message_is_cut_not_overflowed(void **state)
{
	(void)state;
	sbx_error e = {0};
	char big[2000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	sbx__error_set(&e, SBX_EPROTOCOL, "%s", big);
	assert_int_equal(strlen(e.message), SBX_ERROR_MESSAGE_MAX - 1);
}

static void test_err__quote_escapes_and_caps_at_64_bytes(void **state)
{
	(void)state;
	char q[SBX_QUOTE_SIZE];
	assert_string_equal(sbx__quote(q, sizeof(q), "abc", 3), "abc");
	assert_string_equal(sbx__quote(q, sizeof(q), "a\nb\0c\x7f\xff\\", 8),
	                    "a\\x0ab\\x00c\\x7f\\xff\\\\");
	char in[100];
	memset(in, 'x', sizeof(in));
	sbx__quote(q, sizeof(q), in, 64);
	assert_int_equal(strlen(q), 64);
	sbx__quote(q, sizeof(q), in, 65);
	assert_int_equal(strlen(q), 67);
	assert_string_equal(q + 64, "...");
	unsigned char all[64];
	memset(all, 1, sizeof(all));
	sbx__quote(q, sizeof(q), all, 64);
	assert_int_equal(strlen(q), 4 * 64);
	char small[5];
	assert_string_equal(sbx__quote(small, sizeof(small), "abcdef", 6), "abcd");
	assert_string_equal(sbx__quote(q, sizeof(q), "", 0), "");
}

static void test_err__every_code_has_a_name(void **state)
{
	(void)state;
	static const struct {
		int code;
		const char *name;
	} names[] = {
	    {SBX_OK, "SBX_OK"},
	    {SBX_EINVALID, "SBX_EINVALID"},
	    {SBX_EGONE, "SBX_EGONE"},
	    {SBX_EABORTED, "SBX_EABORTED"},
	    {SBX_ETIMEOUT, "SBX_ETIMEOUT"},
	    {SBX_ETOOLARGE, "SBX_ETOOLARGE"},
	    {SBX_ENOMEM, "SBX_ENOMEM"},
	    {SBX_EPROTOCOL, "SBX_EPROTOCOL"},
	    {SBX_EHTTP, "SBX_EHTTP"},
	    {SBX_ENETWORK, "SBX_ENETWORK"},
	    {SBX_EUSER, "SBX_EUSER"},
	    {SBX_ESANDBOX, "SBX_ESANDBOX"},
	    {SBX_EINTERNAL, "SBX_EINTERNAL"},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_string_equal(sbx_error_code_name(names[i].code), names[i].name);
	assert_string_equal(sbx_error_code_name(-13), "SBX_E?");
	assert_string_equal(sbx_error_code_name(1), "SBX_E?");
}

static void test_err__version_levels_and_global_init(void **state)
{
	(void)state;
	assert_string_equal(sbx_version(), "0.1.0");
	assert_string_equal(sbx_version(), SBX_VERSION);
	assert_string_equal(sbx_log_level_name(SBX_LOG_DEBUG), "debug");
	assert_string_equal(sbx_log_level_name(SBX_LOG_INFO), "info");
	assert_string_equal(sbx_log_level_name(SBX_LOG_WARN), "warn");
	assert_string_equal(sbx_log_level_name(SBX_LOG_ERROR), "error");
	assert_int_equal(sbx_global_init(), 0);
	assert_int_equal(sbx_global_init(), 0);
	sbx_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_err__first_error_stays),
	    cmocka_unit_test(test_err__null_error_still_returns_the_code),
	    cmocka_unit_test(test_err__http_records_status_and_code),
	    cmocka_unit_test(test_err__long_message_is_cut_not_overflowed),
	    cmocka_unit_test(test_err__quote_escapes_and_caps_at_64_bytes),
	    cmocka_unit_test(test_err__every_code_has_a_name),
	    cmocka_unit_test(test_err__version_levels_and_global_init),
	};
	return cmocka_run_group_tests_name("err", tests, NULL, NULL);
}
