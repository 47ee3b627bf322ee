/*
 * fake-e2b/proxy/proxy.c: see proxy.h. libcurl speaks HTTP/1.1 to the
 * sandbox's port over the socket the runtime connected inside the sandbox's
 * network namespace (CURLOPT_OPENSOCKETFUNCTION); the answer is relayed with its
 * status and end-to-end headers, streamed: MHD's content reader drives libcurl's
 * multi handle through a 128 KiB ring, and libcurl is paused while the ring is
 * full, so a slow client stops the reading from the sandbox (back-pressure) and
 * each connection holds about 256 KiB whatever the answer's size.
 *
 * A request's body is streamed to the sandbox as it arrives, never held whole: the upstream
 * transfer starts from the request's headers, and the HTTP layer's body sink hands each chunk
 * to libcurl's read callback, driving the transfer until libcurl took it (a box that does not
 * read stops the reading from the client). While it waits for the answer's headers the
 * request watches its client: a client gone ends the wait at once (its slot among the
 * sandbox's PER_SANDBOX_MAX freed), and the wait lasts UPSTREAM_HEADERS_MS at most (E2B's
 * client proxy, Go's ReverseProxy, sets no header timeout but gives up on the sandbox when its
 * client leaves). Such a waiting request is one the HTTP layer may evict at its connection cap
 * (fk_req_waiting).
 */
#define _GNU_SOURCE
#include "proxy.h"

#include "clock.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Most bytes of the answer held between the sandbox's server and the client (plus libcurl's
 * receive buffer and MHD's block): past it libcurl is paused, so a slow client stops reading
 * from upstream. */
#define RING       (128u * 1024u)
#define CURL_CHUNK (64L * 1024L)
/* An upstream that sends nothing for this long, while the client waits for it, is cut; the
 * answer's headers must come within UPSTREAM_HEADERS_MS of the request's end (else 502). */
#define UPSTREAM_IDLE_MS    300000
#define UPSTREAM_HEADERS_MS 60000

/* Most requests to one sandbox's ports the proxy holds at once (waiting for its answer or
 * relaying it); past it 503 at once. A proxied request is neither idle nor a stalled body, so
 * the connection caps' eviction does not reach it: without this, a box port that accepts and
 * never answers let a client without a key hold all 4,000 connections (for UPSTREAM_IDLE_MS
 * each) and every other client was refused. */
#define PER_SANDBOX_MAX 256
/* Of those, most one client holds (client_of: its address on loopback, its /24 or /64
 * otherwise), so that others keep PER_SANDBOX_MAX - PER_CLIENT_MAX: before, one client that
 * knew a sandbox's id (public traffic needs no key) held all 256 with requests to a port that
 * never answers or with slow bodies, and the sandbox's other ports answered 503 to everyone.
 * When the sandbox has PER_SANDBOX_MAX (clients of many addresses), a new request cuts one that
 * has moved no byte for EVICT_STALE_MS at least (as the HTTP layer cuts the body stalled
 * longest), of the client holding most: requests that are answered keep moving, a flood's do
 * not, and a flood's go before another client's idle stream. */
#define PER_CLIENT_MAX 192
#define EVICT_STALE_MS 1000

typedef struct upstream upstream;

/* Every request in flight to a sandbox's ports (upstream.slot_next), under inflight_lock. */
static pthread_mutex_t inflight_lock = PTHREAD_MUTEX_INITIALIZER;
static upstream *inflights;

