/*
 * cli/progress.c: see progress.h.
 */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define FIRST_MS 500 /* a transfer shorter than this shows nothing */
#define EVERY_MS 200
#define MIB      (1024.0 * 1024.0)

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void cli_progress_init(cli_progress *p, const cli *c, const char *what, uint64_t total, bool quiet)
{
	p->on = !quiet && !c->json && isatty(STDERR_FILENO);
	p->shown = false;
	p->what = what;
	p->total = total;
	p->start_ms = p->last_ms = now_ms();
}

void cli_progress_update(cli_progress *p, uint64_t bytes)
{
	uint64_t t;

	if (!p->on)
		return;
	t = now_ms();
	if (t - p->start_ms < FIRST_MS || (p->shown && t - p->last_ms < EVERY_MS))
		return;
	p->last_ms = t;
	p->shown = true;
	if (p->total)
		fprintf(stderr, "\r%s: %.1f of %.1f MiB (%.0f%%)\033[K", p->what,
		        (double)bytes / MIB, (double)p->total / MIB,
		        100.0 * (double)bytes / (double)p->total);
	else
		fprintf(stderr, "\r%s: %.1f MiB\033[K", p->what, (double)bytes / MIB);
	fflush(stderr);
}

void cli_progress_done(cli_progress *p)
{
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->shown = false;
}
