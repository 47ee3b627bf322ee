/*
 * sandbox/info.h: which sandboxes exist: list this deployment's sandboxes
 * and describe one (docs/sandboxes.md).
 *
 * Not part of the sandbox@1 contract: an addition on top of it, as E2B's own
 * SDKs offer (Sandbox.list, Sandbox.getInfo). Every call is one or more
 * control-plane requests (60 s each); nothing runs in a sandbox and no
 * sandbox is resumed or extended.
 *
 * Thread-safety: every function may be called from many threads at once on
 * one provider; the results are the caller's and are not shared.
 * Common parameters (p, id, sig, err) are as in sandbox/sandbox.h.
 */
#ifndef SANDBOX_INFO_H
#define SANDBOX_INFO_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** State of a sandbox as E2B reports it. */
typedef enum sbx_sandbox_state {
	SBX_STATE_ANY = 0,     /**< list filter only: running and paused */
	SBX_STATE_RUNNING = 1, /**< running (E2B "running") */
	SBX_STATE_PAUSED = 2   /**< paused, files and memory kept (E2B "paused"; "pausing" too) */
} sbx_sandbox_state;

/**
 * One sandbox. Made by the library; strings are NUL-terminated and owned by
 * the struct (freed with sbx_sandbox_info_free() or with the list holding it).
 */
typedef struct sbx_sandbox_info {
	char *id;          /**< the sandbox id; never NULL */
	char *name;        /**< our metadata name (the name given to create); NULL when absent */
	char *template_id; /**< E2B templateID; "" when E2B sent none */
	sbx_sandbox_state state; /**< SBX_STATE_RUNNING or SBX_STATE_PAUSED */
	/** Start time, milliseconds since the Unix epoch (UTC); 0 when unknown. */
	int64_t started_at_ms;
	/**
	 * When a running sandbox times out (it is then paused: sandboxes are
	 * created with autoPause), or when a paused one was paused; ms since the
	 * Unix epoch (UTC), 0 when unknown.
	 */
	int64_t end_at_ms;
} sbx_sandbox_info;

/** A list of sandboxes from sbx_sandbox_list(); free with sbx_info_list_free(). */
typedef struct sbx_info_list {
	sbx_sandbox_info
	    *items; /**< count entries, newest first (E2B's order); NULL when count 0 */
	size_t count;
} sbx_info_list;

#define SBX_LIST_OPTIONS_VERSION 2

/**
 * Filters of sbx_sandbox_list(). Initialise with SBX_LIST_OPTIONS_INIT.
 * Version 1 ends at `state`; 2 adds `all`.
 */
typedef struct sbx_list_options {
	unsigned int version; /**< SBX_LIST_OPTIONS_VERSION (1 or 2) */
	/**
	 * Only sandboxes with this metadata name (^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$,
	 * as create's name), filtered by E2B; NULL: every sandbox with a name.
	 * Borrowed for the call.
	 */
	const char *name;
	sbx_sandbox_state state; /**< SBX_STATE_ANY (default), _RUNNING or _PAUSED */
	/* ---- version 2 ---- */
	/**
	 * Also the sandboxes without a name (made by other clients of the same E2B
	 * team: the SDK, the e2b CLI, by hand); their `name` is NULL. Ignored with
	 * `name`. Default false: only this deployment's sandboxes.
	 */
	bool all;
} sbx_list_options;

/* clang-format off */
#define SBX_LIST_OPTIONS_INIT {SBX_LIST_OPTIONS_VERSION, NULL, SBX_STATE_ANY, false}
/* clang-format on */

/**
 * List this deployment's sandboxes: those that carry our metadata name (made
 * by sbx_sandbox_create() with any name; sandboxes made otherwise on the
 * same E2B team are left out), running and/or paused, following E2B's pages
 * (100 per page, X-Next-Token) to the end (docs/sandboxes.md).
 * @param[out] out  the list (possibly empty); caller frees with
 *                  sbx_info_list_free(). NULL on failure.
 * @param opts      NULL for SBX_LIST_OPTIONS_INIT; borrowed.
 * @return 0, SBX_EINVALID (version, name pattern, state), SBX_EABORTED,
 *         SBX_ETIMEOUT (60 s per page), SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL (not an array, an item without a valid sandboxID or
 *         state, more than 1000 pages), SBX_ETOOLARGE, SBX_ENOMEM,
 *         SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_list(sbx_info_list **out, sbx_provider *p, const sbx_list_options *opts,
                                sbx_signal *sig, sbx_error *err);

/** Free a list and every item in it. Accepts NULL. */
SBX_EXTERN void sbx_info_list_free(sbx_info_list *list);

/**
 * Describe one sandbox: GET /sandboxes/{id} (docs/sandboxes.md). Works for
 * any sandbox of the E2B team, ours or not (name is then NULL); a paused
 * sandbox stays paused.
 * @param[out] out  caller frees with sbx_sandbox_info_free(). NULL on failure.
 * @return 0, SBX_EINVALID, SBX_EGONE (E2B-format 404: no such sandbox),
 *         SBX_EABORTED, SBX_ETIMEOUT (60 s), SBX_EHTTP, SBX_ENETWORK,
 *         SBX_EPROTOCOL (no or another sandboxID, unknown state),
 *         SBX_ETOOLARGE, SBX_ENOMEM, SBX_EINTERNAL.
 */
SBX_EXTERN int sbx_sandbox_get_info(sbx_sandbox_info **out, sbx_provider *p, const char *id,
                                    sbx_signal *sig, sbx_error *err);

/** Free one sandbox description from sbx_sandbox_get_info(). Accepts NULL. */
SBX_EXTERN void sbx_sandbox_info_free(sbx_sandbox_info *info);

SBX_END_DECLS

#endif
