/*
 * tests/fake/server/test_restart.c: fake-e2b and its state directory (fake-e2b/README.md
 * "What survives what"): one server per directory (a second is refused naming the first's
 * pid, a crashed one does not block the next), the directory printed at start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"

static const char *g_bin;

/* A fresh directory for a test's state (removed by rm_state). */
static void new_state(char *out, size_t cap)
{
	snprintf(out, cap, "/var/tmp/fk-restart-XXXXXX");
	assert_non_null(mkdtemp(out));
}

static void rm_state(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

#define KEY "e2b_restart_test_key_0123456789"

/* small disks: each is reserved whole on /var/tmp, and a failed test leaves its directory */
static const char *const kept_flags[] = {"--quiet",           "--api-key", KEY,
                                         "--sandbox-disk-mb", "64",        NULL};

static fkr *api(fks *s, const char *method, const char *path, const char *body)
{
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	return fks_req(s, method, path, h, body, body ? strlen(body) : 0);
}

/* The sandbox's state as GET /sandboxes/{id} says it ("running", "paused"), or the status
 * when it is not 200 ("404"). */
static void state_of(fks *s, const char *id, char *out, size_t cap)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	fkr *r = api(s, "GET", path, NULL);
	if (r->status == 200)
		snprintf(out, cap, "%s", json_string_value(json_object_get(r->json, "state")));
	else
		snprintf(out, cap, "%ld", r->status);
	fkr_free(r);
}

static void assert_state(fks *s, const char *id, const char *want)
{
	char got[32];
	state_of(s, id, got, sizeof(got));
	assert_string_equal(got, want);
}

static void pause_box(fks *s, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	fkr *r = api(s, "POST", path, NULL);
	assert_int_equal(r->status, 204);
	fkr_free(r);
}

/* connect: 201 when it resumed it */
static long connect_box(fks *s, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	fkr *r = api(s, "POST", path, "{\"timeout\":120}");
	long st = r->status;
	fkr_free(r);
	return st;
}

static int count_listed(fks *s, const char *query)
{
	char path[128];
	snprintf(path, sizeof(path), "/v2/sandboxes%s", query);
	fkr *r = api(s, "GET", path, NULL);
	assert_int_equal(r->status, 200);
	int n = (int)json_array_size(r->json);
	fkr_free(r);
	return n;
}

/* envd with an explicit token (the one create gave, or another) */
static long envd_status_with(fks *s, fks_box *b, const char *token)
{
	char ht[200];
	snprintf(ht, sizeof(ht), "X-Access-Token: %s", token);
	const char *h[] = {b->hid, ht, NULL};
	fkr *r = fks_req(s, "GET", "/files?path=/workspace/keep.txt&username=root", h, NULL, 0);
	long st = r->status;
	fkr_free(r);
	return st;
}

/* The pids in the box's cgroups (freezer on v1, the box's directory on v2) of server `pid`, or
 * of a kept server's state directory (live restore: kept-<dir>). */
static int box_pids(pid_t server, const char *id, pid_t *out, int cap)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
	         "cat /sys/fs/cgroup/freezer/fake-e2b/rt-%d-*/%s/tasks "
	         "/sys/fs/cgroup/fake-e2b/rt-%d-*/%s/*/cgroup.procs "
	         "/sys/fs/cgroup/freezer/fake-e2b/kept-*/%s/tasks "
	         "/sys/fs/cgroup/fake-e2b/kept-*/%s/*/cgroup.procs 2>/dev/null",
	         (int)server, id, (int)server, id, id, id);
	FILE *f = popen(cmd, "r");
	int n = 0;
	for (int pid; f && n < cap && fscanf(f, "%d", &pid) == 1;)
		out[n++] = pid;
	if (f)
		pclose(f);
	return n;
}

static bool alive(pid_t pid)
{
	char path[64], st = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	int got = fscanf(f, "%*d (%*[^)]) %c", &st);
	fclose(f);
	return got == 1 && st != 'Z';
}

/* A running sandbox with /workspace/keep.txt holding `text`. */
static void box_with_file(fks *s, fks_box *b, const char *text)
{
	fks_box_create(s, KEY, "{\"templateID\":\"base\",\"timeout\":600}", b);
	char line[256];
	snprintf(line, sizeof(line), "mkdir -p /workspace && printf %%s '%s' > /workspace/keep.txt",
	         text);
	fks_box_sh(s, b, line);
}

static void assert_file(fks *s, fks_box *b, const char *text)
{
	char line[256];
	snprintf(line, sizeof(line), "test \"$(cat /workspace/keep.txt)\" = '%s'", text);
	assert_true(fks_box_run(s, b, line));
}

/* The server's log (after it stopped) has this line. */
static void assert_logged(fks *s, const char *line)
{
	if (!strstr(s->out, line))
		fail_msg("not in the server's log: '%s'\nlog:\n%s", line, s->out);
}

/* In a child process: Start `line` in b and return how the stream ended: exit 0 when it was
 * cut (a transfer error, no end event), 1 when it ended normally. */
