/*
 * tests/integration/test_cli_pty.c: `sandbox-e2b exec -it` driven through a
 * real pseudo-terminal pair against fake-e2b (docs/pty.md, docs/cli.md), and
 * the serve pty_* methods (bindings/protocol/methods.md).
 *
 * The CLI ($SBX_CLI_BIN) runs on the slave side as a login session would
 * (its own session, the slave its controlling terminal); the test types on
 * the master and reads what the CLI writes. It checks: `tty` names a
 * /dev/pts device and `stty size` the size of the local terminal, and
 * follows a resize (TIOCSWINSZ on the master, which sends the CLI SIGWINCH);
 * Ctrl-C kills the remote foreground job (`echo $?` then says 130); Ctrl-D
 * ends the shell; the local terminal is raw during the session and its
 * termios the same as before after the remote shell's exit, its `kill -9`,
 * SIGTERM and SIGHUP of the CLI, and a stream that breaks under it (the sandbox paused
 * behind its back); the exit code is the remote's. Every wait is for an
 * output marker or a process's end, with a guard.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#define GUARD_MS 30000

static char *g_id; /* one sandbox for the whole file */

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "clipty", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

/* The CLI on a terminal: its pid, the master (ours) and the slave (kept open for tcgetattr). */
typedef struct term {
	pid_t pid;
	int master, slave;
	char buf[256 * 1024];
	size_t len;
	struct termios before;
} term;

static void child_env(h_ctx *h)
{
	unsetenv("SANDBOX_E2B_CONFIG");
	unsetenv("E2B_DOMAIN");
	setenv("E2B_API_KEY", H_API_KEY, 1);
	setenv("E2B_API_URL", h->srv.url, 1);
	setenv("E2B_TEMPLATE", "capybara-sandbox", 1);
	setenv("SANDBOX_E2B_ENVD_URL", h->srv.url, 1);
	setenv("TERM", "xterm-test", 1);
}

/* Start the CLI with `argv` (NULL-terminated, after the program) on a rows x cols terminal. */
static void term_start(term *t, h_ctx *h, unsigned rows, unsigned cols, const char *const *argv)
{
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	const char *cli = getenv("SBX_CLI_BIN");
	const char *args[32] = {cli};
	size_t n = 1;

	assert_non_null(cli);
	for (; argv[n - 1] && n < 31; n++)
		args[n] = argv[n - 1];
	args[n] = NULL;
	memset(t, 0, sizeof(*t));
	assert_int_equal(openpty(&t->master, &t->slave, NULL, NULL, &ws), 0);
	assert_int_equal(tcgetattr(t->slave, &t->before), 0);
	assert_true(t->before.c_lflag & ICANON); /* a cooked terminal to begin with */
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		child_env(h);
		setsid();
		ioctl(t->slave, TIOCSCTTY, 0);
		dup2(t->slave, 0);
		dup2(t->slave, 1);
		dup2(t->slave, 2);
		close(t->master);
		close(t->slave);
		execv(cli, (char *const *)args);
		_exit(127);
	}
	fcntl(t->master, F_SETFL, O_NONBLOCK);
}

/* Read what is there (waiting at most ms); false when nothing came. */
static bool term_read(term *t, int ms)
{
	struct pollfd p = {t->master, POLLIN, 0};
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return false;
	n = read(t->master, t->buf + t->len, sizeof(t->buf) - 1 - t->len);
	if (n <= 0)
		return false;
	t->len += (size_t)n;
	t->buf[t->len] = '\0';
	return true;
}

/* Wait until the output since `from` holds `marker`; returns where it ends. */
static size_t term_wait_from(term *t, size_t from, const char *marker)
{
	uint64_t until = h_now_ms() + GUARD_MS;
	char *at;

	while (!(at = strstr(t->buf + from, marker))) {
		if (h_now_ms() > until)
			fail_msg("no '%s' on the terminal; it shows: '%s'", marker, t->buf + from);
		term_read(t, 200);
	}
	return (size_t)(at - t->buf) + strlen(marker);
}

static void term_type(term *t, const char *text)
{
	size_t n = strlen(text);
	assert_int_equal(write(t->master, text, n), (ssize_t)n);
}

