/*
 * tests/fake/state/test_state.c: the state directory's records and lock (fake-e2b/state/state.c):
 * a record reads back as written; one cut short, with a flipped byte anywhere, of another
 * version or renamed to another id is refused and set aside, never loaded; a write a crash cut
 * before its rename leaves the old record; a second holder of the lock is refused with the
 * first one's pid. No root needed.
 */
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

#include "state.h"

static char dir[64];

static int setup(void **st)
{
	(void)st;
	snprintf(dir, sizeof(dir), "/tmp/fk-state-test-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	(void)st;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

typedef struct seen {
	int n, bad;
	char ids[8][80];
	char names[8][80];
} seen;

static void collect(const char *id, json_t *obj, void *ud)
{
	seen *s = ud;
	if (!obj) { /* refused, or set aside before */
		s->bad++;
		return;
	}
	if (s->n < 8) {
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", id);
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s",
		         json_string_value(json_object_get(obj, "name")));
	}
	s->n++;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static void spit(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static void put_named(fk_state *st, const char *id, const char *name)
{
	json_t *o = json_pack("{s:s,s:s}", "id", id, "name", name);
	assert_int_equal(fk_state_put(st, "sandboxes", id, o), 0);
	json_decref(o);
}

static void test_state__reads_back_and_replaces(void **unused)
{
	(void)unused;
	fk_state *st;
	char msg[256];
	assert_int_equal(fk_state_open(dir, &st, msg, sizeof(msg)), 0);
	assert_false(fk_state_has_records(dir, "sandboxes"));
	put_named(st, "iaaa", "first");
	put_named(st, "iaaa", "second");
	put_named(st, "ibbb", "other");
	assert_true(fk_state_has_records(dir, "sandboxes"));
	seen s = {0};
	assert_int_equal(fk_state_load(st, "sandboxes", collect, &s), 2);
	assert_int_equal(s.n, 2);
	int a = strcmp(s.ids[0], "iaaa") == 0 ? 0 : 1;
	assert_string_equal(s.ids[a], "iaaa");
	assert_string_equal(s.names[a], "second");
	assert_string_equal(s.names[1 - a], "other");
	assert_int_equal(fk_state_del(st, "sandboxes", "iaaa"), 0);
	assert_int_equal(fk_state_del(st, "sandboxes", "iaaa"), 0); /* none: fine */
	memset(&s, 0, sizeof(s));
	assert_int_equal(fk_state_load(st, "sandboxes", collect, &s), 1);
	assert_string_equal(s.ids[0], "ibbb");
	/* the record's file is private */
	char path[256];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/.state/sandboxes/ibbb", dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/.state", dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	fk_state_close(st);
}

/* Every damage of a good record is refused by fk_state_decode. */
static void test_state__every_cut_and_flipped_byte_is_refused(void **unused)
{
	(void)unused;
	json_t *o = json_pack("{s:s,s:s,s:i}", "id", "iabc", "token", "0123abcd", "endNs", 42);
	size_t len;
	char *rec = fk_state_encode("sandboxes", "iabc", o, &len);
	assert_non_null(rec);
	json_t *back = NULL;
	char msg[160];
	assert_int_equal(fk_state_decode("sandboxes", "iabc", rec, len, &back, msg, sizeof(msg)),
	                 0);
	assert_true(json_equal(back, o));
	json_decref(back);
	for (size_t cut = 0; cut < len; cut++) {
		assert_int_equal(
		    fk_state_decode("sandboxes", "iabc", rec, cut, &back, msg, sizeof(msg)), -1);
		assert_null(back);
	}
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			rec[i] ^= (char)(1 << bit);
			int rc =
			    fk_state_decode("sandboxes", "iabc", rec, len, &back, msg, sizeof(msg));
			rec[i] ^= (char)(1 << bit);
			if (rc == 0) /* only a header's spacing may change and still say the same */
				fail_msg("byte %zu bit %d flipped loaded", i, bit);
			assert_null(back);
		}
	}
	/* the same bytes under another id or kind */
	assert_int_equal(fk_state_decode("sandboxes", "iabd", rec, len, &back, msg, sizeof(msg)),
	                 -1);
	assert_string_equal(msg, "the record is of sandboxes/iabc, not of its file's name");
	assert_int_equal(fk_state_decode("templates", "iabc", rec, len, &back, msg, sizeof(msg)),
	                 -1);
	/* another version */
	char *v2 = strdup(rec);
	v2[strlen("fake-e2b-state ")] = '2';
	assert_int_equal(fk_state_decode("sandboxes", "iabc", v2, len, &back, msg, sizeof(msg)),
	                 -1);
	assert_string_equal(msg, "format version 2 (this fake-e2b reads 1)");
	free(v2);
	free(rec);
	json_decref(o);
}

/* On disk: a torn and a flipped record are set aside as <id>.bad, the good one loads, a
 * temporary file is removed. */
static void test_state__damaged_files_set_aside(void **unused)
{
	(void)unused;
	fk_state *st;
	char msg[256], path[256], bad[300];
	assert_int_equal(fk_state_open(dir, &st, msg, sizeof(msg)), 0);
	put_named(st, "igood", "good");
	put_named(st, "itorn", "torn");
	put_named(st, "iflip", "flip");
	put_named(st, "imoved", "moved");
	size_t len;
	snprintf(path, sizeof(path), "%s/.state/sandboxes/itorn", dir);
	char *buf = slurp(path, &len);
	spit(path, buf, len - 3);
	free(buf);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/iflip", dir);
	buf = slurp(path, &len);
	buf[len - 5] ^= 0x04;
	spit(path, buf, len);
	free(buf);
	/* a record under another id's name: never that sandbox */
	char from[256];
	snprintf(from, sizeof(from), "%s/.state/sandboxes/imoved", dir);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/iother", dir);
	assert_int_equal(rename(from, path), 0);
	snprintf(path, sizeof(path), "%s/.state/sandboxes/.igood.1.2.tmp", dir);
	spit(path, "fake-e2b-state 1 sandb", 21);
	seen s = {0};
	assert_int_equal(fk_state_load(st, "sandboxes", collect, &s), 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.bad, 3);
	assert_string_equal(s.ids[0], "igood");
	assert_string_equal(s.names[0], "good");
	assert_int_equal(access(path, F_OK), -1); /* the temporary file */
	const char *gone[] = {"itorn", "iflip", "iother"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/.state/sandboxes/%s", dir, gone[i]);
		snprintf(bad, sizeof(bad), "%s.bad", path);
		assert_int_equal(access(path, F_OK), -1);
		assert_int_equal(access(bad, F_OK), 0);
	}
	/* set aside stays aside, and is still named */
	memset(&s, 0, sizeof(s));
	assert_int_equal(fk_state_load(st, "sandboxes", collect, &s), 1);
	assert_int_equal(s.bad, 3);
	fk_state_close(st);
}

static void test_state__second_holder_refused_with_pid(void **unused)
{
	(void)unused;
	int ready[2], hold[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the holder, and a child of it that outlives it (a box's PID 1 is cloned from
		 * the server and holds its descriptors) */
		fk_state *st;
		char msg[256];
		int ok = fk_state_open(dir, &st, msg, sizeof(msg)) == 0;
		if (ok && fork() == 0) {
			char c;
			close(ready[1]);
			close(hold[1]);
			while (read(hold[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		char c = ok ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(hold[0]);
	close(ready[1]);
	char c = 0;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	fk_state *st = NULL;
	char msg[256], want[256];
	assert_int_equal(fk_state_open(dir, &st, msg, sizeof(msg)), -1);
	snprintf(want, sizeof(want),
	         "state directory %s is in use by another fake-e2b (pid %d); stop it or give "
	         "another --state-dir",
	         dir, (int)pid);
	assert_string_equal(msg, want);
	/* the holder dies by kill -9: the lock is free, though its child still runs */
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(fk_state_open(dir, &st, msg, sizeof(msg)), 0);
	/* the pid file names the new holder */
	char path[256], line[32] = "", mine[32];
	snprintf(path, sizeof(path), "%s/.lock", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	snprintf(mine, sizeof(mine), "%d\n", (int)getpid());
	assert_string_equal(line, mine);
	fk_state_close(st);
	close(hold[1]); /* the grandchild ends */
	close(ready[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_state__reads_back_and_replaces, setup, teardown),
	    cmocka_unit_test(test_state__every_cut_and_flipped_byte_is_refused),
	    cmocka_unit_test_setup_teardown(test_state__damaged_files_set_aside, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state__second_holder_refused_with_pid, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