static pid_t start_cut_stream(fks *s, fks_box *b, const char *line)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	json_t *m = json_pack("{s:{s:s,s:[s,s]}}", "process", "cmd", "/bin/sh", "args", "-c", line);
	char *js = json_dumps(m, JSON_COMPACT);
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/connect+json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fks_call c = {NULL, "POST", "/process.Process/Start", h, env, n, NULL, 120000};
	fkr *r = fks_do(s, &c);
	bool cut = r->curl_rc != 0 && !(r->body && memmem(r->body, r->len, "exit status", 11));
	_exit(cut ? 0 : 1);
}

/* process.Process/List of b: the number of processes it lists. */
static size_t listed_procs(fks *s, fks_box *b, unsigned *pid_out, char *cmd_out, size_t cap)
{
	const char *h[] = {b->hid, b->htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fkr *r = fks_req(s, "POST", "/process.Process/List", h, "{}", 2);
	assert_int_equal(r->status, 200);
	json_t *v = json_object_get(r->json, "processes");
	size_t n = json_array_size(v);
	if (n && pid_out)
		*pid_out =
		    (unsigned)json_integer_value(json_object_get(json_array_get(v, 0), "pid"));
	if (n && cmd_out) {
		json_t *args =
		    json_object_get(json_object_get(json_array_get(v, 0), "config"), "args");
		snprintf(cmd_out, cap, "%s", json_string_value(json_array_get(args, 1)));
	}
	fkr_free(r);
	return n;
}

/* process.Process/Connect to `pid` of b for at most `ms` (0: until its end): the body. */
static fkr *connect_proc(fks *s, fks_box *b, unsigned pid, long ms)
{
	char js[64];
	snprintf(js, sizeof(js), "{\"process\":{\"pid\":%u}}", pid);
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/connect+json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fks_call c = {NULL, "POST", "/process.Process/Connect", h, env, n, NULL, ms ? ms : 60000};
	fkr *r = fks_do(s, &c);
	free(env);
	return r;
}

static void kill_proc(fks *s, fks_box *b, unsigned pid)
{
	char js[96];
	snprintf(js, sizeof(js), "{\"process\":{\"pid\":%u},\"signal\":\"SIGNAL_SIGKILL\"}", pid);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fkr *r = fks_req(s, "POST", "/process.Process/SendSignal", h, js, strlen(js));
	assert_int_equal(r->status, 200);
	fkr_free(r);
}

/* In a child process: Start `line` in b with a stdin pipe; the child ends with its stream. */
static pid_t start_with_stdin(fks *s, fks_box *b, const char *line)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	json_t *m = json_pack("{s:{s:s,s:[s,s]},s:b}", "process", "cmd", "/bin/sh", "args", "-c",
	                      line, "stdin", 1);
	char *js = json_dumps(m, JSON_COMPACT);
	size_t n;
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/connect+json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fks_call c = {NULL, "POST", "/process.Process/Start", h, env, n, NULL, 120000};
	fkr_free(fks_do(s, &c));
	_exit(0);
}

/* In a child process: SendInput of 3 * `triples` bytes ("xxx"...) to `pid` of b; the child
 * ends with the call. */