struct upstream {
	char sandbox[64]; /* counted in inflights while listed */
	int listed;       /* in inflights (inflight_lock): until freed or evicted */
	upstream *slot_next;
	uint64_t client; /* client_of its client */
	struct fk_http *http;
	uint64_t conn_id; /* its connection (fk_req_conn_id), cut when evicted */
	int evicted;      /* atomic: cut for a newer request (inflight_take) */
	int fd;           /* connected in the box; handed to curl once */
	CURL *h;
	CURLM *m;
	struct curl_slist *req_headers; /* the request headers sent upstream */
	struct curl_slist *headers;     /* response headers to relay, "Name: value" */
	long status;                    /* of the last status line */
	int headers_done;               /* the final (non-1xx) headers are complete */
	long long clen;                 /* its Content-Length, -1 when none */
	int done;                       /* the transfer ended (result) */
	CURLcode result;
	int paused; /* the write callback paused the transfer (the ring was full) */
	int64_t last_ms;
	/* the request's body, streamed: the chunk the sink hands over, not yet taken by libcurl */
	const char *in;
	size_t in_len;
	int body_end;    /* the client's body is complete */
	int read_paused; /* the read callback paused the transfer (no chunk at hand) */
	int failed;      /* gave up on the upstream (silent, or the server stopping) */
	int client_fd;   /* watched while waiting for the answer's headers; -1: not */
	int client_gone;
	int client_noisy; /* bytes wait unread from the client: peeked at, not polled */
	size_t off, len;  /* ring[off, len) not yet given to MHD */
	unsigned char ring[RING];
};

/* last_ms, written by u's thread and read by inflight_take's of other requests. */
static void touch(upstream *u)
{
	__atomic_store_n(&u->last_ms, fk_mono_ms(), __ATOMIC_RELAXED);
}

/* The client a request counts for in PER_CLIENT_MAX: its address on loopback (any local
 * process may bind many, but one that does not is held to its share), its /24 (IPv4) or /64
 * (IPv6) otherwise. */
static uint64_t client_of(fk_req *r)
{
	const union MHD_ConnectionInfo *ai =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ai ? ai->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		return (a >> 24) == 127 ? ((uint64_t)1 << 32) | a : ((uint64_t)2 << 32) | (a >> 8);
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return (uint64_t)3 << 32;
		uint64_t p = 0;
		for (int i = 0; i < 8; i++)
			p = (p << 8) | a->s6_addr[i];
		return p | ((uint64_t)1 << 63);
	}
	return 0;
}

/* The requests of sandbox `id` that `client` has (inflight_lock held). */
static unsigned held_by(const char *id, uint64_t client)
{
	unsigned n = 0;
	for (upstream *o = inflights; o; o = o->slot_next)
		n += o->client == client && !strcmp(o->sandbox, id);
	return n;
}

/* The request of sandbox `id` to give way (inflight_lock held): of those that moved no byte
 * for EVICT_STALE_MS, one of the client that holds most of them, the one stalled longest of
 * those: a flood's own go first, not another client's idle stream. NULL when none stalled. */
static upstream *stalest(const char *id)
{
	int64_t now = fk_mono_ms();
	upstream *old = NULL;
	int64_t old_ms = 0;
	unsigned old_held = 0;
	for (upstream *o = inflights; o; o = o->slot_next) {
		int64_t ms = __atomic_load_n(&o->last_ms, __ATOMIC_RELAXED);
		if (strcmp(o->sandbox, id) || now - ms < EVICT_STALE_MS)
			continue;
		unsigned held = old && o->client == old->client ? old_held : held_by(id, o->client);
		if (!old || held > old_held || (held == old_held && ms < old_ms))
			old = o, old_ms = ms, old_held = held;
	}
	return old;
}

/* u in flight to sandbox `id` for the request r: 0; -1 when its client has PER_CLIENT_MAX
 * there already, -2 when the sandbox has PER_SANDBOX_MAX and none of them stalled. */
