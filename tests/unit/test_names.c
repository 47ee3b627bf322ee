/* Unit tests of e2b/names.c: NAME_RE, SANDBOX_ID_RE, HOSTNAME_RE. */
#include "unit.h"

#include "e2b/names.h"

static void test_names__sandbox_name_edges(void **state)
{
	(void)state;
	const char *good[] = {"a", "Z", "0", "a.b_c-d", "conv-123", "a..", "x_"};
	const char *bad[] = {"", ".a", "_a", "-a", "a b", "a/b", "a:b", "é"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(sbx__e2b_validate_name(good[i], NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(sbx__e2b_validate_name(bad[i], NULL), SBX_EINVALID);
	char n[110];
	memset(n, 'n', sizeof(n));
	n[101] = 0;
	assert_int_equal(sbx__e2b_validate_name(n, NULL), 0);
	n[101] = 'n';
	n[102] = 0;
	assert_int_equal(sbx__e2b_validate_name(n, NULL), SBX_EINVALID);
	sbx_error e = {0};
	sbx__e2b_validate_name("bad name", &e);
	assert_string_equal(e.message,
	                    "invalid sandbox name: bad name (a name is 1 to 101 letters, "
	                    "digits, '_', '.' or '-', starting with a letter or digit: "
	                    "^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$)");
	assert_int_equal(sbx__e2b_validate_name(NULL, NULL), SBX_EINVALID);
}

static void test_names__sandbox_id_edges(void **state)
{
	(void)state;
	assert_int_equal(sbx__e2b_validate_sandbox_id("i0a1b2c3", NULL), 0);
	assert_int_equal(sbx__e2b_validate_sandbox_id("-", NULL), 0);
	assert_int_equal(sbx__e2b_validate_sandbox_id("", NULL), SBX_EINVALID);
	assert_int_equal(sbx__e2b_validate_sandbox_id("a_b", NULL), SBX_EINVALID);
	assert_int_equal(sbx__e2b_validate_sandbox_id("a/b", NULL), SBX_EINVALID);
	assert_int_equal(sbx__e2b_validate_sandbox_id("a.b", NULL), SBX_EINVALID);
	assert_int_equal(sbx__e2b_validate_sandbox_id(NULL, NULL), SBX_EINVALID);
	char id[140];
	memset(id, 'x', sizeof(id));
	id[128] = 0;
	assert_int_equal(sbx__e2b_validate_sandbox_id(id, NULL), 0);
	id[128] = 'x';
	id[129] = 0;
	assert_int_equal(sbx__e2b_validate_sandbox_id(id, NULL), SBX_EINVALID);
	sbx_error e = {0};
	sbx__e2b_validate_sandbox_id("../x", &e);
	assert_string_equal(e.message, "invalid E2B sandbox id: \"../x\"");
}

static void test_names__hostname_pattern(void **state)
{
	(void)state;
	const char *good[] = {"e2b.app", "a.b", "1.2", "x-y.z", "a.b.c.d", "a1-b2.c3"};
	const char *bad[] = {"",     "localhost", "E2B.app", "a-.b",  "-a.b",  "a.b-",
	                     "a..b", ".a.b",      "a.b.",    "a_b.c", "*.a.b", "a.b:1"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_true(sbx__is_hostname(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_false(sbx__is_hostname(bad[i], strlen(bad[i])));
	assert_false(sbx__is_hostname("e2b.app\0x", 9)); /* NUL inside */
	assert_true(sbx__is_hostname("e2b.appXX", 7));   /* only len bytes count */
	assert_false(sbx__is_hostname(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names__sandbox_name_edges),
	    cmocka_unit_test(test_names__sandbox_id_edges),
	    cmocka_unit_test(test_names__hostname_pattern),
	};
	return cmocka_run_group_tests_name("names", tests, NULL, NULL);
}
