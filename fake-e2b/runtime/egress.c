/*
 * fake-e2b/runtime/egress.c — egress rules, and the parsers the egress proxy needs: TLS SNI,
 * HTTP Host, DNS questions and answers. Pure functions over bytes (see egress.h); every length
 * is checked, nothing recurses.
 */
#define _GNU_SOURCE
#include "egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int fk__egress_cidr_parse(const char *s, fk_cidr *out)
{
	char ip[32];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(ip))
		return -1;
	memcpy(ip, s, n);
	ip[n] = 0;
	struct in_addr a;
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -1;
	unsigned bits = 32;
	if (slash) {
		const char *p = slash + 1;
		if (!*p || strlen(p) > 2)
			return -1;
		bits = 0;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			bits = bits * 10 + (unsigned)(*p - '0');
		}
		if (bits > 32)
			return -1;
	}
	out->mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
	out->net = ntohl(a.s_addr) & out->mask;
	return 0;
}

bool fk__egress_cidr_has(const fk_cidr *c, size_t n, uint32_t ip)
{
	for (size_t i = 0; i < n; i++)
		if ((ip & c[i].mask) == c[i].net)
			return true;
	return false;
}

bool fk__egress_name_ok(char *name)
{
	size_t n = strlen(name);
	if (n > 0 && name[n - 1] == '.')
		name[--n] = 0;
	if (n == 0 || n > 253)
		return false;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (c >= 'A' && c <= 'Z')
			name[i] = (char)(c - 'A' + 'a');
		else if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		             c == '_'))
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

/* An IPv6 address or CIDR (the prefix length is not checked: the entry is dropped anyway). */
static bool is_ipv6(const char *s)
{
	char ip[64];
	size_t n = strcspn(s, "/");
	if (n == 0 || n >= sizeof(ip))
		return false;
	memcpy(ip, s, n);
	ip[n] = 0;
	struct in6_addr a;
	return inet_pton(AF_INET6, ip, &a) == 1;
}

static int add_cidr(fk_cidr **arr, size_t *n, const fk_cidr *c)
{
	fk_cidr *na = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!na)
		return -1;
	na[(*n)++] = *c;
	*arr = na;
	return 0;
}

int fk__egress_parse(fk_egress *e, const char *const *allow, size_t n_allow,
                     const char *const *deny, size_t n_deny)
{
	memset(e, 0, sizeof(*e));
	e->open = n_allow == 0 && n_deny == 0;
	for (size_t i = 0; i < n_deny; i++) {
		fk_cidr c;
		if (deny[i] && is_ipv6(deny[i]))
			continue; /* boxes have no IPv6 at all */
		if (!deny[i] || fk__egress_cidr_parse(deny[i], &c) < 0) {
			fk__egress_free(e);
			errno = EINVAL;
			return -1;
		}
		if (c.mask == 0)
			e->deny_all = true;
		if (add_cidr(&e->deny_cidrs, &e->n_deny_cidrs, &c) < 0)
			goto oom;
	}
	for (size_t i = 0; i < n_allow; i++) {
		fk_cidr c;
		if (!allow[i]) {
			fk__egress_free(e);
			errno = EINVAL;
			return -1;
		}
		if (fk__egress_cidr_parse(allow[i], &c) == 0) {
			if (add_cidr(&e->allow_cidrs, &e->n_allow_cidrs, &c) < 0)
				goto oom;
			continue;
		}
		if (is_ipv6(allow[i]))
			continue;
		char *name = strdup(allow[i]);
		if (!name)
			goto oom;
		bool ok = !strcmp(name, "*");
		if (!ok) {
			char *body = !strncmp(name, "*.", 2) ? name + 2 : name;
			ok = fk__egress_name_ok(body); /* the "*." prefix is kept as is */
		}
		if (!ok) { /* E2B takes any string as a domain: this one matches no name */
			free(name);
			continue;
		}
		char **nn = realloc(e->allow_names, (e->n_allow_names + 1) * sizeof(char *));
		if (!nn) {
			free(name);
			goto oom;
		}
		nn[e->n_allow_names++] = name;
		e->allow_names = nn;
	}
	return 0;
oom:
	fk__egress_free(e);
	errno = ENOMEM;
	return -1;
}

void fk__egress_free(fk_egress *e)
{
	for (size_t i = 0; i < e->n_allow_names; i++)
		free(e->allow_names[i]);
	free(e->allow_names);
	free(e->allow_cidrs);
	free(e->deny_cidrs);
	memset(e, 0, sizeof(*e));
}

