/*
 * tests/fake/server/test_files_proc.c: the files API never walks the host's view of a box's
 * /proc. The server reads a box's files as the host's root, and the box's /proc answers it as
 * such: /proc/1 is a copy of the server, its map_files names the server's exact memory layout,
 * its exe and fd links are host paths. Stat, ListDir, WatchDir, MakeDir, Remove and Move refuse
 * what resolves into /proc (by the file system reached, not by the path's text: symlinks too)
 * with 400 `path '<p>' leads into /proc, which the files API does not open`, as GET /files
 * does; /proc itself is an entry of "/" (Stat of it and ListDir of "/" show it, without
 * children); a symlink into /proc is shown as written, never resolved through /proc's links
 * nor typed by them. And how a symlink elsewhere is reported (its target's type).
 * Needs root (sandboxes); skips otherwise.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "connect_frame.h"
#include "fkserver.h"

#define KEY "e2b_files_proc_test_key"

static fks g_srv;
static fks_box g_box;

static int up(void **state)
{
	if (fks_root_setup(state) < 0)
		return -1;
	if (geteuid() != 0)
		return 0;
	fks_box_sh(&g_srv, &g_box,
	           "ln -s /proc/1/map_files /tmp/pm && ln -s /proc/1/exe /tmp/pe && "
	           "ln -s /proc /tmp/pp && ln -s /proc/self/fd/0 /tmp/pf && mkdir /tmp/d");
	return 0;
}

static fkr *fs_call(const char *rpc, const char *body)
{
	return fks_fs_call(&g_srv, &g_box, rpc, body);
}

/* `rpc` with `body` answers 400 invalid_argument "path '<p>' leads into /proc, ...". */
static void assert_refused(const char *rpc, const char *body, const char *p)
{
	fkr *r = fs_call(rpc, body);
	char want[300];
	snprintf(want, sizeof(want),
	         "path '%s' leads into /proc, which the files API does not open", p);
	if (r->status != 400)
		fprintf(stderr, "%s %s: %ld %s\n", rpc, body, r->status, r->body ? r->body : "");
	assert_int_equal(r->status, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "code")),
	                    "invalid_argument");
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), want);
	fkr_free(r);
}

static void test_proc__stat(void **state)
{
	(void)state;
	fks_need_root();
	/* /proc itself: the entry "/" lists */
	fkr *r = fs_call("Stat", "{\"path\":\"/proc\"}");
	assert_int_equal(r->status, 200);
	json_t *e = json_object_get(r->json, "entry");
	assert_string_equal(json_string_value(json_object_get(e, "name")), "proc");
	assert_string_equal(json_string_value(json_object_get(e, "path")), "/proc");
	assert_string_equal(json_string_value(json_object_get(e, "type")), "FILE_TYPE_DIRECTORY");
	fkr_free(r);
	/* anything in it, directly or through a symlink */
	const char *const in[] = {"/proc/1/map_files", "/proc/1/exe",    "/proc/1/fd", "/proc/1",
	                          "/proc/self",        "/tmp/pp/1/maps", "/tmp/pm/x"};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char body[128];
		snprintf(body, sizeof(body), "{\"path\":\"%s\"}", in[i]);
		assert_refused("Stat", body, in[i]);
	}
	/* a symlink into /proc is itself, its target as written: never read through /proc's
	 * links (/proc/1/exe's is the server's host path) */
	const char *const links[][2] = {{"/tmp/pe", "/proc/1/exe"},
	                                {"/tmp/pm", "/proc/1/map_files"},
	                                {"/tmp/pp", "/proc"},
	                                {"/tmp/pf", "/proc/self/fd/0"}};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		char body[128];
		snprintf(body, sizeof(body), "{\"path\":\"%s\"}", links[i][0]);
		r = fs_call("Stat", body);
		assert_int_equal(r->status, 200);
		e = json_object_get(r->json, "entry");
		assert_null(json_object_get(e, "type")); /* its target is not looked at */
		assert_null(json_object_get(e, "mode"));
		assert_string_equal(json_string_value(json_object_get(e, "symlinkTarget")),
		                    links[i][1]);
		fkr_free(r);
	}
}

