/*
 * e2b/http.c: libcurl glue (see http.h for the rules it keeps).
 *
 * Each call runs on its own (multi, easy) pair, so a blocked call waits in
 * curl_multi_poll() on exactly its socket, its deadline and its abort signal.
 * Pairs come from a small mutex-protected pool so that keep-alive connections
 * (cached per multi handle) survive between calls: a sequential exec costs
 * two requests on warm connections instead of two TCP (and TLS) handshakes.
 *
 * HTTPS calls instead go through the client's one multiplexing loop: a thread
 * of ours (created on the first HTTPS call) drives one multi handle that asks
 * for HTTP/2 (ALPN) with CURLPIPE_MULTIPLEX, so concurrent calls to one host
 * share a connection, at most SBX_HTTP_MAX_STREAMS streams each (E2B's cap;
 * curl opens another connection beyond it). Where the server speaks only
 * HTTP/1.1 the loop keeps one connection per concurrent call, as the pairs do.
 * A call's thread still runs its own on_data callback: the loop thread only
 * queues the bytes (pausing the transfer past SBX_HTTP_INBOX_HIGH) and wakes
 * the call's eventfd; the caller's thread waits on that eventfd, its abort
 * signal and its deadline. File uploads (from memory or the caller's code)
 * stay on the pairs, on HTTP/1.1.
 */
#include "e2b/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <sandbox/common.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define POLL_SLICE_MS 1000 /* longest single poll; deadlines and aborts end it sooner */

#define LOOP_STACK          (1u << 20) /* the loop thread's stack (curl, OpenSSL, nghttp2) */
#define LOOP_IDLE           32         /* idle easy handles kept for the loop's calls */
#define SBX_HTTP_UPLOAD_BUF (16 << 10)
#define LOOP_ORIGINS        64 /* origins remembered (idle ones are forgotten beyond) */

typedef struct http_pair {
	CURLM *multi;
	CURL *easy;
} http_pair;

/* Where a loop call stands (under sbx_http.loop_mu). */
enum { LS_NONE, LS_ADD, LS_ADMIT, LS_HELD, LS_IN, LS_OUT };
typedef struct loop_origin loop_origin;

/* The multiplexing loop of HTTPS calls (see the top of this file). */
typedef struct http_loop {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* a call left the multi (LS_OUT) */
	pthread_t thread;
	bool started; /* under sbx_http.mu */
	pid_t pid;    /* the process that started the thread (a forked child has none) */
	bool failed;  /* under sbx_http.mu: no thread: HTTPS calls use the pairs */
	bool stop;    /* under mu */
	CURLM *multi; /* the loop thread's only */
	struct sbx_http_call *queue; /* under mu: calls with a command for the loop */
	CURL *idle[LOOP_IDLE];       /* under mu */
	size_t nidle;
	loop_origin **origins; /* the loop thread's own */
	size_t norigins, corigins;
} http_loop;

struct sbx_http {
	pthread_mutex_t mu;
	http_pair idle[SBX_HTTP_POOL_IDLE];
	size_t nidle;
	sbx_logger logger; /* the debug line per call (sbx__http_set_logger) */
	/* DNS answers and TLS sessions shared by every call (curl's share interface) */
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	/*
	 * The trusted CAs, parsed once and handed to every TLS connection: curl
	 * (7.88) parses the whole CA bundle again for each new connection, about
	 * 25 ms of CPU and 1 MiB each (issue 13: 256 in-flight execs over TLS).
	 * Only with curl's OpenSSL backend; loaded on the first TLS connection.
	 */
	bool own_store;                /* the OpenSSL backend: use `store` */
	X509_STORE *store;             /* under mu */
	bool store_failed;             /* under mu: loading failed; TLS connections fail closed */
	struct curl_slist *connect_to; /* test option: CURLOPT_CONNECT_TO for every call */
	bool ca_override;              /* test option: cainfo is the caller's CA file */
	char *cainfo; /* curl's built-in CA bundle and directory (either may be NULL) */
	char *capath;
	http_loop loop;
};

struct sbx_http_call {
	sbx_http *h;
	http_pair pair;
	sbx_http_req req;
	struct curl_slist *headers;
	curl_mime *mime;
	bool added;
	bool done;    /* the transfer ended (result below) */
	bool stopped; /* on_data asked to stop: the answer is complete for us */
	bool yield;   /* on_data asked to hand control back (SBX_HTTP_YIELD) */
	bool joined;  /* pair.multi is borrowed from a host call (sbx__http_call_join) */
	CURLcode result;
	long status;
	sbx_buf body;
	size_t upload_off; /* read position in req.upload_data (multipart, not copied) */
	int cb_code;       /* error raised inside the write callback */
	sbx_error cb_err;
	char errbuf[CURL_ERROR_SIZE];
	uint64_t t0_ms; /* monotonic start, for the debug line */
	/* a call of the loop (pair.multi NULL); the fields below are under loop.mu */
	bool looped;
	int efd;           /* eventfd: the loop thread wakes the caller */
	int lstate;        /* LS_* */
	bool queued;       /* in loop.queue */
	bool want_remove;  /* command: take the easy out of the multi */
	bool want_unpause; /* command: curl_easy_pause(CONT) */
	bool paused;       /* the loop paused the transfer (inbox full) */
	bool discard;      /* the caller wants no more bytes (stopped, failed) */
	bool ldone;        /* the transfer ended: lresult */
	bool loop_oom;     /* the loop could not queue a chunk */
	int lcb_code;      /* a buffered body's error, raised on the loop thread */
	sbx_error lcb_err;
	CURLcode lresult;
	sbx_buf inbox; /* 200 bytes for on_data, not yet taken by the caller */
	sbx_buf taken; /* the caller's: the inbox it swapped out */
	struct sbx_http_call *lnext;
	/* the loop thread's own */
	struct sbx_http_call *anext, *hnext; /* its admission and resume batches; held queue */
	loop_origin *origin;
	bool opened; /* curl opened a socket for this call */
};

