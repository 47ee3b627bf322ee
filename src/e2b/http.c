/*
 * e2b/http.c: libcurl glue (see http.h for the rules it keeps): the client, its pool, and one
 * call from setup to free. The multiplexing loop of HTTPS calls is http_loop.c, what every
 * call shares below HTTP (DNS, TLS sessions, the CA store) http_tls.c; http_int.h holds the
 * structs all three share.
 *
 * Each call runs on its own (multi, easy) pair, so a blocked call waits in
 * curl_multi_poll() on exactly its socket, its deadline and its abort signal.
 * Pairs come from a small mutex-protected pool so that keep-alive connections
 * (cached per multi handle) survive between calls: a sequential exec costs
 * two requests on warm connections instead of two TCP (and TLS) handshakes.
 *
 * HTTPS calls instead go through the client's one multiplexing loop
 * (http_loop.c). File uploads (from memory or the caller's code) stay on the
 * pairs, on HTTP/1.1.
 */
#include "e2b/http_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sandbox/common.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define SBX_HTTP_UPLOAD_BUF (16 << 10)
#define BODY_POPULATE_MIN   (1u << 20) /* a buffered body this long is paged in at once */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL): faults then */
#endif

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
	h->share = sbx__http_share_new(h);
	if (sbx__http_ca_defaults(h) < 0) {
		sbx__http_free(h);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	*out = h;
	return 0;
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

void sbx__http_free(sbx_http *h)
{
	if (!h)
		return;
	sbx__http_loop_stop(h);
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

/*
 * The first bytes of a buffered 2xx body whose length the answer says (at most the cap): its
 * room is made at once, not regrown while it arrives, and a long one's pages are made by one
 * system call instead of a page fault each (64 MiB: 16,384 faults, about 10 ms of CPU saved on
 * this machine). A length that lies only costs room up to the cap, which bounds it anyway.
 */
static void body_presize(sbx_http_call *c)
{
	curl_off_t cl = -1;
	unsigned char *tail;
	uintptr_t from, to, page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (curl_easy_getinfo(c->pair.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK ||
	    cl <= 0 || (uint64_t)cl > c->body.max ||
	    sbx_buf_reserve(&c->body, (size_t)cl, &tail) < 0)
		return;
	if ((uint64_t)cl < BODY_POPULATE_MIN)
		return;
	from = ((uintptr_t)tail + page - 1) & ~(page - 1);
	to = ((uintptr_t)tail + (size_t)cl) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE); /* best effort */
}

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
		return sbx__http_loop_put(c, ptr, n); /* the caller's thread runs on_data */
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
		if (c->body.cap == 0)
			body_presize(c);
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

/* The request's headers as curl's list, in c->headers. */
static int call_headers(sbx_http_call *c, sbx_error *err)
{
	const sbx_http_req *r = &c->req;
	struct curl_slist *l;

	for (size_t i = 0; i < r->nheaders; i++) {
		if (!(l = curl_slist_append(c->headers, r->headers[i])))
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
		c->headers = l;
	}
	/* No "Expect: 100-continue" round trip for larger bodies. */
	if (!(l = curl_slist_append(c->headers, "Expect:")))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	c->headers = l;
	return 0;
}

/* The request's method and body: a multipart upload (from memory or pulled from the caller),
 * a POST body, GET, or another method with an optional body. 0 with the options' result
 * folded into *rc, or SBX_ENOMEM. */
static int call_body_setopt(sbx_http_call *c, CURLcode *rc, sbx_error *err)
{
	CURL *e = c->pair.easy;
	const sbx_http_req *r = &c->req;
	curl_mimepart *part;

	if (r->upload_part) {
		if (!(c->mime = curl_mime_init(e)) || !(part = curl_mime_addpart(c->mime)))
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
		*rc |= curl_mime_name(part, r->upload_part);
		*rc |= curl_mime_filename(part, r->upload_filename);
		if (r->upload_fn)
			*rc |= curl_mime_data_cb(part, -1, upload_pull, NULL, NULL, c);
		else
			*rc |= curl_mime_data_cb(part, (curl_off_t)r->upload_len, upload_read,
			                         upload_seek, NULL, c);
		for (size_t i = 0; i < r->nmore_parts; i++) {
			if (!(part = curl_mime_addpart(c->mime)))
				return sbx__error_set(err, SBX_ENOMEM, "out of memory");
			*rc |= curl_mime_name(part, r->upload_part);
			*rc |= curl_mime_filename(part, r->more_parts[i].filename);
			*rc |=
			    curl_mime_data(part, r->more_parts[i].data ? r->more_parts[i].data : "",
			                   r->more_parts[i].len);
		}
		*rc |= curl_easy_setopt(e, CURLOPT_MIMEPOST, c->mime);
	} else if (strcmp(r->method, "POST") == 0) {
		*rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		*rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
	} else if (strcmp(r->method, "GET") == 0) {
		*rc |= curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else {
		*rc |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
		if (r->body) {
			*rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			                        (curl_off_t)r->body_len);
			*rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		}
	}
	return 0;
}

static int call_setup(sbx_http_call *c, sbx_error *err)
{
	CURL *e = c->pair.easy;
	const sbx_http_req *r = &c->req;
	CURLcode rc = CURLE_OK;
	int error;

	if ((error = call_headers(c, err)) < 0)
		return error;
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
	rc |= sbx__http_tls_setopt(c->h, e, r->url);
	if (r->upload_part || r->bulk) {
		/*
		 * A file upload goes on an HTTP/1.1 connection: over HTTP/2 it moves one
		 * flow-control window per round trip (64 KiB by default) and curl 7.88 spins
		 * while the window is shut (16 MiB at RTT 20 ms: 24 s and 3.5 s of CPU against
		 * 2.8 s and 0.08 s over HTTP/1.1). A download too (http.h, bulk); it finds the
		 * upload's connection in the pool.
		 */
		rc |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	} else if (c->looped) {
		rc |= sbx__http_loop_setopt(c);
	}
	if (!r->upload_part) {
		/* curl's 64 KiB default upload buffer is allocated per transfer: ours send a
		 * small body, so 16 KiB (the least curl takes) per call in flight (README.md
		 * "Where E2B is: TLS, HTTP/2, 20 and 80 ms away") */
		rc |= curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)SBX_HTTP_UPLOAD_BUF);
	}
	rc |= curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->h->connect_to);
	rc |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	rc |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
	rc |=
	    curl_easy_setopt(e, CURLOPT_PRIVATE, c); /* pump() finds the call of a finished easy */
	if ((error = call_body_setopt(c, &rc, err)) < 0)
		return error;
	if (rc != CURLE_OK)
		return sbx__error_set(err, SBX_EINTERNAL, "%s: cannot set up the request", r->what);
	if (c->looped) {
		sbx__http_loop_add(c);
	} else if (curl_multi_add_handle(c->pair.multi, e) != CURLM_OK) {
		return sbx__error_set(err, SBX_EINTERNAL, "%s: cannot start the request", r->what);
	}
	c->added = true;
	return 0;
}