/* The CLI's exit status, reading its output meanwhile (so it never blocks on a full terminal). */
static int term_exit(term *t)
{
	uint64_t until = h_now_ms() + GUARD_MS;
	int status = 0;

	for (;;) {
		pid_t r = waitpid(t->pid, &status, WNOHANG);
		if (r == t->pid)
			break;
		if (h_now_ms() > until) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &status, 0);
			fail_msg("the CLI did not exit; the terminal shows: '%s'", t->buf);
		}
		term_read(t, 50);
	}
	while (term_read(t, 0))
		;
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* The slave's termios now equals the one before the CLI started. */
static void assert_restored(term *t)
{
	struct termios now;

	assert_int_equal(tcgetattr(t->slave, &now), 0);
	assert_int_equal(now.c_iflag, t->before.c_iflag);
	assert_int_equal(now.c_oflag, t->before.c_oflag);
	assert_int_equal(now.c_lflag, t->before.c_lflag);
	assert_int_equal(now.c_cflag, t->before.c_cflag);
	assert_memory_equal(now.c_cc, t->before.c_cc, sizeof(now.c_cc));
}

/* During the session the local terminal is raw: no echo, no line editing, no signals. */
static void assert_raw(term *t)
{
	struct termios now;

	assert_int_equal(tcgetattr(t->slave, &now), 0);
	assert_false(now.c_lflag & (ICANON | ECHO | ISIG));
}

static void term_close(term *t)
{
	close(t->master);
	close(t->slave);
}

/* An interactive shell; returns the offset after its first marker (it is up and reading). */
static size_t shell(term *t, h_ctx *h, unsigned rows, unsigned cols)
{
	const char *argv[] = {"exec", "-it", g_id, NULL};
	term_start(t, h, rows, cols, argv);
	term_type(t, "echo up''now\r");
	return term_wait_from(t, 0, "upnow\r\n");
}

/* tty, stty size of the local terminal, a resize followed, TERM passed on, Ctrl-D ends it. */
static void test_cli_pty__tty_size_resize_and_ctrl_d(void **state)
{
	h_ctx *h = *state;
	struct winsize ws = {.ws_row = 41, .ws_col = 133};
	term t;
	size_t at = shell(&t, h, 30, 100);

	assert_raw(&t);
	term_type(&t, "tty; stty size; echo \"term=$TERM\"; echo do''ne1\r");
	at = term_wait_from(&t, at, "done1\r\n");
	assert_non_null(strstr(t.buf, "\r\n/dev/pts/"));
	assert_non_null(strstr(t.buf, "\r\n30 100\r\n"));
	assert_non_null(strstr(t.buf, "\r\nterm=xterm-test\r\n"));
	/* the local terminal is resized: the CLI gets SIGWINCH and resizes the remote one */
	assert_int_equal(ioctl(t.master, TIOCSWINSZ, &ws), 0);
	term_type(&t, "stty size; echo do''ne2\r");
	at = term_wait_from(&t, at, "done2\r\n");
	assert_non_null(strstr(t.buf, "\r\n41 133\r\n"));
	/* the next prompt: readline reads the terminal (a Ctrl-D typed while the terminal is
	 * still cooked for the command would be its EOF, lost when readline takes over) */
	term_wait_from(&t, at, "$ ");
	term_type(&t, "\x04"); /* Ctrl-D at an empty line: the shell ends, exit 0 */
	assert_int_equal(term_exit(&t), 0);
	assert_restored(&t);
	term_close(&t);
}

/* Ctrl-C kills the remote foreground job (not the CLI); the remote exit code is the CLI's. */
static void test_cli_pty__ctrl_c_and_exit_code(void **state)
{
	h_ctx *h = *state;
	term t;
	size_t at = shell(&t, h, 24, 80);

	/* the marker comes from the foreground job itself, which then becomes the sleep */
	term_type(&t, "sh -c 'echo sl\"\"eeping; exec sleep 100'\r");
	at = term_wait_from(&t, at, "sleeping\r\n");
	term_type(&t, "\x03");
	term_type(&t, "echo \"rc=$?\"\r");
	at = term_wait_from(&t, at, "rc=130\r\n");
	term_type(&t, "exit 7\r");
	assert_int_equal(term_exit(&t), 7);
	assert_restored(&t);
	term_close(&t);
}

