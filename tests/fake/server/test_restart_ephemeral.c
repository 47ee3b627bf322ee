/*
 * tests/fake/server/test_restart_ephemeral.c — a server without --state-dir: its temporary
 * directory printed and removed at the stop, a crashed one's removed by the next; a state
 * directory others may write refused. Part of fake_restart_test (main in test_restart.c).
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

/* Anything under /sys/fs/cgroup named for server `pid`'s runtimes? */
static bool cgroups_of(pid_t pid)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
	         "for d in /sys/fs/cgroup/*/fake-e2b/rt-%d-* /sys/fs/cgroup/fake-e2b/rt-%d-*; do "
	         "[ -e \"$d\" ] && exit 0; done; exit 1",
	         (int)pid, (int)pid);
	return system(cmd) == 0;
}

/* A loop device backed by a file under dir? */
static bool loops_of(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
	         "cat /sys/block/loop*/loop/backing_file 2>/dev/null | grep -q '^%s/'", dir);
	return system(cmd) == 0;
}

/* Without --state-dir: a temporary directory, printed, and nothing left after the stop (its
 * directory, cgroups, loop devices), a paused sandbox's frozen box included. */
void test_restart__ephemeral_leaves_nothing(void **unused)
{
	(void)unused;
	fks a;
	fks_box run, paused;
	assert_int_equal(fks_start_in(&a, g_bin, "", kept_flags), 0);
	char out[160], text[8192] = "", dir[128] = "";
	snprintf(out, sizeof(out), "%s/out", a.dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	const char *at = strstr(text, "fake-e2b: state directory ");
	assert_non_null(at);
	assert_int_equal(
	    sscanf(at, "fake-e2b: state directory %127s (ephemeral: removed at exit)", dir), 1);
	assert_non_null(strstr(at, "(ephemeral: removed at exit)\n"));
	box_with_file(&a, &run, "x");
	box_with_file(&a, &paused, "y");
	pause_box(&a, paused.id);
	pid_t pid = a.pid;
	assert_true(cgroups_of(pid));
	assert_int_equal(access(dir, F_OK), 0);
	assert_int_equal(fks_stop(&a), 0);
	assert_int_equal(access(dir, F_OK), -1);
	assert_false(cgroups_of(pid));
	assert_false(loops_of(dir));
}

/* The temporary state directory a default server printed (its output file in s->dir). */
static void printed_state_dir(const fks *s, char dir[128])
{
	char out[160], text[8192] = "";
	snprintf(out, sizeof(out), "%s/out", s->dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	const char *at = strstr(text, "fake-e2b: state directory ");
	assert_non_null(at);
	assert_int_equal(
	    sscanf(at, "fake-e2b: state directory %127s (ephemeral: removed at exit)", dir), 1);
}

/* A default server killed with -9 left its temporary directory with its sandboxes' reserved
 * disk images, and nothing removed it. The next default start removes it (logged), its boxes'
 * cgroups and loop devices gone; a marked directory whose lock is held (a live server's) and a
 * kept one (no marker) beside it stay whole. All of them live in a private $TMPDIR, so that no
 * other default server (another test's, run in parallel) sweeps the dead one first. */
void test_restart__crashed_ephemeral_dir_is_removed_by_the_next(void **unused)
{
	(void)unused;
	char tmp[64] = "/var/tmp/fk-restart-tmp-XXXXXX";
	assert_non_null(mkdtemp(tmp));
	assert_int_equal(setenv("TMPDIR", tmp, 1), 0); /* the default servers' parent below */
	/* a live server's, as it looks: marked, its .lock write-locked (by this process) */
	char held[96];
	snprintf(held, sizeof(held), "%s/fake-e2b-testheld-XXXXXX", tmp);
	assert_non_null(mkdtemp(held));
	assert_int_equal(chmod(held, 0711), 0);
	char p[128];
	snprintf(p, sizeof(p), "%s/.ephemeral", held);
	int m = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(m >= 0);
	close(m);
	snprintf(p, sizeof(p), "%s/.lock", held);
	int hl = open(p, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(hl >= 0);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	assert_int_equal(fcntl(hl, F_SETLK, &fl), 0);
	/* a kept one: what a server on --state-dir left, its lock free, no marker */
	char kept[96];
	snprintf(kept, sizeof(kept), "%s/fake-e2b-testkept-XXXXXX", tmp);
	assert_non_null(mkdtemp(kept));
	assert_int_equal(chmod(kept, 0711), 0);
	fks k;
	const char *quiet[] = {"--quiet", NULL};
	assert_int_equal(fks_start_in(&k, g_bin, kept, quiet), 0);
	assert_int_equal(fks_stop(&k), 0);
	snprintf(p, sizeof(p), "%s/.lock", kept);
	assert_int_equal(access(p, F_OK), 0);

	fks a, b;
	fks_box box;
	char dir_a[128] = "", dir_b[128] = "";
	assert_int_equal(fks_start_in(&a, g_bin, "", kept_flags), 0);
	printed_state_dir(&a, dir_a);
	assert_int_equal(strncmp(dir_a, tmp, strlen(tmp)), 0); /* made in $TMPDIR */
	assert_int_equal(dir_a[strlen(tmp)], '/');
	box_with_file(&a, &box, "x");
	pid_t pid_a = a.pid;
	assert_true(cgroups_of(pid_a));
	assert_int_equal(fks_kill(&a), 0);
	assert_int_equal(access(dir_a, F_OK), 0); /* what kill -9 left */

	assert_int_equal(fks_start_in(&b, g_bin, "", kept_flags), 0);
	printed_state_dir(&b, dir_b);
	assert_string_not_equal(dir_a, dir_b);
	assert_int_equal(access(dir_a, F_OK), -1);
	assert_false(cgroups_of(pid_a));
	assert_false(loops_of(dir_a));
	char out[160], text[8192] = "", want[300];
	snprintf(out, sizeof(out), "%s/out", b.dir);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	snprintf(want, sizeof(want),
	         "fake-e2b: sweep: removed %s (the temporary state directory of a dead server, "
	         "pid %d)\n",
	         dir_a, (int)pid_a);
	assert_non_null(strstr(text, want));
	/* the held and the kept stay whole */
	snprintf(p, sizeof(p), "%s/.ephemeral", held);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/.lock", held);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/.lock", kept);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(fks_stop(&b), 0);
	assert_int_equal(access(dir_b, F_OK), -1);
	assert_int_equal(fks_stop(&a), 0); /* its output directory (it is dead already) */
	close(hl);
	assert_int_equal(unsetenv("TMPDIR"), 0);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	assert_int_equal(system(cmd), 0);
}

/* The server makes, renames, mounts and removes files in its state directory as root: one that
 * another user owns or may write (made in /tmp before the server, as anyone can), or a symlink,
 * is refused, whatever it holds. Before, such a directory was taken (and chmod'ed 0711, its owner
 * still another user's), and that user could swap a sandbox's disk image or the /etc templates
 * under the server. */
void test_restart__state_dir_others_may_write_is_refused(void **unused)
{
	(void)unused;
	char dir[64], link[80], want[512];
	const char *flags[] = {"--quiet", NULL};
	fks b;
	new_state(dir, sizeof(dir));
	assert_int_equal(chown(dir, 65534, 65534), 0); /* nobody's */
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), -1);
	assert_true(WIFEXITED(b.exit_status));
	assert_int_equal(WEXITSTATUS(b.exit_status), 1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is owned by another user: refused (its owner and "
	         "group could swap the sandboxes' files under this server); give a directory of "
	         "uid %d's that only it may write\n",
	         dir, (int)geteuid());
	assert_string_equal(b.out, want);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_uid, 65534); /* left as it was: not taken, nothing made in it */
	assert_int_equal(access(dir, F_OK), 0);
	char lock[96];
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	assert_int_equal(access(lock, F_OK), -1);
	fks_stop(&b);
	assert_int_equal(chown(dir, geteuid(), getegid()), 0);
	assert_int_equal(chmod(dir, 0777), 0); /* the server's own, but anyone may write it */
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), -1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is writable by its group or others: refused (its "
	         "owner and group could swap the sandboxes' files under this server); give a "
	         "directory of uid %d's that only it may write\n",
	         dir, (int)geteuid());
	assert_string_equal(b.out, want);
	fks_stop(&b);
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(link, sizeof(link), "%s-link", dir);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(fks_start_in(&b, g_bin, link, flags), -1);
	snprintf(want, sizeof(want),
	         "fake-e2b: state directory %s is a symbolic link: refused (it could be pointed "
	         "elsewhere under this server); give the directory itself\n",
	         link);
	assert_string_equal(b.out, want);
	fks_stop(&b);
	unlink(link);
	/* the directory itself, the server's and 0700: taken */
	assert_int_equal(fks_start_in(&b, g_bin, dir, flags), 0);
	assert_int_equal(fks_stop(&b), 0);
	rm_state(dir);
}
