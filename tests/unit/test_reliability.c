/*
 * Client reliability against a scripted loopback control plane
 * (docs/reliability.md): idempotent calls retried on
 * a gateway's 502/503/504 or a reset before any answer, create's POST never;
 * an E2B error body is never retried; a create that may have made a sandbox
 * removes it by name; a missing /v2 route falls back to the legacy routes
 * once per provider and is never read as a gone sandbox; a connect reply
 * naming another sandbox is a protocol error.
 *
 * The server answers each request (one per connection) with the next reply
 * of the first route whose request-line prefix matches; the last reply of a
 * route repeats. "RESET" closes the connection with an RST, unanswered.
 */
#define _GNU_SOURCE
#include "loopback.h"
#include "unit.h"

#include <pthread.h>
#include <sandbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_ROUTES  8
#define MAX_REPLIES 6
#define MAX_LOG     64

typedef struct route {
	const char *line;
	const char *replies[MAX_REPLIES]; /* "STATUS|BODY", or "RESET" */
	size_t n, next;
} route;

typedef struct server {
	lb_server lb;
	route routes[MAX_ROUTES];
	size_t nroutes;
	pthread_mutex_t mu;
	char log[MAX_LOG][128]; /* request lines */
	size_t nlog;
} server;

static void answer_spec(int fd, const char *spec)
{
	char buf[4096];
	const char *bar = strchr(spec, '|'), *body = bar ? bar + 1 : "";
	int n;

	if (strcmp(spec, "RESET") == 0) {
		struct linger l = {1, 0}; /* close() sends an RST */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		return;
	}
	n = snprintf(buf, sizeof(buf),
	             "HTTP/1.1 %.*s\r\nContent-Type: %s\r\nConnection: close\r\n"
	             "Content-Length: %zu\r\n\r\n%s",
	             (int)(bar - spec), spec, body[0] == '<' ? "text/html" : "application/json",
	             strlen(body), body);
	(void)!write(fd, buf, (size_t)n);
}

/* Log the request line; the route's next reply (its last one again once used up) answers. */
static int answer(int fd, const char *req, void *payload)
{
	server *s = payload;
	const char *spec = "404 Not Found|{\"code\":404,\"message\":\"unscripted\"}";

	pthread_mutex_lock(&s->mu);
	if (s->nlog < MAX_LOG)
		snprintf(s->log[s->nlog++], sizeof(s->log[0]), "%.*s", (int)strcspn(req, "\r"),
		         req);
	for (size_t i = 0; i < s->nroutes; i++) {
		route *r = &s->routes[i];
		if (strncmp(req, r->line, strlen(r->line)) != 0)
			continue;
		spec = r->replies[r->next < r->n ? r->next : r->n - 1];
		r->next++;
		break;
	}
	pthread_mutex_unlock(&s->mu);
	answer_spec(fd, spec);
	return LB_CLOSE;
}

static void server_start(server *s)
{
	pthread_mutex_init(&s->mu, NULL);
	lb_start(&s->lb, answer, s);
}

static void server_stop(server *s)
{
	lb_stop(&s->lb);
	pthread_mutex_destroy(&s->mu);
}

/* Add a route with its replies (NULL-terminated). */
static void add(server *s, const char *line, ...)
{
	va_list ap;
	route *r;
	const char *spec;

	assert_true(s->nroutes < MAX_ROUTES);
	r = &s->routes[s->nroutes++];
	r->line = line;
	va_start(ap, line);
	while ((spec = va_arg(ap, const char *)) && r->n < MAX_REPLIES)
		r->replies[r->n++] = spec;
	va_end(ap);
	assert_true(r->n > 0);
}

/* Requests whose line starts with `prefix`. */
static size_t count(server *s, const char *prefix)
{
	size_t n = 0;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nlog; i++)
		n += strncmp(s->log[i], prefix, strlen(prefix)) == 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Log lines of the provider, for the retry assertions. */
typedef struct logs {
	pthread_mutex_t mu; /* {0}: glibc's PTHREAD_MUTEX_INITIALIZER; lines come from any thread */
	char text[16][256];
	size_t n;
	sbx_signal *abort_on_retry; /* aborted when a retry is logged: the backoff is next */
} logs;

