/*
 * e2b/http_ca.c: the lazily decoded CA bundle (http_ca.h). The store gets an X509_LOOKUP of
 * its own whose get_by_subject decodes the bundle's certificates with the asked subject,
 * adds them to the store and hands one back, as OpenSSL's hashed-directory lookup does with
 * its files (the X509_LOOKUP_meth_new(3) contract: add to the store, set1 into `ret`, drop
 * the extra reference).
 */
#include "e2b/http_ca.h"

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/alloc.h"

typedef struct ca_entry {
	unsigned char *der; /* OPENSSL_malloc'd by PEM_read_bio */
	long len;
	X509_NAME *subject;
	bool tried; /* under ca_bundle.mu: decoded (and added) once, whatever the outcome */
} ca_entry;

typedef struct ca_bundle {
	pthread_mutex_t mu;
	ca_entry *v;
	size_t n, cap;
} ca_bundle;

static void bundle_free(ca_bundle *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		OPENSSL_free(b->v[i].der);
		X509_NAME_free(b->v[i].subject);
	}
	sbx__free(b->v);
	pthread_mutex_destroy(&b->mu);
	sbx__free(b);
}

/* Steps over one DER element of universal tag `tag` (-1: any), keeping its start in *start. */
static bool der_skip(const unsigned char **p, const unsigned char *end, int tag,
                     const unsigned char **start)
{
	const unsigned char *q = *p;
	long len;
	int t, cls, ret;

	if (q >= end)
		return false;
	ret = ASN1_get_object(&q, &len, &t, &cls, end - *p);
	if ((ret & 0x80) || (ret & 1) || (tag >= 0 && (t != tag || cls != V_ASN1_UNIVERSAL)))
		return false;
	if (start)
		*start = *p;
	*p = q + len;
	return true;
}

/* Enters the constructed SEQUENCE at *p: *p and *end become its contents. */
static bool der_enter(const unsigned char **p, const unsigned char **end)
{
	const unsigned char *q = *p;
	long len;
	int t, cls, ret;

	if (q >= *end)
		return false;
	ret = ASN1_get_object(&q, &len, &t, &cls, *end - *p);
	if ((ret & 0x80) || (ret & 1) || !(ret & V_ASN1_CONSTRUCTED) || t != V_ASN1_SEQUENCE ||
	    cls != V_ASN1_UNIVERSAL)
		return false;
	*p = q;
	*end = q + len;
	return true;
}

/*
 * The subject of a DER Certificate (RFC 5280 4.1: SEQUENCE { tbsCertificate SEQUENCE {
 * [0] version OPTIONAL, serialNumber, signature, issuer, validity, subject, ... } ... }),
 * decoded alone. NULL when it is not where it must be.
 */
static X509_NAME *der_subject(const unsigned char *der, long len)
{
	const unsigned char *p = der, *end = der + len, *s = NULL, *q;
	long l;
	int t, cls, ret;

	if (!der_enter(&p, &end) || !der_enter(&p, &end))
		return NULL;
	q = p;
	ret = ASN1_get_object(&q, &l, &t, &cls, end - p);
	if (ret & 0x80)
		return NULL;
	if (cls == V_ASN1_CONTEXT_SPECIFIC && t == 0)
		p = q + l; /* [0] EXPLICIT version */
	if (!der_skip(&p, end, V_ASN1_INTEGER, NULL) || !der_skip(&p, end, V_ASN1_SEQUENCE, NULL) ||
	    !der_skip(&p, end, V_ASN1_SEQUENCE, NULL) ||
	    !der_skip(&p, end, V_ASN1_SEQUENCE, NULL) || !der_skip(&p, end, V_ASN1_SEQUENCE, &s))
		return NULL;
	return d2i_X509_NAME(NULL, &s, p - s);
}

/*
 * The bundle's certificates, undecoded. NULL (nothing allocated) when `file` holds anything
 * this cannot index exactly, or cannot be read.
 */
