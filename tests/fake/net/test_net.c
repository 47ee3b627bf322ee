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
 *
 * This file: egress none, open and allowlist, no sk_lookup, low ports, the host and other
 * boxes out of reach, hostile boxes, lifecycle; the setup and main. The others:
 * test_net_update.c (a running box's network update), test_net_parsers.c (the proxy's SNI,
 * Host, rule and DNS parsers), net_support.c (the upstream and the box helpers).
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

/* ------------------------------------------------------------ setup */

static char state_dir[] = "/tmp/fk-net-XXXXXX";
char *hosts[4];

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
