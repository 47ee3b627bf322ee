/* Unit tests of e2b/config.c: the deployment config, strict (docs/contract.md "The deployment
 * config"). */
#include "unit.h"

#include <sandbox.h>
#include <stdio.h>

#include "util/alloc.h"

static int parse(sbx_e2b_config **cfg, const char *json, sbx_error *e)
{
	sbx_error_clear(e);
	return sbx_e2b_config_parse(cfg, json, strlen(json), e);
}

/* Parse `json`, expect SBX_EINVALID and exactly `message`. */
static void expect_invalid(const char *json, const char *message)
{
	sbx_e2b_config *cfg = (sbx_e2b_config *)1;
	sbx_error e;
	print_message("%s\n", json);
	assert_int_equal(parse(&cfg, json, &e), SBX_EINVALID);
	assert_null(cfg);
	assert_int_equal(e.code, SBX_EINVALID);
	assert_string_equal(e.message, message);
}

static sbx_e2b_config *expect_valid(const char *json)
{
	sbx_e2b_config *cfg = NULL;
	sbx_error e;
	print_message("%s\n", json);
	int rc = parse(&cfg, json, &e);
	if (rc != 0)
		print_message("error: %s\n", e.message);
	assert_int_equal(rc, 0);
	assert_non_null(cfg);
	return cfg;
}

static void test_config__minimal_config_gets_the_defaults(void **state)
{
	(void)state;
	sbx_e2b_config *cfg = expect_valid("{\"apiKey\":\"k\",\"template\":\"t\"}");
	assert_string_equal(cfg->api_key, "k");
	assert_null(cfg->api_url);
	assert_string_equal(cfg->domain, "e2b.app");
	assert_string_equal(cfg->template_id, "t");
	assert_int_equal(cfg->timeout_seconds, 3600);
	assert_true(cfg->domain_allowlist);
	assert_false(cfg->allow_open_egress);
	assert_string_equal(cfg->effective_api_url, "https://api.e2b.app");
	sbx_e2b_config_free(cfg);
	sbx_e2b_config_free(NULL);
}

static void test_config__every_key_set(void **state)
{
	(void)state;
	sbx_e2b_config *cfg = expect_valid(
	    "{\"apiKey\":\"e2b_secret\",\"apiUrl\":\"http://"
	    "127.0.0.1:3000\",\"domain\":\"my.host\","
	    "\"template\":\"capybara\",\"timeoutSeconds\":60,\"domainAllowlist\":false,"
	    "\"allowOpenEgress\":true}");
	assert_string_equal(cfg->api_url, "http://127.0.0.1:3000");
	assert_string_equal(cfg->effective_api_url, "http://127.0.0.1:3000");
	assert_string_equal(cfg->domain, "my.host");
	assert_int_equal(cfg->timeout_seconds, 60);
	assert_false(cfg->domain_allowlist);
	assert_true(cfg->allow_open_egress);
	sbx_e2b_config_free(cfg);

	cfg = expect_valid("{\"apiKey\":\"k\",\"template\":\"t\",\"domain\":\"e2b.example.org\"}");
	assert_string_equal(cfg->effective_api_url, "https://api.e2b.example.org");
	sbx_e2b_config_free(cfg);
}

static void test_config__unknown_key_is_named(void **state)
{
	(void)state;
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"extra\":1}",
	               "extra: unrecognized key");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"apikey\":\"x\",\"b\":null}",
	               "apikey: unrecognized key; b: unrecognized key");
}

static void test_config__required_keys(void **state)
{
	(void)state;
	expect_invalid("{}", "apiKey: required; template: required");
	expect_invalid("{\"template\":\"t\"}", "apiKey: required");
	expect_invalid("{\"apiKey\":\"k\"}", "template: required");
	expect_invalid("{\"apiKey\":\"\",\"template\":\"\"}",
	               "apiKey: must not be empty; template: must not be empty");
}

