/*
 * tests/integration/test_ports.c: sbx_sandbox_host() against fake-e2b
 * (docs/ports.md): the hostname and URL of a port, a server the test starts
 * in the sandbox reached through fake-e2b's proxy by that hostname, the
 * traffic token of a sandbox with private traffic (refused without it), and
 * the checks made before any request.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static int setup(void **state)
{
	return h_group_setup(state);
}

static int teardown(void **state)
{
	return h_group_teardown(state);
}

typedef struct body {
	char buf[4096];
	size_t len;
} body;

static size_t take(char *p, size_t sz, size_t n, void *u)
{
	body *b = u;
	size_t k = sz * n;
	if (k > sizeof(b->buf) - 1 - b->len)
		k = sizeof(b->buf) - 1 - b->len;
	memcpy(b->buf + b->len, p, k);
	b->len += k;
	b->buf[b->len] = '\0';
	return sz * n;
}

/* GET PATH from fake-e2b with Host: hostname (what E2B's edge routes on); the status. */
static long get_via_host(h_ctx *h, const char *hostname, const char *path, const char *token,
                         body *b)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hd = NULL;
	char url[512], hh[512], th[256];
	long status = -1;

	memset(b, 0, sizeof(*b));
	snprintf(url, sizeof(url), "%s%s", h->srv.url, path);
	snprintf(hh, sizeof(hh), "Host: %s", hostname);
	hd = curl_slist_append(hd, hh);
	if (token) {
		snprintf(th, sizeof(th), "%s: %s", SBX_TRAFFIC_TOKEN_HEADER, token);
		hd = curl_slist_append(hd, th);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	if (h->srv.tls) {
		curl_easy_setopt(c, CURLOPT_CAINFO, h->srv.ca);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L); /* 127.0.0.1 is not the name */
	}
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hd);
	curl_easy_cleanup(c);
	return status;
}

/* Poll until the server in the sandbox answers (it starts in the background): the status. */
static long get_until_up(h_ctx *h, const char *hostname, const char *token, body *b)
{
	long st = -1;
	for (int i = 0; i < 200; i++) {
		st = get_via_host(h, hostname, "/index.html", token, b);
		if (st == 200 || st == 403)
			return st;
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return st;
}

static sbx_process *serve_in(h_ctx *h, sbx_provider *p, const char *id, unsigned port)
{
	char cmd[256];
	sbx_process_options po = SBX_PROCESS_OPTIONS_INIT;
	sbx_process *proc = NULL;
	sbx_error err = {0};

	free(h_sh(h, id, "mkdir -p /tmp/www && echo from-the-box > /tmp/www/index.html"));
	snprintf(cmd, sizeof(cmd), "cd /tmp/www && exec python3 -m http.server %u", port);
	po.timeout_ms = 120000;
	assert_int_equal(sbx_process_start(&proc, p, id, cmd, &po, NULL, &err), 0);
	return proc;
}

static void stop(sbx_process *proc)
{
	sbx_exec_result r;
	sbx_error err = {0};
	assert_int_equal(sbx_process_kill(proc, NULL, &err), 0);
	assert_int_equal(sbx_process_wait(&r, proc, NULL, &err), 0);
	sbx_exec_result_free(&r);
	sbx_process_free(proc);
}

static void test_host__reaches_a_server_in_the_sandbox(void **state)
{
	h_ctx *h = *state;
	sbx_provider *p = h_provider_new(h, "\"domain\":\"e2b.localhost\"", NULL);
	sbx_host *host = NULL;
	sbx_error err = {0};
	char name[64], want[128], *id;
	body b;

	h_name(name, sizeof(name), "ports");
	id = h_create(h, p, name);
	sbx_process *proc = serve_in(h, p, id, 8765);
	assert_int_equal(sbx_sandbox_host(&host, p, id, 8765, NULL, &err), 0);
	snprintf(want, sizeof(want), "8765-%s.e2b.localhost", id);
	assert_string_equal(host->hostname, want);
	snprintf(want, sizeof(want), "https://8765-%s.e2b.localhost", id);
	assert_string_equal(host->url, want);
	assert_null(host->traffic_token); /* public traffic, as every create makes */
	assert_int_equal(get_until_up(h, host->hostname, NULL, &b), 200);
	assert_string_equal(b.buf, "from-the-box\n");
	sbx_host_free(host);
	/* a port nothing listens on: the hostname is still given (nothing is checked) */
	assert_int_equal(sbx_sandbox_host(&host, p, id, 1, NULL, &err), 0);
	snprintf(want, sizeof(want), "1-%s.e2b.localhost", id);
	assert_string_equal(host->hostname, want);
	assert_int_not_equal(get_via_host(h, host->hostname, "/", NULL, &b), 200);
	sbx_host_free(host);
	stop(proc);
	assert_int_equal(sbx_sandbox_destroy(p, id, NULL, &err), 0);
	assert_int_equal(sbx_sandbox_host(&host, p, id, 8765, NULL, &err), SBX_EGONE);
	assert_null(host);
	sbx_free(id);
	sbx_provider_free(p);
}

static void test_host__private_traffic_token(void **state)
{
	h_ctx *h = *state;
	sbx_provider *p = h_provider_new(h, "\"domain\":\"e2b.localhost\"", NULL);
	sbx_host *host = NULL;
	sbx_error err = {0};
	long status = 0;
	body b;

	/* a sandbox made by another client with private traffic (E2B's allowPublicTraffic) */
	json_t *made =
	    h_http(h, "POST", "/v2/sandboxes",
	           "{\"templateID\":\"capybara-sandbox\",\"secure\":true,\"timeout\":300,"
	           "\"network\":{\"allowPublicTraffic\":false}}",
	           &status, NULL);
	assert_int_equal(status, 201);
	const char *tok = json_string_value(json_object_get(made, "trafficAccessToken"));
	char *id = strdup(json_string_value(json_object_get(made, "sandboxID")));
	assert_non_null(tok);
	h_add_secret(h, tok);
	h_learn_token(h, id);
	sbx_process *proc = serve_in(h, p, id, 8766);
	assert_int_equal(sbx_sandbox_host(&host, p, id, 8766, NULL, &err), 0);
	assert_non_null(host->traffic_token);
	assert_string_equal(host->traffic_token, tok);
	assert_int_equal(get_until_up(h, host->hostname, host->traffic_token, &b), 200);
	assert_string_equal(b.buf, "from-the-box\n");
	assert_int_equal(get_via_host(h, host->hostname, "/index.html", NULL, &b), 403);
	sbx_host_free(host);
	json_decref(made);
	stop(proc);
	assert_int_equal(sbx_sandbox_destroy(p, id, NULL, &err), 0);
	free(id);
	sbx_provider_free(p);
}

static void test_host__checked_before_any_request(void **state)
{
	h_ctx *h = *state;
	sbx_host *host = (sbx_host *)1;
	sbx_error err = {0};

	h_reset(h);
	assert_int_equal(sbx_sandbox_host(&host, h->p, "i0", 0, NULL, &err), SBX_EINVALID);
	assert_null(host);
	assert_string_equal(err.message, "port must be 1..65535, not 0");
	sbx_error_clear(&err);
	assert_int_equal(sbx_sandbox_host(&host, h->p, "i0", 65536, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_host(NULL, h->p, "i0", 80, NULL, &err), SBX_EINVALID);
	assert_int_equal(sbx_sandbox_host(&host, h->p, NULL, 80, NULL, &err), SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host__reaches_a_server_in_the_sandbox),
	    cmocka_unit_test(test_host__private_traffic_token),
	    cmocka_unit_test(test_host__checked_before_any_request),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
