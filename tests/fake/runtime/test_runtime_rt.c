/*
 * tests/fake/runtime/test_runtime_rt.c — fake-e2b's runtime as a whole: unknown boxes and bad
 * input, rt_free and concurrent starts, degraded mode, and a killed server (this binary's
 * --child-box mode) leaving no box running. Part of test_fake_runtime (main in test_runtime.c).
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

void test_runtime__unknown_box_and_bad_input(void **state)
{
	fk_err err = {0};
	assert_int_equal(fk_box_freeze(rt, "nope", &err), FK_ENOTFOUND);
	assert_int_equal(fk_box_create(rt, "bad/id", NULL, &err), FK_EINVAL);
	fk_proc_spec spec = {.cmd = "true"};
	assert_int_equal(fk_proc_start(rt, "nope", &spec, NULL, NULL, &err), FK_ENOTFOUND);
	assert_int_equal(fk_proc_signal(rt, "nope", 1, SIGKILL, &err), FK_ENOTFOUND);
	assert_string_equal(fk_code_name(FK_ENOCWD), "FK_ENOCWD");
}

static void *concurrent_starter(void *arg)
{
	const char *box = arg;
	for (int i = 0; i < 5; i++) {
		char *o = sh(box, "sandbox", "echo $((%d * 2))", i);
		char want[16];
		snprintf(want, sizeof(want), "%d\n", i * 2);
		assert_string_equal(o, want);
		free(o);
	}
	return NULL;
}

void test_runtime__rt_free_leaves_nothing(void **state)
{
	NEED_ISOLATION(rt);
	fk_rt *saved = rt;
	char dir[] = "/tmp/fk-free-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char state_dir[64];
	snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
	fk_rt_options o = {.state_dir = state_dir};
	assert_int_equal(fk_rt_new(&rt, &o, NULL), 0);
	box_create("f1", false);
	box_create("f2", true);
	box_id id1 = box_ident(getpid(), "f1", fk_box_init_pid(rt, "f1"));
	box_id id2 = box_ident(getpid(), "f2", fk_box_init_pid(rt, "f2"));
	fk_proc *p = start_bg("f1", "sandbox", "sleep 1000 & exec sleep 1000");
	fk_proc_unref(start_bg("f2", "root", "exec sleep 1000"));
	assert_int_equal(fk_box_freeze(rt, "f2", NULL), 0);
	fk_rt_free(rt);
	rt = saved;
	int st;
	assert_true(fk_proc_ended(p, &st)); /* a held handle stays readable */
	assert_true(WIFSIGNALED(st));
	fk_proc_unref(p);
	assert_int_equal(count_box(&id1), 0);
	assert_int_equal(count_box(&id2), 0);
	assert_false(mounts_mention(state_dir));
	DIR *d = opendir(state_dir);
	assert_non_null(d);
	int entries = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		entries += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(entries, 0);
	rmdir(state_dir);
	assert_int_equal(rmdir(dir), 0);
}

void test_runtime__concurrent_starts_in_one_box(void **state)
{
	NEED_ISOLATION(rt);
	box_create("conc", false);
	pthread_t t[6];
	for (int i = 0; i < 6; i++)
		assert_int_equal(pthread_create(&t[i], NULL, concurrent_starter, "conc"), 0);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	fk_proc_info *infos;
	size_t n;
	assert_int_equal(fk_proc_list(rt, "conc", &infos, &n, NULL), 0);
	assert_int_equal(n, 0);
	fk_proc_info_free(infos, n);
	box_destroy("conc");
}

void test_runtime__degraded_mode_still_runs_processes(void **state)
{
	fk_rt *saved = rt;
	fk_rt_options o = {.no_isolation = true};
	assert_int_equal(fk_rt_new(&rt, &o, NULL), 0);
	assert_false(fk_rt_isolated(rt));
	box_create("deg", false);
	char *out = sh("deg", NULL, "echo hi; basename $(pwd)");
	assert_string_equal(out, "hi\nworkspace\n");
	free(out);
	fk_proc *p = start_bg("deg", NULL, "exec sleep 1000");
	assert_int_equal(fk_box_freeze(rt, "deg", NULL), 0);
	assert_int_equal(fk_box_thaw(rt, "deg", NULL), 0);
	box_write("deg", "/workspace/f", NULL, "data");
	char *c = box_read("deg", "/workspace/f");
	assert_string_equal(c, "data");
	free(c);
	box_destroy("deg");
	int st;
	wait_end(p, &st);
	assert_true(WIFSIGNALED(st));
	fk_proc_unref(p);
	fk_rt_free(rt);
	rt = saved;
}

/* The child mode of this binary: a "server" that creates a box running sleep, prints the
 * init's host pid and its state dir, and waits to be killed. */
int child_box_main(const char *state_dir)
{
	fk_err err = {0};
	fk_rt_options o = {.state_dir = state_dir};
	if (fk_rt_new(&rt, &o, &err) < 0) {
		fprintf(stderr, "child: %s\n", err.message);
		return 1;
	}
	box_create("crash", false);
	fk_proc *p = start_bg("crash", "sandbox", "sleep 1000 & exec sleep 1000");
	(void)p;
	fk_writer *w;
	assert_int_equal(fk_file_write_open(rt, "crash", "/workspace/x", NULL, &w, NULL, NULL), 0);
	fk_writer_close(w, NULL);
	printf("%d\n", (int)fk_box_init_pid(rt, "crash"));
	fflush(stdout);
	for (;;)
		pause();
}

char self_exe[4096];

void test_runtime__killed_server_leaves_no_box_running(void **state)
{
	NEED_ISOLATION(rt);
#if defined(__SANITIZE_THREAD__)
	/* TSan builds make every runtime a child subreaper: this test process would adopt the
	 * dead server's zombies and the box's PID 1 could not finish exiting */
	fprintf(stderr, "SKIP: not meaningful under TSan\n");
	skip();
#endif
	char dir[] = "/tmp/fk-crash-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl(self_exe, self_exe, "--child-box", dir, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	int init = 0;
	assert_int_equal(fscanf(f, "%d", &init), 1);
	fclose(f);
	box_id id = box_ident(child, "crash", init);
	assert_true(id.pidns != 0);
	int64_t deadline = fk_mono_ms() + 60000;
	while (count_box(&id) < 3) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20); /* a busy scan would take the CPU from what it waits for */
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	deadline = fk_mono_ms() + 20000;
	while (count_box(&id) > 0) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20);
	}
	/* its files stay (a crash cannot clean up): in its disk image when it has one (nothing
	 * is left mounted: the image's only mounts were a detached one and its namespace's) */
	char probe[256];
	snprintf(probe, sizeof(probe), "%s/crash.disk", dir);
	if (access(probe, F_OK) == 0) {
		assert_false(mounts_mention(dir));
		snprintf(probe, sizeof(probe),
		         "debugfs -R 'ls -p /root/workspace' %s/crash.disk 2>/dev/null | "
		         "grep -q '/x/'",
		         dir);
		assert_int_equal(system(probe), 0);
	} else {
		snprintf(probe, sizeof(probe), "%s/crash/root/workspace/x", dir);
		assert_int_equal(access(probe, F_OK), 0);
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}
