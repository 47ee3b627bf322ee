/*
 * tests/fake/runtime/test_runtime_files.c — fake-e2b's runtime: the files API (uploads through
 * symlinks, upload semantics and speed, stat, list, mkdir, move, remove). Part of
 * test_fake_runtime (main in test_runtime.c).
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "runtime.h"
#include "runtime_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ files */

void test_runtime__upload_through_symlink_stays_inside(void **state)
{
	NEED_ISOLATION(rt);
	box_create("sym", false);
	char host_target[128];
	snprintf(host_target, sizeof(host_target), "/etc/fk-escape-%d", (int)getpid());
	free(sh("sym", "root",
	        "ln -s %s /workspace/abs; ln -s ../../../../../..%s /workspace/rel; "
	        "ln -s /proc/1/root%s /workspace/magic",
	        host_target, host_target, host_target));
	box_write("sym", "/workspace/abs", "sandbox", "one");
	assert_int_equal(access(host_target, F_OK), -1);
	char *o = sh("sym", "root", "cat %s; echo; stat -c %%U %s", host_target, host_target);
	assert_string_equal(o, "one\nsandbox\n");
	free(o);
	box_write("sym", "/workspace/rel", "sandbox", "two");
	assert_int_equal(access(host_target, F_OK), -1);
	o = box_read("sym", host_target);
	assert_string_equal(o, "two");
	free(o);
	/* magic links are refused rather than followed */
	fk_writer *w = NULL;
	assert_true(fk_file_write_open(rt, "sym", "/workspace/magic", "sandbox", &w, NULL, NULL) <
	            0);
	assert_int_equal(access(host_target, F_OK), -1);
	/* reading through a symlink stays inside too */
	free(sh("sym", "root", "ln -s /etc/hostname /workspace/hn; echo boxname > /etc/hostname"));
	o = box_read("sym", "/workspace/hn");
	assert_string_equal(o, "boxname\n");
	free(o);
	box_destroy("sym");
}

void test_runtime__upload_semantics(void **state)
{
	NEED_ISOLATION(rt);
	box_create("up", false);
	char *abs = NULL;
	fk_writer *w;
	fk_err err = {0};
	/* parents are created and chowned to the user; relative paths are under HOME */
	assert_int_equal(fk_file_write_open(rt, "up", "a/b/c.txt", "sandbox", &w, &abs, &err), 0);
	assert_string_equal(abs, "/workspace/a/b/c.txt");
	free(abs);
	assert_int_equal(fk_writer_write(w, "xyz", 3, NULL), 0);
	assert_int_equal(fk_writer_close(w, NULL), 0);
	char *o = sh("up", "root",
	             "stat -c '%%U %%a' /workspace/a /workspace/a/b; "
	             "stat -c '%%U %%a %%s' /workspace/a/b/c.txt");
	assert_string_equal(o, "sandbox 755\nsandbox 755\nsandbox 644 3\n");
	free(o);
	/* an existing root file is chowned before truncation */
	free(sh("up", "root", "echo long-old-content > /workspace/old; chmod 600 /workspace/old"));
	box_write("up", "/workspace/old", "sandbox", "new");
	o = sh("up", "root", "stat -c '%%U %%a' /workspace/old; cat /workspace/old");
	assert_string_equal(o, "sandbox 600\nnew");
	free(o);
	/* a directory is refused */
	assert_int_equal(fk_file_write_open(rt, "up", "/workspace/a", "sandbox", &w, NULL, &err),
	                 FK_EISDIR);
	assert_string_equal(err.message, "path is a directory: /workspace/a");
	/* a parent that is a file */
	assert_int_equal(
	    fk_file_write_open(rt, "up", "/workspace/old/x", "sandbox", &w, NULL, &err),
	    FK_ENOTDIR);
	/* read: missing and directory */
	int fd;
	uint64_t size;
	assert_int_equal(fk_file_read_open(rt, "up", "/nope", NULL, &fd, &size, &err),
	                 FK_ENOTFOUND);
	assert_string_equal(err.message, "path '/nope' does not exist");
	assert_int_equal(fk_file_read_open(rt, "up", "/workspace", NULL, &fd, &size, &err),
	                 FK_EISDIR);
	assert_string_equal(err.message, "path '/workspace' is a directory");
	/* X-Metadata-* become user.e2b.<lowercased key> xattrs */
	assert_int_equal(fk_file_write_open(rt, "up", "/workspace/meta", "sandbox", &w, NULL, &err),
	                 0);
	int mrc = fk_writer_set_meta(w, "Owner-Tag", "v1", &err);
	assert_int_equal(fk_writer_close(w, NULL), 0);
	if (mrc == 0) {
		assert_int_equal(
		    fk_file_read_open(rt, "up", "/workspace/meta", NULL, &fd, &size, &err), 0);
		char val[16] = {0};
		assert_int_equal(fgetxattr(fd, "user.e2b.owner-tag", val, sizeof(val) - 1), 2);
		assert_string_equal(val, "v1");
		close(fd);
	} else {
		fprintf(stderr, "note: no user xattrs on the state dir: %s\n", err.message);
	}
	/* read of the host's /usr as seen inside */
	assert_int_equal(fk_file_read_open(rt, "up", "/usr/bin/env", NULL, &fd, &size, &err), 0);
	assert_true(size > 0);
	close(fd);
	box_destroy("up");
}

