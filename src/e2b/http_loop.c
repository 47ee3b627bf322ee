/*
 * e2b/http_loop.c: the client's multiplexing loop of HTTPS calls (http_int.h). A thread of
 * ours (created on the first HTTPS call) drives one multi handle that asks for HTTP/2 (ALPN)
 * with CURLPIPE_MULTIPLEX, so concurrent calls to one host share a connection, at most
 * SBX_HTTP_MAX_STREAMS streams each (E2B's cap; curl opens another connection beyond it).
 * Where the server speaks only HTTP/1.1 the loop keeps one connection per concurrent call, as
 * the pairs do. A call's thread still runs its own on_data callback: the loop thread only
 * queues the bytes (pausing the transfer past SBX_HTTP_INBOX_HIGH) and wakes the call's
 * eventfd; the caller's thread waits on that eventfd, its abort signal and its deadline.
 *
 * Commands reach the loop thread through loop.queue under loop.mu (add, remove, unpause),
 * with a write to loop.wfd; a call's lstate says where it stands, and its caller frees it only
 * once it is LS_OUT.
 *
 * The loop polls the sockets curl names in its socket callback and drives curl with
 * curl_multi_socket_action, never curl_multi_perform: curl 7.88's perform runs every transfer
 * of the multi each time (and each running one polls its socket in Curl_readwrite: one poll(2)
 * each), so with n calls in flight every event cost O(n) (docs/internals/exec-cost.md "Many
 * execs in flight"). An event on a socket runs the transfers of that connection (multi_socket
 * still visits each transfer on a shared HTTP/2 socket), a timer the transfers it is for.
 */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2b/http_int.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define LOOP_STACK     (1u << 20)      /* the loop thread's stack (curl, OpenSSL, nghttp2) */
#define LOOP_ORIGINS   64              /* origins remembered (idle ones are forgotten beyond) */
#define CALLER_WAIT_MS (3600u * 1000u) /* a caller's longest poll without a deadline */

static void efd_signal(int fd)
{
	uint64_t one = 1;
	ssize_t w;

	do
		w = write(fd, &one, sizeof(one));
	while (w < 0 && errno == EINTR);
	/* EAGAIN: the counter is already non-zero, the caller wakes anyway */
}

