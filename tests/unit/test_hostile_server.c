/*
 * Hostile control-plane and envd servers, through the public API: a canned
 * loopback server answers each request with a reply picked by its request
 * line (Connection: close, so each request is a new connection). Every test
 * expects a clear error code, no crash or leak (run under valgrind), and
 * aborts that end a call the server would never end. Named after the fault served.
 */
#define _GNU_SOURCE
#include "loopback.h"
#include "unit.h"

#include <pthread.h>
#include <sandbox/e2b.h>
#include <sandbox/sandbox.h>
#include <sandbox/signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/clock.h"

#define MAX_ROUTES 4

typedef enum { SEND_CLOSE = 0, SEND_STALL } send_mode;

typedef struct route {
	const char *line; /* request line prefix, e.g. "GET /v2/sandboxes" */
	const char *reply;
	size_t len;
	send_mode mode;
} route;

typedef struct server {
	lb_server lb;
	route routes[MAX_ROUTES];
	size_t nroutes;
	int requests; /* read after server_stop (or a held connection) */
} server;

/* The first route whose line starts the request answers it; SEND_STALL then holds it open. */
static int answer(int fd, const char *req, void *payload)
{
	server *s = payload;

	s->requests++;
	for (size_t i = 0; i < s->nroutes; i++) {
		const route *r = &s->routes[i];
		if (strncmp(req, r->line, strlen(r->line)) != 0)
			continue;
		for (size_t off = 0; off < r->len;) {
			ssize_t w = write(fd, r->reply + off, r->len - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		return r->mode == SEND_STALL ? LB_HOLD : LB_CLOSE;
	}
	return LB_CLOSE;
}

static void server_start(server *s)
{
	lb_start(&s->lb, answer, s);
}

static void server_stop(server *s)
{
	lb_stop(&s->lb);
}

static void add(server *s, const char *line, const char *reply, size_t len, send_mode mode)
{
	assert_true(s->nroutes < MAX_ROUTES);
	s->routes[s->nroutes++] = (route){line, reply, len, mode};
}

/* An HTTP/1.1 reply with `body` (heap, caller frees). */
static char *reply_of(const char *status, const char *headers, const char *body, size_t blen,
                      size_t *len)
{
	size_t cap = blen + 512 + strlen(headers);
	char *r = malloc(cap);
	int n;

	assert_non_null(r);
	n = snprintf(r, cap,
	             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n%s"
	             "Content-Length: %zu\r\n\r\n",
	             status, headers, blen);
	memcpy(r + n, body, blen);
	*len = (size_t)n + blen;
	return r;
}

static sbx_provider *provider_for(const server *s)
{
	char url[64], json[256];
	sbx_e2b_config *cfg;
	sbx_provider *p;
	sbx_e2b_options o = {SBX_E2B_OPTIONS_VERSION, url, {0}, NULL, NULL};

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->lb.port);
	snprintf(json, sizeof(json),
	         "{\"apiKey\":\"e2b_hostile_secret_key\",\"apiUrl\":\"%s\",\"template\":\"base\"}",
	         url);
	assert_int_equal(sbx_e2b_config_parse(&cfg, json, strlen(json), NULL), 0);
	assert_int_equal(sbx_e2b_provider_new(&p, cfg, &o, NULL), 0);
	sbx_e2b_config_free(cfg);
	return p;
}

static void no_secret(const sbx_error *err)
{
	assert_null(strstr(err->message, "e2b_hostile_secret_key"));
	assert_null(strstr(err->message, "envd-secret-token"));
}

#define EMPTY_LIST "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n[]"

/* create() with the POST /v2/sandboxes reply `body` (201). */
static int create_with(const char *body, size_t blen, char **id, sbx_error *err)
{
	server s = {0};
	size_t len;
	char *reply = reply_of("201 Created", "", body, blen, &len);
	sbx_limits lim = {1, 512, 1024, SBX_EGRESS_NONE, NULL, 0};
	sbx_provider *p;
	int rc;

	add(&s, "GET /v2/sandboxes", EMPTY_LIST, strlen(EMPTY_LIST), SEND_CLOSE);
	add(&s, "POST /v2/sandboxes", reply, len, SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	rc = sbx_sandbox_create(id, p, "box", &lim, NULL, err);
	sbx_provider_free(p);
	server_stop(&s);
	free(reply);
	return rc;
}

static void test_hostile_server__create_reply_with_bad_sandbox_ids(void **state)
{
	static const char *const bodies[] = {
	    "{}",
	    "{\"sandboxID\":42}",
	    "{\"sandboxID\":\"\"}",
	    "{\"sandboxID\":\"a/b\"}",
	    "{\"sandboxID\":\"..\"}",
	    "{\"sandboxID\":null}",
	    "[]",
	    "\"i123\"",
	    "{\"sandboxID\":\"e2b_hostile_secret_key\"}",
	};
	char big[10300];
	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		char *id = (char *)1;
		sbx_error err = {0};
		assert_int_equal(create_with(bodies[i], strlen(bodies[i]), &id, &err),
		                 SBX_EPROTOCOL);
		assert_null(id);
		no_secret(&err);
	}
	snprintf(big, sizeof(big), "{\"sandboxID\":\"%010240d\"}", 0);
	char *id = NULL;
	sbx_error err = {0};
	assert_int_equal(create_with(big, strlen(big), &id, &err), SBX_EPROTOCOL);
	assert_true(strlen(err.message) < 200);
}

static void test_hostile_server__create_reply_empty_200_body(void **state)
{
	char *id = NULL;
	sbx_error err = {0};
	(void)state;
	assert_int_equal(create_with("", 0, &id, &err), SBX_EPROTOCOL);
	assert_string_equal(err.message, "E2B create sandbox returned no sandboxID");
}

static void test_hostile_server__create_reply_invalid_utf8_and_deep_json(void **state)
{
	static const char bad_utf8[] = "{\"sandboxID\":\"i\xff\xfe\"}";
	char deep[40010];
	char *id = NULL;
	sbx_error err = {0};
	(void)state;
	assert_int_equal(create_with(bad_utf8, strlen(bad_utf8), &id, &err), SBX_EPROTOCOL);
	assert_non_null(strstr(err.message, "invalid JSON"));
	memset(deep, '[', 20000);
	memset(deep + 20000, ']', 20000);
	memset(&err, 0, sizeof(err));
	assert_int_equal(create_with(deep, 40000, &id, &err), SBX_EPROTOCOL);
}

static void test_hostile_server__create_reply_of_10_mb_is_too_large(void **state)
{
	size_t n = 10u << 20;
	char *big = malloc(n), *id = NULL;
	sbx_error err = {0};
	(void)state;
	assert_non_null(big);
	memset(big, ' ', n);
	big[0] = '[';
	big[n - 1] = ']';
	assert_int_equal(create_with(big, n, &id, &err), SBX_ETOOLARGE);
	free(big);
}

static void test_hostile_server__list_reply_shapes(void **state)
{
	static const char *const bodies[] = {
	    "{\"sandboxes\":[]}", "42", "\"x\"",
	    "[{\"metadata\":{\"capybara-sandbox-name\":\"box\"}}]",
	    "[{\"sandboxID\":\"../x\",\"metadata\":{\"capybara-sandbox-name\":\"box\"}}]"};
	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		server s = {0};
		size_t len;
		char *reply = reply_of("200 OK", "", bodies[i], strlen(bodies[i]), &len);
		sbx_error err = {0};
		sbx_provider *p;
		add(&s, "GET /v2/sandboxes", reply, len, SEND_CLOSE);
		server_start(&s);
		p = provider_for(&s);
		assert_int_equal(sbx_sandbox_destroy_by_name(p, "box", NULL, &err), SBX_EPROTOCOL);
		sbx_provider_free(p);
		server_stop(&s);
		assert_int_equal(s.requests, 1); /* no DELETE of a made-up id */
		free(reply);
	}
}

