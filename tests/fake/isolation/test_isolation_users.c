/*
 * tests/fake/isolation/test_isolation_users.c — the user namespace: root inside a box is an
 * unprivileged host id, and other host users can neither list the sandboxes nor reach a
 * sandbox's tree. Part of test_fake_isolation (main in test_isolation.c).
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

/* ------------------------------------------------------------ user namespace */

char state_dir[] = "/tmp/fk-isolation-XXXXXX";

/* A box's root can leave a setuid file of its own host ids in its tree (`chmod 4755` of a copy
 * of bash is owned by the box's root, host id 524288 + k * 65536); a local user who finds the
 * tree can run it and act as that box's root on its files. The state directory does not list
 * its sandboxes to other users (mode 0711: a path they know, such as ca.pem, still opens). */
void test_isolation__other_users_cannot_list_the_sandboxes(void **state)
{
	NEED_ISOLATION(rt);
	box_create("lst");
	struct stat st;
	assert_int_equal(stat(state_dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		/* listing needs read permission: open() for reading is what opendir() does */
		int fd = open(state_dir, O_RDONLY | O_DIRECTORY);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
	assert_int_equal(fk_box_destroy(rt, "lst", NULL), 0);
}

/* Nor reach a sandbox's tree by its id: <state>/<id> is the host root's, 0700 (and its disk
 * image 0600), so what the box's root leaves there (a setuid copy of bash) cannot be run by
 * another local user; the box itself still works. */
void test_isolation__other_users_cannot_reach_a_sandbox_tree(void **state)
{
	NEED_ISOLATION(rt);
	box_create("tree");
	char *ok = sh("tree", "root", "cp /bin/bash /root/sh && chmod 4755 /root/sh && echo ok");
	assert_string_equal(ok, "ok\n");
	free(ok);
	char dir[256], root[300], img[300];
	snprintf(dir, sizeof(dir), "%s/tree", state_dir);
	snprintf(root, sizeof(root), "%s/root/root/sh", dir);
	snprintf(img, sizeof(img), "%s/tree.disk", state_dir);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, 0);
	bool has_disk = stat(img, &st) == 0;
	if (has_disk)
		assert_int_equal(st.st_mode & 07777, 0600);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		struct stat s2;
		if (stat(root, &s2) == 0 || errno != EACCES)
			_exit(3);
		if (open(dir, O_RDONLY | O_DIRECTORY) >= 0 || errno != EACCES)
			_exit(4);
		if (has_disk && (open(img, O_RDONLY) >= 0 || errno != EACCES))
			_exit(5);
		_exit(0);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
	/* the box reaches all it needs: its /etc overlay, its files, a new process */
	ok = sh("tree", "sandbox", "id -un; echo x > /workspace/f; cat /workspace/f");
	assert_string_equal(ok, "sandbox\nx\n");
	free(ok);
	assert_int_equal(fk_box_reboot(rt, "tree", NULL), 0);
	ok = sh("tree", "root", "stat -c %a /root/sh; cat /workspace/f");
	assert_string_equal(ok, "4755\nx\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "tree", NULL), 0);
}

/* The owner of <rel> in the box's "/" as the host sees it (through its PID 1's root: the box's
 * files live in its own disk image, mounted only in its namespace). */
static unsigned long host_uid_of(const char *box, const char *rel)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/root/%s", (int)fk_box_init_pid(rt, box), rel);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_uid, st.st_gid);
	return (unsigned long)st.st_uid;
}

/* Once, root in a box was the host's root. Each box has its own user namespace whose ids
 * 0..65535 are a range of unprivileged host ids of its own; what its users make on disk is
 * owned by those ids, and the host's files are seen as they are owned (root's) but stay the
 * host's. */
void test_isolation__root_inside_is_an_unprivileged_host_id(void **state)
{
	NEED_ISOLATION(rt);
	box_create("ua");
	box_create("ub");
	char *map = sh("ua", "sandbox",
	               "awk '{print $1, $3}' /proc/self/uid_map /proc/self/gid_map; id -u; id -g");
	assert_string_equal(map, "0 65536\n0 65536\n1000\n1000\n");
	free(map);
	char *ba = sh("ua", "root", "awk '{print $2}' /proc/self/uid_map; id -u");
	char *bb = sh("ub", "root", "awk '{print $2}' /proc/self/uid_map");
	unsigned long base_a = strtoul(ba, NULL, 10), base_b = strtoul(bb, NULL, 10);
	assert_string_equal(strchr(ba, '\n'), "\n0\n");
	free(ba);
	free(bb);
	/* systemd's container range, one 65,536 block per box */
	assert_true(base_a >= 0x80000 && base_a < 0x70000000 && (base_a - 0x80000) % 65536 == 0);
	assert_true(base_b >= 0x80000 && base_b < 0x70000000 && (base_b - 0x80000) % 65536 == 0);
	assert_true(base_a != base_b);

	/* made inside by root and by sandbox: the range's ids on the host */
	char *made = sh("ua", "root",
	                "touch /root/r && mkdir /tmp/rd && su -s /bin/sh sandbox -c "
	                "'touch /workspace/s' && echo made");
	assert_string_equal(made, "made\n");
	free(made);
	assert_int_equal(host_uid_of("ua", "root/r"), base_a);
	assert_int_equal(host_uid_of("ua", "tmp/rd"), base_a);
	assert_int_equal(host_uid_of("ua", "workspace/s"), base_a + 1000);
	assert_int_equal(host_uid_of("ua", "workspace"), base_a + 1000);
	assert_int_equal(host_uid_of("ua", "."), base_a);

	/* the files API writes as the box's ids, so ownership inside is right */
	box_write("ua", "/root/api-root", "x");
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(
	    fk_file_write_open(rt, "ua", "/workspace/api-sb", "sandbox", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	assert_int_equal(host_uid_of("ua", "root/api-root"), base_a);
	assert_int_equal(host_uid_of("ua", "workspace/api-sb"), base_a + 1000);
	fk_entry e;
	assert_int_equal(fk_file_stat(rt, "ua", "/workspace/api-sb", "sandbox", &e, &err), 0);
	assert_string_equal(e.owner, "sandbox");
	assert_string_equal(e.group, "sandbox");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "ua", "/usr/bin", "sandbox", &e, &err), 0);
	assert_string_equal(e.owner, "root");
	fk_entry_clear(&e);
	/* the box's own node (mknod), its root's */
	assert_int_equal(fk_file_stat(rt, "ua", "/dev/null", "sandbox", &e, &err), 0);
	assert_string_equal(e.owner, "root");
	fk_entry_clear(&e);

	/* inside: host files look root's (idmapped, read-only: root inside has no power over them),
	 * setuid still works; /dev's nodes are the box's own, its root's */
	char *view = sh("ua", "root",
	                "stat -c '%u:%g %A %n' / /usr/bin/su /etc/passwd /workspace/s "
	                "/root/api-root /workspace/api-sb /dev/null; "
	                "chown 1000 /usr/bin/su 2>/dev/null || echo chown-refused; "
	                "chmod 755 /usr/bin/su 2>/dev/null || echo chmod-refused; "
	                "su -s /bin/sh sandbox -c 'su -c true root </dev/null 2>&1 | head -c 200 | "
	                "grep -c -i -E \"authentication|password|terminal\"'");
	assert_string_equal(view, "0:0 drwxr-xr-x /\n"
	                          "0:0 -rwsr-xr-x /usr/bin/su\n"
	                          "0:0 -rw-r--r-- /etc/passwd\n"
	                          "1000:1000 -rw-r--r-- /workspace/s\n"
	                          "0:0 -rw-r--r-- /root/api-root\n"
	                          "1000:1000 -rw-r--r-- /workspace/api-sb\n"
	                          "0:0 crw-rw-rw- /dev/null\n"
	                          "chown-refused\nchmod-refused\n1\n");
	free(view);

	/* the box's network namespace is its own: its root may bind a port below 1024, its users
	 * may not (as on E2B; tests/fake/net has the errno) */
	char *bind = sh("ua", "root",
	                "b='use IO::Socket::INET; IO::Socket::INET->new(LocalAddr => "
	                "\"127.0.0.1:80\", Listen => 1, ReuseAddr => 1) or exit 1'; "
	                "perl -e \"$b\" && echo root-bound; "
	                "su -s /bin/sh sandbox -c \"perl -e '$b'\" && echo sandbox-bound || "
	                "echo sandbox-refused");
	assert_string_equal(bind, "root-bound\nsandbox-refused\n");
	free(bind);

	/* System V IPC is per box (its own IPC namespace): a segment made in one box is not seen
	 * in the other */
	char *ipc_a = sh("ua", "sandbox", "ipcmk -M 4096 >/dev/null && ipcs -m | grep -c '^0x'");
	char *ipc_b = sh("ub", "sandbox", "ipcs -m | grep -c '^0x'; true");
	assert_string_equal(ipc_a, "1\n");
	assert_string_equal(ipc_b, "0\n");
	free(ipc_a);
	free(ipc_b);
	assert_int_equal(fk_box_destroy(rt, "ua", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "ub", NULL), 0);

	/* E2B's base template: its user's passwordless sudo works (setuid through the idmapped
	 * /usr, sudoers root's inside), and gives the box's root, not the host's */
	fk_box_options base = {.template_id = "base"};
	box_create_opts("usudo", &base);
	char *sudo = sh("usudo", "user",
	                "sudo -n id -u && sudo -n touch /root/by-sudo && "
	                "awk '{print $2}' /proc/self/uid_map");
	assert_memory_equal(sudo, "0\n", 2); /* sudo's id -u */
	unsigned long base_s = strtoul(sudo + 2, NULL, 10);
	free(sudo);
	assert_true(base_s >= 0x80000 && (base_s - 0x80000) % 65536 == 0);
	assert_int_equal(host_uid_of("usudo", "root/by-sudo"), base_s);
	assert_int_equal(fk_box_destroy(rt, "usudo", NULL), 0);
}
