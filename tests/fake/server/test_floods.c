/*
 * tests/fake/server/test_floods.c: what unauthenticated and hostile clients
 * cost the server: bodies of many small JSON values (the request log kept
 * their parsed JSON; jansson's parse costs ~40 times the text), the request
 * log's byte caps, bodies that stall after their headers, the port proxy's
 * memory under concurrent large answers, oversized Start fields. The server's
 * memory is read from /proc/<pid>/status (VmRSS, VmHWM).
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

/* The sanitizers' allocators pad every block and keep freed ones in quarantine: the server's
 * RSS under them says nothing of its own bounds, which the plain build checks (the figures are
 * printed either way). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_BOUND(cond) ((void)0)
#else
#define RSS_BOUND(cond) assert_true(cond)
#endif

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"

#define KEY "e2b_floods_test_key"
#define MIB (1024L * 1024L)

static const char *g_bin;

/* ---- helpers -------------------------------------------------------------------------------- */

/* A /proc/<pid>/status field in kB (VmRSS, VmHWM). */
static long status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	long kb = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	fclose(f);
	assert_true(kb > 0);
	return kb;
}

static void start(fks *s, const char *const *extra)
{
	fks_start_key(s, g_bin, KEY, extra);
}

/* Read an HTTP answer's status line from fd (up to max_ms): the status, 0 when the connection
 * closed (or reset) without one, -1 on timeout. */
