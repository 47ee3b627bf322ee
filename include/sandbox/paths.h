/*
 * sandbox/paths.h: operations on paths in a sandbox beyond the sandbox@1
 * contract: remove, make a directory, rename, and a path's full entry
 * information (E2B's files.remove / makeDir / rename / getInfo; docs/paths.md).
 *
 * Every call acts as one user of the sandbox, `sandbox` unless the options
 * say `root`: it runs as that user inside the sandbox, so permissions and
 * symlinks resolve with that user's rights (envd's own filesystem RPCs run as
 * root whatever the user, which is why they are not used; docs/paths.md
 * "Why not envd's Filesystem RPCs"). Each call connects first (a paused
 * sandbox is resumed), runs one in-sandbox step under an in-sandbox `timeout`
 * backstop, and after a timeout or an abort leaves no process it started (the
 * exec kill path, as for the contract's file calls).
 *
 * Thread-safety: every function may be called from many threads at once on
 * one provider; results are the caller's and are not shared.
 * Common parameters (p, id, path, sig, err) are as in sandbox/sandbox.h;
 * paths are checked with sbx_validate_path() before any request.
 */
#ifndef SANDBOX_PATHS_H
#define SANDBOX_PATHS_H

#include "common.h"
#include "error.h"
#include "files.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/* sbx_user (SBX_USER_SANDBOX, SBX_USER_ROOT) is in sandbox/sandbox.h. */

#define SBX_PATH_OPTIONS_VERSION 1

/** Options of the calls below. Initialise with SBX_PATH_OPTIONS_INIT. */
typedef struct sbx_path_options {
	unsigned int version; /**< SBX_PATH_OPTIONS_VERSION */
	sbx_user user;        /**< SBX_USER_SANDBOX (default) or SBX_USER_ROOT */
	/**
	 * The in-sandbox step, ms; 0 = 120 000 (the contract's file operation
	 * timeout). Past it the step is killed (SBX_ETIMEOUT), no process left.
	 */
	uint64_t timeout_ms;
} sbx_path_options;

/* clang-format off */
#define SBX_PATH_OPTIONS_INIT {SBX_PATH_OPTIONS_VERSION, SBX_USER_SANDBOX, 0}
/* clang-format on */

/**
 * What lstat(2) says of a path (E2B's EntryInfo): a symlink is described, not
 * followed. Made by sbx_sandbox_path_info() and sbx_sandbox_rename(); free
 * with sbx_entry_info_free(). Strings are NUL-terminated and owned by it.
 */
typedef struct sbx_entry_info {
	char *name;          /**< the last path segment ("/" for the root) */
	char *path;          /**< the path as asked (rename: the destination) */
	sbx_entry_type type; /**< file, dir, symlink, or other (FIFO, socket, device) */
	uint64_t size;       /**< bytes (st_size; a symlink: the link's own length) */
	uint32_t mode;       /**< permission bits, st_mode & 07777 (e.g. 0644, 01777) */
	/**
	 * E2B's permissions text as envd makes it (Go's os.FileMode.String()):
	 * type letters then rwxrwxrwx, e.g. "-rw-r--r--", "drwxr-xr-x",
	 * "Lrwxrwxrwx", "dtrwxrwxrwx" for a sticky directory, "urwxr-xr-x" setuid.
	 */
	char permissions[16];
	char *owner;          /**< the owner's user name, or the uid in decimal without one */
	char *group;          /**< the group's name, or the gid in decimal without one */
	int64_t mtime_sec;    /**< modification time, seconds since the epoch (UTC) */
	uint32_t mtime_nsec;  /**< and its nanoseconds, 0..999 999 999 */
	char *symlink_target; /**< a symlink's target as stored (readlink); NULL for others */
} sbx_entry_info;

/** Free an entry and its strings. Accepts NULL. */
SBX_EXTERN void sbx_entry_info_free(sbx_entry_info *e);

