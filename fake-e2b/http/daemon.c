/*
 * fake-e2b/http/daemon.c: the libmicrohttpd daemon: one thread per
 * connection, the per-request context, capped in-memory bodies (or the sink
 * that `begin` set), and the hooks of http.h.
 *
 * A watchdog closes connections that sit outside a request (slow or missing
 * headers, idle keep-alive) for too long, and much sooner while many do: one
 * client's thousands of half-open connections cannot starve the others.
 * (MHD's own connection timeout would also end streams whose client reads
 * slowly, so it stays off.) "Many" is a quarter of the connection cap, far
 * above what a busy client holds in flight (hundreds of streams), and a
 * connection whose request bytes wait unread in its socket is never cut: that
 * one waits for the server (a loaded machine, a burst of new connections), not
 * the server for it.
 *
 * Past EVICT_AT open connections, a new one closes the connection that has been
 * idle longest (same rule: never one in a request or with request bytes unread),
 * else the body stalled longest, else the request waiting longest on something
 * outside the server (fk_req_waiting: a sandbox's answer), instead of being
 * refused at the cap: a flood, even from the address every
 * local client shares (127.0.0.1), churns its own connections while a client's
 * new connection gets in at its first try.
 *
 * A request's body is read only after `begin` has let it through (it decides
 * authentication from the headers; a refused request is answered at once and
 * its connection closed by MHD without reading the body). While a connection
 * waits on its body it is "in body": it is cut when no body byte has arrived
 * for body_idle_ms (again: never while bytes wait unread), at most
 * BODY_PER_RANGE of them per address range (all of loopback is one range: any
 * local process can bind 127.0.0.2, 127.0.0.3, ...) are kept, the one stalled
 * longest giving way to a new one, and at the connection cap the one stalled
 * longest is evicted when no connection is idle.
 *
 * Bodies read into memory share a server-wide budget (http.h, body_budget): each admitted
 * body holds its buffer's size and its parse's budget from its headers on, so a flood of
 * large bodies, each within FK_MAX_BODY, cannot add up to the server's memory (250 bodies of
 * 8 MiB and their parses took 3.5 GB). One that does not fit is answered 503 from its headers,
 * after the bodies that arrive slowest (below BODY_RATE_FLOOR, in body for BODY_STALE_MS) were
 * cut to make room: a client trickling large announced bodies cannot hold the budget.
 *
 * A request answered from its headers while its client still sends the body
 * gets a lingering close, as nginx and Go's server do: MHD sends the answer and
 * shuts the socket's write side, and the watchdog keeps a duplicate of it open,
 * reading and discarding what arrives (nothing kept), until the client stops
 * (LINGER_IDLE_MS without a byte, LINGER_MS at most, LINGER_MAX sockets, the
 * oldest closed first). Without it the close with unread bytes resets the
 * connection, and a client that sends its body before reading (libcurl
 * without Expect, the library's streamed uploads) loses the answer to EPIPE.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

/* MHD refuses a connection past this many as it accepts it (a reset, its request unread). It
 * counts every connection it holds, the ones cut (conn_cut) too until their threads have closed
 * them, which on a loaded machine lags: 841 cut and not yet closed were measured beside a flood
 * of 10,000 with the server at a tenth of a CPU. There is no cap per client address: every
 * local process is 127.0.0.1 or can bind another loopback address, so one would refuse no
 * flood but only, past it, the clients on the flood's address (one of 3,500 left 500 above
 * EVICT_AT, less than that lag). */
#define CONNECTION_LIMIT 4000u
/* Open connections (not yet cut) past which a new one evicts the longest idle: a quarter below
 * the cap, room for the evicted ones' threads to close while a flood keeps arriving. */
#define EVICT_AT 3000u
/* Connections waiting on their bodies per address range (see range_of) before the one stalled
 * longest (if for BODY_STALE_MS) is cut for a new one. */
