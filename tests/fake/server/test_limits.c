/*
 * tests/fake/server/test_limits.c: fake-e2b's server hardening (fake-e2b/README.md
 * "The server's defences"): idle and header timeouts, 10,000 half-open connections
 * do not stop a well-behaved client, a burst of 500 slow connections is no
 * flood, the upload size cap, %00 in ?path=, quoting in Content-Disposition, a
 * symlink loop is 404, /health without the token does not tell whether a
 * sandbox exists, create's metadata and envVars bounds, the unknown-template 404's echo.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fkserver.h"

#define KEY "e2b_limits_test_key"

static const char *g_bin;
static fks g_srv; /* --max-upload-mb 1 */

static int up(void **state)
{
	(void)state;
	const char *flags[] = {"--api-key", KEY, "--max-upload-mb", "1", "--quiet", NULL};
	return fks_up(&g_srv, g_bin, flags);
}

static int down(void **state)
{
	(void)state;
	return fks_stop(&g_srv);
}

/* ---- helpers -------------------------------------------------------------------------------- */

/* A server of its own (no upload cap) and n half-open connections to it from 127.0.0.`src` (0:
 * the kernel's choice), held open until flood_stop(); at least half of them must open. */
typedef struct flood {
	fks s;
	int *fds;
	int n, opened;
} flood;

static void flood_start(flood *f, int n, unsigned src)
{
	fks_need_fds((unsigned long)n + 256);
	fks_start_key(&f->s, g_bin, KEY, NULL);
	f->fds = malloc((size_t)n * sizeof(int));
	assert_non_null(f->fds);
	f->n = n;
	f->opened = 0;
	for (int i = 0; i < n; i++)
		if ((f->fds[i] = fks_tcp_connect(f->s.port, true, src)) >= 0)
			f->opened++;
	assert_true(f->opened > n / 2);
}

static void flood_stop(flood *f)
{
	for (int i = 0; i < f->n; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	free(f->fds);
	assert_int_equal(fks_stop(&f->s), 0);
}

/* GET /v2/sandboxes from 127.0.0.1, answered 200 at its first try; the ms it took. */
static long list_answered_ms(fks *s)
{
	const char *h[] = {"X-API-Key: " KEY, NULL};
	long t0 = fk_mono_ms();
	fkr *r = fks_req(s, "GET", "/v2/sandboxes", h, NULL, 0);
	long took = fk_mono_ms() - t0;
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	return took;
}

/* ---- timeouts and floods -------------------------------------------------------------------- */

static void test_limits__idle_and_slow_header_connections_are_closed(void **state)
{
	(void)state;
	fks s;
	const char *idle[] = {"--idle-timeout-s", "1", NULL};
	fks_start_key(&s, g_bin, KEY, idle);
	int silent = fks_tcp_connect(s.port, false, 0);
	int slow = fks_tcp_connect(s.port, false, 0);
	assert_true(silent >= 0 && slow >= 0);
	const char *part = "GET /health HTTP/1.1\r\nHost: x\r\n"; /* never ends its headers */
	assert_int_equal(write(slow, part, strlen(part)), (ssize_t)strlen(part));
	long a = fks_ms_until_closed(silent, 15000), b = fks_ms_until_closed(slow, 15000);
	assert_true(a >= 0);
	assert_true(b >= 0);
	close(silent);
	close(slow);
	/* a connection in use is not cut: a request after 2 s of idle on a fresh connection
	 * still works because libcurl reconnects; one that keeps talking stays open */
	fkr *r = fks_req(&s, "GET", "/health", NULL, NULL, 0);
	assert_int_equal(r->status, 204);
	fkr_free(r);
	assert_int_equal(fks_stop(&s), 0);
}

static void test_limits__10000_half_open_connections_do_not_stop_a_client(void **state)
{
	(void)state;
	flood f;
	flood_start(&f, 10000, 0);
	/* the attacker holds every socket open; a well-behaved client asks now, and asks again
	 * (every 200 ms) while its connection is refused: the server is at its connection cap
	 * until it has shed the idle ones */
	const char *h[] = {"X-API-Key: " KEY, NULL};
	long t0 = fk_mono_ms(), took = 0;
	int tries = 0;
	fkr *r = NULL;
	do {
		if (r) {
			fkr_free(r);
			struct timespec ts = {0, 200 * 1000000L};
			nanosleep(&ts, NULL);
		}
		r = fks_req(&f.s, "GET", "/v2/sandboxes", h, NULL, 0);
		took = fk_mono_ms() - t0;
		tries++;
	} while (r->curl_rc != 0 && took < 30000);
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 200);
	print_message("client answered %ld ms (%d tries) after %d half-open connections\n", took,
	              tries, f.opened);
	assert_true(took < 30000);
	fkr_free(r);
	flood_stop(&f);
}

