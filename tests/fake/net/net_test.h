/*
 * tests/fake/net/net_test.h — what the sandbox-network test program's files share: the
 * runtime and the upstream's addresses (set by the group setup in test_net.c), the upstream
 * itself and the box helpers (net_support.c).
 */
#ifndef FK_TEST_NET_TEST_H
#define FK_TEST_NET_TEST_H

#include "runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NEED_NET()                                                                                 \
	do {                                                                                       \
		if (!have_net) {                                                                   \
			fprintf(stderr, "SKIP: needs root, namespaces, BPF sk_lookup\n");          \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

#define CURL "curl -sS -m 20 "
/* prints "refused" when curl fails, whatever the error, and nothing of curl's own */
#define REFUSED " >/dev/null 2>&1; [ $? -ne 0 ] && echo refused"
#define IFACES  "awk 'NR>2{sub(\":\",\"\",$1);print $1}' /proc/net/dev"

extern fk_rt *rt;
extern bool have_net;
extern pid_t up_pid;
extern char ip_host[16], ip_a[16], ip_b[16];
extern char veth[16];
bool upstream_start(void);
void expect(const char *box, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void expect_as(const char *box, const char *user, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void box_new(const char *id, bool none, const char *const *allow, size_t n_allow,
             const char *const *deny, size_t n_deny);
char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
extern char *hosts[4];

/* The tests of the other files, which main lists. */
void test_net__update_applies_live(void **state);
void test_net__update_lets_a_none_box_out(void **state);
void test_net__tls_sni(void **state);
void test_net__http_host(void **state);
void test_net__rules(void **state);
void test_net__dns_messages(void **state);

#endif
