/*
 * util/buf.h: the one growable byte buffer, always capped.
 *
 * `max` is set at init from a named constant; growing past it is
 * SBX_ETOOLARGE (the peer sent too much), distinct from SBX_ENOMEM. The
 * buffer keeps a trailing NUL after `len` bytes once allocated (convenience
 * only). On failure the buffer is unchanged.
 */
#ifndef SBX_UTIL_BUF_H
#define SBX_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct sbx_buf {
	unsigned char *ptr; /* NULL until the first growth */
	size_t len;
	size_t cap;
	size_t max; /* most bytes the buffer may hold; <= SIZE_MAX / 2 */
} sbx_buf;

#define SBX_BUF_INIT(max_bytes)                                                                    \
	{                                                                                          \
		NULL, 0, 0, (max_bytes)                                                            \
	}

void sbx_buf_init(sbx_buf *b, size_t max);
/* Append len bytes. 0, SBX_ETOOLARGE, SBX_ENOMEM. */
int sbx_buf_put(sbx_buf *b, const void *data, size_t len);
int sbx_buf_puts(sbx_buf *b, const char *s);
int sbx_buf_printf(sbx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sbx_buf_vprintf(sbx_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Make room for `want` more bytes and return the tail to write into; commit with sbx_buf_commit. */
int sbx_buf_reserve(sbx_buf *b, size_t want, unsigned char **tail);
void sbx_buf_commit(sbx_buf *b, size_t n);
/* Drop the first n bytes (n <= len), moving the rest to the front. */
void sbx_buf_consume(sbx_buf *b, size_t n);
void sbx_buf_clear(sbx_buf *b); /* len = 0, memory kept */
/* Hand the bytes to the caller (free with sbx__free); never NULL on success (empty gives ""). */
int sbx_buf_detach(sbx_buf *b, unsigned char **out, size_t *len_out);
void sbx_buf_dispose(sbx_buf *b); /* free and reset, keeps max */

#endif
