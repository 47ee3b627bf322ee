/*
 * fake-e2b/runtime/linux/net.h — network namespace primitives. Knows no box.
 */
#ifndef FAKE_E2B_LINUX_NET_H
#define FAKE_E2B_LINUX_NET_H

#include <stddef.h>
#include <stdint.h>

/* A TCP connection to 127.0.0.1:`port` made inside the network namespace `netns_fd` (-1: this
 * process's own), waiting at most `timeout_ms` for the handshake. The socket keeps its
 * namespace for its whole life; the calling thread never changes namespace (a short-lived
 * thread enters it). Returns the connected fd (O_CLOEXEC, blocking), or -1 with errno
 * (ECONNREFUSED: nothing listens there; ETIMEDOUT). */
int fk_lx_connect_in_netns(int netns_fd, uint16_t port, int timeout_ms);

/* socket(domain, type | SOCK_CLOEXEC, protocol) for each of `spec[0..n)`, made inside the
 * network namespace `netns_fd` (one short-lived thread enters it): each socket belongs to that
 * namespace for its whole life (bind, listen and accept act there) while the caller stays where
 * it is. 0 with fds[0..n); -1 with errno and no fd open. */
typedef struct fk_lx_sock_spec {
	int domain, type, protocol;
} fk_lx_sock_spec;
int fk_lx_sockets_in_netns(int netns_fd, size_t n, const fk_lx_sock_spec *spec, int *fds);

/* The netlink request that makes every IPv4 address local in a namespace ("AnyIP": `ip route
 * add local 0.0.0.0/0 dev lo table local`), written into `buf` (at least 64 bytes); returns its
 * length. Built by the caller, sent by fk_lx_netlink_send (async-signal-safe: a cloned child may
 * send it). */
size_t fk_lx_route_local_all_msg(void *buf, size_t size);
/* The netlink request adding IPv4 address `ip_n` (network order) /32 to `lo` (interface 1). */
size_t fk_lx_addr_msg(void *buf, size_t size, uint32_t ip_n);
/* Sends a netlink route request `msg` on a new NETLINK_ROUTE socket of the caller's network
 * namespace and reads its acknowledgement. Only system calls. 0, or -1 with errno. */
int fk_lx_netlink_send(const void *msg, size_t len);
/* The same in network namespace `netns_fd` (its socket made there by a short-lived thread;
 * the caller stays where it is). Not for a cloned child. */
int fk_lx_netlink_send_in_netns(int netns_fd, const void *msg, size_t len);

/* Steers, in network namespace `netns_fd`, every TCP connection to an IPv4 address outside
 * 127.0.0.0/8 and other than `own_n` (network order; the namespace's own address), any port,
 * to the listening socket `listen_fd` (of that namespace), with a BPF sk_lookup program (Linux
 * >= 5.9). Returns the link fd: the program is attached while it is open. -1 with errno
 * (EPERM/EINVAL: the kernel has no BPF or no sk_lookup). */
int fk_lx_sk_lookup_attach(int netns_fd, int listen_fd, uint32_t own_n);

/* In the cgroup v2 `cgroup_fd` (a directory fd), lets the processes whose real uid (in the
 * host's user namespace) is `root_uid` bind IPv4 and IPv6 ports below
 * net.ipv4.ip_unprivileged_port_start without CAP_NET_BIND_SERVICE in the network namespace's
 * owner, with BPF cgroup/bind4 and bind6 programs (Linux >= 5.12); everyone else's binds are
 * checked as usual. links[0..1]: the programs stay attached while they are open. 0, or -1 with
 * errno and no link. */
int fk_lx_bind_root_attach(int cgroup_fd, uint32_t root_uid, int links[2]);

#endif /* FAKE_E2B_LINUX_NET_H */
