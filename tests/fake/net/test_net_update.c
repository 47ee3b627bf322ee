/*
 * tests/fake/net/test_net_update.c — E2B's network update on a running box: new connections get
 * the new rules while held ones keep theirs; a none box let out. Part of test_fake_net (main in
 * test_net.c).
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "egress.h"
#include "net_test.h"
#include "runtime.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ network update */

/* A connection a box holds open to <ip>:8080: connected, then the request when told. */
typedef struct held {
	fk_proc *p;
	fk_sub *s;
	box_result r;
} held;

/* Established TCP connections to port 8080 in the upstream's namespace. */
static int upstream_conns_8080(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd),
	         "nsenter -t %d -n ss -Htn state established '( sport = :8080 )' | wc -l",
	         (int)up_pid);
	FILE *f = popen(cmd, "r");
	int n = -1;
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

/* Next output of the held process, appended to h->r; false at its end. */
static bool held_next(held *h)
{
	int64_t deadline = fk_mono_ms() + 120000;
	for (;;) {
		fk_event ev;
		int rc = fk_sub_next(h->s, &ev, 1000);
		if (rc == FK_ETIMEOUT) {
			assert_true(fk_mono_ms() < deadline);
			continue;
		}
		assert_int_equal(rc, 0);
		if (ev.type == FK_EV_END) {
			h->r.status = ev.wait_status;
			fk_event_clear(&ev);
			return false;
		}
		box_append(&h->r.out, &h->r.out_len, ev.data, ev.len);
		fk_event_clear(&ev);
		return true;
	}
}

/* Opens the connection (as the sandbox user) and waits until the proxy has let it through:
 * the upstream's side is established. */
