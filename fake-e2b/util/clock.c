/*
 * fake-e2b/util/clock.c: see clock.h.
 */
#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

int64_t fk_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t fk_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fk_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void fk_format_time(char *buf, size_t cap, int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, cap, "%s.%09ldZ", base, frac);
}

static pthread_mutex_t g_stop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_stop_cond = PTHREAD_COND_INITIALIZER;
static int g_stopping;

void fk_stop_begin(void)
{
	pthread_mutex_lock(&g_stop_lock);
	g_stopping = 1;
	pthread_cond_broadcast(&g_stop_cond);
	pthread_mutex_unlock(&g_stop_lock);
}

int fk_stopping(void)
{
	pthread_mutex_lock(&g_stop_lock);
	int s = g_stopping;
	pthread_mutex_unlock(&g_stop_lock);
	return s;
}

int fk_stop_sleep(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&g_stop_lock);
	while (!g_stopping && pthread_cond_clockwait(&g_stop_cond, &g_stop_lock, CLOCK_MONOTONIC,
	                                             &ts) != ETIMEDOUT)
		;
	int stopped = g_stopping;
	pthread_mutex_unlock(&g_stop_lock);
	return stopped ? -1 : 0;
}
