/*
 * tests/fake/server/test_restart.c: fake-e2b and its state directory (fake-e2b/README.md
 * "What survives what"): one server per directory (a second is refused naming the first's
 * pid, a crashed one does not block the next), the directory printed at start.
 *
 * This file: what a state directory keeps across servers (damaged records refused, a reboot
 * and its orphans, snapshots and logs kept), a second server refused, and main. The others:
 * test_restart_live.c (live restore of running and paused sandboxes), test_restart_ephemeral.c
 * (the temporary directory without --state-dir, a directory others may write),
 * restart_support.c (the helpers they share).
 */
#define _GNU_SOURCE
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

/* A torn and a flipped record: refused with a log line, never loaded as a sandbox; its files
 * stay. */
static void test_restart__damaged_record_refused(void **unused)
{
	(void)unused;
	char dir[64], line[512], path[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box torn, flip, good;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &torn, "t");
	box_with_file(&a, &flip, "f");
	box_with_file(&a, &good, "g");
	assert_int_equal(fks_stop(&a), 0);
	/* cut the one record short, flip a byte of the other's body */
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, torn.id);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 7), 0);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, flip.id);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(fseek(f, -20, SEEK_END), 0);
	int c = fgetc(f);
	assert_int_equal(fseek(f, -20, SEEK_END), 0);
	fputc(c ^ 0x01, f);
	fclose(f);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	assert_state(&b, torn.id, "404");
	assert_state(&b, flip.id, "404");
	assert_state(&b, good.id, "running"); /* the stop left it running: adopted */
	assert_int_equal(count_listed(&b, ""), 1);
	assert_file(&b, &good, "g");
	fks_box_delete(&b, KEY, &good);
	assert_int_equal(fks_stop(&b), 0);
	/* what ran in the two refused ones is not left running unmanaged */
	snprintf(line, sizeof(line), "fake-e2b: sweep: sandbox %s: ", torn.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line), "fake-e2b: sweep: sandbox %s: ", flip.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line), "fake-e2b: state: sandboxes/%s refused: body is ", torn.id);
	assert_logged(&b, line);
	snprintf(line, sizeof(line),
	         "fake-e2b: state: sandboxes/%s refused: checksum mismatch (a damaged byte); not "
	         "loaded, kept as %s/.state/sandboxes/%s.bad",
	         flip.id, dir, flip.id);
	assert_logged(&b, line);
	/* their files are kept for whoever looks: never swept */
	snprintf(path, sizeof(path), "%s/%s", dir, flip.id);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s.bad", dir, torn.id);
	assert_int_equal(access(path, F_OK), 0);
	rm_state(dir);
}

/* The test's "reboot": the server and every process of its boxes killed. Every sandbox comes
 * back paused with its files; resume boots it cold (its processes are gone). Before it, a crash
 * leaves a paused sandbox's box frozen: the next start adopts it (resumed with its memory),
 * while a frozen box whose record is gone (deleted as the server crashed) is swept: killed,
 * its cgroups and files gone. */
