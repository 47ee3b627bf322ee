/*
 * sandbox/sandbox.h: the sandbox@1 contract as a C API (docs/contract.md).
 *
 * A provider (sbx_provider) implements the contract; the E2B provider is made
 * with sbx_e2b_provider_new() (sandbox/e2b.h). A sandbox is named by its id
 * (docs/contract.md "Definitions"), a NUL-terminated string the caller owns.
 *
 * Thread-safety: every function here may be called from many threads at once
 * on one provider (the contract's concurrentExec = true); the result structs
 * are the caller's and are not shared.
 *
 * Common parameters of the sbx_sandbox_* calls:
 *   p    the provider; borrowed, must outlive the call. NULL: SBX_EINVALID.
 *   id   sandbox id (E2B: 1..128 bytes of [A-Za-z0-9-], docs/protocol.md "Sandbox ids");
 *        borrowed, not kept after the call. NULL or malformed: SBX_EINVALID.
 *   sig  abort signal or NULL. Already aborted: SBX_EABORTED before any other
 *        check and before any request. Aborted during the call: it returns
 *        SBX_EABORTED promptly (one poll watches the network and the signal;
 *        docs/contract.md "Methods").
 *   err  NULL, or filled on failure (first cause, secret-free; see error.h).
 * Every call returns 0 or a negative sbx_error_code. The codes a call can
 * return are listed on it; their meaning in these calls:
 *   SBX_EINVALID   a bad argument, found before any request.
 *   SBX_EGONE      the sandbox no longer exists (E2B-format 404 on connect), or
 *                  E2B gave no envd access token (docs/contract.md "Lifecycle": the caller
 *                  recreates it). Calls that "count a missing sandbox as
 *                  success" never return it.
 *   SBX_ETIMEOUT   a call's own deadline passed: 60 s per control-plane request
 *                  and 120 s per in-sandbox file operation (both the seed's),
 *                  600 s per upload. Never for an
 *                  exec command's timeout (that is a result, timed_out).
 *   SBX_EHTTP      E2B or envd answered with another HTTP error status
 *                  (err->http_status, err->e2b_code).
 *   SBX_ENETWORK   the server could not be reached.
 *   SBX_EPROTOCOL  a malformed reply (bad JSON, bad Connect frame, no
 *                  end-stream, a missing or malformed sandboxID or an
 *                  invalid domain from E2B).
 *   SBX_ETOOLARGE  a reply over a named cap (envelope, JSON body).
 *   SBX_ESANDBOX   an in-sandbox script failed (message: its stderr, at most
 *                  500 bytes).
 *   SBX_ENOMEM     allocation failed; outputs are left zeroed/NULL.
 *   SBX_EINTERNAL  a local system call (or libcurl) failed unexpectedly, or the
 *                  provider does not implement the method.
 *
 * Reliability (docs/reliability.md): idempotent control-plane requests
 * (list, get, delete, pause, connect) are retried, at most 4 times within
 * the call's deadline, on a gateway's 502/503/504 without an E2B body or a
 * reset before any answer; create's POST and command starts never are. An
 * older control plane without the /v2 routes is detected (not read as a gone
 * sandbox) and its legacy routes are used. A create that may have made a
 * sandbox before failing removes it by name before returning its error.
 */
#ifndef SANDBOX_SANDBOX_H
#define SANDBOX_SANDBOX_H

#include "common.h"
#include "error.h"
#include "signal.h"

SBX_BEGIN_DECLS

typedef struct sbx_provider sbx_provider;

/** Egress policy of a sandbox (docs/contract.md "Egress", docs/protocol.md "Egress"). */
typedef enum sbx_egress {
	SBX_EGRESS_NONE = 0,      /**< no outbound network */
	SBX_EGRESS_ALLOWLIST = 1, /**< only allow_hosts (empty list = none) */
	SBX_EGRESS_OPEN = 2       /**< everything; refused unless allowOpenEgress */
} sbx_egress;

/**
 * Sandbox limits (docs/contract.md "Resources", "Egress"). cpu, memory_mb and
 * disk_mb must be finite and > 0; E2B fixes them in the template, so they are
 * validated, not applied. allow_hosts (allow_hosts_count strings, borrowed for
 * the call) are checked with sbx_validate_allow_host() when egress is
 * SBX_EGRESS_ALLOWLIST; NULL is allowed when allow_hosts_count is 0.
 */
