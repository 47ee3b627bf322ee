/*
 * tests/fake/runtime/test_runtime.c — fake-e2b's sandbox runtime (docs/internals/architecture.md
 * "fake-e2b") against this machine; this file: isolation between boxes, templates and layers
 * (commit, snapshot), pause, reboot and destroy, the group setup and main. The other files of
 * the program: test_runtime_proc.c (envd process semantics), test_runtime_files.c (the files
 * API), test_runtime_rt.c (the runtime as a whole: bad input, concurrent starts, rt_free, a
 * killed server); runtime_helpers.c what they share. Needs root, namespaces and the freezer
 * cgroup; without them every isolation test skips with the reason.
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

/* ------------------------------------------------------------ isolation */

static void test_runtime__each_box_sees_only_its_own_processes(void **state)
{
	NEED_ISOLATION(rt);
	box_create("iso-a", false);
	box_create("iso-b", false);
	fk_proc *pa = start_bg("iso-a", "sandbox", "exec sleep 1000");
	fk_proc *pb = start_bg("iso-b", "sandbox", "exec sleep 1000");
	/* the wrapper execs into sleep a moment after start returns */
	const char *wait_sleep =
	    "for i in $(seq 200); do pgrep -x sleep && exit 0; sleep 0.05; done; "
	    "exit 1";
	char *a = sh("iso-a", "root", "%s", wait_sleep);
	char *b = sh("iso-b", "root", "%s", wait_sleep);
	char want[32];
	snprintf(want, sizeof(want), "%u\n", fk_proc_pid(pa));
	assert_string_equal(a, want);
	snprintf(want, sizeof(want), "%u\n", fk_proc_pid(pb));
	assert_string_equal(b, want);
	free(a);
	free(b);
	/* pkill in one box does not reach the other */
	free(sh("iso-a", "root", "pkill -x sleep; true"));
	int st;
	wait_end(pa, &st);
	assert_true(WIFSIGNALED(st));
	assert_false(fk_proc_ended(pb, NULL));
	fk_proc_unref(pa);
	fk_proc_unref(pb);
	box_destroy("iso-a");
	box_destroy("iso-b");
}

static void test_runtime__tmp_is_private(void **state)
{
	NEED_ISOLATION(rt);
	box_create("tmp-a", false);
	box_create("tmp-b", false);
	char name[64];
	snprintf(name, sizeof(name), "/tmp/fk-private-%d", (int)getpid());
	free(sh("tmp-a", "sandbox", "echo secret > %s", name));
	char *b = sh("tmp-b", "sandbox", "test -e %s && echo seen || echo absent", name);
	assert_string_equal(b, "absent\n");
	free(b);
	assert_int_equal(access(name, F_OK), -1);
	char *a = sh("tmp-a", "sandbox", "cat %s", name);
	assert_string_equal(a, "secret\n");
	free(a);
	box_destroy("tmp-a");
	box_destroy("tmp-b");
}

/* fk_box_commit moves a box's files (its root and its /etc layer) into a layer; boxes made
 * from the layer start with a copy of them, the template's other conventions and the workdir
 * asked for; the layer is not changed by them. */
static void test_runtime__commit_and_boot_from_layer(void **state)
{
	NEED_ISOLATION(rt);
	box_create("lay-src", false);
	free(sh("lay-src", "root",
	        "useradd --create-home --shell /bin/bash layered && mkdir -p /srv/app && "
	        "echo kept > /srv/app/file && chown layered /srv/app/file && "
	        "ln -s file /srv/app/link && mkfifo /srv/app/fifo && "
	        "(sleep 600 >/srv/app/busy 2>&1 &) ; echo started"));
	char layer[4200];
	snprintf(layer, sizeof(layer), "%s/.test-layer-%d", fk_rt_state_dir(rt), (int)getpid());
	fk_err err = {0};
	assert_int_equal(fk_box_commit(rt, "lay-src", layer, &err), 0);
	assert_false(fk_box_exists(rt, "lay-src", NULL)); /* the box is gone, its sleep too */
	assert_int_equal(fk_box_commit(rt, "lay-src", layer, &err), FK_ENOTFOUND);

	fk_box_options o = {.layer_dir = layer, .workdir = "/srv/app"};
	assert_int_equal(fk_box_create(rt, "lay-a", &o, &err), 0);
	assert_int_equal(fk_box_create(rt, "lay-b", &o, &err), 0);
	char *out = sh("lay-a", "layered",
	               "id -un; echo $HOME; pwd; cat file; readlink link; "
	               "stat -c '%%U %%F' file fifo; echo changed > file");
	assert_string_equal(out, "layered\n/home/layered\n/srv/app\nkept\nfile\n"
	                         "layered regular file\nroot fifo\n");
	free(out);
	/* a box of the layer gets its own copy: lay-a's change is not lay-b's */
	out = sh("lay-b", "root", "cat /srv/app/file; getent passwd layered | cut -d: -f6");
	assert_string_equal(out, "kept\n/home/layered\n");
	free(out);
	/* a commit into a layer that exists is refused and destroys the box all the same */
	assert_int_equal(fk_box_commit(rt, "lay-b", layer, &err), FK_EEXIST);
	assert_false(fk_box_exists(rt, "lay-b", NULL));
	box_destroy("lay-a");
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", layer);
	assert_int_equal(system(cmd), 0);
}

