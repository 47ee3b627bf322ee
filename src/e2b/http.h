/*
 * e2b/http.h: the libcurl glue under the control-plane and envd clients.
 *
 * One easy handle per call, driven by its own multi handle with
 * curl_multi_poll(), whose extra fd is the abort signal's eventfd, so an abort
 * from another thread wakes the call at once, and whose timeout is the call's
 * monotonic deadline. Redirects are refused (a 3xx is
 * reported as an HTTP error: following one would carry the API key), TLS
 * verification stays on, no Accept-Encoding is sent, CURLOPT_NOSIGNAL is set.
 *
 * Connections are reused through a small per-client pool of (multi, easy)
 * pairs: the multi handle owns the connection cache, so returning the pair to
 * the pool keeps the connection alive for the next call. DNS answers and TLS
 * sessions are shared by all of a client's calls (curl's share interface, a
 * mutex per lock kind), and with curl's OpenSSL backend every TLS connection
 * verifies against one CA store parsed once per client (curl 7.88 would parse
 * the system bundle again per connection: ~25 ms CPU and ~1 MiB each).
 * TCP_NODELAY is on.
 *
 * HTTPS calls go through one multiplexing loop per client instead (a thread
 * of ours with one multi handle): HTTP/2 where the server offers it (ALPN),
 * concurrent calls to one host as streams of one connection, at most
 * SBX_HTTP_MAX_STREAMS per connection; HTTP/1.1 otherwise. The calling thread
 * still runs on_data and waits on its deadline and abort signal; the loop
 * only moves bytes. File uploads and downloads (upload_part, bulk) and plain http stay on
 * the pairs (HTTP/1.1). The pool, the share, the store and the loop are the only
 * shared state, each mutex-protected; there is no global mutable state.
 *
 * This layer knows no E2B and no Connect: it moves bytes.
 */
#ifndef SBX_E2B_HTTP_H
#define SBX_E2B_HTTP_H

#include <sandbox/error.h>
#include <sandbox/log.h>
#include <sandbox/signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define SBX_HTTP_MAX_BODY       (8u << 20)  /* a buffered 2xx body (list pages, Sandbox objects) */
#define SBX_HTTP_MAX_ERROR_BODY (64u << 10) /* error bodies are kept up to this, then cut */
#define SBX_HTTP_POOL_IDLE      8           /* idle (multi, easy) pairs kept per client */
#define SBX_HTTP_DRAIN_MS       25          /* wait for a stopped stream's last bytes (reuse) */
#define SBX_HTTP_MAX_STREAMS    100 /* HTTP/2 streams per connection (E2B's cap), then another */
#define SBX_HTTP_INBOX_HIGH     (1u << 20)  /* queued stream bytes before the loop pauses it */
#define SBX_HTTP_LAZY_WAKE      (64u << 10) /* queued bytes that wake a wake_at_end caller */
#define SBX_HTTP_YIELD          1 /* sbx__http_call_wait(): on_data asked for control back */

typedef struct sbx_http sbx_http;
typedef struct sbx_http_call sbx_http_call;

/*
 * Streaming body callback for 200 answers: (ptr, len) chunks of any size.
 * Return 0 to go on, 1 to stop the transfer as complete (e.g. after a Connect
 * end-stream message), 2 to make sbx__http_call_wait() return SBX_HTTP_YIELD
 * once this chunk is taken (the transfer goes on at the next wait), or a
 * negative SBX_E* code (with `err` filled) to fail.
 */
typedef int (*sbx_http_data_fn)(const unsigned char *p, size_t n, void *payload, sbx_error *err);

/* One more part of a multipart upload, from memory (curl copies its bytes). */
typedef struct sbx_http_part {
	const char *filename;
	const void *data;
	size_t len;
} sbx_http_part;

typedef struct sbx_http_req {
	const char *what;           /* for messages, e.g. "E2B GET /v2/sandboxes" */
	const char *method;         /* "GET", "POST", "DELETE" */
	const char *url;            /* full URL; never carries a secret */
	const char *const *headers; /* "Name: value" lines; may carry secrets (never logged) */
	size_t nheaders;
	/* e2b_code of a failure to reach the server: SBX_E2B_ENVD_UNAVAILABLE (envd), NULL (API) */
	const char *unreachable;
	const void *body; /* request body (borrowed until the call is freed), or NULL */
	size_t body_len;
	/* multipart/form-data upload of one part (curl_mime), when upload_part is set */
	const char *upload_part; /* part name, e.g. "file" */
	const char *upload_filename;
	const void *upload_data;
	size_t upload_len;
	/* parts after the first, named upload_part too (envd's multi-file write), or NULL */
	const sbx_http_part *more_parts;
	size_t nmore_parts;
	/*
	 * Or, when set, the part's bytes are pulled from upload_fn instead (length
	 * unknown: sent chunked, never rewound): fill `buf` with up to `cap` bytes,
	 * return the count, 0 at the end, SIZE_MAX to fail the transfer.
	 */
	size_t (*upload_fn)(unsigned char *buf, size_t cap, void *payload);
	void *upload_payload;
	sbx_http_data_fn on_data; /* NULL: buffer the body (cap max_body) */
	void *payload;
	/*
	 * on_data's caller needs the bytes only by the end (an exec that streams nothing): the
	 * loop wakes it when the transfer ends or SBX_HTTP_LAZY_WAKE bytes wait, not for every
	 * chunk. Deadlines and aborts wake it as before.
	 */
	bool wake_at_end;
	size_t max_body; /* cap of a buffered 2xx body; 0 = SBX_HTTP_MAX_BODY */
	/*
	 * A file's bytes (GET /files): on HTTP/1.1, on a pair of its own in the caller's thread
	 * (where an upload goes too), not the loop: curl 7.88's HTTP/2 copies every byte once
	 * more and frames it, and the loop thread hands it over once more (64 MiB: 459 million
	 * instructions through the loop, 337 million on a pair).
	 */
	bool bulk;
	/*
	 * Optional output: set true when the call fails with SBX_ENETWORK after
	 * the connection was made but before any byte of an answer (reset, empty
	 * reply), the case where an idempotent request may simply be sent again.
	 */
	bool *reset_out;
	/*
	 * Optional output: set true when the call fails before any byte of the
	 * request left (the host did not resolve, nothing accepted the
	 * connection, the server's certificate was refused), false otherwise.
	 */
	bool *unsent_out;
} sbx_http_req;