/* kill -9 of the remote shell: the CLI exits 137 and the terminal is as before. */
static void test_cli_pty__remote_killed_restores_the_terminal(void **state)
{
	h_ctx *h = *state;
	char cmd[64];
	unsigned pid = 0;
	term t;
	size_t at = shell(&t, h, 24, 80);

	term_type(&t, "echo \"pid=$$=\"\r");
	at = term_wait_from(&t, at, "=\r\n");
	const char *p = strstr(t.buf, "\r\npid=");
	assert_non_null(p);
	assert_int_equal(sscanf(p + 2, "pid=%u=", &pid), 1);
	assert_raw(&t);
	snprintf(cmd, sizeof(cmd), "kill -9 %u", pid);
	free(h_sh(h, g_id, cmd));
	assert_int_equal(term_exit(&t), 137);
	assert_restored(&t);
	term_close(&t);
}

/* SIGTERM of the CLI: the terminal is restored, the remote shell killed, exit 143. */
static void test_cli_pty__sigterm_restores_and_kills(void **state)
{
	h_ctx *h = *state;
	char cmd[96];
	unsigned pid = 0;
	term t;
	size_t at = shell(&t, h, 24, 80);

	term_type(&t, "echo \"pid=$$=\"\r");
	term_wait_from(&t, at, "=\r\n");
	assert_int_equal(sscanf(strstr(t.buf, "\r\npid=") + 2, "pid=%u=", &pid), 1);
	kill(t.pid, SIGTERM);
	assert_int_equal(term_exit(&t), 143);
	assert_restored(&t);
	term_close(&t);
	/* the remote shell is gone: kill -0 of its pid fails */
	snprintf(cmd, sizeof(cmd), "kill -0 %u 2>/dev/null && echo alive || echo gone", pid);
	char *out = h_sh(h, g_id, cmd);
	assert_string_equal(out, "gone\n");
	free(out);
}

/* SIGHUP of the CLI (its terminal went away): restored, the remote shell killed, exit 129. */
static void test_cli_pty__sighup_restores(void **state)
{
	h_ctx *h = *state;
	term t;

	shell(&t, h, 24, 80);
	assert_raw(&t);
	kill(t.pid, SIGHUP);
	assert_int_equal(term_exit(&t), 129);
	assert_restored(&t);
	term_close(&t);
}

/* The stream breaks under the session (the sandbox paused behind its back): exit 1, restored. */
static void test_cli_pty__broken_stream_restores(void **state)
{
	h_ctx *h = *state;
	char path[128];
	long st = 0;
	term t;

	shell(&t, h, 24, 80);
	assert_raw(&t);
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", g_id);
	json_decref(h_http(h, "POST", path, "{}", &st, NULL));
	assert_int_equal(st, 204);
	assert_int_equal(term_exit(&t), 1);
	assert_restored(&t);
	if (!strstr(t.buf, "sandbox-e2b exec: "))
		fail_msg("no error message: %s", t.buf);
	term_close(&t);
	free(h_sh(h, g_id, "true")); /* resumed for the tests after */
}

/* -t alone: a command on a terminal, stdin not read; usage errors before any request. */
static void test_cli_pty__tty_without_input_and_usage(void **state)
{
	h_ctx *h = *state;
	const char *argv[] = {"exec", "-t", g_id, "tty; exit 3", NULL};
	const char *bad[] = {"exec", "-t", "--background", g_id, "true", NULL};
	term t;

	term_start(&t, h, 24, 80, argv);
	assert_int_equal(term_exit(&t), 3);
	assert_non_null(strstr(t.buf, "/dev/pts/"));
	assert_restored(&t);
	term_close(&t);
	term_start(&t, h, 24, 80, bad);
	assert_int_equal(term_exit(&t), 2);
	assert_non_null(strstr(t.buf, "--tty does not go with --background"));
	term_close(&t);
}

/* ---- serve: pty_start, pty_resize, pty_input, pty_wait, output notifications ---------------- */

typedef struct serve_proc_t {
	pid_t pid;
	int in, out;
	char buf[256 * 1024];
	size_t len;
} serve_proc_t;