static pid_t send_input(fks *s, fks_box *b, unsigned pid, size_t triples)
{
	pid_t child = fork();
	assert_true(child >= 0);
	if (child > 0)
		return child;
	size_t cap = 4 * triples + 96, o = 0;
	char *js = malloc(cap);
	assert_non_null(js);
	o += (size_t)snprintf(js, cap, "{\"process\":{\"pid\":%u},\"input\":{\"stdin\":\"", pid);
	for (size_t i = 0; i < triples; i++, o += 4)
		memcpy(js + o, "eHh4", 4); /* base64 of "xxx" */
	o += (size_t)snprintf(js + o, cap - o, "\"}}");
	const char *h[] = {b->hid, b->htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fks_call c = {NULL, "POST", "/process.Process/SendInput", h, js, o, NULL, 60000};
	fkr_free(fks_do(s, &c));
	_exit(0);
}

/* Runs `line` in b until it exits 0 (an event the box shows), at most 30 s: whether it did. */
static bool box_wait(fks *s, fks_box *b, const char *line)
{
	for (long deadline = fk_mono_ms() + 30000; fk_mono_ms() < deadline; fk_sleep_ms(20))
		if (fks_box_run(s, b, line))
			return true;
	return false;
}

/* A background process counting in /tmp/count (its pid in /tmp/bgpid), and one that keeps a
 * shell variable only in its memory, writing it to /tmp/v: both outlive their Start. */
#define COUNTER                                                                                    \
	"sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done' "             \
	"</dev/null >/dev/null 2>&1 & echo $! > /tmp/bgpid"
#define MID_EXEC "touch /tmp/mid-exec; i=0; while :; do i=$((i+1)); echo n$i; sleep 0.05; done"
#define MEMORY                                                                                     \
	"sh -c 'v=mem-$$-$(date +%N); echo $v > /tmp/want; while :; do echo $v > /tmp/v; "         \
	"sleep 0.05; done' </dev/null >/dev/null 2>&1 & echo $! > /tmp/bgpid"

/* Restart after `how` (0: SIGTERM, 1: kill -9) of a kept server (live restore): the running
 * sandbox is running after it with its processes (the background counter still counting on
 * from where it was, a command mid-exec still there though its stream was cut), exec and files
 * work in it; the paused one is paused and resumes with its memory (the same process, a
 * variable only it holds); their envd tokens still work (others do not); a deleted one stays
 * deleted. */
static void restart_keeps(int crash)
{
	char dir[64], line[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box run, paused, del;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &run, "running-file");
	box_with_file(&a, &paused, "paused-file");
	box_with_file(&a, &del, "deleted-file");
	fks_box_delete(&a, KEY, &del);
	fks_box_sh(&a, &run, COUNTER);
	fks_box_sh(&a, &paused, MEMORY);
	assert_true(box_wait(&a, &paused, "test \"$(cat /tmp/v)\" = \"$(cat /tmp/want)\""));
	pause_box(&a, paused.id);
	assert_int_equal(count_listed(&a, ""), 2);
	/* a command mid-exec, printing a count: its stream is open when the server goes */
	pid_t stream = start_cut_stream(&a, &run, MID_EXEC);
	assert_true(box_wait(&a, &run, "test -e /tmp/mid-exec"));
	assert_true(box_wait(&a, &run, "test \"$(cat /tmp/count)\" -gt 2"));
	fks_box_sh(&a, &run, "cat /tmp/count > /tmp/before");
	if (crash)
		assert_int_equal(fks_kill(&a), 0);
	else
		assert_int_equal(fks_stop(&a), 0);
	/* it ended as a dropped connection does: cut, no end event */
	int st = 0;
	assert_int_equal(waitpid(stream, &st, 0), stream);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	assert_state(&b, run.id, "running");
	assert_state(&b, paused.id, "paused");
	assert_state(&b, del.id, "404");
	assert_int_equal(count_listed(&b, "?state=paused"), 1);
	assert_int_equal(count_listed(&b, "?state=running"), 1);
	/* adopted: the counter is the same process, counting on from where it was */
	assert_true(fks_box_run(&b, &run, "kill -0 $(cat /tmp/bgpid)"));
	assert_true(box_wait(&b, &run, "test \"$(cat /tmp/count)\" -gt \"$(cat /tmp/before)\""));
	assert_file(&b, &run, "running-file");
	/* the command started before: listed, its output from the restart on streamed by pid, its
	 * signal and end as for any (its shim held its pipes and is its parent) */
	unsigned pid = 0;
	char cmd[256] = "";
	assert_int_equal(listed_procs(&b, &run, &pid, cmd, sizeof(cmd)), 1);
	assert_string_equal(cmd, MID_EXEC);
	fkr *r = connect_proc(&b, &run, pid, 1500); /* cut by the client: a count goes on */
	assert_non_null(r->body);
	assert_non_null(memmem(r->body, r->len, "\"stdout\":\"", 10));
	fkr_free(r);
	kill_proc(&b, &run, pid);
	r = connect_proc(&b, &run, pid, 0);
	assert_non_null(r->body);
	assert_non_null(memmem(r->body, r->len, "signal: killed", 14));
	fkr_free(r);
	assert_int_equal(listed_procs(&b, &run, NULL, NULL, 0), 0);
	fks_box_sh(&b, &run, "echo after > /workspace/after.txt && test -s /workspace/after.txt");
	/* paused: envd answers as for a paused sandbox (502) until it is resumed */
	assert_int_equal(envd_status_with(&b, &paused, paused.token), 502);
	assert_int_equal(connect_box(&b, paused.id), 201);
	assert_file(&b, &paused, "paused-file");
	/* with its memory: the same process, writing what only its memory holds */
	assert_true(fks_box_run(&b, &paused, "kill -0 $(cat /tmp/bgpid) && rm /tmp/v"));
	assert_true(box_wait(&b, &paused, "test \"$(cat /tmp/v)\" = \"$(cat /tmp/want)\""));
	/* the envd token create gave still opens it, another does not */
	assert_int_equal(envd_status_with(&b, &run, run.token), 200);
	assert_int_equal(envd_status_with(&b, &run, paused.token), 401);
	/* and it lives on as any sandbox: pause, resume, delete */
	pause_box(&b, run.id);
	assert_int_equal(connect_box(&b, run.id), 201);
	assert_file(&b, &run, "running-file");
	assert_true(box_wait(&b, &run, "test \"$(cat /tmp/count)\" -gt \"$(cat /tmp/before)\""));
	fks_box_delete(&b, KEY, &run);
	fks_box_delete(&b, KEY, &paused);
	assert_int_equal(fks_stop(&b), 0);
	snprintf(line, sizeof(line),
	         "fake-e2b: state: sandbox %s kept: was running, running with its processes "
	         "(adopted)",
	         run.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line),
	         "fake-e2b: state: sandbox %s kept: was paused, paused with its memory (adopted)",
	         paused.id);
	assert_logged(&b, line);
	/* nothing of them is left */
	char path[256];
	snprintf(path, sizeof(path), "%s/%s.disk", dir, run.id);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, run.id);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/.live/%s", dir, run.id);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/.live/%s.p", dir, run.id);
	assert_int_equal(access(path, F_OK), -1);
	rm_state(dir);
}

