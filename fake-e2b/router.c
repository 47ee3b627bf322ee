/*
 * fake-e2b/router.c: THE route table. A request whose Host is
 * <port>-<id>.<domain> goes to that sandbox as E2B's proxy sends it (port
 * 49983: envd; any other: the port proxy). Otherwise it goes to envd when it
 * names a sandbox (E2b-Sandbox-Id) or an envd path, to the admin API under
 * /_fake/, else to the control plane; then by (method, path pattern). The router
 * applies the matched fault rule at one point, runs envd's middleware (proxy
 * 502, access token, Basic user) and the control plane's (API key, sandbox
 * id), and opens and closes the request's log entry.
 */
#define _GNU_SOURCE
#include "router.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin.h"
#include "clock.h"
#include "control.h"
#include "envd.h"
#include "proxy.h"

enum surface { S_CONTROL, S_ENVD, S_ADMIN, S_PROXY };

#define ENVD_PORT 49983

/* route flags: R_RAW: {id} is not a sandbox id (no ShortID check); R_SIGNED: no API key, the
 * handler checks the request's own signature (upload links); R_TOKEN: an access token instead
 * of the API key (E2B's AccessTokenAuth: GET /teams) */
enum { R_RAW = 1, R_SIGNED = 2, R_TOKEN = 4 };

typedef struct route {
	const char *method;
	const char *pattern; /* segments; "{id}" and "{id2}" capture one into c->id, c->id2 */
	fk_handler fn;
	int flags;
} route;

static const route control_routes[] = {
    {"POST", "/v2/sandboxes", fk_control_create_v2, 0},
    {"GET", "/v2/sandboxes", fk_control_list_v2, 0},
    {"POST", "/v2/sandboxes/{id}/connect", fk_control_connect_v2, 0},
    {"POST", "/sandboxes", fk_control_create_legacy, 0},
    {"GET", "/sandboxes", fk_control_list_legacy, 0},
    {"GET", "/sandboxes/metrics", fk_control_metrics_many, 0},
    {"GET", "/sandboxes/{id}", fk_control_get, 0},
    {"DELETE", "/sandboxes/{id}", fk_control_delete, 0},
    {"POST", "/sandboxes/{id}/connect", fk_control_connect_legacy, 0},
    {"POST", "/sandboxes/{id}/resume", fk_control_resume, 0},
    {"POST", "/sandboxes/{id}/pause", fk_control_pause, 0},
    {"POST", "/sandboxes/{id}/timeout", fk_control_timeout, 0},
    {"POST", "/sandboxes/{id}/refreshes", fk_control_refresh, 0},
    {"GET", "/sandboxes/{id}/metrics", fk_control_metrics, 0},
    {"GET", "/sandboxes/{id}/logs", fk_control_sandbox_logs, 0},
    {"GET", "/v2/sandboxes/{id}/logs", fk_control_sandbox_logs_v2, 0},
    {"PUT", "/sandboxes/{id}/network", fk_control_network_update, 0},
    {"POST", "/sandboxes/{id}/snapshots", fk_control_snapshot_create, 0},
    {"POST", "/sandboxes/{id}/fork", fk_control_fork, 0},
    {"GET", "/snapshots", fk_control_snapshot_list, 0},
    {"POST", "/v3/templates", fk_control_template_request, R_RAW},
    {"POST", "/v2/templates/{id}/builds/{id2}", fk_control_template_build_start, R_RAW},
    {"GET", "/templates/{id}/builds/{id2}/status", fk_control_template_build_status, R_RAW},
    {"GET", "/templates/{id}/builds/{id2}/logs", fk_control_template_build_logs, R_RAW},
    {"GET", "/templates/{id}/files/{id2}", fk_control_template_file_link, R_RAW},
    {"PUT", "/templates/{id}/files/{id2}", fk_control_template_file_upload, R_RAW | R_SIGNED},
    {"GET", "/templates/aliases/{id}", fk_control_template_alias, R_RAW},
    {"POST", "/templates/tags", fk_control_template_tags_assign, R_RAW},
    {"DELETE", "/templates/tags", fk_control_template_tags_remove, R_RAW},
    {"GET", "/templates/{id}/tags", fk_control_template_tags_list, R_RAW},
    /* after /templates/tags: the first match wins */
    {"DELETE", "/templates/{id}", fk_control_template_delete, R_RAW},
    {"GET", "/templates", fk_control_template_list, R_RAW},
    {"GET", "/templates/{id}", fk_control_template_get, R_RAW},
    {"PATCH", "/templates/{id}", fk_control_template_update, R_RAW},
    {"PATCH", "/v2/templates/{id}", fk_control_template_update_v2, R_RAW},
    {"GET", "/teams", fk_control_teams, R_TOKEN},
};

