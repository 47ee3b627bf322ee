/*
 * util/buf.c: the one growable byte buffer, always capped.
 *
 * `max` bounds the bytes held; `cap` bounds the allocation, which is at most
 * max + 1 (room for the trailing NUL kept for convenience). Growth doubles,
 * clamped to max + 1. Since max <= SIZE_MAX / 2 no size computed here can
 * overflow. Exceeding max is SBX_ETOOLARGE (the peer sent too much), a failed
 * allocation SBX_ENOMEM; either way the buffer is left unchanged.
 *
 * A buffer of BUF_HUGE_MIN or more asks for transparent huge pages (madvise
 * MADV_HUGEPAGE, the kernel's "madvise" mode): a 100 MiB output then costs 50
 * page faults instead of 25,600, about 75 ms of a 550 ms stream's CPU on this
 * machine (docs/internals/exec-cost.md "Fresh pages"). At most one partly
 * used huge page more is resident per buffer.
 */
#include "util/buf.h"

#include <assert.h>
#include <malloc.h>
#include <sandbox/error.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/alloc.h"

#define BUF_MIN_CAP  64
#define BUF_HUGE     (2u << 20) /* x86-64's transparent huge page */
#define BUF_HUGE_MIN (4u << 20)

void sbx_buf_init(sbx_buf *b, size_t max)
{
	assert(max <= SIZE_MAX / 2);
	b->ptr = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* max, clamped for a buffer made with SBX_BUF_INIT (which cannot assert) and a huge max. */
static size_t buf_max(const sbx_buf *b)
{
	return b->max > SIZE_MAX / 2 ? SIZE_MAX / 2 : b->max;
}

/*
 * Ask for huge pages on the mapping that holds `p`. glibc serves a large block from a mapping
 * of its own (its first page holds the 16-byte header before p, and p + malloc_usable_size(p)
 * is its end); the whole mapping is advised, never a part: a part would split it in two or
 * three, and realloc's mremap, which grows a mapping in place or moves it whole, refuses a
 * range over several, so every later growth would copy. A block that does not end on a page
 * is not such a mapping and is left alone.
 */
static void buf_want_huge(unsigned char *p)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = (uintptr_t)p & ~(page - 1);
	uintptr_t to = (uintptr_t)p + malloc_usable_size(p);

	if ((to & (page - 1)) == 0 && to - from >= BUF_HUGE)
		(void)madvise((void *)from, to - from, MADV_HUGEPAGE); /* best effort */
}

/* Make cap >= need (need <= max + 1 by the callers' checks). */
static int buf_grow(sbx_buf *b, size_t need)
{
	size_t cap, max = buf_max(b);
	unsigned char *p;

	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : BUF_MIN_CAP;
	while (cap < need)
		cap *= 2; /* cap <= 2 * (max + 1) <= SIZE_MAX: no overflow */
	if (cap > max + 1)
		cap = max + 1;
	if (!(p = sbx__realloc(b->ptr, cap)))
		return SBX_ENOMEM;
	if (!b->ptr)
		p[0] = '\0';
	b->ptr = p;
	b->cap = cap;
	if (cap >= BUF_HUGE_MIN)
		buf_want_huge(p);
	return 0;
}

int sbx_buf_reserve(sbx_buf *b, size_t want, unsigned char **tail)
{
	int error;
	if (want > buf_max(b) - b->len) /* len <= max always holds */
		return SBX_ETOOLARGE;
	if ((error = buf_grow(b, b->len + want + 1)) < 0)
		return error;
	*tail = b->ptr + b->len;
	return 0;
}

void sbx_buf_commit(sbx_buf *b, size_t n)
{
	assert(n <= b->cap - b->len - 1);
	b->len += n;
	b->ptr[b->len] = '\0';
}

int sbx_buf_put(sbx_buf *b, const void *data, size_t len)
{
	unsigned char *tail;
	int error;
	if ((error = sbx_buf_reserve(b, len, &tail)) < 0)
		return error;
	if (len)
		memcpy(tail, data, len);
	sbx_buf_commit(b, len);
	return 0;
}

int sbx_buf_puts(sbx_buf *b, const char *s)
{
	return sbx_buf_put(b, s, strlen(s));
}

int sbx_buf_vprintf(sbx_buf *b, const char *fmt, va_list ap)
{
	unsigned char *tail;
	char small[256];
	va_list copy;
	int n, error;

	/* one formatting pass for the short texts most calls make (a header, a URL), two else */
	va_copy(copy, ap);
	n = vsnprintf(small, sizeof(small), fmt, copy);
	va_end(copy);
	if (n < 0)
		return SBX_EINVALID;
	if ((size_t)n < sizeof(small))
		return sbx_buf_put(b, small, (size_t)n);
	if ((error = sbx_buf_reserve(b, (size_t)n, &tail)) < 0)
		return error;
	vsnprintf((char *)tail, (size_t)n + 1, fmt, ap);
	sbx_buf_commit(b, (size_t)n);
	return 0;
}

int sbx_buf_printf(sbx_buf *b, const char *fmt, ...)
{
	va_list ap;
	int error;
	va_start(ap, fmt);
	error = sbx_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return error;
}

void sbx_buf_consume(sbx_buf *b, size_t n)
{
	assert(n <= b->len);
	if (n == 0)
		return;
	memmove(b->ptr, b->ptr + n, b->len - n);
	b->len -= n;
	b->ptr[b->len] = '\0';
}

void sbx_buf_clear(sbx_buf *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

int sbx_buf_detach(sbx_buf *b, unsigned char **out, size_t *len_out)
{
	if (!b->ptr) {
		/* Never NULL on success: an empty buffer detaches as "". */
		unsigned char *p = sbx__malloc(1);
		if (!p)
			return SBX_ENOMEM;
		p[0] = '\0';
		*out = p;
		if (len_out)
			*len_out = 0;
		return 0;
	}
	*out = b->ptr;
	if (len_out)
		*len_out = b->len;
	b->ptr = NULL;
	b->len = 0;
	b->cap = 0;
	return 0;
}

void sbx_buf_dispose(sbx_buf *b)
{
	sbx__free(b->ptr);
	b->ptr = NULL;
	b->len = 0;
	b->cap = 0;
}