static void test_hostile_server__next_token_that_never_ends_is_capped(void **state)
{
	server s = {0};
	size_t len;
	char *reply = reply_of("200 OK", "X-Next-Token: again\r\n", "[]", 2, &len);
	sbx_error err = {0};
	sbx_provider *p;
	(void)state;
	add(&s, "GET /v2/sandboxes", reply, len, SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	assert_int_equal(sbx_sandbox_destroy_by_name(p, "box", NULL, &err), SBX_EPROTOCOL);
	assert_string_equal(err.message,
	                    "E2B list of sandboxes named box has more than 1000 pages");
	sbx_provider_free(p);
	server_stop(&s);
	assert_int_equal(s.requests, 1000);
	free(reply);
}

static void test_hostile_server__next_token_of_60_kb_is_too_large(void **state)
{
	size_t n = 60 * 1024, len;
	char *hdr = malloc(n + 32), *reply;
	sbx_error err = {0};
	sbx_provider *p;
	server s = {0};
	(void)state;
	assert_non_null(hdr);
	memcpy(hdr, "X-Next-Token: ", 14);
	memset(hdr + 14, '%', n); /* each becomes %25: the query passes its 64 KiB cap */
	memcpy(hdr + 14 + n, "\r\n", 3);
	reply = reply_of("200 OK", hdr, "[]", 2, &len);
	add(&s, "GET /v2/sandboxes", reply, len, SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	assert_int_equal(sbx_sandbox_destroy_by_name(p, "box", NULL, &err), SBX_ETOOLARGE);
	assert_string_equal(err.message,
	                    "E2B GET /v2/sandboxes returned an X-Next-Token too long to send back");
	sbx_provider_free(p);
	server_stop(&s);
	assert_int_equal(s.requests, 1);
	free(reply);
	free(hdr);
}

static void test_hostile_server__one_megabyte_of_headers_is_an_error(void **state)
{
	size_t n = 1u << 20, len;
	char *hdr = malloc(n + 32), *reply;
	sbx_error err = {0};
	sbx_provider *p;
	server s = {0};
	(void)state;
	assert_non_null(hdr);
	memcpy(hdr, "X-Big: ", 7);
	memset(hdr + 7, 'a', n);
	memcpy(hdr + 7 + n, "\r\n", 3);
	reply = reply_of("200 OK", hdr, "[]", 2, &len);
	add(&s, "GET /v2/sandboxes", reply, len, SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	assert_int_equal(sbx_sandbox_destroy_by_name(p, "box", NULL, &err), SBX_ENETWORK);
	no_secret(&err);
	sbx_provider_free(p);
	server_stop(&s);
	free(reply);
	free(hdr);
}

/* Connect replies (resume): the target's fields. */
static int resume_with(const char *body, sbx_resume_status *st, sbx_error *err)
{
	server s = {0};
	size_t len;
	char *reply = reply_of("200 OK", "", body, strlen(body), &len);
	sbx_provider *p;
	int rc;

	add(&s, "POST /v2/sandboxes/abc/connect", reply, len, SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	rc = sbx_sandbox_resume(st, p, "abc", NULL, err);
	sbx_provider_free(p);
	server_stop(&s);
	free(reply);
	return rc;
}

static void test_hostile_server__connect_reply_fields(void **state)
{
	sbx_resume_status st = SBX_RESUMED;
	sbx_error err = {0};
	(void)state;
	assert_int_equal(resume_with("{\"sandboxID\":\"abc\",\"envdAccessToken\":7}", &st, NULL),
	                 0);
	assert_int_equal(st, SBX_RESUME_GONE); /* no token: refuse, it will be recreated */
	st = SBX_RESUMED;
	assert_int_equal(resume_with("{\"sandboxID\":\"abc\",\"envdAccessToken\":\"\"}", &st, NULL),
	                 0);
	assert_int_equal(st, SBX_RESUME_GONE);
	assert_int_equal(resume_with("{\"sandboxID\":\"abc\",\"domain\":\"evil.com/x\","
	                             "\"envdAccessToken\":\"envd-secret-token\"}",
	                             &st, &err),
	                 SBX_EPROTOCOL);
	no_secret(&err);
	memset(&err, 0, sizeof(err));
	assert_int_equal(resume_with("{\"sandboxID\":\"abc\",\"domain\":\"E2B.APP\","
	                             "\"envdAccessToken\":\"envd-secret-token\"}",
	                             &st, &err),
	                 SBX_EPROTOCOL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(resume_with("{\"sandboxID\":\"../../v2\",\"envdAccessToken\":"
	                             "\"envd-secret-token\"}",
	                             &st, &err),
	                 SBX_EPROTOCOL);
	no_secret(&err);
	/* a reply naming another sandbox: envd requests would go there */
	memset(&err, 0, sizeof(err));
	st = SBX_RESUME_GONE;
	assert_int_equal(resume_with("{\"sandboxID\":\"xyz\",\"envdAccessToken\":"
	                             "\"envd-secret-token\"}",
	                             &st, &err),
	                 SBX_EPROTOCOL);
	assert_string_equal(err.message,
	                    "E2B connect for sandbox abc answered for another sandbox, xyz");
	no_secret(&err);
	st = SBX_RESUME_GONE;
	assert_int_equal(
	    resume_with("{\"sandboxID\":\"abc\",\"envdAccessToken\":\"t0k3n\"}", &st, NULL), 0);
	assert_int_equal(st, SBX_RESUMED);
}

typedef struct aborter {
	server *s;
	sbx_signal *sig;
} aborter;

/* Abort once the server has sent its partial reply and stalls: the call is then mid-body. */
static void *abort_when_stalled(void *arg)
{
	aborter *a = arg;

	lb_wait_held(&a->s->lb);
	sbx_signal_abort(a->sig);
	return NULL;
}

/*
 * The server sends part of the body, then holds the connection open until the
 * test ends: only the abort can end the call, and it must end it with
 * SBX_EABORTED while the server still stalls (no request timeout, no close).
 */
static void test_hostile_server__stall_mid_body_is_aborted_promptly(void **state)
{
	static const char part[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                           "Content-Length: 1000\r\n\r\n[{\"sandboxID\":";
	server s = {0};
	sbx_error err = {0};
	sbx_provider *p;
	aborter a = {&s, NULL};
	pthread_t th;
	uint64_t t0;
	(void)state;
	add(&s, "GET /v2/sandboxes", part, strlen(part), SEND_STALL);
	server_start(&s);
	p = provider_for(&s);
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	assert_int_equal(pthread_create(&th, NULL, abort_when_stalled, &a), 0);
	t0 = sbx__now_ms();
	assert_int_equal(sbx_sandbox_destroy_by_name(p, "box", a.sig, &err), SBX_EABORTED);
	assert_int_equal(err.code, SBX_EABORTED);
	print_message("stalled call returned %llu ms after it started\n",
	              (unsigned long long)(sbx__now_ms() - t0));
	pthread_join(th, NULL);
	assert_int_equal(s.requests, 1); /* the stalled list, and nothing after it */
	sbx_provider_free(p);
	server_stop(&s);
	sbx_signal_free(a.sig);
}

/* ---- bad arguments: each fails before any request, with SBX_EINVALID ---- */

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void test_hostile_server__bad_arguments_fail_before_any_request(void **state)
{
	static const char gone[] =
	    "HTTP/1.1 404 Not Found\r\nConnection: close\r\n"
	    "Content-Length: 34\r\n\r\n{\"code\":404,\"message\":\"not found\"}";
	server s = {0};
	sbx_provider *p;
	sbx_error err = {0};
	sbx_exec_result r;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_file *f = (sbx_file *)1;
	sbx_stat st;
	sbx_resume_status rs;
	sbx_limits lim = {1, 512, 1024, SBX_EGRESS_NONE, NULL, 0};
	char *id = (char *)1, *name102 = repeat('a', 102), *seg256 = repeat('s', 256);
	char *tag65 = repeat('t', 65), *id129 = repeat('i', 129), path[5000];
	const char *tags[] = {"ok", tag65};
	sbx_env_var bad_env[] = {{"A=B", "x"}}, null_env[] = {{"K", NULL}};
	(void)state;
	add(&s, "POST", gone, strlen(gone), SEND_CLOSE);
	add(&s, "GET", gone, strlen(gone), SEND_CLOSE);
	add(&s, "DELETE", gone, strlen(gone), SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);

#define EINV(call)                                                                                 \
	do {                                                                                       \
		memset(&err, 0, sizeof(err));                                                      \
		assert_int_equal((call), SBX_EINVALID);                                            \
		assert_int_equal(err.code, SBX_EINVALID);                                          \
		assert_true(err.message[0] != '\0');                                               \
	} while (0)
	/* NULLs */
	EINV(sbx_sandbox_create(NULL, p, "box", &lim, NULL, &err));
	EINV(sbx_sandbox_create(&id, NULL, "box", &lim, NULL, &err));
	EINV(sbx_sandbox_create(&id, p, NULL, &lim, NULL, &err));
	EINV(sbx_sandbox_create(&id, p, "box", NULL, NULL, &err));
	EINV(sbx_sandbox_resume(NULL, p, "abc", NULL, &err));
	EINV(sbx_sandbox_resume(&rs, p, NULL, NULL, &err));
	EINV(sbx_sandbox_suspend(p, NULL, NULL, &err));
	EINV(sbx_sandbox_destroy(NULL, "abc", NULL, &err));
	EINV(sbx_sandbox_destroy_by_name(p, NULL, NULL, &err));
	EINV(sbx_sandbox_kill_all(p, NULL, NULL, &err));
	EINV(sbx_sandbox_kill_tagged(p, "abc", NULL, 1, NULL, &err));
	EINV(sbx_sandbox_exec(NULL, p, "abc", "true", NULL, NULL, &err));
	EINV(sbx_sandbox_exec(&r, p, "abc", NULL, NULL, NULL, &err));
	EINV(sbx_sandbox_read_file(NULL, p, "abc", "/x", 10, NULL, &err));
	EINV(sbx_sandbox_read_file(&f, p, "abc", NULL, 10, NULL, &err));
	EINV(sbx_sandbox_write_file(p, "abc", NULL, "x", 1, NULL, &err));
	EINV(sbx_sandbox_write_file(p, "abc", "/x", NULL, 1, NULL, &err));
	EINV(sbx_sandbox_stat(NULL, p, "abc", "/x", NULL, &err));
	EINV(sbx_sandbox_stat(&st, p, "abc", NULL, NULL, &err));
	/* err NULL is allowed everywhere */
	assert_int_equal(sbx_sandbox_destroy(p, NULL, NULL, NULL), SBX_EINVALID);
	/* limits: names, ids, tags, paths */
	EINV(sbx_sandbox_create(&id, p, name102, &lim, NULL, &err));
	EINV(sbx_sandbox_create(&id, p, "", &lim, NULL, &err));
	EINV(sbx_sandbox_create(&id, p, "-box", &lim, NULL, &err));
	EINV(sbx_sandbox_destroy_by_name(p, "a/b", NULL, &err));
	EINV(sbx_sandbox_destroy(p, id129, NULL, &err));
	EINV(sbx_sandbox_destroy(p, "../x", NULL, &err));
	EINV(sbx_sandbox_suspend(p, "", NULL, &err));
	EINV(sbx_sandbox_kill_tagged(p, "abc", tags, 2, NULL, &err));
	o.tag = tag65;
	EINV(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err));
	o.tag = NULL;
	o.env = bad_env;
	o.env_count = 1;
	EINV(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err));
	o.env = null_env;
	EINV(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err));
	o.env = NULL;
	EINV(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err)); /* count 1, env NULL */
	o.env_count = 0;
	o.timeout_ms = 0;
	EINV(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err));
	o.timeout_ms = 1000;
	o.version = 99;
	EINV(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err));
	path[0] = '/';
	memset(path + 1, 'p', 4096);
	path[4097] = '\0';
	EINV(sbx_sandbox_stat(&st, p, "abc", path, NULL, &err)); /* 4097 bytes */
	snprintf(path, sizeof(path), "/%s", seg256);
	EINV(sbx_sandbox_read_file(&f, p, "abc", path, 10, NULL, &err));
	EINV(sbx_sandbox_read_file(&f, p, "abc", "relative", 10, NULL, &err));
	EINV(sbx_sandbox_read_file(&f, p, "abc", "/a/../b", 10, NULL, &err));
	EINV(sbx_sandbox_write_file(p, "abc", "/a\nb", "x", 1, NULL, &err));
	EINV(sbx_sandbox_write_file(p, "abc", "/a//b", "x", 1, NULL, &err));
	EINV(sbx_sandbox_read_file(&f, p, "abc\n", "/x", 10, NULL, &err));
	assert_null(f);
	assert_null(id);
#undef EINV
	sbx_provider_free(p);
	server_stop(&s);
	assert_int_equal(s.requests, 0); /* every one refused before any request */
	free(name102);
	free(seg256);
	free(tag65);
	free(id129);
}

