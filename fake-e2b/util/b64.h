/*
 * fake-e2b/util/b64.h: base64 (RFC 4648) over OpenSSL's EVP block coder.
 */
#ifndef FK_UTIL_B64_H
#define FK_UTIL_B64_H

#include <stddef.h>

/* Standard alphabet, padded; caller frees. NULL on OOM. */
char *fk_b64_encode(const unsigned char *data, size_t len);
/* Standard or URL-safe, padded or not (protobuf-JSON bytes). Length, or -1 on bad input;
 * *out (caller frees) gets the bytes. */
long fk_b64_decode(const char *in, unsigned char **out);

#endif
