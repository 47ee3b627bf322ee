/*
 * fake-e2b/control.h: the E2B control plane (e2b-protocol.md §1, §6, §7) and the
 * sandbox registry shared with envd.
 *
 * A sandbox is refcounted: the registry holds one reference until it is
 * deleted; envd takes one per request (fk_control_acquire). Lifecycle changes
 * (pause, resume, reboot, delete, reaper) are serialised per sandbox. Open
 * envd streams register an fk_watch so a pause or delete breaks them promptly,
 * as E2B's proxy drops client connections of a paused sandbox.
 */
#ifndef FK_CONTROL_H
#define FK_CONTROL_H

#include "runtime.h"
#include "server.h"

typedef struct fk_sandbox fk_sandbox;

/* One open envd stream of a sandbox; embedded in the stream's state. */
typedef struct fk_watch {
	struct fk_watch *prev, *next;
	fk_sub *sub; /* woken with fk_sub_wake when the sandbox pauses / goes; may be NULL */
	pthread_cond_t cond;
	int broken; /* set (under the control lock) once the sandbox paused or was deleted */
	int linked;
} fk_watch;

int fk_control_new(fk_control **out, fk_server *srv);
/* Stop the reaper and destroy every sandbox (runtime included), breaking every stream. */
void fk_control_shutdown(fk_control *c);
void fk_control_free(fk_control *c);

enum MHD_Result fk_control_handle(fk_req *r);

/* Internal state for GET /_fake/sandboxes (new reference). */
json_t *fk_control_dump(fk_control *c);

/* A sandbox by id with a new reference, or NULL when unknown/deleted. */
fk_sandbox *fk_control_acquire(fk_control *c, const char *id);
void fk_sandbox_release(fk_control *c, fk_sandbox *sb);
/* Borrowed while a reference is held. */
const char *fk_sandbox_id(const fk_sandbox *sb);
const char *fk_sandbox_token(const fk_sandbox *sb);
int fk_sandbox_running(fk_control *c, fk_sandbox *sb);

/* Register a stream; returns -1 (not registered) when the sandbox is no longer running. */
int fk_sandbox_watch(fk_control *c, fk_sandbox *sb, fk_watch *w);
void fk_sandbox_unwatch(fk_control *c, fk_sandbox *sb, fk_watch *w);
/* Change the sub woken on a break (NULL before freeing it). */
void fk_watch_set_sub(fk_control *c, fk_watch *w, fk_sub *sub);
/* Is the watch broken (sandbox paused/deleted/server stopping)? */
int fk_watch_broken(fk_control *c, fk_watch *w);
/* Sleep up to ms or until the watch breaks; returns broken. */
int fk_watch_sleep(fk_control *c, fk_watch *w, int ms);

/*
 * Connect-Timeout-Ms bounds a Start'ed process even after its client left (§4.2): SIGKILL
 * `pid` of sandbox `id` at `deadline_ms` (CLOCK_MONOTONIC) unless `proc` has ended by then.
 * Takes its own reference on proc.
 */
void fk_control_kill_at(fk_control *c, const char *id, fk_proc *proc, int64_t deadline_ms);

/* Mark a pid of the sandbox as immune to SendSignal (fault kill_ignored). */
void fk_sandbox_set_immune(fk_control *c, fk_sandbox *sb, uint32_t pid);
int fk_sandbox_is_immune(fk_control *c, fk_sandbox *sb, uint32_t pid);

#endif
