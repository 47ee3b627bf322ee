/*
 * Unit tests of e2b/http_ca.c: the lazily decoded CA bundle. The certificates are made here
 * (P-256 keys): CAs with distinct subjects, two CAs sharing one subject (a renewed root), and
 * leaves signed by them or by a CA outside the bundle.
 */
#include "unit.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "e2b/http_ca.h"

typedef struct cert {
	EVP_PKEY *key;
	X509 *x;
} cert;

static void ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A certificate for `cn`, a CA or not, signed by `by` (NULL: itself). */
static cert make(const char *cn, long serial, bool ca, const cert *by)
{
	cert c = {EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"), X509_new()};
	X509_NAME *n = X509_NAME_new();

	assert_non_null(c.key);
	assert_non_null(c.x);
	assert_int_equal(X509_set_version(c.x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(c.x), serial), 1);
	assert_int_equal(
	    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0),
	    1);
	assert_int_equal(X509_set_subject_name(c.x, n), 1);
	assert_int_equal(X509_set_issuer_name(c.x, by ? X509_get_subject_name(by->x) : n), 1);
	X509_NAME_free(n);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(c.x), -3600));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(c.x), 86400));
	assert_int_equal(X509_set_pubkey(c.x, c.key), 1);
	ext(c.x, by ? by->x : c.x, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
	if (ca)
		ext(c.x, c.x, NID_key_usage, "critical,keyCertSign,cRLSign");
	ext(c.x, c.x, NID_subject_key_identifier, "hash");
	if (by)
		ext(c.x, by->x, NID_authority_key_identifier, "keyid:always");
	assert_true(X509_sign(c.x, by ? by->key : c.key, EVP_sha256()) > 0);
	return c;
}

static void cert_free(cert *c)
{
	X509_free(c->x);
	EVP_PKEY_free(c->key);
}

/* Writes the certificates (as "CERTIFICATE" blocks, with text between them) to a temp file. */
static char *bundle(const cert *const *certs, size_t n, const char *extra_block)
{
	char *path = strdup("/tmp/sbx-unit-ca-XXXXXX");
	int fd;
	FILE *f;

	assert_non_null(path);
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "# certificate %zu\n", i);
		assert_int_equal(PEM_write_X509(f, certs[i]->x), 1);
	}
	if (extra_block)
		fputs(extra_block, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

static int objects(X509_STORE *st)
{
	return sk_X509_OBJECT_num(X509_STORE_get0_objects(st));
}

/* X509_verify_cert's result for `leaf` against `st`; *error gets the verify error. */
static int verify(X509_STORE *st, X509 *leaf, int *error)
{
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int ok;

	assert_non_null(ctx);
	assert_int_equal(X509_STORE_CTX_init(ctx, st, leaf, NULL), 1);
	ok = X509_verify_cert(ctx);
	*error = X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	return ok;
}

typedef struct fixture {
	cert a, b, twin1, twin2, outsider, leaf_b, leaf_twin2, leaf_outsider;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->a = make("sbx unit CA a", 1, true, NULL);
	f->b = make("sbx unit CA b", 2, true, NULL);
	f->twin1 = make("sbx unit CA twin", 3, true, NULL);
	f->twin2 = make("sbx unit CA twin", 4, true, NULL);
	f->outsider = make("sbx unit CA outside", 5, true, NULL);
	f->leaf_b = make("leaf.b", 10, false, &f->b);
	f->leaf_twin2 = make("leaf.twin", 11, false, &f->twin2);
	f->leaf_outsider = make("leaf.outside", 12, false, &f->outsider);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	cert *all[] = {&f->a,        &f->b,      &f->twin1,      &f->twin2,
	               &f->outsider, &f->leaf_b, &f->leaf_twin2, &f->leaf_outsider};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cert_free(all[i]);
	free(f);
	return 0;
}

/* Nothing is decoded at load; a verification decodes its issuer's certificates only. */
static void test_http_ca__decodes_only_what_a_verification_asks_for(void **state)
{
	fixture *f = *state;
	const cert *certs[] = {&f->a, &f->b, &f->twin1, &f->twin2};
	char *path = bundle(certs, 4, NULL);
	X509_STORE *st = X509_STORE_new();
	int error = -1;

	assert_int_equal(sbx__http_ca_load(st, path), 1);
	assert_int_equal(objects(st), 0);
	assert_int_equal(verify(st, f->leaf_b.x, &error), 1);
	assert_int_equal(error, X509_V_OK);
	assert_int_equal(objects(st), 1);
	/* both certificates of the shared subject come in at once; the second signed the leaf */
	assert_int_equal(verify(st, f->leaf_twin2.x, &error), 1);
	assert_int_equal(error, X509_V_OK);
	assert_int_equal(objects(st), 3);
	/* a second verification decodes nothing again */
	assert_int_equal(verify(st, f->leaf_b.x, &error), 1);
	assert_int_equal(objects(st), 3);
	X509_STORE_free(st);
	unlink(path);
	free(path);
}

/* A CA outside the bundle is not trusted, and its lookup decodes nothing. */
static void test_http_ca__a_ca_outside_the_bundle_is_refused(void **state)
{
	fixture *f = *state;
	const cert *certs[] = {&f->a, &f->b};
	char *path = bundle(certs, 2, NULL);
	X509_STORE *st = X509_STORE_new();
	int error = -1;

	assert_int_equal(sbx__http_ca_load(st, path), 1);
	assert_int_equal(verify(st, f->leaf_outsider.x, &error), 0);
	assert_int_equal(error, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
	assert_int_equal(objects(st), 0);
	X509_STORE_free(st);
	unlink(path);
	free(path);
}

/* A block other than CERTIFICATE: the whole bundle is loaded as OpenSSL loads it. */
static void test_http_ca__other_blocks_load_eagerly(void **state)
{
	fixture *f = *state;
	const cert *certs[] = {&f->a, &f->b};
	char *path, *block = NULL;
	BIO *mem = BIO_new(BIO_s_mem());
	X509_STORE *st = X509_STORE_new();
	long n;
	int error = -1;

	/* the twin as a TRUSTED CERTIFICATE (X509_AUX), which only the eager load reads */
	assert_int_equal(PEM_write_bio_X509_AUX(mem, f->twin2.x), 1);
	assert_true((n = BIO_get_mem_data(mem, &block)) > 0);
	block = strndup(block, (size_t)n);
	assert_non_null(block);
	path = bundle(certs, 2, block);
	assert_int_equal(sbx__http_ca_load(st, path), 1);
	assert_int_equal(objects(st), 3);
	assert_int_equal(verify(st, f->leaf_twin2.x, &error), 1);
	X509_STORE_free(st);
	BIO_free(mem);
	free(block);
	unlink(path);
	free(path);
}

/* A missing or empty bundle fails as the eager load does. */
static void test_http_ca__a_missing_or_empty_bundle_fails(void **state)
{
	char *path = bundle(NULL, 0, NULL);
	X509_STORE *st = X509_STORE_new();
	(void)state;

	assert_int_equal(sbx__http_ca_load(st, path), 0);
	assert_int_equal(sbx__http_ca_load(st, "/nonexistent/sbx-unit-ca.pem"), 0);
	X509_STORE_free(st);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_http_ca__decodes_only_what_a_verification_asks_for),
	    cmocka_unit_test(test_http_ca__a_ca_outside_the_bundle_is_refused),
	    cmocka_unit_test(test_http_ca__other_blocks_load_eagerly),
	    cmocka_unit_test(test_http_ca__a_missing_or_empty_bundle_fails),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
