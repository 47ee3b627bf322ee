/*
 * tests/fake/server/test_restart.c: fake-e2b and its state directory (fake-e2b/README.md
 * "What survives what"): one server per directory (a second is refused naming the first's
 * pid, a crashed one does not block the next), the directory printed at start.
 */
#define _GNU_SOURCE
#include <setjmp.h>
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

#include "fkserver.h"

static const char *g_bin;

/* A fresh directory for a test's state (removed by rm_state). */
static void new_state(char *out, size_t cap)
{
	snprintf(out, cap, "/var/tmp/fk-restart-XXXXXX");
	assert_non_null(mkdtemp(out));
}

static void rm_state(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_restart__second_server_on_a_directory_refused(void **unused)
{
	(void)unused;
	char dir[64], want[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	const char *flags[] = {"--quiet", NULL};
	assert_int_equal(fks_start_in(&a, g_bin, dir, flags), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), -1);
	assert_true(WIFEXITED(b.exit_status));
	assert_int_equal(WEXITSTATUS(b.exit_status), 1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is in use by another fake-e2b (pid %d); stop it "
	         "or give another --state-dir\n",
	         dir, (int)a.pid);
	assert_string_equal(b.out, want);
	/* the first one still serves */
	char h[200];
	snprintf(h, sizeof(h), "X-API-Key: %s", a.key);
	const char *hdr[] = {h, NULL};
	fkr *r = fks_req(&a, "GET", "/v2/sandboxes", hdr, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	/* a crash frees the directory: the next server starts on it */
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), 0);
	snprintf(want, sizeof(want), "fake-e2b: state directory %s (kept after exit)\n", dir);
	assert_int_equal(fks_stop(&b), 0);
	assert_non_null(strstr(b.out, want));
	fks_stop(&a);
	rm_state(dir);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restart__second_server_on_a_directory_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
