/*
 * tests/fake/cgroup/test_cgroup.c: fake-e2b's cgroup primitives (fake-e2b/runtime/linux/cgroup.c)
 * against directory trees the test lays out as the kernel would (cgroup v2's cgroup.controllers,
 * cpu.stat, memory.stat, cgroup.events...; v1's memory and cpuacct files): the parsing of what
 * the kernel reports and the exact text written for limits, freezing and controllers. Runs
 * anywhere, without root or cgroups: a real v2 kernel is tests/vm/run-v2.sh's job.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "linux/cgroup.h"

static char root[64];

/* <root>/<rel> holding exactly `text` (directories made as needed). */
static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* What <root>/<rel> holds (static buffer), or "<missing>". */
static const char *get(const char *rel)
{
	static char buf[4096];
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "<missing>";
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static const char *dir(const char *rel)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s%s%s", root, *rel ? "/" : "", rel);
	return p;
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/fk-cgroup-test-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* ------------------------------------------------------------ reading */

static void test_cgroup__read_u64_plain_max_and_keyed(void **state)
{
	(void)state;
	uint64_t v = 7;
	put("a/memory.max", "536870912\n");
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "memory.max", NULL, &v), 0);
	assert_true(v == 536870912u);
	put("a/pids.max", "max\n");
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "pids.max", NULL, &v), 0);
	assert_true(v == UINT64_MAX);
	/* a key is a whole word: file_mapped (listed first here) is not file */
	put("a/memory.stat", "anon 6291456\nfile_mapped 123\nfile 4194304\nkernel 65536\n");
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "memory.stat", "file", &v), 0);
	assert_true(v == 4194304u);
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "memory.stat", "anon", &v), 0);
	assert_true(v == 6291456u);
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "memory.stat", "kernel", &v), 0);
	assert_true(v == 65536u);
	v = 7;
	errno = 0;
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "memory.stat", "shmem", &v), -1);
	assert_int_equal(errno, ENODATA);
	assert_true(v == 7);
	put("a/junk", "-12\n");
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "junk", NULL, &v), -1);
	assert_int_equal(errno, ENODATA);
	put("a/empty", "");
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "empty", NULL, &v), -1);
	assert_int_equal(errno, ENODATA);
	assert_int_equal(fk_lx_cg_read_u64(dir("a"), "nope", NULL, &v), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_cgroup__has_word_is_exact(void **state)
{
	(void)state;
	put("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	assert_true(fk_lx_cg_has_word(dir(""), "cgroup.controllers", "cpu"));
	assert_true(fk_lx_cg_has_word(dir(""), "cgroup.controllers", "cpuset"));
	assert_true(fk_lx_cg_has_word(dir(""), "cgroup.controllers", "misc"));
	assert_false(fk_lx_cg_has_word(dir(""), "cgroup.controllers", "mem"));
	assert_false(fk_lx_cg_has_word(dir(""), "cgroup.controllers", "freezer"));
	assert_false(fk_lx_cg_has_word(dir(""), "cgroup.nope", "cpu"));
}

static void test_cgroup__pids_nearly_full_at_the_headroom(void **state)
{
	(void)state;
	put("p/pids.max", "1024\n");
	put("p/pids.current", "1007\n");
	assert_false(fk_lx_cg_pids_nearly_full(dir("p"), 16));
	put("p/pids.current", "1008\n");
	assert_true(fk_lx_cg_pids_nearly_full(dir("p"), 16));
	put("p/pids.max", "max\n");
	assert_false(fk_lx_cg_pids_nearly_full(dir("p"), 16));
	put("p/pids.max", "");
	assert_false(fk_lx_cg_pids_nearly_full(dir("p"), 16));
}

static void test_cgroup__v2_usage(void **state)
{
	(void)state;
	put("b/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n"
	                  "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
	put("b/memory.current", "10547200\n");
	put("b/memory.stat", "anon 6291456\nfile 4194304\nkernel 61440\nshmem 1048576\n"
	                     "file_mapped 8192\n");
	put("b/memory.max", "536870912\n");
	fk_lx_cg_usage u;
	fk_lx_cg2_usage(dir("b"), &u);
	assert_true(u.cpu_ns == 1500000u);
	assert_true(u.mem_cache == 4194304u);
	assert_true(u.mem_used == 10547200u - 4194304u); /* anon and the kernel's share */
	assert_true(u.mem_limit == 536870912u);
	put("b/memory.max", "max\n");
	fk_lx_cg2_usage(dir("b"), &u);
	assert_true(u.mem_limit == UINT64_MAX);
	/* no memory controller: no memory files, the CPU time still counts */
	put("c/cpu.stat", "usage_usec 42\n");
	fk_lx_cg2_usage(dir("c"), &u);
	assert_true(u.cpu_ns == 42000u);
	assert_true(u.mem_used == 0 && u.mem_cache == 0 && u.mem_limit == 0);
}

static void test_cgroup__v1_usage(void **state)
{
	(void)state;
	put("cpuacct/cpuacct.usage", "123456789\n");
	put("memory/memory.usage_in_bytes", "20480000\n");
	put("memory/memory.stat", "cache 1\nrss 2\ntotal_cache 4096000\ntotal_rss 16384000\n");
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	fk_lx_cg_usage u;
	char cpuacct[512];
	snprintf(cpuacct, sizeof(cpuacct), "%s", dir("cpuacct")); /* dir() has one buffer */
	fk_lx_cg1_usage(cpuacct, dir("memory"), &u);
	assert_true(u.cpu_ns == 123456789u);
	assert_true(u.mem_cache == 4096000u);
	assert_true(u.mem_used == 20480000u - 4096000u);
	assert_true(u.mem_limit == 9223372036854771712u);
	fk_lx_cg1_usage(NULL, NULL, &u);
	assert_true(u.cpu_ns == 0 && u.mem_used == 0 && u.mem_cache == 0 && u.mem_limit == 0);
}

/* ------------------------------------------------------------ writing */

static void test_cgroup__v2_limits_exact_text(void **state)
{
	(void)state;
	put("box/memory.max", "");
	put("box/memory.swap.max", "");
	put("box/cpu.max", "");
	put("box/pids.max", "");
	const char *what = "x";
	assert_int_equal(fk_lx_cg2_set_limits(dir("box"), 512u << 20, 2, 1024 + 64, &what), 0);
	assert_null(what);
	assert_string_equal(get("box/memory.max"), "536870912");
	assert_string_equal(get("box/memory.swap.max"), "0");
	assert_string_equal(get("box/cpu.max"), "200000 100000");
	assert_string_equal(get("box/pids.max"), "1088");
	/* no swap accounting: no memory.swap.max, none made; 0 leaves a limit unwritten */
	put("noswap/memory.max", "");
	put("noswap/cpu.max", "max 100000");
	assert_int_equal(fk_lx_cg2_set_limits(dir("noswap"), 64u << 20, 0, 0, &what), 0);
	assert_string_equal(get("noswap/memory.max"), "67108864");
	assert_string_equal(get("noswap/memory.swap.max"), "<missing>");
	assert_string_equal(get("noswap/cpu.max"), "max 100000");
	assert_string_equal(get("noswap/pids.max"), "<missing>");
	/* a controller not enabled there has no file: refused, and named */
	put("nocpu/memory.max", "");
	errno = 0;
	assert_int_equal(fk_lx_cg2_set_limits(dir("nocpu"), 1u << 20, 1, 100, &what), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(what, "cpu");
	assert_string_equal(get("nocpu/memory.max"), "1048576");
	put("nocpu/pids.max", "");
	assert_int_equal(fk_lx_cg_write_u64(dir("nocpu"), "pids.max", 4096), 0);
	assert_string_equal(get("nocpu/pids.max"), "4096");
}

static void test_cgroup__v2_enable_writes_what_is_missing(void **state)
{
	(void)state;
	static const char *const want[] = {"memory", "pids", "cpu"};
	/* all available, none enabled: one write of them all */
	put("e1/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	put("e1/cgroup.subtree_control", "");
	assert_int_equal(fk_lx_cg2_enable(dir("e1"), want, 3), 7);
	assert_string_equal(get("e1/cgroup.subtree_control"), "+memory +pids +cpu");
	/* enabled already: nothing written */
	put("e2/cgroup.controllers", "cpu memory pids\n");
	put("e2/cgroup.subtree_control", "cpu memory pids\n");
	assert_int_equal(fk_lx_cg2_enable(dir("e2"), want, 3), 7);
	assert_string_equal(get("e2/cgroup.subtree_control"), "cpu memory pids\n");
	/* cpu not available here: the others only */
	put("e3/cgroup.controllers", "memory pids\n");
	put("e3/cgroup.subtree_control", "");
	assert_int_equal(fk_lx_cg2_enable(dir("e3"), want, 3), 3);
	assert_string_equal(get("e3/cgroup.subtree_control"), "+memory +pids");
	/* pids enabled, memory available: only memory is asked for */
	put("e4/cgroup.controllers", "memory pids\n");
	put("e4/cgroup.subtree_control", "pids\n");
	assert_int_equal(fk_lx_cg2_enable(dir("e4"), want, 3), 3);
	assert_string_equal(get("e4/cgroup.subtree_control"), "+memory");
	/* the kernel refuses every write (no subtree_control to write): what was enabled only */
	put("e5/cgroup.controllers", "memory pids cpu\n");
	assert_int_equal(fk_lx_cg2_enable(dir("e5"), want, 3), 0);
	assert_string_equal(get("e5/cgroup.subtree_control"), "<missing>");
}

static void test_cgroup__v2_freeze_waits_for_the_event(void **state)
{
	(void)state;
	put("f/cgroup.freeze", "0\n");
	put("f/cgroup.events", "populated 1\nfrozen 1\n");
	assert_int_equal(fk_lx_cg2_freeze(dir("f"), true, 1000), 0);
	assert_string_equal(get("f/cgroup.freeze"), "1\n");
	/* the kernel never reports the thaw: the wait ends, ETIMEDOUT */
	errno = 0;
	assert_int_equal(fk_lx_cg2_freeze(dir("f"), false, 20), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_string_equal(get("f/cgroup.freeze"), "0\n");
	put("f/cgroup.events", "populated 0\nfrozen 0\n");
	assert_int_equal(fk_lx_cg2_freeze(dir("f"), false, 1000), 0);
	/* no freezer (Linux < 5.2): no cgroup.freeze */
	put("g/cgroup.events", "populated 1\n");
	assert_int_equal(fk_lx_cg2_freeze(dir("g"), true, 1000), -1);
	assert_int_equal(errno, ENOENT);
	put("f/cgroup.kill", "");
	assert_int_equal(fk_lx_cg2_kill(dir("f")), 0);
	assert_string_equal(get("f/cgroup.kill"), "1");
	assert_int_equal(fk_lx_cg2_kill(dir("g")), -1);
	assert_int_equal(errno, ENOENT);
}

/* a pid no process can have (above PID_MAX_LIMIT): kill gives ESRCH */
#define NO_PID 4194305

/* `name` under root, an empty directory. */
static void rt_dir(const char *name)
{
	assert_int_equal(mkdir(dir(name), 0755), 0);
}

static bool judged_dead(const char *name)
{
	int pid = 0, fd = fk_lx_cg_rt_dead(root, name, &pid);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* A runtime's directory is a dead one's only when its lock is free and, when it names this
 * PID namespace (or none), its pid is gone too; one of another namespace whose lock is free
 * is (its pid means nothing here). */
static void test_cgroup__rt_dead_by_lock_then_namespace(void **unused)
{
	(void)unused;
	unsigned long long own = fk_lx_pidns(), other = own + 1;
	assert_true(own != 0);
	char here_dead[64], here_live[64], there_free[64], there_held[64], legacy_live[64];
	snprintf(here_dead, sizeof(here_dead), "rt-%d-1-%llx", NO_PID, own);
	snprintf(here_live, sizeof(here_live), "rt-%d-1-%llx", (int)getpid(), own);
	snprintf(there_free, sizeof(there_free), "rt-%d-2-%llx", (int)getpid(), other);
	snprintf(there_held, sizeof(there_held), "rt-1-3-%llx", other);
	snprintf(legacy_live, sizeof(legacy_live), "rt-%d-4", (int)getpid());
	char legacy_dead[64];
	snprintf(legacy_dead, sizeof(legacy_dead), "rt-%d-5", NO_PID);
	rt_dir(here_dead);
	rt_dir(here_live);
	rt_dir(there_free);
	rt_dir(legacy_live);
	rt_dir(legacy_dead);
	rt_dir("kept-fe00-1");
	int held = fk_lx_cg_rt_claim(dir(there_held)); /* made here */
	assert_true(held >= 0);
	assert_true(judged_dead(here_dead));
	assert_false(judged_dead(here_live));
	assert_true(judged_dead(there_free));
	assert_false(judged_dead(there_held));
	assert_false(judged_dead(legacy_live));
	assert_true(judged_dead(legacy_dead));
	assert_false(judged_dead("kept-fe00-1"));
	/* a child that inherited the lock's fd (a fork before its exec or close_range) keeps it
	 * held after its runtime let go: the sweep skips it, never the other way round */
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t child = fork();
	if (child == 0) {
		close(go[1]);
		char c;
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	close(held);
	assert_false(judged_dead(there_held));
	close(go[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_true(judged_dead(there_held));
	/* the sweep removes what is judged dead, with its empty children, and nothing else */
	char sub[160];
	snprintf(sub, sizeof(sub), "%s/box", here_dead);
	rt_dir(sub);
	snprintf(sub, sizeof(sub), "%s/box/procs", here_dead);
	rt_dir(sub);
	held = fk_lx_cg_rt_claim(dir(there_held)); /* there already: claimed again */
	assert_true(held >= 0);
	fk_lx_cg_sweep(root);
	struct stat st;
	assert_int_equal(stat(dir(here_dead), &st), -1);
	assert_int_equal(stat(dir(there_free), &st), -1);
	assert_int_equal(stat(dir(legacy_dead), &st), -1);
	assert_int_equal(stat(dir(here_live), &st), 0);
	assert_int_equal(stat(dir(there_held), &st), 0);
	assert_int_equal(stat(dir(legacy_live), &st), 0);
	assert_int_equal(stat(dir("kept-fe00-1"), &st), 0);
	close(held);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_cgroup__read_u64_plain_max_and_keyed, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__has_word_is_exact, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__pids_nearly_full_at_the_headroom, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__v2_usage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__v1_usage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__v2_limits_exact_text, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__v2_enable_writes_what_is_missing, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__v2_freeze_waits_for_the_event, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_cgroup__rt_dead_by_lock_then_namespace, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