static void test_restart__reboot_and_orphans(void **unused)
{
	(void)unused;
	char dir[64], line[512], path[256];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box run, paused, orphan;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &run, "r");
	box_with_file(&a, &paused, "p");
	box_with_file(&a, &orphan, "o");
	fks_box_sh(&a, &paused, "sleep 100000 </dev/null >/dev/null 2>&1 &");
	fks_box_sh(&a, &orphan, "sleep 100000 </dev/null >/dev/null 2>&1 &");
	pause_box(&a, paused.id);
	pause_box(&a, orphan.id);
	pid_t server = a.pid, frozen[64], orphans[64];
	int n_frozen = box_pids(server, paused.id, frozen, 64);
	int n_orphans = box_pids(server, orphan.id, orphans, 64);
	assert_true(n_frozen >= 2); /* its PID 1 and the sleep */
	assert_true(n_orphans >= 2);
	assert_int_equal(fks_kill(&a), 0);
	/* the crash leaves the paused boxes frozen, holding their disks */
	for (int i = 0; i < n_frozen; i++)
		assert_true(alive(frozen[i]));
	snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, orphan.id);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	for (int i = 0; i < n_frozen; i++)
		assert_true(alive(frozen[i]));
	for (int i = 0; i < n_orphans; i++)
		assert_false(alive(orphans[i]));
	assert_int_equal(box_pids(server, orphan.id, orphans, 64), 0);
	snprintf(path, sizeof(path), "%s/%s.disk", dir, orphan.id);
	assert_int_equal(access(path, F_OK), -1);
	assert_state(&b, orphan.id, "404");
	assert_state(&b, run.id, "running");
	assert_state(&b, paused.id, "paused");
	assert_int_equal(connect_box(&b, paused.id), 201);
	assert_file(&b, &paused, "p");
	/* with its memory: what ran before runs on */
	assert_true(fks_box_run(&b, &paused, "pgrep -x sleep"));
	pid_t live[64];
	int n_live = box_pids(b.pid, run.id, live, 64);
	n_live += box_pids(b.pid, paused.id, live + n_live, 64 - n_live);
	assert_true(n_live >= 3);
	/* now the reboot: the server and every box process die at once */
	kill(b.pid, SIGKILL);
	for (int i = 0; i < n_live; i++)
		kill(live[i], SIGKILL);
	assert_int_equal(fks_kill(&b), 0); /* reaped here */
	for (int i = 0; i < n_live; i++)
		for (long deadline = fk_mono_ms() + 30000;
		     alive(live[i]) && fk_mono_ms() < deadline;)
			fk_sleep_ms(10);
	snprintf(line, sizeof(line), "fake-e2b: sweep: sandbox %s: ", orphan.id);
	assert_logged(&b, line);
	/* files no record names (a sandbox deleted as the server crashed) go at the next start */
	char stray[128], stray_disk[160];
	snprintf(stray, sizeof(stray), "%s/istray0000000000000000", dir);
	snprintf(stray_disk, sizeof(stray_disk), "%s.disk", stray);
	assert_int_equal(mkdir(stray, 0700), 0);
	FILE *f = fopen(stray_disk, "w");
	assert_non_null(f);
	fclose(f);
	fks c;
	assert_int_equal(fks_start_in(&c, g_bin, dir, kept_flags), 0);
	assert_int_equal(access(stray, F_OK), -1);
	assert_int_equal(access(stray_disk, F_OK), -1);
	assert_state(&c, run.id, "paused");
	assert_state(&c, paused.id, "paused");
	assert_int_equal(connect_box(&c, run.id), 201);
	assert_file(&c, &run, "r");
	assert_int_equal(connect_box(&c, paused.id), 201);
	assert_file(&c, &paused, "p");
	/* cold: what ran before is gone */
	assert_false(fks_box_run(&c, &paused, "pgrep -x sleep"));
	fks_box_delete(&c, KEY, &run);
	fks_box_delete(&c, KEY, &paused);
	assert_int_equal(fks_stop(&c), 0);
	snprintf(line, sizeof(line), "fake-e2b: sweep: removed %s (no sandbox of this server's)",
	         stray_disk);
	assert_logged(&c, line);
	snprintf(line, sizeof(line),
	         "fake-e2b: state: sandbox %s kept: was running, paused with its files", run.id);
	assert_logged(&c, line);
	fks_stop(&a);
	fks_stop(&b);
	rm_state(dir);
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
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s (kept: sandboxes survive a restart)\n", dir);
	assert_int_equal(fks_stop(&b), 0);
	assert_non_null(strstr(b.out, want));
	fks_stop(&a);
	rm_state(dir);
}

/* A snapshot (a template made of a sandbox's files) outlives a crash: sandboxes are made from
 * it after the restart with its files; deleted after, it stays deleted. */
static void test_restart__snapshot_template_kept(void **unused)
{
	(void)unused;
	char dir[64], path[128];
	new_state(dir, sizeof(dir));
	fks a, b, c;
	fks_box src, from;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	box_with_file(&a, &src, "snap-file");
	snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", src.id);
	fkr *r = api(&a, "POST", path, "{\"name\":\"keep-snap\"}");
	assert_int_equal(r->status, 201);
	fkr_free(r);
	fks_box_delete(&a, KEY, &src);
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	r = api(&b, "GET", "/snapshots", NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(r->json, 0), "snapshotID")),
	    "keep-snap:default");
	fkr_free(r);
	fks_box_create(&b, KEY, "{\"templateID\":\"keep-snap\"}", &from);
	assert_file(&b, &from, "snap-file");
	fks_box_delete(&b, KEY, &from);
	r = api(&b, "DELETE", "/templates/keep-snap", NULL);
	assert_int_equal(r->status, 204);
	fkr_free(r);
	assert_int_equal(fks_stop(&b), 0);
	assert_logged(&b, "fake-e2b: state: 1 template(s) kept");
	assert_int_equal(fks_start_in(&c, g_bin, dir, kept_flags), 0);
	r = api(&c, "POST", "/v2/sandboxes", "{\"templateID\":\"keep-snap\"}");
	assert_int_equal(r->status, 404);
	fkr_free(r);
	assert_int_equal(fks_stop(&c), 0);
	fks_stop(&a);
	rm_state(dir);
}

