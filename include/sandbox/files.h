/*
 * sandbox/files.h: files beyond the sandbox@1 contract's read/write/stat:
 * directory listings and streamed reads and writes (docs/files.md).
 *
 * Like the contract's file calls, every call here acts as the sandbox user
 * ("sandbox"), so permissions and symlinks resolve as that user, never as
 * root; each connects first (a paused sandbox is resumed). Every in-sandbox
 * step runs under an in-sandbox `timeout` backstop, and after a timeout or
 * an abort no process the call started is left in the sandbox (the exec kill
 * path: kill script, SIGKILL, reboot as the last resort).
 *
 * Thread-safety: every function may be called from many threads at once on
 * one provider; the results are the caller's and are not shared.
 * Common parameters (p, id, path, sig, err) are as in sandbox/sandbox.h.
 */
#ifndef SANDBOX_FILES_H
#define SANDBOX_FILES_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** Type of a directory entry, as lstat(2) sees it (a symlink is not followed). */
typedef enum sbx_entry_type {
	SBX_ENTRY_FILE = 1,    /**< regular file */
	SBX_ENTRY_DIR = 2,     /**< directory */
	SBX_ENTRY_SYMLINK = 3, /**< symbolic link (size: the link's own length) */
	SBX_ENTRY_OTHER = 4    /**< FIFO, socket, device */
} sbx_entry_type;

/** One directory entry. */
typedef struct sbx_dir_entry {
	char *name;          /**< the entry's name (any bytes but '/' and NUL), NUL-terminated */
	sbx_entry_type type; /**< see sbx_entry_type */
	uint64_t size;       /**< bytes (lstat st_size) */
} sbx_dir_entry;

/** A directory listing from sbx_sandbox_list_dir(); free with sbx_dir_free(). */
typedef struct sbx_dir {
	sbx_dir_entry *entries; /**< count entries sorted by name (bytewise); NULL when count 0 */
	size_t count;
	/** More than SBX_DIR_MAX_ENTRIES entries: only the first (unsorted) ones were kept. */
	bool truncated;
} sbx_dir;

/** At most this many entries are returned by one listing. */
#define SBX_DIR_MAX_ENTRIES 100000

/**
 * List the entries of directory `path` (not "." and "..", not recursive) as
 * the sandbox user, following `path` itself when it is a symlink to a
 * directory (docs/files.md). 120 s in-sandbox timeout.
 * @param[out] out  the listing, or NULL (return 0) when `path` does not
 *                  exist. Caller frees with sbx_dir_free().
 * @param path      sandbox path (sbx_validate_path), borrowed.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (120 s),
 *         SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL (malformed listing),
 *         SBX_ETOOLARGE, SBX_ESANDBOX (not a directory, "not a directory";
 *         permission denied), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_list_dir(sbx_dir **out, sbx_provider *p, const char *id,
                                    const char *path, sbx_signal *sig, sbx_error *err);

/** Free a listing and its names. Accepts NULL. */
SBX_EXTERN void sbx_dir_free(sbx_dir *dir);

SBX_END_DECLS

#endif
