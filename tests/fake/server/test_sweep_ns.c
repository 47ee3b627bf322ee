/*
 * tests/fake/server/test_sweep_ns.c: the start-up sweep of dead runtimes' cgroups judges a
 * runtime's directory (fake-e2b/rt-<pid>-<n>-<pid namespace>) from any PID namespace. A server
 * in a child PID namespace (a container sharing the host's cgroupfs) sees no host pid: it took
 * every host server's runtime for dead and removed its empty cgroups (a box being made lost its
 * cgroup before PID 1 joined it: "join its cgroups: No such device"). A runtime holds an flock
 * on each of its directories for its life; the sweep leaves a locked one alone
 * (fake-e2b/README.md, "What survives what").
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fkserver.h"

#define KEY "e2b_sweep_ns_test_key"

static const char *g_bin;
/* the server in a child PID namespace: killed by the teardown when a test fails */
static fks_pid1 g_ns;
static const char *const flags[] = {"--quiet", "--api-key", KEY, "--sandbox-disk-mb", "64", NULL};

/* The cgroup directories (every hierarchy, every level) whose runtime directory matches the
 * glob `rt` (rt-<pid>-*...), sorted, one a line, into out. */
static void cgroup_dirs(const char *rt, char *out, size_t cap)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
	         "for d in /sys/fs/cgroup/*/fake-e2b/%s /sys/fs/cgroup/fake-e2b/%s; do "
	         "[ -d \"$d\" ] && find \"$d\" -type d; done 2>/dev/null | sort",
	         rt, rt);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = 0;
	pclose(p);
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int kill_ns_server(void **unused)
{
	(void)unused;
	fks_pid1_kill(&g_ns);
	return 0;
}

/* A host server's running sandbox and cgroups, and an idle host server's (empty) cgroups,
 * survive the start-up sweep of a server in a child PID namespace; both make sandboxes after
 * it. */
static void test_sweep_ns__a_child_namespace_server_spares_host_runtimes(void **unused)
{
	(void)unused;
	char state[96], glob[48], idle_glob[48];
	if (!fks_pid1_prepare(&g_ns, g_bin))
		skip();
	fks a, idle, b;
	fks_box run;
	assert_int_equal(fks_start(&a, g_bin, flags), 0);
	assert_int_equal(fks_start(&idle, g_bin, flags), 0);
	fks_box_create(&a, KEY, NULL, &run);
	fks_box_sh(&a, &run, "echo ok");
	snprintf(glob, sizeof(glob), "rt-%d-*", (int)a.pid);
	snprintf(idle_glob, sizeof(idle_glob), "rt-%d-*", (int)idle.pid);
	static char before[16384], after[16384], idle_before[4096], idle_after[4096];
	cgroup_dirs(glob, before, sizeof(before));
	cgroup_dirs(idle_glob, idle_before, sizeof(idle_before));
	assert_non_null(strstr(before, run.id));
	assert_true(lines(idle_before) > 0);
	/* b's start-up sweep is done once it listens */
	snprintf(state, sizeof(state), "%s/st", g_ns.tmp);
	fks_pid1_start(&g_ns, &b, state, flags);
	cgroup_dirs(glob, after, sizeof(after));
	cgroup_dirs(idle_glob, idle_after, sizeof(idle_after));
	print_message("host servers' cgroup directories: %d and %d before, %d and %d after\n",
	              lines(before), lines(idle_before), lines(after), lines(idle_after));
	assert_string_equal(after, before);
	assert_string_equal(idle_after, idle_before); /* before: none left */
	assert_true(fks_box_run(&a, &run, "echo ok"));
	fks_box second;
	fks_box_create(&idle, KEY, NULL, &second); /* before: 500, its cgroups gone */
	assert_true(fks_box_run(&idle, &second, "echo ok"));
	fks_box_delete(&idle, KEY, &second);
	fks_box_delete(&a, KEY, &run);
	fks_pid1_stop(&g_ns, &b);
	assert_int_equal(fks_stop(&idle), 0);
	assert_int_equal(fks_stop(&a), 0);
	fks_pid1_remove(&g_ns);
}

/* What a server in a child PID namespace left when it died (its namespace with it) is swept by
 * the next host server's start: its runtime's lock is free. */
static void test_sweep_ns__a_dead_child_namespace_runtime_is_swept(void **unused)
{
	(void)unused;
	char glob[64];
	if (!fks_pid1_prepare(&g_ns, g_bin))
		skip();
	fks c, d;
	fks_box run;
	fks_pid1_start(&g_ns, &c, NULL, flags);
	pid_t server = g_ns.server;
	fks_box_create(&c, KEY, NULL, &run);
	fks_box_sh(&c, &run, "echo ok");
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)server);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	/* its pid there is 1: the namespace's init */
	snprintf(glob, sizeof(glob), "rt-1-*-%llx", (unsigned long long)st.st_ino);
	static char left[16384], swept[16384];
	cgroup_dirs(glob, left, sizeof(left));
	assert_non_null(strstr(left, run.id));
	fks_pid1_kill(&g_ns); /* its namespace and sandbox die with it */
	fks_stop(&c);
	/* from here any server's start may sweep them (the suite runs others beside this one):
	 * what must hold is that they are gone once this test's next server has started */
	assert_int_equal(fks_start(&d, g_bin, flags), 0);
	cgroup_dirs(glob, swept, sizeof(swept));
	print_message("dead child-namespace runtime's cgroup directories: %d, then %d\n",
	              lines(left), lines(swept));
	assert_string_equal(swept, "");
	assert_int_equal(fks_stop(&d), 0);
	fks_pid1_remove(&g_ns);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_sweep_ns__a_child_namespace_server_spares_host_runtimes,
	                              kill_ns_server),
	    cmocka_unit_test_teardown(test_sweep_ns__a_dead_child_namespace_runtime_is_swept,
	                              kill_ns_server),
	};
	return cmocka_run_group_tests_name("fake_sweep_ns", tests, NULL, NULL);
}