typedef struct sbx_limits {
	double cpu;       /**< cores */
	double memory_mb; /**< MiB */
	double disk_mb;   /**< MiB */
	sbx_egress egress;
	const char *const *allow_hosts;
	size_t allow_hosts_count;
} sbx_limits;

/**
 * One environment variable for exec. key must match ^[A-Za-z_][A-Za-z0-9_]*$
 * (sbx_validate_env_key); value must not be NULL. Both borrowed for the call.
 */
typedef struct sbx_env_var {
	const char *key;
	const char *value;
} sbx_env_var;

/** Which output stream a chunk of sbx_output_fn belongs to. */
typedef enum sbx_stream { SBX_STREAM_STDOUT = 1, SBX_STREAM_STDERR = 2 } sbx_stream;

/**
 * Output callback of a streamed exec (docs/exec.md "Streamed output"): `len`
 * bytes of `stream`, as they arrive. `data` is borrowed for the call only and
 * is not NUL-terminated; a chunk may be any size and may end inside a UTF-8
 * character, but never holds bytes past the output budget: the chunks of
 * each stream, concatenated, are exactly that stream's bytes in the result.
 * Return 0 to go on; any other value stops the exec (the command is killed
 * as on abort) and the call returns SBX_EUSER.
 * It runs on the thread that called sbx_sandbox_exec() (for a background
 * command: on that handle's reader thread, see sandbox/process.h); it must
 * not call sbx_sandbox_exec() on the same thread's stack again.
 */
typedef int (*sbx_output_fn)(sbx_stream stream, const unsigned char *data, size_t len,
                             void *payload);

/**
 * stdin read callback (docs/exec.md "stdin"): write at most `cap` bytes into
 * `buf` and their count into `*len_out`; a count of 0 is end of input (the
 * command reads EOF). Return 0 to go on; any other value stops the exec (the
 * command is killed as on abort) and the call returns SBX_EUSER. It runs on
 * the thread that called sbx_sandbox_exec(), between the requests that carry
 * the bytes, so it may block (the command waits for its input meanwhile).
 */
typedef int (*sbx_input_fn)(size_t *len_out, unsigned char *buf, size_t cap, void *payload);

/**
 * Who a command or a path call runs as inside the sandbox: the sandbox user
 * unless the caller says root (exec and background commands here,
 * sandbox/process.h, sandbox/paths.h).
 */
typedef enum sbx_user {
	SBX_USER_SANDBOX = 0, /**< "sandbox" (uid 1000), the user of the agent's commands */
	SBX_USER_ROOT = 1     /**< "root": explicit only */
} sbx_user;

#define SBX_EXEC_OPTIONS_VERSION 3

/**
 * Options of sbx_sandbox_exec(). Initialise with SBX_EXEC_OPTIONS_INIT
 * (timeout 60000 ms, output budget 1 MiB, no callbacks, no stdin). All
 * pointers borrowed for the call.
 *
 * Versions: 1 ends at `tag` (a caller built against 0.1 passes version 1
 * and the fields below it are never read); 2 adds streaming and stdin; 3
 * adds `user`.
 */
typedef struct sbx_exec_options {
	unsigned int version;   /**< SBX_EXEC_OPTIONS_VERSION (1, 2 or 3); another: SBX_EINVALID */
	const char *cwd;        /**< working directory; NULL = /workspace */
	const sbx_env_var *env; /**< extra environment, applied after HOME and LANG */
	size_t env_count;       /**< entries in env (env may be NULL when 0) */
	uint64_t timeout_ms;    /**< command timeout in ms, > 0 (0: SBX_EINVALID) */
	/** Shared budget of stdout + stderr in bytes; output past it is drained and dropped. */
	size_t max_output_bytes;
	/** Holder tag for sbx_sandbox_kill_tagged() (^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$), or NULL. */
	const char *tag;
	/* ---- version 2 ---- */
	/** Called with output as it arrives (see sbx_output_fn), or NULL. */
	sbx_output_fn on_output;
	void *output_payload; /**< passed back to on_output as is */
	/**
	 * stdin bytes (stdin_len of them), or NULL. The command reads them, then
	 * EOF. NULL with stdin_read NULL: stdin is /dev/null (EOF at once), as in
	 * version 1. Not both stdin_data and stdin_read (SBX_EINVALID).
	 */
	const void *stdin_data;
	size_t stdin_len; /**< bytes at stdin_data; > 0 needs stdin_data */
	sbx_input_fn
	    stdin_read;      /**< stdin pulled from a callback until it gives 0 bytes, or NULL */
	void *stdin_payload; /**< passed back to stdin_read as is */
	/* ---- version 3 ---- */
	/**
	 * SBX_USER_SANDBOX (default) or SBX_USER_ROOT (HOME=/root; the kill on a
	 * timeout or an abort runs as root too). kill_all and kill_tagged act as
	 * the sandbox user and do not reach a command run as root (docs/exec.md
	 * "As root").
	 */
	sbx_user user;
} sbx_exec_options;