static int read_status(int fd, long max_ms)
{
	char buf[512];
	size_t got = 0;
	long t0 = fk_mono_ms();
	while (got < 12) {
		long left = max_ms - (fk_mono_ms() - t0);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return strncmp(buf, "HTTP/1.1 ", 9) ? 0 : atoi(buf + 9);
}

/* POST `body` with `headers` (each ending in \r\n) on a raw connection, writing the body only
 * while the server has not answered; the answer's status (0: closed without one). */
static int raw_post(unsigned port, const char *path, const char *headers, const void *body,
                    size_t len)
{
	int fd = fks_tcp_connect(port, false, 0);
	assert_true(fd >= 0);
	char head[1024];
	int hn = snprintf(head, sizeof(head),
	                  "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %zu\r\n\r\n",
	                  path, headers, len);
	assert_int_equal(send(fd, head, (size_t)hn, MSG_NOSIGNAL), hn);
	size_t off = 0;
	while (off < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
		assert_true(poll(&p, 1, 60000) > 0);
		if (p.revents & (POLLIN | POLLERR | POLLHUP))
			break; /* answered (or cut) before the whole body: stop sending */
		ssize_t n = send(fd, (const char *)body + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	int st = read_status(fd, 60000);
	close(fd);
	return st;
}

/* `[[],[],...,[]]` of about n bytes: jansson's most expensive text per byte. */
static char *empty_arrays(size_t n)
{
	char *b = malloc(n + 4);
	assert_non_null(b);
	size_t o = 0;
	b[o++] = '[';
	while (o + 4 < n) {
		memcpy(b + o, "[],", 3);
		o += 3;
	}
	memcpy(b + o, "[]]", 3);
	o += 3;
	b[o] = '\0';
	return b;
}

/* A Connect envelope (flags 0) around `json`. */
static char *envelope(const char *json, size_t n)
{
	char *b = malloc(n + 5);
	assert_non_null(b);
	b[0] = 0;
	b[1] = (char)(n >> 24);
	b[2] = (char)(n >> 16);
	b[3] = (char)(n >> 8);
	b[4] = (char)n;
	memcpy(b + 5, json, n);
	return b;
}

static json_t *request_log(fks *s)
{
	const char *h[] = {"X-API-Key: " KEY, NULL};
	fkr *r = fks_req(s, "GET", "/_fake/requests", h, NULL, 0);
	assert_int_equal(r->status, 200);
	json_t *log = json_incref(r->json);
	assert_true(json_is_array(log));
	fkr_free(r);
	return log;
}

/* The bytes an entry is counted for: its compact text without duration_ms (reqlog.h). */
static size_t entry_bytes(json_t *e)
{
	json_t *c = json_copy(e);
	json_object_del(c, "duration_ms");
	char *t = json_dumps(c, JSON_COMPACT);
	size_t n = strlen(t);
	free(t);
	json_decref(c);
	return n;
}

/* ---- request bodies and the request log ----------------------------------------------------- */

/* Before: the log kept the parsed JSON of every body, 401s included, and one 8 MiB body of
 * empty arrays cost ~370 MB that stayed. Now a refused request's body is neither kept nor read,
 * and 16 such bodies (8 to the control plane, 8 Connect ones to an envd path) leave the server
 * within 64 MiB of where it started (its high-water mark within 96 MiB). */
static void test_floods__unauthenticated_array_bodies_keep_the_server_small(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	long rss0 = status_kb(s.pid, "VmRSS");
	size_t n = 8 * MIB - 16;
	char *arrays = empty_arrays(n), *framed = envelope(arrays, strlen(arrays));
	for (int i = 0; i < 8; i++) {
		assert_int_equal(raw_post(s.port, "/v2/sandboxes",
		                          "Content-Type: application/json\r\n", arrays,
		                          strlen(arrays)),
		                 401);
		assert_int_equal(raw_post(s.port, "/process.Process/List",
		                          "Content-Type: application/connect+json\r\n"
		                          "E2b-Sandbox-Id: inosuchsandboxnosuchsand\r\n",
		                          framed, strlen(arrays) + 5),
		                 502);
	}
	long rss = status_kb(s.pid, "VmRSS"), hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld -> %ld kB (peak %ld kB) after 16 bodies of 8 MiB\n", rss0,
	              rss, hwm);
	RSS_BOUND(rss - rss0 < 64 * 1024);
	RSS_BOUND(hwm - rss0 < 96 * 1024);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e) assert_null(json_object_get(e, "body"));
	json_decref(log);
	free(arrays);
	free(framed);
	assert_int_equal(fks_stop(&s), 0);
}

/* With the key, the same body is parsed, within its budget (4 bytes of memory per byte of text
 * and 1 MiB): past it the parse fails as for bad JSON (400), and the server's peak stays within
 * 96 MiB of where it started. */
static void test_floods__an_authenticated_array_body_is_parsed_within_its_budget(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	long rss0 = status_kb(s.pid, "VmRSS");
	char *arrays = empty_arrays(8 * MIB - 16);
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	for (int i = 0; i < 4; i++) {
		fkr *r = fks_req(&s, "POST", "/v2/sandboxes", h, arrays, strlen(arrays));
		assert_int_equal(r->curl_rc, 0);
		assert_int_equal(r->status, 400);
		fkr_free(r);
	}
	long hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld kB, peak %ld kB after 4 parses\n", rss0, hwm);
	RSS_BOUND(hwm - rss0 < 96 * 1024);
	/* a body of that size that is not pathological still parses */
	size_t n = 4 * MIB;
	char *big = malloc(n + 64);
	assert_non_null(big);
	int o = snprintf(big, 64, "{\"templateID\":\"nosuchtemplate\",\"x\":\"");
	memset(big + o, 'a', n);
	memcpy(big + o + n, "\"}", 3);
	fkr *r = fks_req(&s, "POST", "/v2/sandboxes", h, big, strlen(big));
	assert_int_equal(r->status, 404); /* parsed: the template is what is missing */
	fkr_free(r);
	free(big);
	free(arrays);
	assert_int_equal(fks_stop(&s), 0);
}

/* A refused request's body is not in the log; an admitted one's is. */
static void test_floods__the_log_keeps_no_body_of_a_refused_request(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	const char *body = "{\"timeout\":30}";
	const char *nokey[] = {"Content-Type: application/json", NULL};
	const char *key[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	fkr *r =
	    fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", nokey, body, strlen(body));
	assert_int_equal(r->status, 401);
	fkr_free(r);
	r = fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", key, body, strlen(body));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(log, 0), "status")),
	                 401);
	assert_null(json_object_get(json_array_get(log, 0), "body"));
	json_t *b = json_object_get(json_array_get(log, 1), "body");
	assert_int_equal(json_integer_value(json_object_get(b, "timeout")), 30);
	json_decref(log);
	assert_int_equal(fks_stop(&s), 0);
}

/* POST /sandboxes/<id>/timeout (404: no such sandbox) whose log entry is `target` bytes: the body
 * {"timeout":30,"pad":"aaa..."} is sized from a first entry of the same shape (`base` bytes
 * with a pad of `base_pad`). */
static void post_entry_of(fks *s, size_t target, size_t base, size_t base_pad)
{
	size_t pad = base_pad + target - base;
	char *body = malloc(pad + 64);
	assert_non_null(body);
	int o = snprintf(body, 64, "{\"timeout\":30,\"pad\":\"");
	memset(body + o, 'a', pad);
	memcpy(body + o + pad, "\"}", 3);
	const char *key[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	fkr *r = fks_req(s, "POST", "/sandboxes/inosuchsandbox/timeout", key, body, strlen(body));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	free(body);
}

/* An entry's size of one with a pad of 10 (what post_entry_of sizes from). */
static size_t calibrate(fks *s)
{
	const char *del[] = {"X-API-Key: " KEY, NULL};
	post_entry_of(s, 100, 100, 10);
	json_t *log = request_log(s);
	size_t n = entry_bytes(json_array_get(log, json_array_size(log) - 1));
	json_decref(log);
	fkr_free(fks_req(s, "DELETE", "/_fake/requests", del, NULL, 0));
	return n;
}

/* One entry holds at most 65,536 bytes of text: at exactly that it keeps its body, one byte
 * more and the body goes (the entry says "truncated":["body"]). */
static void test_floods__a_log_entry_is_capped_at_64_kib(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	size_t base = calibrate(&s);
	post_entry_of(&s, 65536, base, 10);
	post_entry_of(&s, 65537, base, 10);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 2);
	json_t *kept = json_array_get(log, 0), *cut = json_array_get(log, 1);
	assert_int_equal(entry_bytes(kept), 65536);
	assert_non_null(json_object_get(kept, "body"));
	assert_null(json_object_get(kept, "truncated"));
	assert_null(json_object_get(cut, "body"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(cut, "truncated"), 0)),
	                    "body");
	assert_int_equal(json_array_size(json_object_get(cut, "truncated")), 1);
	assert_int_equal(json_integer_value(json_object_get(cut, "status")), 404);
	json_decref(log);
	assert_int_equal(fks_stop(&s), 0);
}

/* --request-log-mb 1: the log keeps at most 1,048,576 bytes of entries: 16 entries of exactly
 * 65,536 bytes all stay; a 17th drops the oldest; one byte more than what fits drops another. */
