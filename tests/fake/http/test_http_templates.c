/*
 * tests/fake/http/test_http_templates.c — fake-e2b's templates over HTTP: build requests and
 * their validation, a sandbox's limits and alias from its template, build log steps, delete
 * while in use, references in PATCH and DELETE. Part of fake_http_test (main in test_http.c).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"
#include "http_test.h"

/* Template builds (POST /v3/templates ...): validation, the request's reply, alias lookup,
 * signed upload links, a build's status through to an error at step "base". The builds that
 * run steps are covered through the SDK (tests/peer/template_builds.test.mjs). */
void test_control__template_build_requests(void **state)
{
	(void)state;
	resp *r = http("POST", "/v3/templates", "{\"name\":\"Bad Name\"}");
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("POST", "/v3/templates", "{\"name\":\"base\"}");
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "template name 'base' is taken by a template fake-e2b serves");
	resp_free(r);
	r = http("POST", "/v3/templates", "{\"name\":\"c-tpl:v1\",\"cpuCount\":0}");
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "validation error: cpuCount must be 1 to 8 and memoryMB 128 to 8192");
	resp_free(r);
	r = http("POST", "/v3/templates", "{\"name\":\"c-tpl:v1\",\"memoryMB\":8193}");
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("POST", "/v3/templates", "{\"name\":\"c-tpl:v1\",\"tags\":[\"extra\"]}");
	assert_int_equal(r->status, 202);
	const char *tid = json_string_value(json_object_get(r->json, "templateID"));
	const char *bid = json_string_value(json_object_get(r->json, "buildID"));
	assert_non_null(tid);
	assert_int_equal(strlen(tid), 20);
	assert_non_null(bid);
	assert_int_equal(strlen(bid), 36);
	char *want = NULL;
	assert_true(
	    asprintf(&want,
	             "{\"templateID\":\"%s\",\"buildID\":\"%s\",\"public\":false,\"names\":["
	             "\"c-tpl\"],\"aliases\":[\"c-tpl\"],\"tags\":[\"v1\",\"extra\"]}",
	             tid, bid) > 0);
	json_t *w = json_loads(want, 0, NULL);
	assert_true(json_equal(w, r->json));
	json_decref(w);
	free(want);
	char *t = strdup(tid), *b = strdup(bid), path[512];
	resp_free(r);

	r = http("GET", "/templates/aliases/c-tpl", NULL);
	assert_int_equal(r->status, 200);
	assert_string_equal(json_string_value(json_object_get(r->json, "templateID")), t);
	assert_true(json_is_false(json_object_get(r->json, "public")));
	resp_free(r);
	r = http("GET", "/templates/aliases/base", NULL);
	assert_int_equal(r->status, 200);
	assert_true(json_is_true(json_object_get(r->json, "public")));
	resp_free(r);
	r = http("GET", "/templates/aliases/c-tpl-nope", NULL);
	assert_e2b_error(r, 404);
	resp_free(r);

	/* upload links: a 64-hex hash, signed; no API key on the PUT, the token instead */
	snprintf(path, sizeof(path), "/templates/%s/files/xyz", t);
	r = http("GET", path, NULL);
	assert_e2b_error(r, 400);
	resp_free(r);
	const char *hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	snprintf(path, sizeof(path), "/templates/%s/files/%s", t, hash);
	r = http("GET", path, NULL);
	assert_int_equal(r->status, 201);
	assert_true(json_is_false(json_object_get(r->json, "present")));
	const char *url = json_string_value(json_object_get(r->json, "url"));
	assert_non_null(url);
	assert_non_null(strstr(url, path));
	const char *tok = strstr(url, "?token=");
	assert_non_null(tok);
	assert_true(is_hex64(tok + 7));
	char good[1024], bad[1024];
	snprintf(good, sizeof(good), "%s%s", path, tok);
	snprintf(bad, sizeof(bad), "%s?token=%064d", path, 0);
	resp_free(r);
	const char *nokey[] = {"-", NULL};
	r = http_raw("PUT", bad, NULL, "x", 1, nokey, NULL);
	assert_e2b_error(r, 403);
	resp_free(r);
	r = http_raw("PUT", good, NULL, "archive", 7, nokey, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);
	r = http("GET", path, NULL);
	assert_true(json_is_true(json_object_get(r->json, "present")));
	resp_free(r);

	/* status: waiting until started; a second start is a conflict; an image fake-e2b cannot
	 * pull fails the build at step "base" */
	snprintf(path, sizeof(path), "/templates/%s/builds/%s/status", t, b);
	r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	assert_string_equal(json_string_value(json_object_get(r->json, "status")), "waiting");
	assert_int_equal(json_array_size(json_object_get(r->json, "logEntries")), 0);
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/templates/%s/builds/%s", t, b);
	r = http("POST", path, "[]");
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("POST", path, "{\"fromImage\":\"alpine:3\",\"steps\":[]}");
	assert_int_equal(r->status, 202);
	resp_free(r);
	r = http("POST", path, "{\"fromImage\":\"alpine:3\",\"steps\":[]}");
	assert_e2b_error(r, 409);
	resp_free(r);
	snprintf(path, sizeof(path), "/templates/%s/builds/%s/status", t, b);
	json_t *st = NULL;
	for (int i = 0; i < 200; i++) {
		r = http("GET", path, NULL);
		assert_int_equal(r->status, 200);
		if (strcmp(json_string_value(json_object_get(r->json, "status")), "building")) {
			st = json_incref(r->json);
			resp_free(r);
			break;
		}
		resp_free(r);
		fk_sleep_ms(25);
	}
	assert_non_null(st);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "error");
	json_t *reason = json_object_get(st, "reason");
	assert_string_equal(json_string_value(json_object_get(reason, "step")), "base");
	assert_non_null(strstr(json_string_value(json_object_get(reason, "message")),
	                       "image 'alpine:3' is not available"));
	json_decref(st);
	/* a failed build is nothing to boot */
	r = http("POST", "/v2/sandboxes", "{\"templateID\":\"c-tpl:v1\"}");
	assert_e2b_error(r, 404);
	resp_free(r);
	snprintf(path, sizeof(path),
	         "/templates/%s/builds/00000000-0000-4000-8000-000000000000/status", t);
	r = http("GET", path, NULL);
	assert_e2b_error(r, 400); /* E2B: "Build '<id>' not found" */
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "Build '00000000-0000-4000-8000-000000000000' not found");
	resp_free(r);
	free(t);
	free(b);
}