static void share_lock(CURL *e, curl_lock_data data, curl_lock_access access, void *ud)
{
	sbx_http *h = ud;
	(void)e;
	(void)access;
	pthread_mutex_lock(&h->share_mu[data]);
}

static void share_unlock(CURL *e, curl_lock_data data, void *ud)
{
	sbx_http *h = ud;
	(void)e;
	pthread_mutex_unlock(&h->share_mu[data]);
}

/* DNS cache and TLS sessions shared across the pool's handles; NULL when curl cannot. */
static CURLSH *share_new(sbx_http *h)
{
	CURLSH *sh = curl_share_init();

	if (!sh)
		return NULL;
	if (curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_USERDATA, h) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK) {
		curl_share_cleanup(sh);
		return NULL;
	}
	/* best effort: without it each new connection does a full TLS handshake */
	(void)curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	return sh;
}

/* curl's built-in CA locations (CURLINFO_CAINFO / CAPATH), for the shared store. */
static int ca_defaults(sbx_http *h)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
	char *info = NULL, *path = NULL;
	CURL *e;
	int error = 0;

	if (!v->ssl_version || strncmp(v->ssl_version, "OpenSSL/", 8) != 0)
		return 0; /* another TLS backend: curl loads the CAs itself */
	if (!(e = curl_easy_init()))
		return SBX_ENOMEM;
	(void)curl_easy_getinfo(e, CURLINFO_CAINFO, &info);
	(void)curl_easy_getinfo(e, CURLINFO_CAPATH, &path);
	if ((info && !(h->cainfo = sbx__strdup(info))) ||
	    (path && !(h->capath = sbx__strdup(path))))
		error = SBX_ENOMEM;
	curl_easy_cleanup(e);
	h->own_store = error == 0 && (h->cainfo || h->capath);
	return error;
}