/* A kept server's SIGTERM while a SendInput waits on a process that does not read its stdin:
 * the process outlives the server (live restore), so the write can never finish; the server
 * answers it and exits, and the next server has the sandbox. */
static void test_restart__unread_stdin_does_not_hold_shutdown(void **unused)
{
	(void)unused;
	char dir[64];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box box;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	fks_box_create(&a, KEY, "{\"templateID\":\"base\",\"timeout\":600}", &box);
	pid_t stream =
	    start_with_stdin(&a, &box, "dd bs=1 count=1 of=/tmp/got 2>/dev/null; exec sleep 600");
	unsigned pid = 0;
	for (long deadline = fk_mono_ms() + 30000; !pid && fk_mono_ms() < deadline; fk_sleep_ms(20))
		listed_procs(&a, &box, &pid, NULL, 0);
	assert_true(pid > 0);
	/* 1 MiB: the process takes one byte, its pipe 64 KiB, the rest waits */
	pid_t input = send_input(&a, &box, pid, 349525);
	assert_true(box_wait(&a, &box, "test -s /tmp/got"));
	long t0 = fk_mono_ms();
	assert_int_equal(fks_stop(&a), 0); /* before: no exit until fks_stop's SIGKILL at 30 s */
	assert_true(fk_mono_ms() - t0 < 20000);
	int st = 0; /* the write gave up (its reply may be cut by the stop) */
	assert_int_equal(waitpid(input, &st, 0), input);
	assert_int_equal(waitpid(stream, &st, 0), stream);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	assert_state(&b, box.id, "running");
	fks_box_delete(&b, KEY, &box);
	assert_int_equal(fks_stop(&b), 0);
	rm_state(dir);
}

/* A shim's socket name already taken in the box's <state>/.live/<id>.p (as when a restarted
 * server has the pid of the one before, whose adopted processes' shims still listen there:
 * fake-e2b as a container's PID 1): a Start still gets a shim of its own. */
static void test_restart__taken_shim_names_do_not_block_starts(void **unused)
{
	(void)unused;
	char dir[64], path[256];
	new_state(dir, sizeof(dir));
	fks a;
	fks_box box;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	fks_box_create(&a, KEY, "{\"templateID\":\"base\",\"timeout\":600}", &box);
	snprintf(path, sizeof(path), "%s/.live/%s.p", dir, box.id);
	assert_true(mkdir(path, 0700) == 0 || errno == EEXIST);
	for (unsigned n = 1; n <= 256; n++) {
		snprintf(path, sizeof(path), "%s/.live/%s.p/%d-%u.sock", dir, box.id, (int)a.pid,
		         n);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0 || errno == EEXIST);
		if (fd >= 0)
			close(fd);
	}
	assert_true(fks_box_run(&a, &box, "echo started")); /* before: the shim's bind failed */
	fks_box_delete(&a, KEY, &box);
	assert_int_equal(fks_stop(&a), 0);
	rm_state(dir);
}

static void test_restart__sigterm_keeps_running_and_paused_with_files(void **unused)
{
	(void)unused;
	restart_keeps(0);
}

static void test_restart__crash_keeps_running_and_paused_with_files(void **unused)
{
	(void)unused;
	restart_keeps(1);
}

/* Waits (at most 30 s) until the sandbox's state as GET says it is `want`: whether it came. */
static bool state_becomes(fks *s, const char *id, const char *want)
{
	char got[32];
	for (long deadline = fk_mono_ms() + 30000; fk_mono_ms() < deadline; fk_sleep_ms(50)) {
		state_of(s, id, got, sizeof(got));
		if (!strcmp(got, want))
			return true;
	}
	return false;
}

/* End times hold for adopted sandboxes: after a crash the restarted server's reaper pauses an
 * autoPause one at its end time (with its memory: its process runs on after the resume) and
 * kills another. */
static void test_restart__adopted_sandbox_times_out(void **unused)
{
	(void)unused;
	char dir[64];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box ap, gone;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	fks_box_create(&a, KEY, "{\"templateID\":\"base\",\"timeout\":5,\"autoPause\":true}", &ap);
	fks_box_create(&a, KEY, "{\"templateID\":\"base\",\"timeout\":5}", &gone);
	fks_box_sh(&a, &ap, MEMORY);
	assert_true(box_wait(&a, &ap, "test \"$(cat /tmp/v)\" = \"$(cat /tmp/want)\""));
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	assert_true(state_becomes(&b, ap.id, "paused"));
	assert_true(state_becomes(&b, gone.id, "404"));
	assert_int_equal(connect_box(&b, ap.id), 201);
	assert_true(fks_box_run(&b, &ap, "kill -0 $(cat /tmp/bgpid) && rm /tmp/v"));
	assert_true(box_wait(&b, &ap, "test \"$(cat /tmp/v)\" = \"$(cat /tmp/want)\""));
	fks_box_delete(&b, KEY, &ap);
	assert_int_equal(fks_stop(&b), 0);
	fks_stop(&a);
	rm_state(dir);
}

/* A torn and a flipped record: refused with a log line, never loaded as a sandbox; its files
 * stay. */