/* The messages of GET /v2/sandboxes/{id}/logs?direction=forward, joined by '|'. */
static void log_messages(fks *s, const char *id, char *out, size_t cap)
{
	char path[128];
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/logs?direction=forward", id);
	fkr *r = api(s, "GET", path, NULL);
	assert_int_equal(r->status, 200);
	json_t *logs = json_object_get(r->json, "logs");
	out[0] = 0;
	for (size_t i = 0; i < json_array_size(logs); i++)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "|" : "",
		         json_string_value(json_object_get(json_array_get(logs, i), "message")));
	fkr_free(r);
}

/* A kept sandbox's logs outlive a restart (its record keeps them): what it logged before (the
 * stop leaves it running, adopted by the next server: nothing paused it), then its pause and
 * resume on the next server. */
static void test_restart__sandbox_logs_kept(void **unused)
{
	(void)unused;
	char dir[64], path[128], m[1024], want[1024];
	new_state(dir, sizeof(dir));
	fks a, b;
	fks_box box;
	assert_int_equal(fks_start_in(&a, g_bin, dir, kept_flags), 0);
	fks_box_create(&a, KEY, NULL, &box);
	fks_box_sh(&a, &box, "echo kept");
	log_messages(&a, box.id, m, sizeof(m));
	unsigned pid = 0;
	assert_int_equal(
	    sscanf(m, "Started creating sandbox|Sandbox created|Process with pid %u", &pid), 1);
	assert_int_equal(fks_stop(&a), 0);
	assert_int_equal(fks_start_in(&b, g_bin, dir, kept_flags), 0);
	snprintf(
	    want, sizeof(want),
	    "Started creating sandbox|Sandbox created|Process with pid %u started|Process with "
	    "pid %u ended",
	    pid, pid);
	log_messages(&b, box.id, m, sizeof(m));
	assert_string_equal(m, want);
	pause_box(&b, box.id);
	strncat(want, "|Pausing sandbox|Sandbox stopped", sizeof(want) - strlen(want) - 1);
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", box.id);
	fkr *r = api(&b, "POST", path, "{\"timeout\":60}");
	assert_int_equal(r->status, 201);
	fkr_free(r);
	log_messages(&b, box.id, m, sizeof(m));
	strncat(want, "|Started resuming sandbox|Sandbox created", sizeof(want) - strlen(want) - 1);
	assert_string_equal(m, want);
	fks_box_delete(&b, KEY, &box);
	assert_int_equal(fks_stop(&b), 0);
	rm_state(dir);
}
int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restart__second_server_on_a_directory_refused),
	    cmocka_unit_test(test_restart__state_dir_others_may_write_is_refused),
	    cmocka_unit_test(test_restart__sigterm_keeps_running_and_paused_with_files),
	    cmocka_unit_test(test_restart__crash_keeps_running_and_paused_with_files),
	    cmocka_unit_test(test_restart__unread_stdin_does_not_hold_shutdown),
	    cmocka_unit_test(test_restart__taken_shim_names_do_not_block_starts),
	    cmocka_unit_test(test_restart__shims_are_in_the_shims_cgroup),
	    cmocka_unit_test(test_restart__damaged_record_refused),
	    cmocka_unit_test(test_restart__adopted_sandbox_times_out),
	    cmocka_unit_test(test_restart__reboot_and_orphans),
	    cmocka_unit_test(test_restart__ephemeral_leaves_nothing),
	    cmocka_unit_test(test_restart__crashed_ephemeral_dir_is_removed_by_the_next),
	    cmocka_unit_test(test_restart__snapshot_template_kept),
	    cmocka_unit_test(test_restart__sandbox_logs_kept),
	};
	/* FK_TEST_FILTER picks a few (tests/support/cmocka_run.c) */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