static void efd_clear(int fd)
{
	uint64_t v;
	ssize_t r;

	do
		r = read(fd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
}

/* Wake the loop thread (a command waits, or stop). */
static void loop_wake(http_loop *L)
{
	efd_signal(L->wfd);
}

/* Under loop.mu: give the loop thread a command about `c`. */
static void loop_queue(http_loop *L, sbx_http_call *c)
{
	if (!c->queued) {
		c->lnext = L->queue;
		L->queue = c;
		c->queued = true;
	}
}

/* Under loop.mu: take `c` out of the command queue. */
static void loop_unqueue(http_loop *L, sbx_http_call *c)
{
	sbx_http_call **pp;

	if (!c->queued)
		return;
	for (pp = &L->queue; *pp; pp = &(*pp)->lnext)
		if (*pp == c) {
			*pp = c->lnext;
			break;
		}
	c->queued = false;
}

/*
 * The loop thread's write callback for a 200 streamed to on_data: queue for the caller. The
 * caller is woken once the round's socket actions are done (loop_wake_due), not at the
 * chunk: one socket action delivers several (a TLS record each, 2.8 on average for a 100 MiB
 * stream here), and a caller woken at the first one took it, slept, and was woken again for
 * the next, preempting the loop thread each time (docs/internals/exec-cost.md "Waking the
 * caller once a round").
 */
size_t sbx__http_loop_put(sbx_http_call *c, const char *ptr, size_t n)
{
	http_loop *L = &c->h->loop;
	bool wake = false;
	size_t ret = n;

	pthread_mutex_lock(&L->mu);
	if (c->discard) {
		/* the caller stopped reading: dropped */
	} else if (c->inbox.len > 0 && c->inbox.len + n > SBX_HTTP_INBOX_HIGH) {
		c->paused = true; /* curl keeps the chunk; the caller's next take resumes it */
		ret = CURL_WRITEFUNC_PAUSE;
	} else if (sbx_buf_put(&c->inbox, ptr, n) < 0) {
		c->loop_oom = true;
		wake = true;
		ret = 0; /* fails the transfer */
	} else if (c->req.wake_at_end) {
		/* it crossed the mark: the caller sleeps until the end otherwise */
		wake = c->inbox.len - n < SBX_HTTP_LAZY_WAKE && c->inbox.len >= SBX_HTTP_LAZY_WAKE;
	} else {
		wake = c->inbox.len == n; /* it was empty: the caller may be asleep */
	}
	if (wake && !c->wake_due) {
		c->wake_due = true;
		c->dnext = L->due;
		L->due = c;
	}
	pthread_mutex_unlock(&L->mu);
	return ret;
}

/*
 * Wake the callers sbx__http_loop_put queued this round. Run by the loop thread after each
 * batch of socket actions, resumes and admissions; a call that leaves the loop's hands
 * (loop_out, after which its caller may free it) leaves loop.due first.
 */
static void loop_wake_due(http_loop *L)
{
	sbx_http_call *c, *next;

	pthread_mutex_lock(&L->mu);
	c = L->due;
	L->due = NULL;
	for (next = c; next; next = next->dnext)
		next->wake_due = false;
	pthread_mutex_unlock(&L->mu);
	for (; c; c = next) {
		next = c->dnext;
		efd_signal(c->efd);
	}
}

/*
 * Origins (scheme://host:port) the loop has talked to: the loop thread's own. Unless an
 * origin is known to speak HTTP/1.1 only, a call that makes curl open a connection (the first
 * one, or the others are at their stream cap) is the only one let through until that
 * connection is up (TLS and ALPN done); the calls after it wait here, then share it. Without
 * this curl 7.88 opens a connection for every call that arrives during the handshake (8
 * connections for 12 calls at a server cap of 5, instead of 3).
 */
struct loop_origin {
	char *key;
	bool known;             /* its protocol is known: */
	bool h2;                /* HTTP/2 (else HTTP/1.1: no call is ever held) */
	size_t active;          /* calls of this origin in the multi */
	sbx_http_call *opening; /* the call opening a connection; others are held meanwhile */
	sbx_http_call *held;    /* FIFO through hnext */
	sbx_http_call **held_tail;
};

static void origin_free(loop_origin *o)
{
	if (o) {
		sbx__free(o->key);
		sbx__free(o);
	}
}

/* The origin of `url`, made on first use (NULL: out of memory; the call goes unmanaged). */
static loop_origin *origin_of(http_loop *L, const char *url)
{
	const char *p = strstr(url, "://");
	size_t n = p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : strlen(url), i;
	loop_origin *o, **grown;

	for (i = 0; i < L->norigins; i++)
		if (strlen(L->origins[i]->key) == n && memcmp(L->origins[i]->key, url, n) == 0)
			return L->origins[i];
	/* forget idle origins first (a provider may see many sandboxes) */
	for (i = 0; i < L->norigins && L->norigins >= LOOP_ORIGINS;) {
		o = L->origins[i];
		if (o->active == 0 && !o->opening && !o->held) {
			origin_free(o);
			L->origins[i] = L->origins[--L->norigins];
		} else {
			i++;
		}
	}
	if (L->norigins == L->corigins) {
		size_t cap = L->corigins ? L->corigins * 2 : 8;
		if (!(grown = sbx__realloc(L->origins, cap * sizeof(*grown))))
			return NULL;
		L->origins = grown;
		L->corigins = cap;
	}
	if (!(o = sbx__calloc(1, sizeof(*o))) || !(o->key = sbx__calloc(1, n + 1))) {
		sbx__free(o);
		return NULL;
	}
	memcpy(o->key, url, n);
	o->held_tail = &o->held;
	L->origins[L->norigins++] = o;
	return o;
}

/* Under loop.mu: a call leaves the loop's hands; its caller may free it from now on. */
static void loop_out(http_loop *L, sbx_http_call *c)
{
	sbx_http_call **pp;

	if (c->wake_due) { /* woken by its end, or removed at its caller's word: not later */
		for (pp = &L->due; *pp && *pp != c; pp = &(*pp)->dnext)
			;
		if (*pp)
			*pp = c->dnext;
		c->wake_due = false;
	}
	c->lstate = LS_OUT;
	pthread_cond_broadcast(&L->cond);
}

/* The loop thread: the call's transfer ended with `result`; its caller is woken and owns it. */
static void loop_end(http_loop *L, sbx_http_call *c, CURLcode result)
{
	pthread_mutex_lock(&L->mu);
	c->ldone = true;
	c->lresult = result;
	efd_signal(c->efd); /* before loop_out: from then on the caller may free it */
	loop_out(L, c);
	pthread_mutex_unlock(&L->mu);
}

/* The loop thread: a call that left the multi no longer counts for its origin. */
static void origin_leave(http_loop *L, sbx_http_call *c, bool learn)
{
	loop_origin *o = c->origin;
	long v = 0;

	if (!o)
		return;
	o->active--;
	if (learn && !o->known &&
	    curl_easy_getinfo(c->pair.easy, CURLINFO_HTTP_VERSION, &v) == CURLE_OK && v != 0) {
		o->known = true;
		o->h2 = v == CURL_HTTP_VERSION_2_0;
	}
	if (o->opening == c)
		o->opening = NULL;
	(void)L;
}

/* The protocol ALPN chose on the call's (connected) connection: 1 h2, 0 other, -1 unknown. */
static int alpn_h2(CURL *e)
{
	struct curl_tlssessioninfo *ti = NULL;
	const unsigned char *proto = NULL;
	unsigned int len = 0;

	if (curl_easy_getinfo(e, CURLINFO_TLS_SSL_PTR, &ti) != CURLE_OK || !ti ||
	    ti->backend != CURLSSLBACKEND_OPENSSL || !ti->internals)
		return -1;
	SSL_get0_alpn_selected((SSL *)ti->internals, &proto, &len);
	return len == 2 && memcmp(proto, "h2", 2) == 0;
}

/* The loop thread: into the multi, or held while another call of an h2 origin connects. */
static void loop_admit(http_loop *L, sbx_http_call *c)
{
	loop_origin *o = c->origin;
	int running;

	if (o && o->opening) {
		c->hnext = NULL;
		*o->held_tail = c;
		o->held_tail = &c->hnext;
		pthread_mutex_lock(&L->mu);
		c->lstate = LS_HELD;
		pthread_mutex_unlock(&L->mu);
		return;
	}
	c->opened = false;
	if (curl_multi_add_handle(L->multi, c->pair.easy) != CURLM_OK) {
		loop_end(L, c, CURLE_OUT_OF_MEMORY);
		return;
	}
	pthread_mutex_lock(&L->mu);
	c->lstate = LS_IN;
	pthread_mutex_unlock(&L->mu);
	if (!o)
		return;
	o->active++;
	if (!o->known || o->h2) {
		/* curl picks the call's connection now (the handle's timer is due at once, and
		 * with it only what else is due): did it have to open one? */
		L->timer_set = false;
		(void)curl_multi_socket_action(L->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		if (c->opened)
			o->opening = c;
	}
}

/* The loop thread: the opening connections that are up let their origins' held calls go. */
static void origins_release(http_loop *L)
{
	curl_off_t pre;
	loop_origin *o;
	sbx_http_call *c;

	for (size_t i = 0; i < L->norigins; i++) {
		o = L->origins[i];
		if (o->opening &&
		    curl_easy_getinfo(o->opening->pair.easy, CURLINFO_PRETRANSFER_TIME_T, &pre) ==
		        CURLE_OK &&
		    pre > 0) {
			/* connected (TLS and ALPN done): the request is going out */
			if (!o->known) {
				/* not knowing means HTTP/1.1: never serialise its connections */
				o->known = true;
				o->h2 = alpn_h2(o->opening->pair.easy) == 1;
			}
			o->opening = NULL;
		}
		while (!o->opening && (c = o->held)) {
			if (!(o->held = c->hnext))
				o->held_tail = &o->held;
			loop_admit(L, c);
		}
	}
}

/* CURLOPT_OPENSOCKETFUNCTION of the loop's calls: notes that the call opens a connection. */
static curl_socket_t loop_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	sbx_http_call *c = ud;

	if (purpose == CURLSOCKTYPE_IPCXN)
		c->opened = true;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* The loop thread: take a held call out of its origin's queue. */
static void origin_unhold(sbx_http_call *c)
{
	loop_origin *o = c->origin;
	sbx_http_call **pp;

	for (pp = &o->held; *pp; pp = &(*pp)->hnext)
		if (*pp == c) {
			*pp = c->hnext;
			break;
		}
	o->held_tail = &o->held;
	while (*o->held_tail)
		o->held_tail = &(*o->held_tail)->hnext;
}

/* The loop thread, under loop.mu: the command queue emptied; new calls to admit (in order)
 * and calls to resume come back through their anext. */
static void loop_commands(http_loop *L, sbx_http_call **admit, sbx_http_call **resume)
{
	sbx_http_call *c, **admit_tail = admit;

	*admit = *resume = NULL;
	while ((c = L->queue)) {
		L->queue = c->lnext;
		c->queued = false;
		if (c->lstate == LS_ADD) {
			c->lstate = LS_ADMIT; /* in order, by the caller */
			c->anext = NULL;
			*admit_tail = c;
			admit_tail = &c->anext;
			continue;
		}
		if (c->want_remove && c->lstate == LS_IN) {
			curl_multi_remove_handle(L->multi, c->pair.easy);
			origin_leave(L, c, false);
			loop_out(L, c);
		} else if (c->want_remove && c->lstate == LS_HELD) {
			origin_unhold(c);
			loop_out(L, c);
		}
		if (c->lstate == LS_IN && c->want_unpause) {
			c->want_unpause = false;
			c->anext = *resume;
			*resume = c;
		}
	}
}

/* The loop thread: the transfers curl finished leave the multi; their callers are woken. */
static void loop_finished(http_loop *L)
{
	sbx_http_call *c;
	CURLMsg *msg;
	int queued;

	while ((msg = curl_multi_info_read(L->multi, &queued))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		c = NULL;
		if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c) !=
		        CURLE_OK ||
		    !c)
			continue;
		CURLcode result = msg->data.result; /* msg is invalid after the removal */
		curl_multi_remove_handle(L->multi, c->pair.easy);
		origin_leave(L, c, true);
		loop_end(L, c, result);
	}
}

