/*
 * tests/fake/net/net_support.c — the sandbox-network tests' upstream (a child in its own network
 * namespace serving HTTP and TLS, wired to the host by a veth pair) and the box helpers they
 * share (net_test.h).
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

fk_rt *rt;
bool have_net; /* root, namespaces, sk_lookup, the upstream up */
pid_t up_pid = -1;
char ip_host[16], ip_a[16], ip_b[16]; /* host side of the veth; upstream's two */
char veth[16];

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

bool upstream_start(void)
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
void expect(const char *box, const char *want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	expect_va(box, "sandbox", want, fmt, ap);
	va_end(ap);
}

/* The same as `user`. */
void expect_as(const char *box, const char *user, const char *want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	expect_va(box, user, want, fmt, ap);
	va_end(ap);
}

void box_new(const char *id, bool none, const char *const *allow, size_t n_allow,
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

char *fmt(const char *f, ...)
{
	char *s;
	va_list ap;
	va_start(ap, f);
	assert_true(vasprintf(&s, f, ap) >= 0);
	va_end(ap);
	return s;
}