/* A client's burst of hundreds of connections is not a flood: 500 connections that wait 1.5 s
 * (three times the flood rule's 0.5 s) before their request are all answered. */
static void test_limits__burst_of_500_slow_connections_is_not_a_flood(void **state)
{
	(void)state;
	enum { N = 500 };
	int fds[N], opened = 0, answered = 0;
	for (int i = 0; i < N; i++)
		if ((fds[i] = fks_tcp_connect(g_srv.port, false, 0)) >= 0)
			opened++;
	struct timespec ts = {1, 500 * 1000000L};
	nanosleep(&ts, NULL);
	const char *req = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0 && write(fds[i], req, strlen(req)) != (ssize_t)strlen(req)) {
			close(fds[i]);
			fds[i] = -1;
		}
	for (int i = 0; i < N; i++) {
		if (fds[i] < 0)
			continue;
		char buf[64];
		size_t got = 0;
		struct pollfd p = {.fd = fds[i], .events = POLLIN};
		while (got < 12 && poll(&p, 1, 60000) > 0) {
			ssize_t n = read(fds[i], buf + got, sizeof(buf) - 1 - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (got >= 12 && !memcmp(buf, "HTTP/1.1 204", 12))
			answered++;
		close(fds[i]);
	}
	print_message("%d of %d connections answered after 1.5 s of silence\n", answered, opened);
	assert_int_equal(opened, N);
	assert_int_equal(answered, N);
}

/* One address flooding the server with half-open connections: a client from another address is
 * answered at its first try (its new connection evicts the flood's longest idle one). */
static void test_limits__one_client_cannot_take_every_connection(void **state)
{
	(void)state;
	flood f;
	flood_start(&f, 10000, 2); /* from 127.0.0.2 */
	long took = list_answered_ms(&f.s);
	print_message("other client answered in %ld ms beside %d connections from one address\n",
	              took, f.opened);
	flood_stop(&f);
}

/* A flood from the client's own address (every local process is 127.0.0.1): 10,000 half-open
 * connections from 127.0.0.1, held open, and a client on 127.0.0.1 is answered at its first try.
 * Before, that address's cap (2,000) refused the client too until the idle ones were shed (3 runs
 * of 5 failed, curl 52 or 56), and an attacker reconnecting as they were shed failed about a
 * third of a client's requests. Now a new connection past 3,000 closes the oldest idle one
 * instead of being refused, and no cap per address is left to refuse it: one of 3,500, which
 * counted the flood's connections the server had cut but not yet closed, is the likeliest cause
 * of the one failure seen on a loaded machine (curl 56: a reset as accepted; fake-e2b/http/
 * daemon.c, CONNECTION_LIMIT). */
static void test_limits__flood_from_the_clients_own_address_does_not_refuse_it(void **state)
{
	(void)state;
	flood f;
	flood_start(&f, 10000, 1); /* from 127.0.0.1 */
	for (int i = 0; i < 5; i++) {
		long took = list_answered_ms(&f.s);
		print_message("client answered in %ld ms beside %d connections from its address\n",
		              took, f.opened);
	}
	flood_stop(&f);
}

/* ---- request limits ------------------------------------------------------------------------- */

static void test_limits__upload_over_the_cap_is_413(void **state)
{
	(void)state;
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	size_t big = (1u << 20) + 4096, small = 512 * 1024;
	char *data = calloc(1, big);
	const char *h[] = {b.hid, b.htok, "Content-Type: application/octet-stream", NULL};
	fkr *r = fks_req(&g_srv, "POST", "/files?path=/tmp/big", h, data, big);
	assert_int_equal(r->status, 413);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 413);
	fkr_free(r);
	r = fks_req(&g_srv, "POST", "/files?path=/tmp/small", h, data, small);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	free(data);
	fks_box_delete(&g_srv, KEY, &b);
}

