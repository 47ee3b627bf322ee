/*
 * tests/fake/server/test_hosts.c: addresses like E2B's (docs/internals/wire.md
 * "Routing to envd"): requests
 * routed by Host <port>-<id>.<domain> as E2B's proxy routes them (49983: envd;
 * any other port: that port inside the sandbox, getHost), signed /files URLs
 * that carry nothing but the Host, the traffic token of allowPublicTraffic:false,
 * and --tls: HTTPS with a certificate for *.<domain> from the local CA that
 * fake-e2b writes to its state directory.
 */
#define _GNU_SOURCE
#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "fkserver.h"

#define KEY "e2b_hosts_test_key"

static const char *g_bin;

static void host_of(char *buf, size_t cap, unsigned port, const fks_box *b)
{
	snprintf(buf, cap, "%u-%s.e2b.localhost", port, b->id);
}

/* envd by Host only (no E2b-Sandbox-Id), an unknown sandbox's Host is the proxy's 502. */
static void check_envd_by_host(fks *s)
{
	fks_box b;
	char host[160];
	fks_box_create(s, KEY, NULL, &b);
	host_of(host, sizeof(host), 49983, &b);
	const char *tok[] = {b.htok, "Content-Type: application/json", NULL};
	fkr *r = fks_req_host(s, host, "GET", "/health", tok, NULL, 0);
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 204);
	fkr_free(r);
	r = fks_req_host(s, host, "POST", "/filesystem.Filesystem/Stat", tok, "{\"path\":\"/\"}",
	                 12);
	assert_int_equal(r->status, 200);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(r->json, "entry"), "path")), "/");
	fkr_free(r);
	r = fks_req_host(s, "49983-izzzzzzzzzzzzzzzzzzzz.e2b.localhost", "POST",
	                 "/filesystem.Filesystem/Stat", tok, "{\"path\":\"/\"}", 12);
	assert_int_equal(r->status, 502);
	fkr_free(r);
	/* the API under api.<domain> */
	const char *key[] = {"X-API-Key: " KEY, NULL};
	r = fks_req_host(s, "api.e2b.localhost", "GET", "/v2/sandboxes", key, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	fkr_free(r);
	fks_box_delete(s, KEY, &b);
}

static void test_hosts__envd_by_host_header(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--api-key", KEY, "--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	check_envd_by_host(&s);
	assert_int_equal(fks_stop(&s), 0);
}

/* "v1_" + base64 without padding of SHA-256("<path>:<op>:<user>:<token>:<exp>") */
static void sign(char *out, size_t cap, const char *path, const char *op, const char *user,
                 const char *token, long long exp)
{
	char plain[512];
	unsigned char md[32], b64[64];
	unsigned n = 0;
	int len = snprintf(plain, sizeof(plain), "%s:%s:%s:%s:%lld", path, op, user, token, exp);
	EVP_Digest(plain, (size_t)len, md, &n, EVP_sha256(), NULL);
	int m = EVP_EncodeBlock(b64, md, (int)n);
	while (m > 0 && b64[m - 1] == '=')
		m--;
	size_t o = (size_t)snprintf(out, cap, "v1_");
	for (int i = 0; i < m && o + 4 < cap; i++) /* as a query value: + and / escaped */
		o += (size_t)(b64[i] == '+'   ? snprintf(out + o, cap - o, "%%2B")
		              : b64[i] == '/' ? snprintf(out + o, cap - o, "%%2F")
		                              : snprintf(out + o, cap - o, "%c", b64[i]));
}

