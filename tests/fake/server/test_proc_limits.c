/*
 * tests/fake/server/test_proc_limits.c: what a sandbox's started processes cost the server
 * outside the box's limits (fake-e2b/README.md "The server's defences"). Every Start holds
 * server fds (its pipes, pidfd, wake-up) while it runs, so Starts in background reach the
 * server's fd limit. Before, a Start refused there (or refused before its plan was built: a
 * paused box) closed the server's fd 0 and leaked the box's pids reserve file: once fd 0 had
 * been reused, each such refusal closed a descriptor of someone else's (a connection, another
 * process's pipe), and libmicrohttpd aborted the server ("Close socket failed"). And output
 * nobody listens to was read as fast as the box wrote it: the server's CPU, outside the box's
 * limit, about as much as the box spent writing; now it is read in ticks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"

#define KEY "e2b_proc_limits_test_key"

static const char *g_bin;
static char g_refusal[512]; /* the last refused Start's "message":"..." */

/* The open fds of process pid. */
static int fd_count(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(p);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* What fd 0 of process pid names ("" when it is closed). */
static void fd0_of(pid_t pid, char *out, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd/0", (int)pid);
	ssize_t n = readlink(p, out, cap - 1);
	out[n > 0 ? n : 0] = 0;
}

/* A Start of `sh -c line` as root whose client leaves once the answer's first message is in:
 * 1 when the process started, 0 when the Start was refused, -1 when it was not answered. */
static int start_and_leave(fks *s, fks_box *b, const char *line)
{
	json_t *m = json_pack("{s:{s:s,s:[s,s]}}", "process", "cmd", "/bin/sh", "args", "-c", line);
	char *js = json_dumps(m, JSON_COMPACT);
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	char head[1024];
	int hn = snprintf(head, sizeof(head),
	                  "POST /process.Process/Start HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\n"
	                  "Content-Type: application/connect+json\r\n"
	                  "Authorization: Basic cm9vdDo=\r\nContent-Length: %zu\r\n\r\n",
	                  b->hid, b->htok, n);
	int fd = fks_tcp_connect(s->port, false, 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, (size_t)hn), hn);
	assert_int_equal(write(fd, env, n), (ssize_t)n);
	char buf[8192];
	size_t got = 0;
	int started = -1;
	while (started < 0 && got < sizeof(buf) - 1) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 60000) != 1)
			break;
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = 0;
		/* the envelopes' NUL bytes: memmem, not strstr */
		if (memmem(buf, got, "\"start\"", 7))
			started = 1;
		else if (memmem(buf, got, "\"error\"", 7) || memmem(buf, got, "HTTP/1.1 5", 10))
			started = 0;
	}
	if (started <= 0) {
		char *e = memmem(buf, got, "\"message\"", 9);
		snprintf(g_refusal, sizeof(g_refusal), "%.*s", e ? (int)strcspn(e, "}") : (int)got,
		         e ? e : buf);
		print_message("refused: %s\n", g_refusal);
	}
	close(fd);
	free(env);
	free(js);
	json_decref(m);
	return started; /* -1, no answer at all: the server had no fd left for the connection */
}