#define BODY_PER_RANGE 256u
#define BODY_STALE_MS  1000
/* Bytes a second below which a body in memory gives way when the budget is short (see above);
 * a body waits at most BUDGET_WAIT_MS for the room such cuts free. */
#define BODY_RATE_FLOOR (64u * 1024u)
#define BUDGET_WAIT_MS  2000
#define BUDGET_DEFAULT  ((size_t)256 << 20)
#define CHUNKED_FIRST   (64u * 1024u) /* a chunked body's first share: grown as it comes */
/* Lingering closes (see above). */
#define LINGER_MAX     512
#define LINGER_MS      10000
#define LINGER_IDLE_MS 2000
/* A request whose body took this much gives the freed memory back to the system. */
#define TRIM_AFTER (1024u * 1024u)

/* One open connection, known between MHD's STARTED and CLOSED notifications (its fd stays
 * open in between). */
typedef struct fk_conn {
	struct fk_conn *prev, *next;
	int fd;
	int busy;              /* in a request: headers complete, response not yet finished */
	int64_t idle_since_ms; /* CLOCK_MONOTONIC; when it left its last request or opened */
	int cut;
	int in_body;         /* admitted, its body not yet complete */
	int64_t progress_ms; /* in_body: when its last body bytes (or its headers) arrived */
	uint64_t range;      /* the client's address range (range_of) */
	size_t held;         /* bytes of the body budget its request holds */
	size_t body_got;     /* body bytes arrived since in_body */
	int waiting;         /* fk_req_waiting: on something outside the server, since waiting_ms */
	int64_t waiting_ms;
	int64_t body_since_ms;
	uint64_t id; /* fk_req_conn_id: never reused, so a cut by id cannot reach another */
} fk_conn;

struct fk_http {
	struct MHD_Daemon *daemon;
	fk_http_hooks hooks;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	fk_conn *conns;
	uint64_t next_id;
	size_t n_idle;              /* connections not in a request */
	size_t n_open;              /* connections open and not cut */
	size_t budget, budget_used; /* bodies in memory and their parses (http.h) */
	size_t budget_waiting;      /* promised to bodies waiting for what their cuts free */
	pthread_cond_t budget_cond; /* budget_used went down */
	unsigned idle_ms, crowd, crowd_idle_ms, body_idle_ms;
	pthread_t watchdog;
	int watchdog_started, stopping;
	struct {
		int fd;
		int64_t since_ms, last_ms;
	} linger[LINGER_MAX];
	size_t n_linger;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Cut k (h->lock held): its thread sees EOF and closes it. */
static void conn_cut(fk_http *h, fk_conn *k)
{
	k->cut = 1;
	k->in_body = 0;
	h->n_open--;
	shutdown(k->fd, SHUT_RDWR);
}

/* The address range a connection counts in for bodies: all of 127.0.0.0/8 and ::1 are one
 * (every local process can bind any of them), other IPv4 addresses by /24, IPv6 by /64. */
static uint64_t range_of(const struct sockaddr *sa)
{
	if (sa && sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		return (a >> 24) == 127 ? 1 : ((uint64_t)4 << 32) | (a >> 8);
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return 1;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			uint32_t v4 = ((uint32_t)a->s6_addr[12] << 24) |
			              ((uint32_t)a->s6_addr[13] << 16) |
			              ((uint32_t)a->s6_addr[14] << 8) | a->s6_addr[15];
			return (v4 >> 24) == 127 ? 1 : ((uint64_t)4 << 32) | (v4 >> 8);
		}
		uint64_t p = 0;
		for (int i = 0; i < 8; i++)
			p = (p << 8) | a->s6_addr[i];
		return p | 2; /* never 1 */
	}
	return 0;
}

static int unread_bytes(const fk_conn *k)
{
	int unread = 0;
	return ioctl(k->fd, FIONREAD, &unread) == 0 && unread > 0;
}

/* Whether k's body has stalled (h->lock held): in body, not cut, nothing unread. */
static int body_stalled(const fk_conn *k)
{
	return k->in_body && !k->cut && !unread_bytes(k);
}

