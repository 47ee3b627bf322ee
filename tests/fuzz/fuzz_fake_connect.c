/*
 * fuzz_fake_connect: the request side of fake-e2b's Connect protocol
 * (fake-e2b/api/envd/connect.c): any body as a stream request (one envelope)
 * and as a unary one (plain JSON), and the envelope header reader. A stream
 * message is accepted only when the envelope covers the body exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *body = malloc(size + 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	body[size] = '\0';
	fk_req r;
	memset(&r, 0, sizeof(r));
	r.body = size ? body : NULL;
	r.body_len = size;
	unsigned flags = 0;
	size_t len = 0;
	int env = fk_connect_envelope(body, size, &flags, &len);
	json_t *m = fk_connect_request(&r, 1);
	if (m && (env < 0 || flags != 0 || len != size - 5))
		abort();
	json_decref(m);
	json_decref(fk_connect_request(&r, 0));
	for (size_t i = 0; i < size && i < 64; i++)
		(void)fk_connect_code_status((const char *)body + i);
	free(body);
	return 0;
}