static const route admin_routes[] = {
    {"POST", "/_fake/faults", fk_admin_faults_add, 0},
    {"GET", "/_fake/faults", fk_admin_faults_list, 0},
    {"DELETE", "/_fake/faults", fk_admin_faults_clear, 0},
    {"GET", "/_fake/requests", fk_admin_requests_list, 0},
    {"DELETE", "/_fake/requests", fk_admin_requests_clear, 0},
    {"GET", "/_fake/sandboxes", fk_admin_sandboxes, 0},
};

/* envd's Connect procedures: streams get the raw envelope, unary ones a JSON object. */
typedef struct procedure {
	const char *path;
	fk_handler stream;
	enum MHD_Result (*unary)(fk_call *c, json_t *req);
} procedure;

static const procedure procedures[] = {
    {"/process.Process/Start", fk_envd_process_start, NULL},
    {"/process.Process/Connect", fk_envd_process_connect, NULL},
    {"/process.Process/SendSignal", NULL, fk_envd_process_signal},
    {"/process.Process/List", NULL, fk_envd_process_list},
    {"/process.Process/SendInput", NULL, fk_envd_process_send_input},
    {"/process.Process/CloseStdin", NULL, fk_envd_process_close_stdin},
    {"/process.Process/Update", NULL, fk_envd_process_update},
    {"/filesystem.Filesystem/Stat", NULL, fk_envd_fs_stat},
    {"/filesystem.Filesystem/MakeDir", NULL, fk_envd_fs_make_dir},
    {"/filesystem.Filesystem/ListDir", NULL, fk_envd_fs_list_dir},
    {"/filesystem.Filesystem/Move", NULL, fk_envd_fs_move},
    {"/filesystem.Filesystem/Remove", NULL, fk_envd_fs_remove},
    {"/filesystem.Filesystem/WatchDir", fk_envd_fs_watch_dir, NULL},
    {"/filesystem.Filesystem/CreateWatcher", NULL, fk_envd_fs_create_watcher},
    {"/filesystem.Filesystem/GetWatcherEvents", NULL, fk_envd_fs_get_watcher_events},
    {"/filesystem.Filesystem/RemoveWatcher", NULL, fk_envd_fs_remove_watcher},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- matching ------------------------------------------------------------------------------ */

/* Does `path` match `pattern` segment by segment (empty segments skipped)? {id} → id,
 * {id2} → id2 (both `cap` bytes). */
static int path_match(const char *pattern, const char *path, char *id, char *id2, size_t cap)
{
	const char *p = pattern, *q = path;
	for (;;) {
		while (*p == '/')
			p++;
		while (*q == '/')
			q++;
		if (!*p || !*q)
			return !*p && !*q;
		size_t pn = strcspn(p, "/"), qn = strcspn(q, "/");
		if ((pn == 4 && !strncmp(p, "{id}", 4)) || (pn == 5 && !strncmp(p, "{id2}", 5))) {
			char *dst = pn == 4 ? id : id2;
			if (qn >= cap)
				return 0;
			memcpy(dst, q, qn);
			dst[qn] = '\0';
		} else if (pn != qn || strncmp(p, q, pn) != 0) {
			return 0;
		}
		p += pn;
		q += qn;
	}
}

/* The handler of (method, path) in a table; *wrong_method when only the method differs.
 * --legacy-routes: the /v2 routes do not exist (an older self-hosted API's 404). */
static const route *table_find(const route *t, size_t n, fk_call *c, int *wrong_method)
{
	char id[sizeof(c->id)], id2[sizeof(c->id2)];
	*wrong_method = 0;
	for (size_t i = 0; i < n; i++) {
		id[0] = id2[0] = '\0';
		if (c->app->legacy_routes && !strncmp(t[i].pattern, "/v2/", 4))
			continue;
		if (!path_match(t[i].pattern, c->req->path, id, id2, sizeof(id)))
			continue;
		if (strcmp(t[i].method, c->req->method) != 0) {
			*wrong_method = 1;
			continue;
		}
		memcpy(c->id, id, sizeof(id));
		memcpy(c->id2, id2, sizeof(id2));
		return &t[i];
	}
	return NULL;
}

static int path_has_prefix(const char *p, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(p, prefix, n) == 0 && (p[n] == '\0' || p[n] == '/' || p[n - 1] == '/');
}

/* Host "<port>-<id>.<domain>[:N]" as E2B's proxy reads it: 1 with c->host_id and c->port set;
 * "api.<domain>" and any other host: 0. */
static int host_route(fk_call *c)
{
	const char *host = fk_header(c->req, "Host"), *d = c->app->domain;
	if (!host || !d || !*d)
		return 0;
	size_t hl = strcspn(host, ":"), dl = strlen(d);
	if (hl <= dl + 1 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, d, dl) != 0)
		return 0;
	size_t ll = hl - dl - 1, digits = strspn(host, "0123456789");
	if (digits == 0 || digits > 5 || digits >= ll || host[digits] != '-' ||
	    ll - digits - 1 >= sizeof(c->host_id))
		return 0;
	unsigned long port = strtoul(host, NULL, 10);
	if (port == 0 || port > 65535)
		return 0;
	for (size_t i = digits + 1; i < ll; i++) {
		char ch = host[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			return 0;
	}
	memcpy(c->host_id, host + digits + 1, ll - digits - 1);
	c->host_id[ll - digits - 1] = '\0';
	c->port = (unsigned)port;
	return 1;
}

static enum surface classify(fk_call *c)
{
	const char *p = c->req->path;
	if (host_route(c)) { /* E2B's proxy: the Host names the sandbox and the port */
		if (!c->sandbox_id)
			c->sandbox_id = c->host_id;
		return c->port == ENVD_PORT ? S_ENVD : S_PROXY;
	}
	if (strncmp(p, "/_fake/", 7) == 0)
		return S_ADMIN;
	if (c->sandbox_id || path_has_prefix(p, "/process.Process/") ||
	    path_has_prefix(p, "/filesystem.Filesystem/") || path_has_prefix(p, "/files") ||
	    path_has_prefix(p, "/health"))
		return S_ENVD;
	return S_CONTROL;
}

/* ---- the surfaces -------------------------------------------------------------------------- */

/* X-API-Key against the server's key (constant time); --any-api-key: any e2b_ key. */
static int key_ok(fk_call *c)
{
	const char *key = fk_header(c->req, "X-API-Key"), *want = c->app->api_key;
	if (!key)
		return 0;
	if (!want)
		return strncmp(key, "e2b_", 4) == 0 && key[4] != '\0';
	size_t n = strlen(want);
	return strlen(key) == n && CRYPTO_memcmp(key, want, n) == 0;
}

/* E2B's words for a refused X-API-Key (infra packages/auth/pkg/auth/internal/middleware/
 * middleware.go ApiKeyAuth, internal/service/service.go ValidateAPIKey, shared/pkg/keys
 * VerifyKey, security.go ProcessSecurityErrors): no header (or an empty one) is "missing"; one
 * without the e2b_ prefix is "malformed"; after the prefix E2B hex-decodes the key ("format")
 * and then looks its team up ("Cannot get the team"). The key is never part of the message. */
static enum MHD_Result key_refused(fk_call *c)
{
#define INVALID_KEY                                                                                \
	"Invalid API key, please visit https://e2b.dev/docs/api-key for more information.\n"
	const char *key = fk_header(c->req, "X-API-Key");
	if (!key || !*key)
		return fk_reply_error(c->req, 401, "authorization header is missing");
	if (strncmp(key, "e2b_", 4) != 0)
		return fk_reply_error(c->req, 401, "authorization header is malformed");
	size_t n = strlen(key + 4);
	int hex = n % 2 == 0;
	for (size_t i = 4; hex && key[i]; i++)
		hex = isxdigit((unsigned char)key[i]) != 0;
	return fk_reply_error(c->req, 401, "%s",
	                      hex ? INVALID_KEY "Cannot get the team for the given API key"
	                          : INVALID_KEY "Invalid API key format");
#undef INVALID_KEY
}

/* E2B's AccessTokenAuth (infra packages/auth/pkg/auth/internal/middleware/middleware.go): the
 * Authorization header less a "Bearer " prefix, trimmed, must start with sk_e2b_ and be hex
 * after it (shared/pkg/keys VerifyKey), then name a user's token. NULL when this server's
 * token (constant time; --any-api-key without --access-token: any well-formed one), else
 * E2B's message (none given at start: every token is one of no user): the one of the first
 * scheme tried (auth/security.go ProcessSecurityErrors:
 * without the header both schemes lack it; with it, AccessTokenAuth's failure). The token is
 * never part of the message. */
static const char *access_refusal(fk_call *c)
{
#define INVALID_TOKEN "Invalid Access token, try to login again by running `e2b auth login`.\n"
	const char *h = fk_header(c->req, "Authorization");
	if (!h || !*h)
		return "authorization header is missing";
	if (!strncmp(h, "Bearer ", 7))
		h += 7;
	while (*h == ' ' || *h == '\t')
		h++;
	size_t n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	if (n < 7 || strncmp(h, "sk_e2b_", 7))
		return "authorization header is malformed";
	int hex = (n - 7) % 2 == 0;
	for (size_t i = 7; i < n; i++)
		hex = hex && strchr("0123456789abcdefABCDEF", h[i]) != NULL;
	if (!hex)
		return INVALID_TOKEN "Invalid access token format";
	const char *want = c->app->access_token; /* "": no token is a user's */
	if (want ? (*want && strlen(want) == n && CRYPTO_memcmp(h, want, n) == 0) : n > 7)
		return NULL;
	return INVALID_TOKEN "Cannot get the user for the given access token";
#undef INVALID_TOKEN
}

static enum MHD_Result control_dispatch(fk_call *c)
{
	int wrong = 0;
	char raw[sizeof(c->id)];
	const route *rt = table_find(control_routes, N(control_routes), c, &wrong);
	if (!rt)
		return wrong ? fk_reply_error(c->req, 405, "validation error: method not allowed")
		             : fk_reply_error(c->req, 404,
		                              "validation error: no matching operation was found");
	if (rt->flags & R_TOKEN) {
		const char *why = access_refusal(c);
		if (why)
			return fk_reply_error(c->req, 401, "%s", why);
		c->admitted = 1;
	} else if (!(rt->flags & R_SIGNED)) {
		if (!key_ok(c))
			return key_refused(c);
		c->admitted = 1;
	}
	memcpy(raw, c->id, sizeof(raw));
	if (!(rt->flags & R_RAW) && *raw && fk_control_short_id(raw, c->id, sizeof(c->id)) < 0)
		return fk_reply_error(c->req, 400, "Invalid sandbox ID");
	if (c->admitting)
		return MHD_YES;
	return rt->fn(c);
}

static enum MHD_Result admin_dispatch(fk_call *c)
{
	int wrong = 0;
	if (!key_ok(c)) /* the admin API changes faults and shows state: the key too */
		return key_refused(c);
	const route *rt = table_find(admin_routes, N(admin_routes), c, &wrong);
	if (!rt)
		return wrong ? fk_reply_error(c->req, 405, "method not allowed")
		             : fk_reply_error(c->req, 404, "no such admin route");
	if (c->admitting)
		return MHD_YES;
	return rt->fn(c);
}

static enum MHD_Result procedure_call(fk_call *c)
{
	fk_req *r = c->req;
	const procedure *pr = NULL;
	for (size_t i = 0; i < N(procedures) && !pr; i++)
		if (!strcmp(procedures[i].path, r->path))
			pr = &procedures[i];
	if (pr && pr->stream) {
		if (!fk_envd_user_exists(c, c->user)) {
			char msg[300];
			snprintf(msg, sizeof(msg), "invalid username: '%s'", c->user);
			return fk_connect_stream_error(r, "unauthenticated", msg);
		}
		return pr->stream(c);
	}
	enum MHD_Result ret;
	json_t *req = fk_connect_request(r, 0);
	if (!json_is_object(req))
		ret = fk_connect_error(r, "invalid_argument", "request body is not a JSON object");
	else if (!fk_envd_user_exists(c, c->user))
		ret = fk_connect_error(r, "unauthenticated", "invalid username: '%s'", c->user);
	else if (pr)
		ret = pr->unary(c, req);
	else if (!strncmp(r->path, "/process.Process/", 17) ||
	         !strncmp(r->path, "/filesystem.Filesystem/", 23))
		ret = fk_connect_error(r, "unimplemented", "%s is not implemented", r->path + 1);
	else
		ret = fk_reply_json(r, 404,
		                    json_pack("{s:s,s:s}", "code", "unimplemented", "message",
		                              "no such procedure"));
	json_decref(req);
	return ret;
}

/* envd's middleware in envd's order, then the route. */
static enum MHD_Result envd_dispatch(fk_call *c)
{
	fk_req *r = c->req;
	int is_post = !strcmp(r->method, "POST"), is_get = !strcmp(r->method, "GET");
	if (!strcmp(r->path, "/health")) {
		if (!is_get)
			return fk_reply_error(r, 405, "method not allowed");
		return c->admitting ? MHD_YES : fk_envd_health(c);
	}
	if (!strcmp(r->path, "/files") && is_post) /* checked by fk_envd_files_post_begin */
		return c->admitting ? MHD_YES : fk_envd_files_post_finish(c);
	const char *id = c->sandbox_id;
	if (!c->sb) /* acquired once: when admitted from the headers, kept for the route */
		c->sb = id ? fk_registry_acquire(c->app->reg, id) : NULL;
	if (!c->sb || !fk_sandbox_ensure_running(c->app->reg, c->sb))
		return fk_envd_not_found_502(r, id);
	if (!strcmp(r->path, "/files")) {
		if (!is_get)
			return fk_reply_error(r, 405, "method not allowed");
		return c->admitting ? MHD_YES : fk_envd_files_get(c);
	}
	if (!fk_envd_token_ok(c->sb, fk_header(r, "X-Access-Token")))
		return fk_envd_unauthorized(r);
	c->admitted = 1;
	if (!is_post)
		return fk_reply_error(r, 405, "method not allowed");
	int bad = 0;
	free(c->user);
	c->user = fk_envd_basic_user(fk_header(r, "Authorization"), &bad);
	if (bad)
		return fk_connect_error(r, "unauthenticated", "invalid Authorization header");
	if (c->admitting)
		return MHD_YES;
	return procedure_call(c);
}

/* ---- the request log ----------------------------------------------------------------------- */

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
	for (size_t i = 0; i < N(logged_headers); i++) {
		const char *v = fk_header(r, logged_headers[i]);
		if (!v)
			continue;
		int secret = i >= 7; /* x-api-key, x-access-token, authorization */
		json_object_set_new(h, logged_headers[i], json_string(secret ? "***" : v));
	}
	return h;
}