/* A client (the pool). 0, SBX_ENOMEM, SBX_EINTERNAL. */
int sbx__http_new(sbx_http **out, sbx_error *err);
/*
 * Log one debug line per finished call through `logger` ("http" with method,
 * path without host and query, status (0: no answer), ms): no header, host or
 * query string, so no secret. Set before the first call; not thread-safe.
 */
void sbx__http_set_logger(sbx_http *h, const sbx_logger *logger);
/*
 * Test options (sbx_e2b_options v2): trust only the CAs in `ca_file` (PEM) instead of the
 * system's, and connect every call as curl's CURLOPT_CONNECT_TO `connect_to` says
 * ("HOST:PORT:CONNECT-HOST:CONNECT-PORT", empty parts match all). Either may be NULL. Before
 * the first call. 0 or SBX_ENOMEM.
 */
int sbx__http_set_test_tls(sbx_http *h, const char *ca_file, const char *connect_to);
/* Free the client; no call may be in progress. Accepts NULL. */
void sbx__http_free(sbx_http *h);

/*
 * Start a call: set the request up on a handle pair from the pool (plain http:
 * no byte is sent until sbx__http_call_wait()) or hand it to the loop (HTTPS:
 * the loop thread may send it at once). `req` and what it points to must stay
 * valid until the call is freed. Returns 0, SBX_ENOMEM, SBX_EINTERNAL.
 */
int sbx__http_call_start(sbx_http_call **out, sbx_http *h, const sbx_http_req *req, sbx_error *err);

/*
 * Drive the call until the transfer ends, the monotonic `deadline_ms` passes
 * (0 = none) or `sig` (may be NULL) is aborted. May be called again after
 * SBX_ETIMEOUT / SBX_EABORTED to keep going with a new deadline.
 * Returns 0 when the response is complete (any HTTP status: check
 * sbx__http_call_status), SBX_HTTP_YIELD (on_data returned 2; wait again to
 * go on), SBX_ETIMEOUT, SBX_EABORTED (err not filled for
 * these two: the caller words them), SBX_ENETWORK, SBX_ETOOLARGE, or the
 * on_data callback's error.
 */
int sbx__http_call_wait(sbx_http_call *c, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);

/*
 * Start a call driven by `host`'s multi handle: waiting on either call moves
 * both transfers, so a unary request (e.g. envd SendInput) can be made while
 * the host's stream keeps flowing on the same thread (a command blocked on a
 * full stdout pipe would otherwise never read the stdin we send). The joined
 * call has its own easy handle (not pooled) and must be freed before `host`.
 * A host of the loop (HTTPS) needs none of this: the loop moves every
 * transfer, so the joined call is simply a call of its own.
 * Returns 0, SBX_ENOMEM, SBX_EINTERNAL.
 */
int sbx__http_call_join(sbx_http_call **out, sbx_http_call *host, const sbx_http_req *req,
                        sbx_error *err);

/* HTTP status of the answer (0 before headers arrived). */
long sbx__http_call_status(const sbx_http_call *c);
/* The buffered body: every non-200 body (capped at SBX_HTTP_MAX_ERROR_BODY) and 2xx without
 * on_data. */
const sbx_buf *sbx__http_call_body(const sbx_http_call *c);
/* Move the buffered body into *out (whose own bytes are freed first); the call's is left empty. */
void sbx__http_call_take_body(sbx_http_call *c, sbx_buf *out);
/* A copy of a response header's value, or NULL when absent (or out of memory). Free with sbx__free.
 */
char *sbx__http_call_header(const sbx_http_call *c, const char *name);
/* End the call (an unfinished transfer is cut) and return its handles to the pool. Accepts NULL. */
void sbx__http_call_free(sbx_http_call *c);

/*
 * One whole call: start, wait until `deadline_ms` or `sig`, leave the call for
 * the caller to inspect and free. On error *out is NULL. Timeout and abort are
 * worded here as "<what> timed out" / "<what> aborted".
 */
int sbx__http_perform(sbx_http_call **out, sbx_http *h, const sbx_http_req *req,
                      uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);

/*
 * Wait `ms` milliseconds or until `sig` aborts (docs/contract.md "Methods": every wait ends
 * at the abort signal).
 * 0, SBX_EABORTED (err filled with "aborted").
 */
int sbx__http_sleep(uint64_t ms, sbx_signal *sig, sbx_error *err);

#endif
