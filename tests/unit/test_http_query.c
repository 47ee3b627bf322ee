/* Unit tests of e2b/api.c: the seed's query encodings and error messages (include/sandbox/error.h).
 */
#include "unit.h"

#include <sandbox/error.h>

#include "e2b/api.h"
#include "util/alloc.h"
#include "util/buf.h"

static void check_enc(int (*fn)(sbx_buf *, const char *, size_t), const char *in, const char *want)
{
	sbx_buf b = SBX_BUF_INIT(4096);
	assert_int_equal(fn(&b, in, strlen(in)), 0);
	assert_string_equal(b.ptr ? (char *)b.ptr : "", want);
	sbx_buf_dispose(&b);
}

static void test_query__encode_uri_component_matches_javascript(void **state)
{
	(void)state;
	check_enc(sbx__uri_component_encode, "abc&def", "abc%26def");
	check_enc(sbx__uri_component_encode, "a b=c/d?", "a%20b%3Dc%2Fd%3F");
	check_enc(sbx__uri_component_encode, "-_.!~*'()", "-_.!~*'()");
	check_enc(sbx__uri_component_encode, "\xc3\xa9", "%C3%A9");
	check_enc(sbx__uri_component_encode, "", "");
}

static void test_query__form_urlencode_matches_url_search_params(void **state)
{
	(void)state;
	check_enc(sbx__form_urlencode, "a b", "a+b");
	check_enc(sbx__form_urlencode, "*-._", "*-._");
	check_enc(sbx__form_urlencode, "~!'()", "%7E%21%27%28%29");
	check_enc(sbx__form_urlencode, "running,paused", "running%2Cpaused");
	check_enc(sbx__form_urlencode, "abc%26def", "abc%2526def");
}

static void test_query__list_query_for_a_name(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(4096);
	assert_int_equal(sbx__e2b_list_query(&b, "conv-1.a_b", NULL), 0);
	assert_string_equal((char *)b.ptr, "metadata=capybara-sandbox-name%3Dconv-1.a_b"
	                                   "&state=running%2Cpaused&limit=100");
	sbx_buf_dispose(&b);
}

static void test_query__list_query_carries_the_next_token_encoded(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(4096);
	assert_int_equal(sbx__e2b_list_query(&b, "n", "MjAyNi0x+Xz/_a=="), 0);
	assert_string_equal((char *)b.ptr, "metadata=capybara-sandbox-name%3Dn"
	                                   "&state=running%2Cpaused&limit=100"
	                                   "&nextToken=MjAyNi0x%2BXz%2F_a%3D%3D");
	sbx_buf_dispose(&b);
}

/* docs/protocol.md "List": user=abc&def travels as user%3Dabc%252526def. */
static void test_query__metadata_value_is_encoded_three_times_on_the_wire(void **state)
{
	(void)state;
	sbx_buf k = SBX_BUF_INIT(256), v = SBX_BUF_INIT(256), pair = SBX_BUF_INIT(256),
	        wire = SBX_BUF_INIT(256);
	assert_int_equal(sbx__uri_component_encode(&k, "user", 4), 0);
	assert_int_equal(sbx__uri_component_encode(&v, "abc&def", 7), 0);
	assert_int_equal(sbx__form_urlencode(&pair, (char *)k.ptr, k.len), 0);
	assert_int_equal(sbx_buf_puts(&pair, "="), 0);
	assert_int_equal(sbx__form_urlencode(&pair, (char *)v.ptr, v.len), 0);
	assert_int_equal(sbx__form_urlencode(&wire, (char *)pair.ptr, pair.len), 0);
	assert_string_equal((char *)wire.ptr, "user%3Dabc%252526def");
	sbx_buf_dispose(&k);
	sbx_buf_dispose(&v);
	sbx_buf_dispose(&pair);
	sbx_buf_dispose(&wire);
}

static void test_error__e2b_404_body_means_not_found(void **state)
{
	(void)state;
	static const char body[] = "{\"code\":404,\"message\":\"Sandbox \\\"x\\\" doesn't exist\"}";
	sbx_error err = {0};
	bool nf = false;
	assert_int_equal(sbx__e2b_http_error(&err, "DELETE /sandboxes/x", 404,
	                                     (const unsigned char *)body, strlen(body), NULL, NULL,
	                                     &nf),
	                 SBX_EHTTP);
	assert_true(nf);
	assert_int_equal(err.http_status, 404);
	assert_string_equal(err.e2b_code, "404");
	assert_string_equal(
	    err.message, "E2B DELETE /sandboxes/x failed: HTTP 404: Sandbox \"x\" doesn't exist");
}

