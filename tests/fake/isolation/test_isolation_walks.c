/*
 * tests/fake/isolation/test_isolation_walks.c — what a box's tree can cost the server: ListDir of
 * deep, huge and long-named trees bounded, watches capped across watches, a recursive watch of
 * a wide tree. Part of test_fake_isolation (main in test_isolation.c).
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

/* Once, ListDir with depth 100000 on a 6,000-level tree overflowed a thread's stack. */
void test_isolation__listdir_deep_tree_is_answered(void **state)
{
	NEED_ISOLATION(rt);
	box_create("deep");
	char *made = sh("deep", "sandbox",
	                "perl -e 'mkdir \"deep\" or die; chdir \"deep\" or die; for (1..6000) "
	                "{ mkdir \"d\" or die; chdir \"d\" or die } print qq(made\\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	fk_entry *e = NULL;
	size_t n = 0;
	fk_err err = {0};
	int rc = fk_file_list(rt, "deep", "/workspace/deep", "sandbox", 1000000, &e, &n, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(n, 256); /* the walk stops at 256 levels */
	assert_string_equal(e[0].path, "/workspace/deep/d");
	fk_entries_free(e, n);
	/* Remove walks all 6,000 levels without recursion */
	assert_int_equal(fk_file_remove(rt, "deep", "/workspace/deep", "sandbox", &err), 0);
	fk_entry st;
	assert_int_equal(fk_file_stat(rt, "deep", "/workspace/deep", "sandbox", &st, &err),
	                 FK_ENOTFOUND);
	assert_int_equal(fk_box_destroy(rt, "deep", NULL), 0);
}

/* Each watch is an inotify instance of the host's root (max_user_instances, 128 here, shared by
 * every root process) and each directory one of its watches: open watches are capped per box
 * (16) and per server (64), and the directories of all watches (50,000); past a cap a watch is
 * refused at start, and what a freed watch held is given back. */
void test_isolation__watches_are_capped_across_watches(void **state)
{
	NEED_ISOLATION(rt);
	const char *const boxes[] = {"wca", "wcb", "wcc", "wcd", "wce"};
	for (size_t i = 0; i < 5; i++)
		box_create(boxes[i]);
	unsigned nw = 99;
	size_t nd = 99;
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 0);
	assert_int_equal(nd, 0);
	fk_dirwatch *w[4][16] = {{0}}, *x = NULL;
	fk_err err = {0};
	for (size_t b = 0; b < 4; b++) {
		for (size_t i = 0; i < 16; i++)
			assert_int_equal(fk_dirwatch_new(rt, boxes[b], "/tmp", "root", false,
			                                 &w[b][i], NULL, &err),
			                 0);
		if (b == 0) { /* the box's 17th */
			assert_int_equal(
			    fk_dirwatch_new(rt, boxes[0], "/tmp", "root", false, &x, NULL, &err),
			    FK_ENOSPC);
			assert_null(x);
			assert_string_equal(
			    err.message, "error creating watcher: the sandbox has 16 watches open, "
			                 "as many as it may: end one first");
		}
	}
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 64);
	assert_int_equal(nd, 64);
	/* the server's 65th, in a box that has none */
	assert_int_equal(fk_dirwatch_new(rt, boxes[4], "/tmp", "root", false, &x, NULL, &err),
	                 FK_ENOSPC);
	assert_null(x);
	assert_string_equal(err.message, "error creating watcher: the server has 64 watches open, "
	                                 "as many as it keeps: end one first");
	/* a watch freed (its stream ended) gives its place back */
	fk_dirwatch_free(w[0][0]);
	assert_int_equal(fk_dirwatch_new(rt, boxes[4], "/tmp", "root", false, &x, NULL, &err), 0);
	fk_dirwatch_free(x);
	for (size_t b = 0; b < 4; b++)
		for (size_t i = b == 0 ? 1 : 0; i < 16; i++)
			fk_dirwatch_free(w[b][i]);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 0);
	assert_int_equal(nd, 0);
	/* directories: 5 recursive watches of 10,000 take the server's 50,000 */
	char *made =
	    sh("wca", "root",
	       "mkdir /tmp/t && cd /tmp/t && perl -e 'for (1..9999) { mkdir \"d$_\" or die "
	       "} print qq(made\\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(
		    fk_dirwatch_new(rt, boxes[i], "/tmp", "root", false, &w[0][i], NULL, &err), 0);
	for (size_t i = 0; i < 5; i++)
		fk_dirwatch_free(w[0][i]);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(
		    fk_dirwatch_new(rt, "wca", "/tmp/t", "root", true, &w[0][i], NULL, &err), 0);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 5);
	assert_int_equal(nd, 50000);
	assert_int_equal(fk_dirwatch_new(rt, "wcb", "/tmp", "root", false, &x, NULL, &err),
	                 FK_ENOSPC);
	assert_null(x);
	assert_string_equal(err.message,
	                    "watching '/tmp' takes more directories than are left of the 50000 the "
	                    "server's watches take at most: end other watches or watch a "
	                    "subdirectory");
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 5);
	assert_int_equal(nd, 50000);
	fk_dirwatch_free(w[0][4]);
	assert_int_equal(fk_dirwatch_new(rt, "wcb", "/tmp", "root", false, &x, NULL, &err), 0);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 5);
	assert_int_equal(nd, 40001);
	fk_dirwatch_free(x);
	for (size_t i = 0; i < 4; i++)
		fk_dirwatch_free(w[0][i]);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 0);
	assert_int_equal(nd, 0);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(fk_box_destroy(rt, boxes[i], NULL), 0);
}

