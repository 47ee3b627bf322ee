/*
 * tests/fake/http/test_http.c: fake-e2b's HTTP surface, black box. Starts the
 * binary (argv[1]) on port 0 and exercises the control plane (create, connect
 * 200/201, list paging with the metadata filter, pause 409, delete 404, auth
 * 401, error bodies, timeouts), envd (token, 502, Start stream framing, files)
 * and the admin API (faults, request log). No timing assertions except
 * generous upper bounds.
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

#define KEY "e2b_http_test"

static const char *g_bin;
static long g_timeout_ms = 60000; /* per request */
static CURLcode g_curl_rc;        /* of the last request */
static int g_allow_curl_error;
static fks g_srv; /* --api-key KEY --quiet */

/* ---- the server ------------------------------------------------------------------------ */

static int server_start(void **state)
{
	(void)state;
	const char *flags[] = {"--api-key", KEY, "--quiet", NULL};
	char portfile[128];
	unsigned port = 0;

	if (fks_up(&g_srv, g_bin, flags) < 0)
		return -1;
	/* the port file names the port it listens on */
	snprintf(portfile, sizeof(portfile), "%s/port", g_srv.dir);
	FILE *pf = fopen(portfile, "r");
	if (!pf || fscanf(pf, "%u", &port) != 1 || port != g_srv.port) {
		fprintf(stderr, "port file %s does not say %u\n", portfile, g_srv.port);
		if (pf)
			fclose(pf);
		return -1;
	}
	fclose(pf);
	return 0;
}

static int server_stop(void **state)
{
	(void)state;
	if (fks_stop(&g_srv) != 0) {
		fprintf(stderr, "fake-e2b did not exit 0 on SIGTERM (status %d)\n",
		        g_srv.exit_status);
		return -1;
	}
	return 0;
}

/* ---- a tiny HTTP client ----------------------------------------------------------------- */

typedef struct resp {
	long status;
	char *body;
	size_t len;
	json_t *json;
	char next_token[512];
	int has_next;
	char ctype[128];
} resp;

static void resp_free(resp *r)
{
	if (!r)
		return;
	json_decref(r->json);
	free(r->body);
	free(r);
}

/* headers: NULL-terminated list; the API key is added unless "-" is the first entry. Through
 * fkserver's client (fks_do), with this file's timeout; a transport error fails the test unless
 * g_allow_curl_error. */
static resp *http_raw(const char *method, const char *path, const char *ctype, const void *body,
                      size_t blen, const char *const *headers, curl_mime *mime)
{
	const char *h[64];
	char ct[128];
	size_t n = 0;
	int auth = 1;
	for (const char *const *p = headers; p && *p; p++) {
		if (!strcmp(*p, "-"))
			auth = 0;
		else if (n < 60)
			h[n++] = *p;
	}
	if (auth)
		h[n++] = "X-API-Key: " KEY;
	if (ctype) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
		h[n++] = ct;
	}
	h[n] = NULL;
	fks_call call = {NULL, method, path, h, body, blen, mime, g_timeout_ms};
	fkr *f = fks_do(&g_srv, &call);
	g_curl_rc = (CURLcode)f->curl_rc;
	if (!g_allow_curl_error)
		assert_int_equal(f->curl_rc, CURLE_OK);
	resp *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->status = f->status;
	r->body = f->body; /* moved */
	r->len = f->len;
	r->json = f->json;
	r->has_next = fkr_header(f, "X-Next-Token", r->next_token, sizeof(r->next_token)) != NULL;
	if (!fkr_header(f, "Content-Type", r->ctype, sizeof(r->ctype)))
		r->ctype[0] = '\0';
	free(f);
	return r;
}

static resp *http(const char *method, const char *path, const char *json_body)
{
	return http_raw(method, path, json_body ? "application/json" : NULL, json_body,
	                json_body ? strlen(json_body) : 0, NULL, NULL);
}

static void assert_e2b_error(resp *r, long status)
{
	assert_int_equal(r->status, status);
	assert_true(json_is_object(r->json));
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), status);
	assert_true(json_is_string(json_object_get(r->json, "message")));
}

static char *create_sandbox(const char *body)
{
	resp *r =
	    http("POST", "/v2/sandboxes", body ? body : "{\"templateID\":\"capybara-sandbox\"}");
	assert_int_equal(r->status, 201);
	char *id = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	return id;
}

static char *sandbox_token(const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	resp *r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	char *t = strdup(json_string_value(json_object_get(r->json, "envdAccessToken")));
	resp_free(r);
	return t;
}

static void delete_sandbox(const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	resp *r = http("DELETE", path, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
}

/* ---- control plane ---------------------------------------------------------------------- */

static void test_control__missing_or_bad_key_is_401(void **state)
{
	(void)state;
	const char *none[] = {"-", NULL};
	resp *r = http_raw("GET", "/v2/sandboxes", NULL, NULL, 0, none, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
	const char *bad[] = {"-", "x-api-key: e2b_wrong", NULL};
	r = http_raw("POST", "/v2/sandboxes", "application/json", "{}", 2, bad, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
}

static void test_control__unknown_route_404_wrong_method_405(void **state)
{
	(void)state;
	resp *r = http("GET", "/nope", NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
	r = http("PUT", "/v2/sandboxes", "{}");
	assert_e2b_error(r, 405);
	resp_free(r);
}

static int is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

static void test_control__create_v2_returns_sandbox_with_token(void **state)
{
	(void)state;
	resp *r = http(
	    "POST", "/v2/sandboxes",
	    "{\"templateID\":\"capybara-sandbox\",\"secure\":true,\"metadata\":{\"a\":\"b\"}}");
	assert_int_equal(r->status, 201);
	const char *id = json_string_value(json_object_get(r->json, "sandboxID"));
	assert_non_null(id);
	assert_int_equal(strlen(id), 21);
	assert_int_equal(id[0], 'i');
	for (const char *p = id; *p; p++)
		assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'));
	assert_string_equal(json_string_value(json_object_get(r->json, "templateID")),
	                    "capybara-sandbox");
	assert_string_equal(json_string_value(json_object_get(r->json, "clientID")), "6532622b");
	assert_string_equal(json_string_value(json_object_get(r->json, "envdVersion")), "0.6.13");
	const char *tok = json_string_value(json_object_get(r->json, "envdAccessToken"));
	assert_true(is_hex64(tok));
	char *id2 = strdup(id), *tok2 = strdup(tok);
	resp_free(r);

	char *t = sandbox_token(id2); /* GET returns the same token */
	assert_string_equal(t, tok2);
	free(t);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id2);
	r = http("GET", path, NULL);
	assert_string_equal(json_string_value(json_object_get(r->json, "state")), "running");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(r->json, "lifecycle"), "onTimeout")),
	    "kill");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(r->json, "metadata"), "a")), "b");
	resp_free(r);
	delete_sandbox(id2);
	free(id2);
	free(tok2);
}

