/*
 * sandbox/validate.h: validators of the sandbox@1 contract (docs/contract.md).
 *
 * Pure functions, thread-safe, no allocation; arguments are borrowed for the
 * call. Each returns 0 when the value is valid, else SBX_EINVALID with `err`
 * (if non-NULL) naming the rule broken and quoting a short part of the value,
 * non-printable bytes escaped. A NULL value is invalid. The library
 * runs the same checks itself before any request; these are for hosts that
 * want to check early. Rules: docs/contract.md "Definitions".
 */
#ifndef SANDBOX_VALIDATE_H
#define SANDBOX_VALIDATE_H

#include "common.h"
#include "error.h"
#include "sandbox.h"

SBX_BEGIN_DECLS

/** Sandbox tag (docs/contract.md "Definitions"): ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ */
SBX_EXTERN int sbx_validate_tag(const char *tag, sbx_error *err);

/**
 * Sandbox path: absolute, at most 4096 bytes, no NUL or other control
 * character, no empty, "." or ".." segment (one trailing "/" allowed), each
 * segment at most 255 bytes. `len` is the byte length (NUL bytes inside are
 * rejected); pass strlen(path) for C strings.
 */
SBX_EXTERN int sbx_validate_path(const char *path, size_t len, sbx_error *err);

/**
 * Allow host: a lowercase hostname (labels of [a-z0-9-], at least two),
 * optionally prefixed by "*.", or an IPv4 address or IPv4 CIDR (/0../32):
 * docs/contract.md "Definitions" (and "Egress" for what it allows).
 */
SBX_EXTERN int sbx_validate_allow_host(const char *host, sbx_error *err);

/** Environment variable name: ^[A-Za-z_][A-Za-z0-9_]*$ */
SBX_EXTERN int sbx_validate_env_key(const char *key, sbx_error *err);

/**
 * Limits (docs/contract.md "Resources", "Egress"): cpu, memory_mb, disk_mb finite
 * and > 0; egress one of sbx_egress; when egress is SBX_EGRESS_ALLOWLIST every
 * allow host valid (sbx_validate_allow_host). NULL limits: SBX_EINVALID.
 */
SBX_EXTERN int sbx_validate_limits(const sbx_limits *limits, sbx_error *err);

SBX_END_DECLS

#endif
