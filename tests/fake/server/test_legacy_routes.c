/*
 * tests/fake/server/test_legacy_routes.c: fake-e2b --legacy-routes behaves like
 * an older self-hosted E2B API: the legacy control routes work, the /v2 routes
 * answer the OpenAPI validator's 404 (docs/protocol.md "Conventions"; docs/internals/wire.md
 * "Control plane").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fkserver.h"

#define KEY "e2b_legacy_test"

static const char *g_bin;
static fks g_srv;
static const char *const g_key[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};

static int up(void **state)
{
	(void)state;
	const char *flags[] = {"--api-key", KEY, "--legacy-routes", "--quiet", NULL};
	return fks_up(&g_srv, g_bin, flags);
}

static int down(void **state)
{
	(void)state;
	return fks_stop(&g_srv);
}

static void assert_no_operation(fkr *r)
{
	assert_int_equal(r->status, 404);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "validation error: no matching operation was found");
}

static void test_legacy__v2_routes_are_404_no_matching_operation(void **state)
{
	(void)state;
	const char *body = "{\"templateID\":\"base\"}";
	fkr *r = fks_req(&g_srv, "POST", "/v2/sandboxes", g_key, body, strlen(body));
	assert_no_operation(r);
	fkr_free(r);
	r = fks_req(&g_srv, "GET", "/v2/sandboxes", g_key, NULL, 0);
	assert_no_operation(r);
	fkr_free(r);
	r = fks_req(&g_srv, "POST", "/v2/sandboxes/iabc/connect", g_key, "{}", 2);
	assert_no_operation(r);
	fkr_free(r);
}

static void test_legacy__legacy_create_connect_kill_work(void **state)
{
	(void)state;
	const char *body = "{\"templateID\":\"base\",\"timeout\":60,\"secure\":true}";
	fkr *r = fks_req(&g_srv, "POST", "/sandboxes", g_key, body, strlen(body));
	assert_int_equal(r->status, 201);
	char id[64], path[128];
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(r->json, "sandboxID")));
	assert_non_null(json_object_get(r->json, "envdAccessToken"));
	fkr_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	r = fks_req(&g_srv, "POST", path, g_key, "{\"timeout\":60}", 14);
	assert_int_equal(r->status, 200);
	assert_string_equal(json_string_value(json_object_get(r->json, "sandboxID")), id);
	fkr_free(r);
	r = fks_req(&g_srv, "GET", "/sandboxes", g_key, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	fkr_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = fks_req(&g_srv, "DELETE", path, g_key, NULL, 0);
	assert_int_equal(r->status, 204);
	fkr_free(r);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_legacy__v2_routes_are_404_no_matching_operation),
	    cmocka_unit_test(test_legacy__legacy_create_connect_kill_work),
	};
	return cmocka_run_group_tests_name("fake_legacy_routes", tests, up, down);
}
