/*
 * tests/fake/server/test_floods.c: what unauthenticated and hostile clients
 * cost the server: bodies of many small JSON values (the request log kept
 * their parsed JSON; jansson's parse costs ~40 times the text), the request
 * log's byte caps, bodies that stall after their headers, the port proxy's
 * memory under concurrent large answers, oversized Start fields. The server's
 * memory is read from /proc/<pid>/status (VmRSS, VmHWM).
 *
 * This file: request bodies and the request log, the server-wide budget of bodies in memory,
 * and main. The others: test_floods_stall.c (bodies that stall), test_floods_proxy.c (the
 * port proxy: large answers and bodies, silent box ports, clients that leave),
 * test_floods_logs.c (Start fields, the server's log lines, build logs), floods_support.c
 * (the helpers they share).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"
#include "floods_test.h"

/* ---- request bodies and the request log ----------------------------------------------------- */

/* Before: the log kept the parsed JSON of every body, 401s included, and one 8 MiB body of
 * empty arrays cost ~370 MB that stayed. Now a refused request's body is neither kept nor read,
 * and 16 such bodies (8 to the control plane, 8 Connect ones to an envd path) leave the server
 * within 64 MiB of where it started (its high-water mark within 96 MiB). */
static void test_floods__unauthenticated_array_bodies_keep_the_server_small(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	long rss0 = status_kb(s.pid, "VmRSS");
	size_t n = 8 * MIB - 16;
	char *arrays = empty_arrays(n), *framed = envelope(arrays, strlen(arrays));
	for (int i = 0; i < 8; i++) {
		assert_int_equal(raw_post(s.port, "/v2/sandboxes",
		                          "Content-Type: application/json\r\n", arrays,
		                          strlen(arrays)),
		                 401);
		assert_int_equal(raw_post(s.port, "/process.Process/List",
		                          "Content-Type: application/connect+json\r\n"
		                          "E2b-Sandbox-Id: inosuchsandboxnosuchsand\r\n",
		                          framed, strlen(arrays) + 5),
		                 502);
	}
	long rss = status_kb(s.pid, "VmRSS"), hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld -> %ld kB (peak %ld kB) after 16 bodies of 8 MiB\n", rss0,
	              rss, hwm);
	RSS_BOUND(rss - rss0 < 64 * 1024);
	RSS_BOUND(hwm - rss0 < 96 * 1024);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e) assert_null(json_object_get(e, "body"));
	json_decref(log);
	free(arrays);
	free(framed);
	assert_int_equal(fks_stop(&s), 0);
}

/* With the key, the same body is parsed, within its budget (4 bytes of memory per byte of text
 * and 1 MiB): past it the parse fails as for bad JSON (400), and the server's peak stays within
 * 96 MiB of where it started. */
static void test_floods__an_authenticated_array_body_is_parsed_within_its_budget(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	long rss0 = status_kb(s.pid, "VmRSS");
	char *arrays = empty_arrays(8 * MIB - 16);
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	for (int i = 0; i < 4; i++) {
		fkr *r = fks_req(&s, "POST", "/v2/sandboxes", h, arrays, strlen(arrays));
		assert_int_equal(r->curl_rc, 0);
		assert_int_equal(r->status, 400);
		fkr_free(r);
	}
	long hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld kB, peak %ld kB after 4 parses\n", rss0, hwm);
	RSS_BOUND(hwm - rss0 < 96 * 1024);
	/* a body of that size that is not pathological still parses */
	size_t n = 4 * MIB;
	char *big = malloc(n + 64);
	assert_non_null(big);
	int o = snprintf(big, 64, "{\"templateID\":\"nosuchtemplate\",\"x\":\"");
	memset(big + o, 'a', n);
	memcpy(big + o + n, "\"}", 3);
	fkr *r = fks_req(&s, "POST", "/v2/sandboxes", h, big, strlen(big));
	assert_int_equal(r->status, 404); /* parsed: the template is what is missing */
	fkr_free(r);
	free(big);
	free(arrays);
	assert_int_equal(fks_stop(&s), 0);
}

/* A refused request's body is not in the log; an admitted one's is. */
static void test_floods__the_log_keeps_no_body_of_a_refused_request(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	const char *body = "{\"timeout\":30}";
	const char *nokey[] = {"Content-Type: application/json", NULL};
	const char *key[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	fkr *r =
	    fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", nokey, body, strlen(body));
	assert_int_equal(r->status, 401);
	fkr_free(r);
	r = fks_req(&s, "POST", "/sandboxes/inosuchsandbox/timeout", key, body, strlen(body));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(log, 0), "status")),
	                 401);
	assert_null(json_object_get(json_array_get(log, 0), "body"));
	json_t *b = json_object_get(json_array_get(log, 1), "body");
	assert_int_equal(json_integer_value(json_object_get(b, "timeout")), 30);
	json_decref(log);
	assert_int_equal(fks_stop(&s), 0);
}

