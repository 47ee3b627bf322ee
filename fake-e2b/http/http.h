/*
 * fake-e2b/http/http.h: libmicrohttpd plumbing that knows no E2B: the request
 * context, capped bodies, headers, query arguments, replies and the daemon.
 *
 * Every connection has its own thread (Connect streams block in content-reader
 * callbacks). The daemon calls the hooks handed to fk_http_start: `begin` once
 * the headers are known (it may set a body sink, or queue the answer: then the
 * body is never read and the connection closes after it), `route` once the body
 * is complete, `replied` right after a response was queued, `done` when the
 * request ends. `r->call` is the hooks' per-request state.
 */
#ifndef FK_HTTP_H
#define FK_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Most bytes of a request body kept in memory (JSON and Connect requests). */
#define FK_MAX_BODY (8u * 1024u * 1024u)

typedef struct fk_req fk_req;
struct fk_http;

typedef struct fk_http_hooks {
	void *cls;
	void (*begin)(void *cls, fk_req *r);
	enum MHD_Result (*route)(void *cls, fk_req *r);
	void (*replied)(void *cls, fk_req *r);
	void (*done)(void *cls, fk_req *r);
} fk_http_hooks;

struct fk_req {
	struct MHD_Connection *conn;
	char *uri;          /* raw request target incl. query; owned */
	const char *method; /* MHD's, valid during the request */
	const char *path;   /* MHD's decoded path, valid during the request */
	int started;
	unsigned char *body; /* NUL-terminated when non-NULL; owned */
	size_t body_len, body_cap;
	int body_too_large;
	size_t held_body, held_parse; /* bytes of the server's body budget this request holds */
	size_t held_for;              /* the body length they were taken for */
	int budget_short;             /* a chunked body outgrew what the budget could give */
	int early; /* answered from its headers while a body was announced (lingering close) */
	unsigned status; /* status of the queued response */
	struct timespec t0;
	const fk_http_hooks *hooks;
	struct fk_http *http; /* the daemon */
	void *call;           /* the hooks' per-request state */
	/* body sink set by `begin`: chunks go there instead of `body`; state freed at the end */
	void (*sink)(fk_req *r, const char *data, size_t len);
	void *sink_state;
	void (*sink_free)(void *);
};

typedef struct fk_http_options {
	const char *host; /* IPv4 address */
	unsigned port;    /* 0 = any */
	/* A connection that is not in a request (headers not yet complete, or idle between two
	 * requests) is closed after idle_ms; while more than `crowd` connections are in that state
	 * (a flood of half-open connections), after crowd_idle_ms. 0: defaults 30 s, 1000 (a
	 * quarter of the 4000-connection cap), 500 ms. Never while request bytes wait unread.
	 */
	unsigned idle_ms, crowd, crowd_idle_ms;
	/* A request's body that gets no byte for body_idle_ms (0: 10 s) is cut (never while its
	 * bytes wait unread); see daemon.c for the per-range budget of connections in body. */
	unsigned body_idle_ms;
	/* Server-wide budget of bytes for request bodies read into memory and their JSON parse
	 * (0: 256 MiB). A body is admitted from its headers' Content-Length: it holds its buffer's
	 * size and FK_JSON_BUDGET of it until its handler has run, its buffer until the request
	 * ends; a body that does not fit is answered 503 with Retry-After before it is read. A
	 * chunked body starts as one of 64 KiB and takes more as it grows (past what is left:
	 * the rest is not kept, 503). Bodies that go to a sink are not counted. */
	size_t body_budget;
	/* HTTPS when both are set (PEM: the certificate chain and its key; see tls.h) */
	const char *tls_cert, *tls_key;
} fk_http_options;

typedef struct fk_http fk_http;

/* Start listening. 0 (bound port in *port_out) or -1 (message on stderr). */
int fk_http_start(fk_http **out, const fk_http_options *o, const fk_http_hooks *hooks,
                  unsigned *port_out);
