/*
 * tests/fake/net/test_net_parsers.c — the egress proxy's parsers on their own: TLS SNI from a
 * real ClientHello, the HTTP Host, the allow/deny rules and DNS messages. Part of test_fake_net
 * (main in test_net.c).
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

void test_net__tls_sni(void **state)
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

void test_net__http_host(void **state)
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

void test_net__rules(void **state)
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

void test_net__dns_messages(void **state)
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