/* The connection in body (of `range`, or any when 0) whose body stalled longest, but `except`
 * (h->lock held). */
static fk_conn *stalled_longest(fk_http *h, uint64_t range, const fk_conn *except)
{
	fk_conn *oldest = NULL;
	for (fk_conn *k = h->conns; k; k = k->next)
		if (k != except && (!range || k->range == range) && body_stalled(k) &&
		    (!oldest || k->progress_ms < oldest->progress_ms))
			oldest = k;
	return oldest;
}

/* Whether k may be cut for being idle (h->lock held): outside a request, not cut yet, and no
 * request bytes waiting unread in its socket. */
static int conn_idle(const fk_conn *k)
{
	return !k->busy && !k->cut && !unread_bytes(k);
}

/* Past EVICT_AT, cut the connection idle longest (h->lock held; `except` is the new one). */
static void evict_if_crowded(fk_http *h, const fk_conn *except)
{
	if (h->n_open <= EVICT_AT)
		return;
	fk_conn *oldest = NULL;
	for (fk_conn *k = h->conns; k; k = k->next)
		if (k != except && conn_idle(k) &&
		    (!oldest || k->idle_since_ms < oldest->idle_since_ms))
			oldest = k;
	if (!oldest) /* every connection is in a request: the body stalled longest goes */
		oldest = stalled_longest(h, 0, except);
	if (!oldest) /* else the request waiting longest on a sandbox (fk_req_waiting) */
		for (fk_conn *k = h->conns; k; k = k->next)
			if (k != except && k->waiting && !k->cut &&
			    (!oldest || k->waiting_ms < oldest->waiting_ms))
				oldest = k;
	if (oldest)
		conn_cut(h, oldest);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	fk_http *h = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		fk_conn *k = calloc(1, sizeof(*k));
		if (!k || !ci) {
			free(k);
			return;
		}
		k->fd = ci->connect_fd;
		const union MHD_ConnectionInfo *ai =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		k->range = range_of(ai ? ai->client_addr : NULL);
		/* small Connect frames and replies go out at once (no Nagle delay) */
		int one = 1;
		setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		k->idle_since_ms = mono_ms();
		pthread_mutex_lock(&h->lock);
		k->next = h->conns;
		if (h->conns)
			h->conns->prev = k;
		h->conns = k;
		h->n_idle++;
		h->n_open++;
		k->id = ++h->next_id;
		evict_if_crowded(h, k);
		pthread_mutex_unlock(&h->lock);
		*socket_context = k;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
		fk_conn *k = *socket_context;
		pthread_mutex_lock(&h->lock);
		if (k->prev)
			k->prev->next = k->next;
		else
			h->conns = k->next;
		if (k->next)
			k->next->prev = k->prev;
		if (!k->busy)
			h->n_idle--;
		if (!k->cut)
			h->n_open--;
		pthread_mutex_unlock(&h->lock);
		free(k);
		*socket_context = NULL;
	}
}

static fk_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* The connection starts (1) waiting on its request's body, got body bytes (2), or has it all
 * (0). Past BODY_PER_RANGE in its range, the one there stalled longest (BODY_STALE_MS at
 * least) is cut. */
static void conn_body(fk_http *h, struct MHD_Connection *c, int state, size_t got)
{
	fk_conn *k = conn_of(c);
	if (!k)
		return;
	pthread_mutex_lock(&h->lock);
	int64_t now = mono_ms();
	if (state == 1 && !k->cut) {
		k->in_body = 1;
		k->progress_ms = k->body_since_ms = now;
		k->body_got = 0;
		unsigned n = 0;
		for (fk_conn *o = h->conns; o; o = o->next)
			n += o->in_body && o->range == k->range;
		fk_conn *old = n > BODY_PER_RANGE ? stalled_longest(h, k->range, k) : NULL;
		if (old && now - old->progress_ms >= BODY_STALE_MS)
			conn_cut(h, old);
	} else if (state == 2) {
		k->progress_ms = now;
		k->body_got += got;
	} else if (state == 0) {
		k->in_body = 0;
	}
	pthread_mutex_unlock(&h->lock);
}

