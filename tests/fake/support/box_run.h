/*
 * tests/fake/support/box_run.h: run a command in a box of fake-e2b's runtime
 * (linked in, not over HTTP) and collect what it writes until it ends, for
 * the runtime, isolation and network tests.
 */
#ifndef FKT_BOX_RUN_H
#define FKT_BOX_RUN_H

#include "runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Skip the calling test (cmocka) unless rt can isolate boxes: root, namespaces, cgroups. */
#define NEED_ISOLATION(rt)                                                                         \
	do {                                                                                       \
		if (!fk_rt_isolated(rt)) {                                                         \
			fprintf(stderr, "SKIP: needs root, namespaces and cgroups\n");             \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* What a command wrote and how it ended. */
typedef struct box_result {
	char *out; /* stdout, and stderr too when merged; NUL-terminated */
	size_t out_len;
	char *err; /* stderr (and a PTY's output) when not merged; NULL when merged */
	size_t err_len;
	int status;   /* its wait status */
	uint32_t pid; /* box_run_spec: its pid in the box */
	bool merge;   /* box_drain: stderr goes to out, in the order it came */
} box_result;

/* Append n bytes to *buf (malloc'd, NUL-terminated after), asserting on OOM. */
void box_append(char **buf, size_t *len, const void *d, size_t n);
/* Collect s's output into r until its end event (at most 120 s: a guard, asserted). */
void box_drain(fk_sub *s, box_result *r);
/*
 * Start spec in box and collect it (r is reset; out, and err unless merged, are "" at least):
 * 0, or the start's error code with err (may be NULL) filled.
 */
int box_run_spec(fk_rt *rt, const char *box, const fk_proc_spec *spec, bool merge, box_result *r,
                 fk_err *err);
/* bash -c <script> as user (box_run_spec): 0, or the start's error (printed). */
int box_bash(fk_rt *rt, const char *box, const char *user, bool merge, box_result *r,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Free what r holds and zero it. */
void box_result_clear(box_result *r);

#endif
