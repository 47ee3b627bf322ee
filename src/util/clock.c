/* util/clock.c: CLOCK_MONOTONIC milliseconds for deadlines. */
#include "util/clock.h"

#include <time.h>

uint64_t sbx__now_ms(void)
{
	struct timespec ts;
	/* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
