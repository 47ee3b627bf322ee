/* Unit tests of e2b/envelope.c (Connect framing) and envd's base64 decoding. */
#include "unit.h"

#include <openssl/evp.h>
#include <sandbox/error.h>

#include "e2b/envd.h"
#include "e2b/envelope.h"
#include "util/alloc.h"
#include "util/base64.h"
#include "util/buf.h"

/* Three frames: a message, an empty message, an end-stream {}. */
static const unsigned char wire3[] = {0x00, 0, 0, 0, 7, '{',  '"', 'a', '"', ':', '1', '}',
                                      0x00, 0, 0, 0, 0, 0x02, 0,   0,   0,   2,   '{', '}'};

typedef struct seen {
	int n;
	unsigned int flags[8];
	char text[8][32];
} seen;

/* Feed `len` bytes, collecting every whole message. */
static int feed_all(sbx_envelope *e, const unsigned char *in, size_t len, seen *s)
{
	size_t used;
	int error;

	while (len > 0) {
		if ((error = sbx__envelope_feed(e, in, len, &used, NULL)) < 0)
			return error;
		in += used;
		len -= used;
		if (e->state == SBX_ENV_READY) {
			s->flags[s->n] = e->flags;
			memcpy(s->text[s->n], e->payload.ptr ? (char *)e->payload.ptr : "",
			       e->payload.len);
			s->text[s->n][e->payload.len] = '\0';
			s->n++;
			sbx__envelope_next(e);
		}
	}
	return 0;
}

static void assert_three(const seen *s)
{
	assert_int_equal(s->n, 3);
	assert_int_equal(s->flags[0], 0);
	assert_string_equal(s->text[0], "{\"a\":1}");
	assert_int_equal(s->flags[1], 0);
	assert_string_equal(s->text[1], "");
	assert_int_equal(s->flags[2], SBX_ENVELOPE_FLAG_END_STREAM);
	assert_string_equal(s->text[2], "{}");
}

static void test_envelope__split_at_every_byte_yields_the_same_messages(void **state)
{
	(void)state;
	for (size_t cut = 0; cut <= sizeof(wire3); cut++) {
		sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
		seen s = {0};
		assert_int_equal(feed_all(&e, wire3, cut, &s), 0);
		assert_int_equal(feed_all(&e, wire3 + cut, sizeof(wire3) - cut, &s), 0);
		assert_three(&s);
		assert_false(sbx__envelope_partial(&e));
		sbx__envelope_dispose(&e);
	}
}

static void test_envelope__byte_by_byte_yields_the_same_messages(void **state)
{
	(void)state;
	sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
	seen s = {0};
	for (size_t i = 0; i < sizeof(wire3); i++)
		assert_int_equal(feed_all(&e, wire3 + i, 1, &s), 0);
	assert_three(&s);
	sbx__envelope_dispose(&e);
}

static void test_envelope__one_feed_stops_after_each_message(void **state)
{
	(void)state;
	sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
	size_t used;
	assert_int_equal(sbx__envelope_feed(&e, wire3, sizeof(wire3), &used, NULL), 0);
	assert_int_equal(used, 12); /* the first frame only */
	assert_int_equal(e.state, SBX_ENV_READY);
	assert_memory_equal(e.payload.ptr, "{\"a\":1}", 7);
	sbx__envelope_next(&e);
	assert_int_equal(sbx__envelope_feed(&e, wire3 + 12, sizeof(wire3) - 12, &used, NULL), 0);
	assert_int_equal(used, 5);
	assert_int_equal(e.state, SBX_ENV_READY);
	assert_int_equal(e.payload.len, 0);
	sbx__envelope_dispose(&e);
}

