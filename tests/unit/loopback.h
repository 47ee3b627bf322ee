/*
 * tests/unit/loopback.h: a scripted HTTP server on 127.0.0.1 for the unit
 * tests. One thread accepts one connection at a time, reads its request whole
 * (the headers and a Content-Length body) and hands it to the test's answer
 * function, which writes what it likes; the connection is then closed, or held
 * open for a while or until lb_stop (a server that stalls).
 */
#ifndef SBX_TESTS_UNIT_LOOPBACK_H
#define SBX_TESTS_UNIT_LOOPBACK_H

#include <pthread.h>
#include <stddef.h>

/* What an answer function returns: close now, hold until lb_stop, or hold that many ms (> 0). */
#define LB_CLOSE 0
#define LB_HOLD  (-1)

/* Answer `req` (NUL-terminated, whole) on fd; LB_CLOSE, LB_HOLD or a hold in ms. */
typedef int (*lb_answer_fn)(int fd, const char *req, void *payload);

typedef struct lb_server {
	int port;
	int held[2]; /* a byte is written to held[1] each time an answered connection is held */
	/* private */
	int lfd, stop[2];
	lb_answer_fn answer;
	void *payload;
	pthread_t th;
} lb_server;

/* Listen on an ephemeral port of 127.0.0.1 (s->port) and serve with answer(payload). */
void lb_start(lb_server *s, lb_answer_fn answer, void *payload);
/* End every hold, stop serving and close the listening socket (later connects are refused). */
void lb_stop(lb_server *s);
/* Block until the server holds an answered connection open (one byte of s->held). */
void lb_wait_held(lb_server *s);

#endif
