/*
 * tests/fake/support/connect_frame.c: one Connect envelope (connect_frame.h).
 */
#include "connect_frame.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

unsigned char *connect_frame(const void *msg, size_t n, size_t *len)
{
	unsigned char *env = malloc(n + 5);

	assert_non_null(env);
	assert_true(n <= UINT32_MAX);
	env[0] = 0;
	env[1] = (unsigned char)(n >> 24);
	env[2] = (unsigned char)(n >> 16);
	env[3] = (unsigned char)(n >> 8);
	env[4] = (unsigned char)n;
	memcpy(env + 5, msg, n);
	*len = n + 5;
	return env;
}
