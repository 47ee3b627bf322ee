/*
 * sandbox/lifetime.h: a sandbox's lifetime and create-time settings beyond
 * the sandbox@1 contract: create with a timeout of its own, environment
 * variables and metadata (E2B's Sandbox.create({timeoutMs, envs,
 * metadata})), and set_timeout (E2B's sbx.setTimeout, which may shorten);
 * docs/sandboxes.md "Lifetime".
 *
 * Thread-safety: as every provider call, from many threads at once.
 * Common parameters (p, id, name, limits, sig, err) are as in sandbox/sandbox.h.
 */
#ifndef SANDBOX_LIFETIME_H
#define SANDBOX_LIFETIME_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** The longest lifetime E2B takes (24 h), seconds. */
#define SBX_MAX_TIMEOUT_SECONDS 86400
/** Most metadata pairs one create takes (beside the name tag). */
#define SBX_MAX_METADATA 64
/** Most bytes of a metadata key, and of a value. */
#define SBX_MAX_METADATA_KEY   128
#define SBX_MAX_METADATA_VALUE 1024

#define SBX_CREATE_OPTIONS_VERSION 1

/** Options of sbx_sandbox_create_with(). Initialise with SBX_CREATE_OPTIONS_INIT. */
typedef struct sbx_create_options {
	unsigned int version; /**< SBX_CREATE_OPTIONS_VERSION */
	/**
	 * The sandbox's first lifetime, seconds (1..86400); 0 = the config's
	 * timeoutSeconds. A later call that connects (exec, file calls, resume)
	 * extends it to at least timeoutSeconds, as every connect does.
	 */
	uint64_t timeout_seconds;
	/**
	 * Environment of every process in the sandbox (E2B's envVars), under
	 * exec's own (HOME, LANG) and the caller's per-exec variables. Keys as
	 * exec's (^[A-Za-z_][A-Za-z0-9_]*$), values non-NULL.
	 */
	const sbx_env_var *env;
	size_t env_count;
	/**
	 * Metadata pairs (E2B's metadata; key = `key`, value = `value`), at most
	 * SBX_MAX_METADATA: keys 1..128 printable ASCII bytes, values up to 1024
	 * bytes of UTF-8 without control characters. The key
	 * "capybara-sandbox-name" is the provider's name tag and is refused.
	 */
	const sbx_env_var *metadata;
	size_t metadata_count;
} sbx_create_options;

/* clang-format off */
#define SBX_CREATE_OPTIONS_INIT {SBX_CREATE_OPTIONS_VERSION, 0, NULL, 0, NULL, 0}
/* clang-format on */

/**
 * sbx_sandbox_create() (the same-name replacement, the egress mapping, the
 * name tag) with `opts` (NULL: exactly sbx_sandbox_create()). All of `opts`
 * is checked before any request.
 * @return as sbx_sandbox_create(); SBX_EINVALID also for a bad option
 *         ("metadata key capybara-sandbox-name is reserved for the name").
 */
SBX_EXTERN int sbx_sandbox_create_with(char **id_out, sbx_provider *p, const char *name,
                                       const sbx_limits *limits, const sbx_create_options *opts,
                                       sbx_signal *sig, sbx_error *err);

/**
 * Set the sandbox's end to now + `timeout_seconds` exactly: it may shorten
 * it (E2B's POST /sandboxes/{id}/timeout). A paused sandbox is resumed first
 * (E2B answers 404 for it), as every call that uses a sandbox does.
 * @param timeout_seconds  0..86400 (SBX_EINVALID otherwise, before any request);
 *                         0 ends the sandbox at once, as E2B's minimum 0 allows: it is
 *                         paused (the E2B provider creates with autoPause), so a later
 *                         call resumes it.
 * @return 0, SBX_EINVALID, SBX_EGONE (no such sandbox), SBX_EABORTED,
 *         SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_sandbox_set_timeout(sbx_provider *p, const char *id, uint64_t timeout_seconds,
                                       sbx_signal *sig, sbx_error *err);

SBX_END_DECLS

#endif