/* A server (ephemeral) under `ulimit -n 256`, its fd 0 /dev/null; tmp: its wrapper's dir. */
static void start_nofile_256(fks *s, char tmp[64])
{
	snprintf(tmp, 64, "/var/tmp/fk-proclim-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	char wrapper[96];
	snprintf(wrapper, sizeof(wrapper), "%s/nofile.sh", tmp);
	FILE *w = fopen(wrapper, "w");
	assert_non_null(w);
	fprintf(w, "#!/bin/sh\nulimit -n 256 || exit 1\nexec '%s' \"$@\" </dev/null\n", g_bin);
	fclose(w);
	assert_int_equal(chmod(wrapper, 0700), 0);
	static const char *const flags[] = {"--quiet",           "--api-key", KEY,
	                                    "--sandbox-disk-mb", "64",        NULL};
	assert_int_equal(fks_start(s, wrapper, flags), 0);
}

static void stop_and_clean(fks *s, const char *tmp)
{
	assert_int_equal(fks_stop(s), 0);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

static void test_proc_limits__a_start_at_the_fd_limit_closes_none_of_the_servers(void **unused)
{
	(void)unused;
	fks_need_root();
	/* a limit idle connections reach (16 processes at most: fd limit / 16) */
	char tmp[64];
	fks s;
	start_nofile_256(&s, tmp);
	char fd0[PATH_MAX];
	fd0_of(s.pid, fd0, sizeof(fd0));
	assert_string_equal(fd0, "/dev/null");
	int base = fd_count(s.pid);
	fks_box b;
	fks_box_create(&s, KEY, NULL, &b);
	for (int i = 0; i < 8; i++)
		assert_int_equal(start_and_leave(&s, &b, "exec sleep 600"), 1);
	/* Each idle connection the server holds takes one more of its fds: one more before each
	 * Start of `true` until a Start has no answer (no fd for its connection), so that the
	 * Starts before are refused at every step, down to the first open of the plan. A refused
	 * Start frees what it took. */
	int idle[300], n_idle = 0, started = 0, refused = 0, last = 1;
	while (last >= 0 && n_idle < 300) {
		idle[n_idle] = fks_tcp_connect(s.port, false, 0);
		assert_true(idle[n_idle] >= 0);
		n_idle++;
		last = start_and_leave(&s, &b, "true");
		started += last == 1;
		refused += last == 0;
	}
	for (int i = 0; i < n_idle; i++)
		close(idle[i]);
	fd0_of(s.pid, fd0, sizeof(fd0));
	print_message("%d Starts ran, %d refused at the fd limit (%d idle connections); the "
	              "server's fd 0: '%s'\n",
	              started, refused, n_idle, fd0);
	assert_true(refused >= 6);
	assert_true(started > 10);
	assert_string_equal(fd0, "/dev/null"); /* before: closed, then reused and closed again */
	fkr *r =
	    fks_req(&s, "GET", "/sandboxes", (const char *[]){"X-API-Key: " KEY, NULL}, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	/* the sandbox gone, the server holds what it held before it: nothing leaked */
	fks_box_delete(&s, KEY, &b);
	int now = fd_count(s.pid);
	for (long t0 = fk_mono_ms(); now != base && fk_mono_ms() - t0 < 30000; fk_sleep_ms(50))
		now = fd_count(s.pid);
	print_message("server fds: %d before the sandbox, %d after its deletion\n", base, now);
	stop_and_clean(&s, tmp);
	assert_int_equal(now, base); /* before: one more per Start refused at the cgroup files */
}

/* The server's CPU time so far (utime + stime), in ms. */
static long cpu_ms(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	char *e = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	assert_non_null(e);
	assert_int_equal(
	    sscanf(e + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

/* A file of the box (GET /files as root): its text (the caller frees it). */
static char *box_file(fks *s, fks_box *b, const char *path)
{
	char q[256];
	snprintf(q, sizeof(q), "/files?path=%s&username=root", path);
	const char *h[] = {b->hid, b->htok, NULL};
	fkr *r = fks_req(s, "GET", q, h, NULL, 0);
	assert_int_equal(r->status, 200);
	char *t = strndup(r->body, r->len);
	fkr_free(r);
	return t;
}

/* Reads while nobody listens, at most, and what the box may still have in its pipe. Until the
 * server has seen the Start's client leave, its subscriber takes a queue's worth (1 MiB) and
 * the connection what it sends before its write fails (fake-e2b/runtime/proc_pump.c). */
#define UNHEARD_READS_PER_TICK 4
#define UNHEARD_TICK_MS        10
#define CHUNK                  32768
#define PIPE_HOLDS             65536
#define HEARD_FIRST            (2 * 1048576)

static void test_proc_limits__output_nobody_listens_to_is_read_in_ticks(void **unused)
{
	(void)unused;
	fks_need_root();
	fks s;
	fks_start_key(&s, g_bin, KEY, (const char *const[]){"--sandbox-disk-mb", "64", NULL});
	fks_box b;
	fks_box_create(&s, KEY, NULL, &b);
	long cpu0 = cpu_ms(s.pid);
	/* dd writes to the Start's stdout, whose client has left; SIGINT makes it say how much */
	assert_int_equal(
	    start_and_leave(&s, &b,
	                    "s=$(date +%s%N); timeout -s INT 2 dd if=/dev/zero bs=32k "
	                    "2>/tmp/dd.txt; e=$(date +%s%N); "
	                    "echo $(( (e - s) / 1000000 )) >/tmp/ms.txt; : >/tmp/done"),
	    1);
	fks_box_sh(&s, &b, "while [ ! -e /tmp/done ]; do sleep 0.05; done");
	long cpu = cpu_ms(s.pid) - cpu0;
	char *dd = box_file(&s, &b, "/tmp/dd.txt"), *ms_txt = box_file(&s, &b, "/tmp/ms.txt");
	long long bytes = -1, ms = atoll(ms_txt);
	/* dd's last line: "N bytes (...) copied, ..." */
	char *last = strstr(dd, " bytes");
	while (last && strstr(last + 1, " bytes"))
		last = strstr(last + 1, " bytes");
	if (last) {
		char *d = last;
		while (d > dd && d[-1] >= '0' && d[-1] <= '9')
			d--;
		bytes = atoll(d);
	}
	long long most =
	    (ms / UNHEARD_TICK_MS + 2) * UNHEARD_READS_PER_TICK * CHUNK + PIPE_HOLDS + HEARD_FIRST;
	print_message("dd wrote %lld bytes in %lld ms nobody listened to (at most %lld read); the "
	              "server spent %ld ms of CPU\n",
	              bytes, ms, most, cpu);
	free(dd);
	free(ms_txt);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
	assert_true(ms >= 1900);
	assert_true(bytes > 0);
	assert_true(bytes <= most); /* before: as fast as dd writes, gigabytes */
}

/* The pid of the sandbox's oldest listed process. */
static unsigned a_pid(fks *s, fks_box *b)
{
	const char *h[] = {b->hid, b->htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fkr *r = fks_req(s, "POST", "/process.Process/List", h, "{}", 2);
	assert_int_equal(r->status, 200);
	json_t *v = json_array_get(json_object_get(r->json, "processes"), 0);
	unsigned pid = (unsigned)json_integer_value(json_object_get(v, "pid"));
	fkr_free(r);
	assert_true(pid > 0);
	return pid;
}

static void test_proc_limits__the_servers_processes_are_capped_by_its_fd_limit(void **unused)
{
	(void)unused;
	fks_need_root();
	char tmp[64];
	fks s;
	start_nofile_256(&s, tmp);
	fks_box b;
	fks_box_create(&s, KEY, NULL, &b);
	for (int i = 0; i < 16; i++) /* 256 / 16 */
		assert_int_equal(start_and_leave(&s, &b, "exec sleep 600"), 1);
	assert_int_equal(start_and_leave(&s, &b, "exec sleep 600"), 0);
	assert_string_equal(g_refusal, "\"message\":\"the server runs 16 processes, the most its "
	                               "open-file limit (256) allows: wait for one to end\"");
	/* one ends: its slot is free once the server has seen its end */
	char js[96];
	snprintf(js, sizeof(js), "{\"process\":{\"pid\":%u},\"signal\":\"SIGNAL_SIGKILL\"}",
	         a_pid(&s, &b));
	const char *h[] = {b.hid, b.htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fkr *r = fks_req(&s, "POST", "/process.Process/SendSignal", h, js, strlen(js));
	assert_int_equal(r->status, 200);
	fkr_free(r);
	int got = 0;
	for (long t0 = fk_mono_ms(); got != 1 && fk_mono_ms() - t0 < 30000; fk_sleep_ms(50))
		got = start_and_leave(&s, &b, "exec sleep 600");
	assert_int_equal(got, 1);
	assert_int_equal(start_and_leave(&s, &b, "exec sleep 600"), 0);
	fks_box_delete(&s, KEY, &b);
	stop_and_clean(&s, tmp);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proc_limits__a_start_at_the_fd_limit_closes_none_of_the_servers),
	    cmocka_unit_test(test_proc_limits__output_nobody_listens_to_is_read_in_ticks),
	    cmocka_unit_test(test_proc_limits__the_servers_processes_are_capped_by_its_fd_limit),
	};
	return cmocka_run_group_tests_name("fake_proc_limits", tests, NULL, NULL);
}