/* fk_box_snapshot copies a box's files (root and /etc layer) while the box stays as it was: its
 * process runs on, a frozen box stays frozen; a box made from the copy has the files as they
 * were at the snapshot and none of the processes. */
static void test_runtime__snapshot_keeps_the_box(void **state)
{
	NEED_ISOLATION(rt);
	box_create("snap-src", false);
	free(sh("snap-src", "root", "echo before > /srv-note; useradd --no-create-home snapped"));
	fk_proc *p = start_bg("snap-src", "root", "sleep 600");
	char layer[4200];
	snprintf(layer, sizeof(layer), "%s/.test-snap-%d", fk_rt_state_dir(rt), (int)getpid());
	fk_err err = {0};
	assert_int_equal(fk_box_snapshot(rt, "snap-src", layer, &err), 0);
	bool frozen = true;
	assert_true(fk_box_exists(rt, "snap-src", &frozen));
	assert_false(frozen);
	assert_false(fk_proc_ended(p, NULL));
	free(sh("snap-src", "root", "echo after > /srv-note"));
	assert_int_equal(fk_box_snapshot(rt, "snap-src", layer, &err), FK_EEXIST);
	assert_int_equal(fk_box_snapshot(rt, "no-such-box", layer, &err), FK_ENOTFOUND);

	fk_box_options o = {.layer_dir = layer};
	assert_int_equal(fk_box_create(rt, "snap-a", &o, &err), 0);
	char *out = sh("snap-a", "root",
	               "cat /srv-note; id -u snapped >/dev/null && echo user; "
	               "ps -eo comm= | grep -c '^sleep$' || true");
	assert_string_equal(out, "before\nuser\n0\n");
	free(out);
	/* a paused box is copied and stays paused */
	assert_int_equal(fk_box_freeze(rt, "snap-src", &err), 0);
	snprintf(layer + strlen(layer), sizeof(layer) - strlen(layer), "-2");
	assert_int_equal(fk_box_snapshot(rt, "snap-src", layer, &err), 0);
	assert_true(fk_box_exists(rt, "snap-src", &frozen));
	assert_true(frozen);
	assert_int_equal(fk_box_thaw(rt, "snap-src", &err), 0);
	assert_false(fk_proc_ended(p, NULL));
	fk_proc_unref(p);
	box_destroy("snap-src");
	box_destroy("snap-a");
	char cmd[8700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%.*s'", layer, (int)(strlen(layer) - 2), layer);
	assert_int_equal(system(cmd), 0);
}

static void test_runtime__template_conventions(void **state)
{
	NEED_ISOLATION(rt);
	box_create("tpl", false);
	char *o =
	    sh("tpl", "sandbox", "id -u; id -g; id -un; echo $HOME; pwd; echo $USER $LOGNAME");
	assert_string_equal(o, "1000\n1000\nsandbox\n/workspace\n/workspace\nsandbox sandbox\n");
	free(o);
	o = sh("tpl", "root",
	       "stat -c '%%a %%U %%G %%n' /skills /opt/capybara /workspace /tmp; "
	       "getent passwd sandbox; pwd");
	assert_string_equal(o, "755 root root /skills\n"
	                       "700 root root /opt/capybara\n"
	                       "755 sandbox sandbox /workspace\n"
	                       "1777 root root /tmp\n"
	                       "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"
	                       "/workspace\n");
	free(o);
	/* the host's /usr and the kernel's settings are read-only inside */
	o = sh("tpl", "root",
	       "touch /usr/fk-nope 2>/dev/null && echo writable || echo ro; "
	       "echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo writable || echo ro");
	assert_string_equal(o, "ro\nro\n");
	free(o);
	box_destroy("tpl");
}

static void test_runtime__tools_work_inside(void **state)
{
	NEED_ISOLATION(rt);
	box_create("tools", false);
	char *o = sh("tools", "root",
	             "runuser -u sandbox -- id -un; setsid -w /bin/sh -c 'echo setsid-ok'; "
	             "timeout -s KILL 0.2 sleep 5; echo timeout=$?; "
	             "sleep 300 & for i in $(seq 500); do pgrep -x sleep >/dev/null && break; "
	             "sleep 0.01; done; pgrep -x sleep >/dev/null && echo pgrep-ok; "
	             "pkill -x sleep; wait; echo pkill-done; bash --version | head -c 13; echo");
	assert_string_equal(
	    o, "sandbox\nsetsid-ok\ntimeout=137\npgrep-ok\npkill-done\nGNU bash, ver\n");
	free(o);
	/* a C program builds and runs inside (the demo does this) */
	o = sh(
	    "tools", "sandbox",
	    "printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' > h.c && "
	    "gcc -o h h.c && ./h");
	assert_string_equal(o, "built\n");
	free(o);
	box_destroy("tools");
}

static void test_runtime__net_none_has_only_lo(void **state)
{
	NEED_ISOLATION(rt);
	box_create("net", true);
	char *o = sh("net", "root",
	             "ls /sys/class/net 2>/dev/null | wc -l >/dev/null; "
	             "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '");
	assert_string_equal(o, "lo\n");
	free(o);
	box_destroy("net");
}

/* ------------------------------------------------------------ lifecycle */

static long counter(const char *box)
{
	char *s = box_read(box, "/tmp/counter");
	long v = s ? strtol(s, NULL, 10) : -1;
	free(s);
	return v;
}

static void test_runtime__freeze_stops_progress_and_thaw_resumes(void **state)
{
	NEED_ISOLATION(rt);
	box_create("frz", false);
	fk_proc *p = start_bg("frz", "sandbox",
	                      "i=0; while :; do i=$((i+1)); echo $i > /tmp/counter.new; "
	                      "mv /tmp/counter.new /tmp/counter; sleep 0.01; done");
	int64_t deadline = fk_mono_ms() + 60000;
	while (counter("frz") < 3) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20); /* a busy scan would take the CPU from what it waits for */
	}
	assert_int_equal(fk_box_freeze(rt, "frz", NULL), 0);
	bool frozen = false;
	assert_true(fk_box_exists(rt, "frz", &frozen));
	assert_true(frozen);
	long a = counter("frz");
	fk_sleep_ms(500);
	long b = counter("frz");
	assert_int_equal(a, b);
	/* a frozen box refuses new processes */
	const char *args[] = {"-c", "true"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2};
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "frz", &spec, NULL, NULL, &err), FK_ESTATE);
	assert_int_equal(fk_box_thaw(rt, "frz", NULL), 0);
	deadline = fk_mono_ms() + 60000;
	while (counter("frz") <= b + 2) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20); /* a busy scan would take the CPU from what it waits for */
	}
	fk_proc_unref(p);
	box_destroy("frz");
}