bool fk__egress_name_allowed(const fk_egress *e, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < e->n_allow_names; i++) {
		const char *p = e->allow_names[i];
		if (!strcmp(p, "*") || !strcmp(p, name))
			return true;
		if (!strncmp(p, "*.", 2)) {
			size_t m = strlen(p + 1); /* ".example.com" */
			if (n > m && !strcmp(name + n - m, p + 1))
				return true;
		}
	}
	return false;
}

bool fk__egress_ip_forbidden(uint32_t ip)
{
	static const struct {
		uint32_t net, mask;
	} bad[] = {
	    {0x00000000, 0xff000000}, /* 0/8: "this host" */
	    {0x0a000000, 0xff000000}, /* 10/8 */
	    {0x64400000, 0xffc00000}, /* 100.64/10 */
	    {0x7f000000, 0xff000000}, /* 127/8 */
	    {0xa9fe0000, 0xffff0000}, /* 169.254/16: link local, cloud metadata */
	    {0xac100000, 0xfff00000}, /* 172.16/12 */
	    {0xc0a80000, 0xffff0000}, /* 192.168/16 */
	    {0xe0000000, 0xe0000000}, /* 224/3: multicast, reserved, broadcast */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if ((ip & bad[i].mask) == bad[i].net)
			return true;
	return false;
}

bool fk__egress_needs_name(const fk_egress *e, uint32_t ip, uint16_t port)
{
	if (e->open || e->n_allow_names == 0 || (port != 80 && port != 443))
		return false;
	if (fk__egress_cidr_has(e->allow_cidrs, e->n_allow_cidrs, ip))
		return false;
	/* a name can only turn a denied address into an allowed one */
	return fk__egress_cidr_has(e->deny_cidrs, e->n_deny_cidrs, ip);
}

bool fk__egress_allows(const fk_egress *e, uint32_t ip, uint16_t port, const char *name,
                       bool name_has_ip)
{
	if (e->open)
		return true;
	if (name && (port == 80 || port == 443) && fk__egress_name_allowed(e, name))
		return name_has_ip; /* beyond E2B: the address must be the name's */
	if (fk__egress_cidr_has(e->allow_cidrs, e->n_allow_cidrs, ip))
		return true;
	return !fk__egress_cidr_has(e->deny_cidrs, e->n_deny_cidrs, ip);
}

bool fk__egress_may_resolve(const fk_egress *e, const char *name)
{
	return e->open || !e->deny_all || fk__egress_name_allowed(e, name);
}

/* ------------------------------------------------------------ TLS ClientHello SNI */

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static int copy_name(const uint8_t *p, size_t n, char *out, size_t cap)
{
	if (n == 0 || n >= cap)
		return -1;
	memcpy(out, p, n);
	out[n] = 0;
	if (memchr(out, 0, n))
		return -1;
	return fk__egress_name_ok(out) ? 1 : -1;
}

int fk__egress_tls_sni(const uint8_t *buf, size_t len, char *out, size_t cap)
{
	if (len < 5)
		return 0;
	if (buf[0] != 0x16 || buf[1] != 3)
		return -1; /* not a TLS handshake record */
	size_t rec = be16(buf + 3);
	if (rec < 4 || rec > 16384)
		return -1;
	if (len < 5 + rec)
		return 0;
	const uint8_t *p = buf + 5, *end = p + rec;
	if (p[0] != 1)
		return -1; /* not a ClientHello */
	size_t hs = (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
	p += 4;
	if (hs < (size_t)(end - p))
		end = p + hs;
	/* version, random */
	if (end - p < 34)
		return -1;
	p += 34;
	/* session id, cipher suites, compression methods */
	if (end - p < 1 || end - p < 1 + p[0])
		return -1;
	p += 1 + p[0];
	if (end - p < 2 || (size_t)(end - p) < 2 + be16(p))
		return -1;
	p += 2 + be16(p);
	if (end - p < 1 || end - p < 1 + p[0])
		return -1;
	p += 1 + p[0];
	if (end - p < 2)
		return -1;
	size_t ext = be16(p);
	p += 2;
	if ((size_t)(end - p) < ext)
		return -1; /* extensions continue in another record: not read */
	end = p + ext;
	while (end - p >= 4) {
		unsigned type = be16(p);
		size_t n = be16(p + 2);
		p += 4;
		if ((size_t)(end - p) < n)
			return -1;
		if (type == 0) { /* server_name: list length, then (type 0, length, name) */
			if (n < 5 || be16(p) + 2u > n || p[2] != 0)
				return -1;
			size_t nl = be16(p + 3);
			if (nl + 5 > n)
				return -1;
			return copy_name(p + 5, nl, out, cap);
		}
		p += n;
	}
	return -1;
}

/* ------------------------------------------------------------ HTTP Host */

int fk__egress_http_host(const uint8_t *buf, size_t len, char *out, size_t cap)
{
	const uint8_t *hdr_end = memmem(buf, len, "\r\n\r\n", 4);
	if (!hdr_end)
		return 0;
	const uint8_t *p = memchr(buf, '\n', (size_t)(hdr_end - buf) + 2); /* after request line */
	int found = 0;
	while (p && p < hdr_end) {
		p++;
		const uint8_t *eol = memchr(p, '\r', (size_t)(hdr_end + 2 - p));
		if (!eol)
			break;
		size_t n = (size_t)(eol - p);
		if (n >= 5 && !strncasecmp((const char *)p, "host:", 5)) {
			if (found)
				return -1; /* two Host headers: ambiguous */
			const uint8_t *v = p + 5, *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			const uint8_t *colon = memchr(v, ':', (size_t)(ve - v));
			if (colon) {
				for (const uint8_t *d = colon + 1; d < ve; d++)
					if (*d < '0' || *d > '9')
						return -1;
				ve = colon;
			}
			if (copy_name(v, (size_t)(ve - v), out, cap) < 0)
				return -1;
			found = 1;
		}
		p = memchr(p, '\n', (size_t)(hdr_end + 2 - p));
	}
	return found ? 1 : -1;
}

/* ------------------------------------------------------------ DNS */

/* Where the question ends (after QTYPE and QCLASS), or 0. */
static size_t dns_question_end(const uint8_t *q, size_t len, char *name, size_t cap)
{
	if (len < 12 || cap < 2)
		return 0;
	if ((q[2] & 0x80) || (q[2] & 0x78) || be16(q + 4) != 1)
		return 0; /* a response, not a standard query, or not one question */
	size_t i = 12, o = 0;
	for (;;) {
		if (i >= len)
			return 0;
		size_t l = q[i++];
		if (l == 0)
			break;
		if (l > 63 || i + l > len || o + l + 1 >= cap)
			return 0; /* compression pointer, or too long */
		if (memchr(q + i, 0, l) || memchr(q + i, '.', l))
			return 0;
		if (o)
			name[o++] = '.';
		memcpy(name + o, q + i, l);
		o += l;
		i += l;
	}
	name[o] = 0;
	if (i + 4 > len)
		return 0;
	return i + 4;
}

int fk__egress_dns_question(const uint8_t *q, size_t len, char *name, size_t cap, uint16_t *qtype)
{
	size_t end = dns_question_end(q, len, name, cap);
	if (!end || !fk__egress_name_ok(name))
		return -1;
	*qtype = (uint16_t)be16(q + end - 4);
	return 0;
}

size_t fk__egress_dns_reply(const uint8_t *q, size_t len, int rcode, const uint32_t *addrs,
                            size_t n, uint8_t *out, size_t cap)
{
	char name[256];
	size_t end = dns_question_end(q, len, name, sizeof(name));
	if (!end || end + n * 16 > cap)
		return 0;
	memcpy(out, q, end);
	out[2] = (uint8_t)(0x80 | (q[2] & 0x01));  /* QR, opcode 0, RD as asked */
	out[3] = (uint8_t)(0x80 | (rcode & 0x0f)); /* RA */
	out[6] = (uint8_t)(n >> 8);
	out[7] = (uint8_t)n;
	memset(out + 8, 0, 4); /* no authority, no additional */
	size_t o = end;
	for (size_t i = 0; i < n; i++) {
		static const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4};
		memcpy(out + o, rr, sizeof(rr));
		memcpy(out + o + sizeof(rr), &addrs[i], 4);
		o += sizeof(rr) + 4;
	}
	return o;
}

fk_erules *fk__erules_new(const char *const *allow, size_t n_allow, const char *const *deny,
                          size_t n_deny)
{
	fk_erules *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (fk__egress_parse(&r->e, allow, n_allow, deny, n_deny) < 0) {
		int e = errno;
		free(r);
		errno = e;
		return NULL;
	}
	r->refs = 1;
	return r;
}

fk_erules *fk__erules_ref(fk_erules *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
	return r;
}

void fk__erules_unref(fk_erules *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	fk__egress_free(&r->e);
	free(r);
}