static void test_restart__damaged_record_refused(void **unused)
{
	(void)unused;
	char dir[64], line[512], path[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box torn, flip, good;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &torn, "t");
	box_with_file(&a, &flip, "f");
	box_with_file(&a, &good, "g");
	assert_int_equal(fks_stop(&a), 0);
	/* cut the one record short, flip a byte of the other's body */
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, torn.id);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 7), 0);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, flip.id);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(fseek(f, -20, SEEK_END), 0);
	int c = fgetc(f);
	assert_int_equal(fseek(f, -20, SEEK_END), 0);
	fputc(c ^ 0x01, f);
	fclose(f);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	assert_state(&b, torn.id, "404");
	assert_state(&b, flip.id, "404");
	assert_state(&b, good.id, "running"); /* the stop left it running: adopted */
	assert_int_equal(count_listed(&b, ""), 1);
	assert_file(&b, &good, "g");
	fks_box_delete(&b, KEY, &good);
	assert_int_equal(fks_stop(&b), 0);
	/* what ran in the two refused ones is not left running unmanaged */
	snprintf(line, sizeof(line), "fake-e2b: sweep: sandbox %s: ", torn.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line), "fake-e2b: sweep: sandbox %s: ", flip.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line), "fake-e2b: state: sandboxes/%s refused: body is ", torn.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line),
	         "fake-e2b: state: sandboxes/%s refused: checksum mismatch (a damaged byte); not "
	         "loaded, kept as %s/.state/sandboxes/%s.bad",
	         flip.id, dir, flip.id);
	assert_logged(&b, line);
	/* their files are kept for whoever looks: never swept */
	snprintf(path, sizeof(path), "%s/%s", dir, flip.id);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s.bad", dir, torn.id);
	assert_int_equal(access(path, F_OK), 0);
	rm_state(dir);
}

/* The test's "reboot": the server and every process of its boxes killed. Every sandbox comes
 * back paused with its files; resume boots it cold (its processes are gone). Before it, a crash
 * leaves a paused sandbox's box frozen: the next start adopts it (resumed with its memory),
 * while a frozen box whose record is gone (deleted as the server crashed) is swept: killed,
 * its cgroups and files gone. */
static void test_restart__reboot_and_orphans(void **unused)
{
	(void)unused;
	char dir[64], line[512], path[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box run, paused, orphan;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &run, "r");
	box_with_file(&a, &paused, "p");
	box_with_file(&a, &orphan, "o");
	fks_box_sh(&a, &paused, "sleep 100000 </dev/null >/dev/null 2>&1 &");
	fks_box_sh(&a, &orphan, "sleep 100000 </dev/null >/dev/null 2>&1 &");
	pause_box(&a, paused.id);
	pause_box(&a, orphan.id);
	pid_t server = a.pid, frozen[64], orphans[64];
	int n_frozen = box_pids(server, paused.id, frozen, 64);
	int n_orphans = box_pids(server, orphan.id, orphans, 64);
	assert_true(n_frozen >= 2); /* its PID 1 and the sleep */
	assert_true(n_orphans >= 2);
	assert_int_equal(fks_kill(&a), 0);
	/* the crash leaves the paused boxes frozen, holding their disks */
	for (int i = 0; i < n_frozen; i++)
		assert_true(alive(frozen[i]));
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, orphan.id);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	for (int i = 0; i < n_frozen; i++)
		assert_true(alive(frozen[i]));
	for (int i = 0; i < n_orphans; i++)
		assert_false(alive(orphans[i]));
	assert_int_equal(box_pids(server, orphan.id, orphans, 64), 0);
	snprintf(path, sizeof(path), "%s/%s.disk", dir, orphan.id);
	assert_int_equal(access(path, F_OK), -1);
	assert_state(&b, orphan.id, "404");
	assert_state(&b, run.id, "running");
	assert_state(&b, paused.id, "paused");
	assert_int_equal(connect_box(&b, paused.id), 201);
	assert_file(&b, &paused, "p");
	/* with its memory: what ran before runs on */
	assert_true(fks_box_run(&b, &paused, "pgrep -x sleep"));
	pid_t live[64];
	int n_live = box_pids(b.pid, run.id, live, 64);
	n_live += box_pids(b.pid, paused.id, live + n_live, 64 - n_live);
	assert_true(n_live >= 3);
	/* now the reboot: the server and every box process die at once */
	kill(b.pid, SIGKILL);
	for (int i = 0; i < n_live; i++)
		kill(live[i], SIGKILL);
	assert_int_equal(fks_kill(&b), 0); /* reaped here */
	for (int i = 0; i < n_live; i++)
		for (long deadline = fk_mono_ms() + 30000;
		     alive(live[i]) && fk_mono_ms() < deadline;)
			fk_sleep_ms(10);
	snprintf(line, sizeof(line), "fake-e2b: sweep: sandbox %s: ", orphan.id);
	assert_logged(&b, line);
	/* files no record names (a sandbox deleted as the server crashed) go at the next start */
	char stray[128], stray_disk[160];
	snprintf(stray, sizeof(stray), "%s/istray0000000000000000", dir);
	snprintf(stray_disk, sizeof(stray_disk), "%s.disk", stray);
	assert_int_equal(mkdir(stray, 0700), 0);
	FILE *f = fopen(stray_disk, "w");
	assert_non_null(f);
	fclose(f);
	fks c;
	assert_int_equal(fks_start_in(&c, g_bin, dir, kept_flags), 0);
	assert_int_equal(access(stray, F_OK), -1);
	assert_int_equal(access(stray_disk, F_OK), -1);
	assert_state(&c, run.id, "paused");
	assert_state(&c, paused.id, "paused");
	assert_int_equal(connect_box(&c, run.id), 201);
	assert_file(&c, &run, "r");
	assert_int_equal(connect_box(&c, paused.id), 201);
	assert_file(&c, &paused, "p");
	/* cold: what ran before is gone */
	assert_false(fks_box_run(&c, &paused, "pgrep -x sleep"));
	fks_box_delete(&c, KEY, &run);
	fks_box_delete(&c, KEY, &paused);
	assert_int_equal(fks_stop(&c), 0);
	snprintf(line, sizeof(line), "fake-e2b: sweep: removed %s (no sandbox of this server's)",
	         stray_disk);
	assert_logged(&c, line);
	snprintf(line, sizeof(line),
	         "fake-e2b: state: sandbox %s kept: was running, paused with its files", run.id);
	assert_logged(&c, line);
	fks_stop(&a);
	fks_stop(&b);
	rm_state(dir);
}