static void test_config__wrong_types(void **state)
{
	(void)state;
	expect_invalid("{\"apiKey\":1,\"template\":\"t\"}", "apiKey: expected string");
	expect_invalid("{\"apiKey\":null,\"template\":\"t\"}", "apiKey: expected string");
	expect_invalid("{\"apiKey\":\"k\",\"template\":[]}", "template: expected string");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":null}",
	               "apiUrl: expected string");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"domain\":1}",
	               "domain: expected string");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"timeoutSeconds\":\"60\"}",
	               "timeoutSeconds: expected integer");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"timeoutSeconds\":true}",
	               "timeoutSeconds: expected integer");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"domainAllowlist\":\"true\"}",
	               "domainAllowlist: expected boolean");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"allowOpenEgress\":0}",
	               "allowOpenEgress: expected boolean");
	expect_invalid("{\"apiKey\":\"k\",\"template\":\"t\",\"allowOpenEgress\":null}",
	               "allowOpenEgress: expected boolean");
}

static void test_config__timeout_range_edges(void **state)
{
	(void)state;
	static const struct {
		const char *value;
		int64_t want; /* 0: invalid */
		const char *message;
	} cases[] = {
	    {"59", 0, "timeoutSeconds: must be >= 60"},
	    {"60", 60, NULL},
	    {"86400", 86400, NULL},
	    {"86401", 0, "timeoutSeconds: must be <= 86400"},
	    {"60.5", 0, "timeoutSeconds: expected integer"},
	    {"3600.0", 3600, NULL},
	    {"6e1", 60, NULL},
	    {"-60", 0, "timeoutSeconds: must be >= 60"},
	    {"0", 0, "timeoutSeconds: must be >= 60"},
	    {"1e300", 0, "timeoutSeconds: must be <= 86400"},
	    {"99999999999999999999999", 0, "timeoutSeconds: must be <= 86400"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char json[160];
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"k\",\"template\":\"t\",\"timeoutSeconds\":%s}",
		         cases[i].value);
		if (cases[i].want) {
			sbx_e2b_config *cfg = expect_valid(json);
			assert_int_equal(cfg->timeout_seconds, cases[i].want);
			sbx_e2b_config_free(cfg);
		} else {
			expect_invalid(json, cases[i].message);
		}
	}
}

static void test_config__api_url_must_be_http_or_https(void **state)
{
	(void)state;
	const char *good[] = {"https://api.e2b.app", "http://127.0.0.1:8080", "HTTPS://x.y/path",
	                      "http://localhost", "https://api.e2b.app/"};
	const char *bad[] = {"ftp://x.y", "file:///etc/passwd", "api.e2b.app",  "",
	                     "https://",  "ws://x.y",           "mailto:a@b.c", "/v2"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		char json[200];
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\"%s\"}", good[i]);
		sbx_e2b_config *cfg = expect_valid(json);
		assert_string_equal(cfg->api_url, good[i]);
		assert_string_equal(cfg->effective_api_url, good[i]);
		sbx_e2b_config_free(cfg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char json[200];
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\"%s\"}", bad[i]);
		expect_invalid(json, "apiUrl: must be an http or https URL");
	}
	/* zod trims the value before checking it */
	sbx_e2b_config *cfg =
	    expect_valid("{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\" http://a.b \"}");
	assert_string_equal(cfg->api_url, "http://a.b");
	sbx_e2b_config_free(cfg);
}

/*
 * docs/contract.md "The deployment config": apiUrl wants "http://" or
 * "https://" (any case) at the start, then a URL as a WHATWG parser reads it.
 * A URL parser alone takes "http:/x" (as http://x/): the seed does not.
 */
