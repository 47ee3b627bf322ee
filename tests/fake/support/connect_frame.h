/*
 * tests/fake/support/connect_frame.h: one Connect envelope (flags 0, a 4-byte
 * big-endian length, the message), as envd's streaming calls take their
 * request, for fake-e2b's black-box tests.
 */
#ifndef FKT_CONNECT_FRAME_H
#define FKT_CONNECT_FRAME_H

#include <stddef.h>

/* A malloc'd envelope of the n bytes at msg; its size (n + 5) in *len. Asserts on OOM. */
unsigned char *connect_frame(const void *msg, size_t n, size_t *len);

#endif