/* POST /sandboxes/<id>/timeout (404: no such sandbox) whose log entry is `target` bytes: the body
 * {"timeout":30,"pad":"aaa..."} is sized from a first entry of the same shape (`base` bytes
 * with a pad of `base_pad`). */
static void post_entry_of(fks *s, size_t target, size_t base, size_t base_pad)
{
	size_t pad = base_pad + target - base;
	char *body = malloc(pad + 64);
	assert_non_null(body);
	int o = snprintf(body, 64, "{\"timeout\":30,\"pad\":\"");
	memset(body + o, 'a', pad);
	memcpy(body + o + pad, "\"}", 3);
	const char *key[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	fkr *r = fks_req(s, "POST", "/sandboxes/inosuchsandbox/timeout", key, body, strlen(body));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	free(body);
}

/* An entry's size of one with a pad of 10 (what post_entry_of sizes from). */
static size_t calibrate(fks *s)
{
	const char *del[] = {"X-API-Key: " KEY, NULL};
	post_entry_of(s, 100, 100, 10);
	json_t *log = request_log(s);
	size_t n = entry_bytes(json_array_get(log, json_array_size(log) - 1));
	json_decref(log);
	fkr_free(fks_req(s, "DELETE", "/_fake/requests", del, NULL, 0));
	return n;
}

/* One entry holds at most 65,536 bytes of text: at exactly that it keeps its body, one byte
 * more and the body goes (the entry says "truncated":["body"]). */
static void test_floods__a_log_entry_is_capped_at_64_kib(void **state)
{
	(void)state;
	fks s;
	start(&s, NULL);
	size_t base = calibrate(&s);
	post_entry_of(&s, 65536, base, 10);
	post_entry_of(&s, 65537, base, 10);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 2);
	json_t *kept = json_array_get(log, 0), *cut = json_array_get(log, 1);
	assert_int_equal(entry_bytes(kept), 65536);
	assert_non_null(json_object_get(kept, "body"));
	assert_null(json_object_get(kept, "truncated"));
	assert_null(json_object_get(cut, "body"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(cut, "truncated"), 0)),
	                    "body");
	assert_int_equal(json_array_size(json_object_get(cut, "truncated")), 1);
	assert_int_equal(json_integer_value(json_object_get(cut, "status")), 404);
	json_decref(log);
	assert_int_equal(fks_stop(&s), 0);
}

/* --request-log-mb 1: the log keeps at most 1,048,576 bytes of entries: 16 entries of exactly
 * 65,536 bytes all stay; a 17th drops the oldest; one byte more than what fits drops another. */
static void test_floods__the_log_is_capped_in_bytes(void **state)
{
	(void)state;
	fks s;
	const char *extra[] = {"--request-log-mb", "1", NULL};
	start(&s, extra);
	size_t base = calibrate(&s);
	for (int i = 0; i < 16; i++)
		post_entry_of(&s, 65536, base, 10);
	json_t *log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	size_t sum = 0, i;
	json_t *e;
	json_array_foreach(log, i, e) sum += entry_bytes(e);
	assert_int_equal(sum, 1048576);
	json_decref(log);
	post_entry_of(&s, 65536, base, 10); /* 17 x 65,536: the first goes */
	log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	json_decref(log);
	post_entry_of(&s, 1000, base, 10); /* 1,049,576 > cap: the oldest 65,536 go */
	log = request_log(&s);
	assert_int_equal(json_array_size(log), 16);
	sum = 0;
	json_array_foreach(log, i, e) sum += entry_bytes(e);
	assert_int_equal(sum, 15 * 65536 + 1000);
	json_decref(log);
	assert_int_equal(fks_stop(&s), 0);
}

/* ---- the server-wide budget of bodies in memory ---------------------------------------------- */

/* Before: every body was read whole into memory (8 MiB each) and parsed within its own budget
 * (4 bytes a byte and 1 MiB), their sum unbounded: 250 concurrent 8 MB bodies took 3.5 GB. Now
 * bodies in memory share a server-wide budget (--body-budget-mb, here 128): a body of 8 MiB
 * holds 8 MiB and its parse's 33 MiB from its headers on, so three of them fit; with sixteen
 * sent at once (headers and half the body each), thirteen are answered 503 with Retry-After
 * from their headers, before their bodies, while the three are held. Meanwhile the control
 * plane answers, a small body fits; the three finish (400: their parse passes its budget) and
 * the room is back. The server's peak stays within the budget and 48 MiB. Authentication is
 * decided from the headers first, so this holds for every route, those that need no key too. */