/* The body as JSON, parsed within its budget (http.h), only for a request that passed its
 * surface's authentication (c->admitted) and only if small enough to be kept: a refused
 * request's body is never kept (nor, since it is refused from its headers, read). */
static json_t *log_body(fk_call *c)
{
	fk_req *r = c->req;
	if (!c->admitted || !r->body || !r->body_len || r->body_len > FK_LOG_ENTRY_MAX)
		return NULL;
	const char *ct = fk_header(r, "content-type");
	if (ct && strncasecmp(ct, "application/connect+json", 24) == 0) {
		unsigned flags;
		size_t n;
		if (fk_connect_envelope(r->body, r->body_len, &flags, &n) < 0 ||
		    n > r->body_len - 5)
			return NULL;
		return fk_json_parse(r->body + 5, n, JSON_DECODE_ANY);
	}
	return fk_json_parse(r->body, r->body_len, JSON_DECODE_ANY);
}

/* Most bytes of the path a log entry or line shows; a longer one ends in "...(N bytes)". */
#define LOG_PATH_MAX  1024u
#define LINE_PATH_MAX 200u

/* The decoded path, cut to `max` bytes with a marker; caller frees. */
static char *shown_path(fk_req *r, size_t max)
{
	char *path = strndup(r->uri, strcspn(r->uri, "?"));
	if (!path)
		return NULL;
	fk_url_decode(path, 0); /* a bad escape stays as it came */
	size_t n = strlen(path);
	if (n > max) {
		char *cut = NULL;
		if (asprintf(&cut, "%.*s...(%zu bytes)", (int)max, path, n) < 0)
			cut = NULL;
		free(path);
		path = cut;
	}
	return path;
}

