/*
 * cli/demo/demo.h: the insides of `sandbox-e2b demo` (demo.c says what it does), shared by its
 * files, each using only those below it: demo.c (the command: options, the run, the cleanup,
 * --json) over session.c (the session's steps, in order) and local.c (the local fake-e2b:
 * found, started with a random key, stopped) over narrate.c (one narrated line per step, the
 * test hook).
 */
#ifndef CLI_DEMO_DEMO_H
#define CLI_DEMO_DEMO_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "command.h"

#define DEMO_DIR           "/workspace/wordfreq"
#define DEMO_REPORT        DEMO_DIR "/report.txt"
#define DEMO_FAKE_START_MS 30000
#define DEMO_FAKE_STOP_MS  15000
#define DEMO_BUILD_MS      180000
#define DEMO_BG_WAIT_MS    30000
#define DEMO_BG_RETURN_MS  60000

typedef struct demo {
	cli *c;
	const char *fake_path;
	bool local, keep;
	const char *name;
	char name_buf[64];
	char *id;
	int step;
	uint64_t t0, t_step;
	/* the local server */
	pid_t fake_pid;
	int fake_fd;
	pthread_t drain;
	bool drain_started;
	char url[64];
	char key[48]; /* the local fake-e2b's API key: random per run */
	/* the file fake-e2b reads it from (--api-key-file), in a directory of its own; "" once
	 * removed */
	char key_dir[PATH_MAX], key_file[PATH_MAX + 16];
	/* the report as first read, to compare after resume */
	unsigned char *report;
	size_t report_len;
	/* --json: the steps, printed as one object at the end */
	json_t *steps;
	const char *failed;
} demo;

/* ---- narrate.c ---- */
uint64_t demo_now_ms(void);
/*
 * The test hook of tests/cli (docs/cli.md "Tests"): with SANDBOX_E2B_DEMO_HOLD_AFTER=NAME
 * and SANDBOX_E2B_DEMO_GATE=FILE, the demo waits after the line of step NAME (or the
 * opening line, NAME "local fake-e2b") until FILE exists or the run is aborted, so a
 * test can send Ctrl-C at exactly that step boundary. Unset: nothing happens.
 */
void demo_hold(demo *d, const char *name);
/* A step starts: its number, its clock. */
void demo_step_begin(demo *d);
/* The step's line (or --json entry): its name, its ms, the detail (printf). */
void demo_step_ok(demo *d, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Name the failed step and why; returns the demo's exit code. */
int demo_step_fail(demo *d, const char *name, int code, const sbx_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Before each step: a Ctrl-C that landed between steps fails the next one. */
int demo_check_abort(demo *d, const char *next);
/* Print bytes indented by 6 spaces, for program output inside the narration. */
void demo_print_indented(const demo *d, const unsigned char *p, size_t len);

/* ---- local.c ---- */
/* Find and start the local fake-e2b with a fresh key, and make the provider for it. */
int demo_start_local(demo *d);
/* Stop it (SIGTERM, then SIGKILL past DEMO_FAKE_STOP_MS) and its output's reader. */
void demo_stop_fake(demo *d);

/* ---- session.c ---- */
/* The session's steps in order, then (unless --keep) destroy and check it is gone. */
int demo_session(demo *d);

#endif