/* clang-format off */
#define SBX_EXEC_OPTIONS_INIT {SBX_EXEC_OPTIONS_VERSION, NULL, NULL, 0, 60000, 1024 * 1024, NULL, \
                               NULL, NULL, NULL, 0, NULL, NULL, SBX_USER_SANDBOX}
/* clang-format on */

/**
 * Result of sbx_sandbox_exec() (docs/contract.md "exec"). The struct is
 * the caller's (usually on its stack); the byte buffers are owned by it and
 * each carries a trailing NUL for convenience only (output may contain NUL
 * bytes: use the lengths). Free the buffers with sbx_exec_result_free().
 */
typedef struct sbx_exec_result {
	/**
	 * false (no exit code: docs/contract.md "exec", Results): timed out, aborted, ended by a
	 * signal Go does not name, or envd sent an exit status that is not a valid int32.
	 */
	bool has_exit_code;
	/** Exit status, or 128 + n for signal n; 0 unless has_exit_code. */
	int exit_code;
	unsigned char *stdout_data; /**< stdout bytes; never NULL on success */
	size_t stdout_len;          /**< bytes in stdout_data, excluding the trailing NUL */
	unsigned char *stderr_data; /**< stderr bytes; never NULL on success */
	size_t stderr_len;          /**< bytes in stderr_data, excluding the trailing NUL */
	/** stdout + stderr exceeded max_output_bytes; cut back to a UTF-8 character boundary. */
	bool truncated;
	bool timed_out; /**< the command hit timeout_ms and was killed */
	bool aborted;   /**< the abort signal fired after the command started */
} sbx_exec_result;

/**
 * Free the buffers of a result (not the struct itself) and zero it, so a
 * second call is harmless. Accepts NULL. Not thread-safe on one result.
 */
SBX_EXTERN void sbx_exec_result_free(sbx_exec_result *res);

/**
 * File contents from sbx_sandbox_read_file(); allocated by the library, freed
 * with sbx_file_free(). data has a trailing NUL for convenience only.
 */
typedef struct sbx_file {
	unsigned char *data; /**< the first len bytes of the file; never NULL */
	size_t len;          /**< bytes in data, <= max_bytes, excluding the trailing NUL */
	bool truncated;      /**< the file is longer than max_bytes */
} sbx_file;

/** Free a file result and its data. Accepts NULL. */
SBX_EXTERN void sbx_file_free(sbx_file *file);

/** Result of sbx_sandbox_stat(); a plain value, nothing to free. */
typedef struct sbx_stat {
	bool exists;   /**< false: no such path (size and is_dir are 0) */
	uint64_t size; /**< bytes (stat %s of the path, symlinks followed) */
	bool is_dir;   /**< the path is a directory */
} sbx_stat;

/** Outcome of sbx_sandbox_resume(). */
typedef enum sbx_resume_status { SBX_RESUMED = 0, SBX_RESUME_GONE = 1 } sbx_resume_status;

/**
 * Free a provider made by a constructor such as sbx_e2b_provider_new().
 * Accepts NULL. No call may be running on it (not thread-safe against its own
 * calls); sandboxes are not touched.
 */
SBX_EXTERN void sbx_provider_free(sbx_provider *p);

/**
 * The contract's concurrentExec: true for the E2B provider (docs/contract.md
 * "Methods"). NULL gives false. Thread-safe.
 */
SBX_EXTERN bool sbx_provider_concurrent_exec(const sbx_provider *p);