static int inflight_take(upstream *u, fk_req *r, const char *id)
{
	u->client = client_of(r);
	u->http = r->http;
	u->conn_id = fk_req_conn_id(r);
	snprintf(u->sandbox, sizeof(u->sandbox), "%s", id);
	touch(u);
	pthread_mutex_lock(&inflight_lock);
	unsigned n = 0, mine = 0;
	for (upstream *o = inflights; o; o = o->slot_next)
		if (!strcmp(o->sandbox, id)) {
			n++;
			mine += o->client == u->client;
		}
	int rc = mine >= PER_CLIENT_MAX ? -1 : 0;
	if (!rc && n >= PER_SANDBOX_MAX) {
		upstream *old = stalest(id);
		if (old) { /* unlisted now (its slot is u's), cut: its thread ends it */
			for (upstream **pp = &inflights; *pp; pp = &(*pp)->slot_next)
				if (*pp == old) {
					*pp = old->slot_next;
					break;
				}
			old->listed = 0;
			__atomic_store_n(&old->evicted, 1, __ATOMIC_RELAXED);
			fk_http_cut_conn(old->http, old->conn_id);
		} else {
			rc = -2;
		}
	}
	if (!rc) {
		u->slot_next = inflights;
		inflights = u;
		u->listed = 1;
	}
	pthread_mutex_unlock(&inflight_lock);
	return rc;
}

static void inflight_give(upstream *u)
{
	pthread_mutex_lock(&inflight_lock);
	if (u->listed)
		for (upstream **pp = &inflights; *pp; pp = &(*pp)->slot_next)
			if (*pp == u) {
				*pp = u->slot_next;
				break;
			}
	u->listed = 0;
	pthread_mutex_unlock(&inflight_lock);
}

static curl_socket_t open_socket(void *cls, curlsocktype purpose, struct curl_sockaddr *addr)
{
	upstream *u = cls;
	(void)purpose;
	(void)addr;
	int fd = u->fd;
	u->fd = -1;
	return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static int sockopt(void *cls, curl_socket_t fd, curlsocktype purpose)
{
	(void)cls;
	(void)fd;
	(void)purpose;
	return CURL_SOCKOPT_ALREADY_CONNECTED;
}

static size_t on_body(char *p, size_t sz, size_t n, void *cls)
{
	upstream *u = cls;
	size_t len = sz * n;
	u->headers_done = 1;
	touch(u);
	if (u->off && u->off == u->len)
		u->off = u->len = 0;
	if (len > RING - u->len && u->off) { /* room at the front: move the rest there */
		memmove(u->ring, u->ring + u->off, u->len - u->off);
		u->len -= u->off;
		u->off = 0;
	}
	if (len > RING - u->len) { /* full: libcurl keeps this chunk until unpaused */
		u->paused = 1;
		return CURL_WRITEFUNC_PAUSE;
	}
	memcpy(u->ring + u->len, p, len);
	u->len += len;
	return len;
}

/* libcurl's read callback: the chunk at hand, the end of the body, or a pause until the sink
 * hands over the next one. */
static size_t on_read(char *buf, size_t sz, size_t n, void *cls)
{
	upstream *u = cls;
	size_t max = sz * n;
	if (u->in_len) {
		size_t k = u->in_len < max ? u->in_len : max;
		memcpy(buf, u->in, k);
		u->in += k;
		u->in_len -= k;
		touch(u);
		return k;
	}
	if (u->body_end)
		return 0;
	u->read_paused = 1;
	return CURL_READFUNC_PAUSE;
}

/* Hop-by-hop headers (RFC 9110 §7.6.1) and the ones MHD sets itself are not relayed. */
static int hop_header(const char *h, size_t n)
{
	static const char *const hop[] = {"connection",         "keep-alive", "transfer-encoding",
	                                  "content-length",     "upgrade",    "proxy-connection",
	                                  "proxy-authenticate", "te",         "trailer"};
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strlen(hop[i]) == n && strncasecmp(h, hop[i], n) == 0)
			return 1;
	return 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *cls)
{
	upstream *u = cls;
	size_t len = sz * n;
	touch(u);
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new status line: a 1xx answer before */
		curl_slist_free_all(u->headers);
		u->headers = NULL;
		u->clen = -1;
		const char *sp = memchr(p, ' ', len);
		u->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		return len;
	}
	if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) { /* end of headers */
		if (u->status >= 200)
			u->headers_done = 1;
		return len;
	}
	const char *colon = memchr(p, ':', len);
	if (colon && (size_t)(colon - p) == 14 && !strncasecmp(p, "content-length", 14)) {
		char v[32];
		size_t vl = len - 15 < sizeof(v) - 1 ? len - 15 : sizeof(v) - 1;
		memcpy(v, colon + 1, vl);
		v[vl] = '\0';
		char *end;
		long long cl = strtoll(v, &end, 10);
		u->clen = cl >= 0 && end != v ? cl : -1;
	}
	if (!colon || hop_header(p, (size_t)(colon - p)))
		return len;
	size_t e = len;
	while (e > 0 && (p[e - 1] == '\r' || p[e - 1] == '\n'))
		e--;
	char *line = strndup(p, e);
	if (line) {
		struct curl_slist *l = curl_slist_append(u->headers, line);
		if (l)
			u->headers = l;
		free(line);
	}
	return len;
}