static void on_log(sbx_log_level level, const char *msg, const sbx_log_field *f, size_t nf,
                   void *payload)
{
	logs *l = payload;
	size_t o;
	(void)level;
	if (!l)
		return;
	if (l->abort_on_retry && strstr(msg, "retrying"))
		sbx_signal_abort(l->abort_on_retry);
	pthread_mutex_lock(&l->mu);
	if (l->n < 16) {
		o = (size_t)snprintf(l->text[l->n], sizeof(l->text[0]), "%s", msg);
		for (size_t i = 0; i < nf && o < sizeof(l->text[0]); i++)
			o += (size_t)snprintf(l->text[l->n] + o, sizeof(l->text[0]) - o, " %s=%s",
			                      f[i].key, f[i].value);
		l->n++;
	}
	pthread_mutex_unlock(&l->mu);
}

static size_t logged(logs *l, const char *needle)
{
	size_t n = 0;
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n; i++)
		n += strstr(l->text[i], needle) != NULL;
	pthread_mutex_unlock(&l->mu);
	return n;
}

static sbx_provider *provider_for(const server *s, logs *l)
{
	char url[64], json[256];
	sbx_e2b_config *cfg;
	sbx_provider *p;
	sbx_e2b_options o = {SBX_E2B_OPTIONS_VERSION, url, {on_log, l}, NULL, NULL};

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->lb.port);
	snprintf(json, sizeof(json),
	         "{\"apiKey\":\"e2b_reliability_secret\",\"apiUrl\":\"%s\",\"template\":\"base\"}",
	         url);
	assert_int_equal(sbx_e2b_config_parse(&cfg, json, strlen(json), NULL), 0);
	assert_int_equal(sbx_e2b_provider_new(&p, cfg, &o, NULL), 0);
	sbx_e2b_config_free(cfg);
	return p;
}

#define HTML_502 "502 Bad Gateway|<html>bad gateway</html>"
#define HTML_503 "503 Service Unavailable|<html>unavailable</html>"
#define HTML_504 "504 Gateway Timeout|<html>timeout</html>"
#define E2B_503  "503 Service Unavailable|{\"code\":503,\"message\":\"busy\"}"
#define EMPTY    "200 OK|[]"
#define TOKEN    "200 OK|{\"sandboxID\":\"abc\",\"envdAccessToken\":\"t0k3n\"}"
#define NO_ROUTE                                                                                   \
	"404 Not Found|{\"code\":404,\"message\":\"validation error: no matching operation was "   \
	"found\"}"
#define GONE "404 Not Found|{\"code\":404,\"message\":\"Sandbox \\\"abc\\\" doesn't exist\"}"
#define LEAK_LIST                                                                                  \
	"200 OK|[{\"sandboxID\":\"leak1\",\"metadata\":{\"capybara-sandbox-name\":\"box\"}}]"
#define NO_CONTENT "204 No Content|"

static const sbx_limits lim = {1, 512, 1024, SBX_EGRESS_NONE, NULL, 0};

static void test_reliability__list_is_retried_on_gateway_errors(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_provider *p;
	(void)state;

	add(&s, "GET /v2/sandboxes", HTML_502, HTML_503, EMPTY, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_destroy_by_name(p, "box", NULL, NULL), 0);
	assert_int_equal(count(&s, "GET /v2/sandboxes"), 3);
	assert_int_equal(logged(&l, "retrying an E2B call after a gateway fault"), 2);
	assert_int_equal(logged(&l, "cause=HTTP 502 attempt=2"), 1);
	assert_int_equal(logged(&l, "cause=HTTP 503 attempt=3"), 1);
	assert_int_equal(logged(&l, "e2b_reliability_secret"), 0);
	sbx_provider_free(p);
	server_stop(&s);
}

static void test_reliability__e2b_error_body_is_not_retried(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_error err = {0};
	sbx_provider *p;
	(void)state;

	add(&s, "DELETE /sandboxes/abc", E2B_503, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_destroy(p, "abc", NULL, &err), SBX_EHTTP);
	assert_int_equal(err.http_status, 503);
	assert_int_equal(count(&s, "DELETE"), 1);
	assert_int_equal(logged(&l, "retrying"), 0);
	sbx_provider_free(p);
	server_stop(&s);
}

static void test_reliability__reset_before_an_answer_is_retried_on_connect(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_resume_status st = SBX_RESUME_GONE;
	sbx_provider *p;
	(void)state;

	add(&s, "POST /v2/sandboxes/abc/connect", "RESET", TOKEN, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_resume(&st, p, "abc", NULL, NULL), 0);
	assert_int_equal(st, SBX_RESUMED);
	assert_int_equal(count(&s, "POST /v2/sandboxes/abc/connect"), 2);
	assert_int_equal(logged(&l, "cause=connection reset before an answer"), 1);
	sbx_provider_free(p);
	server_stop(&s);
}