static void test_proc__listdir(void **state)
{
	(void)state;
	fks_need_root();
	assert_refused("ListDir", "{\"path\":\"/proc\"}", "/proc");
	assert_refused("ListDir", "{\"path\":\"/proc/1/map_files\"}", "/proc/1/map_files");
	assert_refused("ListDir", "{\"path\":\"/proc/1/fd\",\"depth\":2}", "/proc/1/fd");
	assert_refused("ListDir", "{\"path\":\"/tmp/pp\"}", "/tmp/pp");
	assert_refused("ListDir", "{\"path\":\"/tmp/pm\"}", "/tmp/pm");
	/* "/" at depth 3: /proc is an entry, with nothing of it below */
	fkr *r = fs_call("ListDir", "{\"path\":\"/\",\"depth\":3}");
	assert_int_equal(r->status, 200);
	json_t *entries = json_object_get(r->json, "entries");
	size_t n = json_array_size(entries), proc = 0, tmp_d = 0;
	assert_true(n > 10);
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(entries, i);
		const char *p = json_string_value(json_object_get(e, "path"));
		assert_non_null(p);
		if (!strncmp(p, "/proc/", 6) || !strncmp(p, "/sys/", 5))
			fail_msg("ListDir / depth 3 went into %s", p);
		if (!strcmp(p, "/proc")) {
			proc++;
			assert_string_equal(json_string_value(json_object_get(e, "type")),
			                    "FILE_TYPE_DIRECTORY");
		}
		tmp_d += !strcmp(p, "/tmp/d");
	}
	assert_int_equal(proc, 1);
	assert_int_equal(tmp_d, 1); /* the rest of the tree is listed */
	fkr_free(r);
}

/* A symlink outside /proc is reported as envd's GetEntryInfo does: the type and mode of where it
 * leads (none when that is nowhere), the target resolved, the rest the link's own; never
 * FILE_TYPE_SYMLINK (the Python SDK refuses that value). Stat and ListDir alike. */
static void test_links__target_type(void **state)
{
	(void)state;
	fks_need_root();
	fks_box_sh(&g_srv, &g_box,
	           "mkdir -p /tmp/lk/d && chmod 0750 /tmp/lk/d && printf abc > /tmp/lk/f && "
	           "chmod 0600 /tmp/lk/f && ln -s f /tmp/lk/lf && ln -s /tmp/lk/d /tmp/lk/ld && "
	           "ln -s lf /tmp/lk/ll && ln -s nowhere /tmp/lk/lx");
	const struct {
		const char *path, *type, *target;
		long mode;
	} want[] = {{"/tmp/lk/lf", "FILE_TYPE_FILE", "/tmp/lk/f", 0600},
	            {"/tmp/lk/ld", "FILE_TYPE_DIRECTORY", "/tmp/lk/d", 0750},
	            {"/tmp/lk/ll", "FILE_TYPE_FILE", "/tmp/lk/f", 0600},
	            {"/tmp/lk/lx", NULL, "/tmp/lk/nowhere", 0}};
	size_t nw = sizeof(want) / sizeof(want[0]);
	for (size_t i = 0; i < nw; i++) {
		char body[128];
		snprintf(body, sizeof(body), "{\"path\":\"%s\"}", want[i].path);
		fkr *r = fs_call("Stat", body);
		assert_int_equal(r->status, 200);
		json_t *e = json_object_get(r->json, "entry");
		json_t *t = json_object_get(e, "type");
		if (want[i].type)
			assert_string_equal(json_string_value(t), want[i].type);
		else
			assert_null(t);
		assert_string_equal(json_string_value(json_object_get(e, "symlinkTarget")),
		                    want[i].target);
		assert_int_equal(json_integer_value(json_object_get(e, "mode")), want[i].mode);
		assert_string_equal(json_string_value(json_object_get(e, "permissions")),
		                    "Lrwxrwxrwx");
		fkr_free(r);
	}
	fkr *r = fs_call("ListDir", "{\"path\":\"/tmp/lk\",\"depth\":1}");
	assert_int_equal(r->status, 200);
	json_t *entries = json_object_get(r->json, "entries");
	size_t seen = 0;
	for (size_t i = 0; i < json_array_size(entries); i++) {
		json_t *e = json_array_get(entries, i);
		const char *p = json_string_value(json_object_get(e, "path"));
		const char *t = json_string_value(json_object_get(e, "type"));
		for (size_t k = 0; k < nw; k++) {
			if (strcmp(p, want[k].path))
				continue;
			seen++;
			if (want[k].type)
				assert_string_equal(t, want[k].type);
			else
				assert_null(t);
		}
	}
	assert_int_equal(seen, nw);
	assert_int_equal(json_array_size(entries), nw + 2); /* and d, f */
	fkr_free(r);
}