typedef struct fwd {
	struct curl_slist *list;
} fwd;

/* Request headers to forward: all but Host, hop-by-hop ones, Expect and the traffic token. */
static enum MHD_Result add_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value)
{
	fwd *f = cls;
	(void)kind;
	size_t n = strlen(key);
	if (hop_header(key, n) || !strcasecmp(key, "host") || !strcasecmp(key, "expect") ||
	    !strcasecmp(key, "e2b-traffic-access-token"))
		return MHD_YES;
	char *line = NULL;
	if (asprintf(&line, "%s: %s", key, value) >= 0) {
		struct curl_slist *l = curl_slist_append(f->list, line);
		if (l)
			f->list = l;
	}
	free(line);
	return MHD_YES;
}

static enum MHD_Result reply_502(fk_call *c, const char *msg)
{
	return fk_reply_json(c->req, 502,
	                     json_pack("{s:s,s:s,s:i,s:i}", "sandboxId", c->sandbox_id, "message",
	                               msg, "port", (int)c->port, "code", 502));
}

/* The traffic token of a private sandbox (constant time). */
static int traffic_ok(fk_call *c, const fk_sandbox *sb)
{
	if (!sb->private_traffic)
		return 1;
	const char *t = fk_header(c->req, "e2b-traffic-access-token");
	size_t n = strlen(sb->traffic_token);
	return t && strlen(t) == n && CRYPTO_memcmp(t, sb->traffic_token, n) == 0;
}

/* Whether the client has gone (shut its side, reset): poll()'s POLLRDHUP, which also sees a
 * close behind bytes not read yet (a pipelined request, a TLS close_notify). */
static int client_left(upstream *u)
{
	if (u->client_fd < 0)
		return 0;
	struct pollfd p = {.fd = u->client_fd, .events = POLLRDHUP};
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		u->client_gone = 1;
	return u->client_gone;
}

/* Drive the transfer once: whatever libcurl can do now, else wait up to 1 s for the sandbox's
 * server (and, while u->client_fd is watched, for the client to leave). -1 when it has been
 * silent for UPSTREAM_IDLE_MS, the client left or the server is stopping. */
static int pump(upstream *u)
{
	int running = 0, n = 0;
	size_t before = u->len, in_before = u->in_len;
	int had_headers = u->headers_done;
	curl_multi_perform(u->m, &running);
	CURLMsg *msg;
	while ((msg = curl_multi_info_read(u->m, &n)))
		if (msg->msg == CURLMSG_DONE) {
			u->done = 1;
			u->result = msg->data.result;
		}
	if (u->done || u->len != before || u->headers_done != had_headers || u->in_len != in_before)
		return 0;
	if (fk_stopping() || fk_mono_ms() - u->last_ms >= UPSTREAM_IDLE_MS || client_left(u) ||
	    __atomic_load_n(&u->evicted, __ATOMIC_RELAXED))
		return -1;
	/* the client's socket wakes the wait when it becomes readable: its close, or bytes, after
	 * which it is only checked each second (client_left), or the poll would never wait */
	struct curl_waitfd w = {.fd = u->client_fd, .events = CURL_WAIT_POLLIN};
	int unread = 0;
	if (u->client_fd >= 0 && !u->client_noisy && ioctl(u->client_fd, FIONREAD, &unread) == 0 &&
	    unread > 0)
		u->client_noisy = 1;
	int watch = u->client_fd >= 0 && !u->client_noisy;
	curl_multi_poll(u->m, watch ? &w : NULL, watch ? 1 : 0, 1000, NULL);
	return 0;
}

