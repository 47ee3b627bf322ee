/*
 * fake-e2b/runtime/linux/net.c — network namespace primitives (see net.h).
 */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct conn_job {
	int netns_fd;
	uint16_t port;
	int timeout_ms;
	int fd;
	int errnum;
} conn_job;

static void *connect_main(void *arg)
{
	conn_job *j = arg;
	j->fd = -1;
	/* setns(CLONE_NEWNET) affects this thread only; it ends right after */
	if (j->netns_fd >= 0 && setns(j->netns_fd, CLONE_NEWNET) < 0) {
		j->errnum = errno;
		return NULL;
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		j->errnum = errno;
		return NULL;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(j->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rc = connect(s, (struct sockaddr *)&a, sizeof(a));
	if (rc < 0 && errno == EINPROGRESS) {
		struct pollfd p = {.fd = s, .events = POLLOUT};
		int n;
		while ((n = poll(&p, 1, j->timeout_ms)) < 0 && errno == EINTR)
			;
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		if (n == 0)
			soerr = ETIMEDOUT;
		else if (n < 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		rc = soerr ? -1 : 0;
		errno = soerr;
	}
	if (rc < 0) {
		j->errnum = errno;
		close(s);
		return NULL;
	}
	int fl = fcntl(s, F_GETFL);
	if (fl >= 0)
		fcntl(s, F_SETFL, fl & ~O_NONBLOCK);
	j->fd = s;
	return NULL;
}

int fk_lx_connect_in_netns(int netns_fd, uint16_t port, int timeout_ms)
{
	conn_job j = {.netns_fd = netns_fd, .port = port, .timeout_ms = timeout_ms, .fd = -1};
	pthread_t t;
	int rc = pthread_create(&t, NULL, connect_main, &j);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_join(t, NULL);
	if (j.fd < 0)
		errno = j.errnum ? j.errnum : EIO;
	return j.fd;
}

typedef struct sock_job {
	int netns_fd;
	size_t n;
	const fk_lx_sock_spec *spec;
	int *fds;
	int errnum;
} sock_job;

static void *socket_main(void *arg)
{
	sock_job *j = arg;
	if (setns(j->netns_fd, CLONE_NEWNET) < 0) {
		j->errnum = errno;
		return NULL;
	}
	for (size_t i = 0; i < j->n; i++) {
		j->fds[i] =
		    socket(j->spec[i].domain, j->spec[i].type | SOCK_CLOEXEC, j->spec[i].protocol);
		if (j->fds[i] < 0) {
			j->errnum = errno;
			return NULL;
		}
	}
	return NULL;
}

int fk_lx_sockets_in_netns(int netns_fd, size_t n, const fk_lx_sock_spec *spec, int *fds)
{
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	sock_job j = {netns_fd, n, spec, fds, 0};
	pthread_t t;
	int rc = pthread_create(&t, NULL, socket_main, &j);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_join(t, NULL);
	if (j.errnum == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
	errno = j.errnum;
	return -1;
}

/* ------------------------------------------------------------ netlink */

static void put_attr(char *buf, size_t *len, unsigned short type, const void *data,
                     unsigned short n)
{
	struct rtattr *a = (struct rtattr *)(buf + *len);
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(n);
	memcpy(RTA_DATA(a), data, n);
	*len += RTA_ALIGN(a->rta_len);
}

#define NL_MSG_MAX 64 /* the whole of either request below */

/* Starts a request to create something (`type`, sequence number `seq`, acknowledged) in buf,
 * zeroed: returns its `payload` bytes after the header, with *len the message's length so far,
 * or NULL when buf cannot hold NL_MSG_MAX bytes. nl_end() sets the length once the attributes
 * are in (put_attr). */
static void *nl_begin(void *buf, size_t size, unsigned short type, unsigned seq, size_t payload,
                      size_t *len)
{
	if (size < NL_MSG_MAX)
		return NULL;
	memset(buf, 0, NL_MSG_MAX);
	struct nlmsghdr *n = buf;
	n->nlmsg_type = type;
	n->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	n->nlmsg_seq = seq;
	*len = NLMSG_LENGTH(payload);
	return NLMSG_DATA(n);
}

static size_t nl_end(void *buf, size_t len)
{
	((struct nlmsghdr *)buf)->nlmsg_len = (unsigned)len;
	return len;
}

size_t fk_lx_route_local_all_msg(void *buf, size_t size)
{
	size_t len;
	struct rtmsg *r = nl_begin(buf, size, RTM_NEWROUTE, 1, sizeof(*r), &len);
	if (!r)
		return 0;
	r->rtm_family = AF_INET;
	r->rtm_dst_len = 0;
	r->rtm_table = RT_TABLE_LOCAL;
	r->rtm_protocol = RTPROT_STATIC;
	r->rtm_scope = RT_SCOPE_HOST;
	r->rtm_type = RTN_LOCAL;
	int lo = 1; /* `lo` is always interface 1 of a new network namespace */
	put_attr(buf, &len, RTA_OIF, &lo, sizeof(lo));
	return nl_end(buf, len);
}

size_t fk_lx_addr_msg(void *buf, size_t size, uint32_t ip_n)
{
	size_t len;
	struct ifaddrmsg *ifa = nl_begin(buf, size, RTM_NEWADDR, 2, sizeof(*ifa), &len);
	if (!ifa)
		return 0;
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = 32;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = 1; /* lo */
	put_attr(buf, &len, IFA_LOCAL, &ip_n, sizeof(ip_n));
	put_attr(buf, &len, IFA_ADDRESS, &ip_n, sizeof(ip_n));
	return nl_end(buf, len);
}

/* Sends `msg` on netlink socket `s`, reads the acknowledgement and closes `s`. */
static int netlink_talk(int s, const void *msg, size_t len)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	int rc = -1, e = EIO;
	if (sendto(s, msg, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		e = errno;
		goto out;
	}
	union {
		char buf[512];
		struct nlmsghdr align; /* read as one */
	} reply;
	ssize_t n;
	while ((n = recv(s, reply.buf, sizeof(reply.buf), 0)) < 0 && errno == EINTR)
		;
	if (n < 0) {
		e = errno;
		goto out;
	}
	struct nlmsghdr *h = &reply.align;
	if ((size_t)n >= NLMSG_LENGTH(sizeof(struct nlmsgerr)) && h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *ne = NLMSG_DATA(h);
		if (ne->error == 0)
			rc = 0;
		else
			e = -ne->error;
	}
out:
	close(s);
	if (rc < 0)
		errno = e;
	return rc;
}

int fk_lx_netlink_send(const void *msg, size_t len)
{
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	return s < 0 ? -1 : netlink_talk(s, msg, len);
}

int fk_lx_netlink_send_in_netns(int netns_fd, const void *msg, size_t len)
{
	static const fk_lx_sock_spec nl = {AF_NETLINK, SOCK_RAW, NETLINK_ROUTE};
	int s;
	return fk_lx_sockets_in_netns(netns_fd, 1, &nl, &s) < 0 ? -1 : netlink_talk(s, msg, len);
}

/* ------------------------------------------------------------ BPF sk_lookup */

static long bpf_call(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* Loads a program of `type` for `attach` (MIT licence): its fd, or -1 with errno. */
static int prog_load(enum bpf_prog_type type, enum bpf_attach_type attach, const struct bpf_insn *p,
                     size_t n)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = type;
	a.expected_attach_type = attach;
	a.insns = (uint64_t)(uintptr_t)p;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t) "MIT";
	return (int)bpf_call(BPF_PROG_LOAD, &a);
}

#define INSN(c, d, s, o, i)                                                                        \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

/* if (protocol == TCP && family == AF_INET && local_ip4 != own && local_ip4 not in 127/8) {
 *         sk = map[0]; if (sk) { bpf_sk_assign(ctx, sk, 0); bpf_sk_release(sk); } }
 * return SK_PASS; (a socket assigned or not, the kernel's own lookup goes on otherwise).
 * Jump offsets count instructions from the next one; "pass" is instruction 23. */
static int sk_lookup_prog(int map_fd, uint32_t own_n)
{
	const int lo_mask = (int)htonl(0xff000000u), lo_net = (int)htonl(0x7f000000u);
	const int J = BPF_JMP32; /* 32-bit compares: no sign extension of the immediates */
	struct bpf_insn p[] = {
	    /* 0 */ INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0),
	    INSN(BPF_LDX | BPF_W | BPF_MEM, 2, 6, offsetof(struct bpf_sk_lookup, protocol), 0),
	    /* 2 */ INSN(J | BPF_JNE | BPF_K, 2, 0, 20, IPPROTO_TCP),
	    INSN(BPF_LDX | BPF_W | BPF_MEM, 2, 6, offsetof(struct bpf_sk_lookup, family), 0),
	    /* 4 */ INSN(J | BPF_JNE | BPF_K, 2, 0, 18, AF_INET),
	    INSN(BPF_LDX | BPF_W | BPF_MEM, 2, 6, offsetof(struct bpf_sk_lookup, local_ip4), 0),
	    /* 6 */ INSN(J | BPF_JEQ | BPF_K, 2, 0, 16, (int)own_n),
	    INSN(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, lo_mask),
	    /* 8 */ INSN(J | BPF_JEQ | BPF_K, 2, 0, 14, lo_net),
	    INSN(BPF_ST | BPF_W | BPF_MEM, 10, 0, -4, 0),
	    INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
	    INSN(0, 0, 0, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
	    INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4),
	    /* 14 */ INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
	    /* 15 */ INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 7, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 7, 0, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 7, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 0),
	    INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_assign),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 7, 0, 0),
	    INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_release),
	    /* 23 */ INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, SK_PASS),
	    INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	return prog_load(BPF_PROG_TYPE_SK_LOOKUP, BPF_SK_LOOKUP, p, sizeof(p) / sizeof(p[0]));
}