/* The connection enters (busy 1) or leaves (0) a request. */
static void conn_busy(fk_http *h, struct MHD_Connection *c, int busy)
{
	fk_conn *k = conn_of(c);
	if (!k)
		return;
	pthread_mutex_lock(&h->lock);
	k->in_body = 0;
	if (k->busy != busy) {
		k->busy = busy;
		if (busy)
			h->n_idle--;
		else
			h->n_idle++;
	}
	k->waiting = 0;
	k->idle_since_ms = mono_ms();
	pthread_mutex_unlock(&h->lock);
}

void fk_req_waiting(fk_req *r, int on)
{
	fk_http *h = r->http;
	fk_conn *k = h ? conn_of(r->conn) : NULL;
	if (!k)
		return;
	pthread_mutex_lock(&h->lock);
	k->waiting = on;
	k->waiting_ms = mono_ms();
	pthread_mutex_unlock(&h->lock);
}

uint64_t fk_req_conn_id(fk_req *r)
{
	fk_http *h = r->http;
	fk_conn *k = h ? conn_of(r->conn) : NULL;
	if (!k)
		return 0;
	pthread_mutex_lock(&h->lock);
	uint64_t id = k->id;
	pthread_mutex_unlock(&h->lock);
	return id;
}

void fk_http_cut_conn(fk_http *h, uint64_t id)
{
	if (!h || !id)
		return;
	pthread_mutex_lock(&h->lock);
	for (fk_conn *k = h->conns; k; k = k->next)
		if (k->id == id) {
			if (!k->cut)
				conn_cut(h, k);
			break;
		}
	pthread_mutex_unlock(&h->lock);
}

/* Keep a duplicate of fd open to drain it (h->lock held). */
static void linger_add(fk_http *h, int fd)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return;
	if (h->n_linger == LINGER_MAX) { /* full: the oldest goes */
		close(h->linger[0].fd);
		memmove(&h->linger[0], &h->linger[1], (LINGER_MAX - 1) * sizeof(h->linger[0]));
		h->n_linger--;
	}
	int64_t now = mono_ms();
	h->linger[h->n_linger].fd = dup_fd;
	h->linger[h->n_linger].since_ms = h->linger[h->n_linger].last_ms = now;
	h->n_linger++;
}

/* Read and drop what lingering sockets got; close those done (h->lock held). */
static void linger_drain(fk_http *h, int64_t now)
{
	static char scratch[64 * 1024];
	size_t w = 0;
	for (size_t i = 0; i < h->n_linger; i++) {
		int done = 0;
		for (int n = 0; n < 16 && !done; n++) { /* at most 1 MiB a socket a tick */
			ssize_t got = recv(h->linger[i].fd, scratch, sizeof(scratch), MSG_DONTWAIT);
			if (got > 0)
				h->linger[i].last_ms = now;
			else
				done =
				    got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ? 1 : 2;
		}
		if (done == 1 || now - h->linger[i].since_ms >= LINGER_MS ||
		    now - h->linger[i].last_ms >= LINGER_IDLE_MS)
			close(h->linger[i].fd);
		else
			h->linger[w++] = h->linger[i];
	}
	h->n_linger = w;
}

static void *watchdog_main(void *arg)
{
	fk_http *h = arg;
	pthread_mutex_lock(&h->lock);
	while (!h->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->cond, &h->lock, &ts);
		int64_t now = mono_ms();
		unsigned limit = h->n_idle > h->crowd ? h->crowd_idle_ms : h->idle_ms;
		for (fk_conn *k = h->conns; k; k = k->next)
			if ((now - k->idle_since_ms >= (int64_t)limit && conn_idle(k)) ||
			    (now - k->progress_ms >= (int64_t)h->body_idle_ms && body_stalled(k)))
				conn_cut(h, k);
		linger_drain(h, now);
	}
	for (size_t i = 0; i < h->n_linger; i++)
		close(h->linger[i].fd);
	h->n_linger = 0;
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	fk_http *h = cls;
	fk_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->hooks = &h->hooks;
	r->http = h;
	r->conn = c;
	r->uri = strdup(uri ? uri : "/");
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	return r;
}