/**
 * Create a sandbox named `name`, replacing any sandbox with the same name
 * (docs/contract.md "Lifecycle"; docs/protocol.md "Create", "List"): list
 * by metadata name (all pages, running and paused), delete each, then
 * POST /v2/sandboxes with autoPause and secure. SBX_EGRESS_ALLOWLIST with
 * domainAllowlist false degrades to none with a warning through the logger.
 * @param[out] id_out  the new sandbox id (NUL-terminated); caller frees with
 *                     sbx_free(). NULL on failure.
 * @param name   ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$; borrowed.
 * @param limits validated (sbx_validate_limits) before any request; borrowed.
 *               SBX_EGRESS_OPEN is refused (SBX_EINVALID) unless the deployment
 *               config has allowOpenEgress.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL (no sandboxID, or more list pages than the cap),
 *         SBX_ETOOLARGE, SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_create(char **id_out, sbx_provider *p, const char *name,
                                  const sbx_limits *limits, sbx_signal *sig, sbx_error *err);

/**
 * Resume (connect) a sandbox: a paused one is resumed, a running one gets its
 * timeout pushed back to timeoutSeconds (docs/contract.md "Lifecycle";
 * docs/protocol.md "Connect (resume)"). A 409 while another resume is in flight is retried
 * 5 x 500 ms.
 * @param[out] out  SBX_RESUMED, or SBX_RESUME_GONE (return 0) when the sandbox
 *                  no longer exists or E2B gives no envd access token.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL, SBX_ETOOLARGE, SBX_ENOMEM, SBX_EINTERNAL. Never SBX_EGONE.
 */
SBX_EXTERN int sbx_sandbox_resume(sbx_resume_status *out, sbx_provider *p, const char *id,
                                  sbx_signal *sig, sbx_error *err);

/**
 * Pause a sandbox, keeping files and memory (docs/contract.md "Lifecycle";
 * docs/protocol.md "Delete, pause, timeout"). An E2B-format 404 (missing) or a 409
 * (already paused) is success.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL, SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_suspend(sbx_provider *p, const char *id, sbx_signal *sig,
                                   sbx_error *err);

/**
 * Delete a sandbox: DELETE /sandboxes/{id} (docs/contract.md "Lifecycle";
 * docs/protocol.md "Delete, pause, timeout"). An E2B-format 404 is success.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL, SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_destroy(sbx_provider *p, const char *id, sbx_signal *sig,
                                   sbx_error *err);

/**
 * Delete every sandbox (running or paused) whose metadata name is `name`
 * (docs/contract.md "Lifecycle"; docs/protocol.md "List"): lists
 * all pages, then deletes each; none is success.
 * @param name  borrowed; ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL (also: more list pages than the cap), SBX_ETOOLARGE,
 *         SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_destroy_by_name(sbx_provider *p, const char *name, sbx_signal *sig,
                                           sbx_error *err);

/**
 * Kill every command started through exec that is still running, by process
 * group and session, as the sandbox user (docs/contract.md "Lifecycle").
 * Connects first (a paused sandbox is resumed).
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_EPROTOCOL, SBX_ETOOLARGE, SBX_ESANDBOX (the kill
 *         script failed), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_kill_all(sbx_provider *p, const char *id, sbx_signal *sig,
                                    sbx_error *err);

/**
 * Kill only the commands started with one of `tags` (docs/contract.md
 * "Lifecycle"), as the sandbox user.
 * @param tags   ntags tag strings (sbx_validate_tag), borrowed; validated
 *               before any request. ntags 0 is a no-op: 0, no request (tags
 *               may then be NULL).
 * @return as sbx_sandbox_kill_all().
 */
SBX_EXTERN int sbx_sandbox_kill_tagged(sbx_provider *p, const char *id, const char *const *tags,
                                       size_t ntags, sbx_signal *sig, sbx_error *err);