/*
 * An HTTPS call without a file's bytes goes through the loop. Uploads (from memory or streamed)
 * and downloads (bulk) run on their own handle in the caller's thread, on HTTP/1.1: they gain
 * nothing from multiplexing, and an HTTP/1.1 upload in the loop's multi beside HTTP/2
 * transfers crashed curl 7.88 twice in 45 loaded bench rounds (SIGSEGV in curl_multi_perform).
 */
static bool call_loops(sbx_http *h, const sbx_http_req *req)
{
	return strncmp(req->url, "https:", 6) == 0 && !req->upload_part && !req->bulk &&
	       sbx__http_loop_ready(h);
}

/* A new call of h for req, started now: no eventfd yet, its body buffer sized. NULL when out
 * of memory. */
static sbx_http_call *call_new(sbx_http *h, const sbx_http_req *req)
{
	sbx_http_call *c = sbx__calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->h = h;
	c->req = *req;
	c->efd = -1;
	c->t0_ms = sbx__now_ms();
	sbx_buf_init(&c->body, req->max_body ? req->max_body : SBX_HTTP_MAX_BODY);
	return c;
}

/* The call set up and handed to its transfer, in *out; or freed, with the setup's error. */
static int call_begin(sbx_http_call **out, sbx_http_call *c, sbx_error *err)
{
	int error = call_setup(c, err);

	if (error < 0) {
		sbx__http_call_free(c);
		return error;
	}
	*out = c;
	return 0;
}

int sbx__http_call_start(sbx_http_call **out, sbx_http *h, const sbx_http_req *req, sbx_error *err)
{
	sbx_http_call *c;
	int error;

	*out = NULL;
	if (!(c = call_new(h, req)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	if (call_loops(h, req)) {
		if ((error = sbx__http_loop_call_init(c)) < 0) {
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
	return call_begin(out, c, err);
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
	return sbx__error_set_http(err, SBX_ENETWORK, 0, c->req.unreachable, "%s failed: %s",
	                           c->req.what,
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

	if (c->looped) {
		int rc = sbx__http_loop_wait(c, deadline_ms, sig, err);
		return rc == SBX_HTTP_LOOP_DONE ? call_finish(c, err) : rc;
	}
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

void sbx__http_call_take_body(sbx_http_call *c, sbx_buf *out)
{
	sbx_buf_dispose(out);
	*out = c->body;
	sbx_buf_init(&c->body, 0);
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
		sbx__http_loop_call_release(c);
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

	*out = NULL;
	if (host->looped) /* the loop moves every transfer: a call of its own */
		return sbx__http_call_start(out, host->h, req, err);
	if (!(c = call_new(host->h, req)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	c->joined = true;
	c->pair.multi = host->pair.multi;
	if (!(c->pair.easy = curl_easy_init())) {
		sbx__free(c);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory creating a curl handle");
	}
	return call_begin(out, c, err);
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