static int body_append(fk_req *r, const char *data, size_t len)
{
	if (r->body_too_large || len > FK_MAX_BODY - r->body_len) {
		r->body_too_large = 1;
		return 0;
	}
	if (r->body_len + len + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 1024;
		while (cap < r->body_len + len + 1)
			cap *= 2;
		if (cap > FK_MAX_BODY + 1)
			cap = FK_MAX_BODY + 1; /* never twice the cap for a body at the cap */
		unsigned char *p = realloc(r->body, cap);
		if (!p) {
			r->body_too_large = 1;
			return -1;
		}
		r->body = p;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, len);
	r->body_len += len;
	r->body[r->body_len] = '\0';
	return 0;
}

/* The buffer body_append grows for a body of n bytes. */
static size_t body_buffer(size_t n)
{
	size_t cap = 1024;
	while (cap < n + 1 && cap <= FK_MAX_BODY)
		cap *= 2;
	return cap > FK_MAX_BODY + 1 ? FK_MAX_BODY + 1 : cap;
}

/* Cut the bodies in memory that arrive slowest (h->lock held): in body for BODY_STALE_MS and
 * below BODY_RATE_FLOOR, oldest first, until they hold `want` bytes. The bytes they hold. */
static size_t budget_cut_slow(fk_http *h, size_t want, int64_t now)
{
	size_t freed = 0;
	while (freed < want) {
		fk_conn *slow = NULL;
		for (fk_conn *k = h->conns; k; k = k->next) {
			int64_t in = now - k->body_since_ms;
			if (k->in_body && !k->cut && k->held && in >= BODY_STALE_MS &&
			    k->body_got < (size_t)in * (BODY_RATE_FLOOR / 1000) &&
			    (!slow || k->body_since_ms < slow->body_since_ms))
				slow = k;
		}
		if (!slow)
			break;
		freed += slow->held;
		conn_cut(h, slow);
	}
	return freed;
}

/* The bytes bodies already cut still hold (h->lock held): room their threads are freeing. */
static size_t budget_cut_pending(const fk_http *h)
{
	size_t held = 0;
	for (const fk_conn *k = h->conns; k; k = k->next)
		if (k->cut && k->in_body)
			held += k->held;
	return held;
}

/* Take room in the budget for r's body to be `n` bytes (h->lock held): its buffer and its
 * parse's budget, less what r holds already. 0, or -1 when it does not fit (after cutting slow
 * bodies and waiting for what they free, `k` spared). The room a cut frees is promised to the
 * body that cut (budget_waiting) until it has taken it: a newcomer (the next stalled body of a
 * flood) cannot take it first. */
static int budget_take_locked(fk_http *h, fk_conn *k, fk_req *r, size_t n)
{
	size_t body = body_buffer(n), parse = FK_JSON_BUDGET(n);
	size_t had = r->held_body + r->held_parse;
	size_t need = body + parse > had ? body + parse - had : 0;
	int64_t now = mono_ms(), until = now + BUDGET_WAIT_MS;
	if (need > h->budget)
		return -1;
	size_t taken = h->budget_used + h->budget_waiting;
	/* wait too for what bodies cut before still hold: their threads give it back soon */
	if (taken > h->budget - need && (budget_cut_slow(h, taken - (h->budget - need), now) > 0 ||
	                                 budget_cut_pending(h) > 0)) {
		h->budget_waiting += need;
		while (h->budget_used + h->budget_waiting > h->budget && !h->stopping &&
		       mono_ms() < until) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&h->budget_cond, &h->lock, &ts);
		}
		h->budget_waiting -= need;
	}
	if (h->budget_used + h->budget_waiting > h->budget - need)
		return -1;
	h->budget_used += need;
	r->held_body = body;
	r->held_parse = parse;
	r->held_for = n;
	if (k)
		k->held = body + parse;
	return 0;
}

