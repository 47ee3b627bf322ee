/*
 * tests/fake/isolation/test_isolation_limits.c — the limits that keep one box from starving the
 * machine (fake-e2b/README.md "Isolation"): a fork bomb held, memory hogs OOM-killed inside, the
 * limits as the box's cgroup files, its usage, fds across 1000 execs, the disk cap. Part of
 * test_fake_isolation (main in test_isolation.c).
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "dirwatch.h"
#include "isolation_test.h"
#include "runtime.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ limits */

/* Processes in the box, or -1 when the count itself could not fork (the bomb won a race for
 * a slot while it was still growing). */
static int count_procs(const char *box)
{
	box_result r;
	/* builtins only: the count forks nothing, so it adds exactly one process (its shell); a
	 * pipeline (`ls /proc | grep -c`) counted itself as 3 or 4 depending on how far its own
	 * forks had got when ls read /proc */
	assert_int_equal(box_bash(rt, box, "root", true, &r,
	                          "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n"),
	                 0);
	int v = WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 ? atoi(r.out) : -1;
	free(r.out);
	return v;
}

void test_isolation__fork_bomb_is_held_and_box_recovers(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.pids_max = 64, .cpu_count = 1};
	box_create_opts("bomb", &o);
	const char *args[] = {"-c", "b(){ b | b & }; b"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "bomb", &spec, &p, NULL, &err), 0);
	/* the bomb fills its 64 slots; starts through envd still work (the reserve) */
	int64_t deadline = fk_mono_ms() + 60000;
	int n;
	while ((n = count_procs("bomb")) < 60) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(100);
	}
	for (int i = 0; i < 5; i++) {
		n = count_procs("bomb");
		assert_true(n > 0);       /* near the cap, starts run in the reserve */
		assert_true(n <= 64 + 8); /* + the counting shell in the reserve */
	}
	/* kill everything (the library's kill_all runs through a start like this one) */
	deadline = fk_mono_ms() + 60000;
	for (;;) {
		n = count_procs("bomb");
		if (n > 0 && n <= 4)
			break;
		assert_true(fk_mono_ms() < deadline);
		box_result k;
		assert_int_equal(
		    box_bash(rt, "bomb", "root", true, &k, "kill -9 -1 2>/dev/null; true"), 0);
		free(k.out);
	}
	int st;
	while (!fk_proc_ended(p, &st)) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(10);
	}
	fk_proc_unref(p);
	char *ok = sh("bomb", "sandbox", "for i in $(seq 20); do sleep 0 & done; wait; echo ok");
	assert_string_equal(ok, "ok\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "bomb", NULL), 0);
}

void test_isolation__memory_hog_is_killed_inside(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 64};
	box_create_opts("hog", &o);
	box_result r;
	assert_int_equal(box_bash(rt, "hog", "sandbox", true, &r,
	                          "exec perl -e '$x = \"a\" x (400 << 20); print length $x'"),
	                 0);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	assert_string_equal(r.out, "");
	free(r.out);
	char *ok =
	    sh("hog", "sandbox", "perl -e '$x = \"a\" x (8 << 20); print length($x), qq(\\n)'");
	assert_string_equal(ok, "8388608\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "hog", NULL), 0);
}

/* What a host file holds (at most cap - 1 bytes), "<missing>" when it cannot be opened. */
static const char *host_file(const char *dir, const char *file, char *buf, size_t cap)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(buf, cap, "%s", "<missing>");
		return buf;
	}
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* The host's path of `pid`'s cgroup in hierarchy `ctl` ("" for the unified one: "0::"), from
 * /proc/<pid>/cgroup (the test runs in the host's cgroup namespace). */
static void cgroup_of(pid_t pid, const char *ctl, char *out, size_t cap)
{
	char p[64], line[1024];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(p, "re");
	assert_non_null(f);
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		if (!strcmp(c1 + 1, ctl)) {
			snprintf(out, cap, "%s", c2 + 1);
			break;
		}
	}
	fclose(f);
	assert_true(out[0] == '/');
}

/* The limits reach the kernel as configured, on whichever cgroup layout the machine has: read
 * back from the box's cgroup files on the host (cgroup v2: its directory and its procs leaf,
 * where PID 1 lives; v1: each controller's directory). */
