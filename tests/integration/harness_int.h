/*
 * tests/integration/harness_int.h — what the harness's own files share (harness.c,
 * harness_fake.c, harness_contract.c); the tests see only harness.h.
 */
#ifndef SBX_ITEST_HARNESS_INT_H
#define SBX_ITEST_HARNESS_INT_H

#include "harness.h"

/* Adds `tok` to h's secrets unless there (harness.c); h->mu held, or h not yet shared. */
void add_secret(h_ctx *h, const char *tok);

#endif