/* CURLMOPT_SOCKETFUNCTION: curl's interest in socket `s` (the loop thread's, in curl calls). */
static int loop_socket_cb(CURL *e, curl_socket_t s, int what, void *ud, void *sockp)
{
	http_loop *L = ud;
	size_t i = (size_t)(uintptr_t)sockp, last;
	struct pollfd *grown;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (i == 0 || i >= L->npfd || L->pfd[i].fd != s)
			return 0;
		last = --L->npfd;
		if (i != last) {
			L->pfd[i] = L->pfd[last];
			(void)curl_multi_assign(L->multi, L->pfd[i].fd, (void *)(uintptr_t)i);
		}
		return 0;
	}
	if (i == 0 || i >= L->npfd || L->pfd[i].fd != s) {
		if (L->npfd == L->cpfd) {
			size_t cap = L->cpfd * 2;
			if (!(grown = sbx__realloc(L->pfd, cap * sizeof(*grown))))
				return -1; /* curl fails the transfer */
			L->pfd = grown;
			if (!(grown = sbx__realloc(L->ready, cap * sizeof(*grown))))
				return -1;
			L->ready = grown;
			L->cpfd = cap;
		}
		i = L->npfd++;
		L->pfd[i].fd = s;
		if (curl_multi_assign(L->multi, s, (void *)(uintptr_t)i) != CURLM_OK) {
			L->npfd--;
			return -1;
		}
	}
	L->pfd[i].events =
	    (short)(((what & CURL_POLL_IN) ? POLLIN : 0) | ((what & CURL_POLL_OUT) ? POLLOUT : 0));
	L->pfd[i].revents = 0;
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: when curl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT). */
static int loop_timer_cb(CURLM *m, long ms, void *ud)
{
	http_loop *L = ud;

	(void)m;
	L->timer_set = ms >= 0;
	if (ms >= 0)
		L->timer_due_ms = sbx__now_ms() + (uint64_t)ms;
	return 0;
}