static void test_floods__the_log_is_capped_in_bytes(void **state)
{
	(void)state;
	fks s;
	const char *extra[] = {"--request-log-mb", "1", NULL};
	start(&s, extra);
	size_t base = calibrate(&s);
	for (int i = 0; i < 16; i++)
		post_entry_of(&s, 65536, base, 10);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	size_t sum = 0, i;
	json_t *e;
	json_array_foreach(log, i, e) sum += entry_bytes(e);
	assert_int_equal(sum, 1048576);
	json_decref(log);
	post_entry_of(&s, 65536, base, 10); /* 17 x 65,536: the first goes */
	log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	json_decref(log);
	post_entry_of(&s, 1000, base, 10); /* 1,049,576 > cap: the oldest 65,536 go */
	log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	sum = 0;
	json_array_foreach(log, i, e) sum += entry_bytes(e);
	assert_int_equal(sum, 15 * 65536 + 1000);
	json_decref(log);
	assert_int_equal(fks_stop(&s), 0);
}

/* ---- bodies that stall ---------------------------------------------------------------------- */

/* n connections spread over 127.0.0.2 ... 127.0.0.201, each sending complete headers of a
 * POST with Content-Length: 1000 and then one body byte; the opened ones in fds (-1: did not
 * open), their count returned. */
static int stalled_bodies(unsigned port, int *fds, int n, const char *key_header)
{
	char req[512];
	int len = snprintf(req, sizeof(req),
	                   "POST /sandboxes/inosuchsandbox/timeout HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	                   "%sContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
	                   key_header);
	int opened = 0;
	for (int i = 0; i < n; i++) {
		fds[i] = fks_tcp_connect(port, false, 2 + (unsigned)(i % 200));
		if (fds[i] >= 0 && send(fds[i], req, (size_t)len, MSG_NOSIGNAL) != len) {
			close(fds[i]);
			fds[i] = -1;
		}
		opened += fds[i] >= 0;
	}
	return opened;
}

/* The attacker does not let go: three times, 500 ms apart, each of fds the server closed is
 * opened again (stalled_bodies' request). */
static void refill(unsigned port, int *fds, int n, const char *key_header)
{
	for (int pass = 0; pass < 3; pass++) {
		fk_sleep_ms(500);
		for (int i = 0; i < n; i++) {
			struct pollfd p = {.fd = fds[i], .events = POLLIN | POLLRDHUP};
			if (fds[i] >= 0 && poll(&p, 1, 0) == 0)
				continue; /* still held */
			if (fds[i] >= 0)
				close(fds[i]);
			stalled_bodies(port, &fds[i], 1, key_header);
		}
	}
}

/* Before: authentication waited for the whole body, so 4,000 connections that sent their
 * headers and one body byte were held forever. Now each is answered 401 from its headers and
 * closed at once; none of their bodies is read. */
static void test_floods__refused_requests_are_answered_from_their_headers(void **state)
{
	(void)state;
	enum { N = 4000 };
	fks_need_fds(N + 256);
	fks s;
	start(&s, NULL);
	int *fds = malloc(N * sizeof(int));
	assert_non_null(fds);
	int opened = stalled_bodies(s.port, fds, N, ""), refused = 0, closed = 0;
	long t0 = fk_mono_ms();
	for (int i = 0; i < N; i++) { /* all within a generous 60 s */
		if (fds[i] < 0)
			continue;
		long left = 60000 - (fk_mono_ms() - t0);
		refused += read_status(fds[i], left > 0 ? left : 1) == 401;
		left = 60000 - (fk_mono_ms() - t0);
		closed += fks_ms_until_closed(fds[i], left > 0 ? left : 1) >= 0;
		close(fds[i]);
	}
	print_message("%d connections: %d answered 401 from their headers, %d closed\n", opened,
	              refused, closed);
	assert_true(opened > N / 2);
	assert_int_equal(refused, opened);
	assert_int_equal(closed, opened);
	free(fds);
	assert_int_equal(fks_stop(&s), 0);
}

/* With the key (a client the server lets in), 4,000 stalled bodies from 200 loopback addresses:
 * a well-behaved client is still answered (a GET and a POST with its body), and every stalled
 * body is cut (10 s without a byte; all within a generous 90 s). Before, the connections were
 * "busy" and never cut, the server sat at its 4,000-connection cap and refused the client. */
static void test_floods__stalled_bodies_from_many_addresses_do_not_starve_a_client(void **state)
{
	(void)state;
	enum { N = 4000 };
	fks_need_fds(N + 256);
	fks s;
	start(&s, NULL);
	int *fds = malloc(N * sizeof(int));
	assert_non_null(fds);
	int opened = stalled_bodies(s.port, fds, N, "X-API-Key: " KEY "\r\n");
	assert_true(opened > N / 2);
	refill(s.port, fds, N, "X-API-Key: " KEY "\r\n");
	opened = 0;
	for (int i = 0; i < N; i++)
		opened += fds[i] >= 0;
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	long t0 = fk_mono_ms();
	fkr *r = fks_req(&s, "GET", "/v2/sandboxes", h, NULL, 0);
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	r = fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", h, "{\"timeout\":30}", 14);
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 404);
	fkr_free(r);
	print_message("client answered (GET 200, POST 404) in %ld ms beside %d stalled bodies\n",
	              fk_mono_ms() - t0, opened);
	int closed = 0;
	for (int i = 0; i < N; i++) {
		if (fds[i] < 0)
			continue;
		long left = 90000 - (fk_mono_ms() - t0);
		closed += fks_ms_until_closed(fds[i], left > 0 ? left : 1) >= 0;
		close(fds[i]);
	}
	print_message("%d of %d stalled bodies cut after %ld ms\n", closed, opened,
	              fk_mono_ms() - t0);
	assert_int_equal(closed, opened);
	free(fds);
	assert_int_equal(fks_stop(&s), 0);
}

