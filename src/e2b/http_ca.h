/*
 * e2b/http_ca.h: the trusted CA bundle, loaded into an OpenSSL X509_STORE lazily. OpenSSL 3
 * spends about 0.2 ms of CPU decoding each certificate of a bundle (d2i_X509, its public key
 * above all): 25 to 35 ms for a system bundle of 140, on the first TLS connection of every
 * process, where a TLS handshake verifies a chain against one or two of them. This loader
 * reads the bundle's PEM blocks (base64 to DER, about 1 % of that) and the subject name of
 * each, and decodes a certificate only when a verification asks for its subject.
 */
#ifndef SBX_E2B_HTTP_CA_H
#define SBX_E2B_HTTP_CA_H

#include <openssl/x509.h>

/*
 * Trusts the certificates of the PEM bundle `file` in `st`, as X509_STORE_load_file() does,
 * but lazily: a lookup of `st` that asks for a subject decodes and adds every certificate of
 * the bundle with that subject (each once), so the set of certificates a verification can
 * reach is the bundle's, as with the eager load; a certificate that does not decode is never
 * trusted. A bundle this cannot index exactly (a block other than "CERTIFICATE", such as
 * "TRUSTED CERTIFICATE" or "X509 CRL", PEM headers, a subject that cannot be located, a read
 * error, no certificate at all) is loaded with X509_STORE_load_file() instead, with its
 * result. Returns 1 on success, 0 on failure (`st` then trusts nothing of `file`).
 */
int sbx__http_ca_load(X509_STORE *st, const char *file);

#endif
