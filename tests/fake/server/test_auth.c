/*
 * tests/fake/server/test_auth.c: fake-e2b asks for a real API key (issue 11 "The
 * server"): without --api-key it makes a random one and writes it 0600 beside
 * the port file; any e2b_ key only with --any-api-key; the admin API needs the key;
 * a non-loopback --host is refused.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fkserver.h"

static const char *g_bin;

static long status_with_key(fks *s, const char *method, const char *path, const char *key)
{
	char h[256];
	snprintf(h, sizeof(h), "X-API-Key: %s", key);
	const char *hdr[] = {h, NULL};
	fkr *r = fks_req(s, method, path, key ? hdr : NULL, NULL, 0);
	assert_int_equal(r->curl_rc, 0);
	long st = r->status;
	if (st == 401)
		assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 401);
	fkr_free(r);
	return st;
}

static void test_auth__generated_key_file_is_0600_and_the_only_key(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	char kf[160];
	snprintf(kf, sizeof(kf), "%s/port.api-key", s.dir);
	struct stat st;
	assert_int_equal(stat(kf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(strncmp(s.key, "e2b_", 4), 0);
	assert_int_equal(strlen(s.key), 44);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", s.key), 200);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_anything"), 401);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", NULL), 401);
	/* the admin API too */
	assert_int_equal(status_with_key(&s, "GET", "/_fake/sandboxes", NULL), 401);
	assert_int_equal(status_with_key(&s, "GET", "/_fake/requests", "e2b_anything"), 401);
	assert_int_equal(status_with_key(&s, "DELETE", "/_fake/faults", "e2b_anything"), 401);
	assert_int_equal(status_with_key(&s, "GET", "/_fake/sandboxes", s.key), 200);
	assert_int_equal(fks_stop(&s), 0);
	assert_int_equal(access(kf, F_OK), -1); /* removed at exit */
}

static void test_auth__given_key_and_any_key_flag(void **state)
{
	(void)state;
	fks s;
	const char *given[] = {"--quiet", "--api-key", "e2b_given_key_1", NULL};
	assert_int_equal(fks_start(&s, g_bin, given), 0);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_given_key_1"), 200);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_given_key_2"), 401);
	assert_int_equal(fks_stop(&s), 0);
	const char *any[] = {"--quiet", "--any-api-key", NULL};
	assert_int_equal(fks_start(&s, g_bin, any), 0);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_whatever"), 200);
	assert_int_equal(status_with_key(&s, "GET", "/_fake/requests", "e2b_whatever"), 200);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "nope_whatever"), 401);
	assert_int_equal(fks_stop(&s), 0);
}

static void test_auth__non_loopback_host_is_refused(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--any-api-key", "--host", "0.0.0.0", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), -1);
	assert_true(WIFEXITED(s.exit_status));
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	assert_non_null(strstr(s.out, "not a loopback address"));
	fks_stop(&s);
	const char *remote[] = {"--any-api-key", "--host", "0.0.0.0", "--allow-remote", NULL};
	assert_int_equal(fks_start(&s, g_bin, remote), -1);
	assert_non_null(strstr(s.out, "TLS"));
	fks_stop(&s);
}

static void test_auth__short_or_conflicting_keys_are_refused(void **state)
{
	(void)state;
	fks s;
	const char *shortk[] = {"--api-key", "e2b_x", NULL};
	assert_int_equal(fks_start(&s, g_bin, shortk), -1);
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	fks_stop(&s);
	const char *both[] = {"--api-key", "e2b_given_key_1", "--any-api-key", NULL};
	assert_int_equal(fks_start(&s, g_bin, both), -1);
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	fks_stop(&s);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_auth__generated_key_file_is_0600_and_the_only_key),
	    cmocka_unit_test(test_auth__given_key_and_any_key_flag),
	    cmocka_unit_test(test_auth__non_loopback_host_is_refused),
	    cmocka_unit_test(test_auth__short_or_conflicting_keys_are_refused),
	};
	return cmocka_run_group_tests_name("fake_auth", tests, NULL, NULL);
}