/* The loop thread: wait for a socket, the timer or a command, then let curl act on it. */
static void loop_poll(http_loop *L)
{
	uint64_t now;
	int wait = POLL_SLICE_MS, n, running, bits;
	size_t nready = 0;

	if (L->timer_set) {
		now = sbx__now_ms();
		wait = L->timer_due_ms <= now                  ? 0
		       : L->timer_due_ms - now < POLL_SLICE_MS ? (int)(L->timer_due_ms - now)
		                                               : POLL_SLICE_MS;
	}
	n = poll(L->pfd, L->npfd, wait);
	if (n > 0) {
		if (L->pfd[0].revents)
			efd_clear(L->wfd);
		/* curl's callbacks change pfd while it acts: the ready ones first */
		for (size_t i = 1; i < L->npfd; i++)
			if (L->pfd[i].revents)
				L->ready[nready++] = L->pfd[i];
		for (size_t i = 0; i < nready; i++) {
			bits =
			    ((L->ready[i].revents & (POLLIN | POLLHUP)) ? CURL_CSELECT_IN : 0) |
			    ((L->ready[i].revents & POLLOUT) ? CURL_CSELECT_OUT : 0) |
			    ((L->ready[i].revents & (POLLERR | POLLNVAL)) ? CURL_CSELECT_ERR : 0);
			(void)curl_multi_socket_action(L->multi, L->ready[i].fd, bits, &running);
		}
	}
	if (L->timer_set && sbx__now_ms() >= L->timer_due_ms) {
		L->timer_set = false; /* curl sets it again when something else is due */
		(void)curl_multi_socket_action(L->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
	loop_wake_due(L);
}

static void *loop_main(void *arg)
{
	sbx_http *h = arg;
	http_loop *L = &h->loop;
	sbx_http_call *c, *resume, *admit;

	for (;;) {
		pthread_mutex_lock(&L->mu);
		if (L->stop) {
			pthread_mutex_unlock(&L->mu);
			break;
		}
		loop_commands(L, &admit, &resume);
		pthread_mutex_unlock(&L->mu);
		/*
		 * Outside the lock: resuming delivers the held chunk to sbx__http_loop_put at
		 * once. The callers cannot free these calls meanwhile: their removal waits for
		 * the next round.
		 */
		for (c = resume; c; c = resume) {
			resume = c->anext;
			(void)curl_easy_pause(c->pair.easy, CURLPAUSE_CONT);
		}
		for (c = admit; c; c = admit) {
			admit = c->anext;
			c->origin = origin_of(L, c->req.url);
			loop_admit(L, c);
		}
		loop_wake_due(L); /* resumes and admissions may have delivered chunks */
		loop_finished(L);
		origins_release(L);
		loop_poll(L);
	}
	return NULL;
}

/* The loop's poll set and wake eventfd (after curl_multi_cleanup, whose callbacks use them). */
static void loop_free_poll(http_loop *L)
{
	if (L->pfd && L->wfd >= 0)
		close(L->wfd);
	sbx__free(L->pfd);
	sbx__free(L->ready);
	L->pfd = L->ready = NULL;
	L->npfd = L->cpfd = 0;
	L->wfd = -1;
}

/* The loop, started on first use. false: no loop (the call uses a pair). */
bool sbx__http_loop_ready(sbx_http *h)
{
	http_loop *L = &h->loop;
	pthread_attr_t attr;
	sigset_t all, old;
	bool ok;

	pthread_mutex_lock(&h->mu);
	if (!L->started && !L->failed) {
		L->wfd = -1;
		L->cpfd = 8;
		L->npfd = 1;
		ok = (L->pfd = sbx__calloc(L->cpfd, sizeof(*L->pfd))) != NULL &&
		     (L->ready = sbx__calloc(L->cpfd, sizeof(*L->ready))) != NULL &&
		     (L->wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0 &&
		     (L->multi = curl_multi_init()) != NULL &&
		     curl_multi_setopt(L->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX) ==
		         CURLM_OK &&
		     curl_multi_setopt(L->multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
		                       (long)SBX_HTTP_MAX_STREAMS) == CURLM_OK &&
		     curl_multi_setopt(L->multi, CURLMOPT_SOCKETFUNCTION, loop_socket_cb) ==
		         CURLM_OK &&
		     curl_multi_setopt(L->multi, CURLMOPT_SOCKETDATA, L) == CURLM_OK &&
		     curl_multi_setopt(L->multi, CURLMOPT_TIMERFUNCTION, loop_timer_cb) ==
		         CURLM_OK &&
		     curl_multi_setopt(L->multi, CURLMOPT_TIMERDATA, L) == CURLM_OK &&
		     pthread_attr_init(&attr) == 0;
		if (L->pfd) {
			L->pfd[0].fd = L->wfd;
			L->pfd[0].events = POLLIN;
		}
		if (ok) {
			(void)pthread_attr_setstacksize(&attr, LOOP_STACK);
			/* no signal handler of the application runs on our thread */
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			ok = pthread_create(&L->thread, &attr, loop_main, h) == 0;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			pthread_attr_destroy(&attr);
		}
		if (!ok) {
			if (L->multi)
				curl_multi_cleanup(L->multi);
			L->multi = NULL;
			loop_free_poll(L);
		}
		L->started = ok;
		L->failed = !ok;
		L->pid = getpid();
	}
	/* a child forked after the start has no loop thread: its calls use the pairs */
	ok = L->started && L->pid == getpid();
	pthread_mutex_unlock(&h->mu);
	return ok;
}

void sbx__http_loop_stop(sbx_http *h)
{
	http_loop *L = &h->loop;

	if (L->started && L->pid != getpid()) {
		L->started = false; /* a forked child: no thread to join; the multi is left */
	} else if (L->started) {
		pthread_mutex_lock(&L->mu);
		L->stop = true;
		pthread_mutex_unlock(&L->mu);
		loop_wake(L);
		pthread_join(L->thread, NULL);
		curl_multi_cleanup(L->multi);
		loop_free_poll(L);
		L->started = false;
	}
	for (size_t i = 0; i < L->nidle; i++)
		curl_easy_cleanup(L->idle[i]);
	L->nidle = 0;
	for (size_t i = 0; i < L->nidle_efd; i++)
		close(L->idle_efd[i]);
	L->nidle_efd = 0;
	for (size_t i = 0; i < L->norigins; i++)
		origin_free(L->origins[i]);
	sbx__free(L->origins);
	L->origins = NULL;
	L->norigins = L->corigins = 0;
}

/*
 * An ended call's easy handle (reset) and eventfd, else new ones: one lock for both. A kept
 * eventfd may still count a wake-up its last caller did not read; every waiter checks the
 * call's state before it sleeps and after it wakes, so that costs one spurious wake-up at most,
 * where a new eventfd per call costs two system calls (eventfd2, close) every call.
 */
static int loop_take_parts(http_loop *L, CURL **easy)
{
	CURL *e = NULL;
	int fd = -1;

	pthread_mutex_lock(&L->mu);
	if (L->nidle > 0)
		e = L->idle[--L->nidle];
	if (L->nidle_efd > 0)
		fd = L->idle_efd[--L->nidle_efd];
	pthread_mutex_unlock(&L->mu);
	if (e)
		curl_easy_reset(e);
	else
		e = curl_easy_init();
	*easy = e;
	if (fd < 0)
		fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return fd;
}

/* Keep an ended call's easy handle and eventfd for the next calls (either may be absent). */
static void loop_give_parts(http_loop *L, CURL *e, int fd)
{
	pthread_mutex_lock(&L->mu);
	if (e && L->nidle < LOOP_IDLE) {
		L->idle[L->nidle++] = e;
		e = NULL;
	}
	if (fd >= 0 && L->nidle_efd < LOOP_IDLE) {
		L->idle_efd[L->nidle_efd++] = fd;
		fd = -1;
	}
	pthread_mutex_unlock(&L->mu);
	if (e)
		curl_easy_cleanup(e);
	if (fd >= 0)
		close(fd);
}

/* Hand a set-up call to the loop thread. */
void sbx__http_loop_add(sbx_http_call *c)
{
	http_loop *L = &c->h->loop;

	pthread_mutex_lock(&L->mu);
	c->lstate = LS_ADD;
	loop_queue(L, c);
	pthread_mutex_unlock(&L->mu);
	loop_wake(L);
}

/* Take the call out of the loop (an unfinished transfer is cut); waits for the loop thread. */
static void loop_detach(sbx_http_call *c)
{
	http_loop *L = &c->h->loop;
	bool wake = false;

	pthread_mutex_lock(&L->mu);
	c->discard = true;
	if (c->lstate == LS_ADD) {
		loop_unqueue(L, c);
		c->lstate = LS_OUT;
	}
	if (c->lstate != LS_NONE && c->lstate != LS_OUT) {
		c->want_remove = true;
		loop_queue(L, c);
		wake = true;
	}
	pthread_mutex_unlock(&L->mu);
	if (wake)
		loop_wake(L);
	pthread_mutex_lock(&L->mu);
	while (c->lstate != LS_NONE && c->lstate != LS_OUT)
		pthread_cond_wait(&L->cond, &L->mu);
	loop_unqueue(L, c); /* a late unpause command */
	pthread_mutex_unlock(&L->mu);
}

/*
 * The caller stopped reading: the rest is dropped; give the transfer a moment to end. The loop
 * thread is woken only to resume a paused transfer: the discard flag needs no wake-up (the
 * loop reads it with the next bytes), and the end of a stream the loop is reading wakes it.
 */
static void loop_drain(sbx_http_call *c)
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
			loop_queue(L, c);
		}
		done = c->ldone;
		pthread_mutex_unlock(&L->mu);
		if (done || (now = sbx__now_ms()) >= end)
			return;
		if (wake)
			loop_wake(L);
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
		loop_queue(L, c);
		wake = true;
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
		loop_wake(L);
}

/* sbx__http_call_wait() of a loop call: the caller's thread runs on_data. */
int sbx__http_loop_wait(sbx_http_call *c, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	http_loop *L = &c->h->loop;
	int sigfd = sig ? sbx_signal_fd(sig) : -1, rc;
	struct pollfd pfd[2];
	bool done, oom;
	uint64_t now, wait;

	for (;;) {
		if (c->stopped) {
			loop_drain(c);
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
		/*
		 * Until the deadline: the loop writes the eventfd for everything the checks above
		 * read (under loop.mu, so a write after them leaves it readable), and the signal's
		 * fd is readable once aborted. A slice would wake a long exec's thread every second
		 * for nothing (docs/internals/exec-cost.md "Many execs in flight").
		 */
		wait = deadline_ms && deadline_ms - now < CALLER_WAIT_MS ? deadline_ms - now
		                                                         : CALLER_WAIT_MS;
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

/* A loop call's own state: its eventfd, its queues, an easy handle. */
int sbx__http_loop_call_init(sbx_http_call *c)
{
	c->looped = true;
	sbx_buf_init(&c->inbox, SBX_HTTP_INBOX_HIGH + (64u << 20));
	sbx_buf_init(&c->taken, SBX_HTTP_INBOX_HIGH + (64u << 20));
	if ((c->efd = loop_take_parts(&c->h->loop, &c->pair.easy)) < 0)
		return errno == ENOMEM ? SBX_ENOMEM : SBX_EINTERNAL;
	if (!c->pair.easy)
		return SBX_ENOMEM;
	return 0;
}

CURLcode sbx__http_loop_setopt(sbx_http_call *c)
{
	CURL *e = c->pair.easy;
	CURLcode rc = CURLE_OK;

	/* HTTP/2 where ALPN offers it; wait for a connection that may multiplex */
	rc |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	rc |= curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, loop_open_socket);
	rc |= curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
	return rc;
}

void sbx__http_loop_call_release(sbx_http_call *c)
{
	if (c->added)
		loop_detach(c); /* cuts an unfinished transfer */
	if (c->pair.easy) {
		curl_easy_setopt(c->pair.easy, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(c->pair.easy, CURLOPT_MIMEPOST, NULL);
		curl_easy_setopt(c->pair.easy, CURLOPT_ERRORBUFFER, NULL);
	}
	loop_give_parts(&c->h->loop, c->pair.easy, c->efd);
	c->pair.easy = NULL;
	c->efd = -1;
	sbx_buf_dispose(&c->inbox);
	sbx_buf_dispose(&c->taken);
}