void test_isolation__limits_are_the_boxs_cgroup_files(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 512, .cpu_count = 2, .pids_max = 1024};
	box_create_opts("lim", &o);
	pid_t init = fk_box_init_pid(rt, "lim");
	assert_true(init > 0);
	char rel[1024], dir[1200], buf[256];
	struct statfs sf;
	assert_int_equal(statfs("/sys/fs/cgroup", &sf), 0);
	if (sf.f_type == CGROUP2_SUPER_MAGIC) {
		cgroup_of(init, "", rel, sizeof(rel));
		/* PID 1 is in the leaf <box>/procs, never in the box's own cgroup */
		size_t n = strlen(rel);
		assert_true(n > 10 && !strcmp(rel + n - 10, "/lim/procs"));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", rel);
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1024\n");
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%.*s", (int)(n - 6), rel);
		assert_string_equal(host_file(dir, "memory.max", buf, sizeof(buf)), "536870912\n");
		if (strcmp(host_file(dir, "memory.swap.max", buf, sizeof(buf)), "<missing>"))
			assert_string_equal(buf, "0\n");
		assert_string_equal(host_file(dir, "cpu.max", buf, sizeof(buf)), "200000 100000\n");
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1088\n");
		assert_string_equal(host_file(dir, "cgroup.procs", buf, sizeof(buf)), "");
		assert_string_equal(host_file(dir, "cgroup.subtree_control", buf, sizeof(buf)),
		                    "pids\n");
	} else {
		cgroup_of(init, "memory", rel, sizeof(rel));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", rel);
		assert_string_equal(host_file(dir, "memory.limit_in_bytes", buf, sizeof(buf)),
		                    "536870912\n");
		cgroup_of(init, "cpu", rel, sizeof(rel));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu%s", rel);
		assert_string_equal(host_file(dir, "cpu.cfs_quota_us", buf, sizeof(buf)),
		                    "200000\n");
		assert_string_equal(host_file(dir, "cpu.cfs_period_us", buf, sizeof(buf)),
		                    "100000\n");
		cgroup_of(init, "pids", rel, sizeof(rel));
		size_t n = strlen(rel);
		assert_true(n > 10 && !strcmp(rel + n - 10, "/lim/procs"));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/pids%s", rel);
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1024\n");
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/pids%.*s", (int)(n - 6), rel);
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1088\n");
	}
	assert_int_equal(fk_box_destroy(rt, "lim", NULL), 0);
}

/* E2B's default sandbox (512 MiB): a process that fills 600 MiB is OOM-killed inside, the box's
 * PID 1, the box and the runtime live on. */
void test_isolation__600_mib_in_a_512_mib_box_is_oom_killed(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 512};
	box_create_opts("oom600", &o);
	pid_t init = fk_box_init_pid(rt, "oom600");
	box_result r;
	assert_int_equal(box_bash(rt, "oom600", "sandbox", true, &r,
	                          "exec perl -e '$x = \"a\" x (600 << 20); print length $x'"),
	                 0);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	assert_string_equal(r.out, "");
	free(r.out);
	assert_false(fk_box_init_gone(rt, "oom600"));
	assert_int_equal(fk_box_init_pid(rt, "oom600"), init);
	char *ok = sh("oom600", "sandbox", "echo alive");
	assert_string_equal(ok, "alive\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "oom600", NULL), 0);
}

/* The metrics read the box's cgroup: 100 MiB a process holds show in its memory used, the
 * configured limit as its total, and its CPU time counts. */
void test_isolation__usage_counts_the_boxs_memory(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 512};
	box_create_opts("use", &o);
	const char *args[] = {"-c", "exec perl -e '$x = \"a\" x (100 << 20); "
	                            "open(F, \">/tmp/held\"); close F; sleep 600'"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "use", &spec, &p, NULL, &err), 0);
	/* the file appears once the 100 MiB are written (perl briefly holds two copies) */
	int64_t deadline = fk_mono_ms() + 120000;
	for (;;) {
		box_result t;
		assert_int_equal(box_bash(rt, "use", "root", true, &t, "test -e /tmp/held"), 0);
		int st = t.status;
		free(t.out);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			break;
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(100);
	}
	fk_box_usage u;
	assert_int_equal(fk_box_usage_read(rt, "use", &u, &err), 0);
	fprintf(stderr, "usage: mem_used %llu, mem_cache %llu, mem_total %llu, cpu_ns %llu\n",
	        (unsigned long long)u.mem_used, (unsigned long long)u.mem_cache,
	        (unsigned long long)u.mem_total, (unsigned long long)u.cpu_ns);
	assert_true(u.mem_used >= 100ull << 20);
	assert_true(u.mem_used < 512ull << 20);
	assert_true(u.mem_total == 512ull << 20);
	assert_true(u.cpu_ns > 0);
	fk_proc_unref(p);
	assert_int_equal(fk_box_destroy(rt, "use", NULL), 0);
}

