/*
 * tests/fake/server/test_proxy_share.c: the port proxy's requests in flight to one sandbox
 * (fake-e2b/README.md "The server's defences"): one client's share of them, and a full
 * sandbox giving way to a new request. Public traffic needs no key, so whoever knows a
 * sandbox's id can send these; before, one such client held all 256 of a sandbox's slots with
 * requests to a port that never answers, and every other client got 503 from every port.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fkserver.h"

#define KEY "e2b_proxy_share_test_key"

static const char *g_bin;

/* A box with a port that accepts and never answers (8100; the connections it has in /tmp/n)
 * and a web server (8101). */
static void silent_and_web(fks *s, fks_box *b)
{
	fks_start_key(s, g_bin, KEY, NULL);
	fks_box_create(s, KEY, NULL, b);
	fks_box_sh(s, b,
	           "printf 'import socket\\ns=socket.socket()\\ns.bind((\"0.0.0.0\",8100))\\n"
	           "s.listen(4096)\\nc=[]\\nwhile 1:\\n c.append(s.accept())\\n "
	           "open(\"/tmp/n.t\",\"w\").write(str(len(c)))\\n "
	           "__import__(\"os\").rename(\"/tmp/n.t\",\"/tmp/n\")\\n' > /tmp/hang.py && "
	           "(nohup python3 /tmp/hang.py >/dev/null 2>&1 &) && mkdir -p /tmp/www && "
	           "echo up > /tmp/www/index.html && cd /tmp/www && "
	           "(nohup python3 -m http.server 8101 >/dev/null 2>&1 &) && for i in $(seq 100); "
	           "do ss -ltn | grep ':8100 ' && ss -ltn | grep -q ':8101 ' && break; sleep 0.1; "
	           "done");
}

/* n requests to the silent port from 127.0.0.`src`, into fds. */
static void silent_requests(fks *s, fks_box *b, int *fds, int n, unsigned src)
{
	char req[256];
	snprintf(req, sizeof(req), "GET /x HTTP/1.1\r\nHost: 8100-%s.e2b.localhost\r\n\r\n", b->id);
	for (int i = 0; i < n; i++) {
		fds[i] = fks_tcp_connect(s->port, false, src);
		assert_true(fds[i] >= 0);
		assert_int_equal(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
	}
}

/* How many of fds are answered within ms (each read: its status in got[i]); the others stay
 * silent. Waits `settle` ms more once `want` are in. */
static int answered(int *fds, int n, int *got, int want, long ms)
{
	int done = 0;
	long t0 = fk_mono_ms(), until = -1;
	while (fk_mono_ms() - t0 < ms && (until < 0 || fk_mono_ms() < until)) {
		struct pollfd p[512];
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){.fd = got[i] ? -1 : fds[i], .events = POLLIN};
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++)
			if (p[i].revents && !got[i]) {
				int st = fks_read_status(fds[i], 1000);
				got[i] = st > 0 ? st : 1; /* 1: closed without an answer */
				done++;
			}
		if (done >= want && until < 0)
			until = fk_mono_ms() + 1000;
	}
	return done;
}

static long web_status(fks *s, fks_box *b)
{
	char host[160];
	snprintf(host, sizeof(host), "8101-%s.e2b.localhost", b->id);
	fkr *r = fks_req_host(s, host, "GET", "/index.html", NULL, NULL, 0);
	long st = r->status;
	fkr_free(r);
	return st;
}

/* One client (127.0.0.2) sends 300 requests to the silent port: it holds its share (192), the
 * rest are 503 at once, and another client (127.0.0.1) is answered by the sandbox's web
 * server. Before: the first client held all 256 slots and the other got 503. */
static void test_proxy_share__one_client_leaves_others_room(void **unused)
{
	(void)unused;
	enum { N = 300, SHARE = 192 };
	fks s;
	fks_box b;
	silent_and_web(&s, &b);
	fks_need_fds(N + 64);
	assert_int_equal(web_status(&s, &b), 200);
	int fds[N], got[N] = {0};
	silent_requests(&s, &b, fds, N, 2);
	int n = answered(fds, N, got, N - SHARE, 10000), refused = 0;
	for (int i = 0; i < N; i++)
		refused += got[i] == 503;
	print_message("%d of %d answered (%d 503), %d waiting on the box\n", n, N, refused, N - n);
	assert_int_equal(refused, N - SHARE);
	assert_int_equal(n, N - SHARE);
	assert_int_equal(web_status(&s, &b), 200); /* before: 503 */
	for (int i = 0; i < N; i++)
		close(fds[i]);
	assert_int_equal(fks_stop(&s), 0);
}

/* Clients of two addresses (127.0.0.2, .3), each within its share, fill the sandbox's 256
 * slots with requests to the silent port; once those have moved nothing for a second, a new
 * client's request (127.0.0.1) to the web port cuts the one stalled longest and is answered:
 * exactly one of the 256 ends. Before: 503. */
