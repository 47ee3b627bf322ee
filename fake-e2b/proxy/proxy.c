/*
 * fake-e2b/proxy/proxy.c: see proxy.h. libcurl speaks HTTP/1.1 to the
 * sandbox's port over the socket the runtime connected inside the sandbox's
 * network namespace (CURLOPT_OPENSOCKETFUNCTION); the answer is buffered and
 * replied with its status and end-to-end headers.
 */
#define _GNU_SOURCE
#include "proxy.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct upstream {
	int fd; /* connected in the box; handed to curl once */
	unsigned char *body;
	size_t len;
	int too_big;
	struct curl_slist *headers; /* response headers to relay, "Name: value" */
} upstream;

static curl_socket_t open_socket(void *cls, curlsocktype purpose, struct curl_sockaddr *addr)
{
	upstream *u = cls;
	(void)purpose;
	(void)addr;
	int fd = u->fd;
	u->fd = -1;
	return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static int sockopt(void *cls, curl_socket_t fd, curlsocktype purpose)
{
	(void)cls;
	(void)fd;
	(void)purpose;
	return CURL_SOCKOPT_ALREADY_CONNECTED;
}

static size_t on_body(char *p, size_t sz, size_t n, void *cls)
{
	upstream *u = cls;
	size_t len = sz * n;
	if (len > FK_PROXY_MAX_BODY - u->len) {
		u->too_big = 1;
		return 0;
	}
	unsigned char *nb = realloc(u->body, u->len + len + 1);
	if (!nb)
		return 0;
	memcpy(nb + u->len, p, len);
	u->body = nb;
	u->len += len;
	return len;
}

/* Hop-by-hop headers (RFC 9110 §7.6.1) and the ones MHD sets itself are not relayed. */
static int hop_header(const char *h, size_t n)
{
	static const char *const hop[] = {"connection",         "keep-alive", "transfer-encoding",
	                                  "content-length",     "upgrade",    "proxy-connection",
	                                  "proxy-authenticate", "te",         "trailer"};
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strlen(hop[i]) == n && strncasecmp(h, hop[i], n) == 0)
			return 1;
	return 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *cls)
{
	upstream *u = cls;
	size_t len = sz * n;
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new status line: a 1xx answer before */
		curl_slist_free_all(u->headers);
		u->headers = NULL;
		return len;
	}
	const char *colon = memchr(p, ':', len);
	if (!colon || hop_header(p, (size_t)(colon - p)))
		return len;
	size_t e = len;
	while (e > 0 && (p[e - 1] == '\r' || p[e - 1] == '\n'))
		e--;
	char *line = strndup(p, e);
	if (line) {
		struct curl_slist *l = curl_slist_append(u->headers, line);
		if (l)
			u->headers = l;
		free(line);
	}
	return len;
}

typedef struct fwd {
	struct curl_slist *list;
} fwd;

/* Request headers to forward: all but Host, hop-by-hop ones, Expect and the traffic token. */
static enum MHD_Result add_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value)
{
	fwd *f = cls;
	(void)kind;
	size_t n = strlen(key);
	if (hop_header(key, n) || !strcasecmp(key, "host") || !strcasecmp(key, "expect") ||
	    !strcasecmp(key, "e2b-traffic-access-token"))
		return MHD_YES;
	char *line = NULL;
	if (asprintf(&line, "%s: %s", key, value) >= 0) {
		struct curl_slist *l = curl_slist_append(f->list, line);
		if (l)
			f->list = l;
	}
	free(line);
	return MHD_YES;
}

static enum MHD_Result reply_502(fk_call *c, const char *msg)
{
	return fk_reply_json(c->req, 502,
	                     json_pack("{s:s,s:s,s:i,s:i}", "sandboxId", c->sandbox_id, "message",
	                               msg, "port", (int)c->port, "code", 502));
}

/* The traffic token of a private sandbox (constant time). */
static int traffic_ok(fk_call *c, const fk_sandbox *sb)
{
	if (!sb->private_traffic)
		return 1;
	const char *t = fk_header(c->req, "e2b-traffic-access-token");
	size_t n = strlen(sb->traffic_token);
	return t && strlen(t) == n && CRYPTO_memcmp(t, sb->traffic_token, n) == 0;
}

enum MHD_Result fk_proxy_forward(fk_call *c)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	fk_sandbox *sb = fk_registry_acquire(g, c->sandbox_id);
	if (!sb || !fk_sandbox_running(g, sb)) {
		fk_sandbox_release(g, sb);
		return reply_502(c, "The sandbox was not found");
	}
	int allowed = traffic_ok(c, sb);
	/* network.maskRequestHost: the Host the sandbox's server sees, "${PORT}" its port */
	char *mask = NULL;
	fk_registry_lock(g);
	json_t *m = json_object_get(sb->network, "maskRequestHost");
	if (json_is_string(m) && *json_string_value(m) &&
	    !strpbrk(json_string_value(m), "\r\n")) /* one header line, nothing injected */
		mask = strdup(json_string_value(m));
	fk_registry_unlock(g);
	fk_sandbox_release(g, sb);
	if (!allowed) {
		free(mask);
		return fk_reply_error(r, 403, "missing or invalid e2b-traffic-access-token");
	}
	c->admitted = 1;
	if (c->admitting) { /* the headers pass: the body is read, then this runs again */
		free(mask);
		return MHD_YES;
	}
	upstream u = {.fd = -1};
	fk_err err = {0};
	if (fk_box_connect(c->app->rt, c->sandbox_id, (uint16_t)c->port, 5000, &u.fd, &err) < 0) {
		free(mask);
		return reply_502(c, "The sandbox is running but port is not open");
	}
	CURL *h = curl_easy_init();
	char url[8192];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", c->port, r->uri);
	fwd f = {NULL};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_request_header, &f);
	f.list = curl_slist_append(f.list, "Expect:");
	if (mask) {
		char port[8], *host = NULL, *at = strstr(mask, "${PORT}");
		snprintf(port, sizeof(port), "%u", c->port);
		if (asprintf(&host, "Host: %.*s%s%s", at ? (int)(at - mask) : (int)strlen(mask),
		             mask, at ? port : "", at ? at + 7 : "") >= 0) {
			struct curl_slist *l = curl_slist_append(f.list, host);
			if (l)
				f.list = l;
		}
		free(host);
		free(mask);
	}
	enum MHD_Result ret;
	if (!h) {
		close(u.fd);
		curl_slist_free_all(f.list);
		return fk_reply_error(r, 500, "out of memory");
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &u);
	curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, sockopt);
	curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, f.list);
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 300000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &u);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &u);
	if (r->body_len) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	}
	CURLcode rc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h); /* closes the socket */
	if (u.fd >= 0)
		close(u.fd);
	curl_slist_free_all(f.list);
	if (rc != CURLE_OK || status < 100) {
		ret = u.too_big ? fk_reply_error(r, 502, "the answer is larger than %u MiB",
		                                 FK_PROXY_MAX_BODY >> 20)
		                : reply_502(c, "The sandbox's server did not answer");
	} else {
		struct MHD_Response *resp = MHD_create_response_from_buffer(
		    u.len, u.body ? u.body : (void *)"", MHD_RESPMEM_MUST_COPY);
		for (struct curl_slist *l = u.headers; resp && l; l = l->next) {
			char *colon = strchr(l->data, ':');
			if (!colon)
				continue;
			*colon = '\0';
			const char *v = colon + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			MHD_add_response_header(resp, l->data, v);
		}
		ret = fk_reply_response(r, (unsigned)status, resp);
	}
	curl_slist_free_all(u.headers);
	free(u.body);
	return ret;
}