static void held_open(held *h, const char *box, const char *ip)
{
	/* the upstream closes each connection right after its answer: let the last ones go */
	int64_t deadline = fk_mono_ms() + 30000;
	while (upstream_conns_8080() != 0) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20);
	}
	char *script = fmt("exec 3<>/dev/tcp/%s/8080 || exit 1; echo connected; read -r go; "
	                   "printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; tail -n 1 <&3",
	                   ip);
	const char *args[] = {"-c", script};
	fk_proc_spec spec = {
	    .cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox", .stdin_pipe = true};
	fk_err err = {0};
	memset(h, 0, sizeof(*h));
	box_append(&h->r.out, &h->r.out_len, "", 0);
	assert_int_equal(fk_proc_start(rt, box, &spec, &h->p, &h->s, &err), 0);
	free(script);
	while (strcmp(h->r.out, "connected\n") != 0)
		assert_true(held_next(h));
	deadline = fk_mono_ms() + 30000;
	while (upstream_conns_8080() != 1) {
		assert_true(fk_mono_ms() < deadline);
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* Sends the request; the held connection's whole output must be `want`. */
static void held_finish(held *h, const char *box, const char *want)
{
	fk_err err = {0};
	assert_int_equal(fk_proc_write_stdin(rt, box, fk_proc_pid(h->p), "go\n", 3, &err), 0);
	while (held_next(h))
		;
	assert_string_equal(h->r.out, want);
	assert_int_equal(h->r.status, 0);
	fk_sub_free(h->s);
	fk_proc_unref(h->p);
	free(h->r.out);
}

static void set_egress(const char *box, const char *const *allow, size_t n_allow,
                       const char *const *deny, size_t n_deny)
{
	fk_err err = {0};
	int rc = fk_box_set_egress(rt, box, allow, n_allow, deny, n_deny, &err);
	if (rc != 0)
		fprintf(stderr, "set egress of %s: %s\n", box, err.message);
	assert_int_equal(rc, 0);
}

/* E2B's PUT /sandboxes/{id}/network on a running box: new connections get the new rules at
 * once, a connection opened before keeps the rules it was accepted under, and the rules stay
 * through pause (freeze), resume (thaw) and a cold boot. */
void test_net__update_applies_live(void **state)
{
	NEED_NET();
	box_new("upd", false, NULL, 0, NULL, 0); /* open */
	char *to_a = fmt("upstream %s 8080 %s\n", ip_a, ip_a);
	char *to_b = fmt("upstream %s 8080 %s\n", ip_b, ip_b);
	char *held_b = fmt("connected\nupstream %s 8080 -\n", ip_b);
	expect("upd", to_b, CURL "http://%s:8080/", ip_b);
	held h;
	held_open(&h, "upd", ip_b);
	/* allowed -> denied: ip_b only; the connection opened under the open rules goes on (its
	 * request right after the update: the upstream waits 5 s for it), a new one is refused */
	const char *deny_b[] = {ip_b};
	set_egress("upd", NULL, 0, deny_b, 1);
	held_finish(&h, "upd", held_b);
	expect("upd", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	expect("upd", to_a, CURL "http://%s:8080/", ip_a);
	/* denied -> allowed: ip_b only, everything else denied */
	char *cidr_b = fmt("%s/32", ip_b);
	const char *allow_b[] = {cidr_b}, *deny_all[] = {"0.0.0.0/0"};
	set_egress("upd", allow_b, 1, deny_all, 1);
	expect("upd", to_b, CURL "http://%s:8080/", ip_b);
	expect("upd", "refused\n", CURL "http://%s:8080/" REFUSED, ip_a);
	/* by name now: allowed.test only (its address is ip_a) */
	const char *allow_name[] = {"allowed.test"};
	set_egress("upd", allow_name, 1, deny_all, 1);
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("upd", w, CURL "http://allowed.test/");
	expect("upd", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	expect("upd", "no other.test\n", "getent hosts other.test || echo no other.test");
	/* pause and resume keep them; so does a cold boot (a new proxy) */
	fk_err err = {0};
	assert_int_equal(fk_box_freeze(rt, "upd", &err), 0);
	assert_int_equal(fk_box_thaw(rt, "upd", &err), 0);
	expect("upd", w, CURL "http://allowed.test/");
	expect("upd", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	assert_int_equal(fk_box_reboot(rt, "upd", &err), 0);
	expect("upd", w, CURL "http://allowed.test/");
	expect("upd", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	/* a bad rule changes nothing */
	const char *bad[] = {"not-an-address"};
	assert_int_equal(fk_box_set_egress(rt, "upd", NULL, 0, bad, 1, &err), FK_EINVAL);
	assert_string_equal(err.message,
	                    "egress rules: deny_out entries must be IP addresses or CIDR blocks");
	expect("upd", w, CURL "http://allowed.test/");
	assert_int_equal(fk_box_set_egress(rt, "no-such-box", NULL, 0, NULL, 0, &err),
	                 FK_ENOTFOUND);
	assert_int_equal(fk_box_destroy(rt, "upd", NULL), 0);
	free(w);
	free(cidr_b);
	free(held_b);
	free(to_b);
	free(to_a);
}

/* A box created with egress none that an update lets out gets its way out then (the
 * namespace's AnyIP route, its own address, the proxy); back to deny-all, nothing goes out,
 * across a cold boot too. */
void test_net__update_lets_a_none_box_out(void **state)
{
	NEED_NET();
	box_new("upn", true, NULL, 0, NULL, 0);
	expect("upn", "127.0.0.1/8\n", "ip -4 -o addr show | awk '{print $4}'");
	expect("upn", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	set_egress("upn", NULL, 0, NULL, 0); /* open */
	expect("upn", "lo\n", IFACES);
	expect("upn", "127.0.0.1/8\n169.254.0.21/32\n", "ip -4 -o addr show | awk '{print $4}'");
	char *to_b = fmt("upstream %s 8080 %s\n", ip_b, ip_b);
	expect("upn", to_b, CURL "http://%s:8080/", ip_b);
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("upn", w, CURL "http://allowed.test/");
	const char *deny_all[] = {"0.0.0.0/0"};
	set_egress("upn", NULL, 0, deny_all, 1);
	expect("upn", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	expect("upn", "refused\n", CURL "http://allowed.test/" REFUSED);
	fk_err err = {0};
	assert_int_equal(fk_box_reboot(rt, "upn", &err), 0);
	expect("upn", "refused\n", CURL "http://%s:8080/" REFUSED, ip_b);
	set_egress("upn", NULL, 0, NULL, 0);
	expect("upn", to_b, CURL "http://%s:8080/", ip_b);
	assert_int_equal(fk_box_destroy(rt, "upn", NULL), 0);
	free(w);
	free(to_b);
}
