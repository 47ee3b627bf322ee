/*
 * fake-e2b/util/clock.h: clocks, RFC 3339 times and a sleep that shutdown ends.
 * No MHD, no JSON. Thread-safe.
 */
#ifndef FK_UTIL_CLOCK_H
#define FK_UTIL_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define FK_NS 1000000000LL

int64_t fk_now_ns(void);  /* CLOCK_REALTIME, ns since the epoch */
int64_t fk_mono_ms(void); /* CLOCK_MONOTONIC, ms */
/* Sleeps `ms` (restarts on EINTR). */
void fk_sleep_ms(long ms);
/* RFC 3339 with nanoseconds and Z ("2026-01-02T03:04:05.000000006Z"); buf >= 40 bytes. */
void fk_format_time(char *buf, size_t cap, int64_t ns);

/* Process-wide stop flag (one server per process): fk_stop_begin wakes every fk_stop_sleep. */
void fk_stop_begin(void);
int fk_stopping(void);
/* Sleeps `ms` unless/until fk_stop_begin: 0 slept, -1 woken by shutdown. */
int fk_stop_sleep(long ms);

#endif