/* Admit r's body into the budget from its headers (Content-Length; a chunked one as 64 KiB,
 * grown by budget_grow): 0, or -1 when it does not fit. */
static int budget_take(fk_http *h, struct MHD_Connection *c, fk_req *r)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
	unsigned long long n = te && strcasestr(te, "chunked") ? CHUNKED_FIRST
	                       : cl                            ? strtoull(cl, NULL, 10)
	                                                       : 0;
	if (n > FK_MAX_BODY)
		n = FK_MAX_BODY; /* body_append keeps no more */
	pthread_mutex_lock(&h->lock);
	int rc = budget_take_locked(h, conn_of(c), r, (size_t)n);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* A chunked body about to pass what r holds room for: twice as much (at least `len` more, at
 * most FK_MAX_BODY). -1 when the budget has no more: r->budget_short. */
static int budget_grow(fk_http *h, struct MHD_Connection *c, fk_req *r, size_t len)
{
	if (r->budget_short)
		return -1;
	if (r->body_len + len <= r->held_for || r->held_for >= FK_MAX_BODY)
		return 0; /* room, or at the cap: body_append refuses the rest (413) */
	size_t n = 2 * r->held_for > r->body_len + len ? 2 * r->held_for : r->body_len + len;
	if (n > FK_MAX_BODY)
		n = FK_MAX_BODY;
	pthread_mutex_lock(&h->lock);
	int rc = budget_take_locked(h, conn_of(c), r, n);
	pthread_mutex_unlock(&h->lock);
	if (rc < 0)
		r->budget_short = 1;
	return rc;
}

/* Give back r's parse share (all 0) or all it holds (all 1). */
static void budget_give(fk_http *h, struct MHD_Connection *c, fk_req *r, int all)
{
	size_t n = r->held_parse + (all ? r->held_body : 0);
	if (!n)
		return;
	fk_conn *k = conn_of(c);
	pthread_mutex_lock(&h->lock);
	h->budget_used -= n;
	if (k)
		k->held = k->held > n ? k->held - n : 0;
	pthread_cond_broadcast(&h->budget_cond);
	pthread_mutex_unlock(&h->lock);
	r->held_parse = 0;
	if (all)
		r->held_body = 0;
}

/* 503: the body does not fit the budget (from its headers: `early`). */
static enum MHD_Result reply_busy(fk_http *h, fk_req *r, int early)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg),
	                 "{\"code\":503,\"message\":\"the server holds its %zu MiB of request "
	                 "bodies already; retry\"}",
	                 h->budget >> 20);
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer((size_t)n, msg, MHD_RESPMEM_MUST_COPY);
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	}
	enum MHD_Result ret = fk_reply_response(r, 503, resp);
	r->early = early;
	return ret;
}

