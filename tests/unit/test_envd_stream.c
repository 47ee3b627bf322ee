/*
 * Unit tests of the Start stream's data-event shortcut (src/e2b/envd.c data_fast_path): on the
 * same bytes, split the same way, a stream with the shortcut and one that parses every message
 * with jansson (sbx__envd_stream_no_shortcut) give the same events, the same bytes, the same
 * return codes and the same error texts, over canonical data events and many that are not
 * (escapes, unicode escapes, duplicate keys, whitespace, other keys and orders, wrong types,
 * truncation, bad base64, stray bytes), with a sink, without one, with little room and none.
 */
#include "unit.h"

#include <sandbox/error.h>
#include <stdio.h>
#include <stdlib.h>

#include "e2b/envd.h"
#include "e2b/envelope.h"
#include "util/buf.h"

typedef struct record {
	sbx_buf log;       /* every event, as text, outputs with their bytes */
	sbx_buf kept;      /* the sink's bytes (stdout and the terminal) */
	sbx_buf kept_err;  /* the sink's stderr bytes */
	size_t room, used; /* the budget wants_output and sink answer from */
	bool with_sink, no_wants;
} record;

static void rec_printf(record *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_printf(record *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	assert_int_equal(sbx_buf_vprintf(&r->log, fmt, ap), 0);
	va_end(ap);
}

static void on_start(uint32_t pid, void *payload)
{
	rec_printf(payload, "start %u\n", (unsigned)pid);
}

static bool wants_output(void *payload)
{
	const record *r = payload;
	return r->used < r->room;
}

static void on_output(int stream, const unsigned char *p, size_t n, void *payload)
{
	record *r = payload;
	rec_printf(r, "out %d %zu %s:", stream, n, p ? "bytes" : "dropped");
	if (p)
		assert_int_equal(sbx_buf_put(&r->log, p, n), 0);
	rec_printf(r, "\n");
	r->used += n;
}

static sbx_buf *sink(int stream, size_t n, void *payload)
{
	record *r = payload;
	if (r->used > r->room || n > r->room - r->used)
		return NULL;
	return stream == 2 ? &r->kept_err : &r->kept;
}

/* The same line on_output writes, from the bytes the stream decoded onto the sink. */
static void stored(int stream, size_t n, void *payload)
{
	record *r = payload;
	const sbx_buf *b = stream == 2 ? &r->kept_err : &r->kept;
	rec_printf(r, "out %d %zu bytes:", stream, n);
	assert_true(b->len >= n);
	assert_int_equal(sbx_buf_put(&r->log, b->ptr + b->len - n, n), 0);
	rec_printf(r, "\n");
	r->used += n;
}

static void on_end(bool exited, int exit_code, const char *status, void *payload)
{
	rec_printf(payload, "end %d %d %s\n", exited, exit_code, status ? status : "(none)");
}

typedef struct side {
	record r;
	sbx_envd_stream *s;
} side;

static sbx_http *http;
static char url[] = "http://127.0.0.1:9", sid[] = "unitbox", tok[] = "tok-0123";
static sbx_envd_target target = {url, sid, tok, "key-4567", NULL, NULL};

static void side_open(side *sd, size_t room, bool with_sink, bool no_wants, bool shortcut)
{
	static const char *const args[] = {"-c", "true"};
	sbx_envd_process proc = {"/bin/sh", args, 2, NULL, 0, NULL, 0, 0, 0};
	sbx_envd_handler h = {.on_start = on_start,
	                      .on_output = on_output,
	                      .wants_output = no_wants ? NULL : wants_output,
	                      .on_end = on_end,
	                      .payload = &sd->r,
	                      .sink = with_sink ? sink : NULL,
	                      .stored = with_sink ? stored : NULL};
	sbx_error err = {0};

	memset(sd, 0, sizeof(*sd));
	sbx_buf_init(&sd->r.log, 64u << 20);
	sbx_buf_init(&sd->r.kept, 64u << 20);
	sbx_buf_init(&sd->r.kept_err, 64u << 20);
	sd->r.room = room;
	sd->r.with_sink = with_sink;
	sd->r.no_wants = no_wants;
	assert_int_equal(sbx__envd_start(&sd->s, http, &target, "user", &proc, false, &h, &err), 0);
	if (!shortcut)
		sbx__envd_stream_no_shortcut(sd->s);
}

static void side_close(side *sd)
{
	sbx__envd_stream_free(sd->s);
	sbx_buf_dispose(&sd->r.log);
	sbx_buf_dispose(&sd->r.kept);
	sbx_buf_dispose(&sd->r.kept_err);
}

/* Feed `wire` to both sides in chunks of `chunk` bytes; both must say and do the same. */
static void compare(const sbx_buf *wire, size_t chunk, size_t room, bool with_sink, bool no_wants)
{
	side a, b;
	sbx_error ea = {0}, eb = {0};
	int ra = 0, rb = 0;

	side_open(&a, room, with_sink, no_wants, true);
	side_open(&b, room, with_sink, no_wants, false);
	for (size_t off = 0; off < wire->len && ra == 0; off += chunk) {
		size_t n = wire->len - off < chunk ? wire->len - off : chunk;
		ra = sbx__envd_stream_feed(a.s, wire->ptr + off, n, &ea);
		rb = sbx__envd_stream_feed(b.s, wire->ptr + off, n, &eb);
		assert_int_equal(ra, rb);
	}
	assert_int_equal(ea.code, eb.code);
	assert_string_equal(ea.message, eb.message);
	assert_int_equal(a.r.log.len, b.r.log.len);
	if (a.r.log.len)
		assert_memory_equal(a.r.log.ptr, b.r.log.ptr, a.r.log.len);
	assert_int_equal(a.r.kept.len, b.r.kept.len);
	if (a.r.kept.len)
		assert_memory_equal(a.r.kept.ptr, b.r.kept.ptr, a.r.kept.len);
	assert_int_equal(a.r.used, b.r.used);
	side_close(&a);
	side_close(&b);
}

static unsigned rnd_state = 20261202;

static unsigned rnd(unsigned below)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % below;
}

