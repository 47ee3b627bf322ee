/*
 * tests/fake/runtime/test_runtime_proc.c — fake-e2b's runtime: envd process semantics (exit
 * status, env and cwd, streams that end despite a background holder, pty, signals, stdin, slow
 * and absent subscribers). Part of test_fake_runtime (main in test_runtime.c).
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "runtime.h"
#include "runtime_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ processes */

void test_runtime__exit_status_env_and_cwd(void **state)
{
	NEED_ISOLATION(rt);
	box_create("ps", false);
	const char *args[] = {"-c",
	                      "echo $FK_BOX_ENV $FK_OVERRIDE $E2B_SANDBOX; pwd; echo err >&2; "
	                      "exit 3"};
	const char *keys[] = {"FK_OVERRIDE"};
	const char *vals[] = {"request"};
	fk_proc_spec spec = {.cmd = "/bin/bash",
	                     .args = args,
	                     .n_args = 2,
	                     .env_keys = keys,
	                     .env_values = vals,
	                     .n_envs = 1,
	                     .cwd = "/tmp",
	                     .user = "sandbox",
	                     .tag = "t1"};
	box_result r;
	assert_int_equal(box_run_spec(rt, "ps", &spec, false, &r, NULL), 0);
	assert_string_equal(r.out, "box request true\n/tmp\n");
	assert_string_equal(r.err, "err\n");
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 3);
	/* retained after exit: Connect by pid gets just the end */
	fk_proc *p;
	assert_int_equal(fk_proc_find(rt, "ps", r.pid, &p, NULL), 0);
	fk_sub *s;
	assert_int_equal(fk_sub_new(p, &s, NULL), 0);
	fk_event ev;
	assert_int_equal(fk_sub_next(s, &ev, 1000), 0);
	assert_int_equal(ev.type, FK_EV_END);
	assert_int_equal(ev.wait_status, r.status);
	assert_int_equal(fk_sub_next(s, &ev, 10), FK_ECLOSED);
	fk_sub_free(s);
	fk_proc_unref(p);
	/* but not signalable */
	fk_err err = {0};
	assert_int_equal(fk_proc_signal(rt, "ps", r.pid, SIGKILL, &err), FK_ENOTFOUND);
	char want[64];
	snprintf(want, sizeof(want), "process with pid %u not found", r.pid);
	assert_string_equal(err.message, want);
	box_result_clear(&r);

	/* missing cwd */
	spec.cwd = "/nope/dir";
	assert_int_equal(box_run_spec(rt, "ps", &spec, false, &r, &err), FK_ENOCWD);
	assert_string_equal(err.message, "cwd '/nope/dir' does not exist");
	/* unknown user */
	spec.cwd = NULL;
	spec.user = "nobody-here";
	assert_int_equal(box_run_spec(rt, "ps", &spec, false, &r, &err), FK_ENOUSER);
	/* a missing command is exit 127 from the /bin/sh wrapper, like envd */
	fk_proc_spec missing = {.cmd = "/no/such/cmd", .user = "root"};
	assert_int_equal(box_run_spec(rt, "ps", &missing, false, &r, NULL), 0);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 127);
	box_result_clear(&r);
	/* default cwd: the template's workdir, whoever runs (envd); HOME is the user's */
	char *o = sh("ps", "root", "pwd; echo $HOME");
	assert_string_equal(o, "/workspace\n/root\n");
	free(o);
	box_destroy("ps");
}

void test_runtime__exit_ends_stream_despite_background_holder(void **state)
{
	NEED_ISOLATION(rt);
	fk_rt *saved = rt;
	fk_rt_options o = {.end_on_exit = true};
	assert_int_equal(fk_rt_new(&rt, &o, NULL), 0);
	box_create("exitbg", false);
	/* the tail written just before the exit arrives; the holder does not delay the end */
	fk_proc_spec spec = {.cmd = "/bin/bash",
	                     .args = (const char *[]){"-c", "sleep 1000 & seq 1 20000 | tail -n 1"},
	                     .n_args = 2,
	                     .user = "sandbox"};
	box_result r = {0};
	/* had the end waited for the holder's 1000 s, box_drain's 120 s guard would fail */
	assert_int_equal(box_run_spec(rt, "exitbg", &spec, false, &r, NULL), 0);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_string_equal(r.out, "20000\n");
	box_result_clear(&r);
	box_destroy("exitbg");
	fk_rt_free(rt);
	rt = saved;
}

