/*
 * fake-e2b/registry/registry_int.h: the registry's insides, for the sandbox table's files.
 * Floors, each using only those below it: restore.c, reaper.c and metrics.c over sandbox.c
 * (the table, references, lifecycle) over pwatch.c (directory watchers) and sblogs.c (a
 * sandbox's logs) over lock.c (the registry lock); shapes.c and records.c (the JSON views,
 * the records) use only this header.
 */
#ifndef FK_REGISTRY_INT_H
#define FK_REGISTRY_INT_H

#include "registry.h"
#include "state.h"

/* The kind of state record a sandbox is kept as (records.c writes them, restore.c reads them). */
#define FK_RECORDS_KIND "sandboxes"

/* A pending Connect-Timeout-Ms kill of a process whose stream is gone. */
typedef struct fk_kill_timer {
	struct fk_kill_timer *next;
	char id[FK_ID_LEN + 1];
	fk_proc *proc;
	int64_t deadline_ms;
} fk_kill_timer;

struct fk_registry {
	fk_rt *rt;
	unsigned char seed[32];
	fk_kill_timer *timers; /* under lock */
	pthread_mutex_t lock;
	fk_sandbox *list;
	int stopping;
	fk_state *state; /* kept: the records (records.c); NULL: ephemeral */
	struct fk_gone_logs
	    *gone; /* under lock: deleted sandboxes' logs, oldest first (sblogs.c) */
	size_t n_gone;
};

/* records.c: write sb's record now (a no-op when ephemeral); remove it. */
void fk__registry_persist(fk_registry *g, fk_sandbox *sb);
void fk__registry_forget(fk_registry *g, fk_sandbox *sb);
/* sandbox.c: sb's box made known to the runtime again from its files (fk_box_restore: not
 * booted), with the options its record keeps. */
int fk__registry_restore_box(fk_registry *g, fk_sandbox *sb, fk_err *err);

/* sblogs.c: sb's logs move to the deleted sandboxes' (at its delete); all of those freed;
 * sb's logs as its record keeps them (under the lock), and read back from one. */
void fk__sandbox_logs_bury(fk_registry *g, fk_sandbox *sb);
void fk__sandbox_logs_forget_all(fk_registry *g);
json_t *fk__sandbox_logs_record(const fk_sandbox *sb);
void fk__sandbox_logs_restore(fk_sandbox *sb, json_t *logs);

#endif