static void serve_start(serve_proc_t *s, h_ctx *h)
{
	int in[2], out[2];
	const char *cli = getenv("SBX_CLI_BIN");

	memset(s, 0, sizeof(*s));
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		child_env(h);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(cli, cli, "serve", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->in = in[1];
	s->out = out[0];
}

static void serve_send(serve_proc_t *s, const char *line)
{
	size_t n = strlen(line);
	assert_int_equal(write(s->in, line, n), (ssize_t)n);
	assert_int_equal(write(s->in, "\n", 1), 1);
}

/* The response line of request `id`, parsed (waits for it). */
static json_t *serve_response(serve_proc_t *s, int id)
{
	uint64_t until = h_now_ms() + GUARD_MS;
	char want[32];

	snprintf(want, sizeof(want), "\"id\":%d,", id);
	for (;;) {
		char *line = s->buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (strstr(line, want) && !strstr(line, "\"method\"")) {
				json_t *j = json_loads(line, 0, NULL);
				*nl = '\n';
				return j;
			}
			*nl = '\n';
			line = nl + 1;
		}
		struct pollfd p = {s->out, POLLIN, 0};
		if (h_now_ms() > until)
			fail_msg("no response %d from serve: '%s'", id, s->buf);
		if (poll(&p, 1, 200) > 0) {
			ssize_t n = read(s->out, s->buf + s->len, sizeof(s->buf) - 1 - s->len);
			assert_true(n > 0);
			s->len += (size_t)n;
			s->buf[s->len] = '\0';
		}
	}
}

/* The "pty" output notifications of request `id`, concatenated (data as text). */
static void serve_pty_output(serve_proc_t *s, char *out, size_t cap)
{
	char *line = s->buf, *nl;
	size_t n = 0;

	out[0] = '\0';
	while ((nl = strchr(line, '\n'))) {
		*nl = '\0';
		json_t *j = json_loads(line, 0, NULL);
		*nl = '\n';
		json_t *p = json_object_get(j, "params");
		if (j && json_is_string(json_object_get(j, "method")) &&
		    strcmp(json_string_value(json_object_get(j, "method")), "output") == 0 &&
		    strcmp(json_string_value(json_object_get(p, "stream")), "pty") == 0 &&
		    json_is_string(json_object_get(p, "data"))) {
			const char *d = json_string_value(json_object_get(p, "data"));
			n += (size_t)snprintf(out + n, cap - n, "%s", d);
		}
		json_decref(j);
		line = nl + 1;
	}
}

static void test_cli_pty__serve_pty_methods(void **state)
{
	h_ctx *h = *state;
	serve_proc_t s;
	char line[512], out[8192];
	json_t *r;
	int status;

	serve_start(&s, h);
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pty_start\",\"params\":{\"id\":\"%s\","
	         "\"command\":\"read x; echo \\\"got:$x\\\"; stty size; exit 6\",\"cols\":90,"
	         "\"rows\":20}}",
	         g_id);
	serve_send(&s, line);
	r = serve_response(&s, 1);
	json_t *res = json_object_get(r, "result");
	assert_non_null(res);
	assert_string_equal(json_string_value(json_object_get(res, "id")), g_id);
	json_int_t pid = json_integer_value(json_object_get(res, "pid"));
	assert_true(pid > 0);
	json_decref(r);
	snprintf(
	    line, sizeof(line),
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"pty_resize\",\"params\":{\"id\":\"%s\","
	    "\"pid\":%lld,\"cols\":101,\"rows\":33}}",
	    g_id, (long long)pid);
	serve_send(&s, line);
	r = serve_response(&s, 2);
	assert_true(json_is_true(json_object_get(json_object_get(r, "result"), "ok")));
	json_decref(r);
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"pty_input\",\"params\":{\"id\":\"%s\","
	         "\"pid\":%lld,\"data\":\"hi\\r\"}}",
	         g_id, (long long)pid);
	serve_send(&s, line);
	r = serve_response(&s, 3);
	assert_true(json_is_true(json_object_get(json_object_get(r, "result"), "ok")));
	json_decref(r);
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"pty_wait\",\"params\":{\"id\":\"%s\","
	         "\"pid\":%lld}}",
	         g_id, (long long)pid);
	serve_send(&s, line);
	r = serve_response(&s, 4);
	res = json_object_get(r, "result");
	assert_int_equal(json_integer_value(json_object_get(res, "exit_code")), 6);
	assert_true(json_is_false(json_object_get(res, "timed_out")));
	assert_true(json_is_false(json_object_get(res, "killed")));
	json_decref(r);
	/* output came before the wait's answer, under pty_start's id */
	serve_pty_output(&s, out, sizeof(out));
	assert_non_null(strstr(out, "hi\r\ngot:hi\r\n33 101\r\n"));
	/* a pid this server does not hold; a size of 0 */
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"pty_input\",\"params\":{\"id\":\"%s\","
	         "\"pid\":%lld,\"data\":\"x\"}}",
	         g_id, (long long)pid);
	serve_send(&s, line);
	r = serve_response(&s, 5);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
	                 -32602);
	json_decref(r);
	serve_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"pty_start\",\"params\":{\"id\":"
	               "\"x\",\"cols\":0}}");
	r = serve_response(&s, 6);
	json_t *e = json_object_get(r, "error");
	assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
	assert_string_equal(json_string_value(json_object_get(e, "message")),
	                    "params.cols must be an integer from 1 to 65535");
	json_decref(r);
	close(s.in); /* EOF: shutdown */
	assert_int_equal(waitpid(s.pid, &status, 0), s.pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(s.out);
}