/* The request's place in the log, reserved at its arrival so the log is in arrival order. */
static void log_begin(fk_call *c)
{
	c->log_entry = fk_reqlog_begin(c->app->log);
}

/* Unauthenticated refusals (401, 403) write at most this many lines a second to stderr; the
 * rest are counted and summed up in one line. */
#define REFUSED_LINES_PER_S 20

static pthread_mutex_t line_lock = PTHREAD_MUTEX_INITIALIZER;
static long line_second;
static unsigned line_refused, line_skipped;

/* At most `max` bytes of `s` for a line on stderr, which may be the operator's terminal: a control
 * byte (C0, DEL), a byte past ASCII (C1 controls come as UTF-8 or raw) and `\` are written as
 * \xHH, so a request's method or path can neither send the terminal an escape sequence (move
 * the cursor, retitle, clear, answer back) nor start a line of its own. Caller frees. */
static char *line_text(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	static const char hex[] = "0123456789abcdef";
	char *out = malloc(4 * n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch >= 0x7f || ch == '\\') {
			*o++ = '\\';
			*o++ = 'x';
			*o++ = hex[ch >> 4];
			*o++ = hex[ch & 15];
		} else {
			*o++ = (char)ch;
		}
	}
	*o = '\0';
	return out;
}

static void log_line(fk_req *r)
{
	int refused = r->status == 401 || r->status == 403;
	unsigned skipped = 0;
	int show = 1;
	pthread_mutex_lock(&line_lock);
	long now = (long)(fk_mono_ms() / 1000);
	if (now != line_second) {
		skipped = line_skipped;
		line_second = now;
		line_refused = line_skipped = 0;
	}
	if (refused && ++line_refused > REFUSED_LINES_PER_S) {
		line_skipped++;
		show = 0;
	}
	pthread_mutex_unlock(&line_lock);
	if (skipped)
		fprintf(stderr, "fake-e2b: %u more refused requests not shown\n", skipped);
	if (!show)
		return;
	char *path = shown_path(r, LINE_PATH_MAX);
	char *method = line_text(r->method, 32), *shown = path ? line_text(path, SIZE_MAX) : NULL;
	fprintf(stderr, "fake-e2b: %s %s %u\n", method ? method : "", shown ? shown : "",
	        r->status);
	free(shown);
	free(method);
	free(path);
}

