/*
 * tests/fake/server/test_deep_tree.c: a sandbox's tree as deep as its code makes it (a loop of
 * mkdir: 2,002 and 10,010 levels, paths of 4,000 and 20,000 bytes) is snapshotted, forked,
 * deleted with its sandbox and with its template, and listed, through the real server: every
 * walk runs on a connection thread's own stack (512 KiB), where a walk that recursed once per
 * level (glibc nftw) overflowed it and took the server and every sandbox down. Each answer is
 * checked exactly: the copy has the deepest file with its contents, the deleted tree is gone
 * from the state directory, ListDir lists what its depth asks for (at most its documented 256
 * levels), names and all, past PATH_MAX. Needs root (sandboxes); skips otherwise.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fkserver.h"

#define KEY "e2b_deep_tree_test_key"

static fks g_srv;

/* The shell's $p: "d/" 1,000 times, a chunk of 1,000 levels in a 2,000-byte path, which the
 * box's shell and mkdir -p handle; chunks are stacked with mv (a rename: one system call
 * whatever the depth). */

#define SET_P "p=$(printf 'd/%%.0s' $(seq 1000)) && "

/* /root/x in box `b` made `chunks` * 1,001 levels deep: x/d/.../d/x/d/.../d/deep.txt,
 * "deep file" its contents. */
static void make_deep(fks *s, fks_box *b, int chunks)
{
	char line[512];
	snprintf(
	    line, sizeof(line),
	    "cd /root && " SET_P "mkdir -p \"x/$p\" && printf 'deep file\\n' > \"x/${p}deep.txt\" "
	    "&& i=1 && while [ $i -lt %d ]; do mkdir -p \"y/$p\" && mv x \"y/${p}x\" && mv y x "
	    "|| exit 1; i=$((i+1)); done",
	    chunks);
	fks_box_sh(s, b, line);
}

/* Whether box `b` has make_deep's tree whole: its deepest file, reached chunk by chunk (cd -P:
 * no path longer than a chunk), with its contents. */
static bool has_deep(fks *s, fks_box *b, int chunks)
{
	char line[512];
	snprintf(line, sizeof(line),
	         "cd /root/x && " SET_P "i=1 && while [ $i -lt %d ]; do cd -P \"${p}x\" || exit 1; "
	         "i=$((i+1)); done && cd -P \"$p\" && [ \"$(cat deep.txt)\" = 'deep file' ]",
	         chunks);
	return fks_box_run(s, b, line);
}

/* The server still answers (it did not die on the walk). */
static void assert_alive(fks *s)
{
	int st = 0;
	assert_int_equal(waitpid(s->pid, &st, WNOHANG), 0);
	const char *h[] = {"X-API-Key: " KEY, NULL};
	fkr *r = fks_req(s, "GET", "/sandboxes", h, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
}

/* How many files named deep.txt the state directory holds outside the sandboxes' disk images
 * (template layers; without per-sandbox disks, the sandboxes' own files too). */
static int deep_files_in_state(fks *s)
{
	char cmd[256], buf[32] = "";
	snprintf(cmd, sizeof(cmd), "find %s/state -name deep.txt 2>/dev/null | wc -l", s->dir);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	pclose(f);
	return atoi(buf);
}

static fkr *control(fks *s, const char *method, const char *path, const char *body)
{
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	return fks_req(s, method, path, h, body, body ? strlen(body) : 0);
}

/* A box of `sandbox` (a create or fork answer's object), with envd's headers. */
static void box_of(json_t *sandbox, fks_box *b)
{
	memset(b, 0, sizeof(*b));
	const char *id = json_string_value(json_object_get(sandbox, "sandboxID"));
	const char *tok = json_string_value(json_object_get(sandbox, "envdAccessToken"));
	assert_non_null(id);
	assert_non_null(tok);
	snprintf(b->id, sizeof(b->id), "%s", id);
	snprintf(b->token, sizeof(b->token), "%s", tok);
	snprintf(b->hid, sizeof(b->hid), "E2b-Sandbox-Id: %s", b->id);
	snprintf(b->htok, sizeof(b->htok), "X-Access-Token: %s", b->token);
}

static const int depths[] = {2, 10}; /* chunks: 2,002 and 10,010 levels */

/* A snapshot of the deep tree; a sandbox made from it has the tree whole; deleting that
 * sandbox and then the snapshot's template leaves no copy of the tree. */
static void test_deep__snapshot_then_template_delete(void **state)
{
	(void)state;
	fks_need_root();
	for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
		fks_box b, from;
		fks_box_create(&g_srv, KEY, NULL, &b);
		make_deep(&g_srv, &b, depths[k]);
		char path[160];
		snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", b.id);
		fkr *r = control(&g_srv, "POST", path, "{}");
		assert_alive(&g_srv);
		assert_int_equal(r->status, 201);
		char snap[128], create[256];
		snprintf(snap, sizeof(snap), "%s",
		         json_string_value(json_object_get(r->json, "snapshotID")));
		fkr_free(r);
		fks_box_delete(&g_srv, KEY, &b);
		assert_alive(&g_srv);
		snprintf(create, sizeof(create), "{\"templateID\":\"%s\"}", snap);
		fks_box_create(&g_srv, KEY, create, &from);
		assert_true(has_deep(&g_srv, &from, depths[k]));
		fks_box_delete(&g_srv, KEY, &from);
		assert_int_equal(deep_files_in_state(&g_srv), 1); /* the snapshot's layer */
		char tpl[128];
		snprintf(tpl, sizeof(tpl), "/templates/%.*s", (int)strcspn(snap, ":"), snap);
		r = control(&g_srv, "DELETE", tpl, NULL);
		assert_alive(&g_srv);
		assert_int_equal(r->status, 204);
		fkr_free(r);
		r = control(&g_srv, "GET", tpl, NULL);
		assert_int_equal(r->status, 404);
		fkr_free(r);
		assert_int_equal(deep_files_in_state(&g_srv), 0);
	}
}