static void test_config__api_url_as_the_seed_reads_it(void **state)
{
	(void)state;
	const char *bad[] = {"http:/x", "https:/api.example.com", "HTTP:/x",
	                     "http:x",  "https:api.example.com",  "http:\\\\x",
	                     " http:/x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char json[200];
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\"%s\"}", bad[i]);
		expect_invalid(json, "apiUrl: must be an http or https URL");
	}
	/* a tab or newline inside is dropped by the URL parser: requests go to http://xy */
	sbx_e2b_config *cfg =
	    expect_valid("{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\"http://x\\ty\"}");
	assert_string_equal(cfg->api_url, "http://x\ty"); /* the value as given, trimmed */
	assert_string_equal(cfg->effective_api_url, "http://xy");
	sbx_e2b_config_free(cfg);
	cfg = expect_valid(
	    "{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\"HTTPS://api.\\nexample.com/\\r\"}");
	assert_string_equal(cfg->effective_api_url, "HTTPS://api.example.com/");
	sbx_e2b_config_free(cfg);
	cfg = expect_valid("{\"apiKey\":\"k\",\"template\":\"t\",\"apiUrl\":\"Http://H.I:81\"}");
	assert_string_equal(cfg->effective_api_url, "Http://H.I:81");
	sbx_e2b_config_free(cfg);
}

static void test_config__domain_must_be_a_lowercase_hostname(void **state)
{
	(void)state;
	const char *bad[] = {"E2B.app", "localhost", "e2b.app.", "-e2b.app", "e2b_app.io", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char json[200];
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"k\",\"template\":\"t\",\"domain\":\"%s\"}", bad[i]);
		expect_invalid(json, "domain: domain must be a lowercase hostname such as e2b.app");
	}
}

static void test_config__all_problems_are_collected(void **state)
{
	(void)state;
	expect_invalid(
	    "{\"apiKey\":\"\",\"apiUrl\":\"ftp://x\",\"domain\":\"X\",\"timeoutSeconds\":1,"
	    "\"domainAllowlist\":1,\"allowOpenEgress\":\"no\",\"zzz\":0}",
	    "apiKey: must not be empty; apiUrl: must be an http or https URL; domain: "
	    "domain must be a lowercase hostname such as e2b.app; template: required; "
	    "timeoutSeconds: must be >= 60; domainAllowlist: expected boolean; "
	    "allowOpenEgress: expected boolean; zzz: unrecognized key");
}

static void test_config__not_an_object_or_not_json(void **state)
{
	(void)state;
	expect_invalid("[]", "config must be a JSON object");
	expect_invalid("\"x\"", "config must be a JSON object");
	expect_invalid("null", "config must be a JSON object");
	expect_invalid("", "config is not valid JSON (line 1, column 0)");
	expect_invalid("{\"apiKey\":\"e2b_topsecret\",",
	               "config is not valid JSON (line 1, column 26)");
	expect_invalid("{\"apiKey\":\"k\",\"apiKey\":\"k\",\"template\":\"t\"}",
	               "config has a duplicate key (line 1, column 22)");
	/* need not be NUL-terminated: only len bytes count */
	sbx_e2b_config *cfg = NULL;
	const char *json = "{\"apiKey\":\"k\",\"template\":\"t\"}garbage";
	assert_int_equal(sbx_e2b_config_parse(&cfg, json, 29, NULL), 0);
	sbx_e2b_config_free(cfg);
	assert_int_equal(sbx_e2b_config_parse(&cfg, NULL, 0, NULL), SBX_EINVALID);
	assert_int_equal(sbx_e2b_config_parse(NULL, "{}", 2, NULL), SBX_EINVALID);
}

/*
 * Which rule failed is data (e2b_code, sandbox/e2b.h SBX_E2B_CONFIG_*), whatever the message
 * says: keys named like another reason's message must not change the reason.
 */
