/*
 * sandbox/watch.h: watching a directory in a sandbox (E2B's files.watchDir;
 * docs/watch.md): a handle whose events (what happened, to which name) are
 * read one at a time.
 *
 * The watch is envd's filesystem.Filesystem/WatchDir stream. Events are
 * pulled: sbx_watch_next() drives the stream on the calling thread, so there
 * is no thread and nothing is read while nobody asks; what one read from the
 * network holds beyond the event handed out waits in a queue of at most
 * SBX_WATCH_QUEUE_MAX events (the stream is not read further until it has
 * room), so memory stays bounded and no event is dropped on our side.
 *
 * Thread-safety: one thread at a time on a handle (sbx_watch_next and
 * sbx_watch_free); several handles may be used at once.
 * Common parameters (p, id, path, sig, err) are as in sandbox/sandbox.h.
 */
#ifndef SANDBOX_WATCH_H
#define SANDBOX_WATCH_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** At most this many events wait in a handle's queue. */
#define SBX_WATCH_QUEUE_MAX 4096

/** What happened to an entry (envd's EVENT_TYPE_*, fsnotify's operations). */
typedef enum sbx_watch_op {
	SBX_WATCH_CREATE = 1, /**< made (a file, a directory, a link), or moved in */
	SBX_WATCH_WRITE = 2,  /**< its contents were written */
	SBX_WATCH_REMOVE = 3, /**< removed */
	SBX_WATCH_RENAME = 4, /**< renamed or moved away (the new name comes as a create) */
	SBX_WATCH_CHMOD = 5   /**< its attributes changed (mode, owner, times) */
} sbx_watch_op;

/** One event; `name` is owned by it (free with sbx_watch_event_dispose()). */
typedef struct sbx_watch_event {
	sbx_watch_op op;
	/** The entry's path relative to the watched directory ("a.txt", "sub/b.txt");
	 * NUL-terminated. */
	char *name;
} sbx_watch_event;

/** Free an event's name and zero it. Accepts NULL. */
SBX_EXTERN void sbx_watch_event_dispose(sbx_watch_event *e);

/** Name of an op: "create", "write", "remove", "rename", "chmod" ("?" for others). */
SBX_EXTERN const char *sbx_watch_op_name(sbx_watch_op op);

#define SBX_WATCH_OPTIONS_VERSION 1

/** Options of sbx_sandbox_watch_dir(). Initialise with SBX_WATCH_OPTIONS_INIT. */
typedef struct sbx_watch_options {
	unsigned int version; /**< SBX_WATCH_OPTIONS_VERSION */
	/** Also the directories below it, as envd allows (new subdirectories included). */
	bool recursive;
	/**
	 * SBX_USER_SANDBOX (default) or SBX_USER_ROOT: the directory must be one this
	 * user may list (checked in the sandbox first; envd itself watches as root).
	 */
	sbx_user user;
} sbx_watch_options;

/* clang-format off */
#define SBX_WATCH_OPTIONS_INIT {SBX_WATCH_OPTIONS_VERSION, false, SBX_USER_SANDBOX}
/* clang-format on */

typedef struct sbx_watch sbx_watch;

/**
 * Start watching directory `path`. Connects first (a paused sandbox is
 * resumed), checks as the user that `path` is a directory it may list, then
 * opens the stream and returns once envd said it watches: every change after
 * the return is reported.
 * @param[out] out  the handle; free with sbx_watch_free(). NULL on failure.
 * @param path      sandbox path (sbx_validate_path), borrowed.
 * @param opts      NULL for SBX_WATCH_OPTIONS_INIT.
 * @return 0, SBX_EINVALID (path, options), SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT
 *         (no answer in 60 s), SBX_EHTTP (envd refused), SBX_ENETWORK,
 *         SBX_EPROTOCOL, SBX_ESANDBOX (the check refused: err->e2b_code
 *         "not_found" with "cannot watch PATH: no such directory",
 *         "invalid_argument" with "...: not a directory", "permission_denied"
 *         with "...: permission denied for PATH"; branch on the code, the
 *         message is for people), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_watch_dir(sbx_watch **out, sbx_provider *p, const char *id,
                                     const char *path, const sbx_watch_options *opts,
                                     sbx_signal *sig, sbx_error *err);

/**
 * The next event, waiting at most `timeout_ms` (0: only what has arrived;
 * UINT64_MAX: no limit) or until `sig` aborts.
 * @param[out] out  the event on 0 (dispose it); zeroed otherwise.
 * @return 0, SBX_ETIMEOUT (no event in time; the watch goes on), SBX_EABORTED
 *         (the watch goes on), SBX_EINVALID, and once the stream ended (then
 *         for every later call, after the events that came before the end):
 *         SBX_ENETWORK (the connection dropped: the sandbox was paused or
 *         removed, the network failed), SBX_EHTTP (envd's end-stream error,
 *         err->e2b_code), SBX_EPROTOCOL (a malformed message, or the stream
 *         ended), SBX_ETOOLARGE, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_watch_next(sbx_watch_event *out, sbx_watch *w, uint64_t timeout_ms,
                              sbx_signal *sig, sbx_error *err);

/** Stop watching (disconnects) and free. Accepts NULL. The provider must still exist. */
SBX_EXTERN void sbx_watch_free(sbx_watch *w);

SBX_END_DECLS

#endif