/* A sandbox of a small disk (--sandbox-disk-mb 16, reported as its diskSizeMB): an upload
 * past it answers 507 in E2B's error shape (envd's NotEnoughSpaceError), and the sandbox takes
 * a small file afterwards. Skips where sandboxes have no disk of their own (no loop devices). */
static void test_limits__upload_past_a_small_disk_is_507(void **state)
{
	(void)state;
	fks srv;
	const char *flags[] = {"--api-key",         KEY,  "--max-upload-mb", "64",
	                       "--sandbox-disk-mb", "16", "--quiet",         NULL};
	assert_int_equal(fks_up(&srv, g_bin, flags), 0);
	fks_box b;
	fks_box_create(&srv, KEY, NULL, &b);
	char img[256];
	snprintf(img, sizeof(img), "%s/state/%s.disk", srv.dir, b.id);
	if (access(img, F_OK) != 0) {
		fks_box_delete(&srv, KEY, &b);
		fks_stop(&srv);
		skip(); /* no per-sandbox disk on this machine: nothing caps it */
	}
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", b.id);
	const char *hk[] = {"X-API-Key: " KEY, NULL};
	fkr *r = fks_req(&srv, "GET", path, hk, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_integer_value(json_object_get(r->json, "diskSizeMB")), 16);
	fkr_free(r);
	size_t big = 32u << 20;
	char *data = malloc(big);
	assert_non_null(data);
	memset(data, 'x', big);
	const char *h[] = {b.hid, b.htok, "Content-Type: application/octet-stream", NULL};
	r = fks_req(&srv, "POST", "/files?path=/tmp/big", h, data, big);
	assert_int_equal(r->status, 507);
	assert_true(json_is_object(r->json));
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 507);
	char msg[128];
	snprintf(msg, sizeof(msg), "attempted to write %zu bytes: not enough disk space available",
	         big);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), msg);
	fkr_free(r);
	/* as envd, what was written stays until the sandbox removes it. The disk is then full or
	 * a few blocks short of it: once writeback has run, ext4 gives back what its delayed
	 * allocation held in reserve, and the files API writes as root, who may use the blocks
	 * kept for root. So a small upload now is refused (507) or lands whole, never a 200
	 * without its bytes (under load it was 200 in about one run in two) */
	r = fks_req(&srv, "POST", "/files?path=/tmp/small", h, data, 4096);
	if (r->status != 507) {
		assert_int_equal(r->status, 200);
		fks_box_sh(&srv, &b, "test $(stat -c %s /tmp/small) -eq 4096");
	}
	fkr_free(r);
	fks_box_sh(&srv, &b, "test $(stat -c %s /tmp/big) -gt 8000000 && rm /tmp/big");
	r = fks_req(&srv, "POST", "/files?path=/tmp/small", h, data, 4096);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	free(data);
	fks_box_delete(&srv, KEY, &b);
	assert_int_equal(fks_stop(&srv), 0);
}

static void test_limits__nul_in_path_is_400(void **state)
{
	(void)state;
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	const char *h[] = {b.hid, b.htok, NULL};
	fkr *r = fks_req(&g_srv, "GET", "/files?path=/etc/hostname%00.txt", h, NULL, 0);
	assert_int_equal(r->status, 400);
	assert_non_null(strstr(r->body, "NUL"));
	fkr_free(r);
	const char *hp[] = {b.hid, b.htok, "Content-Type: application/octet-stream", NULL};
	r = fks_req(&g_srv, "POST", "/files?path=/tmp/a%00b", hp, "x", 1);
	assert_int_equal(r->status, 400);
	fkr_free(r);
	r = fks_req(&g_srv, "GET", "/files?path=/tmp/a&username=ro%00ot", h, NULL, 0);
	assert_int_equal(r->status, 400);
	fkr_free(r);
	fks_box_delete(&g_srv, KEY, &b);
}

