/*
 * tests/fake/server/floods_support.c — the helpers the floods test program's files share
 * (floods_test.h): the server's memory, raw POSTs and their answers, bodies of empty arrays and
 * Connect envelopes, the request log, answers' heads, a box port that never answers and
 * requests to it.
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

const char *g_bin;

/* ---- helpers -------------------------------------------------------------------------------- */

/* A /proc/<pid>/status field in kB (VmRSS, VmHWM). */
long status_kb(pid_t pid, const char *field)
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

void start(fks *s, const char *const *extra)
{
	fks_start_key(s, g_bin, KEY, extra);
}

/* A raw POST of `total` body bytes to `path` whose first `first` bytes are sent, stopping if
 * the server answers first: the connection. */
int body_begin(unsigned port, const char *path, const char *headers, const char *body, size_t total,
               size_t first)
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

/* POST `body` with `headers` (each ending in \r\n) on a raw connection, writing the body only
 * while the server has not answered; the answer's status (0: closed without one). */
int raw_post(unsigned port, const char *path, const char *headers, const void *body, size_t len)
{
	int fd = body_begin(port, path, headers, body, len, len);
	int st = fks_read_status(fd, 60000);
	close(fd);
	return st;
}

/* `[[],[],...,[]]` of about n bytes: jansson's most expensive text per byte. */
char *empty_arrays(size_t n)
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
char *envelope(const char *json, size_t n)
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

json_t *request_log(fks *s)
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
size_t entry_bytes(json_t *e)
{
	json_t *c = json_copy(e);
	json_object_del(c, "duration_ms");
	char *t = json_dumps(c, JSON_COMPACT);
	size_t n = strlen(t);
	free(t);
	json_decref(c);
	return n;
}

/* Port 8100 of box b accepts and never answers (/tmp/hang.py: `listen` makes its socket listen,
 * then it accepts forever); `then` runs after it starts (a shell command ending in " && ", or
 * ""), and the box waits (10 s at most) until `ready`, a shell condition, holds. */
void box_silent_port(fks *s, fks_box *b, const char *listen, const char *then, const char *ready)
{
	char *sh;
	assert_true(asprintf(&sh,
	                     "printf 'import socket\\ns=socket.socket()\\n%s"
	                     "c=[]\\nwhile 1: c.append(s.accept())\\n' > /tmp/hang.py && "
	                     "(nohup python3 /tmp/hang.py >/dev/null 2>&1 &) && %s"
	                     "for i in $(seq 100); do %s && break; sleep 0.1; done",
	                     listen, then, ready) >= 0);
	fks_box_sh(s, b, sh);
	free(sh);
}

/* n connections to s, each sending a GET of /x to port 8100 of box b: their fds. */
void requests_to_port_8100(fks *s, fks_box *b, int *fds, int n)
{
	char req[256];
	snprintf(req, sizeof(req), "GET /x HTTP/1.1\r\nHost: 8100-%s.e2b.localhost\r\n\r\n", b->id);
	for (int i = 0; i < n; i++) {
		fds[i] = fks_tcp_connect(s->port, false, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
	}
}

/* Polls (up to ms) the n fds not yet answered; ready[i]: fds[i] is readable. poll's count. */
int poll_unanswered(const int *fds, const bool *answered, bool *ready, int n, int ms)
{
	struct pollfd p[n];
	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){.fd = answered[i] ? -1 : fds[i], .events = POLLIN};
	int rc = poll(p, (nfds_t)n, ms);
	for (int i = 0; i < n; i++)
		ready[i] = rc > 0 && p[i].revents;
	return rc;
}

/* The answer's head on fd (up to max_ms), NUL-terminated in buf: its status, 0 when closed
 * without one, -1 on timeout. */
int read_head(int fd, char *buf, size_t cap, long max_ms)
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