/**
 * The entry information of `path` (lstat: a symlink is described, not
 * followed), as the options' user.
 * @param[out] out  the entry, or NULL (return 0) when `path` does not exist
 *                  (no such file: ENOENT for the path or a parent). Caller
 *                  frees with sbx_entry_info_free().
 * @param opts      NULL for SBX_PATH_OPTIONS_INIT; borrowed.
 * @return 0, SBX_EINVALID (NULL argument, bad path, bad options), SBX_EGONE,
 *         SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL
 *         (malformed answer), SBX_ESANDBOX ("cannot stat PATH: permission
 *         denied for PATH", a parent that is a file), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_path_info(sbx_entry_info **out, sbx_provider *p, const char *id,
                                     const char *path, const sbx_path_options *opts,
                                     sbx_signal *sig, sbx_error *err);

/**
 * Remove `path` and, when it is a directory, everything under it (E2B's
 * files.remove: `rm -rf`, as the options' user; a symlink is removed, not
 * followed). A missing path is success, as in E2B.
 * @param path  sandbox path; "/" is refused (SBX_EINVALID) before any request.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_ESANDBOX ("cannot remove PATH: permission denied
 *         for …", a mount point), SBX_ENOMEM, SBX_EINTERNAL. After a failure
 *         part of a tree may be gone (as with rm -rf).
 */
SBX_EXTERN int sbx_sandbox_remove(sbx_provider *p, const char *id, const char *path,
                                  const sbx_path_options *opts, sbx_signal *sig, sbx_error *err);

/**
 * Make directory `path` and its missing parents, owned by the options' user
 * (mode 0777 & ~umask: 0755 in the template), as E2B's files.makeDir.
 * @param[out] created  may be NULL; true when `path` was made, false when a
 *                      directory (or a symlink to one) was already there.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_ESANDBOX ("cannot make directory PATH: a file is
 *         in the way", permission denied), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_make_dir(bool *created, sbx_provider *p, const char *id,
                                    const char *path, const sbx_path_options *opts, sbx_signal *sig,
                                    sbx_error *err);

/**
 * Rename `from` to `to` (E2B's files.rename, which is rename(2): `to` is
 * replaced when it is a file or an empty directory, never moved into; its
 * missing parents are made; across file systems the entry is copied and
 * removed, as mv(1) does), as the options' user.
 * @param[out] out  the entry of `to` after the move, or NULL (return 0) when
 *                  `from` does not exist. Free with sbx_entry_info_free().
 * @param from, to  sandbox paths, borrowed; "/" is refused for either.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_EPROTOCOL, SBX_ESANDBOX ("cannot rename FROM:
 *         permission denied for …", a non-empty directory in the way),
 *         SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_rename(sbx_entry_info **out, sbx_provider *p, const char *id,
                                  const char *from, const char *to, const sbx_path_options *opts,
                                  sbx_signal *sig, sbx_error *err);

/** One file of sbx_sandbox_write_files(); borrowed for the call. */
typedef struct sbx_write_entry {
	const char *path; /**< sandbox path (sbx_validate_path) */
	const void *data; /**< len bytes; may be NULL when len is 0 */
	size_t len;
} sbx_write_entry;

/** At most this many files, and this many bytes in all, in one sbx_sandbox_write_files(). */
#define SBX_WRITE_FILES_MAX       1000
#define SBX_WRITE_FILES_MAX_BYTES (64u << 20)

/**
 * Write `n` files in one upload (E2B's files.write([...]): one multipart POST
 * /files of n parts), each replaced, its parents made: uploaded to root-only
 * staging files, then one in-sandbox step writes them in order as the options'
 * user (the sandbox user: permissions and symlinks resolve as that user; under
 * /skills by root with mode 0644, as sbx_sandbox_write_file(); root: as root).
 * The staging files are removed (an abort may leave them). The bytes are copied
 * once more while they are sent, so memory is at most twice the total.
 * @param files  n entries, borrowed; n 1..SBX_WRITE_FILES_MAX, their bytes at
 *               most SBX_WRITE_FILES_MAX_BYTES together, no path twice: all
 *               checked before any request.
 * @param opts   NULL for SBX_PATH_OPTIONS_INIT (timeout_ms bounds the step).
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_ESANDBOX ("cannot write PATH: ..." for the first
 *         file that failed; the files before it are written, the ones after it
 *         are not), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_write_files(sbx_provider *p, const char *id,
                                       const sbx_write_entry *files, size_t n,
                                       const sbx_path_options *opts, sbx_signal *sig,
                                       sbx_error *err);

SBX_END_DECLS

#endif
