/*
 * fuzz_fake_basic: envd's Basic user (fake-e2b/api/envd/auth.c) and the base64
 * decoder under it (util/b64.c) on any header value. The username never holds
 * ':' and round trips through the encoder keep their bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "envd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *h = malloc(size + 7);
	if (!h)
		return 0;
	memcpy(h, "Basic ", 6);
	memcpy(h + 6, data, size);
	h[size + 6] = '\0';
	int bad = 0;
	char *user = fk_envd_basic_user(h, &bad);
	if (user && (bad || strchr(user, ':')))
		abort();
	free(user);
	user = fk_envd_basic_user(h + 6, &bad); /* without the scheme */
	free(user);
	unsigned char *dec = NULL;
	long n = fk_b64_decode(h + 6, &dec);
	if (n >= 0) {
		char *enc = fk_b64_encode(dec, (size_t)n);
		unsigned char *again = NULL;
		long m = enc ? fk_b64_decode(enc, &again) : -1;
		if (enc && (m != n || memcmp(again, dec, (size_t)n) != 0))
			abort();
		free(again);
		free(enc);
	}
	free(dec);
	free(h);
	return 0;
}