static void upstream_free(void *p)
{
	upstream *u = p;
	if (!u)
		return;
	if (u->m && u->h)
		curl_multi_remove_handle(u->m, u->h);
	if (u->h)
		curl_easy_cleanup(u->h); /* closes the socket */
	if (u->m)
		curl_multi_cleanup(u->m);
	if (u->fd >= 0)
		close(u->fd);
	inflight_give(u);
	curl_slist_free_all(u->req_headers);
	curl_slist_free_all(u->headers);
	free(u);
}

/* MHD's content reader: the ring's bytes, refilled from upstream as the client takes them;
 * libcurl stays paused (and the sandbox's server blocked) while the ring is full. */
static ssize_t upstream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	upstream *u = cls;
	(void)pos;
	for (;;) {
		size_t avail = u->len - u->off;
		if (avail) {
			size_t n = avail < max ? avail : max;
			memcpy(buf, u->ring + u->off, n);
			u->off += n;
			if (u->off == u->len)
				u->off = u->len = 0;
			touch(u); /* the client takes the answer: it moves */
			return (ssize_t)n;
		}
		if (u->paused) { /* the ring is empty: take the chunk libcurl holds */
			u->paused = 0;
			curl_easy_pause(u->h, CURLPAUSE_CONT);
			continue;
		}
		if (u->done)
			return u->result == CURLE_OK ? MHD_CONTENT_READER_END_OF_STREAM
			                             : MHD_CONTENT_READER_END_WITH_ERROR;
		if (pump(u) < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void add_response_headers(struct MHD_Response *resp, upstream *u)
{
	for (struct curl_slist *l = u->headers; resp && l; l = l->next) {
		char *colon = strchr(l->data, ':');
		if (!colon)
			continue;
		*colon = '\0';
		const char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		MHD_add_response_header(resp, l->data, v);
	}
}

/* The request headers sent upstream: the client's less those not forwarded, and the masked
 * Host (mask taken over). */
static struct curl_slist *request_headers(fk_call *c, char *mask)
{
	fwd f = {NULL};
	MHD_get_connection_values(c->req->conn, MHD_HEADER_KIND, add_request_header, &f);
	f.list = curl_slist_append(f.list, "Expect:");
	if (mask) {
		char port[8], *host = NULL, *at = strstr(mask, "${PORT}");
		snprintf(port, sizeof(port), "%u", c->port);
		if (asprintf(&host, "Host: %.*s%s%s", at ? (int)(at - mask) : (int)strlen(mask),
		             mask, at ? port : "", at ? at + 7 : "") >= 0) {
			struct curl_slist *l = curl_slist_append(f.list, host);
			if (l)
				f.list = l;
		}
		free(host);
		free(mask);
	}
	return f.list;
}

/* The transfer's options; whether it is a HEAD. `streamed`: the body comes through the sink
 * (Content-Length `clen`, -1: chunked). */
static int upstream_setopts(upstream *u, fk_req *r, unsigned port, int streamed, long long clen)
{
	char url[8192];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, r->uri);
	CURL *h = u->h;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, u);
	curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, sockopt);
	curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, u->req_headers);
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, CURL_CHUNK);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, u);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, u);
	int head = !strcmp(r->method, "HEAD");
	if (streamed) { /* the method stays the client's (CUSTOMREQUEST); no Expect (headers) */
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, u);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)clen);
	} else if (r->body_len) { /* r->body outlives the transfer: it ends before the answer does
		                   */
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (head) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	}
	return head;
}

/* u's place among the requests in flight to the sandbox's ports, and its connection to the
 * port inside the sandbox: 0, or -1 with the answer (503, 502) queued in *ret. */