static void test_control__legacy_create_token_only_when_secure(void **state)
{
	(void)state;
	resp *r = http("POST", "/sandboxes", "{\"templateID\":\"capybara-sandbox\"}");
	assert_int_equal(r->status, 201);
	assert_null(json_object_get(r->json, "envdAccessToken"));
	char *a = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	r = http("POST", "/sandboxes", "{\"templateID\":\"capybara-sandbox\",\"secure\":true}");
	assert_int_equal(r->status, 201);
	assert_true(is_hex64(json_string_value(json_object_get(r->json, "envdAccessToken"))));
	char *b = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	/* an unsecured sandbox's envd takes requests without a token */
	char hid[64];
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", a);
	const char *h[] = {"-", hid, NULL};
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, h, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);
	snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", b);
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, h, NULL);
	assert_int_equal(r->status, 401);
	resp_free(r);
	char path[128];
	/* the sample taken at create is there at once: the first bucket (5 s steps, stamped at
	 * the bucket's start) is the one of a moment between the sandbox's start and now; how
	 * many follow depends on how long this machine took since, so only the first is checked */
	snprintf(path, sizeof(path), "/sandboxes/%s", a);
	r = http("GET", path, NULL);
	struct tm tm = {0};
	assert_non_null(strptime(json_string_value(json_object_get(r->json, "startedAt")),
	                         "%Y-%m-%dT%H:%M:%S", &tm));
	long born = (long)timegm(&tm);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", a);
	r = http("GET", path, NULL);
	long now = (long)time(NULL);
	assert_int_equal(r->status, 200);
	assert_true(json_array_size(r->json) >= 1);
	json_t *first = json_array_get(r->json, 0);
	long stamp = (long)json_integer_value(json_object_get(first, "timestampUnix"));
	assert_int_equal(stamp % 5, 0);
	assert_in_range(stamp, born - born % 5, now);
	assert_int_equal(json_integer_value(json_object_get(first, "memTotal")), 512LL << 20);
	assert_int_equal(json_integer_value(json_object_get(first, "cpuCount")), 2);
	resp_free(r);
	delete_sandbox(a);
	delete_sandbox(b);
	free(a);
	free(b);
}

static void test_control__create_validation_400(void **state)
{
	(void)state;
	resp *r =
	    http("POST", "/v2/sandboxes", "{\"templateID\":\"capybara-sandbox\",\"timeout\":0}");
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "Timeout must be greater than 0");
	resp_free(r);
	r = http("POST", "/v2/sandboxes", "{\"timeout\":10}");
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http(
	    "POST", "/v2/sandboxes",
	    "{\"templateID\":\"capybara-sandbox\",\"network\":{\"allowOut\":[\"example.com\"]}}");
	assert_e2b_error(r, 400);
	assert_non_null(
	    strstr(json_string_value(json_object_get(r->json, "message")), "ALL_TRAFFIC"));
	resp_free(r);
	r = http("POST", "/v2/sandboxes", "not json");
	assert_e2b_error(r, 400);
	resp_free(r);
}

static void test_control__invalid_sandbox_id_400(void **state)
{
	(void)state;
	resp *r = http("GET", "/sandboxes/ABC", NULL);
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "Invalid sandbox ID");
	resp_free(r);
	r = http("POST", "/v2/sandboxes/a-b-c/connect", "{}");
	assert_e2b_error(r, 400);
	resp_free(r);
}

/* Template builds (POST /v3/templates ...): validation, the request's reply, alias lookup,
 * signed upload links, a build's status through to an error at step "base". The builds that
 * run steps are covered through the SDK (tests/peer/template_builds.test.mjs). */
static void test_control__template_build_requests(void **state)
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
static void test_control__sandbox_limits_and_alias_follow_template(void **state)
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
static void test_control__build_log_entries_carry_step(void **state)
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
static void test_control__template_delete_in_use_follows_base_template(void **state)
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
static void test_control__template_references_update_and_delete(void **state)
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

static void test_control__connect_pause_delete_lifecycle(void **state)
{
	(void)state;
	char *id = create_sandbox(NULL), path[160];
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	resp *r = http("POST", path, "{\"timeout\":600}");
	assert_int_equal(r->status, 200); /* running: extended */
	assert_string_equal(json_string_value(json_object_get(r->json, "sandboxID")), id);
	assert_true(is_hex64(json_string_value(json_object_get(r->json, "envdAccessToken"))));
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 409);
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", id);
	r = http("POST", path, "{\"timeout\":30}");
	assert_e2b_error(r, 404); /* not running */
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = http("GET", path, NULL);
	assert_string_equal(json_string_value(json_object_get(r->json, "state")), "paused");
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	r = http("POST", path, "{}"); /* legacy needs timeout */
	assert_e2b_error(r, 400);
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	r = http("POST", path, "{\"timeout\":60}");
	assert_int_equal(r->status, 201); /* resumed */
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/resume", id);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 409); /* already running */
	resp_free(r);

	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", id);
	r = http("POST", path, "{\"timeout\":30}");
	assert_int_equal(r->status, 204);
	resp_free(r);

	delete_sandbox(id);
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = http("DELETE", path, NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 404);
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	r = http("POST", path, "{}");
	assert_e2b_error(r, 404);
	resp_free(r);
	free(id);
}

/* The SDK's encoding: URLSearchParams of encodeURIComponent'd pairs, encoded once more. */
static char *enc(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1), *w = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-_.!~*'()", *p))
			*w++ = (char)*p;
		else
			w += sprintf(w, "%%%02X", *p);
	}
	*w = '\0';
	return out;
}

/* metadata=<enc( form(enc(k)) "=" form(enc(v)) )>; form() = enc() for these inputs. */
static char *metadata_query(const char *k, const char *v)
{
	char *ek = enc(k), *ev = enc(v), *ek2 = enc(ek), *ev2 = enc(ev), *pair = NULL;
	if (asprintf(&pair, "%s=%s", ek2, ev2) < 0)
		pair = NULL;
	char *out = pair ? enc(pair) : NULL;
	free(ek);
	free(ev);
	free(ek2);
	free(ev2);
	free(pair);
	return out;
}

