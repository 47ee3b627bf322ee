/*
 * fake-e2b/server.c: libmicrohttpd setup, per-request context, routing to the
 * control plane / envd / admin handlers, fault application, the request log,
 * and reply helpers. Knows no E2B semantics beyond which paths are envd's.
 */
#define _GNU_SOURCE
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "admin.h"
#include "control.h"
#include "envd.h"

int64_t fk_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t fk_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Shutdown wakes every fk_server_sleep (fault delays). One server per process. */
static pthread_mutex_t g_stop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_stop_cond = PTHREAD_COND_INITIALIZER;

void fk_server_begin_stop(fk_server *srv)
{
	pthread_mutex_lock(&g_stop_lock);
	srv->stopping = 1;
	pthread_cond_broadcast(&g_stop_cond);
	pthread_mutex_unlock(&g_stop_lock);
}

int fk_server_sleep(fk_server *srv, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&g_stop_lock);
	while (!srv->stopping && pthread_cond_clockwait(&g_stop_cond, &g_stop_lock, CLOCK_MONOTONIC,
	                                                &ts) != ETIMEDOUT)
		;
	int stopped = srv->stopping;
	pthread_mutex_unlock(&g_stop_lock);
	return stopped ? -1 : 0;
}

void fk_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void fk_format_time(char *buf, size_t cap, int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, cap, "%s.%09ldZ", base, frac);
}

static void log_request(fk_req *r);
static void log_begin(fk_req *r);

/* ---- replies ---------------------------------------------------------------------------- */

enum MHD_Result fk_reply_response(fk_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp)
		return MHD_NO;
	r->status = status;
	enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		log_request(r);
	return ret;
}

enum MHD_Result fk_reply(fk_req *r, unsigned status, const char *ctype, const void *data,
                         size_t len)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	return fk_reply_response(r, status, resp);
}

