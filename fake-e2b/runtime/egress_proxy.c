/*
 * fake-e2b/runtime/egress_proxy.c — a box's egress proxy (egress.h): its listening TCP socket
 * and DNS socket live in the box's network namespace, its threads in the server's. One
 * acceptor thread per box; one worker thread per connection or DNS query (at most
 * FK_EGRESS_WORKERS at a time: more are refused). Stopping (reboot, destroy) wakes every
 * worker (the stop pipe in every poll, shutdown() of every socket in a blocking write) and
 * waits for them, so no socket of the box's namespace outlives its PID 1.
 */
#define _GNU_SOURCE
#include "egress.h"
#include "egress_int.h"
#include "linux/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define FK_EGRESS_WORKERS   64
#define FK_EGRESS_NAME_MS   10000 /* wait for the Host header / ClientHello */
#define FK_EGRESS_DIAL_MS   10000 /* connect out */
#define FK_EGRESS_PEEK_MAX  (16384 + 5)
#define FK_EGRESS_MAX_ADDRS 16
#define FK_LISTEN_ADDR      0x7ffffffe /* 127.255.255.254: the proxy's own address in the box */

typedef struct slot {
	bool used;
	int fds[2]; /* client (box side), upstream; -1 when none */
} slot;

struct fk_eproxy {
	fk_rt *rt;
	fk_erules *rules; /* under lock: the rules a new connection or query gets */
	int tcp, udp, link;
	int stop[2];
	pthread_t acceptor;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	int workers;
	bool stopping;
	slot slots[FK_EGRESS_WORKERS];
};

/* Ancillary data of one IP_PKTINFO, aligned as the cmsg macros read it. */
typedef union pktinfo_buf {
	char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
	struct cmsghdr align;
} pktinfo_buf;

typedef struct work {
	fk_eproxy *px;
	fk_erules *rules; /* its own reference: the rules when it was accepted */
	int slot;
	int client; /* TCP: the accepted socket; DNS: -1 */
	/* DNS */
	uint8_t query[512];
	size_t qlen;
	struct sockaddr_in from;
	struct in_addr to;
} work;

/* ------------------------------------------------------------ names and addresses */

int fk__egress_hosts_parse(fk_rt *rt, const char *const *hosts, size_t n, fk_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const char *eq = hosts[i] ? strchr(hosts[i], '=') : NULL;
		fk_ehost h = {0};
		if (!eq || (size_t)(eq - hosts[i]) >= sizeof(h.name))
			return fk__fail(err, FK_EINVAL, EINVAL, "egress host %s: want NAME=IP[,IP]",
			                hosts[i] ? hosts[i] : "(null)");
		memcpy(h.name, hosts[i], (size_t)(eq - hosts[i]));
		if (!fk__egress_name_ok(h.name))
			return fk__fail(err, FK_EINVAL, EINVAL, "egress host %s: bad name",
			                hosts[i]);
		char *list = strdup(eq + 1), *save = NULL;
		if (!list)
			return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			struct in_addr a;
			if (h.n == FK_EHOST_ADDRS || inet_pton(AF_INET, t, &a) != 1) {
				free(list);
				return fk__fail(err, FK_EINVAL, EINVAL,
				                "egress host %s: bad address", hosts[i]);
			}
			h.addrs[h.n++] = a.s_addr;
		}
		free(list);
		if (h.n == 0)
			return fk__fail(err, FK_EINVAL, EINVAL, "egress host %s: no address",
			                hosts[i]);
		fk_ehost *nh = realloc(rt->egress_hosts, (rt->n_egress_hosts + 1) * sizeof(h));
		if (!nh)
			return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		nh[rt->n_egress_hosts++] = h;
		rt->egress_hosts = nh;
	}
	return 0;
}

/* IPv4 addresses of `name` (network order) from the runtime's table, else the host's
 * resolver. */