void test_runtime__pty_is_a_terminal(void **state)
{
	NEED_ISOLATION(rt);
	box_create("pty", false);
	fk_proc_spec spec = {.cmd = "/bin/bash",
	                     .args = (const char *[]){"-c", "tty; stty size; read l; echo got-$l"},
	                     .n_args = 2,
	                     .user = "sandbox",
	                     .pty = true,
	                     .pty_cols = 91,
	                     .pty_rows = 17};
	fk_proc *p;
	fk_sub *s;
	assert_int_equal(fk_proc_start(rt, "pty", &spec, &p, &s, NULL), 0);
	assert_int_equal(fk_proc_resize(rt, "pty", fk_proc_pid(p), 92, 18, NULL), 0);
	assert_int_equal(fk_proc_write_stdin(rt, "pty", fk_proc_pid(p), "x\n", 2, NULL), 0);
	char out[4096] = "";
	size_t len = 0;
	fk_event ev;
	int status = -1;
	while (fk_sub_next(s, &ev, 20000) == 0) {
		if (ev.type == FK_EV_END) {
			status = ev.wait_status;
			fk_event_clear(&ev);
			break;
		}
		assert_int_equal(ev.type, FK_EV_PTY);
		if (len + ev.len < sizeof(out)) {
			memcpy(out + len, ev.data, ev.len);
			len += ev.len;
			out[len] = 0;
		}
		fk_event_clear(&ev);
	}
	assert_true(WIFEXITED(status));
	assert_non_null(strstr(out, "/dev/pts/"));
	/* the size is the one set at start or after the resize, whichever stty saw */
	assert_true(strstr(out, "17 91\r\n") || strstr(out, "18 92\r\n"));
	assert_non_null(strstr(out, "got-x\r\n"));
	/* a process without a terminal cannot be resized */
	fk_sub_free(s);
	fk_proc_unref(p);
	fk_proc_spec plain = {.cmd = "/bin/sleep", .args = (const char *[]){"100"}, .n_args = 1};
	assert_int_equal(fk_proc_start(rt, "pty", &plain, &p, NULL, NULL), 0);
	assert_int_equal(fk_proc_resize(rt, "pty", fk_proc_pid(p), 80, 24, NULL), FK_ECLOSED);
	fk_proc_unref(p);
	box_destroy("pty");
}