/* Shows the request in the log once its response is queued (before the client can see it, so
 * a test that reads the log right after a response always finds it); streams update
 * duration_ms at the end. */
static void log_ready(fk_call *c)
{
	fk_req *r = c->req;
	if (c->route == S_ADMIN || c->log_ready)
		return;
	c->log_ready = 1;
	if (!c->log_entry)
		log_begin(c);
	char *path = shown_path(r, LOG_PATH_MAX);
	char method[64];
	snprintf(method, sizeof(method), "%.32s%s", r->method ? r->method : "",
	         r->method && strlen(r->method) > 32 ? "..." : "");
	json_t *f = json_pack("{s:s,s:s,s:o,s:i,s:o,s:I,s:I}", "method", method, "path",
	                      path ? path : "", "query", fk_query_json(r), "status", (int)r->status,
	                      "headers", capture_headers(r), "arrived_ms",
	                      (json_int_t)r->t0.tv_sec * 1000 + r->t0.tv_nsec / 1000000,
	                      "duration_ms", (json_int_t)fk_req_elapsed_ms(r));
	free(path);
	json_t *b = f ? log_body(c) : NULL;
	if (b)
		json_object_set_new(f, "body", b);
	if (!c->app->quiet)
		log_line(r);
	fk_reqlog_ready(c->app->log, c->log_entry, f);
}

