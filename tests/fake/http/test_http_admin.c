/*
 * tests/fake/http/test_http_admin.c — fake-e2b's admin API (fake-e2b/README.md): faults a number
 * of times then success, the request log's masked secrets and arrival order. Part of
 * fake_http_test (main in test_http.c).
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

/* ---- admin ------------------------------------------------------------------------------ */

void test_admin__fault_409_times_then_success(void **state)
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

void test_admin__request_log_masks_secrets(void **state)
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
void test_admin__request_log_arrival_order(void **state)
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
