/*
 * contract/utf8.h: UTF-8-safe trimming of truncated output (docs/exec.md "Output: one budget,
 * truncation at a character boundary").
 */
#ifndef SBX_CONTRACT_UTF8_H
#define SBX_CONTRACT_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The length to keep of `p[0..len)`: when `truncated`, drop an incomplete
 * trailing UTF-8 sequence (a lead byte whose continuation bytes were cut),
 * looking back at most 4 bytes (the rule utf8.c states); otherwise len.
 */
size_t sbx__utf8_keep_len(const unsigned char *p, size_t len, bool truncated);

#endif