static int upstream_connect(fk_call *c, upstream *u, enum MHD_Result *ret)
{
	int taken = inflight_take(u, c->req, c->sandbox_id);
	if (taken == -1) {
		*ret =
		    fk_reply_error(c->req, 503,
		                   "too many requests from this client to this sandbox's ports at "
		                   "once (%u)",
		                   PER_CLIENT_MAX);
		return -1;
	}
	if (taken < 0) {
		*ret = fk_reply_error(c->req, 503,
		                      "too many requests to this sandbox's ports at once (%u)",
		                      PER_SANDBOX_MAX);
		return -1;
	}
	fk_err err = {0};
	if (fk_box_connect(c->app->rt, c->sandbox_id, (uint16_t)c->port, 5000, &u->fd, &err) < 0) {
		*ret = reply_502(c, "The sandbox is running but port is not open");
		return -1;
	}
	return 0;
}

/* The body the request announces: its Content-Length, -1 for a chunked one, 0 for none. */
static long long announced_body(fk_req *r)
{
	const char *cl = fk_header(r, "Content-Length");
	const char *te = fk_header(r, "Transfer-Encoding");
	if (te && strcasestr(te, "chunked"))
		return -1;
	long long n = cl ? strtoll(cl, NULL, 10) : 0;
	return n > 0 ? n : 0;
}

/* The body sink: each chunk goes to the sandbox before the next one is read (the transfer
 * driven until libcurl took it). Once the sandbox has answered or failed, the rest of the body
 * is dropped. */
static void body_sink(fk_req *r, const char *data, size_t len)
{
	upstream *u = r->sink_state;
	if (!u || u->failed || u->headers_done || u->done)
		return;
	u->in = data;
	u->in_len = len;
	if (u->read_paused) {
		u->read_paused = 0;
		curl_easy_pause(u->h, CURLPAUSE_CONT);
	}
	/* while the sandbox's server does not read, the wait watches its client as the wait for
	 * the answer's headers does (gone: give up at once; evictable at the connection cap), at
	 * most UPSTREAM_HEADERS_MS for each chunk: a box that never reads must not hold the
	 * request, its thread and a slot of its sandbox's for UPSTREAM_IDLE_MS after its client
	 * left */
	u->client_fd = fk_req_socket(r);
	fk_req_waiting(r, 1);
	int64_t until = fk_mono_ms() + UPSTREAM_HEADERS_MS;
	while (u->in_len && !u->headers_done && !u->done)
		if (pump(u) < 0 || (u->in_len && fk_mono_ms() >= until)) {
			u->failed = 1;
			break;
		}
	fk_req_waiting(r, 0);
	u->client_fd = -1;
	u->in = NULL;
	u->in_len = 0;
}

/* A transfer to the sandbox's port, started: NULL with the answer (503, 502, 500) queued in
 * *ret. `streamed`: its body comes through body_sink (announced `clen`). */
static upstream *upstream_open(fk_call *c, char *mask, int streamed, long long clen,
                               enum MHD_Result *ret)
{
	fk_req *r = c->req;
	upstream *u = calloc(1, sizeof(*u));
	if (!u) {
		free(mask);
		*ret = fk_reply_error(r, 500, "out of memory");
		return NULL;
	}
	u->fd = u->client_fd = -1;
	u->clen = -1;
	if (upstream_connect(c, u, ret) < 0) {
		free(mask);
		upstream_free(u);
		return NULL;
	}
	u->req_headers = request_headers(c, mask);
	u->h = curl_easy_init();
	u->m = curl_multi_init();
	if (!u->h || !u->m) {
		upstream_free(u);
		*ret = fk_reply_error(r, 500, "out of memory");
		return NULL;
	}
	upstream_setopts(u, r, c->port, streamed, clen);
	curl_multi_add_handle(u->m, u->h);
	touch(u);
	return u;
}

/* The answer's headers: waits for them watching the client (gone: give up at once), at most
 * UPSTREAM_HEADERS_MS; the connection may be evicted meanwhile (fk_req_waiting). */
