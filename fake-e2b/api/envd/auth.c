/*
 * fake-e2b/api/envd/auth.c: envd's access checks (docs/protocol.md "Reaching envd";
 * docs/internals/wire.md "Routing to envd", "envd's HTTP routes"):
 * the proxy's 502 for an unknown or paused sandbox, X-Access-Token (constant
 * time), the Basic username, v1 signatures of /files URLs.
 */
#define _GNU_SOURCE
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "clock.h"
#include "envd.h"

enum MHD_Result fk_envd_not_found_502(fk_req *r, const char *id)
{
	return fk_reply_json(r, 502,
	                     json_pack("{s:s,s:s,s:i}", "sandboxId", id ? id : "", "message",
	                               "The sandbox was not found", "code", 502));
}

enum MHD_Result fk_envd_unauthorized(fk_req *r)
{
	return fk_reply_error(r, 401,
	                      "unauthorized access, please provide a valid access token or "
	                      "method signing if supported");
}

int fk_envd_token_ok(const fk_sandbox *sb, const char *given)
{
	const char *want = fk_sandbox_token(sb);
	if (!want) /* not secured: envd without a token accepts everything (docs/protocol.md
	              "Lifecycle") */
		return 1;
	size_t n = strlen(want);
	return given && strlen(given) == n && CRYPTO_memcmp(want, given, n) == 0;
}

char *fk_envd_basic_user(const char *h, int *bad)
{
	*bad = 0;
	if (!h)
		return NULL;
	if (strncasecmp(h, "Basic ", 6) != 0) {
		*bad = 1;
		return NULL;
	}
	unsigned char *dec = NULL;
	long n = fk_b64_decode(h + 6, &dec);
	if (n < 0) {
		*bad = 1;
		return NULL;
	}
	char *user = strndup((char *)dec, (size_t)n);
	free(dec);
	if (user)
		user[strcspn(user, ":")] = '\0';
	return user;
}

/* v1 signature: "v1_" + base64 nopad(SHA256("<path>:<op>:<user>:<token>[:<exp>]")); `exp` is
 * the signature_expiration query (NULL: none; checked by the caller). */
static int signature_matches(const char *sig, const char *exp, const char *op, const char *path,
                             const char *user, const char *token)
{
	char *plain = NULL;
	int ok = 0;
	int n =
	    exp ? asprintf(&plain, "%s:%s:%s:%s:%s", path ? path : "", op, user ? user : "", token,
	                   exp)
	        : asprintf(&plain, "%s:%s:%s:%s", path ? path : "", op, user ? user : "", token);
	if (n < 0)
		return 0;
	unsigned char md[32];
	unsigned mdlen = 0;
	EVP_Digest(plain, (size_t)n, md, &mdlen, EVP_sha256(), NULL);
	free(plain);
	char *b64 = fk_b64_encode(md, mdlen);
	if (b64) {
		size_t bl = strlen(b64);
		while (bl && b64[bl - 1] == '=')
			b64[--bl] = '\0';
		ok = strncmp(sig, "v1_", 3) == 0 && strlen(sig + 3) == bl &&
		     CRYPTO_memcmp(sig + 3, b64, bl) == 0;
	}
	free(b64);
	return ok;
}

/* envd's validateSigning for /files: NULL when the token header or the URL's signature allows
 * the operation, else envd's message (the signature is compared before its expiration). */
static const char *signature_check(fk_call *c, const char *op, const char *path, const char *user)
{
	fk_req *r = c->req;
	char *sig = fk_query(r, "signature"), *exp = fk_query(r, "signature_expiration");
	const char *why = NULL;
	long long e = 0;
	if (!sig) {
		why = "missing signature query parameter";
	} else if (exp) {
		char *end;
		e = strtoll(exp, &end, 10);
		if (!*exp || *end)
			why =
			    "invalid signature"; /* envd's parser refuses it earlier; still a 4xx */
	}
	if (!why && !signature_matches(sig, exp, op, path, user, fk_sandbox_token(c->sb)))
		why = "invalid signature";
	if (!why && exp && e < (long long)(fk_now_ns() / 1000000000))
		why = "signature is already expired";
	free(sig);
	free(exp);
	return why;
}

typedef struct signed_find {
	const char *sig, *exp, *op, *path, *user;
	char *out;
	size_t cap;
	int found;
} signed_find;

static void signed_one(fk_sandbox *sb, void *ud)
{
	signed_find *f = ud;
	const char *token = fk_sandbox_token(sb);
	if (f->found || sb->deleted || !token)
		return;
	if (signature_matches(f->sig, f->exp, f->op, f->path, f->user, token)) {
		snprintf(f->out, f->cap, "%s", sb->id);
		f->found = 1;
	}
}

int fk_envd_signed_sandbox(fk_call *c, char *out, size_t cap)
{
	fk_req *r = c->req;
	const char *op = !strcmp(r->method, "POST") ? "write" : "read";
	/* the signature names the sandbox even when expired: envd then answers that it is */
	char *sig = fk_query(r, "signature"), *exp = fk_query(r, "signature_expiration");
	if (!sig) {
		free(exp);
		return -1;
	}
	int bad = 0;
	char *path = fk_query_strict(r, "path", &bad), *user = fk_query_strict(r, "username", &bad);
	signed_find f = {sig, exp, op, path, user, out, cap, 0};
	if (!bad)
		fk_registry_foreach(c->app->reg, signed_one, &f);
	free(sig);
	free(exp);
	free(path);
	free(user);
	return f.found ? 0 : -1;
}

const char *fk_envd_files_auth(fk_call *c, const char *op, const char *path, const char *user)
{
	if (!fk_sandbox_token(c->sb)) /* not secured */
		return NULL;
	const char *tok = fk_header(c->req, "X-Access-Token");
	if (tok && *tok)
		return fk_envd_token_ok(c->sb, tok)
		           ? NULL
		           : "access token present in header but does not match";
	return signature_check(c, op, path, user);
}

int fk_envd_user_exists(fk_call *c, const char *user)
{
	if (!user)
		return 1;
	fk_entry e = {0};
	int rc = fk_file_stat(c->app->rt, c->sb->id, "/", user, &e, NULL);
	fk_entry_clear(&e);
	return rc != FK_ENOUSER;
}
