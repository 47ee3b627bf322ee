/*
 * fake-e2b/state/state.h: the state directory's lock and its records, what a kept server
 * finds again after a restart, a crash or a reboot (README "What survives what").
 *
 * The lock: <dir>/.lock holds a POSIX write lock (fcntl F_SETLK) for the server's whole life,
 * so two servers never use one state directory. Such a lock belongs to the process (a box's
 * PID 1, cloned from the server, does not inherit it) and the kernel drops it when the process
 * dies, kill -9 included; F_GETLK names the holder's pid.
 *
 * Records: one file per object, <dir>/.state/<kind>/<id> (kind "sandboxes"), written whole or
 * not at all (a temporary file, fsync, rename over the old one, fsync of the directory). Each
 * begins with a header line naming the format version, its kind, its id, the body's length and
 * the SHA-256 of kind, id and body: a record cut short by a crash, a flipped byte or a file
 * renamed to another id fails the check and is set aside (<id>.bad), never loaded.
 *
 * Knows no sandbox: the registry says what a record holds. Thread-safe: writes of different
 * ids may run at once; the caller serialises writes of one id (the registry's op_lock).
 */
#ifndef FK_STATE_H
#define FK_STATE_H

#include <jansson.h>
#include <stddef.h>

typedef struct fk_state fk_state;

#define FK_STATE_VERSION 1

/* Takes `dir`'s lock (the directory must exist): 0, or -1 with the reason in msg, e.g.
 * "state directory /var/lib/fake-e2b is in use by another fake-e2b (pid 4242)". */
int fk_state_open(const char *dir, fk_state **out, char *msg, size_t cap);
/* Releases the lock and frees. Accepts NULL. */
void fk_state_close(fk_state *st);
const char *fk_state_dir(const fk_state *st);

/* Does `dir` hold records of kind (a kept server's)? */
int fk_state_has_records(const char *dir, const char *kind);

/* Writes the record of (kind, id): obj serialised, atomically and durably. 0, or -1 with errno
 * (the old record, if any, is untouched). id: 1..64 of [A-Za-z0-9_-]. */
int fk_state_put(fk_state *st, const char *kind, const char *id, json_t *obj);
/* Removes the record (durably). 0 also when there was none. */
int fk_state_del(fk_state *st, const char *kind, const char *id);

/* Calls fn for each record of kind that checks out (obj borrowed for the call). A record that
 * does not is renamed <id>.bad and reported on stderr with why; fn gets obj NULL for it and for
 * each <id>.bad set aside before (its object's files are not anyone else's). A temporary file a
 * crash left is removed. The number of records loaded. */
int fk_state_load(fk_state *st, const char *kind, void (*fn)(const char *id, json_t *obj, void *ud),
                  void *ud);

/* The record format, for tests: serialise obj as the record of (kind, id) (caller frees), and
 * check a record's bytes (0, or -1 with why in msg; *obj the body's JSON on success). */
char *fk_state_encode(const char *kind, const char *id, json_t *obj, size_t *len);
int fk_state_decode(const char *kind, const char *id, const char *buf, size_t len, json_t **obj,
                    char *msg, size_t cap);

#endif