/* Requests a build of template `name` (POST /v3/templates with `v3_extra` fields, e.g.
 * "\"cpuCount\":1", or ""), starts it with `spec` and waits for its end; *tid and *bid (caller
 * frees) name it. Returns its last status (TemplateBuildInfo). */
static json_t *run_build(const char *name, const char *v3_extra, const char *spec, char **tid,
                         char **bid)
{
	char body[512], path[256];
	snprintf(body, sizeof(body), "{\"name\":\"%s\"%s%s}", name, *v3_extra ? "," : "", v3_extra);
	resp *r = http("POST", "/v3/templates", body);
	assert_int_equal(r->status, 202);
	*tid = strdup(json_string_value(json_object_get(r->json, "templateID")));
	*bid = strdup(json_string_value(json_object_get(r->json, "buildID")));
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/templates/%s/builds/%s", *tid, *bid);
	r = http("POST", path, spec);
	assert_int_equal(r->status, 202);
	resp_free(r);
	snprintf(path, sizeof(path), "/templates/%s/builds/%s/status", *tid, *bid);
	for (int i = 0; i < 2400; i++) { /* at most 60 s */
		r = http("GET", path, NULL);
		assert_int_equal(r->status, 200);
		const char *st = json_string_value(json_object_get(r->json, "status"));
		if (!strcmp(st, "ready") || !strcmp(st, "error")) {
			json_t *j = json_incref(r->json);
			resp_free(r);
			return j;
		}
		resp_free(r);
		fk_sleep_ms(25);
	}
	fail_msg("build %s of %s did not end in 60 s", *bid, name);
	return NULL;
}

static json_t *get_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* GET of a path (printf format) that must answer 200; its JSON (caller decrefs). */
static json_t *get_json(const char *fmt, ...)
{
	char path[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	resp *r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	json_t *j = json_incref(r->json);
	resp_free(r);
	return j;
}

/* The entry of `id` in a sandbox list. */
static json_t *listed(json_t *list, const char *id)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "sandboxID")), id))
			return e;
	}
	fail_msg("sandbox %s is not listed", id);
	return NULL;
}

static void assert_limits(json_t *j, int cpus, int mem_mb, const char *alias)
{
	assert_int_equal(json_integer_value(json_object_get(j, "cpuCount")), cpus);
	assert_int_equal(json_integer_value(json_object_get(j, "memoryMB")), mem_mb);
	assert_int_equal(json_integer_value(json_object_get(j, "diskSizeMB")), 1024);
	assert_string_equal(json_string_value(json_object_get(j, "envdVersion")), "0.6.13");
	assert_string_equal(json_string_value(json_object_get(j, "alias")), alias);
}