enum MHD_Result fk_reply_json(fk_req *r, unsigned status, json_t *steal)
{
	char *s = steal ? json_dumps(steal, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(steal);
	if (!s)
		return fk_reply(r, 500, "application/json",
		                "{\"code\":500,\"message\":\"out of memory\"}", 39);
	enum MHD_Result ret = fk_reply(r, status, "application/json", s, strlen(s));
	free(s);
	return ret;
}

enum MHD_Result fk_reply_error(fk_req *r, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fk_reply_json(r, status,
	                     json_pack("{s:i,s:s}", "code", (int)status, "message", msg));
}

static const struct {
	const char *code;
	unsigned status;
} connect_codes[] = {
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
};

unsigned fk_connect_code_status(const char *code)
{
	for (size_t i = 0; i < sizeof(connect_codes) / sizeof(connect_codes[0]); i++)
		if (strcmp(connect_codes[i].code, code) == 0)
			return connect_codes[i].status;
	return 500;
}

enum MHD_Result fk_reply_connect_error(fk_req *r, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fk_reply_json(r, fk_connect_code_status(code),
	                     json_pack("{s:s,s:s}", "code", code, "message", msg));
}

/* ---- request accessors ------------------------------------------------------------------ */

const char *fk_header(fk_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long fk_url_decode(char *s, int plus)
{
	char *w = s;
	for (const char *p = s; *p; p++) {
		if (*p == '%') {
			int hi = hexval((unsigned char)p[1]),
			    lo = hi < 0 ? -1 : hexval((unsigned char)p[2]);
			if (hi < 0 || lo < 0)
				return -1;
			*w++ = (char)(hi * 16 + lo);
			p += 2;
		} else if (*p == '+' && plus) {
			*w++ = ' ';
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	return (long)(w - s);
}

char *fk_query_joined(fk_req *r, const char *name)
{
	const char *q = r->uri ? strchr(r->uri, '?') : NULL;
	char *out = NULL;
	size_t len = 0;
	for (q = q ? q + 1 : NULL; q && *q;) {
		size_t n = strcspn(q, "&");
		char *pair = strndup(q, n);
		char *eq = pair ? strchr(pair, '=') : NULL;
		if (eq)
			*eq = '\0';
		if (pair && eq && fk_url_decode(pair, 1) >= 0 && !strcmp(pair, name) &&
		    fk_url_decode(eq + 1, 1) >= 0) {
			size_t vl = strlen(eq + 1);
			char *p = realloc(out, len + vl + 2);
			if (p) {
				out = p;
				if (len)
					out[len++] = ',';
				memcpy(out + len, eq + 1, vl + 1);
				len += vl;
			}
		}
		free(pair);
		q += n;
		if (*q == '&')
			q++;
	}
	return out;
}

char *fk_query(fk_req *r, const char *name)
{
	const char *q = r->uri ? strchr(r->uri, '?') : NULL;
	if (!q)
		return NULL;
	q++;
	while (*q) {
		size_t n = strcspn(q, "&");
		char *pair = strndup(q, n);
		if (!pair)
			return NULL;
		char *eq = strchr(pair, '=');
		char *val = NULL;
		if (eq)
			*eq = '\0';
		if (fk_url_decode(pair, 1) >= 0 && strcmp(pair, name) == 0) {
			val = strdup(eq ? eq + 1 : "");
			if (val && fk_url_decode(val, 1) < 0) {
				free(val);
				val = NULL;
			}
			free(pair);
			return val;
		}
		free(pair);
		q += n;
		if (*q == '&')
			q++;
	}
	return NULL;
}

json_t *fk_body_json(fk_req *r, int allow_empty)
{
	if (!r->body || r->body_len == 0)
		return allow_empty ? json_object() : NULL;
	return json_loadb((const char *)r->body, r->body_len, 0, NULL);
}

/* ---- request lifecycle ------------------------------------------------------------------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	fk_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->srv = cls;
	r->conn = c;
	r->uri = strdup(uri ? uri : "/");
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	return r;
}

static int path_has_prefix(const char *p, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(p, prefix, n) == 0 && (p[n] == '\0' || p[n] == '/' || p[n - 1] == '/');
}

static enum fk_route classify(fk_req *r)
{
	const char *p = r->path;
	if (strncmp(p, "/_fake/", 7) == 0)
		return FK_ROUTE_ADMIN;
	if (fk_header(r, "E2b-Sandbox-Id") || path_has_prefix(p, "/process.Process/") ||
	    path_has_prefix(p, "/filesystem.Filesystem/") || path_has_prefix(p, "/files") ||
	    path_has_prefix(p, "/health"))
		return FK_ROUTE_ENVD;
	return FK_ROUTE_CONTROL;
}

static const char *const logged_headers[] = {
    "content-type",
    "user-agent",
    "e2b-sandbox-id",
    "e2b-sandbox-port",
    "connect-protocol-version",
    "connect-timeout-ms",
    "keepalive-ping-interval",
    "x-api-key",
    "x-access-token",
    "authorization",
};

static json_t *capture_headers(fk_req *r)
{
	json_t *h = json_object();
	for (size_t i = 0; i < sizeof(logged_headers) / sizeof(logged_headers[0]); i++) {
		const char *v = fk_header(r, logged_headers[i]);
		if (!v)
			continue;
		int secret = i >= 7; /* x-api-key, x-access-token, authorization */
		json_object_set_new(h, logged_headers[i], json_string(secret ? "***" : v));
	}
	return h;
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

static enum MHD_Result apply_fault_response(fk_req *r)
{
	if (r->fault.body)
		return fk_reply(r, r->fault.status, "application/json", r->fault.body,
		                strlen(r->fault.body));
	return fk_reply_error(r, r->fault.status, "injected fault");
}

static enum MHD_Result dispatch(fk_req *r)
{
	if (r->fault.delay_ms > 0 && fk_server_sleep(r->srv, r->fault.delay_ms) < 0)
		return fk_reply_error(r, 503, "server shutting down");
	if (r->fault.kind == FK_FAULT_RESPOND)
		return apply_fault_response(r);
	if (r->body_too_large)
		return fk_reply_error(r, 413, "request body too large");
	switch (r->route) {
	case FK_ROUTE_ADMIN:
		return fk_admin_handle(r);
	case FK_ROUTE_ENVD:
		return fk_envd_handle(r);
	default:
		return fk_control_handle(r);
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	fk_req *r = *con_cls;
	if (!r) {
		if (!(r = on_uri(cls, url, c)))
			return MHD_NO;
		*con_cls = r;
	}
	if (!r->started) {
		r->started = 1;
		r->conn = c;
		r->method = method;
		r->path = url;
		r->route = classify(r);
		if (r->route != FK_ROUTE_ADMIN) {
			r->log_headers = capture_headers(r);
			log_begin(r);
			fk_admin_match_fault(r->srv->admin, method, url, &r->fault);
		}
		if (r->route == FK_ROUTE_ENVD)
			fk_envd_begin(r);
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (r->envd_state)
			fk_envd_feed(r, upload_data, *upload_data_size);
		else
			body_append(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	return dispatch(r);
}

static json_t *log_body(fk_req *r)
{
	if (!r->body || !r->body_len)
		return NULL;
	const char *ct = fk_header(r, "content-type");
	if (ct && strncasecmp(ct, "application/connect+json", 24) == 0) {
		if (r->body_len < 5)
			return NULL;
		size_t n = ((size_t)r->body[1] << 24) | ((size_t)r->body[2] << 16) |
		           ((size_t)r->body[3] << 8) | r->body[4];
		if (n > r->body_len - 5)
			return NULL;
		return json_loadb((const char *)r->body + 5, n, JSON_DECODE_ANY, NULL);
	}
	return json_loadb((const char *)r->body, r->body_len, JSON_DECODE_ANY, NULL);
}

static json_t *query_json(fk_req *r)
{
	json_t *q = json_object();
	const char *s = r->uri ? strchr(r->uri, '?') : NULL;
	if (!s)
		return q;
	for (s++; *s;) {
		size_t n = strcspn(s, "&");
		char *pair = strndup(s, n);
		if (pair && *pair) {
			char *eq = strchr(pair, '=');
			if (eq)
				*eq = '\0';
			if (fk_url_decode(pair, 1) >= 0 && (!eq || fk_url_decode(eq + 1, 1) >= 0))
				json_object_set_new(q, pair, json_string(eq ? eq + 1 : ""));
		}
		free(pair);
		s += n;
		if (*s == '&')
			s++;
	}
	return q;
}

static long elapsed_ms(fk_req *r)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (long)((t1.tv_sec - r->t0.tv_sec) * 1000 + (t1.tv_nsec - r->t0.tv_nsec) / 1000000);
}

/* The request's log entry, reserved at its arrival so the log is in arrival order (hidden from
 * GET /_fake/requests until log_request). */
static void log_begin(fk_req *r)
{
	char *path = strndup(r->uri, strcspn(r->uri, "?"));
	if (path)
		fk_url_decode(path, 0);
	json_t *e =
	    json_pack("{s:s,s:s,s:o,s:i,s:o,s:I}", "method", r->method ? r->method : "", "path",
	              path ? path : "", "query", query_json(r), "status", 0, "headers",
	              r->log_headers ? json_deep_copy(r->log_headers) : json_null(), "duration_ms",
	              (json_int_t)0);
	free(path);
	r->log_entry = fk_admin_log_begin(r->srv->admin, e);
}

/* Shows the request in the log once its response is queued (before the client can see it, so a
 * test that reads the log right after a response always finds it); streams update duration_ms
 * at the end. */
static void log_request(fk_req *r)
{
	fk_server *srv = r->srv;
	if (!r->started || r->route == FK_ROUTE_ADMIN || r->log_ready)
		return;
	r->log_ready = 1;
	if (!r->log_entry)
		log_begin(r);
	json_t *f = json_pack("{s:i,s:I}", "status", (int)r->status, "duration_ms",
	                      (json_int_t)elapsed_ms(r));
	json_t *b = log_body(r);
	if (f && b)
		json_object_set_new(f, "body", b);
	else
		json_decref(b);
	if (!srv->quiet) {
		char *path = strndup(r->uri, strcspn(r->uri, "?"));
		if (path)
			fk_url_decode(path, 0);
		fprintf(stderr, "fake-e2b: %s %s %u\n", r->method, path ? path : "", r->status);
		free(path);
	}
	if (r->log_entry && f)
		fk_admin_log_ready(srv->admin, r->log_entry, f);
	else
		json_decref(f);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	fk_server *srv = cls;
	fk_req *r = *con_cls;
	if (!r)
		return;
	*con_cls = NULL;
	if (!r->log_ready)
		log_request(r);
	if (r->log_entry)
		fk_admin_finish(srv->admin, r->log_entry, elapsed_ms(r));
	if (r->envd_state && r->envd_state_free)
		r->envd_state_free(r->envd_state);
	fk_fault_dispose(&r->fault);
	json_decref(r->log_headers);
	free(r->body);
	free(r->uri);
	free(r);
}

int fk_server_start(fk_server *srv)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)srv->port);
	if (strcmp(srv->host, "localhost") == 0)
		srv->host = "127.0.0.1";
	if (inet_pton(AF_INET, srv->host, &sa.sin_addr) != 1) {
		fprintf(stderr, "fake-e2b: --host must be an IPv4 address\n");
		return -1;
	}
	srv->daemon = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
	        MHD_USE_ITC,
	    0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
	    srv, MHD_OPTION_CONNECTION_LIMIT, (unsigned)4000, MHD_OPTION_LISTEN_BACKLOG_SIZE,
	    (unsigned)1024, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,
	    MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024), MHD_OPTION_END);
	if (!srv->daemon) {
		fprintf(stderr, "fake-e2b: cannot listen on %s:%u\n", srv->host, srv->port);
		return -1;
	}
	const union MHD_DaemonInfo *di =
	    MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (di)
		srv->port = di->port;
	return 0;
}

void fk_server_stop(fk_server *srv)
{
	if (srv->daemon) {
		MHD_stop_daemon(srv->daemon);
		srv->daemon = NULL;
	}
}
