/*
 * fuzz_envd_stream: the envd Start stream decoder (src/e2b/envd.c: envelopes
 * -> JSON messages -> start/data/end events, base64 output) on any bytes, fed
 * through sbx__envd_stream_feed() in chunks whose size comes from the input.
 * The first byte also picks the output budget, so both the decoding path and
 * the "no room left" path run. Nothing is sent: the stream is prepared
 * against an unreachable URL and never waited on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/envd.h"
#include "e2b/envelope.h"

static sbx_http *http;

typedef struct events {
	size_t budget, used, starts, ends, outputs;
} events;

static void on_start(uint32_t pid, void *payload)
{
	((events *)payload)->starts++;
	(void)pid;
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

	if (stream != 1 && stream != 2)
		abort();
	for (size_t i = 0; p && i < n; i++)
		sink ^= p[i]; /* ASan checks each byte is readable */
	(void)sink;
	ev->used += n;
	ev->outputs++;
}

static void on_end(bool exited, int exit_code, const char *status, void *payload)
{
	((events *)payload)->ends++;
	if (status)
		(void)strlen(status);
	(void)exited;
	(void)exit_code;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const args[] = {"-c", "true"};
	char url[] = "http://127.0.0.1:9", sid[] = "fuzzbox", tok[] = "tok-0123";
	sbx_envd_target t = {url, sid, tok, "key-4567", NULL, NULL};
	sbx_envd_process proc = {"/bin/sh", args, 2, NULL, 0, NULL, 0, 0, 0};
	events ev = {0};
	sbx_envd_handler h = {on_start, on_output, wants_output, on_end, NULL, &ev, NULL, false};
	sbx_envd_stream *s = NULL;
	sbx_error err = {0};
	size_t chunk, off, n;
	int rc = 0;

	if (size < 1)
		return 0;
	ev.budget = data[0] & 1 ? SIZE_MAX : (size_t)(data[0] >> 1);
	chunk = (size_t)(data[0] >> 4) * 97 + 1;
	if (sbx__envd_start(&s, http, &t, "user", &proc, false, &h, &err) < 0)
		abort();
	for (off = 1; off < size && rc == 0; off += n) {
		n = size - off < chunk ? size - off : chunk;
		rc = sbx__envd_stream_feed(s, data + off, n, &err);
	}
	if (rc < 0 && (err.code != rc || !err.message[0]))
		abort(); /* every failure says why */
	if (strstr(err.message, tok) || strstr(err.message, "key-4567"))
		abort(); /* secrets never appear in errors */
	if (rc == 1 && ev.ends > 0 && ev.starts == (size_t)-1)
		abort();
	sbx__envd_stream_free(s);
	return 0;
}