int sbx__http_new(sbx_http **out, sbx_error *err)
{
	sbx_http *h;
	size_t i;

	*out = NULL;
	if (sbx_global_init() < 0)
		return sbx__error_set(err, SBX_EINTERNAL, "cannot initialise libcurl");
	if (!(h = sbx__calloc(1, sizeof(*h))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	if (pthread_mutex_init(&h->mu, NULL) != 0) {
		sbx__free(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a mutex");
	}
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		if (pthread_mutex_init(&h->share_mu[i], NULL) != 0)
			break;
	if (i < CURL_LOCK_DATA_LAST) {
		while (i-- > 0)
			pthread_mutex_destroy(&h->share_mu[i]);
		pthread_mutex_destroy(&h->mu);
		sbx__free(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a mutex");
	}
	if (pthread_mutex_init(&h->loop.mu, NULL) != 0) {
		for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&h->share_mu[i]);
		pthread_mutex_destroy(&h->mu);
		sbx__free(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a mutex");
	}
	if (pthread_cond_init(&h->loop.cond, NULL) != 0) {
		pthread_mutex_destroy(&h->loop.mu);
		for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&h->share_mu[i]);
		pthread_mutex_destroy(&h->mu);
		sbx__free(h);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a condition variable");
	}
	h->share = share_new(h);
	if (ca_defaults(h) < 0) {
		sbx__http_free(h);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	*out = h;
	return 0;
}

/*
 * The shared CA store, loaded on first use from curl's built-in locations
 * (the bundle, else the directory). NULL when it cannot be loaded.
 */
static X509_STORE *store_get(sbx_http *h)
{
	X509_STORE *st;
	bool ok;

	pthread_mutex_lock(&h->mu);
	if (!h->store && !h->store_failed) {
		st = X509_STORE_new();
		ok = st && (h->cainfo ? X509_STORE_load_file(st, h->cainfo) == 1
		                      : X509_STORE_load_path(st, h->capath) == 1);
		if (ok && h->cainfo && h->capath)
			(void)X509_STORE_load_path(st, h->capath); /* as curl: the directory too */
		if (!ok) {
			X509_STORE_free(st);
			st = NULL;
		}
		h->store = st;
		h->store_failed = !st;
	}
	st = h->store;
	pthread_mutex_unlock(&h->mu);
	return st;
}

/* CURLOPT_SSL_CTX_FUNCTION: every TLS connection verifies against the one shared store. */
static CURLcode on_ssl_ctx(CURL *e, void *ctx, void *ud)
{
	X509_STORE *st = store_get(ud);
	(void)e;

	if (!st)
		return CURLE_SSL_CACERT_BADFILE; /* fail closed: never an unverified peer */
	SSL_CTX_set1_cert_store(ctx, st);        /* takes a reference */
	/* an idle connection (a stream waiting for its command) keeps no 34 KiB of TLS buffers */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return CURLE_OK;
}

void sbx__http_set_logger(sbx_http *h, const sbx_logger *logger)
{
	h->logger = *logger;
}

/* The debug line of a finished call: method, path (no host, no query), status, ms. */
static void call_log(const sbx_http_call *c)
{
	const char *path = strstr(c->req.url, "://");
	char status[16], ms[24], pathbuf[256];

	path = path ? strchr(path + 3, '/') : NULL;
	snprintf(pathbuf, sizeof(pathbuf), "%.*s", path ? (int)strcspn(path, "?#") : 1,
	         path ? path : "/");
	snprintf(status, sizeof(status), "%ld", c->status);
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)(sbx__now_ms() - c->t0_ms));
	sbx_log_field f[4] = {
	    {"method", c->req.method}, {"path", pathbuf}, {"status", status}, {"ms", ms}};
	c->h->logger.fn(SBX_LOG_DEBUG, "http", f, 4, c->h->logger.payload);
}

static void pair_cleanup(http_pair *p)
{
	if (p->easy)
		curl_easy_cleanup(p->easy);
	if (p->multi)
		curl_multi_cleanup(p->multi);
	p->easy = NULL;
	p->multi = NULL;
}

int sbx__http_set_test_tls(sbx_http *h, const char *ca_file, const char *connect_to)
{
	if (ca_file) {
		char *copy = sbx__strdup(ca_file);
		if (!copy)
			return SBX_ENOMEM;
		sbx__free(h->cainfo);
		sbx__free(h->capath);
		h->cainfo = copy;
		h->capath = NULL;
		h->ca_override = true;
	}
	if (connect_to) {
		struct curl_slist *l = curl_slist_append(h->connect_to, connect_to);
		if (!l)
			return SBX_ENOMEM;
		h->connect_to = l;
	}
	return 0;
}

static void loop_stop(sbx_http *h);

void sbx__http_free(sbx_http *h)
{
	if (!h)
		return;
	loop_stop(h);
	curl_slist_free_all(h->connect_to);
	for (size_t i = 0; i < h->nidle; i++)
		pair_cleanup(&h->idle[i]);
	if (h->share)
		curl_share_cleanup(h->share);
	X509_STORE_free(h->store);
	sbx__free(h->cainfo);
	sbx__free(h->capath);
	for (size_t i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&h->share_mu[i]);
	pthread_cond_destroy(&h->loop.cond);
	pthread_mutex_destroy(&h->loop.mu);
	pthread_mutex_destroy(&h->mu);
	sbx__free(h);
}

static int pair_take(http_pair *out, sbx_http *h)
{
	bool found = false;

	pthread_mutex_lock(&h->mu);
	if (h->nidle > 0) {
		*out = h->idle[--h->nidle];
		found = true;
	}
	pthread_mutex_unlock(&h->mu);
	if (found) {
		curl_easy_reset(out->easy);
		return 0;
	}
	out->multi = curl_multi_init();
	out->easy = curl_easy_init();
	if (!out->multi || !out->easy) {
		pair_cleanup(out);
		return SBX_ENOMEM;
	}
	return 0;
}

static void pair_give(sbx_http *h, http_pair *p)
{
	bool kept = false;

	pthread_mutex_lock(&h->mu);
	if (h->nidle < SBX_HTTP_POOL_IDLE) {
		h->idle[h->nidle++] = *p;
		kept = true;
	}
	pthread_mutex_unlock(&h->mu);
	if (!kept)
		pair_cleanup(p);
}

static size_t loop_put(sbx_http_call *c, const char *ptr, size_t n);

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	sbx_http_call *c = ud;
	size_t n = size * nmemb, room;
	int rc;

	if (c->status == 0)
		curl_easy_getinfo(c->pair.easy, CURLINFO_RESPONSE_CODE, &c->status);
	if (!c->looped && c->stopped)
		return n; /* drained: the caller already has its answer (loop calls: discard) */
	if (c->status == 200 && c->req.on_data && c->looped)
		return loop_put(c, ptr, n); /* the caller's thread runs on_data */
	if (c->status == 200 && c->req.on_data) {
		rc = c->req.on_data((const unsigned char *)ptr, n, c->req.payload, &c->cb_err);
		if (rc < 0) {
			c->cb_code = rc;
			return 0; /* != n: curl fails the transfer with CURLE_WRITE_ERROR */
		}
		if (rc == 1)
			c->stopped = true;
		else if (rc == 2)
			c->yield = true;
		return n;
	}
	if (c->status >= 200 && c->status < 300) {
		if ((rc = sbx_buf_put(&c->body, ptr, n)) < 0) {
			/* a loop call's caller reads these once the transfer is done */
			int *code = c->looped ? &c->lcb_code : &c->cb_code;
			*code = sbx__error_set(c->looped ? &c->lcb_err : &c->cb_err, rc,
			                       rc == SBX_ETOOLARGE
			                           ? "%s: response body larger than %zu bytes"
			                           : "%s: out of memory reading the response",
			                       c->req.what, c->body.max);
			return 0;
		}
		return n;
	}
	/* An error body: keep its head for the message, drop the rest. */
	room = SBX_HTTP_MAX_ERROR_BODY - c->body.len;
	/* best effort: on failure the status alone still makes the error */
	(void)sbx_buf_put(&c->body, ptr, n < room ? n : room);
	return n;
}

/* The multipart part's bytes are read from the caller's buffer, never copied. */
static size_t upload_read(char *buf, size_t size, size_t nitems, void *arg)
{
	sbx_http_call *c = arg;
	size_t left = c->req.upload_len - c->upload_off, n = size * nitems;

	if (n > left)
		n = left;
	if (n)
		memcpy(buf, (const char *)c->req.upload_data + c->upload_off, n);
	c->upload_off += n;
	return n;
}

/* curl rewinds the body when it resends the request on a fresh connection. */
static int upload_seek(void *arg, curl_off_t offset, int origin)
{
	sbx_http_call *c = arg;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > c->req.upload_len)
		return CURL_SEEKFUNC_CANTSEEK;
	c->upload_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* A streamed part: pulled from the caller's callback as curl sends. */
static size_t upload_pull(char *buf, size_t size, size_t nitems, void *arg)
{
	sbx_http_call *c = arg;
	size_t n = c->req.upload_fn((unsigned char *)buf, size * nitems, c->req.upload_payload);
	return n == SIZE_MAX ? CURL_READFUNC_ABORT : n;
}

/* ---- the multiplexing loop (HTTPS calls) ---- */

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

/* The loop thread's write callback for a 200 streamed to on_data: queue for the caller. */
static size_t loop_put(sbx_http_call *c, const char *ptr, size_t n)
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
	} else {
		wake = c->inbox.len == n; /* it was empty: the caller may be asleep */
	}
	pthread_mutex_unlock(&L->mu);
	if (wake)
		efd_signal(c->efd);
	return ret;
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
	c->lstate = LS_OUT;
	pthread_cond_broadcast(&L->cond);
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
		pthread_mutex_lock(&L->mu);
		c->ldone = true;
		c->lresult = CURLE_OUT_OF_MEMORY;
		efd_signal(c->efd); /* before loop_out: from then on the caller may free it */
		loop_out(L, c);
		pthread_mutex_unlock(&L->mu);
		return;
	}
	pthread_mutex_lock(&L->mu);
	c->lstate = LS_IN;
	pthread_mutex_unlock(&L->mu);
	if (!o)
		return;
	o->active++;
	if (!o->known || o->h2) {
		/* curl picks the call's connection now: did it have to open one? */
		(void)curl_multi_perform(L->multi, &running);
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

static void *loop_main(void *arg)
{
	sbx_http *h = arg;
	http_loop *L = &h->loop;
	sbx_http_call *c, *resume, *admit, **admit_tail;
	CURLMsg *msg;
	int running, queued;

	for (;;) {
		resume = NULL;
		admit = NULL;
		admit_tail = &admit;
		pthread_mutex_lock(&L->mu);
		if (L->stop) {
			pthread_mutex_unlock(&L->mu);
			break;
		}
		while ((c = L->queue)) {
			L->queue = c->lnext;
			c->queued = false;
			if (c->lstate == LS_ADD) {
				c->lstate = LS_ADMIT; /* in order, below */
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
				c->anext = resume;
				resume = c;
			}
		}
		pthread_mutex_unlock(&L->mu);
		/*
		 * Outside the lock: resuming delivers the held chunk to loop_put at once. The
		 * callers cannot free these calls meanwhile: their removal waits for the
		 * next round.
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
		(void)curl_multi_perform(L->multi, &running);
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
			pthread_mutex_lock(&L->mu);
			c->ldone = true;
			c->lresult = result;
			efd_signal(
			    c->efd); /* before loop_out: from then on the caller may free it */
			loop_out(L, c);
			pthread_mutex_unlock(&L->mu);
		}
		origins_release(L);
		(void)curl_multi_poll(L->multi, NULL, 0, POLL_SLICE_MS, NULL);
	}
	return NULL;
}

