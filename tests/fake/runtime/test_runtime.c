/*
 * tests/fake/runtime/test_runtime.c — fake-e2b's sandbox runtime (docs/internals/architecture.md
 * "fake-e2b") against this machine: isolation, pause, reboot, destroy, envd process semantics and
 * the files API. Needs root, namespaces and the freezer cgroup; without them every isolation test
 * skips with the reason.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "runtime.h"
#include "test_filter.h"

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

static fk_rt *rt;

/* bash -c <script> as `user`; returns stdout (caller frees), asserts exit 0. */
static char *sh(const char *box, const char *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *sh(const char *box, const char *user, const char *fmt, ...)
{
	char *script;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&script, fmt, ap) >= 0);
	va_end(ap);
	box_result r;
	assert_int_equal(box_bash(rt, box, user, false, &r, "%s", script), 0);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "script `%s` failed (status %d): %s%s\n", script, r.status, r.out,
		        r.err);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	free(script);
	free(r.err);
	return r.out;
}

static fk_proc *start_bg(const char *box, const char *user, const char *script)
{
	const char *args[] = {"-c", script};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = user};
	fk_proc *p = NULL;
	fk_err err = {0};
	int rc = fk_proc_start(rt, box, &spec, &p, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "start failed: %s\n", err.message);
	assert_int_equal(rc, 0);
	return p;
}

static void box_create(const char *id, bool net_none)
{
	char mark[96];
	snprintf(mark, sizeof(mark), "FK_TEST_MARK=%d-%s", (int)getpid(), id);
	const char *envs[] = {"E2B_SANDBOX=true", "FK_BOX_ENV=box", "FK_OVERRIDE=box", mark};
	fk_box_options o = {.net_none = net_none, .envs = envs, .n_envs = 4};
	fk_err err = {0};
	int rc = fk_box_create(rt, id, &o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

static void box_destroy(const char *id)
{
	assert_int_equal(fk_box_destroy(rt, id, NULL), 0);
}

static void wait_end(fk_proc *p, int *status)
{
	int64_t deadline = fk_mono_ms() + 30000;
	while (!fk_proc_ended(p, status)) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(10);
	}
}

/* Whole content of a file in the box, through the files API. */
static char *box_read(const char *box, const char *path)
{
	int fd;
	uint64_t size;
	fk_err err = {0};
	int rc = fk_file_read_open(rt, box, path, "root", &fd, &size, &err);
	if (rc != 0)
		return NULL;
	char *buf = calloc(1, size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, size), (ssize_t)size);
	close(fd);
	return buf;
}