static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_";

/* Random base64 text of about n characters (valid unless n % 4 == 1), maybe padded. */
static void put_b64(sbx_buf *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sbx_buf_put(m, &b64_chars[rnd(64 + 2 * (i % 7 == 0))], 1), 0);
	if (n % 4 == 2 && rnd(2))
		assert_int_equal(sbx_buf_puts(m, "=="), 0);
	else if (n % 4 == 3 && rnd(2))
		assert_int_equal(sbx_buf_puts(m, "="), 0);
}

static size_t some_len(void)
{
	switch (rnd(6)) {
	case 0:
		return rnd(8);
	case 1:
		return rnd(100);
	case 2:
		return 4 * rnd(200);
	case 3:
		return 32 + rnd(64);
	case 4:
		return 44000 + rnd(8);
	default:
		return rnd(3000);
	}
}

/* One message: a data event in the shape envd writes, or one of the shapes it might not. */
static void make_message(sbx_buf *m)
{
	static const char *const keys[] = {"stdout", "stderr", "pty"};
	static const char *const odd[] = {
	    "{\"event\":{\"start\":{\"pid\":42}}}",
	    "{\"event\":{\"start\":{\"pid\":\"17\"}}}",
	    "{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 3\",\"exitCode\":3}}}",
	    "{\"event\":{\"end\":{\"exitCode\":\"x\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":5}}}",
	    "{\"event\":{\"data\":{\"stdout\":null}}}",
	    "{\"event\":{\"data\":{\"stdout\":[\"QQ==\"]}}}",
	    "{\"event\":{\"data\":{}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\",\"stdout\":\"Qg==\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\"}},\"event\":{\"data\":{\"stderr\":\"Qg==\"}}"
	    "}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\",\"stderr\":\"Qg==\"}}}",
	    "{\"event\":{\"data\":{\"stderr\":\"Qg==\",\"stdout\":\"QQ==\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"\\u0051\\u0051==\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ\\u003d\\u003d\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"\\/\\/8=\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"Q\\\"Q==\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ\\u0000\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\"}},\"x\":1}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\"} }}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\"}}} ",
	    " {\"event\":{\"data\":{\"stdout\":\"QQ==\"}}}",
	    "{\"event\": {\"data\":{\"stdout\":\"QQ==\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"QQ==\"}}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"\"}}}",
	    "{\"event\":{\"data\":{\"pty\":\"\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"}}}",
	    "{\"event\":{\"data\":{\"stdout\":\"\"}}}\"}}}",
	    "{\"event\":{\"keepalive\":{}}}",
	    "[]",
	    "{}",
	};
	size_t at, n;
	unsigned kind = rnd(10);

	sbx_buf_clear(m);
	if (kind == 0) {
		assert_int_equal(sbx_buf_puts(m, odd[rnd(sizeof(odd) / sizeof(odd[0]))]), 0);
		return;
	}
	assert_int_equal(sbx_buf_printf(m, "{\"event\":{\"data\":{\"%s\":\"", keys[rnd(3)]), 0);
	put_b64(m, some_len());
	assert_int_equal(sbx_buf_puts(m, "\"}}}"), 0);
	switch (kind) {
	case 1: /* one byte of the text (or of the frame) replaced by any byte */
		at = rnd((unsigned)m->len);
		m->ptr[at] = (unsigned char)rnd(256);
		break;
	case 2: /* a character of the text written as an escape */
		n = m->len - 4;
		at = 28 + rnd((unsigned)(n > 28 ? n - 28 : 1));
		if (at < n && m->ptr[at] != '=') {
			char esc[8];
			snprintf(esc, sizeof(esc), "\\u%04x", m->ptr[at]);
			sbx_buf b = SBX_BUF_INIT(64u << 20);
			assert_int_equal(sbx_buf_put(&b, m->ptr, at), 0);
			assert_int_equal(sbx_buf_puts(&b, rnd(2) ? esc : "\\/"), 0);
			assert_int_equal(sbx_buf_put(&b, m->ptr + at + 1, m->len - at - 1), 0);
			sbx_buf_clear(m);
			assert_int_equal(sbx_buf_put(m, b.ptr, b.len), 0);
			sbx_buf_dispose(&b);
		}
		break;
	case 3: /* cut short */
		m->len = rnd((unsigned)m->len + 1);
		break;
	default: /* as envd writes it */
		break;
	}
}

