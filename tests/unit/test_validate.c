/* Unit tests of contract/validate.c: the contract's validators (docs/contract.md "Definitions":
 * tags, sandbox paths, allow hosts, environment keys; "Egress" and "Resources": the limits). */
#include "unit.h"

#include <math.h>
#include <sandbox.h>
#include <stdlib.h>

static int path_rc(const char *p)
{
	return sbx_validate_path(p, strlen(p), NULL);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

static void test_validate__tag_accepts_and_rejects_edges(void **state)
{
	(void)state;
	const char *good[] = {"a", "A", "0", "a_b-c", "Z9-_", "abc-DEF_123"};
	const char *bad[] = {"", "-a", "_a", "a.b", "a b", "a/b", "é", "a\n"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(sbx_validate_tag(good[i], NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(sbx_validate_tag(bad[i], NULL), SBX_EINVALID);
	char *t64 = repeat('t', 64), *t65 = repeat('t', 65);
	assert_int_equal(sbx_validate_tag(t64, NULL), 0);
	assert_int_equal(sbx_validate_tag(t65, NULL), SBX_EINVALID);
	free(t64);
	free(t65);
	sbx_error e = {0};
	assert_int_equal(sbx_validate_tag(NULL, &e), SBX_EINVALID);
	assert_string_equal(e.message, "invalid sandbox tag");
}

static void test_validate__path_accepts_absolute_clean_paths(void **state)
{
	(void)state;
	const char *good[] = {"/",       "/a",   "/a/",  "/workspace/x.txt",  "/...", "/.hidden",
	                      "/a/b..c", "/é/ü", "/a b", "/skills/x/SKILL.md"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		print_message("%s\n", good[i]);
		assert_int_equal(path_rc(good[i]), 0);
	}
}

static void test_validate__path_rejects_each_rule(void **state)
{
	(void)state;
	const char *bad[] = {"",      "a",      "a/b",    "//a",       "/a//b", "/a//",
	                     "/.",    "/..",    "/a/./b", "/a/../b",   "/a/.",  "/a/..",
	                     "/a\nb", "/a\x7f", "/\x01",  "/a\xc2\x85"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		print_message("%zu\n", i);
		assert_int_equal(path_rc(bad[i]), SBX_EINVALID);
	}
	assert_int_equal(sbx_validate_path("/a\0b", 4, NULL), SBX_EINVALID);
	assert_int_equal(sbx_validate_path(NULL, 0, NULL), SBX_EINVALID);
}

static void test_validate__path_length_edges(void **state)
{
	(void)state;
	char *p = repeat('/', 4097);
	/* 4096 bytes: "/" + segments of "a/" ... built as "/aaa.../aaa" */
	for (size_t i = 1; i < 4097; i++)
		p[i] = (i % 256 == 0) ? '/' : 'a';
	p[4096] = 0;
	assert_int_equal(path_rc(p), 0);
	p[4095] = 'a';
	p[4096] = 'a'; /* 4097 bytes */
	assert_int_equal(sbx_validate_path(p, 4097, NULL), SBX_EINVALID);
	free(p);

	char seg[300] = "/";
	memset(seg + 1, 's', 255);
	seg[256] = 0;
	assert_int_equal(path_rc(seg), 0);
	seg[256] = 's';
	seg[257] = 0;
	assert_int_equal(path_rc(seg), SBX_EINVALID);
}

static void test_validate__path_message_quotes_and_lists_reasons(void **state)
{
	(void)state;
	sbx_error e = {0};
	sbx_validate_path("a/b", 3, &e);
	assert_string_equal(e.message, "invalid sandbox path \"a/b\": must be absolute");
	sbx_error_clear(&e);
	sbx_validate_path("x/../\n", 6, &e);
	assert_string_equal(e.message,
	                    "invalid sandbox path \"x/../\\u000a\": must be absolute; must not "
	                    "contain NUL or control characters; must not contain empty, \".\" or "
	                    "\"..\" segments");
	sbx_error_clear(&e);
	sbx_validate_path("/a\"b/", 5, &e);
	assert_int_equal(e.code, 0); /* valid: quotes are allowed */
	sbx_validate_path("/a\"b//", 6, &e);
	assert_string_equal(e.message, "invalid sandbox path \"/a\\\"b//\": must not contain "
	                               "empty, \".\" or \"..\" segments");
}

static void test_validate__allow_host_accepts(void **state)
{
	(void)state;
	const char *good[] = {"example.com", "a.b.c",     "*.example.com", "x-y.z9.io",
	                      "9a.io",       "1.2.3.4",   "0.0.0.0",       "255.255.255.255",
	                      "10.0.0.0/8",  "0.0.0.0/0", "1.2.3.4/32",    "api.e2b.app"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		print_message("%s\n", good[i]);
		assert_int_equal(sbx_validate_allow_host(good[i], NULL), 0);
	}
}

static void test_validate__allow_host_rejects(void **state)
{
	(void)state;
	const char *bad[] = {
	    "",         "localhost",    "Example.com", "*.com",     "*",          "*.",
	    "**.a.com", "a.*.com",      "-a.com",      "a-.com",    "a..com",     ".a.com",
	    "a.com.",   "ex_ample.com", "a.com:80",    "256.1.1.1", "1.2.3",      "1.2",
	    "01.2.3.4", "1.2.3.4.5",    "1.2.3.4/33",  "1.2.3.4/",  "1.2.3.4/08", "1.2.3.4/x",
	    "a.com/8",  "1.2.3.4/-1",   "http://a.com"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(sbx_validate_allow_host(bad[i], NULL), SBX_EINVALID);
	}
	sbx_error e = {0};
	sbx_validate_allow_host("Bad.com", &e);
	assert_string_equal(e.message, "invalid allowHosts entry Bad.com: must be a lowercase "
	                               "hostname, \"*.\" and a hostname, an IPv4 address or an "
	                               "IPv4 CIDR");
	sbx_error_clear(&e);
	sbx_validate_allow_host("1.2.3.4/33", &e);
	assert_string_equal(
	    e.message, "invalid allowHosts entry 1.2.3.4/33: CIDR prefix must be between 0 and 32");
	sbx_error_clear(&e);
	sbx_validate_allow_host("a\nb", &e);
	assert_non_null(strstr(e.message, "a\\x0ab"));
	assert_int_equal(sbx_validate_allow_host(NULL, NULL), SBX_EINVALID);
}

static void test_validate__env_key_edges(void **state)
{
	(void)state;
	const char *good[] = {"A", "_", "a1", "A_B", "_9", "path"};
	const char *bad[] = {"", "1A", "A-B", "A B", "A=B", "é"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(sbx_validate_env_key(good[i], NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(sbx_validate_env_key(bad[i], NULL), SBX_EINVALID);
	sbx_error e = {0};
	sbx_validate_env_key("1A", &e);
	assert_string_equal(e.message, "invalid environment variable name: 1A");
	assert_int_equal(sbx_validate_env_key(NULL, NULL), SBX_EINVALID);
}

static const char *const some_hosts[] = {"example.com", "bad_host"};

static void test_validate__limits_positive_finite(void **state)
{
	(void)state;
	sbx_limits ok = {1, 512, 1024, SBX_EGRESS_NONE, NULL, 0};
	assert_int_equal(sbx_validate_limits(&ok, NULL), 0);
	sbx_limits tiny = {0.001, 0.5, 1e-9, SBX_EGRESS_OPEN, NULL, 0};
	assert_int_equal(sbx_validate_limits(&tiny, NULL), 0);
	const double bad[] = {0, -1, -0.0, NAN, INFINITY, -INFINITY};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		for (int which = 0; which < 3; which++) {
			sbx_limits l = ok;
			sbx_error e = {0};
			if (which == 0)
				l.cpu = bad[i];
			else if (which == 1)
				l.memory_mb = bad[i];
			else
				l.disk_mb = bad[i];
			assert_int_equal(sbx_validate_limits(&l, &e), SBX_EINVALID);
			assert_string_equal(
			    e.message, "sandbox limits cpu, memoryMb and diskMb must be positive");
		}
	}
	assert_int_equal(sbx_validate_limits(NULL, NULL), SBX_EINVALID);
	sbx_limits egress = ok;
	egress.egress = (sbx_egress)7;
	assert_int_equal(sbx_validate_limits(&egress, NULL), SBX_EINVALID);
}

static void test_validate__limits_check_hosts_only_for_allowlist(void **state)
{
	(void)state;
	sbx_limits l = {1, 512, 1024, SBX_EGRESS_ALLOWLIST, some_hosts, 1};
	assert_int_equal(sbx_validate_limits(&l, NULL), 0);
	l.allow_hosts_count = 2;
	sbx_error e = {0};
	assert_int_equal(sbx_validate_limits(&l, &e), SBX_EINVALID);
	assert_string_equal(e.message, "invalid allowHosts entry bad_host: must be a lowercase "
	                               "hostname, \"*.\" and a hostname, an IPv4 address or an "
	                               "IPv4 CIDR");
	l.egress = SBX_EGRESS_NONE;
	assert_int_equal(sbx_validate_limits(&l, NULL), 0);
	l.egress = SBX_EGRESS_OPEN;
	assert_int_equal(sbx_validate_limits(&l, NULL), 0);
	sbx_limits empty = {1, 1, 1, SBX_EGRESS_ALLOWLIST, NULL, 0};
	assert_int_equal(sbx_validate_limits(&empty, NULL), 0);
	empty.allow_hosts_count = 1;
	assert_int_equal(sbx_validate_limits(&empty, NULL), SBX_EINVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_validate__tag_accepts_and_rejects_edges),
	    cmocka_unit_test(test_validate__path_accepts_absolute_clean_paths),
	    cmocka_unit_test(test_validate__path_rejects_each_rule),
	    cmocka_unit_test(test_validate__path_length_edges),
	    cmocka_unit_test(test_validate__path_message_quotes_and_lists_reasons),
	    cmocka_unit_test(test_validate__allow_host_accepts),
	    cmocka_unit_test(test_validate__allow_host_rejects),
	    cmocka_unit_test(test_validate__env_key_edges),
	    cmocka_unit_test(test_validate__limits_positive_finite),
	    cmocka_unit_test(test_validate__limits_check_hosts_only_for_allowlist),
	};
	return cmocka_run_group_tests_name("validate", tests, NULL, NULL);
}
