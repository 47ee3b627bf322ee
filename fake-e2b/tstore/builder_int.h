/*
 * fake-e2b/tstore/builder_int.h: the builder's insides, shared by its files, each using only
 * those below it: builder.c (one build's phases: base, steps, finalize, commit) over
 * builder_steps.c (RUN, COPY, ENV, WORKDIR, USER) over builder_run.c (a command in the build
 * sandbox to its end, the start and ready commands) over store.c (builds_int.h). How a build
 * runs is fake-e2b/README.md "Template builds".
 */
#ifndef FK_BUILDER_INT_H
#define FK_BUILDER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "builds_int.h"

/* ---- builder_run.c ---- */

/* The context a command runs in: the user, the working directory (NULL: the template's, as
 * envd's default) and the environment, which USER, WORKDIR and ENV change. */
typedef struct fk_bctx {
	char *user, *workdir;
	char **envs; /* "K=V" */
	size_t n_envs;
} fk_bctx;

void fk__bctx_clear(fk_bctx *c);
/* Sets K=V (replacing an earlier K): 0, or -1 out of memory. */
int fk__bctx_setenv(fk_bctx *c, const char *k, const char *v);

/* Runs `/bin/bash -l -c command` in `box` as `user` in `cwd` (NULL: the template's) with c's
 * environment, to its end (SIGKILL after 30 min); its output lines go to b's log, each under
 * `[prefix]` (b NULL: no log), and with `capture` its stdout is kept in *capture (up to 64 KiB;
 * caller frees). 0 when it exited 0; else -1 with why (E2B's wording: the end's status, or
 * "command failed: <envd error>" when it could not start). */
int fk__bcmd_run(fk_tstore *s, fk_tbuild *b, const char *box, const char *command, const char *user,
                 const char *cwd, const fk_bctx *c, const char *prefix, char **capture, char *why,
                 size_t cap);
/* Starts the start command and runs the ready command until it succeeds (within 120 s, every
 * 200 ms). b NULL: no build log (a sandbox's boot). 0, or -1 with why. The start command keeps
 * running. */
int fk__bcmd_start_ready(fk_tstore *s, fk_tbuild *b, fk_rt *rt, const char *box, const char *start,
                         const char *ready, const fk_bctx *c, char *why, size_t cap);

/* ---- builder_steps.c ---- */

/* One running build: its store and build, its sandbox's id, the context the steps change, the
 * log prefix of the step running and the error of the one that failed. */
typedef struct fk_bwork {
	fk_tstore *s;
	fk_tbuild *b;
	char box[65];
	fk_bctx c;
	char prefix[64];
	char why[1024]; /* the error, when a step failed */
} fk_bwork;

/* Logs step `step` as `[prefix] TYPE args...`. */
void fk__bstep_log(fk_bwork *w, json_t *step);
/* Runs step `step` (RUN, COPY, ENV or ARG, WORKDIR, USER): 0, or -1 with w->why. */
int fk__bstep_run(fk_bwork *w, json_t *step);

#endif
