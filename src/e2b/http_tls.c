/*
 * e2b/http_tls.c: what every call of a client shares below HTTP (http_int.h): DNS answers and
 * TLS sessions (curl's share interface, a mutex per lock kind), and with curl's OpenSSL backend
 * the trusted CAs, parsed once and handed to every TLS connection, which fails closed when they
 * cannot be loaded. The test option that trusts a given CA file lives here too.
 */
#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <string.h>

#include "e2b/http_ca.h"
#include "e2b/http_int.h"
#include "util/alloc.h"

static void share_lock(CURL *e, curl_lock_data data, curl_lock_access access, void *ud)
{
	sbx_http *h = ud;
	(void)e;
	(void)access;
	pthread_mutex_lock(&h->share_mu[data]);
}

static void share_unlock(CURL *e, curl_lock_data data, void *ud)
{
	sbx_http *h = ud;
	(void)e;
	pthread_mutex_unlock(&h->share_mu[data]);
}

CURLSH *sbx__http_share_new(sbx_http *h)
{
	CURLSH *sh = curl_share_init();

	if (!sh)
		return NULL;
	if (curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_USERDATA, h) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK) {
		curl_share_cleanup(sh);
		return NULL;
	}
	/* best effort: without it each new connection does a full TLS handshake */
	(void)curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	return sh;
}

int sbx__http_ca_defaults(sbx_http *h)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
	char *info = NULL, *path = NULL;
	CURL *e;
	int error = 0;

	if (!v->ssl_version || strncmp(v->ssl_version, "OpenSSL/", 8) != 0)
		return 0; /* another TLS backend: curl loads the CAs itself */
	if (!(e = curl_easy_init()))
		return SBX_ENOMEM;
	(void)curl_easy_getinfo(e, CURLINFO_CAINFO, &info);
	(void)curl_easy_getinfo(e, CURLINFO_CAPATH, &path);
	if ((info && !(h->cainfo = sbx__strdup(info))) ||
	    (path && !(h->capath = sbx__strdup(path))))
		error = SBX_ENOMEM;
	curl_easy_cleanup(e);
	h->own_store = error == 0 && (h->cainfo || h->capath);
	return error;
}

/*
 * The shared CA store, loaded on first use from curl's built-in locations
 * (the bundle, else the directory); the bundle's certificates are decoded when a
 * verification first asks for their subject (http_ca.h). NULL when it cannot be loaded.
 */
static X509_STORE *store_get(sbx_http *h)
{
	X509_STORE *st;
	bool ok;

	pthread_mutex_lock(&h->mu);
	if (!h->store && !h->store_failed) {
		st = X509_STORE_new();
		ok = st && (h->cainfo ? sbx__http_ca_load(st, h->cainfo) == 1
		                      : X509_STORE_load_path(st, h->capath) == 1);
		if (ok && h->cainfo && h->capath)
			(void)X509_STORE_load_path(st, h->capath); /* as curl: the directory too */
		if (!ok) {
			X509_STORE_free(st);
			st = NULL;
		}
		h->store = st;
		h->store_failed = !st;
	}
	st = h->store;
	pthread_mutex_unlock(&h->mu);
	return st;
}

/* CURLOPT_SSL_CTX_FUNCTION: every TLS connection verifies against the one shared store. */
static CURLcode on_ssl_ctx(CURL *e, void *ctx, void *ud)
{
	X509_STORE *st = store_get(ud);
	(void)e;

	if (!st)
		return CURLE_SSL_CACERT_BADFILE; /* fail closed: never an unverified peer */
	SSL_CTX_set1_cert_store(ctx, st);        /* takes a reference */
	/* an idle connection (a stream waiting for its command) keeps no 34 KiB of TLS buffers */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return CURLE_OK;
}

int sbx__http_set_test_tls(sbx_http *h, const char *ca_file, const char *connect_to)
{
	if (ca_file) {
		char *copy = sbx__strdup(ca_file);
		if (!copy)
			return SBX_ENOMEM;
		sbx__free(h->cainfo);
		sbx__free(h->capath);
		h->cainfo = copy;
		h->capath = NULL;
		h->ca_override = true;
	}
	if (connect_to) {
		struct curl_slist *l = curl_slist_append(h->connect_to, connect_to);
		if (!l)
			return SBX_ENOMEM;
		h->connect_to = l;
	}
	return 0;
}

CURLcode sbx__http_tls_setopt(sbx_http *h, CURL *e, const char *url)
{
	CURLcode rc = CURLE_OK;

	if (h->own_store && strncmp(url, "https:", 6) == 0) {
		/* curl loads no CA file of its own; on_ssl_ctx hands over the shared store */
		rc |= curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
		rc |= curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, h);
		rc |= curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
		rc |= curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	} else if (h->ca_override) { /* another TLS backend: curl reads the file */
		rc |= curl_easy_setopt(e, CURLOPT_CAINFO, h->cainfo);
		rc |= curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	return rc;
}
