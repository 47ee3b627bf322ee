/*
 * contract/validate.c: validators of the sandbox@1 contract (docs/contract.md "Definitions").
 *
 * Pure functions: no allocation, no locale, thread-safe. Messages follow the
 * seed's (the rule include/sandbox/error.h states; the values checked are
 * docs/contract.md "Definitions", "exec"). Values
 * from the caller are quoted through sbx__quote (or JSON-style for paths, as
 * the seed's JSON.stringify), so control bytes never reach a log raw.
 */
#include <math.h>
#include <sandbox/validate.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"

#define PATH_MAX_BYTES    4096
#define SEGMENT_MAX_BYTES 255
#define TAG_MAX_BYTES     64
#define PATH_QUOTE_BYTES  128 /* most path bytes quoted in a message */

static bool is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ */
int sbx_validate_tag(const char *tag, sbx_error *err)
{
	size_t len = tag ? strnlen(tag, TAG_MAX_BYTES + 1) : 0;
	bool ok = len >= 1 && len <= TAG_MAX_BYTES && is_alnum((unsigned char)tag[0]);

	for (size_t i = 1; ok && i < len; i++) {
		unsigned char c = (unsigned char)tag[i];
		ok = is_alnum(c) || c == '_' || c == '-';
	}
	return ok ? 0 : sbx__error_set(err, SBX_EINVALID, "invalid sandbox tag");
}

/* ^[A-Za-z_][A-Za-z0-9_]*$ */
int sbx_validate_env_key(const char *key, sbx_error *err)
{
	char q[SBX_QUOTE_SIZE];
	bool ok = key && key[0] && !is_digit((unsigned char)key[0]);

	for (size_t i = 0; ok && key[i]; i++)
		ok = is_alnum((unsigned char)key[i]) || key[i] == '_';
	if (ok)
		return 0;
	return sbx__error_set(err, SBX_EINVALID, "invalid environment variable name: %s",
	                      key ? sbx__quote(q, sizeof(q), key, strlen(key)) : "(null)");
}

/* ---- paths ---- */

enum {
	PATH_NOT_ABSOLUTE = 1 << 0,
	PATH_TOO_LONG = 1 << 1,
	PATH_CONTROL = 1 << 2,
	PATH_BAD_SEGMENT = 1 << 3,
	PATH_LONG_SEGMENT = 1 << 4,
};

/* A control character: C0, DEL, or C1 (U+0080..U+009F, UTF-8 C2 80..C2 9F). */
static bool is_control_at(const unsigned char *p, size_t len, size_t i)
{
	if (p[i] < 0x20 || p[i] == 0x7f)
		return true;
	return p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
}

/* Check one segment p[start..end); `last` when it ends the path. */
static unsigned segment_problems(const char *p, size_t start, size_t end, bool last)
{
	size_t n = end - start;
	if (n == 0)
		return last ? 0 : PATH_BAD_SEGMENT; /* "/a/" ends in one empty segment: allowed */
	if ((n == 1 && p[start] == '.') || (n == 2 && p[start] == '.' && p[start + 1] == '.'))
		return PATH_BAD_SEGMENT;
	return n > SEGMENT_MAX_BYTES ? PATH_LONG_SEGMENT : 0;
}

static unsigned path_problems(const char *path, size_t len)
{
	const unsigned char *u = (const unsigned char *)path;
	unsigned problems = 0;
	size_t start;

	if (len == 0 || path[0] != '/')
		problems |= PATH_NOT_ABSOLUTE;
	if (len > PATH_MAX_BYTES)
		problems |= PATH_TOO_LONG;
	for (size_t i = 0; i < len; i++) {
		if (is_control_at(u, len, i))
			problems |= PATH_CONTROL;
	}
	if (len == 1 && path[0] == '/')
		return problems; /* the root */
	start = (len > 0 && path[0] == '/') ? 1 : 0;
	for (size_t i = start; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		problems |= segment_problems(path, start, i, i == len);
		start = i + 1;
	}
	return problems;
}

