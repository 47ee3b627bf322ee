/*
 * tests/fake/server/restart_support.c — the helpers the restart test program's files share
 * (restart_test.h): state directories, requests to the control plane and envd, a box's pids
 * from its cgroups, streams and input cut by a server's end.
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
#include "restart_test.h"

const char *g_bin;

/* A fresh directory for a test's state (removed by rm_state). */
void new_state(char *out, size_t cap)
{
	snprintf(out, cap, "/var/tmp/fk-restart-XXXXXX");
	assert_non_null(mkdtemp(out));
}

void rm_state(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* small disks: each is reserved whole on /var/tmp, and a failed test leaves its directory */
const char *const kept_flags[] = {"--quiet", "--api-key", KEY, "--sandbox-disk-mb", "64", NULL};

fkr *api(fks *s, const char *method, const char *path, const char *body)
{
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	return fks_req(s, method, path, h, body, body ? strlen(body) : 0);
}

/* The sandbox's state as GET /sandboxes/{id} says it ("running", "paused"), or the status
 * when it is not 200 ("404"). */
void state_of(fks *s, const char *id, char *out, size_t cap)
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

void assert_state(fks *s, const char *id, const char *want)
{
	char got[32];
	state_of(s, id, got, sizeof(got));
	assert_string_equal(got, want);
}

void pause_box(fks *s, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	fkr *r = api(s, "POST", path, NULL);
	assert_int_equal(r->status, 204);
	fkr_free(r);
}

/* connect: 201 when it resumed it */
long connect_box(fks *s, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	fkr *r = api(s, "POST", path, "{\"timeout\":120}");
	long st = r->status;
	fkr_free(r);
	return st;
}

int count_listed(fks *s, const char *query)
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
long envd_status_with(fks *s, fks_box *b, const char *token)
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
int box_pids(pid_t server, const char *id, pid_t *out, int cap)
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

bool alive(pid_t pid)
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
void box_with_file(fks *s, fks_box *b, const char *text)
{
	fks_box_create(s, KEY, "{\"templateID\":\"base\",\"timeout\":600}", b);
	char line[256];
	snprintf(line, sizeof(line), "mkdir -p /workspace && printf %%s '%s' > /workspace/keep.txt",
	         text);
	fks_box_sh(s, b, line);
}

void assert_file(fks *s, fks_box *b, const char *text)
{
	char line[256];
	snprintf(line, sizeof(line), "test \"$(cat /workspace/keep.txt)\" = '%s'", text);
	assert_true(fks_box_run(s, b, line));
}

/* The server's log (after it stopped) has this line. */
void assert_logged(fks *s, const char *line)
{
	if (!strstr(s->out, line))
		fail_msg("not in the server's log: '%s'\nlog:\n%s", line, s->out);
}

/* In a child process: Start `line` in b and return how the stream ended: exit 0 when it was
 * cut (a transfer error, no end event), 1 when it ended normally. */
pid_t start_cut_stream(fks *s, fks_box *b, const char *line)
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
size_t listed_procs(fks *s, fks_box *b, unsigned *pid_out, char *cmd_out, size_t cap)
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
fkr *connect_proc(fks *s, fks_box *b, unsigned pid, long ms)
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

void kill_proc(fks *s, fks_box *b, unsigned pid)
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
pid_t start_with_stdin(fks *s, fks_box *b, const char *line)
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
pid_t send_input(fks *s, fks_box *b, unsigned pid, size_t triples)
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
bool box_wait(fks *s, fks_box *b, const char *line)
{
	for (long deadline = fk_mono_ms() + 30000; fk_mono_ms() < deadline; fk_sleep_ms(20))
		if (fks_box_run(s, b, line))
			return true;
	return false;
}