static void test_envelope__end_stream_with_error_is_passed_through(void **state)
{
	(void)state;
	static const char js[] = "{\"error\":{\"code\":\"not_found\",\"message\":\"x\"}}";
	sbx_buf w = SBX_BUF_INIT(1024);
	sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
	seen s = {0};
	assert_int_equal(sbx__envelope_encode(&w, SBX_ENVELOPE_FLAG_END_STREAM, js, 24), 0);
	assert_int_equal(w.len, 5 + 24);
	assert_int_equal(w.ptr[0], 0x02);
	assert_int_equal(w.ptr[4], 24);
	assert_int_equal(feed_all(&e, w.ptr, w.len, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.flags[0], SBX_ENVELOPE_FLAG_END_STREAM);
	assert_memory_equal(s.text[0], js, 24);
	sbx__envelope_dispose(&e);
	sbx_buf_dispose(&w);
}

static void test_envelope__length_over_cap_fails_before_allocating(void **state)
{
	(void)state;
	static const unsigned char big[] = {0x00, 0x01, 0x00, 0x00, 0x01, 'x'}; /* 16 MiB + 1 */
	sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
	sbx_error err = {0};
	size_t used;
	sbx__alloc_fail_after(0); /* any allocation would now fail with SBX_ENOMEM */
	assert_int_equal(sbx__envelope_feed(&e, big, sizeof(big), &used, &err), SBX_ETOOLARGE);
	sbx__alloc_fail_after(-1);
	assert_int_equal(err.code, SBX_ETOOLARGE);
	assert_null(e.payload.ptr);
	assert_int_equal(used, 5);
	sbx__envelope_dispose(&e);
}

static void test_envelope__length_at_cap_is_accepted(void **state)
{
	(void)state;
	static const unsigned char hdr[] = {0x00, 0, 0, 0, 4};
	sbx_envelope e = SBX_ENVELOPE_INIT(4);
	seen s = {0};
	assert_int_equal(feed_all(&e, hdr, 5, &s), 0);
	assert_int_equal(e.state, SBX_ENV_PAYLOAD);
	assert_true(sbx__envelope_partial(&e));
	assert_int_equal(feed_all(&e, (const unsigned char *)"abcd", 4, &s), 0);
	assert_int_equal(s.n, 1);
	sbx__envelope_dispose(&e);
}

static void test_envelope__unknown_flags_are_a_protocol_error(void **state)
{
	(void)state;
	static const unsigned char flags[] = {0x01, 0x03, 0x04, 0x80};
	for (size_t i = 0; i < sizeof(flags); i++) {
		unsigned char w[] = {flags[i], 0, 0, 0, 2, '{', '}'};
		sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
		sbx_error err = {0};
		size_t used;
		assert_int_equal(sbx__envelope_feed(&e, w, sizeof(w), &used, &err), SBX_EPROTOCOL);
		assert_int_equal(err.code, SBX_EPROTOCOL);
		sbx__envelope_dispose(&e);
	}
}

static void test_envelope__partial_header_is_reported(void **state)
{
	(void)state;
	sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
	seen s = {0};
	assert_false(sbx__envelope_partial(&e));
	assert_int_equal(feed_all(&e, wire3, 3, &s), 0);
	assert_true(sbx__envelope_partial(&e));
	assert_int_equal(s.n, 0);
	sbx__envelope_dispose(&e);
}

static void test_envelope__encode_writes_big_endian_length(void **state)
{
	(void)state;
	sbx_buf w = SBX_BUF_INIT(1024);
	static const char js[] = "{\"process\":{\"cmd\":\"/bin/echo\",\"args\":[\"hi\"]}}";
	assert_int_equal(sbx__envelope_encode(&w, 0, js, sizeof(js) - 1), 0);
	assert_int_equal(w.len, 5 + 45);
	static const unsigned char hdr[] = {0x00, 0x00, 0x00, 0x00, 0x2D};
	assert_memory_equal(w.ptr, hdr, 5);
	assert_memory_equal(w.ptr + 5, js, 45);
	sbx_buf_dispose(&w);
}

static void check_b64(const char *in, const char *want, size_t wantlen)
{
	sbx_buf b = SBX_BUF_INIT(1 << 20);
	assert_int_equal(sbx__base64_decode(&b, in, strlen(in)), 0);
	assert_int_equal(b.len, wantlen);
	if (wantlen)
		assert_memory_equal(b.ptr, want, wantlen);
	sbx_buf_dispose(&b);
}

static void test_base64__padded_unpadded_and_url_safe_decode(void **state)
{
	(void)state;
	check_b64("aGVsbG8K", "hello\n", 6);
	check_b64("aGk=", "hi", 2);
	check_b64("aGk", "hi", 2);
	check_b64("aA==", "h", 1);
	check_b64("aA", "h", 1);
	check_b64("", "", 0);
	check_b64("+/8=", "\xfb\xff", 2);
	check_b64("-_8=", "\xfb\xff", 2);
	check_b64("-_8", "\xfb\xff", 2);
	check_b64("AAA=", "\0\0", 2);
}

static void test_base64__invalid_input_is_a_protocol_error(void **state)
{
	(void)state;
	static const char *bad[] = {"a",    "aGVsb",   "!!!!",     "aG=k", "a===",
	                            "aGk*", "====",    "aGk=a",    "aG k", "aGk\n",
	                            " aGk", "aGk\x80", "aGVs=bG8K"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_buf b = SBX_BUF_INIT(1024);
		assert_int_equal(sbx__base64_decode(&b, bad[i], strlen(bad[i])), SBX_EPROTOCOL);
		sbx_buf_dispose(&b);
	}
}

static void test_base64__every_byte_value_round_trips(void **state)
{
	(void)state;
	unsigned char raw[256], enc[400];
	for (int i = 0; i < 256; i++)
		raw[i] = (unsigned char)i;
	for (size_t n = 0; n <= 256; n += 37) {
		int m = EVP_EncodeBlock(enc, raw, (int)n);
		sbx_buf b = SBX_BUF_INIT(1024);
		assert_int_equal(sbx__base64_decode(&b, (const char *)enc, (size_t)m), 0);
		assert_int_equal(b.len, n);
		if (n)
			assert_memory_equal(b.ptr, raw, n);
		sbx_buf_dispose(&b);
	}
}

/* Every length and both alphabets, against OpenSSL's decoder of the standard one. */
static void test_base64__random_text_decodes_as_openssl_does(void **state)
{
	(void)state;
	unsigned char raw[3000], enc[4100], url[4100], want[3100];
	unsigned seed = 12345;
	for (size_t n = 0; n < sizeof(raw); n += 1 + n / 7) {
		for (size_t i = 0; i < n; i++)
			raw[i] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
		int m = EVP_EncodeBlock(enc, raw, (int)n);
		assert_int_equal(EVP_DecodeBlock(want, enc, m), m / 4 * 3);
		for (int i = 0; i < m; i++) /* URL-safe in every other group, unpadded */
			url[i] = (i / 4) % 2 == 0 ? enc[i]
			         : enc[i] == '+'  ? '-'
			         : enc[i] == '/'  ? '_'
			                          : enc[i];
		size_t um = (size_t)m;
		while (um > 0 && url[um - 1] == '=')
			um--;
		sbx_buf a = SBX_BUF_INIT(1 << 20), b = SBX_BUF_INIT(1 << 20);
		assert_int_equal(sbx__base64_decode(&a, (const char *)enc, (size_t)m), 0);
		assert_int_equal(sbx__base64_decode(&b, (const char *)url, um), 0);
		assert_int_equal(a.len, n);
		assert_int_equal(b.len, n);
		assert_int_equal(sbx__base64_len((const char *)enc, (size_t)m), n);
		if (n) {
			assert_memory_equal(a.ptr, want, n);
			assert_memory_equal(b.ptr, raw, n);
		}
		sbx_buf_dispose(&a);
		sbx_buf_dispose(&b);
	}
}

/* A plain decoder of the same rules, one character at a time, to hold the fast one to. */
static int six(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

static int ref_decode(const unsigned char *in, size_t len, unsigned char *out, size_t *outlen)
{
	size_t n = len, o = 0;
	unsigned acc = 0, bits = 0;

	while (n > 0 && len - n < 2 && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return SBX_EPROTOCOL;
	for (size_t i = 0; i < n; i++) {
		int v = six(in[i]);
		if (v < 0)
			return SBX_EPROTOCOL;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	*outlen = o;
	return 0;
}

/* Every length to 700 and some long ones, each valid and with one byte made any other value at
 * any place: the decoder (32 characters a step where the CPU has AVX2) and the plain one agree
 * on the bytes and on the refusal, and sbx__base64_valid on which texts are taken. */
static void test_base64__any_byte_anywhere_as_the_plain_decoder(void **state)
{
	static const char chars[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_";
	unsigned char text[9000], want[7000];
	unsigned seed = 777;
	(void)state;

	for (size_t n = 0; n < sizeof(text) - 8; n += n < 700 ? 1 : 997) {
		for (size_t i = 0; i < n; i++) { /* URL-safe characters too, here and there */
			seed = seed * 1103515245u + 12345u;
			text[i] = (unsigned char)chars[(seed >> 16) % (i % 5 == 0 ? 66 : 64)];
		}
		size_t len = n;
		if (n % 4 == 2 && (seed & 1)) {
			text[len++] = '=';
			text[len++] = '=';
		}
		for (int round = 0; round < 6; round++) {
			unsigned char keep = 0;
			size_t at = 0, wantlen = 0;
			if (round > 0 && len > 0) {
				seed = seed * 1103515245u + 12345u;
				at = (seed >> 8) % len;
				keep = text[at];
				text[at] = (unsigned char)(seed >> 20);
			}
			int rc = ref_decode(text, len, want, &wantlen);
			sbx_buf b = SBX_BUF_INIT(1 << 20);
			assert_int_equal(sbx__base64_decode(&b, (const char *)text, len), rc);
			assert_int_equal(sbx__base64_valid((const char *)text, len), rc == 0);
			if (rc == 0) {
				assert_int_equal(b.len, wantlen);
				if (wantlen)
					assert_memory_equal(b.ptr, want, wantlen);
			} else {
				assert_int_equal(b.len, 0);
			}
			sbx_buf_dispose(&b);
			if (round > 0 && len > 0)
				text[at] = keep;
		}
	}
}

static void test_base64__a_refused_text_appends_nothing(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(1024);
	assert_int_equal(sbx_buf_puts(&b, "x"), 0);
	assert_int_equal(sbx__base64_decode(&b, "aGVsbG8K!GVsbG8K", 16), SBX_EPROTOCOL);
	assert_int_equal(b.len, 1);
	assert_int_equal(sbx__base64_decode(&b, "aGk==", 5), 0); /* one "=" more than needed */
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.ptr, "xhi", 3);
	sbx_buf_dispose(&b);
}

static void test_base64__appends_after_existing_bytes(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(1024);
	assert_int_equal(sbx_buf_puts(&b, "x"), 0);
	assert_int_equal(sbx__base64_decode(&b, "aGk=", 4), 0);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.ptr, "xhi", 4);
	sbx_buf_dispose(&b);
}

static void test_envelope__allocation_failure_is_nomem_and_resumable(void **state)
{
	(void)state;
	sbx_envelope e = SBX_ENVELOPE_INIT(SBX_MAX_ENVELOPE);
	sbx_error err = {0};
	size_t used;
	sbx__alloc_fail_after(0);
	assert_int_equal(sbx__envelope_feed(&e, wire3, sizeof(wire3), &used, &err), SBX_ENOMEM);
	sbx__alloc_fail_after(-1);
	assert_int_equal(err.code, SBX_ENOMEM);
	assert_int_equal(used, 5); /* the header was taken, the payload bytes were not */
	seen s = {0};
	assert_int_equal(feed_all(&e, wire3 + used, sizeof(wire3) - used, &s), 0);
	assert_int_equal(s.n, 3);
	sbx__envelope_dispose(&e);
}

static void test_base64__allocation_failure_is_nomem(void **state)
{
	(void)state;
	sbx_buf b = SBX_BUF_INIT(1024);
	sbx__alloc_fail_after(0);
	assert_int_equal(sbx__base64_decode(&b, "aGVsbG8K", 8), SBX_ENOMEM);
	assert_int_equal(sbx__base64_decode(&b, "aGk", 3), SBX_ENOMEM); /* unpadded */
	sbx__alloc_fail_after(-1);
	assert_int_equal(b.len, 0);
	sbx_buf_dispose(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_envelope__split_at_every_byte_yields_the_same_messages),
	    cmocka_unit_test(test_envelope__byte_by_byte_yields_the_same_messages),
	    cmocka_unit_test(test_envelope__one_feed_stops_after_each_message),
	    cmocka_unit_test(test_envelope__end_stream_with_error_is_passed_through),
	    cmocka_unit_test(test_envelope__length_over_cap_fails_before_allocating),
	    cmocka_unit_test(test_envelope__length_at_cap_is_accepted),
	    cmocka_unit_test(test_envelope__unknown_flags_are_a_protocol_error),
	    cmocka_unit_test(test_envelope__partial_header_is_reported),
	    cmocka_unit_test(test_envelope__encode_writes_big_endian_length),
	    cmocka_unit_test(test_base64__padded_unpadded_and_url_safe_decode),
	    cmocka_unit_test(test_base64__invalid_input_is_a_protocol_error),
	    cmocka_unit_test(test_base64__every_byte_value_round_trips),
	    cmocka_unit_test(test_base64__random_text_decodes_as_openssl_does),
	    cmocka_unit_test(test_base64__any_byte_anywhere_as_the_plain_decoder),
	    cmocka_unit_test(test_base64__a_refused_text_appends_nothing),
	    cmocka_unit_test(test_base64__appends_after_existing_bytes),
	    cmocka_unit_test(test_envelope__allocation_failure_is_nomem_and_resumable),
	    cmocka_unit_test(test_base64__allocation_failure_is_nomem),
	};
	return cmocka_run_group_tests_name("envelope", tests, NULL, NULL);
}
