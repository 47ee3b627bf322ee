/*
 * e2b/http_int.h: the insides of the HTTP client (http.h), shared by its three files, each
 * using only those below it: http.c (the client, its pool of (multi, easy) pairs, one call from
 * setup to free) over http_loop.c (the multiplexing loop of HTTPS calls) over http_tls.c (the
 * share of DNS answers and TLS sessions, the one CA store, its bundle read by http_ca.c).
 * Nothing else includes it.
 */
#ifndef SBX_E2B_HTTP_INT_H
#define SBX_E2B_HTTP_INT_H

#include <curl/curl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <sandbox/error.h>
#include <sandbox/signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2b/http.h"
#include "util/buf.h"

#define POLL_SLICE_MS 1000 /* longest single poll; deadlines and aborts end it sooner */
#define LOOP_IDLE     32   /* idle easy handles kept for the loop's calls */

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
	struct sbx_http_call *due;   /* under mu: calls whose caller is woken when this round's
	                                socket actions are done (sbx__http_loop_put) */
	CURL *idle[LOOP_IDLE];       /* under mu */
	size_t nidle;
	int idle_efd[LOOP_IDLE]; /* under mu: eventfds of ended calls, kept for the next ones */
	size_t nidle_efd;
	loop_origin **origins; /* the loop thread's own */
	size_t norigins, corigins;
	/*
	 * The loop thread's own (curl's socket and timer callbacks): what it polls, [0] the wake
	 * eventfd and then curl's sockets (each one's index is its curl_multi_assign pointer), and
	 * when curl's timer is due (curl_multi_socket_action drives the transfers).
	 */
	int wfd; /* eventfd: commands (or stop) wait in the queue */
	struct pollfd *pfd;
	size_t npfd, cpfd;
	struct pollfd *ready; /* a round's ready sockets, cpfd of them */
	bool timer_set;
	uint64_t timer_due_ms;
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
	 * 25 ms of CPU and 1 MiB each (256 in-flight execs over TLS: README.md
	 * "Where E2B is: TLS, HTTP/2, 20 and 80 ms away").
	 * Only with curl's OpenSSL backend; loaded on the first TLS connection, the bundle's
	 * certificates decoded when a verification first asks for their subject (http_ca.h).
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
	bool wake_due;     /* in loop.due */
	int lcb_code;      /* a buffered body's error, raised on the loop thread */
	sbx_error lcb_err;
	CURLcode lresult;
	sbx_buf inbox; /* 200 bytes for on_data, not yet taken by the caller */
	sbx_buf taken; /* the caller's: the inbox it swapped out */
	struct sbx_http_call *lnext;
	struct sbx_http_call *dnext; /* loop.due */
	/* the loop thread's own */
	struct sbx_http_call *anext, *hnext; /* its admission and resume batches; held queue */
	loop_origin *origin;
	bool opened; /* curl opened a socket for this call */
};

/* ---- http_tls.c ---- */
/* DNS cache and TLS sessions shared across a client's handles; NULL when curl cannot. */
CURLSH *sbx__http_share_new(sbx_http *h);
/* curl's built-in CA locations (CURLINFO_CAINFO / CAPATH) for the shared store, which is used
 * (own_store) with curl's OpenSSL backend only. 0, or SBX_ENOMEM. */
int sbx__http_ca_defaults(sbx_http *h);
/* The CA options of a call to `url`: the shared store for HTTPS (loaded on the first TLS
 * connection; a connection fails closed when it cannot be), or the test CA file. */
CURLcode sbx__http_tls_setopt(sbx_http *h, CURL *e, const char *url);

/* ---- http_loop.c ---- */
#define SBX_HTTP_LOOP_DONE 2 /* sbx__http_loop_wait: the transfer ended (c->result is set) */
/* The loop, started on first use. false: no loop (the call uses a pair). */
bool sbx__http_loop_ready(sbx_http *h);
/* Stop and join the loop thread (a forked child's is left alone); free its idle handles. */
void sbx__http_loop_stop(sbx_http *h);
/* A loop call's own state: its eventfd and easy handle (an ended call's, else new ones), its
 * queues. 0, SBX_ENOMEM or SBX_EINTERNAL (no eventfd). */
int sbx__http_loop_call_init(sbx_http_call *c);
/* The easy options of a loop call (HTTP/2 over TLS, wait to multiplex, the socket watch). */
CURLcode sbx__http_loop_setopt(sbx_http_call *c);
/* Hand a set-up call to the loop thread. */
void sbx__http_loop_add(sbx_http_call *c);
/* The loop thread's write callback for a 200 streamed to on_data: queue for the caller. */
size_t sbx__http_loop_put(sbx_http_call *c, const char *ptr, size_t n);
/* sbx__http_call_wait() of a loop call: the caller's thread runs on_data. 0 (stopped),
 * SBX_HTTP_YIELD, SBX_HTTP_LOOP_DONE, or an error. */
int sbx__http_loop_wait(sbx_http_call *c, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);
/* The loop's part of sbx__http_call_free: out of the loop (waiting for its thread), the easy
 * handle and the eventfd kept for reuse, the queues gone. */
void sbx__http_loop_call_release(sbx_http_call *c);

#endif
