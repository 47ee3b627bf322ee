/*
 * e2b/http_loop_wait.c: the caller's side of a loop call (http_int.h; the loop itself is
 * http_loop.c): its wait, which runs the call's on_data on the caller's thread and, when the
 * call is the loop's driver, moves the loop there too (http_loop.c "Driving"); the drain of a
 * stopped stream; the take of what the loop queued.
 */
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "e2b/http_int.h"
#include "util/clock.h"
#include "util/err.h"

static void efd_clear(int fd)
{
	uint64_t v;
	ssize_t r;

	do
		r = read(fd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
}

/*
 * The caller stopped reading: the rest is dropped; give the transfer a moment to end. The loop
 * thread is woken only to resume a paused transfer: the discard flag needs no wake-up (the
 * loop reads it with the next bytes), and the end of a stream the loop is reading wakes it.
 */
static void loop_drain(sbx_http_call *c, bool drives)
{
	http_loop *L = &c->h->loop;
	uint64_t end = sbx__now_ms() + SBX_HTTP_DRAIN_MS, now;
	struct pollfd pfd;
	bool done, wake;

	for (;;) {
		pthread_mutex_lock(&L->mu);
		c->discard = true;
		sbx_buf_clear(&c->inbox);
		wake = c->paused && c->lstate == LS_IN;
		if (wake) {
			c->paused = false;
			c->want_unpause = true;
			sbx__http_loop_queue(L, c);
			wake = sbx__http_loop_notify(L);
		}
		done = c->ldone;
		pthread_mutex_unlock(&L->mu);
		if (done || (now = sbx__now_ms()) >= end)
			return;
		if (drives) { /* the rest of the stream comes through our own rounds */
			sbx__http_loop_round(L);
			pthread_mutex_lock(&L->mu);
			done = c->ldone;
			pthread_mutex_unlock(&L->mu);
			if (!done)
				(void)curl_multi_poll(L->multi, NULL, 0, (int)(end - now), NULL);
			continue;
		}
		if (wake)
			curl_multi_wakeup(L->multi);
		pfd.fd = c->efd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(end - now)) > 0)
			efd_clear(c->efd);
	}
}

/* The caller's thread: what the loop queued for a call, swapped into c->taken (the loop fills
 * the emptied other buffer meanwhile), a paused transfer resumed; whether the transfer ended
 * (its result, and a buffered body's error, copied to the caller's fields) or ran out of
 * memory. */
static void loop_take(sbx_http_call *c, bool *done, bool *oom)
{
	http_loop *L = &c->h->loop;
	bool wake = false;
	sbx_buf t;

	pthread_mutex_lock(&L->mu);
	t = c->inbox;
	c->inbox = c->taken;
	c->taken = t;
	if (c->paused && c->lstate == LS_IN) {
		c->paused = false;
		c->want_unpause = true;
		sbx__http_loop_queue(L, c);
		wake = sbx__http_loop_notify(L);
	}
	*done = c->ldone;
	*oom = c->loop_oom;
	if (*done) {
		c->result = c->lresult;
		if (c->lcb_code < 0 && c->cb_code == 0) {
			c->cb_code = c->lcb_code;
			c->cb_err = c->lcb_err;
		}
	}
	pthread_mutex_unlock(&L->mu);
	if (wake)
		curl_multi_wakeup(L->multi);
}

/*
 * The driver, between two takes: one round of the loop, then (nothing new for the call) a
 * poll of the multi that its abort signal ends too.
 */
static void loop_drive_once(sbx_http_call *c, int sigfd, uint64_t wait)
{
	http_loop *L = &c->h->loop;
	struct curl_waitfd wfd = {sigfd, CURL_WAIT_POLLIN, 0};
	bool news;

	sbx__http_loop_round(L);
	pthread_mutex_lock(&L->mu);
	news = c->inbox.len > 0 || c->ldone || c->loop_oom;
	pthread_mutex_unlock(&L->mu);
	if (!news)
		(void)curl_multi_poll(L->multi, sigfd >= 0 ? &wfd : NULL, sigfd >= 0 ? 1 : 0,
		                      (int)wait, NULL);
}

/* As sbx__http_loop_wait; `drives`: the call is the loop's driver, its waiter moves the multi. */
static int loop_wait(sbx_http_call *c, bool drives, uint64_t deadline_ms, sbx_signal *sig,
                     sbx_error *err)
{
	http_loop *L = &c->h->loop;
	int sigfd = sig ? sbx_signal_fd(sig) : -1, rc;
	struct pollfd pfd[2];
	bool done, oom;
	uint64_t now, wait;

	for (;;) {
		if (c->stopped) {
			loop_drain(c, drives);
			return 0;
		}
		if (c->cb_code < 0) {
			if (err && err->code == 0)
				*err = c->cb_err;
			return c->cb_code;
		}
		if (c->yield) {
			c->yield = false;
			return SBX_HTTP_YIELD;
		}
		loop_take(c, &done, &oom);
		if (c->taken.len > 0) {
			rc = c->req.on_data(c->taken.ptr, c->taken.len, c->req.payload, &c->cb_err);
			sbx_buf_clear(&c->taken);
			if (rc < 0) {
				c->cb_code = rc;
			} else if (rc == 1) {
				c->stopped = true;
			} else if (rc == 2) {
				c->yield = true;
			}
			if (rc < 0 || rc == 1) {
				pthread_mutex_lock(&L->mu);
				c->discard = true;
				pthread_mutex_unlock(&L->mu);
			}
			continue;
		}
		if (oom)
			return sbx__error_set(
			    err, SBX_ENOMEM, "%s: out of memory reading the response", c->req.what);
		if (done) {
			c->done = true;
			return SBX_HTTP_LOOP_DONE;
		}
		if (sig && sbx_signal_aborted(sig))
			return SBX_EABORTED;
		now = sbx__now_ms();
		if (deadline_ms && now >= deadline_ms)
			return SBX_ETIMEOUT;
		wait = deadline_ms && deadline_ms - now < POLL_SLICE_MS ? deadline_ms - now
		                                                        : POLL_SLICE_MS;
		if (drives) {
			loop_drive_once(c, sigfd, wait);
			continue;
		}
		pfd[0].fd = c->efd;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		pfd[1].fd = sigfd; /* poll() ignores a negative fd */
		pfd[1].events = POLLIN;
		pfd[1].revents = 0;
		if (poll(pfd, 2, (int)wait) > 0 && (pfd[0].revents & POLLIN))
			efd_clear(c->efd);
	}
}

/* sbx__http_call_wait() of a loop call: the caller's thread runs on_data (and drives the loop
 * when its call is the driver: see "Driving" above). */
int sbx__http_loop_wait(sbx_http_call *c, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	http_loop *L = &c->h->loop;
	bool drives;
	int rc;

	pthread_mutex_lock(&L->mu);
	if ((drives = L->driver == c))
		L->driving = true;
	pthread_mutex_unlock(&L->mu);
	rc = loop_wait(c, drives, deadline_ms, sig, err);
	if (drives) {
		/* the multi goes back; the loop thread moves what is left in it (this call too) */
		pthread_mutex_lock(&L->mu);
		L->driver = NULL;
		L->driving = false;
		if (L->parked && (L->nlive > 0 || L->queue))
			pthread_cond_signal(&L->park);
		pthread_mutex_unlock(&L->mu);
	}
	return rc;
}