static ca_bundle *bundle_read(const char *file)
{
	ca_bundle *b = NULL;
	BIO *in;
	char *name = NULL, *header = NULL;
	unsigned char *data = NULL;
	long len = 0;
	bool ok = false;

	if (!(in = BIO_new_file(file, "r")))
		return NULL;
	if (!(b = sbx__calloc(1, sizeof(*b))))
		goto out;
	pthread_mutex_init(&b->mu, NULL);
	ERR_set_mark();
	while (PEM_read_bio(in, &name, &header, &data, &len) == 1) {
		bool cert = strcmp(name, PEM_STRING_X509) == 0 && header[0] == '\0';
		X509_NAME *subject = cert ? der_subject(data, len) : NULL;
		OPENSSL_free(name);
		OPENSSL_free(header);
		name = header = NULL;
		if (!subject)
			goto fail;
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 64;
			ca_entry *v = cap <= SIZE_MAX / sizeof(*v)
			                  ? sbx__realloc(b->v, cap * sizeof(*v))
			                  : NULL;
			if (!v) {
				X509_NAME_free(subject);
				goto fail;
			}
			b->v = v;
			b->cap = cap;
		}
		b->v[b->n++] = (ca_entry){data, len, subject, false};
		data = NULL;
	}
	/* the end of the file, not a broken block: the last error is "no start line" */
	{
		unsigned long e = ERR_peek_last_error();
		ok = b->n > 0 && ERR_GET_LIB(e) == ERR_LIB_PEM &&
		     ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
	}
fail:
	ERR_pop_to_mark();
	OPENSSL_free(data);
	if (!ok) {
		bundle_free(b);
		b = NULL;
	}
out:
	BIO_free(in);
	return b;
}

static int lookup_by_subject(X509_LOOKUP *lu, X509_LOOKUP_TYPE type, const X509_NAME *name,
                             X509_OBJECT *ret)
{
	ca_bundle *b = X509_LOOKUP_get_method_data(lu);
	X509_STORE *st = X509_LOOKUP_get_store(lu);
	int found = 0;

	if (!b || type != X509_LU_X509)
		return 0;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->n; i++) {
		ca_entry *e = &b->v[i];
		const unsigned char *p = e->der;
		X509 *x;

		if (e->tried || X509_NAME_cmp(e->subject, name) != 0)
			continue;
		e->tried = true;
		if (!(x = d2i_X509(NULL, &p, e->len)))
			continue; /* never trusted: as no certificate */
		if (X509_STORE_add_cert(st, x) == 1 && !found &&
		    X509_OBJECT_set1_X509(ret, x) == 1) {
			found = 1;
			X509_free(x); /* the reference set1 took: the caller takes its own */
		}
		X509_free(x);
	}
	pthread_mutex_unlock(&b->mu);
	ERR_clear_error();
	return found;
}

static void lookup_free(X509_LOOKUP *lu)
{
	bundle_free(X509_LOOKUP_get_method_data(lu));
	(void)X509_LOOKUP_set_method_data(lu, NULL);
}

static X509_LOOKUP_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

/* One method for the process, never freed (stores may outlive any client). */
static void method_make(void)
{
	X509_LOOKUP_METHOD *m = X509_LOOKUP_meth_new("sandbox-e2b lazy CA bundle");

	if (m && X509_LOOKUP_meth_set_get_by_subject(m, lookup_by_subject) == 1 &&
	    X509_LOOKUP_meth_set_free(m, lookup_free) == 1)
		method = m;
	else
		X509_LOOKUP_meth_free(m);
}

int sbx__http_ca_load(X509_STORE *st, const char *file)
{
	ca_bundle *b;
	X509_LOOKUP *lu;

	pthread_once(&method_once, method_make);
	if (!method || !(b = bundle_read(file)))
		return X509_STORE_load_file(st, file);
	if (!(lu = X509_STORE_add_lookup(st, method))) {
		bundle_free(b);
		return X509_STORE_load_file(st, file);
	}
	/* a store holds one lookup per method: a second bundle in the same store loads eagerly */
	if (X509_LOOKUP_get_method_data(lu)) {
		bundle_free(b);
		return X509_STORE_load_file(st, file);
	}
	(void)X509_LOOKUP_set_method_data(lu, b);
	return 1;
}
