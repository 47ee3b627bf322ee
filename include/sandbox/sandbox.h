/*
 * sandbox/sandbox.h: the sandbox@1 contract as a C API (design brief §2).
 *
 * A provider (sbx_provider) implements the contract; the E2B provider is made
 * with sbx_e2b_provider_new() (sandbox/e2b.h). A sandbox is named by its id
 * (the seed's handle `{ id }`), a NUL-terminated string the caller owns.
 *
 * Thread-safety: every function here may be called from many threads at once
 * on one provider (the contract's concurrentExec = true).
 *
 * Common parameters:
 *   sig  abort signal or NULL. Already aborted: SBX_EABORTED, no request sent.
 *        Aborted during the call: it returns within milliseconds.
 *   err  NULL, or filled on failure (first cause, secret-free).
 * Common errors: SBX_EINVALID (checked before any request), SBX_EGONE,
 * SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL,
 * SBX_ETOOLARGE, SBX_ESANDBOX, SBX_ENOMEM.
 */
#ifndef SANDBOX_SANDBOX_H
#define SANDBOX_SANDBOX_H

#include "common.h"
#include "error.h"
#include "signal.h"

SBX_BEGIN_DECLS

typedef struct sbx_provider sbx_provider;

/** Egress policy of a sandbox (seed README "Egress"). */
typedef enum sbx_egress {
	SBX_EGRESS_NONE = 0,      /**< no outbound network */
	SBX_EGRESS_ALLOWLIST = 1, /**< only allow_hosts (empty list = none) */
	SBX_EGRESS_OPEN = 2       /**< everything; refused unless allowOpenEgress */
} sbx_egress;

/**
 * Sandbox limits (seed README "Resources", "Egress"). cpu, memory_mb and
 * disk_mb must be > 0 (finite); E2B fixes them in the template, so they are
 * validated, not applied. allow_hosts (borrowed for the call) are checked with
 * sbx_validate_allow_host() when egress is SBX_EGRESS_ALLOWLIST.
 */
typedef struct sbx_limits {
	double cpu;       /**< cores */
	double memory_mb; /**< MiB */
	double disk_mb;   /**< MiB */
	sbx_egress egress;
	const char *const *allow_hosts;
	size_t allow_hosts_count;
} sbx_limits;

/** One environment variable for exec; the key must match ^[A-Za-z_][A-Za-z0-9_]*$. */
typedef struct sbx_env_var {
	const char *key;
	const char *value;
} sbx_env_var;

#define SBX_EXEC_OPTIONS_VERSION 1

/** Options of sbx_sandbox_exec(). Initialise with SBX_EXEC_OPTIONS_INIT. All pointers borrowed for the call. */
typedef struct sbx_exec_options {
	unsigned int version;      /**< SBX_EXEC_OPTIONS_VERSION */
	const char *cwd;           /**< working directory; NULL = /workspace */
	const sbx_env_var *env;    /**< extra environment, applied after HOME and LANG */
	size_t env_count;
	uint64_t timeout_ms;       /**< command timeout in ms, > 0 */
	size_t max_output_bytes;   /**< shared budget of stdout + stderr, bytes */
	const char *tag;           /**< holder tag for kill_tagged (^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$), or NULL */
} sbx_exec_options;

#define SBX_EXEC_OPTIONS_INIT {SBX_EXEC_OPTIONS_VERSION, NULL, NULL, 0, 60000, 1024 * 1024, NULL}

/**
 * Result of sbx_sandbox_exec(). The byte buffers are owned by the result and
 * each carries a trailing NUL for convenience only (output may contain NUL
 * bytes: use the lengths). Free with sbx_exec_result_free().
 */
typedef struct sbx_exec_result {
	bool has_exit_code;    /**< false: timed out, aborted, or killed by an unknown signal */
	int exit_code;         /**< exit status, or 128 + n for signal n; valid when has_exit_code */
	unsigned char *stdout_data;
	size_t stdout_len;
	unsigned char *stderr_data;
	size_t stderr_len;
	bool truncated;        /**< stdout + stderr exceeded max_output_bytes (cut at a UTF-8 boundary) */
	bool timed_out;        /**< the command hit timeout_ms and was killed */
	bool aborted;          /**< the abort signal fired after the command started */
} sbx_exec_result;

/** Free the buffers of a result and zero it. Accepts NULL. */
SBX_EXTERN void sbx_exec_result_free(sbx_exec_result *res);

