/*
 * fake-e2b/tstore/builds_int.h: the template store's insides. Layers, each using only those
 * below it: buildlog.c (a build's log and its caps; the log levels) and tstate.c (the
 * records) under store.c (the store's data, lookups and the calls a running build makes) under
 * the builder (runs one build: builder.c over builder_steps.c over builder_run.c, their
 * insides in builder_int.h) under templates.c (the API's operations; starts builds) and
 * snapshots.c (snapshots, deletion, fork layers).
 */
#ifndef FK_BUILDS_INT_H
#define FK_BUILDS_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "builds.h"
#include "state.h"

enum fk_tb_status { FK_TB_WAITING, FK_TB_BUILDING, FK_TB_READY, FK_TB_ERROR };

typedef struct fk_ttemplate fk_ttemplate;

struct fk_tbuild {
	struct fk_tbuild *next;     /* the template's builds, newest first */
	struct fk_ttemplate *tmpl;  /* fixed */
	char id[37];                /* fixed: uuid */
	char template_id[21];       /* fixed */
	int status;                 /* lock: enum fk_tb_status */
	json_t *logs;               /* lock: BuildLogEntry array */
	char *reason, *reason_step; /* lock: error message and failed step */
	char step[24]; /* lock: the step new log entries belong to (fk__build_step), "" none */
	int64_t created_ns, updated_ns, finished_ns; /* lock */
	unsigned cpu_count, memory_mb;               /* fixed */
	int64_t
	    disk_mb;  /* lock: the committed layer's size in MiB (rounded up) once ready, else -1 */
	json_t *spec; /* TemplateBuildStartV2; set once at start, then read by the builder */
	fk_tboot boot;   /* lock: set when ready (boot.layer its committed files) */
	char box_id[65]; /* lock: the build sandbox while it exists, "" otherwise */
	pthread_t thread;
	bool has_thread; /* lock */
	bool has_slot;   /* lock: counted in the store's running builds */
	/* lock (buildlog.c): bytes its entries count for, once counted; lines dropped by level */
	size_t log_bytes;
	bool log_bytes_known;
	size_t log_dropped[4];
};

struct fk_ttemplate {
	struct fk_ttemplate *next;
	char id[21];
	char *name;
	struct fk_tbuild *builds;
	json_t *tags; /* lock: tag -> {"buildID","createdAt"} */
	int64_t created_ns;
	int64_t updated_ns;      /* lock: a build requested or ended, PATCH */
	int64_t last_spawned_ns; /* lock: the last sandbox create from it, 0 never */
	int64_t spawn_count;     /* lock: sandbox creates from it */
	unsigned build_count;    /* lock: builds requested */
	bool is_public;          /* lock: PATCH {public} (E2B: visible to other teams) */
	char *snapshot_of; /* a snapshot's: the sandbox it was taken of (snapshots.c); else NULL */
	bool named;        /* a snapshot made with a name (else its name is its templateID) */
};

struct fk_tstore {
	fk_rt *rt;
	unsigned char seed[32];
	pthread_mutex_t lock;
	struct fk_ttemplate *list;
	bool stopping; /* lock */
	int running;   /* lock: builds holding one of the FK_BUILDS_RUNNING slots */
	pthread_cond_t slot_free;
	char *layers_dir, *files_dir;
	fk_state *state;          /* kept: the templates' records (tstate.c); NULL: ephemeral */
	pthread_mutex_t rec_lock; /* serialises writes of records */
	char **images; /* fixed after start: normalised "image:tag", then its template, in pairs */
	size_t n_images;
	size_t log_bytes; /* lock: the builds' log bytes counted so far (buildlog.c) */
};

#define FK_BUILDS_RUNNING 4     /* builds run at once; the others wait (status `waiting`) */
#define FK_BUILD_LOG_MAX  20000 /* log entries kept per build */
/* Bytes of log kept per build and for every build together (each entry: its message + 64). */
#define FK_BUILD_LOG_BYTES  (1u << 20)
#define FK_BUILD_LOGS_BYTES (32u << 20)