static void test_reliability__retries_stop_after_four_attempts(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_error err = {0};
	sbx_provider *p;
	(void)state;

	add(&s, "POST /sandboxes/abc/pause", HTML_502, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_suspend(p, "abc", NULL, &err), SBX_EHTTP);
	assert_int_equal(err.http_status, 502);
	assert_int_equal(count(&s, "POST /sandboxes/abc/pause"), 4);
	assert_int_equal(logged(&l, "retrying"), 3);
	sbx_provider_free(p);
	server_stop(&s);
}

/*
 * An abort that comes as the backoff starts (the retry's log line is the last
 * thing before it) ends the call there: SBX_EABORTED, and the retry is never
 * sent. That the backoff's sleep wakes for an abort from another thread is
 * test_http__sleep_ends_at_an_abort (test_http_local.c).
 */
static void test_reliability__abort_during_backoff_is_prompt(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_error err = {0};
	sbx_provider *p;
	(void)state;

	add(&s, "DELETE /sandboxes/abc", HTML_504, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_signal_new(&l.abort_on_retry), 0);
	assert_int_equal(sbx_sandbox_destroy(p, "abc", l.abort_on_retry, &err), SBX_EABORTED);
	assert_int_equal(err.code, SBX_EABORTED);
	assert_int_equal(count(&s, "DELETE /sandboxes/abc"), 1);
	assert_int_equal(logged(&l, "retrying"), 1);
	sbx_signal_free(l.abort_on_retry);
	sbx_provider_free(p);
	server_stop(&s);
}

/* create's POST is sent once, and what it may have made is removed by name. */
static void test_reliability__create_post_is_never_retried_and_cleans_up(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_error err = {0};
	sbx_provider *p;
	char *id = NULL;
	(void)state;

	/* the list before the POST is empty; after the failed POST the sandbox shows up */
	add(&s, "GET /v2/sandboxes", EMPTY, LEAK_LIST, EMPTY, NULL);
	add(&s, "POST /v2/sandboxes ", HTML_502, NULL);
	add(&s, "DELETE /sandboxes/leak1", NO_CONTENT, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_create(&id, p, "box", &lim, NULL, &err), SBX_EHTTP);
	assert_null(id);
	assert_int_equal(err.http_status, 502);
	assert_int_equal(count(&s, "POST /v2/sandboxes "), 1);
	assert_int_equal(count(&s, "DELETE /sandboxes/leak1"), 1);
	assert_int_equal(logged(&l, "removed the sandbox a failed create had made"), 1);
	sbx_provider_free(p);
	server_stop(&s);
}

/* A reset after the POST: the sandbox appears only later, the cleanup asks again. */
static void test_reliability__create_reset_cleans_up_a_late_sandbox(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_error err = {0};
	sbx_provider *p;
	char *id = NULL;
	(void)state;

	add(&s, "GET /v2/sandboxes", EMPTY, EMPTY, LEAK_LIST, EMPTY, NULL);
	add(&s, "POST /v2/sandboxes ", "RESET", NULL);
	add(&s, "DELETE /sandboxes/leak1", NO_CONTENT, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_create(&id, p, "box", &lim, NULL, &err), SBX_ENETWORK);
	assert_int_equal(count(&s, "POST /v2/sandboxes "), 1);
	assert_int_equal(count(&s, "GET /v2/sandboxes"), 3);
	assert_int_equal(count(&s, "DELETE /sandboxes/leak1"), 1);
	sbx_provider_free(p);
	server_stop(&s);
}

/* A 4xx from create made nothing: no cleanup list. */
static void test_reliability__create_refused_needs_no_cleanup(void **state)
{
	server s = {0};
	sbx_provider *p;
	char *id = NULL;
	(void)state;

	add(&s, "GET /v2/sandboxes", EMPTY, NULL);
	add(&s, "POST /v2/sandboxes ", "429 Too Many Requests|{\"code\":429,\"message\":\"limit\"}",
	    NULL);
	server_start(&s);
	p = provider_for(&s, NULL);
	assert_int_equal(sbx_sandbox_create(&id, p, "box", &lim, NULL, NULL), SBX_EHTTP);
	assert_int_equal(count(&s, "GET /v2/sandboxes"), 1);
	sbx_provider_free(p);
	server_stop(&s);
}

/* Nothing accepted the connection: the POST never left, so there is nothing to clean up. */
static void test_reliability__create_never_sent_needs_no_cleanup(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_error err = {0};
	sbx_provider *p;
	char *id = NULL;
	(void)state;

	server_start(&s);
	server_stop(&s); /* the port is closed: connections are refused */
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_create(&id, p, "box", &lim, NULL, &err), SBX_ENETWORK);
	assert_null(id);
	assert_non_null(strstr(err.message, "E2B "));
	assert_int_equal(logged(&l, "failed create"), 0); /* no cleanup tried, none failed */
	assert_int_equal(logged(&l, "retrying"), 0);
	sbx_provider_free(p);
}