/* Read serve's output until it holds `needle` (guarded). */
static void serve_wait_text(serve_proc_t *s, const char *needle)
{
	uint64_t until = h_now_ms() + GUARD_MS;
	while (!strstr(s->buf, needle)) {
		struct pollfd p = {s->out, POLLIN, 0};
		if (h_now_ms() > until)
			fail_msg("no '%s' from serve: '%s'", needle, s->buf);
		if (poll(&p, 1, 200) > 0) {
			ssize_t n = read(s->out, s->buf + s->len, sizeof(s->buf) - 1 - s->len);
			assert_true(n > 0);
			s->len += (size_t)n;
			s->buf[s->len] = '\0';
		}
	}
}

/* serve's watch: events as watch_event notifications until the call is cancelled. */
static void test_cli_pty__serve_watch(void **state)
{
	h_ctx *h = *state;
	serve_proc_t s;
	char line[512];
	int status;

	free(h_sh(h, g_id, "mkdir -p /workspace/sw"));
	h_reset(h);
	serve_start(&s, h);
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"watch\",\"params\":{\"id\":\"%s\","
	         "\"path\":\"/workspace/sw\"}}",
	         g_id);
	serve_send(&s, line);
	/* envd watches (its start frame came): changes from now on are seen */
	serve_wait_text(&s,
	                "{\"jsonrpc\":\"2.0\",\"method\":\"watch_started\",\"params\":{\"id\":1,"
	                "\"path\":\"/workspace/sw\"}}\n");
	h_wait_requests(h, "POST", "/filesystem.Filesystem/WatchDir", 1, GUARD_MS);
	free(h_sh(h, g_id, "mkdir /workspace/sw/new"));
	serve_wait_text(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"watch_event\",\"params\":{\"id\":1,"
	                    "\"op\":\"create\",\"name\":\"new\"}}\n");
	serve_send(&s,
	           "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}}");
	json_t *r = serve_response(&s, 1);
	json_t *res = json_object_get(r, "result");
	assert_true(json_is_true(json_object_get(res, "ok")));
	assert_string_equal(json_string_value(json_object_get(res, "path")), "/workspace/sw");
	assert_int_equal(json_integer_value(json_object_get(res, "events")), 1);
	json_decref(r);
	/* a path that is no directory: the call's error */
	serve_send(&s,
	           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"watch\",\"params\":{\"id\":\"x\","
	           "\"path\":\"rel\"}}");
	r = serve_response(&s, 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
	                 -32000);
	json_decref(r);
	/* a refused check: its reason as data (docs/watch.md "Errors") */
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"watch\",\"params\":{\"id\":\"%s\","
	         "\"path\":\"/workspace/sw-none\"}}",
	         g_id);
	serve_send(&s, line);
	r = serve_response(&s, 3);
	char *got = json_dumps(json_object_get(r, "error"), JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(got, "{\"code\":-32000,\"data\":{\"code\":\"sandbox\",\"e2b_code\":"
	                         "\"not_found\"},\"message\":\"cannot watch /workspace/sw-none: no "
	                         "such directory\"}");
	free(got);
	json_decref(r);
	close(s.in);
	assert_int_equal(waitpid(s.pid, &status, 0), s.pid);
	assert_true(WIFEXITED(status));
	close(s.out);
}

