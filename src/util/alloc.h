/*
 * util/alloc.h: the library's only allocator entry points.
 * A raw malloc/realloc/free/strdup in src/ is a lint error. Tests may install
 * a failure injector (sbx__alloc_fail_after) to run the OOM paths.
 */
#ifndef SBX_UTIL_ALLOC_H
#define SBX_UTIL_ALLOC_H

#include <stddef.h>

void *sbx__malloc(size_t n);
void *sbx__calloc(size_t nmemb, size_t size); /* overflow-checked */
void *sbx__realloc(void *p, size_t n);
void sbx__free(void *p);
char *sbx__strdup(const char *s);
char *sbx__strndup(const char *s, size_t n);

/*
 * Test hook: fail the allocation that comes `n` allocations from now (0 = the
 * next one), and every one after it until reset with -1. Process-wide; for
 * single-threaded unit tests only.
 */
void sbx__alloc_fail_after(long n);

#endif
