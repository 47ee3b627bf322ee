/*
 * tests/integration/test_pty.c: terminals against fake-e2b (sandbox/pty.h,
 * docs/pty.md): the size a command sees, typed input through the line
 * discipline (Ctrl-C kills the foreground job), resize, kill, attach by pid
 * after a handle was freed, envd's Connect-Timeout-Ms, a callback that stops,
 * a sandbox paused behind the provider's back, and what is refused before any
 * request. Every wait is for an output marker or the command's end.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static char *g_id; /* one sandbox for the whole file */

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "pty", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

/* What a terminal printed, for waiting on markers. */
typedef struct screen {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char buf[64 * 1024];
	size_t len;
	int stop_after; /* > 0: return non-zero from the callback once this many chunks came */
	int chunks;
	pthread_t starter; /* the thread that called start: the callback must never run on it */
	bool on_starter;
} screen;

static void screen_init(screen *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
}

static void screen_dispose(screen *s)
{
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

static int on_output(const unsigned char *data, size_t len, void *payload)
{
	screen *s = payload;
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	if (len > sizeof(s->buf) - 1 - s->len)
		len = sizeof(s->buf) - 1 - s->len;
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	s->buf[s->len] = '\0';
	s->chunks++;
	if (pthread_equal(pthread_self(), s->starter))
		s->on_starter = true;
	if (s->stop_after && s->chunks >= s->stop_after)
		rc = 7;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* Wait (at most 30 s, a guard only) until the output holds `marker`. */
static void wait_for(screen *s, const char *marker)
{
	struct timespec until;
	bool found;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&s->mu);
	while (!(found = strstr(s->buf, marker) != NULL))
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) != 0)
			break;
	found = strstr(s->buf, marker) != NULL;
	pthread_mutex_unlock(&s->mu);
	if (!found)
		fail_msg("no '%s' in the terminal's output: '%s'", marker, s->buf);
}

static sbx_pty *start(h_ctx *h, const char *cmd, sbx_pty_options *o, screen *s)
{
	sbx_pty *t = NULL;
	sbx_error err = {0};
	int rc;

	o->on_output = on_output;
	o->output_payload = s;
	s->starter = pthread_self();
	rc = sbx_pty_start(&t, h->p, g_id, cmd, o, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("pty start %s: %s (%s)", cmd ? cmd : "(shell)", sbx_error_code_name(rc),
		         err.message);
	assert_true(sbx_pty_pid(t) > 0);
	return t;
}

static void send(sbx_pty *t, const char *text)
{
	sbx_error err = {0};
	if (sbx_pty_send_input(t, text, strlen(text), NULL, &err) != 0)
		fail_msg("send_input: %s", err.message);
}

static sbx_pty_result wait_end(sbx_pty *t)
{
	sbx_pty_result r;
	sbx_error err = {0};
	int rc = sbx_pty_wait(&r, t, NULL, &err);
	if (rc != 0)
		fail_msg("pty wait: %s (%s)", sbx_error_code_name(rc), err.message);
	return r;
}

/* The size given at start is the terminal's; `tty` is a /dev/pts device; the exit code comes. */
static void test_pty__size_tty_and_exit_code(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	screen s;

	screen_init(&s);
	o.cols = 100;
	o.rows = 30;
	h_reset(h);
	sbx_pty *t = start(h, "stty size; tty; echo \"term=$TERM\"; exit 3", &o, &s);
	sbx_pty_result r = wait_end(t);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 3);
	assert_false(r.killed);
	assert_false(r.timed_out);
	assert_non_null(strstr(s.buf, "30 100\r\n/dev/pts/"));
	assert_non_null(strstr(s.buf, "term=xterm-256color\r\n"));
	assert_false(s.on_starter); /* output with the start event waits for the reader */
	sbx_pty_free(t);

	/* the Start request: pty size, no stdin field, Connect-Timeout-Ms of the default 60 s */
	json_t *log = h_reqlog(h);
	json_t *e = h_find(log, "POST", "/process.Process/Start", 0);
	assert_non_null(e);
	json_t *body = h_entry_json(e);
	json_t *size = json_object_get(json_object_get(body, "pty"), "size");
	assert_int_equal(json_integer_value(json_object_get(size, "cols")), 100);
	assert_int_equal(json_integer_value(json_object_get(size, "rows")), 30);
	assert_null(json_object_get(body, "stdin"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(body, "process"), "cmd")),
	    "/bin/bash");
	json_decref(body);
	json_decref(log);
	screen_dispose(&s);
}