void test_runtime__upload_64mib_is_fast(void **state)
{
	NEED_ISOLATION(rt);
	box_create("big", false);
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	assert_non_null(buf);
	memset(buf, 'z', chunk);
	fk_writer *w;
	int64_t t0 = fk_mono_ms();
	assert_int_equal(fk_file_write_open(rt, "big", "/workspace/big", "sandbox", &w, NULL, NULL),
	                 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(fk_writer_write(w, buf, chunk, NULL), 0);
	assert_int_equal(fk_writer_close(w, NULL), 0);
	int64_t ms = fk_mono_ms() - t0;
	fprintf(stderr, "64 MiB upload: %lld ms\n", (long long)ms);
	assert_true(ms < 5000); /* generous bound; ~0.1 s here, need >= 200 MB/s */
	fk_entry e;
	assert_int_equal(fk_file_stat(rt, "big", "/workspace/big", NULL, &e, NULL), 0);
	assert_int_equal(e.size, 64 * 1024 * 1024);
	fk_entry_clear(&e);
	free(buf);
	box_destroy("big");
}

void test_runtime__stat_list_mkdir_move_remove(void **state)
{
	NEED_ISOLATION(rt);
	box_create("fs", false);
	free(sh("fs", "sandbox", "mkdir -p d/sub && printf hello > d/f.txt && ln -s f.txt d/l"));
	fk_entry e;
	fk_err err = {0};
	assert_int_equal(fk_file_stat(rt, "fs", "/workspace/d/f.txt", "sandbox", &e, &err), 0);
	assert_string_equal(e.name, "f.txt");
	assert_string_equal(e.path, "/workspace/d/f.txt");
	assert_int_equal(e.type, FK_FT_FILE);
	assert_int_equal(e.size, 5);
	assert_int_equal(e.mode & 0777, 0644);
	assert_string_equal(e.permissions, "-rw-r--r--");
	assert_string_equal(e.owner, "sandbox");
	assert_string_equal(e.group, "sandbox");
	assert_null(e.symlink_target);
	assert_true(e.mtime_sec > 0);
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "fs", "/workspace/d/l", NULL, &e, NULL), 0);
	assert_int_equal(e.type, FK_FT_SYMLINK);
	assert_string_equal(e.symlink_target, "/workspace/d/f.txt"); /* resolved, envd */
	assert_int_equal(e.target_type, FK_FT_FILE);
	assert_int_equal(e.target_mode & 0777, 0644);
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "fs", "/", NULL, &e, NULL), 0);
	assert_int_equal(e.type, FK_FT_DIR);
	assert_string_equal(e.path, "/");
	assert_string_equal(e.permissions, "drwxr-xr-x");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "fs", "/nope", NULL, &e, &err), FK_ENOTFOUND);

	fk_entry *v;
	size_t n;
	assert_int_equal(fk_file_list(rt, "fs", "/workspace/d", NULL, 1, &v, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].path, "/workspace/d/f.txt");
	assert_string_equal(v[1].path, "/workspace/d/l");
	assert_string_equal(v[2].path, "/workspace/d/sub");
	assert_int_equal(v[2].type, FK_FT_DIR);
	fk_entries_free(v, n);
	assert_int_equal(fk_file_list(rt, "fs", "/workspace", NULL, 2, &v, &n, NULL), 0);
	assert_int_equal(n, 4);
	fk_entries_free(v, n);
	assert_int_equal(fk_file_list(rt, "fs", "/workspace/d/f.txt", NULL, 1, &v, &n, NULL),
	                 FK_ENOTDIR);
	assert_int_equal(fk_file_list(rt, "fs", "/workspace/zz", NULL, 1, &v, &n, NULL),
	                 FK_ENOTFOUND);

	assert_int_equal(fk_file_mkdir(rt, "fs", "/workspace/m/n", "sandbox", &e, NULL), 0);
	assert_int_equal(e.type, FK_FT_DIR);
	assert_string_equal(e.owner, "sandbox");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_mkdir(rt, "fs", "/workspace/m/n", "sandbox", NULL, NULL),
	                 FK_EEXIST);
	assert_int_equal(fk_file_mkdir(rt, "fs", "/workspace/d/f.txt", "sandbox", NULL, NULL),
	                 FK_ENOTDIR);

	assert_int_equal(fk_file_move(rt, "fs", "/workspace/d/f.txt", "/workspace/x/y/g.txt",
	                              "sandbox", &e, NULL),
	                 0);
	assert_string_equal(e.path, "/workspace/x/y/g.txt");
	assert_int_equal(e.size, 5);
	fk_entry_clear(&e);
	assert_int_equal(
	    fk_file_move(rt, "fs", "/workspace/none", "/workspace/z", NULL, NULL, NULL),
	    FK_ENOTFOUND);

	assert_int_equal(fk_file_remove(rt, "fs", "/workspace/d", NULL, NULL), 0);
	assert_int_equal(fk_file_remove(rt, "fs", "/workspace/d", NULL, NULL), 0);
	char *o = sh("fs", "sandbox", "ls /workspace; stat -c %%U /workspace/x/y");
	assert_string_equal(o, "m\nx\nsandbox\n");
	free(o);
	box_destroy("fs");
}