static void test_config__reason_is_data(void **state)
{
	static const char *const cases[][2] = {
	    {"{\"apiKey\":\"k\"", SBX_E2B_CONFIG_NOT_JSON},
	    {"{\"apiKey\":\"k\",\"apiKey\":\"k\",\"template\":\"t\"}",
	     SBX_E2B_CONFIG_DUPLICATE_KEY},
	    {"[]", SBX_E2B_CONFIG_NOT_OBJECT},
	    {"{}", SBX_E2B_CONFIG_TEMPLATE},
	    {"{\"apiKey\":\"k\",\"template\":7}", SBX_E2B_CONFIG_TEMPLATE},
	    {"{\"apiKey\":\"k\",\"template\":\"\",\"b\":1}", SBX_E2B_CONFIG_TEMPLATE},
	    {"{\"apiKey\":\"k\",\"template\":\"t\",\"timeoutSeconds\":5}", SBX_E2B_CONFIG_KEYS},
	    {"{\"apiKey\":\"k\",\"template\":\"t\",\"config is not valid JSON\":1}",
	     SBX_E2B_CONFIG_KEYS},
	    {"{\"apiKey\":\"k\",\"template\":\"t\",\"templates\":1}", SBX_E2B_CONFIG_KEYS},
	    {"{\"apiKey\":\"k\",\"template\":\"t\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]"
	     "]]]]]]]]]]]]]]]]]]]]]]]]]}",
	     SBX_E2B_CONFIG_TOO_DEEP},
	};
	sbx_e2b_config *cfg = NULL;
	sbx_error e;
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("%s\n", cases[i][0]);
		assert_int_equal(parse(&cfg, cases[i][0], &e), SBX_EINVALID);
		assert_string_equal(e.e2b_code, cases[i][1]);
		assert_int_equal(e.http_status, 0);
	}
	sbx_error_clear(&e);
	assert_int_equal(sbx_e2b_config_parse(&cfg, NULL, 0, &e), SBX_EINVALID);
	assert_string_equal(e.e2b_code, "");
}

static void test_config__depth_is_capped(void **state)
{
	(void)state;
	char json[200] = "{\"apiKey\":\"k\",\"template\":\"t\",\"x\":";
	size_t n = strlen(json);
	for (int i = 0; i < 40; i++)
		json[n++] = '[';
	for (int i = 0; i < 40; i++)
		json[n++] = ']';
	json[n++] = '}';
	json[n] = 0;
	expect_invalid(json, "config nests deeper than 32 levels");
	/* brackets inside strings do not count */
	expect_invalid(
	    "{\"apiKey\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\",\"template\":\"t\","
	    "\"q\":1}",
	    "q: unrecognized key");
}

static void test_config__errors_never_contain_the_api_key(void **state)
{
	(void)state;
	const char *jsons[] = {
	    "{\"apiKey\":\"e2b_topsecret\",\"template\":1}",
	    "{\"apiKey\":\"e2b_topsecret\" \"template\":\"t\"}",
	    "{\"apiKey\":\"e2b_topsecret\",\"e2b_topsecret\":1}",
	    "{\"apiKey\":\"e2b_topsecret\",\"apiUrl\":\"e2b_topsecret\",\"template\":\"t\"}",
	    "[\"e2b_topsecret\"]",
	};
	for (size_t i = 0; i < sizeof(jsons) / sizeof(*jsons); i++) {
		sbx_e2b_config *cfg;
		sbx_error e;
		assert_int_equal(parse(&cfg, jsons[i], &e), SBX_EINVALID);
		print_message("%s\n", e.message);
		if (i != 2) /* 2: the user put the secret in a key name, which is named */
			assert_null(strstr(e.message, "topsecret"));
	}
}