static void test_hostile_server__api_key_with_crlf_is_refused(void **state)
{
	char key[] = "e2b_k\r\nX-Evil: 1", tmpl[] = "base";
	sbx_e2b_config cfg = {key, NULL, NULL, tmpl, 300, true, false, NULL};
	sbx_provider *p = (sbx_provider *)1;
	sbx_error err = {0};
	(void)state;
	assert_int_equal(sbx_e2b_provider_new(&p, &cfg, NULL, &err), SBX_EINVALID);
	assert_null(p);
	assert_string_equal(err.message, "apiKey contains a control character");
}

/* Extreme but valid values reach the server (which says "gone") without a crash. */
static void test_hostile_server__extreme_valid_values_do_not_crash(void **state)
{
	static const char gone[] =
	    "HTTP/1.1 404 Not Found\r\nConnection: close\r\n"
	    "Content-Length: 34\r\n\r\n{\"code\":404,\"message\":\"not found\"}";
	server s = {0};
	sbx_provider *p;
	sbx_error err = {0};
	sbx_exec_result r;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_file *f = NULL;
	sbx_env_var env[] = {{"NL", "a\nb\r\n"}, {"EMPTY", ""}};
	char *path = malloc(4097);
	(void)state;
	assert_non_null(path);
	path[0] = '/';
	memset(path + 1, 'p', 4095);
	for (size_t i = 255; i < 4096; i += 256)
		path[i] = '/'; /* segments of 254 bytes, 4096 bytes in all */
	path[4096] = '\0';
	add(&s, "POST", gone, strlen(gone), SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	const struct {
		uint64_t timeout;
		size_t max;
	} cases[] = {{1, 0}, {UINT64_MAX, SIZE_MAX}, {UINT64_MAX, 0}, {1, SIZE_MAX}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o.timeout_ms = cases[i].timeout;
		o.max_output_bytes = cases[i].max;
		o.env = env;
		o.env_count = 2;
		memset(&err, 0, sizeof(err));
		assert_int_equal(sbx_sandbox_exec(&r, p, "abc", "true", &o, NULL, &err), SBX_EGONE);
		assert_null(r.stdout_data);
	}
	assert_int_equal(sbx_sandbox_read_file(&f, p, "abc", path, 0, NULL, &err), SBX_EGONE);
	assert_int_equal(sbx_sandbox_read_file(&f, p, "abc", path, SIZE_MAX, NULL, &err),
	                 SBX_EGONE);
	assert_null(f);
	assert_int_equal(sbx_sandbox_write_file(p, "abc", "/x", "", 0, NULL, &err), SBX_EGONE);
	assert_int_equal(sbx_sandbox_write_file(p, "abc", "/x", NULL, 0, NULL, &err), SBX_EGONE);
	sbx_provider_free(p);
	server_stop(&s);
	free(path);
}

/* ---- exec against a hostile envd: connect, then a canned Start stream ---- */

static size_t frame(char *out, unsigned flags, const char *json)
{
	size_t n = strlen(json);
	out[0] = (char)flags;
	out[1] = (char)(n >> 24);
	out[2] = (char)(n >> 16);
	out[3] = (char)(n >> 8);
	out[4] = (char)n;
	memcpy(out + 5, json, n);
	return n + 5;
}

static int exec_with_stream(const char *const *msgs, size_t n, sbx_exec_result *r, int *requests,
                            sbx_error *err)
{
	static const char connect[] = "{\"sandboxID\":\"abc\",\"envdAccessToken\":\"t0k3n\"}";
	char body[4096], *creply, *sreply;
	size_t blen = 0, clen, slen;
	server s = {0};
	sbx_provider *p;
	int rc;

	for (size_t i = 0; i < n; i++)
		blen +=
		    frame(body + blen, msgs[i][0] == '!' ? 2 : 0, msgs[i] + (msgs[i][0] == '!'));
	creply = reply_of("200 OK", "", connect, strlen(connect), &clen);
	sreply = reply_of("200 OK", "", body, blen, &slen);
	add(&s, "POST /v2/sandboxes/abc/connect", creply, clen, SEND_CLOSE);
	add(&s, "POST /process.Process/Start", sreply, slen, SEND_CLOSE);
	server_start(&s);
	p = provider_for(&s);
	rc = sbx_sandbox_exec(r, p, "abc", "true", NULL, NULL, err);
	sbx_provider_free(p);
	server_stop(&s);
	*requests = s.requests;
	free(creply);
	free(sreply);
	return rc;
}

/* sandbox.h: "envd sent an exit status that is not a valid int32" has no exit code */
static void test_hostile_server__exec_exit_code_garbage_is_no_exit_code(void **state)
{
	const char *m[] = {"{\"event\":{\"start\":{\"pid\":1099511627776}}}",
	                   "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}",
	                   "{\"event\":{\"end\":{\"exited\":true,\"exitCode\":\"x\"}}}", "!{}"};
	sbx_exec_result r;
	sbx_error err = {0};
	int requests;
	(void)state;
	assert_int_equal(exec_with_stream(m, 4, &r, &requests, &err), 0);
	assert_false(r.has_exit_code); /* was: exit code 0, a success */
	assert_int_equal(r.exit_code, 0);
	assert_memory_equal(r.stdout_data, "hi", 2);
	assert_int_equal(requests, 2); /* connect + Start: no SendSignal to a wrapped pid */
	sbx_exec_result_free(&r);
}

static void test_hostile_server__exec_exit_code_as_string(void **state)
{
	const char *m[] = {"{\"event\":{\"end\":{\"exited\":true,\"exitCode\":\"3\"}}}",
	                   "{\"event\":{\"start\":{\"pid\":-1}}}",
	                   "{\"event\":{\"data\":{\"stdout\":\"aGk=\",\"stderr\":7}}}",
	                   "{\"event\":{\"keepalive\":{}}}", "!{}"};
	sbx_exec_result r;
	sbx_error err = {0};
	int requests;
	(void)state;
	assert_int_equal(exec_with_stream(m, 5, &r, &requests, &err), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.stdout_len, 2);
	assert_memory_equal(r.stdout_data, "hi", 2);
	sbx_exec_result_free(&r);
}

static void test_hostile_server__exec_invalid_base64_is_a_protocol_error(void **state)
{
	const char *m[] = {"{\"event\":{\"data\":{\"stdout\":\"a\"}}}", "!{}"};
	sbx_exec_result r;
	sbx_error err = {0};
	int requests;
	(void)state;
	assert_int_equal(exec_with_stream(m, 2, &r, &requests, &err), SBX_EPROTOCOL);
	assert_string_equal(err.message, "E2B process stream: invalid base64 in a data event");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostile_server__create_reply_with_bad_sandbox_ids),
	    cmocka_unit_test(test_hostile_server__create_reply_empty_200_body),
	    cmocka_unit_test(test_hostile_server__create_reply_invalid_utf8_and_deep_json),
	    cmocka_unit_test(test_hostile_server__create_reply_of_10_mb_is_too_large),
	    cmocka_unit_test(test_hostile_server__list_reply_shapes),
	    cmocka_unit_test(test_hostile_server__next_token_that_never_ends_is_capped),
	    cmocka_unit_test(test_hostile_server__next_token_of_60_kb_is_too_large),
	    cmocka_unit_test(test_hostile_server__one_megabyte_of_headers_is_an_error),
	    cmocka_unit_test(test_hostile_server__connect_reply_fields),
	    cmocka_unit_test(test_hostile_server__stall_mid_body_is_aborted_promptly),
	    cmocka_unit_test(test_hostile_server__bad_arguments_fail_before_any_request),
	    cmocka_unit_test(test_hostile_server__extreme_valid_values_do_not_crash),
	    cmocka_unit_test(test_hostile_server__api_key_with_crlf_is_refused),
	    cmocka_unit_test(test_hostile_server__exec_exit_code_garbage_is_no_exit_code),
	    cmocka_unit_test(test_hostile_server__exec_exit_code_as_string),
	    cmocka_unit_test(test_hostile_server__exec_invalid_base64_is_a_protocol_error),
	};
	return cmocka_run_group_tests_name("hostile_server", tests, NULL, NULL);
}
