/*
 * tests/unit/loopback.c: a scripted HTTP server on 127.0.0.1 (loopback.h).
 */
#define _GNU_SOURCE
#include "loopback.h"
#include "unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Read one request: the headers, then as many body bytes as Content-Length says. */
static bool read_request(int fd, char *req, size_t cap)
{
	size_t got = 0, need;
	ssize_t n;
	char *end, *cl;

	while (got < cap - 1 && (n = read(fd, req + got, cap - 1 - got)) > 0) {
		got += (size_t)n;
		req[got] = '\0';
		if (!(end = strstr(req, "\r\n\r\n")))
			continue;
		cl = strcasestr(req, "Content-Length: ");
		need = (size_t)(end + 4 - req) + (cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
		if (got >= need)
			return true;
	}
	return got > 0;
}

static void *serve(void *arg)
{
	lb_server *s = arg;
	char *req = malloc(1 << 16);
	struct pollfd p[2];

	assert_non_null(req);
	for (;;) {
		p[0] = (struct pollfd){s->lfd, POLLIN, 0};
		p[1] = (struct pollfd){s->stop[0], POLLIN, 0};
		if (poll(p, 2, -1) < 0 || p[1].revents)
			break;
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		req[0] = '\0';
		if (read_request(fd, req, 1 << 16)) {
			int hold = s->answer(fd, req, s->payload);
			if (hold != LB_CLOSE) {
				(void)!write(s->held[1], "h", 1);
				p[0] = (struct pollfd){s->stop[0], POLLIN, 0};
				(void)poll(p, 1, hold);
			}
		}
		close(fd);
	}
	free(req);
	return NULL;
}

void lb_start(lb_server *s, lb_answer_fn answer, void *payload)
{
	struct sockaddr_in a = {0};
	socklen_t alen = sizeof(a);

	s->answer = answer;
	s->payload = payload;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pipe(s->stop), 0);
	assert_int_equal(pipe(s->held), 0);
	assert_int_equal(pthread_create(&s->th, NULL, serve, s), 0);
}

void lb_stop(lb_server *s)
{
	(void)!write(s->stop[1], "x", 1);
	pthread_join(s->th, NULL);
	close(s->lfd);
	for (int i = 0; i < 2; i++) {
		close(s->stop[i]);
		close(s->held[i]);
	}
}

void lb_wait_held(lb_server *s)
{
	char b;

	assert_int_equal(read(s->held[0], &b, 1), 1);
}
