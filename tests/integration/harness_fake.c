/*
 * tests/integration/harness_fake.c: the harness (harness.h) talking to fake-e2b itself: plain
 * HTTP, its admin routes (fake-e2b/README.md: request log, faults, sandboxes), the request
 * log's entries, and sandboxes made or read behind the provider's back.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "harness_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

/* ---- HTTP to the fake ---- */

typedef struct membuf {
	char *ptr;
	size_t len;
} membuf;

static size_t on_body(char *data, size_t size, size_t n, void *payload)
{
	membuf *m = payload;
	size_t add = size * n;
	m->ptr = realloc(m->ptr, m->len + add + 1);
	if (!m->ptr)
		abort();
	memcpy(m->ptr + m->len, data, add);
	m->len += add;
	m->ptr[m->len] = '\0';
	return add;
}

/* Parse a JSON document, or JSON lines into an array. */
static json_t *parse_json_or_lines(const char *text, size_t len)
{
	json_error_t jerr;
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
	if (j)
		return j;
	json_t *arr = json_array();
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n > 0) {
			json_t *e = json_loadb(p, n, JSON_DECODE_ANY, &jerr);
			if (e)
				json_array_append_new(arr, e);
		}
		p += n + 1;
	}
	return arr;
}

json_t *h_http(h_ctx *h, const char *method, const char *path, const char *body, long *status,
               const char *extra_header)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s%s", h->srv.url, path);
	CURL *c = curl_easy_init();
	membuf m = {NULL, 0};
	struct curl_slist *hdr = NULL;
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	if (h->srv.tls)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->srv.ca);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	hdr = curl_slist_append(hdr, "X-API-Key: " H_API_KEY);
	if (extra_header) {
		char *copy = strdup(extra_header), *save = NULL;
		for (char *line = strtok_r(copy, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			hdr = curl_slist_append(hdr, line);
		free(copy);
	}
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	CURLcode rc = curl_easy_perform(c);
	long st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (status)
		*status = rc == CURLE_OK ? st : -1;
	json_t *j = NULL;
	if (m.ptr && m.len)
		j = parse_json_or_lines(m.ptr, m.len);
	free(m.ptr);
	return j;
}

/* Admin routes (fake-e2b/README.md). */
#define ADMIN_REQUESTS  "/_fake/requests"
#define ADMIN_FAULTS    "/_fake/faults"
#define ADMIN_SANDBOXES "/_fake/sandboxes"

static json_t *reqlog_once(h_ctx *h)
{
	long st = 0;
	json_t *j = h_http(h, "GET", ADMIN_REQUESTS, NULL, &st, NULL);
	assert_int_equal(st, 200);
	if (j && json_is_object(j)) {
		json_t *arr = json_object_get(j, "requests");
		if (json_is_array(arr)) {
			json_incref(arr);
			json_decref(j);
			j = arr;
		}
	}
	if (!j)
		j = json_array();
	assert_true(json_is_array(j));
	/* the admin API's own requests are not the library's */
	size_t i = 0;
	while (i < json_array_size(j)) {
		const char *p = h_entry_path(json_array_get(j, i));
		if (p && strncmp(p, "/_fake", 6) == 0)
			json_array_remove(j, i);
		else
			i++;
	}
	return j;
}

/*
 * fake-e2b logs a request when the response is complete on its side, which
 * can be just after the client has read it: read until two reads 100 ms apart
 * agree.
 */
json_t *h_reqlog(h_ctx *h)
{
	json_t *prev = reqlog_once(h);
	for (int i = 0; i < 40; i++) {
		usleep(100 * 1000);
		json_t *cur = reqlog_once(h);
		bool same = json_array_size(cur) == json_array_size(prev);
		json_decref(prev);
		prev = cur;
		if (same)
			break;
	}
	return prev;
}

void h_reqlog_clear(h_ctx *h)
{
	long st = 0;
	json_decref(h_http(h, "DELETE", ADMIN_REQUESTS, NULL, &st, NULL));
	assert_true(st >= 200 && st < 300);
}

void h_fault(h_ctx *h, const char *fault_json)
{
	long st = 0;
	json_decref(h_http(h, "POST", ADMIN_FAULTS, fault_json, &st, NULL));
	if (st < 200 || st >= 300)
		fail_msg("fake-e2b refused fault %s (HTTP %ld)", fault_json, st);
}

void h_faults_clear(h_ctx *h)
{
	long st = 0;
	json_decref(h_http(h, "DELETE", ADMIN_FAULTS, NULL, &st, NULL));
	assert_true(st >= 200 && st < 300);
}

char *h_token_of(h_ctx *h, const char *id)
{
	char path[256];
	long st = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	json_t *j = h_http(h, "GET", path, NULL, &st, NULL);
	const char *tok = json_string_value(json_object_get(j, "envdAccessToken"));
	char *out = tok && *tok ? strdup(tok) : NULL;
	json_decref(j);
	return out;
}

void h_learn_tokens(h_ctx *h)
{
	long st = 0;
	json_t *arr = h_http(h, "GET", ADMIN_SANDBOXES, NULL, &st, NULL);
	size_t i;
	json_t *sb;
	if (st == 200 && json_is_array(arr)) {
		json_array_foreach(arr, i, sb)
		{
			const char *id = json_string_value(json_object_get(sb, "sandboxID"));
			char *tok = id ? h_token_of(h, id) : NULL;
			if (tok)
				add_secret(h, tok);
			free(tok);
		}
	}
	json_decref(arr);
}

void h_learn_token(h_ctx *h, const char *id)
{
	char *tok = h_token_of(h, id);
	if (tok)
		h_add_secret(h, tok);
	free(tok);
}

void h_add_secret(h_ctx *h, const char *tok)
{
	pthread_mutex_lock(&h->mu);
	add_secret(h, tok);
	pthread_mutex_unlock(&h->mu);
}

void h_fault_status(h_ctx *h, const char *method, const char *path, int status, const char *body,
                    int times)
{
	json_t *f = json_pack("{s:s, s:s, s:i, s:i}", "method", method ? method : "*", "path", path,
	                      "status", status, "times", times);
	if (body)
		json_object_set_new(f, "body", json_string(body));
	char *text = json_dumps(f, JSON_COMPACT);
	h_fault(h, text);
	free(text);
	json_decref(f);
}

void h_fault_kind(h_ctx *h, const char *method, const char *path, const char *kind, int times)
{
	json_t *f = json_pack("{s:s, s:s, s:s, s:i}", "method", method ? method : "*", "path", path,
	                      "kind", kind, "times", times);
	char *text = json_dumps(f, JSON_COMPACT);
	h_fault(h, text);
	free(text);
	json_decref(f);
}

void h_reset(h_ctx *h)
{
	h_faults_clear(h);
	h_reqlog_clear(h);
}

size_t h_count_envd(json_t *log)
{
	size_t n = 0, i;
	json_t *e;
	json_array_foreach(log, i, e)
	{
		const char *p = h_entry_path(e);
		if (p && (strncmp(p, "/process.", 9) == 0 || strncmp(p, "/filesystem.", 12) == 0 ||
		          strncmp(p, "/files", 6) == 0 || strncmp(p, "/health", 7) == 0))
			n++;
	}
	return n;
}

/* ---- request log entries ---- */

static const char *str_of(json_t *e, const char *k1, const char *k2)
{
	const char *s = json_string_value(json_object_get(e, k1));
	if (!s && k2)
		s = json_string_value(json_object_get(e, k2));
	return s;
}

const char *h_entry_method(json_t *e)
{
	return str_of(e, "method", NULL);
}

const char *h_entry_path(json_t *e)
{
	return str_of(e, "path", "url");
}

const char *h_entry_query(json_t *e, const char *key)
{
	return json_string_value(json_object_get(json_object_get(e, "query"), key));
}

int h_entry_status(json_t *e)
{
	return (int)json_integer_value(json_object_get(e, "status"));
}

json_t *h_entry_json(json_t *e)
{
	json_t *b = json_object_get(e, "body");
	return b ? json_incref(b) : NULL;
}

static bool entry_matches(json_t *e, const char *method, const char *prefix)
{
	const char *m = h_entry_method(e), *p = h_entry_path(e);
	if (method && (!m || strcmp(m, method) != 0))
		return false;
	if (prefix) {
		size_t n = strlen(prefix);
		bool exact = n > 0 && prefix[n - 1] == '$';
		if (!p || strncmp(p, prefix, exact ? n - 1 : n) != 0 || (exact && p[n - 1] != '\0'))
			return false;
	}
	return true;
}

size_t h_count(json_t *log, const char *method, const char *prefix)
{
	size_t n = 0, i;
	json_t *e;
	json_array_foreach(log, i, e) if (entry_matches(e, method, prefix)) n++;
	return n;
}

void h_wait_requests(h_ctx *h, const char *method, const char *prefix, size_t n, uint64_t guard_ms)
{
	uint64_t deadline = h_now_ms() + guard_ms;

	for (;;) {
		json_t *log = reqlog_once(h);
		size_t got = h_count(log, method, prefix);
		json_decref(log);
		if (got >= n)
			return;
		assert_true(h_now_ms() < deadline);
		usleep(20 * 1000);
	}
}

json_t *h_find(json_t *log, const char *method, const char *prefix, size_t n)
{
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e)
	{
		if (entry_matches(e, method, prefix) && n-- == 0)
			return e;
	}
	return NULL;
}

