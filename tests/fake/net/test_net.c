/*
 * tests/fake/net/test_net.c — sandbox networks (fake-e2b/README.md "Isolation"): egress none is
 * loopback only; allowlist and open reach out only through the egress proxy, which enforces E2B's
 * rules (HTTP Host, TLS SNI, CIDRs) plus "the address must be the name's", and never lets a box
 * reach the host's own addresses or another box.
 *
 * Nothing leaves the machine: the upstream is a child process of this test in its own network
 * namespace, joined to the host by a veth pair on a /29 of 198.18.0.0/15 (the benchmarking
 * range: neither private nor routed), serving HTTP on 80 and 8080 and TLS on 443 (a
 * self-signed certificate made here). Each answer says which address, port and name it
 * served: "upstream <address> <port> <Host or SNI>". The runtime resolves the test's names
 * through fk_rt_options.egress_hosts. Runs as root; skips without isolation or sk_lookup.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "egress.h"
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

static fk_rt *rt;
static bool have_net; /* root, namespaces, sk_lookup, the upstream up */
static pid_t up_pid = -1;
static char ip_host[16], ip_a[16], ip_b[16]; /* host side of the veth; upstream's two */
static char veth[16];

#define NEED_NET()                                                                                 \
	do {                                                                                       \
		if (!have_net) {                                                                   \
			fprintf(stderr, "SKIP: needs root, namespaces, BPF sk_lookup\n");          \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* ------------------------------------------------------------ the upstream */

static SSL_CTX *self_signed_ctx(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!key || !x || !ctx)
		return NULL;
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"upstream", -1, -1,
	                           0);
	X509_set_issuer_name(x, n);
	if (!X509_sign(x, key, EVP_sha256()) || SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, key) != 1)
		return NULL;
	X509_free(x);
	EVP_PKEY_free(key);
	return ctx;
}

/* The Host header's value without its port, or "-". */
static void host_of(const char *req, char *out, size_t cap)
{
	const char *h = strcasestr(req, "\r\nhost:");
	snprintf(out, cap, "-");
	if (!h)
		return;
	h += 7;
	while (*h == ' ')
		h++;
	size_t n = strcspn(h, ":\r");
	if (n < cap) {
		memcpy(out, h, n);
		out[n] = 0;
	}
}

static void upstream_answer(int c, SSL_CTX *ctx, uint16_t port)
{
	struct timeval tv = {5, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	SSL *ssl = NULL;
	if (port == 443) {
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, c);
		if (SSL_accept(ssl) != 1) {
			SSL_free(ssl);
			return;
		}
	}
	char req[8192];
	size_t len = 0;
	while (len < sizeof(req) - 1) {
		int n = ssl ? SSL_read(ssl, req + len, (int)(sizeof(req) - 1 - len))
		            : (int)recv(c, req + len, sizeof(req) - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		req[len] = 0;
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[len] = 0;
	char name[256], body[512], resp[1024];
	struct sockaddr_in me;
	socklen_t ml = sizeof(me);
	getsockname(c, (struct sockaddr *)&me, &ml);
	char addr[16];
	inet_ntop(AF_INET, &me.sin_addr, addr, sizeof(addr));
	if (ssl) {
		const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
		snprintf(name, sizeof(name), "%s", sni ? sni : "-");
	} else {
		host_of(req, name, sizeof(name));
	}
	int bl = snprintf(body, sizeof(body), "upstream %s %u %s\n", addr, (unsigned)port, name);
	int rl = snprintf(resp, sizeof(resp),
	                  "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
	                  bl, body);
	if (ssl) {
		SSL_write(ssl, resp, rl);
		SSL_shutdown(ssl);
		SSL_free(ssl);
	} else if (send(c, resp, (size_t)rl, MSG_NOSIGNAL) < 0) {
		return;
	}
}

/* The child: its own network namespace (the parent wires it), HTTP on 80 and 8080, TLS on
 * 443, one connection at a time, until killed. */
static void upstream_main(int ready_w)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNET) < 0)
		_exit(2);
	SSL_CTX *ctx = self_signed_ctx();
	static const uint16_t ports[3] = {80, 443, 8080};
	struct pollfd p[3];
	for (int i = 0; i < 3; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int one = 1;
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(ports[i])};
		if (!ctx || s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    listen(s, 64) < 0)
			_exit(3);
		p[i] = (struct pollfd){.fd = s, .events = POLLIN};
	}
	if (write(ready_w, "r", 1) != 1)
		_exit(4);
	close(ready_w);
	for (;;) {
		if (poll(p, 3, -1) < 0)
			continue;
		for (int i = 0; i < 3; i++) {
			if (!p[i].revents)
				continue;
			int c = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			upstream_answer(c, ctx, ports[i]);
			close(c);
		}
	}
}