/** File contents from sbx_sandbox_read_file(). data has a trailing NUL for convenience. */
typedef struct sbx_file {
	unsigned char *data;
	size_t len;      /**< bytes */
	bool truncated;  /**< the file is longer than max_bytes */
} sbx_file;

/** Free a file result. Accepts NULL. */
SBX_EXTERN void sbx_file_free(sbx_file *file);

/** Result of sbx_sandbox_stat(). */
typedef struct sbx_stat {
	bool exists;    /**< false: no such path (size and is_dir are 0) */
	uint64_t size;  /**< bytes */
	bool is_dir;
} sbx_stat;

/** Outcome of sbx_sandbox_resume(). */
typedef enum sbx_resume_status {
	SBX_RESUMED = 0,
	SBX_RESUME_GONE = 1
} sbx_resume_status;

/** Free a provider. Accepts NULL. No call may be running on it. */
SBX_EXTERN void sbx_provider_free(sbx_provider *p);

/** The contract's concurrentExec: true for the E2B provider. */
SBX_EXTERN bool sbx_provider_concurrent_exec(const sbx_provider *p);

/**
 * Create a sandbox named `name`, replacing any sandbox with the same name
 * (seed README "Lifecycle", create).
 * @param[out] id_out  the new sandbox id; caller frees with sbx_free().
 * @param name   ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$
 * @param limits validated before any request; "open" egress needs allowOpenEgress.
 */
SBX_EXTERN int sbx_sandbox_create(char **id_out, sbx_provider *p, const char *name,
                                  const sbx_limits *limits, sbx_signal *sig, sbx_error *err);

/**
 * Resume (connect) a sandbox; a paused one is resumed, a running one gets its
 * timeout extended. @param[out] out SBX_RESUMED, or SBX_RESUME_GONE when it no
 * longer exists (then the return value is 0).
 */
SBX_EXTERN int sbx_sandbox_resume(sbx_resume_status *out, sbx_provider *p, const char *id,
                                  sbx_signal *sig, sbx_error *err);

/** Pause a sandbox (files and memory kept). A missing or already paused sandbox is success. */
SBX_EXTERN int sbx_sandbox_suspend(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err);

/** Delete a sandbox. A missing sandbox is success. */
SBX_EXTERN int sbx_sandbox_destroy(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err);

/** Delete every sandbox (running or paused) named `name`. None is success. */
SBX_EXTERN int sbx_sandbox_destroy_by_name(sbx_provider *p, const char *name, sbx_signal *sig,
                                           sbx_error *err);

/** Kill every command started through exec that is still running (seed killAll). */
SBX_EXTERN int sbx_sandbox_kill_all(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err);

/**
 * Kill only the commands started with one of `tags` (seed killTagged). Tags
 * are validated first; an empty list sends no request.
 */
SBX_EXTERN int sbx_sandbox_kill_tagged(sbx_provider *p, const char *id, const char *const *tags,
                                       size_t ntags, sbx_signal *sig, sbx_error *err);

/**
 * Run `command` with /bin/bash as the sandbox user (seed README "exec and files").
 * On success (0) `out` holds the result, including timeouts and aborts after
 * start (has_exit_code false, output so far). Caller frees with
 * sbx_exec_result_free(). On failure `out` is zeroed.
 */
SBX_EXTERN int sbx_sandbox_exec(sbx_exec_result *out, sbx_provider *p, const char *id,
                                const char *command, const sbx_exec_options *opts,
                                sbx_signal *sig, sbx_error *err);

/**
 * Read up to `max_bytes` bytes of a file as the sandbox user.
 * @param[out] out  the contents, or NULL (return 0) when the path is missing or a
 *                  directory. Caller frees with sbx_file_free().
 */
SBX_EXTERN int sbx_sandbox_read_file(sbx_file **out, sbx_provider *p, const char *id,
                                     const char *path, size_t max_bytes, sbx_signal *sig,
                                     sbx_error *err);

/**
 * Write `len` bytes to `path`: staged as root, then written as the sandbox
 * user (no symlink escape); under /skills written by root with mode 0644.
 * Parent directories are created. `data` is borrowed for the call.
 */
SBX_EXTERN int sbx_sandbox_write_file(sbx_provider *p, const char *id, const char *path,
                                      const void *data, size_t len, sbx_signal *sig,
                                      sbx_error *err);

/** Stat `path` as the sandbox user. A missing path gives out->exists = false and 0. */
SBX_EXTERN int sbx_sandbox_stat(sbx_stat *out, sbx_provider *p, const char *id, const char *path,
                                sbx_signal *sig, sbx_error *err);

SBX_END_DECLS

#endif