/* ---- buildlog.c ---- */
/* Append e (stolen) to b's log, then drop the oldest lines past the caps (s->lock held). */
void fk__build_log_append(fk_tstore *s, fk_tbuild *b, json_t *e);
/* Lines of b dropped at min_level or above (the first entry then says so). */
size_t fk__build_log_dropped(const fk_tbuild *b, int min_level);
/* A log entry's level (fk_tstore_level of its "level"; info when unknown). */
int fk__build_log_level(json_t *e);

/* ---- tstate.c (below store.c) ---- */
/* Writes the record of the template `ref` names (templateID or name, ":tag" ignored) as it is
 * now; a no-op when ephemeral or when no template has that name. Call without the lock. */
void fk__tstore_persist(fk_tstore *s, const char *ref);
/* Removes a deleted template's record. */
void fk__tstore_forget(fk_tstore *s, const char *template_id);
/* What a boot spec is, as a record keeps it. */
json_t *fk__tboot_json(const fk_tboot *b);

/* ---- store.c ---- */
/* builder.c's calls into the store (each takes the lock). */
/* Waits for a running slot (the build is `building` once it has one); false when the store
 * is stopping. */
bool fk__build_wait_slot(fk_tstore *s, fk_tbuild *b);
/* A log entry {timestamp, level, message, step?}: `step` the build's current step, left out
 * when it has none (E2B's BuildLogEntry: its builder logs a phase's lines with the phase's
 * step, "base", the step number or "finalize", and the build's own lines without one). */
void fk__build_log(fk_tstore *s, fk_tbuild *b, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The step the following entries belong to ("" or NULL: none). */
void fk__build_step(fk_tstore *s, fk_tbuild *b, const char *step);
/* Registers the build's sandbox (so fk_tstore_free can destroy it); false when the store is
 * stopping (the caller destroys the sandbox and gives up). "" clears it. */
bool fk__build_set_box(fk_tstore *s, fk_tbuild *b, const char *box_id);
/* The end of a build: ready with `boot` (taken over), or error with message and step. */
void fk__build_finish(fk_tstore *s, fk_tbuild *b, fk_tboot *boot, const char *reason,
                      const char *step);

/* Writes the message (printf) to msg (NULL or cap 0: none) and returns rc. */
int fk__tstore_fail(char *msg, size_t cap, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A template reference "templateID_or_name[:tag]": its part before ':' in ident, FK_T_OK;
 * FK_T_NOTFOUND (empty, or longer than a name) or FK_T_FORBIDDEN (a template fake-e2b serves,
 * E2B's answer for another team's) with E2B's message in msg. */
int fk__tstore_ref_ident(const char *ref, char ident[129], char *msg, size_t cap);

/* Name rules and ids. */
bool fk__tstore_name_ok(const char *s, size_t n);
bool fk__tstore_tag_ok(const char *s);
void fk__tstore_random_id(char out[21]);
void fk__tstore_random_uuid(char out[37]);
/* fk_format_time of a CLOCK_REALTIME time (ns), as a JSON string. */
json_t *fk__tstore_time(int64_t ns);
/* "waiting", "building", "ready", "error". */
const char *fk__tbuild_status_name(int st);
/* Lookups (under the lock): the template with this templateID or name (its first n bytes);
 * one of its builds; the build a reference "name[:tag]" (or templateID[:tag]) names (the
 * tag's, or without a tag the `default` tag's, else the newest ready build). */
struct fk_ttemplate *fk__tstore_find_template(fk_tstore *s, const char *id_or_name, size_t n);
fk_tbuild *fk__tstore_find_build(struct fk_ttemplate *t, const char *build_id);
fk_tbuild *fk__tstore_find_ref(fk_tstore *s, const char *ref, struct fk_ttemplate **tmpl_out);
/* Disk a tree takes (its files' blocks, no symlink followed, one filesystem) in MiB rounded
 * up; -1 when it cannot be read. */
int64_t fk__tstore_tree_mb(const char *dir);
/* rm -rf of a layer or store directory, never following a symlink; NULL or "" does nothing. */
void fk__tstore_rm_tree(const char *dir);
/* Frees an unlinked template and its builds (their threads joined, their layers left alone). */
void fk__ttemplate_free(struct fk_ttemplate *t);

#endif