static void test_runtime__reboot_ends_processes_and_keeps_files(void **state)
{
	NEED_ISOLATION(rt);
	box_create("rb", false);
	box_write("rb", "/workspace/keep.txt", "sandbox", "kept");
	fk_proc *p = start_bg("rb", "sandbox", "exec sleep 1000");
	fk_sub *s;
	assert_int_equal(fk_sub_new(p, &s, NULL), 0);
	assert_int_equal(fk_box_freeze(rt, "rb", NULL), 0);
	assert_int_equal(fk_box_reboot(rt, "rb", NULL), 0);
	box_result r = {0};
	box_drain(s, &r);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	box_result_clear(&r);
	fk_sub_free(s);
	fk_proc_unref(p);
	bool frozen = true;
	assert_true(fk_box_exists(rt, "rb", &frozen));
	assert_false(frozen);
	char *o = sh("rb", "sandbox", "cat /workspace/keep.txt; echo; pgrep -x sleep || echo none");
	assert_string_equal(o, "kept\nnone\n");
	free(o);
	box_destroy("rb");
}

static void test_runtime__destroy_leaves_nothing(void **state)
{
	NEED_ISOLATION(rt);
	box_create("gone", true);
	pid_t init = fk_box_init_pid(rt, "gone");
	assert_true(init > 0);
	box_id id = box_ident(getpid(), "gone", init);
	unsigned long mntns = ns_inode(init, "mnt");
	assert_true(id.pidns != 0 && id.pidns != ns_inode(getpid(), "pid"));
	assert_true(mntns != 0 && mntns != ns_inode(getpid(), "mnt"));
	fk_proc *p = start_bg("gone", "sandbox", "sleep 1000 & sleep 1000 & exec sleep 1000");
	int64_t deadline = fk_mono_ms() + 60000;
	while (count_box(&id) < 4) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20); /* a busy scan would take the CPU from what it waits for */
	}
	assert_int_equal(fk_box_freeze(rt, "gone", NULL), 0); /* frozen boxes are destroyable */
	box_destroy("gone");
	int st;
	wait_end(p, &st);
	assert_true(WIFSIGNALED(st));
	fk_proc_unref(p);
	assert_int_equal(count_box(&id), 0);
	assert_false(mounts_mention("/gone/root"));
	assert_false(fk_box_exists(rt, "gone", NULL));
	assert_int_equal(access("/sys/fs/cgroup/freezer/fake-e2b/gone", F_OK), -1);
	fk_err err = {0};
	assert_int_equal(fk_box_destroy(rt, "gone", &err), FK_ENOTFOUND);
}

