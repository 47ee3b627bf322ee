/* util/base64.h: base64 decoding for envd's data events (docs/internals/wire.md "Process start").
 */
#ifndef SBX_UTIL_BASE64_H
#define SBX_UTIL_BASE64_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

/*
 * Decode `len` bytes of base64 text and append the bytes to `out`.
 * Takes the standard alphabet and the URL-safe one (`-` and `_`, mixed or not),
 * padded or not: `=` only at the end, at most two, and a last group of one
 * character is refused. Nothing else is accepted (no whitespace).
 * Returns 0; SBX_EPROTOCOL for text that is not base64 (nothing appended);
 * SBX_ENOMEM / SBX_ETOOLARGE when `out` cannot grow. One pass over the text
 * (32 characters a step with AVX2 where the CPU has it, the same results), no
 * allocation but `out`'s; thread-safe (constant tables only).
 */
int sbx__base64_decode(sbx_buf *out, const char *in, size_t len);

/* Whether sbx__base64_decode() would take the text (the same rules; nothing decoded). */
bool sbx__base64_valid(const char *in, size_t len);

/* Decoded length of base64 text whose validity is not checked (the bytes are dropped). */
size_t sbx__base64_len(const char *in, size_t len);

#endif
