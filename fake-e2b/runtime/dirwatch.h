/*
 * fake-e2b/runtime/dirwatch.h — directory watches of a box (envd filesystem.Filesystem/WatchDir,
 * docs/internals/wire.md "Filesystem RPCs"): inotify on the box's directories, seen from the
 * host.
 *
 * A watch names its events relative to the watched directory ("f.txt", "sub/f.txt" when
 * recursive) with envd's operations (it uses fsnotify): a created or moved-in entry is CREATE, a
 * modified file WRITE, a deleted entry REMOVE, a moved-away entry RENAME, changed attributes
 * CHMOD. A recursive watch adds every directory below the path, and each directory created or
 * moved in later. Thread-safe per call; one thread at a time in fk_dirwatch_next.
 */
#ifndef FAKE_E2B_DIRWATCH_H
#define FAKE_E2B_DIRWATCH_H

#include "runtime.h"

typedef struct fk_dirwatch fk_dirwatch;

/* Open watches at most: per box, and per server (each an inotify instance of the host's root,
 * whose fs.inotify.max_user_instances, 128 by default, every root process shares); directories
 * all watches of the server take at most (each an inotify watch of the same user's
 * fs.inotify.max_user_watches). Past them fk_dirwatch_new fails FK_ENOSPC (resource_exhausted). */
#define FK_DIRWATCH_BOX_MAX         16
#define FK_DIRWATCH_SERVER_MAX      64
#define FK_DIRWATCH_SERVER_DIRS_MAX 50000

typedef enum fk_dirwatch_op {
	FK_DIRWATCH_CREATE = 1,
	FK_DIRWATCH_WRITE = 2,
	FK_DIRWATCH_REMOVE = 3,
	FK_DIRWATCH_RENAME = 4,
	FK_DIRWATCH_CHMOD = 5,
} fk_dirwatch_op;

typedef struct fk_dirwatch_event {
	fk_dirwatch_op op;
	char *
	    name; /* relative to the watched directory; owned, freed by fk_dirwatch_event_clear() */
	char *path; /* absolute path inside the box; owned */
} fk_dirwatch_event;

/* Starts watching `path` (resolved like the files API for `user`) in box `box_id`; the
 * absolute path goes to *abs_out (may be NULL; caller frees). FK_ENOTFOUND "path '<p>' does not
 * exist", FK_EINVAL "path '<p>' is not a directory", FK_ENOUSER, FK_EIO, FK_ENOSPC past a
 * budget above. Caller frees the watch
 * with fk_dirwatch_free(). */
int fk_dirwatch_new(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    bool recursive, fk_dirwatch **out, char **abs_out, fk_err *err);

/* Waits up to `timeout_ms` (-1 = forever) for the next event: 0 and *ev filled; FK_ETIMEOUT when
 * nothing came or fk_dirwatch_wake was called; FK_EIO if the inotify descriptor failed. */
int fk_dirwatch_next(fk_dirwatch *w, fk_dirwatch_event *ev, int timeout_ms);

/* Makes a thread blocked in fk_dirwatch_next on `w` return FK_ETIMEOUT. Any thread. */
void fk_dirwatch_wake(fk_dirwatch *w);

void fk_dirwatch_event_clear(fk_dirwatch_event *ev); /* accepts a zeroed event */

/* Watches open in this process and the directories they watch (the budgets above). */
void fk_dirwatch_counts(unsigned *watchers, size_t *dirs);

/* Stops watching and frees. Accepts NULL. Not concurrently with fk_dirwatch_next on `w`. */
void fk_dirwatch_free(fk_dirwatch *w);

#endif /* FAKE_E2B_DIRWATCH_H */
