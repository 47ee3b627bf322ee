/*
 * sandbox/process.h: background commands — start a command and get a
 * handle; wait for it, feed its stdin, kill it from any thread; attach to a
 * running command by pid from another provider or process; list a sandbox's
 * running commands (docs/exec.md "Background commands"; envd process.Process
 * Start, Connect, SendInput, CloseStdin, List and SendSignal, described in
 * docs/protocol.md).
 *
 * A background command runs exactly as sbx_sandbox_exec() runs one (the
 * setsid wrapper, the in-sandbox `timeout -s KILL` backstop, one output
 * budget, the kill tree), but the call returns once the command has started.
 * Each handle has one reader thread of its own that reads the command's
 * output into the result (and calls on_output, if given) and enforces the
 * command's timeout_ms. Freeing a handle without waiting does not kill the
 * command: it runs on, bounded by its in-sandbox backstop (timeout_ms + 5 s).
 *
 * Common parameters: as in sandbox/sandbox.h (p, id, sig, err).
 */
#ifndef SANDBOX_PROCESS_H
#define SANDBOX_PROCESS_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** A background command; made by sbx_process_start() or sbx_process_attach(). */
typedef struct sbx_process sbx_process;

#define SBX_PROCESS_OPTIONS_VERSION 2

/**
 * Options of sbx_process_start() and sbx_process_attach(). Initialise with
 * SBX_PROCESS_OPTIONS_INIT (timeout 60000 ms, budget 1 MiB, stdin closed).
 * Pointers are borrowed for the start call, except output_payload, which is
 * used until the handle is freed. Version 1 ends at output_payload; 2 adds
 * `user`.
 */
typedef struct sbx_process_options {
	unsigned int version;   /**< SBX_PROCESS_OPTIONS_VERSION (1 or 2); another: SBX_EINVALID */
	const char *cwd;        /**< start only: working directory; NULL = /workspace */
	const sbx_env_var *env; /**< start only: extra environment, after HOME and LANG */
	size_t env_count;       /**< entries in env */
	/**
	 * start only: the command's timeout in ms, > 0 (0: SBX_EINVALID). When it
	 * passes the reader thread kills the tree as exec does (timed_out); the
	 * in-sandbox backstop kills it timeout_ms + 5 s after start whatever the client does.
	 */
	uint64_t timeout_ms;
	size_t max_output_bytes; /**< shared stdout + stderr budget of the result, bytes */
	const char *tag; /**< start only: holder tag for sbx_sandbox_kill_tagged(), or NULL */
	/** start only: give the command a stdin pipe for sbx_process_send_stdin(); false: /dev/null
	 */
	bool stdin_open;
	/**
	 * Called with output as it arrives (sbx_output_fn; the chunks equal the
	 * result's bytes), on the handle's reader thread, never concurrently with
	 * itself; or NULL. A non-zero return kills the command as exec does, and
	 * sbx_process_wait() then returns SBX_EUSER.
	 */
	sbx_output_fn on_output;
	void *output_payload; /**< passed back to on_output as is */
	/* ---- version 2 ---- */
	/**
	 * start only: SBX_USER_SANDBOX (default) or SBX_USER_ROOT, as exec's.
	 * sbx_process_kill() of a handle kills as that user; sbx_process_kill_pid()
	 * and attach act as the sandbox user and cannot stop a root command.
	 */
	sbx_user user;
} sbx_process_options;

/* clang-format off */
#define SBX_PROCESS_OPTIONS_INIT {SBX_PROCESS_OPTIONS_VERSION, NULL, NULL, 0, 60000, 1024 * 1024, \
                                  NULL, false, NULL, NULL, SBX_USER_SANDBOX}
/* clang-format on */

/**
 * Start `command` (/bin/bash -c, as the sandbox user, as sbx_sandbox_exec())
 * and return once envd reported its pid. Connects first, pushing the
 * sandbox's timeout to at least timeout_ms + 120 s.
 * @param[out] out  the handle; caller frees with sbx_process_free(). NULL on
 *                  failure.
 * @param command   shell text, borrowed.
 * @param opts      NULL for SBX_PROCESS_OPTIONS_INIT.
 * @param sig       aborts the start only: an abort before the pid arrived
 *                  kills the command and returns SBX_EABORTED; after start the
 *                  handle no longer watches it.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (connect),
 *         SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL (the stream ended before a
 *         pid), SBX_ETOOLARGE, SBX_ENOMEM, SBX_EINTERNAL (no thread).
 */
SBX_EXTERN int sbx_process_start(sbx_process **out, sbx_provider *p, const char *id,
                                 const char *command, const sbx_process_options *opts,
                                 sbx_signal *sig, sbx_error *err);

/**
 * Attach to a running command by pid (envd Connect), e.g. one started by
 * another provider or process: the handle's result gets the output from now
 * on (envd does not keep past output) and its end. When the pid is a
 * command this library started, sbx_process_kill() kills its whole tree
 * (found through envd List); otherwise it sends SIGKILL to the pid only.
 * No timeout of its own: the command's own backstop bounds it.
 * @param pid   > 0 (0: SBX_EINVALID).
 * @param opts  NULL for defaults; only max_output_bytes, on_output and
 *              output_payload are used.
 * @return as sbx_process_start(); a pid envd does not know gives SBX_EHTTP
 *         with err->e2b_code "not_found" (a command that ended less than
 *         30 s ago can still be attached: the result is its end).
 */