/* Once, each exec kept a pidfd and an eventfd for 30 s after it ended. */
void test_isolation__1000_execs_under_1024_fds(void **state)
{
	NEED_ISOLATION(rt);
	box_create("fds");
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = 1024;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	int failed = 0;
	for (int i = 0; i < 1000; i++) {
		fk_proc_spec spec = {.cmd = "/bin/true"};
		fk_proc *p;
		fk_err err = {0};
		if (fk_proc_start(rt, "fds", &spec, &p, NULL, &err) != 0) {
			if (failed++ == 0)
				fprintf(stderr, "exec %d: %s\n", i, err.message);
			continue;
		}
		int64_t deadline = fk_mono_ms() + 30000;
		while (!fk_proc_ended(p, NULL)) {
			assert_true(fk_mono_ms() < deadline);
			fk_sleep_ms(1);
		}
		fk_proc_unref(p);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(failed, 0);
	/* the exits are still there for Connect */
	assert_int_equal(fk_box_destroy(rt, "fds", NULL), 0);
}

/* ------------------------------------------------------------ disk */

/* Once, a 300 MiB file in a 100 MB-disk sandbox was written (into the host's file
 * system). Each box's files live in an ext4 image of its disk size: writes beyond it fail
 * inside with ENOSPC, the files API answers FK_ENOSPC, and the box and the server go on. */
void test_isolation__disk_is_capped_per_box(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.disk_mb = 100};
	box_create_opts("disk", &o);
	box_create("disk2");
	/* its image: exactly its size, all of it reserved on the state dir's file system (the
	 * blocks are allocated; a few more hold the file's extent tree) */
	char img[256];
	snprintf(img, sizeof(img), "%s/disk.disk", state_dir);
	struct stat st;
	assert_int_equal(stat(img, &st), 0);
	assert_int_equal(st.st_size, 100 * 1024 * 1024);
	assert_true(st.st_blocks * 512 >= 100 * 1024 * 1024);
	assert_true(st.st_blocks * 512 < 101 * 1024 * 1024);
	/* /dev/shm is host RAM: half the box's memory (512 MiB by default), as a VM's kernel
	 * sizes it */
	char *shm = sh("disk", "sandbox", "df -k --output=size /dev/shm | tail -1 | tr -d ' '");
	assert_string_equal(shm, "262144\n");
	free(shm);
	char *df = sh("disk", "sandbox",
	              "df -m --output=size / | tail -1 | tr -d ' '; "
	              "head -c 300M /dev/zero > /workspace/big 2>/tmp/err; echo rc=$?; "
	              "grep -c 'No space left on device' /tmp/err; "
	              "s=$(stat -c %s /workspace/big); [ $s -lt 104857600 ] && echo short; "
	              "rm /workspace/big && echo x > /workspace/after && cat /workspace/after");
	/* a 100 MiB ext4 file system without reserved blocks: a little less for its metadata */
	long size_mb = strtol(df, NULL, 10);
	assert_true(size_mb >= 90 && size_mb <= 100);
	assert_string_equal(strchr(df, '\n') + 1, "rc=1\n1\nshort\nx\n");
	free(df);

	/* through the files API: the write that crosses the cap fails with FK_ENOSPC */
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(
	    fk_file_write_open(rt, "disk", "/workspace/api-big", "sandbox", &w, NULL, &err), 0);
	static char chunk[1 << 20];
	memset(chunk, 'a', sizeof(chunk));
	int rc = 0, i;
	for (i = 0; i < 300 && rc == 0; i++)
		rc = fk_writer_write(w, chunk, sizeof(chunk), &err);
	assert_int_equal(rc, FK_ENOSPC);
	assert_true(i > 50 && i <= 100);
	fk_writer_close(w, NULL);
	assert_int_equal(fk_file_remove(rt, "disk", "/workspace/api-big", "sandbox", &err), 0);

	/* the metrics read its disk: its total is the size df shows inside, to the byte */
	char *dfb = sh("disk", "sandbox", "df -B1 --output=size / | tail -1 | tr -d ' '");
	fk_box_usage u;
	assert_int_equal(fk_box_usage_read(rt, "disk", &u, &err), 0);
	assert_int_equal(u.disk_total, strtoull(dfb, NULL, 10));
	assert_true(u.disk_used > 0 && u.disk_used < u.disk_total);
	free(dfb);

	/* the other box (default 1 GiB) did not lose a byte of its own */
	char *df2 = sh("disk2", "sandbox", "df -m --output=size / | tail -1 | tr -d ' '");
	assert_true(strtol(df2, NULL, 10) > 900);
	free(df2);
	/* the disk survives a reboot */
	char *kept = sh("disk", "sandbox", "cat /workspace/after");
	assert_int_equal(fk_box_reboot(rt, "disk", &err), 0);
	char *again = sh("disk", "sandbox", "cat /workspace/after");
	assert_string_equal(kept, again);
	free(kept);
	free(again);
	assert_int_equal(fk_box_destroy(rt, "disk", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "disk2", NULL), 0);
	/* nothing of the boxes is left in the state dir (their images are gone) */
	assert_int_equal(access(img, F_OK), -1);
}