/* One stalled body alone is cut after 10 s without a byte (not before 9 s). */
static void test_floods__a_stalled_body_is_cut(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	int fd;
	assert_int_equal(stalled_bodies(s.port, &fd, 1, "X-API-Key: " KEY "\r\n"), 1);
	long ms = fks_ms_until_closed(fd, 60000);
	close(fd);
	print_message("stalled body cut after %ld ms\n", ms);
	assert_true(ms >= 9000);
	assert_int_equal(fks_stop(&s), 0);
}

/* ---- the port proxy ------------------------------------------------------------------------ */

typedef struct counted {
	size_t bytes;
} counted;

static size_t count_body(char *p, size_t sz, size_t n, void *cls)
{
	(void)p;
	((counted *)cls)->bytes += sz * n;
	return sz * n;
}

/* Before: the port proxy held each answer whole (up to 64 MiB, and a copy for MHD), and public
 * traffic needs no key: a dozen concurrent fetches of a 60 MiB file raised the server's RSS by
 * ~560 MB. Now answers are streamed through a 128 KiB ring per connection: the same twelve
 * fetches (all 62,914,560 bytes each, with its Content-Length) leave the server's peak within
 * 48 MiB of where it started. Then a client that reads nothing: the server stops reading from
 * the sandbox (libcurl paused), and its memory stays flat while that client waits. */
static void test_floods__the_port_proxy_streams_large_answers(void **state)
{
	(void)state;
	enum { N = 12, SIZE = 60 << 20 };
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	fks_box_sh(
	    &s, &b,
	    "mkdir -p /tmp/www && head -c 62914560 /dev/zero > /tmp/www/big && cd /tmp/www && "
	    "(nohup python3 -m http.server 8080 >/dev/null 2>&1 &)");
	char host[160], url[320], resolve[200];
	snprintf(host, sizeof(host), "8080-%s.e2b.localhost", b.id);
	fkr *r = NULL;
	for (int i = 0; i < 100; i++) { /* until the server in the box listens */
		fkr_free(r);
		r = fks_req_host(&s, host, "HEAD", "/big", NULL, NULL, 0);
		if (r->status == 200)
			break;
		fk_sleep_ms(100);
	}
	assert_int_equal(r->status, 200);
	fkr_free(r);
	long rss0 = status_kb(s.pid, "VmRSS"), hwm0 = status_kb(s.pid, "VmHWM");
	snprintf(url, sizeof(url), "http://%s:%u/big", host, s.port);
	snprintf(resolve, sizeof(resolve), "%s:%u:127.0.0.1", host, s.port);
	struct curl_slist *res = curl_slist_append(NULL, resolve);
	CURLM *m = curl_multi_init();
	CURL *e[N];
	counted got[N] = {{0}};
	for (int i = 0; i < N; i++) {
		e[i] = curl_easy_init();
		curl_easy_setopt(e[i], CURLOPT_URL, url);
		curl_easy_setopt(e[i], CURLOPT_RESOLVE, res);
		curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, count_body);
		curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &got[i]);
		curl_easy_setopt(e[i], CURLOPT_TIMEOUT_MS, 240000L);
		curl_multi_add_handle(m, e[i]);
	}
	int running = 1;
	long peak = 0;
	while (running) {
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 100, NULL);
		long v = status_kb(s.pid, "VmRSS");
		peak = v > peak ? v : peak;
	}
	for (int i = 0; i < N; i++) {
		long st = 0;
		curl_off_t cl = -1;
		curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &st);
		curl_easy_getinfo(e[i], CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		assert_int_equal(st, 200);
		assert_int_equal(cl, SIZE);
		assert_int_equal(got[i].bytes, SIZE);
		curl_multi_remove_handle(m, e[i]);
		curl_easy_cleanup(e[i]);
	}
	curl_multi_cleanup(m);
	curl_slist_free_all(res);
	long hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld kB before, peak %ld kB (VmHWM %ld -> %ld) during %d fetches "
	              "of 60 MiB\n",
	              rss0, peak, hwm0, hwm, N);
	RSS_BOUND(hwm - rss0 < 48 * 1024);
	/* a client that asks and reads nothing: back-pressure, nothing piles up in the server */
	int fd = fks_tcp_connect(s.port, false, 0);
	assert_true(fd >= 0);
	char req[400];
	int len = snprintf(req, sizeof(req), "GET /big HTTP/1.1\r\nHost: %s\r\n\r\n", host);
	assert_int_equal(send(fd, req, (size_t)len, MSG_NOSIGNAL), len);
	assert_int_equal(read_status(fd, 60000), 200);
	long before = status_kb(s.pid, "VmRSS");
	fk_sleep_ms(3000);
	long after = status_kb(s.pid, "VmRSS");
	print_message("a client reading nothing: server RSS %ld -> %ld kB over 3 s\n", before,
	              after);
	RSS_BOUND(after - before < 16 * 1024);
	close(fd);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

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
static void test_floods__start_fields_are_bounded(void **state)
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
static void test_floods__log_lines_are_bounded(void **state)
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
static void test_floods__a_build_log_keeps_its_last_mib(void **state)
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
static void test_floods__log_lines_escape_control_bytes(void **state)
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
	assert_int_equal(read_status(fd, 10000), 404);
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

