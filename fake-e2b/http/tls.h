/*
 * fake-e2b/http/tls.h: the local certificate authority of --tls (OpenSSL).
 * A CA (EC P-256, 10 years) is made once per directory and kept there
 * (ca.pem 0644, ca.key 0600) so clients can trust it across restarts; each
 * start issues a server certificate for <domain>, *.<domain>, localhost and
 * 127.0.0.1 signed by it (1 year). No E2B knowledge beyond the names.
 */
#ifndef FK_HTTP_TLS_H
#define FK_HTTP_TLS_H

#include <stddef.h>

typedef struct fk_tls_pem {
	char *cert; /* server certificate then the CA, PEM; caller frees */
	char *key;  /* server key, PEM; caller frees */
} fk_tls_pem;

/* Load or make <dir>/ca.pem + ca.key, issue the server certificate. 0, or -1 with a message
 * in why. */
int fk_tls_setup(const char *dir, const char *domain, fk_tls_pem *out, char *why, size_t cap);
void fk_tls_pem_free(fk_tls_pem *p);

#endif