static void test_reliability__missing_v2_connect_route_falls_back_once(void **state)
{
	server s = {0};
	logs l = {0};
	sbx_resume_status st = SBX_RESUME_GONE;
	sbx_provider *p;
	(void)state;

	add(&s, "POST /v2/sandboxes/abc/connect", NO_ROUTE, NULL);
	add(&s, "POST /sandboxes/abc/connect", TOKEN, GONE, NULL);
	server_start(&s);
	p = provider_for(&s, &l);
	assert_int_equal(sbx_sandbox_resume(&st, p, "abc", NULL, NULL), 0);
	assert_int_equal(st, SBX_RESUMED); /* not gone: the route was missing */
	/* the provider remembers: the next connect goes straight to the legacy route */
	assert_int_equal(sbx_sandbox_resume(&st, p, "abc", NULL, NULL), 0);
	assert_int_equal(st, SBX_RESUME_GONE); /* the legacy route's own 404 is gone */
	assert_int_equal(count(&s, "POST /v2/sandboxes/abc/connect"), 1);
	assert_int_equal(count(&s, "POST /sandboxes/abc/connect"), 2);
	assert_int_equal(logged(&l, "has no /v2 routes"), 1);
	sbx_provider_free(p);
	server_stop(&s);
}

static void test_reliability__a_gone_sandbox_on_v2_stays_gone(void **state)
{
	server s = {0};
	sbx_resume_status st = SBX_RESUMED;
	sbx_provider *p;
	(void)state;

	add(&s, "POST /v2/sandboxes/abc/connect", GONE, NULL);
	add(&s, "POST /sandboxes/abc/connect", TOKEN, NULL);
	server_start(&s);
	p = provider_for(&s, NULL);
	assert_int_equal(sbx_sandbox_resume(&st, p, "abc", NULL, NULL), 0);
	assert_int_equal(st, SBX_RESUME_GONE);
	assert_int_equal(count(&s, "POST /sandboxes/abc/connect"), 0);
	sbx_provider_free(p);
	server_stop(&s);
}

static void test_reliability__missing_v2_create_route_falls_back(void **state)
{
	server s = {0};
	sbx_provider *p;
	char *id = NULL;
	(void)state;

	add(&s, "GET /v2/sandboxes", EMPTY, NULL);
	add(&s, "POST /v2/sandboxes ",
	    "404 Not Found|{\"code\":404,\"message\":\"validation error: method not allowed\"}",
	    NULL);
	add(&s, "POST /sandboxes ", "201 Created|{\"sandboxID\":\"new1\"}", NULL);
	server_start(&s);
	p = provider_for(&s, NULL);
	assert_int_equal(sbx_sandbox_create(&id, p, "box", &lim, NULL, NULL), 0);
	assert_string_equal(id, "new1");
	sbx_free(id);
	id = NULL;
	assert_int_equal(sbx_sandbox_create(&id, p, "box", &lim, NULL, NULL), 0);
	assert_int_equal(count(&s, "POST /v2/sandboxes "), 1);
	assert_int_equal(count(&s, "POST /sandboxes "), 2);
	sbx_free(id);
	sbx_provider_free(p);
	server_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reliability__list_is_retried_on_gateway_errors),
	    cmocka_unit_test(test_reliability__e2b_error_body_is_not_retried),
	    cmocka_unit_test(test_reliability__reset_before_an_answer_is_retried_on_connect),
	    cmocka_unit_test(test_reliability__retries_stop_after_four_attempts),
	    cmocka_unit_test(test_reliability__abort_during_backoff_is_prompt),
	    cmocka_unit_test(test_reliability__create_post_is_never_retried_and_cleans_up),
	    cmocka_unit_test(test_reliability__create_reset_cleans_up_a_late_sandbox),
	    cmocka_unit_test(test_reliability__create_refused_needs_no_cleanup),
	    cmocka_unit_test(test_reliability__create_never_sent_needs_no_cleanup),
	    cmocka_unit_test(test_reliability__missing_v2_connect_route_falls_back_once),
	    cmocka_unit_test(test_reliability__a_gone_sandbox_on_v2_stays_gone),
	    cmocka_unit_test(test_reliability__missing_v2_create_route_falls_back),
	};
	return cmocka_run_group_tests_name("reliability", tests, NULL, NULL);
}
