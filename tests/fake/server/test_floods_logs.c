/*
 * tests/fake/server/test_floods_logs.c — sizes a client chooses that the server keeps: a
 * Start's fields, the server's own log lines (bounded, control bytes escaped), a build's log
 * (its last MiB). Part of fake_floods_test (main in test_floods.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"
#include "floods_test.h"

/* ---- sizes of a Start ------------------------------------------------------------------------ */

/* process.Process/Start of `sh -c true` with the given tag, cwd and second argument (NULL: none):
 * the end-of-stream JSON when it carries an error (new reference), else NULL with *ran whether
 * the process exited 0. */
static json_t *start_with(fks *s, fks_box *b, const char *tag, const char *cwd, const char *arg,
                          bool *ran)
{
	json_t *m = json_pack("{s:{s:s,s:[s,s]}}", "process", "cmd", "/bin/sh", "args", "-c",
	                      arg ? "true \"$0\"" : "true");
	if (arg)
		json_array_append_new(json_object_get(json_object_get(m, "process"), "args"),
		                      json_string(arg));
	if (tag)
		json_object_set_new(m, "tag", json_string(tag));
	if (cwd)
		json_object_set_new(json_object_get(m, "process"), "cwd", json_string(cwd));
	char *js = json_dumps(m, JSON_COMPACT);
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/connect+json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fkr *r = fks_req(s, "POST", "/process.Process/Start", h, env, n);
	assert_int_equal(r->status, 200);
	json_t *end = NULL;
	for (size_t o = 0; o + 5 <= r->len;) {
		const unsigned char *f = (const unsigned char *)r->body + o;
		size_t len =
		    ((size_t)f[1] << 24) | ((size_t)f[2] << 16) | ((size_t)f[3] << 8) | f[4];
		assert_true(o + 5 + len <= r->len);
		if (f[0] & 2)
			end = json_loadb((const char *)f + 5, len, 0, NULL);
		o += 5 + len;
	}
	*ran = memmem(r->body, r->len, "exit status 0", 13) != NULL;
	json_t *e = json_incref(json_object_get(end, "error"));
	json_decref(end);
	fkr_free(r);
	free(env);
	free(js);
	json_decref(m);
	return e;
}

static void assert_refused(json_t *e, const char *message)
{
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "code")), "invalid_argument");
	assert_string_equal(json_string_value(json_object_get(e, "message")), message);
	json_decref(e);
}

/* Before: a Start took a 1 MB tag (kept with the process, shown by every List). Now a tag is at
 * most 256 bytes, a cwd 4,095, one argument or "NAME=value" 131,071 (execve's MAX_ARG_STRLEN
 * with its NUL: 131,072 answered E2BIG), all of them 2 MiB (ARG_MAX): past each, invalid_argument
 * with the sizes. */