SBX_EXTERN int sbx_process_attach(sbx_process **out, sbx_provider *p, const char *id, uint32_t pid,
                                  const sbx_process_options *opts, sbx_signal *sig, sbx_error *err);

/** The command's pid in the sandbox (envd's, for sbx_process_attach()). NULL gives 0. */
SBX_EXTERN uint32_t sbx_process_pid(const sbx_process *h);

/**
 * Wait for the command to end and copy its result: the same shape, budget
 * and truncation as sbx_sandbox_exec() (timed_out when its timeout_ms
 * passed, aborted after sbx_process_kill()). Thread-safe: several threads may
 * wait at once, each gets its own copy; waiting again returns the same result.
 * @param[out] out  caller frees with sbx_exec_result_free(); zeroed on
 *                  failure, except SBX_EPROTOCOL (stream ended without an
 *                  exit status), where it holds the output so far.
 * @param sig       stops this wait only (SBX_EABORTED); the command goes on.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL, SBX_ETOOLARGE, SBX_EUSER (on_output stopped it),
 *         SBX_ENOMEM.
 */
SBX_EXTERN int sbx_process_wait(sbx_exec_result *out, sbx_process *h, sbx_signal *sig,
                                sbx_error *err);

/**
 * Send `len` bytes to the command's stdin (envd SendInput, in chunks of at
 * most 192 KiB). Blocks while the command does not read (a full pipe).
 * Thread-safe against the other calls on the handle; concurrent sends may
 * interleave their chunks.
 * @param data  len bytes, borrowed; may be NULL when len is 0 (no request).
 * @return 0, SBX_EINVALID (started without stdin_open), SBX_EABORTED,
 *         SBX_ETIMEOUT (60 s per request), SBX_EHTTP (e.g. e2b_code
 *         "not_found": the command ended; "internal": its stdin is closed),
 *         SBX_ENETWORK, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_process_send_stdin(sbx_process *h, const void *data, size_t len, sbx_signal *sig,
                                      sbx_error *err);

/**
 * Close the command's stdin (envd CloseStdin): it reads EOF. Thread-safe.
 * @return as sbx_process_send_stdin().
 */
SBX_EXTERN int sbx_process_close_stdin(sbx_process *h, sbx_signal *sig, sbx_error *err);

/**
 * Kill the command and its whole tree as exec's timeout path does (kill
 * script, 3 s grace, SendSignal, and the sandbox reboot when the kill could
 * not finish), then wait for the handle's reader to finish. Thread-safe;
 * killing a command that already ended is a no-op (0).
 * @param sig  stops waiting (SBX_EABORTED); the kill still completes on the
 *             reader thread.
 * @return 0, SBX_EABORTED, SBX_EINVALID.
 */
SBX_EXTERN int sbx_process_kill(sbx_process *h, sbx_signal *sig, sbx_error *err);

/**
 * Free a handle. Does not kill the command (see the file comment): it
 * disconnects and joins the reader thread. Accepts NULL. No other call may
 * be running on the handle; the provider must still exist.
 */
SBX_EXTERN void sbx_process_free(sbx_process *h);

/**
 * Kill a command by pid without a handle: its whole tree when this library
 * started it (found through envd List), else SendSignal SIGKILL on the pid.
 * A pid that is not running is success.
 * @return 0, SBX_EINVALID (pid 0), SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT,
 *         SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL, SBX_ESANDBOX (the kill
 *         script failed), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_process_kill_pid(sbx_provider *p, const char *id, uint32_t pid, sbx_signal *sig,
                                    sbx_error *err);

/** One running command of a sandbox (envd List). Strings are NUL-terminated, owned by the list. */
typedef struct sbx_process_info {
	uint32_t pid;
	char *cmd;   /**< the program envd started, e.g. "/bin/sh" */
	char **args; /**< its arguments (nargs of them) */
	size_t nargs;
	char *cwd; /**< working directory, or NULL when envd gave none */
	char *tag; /**< envd's tag, or NULL */
	/**
	 * For a command this library started (exec or background): the shell
	 * text it runs (one of args), else NULL. Borrowed from args.
	 */
	const char *command;
} sbx_process_info;

/** The running commands of a sandbox; freed with sbx_process_info_list_free(). */
typedef struct sbx_process_info_list {
	sbx_process_info *items;
	size_t count;
} sbx_process_info_list;

/**
 * List the commands running in a sandbox (envd List: every process envd
 * started and that has not ended, including those of other clients).
 * Connects first (a paused sandbox is resumed).
 * @param[out] out  caller frees with sbx_process_info_list_free(); NULL on failure.
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_EPROTOCOL (a reply of another shape), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_process_list(sbx_process_info_list **out, sbx_provider *p, const char *id,
                                sbx_signal *sig, sbx_error *err);

/** Free a list and its strings. Accepts NULL. */
SBX_EXTERN void sbx_process_info_list_free(sbx_process_info_list *list);

SBX_END_DECLS

#endif