static size_t resolve(fk_rt *rt, const char *name, uint32_t *out, size_t cap)
{
	for (size_t i = 0; i < rt->n_egress_hosts; i++) {
		const fk_ehost *h = &rt->egress_hosts[i];
		if (!strcmp(h->name, name)) {
			size_t n = h->n < cap ? h->n : cap;
			memcpy(out, h->addrs, n * sizeof(*out));
			return n;
		}
	}
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return 0;
	size_t n = 0;
	for (struct addrinfo *a = res; a && n < cap; a = a->ai_next) {
		uint32_t ip = ((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr;
		bool dup = false;
		for (size_t k = 0; k < n; k++)
			dup = dup || out[k] == ip;
		if (!dup)
			out[n++] = ip;
	}
	freeaddrinfo(res);
	return n;
}

/* One of the host's own addresses (any interface of the server's namespace)? */
static bool host_local(uint32_t ip_n)
{
	struct ifaddrs *ifs;
	if (getifaddrs(&ifs) < 0)
		return true; /* cannot tell: refuse */
	bool hit = false;
	for (struct ifaddrs *i = ifs; i && !hit; i = i->ifa_next)
		hit = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		      ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == ip_n;
	freeifaddrs(ifs);
	return hit;
}

/* ------------------------------------------------------------ workers */

static void slot_set(fk_eproxy *px, int s, int which, int fd)
{
	pthread_mutex_lock(&px->lock);
	px->slots[s].fds[which] = fd;
	if (px->stopping && fd >= 0)
		shutdown(fd, SHUT_RDWR);
	pthread_mutex_unlock(&px->lock);
}

static void reset_close(int fd)
{
	struct linger l = {1, 0}; /* RST: the client sees "connection reset" at once */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* Waits for `events` on fd, or the stop pipe. 1 ready, 0 timeout, -1 stopping/error. */
static int wait_fd(fk_eproxy *px, int fd, short events, int timeout_ms)
{
	struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = px->stop[0], .events = POLLIN}};
	int n;
	while ((n = poll(p, 2, timeout_ms)) < 0 && errno == EINTR)
		;
	if (n < 0 || p[1].revents)
		return -1;
	return n > 0 ? 1 : 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads the connection's first bytes until its host name is known. 1 with `name`, -1. */
static int read_name(fk_eproxy *px, int c, uint16_t port, uint8_t *buf, size_t *len, char *name,
                     size_t cap)
{
	int64_t deadline = mono_ms() + FK_EGRESS_NAME_MS;
	for (;;) {
		int r = port == 443 ? fk__egress_tls_sni(buf, *len, name, cap)
		                    : fk__egress_http_host(buf, *len, name, cap);
		if (r != 0)
			return r;
		int64_t left = deadline - mono_ms();
		if (*len >= FK_EGRESS_PEEK_MAX || left <= 0 ||
		    wait_fd(px, c, POLLIN, (int)left) != 1)
			return -1;
		ssize_t n = recv(c, buf + *len, FK_EGRESS_PEEK_MAX - *len, 0);
		if (n <= 0)
			return -1;
		*len += (size_t)n;
	}
}

static int dial(fk_eproxy *px, uint32_t ip_n, uint16_t port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = ip_n;
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = errno, soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (err != EINPROGRESS || wait_fd(px, s, POLLOUT, FK_EGRESS_DIAL_MS) != 1 ||
		    getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
			close(s);
			return -1;
		}
	}
	int fl = fcntl(s, F_GETFL);
	fcntl(s, F_SETFL, fl & ~O_NONBLOCK);
	return s;
}

static bool send_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Bytes both ways until both sides have ended (a half close is passed on). */
static void relay(fk_eproxy *px, int a, int b)
{
	uint8_t buf[16384];
	bool open[2] = {true, true}; /* a->b, b->a */
	int fds[2] = {a, b};
	while (open[0] || open[1]) {
		struct pollfd p[3] = {{.fd = open[0] ? a : -1, .events = POLLIN},
		                      {.fd = open[1] ? b : -1, .events = POLLIN},
		                      {.fd = px->stop[0], .events = POLLIN}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[2].revents)
			return;
		for (int i = 0; i < 2; i++) {
			if (!open[i] || !p[i].revents)
				continue;
			ssize_t n = recv(fds[i], buf, sizeof(buf), 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				if (n < 0)
					return;
				open[i] = false;
				shutdown(fds[1 - i], SHUT_WR);
				continue;
			}
			if (!send_all(fds[1 - i], buf, (size_t)n))
				return;
		}
	}
}

static void tcp_conn(work *w)
{
	fk_eproxy *px = w->px;
	const fk_egress *rules = &w->rules->e;
	int c = w->client;
	struct sockaddr_in dst;
	socklen_t dl = sizeof(dst);
	if (getsockname(c, (struct sockaddr *)&dst, &dl) < 0 || dst.sin_family != AF_INET) {
		reset_close(c);
		return;
	}
	uint32_t ip_n = dst.sin_addr.s_addr, ip = ntohl(ip_n);
	uint16_t port = ntohs(dst.sin_port);
	uint8_t *peek = NULL;
	size_t peek_len = 0;
	char name[256];
	bool ok = !fk__egress_ip_forbidden(ip) && !host_local(ip_n);
	if (ok && fk__egress_needs_name(rules, ip, port)) {
		peek = malloc(FK_EGRESS_PEEK_MAX);
		bool named =
		    peek && read_name(px, c, port, peek, &peek_len, name, sizeof(name)) == 1;
		bool has_ip = false;
		if (named && fk__egress_name_allowed(rules, name)) {
			uint32_t addrs[FK_EGRESS_MAX_ADDRS];
			size_t n = resolve(px->rt, name, addrs, FK_EGRESS_MAX_ADDRS);
			for (size_t i = 0; i < n; i++)
				has_ip = has_ip || addrs[i] == ip_n;
		}
		ok = fk__egress_allows(rules, ip, port, named ? name : NULL, has_ip);
	} else if (ok) {
		ok = fk__egress_allows(rules, ip, port, NULL, false);
	}
	int up = ok ? dial(px, ip_n, port) : -1;
	if (up < 0) {
		free(peek);
		reset_close(c);
		return;
	}
	slot_set(px, w->slot, 1, up);
	if (send_all(up, peek, peek_len))
		relay(px, c, up);
	free(peek);
	slot_set(px, w->slot, 1, -1);
	close(up);
	close(c);
}

static void dns_query(work *w)
{
	fk_eproxy *px = w->px;
	char name[256];
	uint16_t qtype;
	uint32_t addrs[FK_EGRESS_MAX_ADDRS];
	size_t n = 0;
	int rcode = 0;
	if (fk__egress_dns_question(w->query, w->qlen, name, sizeof(name), &qtype) < 0) {
		rcode = 1; /* FORMERR */
	} else if (!fk__egress_may_resolve(&w->rules->e, name)) {
		rcode = 3; /* NXDOMAIN */
	} else if (qtype == 1) {
		n = resolve(px->rt, name, addrs, 8);
		rcode = n ? 0 : 3;
	}
	uint8_t out[512 + 8 * 16];
	size_t len = fk__egress_dns_reply(w->query, w->qlen, rcode, addrs, n, out, sizeof(out));
	if (!len)
		return;
	pktinfo_buf cbuf; /* aligned for struct cmsghdr */
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = {out, len};
	struct msghdr m = {.msg_name = &w->from,
	                   .msg_namelen = sizeof(w->from),
	                   .msg_iov = &iov,
	                   .msg_iovlen = 1,
	                   .msg_control = cbuf.buf,
	                   .msg_controllen = sizeof(cbuf.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
	struct in_pktinfo pi = {.ipi_spec_dst = w->to}; /* answer from the address asked */
	memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	sendmsg(px->udp, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void *worker_main(void *arg)
{
	work *w = arg;
	fk_eproxy *px = w->px;
	if (w->client >= 0)
		tcp_conn(w);
	else
		dns_query(w);
	pthread_mutex_lock(&px->lock);
	px->slots[w->slot].used = false;
	px->slots[w->slot].fds[0] = px->slots[w->slot].fds[1] = -1;
	if (--px->workers == 0)
		pthread_cond_broadcast(&px->idle);
	pthread_mutex_unlock(&px->lock);
	fk__erules_unref(w->rules);
	free(w);
	return NULL;
}

/* A worker for `w` (client fd or DNS query); false when the box has too many already. */
static bool spawn(fk_eproxy *px, work *w)
{
	pthread_mutex_lock(&px->lock);
	int s = -1;
	for (int i = 0; i < FK_EGRESS_WORKERS && s < 0; i++)
		if (!px->slots[i].used)
			s = i;
	if (s < 0 || px->stopping) {
		pthread_mutex_unlock(&px->lock);
		return false;
	}
	px->slots[s] = (slot){true, {w->client, -1}};
	px->workers++;
	w->rules = fk__erules_ref(px->rules); /* its decision stays under these rules */
	pthread_mutex_unlock(&px->lock);
	w->px = px;
	w->slot = s;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_t t;
	int rc = pthread_create(&t, &at, worker_main, w);
	pthread_attr_destroy(&at);
	if (rc == 0)
		return true;
	pthread_mutex_lock(&px->lock);
	px->slots[s].used = false;
	if (--px->workers == 0)
		pthread_cond_broadcast(&px->idle);
	pthread_mutex_unlock(&px->lock);
	fk__erules_unref(w->rules);
	w->rules = NULL;
	return false;
}

static void accept_tcp(fk_eproxy *px)
{
	int c = accept4(px->tcp, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return;
	work *w = calloc(1, sizeof(*w));
	if (w) {
		w->client = c;
		if (spawn(px, w))
			return;
		free(w);
	}
	reset_close(c);
}

static void read_dns(fk_eproxy *px)
{
	work *w = calloc(1, sizeof(*w));
	uint8_t scratch[512];
	pktinfo_buf cbuf;
	struct sockaddr_in from;
	struct iovec iov = {w ? w->query : scratch, sizeof(scratch)};
	struct msghdr m = {.msg_name = &from,
	                   .msg_namelen = sizeof(from),
	                   .msg_iov = &iov,
	                   .msg_iovlen = 1,
	                   .msg_control = cbuf.buf,
	                   .msg_controllen = sizeof(cbuf.buf)};
	ssize_t n = recvmsg(px->udp, &m, MSG_DONTWAIT);
	if (n <= 0 || !w) {
		free(w);
		return;
	}
	w->client = -1;
	w->qlen = (size_t)n;
	w->from = from;
	bool have_to = false;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			w->to = pi.ipi_addr;
			have_to = true;
		}
	}
	if (!have_to || (m.msg_flags & MSG_TRUNC) || !spawn(px, w))
		free(w);
}

static void *acceptor_main(void *arg)
{
	fk_eproxy *px = arg;
	for (;;) {
		struct pollfd p[3] = {{.fd = px->tcp, .events = POLLIN},
		                      {.fd = px->udp, .events = POLLIN},
		                      {.fd = px->stop[0], .events = POLLIN}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents)
			break;
		if (p[0].revents)
			accept_tcp(px);
		if (p[1].revents)
			read_dns(px);
	}
	return NULL;
}

/* ------------------------------------------------------------ start and stop */

static void px_close(fk_eproxy *px)
{
	if (px->link >= 0)
		close(px->link);
	if (px->tcp >= 0)
		close(px->tcp);
	if (px->udp >= 0)
		close(px->udp);
	for (int i = 0; i < 2; i++)
		if (px->stop[i] >= 0)
			close(px->stop[i]);
	pthread_mutex_destroy(&px->lock);
	pthread_cond_destroy(&px->idle);
	fk__erules_unref(px->rules);
	free(px);
}

static int listen_sockets(fk_eproxy *px, int ns)
{
	static const fk_lx_sock_spec spec[2] = {{AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0},
	                                        {AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0}};
	int fds[2];
	if (fk_lx_sockets_in_netns(ns, 2, spec, fds) < 0)
		return -1;
	px->tcp = fds[0];
	px->udp = fds[1];
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(FK_LISTEN_ADDR);
	if (bind(px->tcp, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(px->tcp, 128) < 0)
		return -1;
	int one = 1;
	struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(53)};
	if (setsockopt(px->udp, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    bind(px->udp, (struct sockaddr *)&d, sizeof(d)) < 0)
		return -1;
	px->link = fk_lx_sk_lookup_attach(ns, px->tcp, htonl(FK_BOX_ADDR));
	return px->link < 0 ? -1 : 0;
}

int fk__egress_box_start(fk_box *b, fk_err *err)
{
	if (!b->rt->egress_ns || b->net_none || b->init_pid <= 0)
		return 0;
	fk_eproxy *px = calloc(1, sizeof(*px));
	if (!px)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	px->rt = b->rt;
	px->rules = fk__erules_ref(b->egress);
	px->tcp = px->udp = px->link = px->stop[0] = px->stop[1] = -1;
	pthread_mutex_init(&px->lock, NULL);
	pthread_cond_init(&px->idle, NULL);
	for (int i = 0; i < FK_EGRESS_WORKERS; i++)
		px->slots[i].fds[0] = px->slots[i].fds[1] = -1;
	int ns = fk__box_init_open(b, "ns/net", O_RDONLY);
	int rc = ns < 0 || pipe2(px->stop, O_CLOEXEC) < 0 || listen_sockets(px, ns) < 0 ? -1 : 0;
	int e = errno;
	if (ns >= 0)
		close(ns);
	if (rc == 0 && (e = pthread_create(&px->acceptor, NULL, acceptor_main, px)) != 0)
		rc = -1;
	if (rc < 0) {
		px_close(px);
		return fk__fail(err, FK_EIO, e, "sandbox egress proxy: %s", fk_strerror(e));
	}
	b->eproxy = px;
	return 0;
}

void fk__egress_box_stop(fk_box *b)
{
	fk_eproxy *px = b->eproxy;
	if (!px)
		return;
	b->eproxy = NULL;
	if (write(px->stop[1], "x", 1) < 0)
		perror("fake-e2b: egress stop");
	pthread_join(px->acceptor, NULL);
	pthread_mutex_lock(&px->lock);
	px->stopping = true;
	for (int i = 0; i < FK_EGRESS_WORKERS; i++)
		for (int k = 0; k < 2; k++)
			if (px->slots[i].used && px->slots[i].fds[k] >= 0)
				shutdown(px->slots[i].fds[k], SHUT_RDWR);
	while (px->workers > 0)
		pthread_cond_wait(&px->idle, &px->lock);
	pthread_mutex_unlock(&px->lock);
	px_close(px);
}

void fk__egress_box_rules(fk_box *b)
{
	fk_eproxy *px = b->eproxy;
	if (!px)
		return;
	fk_erules *nr = fk__erules_ref(b->egress);
	pthread_mutex_lock(&px->lock);
	fk_erules *old = px->rules;
	px->rules = nr;
	pthread_mutex_unlock(&px->lock);
	fk__erules_unref(old); /* freed here unless a connection still runs under it */
}

bool fk__egress_probe(void)
{
	/* sk_lookup in a throwaway namespace (never the host's: the program would steer its
	 * connections): BPF allowed, program type known. The child makes system calls only. */
	pid_t pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = {.sin_family = AF_INET};
		if (self < 0 || l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    listen(l, 1) < 0 || fk_lx_sk_lookup_attach(self, l, htonl(FK_BOX_ADDR)) < 0)
			_exit(1);
		_exit(0);
	}
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