/* Two forks of the deep tree's sandbox (600 s to live: a fork's default is 15 s, less than checking
 * both takes on a loaded machine): each has the tree whole, and the source still does. */
static void test_deep__fork(void **state)
{
	(void)state;
	fks_need_root();
	for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
		fks_box b;
		fks_box_create(&g_srv, KEY, NULL, &b);
		make_deep(&g_srv, &b, depths[k]);
		char path[160];
		snprintf(path, sizeof(path), "/sandboxes/%s/fork", b.id);
		fkr *r = control(&g_srv, "POST", path, "{\"count\":2,\"timeout\":600}");
		assert_alive(&g_srv);
		assert_int_equal(r->status, 201);
		assert_int_equal(json_array_size(r->json), 2);
		for (size_t i = 0; i < 2; i++) {
			json_t *sb = json_object_get(json_array_get(r->json, i), "sandbox");
			assert_non_null(sb);
			fks_box f;
			box_of(sb, &f);
			assert_true(has_deep(&g_srv, &f, depths[k]));
			fks_box_delete(&g_srv, KEY, &f);
		}
		fkr_free(r);
		assert_true(has_deep(&g_srv, &b, depths[k]));
		fks_box_delete(&g_srv, KEY, &b);
		assert_alive(&g_srv);
		assert_int_equal(deep_files_in_state(&g_srv), 0); /* the fork's layer went too */
	}
}

/* The deep tree's sandbox deleted: its files are gone from the state directory. */
static void test_deep__sandbox_delete(void **state)
{
	(void)state;
	fks_need_root();
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	make_deep(&g_srv, &b, 10);
	fks_box_delete(&g_srv, KEY, &b);
	assert_alive(&g_srv);
	assert_int_equal(deep_files_in_state(&g_srv), 0);
}

/* ListDir of the deep tree with a depth far past it: the first 256 levels (the documented
 * cap), one directory each, the deepest path exactly. And a tree of 40 levels of 200-byte
 * names (8,000-byte paths) at depth 100: all 40 levels, the ones past PATH_MAX included. */
static void test_deep__listdir(void **state)
{
	(void)state;
	fks_need_root();
	fks_box b;
	fks_box_create(&g_srv, KEY, NULL, &b);
	make_deep(&g_srv, &b, 10);
	const char *h[] = {b.hid, b.htok, "Content-Type: application/json", NULL};
	const char *body = "{\"path\":\"/root/x\",\"depth\":100000}";
	fkr *r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/ListDir", h, body, strlen(body));
	assert_alive(&g_srv);
	assert_int_equal(r->status, 200);
	json_t *entries = json_object_get(r->json, "entries");
	assert_int_equal(json_array_size(entries), 256);
	char want[8 + 2 * 256 + 1] = "/root/x";
	for (size_t i = 0; i < json_array_size(entries); i++) {
		strcat(want, "/d");
		json_t *e = json_array_get(entries, i);
		assert_string_equal(json_string_value(json_object_get(e, "path")), want);
		assert_string_equal(json_string_value(json_object_get(e, "type")),
		                    "FILE_TYPE_DIRECTORY");
	}
	fkr_free(r);

	/* 40 levels of 200-byte names */
	fks_box_sh(&g_srv, &b,
	           "cd /root && n=$(printf 'n%.0s' $(seq 200)) && mkdir w && cd w && i=0 && "
	           "while [ $i -lt 40 ]; do mkdir $n && cd -P $n || exit 1; i=$((i+1)); done && "
	           "echo end > f");
	body = "{\"path\":\"/root/w\",\"depth\":100}";
	r = fks_req(&g_srv, "POST", "/filesystem.Filesystem/ListDir", h, body, strlen(body));
	assert_alive(&g_srv);
	assert_int_equal(r->status, 200);
	entries = json_object_get(r->json, "entries");
	assert_int_equal(json_array_size(entries), 41);
	char name[201];
	memset(name, 'n', 200);
	name[200] = 0;
	char *p = malloc(8 + 201 * 40 + 3);
	assert_non_null(p);
	strcpy(p, "/root/w");
	for (size_t i = 0; i < 40; i++) {
		strcat(p, "/");
		strcat(p, name);
		json_t *e = json_array_get(entries, i);
		assert_string_equal(json_string_value(json_object_get(e, "path")), p);
		assert_string_equal(json_string_value(json_object_get(e, "name")), name);
	}
	strcat(p, "/f");
	json_t *last = json_array_get(entries, 40);
	assert_string_equal(json_string_value(json_object_get(last, "path")), p);
	assert_string_equal(json_string_value(json_object_get(last, "type")), "FILE_TYPE_FILE");
	free(p);
	fkr_free(r);
	fks_box_delete(&g_srv, KEY, &b);
}

int main(int argc, char **argv)
{
	if (fks_root_init(argc, argv, KEY, &g_srv, NULL) < 0)
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_deep__snapshot_then_template_delete,
	                                    fks_root_setup, fks_root_teardown),
	    cmocka_unit_test_setup_teardown(test_deep__fork, fks_root_setup, fks_root_teardown),
	    cmocka_unit_test_setup_teardown(test_deep__sandbox_delete, fks_root_setup,
	                                    fks_root_teardown),
	    cmocka_unit_test_setup_teardown(test_deep__listdir, fks_root_setup, fks_root_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
