/*
 * tests/fake/server/test_egress.c: a create body's egress rules reach the sandbox's egress
 * proxy (fake-e2b/README.md "Isolation: what a sandbox can and cannot do"):
 * network.allowOut / denyOut and allow_internet_access, seen through the
 * sandbox's DNS, which the proxy answers (names from --egress-host, nothing leaves the machine)
 * and which under a deny-all rule answers allowed names only. The proxy's connection rules
 * themselves are tested against a real upstream in tests/fake/net. Needs root and BPF
 * sk_lookup (a sandbox network of its own); skips otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fkserver.h"

#define KEY "e2b_egress_test_key"

static const char *g_bin;

#define RESOLVES(name, ip) "getent ahostsv4 " name " | grep -q '^" ip " '"
#define NXDOMAIN(name)     "! getent hosts " name

/* Root only: a server whose egress proxy knows allowed.test (198.18.0.77) and other.test
 * (198.18.0.78), and in *b a sandbox created with `create_body` (NULL: the default, open); skips
 * where sandboxes have no network of their own. */
static void egress_setup(fks *s, fks_box *b, const char *create_body)
{
	fks_need_root();
	const char *flags[] = {"--api-key",
	                       KEY,
	                       "--quiet",
	                       "--egress-host",
	                       "allowed.test=198.18.0.77",
	                       "--egress-host",
	                       "other.test=198.18.0.78",
	                       NULL};
	assert_int_equal(fks_start(s, g_bin, flags), 0);
	fks_box_create(s, KEY, create_body, b);
	if (!fks_box_run(s, b, "grep -q 'egress proxy' /etc/resolv.conf")) {
		fks_box_delete(s, KEY, b);
		assert_int_equal(fks_stop(s), 0);
		fprintf(stderr, "SKIP: no sandbox network of its own (BPF sk_lookup)\n");
		skip();
	}
}

static void test_egress__rules_reach_the_sandbox(void **state)
{
	fks s;
	fks_box b;
	/* open (no network field) */
	egress_setup(&s, &b, NULL);
	assert_true(fks_box_run(&s, &b, RESOLVES("other.test", "198.18.0.78")));
	assert_true(fks_box_run(&s, &b, "[ \"$(awk 'NR>2{print $1}' /proc/net/dev)\" = lo: ]"));
	/* the server's own port (fake-e2b/SECURITY.md "The attack list"), by every address of the
	 * host, is out of reach (a reachable server would answer 401 or 404: curl exits 0) */
	struct ifaddrs *ifs;
	assert_int_equal(getifaddrs(&ifs), 0);
	int n = 0;
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		char ip[16], line[256];
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
		snprintf(line, sizeof(line), "! curl -s -m 10 -o /dev/null http://%s:%u/sandboxes",
		         ip, s.port);
		assert_true(fks_box_run(&s, &b, line));
		n++;
	}
	freeifaddrs(ifs);
	assert_true(n >= 1);
	fks_box_delete(&s, KEY, &b);

	/* allowlist by name */
	fks_box_create(&s, KEY,
	               "{\"templateID\":\"base\",\"network\":{\"allowOut\":[\"allowed.test\"],"
	               "\"denyOut\":[\"0.0.0.0/0\"]}}",
	               &b);
	assert_true(fks_box_run(&s, &b, RESOLVES("allowed.test", "198.18.0.77")));
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	fks_box_delete(&s, KEY, &b);

	/* allow_internet_access false with an allowed address: deny-all reaches the sandbox */
	fks_box_create(&s, KEY,
	               "{\"templateID\":\"base\",\"allow_internet_access\":false,"
	               "\"network\":{\"allowOut\":[\"198.18.0.78\"]}}",
	               &b);
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	fks_box_delete(&s, KEY, &b);

	/* one denied address, no deny-all: names still resolve */
	fks_box_create(&s, KEY,
	               "{\"templateID\":\"base\",\"network\":{\"denyOut\":[\"198.18.0.78/32\"]}}",
	               &b);
	assert_true(fks_box_run(&s, &b, RESOLVES("other.test", "198.18.0.78")));
	fks_box_delete(&s, KEY, &b);

	/* a bad --egress-host does not start */
	fks bad;
	const char *bad_flags[] = {"--api-key", KEY, "--egress-host", "nameonly", NULL};
	assert_int_equal(fks_start(&bad, g_bin, bad_flags), -1);
	assert_non_null(strstr(bad.out, "egress host nameonly: want NAME=IP[,IP]"));
	assert_int_equal(fks_stop(&s), 0);
}

