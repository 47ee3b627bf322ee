/*
 * fake-e2b/api/control/checks.c: validation shared by the control handlers
 * (timeouts, egress rules (docs/protocol.md "Egress"), string maps, page cursors) and the 404 of an
 * unknown sandbox.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "control.h"

enum MHD_Result fk_control_not_found(fk_call *c)
{
	return fk_reply_error(c->req, 404,
	                      "Sandbox \"%s\" doesn't exist or you don't have access to it", c->id);
}

const char *fk_control_timeout_field(json_t *body, const char *key, long dflt, int required,
                                     long *out)
{
	json_t *t = json_object_get(body, key);
	if (!t || json_is_null(t)) {
		if (required)
			return "validation error: timeout is required";
		*out = dflt;
		return NULL;
	}
	if (!json_is_integer(t))
		return "validation error: timeout must be an integer";
	json_int_t v = json_integer_value(t);
	if (v <= 0)
		return "Timeout must be greater than 0";
	if (v > FK_MAX_TIMEOUT_S)
		return "Timeout cannot be greater than 24 hours";
	*out = (long)v;
	return NULL;
}

static int is_ip_or_cidr(const char *s)
{
	char buf[64];
	unsigned char addr[16];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	int v4 = inet_pton(AF_INET, buf, addr) == 1,
	    v6 = !v4 && inet_pton(AF_INET6, buf, addr) == 1;
	if (!v4 && !v6)
		return 0;
	if (slash) {
		char *end;
		long bits = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || bits < 0 || bits > (v4 ? 32 : 128))
			return 0;
	}
	return 1;
}

static int has_string(json_t *arr, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) if (json_is_string(v) &&
	                                  strcmp(json_string_value(v), s) == 0) return 1;
	return 0;
}

const char *fk_control_validate_network(json_t *net)
{
	if (!net || json_is_null(net))
		return NULL;
	if (!json_is_object(net))
		return "network must be an object";
	json_t *allow = json_object_get(net, "allowOut"), *deny = json_object_get(net, "denyOut");
	if ((allow && !json_is_array(allow)) || (deny && !json_is_array(deny)))
		return "network.allowOut and network.denyOut must be arrays";
	json_t *apt = json_object_get(net, "allowPublicTraffic");
	if (apt && !json_is_boolean(apt))
		return "network.allowPublicTraffic must be a boolean";
	size_t i;
	json_t *v;
	int domains = 0;
	json_array_foreach(deny, i, v)
	{
		if (!json_is_string(v) || !is_ip_or_cidr(json_string_value(v)))
			return "network.denyOut entries must be IP addresses or CIDR blocks";
		if (strcmp(json_string_value(v), "0.0.0.0") == 0)
			return "invalid denied CIDR 0.0.0.0";
	}
	json_array_foreach(allow, i, v)
	{
		if (!json_is_string(v) || !*json_string_value(v))
			return "network.allowOut entries must be non-empty strings";
		if (!is_ip_or_cidr(json_string_value(v)))
			domains = 1;
	}
	if (domains && !has_string(deny, "0.0.0.0/0"))
		return "When specifying allowed domains in allow out, you must include "
		       "'ALL_TRAFFIC' in deny out (0.0.0.0/0)";
	return NULL;
}

int fk_control_egress_none(json_t *allow_internet, json_t *net)
{
	json_t *allow = json_object_get(net, "allowOut"), *deny = json_object_get(net, "denyOut");
	if (json_is_false(allow_internet))
		return json_array_size(allow) == 0;
	return has_string(deny, "0.0.0.0/0") && json_array_size(allow) == 0;
}

const char *fk_control_string_map_check(json_t *m, const char *what, char *why, size_t cap)
{
	static const char type[] = "validation error: metadata and envVars must map strings to "
	                           "strings";
	const char *k;
	json_t *v;
	if (!m || json_is_null(m))
		return NULL;
	if (!json_is_object(m))
		return type;
	size_t n = json_object_size(m), total = 0;
	if (n > FK_CREATE_MAP_MAX_ENTRIES) {
		snprintf(why, cap, "validation error: %s has %zu entries, at most %d", what, n,
		         FK_CREATE_MAP_MAX_ENTRIES);
		return why;
	}
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v))
			return type;
		size_t kl = strlen(k), vl = json_string_length(v);
		if (kl > FK_CREATE_MAP_MAX_KEY) {
			snprintf(why, cap, "validation error: a key of %s is %zu bytes, at most %d",
			         what, kl, FK_CREATE_MAP_MAX_KEY);
			return why;
		}
		if (vl > FK_CREATE_MAP_MAX_VALUE) {
			snprintf(why, cap,
			         "validation error: a value of %s is %zu bytes, at most %d", what,
			         vl, FK_CREATE_MAP_MAX_VALUE);
			return why;
		}
		total += kl + vl;
	}
	if (total > FK_CREATE_MAP_MAX_TOTAL) {
		snprintf(why, cap,
		         "validation error: %s is %zu bytes (keys and values), at most %d", what,
		         total, FK_CREATE_MAP_MAX_TOTAL);
		return why;
	}
	return NULL;
}

/* ---- page cursors ---- */

char *fk_control_cursor_make(int64_t ns, const char *id)
{
	char plain[128], t[48];
	unsigned char enc[200];
	fk_format_time(t, sizeof(t), ns);
	int n = snprintf(plain, sizeof(plain), "%s__%s", t, id);
	if (n < 0 || (size_t)n >= sizeof(plain))
		return NULL;
	int m = EVP_EncodeBlock(enc, (const unsigned char *)plain, n);
	for (int i = 0; i < m; i++)
		enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
	while (m > 0 && enc[m - 1] == '=')
		m--;
	return strndup((const char *)enc, (size_t)m);
}

int fk_control_cursor_parse(const char *tok, int64_t *ns, char *id, size_t id_len)
{
	size_t n = strlen(tok), i;
	if (n == 0 || n > 160 || n % 4 == 1)
		return -1;
	char b64[168];
	unsigned char plain[168];
	for (i = 0; i < n; i++)
		b64[i] = tok[i] == '-' ? '+' : tok[i] == '_' ? '/' : tok[i];
	size_t pad = (4 - n % 4) % 4;
	for (size_t k = 0; k < pad; k++)
		b64[i++] = '=';
	b64[i] = '\0';
	int m = EVP_DecodeBlock(plain, (const unsigned char *)b64, (int)i);
	if (m < (int)pad)
		return -1;
	m -= (int)pad; /* EVP_DecodeBlock counts padding as zero bytes */
	plain[m] = '\0';
	char *sep = strstr((char *)plain, "__");
	if (!sep || strlen(sep + 2) != id_len)
		return -1;
	*sep = '\0';
	struct tm tm = {0};
	long frac = 0;
	char *rest = strptime((char *)plain, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest || sscanf(rest, ".%9ldZ", &frac) != 1)
		return -1;
	*ns = (int64_t)timegm(&tm) * FK_NS + frac;
	memcpy(id, sep + 2, id_len + 1);
	return 0;
}

/* A buildID as Go's uuid.Parse takes it in a path: 36 characters 8-4-4-4-12, or 32 hex. */
int fk_control_uuid_ok(const char *s)
{
	size_t n = strlen(s), hex = 0;
	if (n != 36 && n != 32)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (n == 36 && (i == 8 || i == 13 || i == 18 || i == 23)) {
			if (s[i] != '-')
				return 0;
		} else if ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		           (s[i] >= 'A' && s[i] <= 'F')) {
			hex++;
		} else {
			return 0;
		}
	}
	return hex == 32;
}