static void test_restart__second_server_on_a_directory_refused(void **unused)
{
	(void)unused;
	char dir[64], want[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	const char *flags[] = {"--quiet", NULL};
	assert_int_equal(fks_start_in(&a, g_bin, dir, flags), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), -1);
	assert_true(WIFEXITED(b.exit_status));
	assert_int_equal(WEXITSTATUS(b.exit_status), 1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is in use by another fake-e2b (pid %d); stop it "
	         "or give another --state-dir\n",
	         dir, (int)a.pid);
	assert_string_equal(b.out, want);
	/* the first one still serves */
	char h[200];
	snprintf(h, sizeof(h), "X-API-Key: %s", a.key);
	const char *hdr[] = {h, NULL};
	fkr *r = fks_req(&a, "GET", "/v2/sandboxes", hdr, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	/* a crash frees the directory: the next server starts on it */
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), 0);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s (kept: sandboxes survive a restart)\n", dir);
	assert_int_equal(fks_stop(&b), 0);
	assert_non_null(strstr(b.out, want));
	fks_stop(&a);
	rm_state(dir);
}

/* A snapshot (a template made of a sandbox's files) outlives a crash: sandboxes are made from
 * it after the restart with its files; deleted after, it stays deleted. */
static void test_restart__snapshot_template_kept(void **unused)
{
	(void)unused;
	char dir[64], path[128];
	new_state(dir, sizeof(dir));
	fks a, b, c;
	fks_box src, from;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &src, "snap-file");
	snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", src.id);
	fkr *r = api(&a, "POST", path, "{\"name\":\"keep-snap\"}");
	assert_int_equal(r->status, 201);
	fkr_free(r);
	fks_box_delete(&a, KEY, &src);
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	r = api(&b, "GET", "/snapshots", NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(r->json, 0), "snapshotID")),
	    "keep-snap:default");
	fkr_free(r);
	fks_box_create(&b, KEY, "{\"templateID\":\"keep-snap\"}", &from);
	assert_file(&b, &from, "snap-file");
	fks_box_delete(&b, KEY, &from);
	r = api(&b, "DELETE", "/templates/keep-snap", NULL);
	assert_int_equal(r->status, 204);
	fkr_free(r);
	assert_int_equal(fks_stop(&b), 0);
	assert_logged(&b, "fake-e2b: state: 1 template(s) kept");
	assert_int_equal(fks_start_in(&c, g_bin, dir, kept_flags), 0);
	r = api(&c, "POST", "/v2/sandboxes", "{\"templateID\":\"keep-snap\"}");
	assert_int_equal(r->status, 404);
	fkr_free(r);
	assert_int_equal(fks_stop(&c), 0);
	fks_stop(&a);
	rm_state(dir);
}

/* The messages of GET /v2/sandboxes/{id}/logs?direction=forward, joined by '|'. */
static void log_messages(fks *s, const char *id, char *out, size_t cap)
{
	char path[128];
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/logs?direction=forward", id);
	fkr *r = api(s, "GET", path, NULL);
	assert_int_equal(r->status, 200);
	json_t *logs = json_object_get(r->json, "logs");
	out[0] = 0;
	for (size_t i = 0; i < json_array_size(logs); i++)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "|" : "",
		         json_string_value(json_object_get(json_array_get(logs, i), "message")));
	fkr_free(r);
}

/* A kept sandbox's logs outlive a restart (its record keeps them): what it logged before (the
 * stop leaves it running, adopted by the next server: nothing paused it), then its pause and
 * resume on the next server. */