/* A sandbox reports its own limits and its template's alias, as E2B's listing and detail
 * (infra handlers/sandboxes_list.go, sandbox_get.go): its template build's cpuCount and
 * memoryMB, which are also what its box got (its metrics). */
void test_control__sandbox_limits_and_alias_follow_template(void **state)
{
	(void)state;
	resp *r = http("POST", "/v2/sandboxes", "{\"templateID\":\"base\"}");
	assert_int_equal(r->status, 201);
	assert_string_equal(json_string_value(json_object_get(r->json, "alias")), "base");
	char *plain = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	json_t *d = get_json("/sandboxes/%s", plain);
	assert_limits(d, 2, 512, "base");
	/* no metadata and no internet-access choice at create: both left out (omitempty) */
	assert_null(json_object_get(d, "metadata"));
	assert_null(json_object_get(d, "allowInternetAccess"));
	assert_true(json_is_array(json_object_get(d, "volumeMounts")));
	assert_int_equal(json_array_size(json_object_get(d, "volumeMounts")), 0);
	json_decref(d);

	char *tid, *bid;
	json_t *st = run_build("lim-tpl", "\"cpuCount\":1,\"memoryMB\":256",
	                       "{\"fromTemplate\":\"base\",\"steps\":[]}", &tid, &bid);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "ready");
	json_decref(st);
	/* E2B's createdBy of a template built through /v3/templates: null (no user registered,
	 * infra handlers/template_request_build_v3.go), whoever called */
	json_t *tl = get_json("/templates");
	size_t ti;
	json_t *te, *mine = NULL;
	json_array_foreach(tl, ti, te)
	{
		if (!strcmp(json_string_value(json_object_get(te, "templateID")), tid))
			mine = te;
	}
	assert_non_null(mine);
	assert_true(json_is_null(json_object_get(mine, "createdBy")));
	assert_int_equal(json_integer_value(json_object_get(mine, "cpuCount")), 1);
	assert_int_equal(json_integer_value(json_object_get(mine, "memoryMB")), 256);
	json_decref(tl);
	r = http("POST", "/v2/sandboxes",
	         "{\"templateID\":\"lim-tpl\",\"metadata\":{\"k\":\"v\"}}");
	assert_int_equal(r->status, 201);
	assert_string_equal(json_string_value(json_object_get(r->json, "templateID")), tid);
	assert_string_equal(json_string_value(json_object_get(r->json, "alias")), "lim-tpl");
	char *id = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);

	d = get_json("/sandboxes/%s", id);
	assert_limits(d, 1, 256, "lim-tpl");
	assert_string_equal(json_string_value(json_object_get(json_object_get(d, "metadata"), "k")),
	                    "v");
	json_decref(d);
	json_t *l = get_json("/v2/sandboxes");
	assert_limits(listed(l, id), 1, 256, "lim-tpl");
	assert_limits(listed(l, plain), 2, 512, "base");
	assert_null(json_object_get(listed(l, plain), "metadata"));
	json_decref(l);
	l = get_json("/sandboxes");
	assert_limits(listed(l, id), 1, 256, "lim-tpl");
	json_decref(l);
	/* what the box got: its memory cgroup's limit and its CPUs (the metrics' first sample) */
	json_t *m = get_json("/sandboxes/%s/metrics", id);
	assert_true(json_array_size(m) >= 1);
	json_t *last = json_array_get(m, json_array_size(m) - 1);
	assert_int_equal(json_integer_value(json_object_get(last, "cpuCount")), 1);
	assert_int_equal(json_integer_value(json_object_get(last, "memTotal")), 256 << 20);
	json_decref(m);

	/* paused: E2B answers from the snapshot row (alias kept, no volumeMounts in the detail) */
	char path[160];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", plain);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	d = get_json("/sandboxes/%s", plain);
	assert_limits(d, 2, 512, "base");
	assert_string_equal(json_string_value(json_object_get(d, "state")), "paused");
	assert_null(json_object_get(d, "volumeMounts"));
	assert_int_equal(json_object_size(json_object_get(d, "metadata")), 0);
	assert_true(json_is_object(json_object_get(d, "metadata")));
	json_decref(d);
	l = get_json("/v2/sandboxes?state=paused");
	assert_limits(listed(l, plain), 2, 512, "base");
	json_decref(l);

	delete_sandbox(id);
	delete_sandbox(plain);
	snprintf(path, sizeof(path), "/templates/%s", tid);
	r = http("DELETE", path, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	free(id);
	free(plain);
	free(tid);
	free(bid);
}

