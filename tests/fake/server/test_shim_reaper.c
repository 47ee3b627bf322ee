/*
 * tests/fake/server/test_shim_reaper.c: a kept server that is its PID namespace's init (a
 * container's PID 1) reaps its exited process shims. A shim is forked twice, so it is no
 * child of the server's until it is orphaned: then it is reparented to the namespace's init,
 * which is the server there. Before, every exited shim stayed its zombie for good, one pid per
 * Start (20 after 20 Starts), until the container's pids ran out.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fkserver.h"

#define KEY "e2b_shim_reaper_test_key"

static const char *g_bin;

/* The children of `parent` named fk-shim: zombies in *zombies, the others in *alive. */
static void shims_of(pid_t parent, int *alive, int *zombies)
{
	*alive = *zombies = 0;
	DIR *d = opendir("/proc");
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char p[300], buf[512];
		snprintf(p, sizeof(p), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(p, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		char *close_paren = strrchr(buf, ')'), state = 0;
		int ppid = 0;
		if (!strstr(buf, "(fk-shim)") || !close_paren ||
		    sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2 || ppid != (int)parent)
			continue;
		if (state == 'Z')
			(*zombies)++;
		else
			(*alive)++;
	}
	if (d)
		closedir(d);
}

static void test_shim_reaper__a_pid1_server_reaps_exited_shims(void **unused)
{
	(void)unused;
	fks_pid1 ns;
	if (!fks_pid1_prepare(&ns, g_bin))
		skip();
	char state[96];
	snprintf(state, sizeof(state), "%s/st", ns.tmp);
	static const char *const flags[] = {"--quiet",           "--api-key", KEY,
	                                    "--sandbox-disk-mb", "64",        NULL};
	fks s;
	fks_pid1_start(&ns, &s, state, flags);
	pid_t server = ns.server;
	fks_box b;
	fks_box_create(&s, KEY, NULL, &b);
	for (int i = 0; i < 20; i++)
		assert_true(fks_box_run(&s, &b, "true"));
	int alive = 0, zombies = 0;
	long t0 = fk_mono_ms();
	do {
		shims_of(server, &alive, &zombies);
		if (alive || zombies)
			fk_sleep_ms(100);
	} while ((alive || zombies) && fk_mono_ms() - t0 < 30000);
	print_message("fk-shim children of the PID 1 server: %d alive, %d zombies, %ld ms after "
	              "the last Start\n",
	              alive, zombies, fk_mono_ms() - t0);
	/* the server goes first (a failed assertion would leave it running) */
	fks_box_delete(&s, KEY, &b);
	fks_pid1_stop(&ns, &s);
	fks_pid1_remove(&ns);
	assert_int_equal(zombies, 0); /* before: 20 */
	assert_int_equal(alive, 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shim_reaper__a_pid1_server_reaps_exited_shims),
	};
	return cmocka_run_group_tests_name("fake_shim_reaper", tests, NULL, NULL);
}