static void test_restart__sandbox_logs_kept(void **unused)
{
	(void)unused;
	char dir[64], path[128], m[1024], want[1024];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box box;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	fks_box_create(&a, KEY, NULL, &box);
	fks_box_sh(&a, &box, "echo kept");
	log_messages(&a, box.id, m, sizeof(m));
	unsigned pid = 0;
	assert_int_equal(
	    sscanf(m, "Started creating sandbox|Sandbox created|Process with pid %u", &pid), 1);
	assert_int_equal(fks_stop(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	snprintf(
	    want, sizeof(want),
	    "Started creating sandbox|Sandbox created|Process with pid %u started|Process with "
	    "pid %u ended",
	    pid, pid);
	log_messages(&b, box.id, m, sizeof(m));
	assert_string_equal(m, want);
	pause_box(&b, box.id);
	strncat(want, "|Pausing sandbox|Sandbox stopped", sizeof(want) - strlen(want) - 1);
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", box.id);
	fkr *r = api(&b, "POST", path, "{\"timeout\":60}");
	assert_int_equal(r->status, 201);
	fkr_free(r);
	log_messages(&b, box.id, m, sizeof(m));
	strncat(want, "|Started resuming sandbox|Sandbox created", sizeof(want) - strlen(want) - 1);
	assert_string_equal(m, want);
	fks_box_delete(&b, KEY, &box);
	assert_int_equal(fks_stop(&b), 0);
	rm_state(dir);
}

/* Anything under /sys/fs/cgroup named for server `pid`'s runtimes? */
static bool cgroups_of(pid_t pid)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
	         "for d in /sys/fs/cgroup/*/fake-e2b/rt-%d-* /sys/fs/cgroup/fake-e2b/rt-%d-*; do "
	         "[ -e \"$d\" ] && exit 0; done; exit 1",
	         (int)pid, (int)pid);
	return system(cmd) == 0;
}

/* A loop device backed by a file under dir? */
static bool loops_of(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
	         "cat /sys/block/loop*/loop/backing_file 2>/dev/null | grep -q '^%s/'", dir);
	return system(cmd) == 0;
}

/* Without --state-dir: a temporary directory, printed, and nothing left after the stop (its
 * directory, cgroups, loop devices), a paused sandbox's frozen box included. */