/* ---- hooks --------------------------------------------------------------------------------- */

/* Authentication is decided from the headers, before any body byte is read: each surface's
 * dispatcher runs with c->admitting set, answers a refusal (or a 404, a 405, a 502) as it
 * would after the body, and stops before its handler. 0 when answered (MHD then closes the
 * connection without reading the body), 1 when the body is to be read. A request a fault rule
 * answers or delays keeps the old order (the fault first, after the body). */
static int admit(fk_call *c)
{
	if (c->fault.kind == FK_FAULT_RESPOND || c->fault.delay_ms > 0)
		return 1;
	c->admitting = 1;
	switch (c->route) {
	case S_ADMIN:
		admin_dispatch(c);
		break;
	case S_ENVD:
		envd_dispatch(c);
		break;
	case S_PROXY:
		fk_proxy_forward(c);
		break;
	default:
		control_dispatch(c);
	}
	c->admitting = 0;
	return c->req->status == 0;
}

static void on_begin(void *cls, fk_req *r)
{
	fk_app *app = cls;
	fk_call *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	r->call = c;
	c->req = r;
	c->app = app;
	c->sandbox_id = fk_header(r, "E2b-Sandbox-Id");
	c->route = classify(c);
	/* a signed /files URL fetched from E2B_SANDBOX_URL names no sandbox: its signature does */
	if (c->route == S_ENVD && !c->sandbox_id && !strcmp(r->path, "/files") &&
	    fk_envd_signed_sandbox(c, c->host_id, sizeof(c->host_id)) == 0)
		c->sandbox_id = c->host_id;
	if (c->route != S_ADMIN) {
		log_begin(c);
		fk_faults_match(app->faults, r->method, r->path, &c->fault);
	}
	if (!admit(c))
		return; /* answered from the headers: the body is not read */
	if (c->route == S_ENVD && !strcmp(r->method, "POST") && !strcmp(r->path, "/files")) {
		fk_envd_files_post_begin(c);
		if (fk_envd_files_post_refused(c))
			fk_envd_files_post_finish(c);
	}
	if (c->route == S_CONTROL && !strcmp(r->method, "PUT")) {
		fk_control_template_upload_begin(c); /* upload links: streamed to disk */
		if (fk_control_template_upload_refused(c))
			fk_control_template_file_upload(c);
	}
}