/* Entry k of a log: its level, message and step (NULL: none), exactly. */
static void assert_entry(json_t *logs, size_t k, const char *level, const char *message,
                         const char *step)
{
	json_t *e = json_array_get(logs, k);
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "level")), level);
	assert_string_equal(json_string_value(json_object_get(e, "message")), message);
	if (step)
		assert_string_equal(json_string_value(json_object_get(e, "step")), step);
	else
		assert_null(json_object_get(e, "step"));
	assert_int_equal(json_object_size(e), step ? 4 : 3); /* timestamp, level, message */
}

/* Build log entries carry their step as E2B's (orchestrator phases: "base", the step's number
 * from 1, "finalize"; the build's own lines none), in the status route and the logs route;
 * the failed build's reason lists its step's entries at warn or above; `logs` is `[]` (v2). */
void test_control__build_log_entries_carry_step(void **state)
{
	(void)state;
	char *tid, *bid, want[256], path[256];
	json_t *st =
	    run_build("step-tpl", "",
	              "{\"fromTemplate\":\"base\",\"steps\":[{\"type\":\"RUN\","
	              "\"args\":[\"echo one\"]},{\"type\":\"RUN\",\"args\":[\"exit 4\"]}]}",
	              &tid, &bid);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "error");
	json_t *logs = json_object_get(st, "logEntries");
	assert_int_equal(json_array_size(logs), 7);
	snprintf(want, sizeof(want), "Building template %s/%s", tid, bid);
	assert_entry(logs, 0, "info", want, NULL);
	assert_entry(logs, 1, "info", "[base] FROM TEMPLATE base", "base");
	assert_entry(logs, 2, "info", "[builder 1/2] RUN echo one", "1");
	assert_entry(logs, 3, "info", "[builder 1/2] [stdout]: one", "1");
	assert_entry(logs, 4, "info", "[builder 2/2] RUN exit 4", "2");
	assert_entry(logs, 5, "error",
	             "[builder 2/2] failed to run command 'exit 4': exit status 4", "2");
	assert_entry(logs, 6, "error",
	             "Build failed: failed to run command 'exit 4': exit status 4", NULL);
	assert_int_equal(json_array_size(json_object_get(st, "logs")), 0);
	json_t *reason = json_object_get(st, "reason");
	assert_string_equal(json_string_value(json_object_get(reason, "step")), "2");
	assert_string_equal(json_string_value(json_object_get(reason, "message")),
	                    "failed to run command 'exit 4': exit status 4");
	json_t *rl = json_object_get(reason, "logEntries");
	assert_int_equal(json_array_size(rl), 1);
	assert_true(json_equal(json_array_get(rl, 0), json_array_get(logs, 5)));
	/* the logs route: the same entries */
	json_t *lr = get_json("/templates/%s/builds/%s/logs", tid, bid);
	assert_true(json_equal(json_object_get(lr, "logs"), logs));
	json_decref(lr);
	/* a page that leaves the failed step's entries out has none in the reason */
	json_t *p2 = get_json("/templates/%s/builds/%s/status?logsOffset=6", tid, bid);
	assert_int_equal(json_array_size(json_object_get(p2, "logEntries")), 1);
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(p2, "reason"), "logEntries")), 0);
	json_decref(p2);
	json_decref(st);
	snprintf(path, sizeof(path), "/templates/%s", tid);
	resp *r = http("DELETE", path, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	free(tid);
	free(bid);

	/* finalize: the start and ready commands' lines */
	st = run_build("step-tpl2", "",
	               "{\"fromTemplate\":\"base\",\"steps\":[],\"startCmd\":\"sleep 600\","
	               "\"readyCmd\":\"true\"}",
	               &tid, &bid);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "ready");
	logs = json_object_get(st, "logEntries");
	assert_int_equal(json_array_size(logs), 5);
	assert_entry(logs, 1, "info", "[base] FROM TEMPLATE base", "base");
	assert_entry(logs, 2, "info", "Running start command: sleep 600", "finalize");
	assert_entry(logs, 3, "info", "Waiting for the ready command: true", "finalize");
	/* E2B's words: Go's duration of whole seconds (a build this small takes under a minute) */
	const char *fin = json_string_value(json_object_get(json_array_get(logs, 4), "message"));
	int secs = -1, used = 0;
	assert_int_equal(sscanf(fin, "Build finished, took %ds%n", &secs, &used), 1);
	assert_int_equal((size_t)used, strlen(fin));
	assert_true(secs >= 0 && secs < 60);
	assert_entry(logs, 4, "info", fin, NULL);
	assert_null(json_object_get(st, "reason"));
	json_decref(st);
	snprintf(path, sizeof(path), "/templates/%s", tid);
	r = http("DELETE", path, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	free(tid);
	free(bid);
}

