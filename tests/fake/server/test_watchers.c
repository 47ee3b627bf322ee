/*
 * tests/fake/server/test_watchers.c: envd's polling directory watchers, which the sync Python
 * SDK's files.watch_dir uses: filesystem.Filesystem/CreateWatcher ("w" + an id),
 * GetWatcherEvents (the events since the last call, none again after), RemoveWatcher (then
 * not_found), as envd's watch_sync.go answers them. Needs root (sandboxes); skips otherwise.
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

#include "fkserver.h"

#define KEY "e2b_watchers_test_key"

static fks g_srv;
static fks_box g_box;

static fkr *fs_call(const char *rpc, const char *body)
{
	return fks_fs_call(&g_srv, &g_box, rpc, body);
}

/* CreateWatcher with `body`: its id (static). */
static const char *create(const char *body)
{
	static char id[64];
	fkr *r = fs_call("CreateWatcher", body);
	if (r->status != 200)
		fail_msg("CreateWatcher %s: %ld %s", body, r->status, r->body ? r->body : "");
	const char *w = json_string_value(json_object_get(r->json, "watcherId"));
	assert_non_null(w);
	assert_int_equal(strlen(w), 21);
	assert_int_equal(w[0], 'w');
	snprintf(id, sizeof(id), "%s", w);
	fkr_free(r);
	return id;
}

/* GetWatcherEvents of `id`: "name:TYPE" of each event, joined by '|'; entries counted. */
static void events(const char *id, char *out, size_t cap, int *with_entry)
{
	char body[96];
	snprintf(body, sizeof(body), "{\"watcherId\":\"%s\"}", id);
	fkr *r = fs_call("GetWatcherEvents", body);
	assert_int_equal(r->status, 200);
	json_t *ev = json_object_get(r->json, "events");
	out[0] = 0;
	*with_entry = 0;
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i);
		const char *t = json_string_value(json_object_get(e, "type"));
		assert_non_null(t);
		assert_int_equal(strncmp(t, "EVENT_TYPE_", 11), 0);
		snprintf(out + strlen(out), cap - strlen(out), "%s%s:%s", i ? "|" : "",
		         json_string_value(json_object_get(e, "name")), t + 11);
		*with_entry += json_object_get(e, "entry") != NULL;
	}
	fkr_free(r);
}

static void assert_not_found(const char *rpc, const char *id)
{
	char body[96], want[128];
	snprintf(body, sizeof(body), "{\"watcherId\":\"%s\"}", id);
	snprintf(want, sizeof(want), "watcher with id %s not found", id);
	fkr *r = fs_call(rpc, body);
	assert_int_equal(r->status, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), want);
	fkr_free(r);
}

static void test_watchers__create_poll_remove(void **state)
{
	(void)state;
	fks_need_root();
	fks_box_sh(&g_srv, &g_box, "mkdir -p /tmp/wd/sub");
	char id[64], id2[64], got[1024];
	int entries;
	snprintf(id, sizeof(id), "%s", create("{\"path\":\"/tmp/wd\"}"));
	snprintf(id2, sizeof(id2), "%s",
	         create("{\"path\":\"/tmp/wd\",\"recursive\":true,\"includeEntry\":true}"));
	assert_string_not_equal(id, id2);
	events(id, got, sizeof(got), &entries);
	assert_string_equal(got, ""); /* nothing yet: {} */

	fks_box_sh(&g_srv, &g_box, "printf x > /tmp/wd/a && mv /tmp/wd/a /tmp/wd/sub/b");
	events(id, got, sizeof(got), &entries);
	assert_string_equal(got, "a:CREATE|a:WRITE|a:RENAME");
	assert_int_equal(entries, 0);
	events(id, got, sizeof(got), &entries);
	assert_string_equal(got, ""); /* the events since the last call */
	events(id2, got, sizeof(got), &entries);
	assert_string_equal(got, "a:CREATE|a:WRITE|a:RENAME|sub/b:CREATE");
	/* entries are stat'ed when polled: a is gone by then, sub/b is there */
	assert_int_equal(entries, 1);

	fkr *r = fs_call("RemoveWatcher", "{\"watcherId\":\"x\"}");
	assert_int_equal(r->status, 404);
	fkr_free(r);
	char body[96];
	snprintf(body, sizeof(body), "{\"watcherId\":\"%s\"}", id);
	r = fs_call("RemoveWatcher", body);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	assert_not_found("GetWatcherEvents", id);
	assert_not_found("RemoveWatcher", id);
	events(id2, got, sizeof(got), &entries); /* the other one still watches */
	assert_string_equal(got, "");

	r = fs_call("CreateWatcher", "{\"path\":\"/tmp/nowhere\"}");
	assert_int_equal(r->status, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	fkr_free(r);
	r = fs_call("CreateWatcher", "{\"path\":\"/etc/passwd\"}");
	assert_int_equal(r->status, 400);
	fkr_free(r);
}

/* A recursive watcher watches a directory made through MakeDir before MakeDir answers (envd's
 * watcher reads its events as they come): what is then written in it is seen, as the sync
 * Python SDK's test_watch_recursive_directory_after_nested_folder_addition expects. */
static void test_watchers__recursive_sees_a_new_directory_at_once(void **state)
{
	(void)state;
	fks_need_root();
	fks_box_sh(&g_srv, &g_box, "mkdir -p /tmp/wn");
	char id[64], got[1024];
	int entries;
	snprintf(id, sizeof(id), "%s", create("{\"path\":\"/tmp/wn\",\"recursive\":true}"));
	fkr *r = fs_call("MakeDir", "{\"path\":\"/tmp/wn/n\"}");
	assert_int_equal(r->status, 200);
	fkr_free(r);
	fks_box_sh(&g_srv, &g_box, "printf x > /tmp/wn/n/f");
	events(id, got, sizeof(got), &entries);
	/* MakeDir makes it the user's (chown: CHMOD), as envd does */
	assert_string_equal(got, "n:CREATE|n:CHMOD|n/f:CREATE|n/f:WRITE");
	/* and one moved in */
	fks_box_sh(&g_srv, &g_box, "mkdir -p /tmp/wn-out/m");
	r = fs_call("Move", "{\"source\":\"/tmp/wn-out/m\",\"destination\":\"/tmp/wn/m\"}");
	assert_int_equal(r->status, 200);
	fkr_free(r);
	fks_box_sh(&g_srv, &g_box, "printf y > /tmp/wn/m/g");
	events(id, got, sizeof(got), &entries);
	assert_string_equal(got, "m:CREATE|m/g:CREATE|m/g:WRITE");
	char body[96];
	snprintf(body, sizeof(body), "{\"watcherId\":\"%s\"}", id);
	r = fs_call("RemoveWatcher", body);
	assert_int_equal(r->status, 200);
	fkr_free(r);
}

int main(int argc, char **argv)
{
	if (fks_root_init(argc, argv, KEY, &g_srv, &g_box) < 0)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watchers__create_poll_remove),
	    cmocka_unit_test(test_watchers__recursive_sees_a_new_directory_at_once),
	};
	int rc =
	    cmocka_run_group_tests_name("fake_watchers", tests, fks_root_setup, fks_root_teardown);
	curl_global_cleanup();
	return rc;
}
