/*
 * fake-e2b/server.h: the HTTP server (libmicrohttpd), request context, routing
 * and the reply helpers shared by the control plane, envd and admin handlers.
 *
 * One process serves both APIs on one port (design §4). Every connection has
 * its own thread (Connect streams block in content-reader callbacks). Handlers
 * see one fk_req per request; its body is complete when the handler runs
 * (except POST /files, which envd streams to disk as it arrives).
 */
#ifndef FK_SERVER_H
#define FK_SERVER_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct fk_server fk_server;
typedef struct fk_admin fk_admin;
typedef struct fk_control fk_control;
typedef struct fk_rt fk_rt;

/* Most bytes of a request body kept in memory (JSON and Connect requests). */
#define FK_MAX_BODY (8u * 1024u * 1024u)

enum fk_fault_kind {
	FK_FAULT_NONE = 0,
	FK_FAULT_RESPOND,
	FK_FAULT_DELAY,
	FK_FAULT_STREAM_NO_END,
	FK_FAULT_STREAM_KEEPALIVE_ONLY,
	FK_FAULT_STREAM_GARBAGE,
	FK_FAULT_STREAM_OVERSIZE,
	FK_FAULT_CONNECT_NO_TOKEN,
	FK_FAULT_KILL_IGNORED,
};

/* A matched fault rule, copied into the request (the rule may expire meanwhile). */
typedef struct fk_fault {
	enum fk_fault_kind kind;
	unsigned status;
	long delay_ms;
	char *body; /* owned; NULL = default E2B error body */
} fk_fault;

enum fk_route { FK_ROUTE_CONTROL, FK_ROUTE_ENVD, FK_ROUTE_ADMIN };

typedef struct fk_req {
	fk_server *srv;
	struct MHD_Connection *conn;
	char *uri;          /* raw request target incl. query; owned */
	const char *method; /* MHD's, valid during the request */
	const char *path;   /* MHD's decoded path, valid during the request */
	enum fk_route route;
	int started;
	unsigned char *body; /* NUL-terminated when non-NULL; owned */
	size_t body_len, body_cap;
	int body_too_large;
	unsigned status; /* status of the queued response, for the log */
	struct timespec t0;
	fk_fault fault; /* kind FK_FAULT_NONE when no rule matched */
	json_t *log_headers;
	json_t *log_entry; /* our reference to the log entry, reserved at arrival */
	int log_ready;     /* the entry shows in GET /_fake/requests (response queued) */
	/* envd per-request state (uploads), freed with the request */
	void *envd_state;
	void (*envd_state_free)(void *);
} fk_req;

struct fk_server {
	struct MHD_Daemon *daemon;
	char *host;
	unsigned port;
	char *api_key; /* NULL: any key starting with e2b_ */
	unsigned char seed[32];
	int quiet;
	char *state_dir;
	int state_dir_owned;
	fk_admin *admin;
	fk_control *control;
	fk_rt *rt;
	volatile int stopping;
};

/* Start listening; fills srv->port. 0 or -1 (message on stderr). */
int fk_server_start(fk_server *srv);
/* Stop the daemon (waits for every connection thread). */
void fk_server_stop(fk_server *srv);
/* Shutdown begins: sets `stopping` and wakes every fk_server_sleep. */
void fk_server_begin_stop(fk_server *srv);
/* Sleeps `ms` unless/until shutdown begins: 0 slept, -1 woken by shutdown. */
int fk_server_sleep(fk_server *srv, long ms);

/* Replies: each queues exactly one response; returns MHD_YES/MHD_NO for the access handler. */
enum MHD_Result fk_reply(fk_req *r, unsigned status, const char *ctype, const void *data,
                         size_t len);
enum MHD_Result fk_reply_json(fk_req *r, unsigned status, json_t *steal);
enum MHD_Result fk_reply_error(fk_req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Connect unary error: {"code":"<code>","message":...} with the mapped HTTP status. */
enum MHD_Result fk_reply_connect_error(fk_req *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum MHD_Result fk_reply_response(fk_req *r, unsigned status, struct MHD_Response *resp);
unsigned fk_connect_code_status(const char *code);

/* A request header (case-insensitive), borrowed; NULL when absent. */
const char *fk_header(fk_req *r, const char *name);
/* A query argument decoded once ('+' = space), from the raw URI; caller frees. NULL when absent. */
char *fk_query(fk_req *r, const char *name);
/* Every value of a repeated query argument, decoded and joined with ','; caller frees. */
char *fk_query_joined(fk_req *r, const char *name);
/* Percent-decode in place; plus != 0 also maps '+' to ' '. Returns the new length, -1 on bad
 * escape. */
long fk_url_decode(char *s, int plus);
/* Parse the body as JSON (NULL body → empty object when allow_empty). New reference or NULL. */
json_t *fk_body_json(fk_req *r, int allow_empty);

/* Time helpers. */
int64_t fk_now_ns(void);  /* CLOCK_REALTIME */
int64_t fk_mono_ms(void); /* CLOCK_MONOTONIC */
void fk_sleep_ms(long ms);
/* RFC 3339 with nanoseconds and Z; buf >= 40 bytes. */
void fk_format_time(char *buf, size_t cap, int64_t ns);

#endif