/* Typed bytes reach the command through the terminal; a resize is seen by `stty size`. */
static void test_pty__input_and_resize(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	sbx_error err = {0};
	screen s;

	screen_init(&s);
	sbx_pty *t = start(h, "stty size; read x; echo \"got:$x\"; stty size", &o, &s);
	wait_for(&s, "24 80\r\n");
	assert_int_equal(sbx_pty_resize(t, 132, 43, NULL, &err), 0);
	send(t, "hello\r");
	sbx_pty_result r = wait_end(t);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	/* the terminal echoes the line, then the command's output */
	assert_non_null(strstr(s.buf, "hello\r\ngot:hello\r\n43 132\r\n"));
	/* a size of 0 is refused before any request */
	assert_int_equal(sbx_pty_resize(t, 0, 10, NULL, &err), SBX_EINVALID);
	sbx_pty_free(t);
	screen_dispose(&s);
}

/* Ctrl-C (0x03) kills the shell's foreground job with SIGINT, as on a terminal. */
static void test_pty__ctrl_c_kills_the_foreground_job(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	screen s;

	screen_init(&s);
	sbx_pty *t = start(h, NULL, &o, &s);
	/* the marker comes from the foreground job itself, which then becomes the sleep */
	send(t, "sh -c 'echo st\"\"arted; exec sleep 100'\r");
	wait_for(&s, "started\r\n");
	send(t, "\x03");
	send(t, "echo \"rc=$?\"\r");
	wait_for(&s, "rc=130\r\n");
	send(t, "exit 4\r");
	sbx_pty_result r = wait_end(t);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 4);
	sbx_pty_free(t);
	screen_dispose(&s);
}

/* kill: SIGKILL on the pid, the end (128 + 9) seen before it returns. */
static void test_pty__kill(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	sbx_error err = {0};
	screen s;

	screen_init(&s);
	sbx_pty *t = start(h, "echo ready; sleep 100", &o, &s);
	wait_for(&s, "ready\r\n");
	assert_int_equal(sbx_pty_kill(t, NULL, &err), 0);
	sbx_pty_result r = wait_end(t);
	assert_true(r.killed);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 137);
	assert_int_equal(sbx_pty_kill(t, NULL, &err), 0); /* ended: a no-op */
	sbx_pty_free(t);
	screen_dispose(&s);
}

/* A freed handle leaves the command running; attach by pid follows it, input and all. */
static void test_pty__attach_by_pid(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	sbx_error err = {0};
	screen s, s2;
	sbx_pty *t2 = NULL;

	screen_init(&s);
	screen_init(&s2);
	sbx_pty *t = start(h, "echo ready; read x; echo \"got:$x\"; exit 5", &o, &s);
	uint32_t pid = sbx_pty_pid(t);
	wait_for(&s, "ready\r\n");
	sbx_pty_free(t);
	o.on_output = on_output;
	o.output_payload = &s2;
	assert_int_equal(sbx_pty_attach(&t2, h->p, g_id, pid, &o, NULL, &err), 0);
	assert_int_equal(sbx_pty_pid(t2), pid);
	send(t2, "again\r");
	sbx_pty_result r = wait_end(t2);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 5);
	assert_non_null(strstr(s2.buf, "got:again\r\n"));
	sbx_pty_free(t2);

	/* a pid envd does not know */
	assert_int_equal(sbx_pty_attach(&t2, h->p, g_id, 999999, &o, NULL, &err), SBX_EHTTP);
	assert_string_equal(err.e2b_code, "not_found");
	assert_null(t2);
	screen_dispose(&s);
	screen_dispose(&s2);
}

/* timeout_ms goes as Connect-Timeout-Ms: envd kills the command when it passes. */
static void test_pty__timeout(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	screen s;

	screen_init(&s);
	o.timeout_ms = 1500;
	sbx_pty *t = start(h, "sleep 100", &o, &s);
	sbx_pty_result r = wait_end(t);
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	assert_false(r.killed);
	sbx_pty_free(t);
	screen_dispose(&s);
}

/* A callback that returns non-zero kills the command: SBX_EUSER, killed. */
static void test_pty__callback_stop_kills(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	sbx_pty_result r;
	sbx_error err = {0};
	screen s;

	screen_init(&s);
	s.stop_after = 1;
	sbx_pty *t = start(h, "echo one; sleep 100", &o, &s);
	assert_int_equal(sbx_pty_wait(&r, t, NULL, &err), SBX_EUSER);
	assert_non_null(strstr(err.message, "returned 7"));
	assert_true(r.killed);
	sbx_pty_free(t);
	screen_dispose(&s);
}

