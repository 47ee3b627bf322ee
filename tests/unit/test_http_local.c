/*
 * Unit tests of e2b/http.c and e2b/api.c against a tiny canned HTTP server on
 * loopback (one thread, one connection per test): redirects are refused,
 * aborts and deadlines end a blocked call, headers and bodies come through,
 * caps hold. No timing assertion: a silent server holds its connection until
 * the test ends, so only the abort or the deadline can end the call.
 */
#include "loopback.h"
#include "unit.h"

#include <pthread.h>
#include <sandbox/signal.h>
#include <stdio.h>
#include <unistd.h>

#include "e2b/api.h"
#include "e2b/envd.h"
#include "e2b/http.h"
#include "util/clock.h"

typedef struct canned {
	lb_server lb;
	int port;
	const char *reply; /* written once the request was read; NULL: say nothing */
	size_t reply_len;
	int hold_ms; /* keep the connection open this long after replying; HOLD_FOREVER: until
	                canned_stop */
	char request[4096]; /* the last request (cut at 4095 bytes) */
} canned;

#define HOLD_FOREVER LB_HOLD

static int canned_answer(int fd, const char *req, void *payload)
{
	canned *c = payload;

	snprintf(c->request, sizeof(c->request), "%s", req);
	if (c->reply)
		(void)!write(fd, c->reply, c->reply_len);
	return c->hold_ms;
}

static void canned_start(canned *c, const char *reply, int hold_ms)
{
	memset(c, 0, sizeof(*c));
	c->reply = reply;
	c->reply_len = reply ? strlen(reply) : 0;
	c->hold_ms = hold_ms;
	lb_start(&c->lb, canned_answer, c);
	c->port = c->lb.port;
}

static void canned_stop(canned *c)
{
	lb_stop(&c->lb);
}

static void api_for(sbx_e2b_api *api, sbx_http **h, const canned *c)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", c->port);
	assert_int_equal(sbx__http_new(h, NULL), 0);
	assert_int_equal(sbx__e2b_api_init(api, *h, url, "e2b_test_key", NULL), 0);
}

static void test_http__redirect_is_refused_not_followed(void **state)
{
	(void)state;
	canned c;
	sbx_http *h;
	sbx_e2b_api api;
	sbx_e2b_reply r;
	sbx_error err = {0};
	canned_start(&c,
	             "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/steal\r\n"
	             "Content-Length: 0\r\n\r\n",
	             0);
	api_for(&api, &h, &c);
	assert_int_equal(
	    sbx__e2b_api_call(&r, &api, "GET", "/v2/sandboxes", NULL, NULL, 0, NULL, &err),
	    SBX_EHTTP);
	assert_int_equal(err.http_status, 302);
	assert_string_equal(err.message, "E2B GET /v2/sandboxes failed: HTTP 302");
	assert_non_null(strstr(c.request, "X-API-KEY: e2b_test_key\r\n"));
	assert_null(strstr(c.request, "Accept-Encoding"));
	sbx__e2b_reply_dispose(&r);
	canned_stop(&c);
	sbx__e2b_api_dispose(&api);
	sbx__http_free(h);
}

static void test_http__json_body_and_next_token_come_back(void **state)
{
	(void)state;
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                            "X-Next-Token: tok=\r\nContent-Length: 15\r\n\r\n"
	                            "[{\"a\":\"b\"}]    ";
	canned c;
	sbx_http *h;
	sbx_e2b_api api;
	sbx_e2b_reply r;
	json_t *body = json_pack("{s:i}", "timeout", 5);
	canned_start(&c, reply, 0);
	api_for(&api, &h, &c);
	assert_int_equal(sbx__e2b_api_call(&r, &api, "POST", "/x", "a=1", body, 0, NULL, NULL), 0);
	assert_int_equal(r.status, 200);
	assert_true(json_is_array(r.json));
	assert_string_equal(r.next_token, "tok=");
	assert_non_null(strstr(c.request, "POST /x?a=1 HTTP/1.1\r\n"));
	assert_non_null(strstr(c.request, "Content-Type: application/json\r\n"));
	sbx__e2b_reply_dispose(&r);
	json_decref(body);
	canned_stop(&c);
	sbx__e2b_api_dispose(&api);
	sbx__http_free(h);
}