/* PUT /sandboxes/{id}/network with `body`: its status; its body must be `want_body` (NULL: any). */
static int put_network(fks *s, const char *id, const char *body, const char *want_body)
{
	char path[128], key[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/network", id);
	snprintf(key, sizeof(key), "X-API-Key: %s", KEY);
	const char *h[] = {key, "Content-Type: application/json", NULL};
	fkr *r = fks_req(s, "PUT", path, h, body, strlen(body));
	int st = r->status;
	if (want_body) {
		const char *got = r->body ? r->body : "";
		if (strcmp(got, want_body) != 0)
			fprintf(stderr, "got body: %s\n", got);
		assert_string_equal(got, want_body);
	}
	fkr_free(r);
	return st;
}

/* The update reaches the running sandbox's proxy at once (its DNS shows the rules), both ways,
 * and a sandbox created with egress none is let out by one; pause and resume keep the rules. */
static void test_egress__network_update_is_live(void **state)
{
	fks s;
	fks_box b;
	egress_setup(&s, &b,
	             "{\"templateID\":\"base\",\"network\":{\"allowOut\":[\"allowed.test\"],"
	             "\"denyOut\":[\"0.0.0.0/0\"]}}");
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	/* denied -> allowed: the empty update clears every egress rule */
	assert_int_equal(put_network(&s, b.id, "{}", ""), 204);
	assert_true(fks_box_run(&s, &b, RESOLVES("other.test", "198.18.0.78")));
	/* allowed -> denied */
	assert_int_equal(put_network(&s, b.id, "{\"allow_internet_access\":false}", ""), 204);
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	assert_true(fks_box_run(&s, &b, NXDOMAIN("allowed.test")));
	/* a bad rule: 400, the rules stay */
	assert_int_equal(put_network(&s, b.id, "{\"denyOut\":[\"example.com\"]}", NULL), 400);
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	/* paused and resumed: still denied; then allowed by name (allow_internet_access stays
	 * false: only allowed.test) */
	char path[128], key[64];
	snprintf(key, sizeof(key), "X-API-Key: %s", KEY);
	const char *h[] = {key, "Content-Type: application/json", NULL};
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", b.id);
	fkr *r = fks_req(&s, "POST", path, h, NULL, 0);
	assert_int_equal(r->status, 204);
	fkr_free(r);
	assert_int_equal(put_network(&s, b.id, "{}", NULL), 404); /* not running */
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", b.id);
	r = fks_req(&s, "POST", path, h, "{\"timeout\":60}", 14);
	assert_int_equal(r->status, 201);
	fkr_free(r);
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	assert_int_equal(
	    put_network(&s, b.id, "{\"allowOut\":[\"allowed.test\"],\"denyOut\":[\"0.0.0.0/0\"]}",
	                ""),
	    204);
	assert_true(fks_box_run(&s, &b, RESOLVES("allowed.test", "198.18.0.77")));
	assert_true(fks_box_run(&s, &b, NXDOMAIN("other.test")));
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(put_network(&s, b.id, "{}", NULL), 404);

	/* egress none at create (allow_internet_access false, nothing allowed), let out */
	fks_box_create(&s, KEY, "{\"templateID\":\"base\",\"allow_internet_access\":false}", &b);
	assert_true(
	    fks_box_run(&s, &b, "[ \"$(ip -4 -o addr show | awk '{print $4}')\" = 127.0.0.1/8 ]"));
	assert_int_equal(put_network(&s, b.id, "{\"allow_internet_access\":true}", ""), 204);
	assert_true(fks_box_run(&s, &b, RESOLVES("other.test", "198.18.0.78")));
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

#define REFUSED_MSG                                                                                \
	"egress allowlist and open need a network of the sandbox's own behind its egress proxy, "  \
	"and this kernel has no BPF sk_lookup (Linux >= 5.9, bpf() allowed): refused rather than " \
	"sharing the host's network (fake-e2b --unsafe-shared-network allows that)"

/* POST /v2/sandboxes with `body`, which must be refused: 403 and E2B's error shape. */
static void create_refused(fks *s, const char *body)
{
	char key[64];
	snprintf(key, sizeof(key), "X-API-Key: %s", KEY);
	const char *h[] = {key, "Content-Type: application/json", NULL};
	fkr *r = fks_req(s, "POST", "/v2/sandboxes", h, body, strlen(body));
	assert_int_equal(r->status, 403);
	assert_non_null(r->json);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 403);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), REFUSED_MSG);
	assert_int_equal(json_object_size(r->json), 2);
	fkr_free(r);
}

