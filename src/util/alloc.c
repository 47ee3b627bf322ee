/*
 * util/alloc.c: the library's allocator entry points.
 *
 * Every allocation in src/ goes through here so that tests can fail the n-th
 * one (sbx__alloc_fail_after) and check that each OOM path reports SBX_ENOMEM
 * and leaks nothing. The counter is the only process-wide mutable state of the
 * library and exists for single-threaded unit tests; it is atomic only so that
 * concurrent production callers (which never arm it) race on nothing.
 */
#include "util/alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -1: never fail. >= 0: allocations left before failures start. */
static atomic_long fail_after = -1;

static int should_fail(void)
{
	long n = atomic_load_explicit(&fail_after, memory_order_relaxed);
	if (n < 0)
		return 0;
	if (n == 0)
		return 1; /* stays at 0: every later allocation fails too */
	atomic_store_explicit(&fail_after, n - 1, memory_order_relaxed);
	return 0;
}

void sbx__alloc_fail_after(long n)
{
	atomic_store_explicit(&fail_after, n < 0 ? -1 : n, memory_order_relaxed);
}

void *sbx__malloc(size_t n)
{
	if (should_fail())
		return NULL;
	return malloc(n ? n : 1);
}

void *sbx__calloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	if (should_fail())
		return NULL;
	return calloc(nmemb ? nmemb : 1, size ? size : 1);
}

void *sbx__realloc(void *p, size_t n)
{
	if (should_fail())
		return NULL; /* p untouched, as realloc promises */
	return realloc(p, n ? n : 1);
}

void sbx__free(void *p)
{
	free(p);
}

char *sbx__strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d;
	if (len == SIZE_MAX)
		return NULL;
	if (!(d = sbx__malloc(len + 1)))
		return NULL;
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

char *sbx__strdup(const char *s)
{
	return sbx__strndup(s, SIZE_MAX);
}