static void test_control__list_paging_and_metadata_filter(void **state)
{
	(void)state;
	char *ids[3];
	ids[0] = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc&def\"}}");
	ids[1] = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc&def\"}}");
	ids[2] = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc&def\"}}");
	char *other =
	    create_sandbox("{\"templateID\":\"capybara-sandbox\",\"metadata\":{\"user\":\"abc\"}}");
	char *mq = metadata_query("user", "abc&def"), path[600];
	assert_string_equal(mq, "user%3Dabc%252526def");
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&limit=2", mq);
	resp *r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 2);
	assert_true(r->has_next);
	assert_null(json_object_get(json_array_get(r->json, 0), "envdAccessToken"));
	char seen[3][32];
	for (int i = 0; i < 2; i++)
		snprintf(
		    seen[i], sizeof(seen[i]), "%s",
		    json_string_value(json_object_get(json_array_get(r->json, i), "sandboxID")));
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&limit=2&nextToken=%s", mq,
	         r->next_token);
	resp_free(r);
	r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	assert_false(r->has_next);
	snprintf(seen[2], sizeof(seen[2]), "%s",
	         json_string_value(json_object_get(json_array_get(r->json, 0), "sandboxID")));
	resp_free(r);
	/* newest first: the reverse creation order */
	for (int i = 0; i < 3; i++)
		assert_string_equal(seen[i], ids[2 - i]);

	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s", mq);
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 3);
	assert_false(r->has_next);
	resp_free(r);

	r = http("GET", "/v2/sandboxes?limit=0", NULL);
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("GET", "/v2/sandboxes?limit=101", NULL);
	assert_e2b_error(r, 400);
	resp_free(r);
	r = http("GET", "/v2/sandboxes?nextToken=garbage", NULL);
	assert_e2b_error(r, 400);
	resp_free(r);

	/* state filter: pause one */
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", ids[1]);
	resp_free(http("POST", path, "{}"));
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&state=paused", mq);
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(r->json, 0), "sandboxID")), ids[1]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(r->json, 0), "state")),
	                    "paused");
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&state=paused&state=running", mq);
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 3);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes?metadata=%s", mq); /* legacy: running only */
	r = http("GET", path, NULL);
	assert_int_equal(json_array_size(r->json), 2);
	resp_free(r);

	for (int i = 0; i < 3; i++) {
		delete_sandbox(ids[i]);
		free(ids[i]);
	}
	delete_sandbox(other);
	free(other);
	free(mq);
}

static int wait_state(const char *id, const char *want, long within_ms)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	for (long deadline = fk_mono_ms() + within_ms; fk_mono_ms() < deadline; fk_sleep_ms(100)) {
		resp *r = http("GET", path, NULL);
		int hit =
		    want ? r->status == 200 &&
		               !strcmp(json_string_value(json_object_get(r->json, "state")), want)
		         : r->status == 404;
		resp_free(r);
		if (hit)
			return 1;
	}
	return 0;
}

static void test_control__reaper_kills_or_pauses_at_end_time(void **state)
{
	(void)state;
	char *a = create_sandbox("{\"templateID\":\"capybara-sandbox\",\"timeout\":1}");
	char *b = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"timeout\":1,\"autoPause\":true}");
	assert_true(wait_state(a, NULL, 20000));
	assert_true(wait_state(b, "paused", 20000));
	delete_sandbox(b);
	free(a);
	free(b);
}

/* POST /timeout with 0 (the spec's minimum) ends the sandbox at once, as its lifecycle says. */
static void test_control__timeout_zero_ends_it_now(void **state)
{
	(void)state;
	char *a = create_sandbox("{\"templateID\":\"capybara-sandbox\",\"timeout\":3600}");
	char *b = create_sandbox(
	    "{\"templateID\":\"capybara-sandbox\",\"timeout\":3600,\"autoPause\":true}");
	char path[128];
	char *ids[] = {a, b};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/sandboxes/%s/timeout", ids[i]);
		resp *r = http("POST", path, "{\"timeout\":0}");
		assert_int_equal(r->status, 204);
		resp_free(r);
	}
	assert_true(wait_state(a, NULL, 20000));
	assert_true(wait_state(b, "paused", 20000));
	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", b);
	resp *r = http("POST", path, "{\"timeout\":-1}");
	assert_e2b_error(r, 400);
	resp_free(r);
	delete_sandbox(b);
	free(a);
	free(b);
}

/* ---- admin ------------------------------------------------------------------------------ */

static void test_admin__fault_409_times_then_success(void **state)
{
	(void)state;
	char *id = create_sandbox(NULL), path[160];
	resp *r = http("POST", "/_fake/faults",
	               "{\"method\":\"POST\",\"path\":\"/v2/sandboxes/*/connect\",\"status\":409,"
	               "\"times\":2}");
	assert_int_equal(r->status, 201);
	resp_free(r);
	snprintf(path, sizeof(path), "/v2/sandboxes/%s/connect", id);
	for (int i = 0; i < 2; i++) {
		r = http("POST", path, "{}");
		assert_e2b_error(r, 409);
		resp_free(r);
	}
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 200);
	resp_free(r);

	/* respond with a given body; cleared by DELETE */
	r = http(
	    "POST", "/_fake/faults",
	    "{\"path\":\"/v2/sandboxes/*/connect\",\"status\":500,\"body\":\"{\\\"x\\\":1}\"}");
	assert_int_equal(r->status, 201);
	resp_free(r);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 500);
	assert_int_equal(json_integer_value(json_object_get(r->json, "x")), 1);
	resp_free(r);
	r = http("DELETE", "/_fake/faults", NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);

	r = http(
	    "POST", "/_fake/faults",
	    "{\"path\":\"/v2/sandboxes/*/connect\",\"kind\":\"connect_no_token\",\"times\":1}");
	resp_free(r);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 200);
	assert_null(json_object_get(r->json, "envdAccessToken"));
	resp_free(r);
	r = http("POST", path, "{}");
	assert_non_null(json_object_get(r->json, "envdAccessToken"));
	resp_free(r);

	r = http("POST", "/_fake/faults", "{\"kind\":\"bogus\",\"path\":\"/x\"}");
	assert_e2b_error(r, 400);
	resp_free(r);
	delete_sandbox(id);
	free(id);
}

static void test_admin__request_log_masks_secrets(void **state)
{
	(void)state;
	resp *r = http("DELETE", "/_fake/requests", NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	r = http("POST", "/v2/sandboxes", "{\"templateID\":\"capybara-sandbox\",\"timeout\":30}");
	char *id = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	r = http("GET", "/v2/sandboxes?limit=5", NULL);
	resp_free(r);
	r = http("GET", "/_fake/requests", NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 2);
	json_t *e = json_array_get(r->json, 0);
	assert_string_equal(json_string_value(json_object_get(e, "method")), "POST");
	assert_string_equal(json_string_value(json_object_get(e, "path")), "/v2/sandboxes");
	assert_int_equal(json_integer_value(json_object_get(e, "status")), 201);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(e, "headers"), "x-api-key")), "***");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(e, "body"), "templateID")),
	    "capybara-sandbox");
	assert_true(json_is_integer(json_object_get(e, "duration_ms")));
	assert_null(strstr(r->body, KEY));
	e = json_array_get(r->json, 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(e, "query"), "limit")), "5");
	resp_free(r);
	r = http("GET", "/_fake/sandboxes", NULL);
	assert_int_equal(r->status, 200);
	assert_true(json_array_size(r->json) >= 1);
	resp_free(r);
	delete_sandbox(id);
	free(id);
}

