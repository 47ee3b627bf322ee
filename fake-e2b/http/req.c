/*
 * fake-e2b/http/req.c: request accessors: headers, query arguments decoded
 * from the raw URI, the JSON body. See http.h.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

/* ---- bounded JSON parsing ----------------------------------------------------------------------
 * jansson's parser costs far more than the text for small values: an empty array is three bytes
 * of `[],` and about 130 of memory (its struct and an 8-slot table), so 8 MiB of them took
 * ~370 MB. Its depth limit (2048) bounds recursion, not size. So every request body is parsed
 * under a byte budget: jansson's allocator is ours, and while this thread parses, what it holds
 * (malloc_usable_size, freed blocks given back) may not pass FK_JSON_BUDGET(len); past it the
 * allocation fails and so does the parse (the caller's "not JSON" answer). */
static __thread int budget_on;
static __thread size_t budget_used, budget_max;

static void *budget_malloc(size_t n)
{
	if (budget_on && (n > budget_max || budget_used > budget_max - n))
		return NULL;
	void *p = malloc(n);
	if (p && budget_on)
		budget_used += malloc_usable_size(p);
	return p;
}

static void budget_free(void *p)
{
	if (p && budget_on) {
		size_t n = malloc_usable_size(p);
		budget_used = n < budget_used ? budget_used - n : 0;
	}
	free(p);
}

/* Before main: no jansson value exists yet and no other thread runs. */
__attribute__((constructor)) static void budget_install(void)
{
	json_set_alloc_funcs(budget_malloc, budget_free);
}

json_t *fk_json_parse(const void *buf, size_t len, size_t flags)
{
	budget_on = 1;
	budget_used = 0;
	budget_max = FK_JSON_BUDGET(len);
	json_t *v = json_loadb(buf, len, flags, NULL);
	budget_on = 0;
	return v;
}

const char *fk_header(fk_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long fk_url_decode(char *s, int plus)
{
	char *w = s;
	for (const char *p = s; *p; p++) {
		if (*p == '%') {
			int hi = hexval((unsigned char)p[1]),
			    lo = hi < 0 ? -1 : hexval((unsigned char)p[2]);
			if (hi < 0 || lo < 0)
				return -1;
			*w++ = (char)(hi * 16 + lo);
			p += 2;
		} else if (*p == '+' && plus) {
			*w++ = ' ';
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	return (long)(w - s);
}

char *fk_query_joined(fk_req *r, const char *name)
{
	const char *q = r->uri ? strchr(r->uri, '?') : NULL;
	char *out = NULL;
	size_t len = 0;
	for (q = q ? q + 1 : NULL; q && *q;) {
		size_t n = strcspn(q, "&");
		char *pair = strndup(q, n);
		char *eq = pair ? strchr(pair, '=') : NULL;
		if (eq)
			*eq = '\0';
		if (pair && eq && fk_url_decode(pair, 1) >= 0 && !strcmp(pair, name) &&
		    fk_url_decode(eq + 1, 1) >= 0) {
			size_t vl = strlen(eq + 1);
			char *p = realloc(out, len + vl + 2);
			if (p) {
				out = p;
				if (len)
					out[len++] = ',';
				memcpy(out + len, eq + 1, vl + 1);
				len += vl;
			}
		}
		free(pair);
		q += n;
		if (*q == '&')
			q++;
	}
	return out;
}

char *fk_query(fk_req *r, const char *name)
{
	const char *q = r->uri ? strchr(r->uri, '?') : NULL;
	if (!q)
		return NULL;
	q++;
	while (*q) {
		size_t n = strcspn(q, "&");
		char *pair = strndup(q, n);
		if (!pair)
			return NULL;
		char *eq = strchr(pair, '=');
		char *val = NULL;
		if (eq)
			*eq = '\0';
		if (fk_url_decode(pair, 1) >= 0 && strcmp(pair, name) == 0) {
			val = strdup(eq ? eq + 1 : "");
			if (val && fk_url_decode(val, 1) < 0) {
				free(val);
				val = NULL;
			}
			free(pair);
			return val;
		}
		free(pair);
		q += n;
		if (*q == '&')
			q++;
	}
	return NULL;
}

char *fk_query_strict(fk_req *r, const char *name, int *bad)
{
	const char *q = r->uri ? strchr(r->uri, '?') : NULL;
	*bad = 0;
	for (q = q ? q + 1 : NULL; q && *q;) {
		size_t n = strcspn(q, "&");
		char *pair = strndup(q, n);
		if (!pair)
			return NULL;
		char *eq = strchr(pair, '=');
		if (eq)
			*eq = '\0';
		if (fk_url_decode(pair, 1) >= 0 && strcmp(pair, name) == 0) {
			const char *raw = eq ? eq + 1 : "";
			size_t rawlen = strlen(raw);
			char *val = strdup(raw);
			long len = val ? fk_url_decode(val, 1) : -1;
			free(pair);
			if (len < 0 || strlen(val) != (size_t)len || rawlen > 65536) {
				free(val);
				*bad = 1;
				return NULL;
			}
			return val;
		}
		free(pair);
		q += n;
		if (*q == '&')
			q++;
	}
	return NULL;
}

json_t *fk_query_json(fk_req *r)
{
	json_t *q = json_object();
	const char *s = r->uri ? strchr(r->uri, '?') : NULL;
	if (!s)
		return q;
	for (s++; *s;) {
		size_t n = strcspn(s, "&");
		char *pair = strndup(s, n);
		if (pair && *pair) {
			char *eq = strchr(pair, '=');
			if (eq)
				*eq = '\0';
			if (fk_url_decode(pair, 1) >= 0 && (!eq || fk_url_decode(eq + 1, 1) >= 0))
				json_object_set_new(q, pair, json_string(eq ? eq + 1 : ""));
		}
		free(pair);
		s += n;
		if (*s == '&')
			s++;
	}
	return q;
}

json_t *fk_body_json(fk_req *r, int allow_empty)
{
	if (!r->body || r->body_len == 0)
		return allow_empty ? json_object() : NULL;
	return fk_json_parse(r->body, r->body_len, 0);
}

long fk_req_elapsed_ms(fk_req *r)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (long)((t1.tv_sec - r->t0.tv_sec) * 1000 + (t1.tv_nsec - r->t0.tv_nsec) / 1000000);
}

int fk_req_socket(fk_req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}