/* Whether the request announces a body (Content-Length above 0, or chunked). */
static int has_body(struct MHD_Connection *c)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
	return (cl && strtoull(cl, NULL, 10) > 0) || (te && strcasestr(te, "chunked"));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	fk_http *h = cls;
	fk_req *r = *con_cls;
	(void)version;
	if (!r) {
		if (!(r = on_uri(cls, url, c)))
			return MHD_NO;
		*con_cls = r;
	}
	if (!r->started) {
		r->started = 1;
		conn_busy(h, c, 1);
		r->conn = c;
		r->method = method;
		r->path = url;
		if (h->hooks.begin)
			h->hooks.begin(h->hooks.cls, r);
		/* answered from its headers (refused): MHD sends it and closes without the body */
		if (r->status)
			r->early = has_body(c);
		else if (has_body(c) && !r->sink && budget_take(h, c, r) < 0)
			reply_busy(h, r, 1);
		else if (has_body(c))
			conn_body(h, c, 1, 0);
		return MHD_YES;
	}
	if (r->status) { /* answered already: nothing more is read into memory */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		conn_body(h, c, 2, *upload_data_size);
		if (r->sink)
			r->sink(r, upload_data, *upload_data_size);
		else if (budget_grow(h, c, r, *upload_data_size) == 0)
			body_append(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	conn_body(h, c, 0, 0);
	if (r->budget_short)
		return reply_busy(h, r, 0);
	enum MHD_Result ret = h->hooks.route(h->hooks.cls, r);
	budget_give(h, c, r, 0); /* the handler has parsed the body: its parse's share goes */
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	fk_http *h = cls;
	fk_req *r = *con_cls;
	(void)toe;
	if (!r)
		return;
	*con_cls = NULL;
	if (r->started)
		conn_busy(h, c, 0);
	budget_give(h, c, r, 1);
	if (r->early) {
		fk_conn *k = conn_of(c);
		pthread_mutex_lock(&h->lock);
		if (k && !k->cut)
			linger_add(h, k->fd);
		pthread_mutex_unlock(&h->lock);
	}
	if (r->sink_state && r->sink_free)
		r->sink_free(r->sink_state);
	if (r->started && h->hooks.done)
		h->hooks.done(h->hooks.cls, r);
	int large = r->body_cap >= TRIM_AFTER;
	free(r->body);
	free(r->uri);
	free(r);
	/* each connection thread allocates in one of glibc's arenas, which keep what a large body
	 * and its parse freed: give it back, or every arena keeps tens of MB */
	if (large)
		malloc_trim(0);
}

int fk_http_start(fk_http **out, const fk_http_options *o, const fk_http_hooks *hooks,
                  unsigned *port_out)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)o->port);
	if (inet_pton(AF_INET, o->host, &sa.sin_addr) != 1) {
		fprintf(stderr, "fake-e2b: --host must be an IPv4 address\n");
		return -1;
	}
	fk_http *h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	h->hooks = *hooks;
	h->idle_ms = o->idle_ms ? o->idle_ms : 30000;
	h->crowd = o->crowd ? o->crowd : CONNECTION_LIMIT / 4;
	h->crowd_idle_ms = o->crowd_idle_ms ? o->crowd_idle_ms : 500;
	h->body_idle_ms = o->body_idle_ms ? o->body_idle_ms : 10000;
	h->budget = o->body_budget ? o->body_budget : BUDGET_DEFAULT;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	pthread_cond_init(&h->budget_cond, NULL);
	if (pthread_create(&h->watchdog, NULL, watchdog_main, h) != 0) {
		free(h);
		return -1;
	}
	h->watchdog_started = 1;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
	                 MHD_USE_AUTO | MHD_USE_ITC;
	int tls = o->tls_cert && o->tls_key;
	h->daemon = MHD_start_daemon(
	    flags | (tls ? MHD_USE_TLS : 0), 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
	    (struct sockaddr *)&sa, MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
	    on_connection, h, MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)0, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
	    tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, o->tls_cert, MHD_OPTION_HTTPS_MEM_KEY,
	    o->tls_key, MHD_OPTION_END);
	if (!h->daemon) {
		fprintf(stderr, "fake-e2b: cannot listen on %s:%u\n", o->host, o->port);
		fk_http_stop(h);
		return -1;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	*port_out = di ? di->port : o->port;
	*out = h;
	return 0;
}

void fk_http_quiesce(fk_http *h)
{
	if (!h || !h->daemon)
		return;
	MHD_socket ls = MHD_quiesce_daemon(h->daemon);
	if (ls != MHD_INVALID_SOCKET)
		close(ls);
}

void fk_http_stop(fk_http *h)
{
	if (!h)
		return;
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	if (h->watchdog_started) {
		pthread_mutex_lock(&h->lock);
		h->stopping = 1;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->watchdog, NULL);
	}
	pthread_cond_destroy(&h->cond);
	pthread_cond_destroy(&h->budget_cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
