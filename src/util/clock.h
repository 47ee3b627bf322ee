/* util/clock.h: CLOCK_MONOTONIC milliseconds, for deadlines. */
#ifndef SBX_UTIL_CLOCK_H
#define SBX_UTIL_CLOCK_H

#include <stdint.h>

uint64_t sbx__now_ms(void);

#endif
