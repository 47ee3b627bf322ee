/*
 * e2b/api.h: the E2B control-plane client (docs/protocol.md "Control plane").
 *
 * JSON over HTTP with the X-API-KEY header, 60 s per call (API_TIMEOUT_MS),
 * redirects refused. A non-2xx answer becomes SBX_EHTTP with the message
 * include/sandbox/error.h states, "E2B <METHOD> <path> failed: HTTP <status>: <message>" (message
 * from the JSON body's "message", else the body text; at most 300 bytes, cut at a UTF-8 boundary,
 * control characters blanked, the API key never included). Knows E2B's routes and error bodies, not
 * the sandbox@1 contract.
 */
#ifndef SBX_E2B_API_H
#define SBX_E2B_API_H

#include <jansson.h>
#include <sandbox/error.h>
#include <sandbox/log.h>
#include <sandbox/signal.h>
#include <stdbool.h>

#include "e2b/http.h"
#include "util/buf.h"

#define SBX_E2B_API_TIMEOUT_MS    60000 /* API_TIMEOUT_MS: each control-plane call */
#define SBX_E2B_ERROR_MESSAGE_MAX 300   /* a server message kept: include/sandbox/error.h */
#define SBX_E2B_METADATA_NAME     "capybara-sandbox-name"
#define SBX_E2B_LIST_LIMIT        100  /* LIST_LIMIT: sandboxes per page */
#define SBX_E2B_LIST_MAX_PAGES    1000 /* pages followed before giving up (100 000 sandboxes) */
#define SBX_E2B_HEX_SECRET_MIN    32  /* a run of this many hex digits in server text is redacted */
#define SBX_E2B_RETRY_ATTEMPTS    4   /* tries of an idempotent call on a gateway fault */
#define SBX_E2B_RETRY_BASE_MS     250 /* first backoff; doubled per retry, jittered */
#define SBX_E2B_RETRY_CAP_MS      2000 /* longest single backoff */

typedef struct sbx_e2b_api {
	sbx_http *http;    /* borrowed from the provider */
	char *base;        /* apiUrl without trailing slashes */
	char *key_header;  /* "X-API-KEY: <key>": secret */
	char *api_key;     /* secret, kept only to scrub it out of server messages */
	sbx_logger logger; /* retries are logged here (set by the provider; zero = silent) */
} sbx_e2b_api;

/* The answer of one call. Dispose with sbx__e2b_reply_dispose(). */
typedef struct sbx_e2b_reply {
	long status;      /* HTTP status (also on SBX_EHTTP) */
	json_t *json;     /* parsed 2xx body; NULL when the body was empty */
	char *next_token; /* X-Next-Token response header, or NULL */
	bool not_found;   /* on SBX_EHTTP: an E2B-format 404 (status 404 and body code 404) */
	bool unsent;      /* on SBX_ENETWORK: the request never left (no connection was made) */
} sbx_e2b_reply;

int sbx__e2b_api_init(sbx_e2b_api *api, sbx_http *http, const char *base_url, const char *api_key,
                      sbx_error *err);
void sbx__e2b_api_dispose(sbx_e2b_api *api);
void sbx__e2b_reply_dispose(sbx_e2b_reply *r);

/*
 * One JSON call. `path` is already encoded (ids are validated to need no
 * encoding); `query` is an encoded query string without "?", or NULL; `body`
 * (borrowed) is serialised compactly, or NULL for no body. `timeout_ms` 0 means
 * SBX_E2B_API_TIMEOUT_MS, the deadline of all attempts together. The reply
 * is filled on 0 and on SBX_EHTTP.
 *
 * Idempotent calls (GET, DELETE, POST .../pause and .../connect) are tried
 * up to SBX_E2B_RETRY_ATTEMPTS times when a gateway fails them: an HTTP
 * 502/503/504 whose body is not an E2B error body, or a connection reset
 * before any byte of an answer. Backoff: 250 ms doubling, capped at 2 s,
 * jittered to 50..100 %, never past the deadline, abortable; each retry is
 * logged (method, path, cause; never a secret or the query). Other calls,
 * create's POST above all, are sent once.
 * Returns 0, SBX_EHTTP, SBX_EPROTOCOL (invalid JSON), SBX_ETIMEOUT,
 * SBX_EABORTED, SBX_ENETWORK, SBX_ETOOLARGE, SBX_ENOMEM.
 */
int sbx__e2b_api_call(sbx_e2b_reply *reply, const sbx_e2b_api *api, const char *method,
                      const char *path, const char *query, json_t *body, uint64_t timeout_ms,
                      sbx_signal *sig, sbx_error *err);

/*
 * Build the error of a non-2xx answer (include/sandbox/error.h states its message): `what` is e.g.
 * "POST /v2/sandboxes" or "process start". Sets *not_found for an E2B-format
 * 404 (status 404 and a numeric body code 404) when not_found is non-NULL.
 * `secret1`/`secret2` (may be NULL) are scrubbed from the message. Returns SBX_EHTTP.
 */
int sbx__e2b_http_error(sbx_error *err, const char *what, long status, const unsigned char *body,
                        size_t len, const char *secret1, const char *secret2, bool *not_found);

/*
 * Server text made fit for an error message: at most 300 bytes cut at a UTF-8
 * boundary, control characters blanked, `secret1`/`secret2` (may be NULL)
 * and any run of >= 32 hex digits (a token we may not know, e.g. an
 * envdAccessToken) replaced by "[redacted]". `out` should hold >= 4 * 300 + 16 bytes.
 */
void sbx__e2b_clean_text(char *out, size_t outlen, const char *msg, size_t len, const char *secret1,
                         const char *secret2);

/* Serialise `j` compactly (JSON.stringify), appended to out. 0, SBX_ENOMEM, SBX_ETOOLARGE. */
int sbx__json_dump(sbx_buf *out, const json_t *j);
/* One JSON string of `len` bytes as sbx__json_dump writes it, quotes included, appended (on
 * failure part of it may be). 0, SBX_ENOMEM (not UTF-8, as jansson), SBX_ETOOLARGE. */
int sbx__json_dump_string(sbx_buf *out, const char *s, size_t len);

/* encodeURIComponent of `len` bytes, appended to out. 0, SBX_ENOMEM, SBX_ETOOLARGE. */
int sbx__uri_component_encode(sbx_buf *out, const char *s, size_t len);
/* URLSearchParams' application/x-www-form-urlencoded serialisation of one value. */
int sbx__form_urlencode(sbx_buf *out, const char *s, size_t len);
/*
 * The list query for sandboxes named `name` (docs/contract.md "Lifecycle": create replaces them):
 * metadata=<form(enc(METADATA_NAME)=enc(name))>&state=running%2Cpaused&limit=100[&nextToken=<form(token)>]
 * (docs/protocol.md "List": the metadata value ends up encoded twice on the wire).
 */
int sbx__e2b_list_query(sbx_buf *out, const char *name, const char *next_token);
/*
 * The same with `states` ("running", "paused" or "running,paused") and an
 * optional name: NULL gives state=<states>&limit=100[&nextToken=...].
 */
int sbx__e2b_list_query_state(sbx_buf *out, const char *name, const char *states,
                              const char *next_token);

#endif
