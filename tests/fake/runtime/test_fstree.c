/*
 * tests/fake/runtime/test_fstree.c: fake-e2b's tree walks (fake-e2b/util/fstree.h), which
 * snapshots, forks, template and sandbox deletes, disk usage and id shifts run on trees a
 * sandbox made. A 10,000-level tree (20,000-byte paths) is measured, copied and removed on a
 * thread with a 64 KiB stack (glibc's nftw, which recursed once per level, overflowed a 512 KiB
 * one at 1,900 levels); the copy keeps what cp -a kept (holes, hard links, symlinks, FIFOs,
 * modes with setuid, owners, times, extended attributes); a walk never follows a symlink out of
 * the tree and stops (ESTALE) when a directory it is in is moved meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "fstree.h"

static char g_dir[64]; /* a private temp dir per test */

static int mk_tmp(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/var/tmp/fk-fstree-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
	(void)state;
	return fk_tree_remove(AT_FDCWD, g_dir);
}

/* `levels` directories "a" below <g_dir>/<top>, a file "leaf" ("bottom") at the bottom;
 * made fd by fd (the path is longer than PATH_MAX). */
static void make_deep(const char *top, int levels)
{
	int d = open(g_dir, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	assert_int_equal(mkdirat(d, top, 0755), 0);
	int n = openat(d, top, O_RDONLY | O_DIRECTORY);
	close(d);
	d = n;
	for (int i = 0; i < levels; i++) {
		assert_int_equal(mkdirat(d, "a", 0755), 0);
		n = openat(d, "a", O_RDONLY | O_DIRECTORY);
		assert_true(n >= 0);
		close(d);
		d = n;
	}
	int f = openat(d, "leaf", O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(f, "bottom", 6), 6);
	close(f);
	close(d);
}

/* The depth of <g_dir>/<top>'s chain of "a" and its leaf's contents (-1: no leaf). */
static int deep_levels(const char *top, char leaf[16])
{
	int d = open(g_dir, O_RDONLY | O_DIRECTORY), n = openat(d, top, O_RDONLY | O_DIRECTORY);
	close(d);
	d = n;
	int levels = 0;
	while ((n = openat(d, "a", O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) >= 0) {
		close(d);
		d = n;
		levels++;
	}
	int f = openat(d, "leaf", O_RDONLY);
	close(d);
	if (f < 0)
		return -1;
	ssize_t r = read(f, leaf, 15);
	close(f);
	leaf[r > 0 ? r : 0] = 0;
	return levels;
}

typedef struct deep_job {
	int rc_bytes, rc_copy, rc_remove, rc_remove_copy;
	uint64_t bytes;
} deep_job;

static void *deep_ops(void *arg)
{
	deep_job *j = arg;
	char src[128], dst[128];
	snprintf(src, sizeof(src), "%s/deep", g_dir);
	snprintf(dst, sizeof(dst), "%s/copy", g_dir);
	j->rc_bytes = fk_tree_bytes(src, &j->bytes);
	j->rc_copy = fk_tree_copy(AT_FDCWD, src, AT_FDCWD, dst);
	return NULL;
}

static void *deep_remove(void *arg)
{
	deep_job *j = arg;
	int d = open(g_dir, O_RDONLY | O_DIRECTORY);
	j->rc_remove = fk_tree_remove(d, "deep");
	j->rc_remove_copy = fk_tree_remove(d, "copy");
	close(d);
	return NULL;
}

/* Runs fn(arg) on a thread of a 64 KiB stack. */
static void on_small_stack(void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	assert_int_equal(pthread_create(&t, &a, fn, arg), 0);
	pthread_attr_destroy(&a);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void test_fstree__deep_tree_on_a_small_stack(void **state)
{
	(void)state;
	make_deep("deep", 10000);
	deep_job j = {0};
	on_small_stack(deep_ops, &j);
	assert_int_equal(j.rc_bytes, 0);
	/* 10,001 directories and a file of one block at least each */
	assert_true(j.bytes >= 10002ull * 512);
	assert_int_equal(j.rc_copy, 0);
	char leaf[16];
	assert_int_equal(deep_levels("copy", leaf), 10000);
	assert_string_equal(leaf, "bottom");
	uint64_t copied;
	char dst[128];
	snprintf(dst, sizeof(dst), "%s/copy", g_dir);
	assert_int_equal(fk_tree_bytes(dst, &copied), 0);
	assert_true(copied == j.bytes);
	on_small_stack(deep_remove, &j);
	assert_int_equal(j.rc_remove, 0);
	assert_int_equal(j.rc_remove_copy, 0);
	struct stat st;
	assert_int_equal(fstatat(AT_FDCWD, dst, &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);
}

static void at(char *buf, size_t cap, const char *rel)
{
	snprintf(buf, cap, "%s/%s", g_dir, rel);
}

/* What cp -a kept, kept: a sparse file's holes and bytes, a hard link pair (one inode in the
 * copy), a symlink's text (dangling, never followed), a FIFO, modes with setuid (after the
 * owner), owners, a directory's mode and times (set after its entries), an xattr. */
static void test_fstree__copy_keeps_what_cp_a_kept(void **state)
{
	(void)state;
	char p[256], q[256];
	at(p, sizeof(p), "s");
	assert_int_equal(mkdir(p, 0755), 0);
	at(p, sizeof(p), "s/sub");
	assert_int_equal(mkdir(p, 0751), 0);
	at(p, sizeof(p), "s/sub/sparse");
	int f = open(p, O_WRONLY | O_CREAT, 0640);
	assert_int_equal(pwrite(f, "x", 1, 64 << 20), 1); /* 64 MiB of hole, then "x" */
	close(f);
	at(q, sizeof(q), "s/hard2");
	assert_int_equal(link(p, q), 0);
	at(p, sizeof(p), "s/link");
	assert_int_equal(symlink("/nonexistent/../etc/passwd", p), 0);
	at(p, sizeof(p), "s/fifo");
	assert_int_equal(mkfifo(p, 0620), 0);
	at(p, sizeof(p), "s/suid");
	f = open(p, O_WRONLY | O_CREAT, 0755);
	assert_int_equal(write(f, "#!/bin/sh\n", 10), 10);
	close(f);
	bool root = geteuid() == 0;
	if (root)
		assert_int_equal(chown(p, 1234, 5678), 0);
	assert_int_equal(chmod(p, 04755), 0);
	bool xattrs = setxattr(p, "user.fk", "v1", 2, 0) == 0;
	at(p, sizeof(p), "s/sub");
	struct timespec ts[2] = {{1600000000, 0}, {1700000000, 5}};
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);

	assert_int_equal(fk_tree_copy(AT_FDCWD, g_dir, AT_FDCWD, "/dev/null/x"), -1);
	at(p, sizeof(p), "s");
	at(q, sizeof(q), "c");
	assert_int_equal(fk_tree_copy(AT_FDCWD, p, AT_FDCWD, q), 0);
	assert_int_equal(fk_tree_copy(AT_FDCWD, p, AT_FDCWD, q), -1); /* it exists now */
	assert_int_equal(errno, EEXIST);

	struct stat a, b;
	at(p, sizeof(p), "c/sub/sparse");
	assert_int_equal(stat(p, &a), 0);
	assert_int_equal(a.st_size, (64 << 20) + 1);
	assert_true(a.st_blocks * 512 < (1 << 20)); /* still sparse */
	assert_int_equal(a.st_mode & 07777, 0640);
	char c = 0;
	f = open(p, O_RDONLY);
	assert_int_equal(pread(f, &c, 1, 64 << 20), 1);
	close(f);
	assert_int_equal(c, 'x');
	at(q, sizeof(q), "c/hard2");
	assert_int_equal(stat(q, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_nlink, 2);
	at(p, sizeof(p), "c/link");
	char t[64] = "";
	assert_int_equal(readlink(p, t, sizeof(t) - 1), 26);
	assert_string_equal(t, "/nonexistent/../etc/passwd");
	at(p, sizeof(p), "c/fifo");
	assert_int_equal(lstat(p, &a), 0);
	assert_true(S_ISFIFO(a.st_mode));
	assert_int_equal(a.st_mode & 07777, 0620);
	at(p, sizeof(p), "c/suid");
	assert_int_equal(stat(p, &a), 0);
	assert_int_equal(a.st_mode & 07777, 04755);
	if (root) {
		assert_int_equal(a.st_uid, 1234);
		assert_int_equal(a.st_gid, 5678);
	}
	if (xattrs) {
		char v[8] = "";
		assert_int_equal(getxattr(p, "user.fk", v, sizeof(v)), 2);
		assert_memory_equal(v, "v1", 2);
	}
	at(p, sizeof(p), "c/sub");
	assert_int_equal(stat(p, &a), 0);
	assert_int_equal(a.st_mode & 07777, 0751);
	assert_int_equal(a.st_mtim.tv_sec, 1700000000);
	assert_int_equal(a.st_mtim.tv_nsec, 5);
}

static int count_entry(const fk_tree_ent *e, void *ud)
{
	if (!e->post)
		(*(int *)ud)++;
	return FK_TREE_GO;
}

/* A symlink to a directory outside is an entry, never walked into; the size counts only the
 * tree's own blocks. */
static void test_fstree__never_follows_a_symlink(void **state)
{
	(void)state;
	char p[256];
	at(p, sizeof(p), "t");
	assert_int_equal(mkdir(p, 0755), 0);
	at(p, sizeof(p), "t/up");
	assert_int_equal(symlink("/", p), 0);
	at(p, sizeof(p), "t/self");
	assert_int_equal(symlink(".", p), 0);
	at(p, sizeof(p), "t");
	int n = 0;
	assert_int_equal(fk_tree_walk(AT_FDCWD, p, count_entry, &n), 0);
	assert_int_equal(n, 3); /* t, up, self */
	at(p, sizeof(p), "t/up");
	n = 0;
	assert_int_equal(fk_tree_walk(AT_FDCWD, p, count_entry, &n), 0);
	assert_int_equal(n, 1); /* the symlink alone */
}

typedef struct mover {
	int moved;
} mover;

/* Moves <g_dir>/m/a/b to <g_dir>/m/c/b while the walk is inside b. */
static int move_when_in_b(const fk_tree_ent *e, void *ud)
{
	mover *m = ud;
	if (!e->post && !strcmp(e->path, "a/b/f") && !m->moved) {
		char from[256], to[256];
		at(from, sizeof(from), "m/a/b");
		at(to, sizeof(to), "m/c/b");
		m->moved = rename(from, to) == 0;
	}
	return FK_TREE_GO;
}

static void test_fstree__a_directory_moved_meanwhile_stops_the_walk(void **state)
{
	(void)state;
	char p[256];
	const char *dirs[] = {"m", "m/a", "m/a/b", "m/c"};
	for (size_t i = 0; i < 4; i++) {
		at(p, sizeof(p), dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	at(p, sizeof(p), "m/a/b/f");
	int f = open(p, O_WRONLY | O_CREAT, 0644);
	close(f);
	at(p, sizeof(p), "m");
	mover m = {0};
	assert_int_equal(fk_tree_walk(AT_FDCWD, p, move_when_in_b, &m), -1);
	assert_int_equal(errno, ESTALE);
	assert_int_equal(m.moved, 1);
}

int main(void)
{
	umask(0); /* the modes made are the modes asked for */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fstree__deep_tree_on_a_small_stack, mk_tmp,
	                                    rm_tmp),
	    cmocka_unit_test_setup_teardown(test_fstree__copy_keeps_what_cp_a_kept, mk_tmp, rm_tmp),
	    cmocka_unit_test_setup_teardown(test_fstree__never_follows_a_symlink, mk_tmp, rm_tmp),
	    cmocka_unit_test_setup_teardown(test_fstree__a_directory_moved_meanwhile_stops_the_walk,
	                                    mk_tmp, rm_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