static void wait_headers(fk_req *r, upstream *u)
{
	u->client_fd = fk_req_socket(r);
	fk_req_waiting(r, 1);
	int64_t until = fk_mono_ms() + UPSTREAM_HEADERS_MS;
	while (!u->headers_done && !u->done && !u->failed)
		if (pump(u) < 0 || (!u->headers_done && fk_mono_ms() >= until))
			u->failed = 1;
	fk_req_waiting(r, 0);
	u->client_fd = -1;
}

/* A request target that is not a path (origin-form): 400. The target follows the sandbox's
 * authority in the URL libcurl is given, so `GET @name/x` made it read "127.0.0.1:PORT" as a
 * user name and `name` as the host: resolved by the host's DNS (any name a client without a
 * key chose), its Basic credentials sent, the path rewritten. Go's server (E2B's client proxy)
 * refuses such a target too. */
static enum MHD_Result target_refused(fk_req *r)
{
	return fk_reply_error(r, 400, "invalid request target: the port proxy takes a path");
}

enum MHD_Result fk_proxy_forward(fk_call *c)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	fk_sandbox *sb = fk_registry_acquire(g, c->sandbox_id);
	upstream *u = r->sink == body_sink ? r->sink_state : NULL;
	if (!u && (!sb || !fk_sandbox_ensure_running(g, sb))) {
		fk_sandbox_release(g, sb);
		return reply_502(c, "The sandbox was not found");
	}
	enum MHD_Result ret;
	if (!u) {
		int allowed = traffic_ok(c, sb);
		/* network.maskRequestHost: the Host the sandbox's server sees, "${PORT}" its port
		 */
		char *mask = NULL;
		fk_registry_lock(g);
		json_t *m = json_object_get(sb->network, "maskRequestHost");
		if (json_is_string(m) && *json_string_value(m) &&
		    !strpbrk(json_string_value(m), "\r\n")) /* one header line, nothing injected */
			mask = strdup(json_string_value(m));
		fk_registry_unlock(g);
		fk_sandbox_release(g, sb);
		if (!allowed || r->uri[0] != '/') { /* see target_refused */
			free(mask);
			return allowed ? target_refused(r)
			               : fk_reply_error(
			                     r, 403, "missing or invalid e2b-traffic-access-token");
		}
		c->admitted = 1;
		long long clen = announced_body(r);
		if (c->admitting && !clen) { /* no body: the transfer starts after the headers */
			free(mask);
			return MHD_YES;
		}
		/* from the headers with a body (streamed through the sink); after them without one,
		 * or with a body read whole (a fault rule's delay kept the old order) */
		if (!(u = upstream_open(c, mask, c->admitting, clen, &ret)))
			return ret;
		if (c->admitting) {
			r->sink = body_sink;
			r->sink_state = u;
			r->sink_free = upstream_free;
			return MHD_YES;
		}
	} else {
		fk_sandbox_release(g, sb);
		r->sink_state = NULL; /* u is ours from here */
		u->body_end = 1;
		if (u->read_paused) {
			u->read_paused = 0;
			curl_easy_pause(u->h, CURLPAUSE_CONT);
		}
	}
	int head = !strcmp(r->method, "HEAD");
	wait_headers(r, u);
	if (!u->headers_done || u->status < 100 || (u->done && u->result != CURLE_OK)) {
		upstream_free(u);
		return reply_502(c, "The sandbox's server did not answer");
	}
	struct MHD_Response *resp;
	unsigned status = (unsigned)u->status;
	if (u->done || head) { /* the whole answer is in the ring already */
		resp = MHD_create_response_from_buffer(u->len - u->off, u->ring + u->off,
		                                       MHD_RESPMEM_MUST_COPY);
		add_response_headers(resp, u);
		upstream_free(u);
	} else { /* streamed: MHD pulls it as the client takes it */
		uint64_t size = u->clen >= 0 ? (uint64_t)u->clen : MHD_SIZE_UNKNOWN;
		resp = MHD_create_response_from_callback(size, 64 * 1024, upstream_read, u,
		                                         upstream_free);
		if (!resp) {
			upstream_free(u);
			return MHD_NO;
		}
		add_response_headers(resp, u);
	}
	return fk_reply_response(r, status, resp);
}