int fk_lx_sk_lookup_attach(int netns_fd, int listen_fd, uint32_t own_n)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_SOCKMAP;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = 1;
	int map = (int)bpf_call(BPF_MAP_CREATE, &a);
	if (map < 0)
		return -1;
	int prog = -1, link = -1, e = 0;
	uint32_t key = 0;
	uint64_t val = (uint64_t)listen_fd;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&val;
	a.flags = BPF_ANY;
	if (bpf_call(BPF_MAP_UPDATE_ELEM, &a) < 0 || (prog = sk_lookup_prog(map, own_n)) < 0) {
		e = errno;
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = (uint32_t)prog;
	a.link_create.target_fd = (uint32_t)netns_fd;
	a.link_create.attach_type = BPF_SK_LOOKUP;
	link = (int)bpf_call(BPF_LINK_CREATE, &a);
	if (link < 0)
		e = errno;
	else
		fcntl(link, F_SETFD, FD_CLOEXEC);
out:
	if (prog >= 0)
		close(prog);
	close(map);
	if (link < 0)
		errno = e;
	return link;
}

/* ------------------------------------------------------------ BPF cgroup bind */

/* cgroup/bind4 and bind6: return uid == root_uid ? 3 : 1. Bit 0: the bind goes on; bit 1
 * (BPF_RET_BIND_NO_CAP_NET_BIND_SERVICE, Linux >= 5.12): without the CAP_NET_BIND_SERVICE
 * check for ports below ip_unprivileged_port_start. bpf_get_current_uid_gid's low 32 bits are
 * the real uid as the host's user namespace sees it. */
