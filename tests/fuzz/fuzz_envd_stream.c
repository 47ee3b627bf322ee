/*
 * fuzz_envd_stream: the envd Start stream decoder (src/e2b/envd.c: envelopes
 * -> JSON messages -> start/data/end events, base64 output) on any bytes, fed
 * through sbx__envd_stream_feed() in chunks whose size comes from the input.
 * The first byte also picks the output budget, so both the decoding path and
 * the "no room left" path run, and whether output is decoded onto a sink. Each
 * input runs twice, with the data events' shortcut and with every message
 * through jansson: the events, their bytes, the return code and the error text
 * must be the same. Nothing is sent: the stream is prepared against an
 * unreachable URL and never waited on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/envd.h"
#include "e2b/envelope.h"

static sbx_http *http;

typedef struct events {
	size_t budget, used, starts, ends, outputs;
	uint64_t digest; /* FNV-1a over every event and its bytes, in order */
	sbx_buf kept;    /* the sink */
} events;

static void mix(events *ev, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		ev->digest = (ev->digest ^ b[i]) * 0x100000001b3ull;
}

static void on_start(uint32_t pid, void *payload)
{
	((events *)payload)->starts++;
	mix(payload, "S", 1);
	mix(payload, &pid, sizeof(pid));
}

static bool wants_output(void *payload)
{
	events *ev = payload;
	return ev->used < ev->budget;
}

static void on_output(int stream, const unsigned char *p, size_t n, void *payload)
{
	events *ev = payload;
	volatile unsigned char sink = 0;

	if (stream < 1 || stream > 3) /* stdout, stderr, a terminal */
		abort();
	for (size_t i = 0; p && i < n; i++)
		sink ^= p[i]; /* ASan checks each byte is readable */
	(void)sink;
	mix(ev, "O", 1);
	mix(ev, &stream, sizeof(stream));
	mix(ev, &n, sizeof(n));
	if (p)
		mix(ev, p, n);
	ev->used += n;
	ev->outputs++;
}

static sbx_buf *to_sink(int stream, size_t n, void *payload)
{
	events *ev = payload;
	(void)stream;
	return ev->used > ev->budget || n > ev->budget - ev->used ? NULL : &ev->kept;
}

/* As on_output with the bytes the stream decoded onto the sink. */
static void stored(int stream, size_t n, void *payload)
{
	events *ev = payload;
	if (n > ev->kept.len)
		abort();
	on_output(stream, ev->kept.ptr + ev->kept.len - n, n, payload);
}

static void on_end(bool exited, int exit_code, const char *status, void *payload)
{
	((events *)payload)->ends++;
	mix(payload, "E", 1);
	mix(payload, &exited, sizeof(exited));
	mix(payload, &exit_code, sizeof(exit_code));
	if (status)
		mix(payload, status, strlen(status) + 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (sbx__http_new(&http, NULL) < 0)
		abort();
	return 0;
}

/* One run of the input; `shortcut` false: every message through jansson. */
static int run(const uint8_t *data, size_t size, bool shortcut, events *ev, sbx_error *err)
{
	static const char *const args[] = {"-c", "true"};
	char url[] = "http://127.0.0.1:9", sid[] = "fuzzbox", tok[] = "tok-0123";
	sbx_envd_target t = {url, sid, tok, "key-4567", NULL, NULL};
	sbx_envd_process proc = {"/bin/sh", args, 2, NULL, 0, NULL, 0, 0, 0};
	sbx_envd_handler h = {.on_start = on_start,
	                      .on_output = on_output,
	                      .wants_output = wants_output,
	                      .on_end = on_end,
	                      .payload = ev,
	                      .sink = data[0] & 2 ? to_sink : NULL,
	                      .stored = data[0] & 2 ? stored : NULL};
	sbx_envd_stream *s = NULL;
	size_t chunk, off, n;
	int rc = 0;

	ev->budget = data[0] & 1 ? SIZE_MAX / 2 : (size_t)(data[0] >> 1);
	ev->digest = 0xcbf29ce484222325ull;
	sbx_buf_init(&ev->kept, SBX_MAX_ENVELOPE);
	chunk = (size_t)(data[0] >> 4) * 97 + 1;
	if (sbx__envd_start(&s, http, &t, "user", &proc, false, &h, err) < 0)
		abort();
	if (!shortcut)
		sbx__envd_stream_no_shortcut(s);
	for (off = 1; off < size && rc == 0; off += n) {
		n = size - off < chunk ? size - off : chunk;
		rc = sbx__envd_stream_feed(s, data + off, n, err);
		mix(ev, &rc, sizeof(rc));
	}
	if (rc < 0 && (err->code != rc || !err->message[0]))
		abort(); /* every failure says why */
	if (strstr(err->message, tok) || strstr(err->message, "key-4567"))
		abort(); /* secrets never appear in errors */
	if (rc == 1 && ev->ends > 0 && ev->starts == (size_t)-1)
		abort();
	sbx__envd_stream_free(s);
	sbx_buf_dispose(&ev->kept);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	events a = {0}, b = {0};
	sbx_error ea = {0}, eb = {0};

	if (size < 1)
		return 0;
	if (run(data, size, true, &a, &ea) != run(data, size, false, &b, &eb) ||
	    a.digest != b.digest || a.used != b.used || ea.code != eb.code ||
	    strcmp(ea.message, eb.message) != 0)
		abort(); /* the shortcut must do what jansson's reading does */
	return 0;
}
