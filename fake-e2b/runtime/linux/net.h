/*
 * fake-e2b/runtime/linux/net.h — network namespace primitives. Knows no box.
 */
#ifndef FAKE_E2B_LINUX_NET_H
#define FAKE_E2B_LINUX_NET_H

#include <stdint.h>

/* A TCP connection to 127.0.0.1:`port` made inside the network namespace `netns_fd` (-1: this
 * process's own), waiting at most `timeout_ms` for the handshake. The socket keeps its
 * namespace for its whole life; the calling thread never changes namespace (a short-lived
 * thread enters it). Returns the connected fd (O_CLOEXEC, blocking), or -1 with errno
 * (ECONNREFUSED: nothing listens there; ETIMEDOUT). */
int fk_lx_connect_in_netns(int netns_fd, uint16_t port, int timeout_ms);

#endif /* FAKE_E2B_LINUX_NET_H */