/* The loop, started on first use. false: no loop (the call uses a pair). */
static bool loop_ready(sbx_http *h)
{
	http_loop *L = &h->loop;
	pthread_attr_t attr;
	sigset_t all, old;
	bool ok;

	pthread_mutex_lock(&h->mu);
	if (!L->started && !L->failed) {
		ok = (L->multi = curl_multi_init()) != NULL &&
		     curl_multi_setopt(L->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX) ==
		         CURLM_OK &&
		     curl_multi_setopt(L->multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
		                       (long)SBX_HTTP_MAX_STREAMS) == CURLM_OK &&
		     pthread_attr_init(&attr) == 0;
		if (ok) {
			(void)pthread_attr_setstacksize(&attr, LOOP_STACK);
			/* no signal handler of the application runs on our thread */
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			ok = pthread_create(&L->thread, &attr, loop_main, h) == 0;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			pthread_attr_destroy(&attr);
		}
		if (!ok && L->multi) {
			curl_multi_cleanup(L->multi);
			L->multi = NULL;
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

static void loop_stop(sbx_http *h)
{
	http_loop *L = &h->loop;

	if (L->started && L->pid != getpid()) {
		L->started = false; /* a forked child: no thread to join; the multi is left */
	} else if (L->started) {
		pthread_mutex_lock(&L->mu);
		L->stop = true;
		pthread_mutex_unlock(&L->mu);
		curl_multi_wakeup(L->multi);
		pthread_join(L->thread, NULL);
		curl_multi_cleanup(L->multi);
		L->started = false;
	}
	for (size_t i = 0; i < L->nidle; i++)
		curl_easy_cleanup(L->idle[i]);
	L->nidle = 0;
	for (size_t i = 0; i < L->norigins; i++)
		origin_free(L->origins[i]);
	sbx__free(L->origins);
	L->origins = NULL;
	L->norigins = L->corigins = 0;
}

static CURL *loop_easy_take(http_loop *L)
{
	CURL *e = NULL;

	pthread_mutex_lock(&L->mu);
	if (L->nidle > 0)
		e = L->idle[--L->nidle];
	pthread_mutex_unlock(&L->mu);
	if (e) {
		curl_easy_reset(e);
		return e;
	}
	return curl_easy_init();
}

static void loop_easy_give(http_loop *L, CURL *e)
{
	pthread_mutex_lock(&L->mu);
	if (L->nidle < LOOP_IDLE) {
		L->idle[L->nidle++] = e;
		e = NULL;
	}
	pthread_mutex_unlock(&L->mu);
	if (e)
		curl_easy_cleanup(e);
}

/* Hand a set-up call to the loop thread. */
static void loop_add(sbx_http_call *c)
{
	http_loop *L = &c->h->loop;

	pthread_mutex_lock(&L->mu);
	c->lstate = LS_ADD;
	loop_queue(L, c);
	pthread_mutex_unlock(&L->mu);
	curl_multi_wakeup(L->multi);
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
		curl_multi_wakeup(L->multi);
	pthread_mutex_lock(&L->mu);
	while (c->lstate != LS_NONE && c->lstate != LS_OUT)
		pthread_cond_wait(&L->cond, &L->mu);
	loop_unqueue(L, c); /* a late unpause command */
	pthread_mutex_unlock(&L->mu);
}

/* The caller stopped reading: the rest is dropped; give the transfer a moment to end. */
static void loop_drain(sbx_http_call *c)
{
	http_loop *L = &c->h->loop;
	uint64_t end = sbx__now_ms() + SBX_HTTP_DRAIN_MS, now;
	struct pollfd pfd;
	bool done;

	for (;;) {
		pthread_mutex_lock(&L->mu);
		c->discard = true;
		sbx_buf_clear(&c->inbox);
		if (c->paused && c->lstate == LS_IN) {
			c->paused = false;
			c->want_unpause = true;
			loop_queue(L, c);
		}
		done = c->ldone;
		pthread_mutex_unlock(&L->mu);
		if (done || (now = sbx__now_ms()) >= end)
			return;
		curl_multi_wakeup(L->multi);
		pfd.fd = c->efd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(end - now)) > 0)
			efd_clear(c->efd);
	}
}

static int call_finish(sbx_http_call *c, sbx_error *err);

/* sbx__http_call_wait() of a loop call: the caller's thread runs on_data. */
static int loop_wait(sbx_http_call *c, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	http_loop *L = &c->h->loop;
	int sigfd = sig ? sbx_signal_fd(sig) : -1, rc;
	struct pollfd pfd[2];
	bool done, oom, wake;
	uint64_t now, wait;
	sbx_buf t;

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
		wake = false;
		pthread_mutex_lock(&L->mu);
		t = c->inbox; /* swap: the loop fills the (empty) other buffer meanwhile */
		c->inbox = c->taken;
		c->taken = t;
		if (c->paused && c->lstate == LS_IN) {
			c->paused = false;
			c->want_unpause = true;
			loop_queue(L, c);
			wake = true;
		}
		done = c->ldone;
		oom = c->loop_oom;
		if (done) {
			c->result = c->lresult;
			if (c->lcb_code < 0 && c->cb_code == 0) {
				c->cb_code = c->lcb_code;
				c->cb_err = c->lcb_err;
			}
		}
		pthread_mutex_unlock(&L->mu);
		if (wake)
			curl_multi_wakeup(L->multi);
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
			return call_finish(c, err);
		}
		if (sig && sbx_signal_aborted(sig))
			return SBX_EABORTED;
		now = sbx__now_ms();
		if (deadline_ms && now >= deadline_ms)
			return SBX_ETIMEOUT;
		wait = deadline_ms && deadline_ms - now < POLL_SLICE_MS ? deadline_ms - now
		                                                        : POLL_SLICE_MS;
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

static int call_setup(sbx_http_call *c, sbx_error *err)
{
	CURL *e = c->pair.easy;
	const sbx_http_req *r = &c->req;
	struct curl_slist *l;
	curl_mimepart *part;
	CURLcode rc = CURLE_OK;

	for (size_t i = 0; i < r->nheaders; i++) {
		if (!(l = curl_slist_append(c->headers, r->headers[i])))
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
		c->headers = l;
	}
	/* No "Expect: 100-continue" round trip for larger bodies. */
	if (!(l = curl_slist_append(c->headers, "Expect:")))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	c->headers = l;

	rc |= curl_easy_setopt(e, CURLOPT_URL, r->url);
	rc |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	rc |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	rc |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	rc |= curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	/* curl's default too; said here because a Nagle stall costs a delayed-ACK timeout */
	rc |= curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	if (c->h->share)
		rc |= curl_easy_setopt(e, CURLOPT_SHARE, c->h->share);
	if (c->h->own_store && strncmp(r->url, "https:", 6) == 0) {
		/* curl loads no CA file of its own; on_ssl_ctx hands over the shared store */
		rc |= curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
		rc |= curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, c->h);
		rc |= curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
		rc |= curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	} else if (c->h->ca_override) { /* another TLS backend: curl reads the file */
		rc |= curl_easy_setopt(e, CURLOPT_CAINFO, c->h->cainfo);
		rc |= curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	if (r->upload_part) {
		/*
		 * A file upload goes on an HTTP/1.1 connection: over HTTP/2 it moves one
		 * flow-control window per round trip (64 KiB by default) and curl 7.88 spins
		 * while the window is shut (16 MiB at RTT 20 ms: 24 s and 3.5 s of CPU against
		 * 2.8 s and 0.08 s over HTTP/1.1).
		 */
		rc |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	} else if (c->looped) {
		/* HTTP/2 where ALPN offers it; wait for a connection that may multiplex */
		rc |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
		rc |= curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
		rc |= curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, loop_open_socket);
		rc |= curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
	}
	if (!r->upload_part) {
		/* curl's 64 KiB default upload buffer is allocated per transfer: ours send a
		 * small body, so 16 KiB (the least curl takes) per call in flight (issue 13) */
		rc |= curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)SBX_HTTP_UPLOAD_BUF);
	}
	rc |= curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->h->connect_to);
	rc |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	rc |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
	rc |=
	    curl_easy_setopt(e, CURLOPT_PRIVATE, c); /* pump() finds the call of a finished easy */
	if (r->upload_part) {
		if (!(c->mime = curl_mime_init(e)) || !(part = curl_mime_addpart(c->mime)))
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
		rc |= curl_mime_name(part, r->upload_part);
		rc |= curl_mime_filename(part, r->upload_filename);
		if (r->upload_fn)
			rc |= curl_mime_data_cb(part, -1, upload_pull, NULL, NULL, c);
		else
			rc |= curl_mime_data_cb(part, (curl_off_t)r->upload_len, upload_read,
			                        upload_seek, NULL, c);
		rc |= curl_easy_setopt(e, CURLOPT_MIMEPOST, c->mime);
	} else if (strcmp(r->method, "POST") == 0) {
		rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
	} else if (strcmp(r->method, "GET") == 0) {
		rc |= curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else {
		rc |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
		if (r->body) {
			rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			                       (curl_off_t)r->body_len);
			rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		}
	}
	if (rc != CURLE_OK)
		return sbx__error_set(err, SBX_EINTERNAL, "%s: cannot set up the request", r->what);
	if (c->looped) {
		loop_add(c);
	} else if (curl_multi_add_handle(c->pair.multi, e) != CURLM_OK) {
		return sbx__error_set(err, SBX_EINTERNAL, "%s: cannot start the request", r->what);
	}
	c->added = true;
	return 0;
}