static void upload_then_disposition(fks_box *b, const char *qpath, const char *want)
{
	char path[256], buf[512];
	const char *hp[] = {b->hid, b->htok, "Content-Type: application/octet-stream", NULL};
	const char *h[] = {b->hid, b->htok, NULL};
	snprintf(path, sizeof(path), "/files?path=%s", qpath);
	fkr *r = fks_req(&g_srv, "POST", path, hp, "hi", 2);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	r = fks_req(&g_srv, "GET", path, h, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_non_null(fkr_header(r, "Content-Disposition", buf, sizeof(buf)));
	assert_string_equal(buf, want);
	fkr_free(r);
}

static void test_limits__content_disposition_quotes_the_name(void **state)
{
	(void)state;
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	upload_then_disposition(&b, "/tmp/report.txt", "inline; filename=report.txt");
	upload_then_disposition(&b, "/tmp/a%22b%5C.txt", "inline; filename=\"a\\\"b\\\\.txt\"");
	upload_then_disposition(&b, "/tmp/x%3By.txt", "inline; filename=\"x;y.txt\"");
	upload_then_disposition(&b, "/tmp/caf%C3%A9.txt", "inline; filename*=utf-8''caf%C3%A9.txt");
	fks_box_delete(&g_srv, KEY, &b);
}

static void test_limits__symlink_loop_is_not_found(void **state)
{
	(void)state;
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	fks_box_sh(&g_srv, &b, "cd /tmp && ln -s loop loop");
	const char *h[] = {b.hid, b.htok, "Content-Type: application/json", NULL};
	const char *body = "{\"path\":\"/tmp/loop/x\"}";
	fkr *r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/Stat", h, body, strlen(body));
	assert_int_equal(r->status, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	fkr_free(r);
	body = "{\"path\":\"/tmp/loop\"}";
	r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/ListDir", h, body, strlen(body));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	r = fks_req(&g_srv, "GET", "/files?path=/tmp/loop/x", h, NULL, 0);
	assert_int_equal(r->status, 404);
	fkr_free(r);
	fks_box_delete(&g_srv, KEY, &b);
}

/* ListDir's reply is written one entry at a time (no JSON tree of the whole listing): the text
 * is what it was, an empty directory `{}`. */
static void test_limits__listdir_reply_is_written_entry_by_entry(void **state)
{
	(void)state;
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	fks_box_sh(
	    &g_srv, &b,
	    "mkdir -p /tmp/ld/e /tmp/ld/d && touch -d @1700000000 /tmp/ld/d/a /tmp/ld/d/b && "
	    "chmod 0640 /tmp/ld/d/a /tmp/ld/d/b && printf xyz > /tmp/ld/d/b && "
	    "touch -d @1700000000 /tmp/ld/d/b");
	const char *h[] = {b.hid, b.htok, "Content-Type: application/json", NULL};
	const char *body = "{\"path\":\"/tmp/ld/e\"}";
	fkr *r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/ListDir", h, body, strlen(body));
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 2);
	assert_string_equal(r->body, "{}");
	fkr_free(r);
	body = "{\"path\":\"/tmp/ld/d\"}";
	r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/ListDir", h, body, strlen(body));
	assert_int_equal(r->status, 200);
	assert_string_equal(
	    r->body,
	    "{\"entries\":[{\"name\":\"a\",\"type\":\"FILE_TYPE_FILE\",\"path\":\"/tmp/ld/d/a\","
	    "\"mode\":416,\"permissions\":\"-rw-r-----\",\"owner\":\"root\",\"group\":\"root\","
	    "\"modifiedTime\":\"2023-11-14T22:13:20Z\"},"
	    "{\"name\":\"b\",\"type\":\"FILE_TYPE_FILE\",\"path\":\"/tmp/ld/d/b\",\"size\":\"3\","
	    "\"mode\":416,\"permissions\":\"-rw-r-----\",\"owner\":\"root\",\"group\":\"root\","
	    "\"modifiedTime\":\"2023-11-14T22:13:20Z\"}]}");
	fkr_free(r);
	fks_box_delete(&g_srv, KEY, &b);
}

static void test_limits__health_without_token_hides_whether_a_sandbox_exists(void **state)
{
	(void)state;
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	const char *known[] = {b.hid, NULL};
	const char *unknown[] = {"E2b-Sandbox-Id: izzzzzzzzzzzzzzzzzzzz", NULL};
	const char *wrong[] = {b.hid, "X-Access-Token: nope", NULL};
	const char *right[] = {b.hid, b.htok, NULL};
	fkr *r1 = fks_req(&g_srv, "GET", "/health", known, NULL, 0);
	fkr *r2 = fks_req(&g_srv, "GET", "/health", unknown, NULL, 0);
	fkr *r3 = fks_req(&g_srv, "GET", "/health", wrong, NULL, 0);
	fkr *r4 = fks_req(&g_srv, "GET", "/health", right, NULL, 0);
	assert_int_equal(r1->status, 502);
	assert_int_equal(r2->status, 502);
	assert_int_equal(r3->status, 502);
	assert_int_equal(r4->status, 204);
	/* the same body apart from the id the caller sent */
	assert_string_equal(json_string_value(json_object_get(r1->json, "message")),
	                    json_string_value(json_object_get(r2->json, "message")));
	fkr_free(r1);
	fkr_free(r2);
	fkr_free(r3);
	fkr_free(r4);
	fks_box_delete(&g_srv, KEY, &b);
}

/* POST /sandboxes with `body` (consumed); its status, and its message into msg (NULL: none). */
static long create_with(json_t *body, char **msg)
{
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	assert_non_null(text);
	fkr *r = fks_req(&g_srv, "POST", "/sandboxes", h, text, strlen(text));
	free(text);
	long status = r->status;
	const char *m = json_string_value(json_object_get(r->json, "message"));
	*msg = m ? strdup(m) : NULL;
	fkr_free(r);
	return status;
}

/* A create body for an unknown template (so a body within the bounds is answered 404 without
 * making a sandbox) whose `field` is `map`. */
static json_t *create_body(const char *field, json_t *map)
{
	return json_pack("{s:s,s:o}", "templateID", "no-such-template", field, map);
}

static void expect_create(json_t *body, long status, const char *msg)
{
	char *got = NULL;
	assert_int_equal(create_with(body, &got), status);
	assert_non_null(got);
	assert_string_equal(got, msg);
	free(got);
}

static void test_limits__create_metadata_and_env_vars_are_bounded(void **state)
{
	(void)state;
	static const char nf[] = "template 'no-such-template' not found";
	const char *fields[] = {"metadata", "envVars"};
	for (size_t f = 0; f < 2; f++) {
		const char *field = fields[f];
		char want[200];
		/* entries: 1,024 pass, 1,025 do not */
		for (int n = 1024; n <= 1025; n++) {
			json_t *m = json_object();
			for (int i = 0; i < n; i++) {
				char k[16];
				snprintf(k, sizeof(k), "k%04d", i);
				json_object_set_new(m, k, json_string("v"));
			}
			snprintf(want, sizeof(want),
			         "validation error: %s has 1025 entries, at most 1024", field);
			expect_create(create_body(field, m), n == 1024 ? 404 : 400,
			              n == 1024 ? nf : want);
		}
		/* a key: 1,024 bytes pass, 1,025 do not */
		for (size_t n = 1024; n <= 1025; n++) {
			char *k = fks_repeat('k', n);
			json_t *m = json_pack("{s:s}", k, "v");
			free(k);
			snprintf(want, sizeof(want),
			         "validation error: a key of %s is 1025 bytes, at most 1024",
			         field);
			expect_create(create_body(field, m), n == 1024 ? 404 : 400,
			              n == 1024 ? nf : want);
		}
		/* a value: 32 KiB pass, one byte more does not */
		for (size_t n = 32768; n <= 32769; n++) {
			char *v = fks_repeat('v', n);
			json_t *m = json_pack("{s:s}", "K", v);
			free(v);
			snprintf(want, sizeof(want),
			         "validation error: a value of %s is 32769 bytes, at most 32768",
			         field);
			expect_create(create_body(field, m), n == 32768 ? 404 : 400,
			              n == 32768 ? nf : want);
		}
		/* the total of keys and values: 64 KiB pass, 64 KiB + 2 do not */
		for (size_t n = 32767; n <= 32768; n++) {
			char *v = fks_repeat('v', n);
			json_t *m = json_pack("{s:s,s:s}", "A", v, "B", v);
			free(v);
			snprintf(
			    want, sizeof(want),
			    "validation error: %s is 65538 bytes (keys and values), at most 65536",
			    field);
			expect_create(create_body(field, m), n == 32767 ? 404 : 400,
			              n == 32767 ? nf : want);
		}
	}
	/* the review's 50,000 keys: refused by count, nothing kept */
	json_t *m = json_object();
	for (int i = 0; i < 50000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "key%05d", i);
		json_object_set_new(m, k,
		                    json_string("0123456789abcdef0123456789abcdef0123456789abcdef"
		                                "0123456789abcdef0123456789abcdef"));
	}
	expect_create(create_body("metadata", m), 400,
	              "validation error: metadata has 50000 entries, at most 1024");
}