/* Stop accepting new connections (the listen socket closes). */
void fk_http_quiesce(fk_http *h);
/* Stop the daemon (waits for every connection thread) and free. */
void fk_http_stop(fk_http *h);

/* ---- replies: each queues exactly one response; returns MHD_YES/MHD_NO ---- */
enum MHD_Result fk_reply(fk_req *r, unsigned status, const char *ctype, const void *data,
                         size_t len);
enum MHD_Result fk_reply_json(fk_req *r, unsigned status, json_t *steal);
/* {"code":status,"message":...} (E2B's API error body). */
enum MHD_Result fk_reply_error(fk_req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Takes over resp (destroyed here). */
enum MHD_Result fk_reply_response(fk_req *r, unsigned status, struct MHD_Response *resp);

/* A Content-Disposition value as Go's mime.FormatMediaType writes it (envd does): the
 * filename as a token, else quoted with \\ before '"' and '\\', else (bytes outside
 * printable ASCII) RFC 2231 `filename*=utf-8''%XX`. 0, or -1 when it does not fit `cap`. */
int fk_content_disposition(char *buf, size_t cap, const char *type, const char *filename);

/* ---- request accessors ---- */
/* A request header (case-insensitive), borrowed; NULL when absent. */
const char *fk_header(fk_req *r, const char *name);
/* A query argument decoded once ('+' = space), from the raw URI; caller frees. NULL when
 * absent or badly escaped. */
char *fk_query(fk_req *r, const char *name);
/* fk_query for values that become file system paths or names: NULL with *bad = 1 when the
 * argument is badly escaped or decodes to a NUL byte (%00), NULL with *bad = 0 when absent. */
char *fk_query_strict(fk_req *r, const char *name, int *bad);
/* Every value of a repeated query argument, decoded and joined with ','; caller frees. */
char *fk_query_joined(fk_req *r, const char *name);
/* Every query argument as a JSON object of strings (last wins). New reference. */
json_t *fk_query_json(fk_req *r);
/* Percent-decode in place; plus != 0 also maps '+' to ' '. Returns the new length, -1 on a
 * bad escape. The result may hold NUL bytes (see the returned length). */
long fk_url_decode(char *s, int plus);
/* Most bytes jansson may hold while it parses `len` bytes of JSON (fk_json_parse): a text of
 * strings needs about three times its size (the lexer's buffer and the value); a small text
 * up to 256 bytes a byte (2,048 nested arrays, jansson's depth limit, take ~150 a byte) and
 * 64 KiB, at most 1 MiB more. */
#define FK_JSON_BUDGET(len)                                                                        \
	(4 * (size_t)(len) + ((size_t)(len) < ((size_t)960 << 10) / 256                            \
	                          ? 256 * (size_t)(len) + ((size_t)64 << 10)                       \
	                          : ((size_t)1 << 20)))
/* json_loadb(buf, len, flags) within FK_JSON_BUDGET(len): NULL past it (as for bad JSON). */
json_t *fk_json_parse(const void *buf, size_t len, size_t flags);
/* Parse the body as JSON (NULL body → empty object when allow_empty). New reference or NULL. */
json_t *fk_body_json(fk_req *r, int allow_empty);
/* ms since the request arrived. */
long fk_req_elapsed_ms(fk_req *r);
/* The connection's socket, -1 when unknown. */
int fk_req_socket(fk_req *r);
/* The request waits (on 1, off 0) on something outside the server (a sandbox's answer): at
 * the connection cap, when no connection is idle and no body stalled, the one waiting
 * longest is cut (its socket shut: the waiter watches it, see proxy.c). */
void fk_req_waiting(fk_req *r, int on);
/* The request's connection, by an id never reused (0: unknown): fk_http_cut_conn(h, id) cuts
 * it from any thread (its socket shut, as at the connection cap; nothing if it has closed). */
uint64_t fk_req_conn_id(fk_req *r);
void fk_http_cut_conn(struct fk_http *h, uint64_t id);

#endif