static int group_setup(void **state)
{
	fk_err err = {0};
	signal(SIGPIPE, SIG_IGN);
	if (fk_rt_new(&rt, NULL, &err) < 0) {
		fprintf(stderr, "fk_rt_new: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	fk_rt_free(rt);
	return 0;
}

/* fs.suid_dumpable 1 keeps a start dumpable after it changes ids, while it shares the server's
 * memory: an isolated runtime refuses it (and reads what /proc says at fk_rt_new). */
static void test_runtime__suid_dumpable_check(void **state)
{
	(void)state;
	fk_err err = {0};
	assert_int_equal(fk_rt_check_suid_dumpable("0\n", &err), 0);
	assert_int_equal(fk_rt_check_suid_dumpable("2\n", &err), 0);
	assert_int_equal(fk_rt_check_suid_dumpable("1\n", &err), FK_EINVAL);
	assert_string_equal(err.message,
	                    "fs.suid_dumpable is 1 (debug): a sandbox's process could trace a "
	                    "process the server starts and reach the server's memory; set it to 0 "
	                    "or 2 (sysctl -w fs.suid_dumpable=2) and start again");
	assert_int_equal(fk_rt_check_suid_dumpable("1", &err), FK_EINVAL);
	assert_int_equal(fk_rt_check_suid_dumpable(NULL, &err), FK_EIO);
	assert_string_equal(err.message, "cannot read /proc/sys/fs/suid_dumpable");
	assert_int_equal(fk_rt_check_suid_dumpable("", &err), FK_EIO);
	assert_int_equal(fk_rt_check_suid_dumpable("1x\n", &err), FK_EIO);
	assert_string_equal(err.message, "fs.suid_dumpable reads '1x\n', not a number");
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--child-box"))
		return child_box_main(argv[2]);
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n > 0)
		self_exe[n] = 0;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_runtime__unknown_box_and_bad_input),
	    cmocka_unit_test(test_runtime__suid_dumpable_check),
	    cmocka_unit_test(test_runtime__each_box_sees_only_its_own_processes),
	    cmocka_unit_test(test_runtime__tmp_is_private),
	    cmocka_unit_test(test_runtime__template_conventions),
	    cmocka_unit_test(test_runtime__commit_and_boot_from_layer),
	    cmocka_unit_test(test_runtime__snapshot_keeps_the_box),
	    cmocka_unit_test(test_runtime__tools_work_inside),
	    cmocka_unit_test(test_runtime__net_none_has_only_lo),
	    cmocka_unit_test(test_runtime__freeze_stops_progress_and_thaw_resumes),
	    cmocka_unit_test(test_runtime__reboot_ends_processes_and_keeps_files),
	    cmocka_unit_test(test_runtime__destroy_leaves_nothing),
	    cmocka_unit_test(test_runtime__exit_status_env_and_cwd),
	    cmocka_unit_test(test_runtime__kill_ends_stream_despite_background_holder),
	    cmocka_unit_test(test_runtime__exit_ends_stream_despite_background_holder),
	    cmocka_unit_test(test_runtime__pty_is_a_terminal),
	    cmocka_unit_test(test_runtime__sigterm_handler_output_does_not_kill_it),
	    cmocka_unit_test(test_runtime__stdin_pipe),
	    cmocka_unit_test(test_runtime__slow_subscriber_does_not_grow_memory),
	    cmocka_unit_test(test_runtime__output_without_subscriber_is_discarded),
	    cmocka_unit_test(test_runtime__upload_through_symlink_stays_inside),
	    cmocka_unit_test(test_runtime__upload_semantics),
	    cmocka_unit_test(test_runtime__upload_64mib_is_fast),
	    cmocka_unit_test(test_runtime__stat_list_mkdir_move_remove),
	    cmocka_unit_test(test_runtime__rt_free_leaves_nothing),
	    cmocka_unit_test(test_runtime__concurrent_starts_in_one_box),
	    cmocka_unit_test(test_runtime__killed_server_leaves_no_box_running),
	    cmocka_unit_test(test_runtime__degraded_mode_still_runs_processes),
	};
	/* FK_TEST_FILTER picks a few (tests/vm/v2-checks.sh on a cgroup v2 kernel) */
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
