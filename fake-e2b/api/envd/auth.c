/*
 * fake-e2b/api/envd/auth.c: envd's access checks (e2b-protocol.md §2, §5):
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
	if (!want) /* not secured: envd without a token accepts everything (§6) */
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

/* v1 signature: "v1_" + base64 nopad(SHA256("<path>:<op>:<user>:<token>[:<exp>]")). */
static int signature_ok(fk_call *c, const char *op, const char *path, const char *user)
{
	fk_req *r = c->req;
	char *sig = fk_query(r, "signature"), *exp = fk_query(r, "signature_expiration");
	int ok = 0;
	if (!sig)
		goto done;
	if (exp) {
		char *end;
		long long e = strtoll(exp, &end, 10);
		if (!*exp || *end || e < (long long)(fk_now_ns() / 1000000000))
			goto done;
	}
	char *plain = NULL;
	int n = exp ? asprintf(&plain, "%s:%s:%s:%s:%s", path ? path : "", op, user ? user : "",
	                       fk_sandbox_token(c->sb), exp)
	            : asprintf(&plain, "%s:%s:%s:%s", path ? path : "", op, user ? user : "",
	                       fk_sandbox_token(c->sb));
	if (n < 0)
		goto done;
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
done:
	free(sig);
	free(exp);
	return ok;
}

int fk_envd_files_auth(fk_call *c, const char *op, const char *path, const char *user)
{
	if (!fk_sandbox_token(c->sb)) /* not secured */
		return 1;
	const char *tok = fk_header(c->req, "X-Access-Token");
	if (tok)
		return fk_envd_token_ok(c->sb, tok);
	return signature_ok(c, op, path, user);
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
