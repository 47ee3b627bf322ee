/*
 * sandbox/signal.h: the abort signal (docs/contract.md "Methods").
 *
 * A signal starts un-aborted and can be aborted once, from any thread or from
 * a POSIX signal handler. Every blocking call of the library watches it in the
 * same poll as its network I/O, so an abort wakes a blocked call within
 * milliseconds. A call given an already aborted signal fails with
 * SBX_EABORTED before sending any request.
 */
#ifndef SANDBOX_SIGNAL_H
#define SANDBOX_SIGNAL_H

#include "common.h"

SBX_BEGIN_DECLS

typedef struct sbx_signal sbx_signal;

/**
 * Create an abort signal, un-aborted. It holds one eventfd (O_CLOEXEC).
 * No sbx_error: the code says it all. Thread-safe.
 * @param[out] out  the new signal; caller frees with sbx_signal_free(). NULL
 *                  on failure.
 * @return 0, SBX_EINVALID (out is NULL), SBX_ENOMEM, or SBX_EINTERNAL when no
 *         eventfd can be made (e.g. EMFILE).
 */
SBX_EXTERN int sbx_signal_new(sbx_signal **out);

/**
 * Free a signal and close its eventfd. Accepts NULL. No call, thread or
 * signal handler may still be using it.
 */
SBX_EXTERN void sbx_signal_free(sbx_signal *sig);

/**
 * Abort: every call watching `sig` returns promptly (SBX_EABORTED, or for
 * exec after start its abort result: docs/contract.md "exec"). Idempotent.
 * Thread-safety: safe from any thread and async-signal-safe (an atomic store
 * and a write(2) to an eventfd), so a SIGINT handler may call it.
 */
SBX_EXTERN void sbx_signal_abort(sbx_signal *sig);

/** True once sbx_signal_abort() was called. Thread-safe, async-signal-safe. NULL gives false. */
SBX_EXTERN bool sbx_signal_aborted(const sbx_signal *sig);

/**
 * A file descriptor that becomes readable (and stays readable) once the
 * signal is aborted, for a host's own poll loop. Borrowed: valid until
 * sbx_signal_free(); never read from it or close it. NULL gives -1.
 * Thread-safe.
 */
SBX_EXTERN int sbx_signal_fd(const sbx_signal *sig);

SBX_END_DECLS

#endif