/* JSON.stringify-like quoting of at most PATH_QUOTE_BYTES bytes. */
static void quote_path(char *out, size_t outlen, const char *p, size_t len)
{
	size_t o = 0, n = len > PATH_QUOTE_BYTES ? PATH_QUOTE_BYTES : len;

	out[o++] = '"';
	for (size_t i = 0; i < n && o + 8 < outlen; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	if (len > n && o + 4 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '"';
	out[o] = '\0';
}

int sbx_validate_path(const char *path, size_t len, sbx_error *err)
{
	static const struct {
		unsigned bit;
		const char *reason;
	} reasons[] = {
	    {PATH_NOT_ABSOLUTE, "must be absolute"},
	    {PATH_TOO_LONG, "must be at most 4096 bytes"},
	    {PATH_CONTROL, "must not contain NUL or control characters"},
	    {PATH_BAD_SEGMENT, "must not contain empty, \".\" or \"..\" segments"},
	    {PATH_LONG_SEGMENT, "each segment must be at most 255 bytes"},
	};
	char quoted[PATH_QUOTE_BYTES * 6 + 16];
	char why[256];
	size_t w = 0;
	unsigned problems;

	if (!path)
		return sbx__error_set(err, SBX_EINVALID,
		                      "invalid sandbox path null: must be a string");
	if ((problems = path_problems(path, len)) == 0)
		return 0;
	why[0] = '\0';
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		if (problems & reasons[i].bit)
			w += (size_t)snprintf(why + w, sizeof(why) - w, "%s%s", w ? "; " : "",
			                      reasons[i].reason);
	}
	quote_path(quoted, sizeof(quoted), path, len);
	return sbx__error_set(err, SBX_EINVALID, "invalid sandbox path %s: %s", quoted, why);
}

/* ---- allow hosts ---- */

/* A dotted-quad IPv4 address s[0..len): 4 decimal octets 0..255, no leading zeros. */
static bool is_ipv4(const char *s, size_t len)
{
	size_t i = 0;
	for (int octet = 0; octet < 4; octet++) {
		size_t start = i;
		unsigned v = 0;
		if (octet > 0) {
			if (i >= len || s[i] != '.')
				return false;
			start = ++i;
		}
		while (i < len && is_digit((unsigned char)s[i]) && i - start < 3)
			v = v * 10 + (unsigned)(s[i++] - '0');
		if (i == start || v > 255 || (i - start > 1 && s[start] == '0'))
			return false;
	}
	return i == len;
}

/* The seed's host name pattern (docs/contract.md "Definitions"; the same as e2b/names.c, which
 * the contract layer may not use). */
static bool is_hostname(const char *s, size_t len)
{
	size_t labels = 0, start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			unsigned char c = (unsigned char)s[i];
			if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-'))
				return false;
			continue;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false;
		labels++;
		start = i + 1;
	}
	return labels >= 2;
}

static bool all_digits_and_dots(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (!is_digit((unsigned char)s[i]) && s[i] != '.')
			return false;
	}
	return true;
}

/* NULL when valid, else the reason. */
static const char *allow_host_problem(const char *host)
{
	size_t len = strlen(host);
	const char *slash = memchr(host, '/', len);

	if (len == 0)
		return "must not be empty";
	if (slash) {
		const char *pfx = slash + 1;
		size_t plen = len - (size_t)(pfx - host);
		unsigned v = 0;
		if (!is_ipv4(host, (size_t)(slash - host)))
			return "a CIDR must be an IPv4 address followed by /0 to /32";
		if (plen == 0 || plen > 2 || (plen == 2 && pfx[0] == '0'))
			return "CIDR prefix must be between 0 and 32";
		for (size_t i = 0; i < plen; i++) {
			if (!is_digit((unsigned char)pfx[i]))
				return "CIDR prefix must be between 0 and 32";
			v = v * 10 + (unsigned)(pfx[i] - '0');
		}
		return v <= 32 ? NULL : "CIDR prefix must be between 0 and 32";
	}
	if (all_digits_and_dots(host, len))
		return is_ipv4(host, len) ? NULL : "invalid IPv4 address";
	if (len > 2 && host[0] == '*' && host[1] == '.')
		return is_hostname(host + 2, len - 2)
		           ? NULL
		           : "a wildcard must be \"*.\" followed by a lowercase hostname";
	return is_hostname(host, len)
	           ? NULL
	           : "must be a lowercase hostname, \"*.\" and a hostname, an IPv4 address or "
	             "an IPv4 CIDR";
}

int sbx_validate_allow_host(const char *host, sbx_error *err)
{
	char q[SBX_QUOTE_SIZE];
	const char *why;

	if (!host)
		return sbx__error_set(err, SBX_EINVALID,
		                      "invalid allowHosts entry null: must be a "
		                      "string");
	if (!(why = allow_host_problem(host)))
		return 0;
	return sbx__error_set(err, SBX_EINVALID, "invalid allowHosts entry %s: %s",
	                      sbx__quote(q, sizeof(q), host, strlen(host)), why);
}

/* ---- limits ---- */

static bool positive(double v)
{
	return isfinite(v) && v > 0;
}

int sbx_validate_limits(const sbx_limits *limits, sbx_error *err)
{
	int error;

	if (!limits)
		return sbx__error_set(err, SBX_EINVALID, "sandbox limits are required");
	if (!positive(limits->cpu) || !positive(limits->memory_mb) || !positive(limits->disk_mb))
		return sbx__error_set(err, SBX_EINVALID,
		                      "sandbox limits cpu, memoryMb and diskMb must be positive");
	if (limits->egress != SBX_EGRESS_NONE && limits->egress != SBX_EGRESS_ALLOWLIST &&
	    limits->egress != SBX_EGRESS_OPEN)
		return sbx__error_set(err, SBX_EINVALID, "invalid sandbox egress %d",
		                      (int)limits->egress);
	if (limits->egress != SBX_EGRESS_ALLOWLIST)
		return 0; /* allowHosts is checked only for allowlist egress (docs/contract.md
		             "Egress") */
	if (limits->allow_hosts_count > 0 && !limits->allow_hosts)
		return sbx__error_set(err, SBX_EINVALID, "allowHosts is NULL but its count is %zu",
		                      limits->allow_hosts_count);
	for (size_t i = 0; i < limits->allow_hosts_count; i++) {
		if ((error = sbx_validate_allow_host(limits->allow_hosts[i], err)) < 0)
			return error;
	}
	return 0;
}
