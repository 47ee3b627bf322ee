/*
 * tests/fake/server/test_floods_stall.c — bodies that stall after their headers: refused ones
 * answered from their headers, 4,000 from many addresses not starving a client, one alone cut.
 * Part of fake_floods_test (main in test_floods.c).
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

/* ---- bodies that stall ---------------------------------------------------------------------- */

/* fds for n connections (stalled_bodies) to s, started here with room for them. */
static int *stalled_start(fks *s, int n)
{
	fks_need_fds((unsigned long)n + 256);
	start(s, NULL);
	int *fds = malloc((size_t)n * sizeof(int));
	assert_non_null(fds);
	return fds;
}

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
void test_floods__refused_requests_are_answered_from_their_headers(void **state)
{
	(void)state;
	enum { N = 4000 };
	fks s;
	int *fds = stalled_start(&s, N);
	int opened = stalled_bodies(s.port, fds, N, ""), refused = 0, closed = 0;
	long t0 = fk_mono_ms();
	for (int i = 0; i < N; i++) { /* all within a generous 60 s */
		if (fds[i] < 0)
			continue;
		long left = 60000 - (fk_mono_ms() - t0);
		refused += fks_read_status(fds[i], left > 0 ? left : 1) == 401;
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
 * a well-behaved client is still answered (a GET, and a POST with its body within a few of its
 * 503s' Retry-After), and every stalled
 * body is cut (10 s without a byte; all within a generous 90 s). Before, the connections were
 * "busy" and never cut, the server sat at its 4,000-connection cap and refused the client. */
void test_floods__stalled_bodies_from_many_addresses_do_not_starve_a_client(void **state)
{
	(void)state;
	enum { N = 4000 };
	fks s;
	int *fds = stalled_start(&s, N);
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
	/* a well-behaved client honours a 503's Retry-After (1 s): the budget of bodies in memory
	 * may be short for a moment while the flood's cut bodies give their room back */
	int tries = 1;
	r = fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", h, "{\"timeout\":30}", 14);
	while (r->curl_rc == 0 && r->status == 503 && strstr(r->headers, "Retry-After: 1") &&
	       tries < 10) {
		fkr_free(r);
		fk_sleep_ms(1000); /* as Retry-After says */
		tries++;
		r = fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", h, "{\"timeout\":30}",
		            14);
	}
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 404);
	fkr_free(r);
	print_message("the POST answered at try %d\n", tries);
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
void test_floods__a_stalled_body_is_cut(void **state)
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
