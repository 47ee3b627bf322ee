/*
 * tests/fake/isolation/test_isolation_files.c — the files API, which opens a box's files as the
 * host's root: only regular files outside /proc, the box's mount points neither removed nor
 * moved, a huge /etc/passwd not read. Part of test_fake_isolation (main in test_isolation.c).
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

/* ------------------------------------------------------------ the files API, the host's root */

/* The files API opens a box's files as the host's root. A path the box prepared must not make it
 * open a FIFO (the open waited forever, holding the box's lock: the sandbox could no longer be
 * deleted), a device, or anything in the box's /proc, which shows what the box's own users may
 * not read or write: PID 1 is a copy of the server (its environment), /proc/kallsyms gives the
 * host's root real kernel addresses, /proc/irq and /proc/mtrr are host kernel settings. */
void test_isolation__files_api_opens_only_regular_files_outside_proc(void **state)
{
	NEED_ISOLATION(rt);
	box_create("fapi");
	char *o = sh("fapi", "root",
	             "mkfifo /tmp/fifo && ln -s /proc/1/environ /tmp/env && "
	             "ln -s /proc/irq/default_smp_affinity /tmp/irq && ln -s /dev/tty /tmp/tty && "
	             "ln -s /proc/1/mem /tmp/mem && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	alarm(120); /* an open that waits forever fails the test instead of hanging it */
	fk_writer *w = NULL;
	fk_err err = {0};
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/fifo", "root", &w, NULL, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message, "path '/tmp/fifo' is not a regular file");
	assert_null(w);
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/tty", "root", &w, NULL, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message, "path '/tmp/tty' is not a regular file");
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/irq", "root", &w, NULL, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message,
	                    "path '/tmp/irq' leads into /proc, which the files API does not open");
	assert_int_equal(
	    fk_file_write_open(rt, "fapi", "/proc/1/oom_score_adj", "root", &w, NULL, &err),
	    FK_EINVAL);
	assert_string_equal(err.message, "path '/proc/1/oom_score_adj' leads into /proc, which "
	                                 "the files API does not open");
	int fd = -1;
	uint64_t size = 0;
	const char *const in_proc[] = {"/tmp/env", "/tmp/mem", "/proc/kallsyms", "/proc/1/maps"};
	for (size_t i = 0; i < sizeof(in_proc) / sizeof(in_proc[0]); i++) {
		assert_int_equal(
		    fk_file_read_open(rt, "fapi", in_proc[i], "root", &fd, &size, &err), FK_EINVAL);
		char want[200];
		snprintf(want, sizeof(want),
		         "path '%s' leads into /proc, which the files API does not open",
		         in_proc[i]);
		assert_string_equal(err.message, want);
		assert_int_equal(fd, -1);
	}
	assert_int_equal(fk_file_read_open(rt, "fapi", "/tmp/fifo", "root", &fd, &size, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message, "path '/tmp/fifo' is not a regular file");
	/* the box's boot id is a file of its own bound over /proc's: still read (the SDK's tests)
	 */
	assert_int_equal(fk_file_read_open(rt, "fapi", "/proc/sys/kernel/random/boot_id", "root",
	                                   &fd, &size, &err),
	                 0);
	assert_int_equal(size, 37);
	close(fd);
	/* an ordinary file still is written and read */
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/plain", "root", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_write(w, "abc", 3, &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	assert_int_equal(fk_file_read_open(rt, "fapi", "/tmp/plain", "root", &fd, &size, &err), 0);
	assert_int_equal(size, 3);
	close(fd);
	/* the box's root makes /etc/passwd a FIFO: user lookups (every files call, every start)
	 * waited forever on it; now the file is not read (root still resolves) */
	o = sh("fapi", "root", "rm /etc/passwd && mkfifo /etc/passwd && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	fk_entry e;
	assert_int_equal(fk_file_stat(rt, "fapi", "/tmp", "sandbox", &e, &err), FK_ENOUSER);
	assert_string_equal(err.message, "invalid username: 'sandbox'");
	assert_int_equal(fk_file_stat(rt, "fapi", "/tmp/plain", "root", &e, &err), 0);
	assert_string_equal(e.path, "/tmp/plain");
	fk_entry_clear(&e);
	alarm(0);
	assert_int_equal(fk_box_destroy(rt, "fapi", NULL), 0);
}

/* The files API's Remove runs in the host's mount namespace, where the box's mount points are
 * plain directories: removing "/usr" detached the box's /usr (and answered success). A mount
 * point of the box is refused; what is under it is the box's own to remove. */
void test_isolation__files_remove_refuses_the_box_mount_points(void **state)
{
	NEED_ISOLATION(rt);
	box_create("rmmnt");
	fk_err err = {0};
	const char *const mounts[] = {"/usr", "/etc", "/dev", "/dev/pts", "/proc", "/dev/shm"};
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		assert_int_equal(fk_file_remove(rt, "rmmnt", mounts[i], "root", &err), FK_EINVAL);
		char want[200];
		snprintf(want, sizeof(want), "remove '%s': a mount point of the sandbox",
		         mounts[i]);
		assert_string_equal(err.message, want);
	}
	char *o = sh("rmmnt", "root", "mkdir -p /tmp/d/e && touch /tmp/d/e/f /etc/fk-x && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_remove(rt, "rmmnt", "/tmp/d", "root", &err), 0);
	assert_int_equal(fk_file_remove(rt, "rmmnt", "/etc/fk-x", "root", &err), 0);
	o = sh("rmmnt", "sandbox",
	       "test -x /usr/bin/true && test -s /etc/passwd && test -c /dev/null && "
	       "test ! -e /tmp/d && test ! -e /etc/fk-x && echo intact");
	assert_string_equal(o, "intact\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "rmmnt", NULL), 0);
}

/* Move, like Remove, runs in the host's mount namespace, where renaming a box's mount point is
 * not refused (EBUSY is only for the caller's own namespace's mounts): moving "/usr" carried the
 * box's /usr elsewhere, and moving a directory onto "/usr" detached it. Both ends are checked. */
void test_isolation__files_move_refuses_the_box_mount_points(void **state)
{
	NEED_ISOLATION(rt);
	box_create("mvmnt");
	fk_err err = {0};
	fk_entry e;
	const char *const mounts[] = {"/usr", "/etc", "/dev", "/dev/pts", "/proc", "/dev/shm"};
	char *o = sh("mvmnt", "root", "mkdir -p /tmp/d /tmp/e && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		char want[200];
		assert_int_equal(
		    fk_file_move(rt, "mvmnt", mounts[i], "/tmp/moved", "root", &e, &err),
		    FK_EINVAL);
		snprintf(want, sizeof(want),
		         "move '%s' to '/tmp/moved': a mount point of the sandbox", mounts[i]);
		assert_string_equal(err.message, want);
		assert_int_equal(fk_file_move(rt, "mvmnt", "/tmp/d", mounts[i], "root", &e, &err),
		                 FK_EINVAL);
		snprintf(want, sizeof(want),
		         "move '/tmp/d' to '%s': '%s' is a mount point of the sandbox", mounts[i],
		         mounts[i]);
		assert_string_equal(err.message, want);
	}
	assert_int_equal(fk_file_move(rt, "mvmnt", "/", "/tmp/moved", "root", &e, &err), FK_EINVAL);
	assert_string_equal(err.message, "move '/' to '/tmp/moved': a mount point of the sandbox");
	assert_int_equal(fk_file_move(rt, "mvmnt", "/tmp/d", "/", "root", &e, &err), FK_EINVAL);
	assert_string_equal(err.message,
	                    "move '/tmp/d' to '/': '/' is a mount point of the sandbox");
	/* what is under a mount point is the box's own to move */
	o = sh("mvmnt", "root", "touch /etc/fk-x && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_move(rt, "mvmnt", "/etc/fk-x", "/etc/fk-y", "root", &e, &err), 0);
	assert_string_equal(e.path, "/etc/fk-y");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_move(rt, "mvmnt", "/tmp/d", "/tmp/e/d", "root", &e, &err), 0);
	assert_string_equal(e.path, "/tmp/e/d");
	fk_entry_clear(&e);
	o = sh("mvmnt", "sandbox",
	       "test -x /usr/bin/true && test -s /etc/passwd && test -c /dev/null && "
	       "test -d /dev/shm && test -r /proc/self/status && test ! -e /tmp/moved && "
	       "test -e /etc/fk-y && test -d /tmp/e/d && "
	       "test \"$(stat -c %m /usr)\" = /usr && test \"$(stat -c %m /etc)\" = /etc && "
	       "echo intact");
	assert_string_equal(o, "intact\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "mvmnt", NULL), 0);
}

/* Every files call and every start looks the user up in the box's /etc/passwd and /etc/group,
 * whose size the box's root decides: past 1 MiB they are not read (the user is refused, clearly;
 * root still resolves, so the box's root can repair them). */
void test_isolation__huge_etc_passwd_is_not_read(void **state)
{
	NEED_ISOLATION(rt);
	box_create("bigpw");
	fk_err err = {0};
	fk_entry e;
	char *o = sh("bigpw", "root",
	             "stat -c %s /etc/passwd > /tmp/pw.size && stat -c %s /etc/group > "
	             "/tmp/gr.size && truncate -s 1048576 /etc/passwd && "
	             "echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	/* 1 MiB exactly: read */
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), 0);
	assert_string_equal(e.path, "/workspace");
	fk_entry_clear(&e);
	o = sh("bigpw", "root", "truncate -s 1048577 /etc/passwd && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), FK_ENOUSER);
	assert_string_equal(err.message,
	                    "invalid username: 'sandbox' (the sandbox's /etc/passwd is "
	                    "larger than 1048576 bytes, which is not read)");
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "root", &e, &err), 0);
	assert_string_equal(e.path, "/root");
	fk_entry_clear(&e);
	/* /etc/group too */
	o = sh("bigpw", "root",
	       "truncate -s $(cat /tmp/pw.size) /etc/passwd && truncate -s 2000000 /etc/group && "
	       "echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), FK_ENOUSER);
	assert_string_equal(err.message, "invalid username: 'sandbox' (the sandbox's /etc/group is "
	                                 "larger than 1048576 bytes, which is not read)");
	/* the box's root repairs it: the user is back */
	o = sh("bigpw", "root", "truncate -s 1048576 /etc/group && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), 0);
	assert_string_equal(e.path, "/workspace");
	fk_entry_clear(&e);
	o = sh("bigpw", "sandbox", "id -un");
	assert_string_equal(o, "sandbox\n");
	free(o);
	/* owners are found by id among the names (sorted once), the first line of an id winning */
	o = sh(
	    "bigpw", "root",
	    "truncate -s $(cat /tmp/gr.size) /etc/group && "
	    "echo 'zz60:x:60000:60000::/:/bin/false' >> /etc/passwd && "
	    "echo 'root2:x:0:0::/:/bin/sh' >> /etc/passwd && echo 'zz60g:x:60000:' >> /etc/group "
	    "&& "
	    "touch /tmp/o && chown 60000:60000 /tmp/o && touch /tmp/p && chown 60001:60001 /tmp/p "
	    "&& echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "/tmp/o", "root", &e, &err), 0);
	assert_string_equal(e.owner, "zz60");
	assert_string_equal(e.group, "zz60g");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "bigpw", "/tmp/p", "root", &e, &err), 0);
	assert_string_equal(e.owner, "60001");
	assert_string_equal(e.group, "60001");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "bigpw", "/tmp", "root", &e, &err), 0);
	assert_string_equal(e.owner, "root");
	assert_string_equal(e.group, "root");
	fk_entry_clear(&e);
	assert_int_equal(fk_box_destroy(rt, "bigpw", NULL), 0);
}