/*
 * An HTTPS call without a file upload goes through the loop. Uploads (from memory or streamed)
 * run on their own handle in the caller's thread, on HTTP/1.1: they gain nothing from
 * multiplexing, and an HTTP/1.1 upload in the loop's multi beside HTTP/2 transfers crashed
 * curl 7.88 twice in 45 loaded bench rounds (SIGSEGV in curl_multi_perform).
 */
static bool call_loops(sbx_http *h, const sbx_http_req *req)
{
	return strncmp(req->url, "https:", 6) == 0 && !req->upload_part && loop_ready(h);
}

/* A loop call's own state: its eventfd, its queues, an easy handle. */
static int loop_call_init(sbx_http_call *c)
{
	c->looped = true;
	sbx_buf_init(&c->inbox, SBX_HTTP_INBOX_HIGH + (64u << 20));
	sbx_buf_init(&c->taken, SBX_HTTP_INBOX_HIGH + (64u << 20));
	if ((c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return errno == ENOMEM ? SBX_ENOMEM : SBX_EINTERNAL;
	if (!(c->pair.easy = loop_easy_take(&c->h->loop)))
		return SBX_ENOMEM;
	return 0;
}

int sbx__http_call_start(sbx_http_call **out, sbx_http *h, const sbx_http_req *req, sbx_error *err)
{
	sbx_http_call *c;
	int error;

	*out = NULL;
	if (!(c = sbx__calloc(1, sizeof(*c))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	c->h = h;
	c->req = *req;
	c->t0_ms = sbx__now_ms();
	c->efd = -1;
	sbx_buf_init(&c->body, req->max_body ? req->max_body : SBX_HTTP_MAX_BODY);
	if (call_loops(h, req)) {
		if ((error = loop_call_init(c)) < 0) {
			sbx__http_call_free(c);
			return sbx__error_set(err, error,
			                      error == SBX_ENOMEM
			                          ? "out of memory creating a curl handle"
			                          : "cannot create an eventfd");
		}
	} else if (pair_take(&c->pair, h) < 0) {
		sbx__free(c);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory creating a curl handle");
	}
	if ((error = call_setup(c, err)) < 0) {
		sbx__http_call_free(c);
		return error;
	}
	*out = c;
	return 0;
}

static int call_finish(sbx_http_call *c, sbx_error *err)
{
	if (c->req.unsent_out)
		*c->req.unsent_out = c->result == CURLE_COULDNT_RESOLVE_PROXY ||
		                     c->result == CURLE_COULDNT_RESOLVE_HOST ||
		                     c->result == CURLE_COULDNT_CONNECT ||
		                     c->result == CURLE_PEER_FAILED_VERIFICATION;
	if (c->result == CURLE_OK) {
		curl_easy_getinfo(c->pair.easy, CURLINFO_RESPONSE_CODE, &c->status);
		return 0;
	}
	if (c->cb_code < 0) {
		if (err && err->code == 0)
			*err = c->cb_err;
		return c->cb_code;
	}
	if (c->req.reset_out && (c->result == CURLE_RECV_ERROR || c->result == CURLE_SEND_ERROR ||
	                         c->result == CURLE_GOT_NOTHING)) {
		long status = 0;
		curl_easy_getinfo(c->pair.easy, CURLINFO_RESPONSE_CODE, &status);
		*c->req.reset_out = status == 0; /* not one byte of an answer */
	}
	return sbx__error_set(err, SBX_ENETWORK, "%s failed: %s", c->req.what,
	                      c->errbuf[0] ? c->errbuf : curl_easy_strerror(c->result));
}

/* Pump the transfer until curl sees it end, so the connection can be reused. */
static int pump(sbx_http_call *c)
{
	CURLMsg *msg;
	int running, queued;

	if (curl_multi_perform(c->pair.multi, &running) != CURLM_OK)
		return SBX_EINTERNAL;
	while ((msg = curl_multi_info_read(c->pair.multi, &queued))) {
		sbx_http_call *owner = NULL;
		if (msg->msg != CURLMSG_DONE)
			continue;
		/* a multi may drive joined calls too: the message names its easy handle */
		if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&owner) !=
		        CURLE_OK ||
		    !owner)
			owner = c;
		owner->done = true;
		owner->result = msg->data.result;
	}
	return 0;
}

/*
 * After the caller stopped reading (a Connect end-stream message), give the
 * rest of the response (typically the last chunk) a moment to arrive: a
 * transfer cut short closes its connection, a finished one keeps it.
 */
static void call_drain(sbx_http_call *c)
{
	uint64_t end = sbx__now_ms() + SBX_HTTP_DRAIN_MS, now;

	while (!c->done) {
		if (pump(c) < 0 || c->done || (now = sbx__now_ms()) >= end)
			return;
		if (curl_multi_poll(c->pair.multi, NULL, 0, (int)(end - now), NULL) != CURLM_OK)
			return;
	}
}

int sbx__http_call_wait(sbx_http_call *c, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	int sigfd = sig ? sbx_signal_fd(sig) : -1;
	struct curl_waitfd wfd;
	uint64_t now, wait;

	if (c->looped)
		return loop_wait(c, deadline_ms, sig, err);
	for (;;) {
		if (c->stopped) {
			call_drain(c);
			return 0; /* the caller has its answer, whatever the rest of the transfer
			             does */
		}
		if (c->done)
			return call_finish(c, err);
		if (c->yield) {
			c->yield = false;
			return SBX_HTTP_YIELD;
		}
		if (sig && sbx_signal_aborted(sig))
			return SBX_EABORTED;
		if (pump(c) < 0)
			return sbx__error_set(err, SBX_EINTERNAL, "%s: curl_multi_perform failed",
			                      c->req.what);
		if (c->done || c->stopped || c->yield)
			continue;
		now = sbx__now_ms();
		if (deadline_ms && now >= deadline_ms)
			return SBX_ETIMEOUT;
		wait = deadline_ms && deadline_ms - now < POLL_SLICE_MS ? deadline_ms - now
		                                                        : POLL_SLICE_MS;
		wfd.fd = sigfd;
		wfd.events = CURL_WAIT_POLLIN;
		wfd.revents = 0;
		/* the abort signal's eventfd wakes this poll at once */
		if (curl_multi_poll(c->pair.multi, sigfd >= 0 ? &wfd : NULL, sigfd >= 0 ? 1 : 0,
		                    (int)wait, NULL) != CURLM_OK)
			return sbx__error_set(err, SBX_EINTERNAL, "%s: curl_multi_poll failed",
			                      c->req.what);
	}
}

long sbx__http_call_status(const sbx_http_call *c)
{
	return c->status;
}

const sbx_buf *sbx__http_call_body(const sbx_http_call *c)
{
	return &c->body;
}

char *sbx__http_call_header(const sbx_http_call *c, const char *name)
{
	struct curl_header *hd = NULL;

	if (curl_easy_header(c->pair.easy, name, 0, CURLH_HEADER, -1, &hd) != CURLHE_OK || !hd)
		return NULL;
	return sbx__strdup(hd->value);
}

void sbx__http_call_free(sbx_http_call *c)
{
	if (!c)
		return;
	if (c->added && c->h->logger.fn)
		call_log(c);
	if (c->looped) {
		if (c->added)
			loop_detach(c); /* cuts an unfinished transfer */
		if (c->pair.easy) {
			curl_easy_setopt(c->pair.easy, CURLOPT_HTTPHEADER, NULL);
			curl_easy_setopt(c->pair.easy, CURLOPT_MIMEPOST, NULL);
			curl_easy_setopt(c->pair.easy, CURLOPT_ERRORBUFFER, NULL);
			loop_easy_give(&c->h->loop, c->pair.easy);
		}
		if (c->efd >= 0)
			close(c->efd);
		sbx_buf_dispose(&c->inbox);
		sbx_buf_dispose(&c->taken);
	} else if (c->added) {
		curl_multi_remove_handle(c->pair.multi,
		                         c->pair.easy); /* cuts an unfinished transfer */
	}
	if (c->looped) {
		/* done above */
	} else if (c->joined) {
		curl_easy_cleanup(c->pair.easy); /* the multi is the host's */
	} else if (c->pair.easy) {
		/* Drop pointers into this call before the pair outlives it. */
		curl_easy_setopt(c->pair.easy, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(c->pair.easy, CURLOPT_MIMEPOST, NULL);
		curl_easy_setopt(c->pair.easy, CURLOPT_ERRORBUFFER, NULL);
		pair_give(c->h, &c->pair);
	}
	curl_mime_free(c->mime);
	curl_slist_free_all(c->headers);
	sbx_buf_dispose(&c->body);
	sbx__free(c);
}

int sbx__http_call_join(sbx_http_call **out, sbx_http_call *host, const sbx_http_req *req,
                        sbx_error *err)
{
	sbx_http_call *c;
	int error;

	*out = NULL;
	if (host->looped) /* the loop moves every transfer: a call of its own */
		return sbx__http_call_start(out, host->h, req, err);
	if (!(c = sbx__calloc(1, sizeof(*c))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	c->h = host->h;
	c->req = *req;
	c->efd = -1;
	c->joined = true;
	sbx_buf_init(&c->body, req->max_body ? req->max_body : SBX_HTTP_MAX_BODY);
	c->pair.multi = host->pair.multi;
	if (!(c->pair.easy = curl_easy_init())) {
		sbx__free(c);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory creating a curl handle");
	}
	if ((error = call_setup(c, err)) < 0) {
		sbx__http_call_free(c);
		return error;
	}
	*out = c;
	return 0;
}

int sbx__http_perform(sbx_http_call **out, sbx_http *h, const sbx_http_req *req,
                      uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	sbx_http_call *c;
	int error;

	*out = NULL;
	if ((error = sbx__http_call_start(&c, h, req, err)) < 0)
		return error;
	error = sbx__http_call_wait(c, deadline_ms, sig, err);
	if (error == SBX_ETIMEOUT)
		sbx__error_set(err, error, "%s timed out", req->what);
	else if (error == SBX_EABORTED)
		sbx__error_set(err, error, "%s aborted", req->what);
	if (error < 0) {
		sbx__http_call_free(c);
		return error;
	}
	*out = c;
	return 0;
}

int sbx__http_sleep(uint64_t ms, sbx_signal *sig, sbx_error *err)
{
	uint64_t deadline = sbx__now_ms() + ms, now;
	struct pollfd pfd;

	for (;;) {
		if (sig && sbx_signal_aborted(sig))
			return sbx__error_set(err, SBX_EABORTED, "aborted");
		now = sbx__now_ms();
		if (now >= deadline)
			return 0;
		pfd.fd = sig ? sbx_signal_fd(sig) : -1; /* poll() ignores a negative fd */
		pfd.events = POLLIN;
		pfd.revents = 0;
		(void)poll(&pfd, 1,
		           (int)(deadline - now < POLL_SLICE_MS ? deadline - now : POLL_SLICE_MS));
	}
}