/* The log is in arrival order; a request shows only once its response is queued. */
static void test_admin__request_log_arrival_order(void **state)
{
	(void)state;
	resp *r = http("DELETE", "/_fake/requests", NULL);
	resp_free(r);
	r = http("POST", "/_fake/faults",
	         "{\"method\":\"GET\",\"path\":\"/sandboxes/islowslowslowslowslow0\","
	         "\"delayMs\":4000,\"times\":1}");
	assert_int_equal(r->status, 201);
	resp_free(r);
	/* the slow request, in the background */
	CURLM *m = curl_multi_init();
	CURL *c = curl_easy_init();
	char url[320];
	snprintf(url, sizeof(url), "%s/sandboxes/islowslowslowslowslow0", g_srv.url);
	struct curl_slist *h = curl_slist_append(NULL, "X-API-Key: " KEY);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fkr_write_body);
	fkr sink = {0};
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
	curl_multi_add_handle(m, c);
	int running = 1;
	/* it has arrived once its one-shot rule is used up */
	for (long deadline = fk_mono_ms() + 30000;;) {
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 20, NULL);
		r = http("GET", "/_fake/faults", NULL);
		size_t n = json_array_size(r->json);
		resp_free(r);
		if (n == 0)
			break;
		assert_true(fk_mono_ms() < deadline);
	}
	r = http("GET", "/sandboxes/ifastfastfastfastfast0", NULL);
	assert_int_equal(r->status, 404);
	resp_free(r);
	r = http("GET", "/_fake/requests", NULL);
	assert_int_equal(json_array_size(r->json), 1); /* the slow one is not answered yet */
	assert_string_equal(json_string_value(json_object_get(json_array_get(r->json, 0), "path")),
	                    "/sandboxes/ifastfastfastfastfast0");
	resp_free(r);
	while (running) {
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 50, NULL);
	}
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	assert_int_equal(status, 404);
	curl_multi_remove_handle(m, c);
	curl_easy_cleanup(c);
	curl_multi_cleanup(m);
	curl_slist_free_all(h);
	free(sink.body);
	r = http("GET", "/_fake/requests", NULL);
	assert_int_equal(json_array_size(r->json), 2);
	json_t *slow = json_array_get(r->json, 0);
	assert_string_equal(json_string_value(json_object_get(slow, "path")),
	                    "/sandboxes/islowslowslowslowslow0");
	assert_int_equal(json_integer_value(json_object_get(slow, "status")), 404);
	assert_true(json_integer_value(json_object_get(slow, "duration_ms")) >= 3900);
	assert_null(json_object_get(slow, "_fk_pending"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(r->json, 1), "path")),
	                    "/sandboxes/ifastfastfastfastfast0");
	resp_free(r);
}

/* ---- envd ------------------------------------------------------------------------------- */

typedef struct envd_ctx {
	char id[32];
	char token[80];
	char hid[64];
	char htok[128];
} envd_ctx;

static void envd_open(envd_ctx *e)
{
	char *id = create_sandbox(NULL), *t = sandbox_token(id);
	snprintf(e->id, sizeof(e->id), "%s", id);
	snprintf(e->token, sizeof(e->token), "%s", t);
	snprintf(e->hid, sizeof(e->hid), "E2b-Sandbox-Id: %s", id);
	snprintf(e->htok, sizeof(e->htok), "X-Access-Token: %s", t);
	free(id);
	free(t);
}

static resp *rpc(envd_ctx *e, const char *method, const char *json_body)
{
	const char *h[] = {"-", e->hid, e->htok, "Connect-Protocol-Version: 1", NULL};
	char path[128];
	snprintf(path, sizeof(path), "/%s", method);
	return http_raw("POST", path, "application/json", json_body, strlen(json_body), h, NULL);
}

/* A Start/Connect stream, read whole: an array of {"flags":n,"msg":json}. */
static json_t *stream(envd_ctx *e, const char *method, const char *json_body, long *status,
                      const char *extra_header)
{
	size_t flen;
	unsigned char *frame = connect_frame(json_body, strlen(json_body), &flen);
	const char *h[] = {"-", e->hid, e->htok, "Connect-Protocol-Version: 1", extra_header, NULL};
	char path[128];
	snprintf(path, sizeof(path), "/%s", method);
	resp *r = http_raw("POST", path, "application/connect+json", frame, flen, h, NULL);
	free(frame);
	*status = r->status;
	json_t *out = json_array();
	size_t off = 0;
	while (r->body && off + 5 <= r->len) {
		const unsigned char *b = (const unsigned char *)r->body + off;
		size_t len =
		    ((size_t)b[1] << 24) | ((size_t)b[2] << 16) | ((size_t)b[3] << 8) | b[4];
		if (g_allow_curl_error && off + 5 + len > r->len) {
			json_array_append_new(
			    out, json_pack("{s:i,s:s}", "flags", b[0], "msg", "oversize"));
			off = r->len;
			break;
		}
		assert_true(off + 5 + len <= r->len);
		json_t *m = json_loadb((const char *)b + 5, len, 0, NULL);
		if (!m && g_allow_curl_error)
			m = json_string("garbage");
		assert_non_null(m);
		json_array_append_new(out, json_pack("{s:i,s:o}", "flags", b[0], "msg", m));
		off += 5 + len;
	}
	assert_int_equal(off, r->len);
	resp_free(r);
	return out;
}

static void test_envd__health_token_and_502(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	const char *h0[] = {"-", NULL};
	resp *r = http_raw("GET", "/health", NULL, NULL, 0, h0, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	const char *bad[] = {"-", e.hid, "X-Access-Token: nope", NULL};
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, bad, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 200);
	resp_free(r);
	const char *unknown[] = {"-", "E2b-Sandbox-Id: izzzzzzzzzzzzzzzzzzzz", e.htok, NULL};
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, unknown, NULL);
	assert_int_equal(r->status, 502);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 502);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "The sandbox was not found");
	resp_free(r);
	/* paused → 502 too */
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", e.id);
	resp_free(http("POST", path, "{}"));
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 502);
	resp_free(r);
	delete_sandbox(e.id);
}