void test_floods__start_fields_are_bounded(void **state)
{
	(void)state;
	fks s;
	fks_box b;
	bool ran = false;
	start(&s, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	char *t256 = fks_repeat('t', 256), *t257 = fks_repeat('t', 257),
	     *mb = fks_repeat('t', 1 << 20);
	assert_null(start_with(&s, &b, t256, NULL, NULL, &ran));
	assert_true(ran);
	assert_refused(start_with(&s, &b, t257, NULL, NULL, &ran),
	               "tag is 257 bytes, more than 256");
	assert_refused(start_with(&s, &b, mb, NULL, NULL, &ran),
	               "tag is 1048576 bytes, more than 256");
	char *cwd = fks_repeat('d', 4096);
	cwd[0] = '/';
	assert_refused(start_with(&s, &b, NULL, cwd, NULL, &ran),
	               "process.cwd is 4096 bytes, more than 4095");
	char *arg = fks_repeat('a', 131071), *arg1 = fks_repeat('a', 131072);
	assert_null(start_with(&s, &b, NULL, NULL, arg, &ran));
	assert_true(ran);
	assert_refused(start_with(&s, &b, NULL, NULL, arg1, &ran),
	               "process.args[2] is 131072 bytes, more than 131071");
	free(t256);
	free(t257);
	free(mb);
	free(cwd);
	free(arg);
	free(arg1);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

/* ---- the server's own log lines ------------------------------------------------------------- */

/* Before: every request's line carried its whole path, and unauthenticated noise had no bound
 * (a flood filled a log file). Now a line shows at most 200 bytes of the path, then
 * "...(N bytes)", and at most 20 lines a second of 401s and 403s: the others are summed up in
 * "N more refused requests not shown" lines (exactly: shown + summed = sent). */
void test_floods__log_lines_are_bounded(void **state)
{
	(void)state;
	enum { LONG = 200, REFUSED = 500 };
	fks s;
	const char *flags[] = {"--api-key", KEY, NULL}; /* not --quiet */
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	char *path = fks_repeat('x', 2000); /* fks_req's URL holds about 2 KiB */
	path[0] = '/';
	for (int i = 0; i < LONG; i++) {
		fkr *r = fks_req(&s, "GET", path, NULL, NULL, 0);
		assert_int_equal(r->status, 404);
		fkr_free(r);
	}
	for (int i = 0; i < REFUSED; i++) {
		fkr *r = fks_req(&s, "GET", "/v2/sandboxes", NULL, NULL, 0);
		assert_int_equal(r->status, 401);
		fkr_free(r);
	}
	fk_sleep_ms(1100); /* a request in a later second writes the last second's sum */
	const char *h[] = {"X-API-Key: " KEY, NULL};
	fkr *r = fks_req(&s, "GET", "/v2/sandboxes", h, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	char out[160], line[4096];
	snprintf(out, sizeof(out), "%s/out", s.dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	int long_lines = 0, refused_lines = 0;
	long summed = 0, longest = 0;
	while (fgets(line, sizeof(line), f)) {
		long n = (long)strlen(line);
		unsigned k;
		if (strstr(line, " 404\n")) {
			long_lines++;
			assert_non_null(strstr(line, "...(2000 bytes) 404"));
			longest = n > longest ? n : longest;
		} else if (!strcmp(line, "fake-e2b: GET /v2/sandboxes 401\n")) {
			refused_lines++;
		} else if (sscanf(line, "fake-e2b: %u more refused requests not shown", &k) == 1) {
			summed += k;
		}
	}
	fclose(f);
	print_message("%d long-path lines (longest %ld bytes); %d refusals shown, %ld summed\n",
	              long_lines, longest, refused_lines, summed);
	assert_int_equal(long_lines, LONG);
	assert_true(longest <= 260);
	assert_true(refused_lines < REFUSED);
	assert_int_equal(refused_lines + summed, REFUSED);
	free(path);
	assert_int_equal(fks_stop(&s), 0);
}

/* ---- build logs ---------------------------------------------------------------------------- */

static json_t *get_ok(fks *s, const char *path)
{
	const char *h[] = {"X-API-Key: " KEY, NULL};
	fkr *r = fks_req(s, "GET", path, h, NULL, 0);
	assert_int_equal(r->status, 200);
	json_t *j = json_incref(r->json);
	fkr_free(r);
	return j;
}

static size_t log_cost(json_t *e)
{
	return strlen(json_string_value(json_object_get(e, "message"))) + 64;
}

/* Before: a build kept up to 20,000 lines of up to 4 KiB each (~100 MB with their JSON) for
 * as long as the server ran, for every build. Now each build keeps 1 MiB (each line its message
 * and 64 bytes), the oldest lines dropped first; its first entry then says how many went, and
 * logsOffset counts them: a RUN printing 100,000 lines keeps its last ones and its end. */
void test_floods__a_build_log_keeps_its_last_mib(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	const char *req = "{\"name\":\"loglimit\"}";
	fkr *r = fks_req(&s, "POST", "/v3/templates", h, req, strlen(req));
	assert_int_equal(r->status, 202);
	char tid[64], bid[64], path[256];
	snprintf(tid, sizeof(tid), "%s", json_string_value(json_object_get(r->json, "templateID")));
	snprintf(bid, sizeof(bid), "%s", json_string_value(json_object_get(r->json, "buildID")));
	fkr_free(r);
	const char *spec = "{\"fromTemplate\":\"base\",\"steps\":[{\"type\":\"RUN\","
	                   "\"args\":[\"seq 1 100000\"]}]}";
	snprintf(path, sizeof(path), "/v2/templates/%s/builds/%s", tid, bid);
	r = fks_req(&s, "POST", path, h, spec, strlen(spec));
	assert_int_equal(r->status, 202);
	fkr_free(r);
	const char *st = NULL;
	for (long t0 = fk_mono_ms(); fk_mono_ms() - t0 < 240000; fk_sleep_ms(200)) {
		snprintf(path, sizeof(path), "/templates/%s/builds/%s/status?limit=1", tid, bid);
		json_t *j = get_ok(&s, path);
		st = strcmp(json_string_value(json_object_get(j, "status")), "ready") ? NULL
		                                                                      : "ready";
		json_decref(j);
		if (st)
			break;
	}
	assert_non_null(st);
	snprintf(path, sizeof(path), "/templates/%s/builds/%s/status?limit=1", tid, bid);
	json_t *j = get_ok(&s, path);
	json_t *marker = json_array_get(json_object_get(j, "logEntries"), 0);
	unsigned long dropped = 0;
	assert_string_equal(json_string_value(json_object_get(marker, "level")), "warn");
	assert_int_equal(sscanf(json_string_value(json_object_get(marker, "message")),
	                        "%lu earlier lines of this build were dropped", &dropped),
	                 1);
	assert_non_null(strstr(json_string_value(json_object_get(marker, "message")),
	                       "(a build's log keeps 1048576 bytes, all builds' 33554432)"));
	json_decref(j);
	/* the kept lines, from logsOffset = dropped on: consecutive, to the end */
	size_t bytes = 0, kept = 0;
	long first_n = -1, prev_n = -1;
	json_t *last = NULL;
	for (size_t off = dropped;; off += 100) {
		snprintf(path, sizeof(path),
		         "/templates/%s/builds/%s/status?logsOffset=%zu&limit=100", tid, bid, off);
		j = get_ok(&s, path);
		json_t *page = json_object_get(j, "logEntries"), *e;
		size_t i;
		json_array_foreach(page, i, e)
		{
			bytes += log_cost(e);
			kept++;
			long n;
			if (sscanf(json_string_value(json_object_get(e, "message")),
			           "[builder 1/1] [stdout]: %ld", &n) == 1) {
				if (first_n < 0)
					first_n = n;
				else
					assert_int_equal(n, prev_n + 1);
				prev_n = n;
			}
			json_decref(last);
			last = json_incref(e);
		}
		size_t got = json_array_size(page);
		json_decref(j);
		if (got < 100)
			break;
	}
	print_message("%lu lines dropped, %zu kept (%zu bytes), stdout %ld..%ld\n", dropped, kept,
	              bytes, first_n, prev_n);
	assert_true(bytes <= 1048576);
	assert_true(bytes > 1048576 - 200);
	assert_int_equal(prev_n, 100000);
	/* before the first kept stdout line: the build's 3 first lines and lines 1..first_n-1 */
	assert_int_equal(dropped, 3 + (unsigned long)(first_n - 1));
	assert_non_null(
	    strstr(json_string_value(json_object_get(last, "message")), "Build finished"));
	json_decref(last);
	/* an offset inside the dropped lines gets the marker first */
	snprintf(path, sizeof(path), "/templates/%s/builds/%s/status?logsOffset=%lu&limit=2", tid,
	         bid, dropped - 1);
	j = get_ok(&s, path);
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(json_object_get(j, "logEntries"), 0), "level")),
	                    "warn");
	json_decref(j);
	assert_int_equal(fks_stop(&s), 0);
}

/* A request's method and path reach the server's stderr, which may be the terminal it was
 * started from: their control bytes must not. Sends a method and a path (decoded on the line)
 * holding ESC sequences (clear, retitle), a line break with a forged line, CR, DEL, a UTF-8 C1
 * CSI, a raw 0x9b and a backslash, and checks the exact line. */
void test_floods__log_lines_escape_control_bytes(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--api-key", KEY, NULL}; /* not --quiet */
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	static const char req[] =
	    "G\x1b[2JT /a%1b]0;t%07%0afake-e2b:%20DELETE%20/sandboxes/x%20204%0d%7f%c2%9b%9b%5c "
	    "HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	int fd = fks_tcp_connect(s.port, false, 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	assert_int_equal(fks_read_status(fd, 10000), 404);
	close(fd);
	char out[160];
	snprintf(out, sizeof(out), "%s/out", s.dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	static char text[1 << 16];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *want =
	    "fake-e2b: G\\x1b[2JT /a\\x1b]0;t\\x07\\x0afake-e2b: DELETE /sandboxes/x "
	    "204\\x0d\\x7f\\xc2\\x9b\\x9b\\x5c 404\n";
	const char *line = strstr(text, "fake-e2b: G");
	assert_non_null(line);
	assert_memory_equal(line, want, strlen(want));
	for (size_t i = 0; i < n; i++) /* no control byte in the whole output but line ends */
		if (text[i] != '\n' && ((unsigned char)text[i] < 0x20 || text[i] == 0x7f))
			fail_msg("byte 0x%02x at %zu of the server's stderr",
			         (unsigned char)text[i], i);
	assert_null(strstr(text, "\nfake-e2b: DELETE"));
	assert_int_equal(fks_stop(&s), 0);
}