static enum MHD_Result on_route(void *cls, fk_req *r)
{
	fk_call *c = r->call;
	(void)cls;
	if (!c)
		return fk_reply_error(r, 500, "out of memory");
	if (c->fault.delay_ms > 0 && fk_stop_sleep(c->fault.delay_ms) < 0)
		return fk_reply_error(r, 503, "server shutting down");
	if (c->fault.kind == FK_FAULT_RESPOND) {
		if (c->fault.body)
			return fk_reply(r, c->fault.status, "application/json", c->fault.body,
			                strlen(c->fault.body));
		return fk_reply_error(r, c->fault.status, "injected fault");
	}
	if (r->body_too_large)
		return fk_reply_error(r, 413, "request body too large");
	switch (c->route) {
	case S_ADMIN:
		return admin_dispatch(c);
	case S_ENVD:
		return envd_dispatch(c);
	case S_PROXY:
		return fk_proxy_forward(c);
	default:
		return control_dispatch(c);
	}
}

static void on_replied(void *cls, fk_req *r)
{
	(void)cls;
	if (r->call)
		log_ready(r->call);
}

static void on_done(void *cls, fk_req *r)
{
	fk_call *c = r->call;
	(void)cls;
	if (!c)
		return;
	if (!c->log_ready)
		log_ready(c);
	if (c->log_entry)
		fk_reqlog_finish(c->app->log, c->log_entry, fk_req_elapsed_ms(r));
	fk_sandbox_release(c->app->reg, c->sb);
	free(c->user);
	fk_fault_dispose(&c->fault);
	free(c);
	r->call = NULL;
}

fk_http_hooks fk_router_hooks(fk_app *app)
{
	return (fk_http_hooks){.cls = app,
	                       .begin = on_begin,
	                       .route = on_route,
	                       .replied = on_replied,
	                       .done = on_done};
}