static void test_http__invalid_json_on_success_is_a_protocol_error(void **state)
{
	(void)state;
	canned c;
	sbx_http *h;
	sbx_e2b_api api;
	sbx_e2b_reply r;
	sbx_error err = {0};
	canned_start(&c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n<html>", 0);
	api_for(&api, &h, &c);
	assert_int_equal(sbx__e2b_api_call(&r, &api, "GET", "/y", NULL, NULL, 0, NULL, &err),
	                 SBX_EPROTOCOL);
	sbx__e2b_reply_dispose(&r);
	canned_stop(&c);
	sbx__e2b_api_dispose(&api);
	sbx__http_free(h);
}

typedef struct abort_when {
	canned *c;
	sbx_signal *sig;
} abort_when;

/* Abort once the server has read the request and holds it (saying nothing, until the end). */
static void *abort_when_asked(void *arg)
{
	abort_when *a = arg;

	lb_wait_held(&a->c->lb);
	sbx_signal_abort(a->sig);
	return NULL;
}

/* A server that never answers nor closes: only the abort ends the call (no deadline given). */
static void test_http__abort_from_another_thread_ends_a_silent_call(void **state)
{
	(void)state;
	canned c;
	sbx_http *h;
	sbx_e2b_api api;
	sbx_e2b_reply r;
	sbx_error err = {0};
	abort_when a = {&c, NULL};
	pthread_t t;
	canned_start(&c, NULL, HOLD_FOREVER);
	api_for(&api, &h, &c);
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	assert_int_equal(pthread_create(&t, NULL, abort_when_asked, &a), 0);
	assert_int_equal(sbx__e2b_api_call(&r, &api, "GET", "/slow", NULL, NULL, 0, a.sig, &err),
	                 SBX_EABORTED);
	assert_string_equal(err.message, "E2B GET /slow aborted");
	pthread_join(t, NULL);
	assert_true(strncmp(c.request, "GET /slow ", 10) == 0);
	sbx_signal_free(a.sig);
	sbx__e2b_reply_dispose(&r);
	canned_stop(&c);
	sbx__e2b_api_dispose(&api);
	sbx__http_free(h);
}

typedef struct sleeper {
	sbx_signal *sig;
	int asleep[2]; /* a byte just before the sleep */
	int rc;
} sleeper;

static void *sleep_an_hour(void *arg)
{
	sleeper *z = arg;
	sbx_error err = {0};

	(void)!write(z->asleep[1], "z", 1);
	z->rc = sbx__http_sleep(3600 * 1000, z->sig, &err);
	return NULL;
}

/* The backoff's sleep (an hour here) ends at an abort from another thread, with SBX_EABORTED. */
static void test_http__sleep_ends_at_an_abort(void **state)
{
	(void)state;
	sleeper z = {NULL, {-1, -1}, 0};
	pthread_t t;
	char b;

	assert_int_equal(sbx_signal_new(&z.sig), 0);
	assert_int_equal(pipe(z.asleep), 0);
	assert_int_equal(pthread_create(&t, NULL, sleep_an_hour, &z), 0);
	assert_int_equal(read(z.asleep[0], &b, 1), 1);
	sbx_signal_abort(z.sig);
	pthread_join(t, NULL);
	assert_int_equal(z.rc, SBX_EABORTED);
	close(z.asleep[0]);
	close(z.asleep[1]);
	sbx_signal_free(z.sig);
}

static void test_http__deadline_ends_a_silent_call(void **state)
{
	(void)state;
	canned c;
	sbx_http *h;
	sbx_e2b_api api;
	sbx_e2b_reply r;
	sbx_error err = {0};
	canned_start(&c, NULL, HOLD_FOREVER); /* only the deadline can end the call */
	api_for(&api, &h, &c);
	assert_int_equal(
	    sbx__e2b_api_call(&r, &api, "DELETE", "/sandboxes/a", NULL, NULL, 150, NULL, &err),
	    SBX_ETIMEOUT);
	assert_string_equal(err.message, "E2B DELETE /sandboxes/a timed out");
	sbx__e2b_reply_dispose(&r);
	canned_stop(&c);
	sbx__e2b_api_dispose(&api);
	sbx__http_free(h);
}

static void test_http__connection_refused_is_a_network_error(void **state)
{
	(void)state;
	canned c;
	sbx_http *h;
	sbx_e2b_api api;
	sbx_e2b_reply r;
	sbx_error err = {0};
	canned_start(&c, NULL, 0);
	api_for(&api, &h, &c);
	canned_stop(&c); /* nobody listens any more */
	assert_int_equal(sbx__e2b_api_call(&r, &api, "GET", "/z", NULL, NULL, 5000, NULL, &err),
	                 SBX_ENETWORK);
	assert_null(strstr(err.message, "e2b_test_key"));
	sbx__e2b_reply_dispose(&r);
	sbx__e2b_api_dispose(&api);
	sbx__http_free(h);
}

static void test_http__oversized_success_body_is_too_large(void **state)
{
	(void)state;
	static char reply[256];
	canned c;
	sbx_http *h;
	sbx_http_call *call;
	sbx_http_req req = {0};
	sbx_error err = {0};
	char url[64];
	snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n%s",
	         "0123456789012345678901234567890123456789");
	canned_start(&c, reply, 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big", c.port);
	assert_int_equal(sbx__http_new(&h, NULL), 0);
	req.what = "GET /big";
	req.method = "GET";
	req.url = url;
	req.max_body = 16;
	assert_int_equal(sbx__http_perform(&call, h, &req, sbx__now_ms() + 60000, NULL, &err),
	                 SBX_ETOOLARGE);
	assert_null(call);
	canned_stop(&c);
	sbx__http_free(h);
}

typedef struct events {
	uint32_t pid;
	char out[64];
	bool exited;
	int code;
	char status[32];
} events;

static void ev_start(uint32_t pid, void *p)
{
	((events *)p)->pid = pid;
}

static void ev_output(int stream, const unsigned char *d, size_t n, void *p)
{
	events *e = p;
	size_t l = strlen(e->out);
	if (stream == 1 && l + n < sizeof(e->out))
		memcpy(e->out + l, d, n);
}

static void ev_end(bool exited, int code, const char *status, void *p)
{
	events *e = p;
	e->exited = exited;
	e->code = code;
	snprintf(e->status, sizeof(e->status), "%s", status ? status : "");
}

/* Append one chunk holding one envelope. */
static size_t put_frame(char *out, size_t o, unsigned flags, const char *json)
{
	size_t n = strlen(json);
	o += (size_t)sprintf(out + o, "%zx\r\n", n + 5);
	out[o++] = (char)flags;
	out[o++] = 0;
	out[o++] = 0;
	out[o++] = (char)(n >> 8);
	out[o++] = (char)n;
	memcpy(out + o, json, n);
	o += n;
	memcpy(out + o, "\r\n", 2);
	return o + 2;
}

static int run_stream(const char *reply, size_t len, events *ev, sbx_error *err, char *request)
{
	canned c;
	sbx_http *h;
	sbx_envd_stream *s;
	sbx_envd_handler hd = {
	    .on_start = ev_start, .on_output = ev_output, .on_end = ev_end, .payload = ev};
	const char *args[] = {"-c", "true"};
	sbx_env_var env[] = {{"HOME", "/workspace"}};
	sbx_envd_process proc = {"/bin/sh", args, 2, env, 1, "/", 0, 0, 0};
	char url[64], key[] = "tok-secret", id[] = "isbx";
	sbx_envd_target t = {url, id, key, "e2b_test_key", NULL, NULL};
	int error;

	canned_start(&c, NULL, 0);
	c.reply = reply;
	c.reply_len = len;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", c.port);
	assert_int_equal(sbx__http_new(&h, NULL), 0);
	assert_int_equal(sbx__envd_start(&s, h, &t, "sandbox", &proc, false, &hd, NULL), 0);
	error = sbx__envd_stream_wait(s, sbx__now_ms() + 60000, NULL, err); /* a guard */
	sbx__envd_stream_free(s);
	canned_stop(&c);
	memcpy(request, c.request, sizeof(c.request));
	sbx__http_free(h);
	return error;
}

#define STREAM_HEAD                                                                                \
	"HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\n"                            \
	"Transfer-Encoding: chunked\r\n\r\n"

static void test_envd__start_stream_events_reach_the_handler(void **state)
{
	(void)state;
	static char reply[2048], request[4096];
	events ev = {0};
	sbx_error err = {0};
	size_t o = (size_t)sprintf(reply, STREAM_HEAD);
	o = put_frame(reply, o, 0, "{\"event\":{\"start\":{\"pid\":412}}}");
	o = put_frame(reply, o, 0, "{\"event\":{\"data\":{\"stdout\":\"aGVsbG8K\"}}}");
	o = put_frame(reply, o, 0, "{\"event\":{\"keepalive\":{}}}");
	o = put_frame(reply, o, 0,
	              "{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,"
	              "\"status\":\"exit status 3\"}}}");
	o = put_frame(reply, o, 2, "{}");
	o += (size_t)sprintf(reply + o, "0\r\n\r\n");
	assert_int_equal(run_stream(reply, o, &ev, &err, request), 0);
	assert_int_equal(ev.pid, 412);
	assert_string_equal(ev.out, "hello\n");
	assert_true(ev.exited);
	assert_int_equal(ev.code, 3);
	assert_string_equal(ev.status, "exit status 3");
	/* the routing headers (docs/protocol.md "Reaching envd") */
	assert_non_null(strstr(request, "POST /process.Process/Start HTTP/1.1\r\n"));
	assert_non_null(strstr(request, "E2b-Sandbox-Id: isbx\r\n"));
	assert_non_null(strstr(request, "E2b-Sandbox-Port: 49983\r\n"));
	assert_non_null(strstr(request, "X-Access-Token: tok-secret\r\n"));
	assert_non_null(strstr(request, "Authorization: Basic c2FuZGJveDo=\r\n"));
	assert_non_null(strstr(request, "Keepalive-Ping-Interval: 50\r\n"));
	assert_non_null(strstr(request, "Connect-Protocol-Version: 1\r\n"));
	assert_non_null(strstr(request, "Content-Type: application/connect+json\r\n"));
}

static void test_envd__data_frames_of_any_shape_decode_alike(void **state)
{
	(void)state;
	static char reply[2048], request[4096];
	events ev = {0};
	sbx_error err = {0};
	size_t o = (size_t)sprintf(reply, STREAM_HEAD);
	o = put_frame(reply, o, 0, "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}");
	o = put_frame(reply, o, 0,
	              "{\"event\":{\"data\":{\"stdout\":\"eA==\",\"stderr\":\"eQ==\"}}}");
	o = put_frame(reply, o, 0, "{\"event\":{\"data\":{\"stdout\":\"YQ\\u003d\\u003d\"}}}");
	o = put_frame(reply, o, 0, "{ \"event\": {\"data\": {\"stdout\": \"Yg\"}}}");
	o = put_frame(reply, o, 0, "{\"event\":{\"end\":{\"exited\":true}}}");
	o = put_frame(reply, o, 2, "{}");
	o += (size_t)sprintf(reply + o, "0\r\n\r\n");
	assert_int_equal(run_stream(reply, o, &ev, &err, request), 0);
	assert_string_equal(ev.out, "hixab");
	assert_true(ev.exited);
	assert_int_equal(ev.code, 0);
}

static void test_envd__end_stream_error_fails_the_stream(void **state)
{
	(void)state;
	static char reply[2048], request[4096];
	events ev = {0};
	sbx_error err = {0};
	size_t o = (size_t)sprintf(reply, STREAM_HEAD);
	o = put_frame(reply, o, 2,
	              "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"too slow\"}}");
	o += (size_t)sprintf(reply + o, "0\r\n\r\n");
	assert_int_equal(run_stream(reply, o, &ev, &err, request), SBX_EHTTP);
	assert_string_equal(err.message, "E2B process stream failed: deadline_exceeded: too slow");
	assert_string_equal(err.e2b_code, "deadline_exceeded");
}

static void test_envd__stream_without_end_stream_is_an_error(void **state)
{
	(void)state;
	static char reply[2048], request[4096];
	events ev = {0};
	sbx_error err = {0};
	size_t o = (size_t)sprintf(reply, STREAM_HEAD);
	o = put_frame(reply, o, 0, "{\"event\":{\"start\":{\"pid\":1}}}");
	o += (size_t)sprintf(reply + o, "0\r\n\r\n");
	assert_int_equal(run_stream(reply, o, &ev, &err, request), SBX_EPROTOCOL);
	assert_string_equal(err.message,
	                    "E2B process stream ended without an end-of-stream message");
}

static void test_envd__start_http_error_uses_errorof_without_the_token(void **state)
{
	(void)state;
	static const char reply[] = "HTTP/1.1 401 Unauthorized\r\nContent-Type: "
	                            "application/json\r\nContent-Length: 45\r\n\r\n"
	                            "{\"code\":401,\"message\":\"bad token tok-secret\"}";
	static char request[4096];
	events ev = {0};
	sbx_error err = {0};
	assert_int_equal(run_stream(reply, strlen(reply), &ev, &err, request), SBX_EHTTP);
	assert_int_equal(err.http_status, 401);
	assert_string_equal(err.message,
	                    "E2B process start failed: HTTP 401: bad token [redacted]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_http__redirect_is_refused_not_followed),
	    cmocka_unit_test(test_http__json_body_and_next_token_come_back),
	    cmocka_unit_test(test_http__invalid_json_on_success_is_a_protocol_error),
	    cmocka_unit_test(test_http__abort_from_another_thread_ends_a_silent_call),
	    cmocka_unit_test(test_http__sleep_ends_at_an_abort),
	    cmocka_unit_test(test_http__deadline_ends_a_silent_call),
	    cmocka_unit_test(test_http__connection_refused_is_a_network_error),
	    cmocka_unit_test(test_http__oversized_success_body_is_too_large),
	    cmocka_unit_test(test_envd__start_stream_events_reach_the_handler),
	    cmocka_unit_test(test_envd__data_frames_of_any_shape_decode_alike),
	    cmocka_unit_test(test_envd__end_stream_error_fails_the_stream),
	    cmocka_unit_test(test_envd__stream_without_end_stream_is_an_error),
	    cmocka_unit_test(test_envd__start_http_error_uses_errorof_without_the_token),
	};
	return cmocka_run_group_tests_name("http_local", tests, NULL, NULL);
}
