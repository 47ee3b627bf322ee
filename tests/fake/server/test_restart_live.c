/*
 * tests/fake/server/test_restart_live.c — live restore (fake-e2b/README.md "What survives
 * what"): after a kept server's SIGTERM or kill -9 the running sandbox runs on with its
 * processes, the paused one resumes with its memory; shutdown not held by unread stdin, taken
 * shim names, adopted sandboxes' end times, the shims' cgroup. Part of fake_restart_test (main in
 * test_restart.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
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
void test_restart__unread_stdin_does_not_hold_shutdown(void **unused)
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
void test_restart__taken_shim_names_do_not_block_starts(void **unused)
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

void test_restart__sigterm_keeps_running_and_paused_with_files(void **unused)
{
	(void)unused;
	restart_keeps(0);
}

void test_restart__crash_keeps_running_and_paused_with_files(void **unused)
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
void test_restart__adopted_sandbox_times_out(void **unused)
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

/* The fk-shim processes holding an fd under `dir`/.live (this server's), each one's unified
 * cgroup line of /proc/<pid>/cgroup (with its newline) asserted to be `want`: how many. */
static int shims_in(const char *dir, const char *want)
{
	char live[128];
	snprintf(live, sizeof(live), "%s/.live/", dir);
	DIR *d = opendir("/proc");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		int pid = atoi(de->d_name);
		char p[320], buf[4096] = "", link[512];
		snprintf(p, sizeof(p), "/proc/%d/comm", pid);
		FILE *f = pid > 0 ? fopen(p, "re") : NULL;
		bool shim = f && fgets(buf, sizeof(buf), f) && !strcmp(buf, "fk-shim\n");
		if (f)
			fclose(f);
		snprintf(p, sizeof(p), "/proc/%d/fd", pid);
		DIR *fds = shim ? opendir(p) : NULL;
		bool ours = false;
		for (struct dirent *fe; fds && !ours && (fe = readdir(fds));) {
			snprintf(p, sizeof(p), "/proc/%d/fd/%s", pid, fe->d_name);
			ssize_t len = readlink(p, link, sizeof(link) - 1);
			link[len > 0 ? len : 0] = 0;
			ours = !strncmp(link, live, strlen(live));
		}
		if (fds)
			closedir(fds);
		if (!ours)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/cgroup", pid);
		f = fopen(p, "re");
		char line[1024] = "";
		while (f && fgets(line, sizeof(line), f) && strncmp(line, "0::", 3))
			;
		if (f)
			fclose(f);
		assert_string_equal(line, want);
		n++;
	}
	closedir(d);
	return n;
}

/* A kept server's process shims live in its runtime's .shims cgroup v2, outside the server's
 * own (a service manager stopping the server ends what is left in its cgroup): made there
 * (docs/internals/exec-cost.md, "Joining the box's cgroups"). */
void test_restart__shims_are_in_the_shims_cgroup(void **unused)
{
	(void)unused;
	char dir[64], want[256];
	new_state(dir, sizeof(dir));
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	snprintf(want, sizeof(want), "0::/fake-e2b/kept-%llx-%llx/.shims\n",
	         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	fks a;
	fks_box run;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &run, "shim-file");
	pid_t stream = start_cut_stream(&a, &run, MID_EXEC);
	assert_true(box_wait(&a, &run, "test -e /tmp/mid-exec"));
	/* the command's, and maybe those of the checks before it, still ending */
	assert_true(shims_in(dir, want) >= 1);
	fks_box_delete(&a, KEY, &run);
	assert_int_equal(fks_stop(&a), 0);
	kill(stream, SIGKILL);
	waitpid(stream, NULL, 0);
	rm_state(dir);
}