/* MakeDir, Remove and Move into /proc: refused before anything is tried there. */
static void test_proc__mkdir_remove_move(void **state)
{
	(void)state;
	fks_need_root();
	assert_refused("MakeDir", "{\"path\":\"/proc/1/x\"}", "/proc/1/x");
	assert_refused("MakeDir", "{\"path\":\"/tmp/pp/x\"}", "/tmp/pp/x");
	assert_refused("Remove", "{\"path\":\"/proc/1/fd/0\"}", "/proc/1/fd/0");
	assert_refused("Remove", "{\"path\":\"/tmp/pp/sys\"}", "/tmp/pp/sys");
	assert_refused("Move", "{\"source\":\"/proc/1/comm\",\"destination\":\"/tmp/c\"}",
	               "/proc/1/comm");
	assert_refused("Move", "{\"source\":\"/tmp/d\",\"destination\":\"/tmp/pp/d\"}",
	               "/tmp/pp/d");
	/* what is outside /proc still moves and goes */
	fkr *r = fs_call("Move", "{\"source\":\"/tmp/d\",\"destination\":\"/tmp/d2\"}");
	assert_int_equal(r->status, 200);
	fkr_free(r);
	r = fs_call("Move", "{\"source\":\"/tmp/d2\",\"destination\":\"/tmp/d\"}");
	assert_int_equal(r->status, 200);
	fkr_free(r);
}

/* WatchDir of /proc (or through a symlink to it): the stream ends with the same error. */
static void test_proc__watch(void **state)
{
	(void)state;
	fks_need_root();
	const char *const dirs[] = {"/proc", "/tmp/pp", "/proc/1/fd"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char msg[128];
		snprintf(msg, sizeof(msg), "{\"path\":\"%s\",\"recursive\":true}", dirs[i]);
		size_t n;
		unsigned char *env = connect_frame(msg, strlen(msg), &n);
		const char *h[] = {g_box.hid, g_box.htok, "Content-Type: application/connect+json",
		                   "Authorization: Basic cm9vdDo=", NULL};
		fkr *r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/WatchDir", h, env, n);
		free(env);
		char want[300];
		snprintf(want, sizeof(want),
		         "path '%s' leads into /proc, which the files API does not open", dirs[i]);
		assert_int_equal(r->status, 200);
		assert_non_null(r->body);
		if (!memmem(r->body, r->len, want, strlen(want)) ||
		    !memmem(r->body, r->len, "invalid_argument", 16))
			fail_msg("WatchDir %s answered %.*s", dirs[i], (int)r->len, r->body);
		fkr_free(r);
	}
}

int main(int argc, char **argv)
{
	if (fks_root_init(argc, argv, KEY, &g_srv, &g_box) < 0)
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proc__stat),
	    cmocka_unit_test(test_proc__listdir),
	    cmocka_unit_test(test_proc__mkdir_remove_move),
	    cmocka_unit_test(test_links__target_type),
	    cmocka_unit_test(test_proc__watch),
	};
	return cmocka_run_group_tests(tests, up, fks_root_teardown);
}