/* ---- fake-e2b state ---- */

/* Create a sandbox behind the provider's back (libcurl), named `name` in metadata. */
char *h_raw_create(h_ctx *h, const char *name)
{
	char body[512];
	long st = 0;
	snprintf(body, sizeof(body),
	         "{\"templateID\":\"capybara-sandbox\",\"timeout\":900,\"metadata\":{\"capybara-"
	         "sandbox-name\":"
	         "\"%s\"}}",
	         name);
	json_t *j = h_http(h, "POST", "/v2/sandboxes", body, &st, NULL);
	assert_int_equal(st, 201);
	const char *id = json_string_value(json_object_get(j, "sandboxID"));
	const char *tok = json_string_value(json_object_get(j, "envdAccessToken"));
	assert_non_null(id);
	if (tok)
		h_add_secret(h, tok);
	char *out = strdup(id);
	json_decref(j);
	return out;
}

/* State of a sandbox in fake-e2b ("running", "paused"), or NULL when it does not exist. */
char *h_fake_state(h_ctx *h, const char *id)
{
	long st = 0;
	json_t *arr = h_http(h, "GET", "/_fake/sandboxes", NULL, &st, NULL);
	size_t i;
	json_t *sb;
	char *out = NULL;
	assert_int_equal(st, 200);
	json_array_foreach(arr, i, sb)
	{
		if (strcmp(json_string_value(json_object_get(sb, "sandboxID")), id) == 0)
			out = strdup(json_string_value(json_object_get(sb, "state")));
	}
	json_decref(arr);
	return out;
}

/* Number of sandboxes fake-e2b holds with metadata capybara-sandbox-name = name. */
size_t h_fake_count_named(h_ctx *h, const char *name)
{
	long st = 0;
	json_t *arr = h_http(h, "GET", "/_fake/sandboxes", NULL, &st, NULL);
	size_t i, n = 0;
	json_t *sb;
	json_array_foreach(arr, i, sb)
	{
		const char *v = json_string_value(
		    json_object_get(json_object_get(sb, "metadata"), "capybara-sandbox-name"));
		if (v && strcmp(v, name) == 0)
			n++;
	}
	json_decref(arr);
	return n;
}
