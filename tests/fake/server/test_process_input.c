/*
 * tests/fake/server/test_process_input.c: SendInput to a process that does not read, and a
 * terminal's size as envd's protobuf JSON reads it (fake-e2b/README.md "envd"). Before, a
 * SendInput a process never read held the process's input lock until the process read, ended
 * or the server stopped, so an Update of the same terminal waited behind it, and its client's
 * leaving did not end it; a non-integer cols or rows was taken as 0; a /dev/ptmx box root
 * pointed elsewhere gave the next terminal from the host's devpts.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"

#define KEY "e2b_process_input_test_key"

static const char *g_bin;

/* In a child process: a Start of `sh -c line` as `auth` (a Basic user), with a terminal when
 * pty, its stream held until the process ends; the child's pid. */
static pid_t start_stream_as(fks *s, fks_box *b, const char *line, bool pty, const char *auth)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	json_t *m = json_pack("{s:{s:s,s:[s,s]},s:b}", "process", "cmd", "/bin/sh", "args", "-c",
	                      line, "stdin", 1);
	if (pty)
		json_object_set_new(m, "pty",
		                    json_pack("{s:{s:i,s:i}}", "size", "cols", 80, "rows", 24));
	char *js = json_dumps(m, JSON_COMPACT);
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/connect+json", auth, NULL};
	fks_call c = {NULL, "POST", "/process.Process/Start", h, env, n, NULL, 120000};
	fkr_free(fks_do(s, &c));
	_exit(0);
}

static pid_t start_stream(fks *s, fks_box *b, const char *line, bool pty)
{
	return start_stream_as(s, b, line, pty, "Authorization: Basic cm9vdDo=");
}

/* A unary envd process RPC as root: the answer. */
static fkr *rpc(fks *s, fks_box *b, const char *name, const char *body, long ms)
{
	char path[96];
	snprintf(path, sizeof(path), "/process.Process/%s", name);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fks_call c = {NULL, "POST", path, h, body, strlen(body), NULL, ms};
	return fks_do(s, &c);
}

/* The pid of the sandbox's only process, once it is listed (30 s at most). */
static unsigned the_pid(fks *s, fks_box *b)
{
	for (long t0 = fk_mono_ms(); fk_mono_ms() - t0 < 30000; fk_sleep_ms(20)) {
		fkr *r = rpc(s, b, "List", "{}", 0);
		assert_int_equal(r->status, 200);
		json_t *v = json_array_get(json_object_get(r->json, "processes"), 0);
		unsigned pid = (unsigned)json_integer_value(json_object_get(v, "pid"));
		fkr_free(r);
		if (pid)
			return pid;
	}
	fail_msg("the process was not listed");
	return 0;
}

/* A SendInput of `bytes` bytes ('x') on a raw connection, its body sent whole: the socket
 * (the answer waits on the process). */
static int send_input_raw(fks *s, fks_box *b, unsigned pid, const char *field, size_t bytes)
{
	size_t b64 = (bytes + 2) / 3 * 4, cap = b64 + 128;
	char *js = malloc(cap);
	assert_non_null(js);
	int o = snprintf(js, cap, "{\"process\":{\"pid\":%u},\"input\":{\"%s\":\"", pid, field);
	for (size_t i = 0; i < b64; i += 4)
		memcpy(js + o + i, "eHh4", 4); /* "xxx" */
	o += (int)b64;
	o += snprintf(js + o, cap - (size_t)o, "\"}}");
	char head[512];
	int hn =
	    snprintf(head, sizeof(head),
	             "POST /process.Process/SendInput HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\n"
	             "Content-Type: application/json\r\nAuthorization: Basic cm9vdDo=\r\n"
	             "Content-Length: %d\r\n\r\n",
	             b->hid, b->htok, o);
	int fd = fks_tcp_connect(s->port, false, 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, (size_t)hn), hn);
	for (int w = 0, n; w < o; w += n)
		assert_true((n = (int)write(fd, js + w, (size_t)(o - w))) > 0);
	free(js);
	return fd;
}

/* Runs `line` in b until it exits 0, 30 s at most: whether it did. */
static bool box_wait(fks *s, fks_box *b, const char *line)
{
	for (long t0 = fk_mono_ms(); fk_mono_ms() - t0 < 30000; fk_sleep_ms(20))
		if (fks_box_run(s, b, line))
			return true;
	return false;
}