/* Host pid of sandbox `id`'s PID 1: the server's child named fk-init in the sandbox's cgroup;
 * 0 when the server runs without isolation (no PID 1). */
static pid_t box_init_pid(const char *id)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	pid_t found = 0;
	struct dirent *de;
	char want[96];
	snprintf(want, sizeof(want), "/%s\n", id);
	while (!found && (de = readdir(d))) {
		char p[300], buf[4096];
		int ppid = 0;
		char comm[32] = "";
		snprintf(p, sizeof(p), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		int n = fscanf(f, "%*d (%31[^)]) %*c %d", comm, &ppid);
		fclose(f);
		if (n != 2 || ppid != (int)g_srv.pid || strcmp(comm, "fk-init") != 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cgroup", de->d_name);
		f = fopen(p, "r");
		size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[len] = '\0';
		if (strstr(buf, want))
			found = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return found;
}

/* A sandbox whose PID 1 dies (here killed from the host; or the OOM killer's last pick) is
 * gone, as when E2B's VM is: the API answers 404, envd's routes 502 "The sandbox was not
 * found", the list no longer has it. */
static void test_envd__dead_pid1_is_sandbox_not_found(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	pid_t init = box_init_pid(e.id);
	if (init <= 0) {
		delete_sandbox(e.id);
		skip(); /* no isolation: no PID 1 */
	}
	assert_int_equal(kill(init, SIGKILL), 0);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", e.id);
	/* the reaper notices within its 200 ms round */
	resp *r = NULL;
	int64_t until = fk_mono_ms() + 30000;
	for (;;) {
		r = http("GET", path, NULL);
		if (r->status != 200 || fk_mono_ms() > until)
			break;
		resp_free(r);
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_e2b_error(r, 404);
	char msg[128];
	snprintf(msg, sizeof(msg), "Sandbox \"%s\" doesn't exist or you don't have access to it",
	         e.id);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), msg);
	resp_free(r);
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 502);
	assert_string_equal(json_string_value(json_object_get(r->json, "sandboxId")), e.id);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 502);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "The sandbox was not found");
	resp_free(r);
	r = http("GET", "/v2/sandboxes", NULL);
	assert_int_equal(r->status, 200);
	size_t i;
	json_t *v;
	json_array_foreach(r->json, i, v)
	{
		assert_string_not_equal(json_string_value(json_object_get(v, "sandboxID")), e.id);
	}
	resp_free(r);
	r = http("DELETE", path, NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
}

static void test_envd__auto_resume_on_traffic(void **state)
{
	(void)state;
	envd_ctx e;
	char *id = create_sandbox("{\"templateID\":\"capybara-sandbox\",\"autoPause\":true,"
	                          "\"autoResume\":{\"enabled\":true}}");
	char *t = sandbox_token(id);
	snprintf(e.id, sizeof(e.id), "%s", id);
	snprintf(e.hid, sizeof(e.hid), "E2b-Sandbox-Id: %s", id);
	snprintf(e.htok, sizeof(e.htok), "X-Access-Token: %s", t);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	resp *r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 200);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = http("GET", path, NULL);
	assert_string_equal(json_string_value(json_object_get(r->json, "state")), "running");
	assert_true(
	    json_is_true(json_object_get(json_object_get(r->json, "lifecycle"), "autoResume")));
	resp_free(r);
	delete_sandbox(id);
	free(id);
	free(t);
}

static const char *event_kind(json_t *frame)
{
	json_t *ev = json_object_get(json_object_get(frame, "msg"), "event");
	const char *k;
	json_t *v;
	json_object_foreach(ev, k, v) return k;
	return NULL;
}

static void test_envd__start_stream_frames_start_data_end(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	long st;
	json_t *f =
	    stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo hi; exit 3\"]},"
	           "\"stdin\":false}",
	           &st, NULL);
	assert_int_equal(st, 200);
	size_t n = json_array_size(f);
	assert_true(n >= 4);
	assert_string_equal(event_kind(json_array_get(f, 0)), "start");
	assert_true(json_integer_value(json_object_get(
	                json_object_get(
	                    json_object_get(json_object_get(json_array_get(f, 0), "msg"), "event"),
	                    "start"),
	                "pid")) > 0);
	/* data frames concatenate to "hi\n" */
	char out[64] = "";
	for (size_t i = 1; i + 2 < n; i++) {
		json_t *d = json_object_get(
		    json_object_get(json_object_get(json_array_get(f, i), "msg"), "event"), "data");
		if (!d)
			continue;
		const char *b64 = json_string_value(json_object_get(d, "stdout"));
		unsigned char dec[64];
		int m = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)strlen(b64));
		size_t l = strlen(b64),
		       pad = (l && b64[l - 1] == '=') + (l > 1 && b64[l - 2] == '=');
		strncat(out, (char *)dec, (size_t)m - pad);
	}
	assert_string_equal(out, "hi\n");
	json_t *end = json_object_get(
	    json_object_get(json_object_get(json_array_get(f, n - 2), "msg"), "event"), "end");
	assert_non_null(end);
	assert_int_equal(json_integer_value(json_object_get(end, "exitCode")), 3);
	assert_true(json_is_true(json_object_get(end, "exited")));
	assert_string_equal(json_string_value(json_object_get(end, "status")), "exit status 3");
	json_t *last = json_array_get(f, n - 1);
	assert_int_equal(json_integer_value(json_object_get(last, "flags")), 2);
	assert_int_equal(json_object_size(json_object_get(last, "msg")), 0);
	json_decref(f);

	/* a clean exit omits exitCode */
	f = stream(&e, "process.Process/Start", "{\"process\":{\"cmd\":\"/bin/true\"}}", &st, NULL);
	n = json_array_size(f);
	end = json_object_get(
	    json_object_get(json_object_get(json_array_get(f, n - 2), "msg"), "event"), "end");
	assert_null(json_object_get(end, "exitCode"));
	assert_string_equal(json_string_value(json_object_get(end, "status")), "exit status 0");
	json_decref(f);

	/* missing cwd: HTTP 200 + end-stream error */
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/true\",\"cwd\":\"/nope\"}}", &st, NULL);
	assert_int_equal(st, 200);
	assert_int_equal(json_array_size(f), 1);
	json_t *err = json_object_get(json_object_get(json_array_get(f, 0), "msg"), "error");
	assert_string_equal(json_string_value(json_object_get(err, "code")), "invalid_argument");
	assert_string_equal(json_string_value(json_object_get(err, "message")),
	                    "cwd '/nope' does not exist");
	json_decref(f);

	/* unknown Basic user */
	f = stream(&e, "process.Process/Start", "{\"process\":{\"cmd\":\"/bin/true\"}}", &st,
	           "Authorization: Basic bm9ib2R5eHg6"); /* "nobodyxx:" */
	err = json_object_get(json_object_get(json_array_get(f, 0), "msg"), "error");
	assert_string_equal(json_string_value(json_object_get(err, "code")), "unauthenticated");
	assert_string_equal(json_string_value(json_object_get(err, "message")),
	                    "invalid username: 'nobodyxx'");
	json_decref(f);

	/* the default user is `sandbox` in /workspace */
	f = stream(
	    &e, "process.Process/Start",
	    "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo $(id -un) $(pwd)\"]}}", &st,
	    NULL);
	json_t *d = json_object_get(
	    json_object_get(json_object_get(json_array_get(f, 1), "msg"), "event"), "data");
	assert_string_equal(json_string_value(json_object_get(d, "stdout")),
	                    "c2FuZGJveCAvd29ya3NwYWNlCg=="); /* "sandbox /workspace\n" */
	json_decref(f);
	delete_sandbox(e.id);
}