static void box_write(const char *box, const char *path, const char *user, const char *data)
{
	fk_writer *w;
	fk_err err = {0};
	int rc = fk_file_write_open(rt, box, path, user, &w, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "write_open %s: %s\n", path, err.message);
	assert_int_equal(rc, 0);
	assert_int_equal(fk_writer_write(w, data, strlen(data), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
}

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

static unsigned long ns_inode(pid_t pid, const char *ns)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns);
	return stat(p, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static unsigned long long start_time(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	unsigned long long t = 0;
	if (f && fgets(buf, sizeof(buf), f)) {
		char *s = strrchr(buf, ')'); /* field 22, counted after the comm field */
		for (int field = 2; s && field < 22; field++)
			s = strchr(s + 1, ' ');
		if (s)
			t = strtoull(s + 1, NULL, 10);
	}
	if (f)
		fclose(f);
	return t;
}

static bool has_env(pid_t pid, const char *kv)
{
	char p[64], buf[65536];
	snprintf(p, sizeof(p), "/proc/%d/environ", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = 0;
		if (!strcmp(buf + i, kv))
			return true;
	}
	return false;
}

/* A box's tasks: in its PID namespace (by inode, which the kernel reuses) AND either its PID 1
 * (pid + start time) or carrying the box's marker env (FK_TEST_MARK, set by box_create). */
typedef struct box_id {
	unsigned long pidns;
	pid_t init;
	unsigned long long init_start;
	char mark[96];
} box_id;

static box_id box_ident(pid_t owner, const char *box, pid_t init)
{
	box_id b = {.pidns = ns_inode(init, "pid"), .init = init, .init_start = start_time(init)};
	snprintf(b.mark, sizeof(b.mark), "FK_TEST_MARK=%d-%s", (int)owner, box);
	return b;
}

static int count_box(const box_id *b)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || ns_inode((pid_t)pid, "pid") != b->pidns)
			continue;
		if ((pid == b->init && start_time((pid_t)pid) == b->init_start) ||
		    has_env((pid_t)pid, b->mark))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static bool mounts_mention(const char *needle)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	bool found = false;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = true;
	if (f)
		fclose(f);
	return found;
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

/* ------------------------------------------------------------ processes */

static void test_runtime__exit_status_env_and_cwd(void **state)
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

static void test_runtime__exit_ends_stream_despite_background_holder(void **state)
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

static void test_runtime__pty_is_a_terminal(void **state)
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

static void test_runtime__kill_ends_stream_despite_background_holder(void **state)
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

static void test_runtime__sigterm_handler_output_does_not_kill_it(void **state)
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

static void test_runtime__stdin_pipe(void **state)
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

static void test_runtime__slow_subscriber_does_not_grow_memory(void **state)
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
static void test_runtime__output_without_subscriber_is_discarded(void **state)
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

/* ------------------------------------------------------------ files */

static void test_runtime__upload_through_symlink_stays_inside(void **state)
{
	NEED_ISOLATION(rt);
	box_create("sym", false);
	char host_target[128];
	snprintf(host_target, sizeof(host_target), "/etc/fk-escape-%d", (int)getpid());
	free(sh("sym", "root",
	        "ln -s %s /workspace/abs; ln -s ../../../../../..%s /workspace/rel; "
	        "ln -s /proc/1/root%s /workspace/magic",
	        host_target, host_target, host_target));
	box_write("sym", "/workspace/abs", "sandbox", "one");
	assert_int_equal(access(host_target, F_OK), -1);
	char *o = sh("sym", "root", "cat %s; echo; stat -c %%U %s", host_target, host_target);
	assert_string_equal(o, "one\nsandbox\n");
	free(o);
	box_write("sym", "/workspace/rel", "sandbox", "two");
	assert_int_equal(access(host_target, F_OK), -1);
	o = box_read("sym", host_target);
	assert_string_equal(o, "two");
	free(o);
	/* magic links are refused rather than followed */
	fk_writer *w = NULL;
	assert_true(fk_file_write_open(rt, "sym", "/workspace/magic", "sandbox", &w, NULL, NULL) <
	            0);
	assert_int_equal(access(host_target, F_OK), -1);
	/* reading through a symlink stays inside too */
	free(sh("sym", "root", "ln -s /etc/hostname /workspace/hn; echo boxname > /etc/hostname"));
	o = box_read("sym", "/workspace/hn");
	assert_string_equal(o, "boxname\n");
	free(o);
	box_destroy("sym");
}

static void test_runtime__upload_semantics(void **state)
{
	NEED_ISOLATION(rt);
	box_create("up", false);
	char *abs = NULL;
	fk_writer *w;
	fk_err err = {0};
	/* parents are created and chowned to the user; relative paths are under HOME */
	assert_int_equal(fk_file_write_open(rt, "up", "a/b/c.txt", "sandbox", &w, &abs, &err), 0);
	assert_string_equal(abs, "/workspace/a/b/c.txt");
	free(abs);
	assert_int_equal(fk_writer_write(w, "xyz", 3, NULL), 0);
	assert_int_equal(fk_writer_close(w, NULL), 0);
	char *o = sh("up", "root",
	             "stat -c '%%U %%a' /workspace/a /workspace/a/b; "
	             "stat -c '%%U %%a %%s' /workspace/a/b/c.txt");
	assert_string_equal(o, "sandbox 755\nsandbox 755\nsandbox 644 3\n");
	free(o);
	/* an existing root file is chowned before truncation */
	free(sh("up", "root", "echo long-old-content > /workspace/old; chmod 600 /workspace/old"));
	box_write("up", "/workspace/old", "sandbox", "new");
	o = sh("up", "root", "stat -c '%%U %%a' /workspace/old; cat /workspace/old");
	assert_string_equal(o, "sandbox 600\nnew");
	free(o);
	/* a directory is refused */
	assert_int_equal(fk_file_write_open(rt, "up", "/workspace/a", "sandbox", &w, NULL, &err),
	                 FK_EISDIR);
	assert_string_equal(err.message, "path is a directory: /workspace/a");
	/* a parent that is a file */
	assert_int_equal(
	    fk_file_write_open(rt, "up", "/workspace/old/x", "sandbox", &w, NULL, &err),
	    FK_ENOTDIR);
	/* read: missing and directory */
	int fd;
	uint64_t size;
	assert_int_equal(fk_file_read_open(rt, "up", "/nope", NULL, &fd, &size, &err),
	                 FK_ENOTFOUND);
	assert_string_equal(err.message, "path '/nope' does not exist");
	assert_int_equal(fk_file_read_open(rt, "up", "/workspace", NULL, &fd, &size, &err),
	                 FK_EISDIR);
	assert_string_equal(err.message, "path '/workspace' is a directory");
	/* X-Metadata-* become user.e2b.<lowercased key> xattrs */
	assert_int_equal(fk_file_write_open(rt, "up", "/workspace/meta", "sandbox", &w, NULL, &err),
	                 0);
	int mrc = fk_writer_set_meta(w, "Owner-Tag", "v1", &err);
	assert_int_equal(fk_writer_close(w, NULL), 0);
	if (mrc == 0) {
		assert_int_equal(
		    fk_file_read_open(rt, "up", "/workspace/meta", NULL, &fd, &size, &err), 0);
		char val[16] = {0};
		assert_int_equal(fgetxattr(fd, "user.e2b.owner-tag", val, sizeof(val) - 1), 2);
		assert_string_equal(val, "v1");
		close(fd);
	} else {
		fprintf(stderr, "note: no user xattrs on the state dir: %s\n", err.message);
	}
	/* read of the host's /usr as seen inside */
	assert_int_equal(fk_file_read_open(rt, "up", "/usr/bin/env", NULL, &fd, &size, &err), 0);
	assert_true(size > 0);
	close(fd);
	box_destroy("up");
}

static void test_runtime__upload_64mib_is_fast(void **state)
{
	NEED_ISOLATION(rt);
	box_create("big", false);
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	assert_non_null(buf);
	memset(buf, 'z', chunk);
	fk_writer *w;
	int64_t t0 = fk_mono_ms();
	assert_int_equal(fk_file_write_open(rt, "big", "/workspace/big", "sandbox", &w, NULL, NULL),
	                 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(fk_writer_write(w, buf, chunk, NULL), 0);
	assert_int_equal(fk_writer_close(w, NULL), 0);
	int64_t ms = fk_mono_ms() - t0;
	fprintf(stderr, "64 MiB upload: %lld ms\n", (long long)ms);
	assert_true(ms < 5000); /* generous bound; ~0.1 s here, need >= 200 MB/s */
	fk_entry e;
	assert_int_equal(fk_file_stat(rt, "big", "/workspace/big", NULL, &e, NULL), 0);
	assert_int_equal(e.size, 64 * 1024 * 1024);
	fk_entry_clear(&e);
	free(buf);
	box_destroy("big");
}

static void test_runtime__stat_list_mkdir_move_remove(void **state)
{
	NEED_ISOLATION(rt);
	box_create("fs", false);
	free(sh("fs", "sandbox", "mkdir -p d/sub && printf hello > d/f.txt && ln -s f.txt d/l"));
	fk_entry e;
	fk_err err = {0};
	assert_int_equal(fk_file_stat(rt, "fs", "/workspace/d/f.txt", "sandbox", &e, &err), 0);
	assert_string_equal(e.name, "f.txt");
	assert_string_equal(e.path, "/workspace/d/f.txt");
	assert_int_equal(e.type, FK_FT_FILE);
	assert_int_equal(e.size, 5);
	assert_int_equal(e.mode & 0777, 0644);
	assert_string_equal(e.permissions, "-rw-r--r--");
	assert_string_equal(e.owner, "sandbox");
	assert_string_equal(e.group, "sandbox");
	assert_null(e.symlink_target);
	assert_true(e.mtime_sec > 0);
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "fs", "/workspace/d/l", NULL, &e, NULL), 0);
	assert_int_equal(e.type, FK_FT_SYMLINK);
	assert_string_equal(e.symlink_target, "/workspace/d/f.txt"); /* resolved, envd */
	assert_int_equal(e.target_type, FK_FT_FILE);
	assert_int_equal(e.target_mode & 0777, 0644);
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "fs", "/", NULL, &e, NULL), 0);
	assert_int_equal(e.type, FK_FT_DIR);
	assert_string_equal(e.path, "/");
	assert_string_equal(e.permissions, "drwxr-xr-x");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "fs", "/nope", NULL, &e, &err), FK_ENOTFOUND);

	fk_entry *v;
	size_t n;
	assert_int_equal(fk_file_list(rt, "fs", "/workspace/d", NULL, 1, &v, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].path, "/workspace/d/f.txt");
	assert_string_equal(v[1].path, "/workspace/d/l");
	assert_string_equal(v[2].path, "/workspace/d/sub");
	assert_int_equal(v[2].type, FK_FT_DIR);
	fk_entries_free(v, n);
	assert_int_equal(fk_file_list(rt, "fs", "/workspace", NULL, 2, &v, &n, NULL), 0);
	assert_int_equal(n, 4);
	fk_entries_free(v, n);
	assert_int_equal(fk_file_list(rt, "fs", "/workspace/d/f.txt", NULL, 1, &v, &n, NULL),
	                 FK_ENOTDIR);
	assert_int_equal(fk_file_list(rt, "fs", "/workspace/zz", NULL, 1, &v, &n, NULL),
	                 FK_ENOTFOUND);

	assert_int_equal(fk_file_mkdir(rt, "fs", "/workspace/m/n", "sandbox", &e, NULL), 0);
	assert_int_equal(e.type, FK_FT_DIR);
	assert_string_equal(e.owner, "sandbox");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_mkdir(rt, "fs", "/workspace/m/n", "sandbox", NULL, NULL),
	                 FK_EEXIST);
	assert_int_equal(fk_file_mkdir(rt, "fs", "/workspace/d/f.txt", "sandbox", NULL, NULL),
	                 FK_ENOTDIR);

	assert_int_equal(fk_file_move(rt, "fs", "/workspace/d/f.txt", "/workspace/x/y/g.txt",
	                              "sandbox", &e, NULL),
	                 0);
	assert_string_equal(e.path, "/workspace/x/y/g.txt");
	assert_int_equal(e.size, 5);
	fk_entry_clear(&e);
	assert_int_equal(
	    fk_file_move(rt, "fs", "/workspace/none", "/workspace/z", NULL, NULL, NULL),
	    FK_ENOTFOUND);

	assert_int_equal(fk_file_remove(rt, "fs", "/workspace/d", NULL, NULL), 0);
	assert_int_equal(fk_file_remove(rt, "fs", "/workspace/d", NULL, NULL), 0);
	char *o = sh("fs", "sandbox", "ls /workspace; stat -c %%U /workspace/x/y");
	assert_string_equal(o, "m\nx\nsandbox\n");
	free(o);
	box_destroy("fs");
}

static void test_runtime__unknown_box_and_bad_input(void **state)
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

static void test_runtime__rt_free_leaves_nothing(void **state)
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

static void test_runtime__concurrent_starts_in_one_box(void **state)
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

static void test_runtime__degraded_mode_still_runs_processes(void **state)
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
static int child_box_main(const char *state_dir)
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

static char self_exe[4096];

static void test_runtime__killed_server_leaves_no_box_running(void **state)
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
	/* FK_TEST_FILTER: a few of them (tests/vm/v2-checks.sh on a cgroup v2 kernel) */
	return fkt_run_filtered(tests, sizeof(tests) / sizeof(tests[0]), group_setup,
	                        group_teardown);
}
