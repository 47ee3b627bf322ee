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
 *         SBX_ETOOLARGE, SBX_ESANDBOX (not a directory: err->e2b_code
 *         "invalid_argument", "...: it is a file, not a directory"; permission
 *         denied), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_list_dir(sbx_dir **out, sbx_provider *p, const char *id,
                                    const char *path, sbx_signal *sig, sbx_error *err);

/** Free a listing and its names. Accepts NULL. */
SBX_EXTERN void sbx_dir_free(sbx_dir *dir);

/**
 * Receives a streamed read's bytes, in order (docs/files.md "Streamed reads").
 * `data` is borrowed for the call only; a chunk may be any size. Return 0 to
 * go on; any other value stops the read, which returns SBX_EUSER. Runs on the
 * thread that called the read.
 */
typedef int (*sbx_sink_fn)(const unsigned char *data, size_t len, void *payload);

#define SBX_FILE_OPTIONS_VERSION 1

/** Options of the streamed reads and writes. Initialise with SBX_FILE_OPTIONS_INIT. */
typedef struct sbx_file_options {
	unsigned int version; /**< SBX_FILE_OPTIONS_VERSION */
	/** Reads: deliver at most this many bytes (truncated is set when there were more). */
	uint64_t max_bytes;
	/**
	 * Each in-sandbox step (copy to or from the staging file), ms; 0 = 120 000
	 * (the contract's file operation timeout). The step is killed when it
	 * passes (SBX_ETIMEOUT), and no process is left behind.
	 */
	uint64_t timeout_ms;
	/** The raw transfer of the bytes over the network, ms; 0 = 600 000. */
	uint64_t transfer_timeout_ms;
} sbx_file_options;

/* clang-format off */
#define SBX_FILE_OPTIONS_INIT {SBX_FILE_OPTIONS_VERSION, UINT64_MAX, 0, 0}
/* clang-format on */

/** What a streamed read delivered; a plain value. */
typedef struct sbx_read_result {
	bool found;     /**< false: the path is missing or a directory (nothing delivered) */
	uint64_t bytes; /**< bytes handed to the sink */
	bool truncated; /**< the file is longer than max_bytes */
} sbx_read_result;

/**
 * Read a file of any size into `sink`, as the sandbox user, with bounded
 * memory (docs/files.md "Streamed reads"): the file is copied as the sandbox
 * user into a root-only staging file, moved raw (envd GET /files, no
 * base64), and the staging file is removed. The copy is a moment's snapshot:
 * the sink gets the bytes the file had when it was copied.
 * @param[out] out  filled on 0 (zeroed on failure; bytes may have reached the
 *                  sink before a failure).
 * @param path      sandbox path (sbx_validate_path), borrowed.
 * @param sink      called with the bytes in order; non-NULL.
 * @param opts      NULL for SBX_FILE_OPTIONS_INIT; borrowed.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (a step or
 *         the transfer), SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL, SBX_ESANDBOX
 *         (e.g. permission denied, no room for the staging copy), SBX_EUSER
 *         (the sink stopped), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_read_file_to(sbx_read_result *out, sbx_provider *p, const char *id,
                                        const char *path, sbx_sink_fn sink, void *payload,
                                        const sbx_file_options *opts, sbx_signal *sig,
                                        sbx_error *err);

/**
 * sbx_sandbox_read_file_to() into file descriptor `fd` (written fully,
 * EINTR retried; not closed, not rewound). A failed write(2) stops the read
 * with SBX_EUSER and errno's text in the message.
 */
SBX_EXTERN int sbx_sandbox_read_file_fd(sbx_read_result *out, sbx_provider *p, const char *id,
                                        const char *path, int fd, const sbx_file_options *opts,
                                        sbx_signal *sig, sbx_error *err);

/**
 * Write a file of any size from `source` (sandbox/sandbox.h sbx_input_fn:
 * fill the buffer, 0 bytes = end), replacing `path`, with bounded memory
 * (docs/files.md "Streamed writes"): the bytes are uploaded raw and
 * streamed (chunked) into a root-only staging file, then written to `path`
 * as the sandbox user (parents created; under /skills as root with mode
 * 0644), exactly as sbx_sandbox_write_file(); the staging file is removed
 * whatever happens. `source` runs on the calling thread while the upload is
 * on the wire; an abort is seen when it returns.
 * @param opts  NULL for SBX_FILE_OPTIONS_INIT (max_bytes is ignored); borrowed.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_EPROTOCOL, SBX_ESANDBOX (the write as the user
 *         failed), SBX_EUSER (source returned non-zero), SBX_ENOMEM,
 *         SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_write_file_from(sbx_provider *p, const char *id, const char *path,
                                           sbx_input_fn source, void *payload,
                                           const sbx_file_options *opts, sbx_signal *sig,
                                           sbx_error *err);

/**
 * sbx_sandbox_write_file_from() reading file descriptor `fd` to its end (EINTR
 * retried; not closed). A failed read(2) is SBX_EUSER with errno's text.
 */
SBX_EXTERN int sbx_sandbox_write_file_fd(sbx_provider *p, const char *id, const char *path, int fd,
                                         const sbx_file_options *opts, sbx_signal *sig,
                                         sbx_error *err);

SBX_END_DECLS

#endif