static void test_envd__send_signal_unknown_pid_404(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	resp *r = rpc(&e, "process.Process/SendSignal",
	              "{\"process\":{\"pid\":99999},\"signal\":\"SIGNAL_SIGKILL\"}");
	assert_int_equal(r->status, 404);
	assert_string_equal(r->ctype, "application/json");
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "process with pid 99999 not found");
	resp_free(r);
	delete_sandbox(e.id);
}

static void test_envd__files_upload_download_stat(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	CURL *c = curl_easy_init();
	curl_mime *m = curl_mime_init(c);
	curl_mimepart *p = curl_mime_addpart(m);
	curl_mime_name(p, "file");
	curl_mime_filename(p, "/workspace/sub/dir/hello.txt");
	curl_mime_data(p, "hello\0world", 11);
	const char *h[] = {"-", e.hid, e.htok, NULL};
	resp *r = http_raw("POST", "/files", NULL, NULL, 0, h, m);
	curl_mime_free(m);
	curl_easy_cleanup(c);
	assert_int_equal(r->status, 200);
	assert_true(json_is_array(r->json));
	json_t *it = json_array_get(r->json, 0);
	assert_string_equal(json_string_value(json_object_get(it, "path")),
	                    "/workspace/sub/dir/hello.txt");
	assert_string_equal(json_string_value(json_object_get(it, "name")), "hello.txt");
	assert_string_equal(json_string_value(json_object_get(it, "type")), "file");
	resp_free(r);

	r = http_raw("GET", "/files?path=%2Fworkspace%2Fsub%2Fdir%2Fhello.txt", NULL, NULL, 0, h,
	             NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 11);
	assert_memory_equal(r->body, "hello\0world", 11);
	resp_free(r);

	r = http_raw("GET", "/files?path=/workspace/missing", NULL, NULL, 0, h, NULL);
	assert_e2b_error(r, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "path '/workspace/missing' does not exist");
	resp_free(r);
	r = http_raw("GET", "/files?path=/workspace", NULL, NULL, 0, h, NULL);
	assert_e2b_error(r, 400);
	resp_free(r);

	/* octet-stream with the path query */
	r = http_raw("POST", "/files?path=/tmp/raw.bin&username=root", "application/octet-stream",
	             "abc", 3, h, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);

	r = rpc(&e, "filesystem.Filesystem/Stat", "{\"path\":\"/workspace/sub/dir/hello.txt\"}");
	assert_int_equal(r->status, 200);
	json_t *entry = json_object_get(r->json, "entry");
	assert_string_equal(json_string_value(json_object_get(entry, "type")), "FILE_TYPE_FILE");
	assert_string_equal(json_string_value(json_object_get(entry, "size")), "11");
	assert_string_equal(json_string_value(json_object_get(entry, "owner")), "sandbox");
	resp_free(r);
	r = rpc(&e, "filesystem.Filesystem/Stat", "{\"path\":\"/nope\"}");
	assert_int_equal(r->status, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	resp_free(r);

	/* a path given twice: 400, and what the first part wrote is kept (checked before the
	 * second part opens, and so truncates, the file) */
	m = curl_mime_init(NULL);
	for (int i = 0; i < 2; i++) {
		p = curl_mime_addpart(m);
		curl_mime_name(p, "file");
		curl_mime_filename(p, i == 0 ? "/workspace/twice.txt" : "twice.txt");
		curl_mime_data(p, i == 0 ? "first" : "second", CURL_ZERO_TERMINATED);
	}
	r = http_raw("POST", "/files", NULL, NULL, 0, h, m);
	curl_mime_free(m);
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "path '/workspace/twice.txt' was given more than once");
	resp_free(r);
	r = http_raw("GET", "/files?path=/workspace/twice.txt", NULL, NULL, 0, h, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 5);
	assert_memory_equal(r->body, "first", 5);
	resp_free(r);

	/* /etc is the box's own (an overlay on the runtime's template): writable by root, and
	 * has the user sandbox */
	r = http_raw("POST", "/files?path=/etc/fk-test.conf&username=root",
	             "application/octet-stream", "x=1", 3, h, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);
	r = http_raw("GET", "/files?path=/etc/fk-test.conf", NULL, NULL, 0, h, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 3);
	resp_free(r);
	r = http_raw("GET", "/files?path=/etc/passwd", NULL, NULL, 0, h, NULL);
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->body, "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"));
	resp_free(r);

	/* without the token: 401 unless signed */
	const char *noauth[] = {"-", e.hid, NULL};
	r = http_raw("GET", "/files?path=/tmp/raw.bin", NULL, NULL, 0, noauth, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
	delete_sandbox(e.id);
}

static void add_fault(const char *kind)
{
	char body[256];
	snprintf(body, sizeof(body),
	         "{\"method\":\"POST\",\"path\":\"/process.Process/Start\",\"kind\":\"%s\","
	         "\"times\":1}",
	         kind);
	resp *r = http("POST", "/_fake/faults", body);
	assert_int_equal(r->status, 201);
	resp_free(r);
}

static int count_kind(json_t *frames, const char *kind)
{
	int n = 0;
	size_t i;
	json_t *f;
	json_array_foreach(frames, i, f) if (json_is_object(json_object_get(f, "msg")) &&
	                                     event_kind(f) && !strcmp(event_kind(f), kind)) n++;
	return n;
}

static int count_end_stream(json_t *frames)
{
	int n = 0;
	size_t i;
	json_t *f;
	json_array_foreach(frames, i, f) n += json_integer_value(json_object_get(f, "flags")) == 2;
	return n;
}

