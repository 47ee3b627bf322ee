/*
 * fake-e2b/runtime/private/egress_int.h — the egress proxy as the backend sees it (egress_proxy.c).
 */
#ifndef FAKE_E2B_EGRESS_INT_H
#define FAKE_E2B_EGRESS_INT_H

#include "runtime_int.h"

/* Can this kernel steer a namespace's connections to a socket (BPF sk_lookup)? Forks. */
bool fk__egress_probe(void);
/* fk_rt_options.egress_hosts ("NAME=IP[,IP]") into rt->egress_hosts. */
int fk__egress_hosts_parse(fk_rt *rt, const char *const *hosts, size_t n, fk_err *err);
/* After PID 1 is up: the proxy of a box with egress allowlist or open in its own namespace
 * (AnyIP route set by PID 1). A no-op for egress none or without rt->egress_ns. */
int fk__egress_box_start(fk_box *b, fk_err *err);
/* Hands b->egress (just replaced) to the box's proxy, if it has one: connections and queries
 * accepted from now on get it, those already accepted keep theirs. */
void fk__egress_box_rules(fk_box *b);
/* Ends every connection and the listening sockets; before PID 1 is killed. Idempotent. */
void fk__egress_box_stop(fk_box *b);

#endif /* FAKE_E2B_EGRESS_INT_H */