static void test_proxy_share__a_full_sandbox_gives_way_to_a_new_request(void **unused)
{
	(void)unused;
	enum { HALF = 128, N = 2 * HALF };
	fks s;
	fks_box b;
	silent_and_web(&s, &b);
	fks_need_fds(N + 64);
	int fds[N], got[N] = {0};
	silent_requests(&s, &b, fds, HALF, 2);
	silent_requests(&s, &b, fds + HALF, HALF, 3);
	/* every one is in flight once the box has accepted it; then a second without a byte */
	bool all = false;
	for (long t0 = fk_mono_ms(); !all && fk_mono_ms() - t0 < 60000; fk_sleep_ms(100))
		all = fks_box_run(&s, &b, "test \"$(cat /tmp/n 2>/dev/null)\" -ge 256");
	assert_true(all);
	fk_sleep_ms(1100); /* longer than the proxy's 1 s: each of them has stalled */
	assert_int_equal(answered(fds, N, got, 0, 100), 0);
	assert_int_equal(web_status(&s, &b), 200); /* before: 503 */
	int n = answered(fds, N, got, 1, 5000);
	print_message("%d of the %d held requests ended for the new one\n", n, N);
	assert_int_equal(n, 1);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	assert_int_equal(fks_stop(&s), 0);
}

/* 64 requests from 127.0.0.3, then 192 from 127.0.0.2 fill the sandbox; once stalled, a new
 * client's request cuts one of the client that holds most (127.0.0.2), not the older requests
 * of the other. */
static void test_proxy_share__the_largest_holder_gives_way_first(void **unused)
{
	(void)unused;
	enum { SMALL = 64, LARGE = 192, N = SMALL + LARGE };
	fks s;
	fks_box b;
	silent_and_web(&s, &b);
	fks_need_fds(N + 64);
	int fds[N], got[N] = {0};
	silent_requests(&s, &b, fds, SMALL, 3);
	bool all = false;
	for (long t0 = fk_mono_ms(); !all && fk_mono_ms() - t0 < 60000; fk_sleep_ms(100))
		all = fks_box_run(&s, &b, "test \"$(cat /tmp/n 2>/dev/null)\" -ge 64");
	assert_true(all); /* the small holder's are the oldest */
	silent_requests(&s, &b, fds + SMALL, LARGE, 2);
	all = false;
	for (long t0 = fk_mono_ms(); !all && fk_mono_ms() - t0 < 60000; fk_sleep_ms(100))
		all = fks_box_run(&s, &b, "test \"$(cat /tmp/n 2>/dev/null)\" -ge 256");
	assert_true(all);
	fk_sleep_ms(1100); /* every one has stalled */
	assert_int_equal(web_status(&s, &b), 200);
	int n = answered(fds, N, got, 1, 5000), small = 0;
	for (int i = 0; i < SMALL; i++)
		small += got[i] != 0;
	print_message("%d ended, %d of them the small holder's\n", n, small);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	assert_int_equal(fks_stop(&s), 0);
	assert_int_equal(n, 1);
	assert_int_equal(small, 0); /* before: the oldest, the small holder's */
}

/* The status of `GET <target>` to the sandbox's web port, on a raw connection. */
static int raw_get(fks *s, fks_box *b, const char *target)
{
	char req[512];
	int n =
	    snprintf(req, sizeof(req),
	             "GET %s HTTP/1.1\r\nHost: 8101-%s.e2b.localhost\r\nConnection: close\r\n\r\n",
	             target, b->id);
	int fd = fks_tcp_connect(s->port, false, 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, req, (size_t)n), n);
	int st = fks_read_status(fd, 30000);
	close(fd);
	return st;
}

/* A request target that is not a path: before, it followed the sandbox's authority in the URL
 * given to libcurl, so `@name/x` made "127.0.0.1:8101" a user name and `name` the host
 * (resolved by the host's DNS: 502 when it did not resolve), and `@169.254.169.254/index.html`
 * reached the box's server as `/index.html` (200) with Basic credentials; now 400 each. */
static void test_proxy_share__a_request_target_is_a_path(void **unused)
{
	(void)unused;
	fks s;
	fks_box b;
	silent_and_web(&s, &b);
	assert_int_equal(raw_get(&s, &b, "/index.html"), 200);
	static const char *const bad[] = {"@example.invalid/x", "@169.254.169.254/index.html",
	                                  "http://example.invalid/index.html", "*"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int st = raw_get(&s, &b, bad[i]);
		print_message("GET %s: %d\n", bad[i], st);
		assert_int_equal(st, 400);
	}
	assert_int_equal(raw_get(&s, &b, "//index.html"), 200); /* a path: forwarded as it is */
	assert_int_equal(fks_stop(&s), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proxy_share__one_client_leaves_others_room),
	    cmocka_unit_test(test_proxy_share__a_full_sandbox_gives_way_to_a_new_request),
	    cmocka_unit_test(test_proxy_share__the_largest_holder_gives_way_first),
	    cmocka_unit_test(test_proxy_share__a_request_target_is_a_path),
	};
	return cmocka_run_group_tests_name("fake_proxy_share", tests, NULL, NULL);
}