static void test_envd__stream_faults(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	long st;
	const char *cmd = "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo x\"]}}";
	g_allow_curl_error = 1;

	add_fault("stream_no_end"); /* events incl. end, then a clean close without end-stream */
	json_t *f = stream(&e, "process.Process/Start", cmd, &st, NULL);
	assert_int_equal(g_curl_rc, CURLE_OK);
	assert_int_equal(count_kind(f, "start"), 1);
	assert_int_equal(count_kind(f, "end"), 1);
	assert_int_equal(count_end_stream(f), 0);
	json_decref(f);

	add_fault("stream_garbage"); /* start, then a frame that is not JSON, then a broken close */
	f = stream(&e, "process.Process/Start", cmd, &st, NULL);
	assert_int_not_equal(g_curl_rc, CURLE_OK);
	assert_int_equal(json_array_size(f), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "msg")),
	                    "garbage");
	json_decref(f);

	add_fault("stream_oversize"); /* start, then a header claiming 2^31 bytes */
	f = stream(&e, "process.Process/Start", cmd, &st, NULL);
	assert_int_not_equal(g_curl_rc, CURLE_OK);
	assert_int_equal(json_array_size(f), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "msg")),
	                    "oversize");
	json_decref(f);

	add_fault("stream_keepalive_only"); /* only keepalives, at the requested interval */
	g_timeout_ms = 2600;
	f = stream(&e, "process.Process/Start", cmd, &st, "Keepalive-Ping-Interval: 1");
	assert_int_equal(g_curl_rc, CURLE_OPERATION_TIMEDOUT);
	assert_int_equal(count_kind(f, "start"), 1);
	assert_int_equal(count_kind(f, "data"), 0);
	assert_int_equal(count_kind(f, "end"), 0);
	assert_true(count_kind(f, "keepalive") >= 1);
	json_decref(f);

	/* normal stream: keepalives while idle, then the end */
	g_timeout_ms = 60000;
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"2.5\"]}}", &st,
	           "Keepalive-Ping-Interval: 1");
	assert_int_equal(g_curl_rc, CURLE_OK);
	assert_true(count_kind(f, "keepalive") >= 1);
	assert_int_equal(count_kind(f, "end"), 1);
	assert_int_equal(count_end_stream(f), 1);
	json_decref(f);

	/* Connect-Timeout-Ms: SIGKILL and end-stream deadline_exceeded */
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"30\"]}}", &st,
	           "Connect-Timeout-Ms: 500");
	assert_int_equal(g_curl_rc, CURLE_OK);
	json_t *last = json_object_get(json_array_get(f, json_array_size(f) - 1), "msg");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(last, "error"), "code")),
	    "deadline_exceeded");
	json_decref(f);

	/* ... also when the client left before the deadline */
	g_timeout_ms = 300;
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"31\"]}}", &st,
	           "Connect-Timeout-Ms: 1500");
	assert_int_equal(g_curl_rc, CURLE_OPERATION_TIMEDOUT);
	json_decref(f);
	g_timeout_ms = 60000;
	int gone = 0;
	for (long deadline = fk_mono_ms() + 20000; !gone && fk_mono_ms() < deadline;
	     fk_sleep_ms(100)) {
		resp *r = rpc(&e, "process.Process/List", "{}");
		gone = r->status == 200 && !strstr(r->body, "\"31\"");
		resp_free(r);
	}
	assert_true(gone);

	/* WatchDir of a missing directory: a Connect stream error, not a unary one */
	f = stream(&e, "filesystem.Filesystem/WatchDir", "{\"path\":\"/no/such/dir\"}", &st, NULL);
	assert_int_equal(st, 200);
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(json_array_get(f, 0), "msg"), "error"), "code")),
	    "not_found");
	json_decref(f);
	g_allow_curl_error = 0;
	delete_sandbox(e.id);
}

/* ---- concurrent streams (curl multi) ----------------------------------------------------- */

typedef struct mstream {
	CURL *c;
	struct curl_slist *h;
	unsigned char *req;
	fkr r; /* body and len only */
	int done;
	CURLcode rc;
} mstream;

static void mstream_begin(CURLM *m, mstream *s, envd_ctx *e, const char *json_body)
{
	size_t n = strlen(json_body);
	memset(s, 0, sizeof(*s));
	s->req = malloc(n + 5);
	s->req[0] = 0;
	s->req[1] = (unsigned char)(n >> 24);
	s->req[2] = (unsigned char)(n >> 16);
	s->req[3] = (unsigned char)(n >> 8);
	s->req[4] = (unsigned char)n;
	memcpy(s->req + 5, json_body, n);
	s->h = curl_slist_append(s->h, e->hid);
	s->h = curl_slist_append(s->h, e->htok);
	s->h = curl_slist_append(s->h, "Content-Type: application/connect+json");
	s->h = curl_slist_append(s->h, "Keepalive-Ping-Interval: 1");
	s->h = curl_slist_append(s->h, "Expect:");
	char url[320];
	snprintf(url, sizeof(url), "%s/process.Process/Start", g_srv.url);
	s->c = curl_easy_init();
	curl_easy_setopt(s->c, CURLOPT_URL, url);
	curl_easy_setopt(s->c, CURLOPT_POSTFIELDS, s->req);
	curl_easy_setopt(s->c, CURLOPT_POSTFIELDSIZE, (long)(n + 5));
	curl_easy_setopt(s->c, CURLOPT_HTTPHEADER, s->h);
	curl_easy_setopt(s->c, CURLOPT_WRITEFUNCTION, fkr_write_body);
	curl_easy_setopt(s->c, CURLOPT_WRITEDATA, &s->r);
	curl_easy_setopt(s->c, CURLOPT_PRIVATE, s);
	curl_easy_setopt(s->c, CURLOPT_TIMEOUT, 450L);
	curl_multi_add_handle(m, s->c);
}

static void mstream_end(CURLM *m, mstream *s)
{
	curl_multi_remove_handle(m, s->c);
	curl_easy_cleanup(s->c);
	curl_slist_free_all(s->h);
	free(s->req);
	free(s->r.body);
}

/* Run the transfers for up to ms, or until `until_done` of them finished. Returns done count. */
static int multi_pump(CURLM *m, long ms, int until_done)
{
	int running = 1, done = 0;
	long deadline = fk_mono_ms() + ms;
	while (fk_mono_ms() < deadline) {
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			mstream *s;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			s->done = 1;
			s->rc = msg->data.result;
			done++;
		}
		if (until_done && done >= until_done)
			break;
		curl_multi_poll(m, NULL, 0, 50, NULL);
	}
	return done;
}

