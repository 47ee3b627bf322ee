/*
 * fake-e2b/runtime/egress.h — a box's egress rules as data (egress.c) and the per-box egress
 * proxy (egress_proxy.c).
 *
 * A box with egress allowlist or open has its own network namespace with only `lo`, in which
 * every IPv4 address is local (`local 0.0.0.0/0 dev lo`): nothing is routed out of it, there
 * is no veth and no IP forwarding. A BPF sk_lookup program hands every TCP connection to a
 * non-loopback address, whatever its port, to the proxy's listening socket in that namespace;
 * UDP port 53 reaches the proxy's DNS socket. The proxy (threads of the server, in the host's
 * namespace) learns the address the client asked for from the accepted socket, applies the
 * rules (E2B's: allowed CIDR or allowed host name by HTTP Host / TLS SNI on ports 80 and 443,
 * else denied CIDR blocks, else allowed; ours on top: the address must be one the name
 * resolves to, and never the host's own addresses nor private, loopback or link-local ranges)
 * and connects out from the host's namespace.
 */
#ifndef FAKE_E2B_EGRESS_H
#define FAKE_E2B_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A box's own address (E2B's sandbox address), on its `lo` with allowlist and open: programs
 * that ask for addresses only when the machine has a non-loopback one (AI_ADDRCONFIG) resolve,
 * and a box reaches itself there. */
#define FK_BOX_ADDR 0xa9fe0015u /* 169.254.0.21 */

typedef struct fk_cidr {
	uint32_t net, mask; /* host byte order */
} fk_cidr;

typedef struct fk_egress {
	bool open; /* no rule at all */
	fk_cidr *allow_cidrs;
	size_t n_allow_cidrs;
	char **allow_names; /* lower case, no trailing dot: "example.com", "*.example.com", "*" */
	size_t n_allow_names;
	fk_cidr *deny_cidrs;
	size_t n_deny_cidrs;
	bool deny_all; /* deny has 0.0.0.0/0 */
} fk_egress;

/* A name the egress proxy resolves without asking DNS (fk_rt_options.egress_hosts). */
#define FK_EHOST_ADDRS 8
typedef struct fk_ehost {
	char name[254];
	uint32_t addrs[FK_EHOST_ADDRS]; /* network byte order */
	size_t n;
} fk_ehost;

/* From E2B's network.allowOut (IPv4 addresses, CIDRs, host names, "*.name", "*") and
 * network.denyOut (IPv4 addresses, CIDRs). IPv6 entries are dropped (a box has no IPv6); an
 * allowOut entry that is no host name matches nothing (E2B takes any string as a domain).
 * -1 with errno: EINVAL (a denyOut entry that is no address), ENOMEM. */
int fk__egress_parse(fk_egress *e, const char *const *allow, size_t n_allow,
                     const char *const *deny, size_t n_deny);
void fk__egress_free(fk_egress *e);

/* A rule set as a box and its egress proxy share it: made once, never changed afterwards, freed
 * with its last reference. A network update (fk_box_set_egress) puts a new one in the box and its
 * proxy; a connection keeps the one it was accepted under until it ends. */
typedef struct fk_erules {
	fk_egress e;
	int refs; /* atomic */
} fk_erules;

/* fk__egress_parse into a new rule set (refs 1). NULL with errno (EINVAL, ENOMEM). */
fk_erules *fk__erules_new(const char *const *allow, size_t n_allow, const char *const *deny,
                          size_t n_deny);
fk_erules *fk__erules_ref(fk_erules *r); /* r, with one more reference */
void fk__erules_unref(fk_erules *r);     /* accepts NULL */

/* "1.2.3.4" or "1.2.3.0/24" -> *out. 0, or -1. */
int fk__egress_cidr_parse(const char *s, fk_cidr *out);
bool fk__egress_cidr_has(const fk_cidr *c, size_t n, uint32_t ip);

/* Does a host name rule allow `name` (lower case)? "x.com" matches itself, "*.x.com" its
 * subdomains only, "*" everything. */
bool fk__egress_name_allowed(const fk_egress *e, const char *name);

/* Addresses no box may reach whatever its rules (E2B's DeniedSandboxCIDRs: 10/8, 100.64/10,
 * 127/8, 169.254/16, 172.16/12, 192.168/16; and 0/8, multicast, reserved, broadcast). The
 * host's own addresses are checked apart (egress_proxy.c). `ip` in host byte order. */
bool fk__egress_ip_forbidden(uint32_t ip);

/* Verdict on a connection to `ip`:`port` (host order) once the forbidden ranges are out.
 * `name`: the HTTP Host / TLS SNI host name (lower case) read on port 80 / 443, or NULL;
 * `name_has_ip`: whether `ip` is one of that name's addresses. */
bool fk__egress_allows(const fk_egress *e, uint32_t ip, uint16_t port, const char *name,
                       bool name_has_ip);
/* Does a connection on `port` need its host name read before the verdict? */
bool fk__egress_needs_name(const fk_egress *e, uint32_t ip, uint16_t port);
/* May the box's DNS answer `name`? (open rules, an allowed name, or no deny-all rule) */
bool fk__egress_may_resolve(const fk_egress *e, const char *name);

/* Host name of the first bytes of a connection, lower case, into out[cap]: the SNI of a TLS
 * ClientHello / the Host header of an HTTP/1 request (without port). 1: found; 0: need more
 * bytes; -1: malformed, absent or not a valid host name. */
int fk__egress_tls_sni(const uint8_t *buf, size_t len, char *out, size_t cap);
int fk__egress_http_host(const uint8_t *buf, size_t len, char *out, size_t cap);

/* Normalizes a host name in place (lower case, trailing dot dropped); false when it is not
 * one (empty, > 253 chars, a character outside [a-z0-9-_.], an empty label). */
bool fk__egress_name_ok(char *name);

/* A DNS query's question: the name (normalized) and type. 0, or -1 when it is not a plain
 * query with one question. */
int fk__egress_dns_question(const uint8_t *q, size_t len, char *name, size_t cap, uint16_t *qtype);
/* The answer to query `q`: rcode (0 NOERROR, 3 NXDOMAIN, 5 REFUSED...) and, for an A question,
 * `n` addresses (network byte order). Returns its length in out[cap], or 0. */
size_t fk__egress_dns_reply(const uint8_t *q, size_t len, int rcode, const uint32_t *addrs,
                            size_t n, uint8_t *out, size_t cap);

#endif /* FAKE_E2B_EGRESS_H */