/* Paused behind the provider's back: envd's 502, one connect (resume), the start sent again. */
static void test_pty__paused_behind_back_is_resumed(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	char path[128];
	long st = 0;
	screen s;

	screen_init(&s);
	sbx_pty_free(start(h, "true", &o, &s)); /* the attach cache covers the next start */
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", g_id);
	json_decref(h_http(h, "POST", path, "{}", &st, NULL));
	assert_int_equal(st, 204);
	h_reset(h);
	sbx_pty *t = start(h, "echo back", &o, &s);
	sbx_pty_result r = wait_end(t);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(s.buf, "back\r\n"));
	sbx_pty_free(t);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), 2);
	assert_int_equal(h_count(log, "POST", "/v2/sandboxes/"), 1); /* the connect */
	assert_int_equal(h_entry_status(h_find(log, "POST", "/process.Process/Start", 0)), 502);
	json_decref(log);
	screen_dispose(&s);
}

/* An abort while envd is slow to start it: SBX_EABORTED, and the command, once started, killed. */
static void test_pty__abort_during_start_kills_it(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	h_aborter ab = {NULL, 100, 0};
	sbx_pty *t = (sbx_pty *)1;
	sbx_error err = {0};
	pthread_t th;

	assert_int_equal(sbx_signal_new(&ab.sig), 0);
	h_reset(h);
	h_fault(h, "{\"method\":\"POST\",\"path\":\"/process.Process/Start\",\"kind\":\"delay\","
	           "\"delayMs\":1000,\"times\":1}");
	assert_int_equal(pthread_create(&th, NULL, h_abort_later, &ab), 0);
	assert_int_equal(sbx_pty_start(&t, h->p, g_id, "sleep 4242", &o, ab.sig, &err),
	                 SBX_EABORTED);
	pthread_join(th, NULL);
	assert_null(t);
	assert_string_equal(err.message, "aborted");
	sbx_signal_free(ab.sig);
	h_faults_clear(h);
	/* envd started it after the delay; the start saw its pid and killed it */
	char *left = h_sh(h, g_id, "ps -eo args | grep -c '^sleep 4242$' || true");
	assert_string_equal(left, "0\n");
	free(left);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/process.Process/SendSignal"), 1);
	json_decref(log);
}

/* Refused before any request: size 0, a bad env key, a NULL value, an unknown version, abort. */
static void test_pty__refused_before_any_request(void **state)
{
	h_ctx *h = *state;
	sbx_pty_options o = SBX_PTY_OPTIONS_INIT;
	sbx_env_var bad[] = {{"1X", "v"}}, nul[] = {{"X", NULL}};
	sbx_pty *t = (sbx_pty *)1;
	sbx_signal *sig = NULL;
	sbx_error err = {0};

	h_reset(h);
	o.cols = 0;
	assert_int_equal(sbx_pty_start(&t, h->p, g_id, NULL, &o, NULL, &err), SBX_EINVALID);
	assert_null(t);
	assert_string_equal(err.message, "terminal size must be at least 1 x 1, not 0 x 24");
	o = (sbx_pty_options)SBX_PTY_OPTIONS_INIT;
	o.env = bad;
	o.env_count = 1;
	sbx_error_clear(&err);
	assert_int_equal(sbx_pty_start(&t, h->p, g_id, NULL, &o, NULL, &err), SBX_EINVALID);
	o.env = nul;
	sbx_error_clear(&err);
	assert_int_equal(sbx_pty_start(&t, h->p, g_id, NULL, &o, NULL, &err), SBX_EINVALID);
	assert_string_equal(err.message, "environment variable X has a NULL value");
	o = (sbx_pty_options)SBX_PTY_OPTIONS_INIT;
	o.version = 9;
	sbx_error_clear(&err);
	assert_int_equal(sbx_pty_start(&t, h->p, g_id, NULL, &o, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_pty_attach(&t, h->p, g_id, 0, NULL, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_signal_new(&sig), 0);
	sbx_signal_abort(sig);
	assert_int_equal(sbx_pty_start(&t, h->p, g_id, NULL, NULL, sig, &err), SBX_EABORTED);
	sbx_signal_free(sig);
	assert_int_equal(sbx_pty_start(&t, h->p, "bad id!", NULL, NULL, NULL, &err), SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pty__size_tty_and_exit_code),
	    cmocka_unit_test(test_pty__input_and_resize),
	    cmocka_unit_test(test_pty__ctrl_c_kills_the_foreground_job),
	    cmocka_unit_test(test_pty__kill),
	    cmocka_unit_test(test_pty__attach_by_pid),
	    cmocka_unit_test(test_pty__timeout),
	    cmocka_unit_test(test_pty__callback_stop_kills),
	    cmocka_unit_test(test_pty__paused_behind_back_is_resumed),
	    cmocka_unit_test(test_pty__abort_during_start_kills_it),
	    cmocka_unit_test(test_pty__refused_before_any_request),
	};
	return cmocka_run_group_tests_name("pty", tests, setup, teardown);
}