static int shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int shell(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	int st = system(cmd);
	if (st != 0)
		fprintf(stderr, "`%s`: status %d\n", cmd, st);
	free(cmd);
	return st == 0 ? 0 : -1;
}

static bool tcp_reachable(const char *ip, uint16_t port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, ip, &a.sin_addr);
	bool ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

static bool upstream_start(void)
{
	/* a /29 of 198.18.0.0/15 chosen by pid: concurrent runs do not share a subnet */
	uint32_t base = 0xc6120000u + ((uint32_t)getpid() % 16384u) * 8u;
	struct in_addr a;
	a.s_addr = htonl(base + 1);
	inet_ntop(AF_INET, &a, ip_host, sizeof(ip_host));
	a.s_addr = htonl(base + 2);
	inet_ntop(AF_INET, &a, ip_a, sizeof(ip_a));
	a.s_addr = htonl(base + 3);
	inet_ntop(AF_INET, &a, ip_b, sizeof(ip_b));
	snprintf(veth, sizeof(veth), "fkn%dh", (int)(getpid() % 10000000));
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return false;
	up_pid = fork();
	if (up_pid == 0) {
		close(pfd[0]);
		upstream_main(pfd[1]);
	}
	close(pfd[1]);
	char c;
	bool ok = up_pid > 0 && read(pfd[0], &c, 1) == 1;
	close(pfd[0]);
	if (!ok)
		return false;
	if (shell("ip link add %s type veth peer name %su netns %d", veth, veth, (int)up_pid) < 0 ||
	    shell("ip addr add %s/29 dev %s && ip link set %s up", ip_host, veth, veth) < 0 ||
	    shell("nsenter -t %d -n sh -c 'ip link set lo up && ip addr add %s/29 dev %su && "
	          "ip addr add %s/29 dev %su && ip link set %su up'",
	          (int)up_pid, ip_a, veth, ip_b, veth, veth) < 0)
		return false;
	int64_t deadline = fk_mono_ms() + 30000;
	while (!tcp_reachable(ip_a, 80) || !tcp_reachable(ip_b, 8080)) {
		if (fk_mono_ms() > deadline)
			return false;
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return true;
}

/* ------------------------------------------------------------ boxes */

/* The output of `script` as `user`, which must be `want`. */
static void expect_va(const char *box, const char *user, const char *want, const char *fmt,
                      va_list ap) __attribute__((format(printf, 4, 0)));
static void expect_va(const char *box, const char *user, const char *want, const char *fmt,
                      va_list ap)
{
	char *script;
	assert_true(vasprintf(&script, fmt, ap) >= 0);
	box_result r;
	assert_int_equal(box_bash(rt, box, user, true, &r, "%s", script), 0);
	if (strcmp(r.out, want) != 0)
		fprintf(stderr, "in %s as %s: `%s`\n  got:  %s\n  want: %s\n", box, user, script,
		        r.out, want);
	assert_string_equal(r.out, want);
	box_result_clear(&r);
	free(script);
}

/* The output of `script` as the sandbox user, which must be `want`. */
static void expect(const char *box, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void expect(const char *box, const char *want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	expect_va(box, "sandbox", want, fmt, ap);
	va_end(ap);
}

/* The same as `user`. */
static void expect_as(const char *box, const char *user, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void expect_as(const char *box, const char *user, const char *want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	expect_va(box, user, want, fmt, ap);
	va_end(ap);
}

#define CURL "curl -sS -m 20 "
/* prints "refused" when curl fails, whatever the error, and nothing of curl's own */
#define REFUSED " >/dev/null 2>&1; [ $? -ne 0 ] && echo refused"

static void box_new(const char *id, bool none, const char *const *allow, size_t n_allow,
                    const char *const *deny, size_t n_deny)
{
	fk_box_options o = {.net_none = none,
	                    .allow_out = allow,
	                    .n_allow_out = n_allow,
	                    .deny_out = deny,
	                    .n_deny_out = n_deny};
	fk_err err = {0};
	int rc = fk_box_create(rt, id, &o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	char *s;
	va_list ap;
	va_start(ap, f);
	assert_true(vasprintf(&s, f, ap) >= 0);
	va_end(ap);
	return s;
}

#define IFACES "awk 'NR>2{sub(\":\",\"\",$1);print $1}' /proc/net/dev"

/* ------------------------------------------------------------ tests */

static void test_net__none_is_loopback_only(void **state)
{
	NEED_NET();
	box_new("none", true, NULL, 0, NULL, 0);
	expect("none", "lo\n", IFACES);
	expect("none", "refused\n", CURL "http://%s/" REFUSED, ip_a);
	expect("none", "refused\n", CURL "http://allowed.test/" REFUSED);
	assert_int_equal(fk_box_destroy(rt, "none", NULL), 0);
}

static void test_net__open_reaches_the_upstream(void **state)
{
	NEED_NET();
	box_new("open", false, NULL, 0, NULL, 0);
	expect("open", "lo\n", IFACES);
	expect("open", "127.0.0.1/8\n169.254.0.21/32\n", "ip -4 -o addr show | awk '{print $4}'");
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("open", w, CURL "http://allowed.test/");
	free(w);
	w = fmt("upstream %s 443 allowed.test\n", ip_a);
	expect("open", w, CURL "-k https://allowed.test/");
	free(w);
	w = fmt("upstream %s 8080 %s\n", ip_b, ip_b);
	expect("open", w, CURL "http://%s:8080/", ip_b);
	free(w);
	/* open checks no name: the address asked for is the one reached */
	w = fmt("upstream %s 443 allowed.test\n", ip_b);
	expect("open", w, CURL "-k --resolve allowed.test:443:%s https://allowed.test/", ip_b);
	free(w);
	assert_int_equal(fk_box_destroy(rt, "open", NULL), 0);
}

static void test_net__allowlist_by_host_name(void **state)
{
	NEED_NET();
	const char *allow[] = {"allowed.test", "*.wild.test"}, *deny[] = {"0.0.0.0/0"};
	box_new("allow", false, allow, 2, deny, 1);
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("allow", w, CURL "http://allowed.test/");
	free(w);
	w = fmt("upstream %s 443 allowed.test\n", ip_a);
	expect("allow", w, CURL "-k https://allowed.test/");
	expect("allow", w, CURL "-k --resolve allowed.test:443:%s https://allowed.test/", ip_a);
	free(w);
	w = fmt("upstream %s 443 a.wild.test\n", ip_a);
	expect("allow", w, CURL "-k https://a.wild.test/");
	free(w);
	/* the name is allowed, the address is not one of its: refused (beyond E2B) */
	expect("allow", "refused\n",
	       CURL "-k --resolve allowed.test:443:%s https://allowed.test/" REFUSED, ip_b);
	expect("allow", "refused\n",
	       CURL "--resolve allowed.test:80:%s http://allowed.test/" REFUSED, ip_b);
	/* names not allowed: by DNS, by SNI, by Host */
	expect("allow", "refused\n", CURL "http://other.test/" REFUSED);
	expect("allow", "refused\n", CURL "-k https://wild.test/" REFUSED);
	expect("allow", "refused\n",
	       CURL "-k --resolve other.test:443:%s https://other.test/" REFUSED, ip_b);
	expect("allow", "refused\n",
	       CURL "-k --resolve wild.test:443:%s https://wild.test/" REFUSED, ip_a);
	expect("allow", "refused\n", CURL "-H 'Host: other.test' http://%s/" REFUSED, ip_a);
	/* TLS without a name, and other ports: CIDR rules only */
	expect("allow", "refused\n", CURL "-k https://%s/" REFUSED, ip_a);
	expect("allow", "refused\n", CURL "http://%s:8080/" REFUSED, ip_a);
	/* the box's DNS answers allowed names only */
	w = fmt("%s allowed.test\nno other.test\n", ip_a);
	expect("allow", w,
	       "getent ahostsv4 allowed.test | awk 'NR==1{print $1, \"allowed.test\"}'; "
	       "getent hosts other.test || echo no other.test");
	free(w);
	assert_int_equal(fk_box_destroy(rt, "allow", NULL), 0);
}

static void test_net__allowlist_by_cidr(void **state)
{
	NEED_NET();
	char *cidr = fmt("%s/32", ip_b);
	const char *allow[] = {cidr}, *deny_all[] = {"0.0.0.0/0"};
	box_new("cidr", false, allow, 1, deny_all, 1);
	char *w = fmt("upstream %s 8080 %s\n", ip_b, ip_b);
	expect("cidr", w, CURL "http://%s:8080/", ip_b);
	expect("cidr", "refused\n", CURL "http://%s:8080/" REFUSED, ip_a);
	assert_int_equal(fk_box_destroy(rt, "cidr", NULL), 0);
	/* deny one address only: the rest stays open */
	char *one = fmt("%s", ip_a);
	const char *deny_a[] = {one};
	box_new("deny", false, NULL, 0, deny_a, 1);
	expect("deny", w, CURL "http://%s:8080/", ip_b);
	expect("deny", "refused\n", CURL "http://%s:8080/" REFUSED, ip_a);
	assert_int_equal(fk_box_destroy(rt, "deny", NULL), 0);
	free(w);
	free(one);
	free(cidr);
}

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
static void test_net__update_applies_live(void **state)
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
static void test_net__update_lets_a_none_box_out(void **state)
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

/* Without BPF sk_lookup (forced) the runtime refuses boxes with egress allowlist or open,
 * which would share the host's network, unless told it may (unsafe_shared_network). */
static void test_net__no_sk_lookup_refuses(void **state)
{
	NEED_NET();
	char dir[] = "/tmp/fk-net-noskl-XXXXXX";
	assert_non_null(mkdtemp(dir));
	for (int unsafe = 0; unsafe < 2; unsafe++) {
		fk_rt *r2 = NULL;
		fk_rt_options o = {
		    .state_dir = dir, .no_sk_lookup = true, .unsafe_shared_network = unsafe == 1};
		fk_err err = {0};
		assert_int_equal(fk_rt_new(&r2, &o, &err), 0);
		assert_false(fk_rt_egress_isolated(r2));
		assert_int_equal(fk_rt_egress_allowed(r2), unsafe == 1);
		const char *deny_all[] = {"0.0.0.0/0"};
		fk_box_options open = {0}, none = {.net_none = true};
		int rc = fk_box_create(r2, "open", &open, &err);
		if (unsafe) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, FK_ESTATE);
			assert_string_equal(err.message, FK_EGRESS_REFUSED_MSG);
			assert_false(fk_box_exists(r2, "open", NULL));
			assert_int_equal(fk_box_create(r2, "nul", NULL, &err), FK_ESTATE);
		}
		assert_int_equal(fk_box_create(r2, "none", &none, &err), 0);
		assert_int_equal(fk_box_set_egress(r2, "none", NULL, 0, NULL, 0, &err), FK_ESTATE);
		assert_string_equal(err.message, FK_EGRESS_REFUSED_MSG);
		assert_int_equal(fk_box_set_egress(r2, "none", NULL, 0, deny_all, 1, &err), 0);
		fk_rt_free(r2);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* bind() to ports 80, 1023, 1024 over IPv4 and IPv6: "ok" or the errno's name, one line each */
#define BIND_PY                                                                                    \
	"python3 - <<'EOF'\n"                                                                      \
	"import errno, socket\n"                                                                   \
	"for fam, host, name in ((socket.AF_INET, '0.0.0.0', 'inet'), "                            \
	"(socket.AF_INET6, '::', 'inet6')):\n"                                                     \
	"    for port in (80, 1023, 1024):\n"                                                      \
	"        s = socket.socket(fam, socket.SOCK_STREAM)\n"                                     \
	"        try:\n"                                                                           \
	"            s.bind((host, port))\n"                                                       \
	"            r = 'ok'\n"                                                                   \
	"        except OSError as e:\n"                                                           \
	"            r = errno.errorcode[e.errno]\n"                                               \
	"        s.close()\n"                                                                      \
	"        print(name, port, r)\n"                                                           \
	"EOF\n"

#define BIND_ALL                                                                                   \
	"inet 80 ok\ninet 1023 ok\ninet 1024 ok\ninet6 80 ok\ninet6 1023 ok\ninet6 1024 ok\n"
#define BIND_HIGH                                                                                  \
	"inet 80 EACCES\ninet 1023 EACCES\ninet 1024 ok\ninet6 80 EACCES\ninet6 1023 EACCES\n"     \
	"inet6 1024 ok\n"

/* Ports below 1024 as on E2B's VMs (Linux's default net.ipv4.ip_unprivileged_port_start 1024,
 * which E2B keeps): a box's root binds them, its other users cannot (EACCES), over IPv4 and
 * IPv6, with egress none and open, after a reboot too. Root inside has no capability over the
 * box's network namespace (the host's user namespace owns it): a BPF cgroup bind program lets
 * the box's root, and only it, past the check. */
static void test_net__ports_below_1024_root_only(void **state)
{
	NEED_NET();
	box_new("p-none", true, NULL, 0, NULL, 0);
	box_new("p-open", false, NULL, 0, NULL, 0);
	const char *boxes[] = {"p-none", "p-open"};
	for (int i = 0; i < 2; i++) {
		expect(boxes[i], "1024\n", "cat /proc/sys/net/ipv4/ip_unprivileged_port_start");
		expect(boxes[i], BIND_HIGH, "%s", BIND_PY);
		expect_as(boxes[i], "root", BIND_ALL, "%s", BIND_PY);
	}
	fk_err err = {0};
	assert_int_equal(fk_box_reboot(rt, "p-open", &err), 0);
	expect("p-open", BIND_HIGH, "%s", BIND_PY);
	expect_as("p-open", "root", BIND_ALL, "%s", BIND_PY);
	/* a process of root's that became the sandbox user is the sandbox user */
	expect_as("p-open", "root", "inet 80 EACCES\n",
	          "setpriv --reuid=1000 --regid=1000 --clear-groups python3 -c \"import socket, "
	          "errno\ntry:\n    socket.socket().bind(('0.0.0.0', 80)); print('inet 80 ok')\n"
	          "except OSError as e:\n    print('inet 80', errno.errorcode[e.errno])\"");
	assert_int_equal(fk_box_destroy(rt, "p-none", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "p-open", NULL), 0);
}

/* A listener on the host (like fake-e2b's port) on every address, and one in another box:
 * an open box reaches neither, by any address. */
static void test_net__no_host_no_other_box(void **state)
{
	NEED_NET();
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 16), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	unsigned port = ntohs(a.sin_port);

	box_new("peer", false, NULL, 0, NULL, 0);
	box_new("ho", false, NULL, 0, NULL, 0);
	const char *args[] = {"-c", "import socket,time\n"
	                            "s=socket.socket(); s.bind(('0.0.0.0', 8111)); s.listen()\n"
	                            "while True: c,_=s.accept(); c.sendall(b'peer\\n'); c.close()"};
	fk_proc_spec spec = {.cmd = "/usr/bin/python3", .args = args, .n_args = 2};
	fk_proc *p;
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "peer", &spec, &p, NULL, &err), 0);
	int fd = -1;
	int64_t deadline = fk_mono_ms() + 60000;
	while (fk_box_connect(rt, "peer", 8111, 5000, &fd, &err) != 0) {
		assert_true(fk_mono_ms() < deadline);
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	char buf[8] = {0};
	assert_int_equal(recv(fd, buf, sizeof(buf) - 1, MSG_WAITALL), 5);
	assert_string_equal(buf, "peer\n");
	close(fd);

	/* the peer reaches itself at its address; the other box there finds only itself */
	expect("peer", "peer\n", "cat < /dev/tcp/169.254.0.21/8111");
	expect("ho", "refused\n", "(cat < /dev/tcp/169.254.0.21/8111)" REFUSED);

	/* every IPv4 address of the host, on the host's port and on the peer's */
	struct ifaddrs *ifs, *i;
	assert_int_equal(getifaddrs(&ifs), 0);
	int n = 0;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		char ip[16];
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
		expect("ho", "refused\nrefused\n",
		       CURL "http://%s:%u/" REFUSED "; " CURL "http://%s:8111/" REFUSED, ip, port,
		       ip);
		n++;
	}
	freeifaddrs(ifs);
	assert_true(n >= 2); /* 127.0.0.1 and the veth's */
	expect("ho", "refused\n", CURL "http://%s:%u/" REFUSED, ip_host, port);
	/* nothing reached the host's listener */
	assert_int_equal(accept(l, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	close(l);
	fk_proc_unref(p);
	assert_int_equal(fk_box_destroy(rt, "ho", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "peer", NULL), 0);
}

/* Garbage to the DNS, more connections than the proxy takes, held and never speaking, junk
 * where a Host header should be: the box's egress works afterwards. */
static void test_net__hostile_box_then_normal_use(void **state)
{
	NEED_NET();
	const char *allow[] = {"allowed.test"}, *deny[] = {"0.0.0.0/0"};
	box_new("hostile", false, allow, 1, deny, 1);
	expect(
	    "hostile", "ok\n",
	    "python3 -c '\n"
	    "import os, socket\n"
	    "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	    "for n in range(300): u.sendto(os.urandom(n), (\"8.8.8.8\", 53))\n"
	    "u.sendto(bytes.fromhex(\"123401000001000000000000c00c00010001\"), (\"1.1.1.1\", 53))\n"
	    "held = []\n"
	    "for i in range(150):\n"
	    "    s = socket.socket(); s.settimeout(10)\n"
	    "    try:\n"
	    "        s.connect((\"%s\", 443)); held.append(s)\n"
	    "    except OSError: pass\n"
	    "for s in held: s.close()\n"
	    "g = socket.create_connection((\"%s\", 80), 10)\n"
	    "try:\n"
	    "    g.sendall(os.urandom(40000)); g.recv(10)\n"
	    "except OSError: pass\n"
	    "print(\"ok\")'",
	    ip_a, ip_a);
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("hostile", w, CURL "http://allowed.test/");
	free(w);
	w = fmt("upstream %s 443 allowed.test\n", ip_a);
	expect("hostile", w, CURL "-k https://allowed.test/");
	free(w);
	assert_int_equal(fk_box_destroy(rt, "hostile", NULL), 0);
}

static void test_net__root_cannot_reconfigure(void **state)
{
	NEED_NET();
	box_new("root", false, NULL, 0, NULL, 0);
	box_result r;
	assert_int_equal(box_bash(rt, "root", "root", true, &r,
	                          "ip route del local default table local 2>/dev/null && echo DEL; "
	                          "ip addr add 198.18.255.1/32 dev lo 2>/dev/null && echo ADD; "
	                          "ip link add fkx type dummy 2>/dev/null && echo LINK; "
	                          "ip link set lo down 2>/dev/null && echo DOWN; echo done"),
	                 0);
	assert_string_equal(r.out, "done\n");
	free(r.out);
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("root", w, CURL "http://allowed.test/");
	free(w);
	assert_int_equal(fk_box_destroy(rt, "root", NULL), 0);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* Pause, resume and reboot keep egress working; destroy leaves no socket behind. Also prints
 * what a box's network costs at create. */
static void test_net__lifecycle_and_cost(void **state)
{
	NEED_NET();
	int fds = count_fds();
	box_new("life", false, NULL, 0, NULL, 0);
	char *w = fmt("upstream %s 80 allowed.test\n", ip_a);
	expect("life", w, CURL "http://allowed.test/");
	assert_int_equal(fk_box_freeze(rt, "life", NULL), 0);
	assert_int_equal(fk_box_thaw(rt, "life", NULL), 0);
	expect("life", w, CURL "http://allowed.test/");
	assert_int_equal(fk_box_reboot(rt, "life", NULL), 0);
	expect("life", w, CURL "http://allowed.test/");
	free(w);
	assert_int_equal(fk_box_destroy(rt, "life", NULL), 0);
	assert_int_equal(count_fds(), fds);

	int64_t t[2] = {0, 0};
	for (int k = 0; k < 10; k++) {
		char id[16];
		snprintf(id, sizeof(id), "cost%d", k);
		int64_t t0 = fk_mono_ms();
		box_new(id, k % 2 == 0, NULL, 0, NULL, 0);
		t[k % 2] += fk_mono_ms() - t0;
		assert_int_equal(fk_box_destroy(rt, id, NULL), 0);
	}
	fprintf(stderr, "create: egress none %.1f ms, open %.1f ms (mean of 5)\n", t[0] / 5.0,
	        t[1] / 5.0);
	assert_int_equal(count_fds(), fds);
}

/* ------------------------------------------------------------ the parsers */

/* A real ClientHello for `name`, from OpenSSL into a memory BIO. */
static size_t client_hello(const char *name, uint8_t *out, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	SSL_set_bio(ssl, rb, wb);
	if (name)
		SSL_set_tlsext_host_name(ssl, name);
	assert_int_equal(SSL_connect(ssl), -1); /* wants to read the answer */
	int n = BIO_read(wb, out, (int)cap);
	assert_true(n > 0);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

static void test_net__tls_sni(void **state)
{
	uint8_t ch[4096];
	char name[256];
	size_t n = client_hello("Allowed.Test", ch, sizeof(ch));
	assert_int_equal(fk__egress_tls_sni(ch, n, name, sizeof(name)), 1);
	assert_string_equal(name, "allowed.test");
	for (size_t k = 0; k < n; k++) /* every prefix: "need more" */
		assert_int_equal(fk__egress_tls_sni(ch, k, name, sizeof(name)), 0);
	n = client_hello(NULL, ch, sizeof(ch));
	assert_int_equal(fk__egress_tls_sni(ch, n, name, sizeof(name)), -1);
	assert_int_equal(
	    fk__egress_tls_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name, sizeof(name)), -1);
	/* every single-byte corruption is answered (found, or refused) without overrun */
	n = client_hello("allowed.test", ch, sizeof(ch));
	for (size_t k = 0; k < n; k++) {
		uint8_t save = ch[k];
		ch[k] ^= 0xff;
		int r = fk__egress_tls_sni(ch, n, name, sizeof(name));
		assert_true(r >= -1 && r <= 1);
		ch[k] = save;
	}
}

static void test_net__http_host(void **state)
{
	char name[256];
	const char *ok = "GET / HTTP/1.1\r\nUser-Agent: x\r\nHost:  Example.COM:8080 \r\n\r\n";
	assert_int_equal(fk__egress_http_host((const uint8_t *)ok, strlen(ok), name, sizeof(name)),
	                 1);
	assert_string_equal(name, "example.com");
	assert_int_equal(
	    fk__egress_http_host((const uint8_t *)ok, strlen(ok) - 1, name, sizeof(name)), 0);
	const char *two = "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n";
	assert_int_equal(
	    fk__egress_http_host((const uint8_t *)two, strlen(two), name, sizeof(name)), -1);
	const char *none = "GET / HTTP/1.1\r\nX-Host: a.test\r\n\r\n";
	assert_int_equal(
	    fk__egress_http_host((const uint8_t *)none, strlen(none), name, sizeof(name)), -1);
	const char *bad = "GET / HTTP/1.1\r\nHost: a.test@b.test\r\n\r\n";
	assert_int_equal(
	    fk__egress_http_host((const uint8_t *)bad, strlen(bad), name, sizeof(name)), -1);
	const char *port = "GET / HTTP/1.1\r\nHost: a.test:80x\r\n\r\n";
	assert_int_equal(
	    fk__egress_http_host((const uint8_t *)port, strlen(port), name, sizeof(name)), -1);
}

static void test_net__rules(void **state)
{
	fk_egress e;
	const char *allow[] = {"Example.com", "*.wild.test", "203.0.113.0/24"};
	const char *deny[] = {"0.0.0.0/0"};
	assert_int_equal(fk__egress_parse(&e, allow, 3, deny, 1), 0);
	assert_true(fk__egress_name_allowed(&e, "example.com"));
	assert_false(fk__egress_name_allowed(&e, "www.example.com"));
	assert_true(fk__egress_name_allowed(&e, "a.wild.test"));
	assert_true(fk__egress_name_allowed(&e, "a.b.wild.test"));
	assert_false(fk__egress_name_allowed(&e, "wild.test"));
	assert_false(fk__egress_name_allowed(&e, "xwild.test"));
	uint32_t in = 0xcb007105, out = 0xcb007205; /* 203.0.113.5, 203.0.114.5 */
	assert_true(fk__egress_allows(&e, in, 22, NULL, false));
	assert_false(fk__egress_allows(&e, out, 22, NULL, false));
	assert_true(fk__egress_allows(&e, out, 443, "example.com", true));
	assert_false(fk__egress_allows(&e, out, 443, "example.com", false));
	assert_false(fk__egress_allows(&e, out, 22, "example.com", true));
	assert_true(fk__egress_needs_name(&e, out, 80));
	assert_false(fk__egress_needs_name(&e, in, 80));
	assert_false(fk__egress_needs_name(&e, out, 8080));
	assert_true(fk__egress_may_resolve(&e, "example.com"));
	assert_false(fk__egress_may_resolve(&e, "other.test"));
	fk__egress_free(&e);
	const char *star[] = {"*"};
	assert_int_equal(fk__egress_parse(&e, star, 1, deny, 1), 0);
	assert_true(fk__egress_name_allowed(&e, "anything.test"));
	fk__egress_free(&e);
	/* not a name: matches nothing; IPv6: dropped; a name in deny: refused */
	const char *odd[] = {"exa mple.com", "2001:db8::/32", "*."}, *bad_deny[] = {"example.com"};
	assert_int_equal(fk__egress_parse(&e, odd, 3, deny, 1), 0);
	assert_false(e.open);
	assert_int_equal(e.n_allow_names, 0);
	assert_int_equal(e.n_allow_cidrs, 0);
	assert_false(fk__egress_allows(&e, 0x08080808, 443, NULL, false));
	fk__egress_free(&e);
	assert_int_equal(fk__egress_parse(&e, NULL, 0, bad_deny, 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_true(fk__egress_ip_forbidden(0x7f000001));  /* 127.0.0.1 */
	assert_true(fk__egress_ip_forbidden(0xa9fea9fe));  /* 169.254.169.254 */
	assert_true(fk__egress_ip_forbidden(0xc0a80101));  /* 192.168.1.1 */
	assert_true(fk__egress_ip_forbidden(0x00000000));  /* 0.0.0.0 */
	assert_false(fk__egress_ip_forbidden(0x08080808)); /* 8.8.8.8 */
	assert_false(fk__egress_ip_forbidden(0xc6120001)); /* 198.18.0.1 */
}

static void test_net__dns_messages(void **state)
{
	/* id 0x1234, RD, one question: Allowed.Test A IN */
	static const uint8_t q[] = {0x12, 0x34, 0x01, 0x00, 0,   1,   0,   0,   0,   0,
	                            0,    0,    7,    'A',  'l', 'l', 'o', 'w', 'e', 'd',
	                            4,    'T',  'e',  's',  't', 0,   0,   1,   0,   1};
	char name[256];
	uint16_t type = 0;
	assert_int_equal(fk__egress_dns_question(q, sizeof(q), name, sizeof(name), &type), 0);
	assert_string_equal(name, "allowed.test");
	assert_int_equal(type, 1);
	for (size_t k = 0; k < sizeof(q); k++)
		assert_int_equal(fk__egress_dns_question(q, k, name, sizeof(name), &type), -1);
	uint32_t addrs[2] = {htonl(0xc6120002), htonl(0xc6120003)};
	uint8_t out[256];
	size_t n = fk__egress_dns_reply(q, sizeof(q), 0, addrs, 2, out, sizeof(out));
	assert_int_equal(n, sizeof(q) + 2 * 16);
	static const uint8_t head[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0};
	assert_memory_equal(out, head, sizeof(head));
	static const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 198, 18, 0, 3};
	assert_memory_equal(out + sizeof(q) + 16, rr, sizeof(rr));
	n = fk__egress_dns_reply(q, sizeof(q), 3, NULL, 0, out, sizeof(out));
	assert_int_equal(n, sizeof(q));
	assert_int_equal(out[3], 0x83);
	uint8_t ptr[sizeof(q)];
	memcpy(ptr, q, sizeof(q));
	ptr[12] = 0xc0; /* a compression pointer in a question */
	assert_int_equal(fk__egress_dns_question(ptr, sizeof(ptr), name, sizeof(name), &type), -1);
	memcpy(ptr, q, sizeof(q));
	ptr[15] = 0; /* a NUL inside a label */
	assert_int_equal(fk__egress_dns_question(ptr, sizeof(ptr), name, sizeof(name), &type), -1);
}

/* ------------------------------------------------------------ setup */

static char state_dir[] = "/tmp/fk-net-XXXXXX";
static char *hosts[4];

static int group_setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	assert_non_null(mkdtemp(state_dir));
	bool root = geteuid() == 0;
	if (root && !upstream_start()) {
		fprintf(stderr, "the upstream did not start\n");
		return -1;
	}
	hosts[0] = fmt("allowed.test=%s", ip_a);
	hosts[1] = fmt("other.test=%s", ip_b);
	hosts[2] = fmt("a.wild.test=%s", ip_a);
	hosts[3] = fmt("wild.test=%s", ip_a);
	fk_rt_options o = {.state_dir = state_dir,
	                   .egress_hosts = (const char *const *)hosts,
	                   .n_egress_hosts = 4};
	fk_err err = {0};
	if (fk_rt_new(&rt, &o, &err) != 0) {
		fprintf(stderr, "fk_rt_new: %s\n", err.message);
		return -1;
	}
	have_net = root && fk_rt_isolated(rt) && fk_rt_egress_isolated(rt);
	return 0;
}

static int group_teardown(void **state)
{
	fk_rt_free(rt);
	if (rmdir(state_dir) < 0)
		fprintf(stderr, "state dir %s left: %s\n", state_dir, strerror(errno));
	if (up_pid > 0) {
		kill(up_pid, SIGKILL);
		while (waitpid(up_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < 4; i++)
		free(hosts[i]);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_net__rules),
	    cmocka_unit_test(test_net__tls_sni),
	    cmocka_unit_test(test_net__http_host),
	    cmocka_unit_test(test_net__dns_messages),
	    cmocka_unit_test(test_net__none_is_loopback_only),
	    cmocka_unit_test(test_net__open_reaches_the_upstream),
	    cmocka_unit_test(test_net__allowlist_by_host_name),
	    cmocka_unit_test(test_net__allowlist_by_cidr),
	    cmocka_unit_test(test_net__update_applies_live),
	    cmocka_unit_test(test_net__update_lets_a_none_box_out),
	    cmocka_unit_test(test_net__no_sk_lookup_refuses),
	    cmocka_unit_test(test_net__ports_below_1024_root_only),
	    cmocka_unit_test(test_net__no_host_no_other_box),
	    cmocka_unit_test(test_net__hostile_box_then_normal_use),
	    cmocka_unit_test(test_net__root_cannot_reconfigure),
	    cmocka_unit_test(test_net__lifecycle_and_cost),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