/**
 * Run `command` with /bin/bash -c as the sandbox user (docs/contract.md
 * "exec"; docs/exec.md, docs/protocol.md "process.Process"): connects first
 * (timeout extended to at least timeout_ms + 120 s, at most 24 h) unless the
 * provider's last connect still covers that (docs/contract.md "Connect
 * before use"; a sandbox found not running is then connected and the command
 * started again, nothing having run), runs under
 * setsid with an in-sandbox `timeout -s KILL` backstop. On timeout or abort
 * it runs the kill script, then SendSignal, waits a 3 s grace, and reboots
 * the sandbox (pause + cold connect) as a last resort; it returns only after
 * that.
 *
 * Streaming (version 2 options): opts->on_output gets the output as it
 * arrives, on this thread; the chunks add up to exactly the result's bytes
 * (same budget, same UTF-8-safe cut; bytes that the cut may drop are held
 * back until the command's next bytes or its end show whether they stay).
 * stdin: opts->stdin_data or opts->stdin_read are sent in chunks while the
 * output keeps flowing, then stdin is closed. A command that stops reading
 * (exits, or closes its stdin) simply gets no more input; that is no error.
 *
 * @param[out] out  on 0: the result, including a timeout (timed_out) and an
 *                  abort after start (aborted, output so far); caller frees
 *                  with sbx_exec_result_free(). On SBX_EPROTOCOL because the
 *                  stream ended without an exit status, `out` holds the
 *                  output collected so far (has_exit_code false) and must be
 *                  freed too; on every other failure it is zeroed (freeing a
 *                  zeroed result is harmless, so callers may always free).
 * @param command   shell text, borrowed.
 * @param opts      NULL for SBX_EXEC_OPTIONS_INIT; borrowed.
 * @return 0, SBX_EINVALID (version, tag, env key, NULL env value,
 *         timeout_ms 0, stdin fields), SBX_EGONE, SBX_EABORTED (before start
 *         only), SBX_ETIMEOUT (connect), SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL (also: stream ended without an exit status),
 *         SBX_ETOOLARGE, SBX_EUSER (a callback returned non-zero; the
 *         command was killed; err->message says which callback and value),
 *         SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_exec(sbx_exec_result *out, sbx_provider *p, const char *id,
                                const char *command, const sbx_exec_options *opts, sbx_signal *sig,
                                sbx_error *err);

/**
 * Read up to `max_bytes` bytes of a file as the sandbox user, so permissions
 * and symlinks resolve as that user (docs/contract.md "Files"). A regular
 * file over 4 MiB (when max_bytes allows more) is moved raw through a
 * root-only staging copy made as the sandbox user (docs/files.md "Moving
 * bytes"); the result is the same. The in-sandbox step is killed on a
 * timeout or an abort and leaves no process (docs/files.md).
 * @param[out] out  the contents, or NULL (return 0) when the path is missing
 *                  or a directory. Caller frees with sbx_file_free().
 * @param path      sandbox path (sbx_validate_path), borrowed.
 * @param max_bytes cap in bytes; a longer file gives the first max_bytes and
 *                  truncated = true.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (120 s per
 *         in-sandbox step, 600 s for a raw transfer),
 *         SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL, SBX_ETOOLARGE, SBX_ESANDBOX
 *         (e.g. permission denied), SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_read_file(sbx_file **out, sbx_provider *p, const char *id,
                                     const char *path, size_t max_bytes, sbx_signal *sig,
                                     sbx_error *err);

/**
 * Write `len` bytes to `path`, replacing the file (docs/contract.md
 * "Files"; docs/protocol.md "Files"): uploaded to a root-only staging
 * file /opt/capybara/upload/<uuid>, then written as the sandbox user (no
 * symlink escape), parent directories created; under /skills written by root
 * with mode 0644. The staging file is removed (an abort may leave it).
 * @param path  sandbox path (sbx_validate_path), borrowed.
 * @param data  len bytes, borrowed for the call; may be NULL when len is 0.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (upload
 *         600 s, write 120 s), SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL,
 *         SBX_ETOOLARGE, SBX_ESANDBOX (the write script failed), SBX_ENOMEM,
 *         SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_write_file(sbx_provider *p, const char *id, const char *path,
                                      const void *data, size_t len, sbx_signal *sig,
                                      sbx_error *err);

/**
 * Stat `path` as the sandbox user (docs/contract.md "Files").
 * @param[out] out  filled on 0; a missing path gives exists = false. Zeroed
 *                  on failure.
 * @param path      sandbox path (sbx_validate_path), borrowed.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (120 s),
 *         SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL, SBX_ETOOLARGE, SBX_ESANDBOX,
 *         SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_stat(sbx_stat *out, sbx_provider *p, const char *id, const char *path,
                                sbx_signal *sig, sbx_error *err);

SBX_END_DECLS

#endif