/* A box decides how many files a directory holds, and ListDir's reply is built whole in the
 * server (300,000 files took it from 77 to 885 MB): at most 100,000 entries are answered, beyond
 * that the call is refused and the server's memory stays its own. */
void test_isolation__listdir_of_a_huge_directory_is_refused(void **state)
{
	NEED_ISOLATION(rt);
	box_create("wide");
	char *made = sh("wide", "sandbox",
	                "mkdir w && cd w && perl -e 'for (1..100000) { open(my $f, \">\", \"f$_\") "
	                "or die; close $f } print qq(made\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	fk_entry *e = NULL;
	size_t n = 0;
	fk_err err = {0};
	assert_int_equal(fk_file_list(rt, "wide", "/workspace/w", "sandbox", 1, &e, &n, &err), 0);
	assert_int_equal(n, 100000);
	fk_entries_free(e, n);
	/* one more (at depth 2: the limit counts every level) */
	made = sh("wide", "sandbox", "mkdir -p w2/sub && touch w2/sub/x && mv w w2/ && echo ok");
	assert_string_equal(made, "ok\n");
	free(made);
	e = NULL;
	n = 0;
	assert_int_equal(fk_file_list(rt, "wide", "/workspace/w2", "sandbox", 1, &e, &n, &err), 0);
	assert_int_equal(n, 2);
	fk_entries_free(e, n);
	e = NULL;
	n = 0;
	assert_int_equal(fk_file_list(rt, "wide", "/workspace/w2", "sandbox", 2, &e, &n, &err),
	                 FK_EINVAL);
	assert_null(e);
	assert_int_equal(n, 0);
	assert_string_equal(err.message,
	                    "listing '/workspace/w2' holds more than 100000 entries, more than "
	                    "ListDir answers: list a subdirectory or a smaller depth");
	assert_int_equal(fk_box_destroy(rt, "wide", NULL), 0);
}

/* The entry cap alone let 100,000 entries of 160-byte names cost 334 MB while the reply was
 * built: a listing is also refused past 16 MiB of its entries' strings (name, path, owner,
 * group, link, metadata). Here each entry takes 200 + 213 + 7 + 7 = 427 bytes: 39,290 of them
 * (16,776,830 bytes) are answered, one more is refused. */
void test_isolation__listdir_of_long_names_is_bounded_by_bytes(void **state)
{
	NEED_ISOLATION(rt);
	box_create("longn");
	char *made = sh("longn", "sandbox",
	                "mkdir l && cd l && perl -e 'for (1..39290) { open(my $f, \">\", "
	                "sprintf(q(%0200d), $_)) or die; close $f } print qq(made\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	fk_entry *e = NULL;
	size_t n = 0;
	fk_err err = {0};
	assert_int_equal(fk_file_list(rt, "longn", "/workspace/l", "sandbox", 1, &e, &n, &err), 0);
	assert_int_equal(n, 39290);
	assert_int_equal(strlen(e[0].name), 200);
	assert_string_equal(e[0].owner, "sandbox");
	assert_string_equal(e[0].group, "sandbox");
	fk_entries_free(e, n);
	made = sh("longn", "sandbox", "touch l/$(printf %0200d 0) && echo ok");
	assert_string_equal(made, "ok\n");
	free(made);
	e = NULL;
	n = 0;
	assert_int_equal(fk_file_list(rt, "longn", "/workspace/l", "sandbox", 1, &e, &n, &err),
	                 FK_EINVAL);
	assert_null(e);
	assert_int_equal(n, 0);
	assert_string_equal(
	    err.message, "listing '/workspace/l' holds more than 16777216 bytes of names, paths, "
	                 "owners, links and metadata, more than ListDir answers: list a "
	                 "subdirectory or a smaller depth");
	assert_int_equal(fk_box_destroy(rt, "longn", NULL), 0);
}

/* A recursive WatchDir kept an open fd for every directory waiting in its walk: 25,000
 * subdirectories the box made took the server to its 20,000-fd limit (every other open in the
 * server failed meanwhile) and 19,979 inotify watches of the host's root (whose budget, 192,530
 * here, every root process on the machine shares). Now the walk holds one fd at a time, and a
 * watch takes at most 10,000 directories. */
void test_isolation__recursive_watch_of_a_wide_tree(void **state)
{
	NEED_ISOLATION(rt);
	box_create("wd");
	char *made = sh("wd", "sandbox",
	                "mkdir w && cd w && perl -e 'for (1..9000) { mkdir \"d$_\" or die } "
	                "print qq(made\\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	/* 9,000 directories under a 1,024-fd limit: every one is watched */
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 1024;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	fk_dirwatch *w = NULL;
	fk_err err = {0};
	int rc = fk_dirwatch_new(rt, "wd", "/workspace/w", "sandbox", true, &w, NULL, &err);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(rc, 0);
	made =
	    sh("wd", "sandbox",
	       "cd w && perl -e 'for (1..9000) { open(my $f, \">\", \"d$_/x\") or die; close $f } "
	       "print qq(ok\\n)'");
	assert_string_equal(made, "ok\n");
	free(made);
	fk_dirwatch_event ev = {0};
	int64_t deadline = fk_mono_ms() + 60000;
	int created = 0;
	while (created < 9000 && fk_mono_ms() < deadline) {
		rc = fk_dirwatch_next(w, &ev, 1000);
		if (rc == FK_ETIMEOUT)
			continue;
		assert_int_equal(rc, 0);
		size_t n = strlen(ev.name);
		if (ev.op == FK_DIRWATCH_CREATE && n > 2 && !strcmp(ev.name + n - 2, "/x"))
			created++;
		fk_dirwatch_event_clear(&ev);
	}
	assert_int_equal(created, 9000);
	fk_dirwatch_free(w);
	/* past 10,000 directories a recursive watch is refused (a plain one still works) */
	made = sh("wd", "sandbox",
	          "cd w && perl -e 'for (9001..10001) { mkdir \"d$_\" or die } print qq(ok\\n)'");
	assert_string_equal(made, "ok\n");
	free(made);
	w = NULL;
	assert_int_equal(fk_dirwatch_new(rt, "wd", "/workspace/w", "sandbox", true, &w, NULL, &err),
	                 FK_EINVAL);
	assert_null(w);
	assert_string_equal(
	    err.message, "watching '/workspace/w' recursively takes more than 10000 directories, "
	                 "more than WatchDir watches: watch a subdirectory");
	assert_int_equal(
	    fk_dirwatch_new(rt, "wd", "/workspace/w", "sandbox", false, &w, NULL, &err), 0);
	fk_dirwatch_free(w);
	assert_int_equal(fk_box_destroy(rt, "wd", NULL), 0);
}
