/*
 * fake-e2b/runtime/linux/caps.h — capability sets of the calling task, with raw system calls
 * only (async-signal-safe: used between clone and exec). Knows no box.
 */
#ifndef FAKE_E2B_LINUX_CAPS_H
#define FAKE_E2B_LINUX_CAPS_H

#include <stdint.h>

/* Drops from the bounding set every capability 0..last_cap not in `keep` (bit n = capability
 * n), and limits the permitted, effective and inheritable sets to `keep`; clears the ambient
 * set. Needs CAP_SETPCAP. 0 or -1 with errno. */
int fk_lx_caps_limit(uint64_t keep, int last_cap);

#endif /* FAKE_E2B_LINUX_CAPS_H */