/* Messages as envelopes, maybe an end-stream one at the end. */
static void make_wire(sbx_buf *wire, unsigned messages)
{
	sbx_buf m = SBX_BUF_INIT(64u << 20);

	sbx_buf_clear(wire);
	for (unsigned i = 0; i < messages; i++) {
		make_message(&m);
		assert_int_equal(sbx__envelope_encode(wire, 0, m.ptr, m.len), 0);
	}
	if (rnd(2))
		assert_int_equal(sbx__envelope_encode(wire, SBX_ENVELOPE_FLAG_END_STREAM, "{}", 2),
		                 0);
	sbx_buf_dispose(&m);
}

static void test_envd_stream__shortcut_and_jansson_agree_on_every_shape(void **state)
{
	sbx_buf wire = SBX_BUF_INIT(256u << 20);
	static const size_t chunks[] = {1, 7, 4096, 16384, SIZE_MAX};
	(void)state;

	for (int i = 0; i < 1500; i++) {
		make_wire(&wire, 1 + rnd(6));
		size_t chunk = chunks[rnd(sizeof(chunks) / sizeof(chunks[0]))];
		if (chunk == 1 && wire.len > 4096)
			chunk = 4096; /* a byte at a time over 44 KiB frames: slow, nothing new */
		size_t room = rnd(4) == 0 ? rnd(2000) : SIZE_MAX / 2;
		compare(&wire, chunk, room, rnd(2), rnd(8) == 0);
	}
	sbx_buf_dispose(&wire);
}

/* The canonical event takes the shortcut: decoded onto the sink, the same bytes either way. */
static void test_envd_stream__canonical_event_decodes_onto_the_sink(void **state)
{
	static const char msg[] = "{\"event\":{\"data\":{\"stdout\":\"aGVsbG8K\"}}}";
	sbx_buf wire = SBX_BUF_INIT(1024);
	sbx_error err = {0};
	side a;
	(void)state;

	assert_int_equal(sbx__envelope_encode(&wire, 0, msg, sizeof(msg) - 1), 0);
	side_open(&a, 1000, true, false, true);
	assert_int_equal(sbx__envd_stream_feed(a.s, wire.ptr, wire.len, &err), 0);
	assert_int_equal(a.r.kept.len, 6);
	assert_memory_equal(a.r.kept.ptr, "hello\n", 6);
	assert_string_equal((const char *)a.r.log.ptr, "out 1 6 bytes:hello\n\n");
	side_close(&a);
	compare(&wire, SIZE_MAX, 1000, true, false);
	compare(&wire, SIZE_MAX, 3, true, false); /* no room for all 6: on_output, truncated */
	compare(&wire, 5, 0, false, false);       /* no room at all: the length only */
	sbx_buf_dispose(&wire);
}

/* A control byte inside the text is no base64 and no JSON: jansson's word on it, both ways. */
static void test_envd_stream__raw_control_byte_is_invalid_json_both_ways(void **state)
{
	static const char msg[] = "{\"event\":{\"data\":{\"stdout\":\"aGVs\nbG8K\"}}}";
	sbx_buf wire = SBX_BUF_INIT(1024);
	sbx_error err = {0};
	side a;
	(void)state;

	assert_int_equal(sbx__envelope_encode(&wire, 0, msg, sizeof(msg) - 1), 0);
	side_open(&a, 1000, true, false, true);
	assert_int_equal(sbx__envd_stream_feed(a.s, wire.ptr, wire.len, &err), SBX_EPROTOCOL);
	assert_string_equal(err.message,
	                    "E2B process stream: invalid JSON in a message (at byte 32)");
	side_close(&a);
	compare(&wire, SIZE_MAX, 0, true, false);
	sbx_buf_dispose(&wire);
}

static int setup(void **state)
{
	(void)state;
	return sbx__http_new(&http, NULL);
}

static int teardown(void **state)
{
	(void)state;
	sbx__http_free(http);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_envd_stream__shortcut_and_jansson_agree_on_every_shape),
	    cmocka_unit_test(test_envd_stream__canonical_event_decodes_onto_the_sink),
	    cmocka_unit_test(test_envd_stream__raw_control_byte_is_invalid_json_both_ways),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