static void test_restart__ephemeral_leaves_nothing(void **unused)
{
	(void)unused;
	fks a;
	fks_box run, paused;
	assert_int_equal(fks_start_in(&a, g_bin, "", kept_flags), 0);
	char out[160], text[8192] = "", dir[128] = "";
	snprintf(out, sizeof(out), "%s/out", a.dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	const char *at = strstr(text, "fake-e2b: state directory ");
	assert_non_null(at);
	assert_int_equal(
	    sscanf(at, "fake-e2b: state directory %127s (ephemeral: removed at exit)", dir), 1);
	assert_non_null(strstr(at, "(ephemeral: removed at exit)\n"));
	box_with_file(&a, &run, "x");
	box_with_file(&a, &paused, "y");
	pause_box(&a, paused.id);
	pid_t pid = a.pid;
	assert_true(cgroups_of(pid));
	assert_int_equal(access(dir, F_OK), 0);
	assert_int_equal(fks_stop(&a), 0);
	assert_int_equal(access(dir, F_OK), -1);
	assert_false(cgroups_of(pid));
	assert_false(loops_of(dir));
}

/* The temporary state directory a default server printed (its output file in s->dir). */
static void printed_state_dir(const fks *s, char dir[128])
{
	char out[160], text[8192] = "";
	snprintf(out, sizeof(out), "%s/out", s->dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	const char *at = strstr(text, "fake-e2b: state directory ");
	assert_non_null(at);
	assert_int_equal(
	    sscanf(at, "fake-e2b: state directory %127s (ephemeral: removed at exit)", dir), 1);
}

/* A default server killed with -9 left its temporary directory with its sandboxes' reserved
 * disk images, and nothing removed it. The next default start removes it (logged), its boxes'
 * cgroups and loop devices gone; a marked directory whose lock is held (a live server's) and a
 * kept one (no marker) beside it stay whole. */
static void test_restart__crashed_ephemeral_dir_is_removed_by_the_next(void **unused)
{
	(void)unused;
	/* a live server's, as it looks: marked, its .lock write-locked (by this process) */
	char held[64] = "/var/tmp/fake-e2b-testheld-XXXXXX";
	assert_non_null(mkdtemp(held));
	assert_int_equal(chmod(held, 0711), 0);
	char p[128];
	snprintf(p, sizeof(p), "%s/.ephemeral", held);
	int m = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(m >= 0);
	close(m);
	snprintf(p, sizeof(p), "%s/.lock", held);
	int hl = open(p, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(hl >= 0);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	assert_int_equal(fcntl(hl, F_SETLK, &fl), 0);
	/* a kept one: what a server on --state-dir left, its lock free, no marker */
	char kept[64] = "/var/tmp/fake-e2b-testkept-XXXXXX";
	assert_non_null(mkdtemp(kept));
	assert_int_equal(chmod(kept, 0711), 0);
	fks k;
	const char *quiet[] = {"--quiet", NULL};
	assert_int_equal(fks_start_in(&k, g_bin, kept, quiet), 0);
	assert_int_equal(fks_stop(&k), 0);
	snprintf(p, sizeof(p), "%s/.lock", kept);
	assert_int_equal(access(p, F_OK), 0);

	fks a, b;
	fks_box box;
	char dir_a[128] = "", dir_b[128] = "";
	assert_int_equal(fks_start_in(&a, g_bin, "", kept_flags), 0);
	printed_state_dir(&a, dir_a);
	box_with_file(&a, &box, "x");
	pid_t pid_a = a.pid;
	assert_true(cgroups_of(pid_a));
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(access(dir_a, F_OK), 0); /* what kill -9 left */

	assert_int_equal(fks_start_in(&b, g_bin, "", kept_flags), 0);
	printed_state_dir(&b, dir_b);
	assert_string_not_equal(dir_a, dir_b);
	assert_int_equal(access(dir_a, F_OK), -1);
	assert_false(cgroups_of(pid_a));
	assert_false(loops_of(dir_a));
	char out[160], text[8192] = "", want[300];
	snprintf(out, sizeof(out), "%s/out", b.dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	snprintf(want, sizeof(want),
	         "fake-e2b: sweep: removed %s (the temporary state directory of a dead server, "
	         "pid %d)\n",
	         dir_a, (int)pid_a);
	assert_non_null(strstr(text, want));
	/* the held and the kept stay whole */
	snprintf(p, sizeof(p), "%s/.ephemeral", held);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/.lock", held);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/.lock", kept);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(fks_stop(&b), 0);
	assert_int_equal(access(dir_b, F_OK), -1);
	assert_int_equal(fks_stop(&a), 0); /* its output directory (it is dead already) */
	close(hl);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", held, kept);
	assert_int_equal(system(cmd), 0);
}

/* The server makes, renames, mounts and removes files in its state directory as root: one that
 * another user owns or may write (made in /tmp before the server, as anyone can), or a symlink,
 * is refused, whatever it holds. Before, such a directory was taken (and chmod'ed 0711, its owner
 * still another user's), and that user could swap a sandbox's disk image or the /etc templates
 * under the server. */
static void test_restart__state_dir_others_may_write_is_refused(void **unused)
{
	(void)unused;
	char dir[64], link[80], want[512];
	const char *flags[] = {"--quiet", NULL};
	fks b;
	new_state(dir, sizeof(dir));
	assert_int_equal(chown(dir, 65534, 65534), 0); /* nobody's */
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), -1);
	assert_true(WIFEXITED(b.exit_status));
	assert_int_equal(WEXITSTATUS(b.exit_status), 1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is owned by another user: refused (its owner and "
	         "group could swap the sandboxes' files under this server); give a directory of "
	         "uid %d's that only it may write\n",
	         dir, (int)geteuid());
	assert_string_equal(b.out, want);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_uid, 65534); /* left as it was: not taken, nothing made in it */
	assert_int_equal(access(dir, F_OK), 0);
	char lock[96];
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	assert_int_equal(access(lock, F_OK), -1);
	fks_stop(&b);
	assert_int_equal(chown(dir, geteuid(), getegid()), 0);
	assert_int_equal(chmod(dir, 0777), 0); /* the server's own, but anyone may write it */
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), -1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is writable by its group or others: refused (its "
	         "owner and group could swap the sandboxes' files under this server); give a "
	         "directory of uid %d's that only it may write\n",
	         dir, (int)geteuid());
	assert_string_equal(b.out, want);
	fks_stop(&b);
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(link, sizeof(link), "%s-link", dir);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(fks_start_in(&b, g_bin, link, flags), -1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is a symbolic link: refused (it could be pointed "
	         "elsewhere under this server); give the directory itself\n",
	         link);
	assert_string_equal(b.out, want);
	fks_stop(&b);
	unlink(link);
	/* the directory itself, the server's and 0700: taken */
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), 0);
	assert_int_equal(fks_stop(&b), 0);
	rm_state(dir);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restart__second_server_on_a_directory_refused),
	    cmocka_unit_test(test_restart__state_dir_others_may_write_is_refused),
	    cmocka_unit_test(test_restart__sigterm_keeps_running_and_paused_with_files),
	    cmocka_unit_test(test_restart__crash_keeps_running_and_paused_with_files),
	    cmocka_unit_test(test_restart__unread_stdin_does_not_hold_shutdown),
	    cmocka_unit_test(test_restart__taken_shim_names_do_not_block_starts),
	    cmocka_unit_test(test_restart__damaged_record_refused),
	    cmocka_unit_test(test_restart__adopted_sandbox_times_out),
	    cmocka_unit_test(test_restart__reboot_and_orphans),
	    cmocka_unit_test(test_restart__ephemeral_leaves_nothing),
	    cmocka_unit_test(test_restart__crashed_ephemeral_dir_is_removed_by_the_next),
	    cmocka_unit_test(test_restart__snapshot_template_kept),
	    cmocka_unit_test(test_restart__sandbox_logs_kept),
	};
	const char *only = getenv("RESTART_ONLY"); /* a pattern of test names, to run a few */
	if (only)
		cmocka_set_test_filter(only);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
