/*
 * sandbox/error.h: the one error type of the library.
 *
 * Every fallible function returns 0 or a negative sbx_error_code and, when
 * given a non-NULL `sbx_error *err`, fills it where the failure was detected.
 * The first failure stays: outer layers never overwrite it. Messages never
 * contain the API key, an envd access token or an Authorization header. A
 * server's own error message is kept (at most 300 bytes, cut at a UTF-8
 * boundary, control bytes blanked); other server data
 * is quoted at most 64 bytes with non-printable bytes escaped.
 */
#ifndef SANDBOX_ERROR_H
#define SANDBOX_ERROR_H

#include "common.h"

SBX_BEGIN_DECLS

/**
 * Stable error codes to branch on. Never renumbered; a retired code keeps a
 * placeholder.
 */
typedef enum sbx_error_code {
	SBX_OK = 0,
	SBX_EINVALID = -1,  /**< bad argument or config; detected before any request */
	SBX_EGONE = -2,     /**< the sandbox no longer exists (E2B-format 404, or no envd token) */
	SBX_EABORTED = -3,  /**< the abort signal fired */
	SBX_ETIMEOUT = -4,  /**< a call's own deadline passed (e.g. 60 s per control-plane call) */
	SBX_ETOOLARGE = -5, /**< the peer sent more than a named cap allows */
	SBX_ENOMEM = -6,    /**< allocation failed; objects are unchanged, nothing leaked */
	SBX_EPROTOCOL = -7, /**< malformed server reply (bad JSON, bad frame, missing end-stream) */
	SBX_EHTTP = -8,     /**< the server answered with an HTTP error status (see http_status) */
	SBX_ENETWORK = -9,  /**< could not reach the server (DNS, connect, TLS, reset) */
	/** A caller's callback returned non-zero (exec's output or stdin callback). */
	SBX_EUSER = -10,
	SBX_ESANDBOX =
	    -11, /**< an in-sandbox step failed (e.g. the write script exited non-zero) */
	/** A local system call or libcurl failed unexpectedly, or a provider lacks a method. */
	SBX_EINTERNAL = -12
} sbx_error_code;

#define SBX_ERROR_MESSAGE_MAX 512

/**
 * A caller-allocated error. Zero-initialise it (`sbx_error e = {0};`) or pass
 * NULL where you do not need details. A call fills it only on failure, and
 * only when code is still 0 (the first failure stays): clear it with
 * sbx_error_clear() before reusing it. One sbx_error per thread/call: it is
 * plain memory, not synchronised.
 */
typedef struct sbx_error {
	int code;        /**< an sbx_error_code; 0 while no error was recorded */
	int http_status; /**< HTTP status when the failure was an HTTP answer, else 0 */
	/**
	 * E2B/Connect error code from the body ("404", "not_found"), or ""; at most 31 bytes.
	 * An SBX_ESANDBOX refusal of a check the library runs where envd would check carries the
	 * Connect code envd gives for that path, so a caller branches on it, never on the message:
	 * "not_found", "invalid_argument" (not a directory), "permission_denied" (the watch
	 * check: docs/watch.md "Errors"; list_dir of a file: docs/files.md), and
	 * "failed_precondition" for a template without the sandbox user's conventions
	 * (templates/capybara-sandbox/README.md). sbx_e2b_config_parse's SBX_EINVALID carries the
	 * library's own reason, an SBX_E2B_CONFIG_* name (sandbox/e2b.h); an SBX_ENETWORK that
	 * could not reach envd carries "unavailable" (SBX_E2B_ENVD_UNAVAILABLE), one that could
	 * not reach the API server "".
	 */
	char e2b_code[32];
	char message[SBX_ERROR_MESSAGE_MAX]; /**< human-readable, NUL-terminated, secret-free */
} sbx_error;

/**
 * Name of a code, e.g. "SBX_EGONE" (0 gives "SBX_OK"). Static string, never
 * freed; unknown codes give "SBX_E?". Thread-safe.
 */
SBX_EXTERN const char *sbx_error_code_name(int code);

/** Reset an error to the "no error" state (all zero). Accepts NULL. */
SBX_EXTERN void sbx_error_clear(sbx_error *err);

SBX_END_DECLS

#endif