/* The server's threads once they have not changed for 500 ms. */
static long settled_threads(pid_t pid)
{
	long base = fks_threads(pid);
	for (long t = fk_mono_ms(), n; fk_mono_ms() - t < 500; fk_sleep_ms(20))
		if ((n = fks_threads(pid)) != base)
			base = n, t = fk_mono_ms();
	return base;
}

/* A terminal whose process took one byte and reads no more, 1 MiB typed into it: an Update of
 * its size is answered at once (before: it waited on the input lock the write held). */
static void test_process_input__update_is_not_held_by_unread_input(void **unused)
{
	(void)unused;
	fks s;
	fks_box b;
	fks_start_key(&s, g_bin, KEY, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	pid_t stream = start_stream(
	    &s, &b, "stty raw -echo; dd bs=1 count=1 of=/tmp/got 2>/dev/null; exec sleep 600",
	    true);
	unsigned pid = the_pid(&s, &b);
	int in = send_input_raw(&s, &b, pid, "pty", 1 << 20);
	assert_true(box_wait(&s, &b, "test -s /tmp/got")); /* the write is under way */
	char js[128];
	snprintf(js, sizeof(js),
	         "{\"process\":{\"pid\":%u},\"pty\":{\"size\":{\"cols\":100,"
	         "\"rows\":40}}}",
	         pid);
	long t0 = fk_mono_ms();
	fkr *r = rpc(&s, &b, "Update", js, 10000);
	print_message("Update: %ld in %ld ms\n", r->status, fk_mono_ms() - t0);
	assert_int_equal(r->status, 200); /* before: no answer within 10 s */
	fkr_free(r);
	close(in);
	fks_box_delete(&s, KEY, &b);
	int st;
	assert_int_equal(waitpid(stream, &st, 0), stream);
	assert_int_equal(fks_stop(&s), 0);
}

/* A process that took one byte of its stdin and reads no more, 1 MiB sent to it; the client
 * closes its connection: the write ends (its connection's thread goes) without waiting for the
 * process. Before: it stayed until the process read, ended or the server stopped. */
static void test_process_input__input_ends_when_its_client_leaves(void **unused)
{
	(void)unused;
	fks s;
	fks_box b;
	fks_start_key(&s, g_bin, KEY, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	pid_t stream =
	    start_stream(&s, &b, "dd bs=1 count=1 of=/tmp/got 2>/dev/null; exec sleep 600", false);
	unsigned pid = the_pid(&s, &b);
	long base = settled_threads(s.pid);
	int in = send_input_raw(&s, &b, pid, "stdin", 1 << 20);
	assert_true(box_wait(&s, &b, "test -s /tmp/got"));
	assert_true(settled_threads(s.pid) > base); /* the SendInput's connection waits */
	close(in);
	long threads = 0, t0 = fk_mono_ms();
	while ((threads = fks_threads(s.pid)) > base && fk_mono_ms() - t0 < 20000)
		fk_sleep_ms(50);
	print_message("%ld threads (%ld before) %ld ms after the close\n", threads, base,
	              fk_mono_ms() - t0);
	assert_true(threads <= base);
	/* the process's stdin still takes a CloseStdin (the lock is free) */
	char js[64];
	snprintf(js, sizeof(js), "{\"process\":{\"pid\":%u}}", pid);
	fkr *r = rpc(&s, &b, "CloseStdin", js, 10000);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	fks_box_delete(&s, KEY, &b);
	int st;
	assert_int_equal(waitpid(stream, &st, 0), stream);
	assert_int_equal(fks_stop(&s), 0);
}

/* Update's and Start's cols and rows as protobuf JSON's uint32 (envd's codec): a whole number,
 * also written 80.0 or 8e1 or in a string ("80"); 80.5, "80x", " 80", -1, true and 65536 are
 * invalid_argument. Before: a non-integer was taken as 0. */
static void test_process_input__pty_sizes_are_protobuf_uint32s(void **unused)
{
	(void)unused;
	fks s;
	fks_box b;
	fks_start_key(&s, g_bin, KEY, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	pid_t stream = start_stream(&s, &b, "exec sleep 600", true);
	unsigned pid = the_pid(&s, &b);
	static const struct {
		const char *cols;
		bool ok;
	} cases[] = {{"100", true},   {"100.0", true},  {"1e2", true},      {"\"100\"", true},
	             {"null", true},  {"100.5", false}, {"\"80x\"", false}, {"\" 80\"", false},
	             {"-1", false},   {"true", false},  {"65536", false},   {"\"1e30\"", false},
	             {"\"\"", false}, {"{}", false}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char js[160];
		snprintf(js, sizeof(js),
		         "{\"process\":{\"pid\":%u},\"pty\":{\"size\":{\"cols\":%s,\"rows\":30}}}",
		         pid, cases[i].cols);
		fkr *r = rpc(&s, &b, "Update", js, 10000);
		print_message("cols %s: %ld %s\n", cases[i].cols, r->status,
		              r->body ? r->body : "");
		if (cases[i].ok) {
			assert_int_equal(r->status, 200);
		} else {
			assert_int_not_equal(r->status, 200);
			assert_non_null(strstr(r->body, "invalid_argument"));
		}
		fkr_free(r);
	}
	/* Start reads them the same way: 80.5 is refused in the stream's end */
	const char *js = "{\"process\":{\"cmd\":\"/bin/true\"},\"pty\":{\"size\":{\"cols\":80.5,"
	                 "\"rows\":24}}}";
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b.hid, b.htok, "Content-Type: application/connect+json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fks_call c = {NULL, "POST", "/process.Process/Start", h, env, n, NULL, 30000};
	fkr *r = fks_do(&s, &c);
	free(env);
	print_message("Start with cols 80.5: %ld %.*s\n", r->status, (int)r->len, r->body);
	assert_non_null(memmem(r->body, r->len, "invalid_argument", 16));
	assert_null(memmem(r->body, r->len, "\"start\"", 7)); /* nothing started */
	fkr_free(r);
	fks_box_delete(&s, KEY, &b);
	int st;
	assert_int_equal(waitpid(stream, &st, 0), stream);
	assert_int_equal(fks_stop(&s), 0);
}

/* Box root owns /dev and may point /dev/ptmx anywhere: at a directory, or at a FIFO. Before,
 * the server followed it, and when the open failed (a directory) it took the host's
 * /dev/ptmx: the process's terminal was a host pty whose slave the server gave to the box
 * user's id as the host reads it (uid 1000: another host user, who could then read what is
 * typed into it and write to it); a FIFO failed the Start. Now the terminal comes from the
 * box's own devpts whatever /dev/ptmx is, its slave owned by the user as the box sees it. */
static void test_process_input__a_box_cannot_redirect_its_terminals(void **unused)
{
	(void)unused;
	fks s;
	fks_box b;
	fks_start_key(&s, g_bin, KEY, NULL);
	fks_box_create(&s, KEY, NULL, &b);
	static const char *const plant[] = {"mkdir /dev/ptmx", "mkfifo /dev/ptmx",
	                                    "ln -s /dev/tty /dev/ptmx"};
	for (size_t i = 0; i < sizeof(plant) / sizeof(plant[0]); i++) {
		char line[160];
		snprintf(line, sizeof(line), "rm -rf /dev/ptmx /tmp/r && %s", plant[i]);
		fks_box_sh(&s, &b, line);
		pid_t stream = start_stream_as(
		    &s, &b,
		    "t=/proc/self/fd/0; if [ \"$(stat -L -c %d $t)\" = \"$(stat -c %d "
		    "/dev/pts/ptmx)\" "
		    "] && [ \"$(stat -L -c %U $t)\" = user ]; then echo ok > /tmp/r; else "
		    "stat -L -c '%d %U' $t > /tmp/r; fi",
		    true, "Authorization: Basic dXNlcjo="); /* user: */
		int st;
		assert_int_equal(waitpid(stream, &st, 0), stream);
		bool ok = fks_box_run(&s, &b, "grep -qx ok /tmp/r");
		print_message("/dev/ptmx by `%s`: %s\n", plant[i],
		              ok ? "the box's own pty" : "not");
		assert_true(ok);
	}
	fks_box_sh(&s, &b, "rm -rf /dev/ptmx && ln -s pts/ptmx /dev/ptmx");
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_process_input__update_is_not_held_by_unread_input),
	    cmocka_unit_test(test_process_input__input_ends_when_its_client_leaves),
	    cmocka_unit_test(test_process_input__pty_sizes_are_protobuf_uint32s),
	    cmocka_unit_test(test_process_input__a_box_cannot_redirect_its_terminals),
	};
	return cmocka_run_group_tests_name("fake_process_input", tests, NULL, NULL);
}