static void test_error__bare_or_html_404_is_not_gone(void **state)
{
	(void)state;
	static const char html[] = "<html><body>Not Found</body></html>";
	static const char str[] = "{\"code\":\"404\",\"message\":\"m\"}";
	sbx_error err = {0};
	bool nf = true;
	sbx__e2b_http_error(&err, "POST /v2/sandboxes/x/connect", 404, (const unsigned char *)html,
	                    strlen(html), NULL, NULL, &nf);
	assert_false(nf);
	assert_string_equal(err.message, "E2B POST /v2/sandboxes/x/connect failed: HTTP 404: "
	                                 "<html><body>Not Found</body></html>");
	sbx_error_clear(&err);
	nf = true;
	sbx__e2b_http_error(&err, "GET /", 404, (const unsigned char *)str, strlen(str), NULL, NULL,
	                    &nf);
	/* code "404", a string: not E2B-format (docs/protocol.md "Conventions") */
	assert_false(nf);
	sbx_error_clear(&err);
	nf = true;
	sbx__e2b_http_error(&err, "GET /", 404, NULL, 0, NULL, NULL, &nf);
	assert_false(nf);
	assert_string_equal(err.message, "E2B GET / failed: HTTP 404");
}

static void test_error__message_is_cut_at_300_bytes_and_secrets_hidden(void **state)
{
	(void)state;
	char body[1000];
	sbx_error err = {0};
	memset(body, 'x', sizeof(body));
	memcpy(body + 10, "e2b_secretkey", 13);
	sbx__e2b_http_error(&err, "GET /", 500, (const unsigned char *)body, sizeof(body),
	                    "e2b_secretkey", NULL, NULL);
	assert_null(strstr(err.message, "secretkey"));
	assert_non_null(strstr(err.message, "[redacted]"));
	/* prefix + 300 bytes of text, 13 of them replaced by "[redacted]" */
	assert_int_equal(strlen(err.message),
	                 strlen("E2B GET / failed: HTTP 500: ") + 300 - 13 + 10);
}

static void test_error__long_hex_runs_are_redacted_as_unknown_tokens(void **state)
{
	(void)state;
	static const char body[] =
	    "{\"code\":500,\"message\":\"token "
	    "c12f22491b9241380de011d82925d18ae8fda703ae8f33e5b03edbe1d3821952"
	    " id i0a1b2c3 uuid 0f8fad5b-d9cb-469f-a165-70867728950e\"}";
	sbx_error err = {0};
	sbx__e2b_http_error(&err, "GET /", 500, (const unsigned char *)body, strlen(body), NULL,
	                    NULL, NULL);
	assert_string_equal(err.message, "E2B GET / failed: HTTP 500: token [redacted] id i0a1b2c3 "
	                                 "uuid 0f8fad5b-d9cb-469f-a165-70867728950e");
}

static void test_error__non_string_message_falls_back_to_the_text(void **state)
{
	(void)state;
	static const char body[] = "{\"code\":500,\"message\":7}";
	sbx_error err = {0};
	sbx__e2b_http_error(&err, "GET /", 500, (const unsigned char *)body, strlen(body), NULL,
	                    NULL, NULL);
	assert_string_equal(err.message,
	                    "E2B GET / failed: HTTP 500: {\"code\":500,\"message\":7}");
	assert_string_equal(err.e2b_code, "500");
}

static void test_query__list_query_fails_cleanly_at_every_allocation(void **state)
{
	(void)state;
	int rc = -1;
	for (long n = 0; rc != 0 && n < 100; n++) {
		sbx_buf b = SBX_BUF_INIT(4096);
		sbx__alloc_fail_after(n);
		rc = sbx__e2b_list_query(&b, "name", "tok");
		sbx__alloc_fail_after(-1);
		assert_true(rc == 0 || rc == SBX_ENOMEM);
		sbx_buf_dispose(&b); /* nothing else may leak (ASan builds check) */
	}
	assert_int_equal(rc, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_query__encode_uri_component_matches_javascript),
	    cmocka_unit_test(test_query__form_urlencode_matches_url_search_params),
	    cmocka_unit_test(test_query__list_query_for_a_name),
	    cmocka_unit_test(test_query__list_query_carries_the_next_token_encoded),
	    cmocka_unit_test(test_query__metadata_value_is_encoded_three_times_on_the_wire),
	    cmocka_unit_test(test_query__list_query_fails_cleanly_at_every_allocation),
	    cmocka_unit_test(test_error__e2b_404_body_means_not_found),
	    cmocka_unit_test(test_error__bare_or_html_404_is_not_gone),
	    cmocka_unit_test(test_error__message_is_cut_at_300_bytes_and_secrets_hidden),
	    cmocka_unit_test(test_error__long_hex_runs_are_redacted_as_unknown_tokens),
	    cmocka_unit_test(test_error__non_string_message_falls_back_to_the_text),
	};
	return cmocka_run_group_tests_name("http_query", tests, NULL, NULL);
}