void test_runtime__kill_ends_stream_despite_background_holder(void **state)
{
	NEED_ISOLATION(rt);
	box_create("kill", false);
	const char *args[] = {"-c", "sleep 1000 & echo started; exec sleep 1000"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_sub *s;
	assert_int_equal(fk_proc_start(rt, "kill", &spec, &p, &s, NULL), 0);
	fk_event ev;
	assert_int_equal(fk_sub_next(s, &ev, 10000), 0);
	assert_int_equal(ev.type, FK_EV_STDOUT);
	assert_int_equal(ev.len, 8);
	assert_memory_equal(ev.data, "started\n", 8);
	fk_event_clear(&ev);
	/* a second subscriber sees the same end */
	fk_sub *s2;
	assert_int_equal(fk_sub_new(p, &s2, NULL), 0);
	/* keepalive path: nothing to say within the timeout */
	assert_int_equal(fk_sub_next(s, &ev, 50), FK_ETIMEOUT);
	/* list shows it with its config */
	fk_proc_info *infos;
	size_t n;
	assert_int_equal(fk_proc_list(rt, "kill", &infos, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(infos[0].pid, fk_proc_pid(p));
	assert_string_equal(infos[0].cmd, "/bin/bash");
	assert_int_equal(infos[0].n_args, 2);
	fk_proc_info_free(infos, n);
	assert_int_equal(fk_proc_signal(rt, "kill", fk_proc_pid(p), SIGKILL, NULL), 0);
	box_result r = {0};
	box_drain(s, &r); /* ends by the kill, not by the background sleep */
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	box_result_clear(&r);
	box_drain(s2, &r);
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	box_result_clear(&r);
	fk_sub_free(s);
	fk_sub_free(s2);
	fk_proc_unref(p);
	/* the background sleep still runs */
	char *o = sh("kill", "root", "pgrep -xc sleep");
	assert_string_equal(o, "1\n");
	free(o);
	box_destroy("kill");
}

void test_runtime__sigterm_handler_output_does_not_kill_it(void **state)
{
	NEED_ISOLATION(rt);
	box_create("term", false);
	const char *args[] = {"-c",
	                      "trap 'for i in $(seq 2000); do echo bye-bye-bye; done; exit 5' "
	                      "TERM; echo ready; while :; do sleep 0.05; done"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_sub *s;
	assert_int_equal(fk_proc_start(rt, "term", &spec, &p, &s, NULL), 0);
	fk_event ev;
	assert_int_equal(fk_sub_next(s, &ev, 10000), 0);
	assert_int_equal(ev.type, FK_EV_STDOUT);
	fk_event_clear(&ev);
	assert_int_equal(fk_proc_signal(rt, "term", fk_proc_pid(p), SIGTERM, NULL), 0);
	box_result r = {0};
	box_drain(s, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 5);
	box_result_clear(&r);
	fk_sub_free(s);
	fk_proc_unref(p);
	box_destroy("term");
}

void test_runtime__stdin_pipe(void **state)
{
	NEED_ISOLATION(rt);
	box_create("in", false);
	fk_proc_spec spec = {.cmd = "cat", .user = "sandbox", .stdin_pipe = true};
	fk_proc *p;
	fk_sub *s;
	assert_int_equal(fk_proc_start(rt, "in", &spec, &p, &s, NULL), 0);
	assert_int_equal(fk_proc_write_stdin(rt, "in", fk_proc_pid(p), "abc", 3, NULL), 0);
	assert_int_equal(fk_proc_write_stdin(rt, "in", fk_proc_pid(p), "def", 3, NULL), 0);
	assert_int_equal(fk_proc_close_stdin(rt, "in", fk_proc_pid(p), NULL), 0);
	box_result r = {0};
	box_drain(s, &r);
	assert_string_equal(r.out, "abcdef");
	assert_int_equal(r.status, 0);
	box_result_clear(&r);
	fk_sub_free(s);
	fk_proc_unref(p);
	box_destroy("in");
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			v = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

void test_runtime__slow_subscriber_does_not_grow_memory(void **state)
{
	NEED_ISOLATION(rt);
	box_create("bp", false);
	const char *args[] = {"-c", "head -c 104857600 /dev/zero"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_sub *s;
	long before = rss_kib();
	assert_int_equal(fk_proc_start(rt, "bp", &spec, &p, &s, NULL), 0);
	fk_sleep_ms(1000); /* nobody reads: the producer must be held back */
	long during = rss_kib();
	assert_true(during - before < 16 * 1024);
	size_t total = 0, max_chunk = 0;
	for (;;) {
		fk_event ev;
		assert_int_equal(fk_sub_next(s, &ev, 30000), 0);
		if (ev.type == FK_EV_END) {
			assert_int_equal(ev.wait_status, 0);
			break;
		}
		total += ev.len;
		if (ev.len > max_chunk)
			max_chunk = ev.len;
		fk_event_clear(&ev);
	}
	assert_int_equal(total, 104857600);
	assert_true(max_chunk <= 32768);
	fk_sub_free(s);
	fk_proc_unref(p);
	box_destroy("bp");
}

/* Output written while nobody subscribes is read and dropped, not kept for a later subscriber.
 * No sleep races the command: it writes 1 MiB, then makes /workspace/mark (its writes have all
 * returned, so at most a pipe's capacity is still unread) and waits for /workspace/go, which
 * the test makes only after subscribing. */
void test_runtime__output_without_subscriber_is_discarded(void **state)
{
	NEED_ISOLATION(rt);
	box_create("disc", false);
	const char *args[] = {"-c",
	                      "head -c 1048576 /dev/zero | tr '\\0' e; touch /workspace/mark; "
	                      "while [ ! -e /workspace/go ]; do sleep 0.01; done; echo late"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	assert_int_equal(fk_proc_start(rt, "disc", &spec, &p, NULL, NULL), 0);
	for (int64_t deadline = fk_mono_ms() + 60000;;) {
		assert_true(fk_mono_ms() < deadline);
		char *o = sh("disc", "sandbox", "test -e /workspace/mark && echo y || true");
		bool marked = strcmp(o, "y\n") == 0;
		free(o);
		if (marked)
			break;
		fk_sleep_ms(10);
	}
	fk_sub *s;
	assert_int_equal(fk_sub_new(p, &s, NULL), 0);
	free(sh("disc", "sandbox", "touch /workspace/go"));
	box_result r = {0};
	box_drain(s, &r);
	/* at most the unread pipe and one pump read reach the late subscriber, then "late" */
	assert_true(r.out_len >= 5 && r.out_len <= 256 * 1024);
	assert_string_equal(r.out + r.out_len - 5, "late\n");
	for (size_t i = 0; i + 5 < r.out_len; i++)
		assert_int_equal(r.out[i], 'e');
	box_result_clear(&r);
	fk_sub_free(s);
	fk_proc_unref(p);
	box_destroy("disc");
}