static void test_limits__unknown_template_404_echoes_a_bounded_prefix(void **state)
{
	(void)state;
	char want[300];
	/* 128 bytes: echoed whole */
	char *id = fks_repeat('t', 128);
	snprintf(want, sizeof(want), "template '%s' not found", id);
	expect_create(json_pack("{s:s}", "templateID", id), 404, want);
	free(id);
	/* 1 MiB: its first 128 bytes and "..." */
	id = fks_repeat('t', 1 << 20);
	snprintf(want, sizeof(want), "template '%.128s...' not found", id);
	expect_create(json_pack("{s:s}", "templateID", id), 404, want);
	free(id);
	/* a character across byte 128 is left out whole (the answer stays valid UTF-8) */
	char mb[200];
	memset(mb, 't', 127);
	strcpy(mb + 127, "\xc3\xa9tail"); /* U+00E9 at bytes 127-128 */
	snprintf(want, sizeof(want), "template '%.127s...' not found", mb);
	expect_create(json_pack("{s:s}", "templateID", mb), 404, want);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_limits__idle_and_slow_header_connections_are_closed),
	    cmocka_unit_test(test_limits__10000_half_open_connections_do_not_stop_a_client),
	    cmocka_unit_test(test_limits__flood_from_the_clients_own_address_does_not_refuse_it),
	    cmocka_unit_test(test_limits__burst_of_500_slow_connections_is_not_a_flood),
	    cmocka_unit_test(test_limits__one_client_cannot_take_every_connection),
	    cmocka_unit_test(test_limits__upload_over_the_cap_is_413),
	    cmocka_unit_test(test_limits__upload_past_a_small_disk_is_507),
	    cmocka_unit_test(test_limits__nul_in_path_is_400),
	    cmocka_unit_test(test_limits__content_disposition_quotes_the_name),
	    cmocka_unit_test(test_limits__symlink_loop_is_not_found),
	    cmocka_unit_test(test_limits__listdir_reply_is_written_entry_by_entry),
	    cmocka_unit_test(test_limits__health_without_token_hides_whether_a_sandbox_exists),
	    cmocka_unit_test(test_limits__create_metadata_and_env_vars_are_bounded),
	    cmocka_unit_test(test_limits__unknown_template_404_echoes_a_bounded_prefix),
	};
	/* FK_TEST_FILTER picks a few (tests/support/cmocka_run.c) */
	return cmocka_run_group_tests_name("fake_limits", tests, up, down);
}