/* The first frame of a stream: {"event":{"start":{"pid":N}}}. */
static uint32_t mstream_pid(mstream *s)
{
	if (s->r.len < 5)
		return 0;
	const unsigned char *b = (const unsigned char *)s->r.body;
	size_t len = ((size_t)b[1] << 24) | ((size_t)b[2] << 16) | ((size_t)b[3] << 8) | b[4];
	if (s->r.len < 5 + len)
		return 0;
	json_t *j = json_loadb((const char *)b + 5, len, 0, NULL);
	uint32_t pid = (uint32_t)json_integer_value(
	    json_object_get(json_object_get(json_object_get(j, "event"), "start"), "pid"));
	json_decref(j);
	return pid;
}

static void test_envd__kill_ignored_survives_signal_until_pause(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	add_fault("kill_ignored");
	CURLM *m = curl_multi_init();
	mstream s;
	mstream_begin(m, &s, &e, "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"60\"]}}");
	uint32_t pid = 0;
	for (long deadline = fk_mono_ms() + 20000; !pid && fk_mono_ms() < deadline;) {
		multi_pump(m, 50, 1);
		pid = mstream_pid(&s);
	}
	assert_true(pid > 0);
	char body[128];
	snprintf(body, sizeof(body), "{\"process\":{\"pid\":%u},\"signal\":\"SIGNAL_SIGKILL\"}",
	         pid);
	resp *r = rpc(&e, "process.Process/SendSignal", body);
	assert_int_equal(r->status, 200);
	assert_string_equal(r->body, "{}");
	resp_free(r);
	assert_int_equal(multi_pump(m, 1500, 1), 0); /* the stream does not end */
	assert_false(s.done);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", e.id);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	assert_int_equal(multi_pump(m, 20000, 1), 1); /* pausing drops the stream */
	assert_int_not_equal(s.rc, CURLE_OK);
	mstream_end(m, &s);
	curl_multi_cleanup(m);
	delete_sandbox(e.id);
}

/* 300 streams at once, each gets its output and end; a process survives its client leaving. */
static void test_envd__300_concurrent_streams(void **state)
{
	(void)state;
	enum { N = 300 };
	envd_ctx e;
	envd_open(&e);
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
	mstream *s = calloc(N, sizeof(*s));
	for (int i = 0; i < N; i++)
		mstream_begin(m, &s[i], &e,
		              "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"sleep 2; echo "
		              "ok\"]}}");
	int done = 0;
	for (long deadline = fk_mono_ms() + 400000; done < N && fk_mono_ms() < deadline;)
		done += multi_pump(m, 1000, N - done);
	/* checked after every handle is freed: a failure leaks nothing */
	int first_bad = -1, bad = 0, bad_rc = 0;
	for (int i = 0; i < N; i++) {
		/* ... "ok\n" base64 is b2sK; the last frame is end-stream {} */
		int ok = s[i].done && s[i].rc == CURLE_OK && s[i].r.len >= 7 &&
		         memmem(s[i].r.body, s[i].r.len, "b2sK", 4) &&
		         !memcmp(s[i].r.body + s[i].r.len - 7, "\x02\0\0\0\x02{}", 7);
		if (!ok && bad++ == 0) {
			first_bad = i;
			bad_rc = s[i].rc;
		}
		mstream_end(m, &s[i]);
	}
	free(s);
	if (bad) {
		curl_multi_cleanup(m);
		delete_sandbox(e.id);
		fail_msg("%d of %d streams failed (%d done); first: #%d, curl %d", bad, N, done,
		         first_bad, bad_rc);
	}

	/* client leaves: the process keeps running (it writes a file after the disconnect) */
	mstream one;
	mstream_begin(m, &one, &e,
	              "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"sleep 1; echo done > "
	              "/tmp/after\"]}}");
	for (long deadline = fk_mono_ms() + 20000; !mstream_pid(&one) && fk_mono_ms() < deadline;)
		multi_pump(m, 50, 1);
	uint32_t pid = mstream_pid(&one);
	mstream_end(m, &one);
	curl_multi_cleanup(m);
	const char *h[] = {"-", e.hid, e.htok, NULL};
	int found = 0;
	for (long deadline = fk_mono_ms() + 20000; pid && !found && fk_mono_ms() < deadline;
	     fk_sleep_ms(100)) {
		resp *r = http_raw("GET", "/files?path=/tmp/after", NULL, NULL, 0, h, NULL);
		found = r->status == 200 && r->len == 5 && !memcmp(r->body, "done\n", 5);
		resp_free(r);
	}
	delete_sandbox(e.id);
	assert_true(pid > 0);
	assert_true(found);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_control__missing_or_bad_key_is_401),
	    cmocka_unit_test(test_control__unknown_route_404_wrong_method_405),
	    cmocka_unit_test(test_control__create_v2_returns_sandbox_with_token),
	    cmocka_unit_test(test_control__legacy_create_token_only_when_secure),
	    cmocka_unit_test(test_control__create_validation_400),
	    cmocka_unit_test(test_control__invalid_sandbox_id_400),
	    cmocka_unit_test(test_control__template_build_requests),
	    cmocka_unit_test(test_control__sandbox_limits_and_alias_follow_template),
	    cmocka_unit_test(test_control__build_log_entries_carry_step),
	    cmocka_unit_test(test_control__template_delete_in_use_follows_base_template),
	    cmocka_unit_test(test_control__template_references_update_and_delete),
	    cmocka_unit_test(test_control__connect_pause_delete_lifecycle),
	    cmocka_unit_test(test_control__list_paging_and_metadata_filter),
	    cmocka_unit_test(test_control__reaper_kills_or_pauses_at_end_time),
	    cmocka_unit_test(test_control__timeout_zero_ends_it_now),
	    cmocka_unit_test(test_admin__fault_409_times_then_success),
	    cmocka_unit_test(test_admin__request_log_masks_secrets),
	    cmocka_unit_test(test_admin__request_log_arrival_order),
	    cmocka_unit_test(test_envd__health_token_and_502),
	    cmocka_unit_test(test_envd__dead_pid1_is_sandbox_not_found),
	    cmocka_unit_test(test_envd__auto_resume_on_traffic),
	    cmocka_unit_test(test_envd__start_stream_frames_start_data_end),
	    cmocka_unit_test(test_envd__send_signal_unknown_pid_404),
	    cmocka_unit_test(test_envd__files_upload_download_stat),
	    cmocka_unit_test(test_envd__stream_faults),
	    cmocka_unit_test(test_envd__kill_ignored_survives_signal_until_pause),
	    cmocka_unit_test(test_envd__300_concurrent_streams),
	};
	const char *only = getenv("FK_TEST_FILTER"); /* a glob: run only the tests it names */
	if (only && *only)
		cmocka_set_test_filter(only);
	int rc = cmocka_run_group_tests_name("fake_http", tests, server_start, server_stop);
	curl_global_cleanup();
	return rc;
}