static void test_hosts__signed_urls_work_by_host_alone(void **state)
{
	(void)state;
	fks s;
	fks_box b;
	char host[160], sig[128], path[512];
	const char *flags[] = {"--api-key", KEY, "--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	fks_box_create(&s, KEY, NULL, &b);
	host_of(host, sizeof(host), 49983, &b);
	long long exp = (long long)time(NULL) + 600;
	sign(sig, sizeof(sig), "/tmp/signed.txt", "write", "root", b.token, exp);
	snprintf(path, sizeof(path),
	         "/files?path=/tmp/signed.txt&username=root&signature=%s&signature_expiration=%lld",
	         sig, exp);
	const char *ct[] = {"Content-Type: application/octet-stream", NULL};
	fkr *r = fks_req_host(&s, host, "POST", path, ct, "signed", 6);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	sign(sig, sizeof(sig), "/tmp/signed.txt", "read", "root", b.token, exp);
	snprintf(path, sizeof(path),
	         "/files?path=/tmp/signed.txt&username=root&signature=%s&signature_expiration=%lld",
	         sig, exp);
	r = fks_req_host(&s, host, "GET", path, NULL, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 6);
	assert_memory_equal(r->body, "signed", 6);
	fkr_free(r);
	/* a wrong signature is refused */
	r = fks_req_host(&s, host, "GET", "/files?path=/tmp/signed.txt&signature=v1_x", NULL, NULL,
	                 0);
	assert_int_equal(r->status, 401);
	fkr_free(r);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

static void test_hosts__other_ports_reach_the_sandbox_with_the_traffic_token(void **state)
{
	(void)state;
	fks s;
	fks_box b;
	char host[160], closed[160];
	const char *flags[] = {"--api-key", KEY, "--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	fks_box_create(&s, KEY,
	               "{\"templateID\":\"base\",\"network\":{\"allowPublicTraffic\":false}}", &b);
	assert_int_equal(strlen(b.traffic), 64);
	fks_box_sh(&s, &b,
	           "mkdir -p /tmp/www && echo from-the-box > /tmp/www/index.html && cd /tmp/www && "
	           "(nohup python3 -m http.server 8080 >/dev/null 2>&1 &)");
	host_of(host, sizeof(host), 8080, &b);
	host_of(closed, sizeof(closed), 8081, &b);
	char ht[200];
	snprintf(ht, sizeof(ht), "e2b-traffic-access-token: %s", b.traffic);
	const char *with[] = {ht, NULL};
	fkr *r = NULL;
	for (int i = 0; i < 100; i++) { /* until the server in the box listens */
		fkr_free(r);
		r = fks_req_host(&s, host, "GET", "/index.html", with, NULL, 0);
		if (r->status == 200)
			break;
		struct timespec ts = {0, 100 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(r->status, 200);
	assert_string_equal(r->body, "from-the-box\n");
	fkr_free(r);
	r = fks_req_host(&s, host, "GET", "/index.html", NULL, NULL, 0);
	assert_int_equal(r->status, 403);
	fkr_free(r);
	r = fks_req_host(&s, closed, "GET", "/", with, NULL, 0);
	assert_int_equal(r->status, 502);
	assert_int_equal(json_integer_value(json_object_get(r->json, "port")), 8081);
	fkr_free(r);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

static void test_hosts__tls_with_the_local_ca(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--api-key", KEY, "--tls", "--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	assert_int_equal(strncmp(s.url, "https://", 8), 0);
	struct stat st;
	char key[200];
	assert_int_equal(stat(s.cafile, &st), 0);
	snprintf(key, sizeof(key), "%.*s/ca.key", (int)(strlen(s.cafile) - 7), s.cafile);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	check_envd_by_host(&s);
	/* a name outside the certificate is refused by the client */
	fkr *r = fks_req_host(&s, "other.example", "GET", "/health", NULL, NULL, 0);
	assert_int_not_equal(r->curl_rc, 0);
	fkr_free(r);
	assert_int_equal(fks_stop(&s), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hosts__envd_by_host_header),
	    cmocka_unit_test(test_hosts__signed_urls_work_by_host_alone),
	    cmocka_unit_test(test_hosts__other_ports_reach_the_sandbox_with_the_traffic_token),
	    cmocka_unit_test(test_hosts__tls_with_the_local_ca),
	};
	return cmocka_run_group_tests_name("fake_hosts", tests, NULL, NULL);
}
