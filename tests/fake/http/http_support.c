/*
 * tests/fake/http/http_support.c — what the fake_http_test program's files share
 * (http_test.h): the server (started once for the group), a tiny libcurl client, sandboxes made
 * and deleted, and envd's RPCs, streams and Start faults.
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

const char *g_bin;
long g_timeout_ms = 60000; /* per request */
CURLcode g_curl_rc;        /* of the last request */
int g_allow_curl_error;
fks g_srv; /* --api-key KEY --quiet */

/* ---- the server ------------------------------------------------------------------------ */

int server_start(void **state)
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

int server_stop(void **state)
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

void resp_free(resp *r)
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
resp *http_raw(const char *method, const char *path, const char *ctype, const void *body,
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

resp *http(const char *method, const char *path, const char *json_body)
{
	return http_raw(method, path, json_body ? "application/json" : NULL, json_body,
	                json_body ? strlen(json_body) : 0, NULL, NULL);
}

void assert_e2b_error(resp *r, long status)
{
	assert_int_equal(r->status, status);
	assert_true(json_is_object(r->json));
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), status);
	assert_true(json_is_string(json_object_get(r->json, "message")));
}

char *create_sandbox(const char *body)
{
	resp *r =
	    http("POST", "/v2/sandboxes", body ? body : "{\"templateID\":\"capybara-sandbox\"}");
	assert_int_equal(r->status, 201);
	char *id = strdup(json_string_value(json_object_get(r->json, "sandboxID")));
	resp_free(r);
	return id;
}

char *sandbox_token(const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	resp *r = http("GET", path, NULL);
	assert_int_equal(r->status, 200);
	char *t = strdup(json_string_value(json_object_get(r->json, "envdAccessToken")));
	resp_free(r);
	return t;
}

void delete_sandbox(const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	resp *r = http("DELETE", path, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
}

int is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* ---- envd ------------------------------------------------------------------------------- */

void envd_open(envd_ctx *e)
{
	char *id = create_sandbox(NULL), *t = sandbox_token(id);
	snprintf(e->id, sizeof(e->id), "%s", id);
	snprintf(e->token, sizeof(e->token), "%s", t);
	snprintf(e->hid, sizeof(e->hid), "E2b-Sandbox-Id: %s", id);
	snprintf(e->htok, sizeof(e->htok), "X-Access-Token: %s", t);
	free(id);
	free(t);
}

resp *rpc(envd_ctx *e, const char *method, const char *json_body)
{
	const char *h[] = {"-", e->hid, e->htok, "Connect-Protocol-Version: 1", NULL};
	char path[128];
	snprintf(path, sizeof(path), "/%s", method);
	return http_raw("POST", path, "application/json", json_body, strlen(json_body), h, NULL);
}

/* A Start/Connect stream, read whole: an array of {"flags":n,"msg":json}. */
json_t *stream(envd_ctx *e, const char *method, const char *json_body, long *status,
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

void add_fault(const char *kind)
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