static void assert_delete_refused(const char *tid, const char *state)
{
	char path[160], want[200];
	snprintf(path, sizeof(path), "/templates/%s", tid);
	resp *r = http("DELETE", path, NULL);
	assert_e2b_error(r, 400);
	snprintf(want, sizeof(want),
	         "cannot delete template '%s' because there are %s sandboxes using it", tid, state);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), want);
	resp_free(r);
}

static void assert_deleted(const char *tid)
{
	char path[160];
	snprintf(path, sizeof(path), "/templates/%s", tid);
	resp *r = http("DELETE", path, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
}

/* A template is in use while a running, then a paused, sandbox has it as its base template
 * (E2B's template_delete.go), the template it was created from: a snapshot is held by the
 * sandboxes created from it, the template of the sandbox it was taken of is not. */
void test_control__template_delete_in_use_follows_base_template(void **state)
{
	(void)state;
	char *tid, *bid, body[200], path[160];
	json_t *st =
	    run_build("hold-tpl", "", "{\"fromTemplate\":\"base\",\"steps\":[]}", &tid, &bid);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "ready");
	json_decref(st);
	char *src = create_sandbox("{\"templateID\":\"hold-tpl\"}");
	snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", src);
	resp *r = http("POST", path, "{}");
	assert_int_equal(r->status, 201);
	const char *snap_id = json_string_value(json_object_get(r->json, "snapshotID"));
	char snap[21];
	assert_int_equal(strlen(snap_id), 28); /* <templateID>:default */
	memcpy(snap, snap_id, 20);
	snap[20] = '\0';
	resp_free(r);
	assert_delete_refused(tid, "running");

	snprintf(body, sizeof(body), "{\"templateID\":\"%s\"}", snap);
	r = http("POST", "/v2/sandboxes", body);
	assert_int_equal(r->status, 201);
	assert_string_equal(json_string_value(json_object_get(r->json, "templateID")), snap);
	char *from_snap = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	delete_sandbox(src);
	assert_delete_refused(snap, "running");
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", from_snap);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	assert_delete_refused(snap, "paused");
	/* the snapshot's sandbox does not hold the template the snapshot came from */
	assert_deleted(tid);
	/* and the snapshot boots without it */
	char *again = create_sandbox(body);
	delete_sandbox(again);
	assert_delete_refused(snap, "paused");
	delete_sandbox(from_snap);
	assert_deleted(snap);
	snprintf(path, sizeof(path), "/templates/%s", snap);
	r = http("DELETE", path, NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
	free(again);
	free(from_snap);
	free(src);
	free(tid);
	free(bid);
}

static void assert_message(const char *method, const char *path, const char *body, long status,
                           const char *message)
{
	resp *r = http(method, path, body);
	assert_e2b_error(r, status);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), message);
	resp_free(r);
}

/* PATCH and DELETE of /templates/{id} read a reference the same way (the store's one
 * fk__tstore_ref_ident): the part before ':' names it, a served template is E2B's other
 * team's (403), an unknown one is not found (404). */
void test_control__template_references_update_and_delete(void **state)
{
	(void)state;
	const char *pub = "{\"public\":true}";
	assert_message("PATCH", "/templates/base", pub, 403,
	               "You don't have access to template 'base'");
	assert_message("PATCH", "/v2/templates/base:v1", pub, 403,
	               "You don't have access to template 'base'");
	assert_message("DELETE", "/templates/capybara-sandbox:x", NULL, 403,
	               "You don't have access to template 'capybara-sandbox'");
	assert_message("PATCH", "/templates/no-such-tpl:v1", pub, 404,
	               "template 'no-such-tpl' not found");
	assert_message("DELETE", "/templates/no-such-tpl:v1", NULL, 404,
	               "template 'no-such-tpl' not found");
	char path[300], want[200];
	/* a built one by name with a tag: the tag is ignored */
	char *tid, *bid;
	json_t *st =
	    run_build("ref-tpl", "", "{\"fromTemplate\":\"base\",\"steps\":[]}", &tid, &bid);
	json_decref(st);
	resp *r = http("PATCH", "/templates/ref-tpl:whatever", pub);
	assert_int_equal(r->status, 200);
	resp_free(r);
	json_t *t = get_json("/templates/%s", tid);
	assert_true(json_is_true(json_object_get(t, "public")));
	json_decref(t);
	r = http("DELETE", "/templates/ref-tpl:whatever", NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	snprintf(path, sizeof(path), "/templates/%s", tid);
	snprintf(want, sizeof(want), "template '%s' not found", tid);
	assert_message("DELETE", path, NULL, 404, want);
	free(tid);
	free(bid);
}
