/*
 * sandbox/pty.h: interactive terminals in a sandbox (E2B's sbx.pty: create,
 * sendInput, resize, kill, and commands.connect by pid; docs/pty.md).
 *
 * A PTY command runs on a pseudo-terminal that envd makes for it: the
 * command leads a session of its own with that terminal as its controlling
 * tty, so `tty` names a /dev/pts device, job control works, and the bytes
 * typed (Ctrl-C is byte 0x03, Ctrl-D 0x04) go through the terminal's line
 * discipline as on any terminal. Its output is one stream (the terminal),
 * handed to a callback as it arrives; nothing is kept, so memory stays
 * bounded by one envd frame whatever the command prints.
 *
 * Each handle has one reader thread of its own that reads the terminal's
 * output and the command's end. Freeing a handle without killing does not
 * kill the command (as E2B's disconnect): a later sbx_pty_attach() by pid
 * follows it again; its timeout_ms bounds it, when it has one.
 *
 * Common parameters: as in sandbox/sandbox.h (p, id, sig, err).
 */
#ifndef SANDBOX_PTY_H
#define SANDBOX_PTY_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** A PTY command; made by sbx_pty_start() or sbx_pty_attach(). */
typedef struct sbx_pty sbx_pty;

/**
 * Terminal output callback: `len` bytes the terminal printed (any split: a
 * chunk may end inside a UTF-8 character or an escape sequence). `data` is
 * borrowed for the call. Called on the handle's reader thread only (output
 * that came with the start event is held until the reader runs), never
 * concurrently with itself. It may block (the command then waits when the
 * terminal's buffer is full). Return 0 to go on; any other value kills the
 * command and sbx_pty_wait() then returns SBX_EUSER.
 */
typedef int (*sbx_pty_output_fn)(const unsigned char *data, size_t len, void *payload);

#define SBX_PTY_OPTIONS_VERSION 1

/**
 * Options of sbx_pty_start() and sbx_pty_attach(). Initialise with
 * SBX_PTY_OPTIONS_INIT (80 x 24, 60 s as E2B's pty.create, the sandbox
 * user). Pointers are borrowed for the start call, except output_payload,
 * used until the handle is freed.
 */
typedef struct sbx_pty_options {
	unsigned int version; /**< SBX_PTY_OPTIONS_VERSION; another: SBX_EINVALID */
	uint16_t cols;        /**< start: terminal columns, > 0 */
	uint16_t rows;        /**< start: terminal rows, > 0 */
	const char *cwd;      /**< start: working directory; NULL = /workspace */
	/**
	 * start: extra environment (keys as sbx_validate_env_key), applied after
	 * HOME (/workspace, /root for root), LANG=C.UTF-8 and TERM=xterm-256color,
	 * so a TERM here wins.
	 */
	const sbx_env_var *env;
	size_t env_count;
	/**
	 * start: envd kills the command this long after it started (E2B's
	 * timeoutMs, sent as Connect-Timeout-Ms; sbx_pty_wait() then says
	 * timed_out); 0 = no limit of its own (the sandbox's lifetime bounds it).
	 */
	uint64_t timeout_ms;
	sbx_user user;               /**< start: SBX_USER_SANDBOX (default) or SBX_USER_ROOT */
	sbx_pty_output_fn on_output; /**< the terminal's output, or NULL (dropped) */
	void *output_payload;        /**< passed back to on_output as is */
} sbx_pty_options;

/* clang-format off */
#define SBX_PTY_OPTIONS_INIT {SBX_PTY_OPTIONS_VERSION, 80, 24, NULL, NULL, 0, 60000, \
                              SBX_USER_SANDBOX, NULL, NULL}
/* clang-format on */

/** How a PTY command ended (sbx_pty_wait()); a plain value. */
typedef struct sbx_pty_result {
	/** false: killed by timeout_ms, by a signal Go does not name, or no exit status came. */
	bool has_exit_code;
	int exit_code;  /**< exit status, or 128 + n for signal n (137 after sbx_pty_kill()) */
	bool timed_out; /**< timeout_ms passed and envd killed it */
	bool killed;    /**< sbx_pty_kill() (or the output callback) ended it */
} sbx_pty_result;