/* `sandbox-e2b watch`: one line per event; Ctrl-C (SIGINT) ends it with 130. */
static void test_cli_pty__cli_watch(void **state)
{
	h_ctx *h = *state;
	const char *argv[] = {"watch", g_id, "/workspace/cw", "--recursive", NULL};
	term t;

	free(h_sh(h, g_id, "mkdir -p /workspace/cw/d"));
	h_reset(h);
	term_start(&t, h, 24, 80, argv);
	term_wait_from(&t, 0, "watching /workspace/cw and below (Ctrl-C ends)\r\n");
	free(h_sh(h, g_id, "touch /workspace/cw/d/f"));
	term_wait_from(&t, 0, "\r\ncreate d/f\r\n");
	kill(t.pid, SIGINT);
	assert_int_equal(term_exit(&t), 130);
	term_close(&t);
}

/* write ID PATH FILE PATH FILE (one upload) and serve's write_files. */
static void test_cli_pty__write_many(void **state)
{
	h_ctx *h = *state;
	char dir[] = "/tmp/cli-pty-XXXXXX", a[64], b[64], line[512];
	serve_proc_t s;
	term t;
	int status;

	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	FILE *fa = fopen(a, "w"), *fb = fopen(b, "w");
	fputs("alpha\n", fa);
	fputs("be", fb);
	fclose(fa);
	fclose(fb);
	h_reset(h);
	const char *argv[] = {"write", g_id, "/workspace/wm/a", a, "/workspace/wm/b", b, NULL};
	term_start(&t, h, 24, 80, argv);
	assert_int_equal(term_exit(&t), 0);
	assert_non_null(strstr(t.buf, "wrote 2 files, 8 bytes\r\n"));
	term_close(&t);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/files$"), 1);
	json_decref(log);
	char *out = h_sh(h, g_id, "cat /workspace/wm/a /workspace/wm/b");
	assert_string_equal(out, "alpha\nbe");
	free(out);
	const char *odd[] = {"write", g_id, "/workspace/wm/a", a, "/workspace/wm/c", NULL};
	term_start(&t, h, 24, 80, odd);
	assert_int_equal(term_exit(&t), 2);
	assert_non_null(strstr(t.buf, "'/workspace/wm/c' has no FILE"));
	term_close(&t);
	unlink(a);
	unlink(b);
	rmdir(dir);

	serve_start(&s, h);
	snprintf(line, sizeof(line),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"write_files\",\"params\":{\"id\":"
	         "\"%s\",\"files\":[{\"path\":\"/workspace/ws/x\",\"data\":\"xx\"},{\"path\":"
	         "\"/workspace/ws/y\",\"data_b64\":\"AP8=\"}]}}",
	         g_id);
	serve_send(&s, line);
	json_t *r = serve_response(&s, 1);
	char *got = json_dumps(json_object_get(r, "result"), JSON_COMPACT);
	assert_string_equal(got, "{\"ok\":true,\"files\":2,\"bytes\":4}");
	free(got);
	json_decref(r);
	close(s.in);
	assert_int_equal(waitpid(s.pid, &status, 0), s.pid);
	close(s.out);
	out = h_sh(h, g_id, "cat /workspace/ws/x; od -An -tx1 /workspace/ws/y");
	assert_string_equal(out, "xx 00 ff\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cli_pty__tty_size_resize_and_ctrl_d),
	    cmocka_unit_test(test_cli_pty__ctrl_c_and_exit_code),
	    cmocka_unit_test(test_cli_pty__remote_killed_restores_the_terminal),
	    cmocka_unit_test(test_cli_pty__sigterm_restores_and_kills),
	    cmocka_unit_test(test_cli_pty__sighup_restores),
	    cmocka_unit_test(test_cli_pty__broken_stream_restores),
	    cmocka_unit_test(test_cli_pty__tty_without_input_and_usage),
	    cmocka_unit_test(test_cli_pty__serve_pty_methods),
	    cmocka_unit_test(test_cli_pty__serve_watch),
	    cmocka_unit_test(test_cli_pty__cli_watch),
	    cmocka_unit_test(test_cli_pty__write_many),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("cli_pty", tests, setup, teardown);
}