static void test_config__to_json_redacts_the_key_in_seed_order(void **state)
{
	(void)state;
	sbx_e2b_config *cfg = expect_valid("{\"template\":\"t\",\"apiKey\":\"e2b_topsecret\"}");
	char *json = NULL;
	assert_int_equal(sbx_e2b_config_to_json(&json, cfg, NULL), 0);
	assert_string_equal(json, "{\"apiKey\":\"[redacted]\",\"domain\":\"e2b.app\",\"template\":"
	                          "\"t\",\"timeoutSeconds\":3600,\"domainAllowlist\":true,"
	                          "\"allowOpenEgress\":false}");
	assert_null(strstr(json, "topsecret"));
	sbx_free(json);
	sbx_e2b_config_free(cfg);

	cfg = expect_valid("{\"apiKey\":\"e2b_topsecret\",\"apiUrl\":\"http://h.i\",\"template\":"
	                   "\"t\",\"timeoutSeconds\":120,\"allowOpenEgress\":true}");
	assert_int_equal(sbx_e2b_config_to_json(&json, cfg, NULL), 0);
	assert_string_equal(json, "{\"apiKey\":\"[redacted]\",\"apiUrl\":\"http://h.i\",\"domain\":"
	                          "\"e2b.app\",\"template\":\"t\",\"timeoutSeconds\":120,"
	                          "\"domainAllowlist\":true,\"allowOpenEgress\":true}");
	assert_null(strstr(json, "topsecret"));
	sbx_free(json);
	sbx_e2b_config_free(cfg);
	assert_int_equal(sbx_e2b_config_to_json(&json, NULL, NULL), SBX_EINVALID);
}

/* Fail allocation 0, 1, 2, ... until the call succeeds: each failure is
 * SBX_ENOMEM with no output and (under ASan) no leak. */
static void test_config__allocation_failure_torture(void **state)
{
	(void)state;
	const char *json = "{\"apiKey\":\"k\",\"apiUrl\":\"http://a.b\",\"template\":\"t\"}";
	long n;
	for (n = 0; n < 1000; n++) {
		sbx_e2b_config *cfg = (sbx_e2b_config *)1;
		sbx_error e = {0};
		sbx__alloc_fail_after(n);
		int rc = sbx_e2b_config_parse(&cfg, json, strlen(json), &e);
		sbx__alloc_fail_after(-1);
		if (rc == 0) {
			assert_non_null(cfg);
			sbx_e2b_config_free(cfg);
			break;
		}
		assert_int_equal(rc, SBX_ENOMEM);
		assert_int_equal(e.code, SBX_ENOMEM);
		assert_null(cfg);
	}
	assert_true(n > 0 && n < 1000);

	sbx_e2b_config *cfg = expect_valid(json);
	for (n = 0; n < 1000; n++) {
		char *out = (char *)1;
		sbx__alloc_fail_after(n);
		int rc = sbx_e2b_config_to_json(&out, cfg, NULL);
		sbx__alloc_fail_after(-1);
		if (rc == 0) {
			sbx_free(out);
			break;
		}
		assert_int_equal(rc, SBX_ENOMEM);
		assert_null(out);
	}
	assert_true(n > 0 && n < 1000);
	sbx_e2b_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config__minimal_config_gets_the_defaults),
	    cmocka_unit_test(test_config__every_key_set),
	    cmocka_unit_test(test_config__unknown_key_is_named),
	    cmocka_unit_test(test_config__required_keys),
	    cmocka_unit_test(test_config__wrong_types),
	    cmocka_unit_test(test_config__timeout_range_edges),
	    cmocka_unit_test(test_config__api_url_must_be_http_or_https),
	    cmocka_unit_test(test_config__api_url_as_the_seed_reads_it),
	    cmocka_unit_test(test_config__domain_must_be_a_lowercase_hostname),
	    cmocka_unit_test(test_config__all_problems_are_collected),
	    cmocka_unit_test(test_config__not_an_object_or_not_json),
	    cmocka_unit_test(test_config__reason_is_data),
	    cmocka_unit_test(test_config__depth_is_capped),
	    cmocka_unit_test(test_config__errors_never_contain_the_api_key),
	    cmocka_unit_test(test_config__to_json_redacts_the_key_in_seed_order),
	    cmocka_unit_test(test_config__allocation_failure_torture),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