/**
 * Start `command` on a new terminal of opts->cols x opts->rows: /bin/bash -i -l
 * when `command` is NULL (E2B's pty.create), else /bin/bash -l -c COMMAND; as
 * opts->user, in opts->cwd. Connects first (a paused sandbox is resumed; its
 * timeout pushed to cover timeout_ms + 120 s), and returns once envd reported
 * the pid.
 * @param[out] out  the handle; caller frees with sbx_pty_free(). NULL on failure.
 * @param command   shell text or NULL, borrowed.
 * @param opts      NULL for SBX_PTY_OPTIONS_INIT.
 * @param sig       aborts the start only: the command, if it started, is killed
 *                  and SBX_EABORTED returned.
 * @return 0, SBX_EINVALID (version, size 0, env key, NULL env value, id),
 *         SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT (connect, or no pid within
 *         60 s), SBX_EHTTP (envd refused: e.g. e2b_code "invalid_argument" for a
 *         cwd that does not exist), SBX_ENETWORK, SBX_EPROTOCOL (the stream
 *         ended before a pid), SBX_ETOOLARGE, SBX_ESANDBOX (the template lacks
 *         the user sandbox), SBX_ENOMEM, SBX_EINTERNAL (no thread).
 */
SBX_EXTERN int sbx_pty_start(sbx_pty **out, sbx_provider *p, const char *id, const char *command,
                             const sbx_pty_options *opts, sbx_signal *sig, sbx_error *err);

/**
 * Follow a running command by pid (envd Connect), e.g. a terminal another
 * handle, provider or process started and freed: its output from now on
 * (envd keeps none) and its end. Input, resize and kill work on it as on a
 * started one.
 * @param pid   > 0 (0: SBX_EINVALID).
 * @param opts  NULL for defaults; only version, on_output and output_payload are used.
 * @return as sbx_pty_start(); a pid envd does not know: SBX_EHTTP with
 *         err->e2b_code "not_found".
 */
SBX_EXTERN int sbx_pty_attach(sbx_pty **out, sbx_provider *p, const char *id, uint32_t pid,
                              const sbx_pty_options *opts, sbx_signal *sig, sbx_error *err);

/** The command's pid in the sandbox (for sbx_pty_attach()). NULL gives 0. */
SBX_EXTERN uint32_t sbx_pty_pid(const sbx_pty *h);

/**
 * Type `len` bytes into the terminal (envd SendInput, in requests of at
 * most 192 KiB): the line discipline sees them as keystrokes (0x03 is
 * Ctrl-C, 0x04 Ctrl-D at a line's start). Thread-safe against the other
 * calls on the handle.
 * @param data  len bytes, borrowed; may be NULL when len is 0 (no request).
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT (60 s per request),
 *         SBX_EHTTP (e2b_code "not_found": the command ended), SBX_ENETWORK,
 *         SBX_ENOMEM.
 */
SBX_EXTERN int sbx_pty_send_input(sbx_pty *h, const void *data, size_t len, sbx_signal *sig,
                                  sbx_error *err);

/**
 * Resize the terminal (envd Update): the command gets SIGWINCH and `stty
 * size` says "rows cols". Thread-safe.
 * @param cols, rows  > 0 (0: SBX_EINVALID before any request).
 * @return as sbx_pty_send_input().
 */
SBX_EXTERN int sbx_pty_resize(sbx_pty *h, uint16_t cols, uint16_t rows, sbx_signal *sig,
                              sbx_error *err);

/**
 * Kill the command (envd SendSignal SIGKILL on its pid, as E2B's pty.kill;
 * the terminal's hangup then reaches its session's foreground job), then
 * wait for the handle's reader to see the end (at most 3 s, then it
 * disconnects). Thread-safe; killing a command whose end was seen is a no-op (0);
 * after a stream that broke first, the signal is still sent.
 * @param sig  stops waiting (SBX_EABORTED); the signal was sent.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK.
 */
SBX_EXTERN int sbx_pty_kill(sbx_pty *h, sbx_signal *sig, sbx_error *err);

/**
 * Wait for the command to end. Thread-safe; waiting again gives the same.
 * @param[out] out  filled on 0 (and on SBX_EUSER, with killed); zeroed else.
 * @param sig       stops this wait only (SBX_EABORTED); the command goes on.
 * @return 0, SBX_EINVALID, SBX_EABORTED, SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL
 *         (the stream ended without the command's end), SBX_ETOOLARGE,
 *         SBX_EUSER (on_output stopped it), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_pty_wait(sbx_pty_result *out, sbx_pty *h, sbx_signal *sig, sbx_error *err);

/**
 * Free a handle: disconnects and joins the reader thread; does not kill the
 * command (see the file comment). Accepts NULL. No other call may be running
 * on the handle; the provider must still exist.
 */
SBX_EXTERN void sbx_pty_free(sbx_pty *h);

SBX_END_DECLS

#endif