static void test_floods__bodies_in_memory_share_a_server_budget(void **state)
{
	(void)state;
	enum { N = 16, FIT = 3 };
	const char *extra[] = {"--body-budget-mb", "128", NULL};
	fks s;
	start(&s, extra);
	long rss0 = status_kb(s.pid, "VmRSS");
	size_t n = 8 * MIB - 16;
	char *arrays = empty_arrays(n);
	n = strlen(arrays);
	const char *hdr = "X-API-Key: " KEY "\r\nContent-Type: application/json\r\n";
	int fds[N];
	for (int i = 0; i < N; i++)
		fds[i] = body_begin(s.port, "/v2/sandboxes", hdr, arrays, n, n / 2);
	/* the refusals come from the headers; the three admitted wait for the rest of their body */
	int refused = 0, other = 0;
	bool answered[N] = {false};
	long t0 = fk_mono_ms();
	while (refused + other < N - FIT && fk_mono_ms() - t0 < 30000) {
		bool ready[N];
		if (poll_unanswered(fds, answered, ready, N, 1000) <= 0)
			continue;
		for (int i = 0; i < N; i++)
			if (ready[i]) {
				char head[2048];
				answered[i] = true;
				int st = read_head(fds[i], head, sizeof(head), 5000);
				if (st == 503 && strstr(head, "\r\nRetry-After: 1\r\n"))
					refused++;
				else
					other++;
			}
	}
	print_message("%d of %d bodies answered 503 from their headers, %d otherwise\n", refused, N,
	              other);
	assert_int_equal(refused, N - FIT);
	assert_int_equal(other, 0);
	/* the control plane answers, a small body fits in what is left */
	const char *h[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	fkr *r = fks_req(&s, "GET", "/v2/sandboxes", h, NULL, 0);
	assert_int_equal(r->status, 200);
	fkr_free(r);
	static const char small[] = "{\"templateID\":\"nosuchtemplate\"}";
	r = fks_req(&s, "POST", "/v2/sandboxes", h, small, strlen(small));
	assert_int_equal(r->status, 404);
	fkr_free(r);
	/* the three held finish: parsed within their budget, refused as too costly */
	for (int i = 0; i < N; i++) {
		if (answered[i]) {
			close(fds[i]);
			continue;
		}
		size_t off = n / 2;
		while (off < n) {
			ssize_t k = send(fds[i], arrays + off, n - off, MSG_NOSIGNAL);
			assert_true(k > 0);
			off += (size_t)k;
		}
		assert_int_equal(fks_read_status(fds[i], 60000), 400);
		close(fds[i]);
	}
	long hwm = status_kb(s.pid, "VmHWM");
	print_message("server RSS %ld kB before, peak %ld kB\n", rss0, hwm);
	RSS_BOUND(hwm - rss0 < (128 + 48) * 1024);
	/* the room is back: a large body is admitted again */
	assert_int_equal(raw_post(s.port, "/v2/sandboxes", hdr, arrays, n), 400);
	free(arrays);
	assert_int_equal(fks_stop(&s), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_floods__unauthenticated_array_bodies_keep_the_server_small),
	    cmocka_unit_test(test_floods__an_authenticated_array_body_is_parsed_within_its_budget),
	    cmocka_unit_test(test_floods__the_log_keeps_no_body_of_a_refused_request),
	    cmocka_unit_test(test_floods__a_log_entry_is_capped_at_64_kib),
	    cmocka_unit_test(test_floods__the_log_is_capped_in_bytes),
	    cmocka_unit_test(test_floods__refused_requests_are_answered_from_their_headers),
	    cmocka_unit_test(
	        test_floods__stalled_bodies_from_many_addresses_do_not_starve_a_client),
	    cmocka_unit_test(test_floods__a_stalled_body_is_cut),
	    cmocka_unit_test(test_floods__the_port_proxy_streams_large_answers),
	    cmocka_unit_test(test_floods__start_fields_are_bounded),
	    cmocka_unit_test(test_floods__log_lines_are_bounded),
	    cmocka_unit_test(test_floods__a_build_log_keeps_its_last_mib),
	    cmocka_unit_test(test_floods__log_lines_escape_control_bytes),
	    cmocka_unit_test(test_floods__requests_to_a_silent_box_port_are_capped),
	    cmocka_unit_test(test_floods__bodies_in_memory_share_a_server_budget),
	    cmocka_unit_test(test_floods__the_port_proxy_streams_request_bodies),
	    cmocka_unit_test(test_floods__clients_that_leave_free_their_slots),
	    cmocka_unit_test(test_floods__a_client_that_leaves_a_body_frees_its_request),
	};
	/* FK_TEST_FILTER picks a few (tests/support/cmocka_run.c) */
	return cmocka_run_group_tests_name("fake_floods", tests, NULL, NULL);
}