static int bind_prog(enum bpf_attach_type type, uint32_t root_uid)
{
	struct bpf_insn p[] = {
	    INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_uid_gid),
	    INSN(BPF_JMP32 | BPF_JNE | BPF_K, 0, 0, 2, (int)root_uid),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 3),
	    INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	    INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),
	    INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	return prog_load(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, type, p, sizeof(p) / sizeof(p[0]));
}

int fk_lx_bind_root_attach(int cgroup_fd, uint32_t root_uid, int links[2])
{
	static const enum bpf_attach_type types[2] = {BPF_CGROUP_INET4_BIND, BPF_CGROUP_INET6_BIND};
	links[0] = links[1] = -1;
	for (int i = 0; i < 2; i++) {
		int prog = bind_prog(types[i], root_uid), e = errno;
		if (prog >= 0) {
			union bpf_attr a;
			memset(&a, 0, sizeof(a));
			a.link_create.prog_fd = (uint32_t)prog;
			a.link_create.target_fd = (uint32_t)cgroup_fd;
			a.link_create.attach_type = types[i];
			links[i] = (int)bpf_call(BPF_LINK_CREATE, &a);
			e = errno;
			close(prog);
		}
		if (links[i] < 0) {
			for (int k = 0; k < i; k++)
				close(links[k]);
			links[0] = links[1] = -1;
			errno = e;
			return -1;
		}
		fcntl(links[i], F_SETFD, FD_CLOEXEC);
	}
	return 0;
}
