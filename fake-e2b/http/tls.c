/*
 * fake-e2b/http/tls.c: see tls.h.
 */
#define _GNU_SOURCE
#include "tls.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static EVP_PKEY *new_key(void)
{
	return EVP_EC_gen("P-256");
}

static int add_ext(X509 *issuer, X509 *cert, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	int ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A certificate for `key` named `cn`, signed by (issuer, issuer_key), or self-signed. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, long days, X509 *issuer, EVP_PKEY *issuer_key,
                       const char *san)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f;
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		goto fail;
	X509_set_version(x, 2);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L);
	X509_set_pubkey(x, key);
	X509_NAME *name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"fake-e2b", -1,
	                           -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
	X509 *iss = issuer ? issuer : x;
	if (!san) {
		if (add_ext(iss, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
		    add_ext(iss, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
		    add_ext(iss, x, NID_subject_key_identifier, "hash") < 0)
			goto fail;
	} else if (add_ext(iss, x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	           add_ext(iss, x, NID_key_usage, "critical,digitalSignature,keyEncipherment") <
	               0 ||
	           add_ext(iss, x, NID_ext_key_usage, "serverAuth") < 0 ||
	           add_ext(iss, x, NID_subject_alt_name, san) < 0 ||
	           add_ext(iss, x, NID_authority_key_identifier, "keyid") < 0) {
		goto fail;
	}
	if (!X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()))
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

static int write_pem(const char *path, mode_t mode, X509 *cert, EVP_PKEY *key)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fchmod(fd, mode);
	int ok = cert ? PEM_write_X509(f, cert)
	              : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static char *pem_of(X509 *cert, X509 *ca, EVP_PKEY *key)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL, *p;
	if (!b)
		return NULL;
	int ok = key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
	             : PEM_write_bio_X509(b, cert) && (!ca || PEM_write_bio_X509(b, ca));
	long n = ok ? BIO_get_mem_data(b, &p) : 0;
	if (n > 0 && (out = malloc((size_t)n + 1))) {
		memcpy(out, p, (size_t)n);
		out[n] = '\0';
	}
	BIO_free(b);
	return out;
}

/* Load <dir>/ca.pem + ca.key when both are there, else make and write them. */
static int ca_load_or_make(const char *dir, X509 **ca, EVP_PKEY **key, char *why, size_t cap)
{
	char cp[4096], kp[4096];
	snprintf(cp, sizeof(cp), "%s/ca.pem", dir);
	snprintf(kp, sizeof(kp), "%s/ca.key", dir);
	FILE *fc = fopen(cp, "r"), *fk = fopen(kp, "r");
	*ca = fc ? PEM_read_X509(fc, NULL, NULL, NULL) : NULL;
	*key = fk ? PEM_read_PrivateKey(fk, NULL, NULL, NULL) : NULL;
	if (fc)
		fclose(fc);
	if (fk)
		fclose(fk);
	if (*ca && *key && X509_check_private_key(*ca, *key) == 1)
		return 0;
	X509_free(*ca);
	EVP_PKEY_free(*key);
	*key = new_key();
	*ca = *key ? make_cert(*key, "fake-e2b local CA", 3650, NULL, NULL, NULL) : NULL;
	if (!*ca || write_pem(kp, 0600, NULL, *key) < 0 || write_pem(cp, 0644, *ca, NULL) < 0) {
		snprintf(why, cap, "cannot make the CA in %s", dir);
		return -1;
	}
	return 0;
}

int fk_tls_setup(const char *dir, const char *domain, fk_tls_pem *out, char *why, size_t cap)
{
	X509 *ca = NULL, *leaf = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	char san[1024];
	int rc = -1;
	memset(out, 0, sizeof(*out));
	if (mkdir(dir, 0700) < 0 && access(dir, W_OK) < 0) {
		snprintf(why, cap, "cannot use %s for the CA", dir);
		return -1;
	}
	if (ca_load_or_make(dir, &ca, &ca_key, why, cap) < 0)
		goto done;
	snprintf(san, sizeof(san), "DNS:%s,DNS:*.%s,DNS:localhost,IP:127.0.0.1", domain, domain);
	if (!(key = new_key()) || !(leaf = make_cert(key, domain, 365, ca, ca_key, san)) ||
	    !(out->cert = pem_of(leaf, ca, NULL)) || !(out->key = pem_of(NULL, NULL, key))) {
		snprintf(why, cap, "cannot issue the server certificate for *.%s", domain);
		fk_tls_pem_free(out);
		goto done;
	}
	rc = 0;
done:
	X509_free(ca);
	X509_free(leaf);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return rc;
}

void fk_tls_pem_free(fk_tls_pem *p)
{
	free(p->cert);
	free(p->key);
	p->cert = p->key = NULL;
}
