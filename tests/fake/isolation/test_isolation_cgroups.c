/*
 * tests/fake/isolation/test_isolation_cgroups.c — where a box's tasks are placed (fake-e2b/
 * README.md "Isolation", docs/internals/exec-cost.md "Joining the box's cgroups"): a started
 * process in exactly its box's cgroups in every hierarchy the machine has (v1 and v2), PID 1's,
 * and in the reserve once the box is at its pids cap; made there by clone3(CLONE_INTO_CGROUP)
 * with no cgroup.procs write (fk_rt_cgroup_moves), or, where the kernel refuses it (forced:
 * no_clone_into_cgroup), moved there by one write each, to the same cgroups. Part of
 * test_fake_isolation (main in test_isolation.c).
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "isolation_test.h"
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

/* TSan builds make every task as before, and it moves itself (cg_join.c): one write each */
#if defined(__SANITIZE_THREAD__)
#define MADE_IN_PLACE 0
#else
#define MADE_IN_PLACE 1
#endif

/* /proc/<pid>/`file` whole (at most cap - 1 bytes); "" when it cannot be read. */
static char *proc_file(pid_t pid, const char *file, char *buf, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, file);
	buf[0] = 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return buf;
	size_t got = 0;
	ssize_t n;
	while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	return buf;
}

static ino_t pidns_of(pid_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid);
	return stat(p, &st) == 0 ? st.st_ino : 0;
}

/* The host pid of the box process whose pid in the box (PID 1's namespace) is `inpid`. */
static pid_t host_pid_of(pid_t init, uint32_t inpid)
{
	ino_t ns = pidns_of(init);
	assert_true(ns != 0);
	DIR *d = opendir("/proc");
	assert_non_null(d);
	pid_t found = 0;
	for (struct dirent *de; !found && (de = readdir(d));) {
		pid_t pid = (pid_t)atoi(de->d_name);
		char st[4096];
		if (pid <= 0 || pidns_of(pid) != ns)
			continue;
		char *l = strstr(proc_file(pid, "status", st, sizeof(st)), "\nNSpid:");
		char *last = l ? strrchr(strtok(l + 1, "\n"), '\t') : NULL;
		if (last && (uint32_t)atoi(last + 1) == inpid)
			found = pid;
	}
	closedir(d);
	assert_true(found > 0);
	return found;
}

static bool v2_only(void)
{
	struct statfs sf;
	return statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Is there a unified hierarchy at all (v2 only, or a hybrid's /sys/fs/cgroup/unified)? */
static bool have_v2(void)
{
	struct statfs sf;
	return v2_only() ||
	       (statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC);
}

static fk_proc *start(fk_rt *r, const char *box, const char *cmd, const char *const *args, size_t n)
{
	fk_proc_spec spec = {.cmd = cmd, .args = args, .n_args = n, .user = "sandbox"};
	fk_proc *p = NULL;
	fk_err err = {0};
	int rc = fk_proc_start(r, box, &spec, &p, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "start %s: %s\n", cmd, err.message);
	assert_int_equal(rc, 0);
	return p;
}

/* PID 1's /proc/<pid>/cgroup with its pids placement "<box>/procs" made the reserve's (v2:
 * <box>/reserve; v1 pids: <box>): exactly one such line. */
static void reserve_view(const char *init_view, const char *box, char *out, size_t cap)
{
	char from[128], to[128];
	snprintf(from, sizeof(from), "/%s/procs\n", box);
	snprintf(to, sizeof(to), v2_only() ? "/%s/reserve\n" : "/%s\n", box);
	const char *at = strstr(init_view, from);
	assert_non_null(at);
	assert_null(strstr(at + 1, from));
	snprintf(out, cap, "%.*s%s%s", (int)(at - init_view), init_view, to, at + strlen(from));
}

/* pids.current of the box's procs leaf (v2) or its v1 pids procs cgroup, read on the host. */
static long procs_current(pid_t init)
{
	char view[4096], p[2048], buf[64];
	proc_file(init, "cgroup", view, sizeof(view));
	const char *l = v2_only() ? strstr(view, "0::") : strstr(view, ":pids:");
	assert_non_null(l);
	l = strchr(l + 2, ':') + 1;
	int len = (int)strcspn(l, "\n");
	snprintf(p, sizeof(p), "/sys/fs/cgroup%s/%.*s/pids.current", v2_only() ? "" : "/pids", len,
	         l);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return atol(buf);
}

/* In box `box` of runtime `r` (made here, pids cap 64): a start, then 63 tasks fill the cap
 * and a start goes to the reserve; each start's /proc/<pid>/cgroup checked whole against PID
 * 1's. The runtime's cgroup moves meanwhile (box create included). */
static uint64_t placements(fk_rt *r, const char *box)
{
	uint64_t before = fk_rt_cgroup_moves(r);
	fk_box_options o = {.pids_max = 64};
	fk_err err = {0};
	assert_int_equal(fk_box_create(r, box, &o, &err), 0);
	pid_t init = fk_box_init_pid(r, box);
	assert_true(init > 0);
	char init_view[4096], view[4096], want[4096];
	proc_file(init, "cgroup", init_view, sizeof(init_view));
	const char *sleep_args[] = {"600"};
	fk_proc *p = start(r, box, "/bin/sleep", sleep_args, 1);
	assert_string_equal(
	    proc_file(host_pid_of(init, fk_proc_pid(p)), "cgroup", view, sizeof(view)), init_view);
	/* the cap: forks until the box's procs cgroup refuses, then holds them */
	const char *fill[] = {"-e",
	                      "while (defined(my $p = fork)) { if (!$p) { sleep 600; exit } } "
	                      "sleep 600"};
	fk_proc *bomb = start(r, box, "/usr/bin/perl", fill, 2);
	int64_t deadline = fk_mono_ms() + 60000;
	while (procs_current(init) < 64) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20);
	}
	fk_proc *q = start(r, box, "/bin/sleep", sleep_args, 1);
	reserve_view(init_view, box, want, sizeof(want));
	assert_string_equal(
	    proc_file(host_pid_of(init, fk_proc_pid(q)), "cgroup", view, sizeof(view)), want);
	assert_int_equal(procs_current(init), 64);
	uint64_t moves = fk_rt_cgroup_moves(r) - before;
	fk_proc_unref(p);
	fk_proc_unref(bomb);
	fk_proc_unref(q);
	assert_int_equal(fk_box_destroy(r, box, NULL), 0);
	return moves;
}

void test_isolation__starts_are_made_in_the_boxs_cgroups(void **state)
{
	NEED_ISOLATION(rt);
	/* three starts and a boot: none moved by a cgroup.procs write */
	assert_int_equal(placements(rt, "cgin"), MADE_IN_PLACE || !have_v2() ? 0 : 4);
}

void test_isolation__refused_clone3_moves_to_the_same_cgroups(void **state)
{
	NEED_ISOLATION(rt);
	char dir[] = "/var/tmp/fk-iso-noclone3-XXXXXX";
	assert_non_null(mkdtemp(dir));
	fk_rt *r2 = NULL;
	fk_rt_options o = {.state_dir = dir, .no_clone_into_cgroup = true};
	fk_err err = {0};
	assert_int_equal(fk_rt_new(&r2, &o, &err), 0);
	/* the boot's PID 1 and each of the three starts moved once into the v2 cgroup (none
	 * where the machine has no unified hierarchy: the v1 tasks writes are not moves) */
	assert_int_equal(placements(r2, "cgmv"), have_v2() ? 4 : 0);
	fk_rt_free(r2);
	rmdir(dir);
}