/* A box port that accepts and never answers: each request the proxy sends it waits for the
 * answer's headers (5 min), and is neither idle nor a stalled body. Requests to one sandbox's
 * ports are capped at 256 in flight, 192 of them for one client address (test_proxy_share.c),
 * the rest answered 503 at once, so clients without a key cannot hold every connection of the
 * server (before, 4,000 of them did, for minutes). */
static void test_floods__requests_to_a_silent_box_port_are_capped(void **state)
{
	(void)state;
	enum { N = 300, CAP = 192 };
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_need_fds(N + 64);
	fks_box_create(&s, KEY, NULL, &b);
	fks_box_sh(&s, &b,
	           "printf 'import socket\\ns=socket.socket()\\ns.bind((\"0.0.0.0\",8100))\\n"
	           "s.listen(4096)\\nc=[]\\nwhile 1: c.append(s.accept())\\n' > /tmp/hang.py && "
	           "(nohup python3 /tmp/hang.py >/dev/null 2>&1 &) && for i in $(seq 100); do "
	           "ss -ltn | grep -q ':8100 ' && break; sleep 0.1; done");
	char req[256];
	snprintf(req, sizeof(req), "GET /x HTTP/1.1\r\nHost: 8100-%s.e2b.localhost\r\n\r\n", b.id);
	int fds[N];
	for (int i = 0; i < N; i++) {
		fds[i] = fks_tcp_connect(s.port, false, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
	}
	/* the refusals come at once; the others stay silent: collect answers for 10 s at most,
	 * and 1 s more once N - CAP of them are in */
	int refused = 0, other = 0, silent = N;
	bool answered[N] = {false};
	long t0 = fk_mono_ms(), settle = -1;
	while (fk_mono_ms() - t0 < 10000 && (settle < 0 || fk_mono_ms() < settle)) {
		struct pollfd p[N];
		for (int i = 0; i < N; i++)
			p[i] = (struct pollfd){.fd = answered[i] ? -1 : fds[i], .events = POLLIN};
		if (poll(p, N, 100) <= 0)
			continue;
		for (int i = 0; i < N; i++)
			if (p[i].revents) {
				answered[i] = true;
				silent--;
				if (read_status(fds[i], 1000) == 503)
					refused++;
				else
					other++;
			}
		if (refused >= N - CAP && settle < 0)
			settle = fk_mono_ms() + 1000;
	}
	print_message("%d of %d answered 503, %d otherwise, %d waiting on the box\n", refused, N,
	              other, silent);
	assert_int_equal(refused, N - CAP);
	assert_int_equal(other, 0);
	assert_int_equal(silent, CAP);
	/* the server answers others meanwhile */
	const char *h[] = {"X-API-Key: " KEY, NULL};
	fkr *r = fks_req(&s, "GET", "/v2/sandboxes", h, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	assert_int_equal(fks_stop(&s), 0);
}

/* ---- the server-wide budget of bodies in memory ---------------------------------------------- */

/* A raw POST of `total` body bytes to `path` whose first `first` bytes are sent, stopping if
 * the server answers first: the connection. */
static int body_begin(unsigned port, const char *path, const char *headers, const char *body,
                      size_t total, size_t first)
{
	int fd = fks_tcp_connect(port, false, 0);
	assert_true(fd >= 0);
	char head[1024];
	int hn = snprintf(head, sizeof(head),
	                  "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %zu\r\n\r\n",
	                  path, headers, total);
	assert_int_equal(send(fd, head, (size_t)hn, MSG_NOSIGNAL), hn);
	for (size_t off = 0; off < first;) {
		struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
		assert_true(poll(&p, 1, 60000) > 0);
		if (p.revents & (POLLIN | POLLERR | POLLHUP))
			break;
		ssize_t n = send(fd, body + off, first - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	return fd;
}

/* The answer's head on fd (up to max_ms), NUL-terminated in buf: its status, 0 when closed
 * without one, -1 on timeout. */
static int read_head(int fd, char *buf, size_t cap, long max_ms)
{
	size_t got = 0;
	long t0 = fk_mono_ms();
	buf[0] = '\0';
	while (!strstr(buf, "\r\n\r\n") && got + 1 < cap) {
		long left = max_ms - (fk_mono_ms() - t0);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	return strncmp(buf, "HTTP/1.1 ", 9) ? 0 : atoi(buf + 9);
}

/* Before: every body was read whole into memory (8 MiB each) and parsed within its own budget
 * (4 bytes a byte and 1 MiB), their sum unbounded: 250 concurrent 8 MB bodies took 3.5 GB. Now
 * bodies in memory share a server-wide budget (--body-budget-mb, here 128): a body of 8 MiB
 * holds 8 MiB and its parse's 33 MiB from its headers on, so three of them fit; with sixteen
 * sent at once (headers and half the body each), thirteen are answered 503 with Retry-After
 * from their headers, before their bodies, while the three are held. Meanwhile the control
 * plane answers, a small body fits; the three finish (400: their parse passes its budget) and
 * the room is back. The server's peak stays within the budget and 48 MiB. Authentication is
 * decided from the headers first, so this holds for every route, those that need no key too. */
static void test_floods__bodies_in_memory_share_a_server_budget(void **state)
{
	(void)state;
	enum { N = 16, FIT = 3 };
	const char *extra[] = {"--body-budget-mb", "128", NULL};
	fks s;
	start(&s, extra);
	long rss0 = status_kb(s.pid, "VmRSS");
	size_t n = 8 * MIB - 16;
	char *arrays = empty_arrays(n);
	n = strlen(arrays);
	const char *hdr = "X-API-Key: " KEY "\r\nContent-Type: application/json\r\n";
	int fds[N];
	for (int i = 0; i < N; i++)
		fds[i] = body_begin(s.port, "/v2/sandboxes", hdr, arrays, n, n / 2);
	/* the refusals come from the headers; the three admitted wait for the rest of their body */
	int refused = 0, other = 0;
	bool answered[N] = {false};
	long t0 = fk_mono_ms();
	while (refused + other < N - FIT && fk_mono_ms() - t0 < 30000) {
		struct pollfd p[N];
		for (int i = 0; i < N; i++)
			p[i] = (struct pollfd){.fd = answered[i] ? -1 : fds[i], .events = POLLIN};
		if (poll(p, N, 1000) <= 0)
			continue;
		for (int i = 0; i < N; i++)
			if (p[i].revents) {
				char head[2048];
				answered[i] = true;
				int st = read_head(fds[i], head, sizeof(head), 5000);
				if (st == 503 && strstr(head, "\r\nRetry-After: 1\r\n"))
					refused++;
				else
					other++;
			}
	}
	print_message("%d of %d bodies answered 503 from their headers, %d otherwise\n", refused, N,
	              other);
	assert_int_equal(refused, N - FIT);
	assert_int_equal(other, 0);
	/* the control plane answers, a small body fits in what is left */
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	fkr *r = fks_req(&s, "GET", "/v2/sandboxes", h, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	static const char small[] = "{\"templateID\":\"nosuchtemplate\"}";
	r = fks_req(&s, "POST", "/v2/sandboxes", h, small, strlen(small));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	/* the three held finish: parsed within their budget, refused as too costly */
	for (int i = 0; i < N; i++) {
		if (answered[i]) {
			close(fds[i]);
			continue;
		}
		size_t off = n / 2;
		while (off < n) {
			ssize_t k = send(fds[i], arrays + off, n - off, MSG_NOSIGNAL);
			assert_true(k > 0);
			off += (size_t)k;
		}
		assert_int_equal(read_status(fds[i], 60000), 400);
		close(fds[i]);
	}
	long hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld kB before, peak %ld kB\n", rss0, hwm);
	RSS_BOUND(hwm - rss0 < (128 + 48) * 1024);
	/* the room is back: a large body is admitted again */
	assert_int_equal(raw_post(s.port, "/v2/sandboxes", hdr, arrays, n), 400);
	free(arrays);
	assert_int_equal(fks_stop(&s), 0);
}

/* A server in the box that answers each request with its body's length and the sum of its
 * bytes (Content-Length or chunked). */
static const char echo_py[] =
    "import socket\n"
    "s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "s.bind(('0.0.0.0',8102));s.listen(64)\n"
    "def eat(f,k,a):\n"
    " while k:\n"
    "  d=f.read(min(k,65536))\n"
    "  if not d: break\n"
    "  a[0]+=len(d);a[1]+=sum(d);k-=len(d)\n"
    "while 1:\n"
    " c,_=s.accept();f=c.makefile('rb');h={};f.readline()\n"
    " while 1:\n"
    "  l=f.readline()\n"
    "  if l in (b'\\r\\n',b''): break\n"
    "  k,v=l.split(b':',1);h[k.strip().lower()]=v.strip()\n"
    " a=[0,0]\n"
    " if b'content-length' in h: eat(f,int(h[b'content-length']),a)\n"
    " elif h.get(b'transfer-encoding',b'').lower()==b'chunked':\n"
    "  while 1:\n"
    "   k=int(f.readline().split(b';')[0],16)\n"
    "   if k==0:\n"
    "    while f.readline() not in (b'\\r\\n',b''): pass\n"
    "    break\n"
    "   eat(f,k,a);f.readline()\n"
    " b=('%d %d'%(a[0],a[1]&0xffffffff)).encode()\n"
    " c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n'"
    "%len(b)+b);c.close()\n";

/* Before: the port proxy read a request's body whole into memory before it went to the box, so
 * a body past 8 MiB was 413 and 600 concurrent ones held 1.34 GB. Now it is streamed to the box
 * as it arrives: 40 MiB with its Content-Length and 24 MiB chunked reach the box's server whole
 * (its length and byte sum answered), and the server's peak stays within 24 MiB of where it
 * started. */
static void test_floods__the_port_proxy_streams_request_bodies(void **state)
{
	(void)state;
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	char line[4096];
	snprintf(
	    line, sizeof(line),
	    "cat > /tmp/echo.py <<'EOF'\n%sEOF\n(nohup python3 /tmp/echo.py >/dev/null 2>&1 &) "
	    "&& for i in $(seq 100); do ss -ltn | grep -q ':8102 ' && break; sleep 0.1; done",
	    echo_py);
	fks_box_sh(&s, &b, line);
	char host[160];
	snprintf(host, sizeof(host), "8102-%s.e2b.localhost", b.id);
	size_t n = 40u << 20;
	unsigned char *body = malloc(n);
	assert_non_null(body);
	uint32_t sum = 0, sum24 = 0;
	for (size_t i = 0; i < n; i++) {
		body[i] = (unsigned char)(i * 7 + 3);
		sum += body[i];
		if (i < (24u << 20))
			sum24 += body[i];
	}
	long rss0 = status_kb(s.pid, "VmRSS");
	const char *ct[] = {"Content-Type: application/octet-stream", NULL};
	fkr *r = fks_req_host(&s, host, "POST", "/up", ct, body, n);
	char want[64];
	snprintf(want, sizeof(want), "%zu %u", n, (unsigned)sum);
	assert_int_equal(r->status, 200);
	assert_string_equal(r->body, want);
	fkr_free(r);
	/* chunked, as a raw request: 24 chunks of 1 MiB */
	int fd = fks_tcp_connect(s.port, false, 0);
	assert_true(fd >= 0);
	char head[400];
	int hn =
	    snprintf(head, sizeof(head),
	             "PUT /up HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n", host);
	assert_int_equal(send(fd, head, (size_t)hn, MSG_NOSIGNAL), hn);
	for (size_t off = 0; off < (24u << 20); off += MIB) {
		char sz[32];
		int k = snprintf(sz, sizeof(sz), "%lx\r\n", (unsigned long)MIB);
		assert_int_equal(send(fd, sz, (size_t)k, MSG_NOSIGNAL), k);
		for (size_t o = 0; o < (size_t)MIB;) {
			ssize_t w = send(fd, body + off + o, (size_t)MIB - o, MSG_NOSIGNAL);
			assert_true(w > 0);
			o += (size_t)w;
		}
		assert_int_equal(send(fd, "\r\n", 2, MSG_NOSIGNAL), 2);
	}
	assert_int_equal(send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL), 5);
	char ans[2048];
	assert_int_equal(read_head(fd, ans, sizeof(ans), 60000), 200);
	snprintf(want, sizeof(want), "\r\n\r\n%u %u", 24u << 20, (unsigned)sum24);
	for (long t0 = fk_mono_ms(); !strstr(ans, want) && fk_mono_ms() - t0 < 10000;) {
		size_t got = strlen(ans);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 1000) <= 0)
			continue;
		ssize_t k = read(fd, ans + got, sizeof(ans) - 1 - got);
		if (k <= 0)
			break;
		ans[got + (size_t)k] = '\0';
	}
	assert_non_null(strstr(ans, want));
	close(fd);
	long hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld kB before, peak %ld kB after 64 MiB of request bodies\n",
	              rss0, hwm);
	RSS_BOUND(hwm - rss0 < 24 * 1024);
	free(body);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

/* Before: a proxied request waited for the box's answer headers for 5 minutes without looking
 * at its client, so 256 clients that sent a request to a silent box port and left kept all of
 * the sandbox's slots for 5 minutes (503 for everyone). Now the wait watches its client: once
 * the 300 clients have gone, a request to the same sandbox's other port (a server that answers)
 * is 200 again, without waiting for any timeout. */
static void test_floods__clients_that_leave_free_their_slots(void **state)
{
	(void)state;
	enum { N = 300, CAP = 192 }; /* one client's share of the sandbox's 256 */
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_need_fds(N + 64);
	fks_box_create(&s, KEY, NULL, &b);
	fks_box_sh(&s, &b,
	           "printf 'import socket\\ns=socket.socket()\\ns.bind((\"0.0.0.0\",8100))\\n"
	           "s.listen(4096)\\nc=[]\\nwhile 1: c.append(s.accept())\\n' > /tmp/hang.py && "
	           "(nohup python3 /tmp/hang.py >/dev/null 2>&1 &) && mkdir -p /tmp/www && "
	           "echo up > /tmp/www/index.html && cd /tmp/www && "
	           "(nohup python3 -m http.server 8101 >/dev/null 2>&1 &) && for i in $(seq 100); "
	           "do ss -ltn | grep ':8100 ' && ss -ltn | grep -q ':8101 ' && break; sleep 0.1; "
	           "done");
	char ok_host[160];
	snprintf(ok_host, sizeof(ok_host), "8101-%s.e2b.localhost", b.id);
	fkr *r = fks_req_host(&s, ok_host, "GET", "/index.html", NULL, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	char req[256];
	snprintf(req, sizeof(req), "GET /x HTTP/1.1\r\nHost: 8100-%s.e2b.localhost\r\n\r\n", b.id);
	int fds[N];
	for (int i = 0; i < N; i++) {
		fds[i] = fks_tcp_connect(s.port, false, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
	}
	/* N - CAP refusals: then CAP requests hold every slot of the sandbox this client may have
	 */
	int refused = 0;
	bool answered[N] = {false};
	long t0 = fk_mono_ms();
	while (refused < N - CAP && fk_mono_ms() - t0 < 30000) {
		struct pollfd p[N];
		for (int i = 0; i < N; i++)
			p[i] = (struct pollfd){.fd = answered[i] ? -1 : fds[i], .events = POLLIN};
		if (poll(p, N, 1000) <= 0)
			continue;
		for (int i = 0; i < N; i++)
			if (p[i].revents) {
				answered[i] = true;
				assert_int_equal(read_status(fds[i], 1000), 503);
				refused++;
			}
	}
	assert_int_equal(refused, N - CAP);
	r = fks_req_host(&s, ok_host, "GET", "/index.html", NULL, NULL, 0);
	assert_int_equal(r->status, 503);
	fkr_free(r);
	/* the clients leave: their slots come back (each try is answered at once, 503 or 200) */
	for (int i = 0; i < N; i++)
		close(fds[i]);
	long tries = 0, status = 0;
	for (t0 = fk_mono_ms(); status != 200 && fk_mono_ms() - t0 < 30000; tries++) {
		r = fks_req_host(&s, ok_host, "GET", "/index.html", NULL, NULL, 0);
		status = r->status;
		assert_true(status == 200 || status == 503);
		fkr_free(r);
	}
	print_message("the sandbox's other port: %ld after %ld tries, %ld ms\n", status, tries,
	              fk_mono_ms() - t0);
	assert_int_equal(status, 200);
	assert_int_equal(fks_stop(&s), 0);
}

/* The server's threads (one per connection, and the proxy's transfers run in them). */
static long server_threads(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long n = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* Before: a proxied request's body went to the box as the box read it, and while the box did
 * not, the proxy waited for it for 5 minutes without looking at its client (nor was it among the
 * requests evicted at the connection cap): a client that sent a body to a box port that never
 * reads and left held its connection's thread and a slot of the sandbox's 256 for 5 minutes,
 * which 256 such clients made a sandbox's whole port proxy (503), as the answers a box never
 * gave did before. Now the client is watched there too (a reset ends the request at once) and
 * the box must take each chunk within 60 s, and the request may be evicted at the cap. */
static void test_floods__a_client_that_leaves_a_body_frees_its_request(void **state)
{
	(void)state;
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	fks_box_sh(&s, &b,
	           "printf 'import socket\\ns=socket.socket()\\ns.setsockopt(socket.SOL_SOCKET,"
	           "socket.SO_RCVBUF,4096)\\ns.bind((\"0.0.0.0\",8100))\\ns.listen(8)\\nc=[]\\n"
	           "while 1: c.append(s.accept())\\n' > /tmp/hang.py && "
	           "(nohup python3 /tmp/hang.py >/dev/null 2>&1 &) && for i in $(seq 100); "
	           "do ss -ltn | grep -q ':8100 ' && break; sleep 0.1; done");
	/* the threads when the box's setup has ended (its connections' threads gone) */
	long base = server_threads(s.pid);
	for (long t = fk_mono_ms(), n; fk_mono_ms() - t < 500; fk_sleep_ms(20))
		if ((n = server_threads(s.pid)) != base)
			base = n, t = fk_mono_ms();
	assert_true(base > 0);
	char req[256];
	snprintf(
	    req, sizeof(req),
	    "POST /x HTTP/1.1\r\nHost: 8100-%s.e2b.localhost\r\nContent-Length: 100000000\r\n\r\n",
	    b.id);
	int fd = fks_tcp_connect(s.port, false, 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/* the body until every buffer on the way is full: the proxy then waits on the box */
	static char body[64 * 1024];
	memset(body, 'y', sizeof(body));
	long sent = 0, idle_since = fk_mono_ms();
	while (fk_mono_ms() - idle_since < 1000 && sent < 64L << 20) {
		ssize_t w = write(fd, body, sizeof(body));
		if (w > 0) {
			sent += w;
			idle_since = fk_mono_ms();
		} else {
			fk_sleep_ms(10);
		}
	}
	assert_true(sent < 64L << 20); /* the box took no more */
	print_message("%ld bytes sent, %ld threads, %ld before\n", sent, server_threads(s.pid),
	              base);
	assert_true(server_threads(s.pid) > base);
	/* it leaves with a reset: a plain close's FIN would wait behind the body the proxy has
	 * not read (the chunk's UPSTREAM_HEADERS_MS bound is for that case) */
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(fd);
	long threads = 0, t0 = fk_mono_ms();
	while ((threads = server_threads(s.pid)) > base && fk_mono_ms() - t0 < 20000)
		fk_sleep_ms(50);
	print_message("%ld bytes sent; %ld threads (%ld before) %ld ms after the close\n", sent,
	              threads, base, fk_mono_ms() - t0);
	assert_true(threads <= base);
	assert_int_equal(fks_stop(&s), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_floods__unauthenticated_array_bodies_keep_the_server_small),
	    cmocka_unit_test(test_floods__an_authenticated_array_body_is_parsed_within_its_budget),
	    cmocka_unit_test(test_floods__the_log_keeps_no_body_of_a_refused_request),
	    cmocka_unit_test(test_floods__a_log_entry_is_capped_at_64_kib),
	    cmocka_unit_test(test_floods__the_log_is_capped_in_bytes),
	    cmocka_unit_test(test_floods__refused_requests_are_answered_from_their_headers),
	    cmocka_unit_test(
	        test_floods__stalled_bodies_from_many_addresses_do_not_starve_a_client),
	    cmocka_unit_test(test_floods__a_stalled_body_is_cut),
	    cmocka_unit_test(test_floods__the_port_proxy_streams_large_answers),
	    cmocka_unit_test(test_floods__start_fields_are_bounded),
	    cmocka_unit_test(test_floods__log_lines_are_bounded),
	    cmocka_unit_test(test_floods__a_build_log_keeps_its_last_mib),
	    cmocka_unit_test(test_floods__log_lines_escape_control_bytes),
	    cmocka_unit_test(test_floods__requests_to_a_silent_box_port_are_capped),
	    cmocka_unit_test(test_floods__bodies_in_memory_share_a_server_budget),
	    cmocka_unit_test(test_floods__the_port_proxy_streams_request_bodies),
	    cmocka_unit_test(test_floods__clients_that_leave_free_their_slots),
	    cmocka_unit_test(test_floods__a_client_that_leaves_a_body_frees_its_request),
	};
	const char *only = getenv("FLOODS_ONLY"); /* a pattern of test names, to run a few */
	if (only)
		cmocka_set_test_filter(only);
	return cmocka_run_group_tests_name("fake_floods", tests, NULL, NULL);
}
