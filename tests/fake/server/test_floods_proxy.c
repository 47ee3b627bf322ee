/*
 * tests/fake/server/test_floods_proxy.c — the port proxy under hostile clients: large answers
 * and request bodies streamed, requests to a silent box port capped, clients that leave (with
 * or without a body) freeing their slots and threads. Part of fake_floods_test (main in
 * test_floods.c).
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
void test_floods__the_port_proxy_streams_large_answers(void **state)
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
	assert_int_equal(fks_read_status(fd, 60000), 200);
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

/* A box port that accepts and never answers: each request the proxy sends it waits for the
 * answer's headers (5 min), and is neither idle nor a stalled body. Requests to one sandbox's
 * ports are capped at 256 in flight, 192 of them for one client address (test_proxy_share.c),
 * the rest answered 503 at once, so clients without a key cannot hold every connection of the
 * server (before, 4,000 of them did, for minutes). */
void test_floods__requests_to_a_silent_box_port_are_capped(void **state)
{
	(void)state;
	enum { N = 300, CAP = 192 };
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_need_fds(N + 64);
	fks_box_create(&s, KEY, NULL, &b);
	box_silent_port(&s, &b, "s.bind((\"0.0.0.0\",8100))\\ns.listen(4096)\\n", "",
	                "ss -ltn | grep -q ':8100 '");
	int fds[N];
	requests_to_port_8100(&s, &b, fds, N);
	/* the refusals come at once; the others stay silent: collect answers for 10 s at most,
	 * and 1 s more once N - CAP of them are in */
	int refused = 0, other = 0, silent = N;
	bool answered[N] = {false};
	long t0 = fk_mono_ms(), settle = -1;
	while (fk_mono_ms() - t0 < 10000 && (settle < 0 || fk_mono_ms() < settle)) {
		bool ready[N];
		if (poll_unanswered(fds, answered, ready, N, 100) <= 0)
			continue;
		for (int i = 0; i < N; i++)
			if (ready[i]) {
				answered[i] = true;
				silent--;
				if (fks_read_status(fds[i], 1000) == 503)
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
void test_floods__the_port_proxy_streams_request_bodies(void **state)
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
void test_floods__clients_that_leave_free_their_slots(void **state)
{
	(void)state;
	enum { N = 300, CAP = 192 }; /* one client's share of the sandbox's 256 */
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_need_fds(N + 64);
	fks_box_create(&s, KEY, NULL, &b);
	box_silent_port(&s, &b, "s.bind((\"0.0.0.0\",8100))\\ns.listen(4096)\\n",
	                "mkdir -p /tmp/www && echo up > /tmp/www/index.html && cd /tmp/www && "
	                "(nohup python3 -m http.server 8101 >/dev/null 2>&1 &) && ",
	                "ss -ltn | grep ':8100 ' && ss -ltn | grep -q ':8101 '");
	char ok_host[160];
	snprintf(ok_host, sizeof(ok_host), "8101-%s.e2b.localhost", b.id);
	fkr *r = fks_req_host(&s, ok_host, "GET", "/index.html", NULL, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	int fds[N];
	requests_to_port_8100(&s, &b, fds, N);
	/* N - CAP refusals: then CAP requests hold every slot of the sandbox this client may have
	 */
	int refused = 0;
	bool answered[N] = {false};
	long t0 = fk_mono_ms();
	while (refused < N - CAP && fk_mono_ms() - t0 < 30000) {
		bool ready[N];
		if (poll_unanswered(fds, answered, ready, N, 1000) <= 0)
			continue;
		for (int i = 0; i < N; i++)
			if (ready[i]) {
				answered[i] = true;
				assert_int_equal(fks_read_status(fds[i], 1000), 503);
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

/* Before: a proxied request's body went to the box as the box read it, and while the box did
 * not, the proxy waited for it for 5 minutes without looking at its client (nor was it among the
 * requests evicted at the connection cap): a client that sent a body to a box port that never
 * reads and left held its connection's thread and a slot of the sandbox's 256 for 5 minutes,
 * which 256 such clients made a sandbox's whole port proxy (503), as the answers a box never
 * gave did before. Now the client is watched there too (a reset ends the request at once) and
 * the box must take each chunk within 60 s, and the request may be evicted at the cap. */
void test_floods__a_client_that_leaves_a_body_frees_its_request(void **state)
{
	(void)state;
	fks s;
	fks_box b;
	start(&s, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	box_silent_port(&s, &b,
	                "s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,4096)\\n"
	                "s.bind((\"0.0.0.0\",8100))\\ns.listen(8)\\n",
	                "", "ss -ltn | grep -q ':8100 '");
	/* the threads when the box's setup has ended (its connections' threads gone) */
	long base = fks_threads(s.pid);
	for (long t = fk_mono_ms(), n; fk_mono_ms() - t < 500; fk_sleep_ms(20))
		if ((n = fks_threads(s.pid)) != base)
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
	print_message("%ld bytes sent, %ld threads, %ld before\n", sent, fks_threads(s.pid), base);
	assert_true(fks_threads(s.pid) > base);
	/* it leaves with a reset: a plain close's FIN would wait behind the body the proxy has
	 * not read (the chunk's UPSTREAM_HEADERS_MS bound is for that case) */
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(fd);
	long threads = 0, t0 = fk_mono_ms();
	while ((threads = fks_threads(s.pid)) > base && fk_mono_ms() - t0 < 20000)
		fk_sleep_ms(50);
	print_message("%ld bytes sent; %ld threads (%ld before) %ld ms after the close\n", sent,
	              threads, base, fk_mono_ms() - t0);
	assert_true(threads <= base);
	assert_int_equal(fks_stop(&s), 0);
}