/* The server's output so far. */
static void server_out(fks *s, char *buf, size_t cap)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/out", s->dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = 0;
	fclose(f);
}

/* Without BPF sk_lookup (forced: FAKE_E2B_TEST_NO_SK_LOOKUP=1), a sandbox with egress allowlist
 * or open would share the host's network: refused (403) unless --unsafe-shared-network;
 * egress none is still served, and cannot be let out by a network update. */
static void test_egress__no_sk_lookup_refuses(void **state)
{
	fks_need_root();
	assert_int_equal(setenv("FAKE_E2B_TEST_NO_SK_LOOKUP", "1", 1), 0);
	fks s;
	const char *flags[] = {"--api-key", KEY, NULL};
	int started = fks_start(&s, g_bin, flags);
	unsetenv("FAKE_E2B_TEST_NO_SK_LOOKUP");
	assert_int_equal(started, 0);
	char out[8192];
	server_out(&s, out, sizeof(out));
	assert_non_null(strstr(out, "fake-e2b: no BPF sk_lookup (Linux >= 5.9, bpf() allowed): "
	                            "sandboxes with egress allowlist or open are refused (only "
	                            "egress none, allow_internet_access false, is served)\n"));
	create_refused(&s, "{\"templateID\":\"base\"}");
	create_refused(&s, "{\"templateID\":\"base\",\"network\":{\"allowOut\":[\"allowed.test\"],"
	                   "\"denyOut\":[\"0.0.0.0/0\"]}}");
	create_refused(&s, "{\"templateID\":\"base\",\"network\":{\"denyOut\":[\"10.0.0.0/8\"]}}");
	/* egress none: its own loopback */
	fks_box b;
	fks_box_create(&s, KEY, "{\"templateID\":\"base\",\"allow_internet_access\":false}", &b);
	fks_box_sh(&s, &b, "[ \"$(awk 'NR>2{print $1}' /proc/net/dev)\" = lo: ]");
	assert_int_equal(put_network(&s, b.id, "{\"allow_internet_access\":true}",
	                             "{\"code\":403,\"message\":\"" REFUSED_MSG "\"}"),
	                 403);
	assert_int_equal(put_network(&s, b.id, "{\"denyOut\":[\"0.0.0.0/0\"]}", ""), 204);
	fks_box_sh(&s, &b, "[ \"$(awk 'NR>2{print $1}' /proc/net/dev)\" = lo: ]");
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);

	/* the operator's explicit choice: they share the host's network, said at start */
	assert_int_equal(setenv("FAKE_E2B_TEST_NO_SK_LOOKUP", "1", 1), 0);
	const char *unsafe[] = {"--api-key", KEY, "--unsafe-shared-network", NULL};
	started = fks_start(&s, g_bin, unsafe);
	unsetenv("FAKE_E2B_TEST_NO_SK_LOOKUP");
	assert_int_equal(started, 0);
	server_out(&s, out, sizeof(out));
	assert_non_null(strstr(out, "--unsafe-shared-network: sandboxes with egress allowlist or "
	                            "open share the host's network"));
	fks_box_create(&s, KEY, NULL, &b);
	char line[512];
	FILE *f = popen("awk 'NR>2{print $1}' /proc/net/dev | tr -d '\\n'", "r");
	assert_non_null(f);
	char host_ifs[256] = "";
	assert_non_null(fgets(host_ifs, sizeof(host_ifs), f));
	pclose(f);
	snprintf(line, sizeof(line),
	         "[ \"$(awk 'NR>2{print $1}' /proc/net/dev | tr -d '\\n')\" = '%s' ]", host_ifs);
	fks_box_sh(&s, &b, line);
	fks_box_delete(&s, KEY, &b);
	assert_int_equal(fks_stop(&s), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_egress__rules_reach_the_sandbox),
	    cmocka_unit_test(test_egress__network_update_is_live),
	    cmocka_unit_test(test_egress__no_sk_lookup_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
