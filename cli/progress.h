/*
 * cli/progress.h: a transfer's progress on a terminal (docs/cli.md
 * "Progress"): one line on stderr, rewritten in place, only when stderr is a
 * terminal, never with --json, and only for a transfer that lasts (the first
 * line after 500 ms), then erased at the end.
 */
#ifndef SBX_CLI_PROGRESS_H
#define SBX_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

typedef struct cli_progress {
	bool on;          /* stderr is a terminal and the output is not JSON */
	bool shown;       /* a line is on the terminal */
	const char *what; /* "read PATH", "write PATH" */
	uint64_t total;   /* bytes, 0 when unknown */
	uint64_t start_ms, last_ms;
} cli_progress;

/* `quiet`: no progress whatever the terminal (e.g. the bytes go to the same terminal). */
void cli_progress_init(cli_progress *p, const cli *c, const char *what, uint64_t total, bool quiet);
/* `bytes` so far; draws at most every 200 ms. */
void cli_progress_update(cli_progress *p, uint64_t bytes);
/* Erase the line, if one was drawn. */
void cli_progress_done(cli_progress *p);

#endif
