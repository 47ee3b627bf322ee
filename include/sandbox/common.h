/*
 * sandbox/common.h: export macro, version and one-time library initialisation.
 *
 * libsandbox-e2b keeps no process-wide mutable state beyond what
 * sbx_global_init() sets up once (libcurl's global init). Several providers,
 * threads and processes may drive the same sandboxes at once
 * (docs/contract.md "Many processes, one sandbox").
 */
#ifndef SANDBOX_COMMON_H
#define SANDBOX_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* clang-format off */
#ifdef __cplusplus
#define SBX_BEGIN_DECLS extern "C" {
#define SBX_END_DECLS }
#else
#define SBX_BEGIN_DECLS
#define SBX_END_DECLS
#endif

#if defined(__GNUC__)
#define SBX_EXTERN __attribute__((visibility("default")))
#else
#define SBX_EXTERN
#endif

#define SBX_VERSION_MAJOR 0
#define SBX_VERSION_MINOR 1
#define SBX_VERSION_PATCH 0
#define SBX_VERSION "0.1.0"
/* clang-format on */

SBX_BEGIN_DECLS

/**
 * Initialise the library once per process (libcurl's global state).
 *
 * Thread-safety: safe to call from several threads and several times; only
 * the first call does work (pthread_once). Provider constructors call it
 * themselves, so calling it is optional; a host that initialises libcurl
 * itself may call it early, before it starts threads, as libcurl advises.
 *
 * @return 0, or SBX_EINTERNAL when libcurl cannot be initialised.
 */
SBX_EXTERN int sbx_global_init(void);

/**
 * Free memory the library handed to the caller as a plain pointer: the
 * sandbox id of sbx_sandbox_create(), the JSON of sbx_e2b_config_to_json().
 * Accepts NULL. Never pass it a struct that has its own free function
 * (sbx_file_free, sbx_e2b_config_free, ...). Thread-safe.
 */
SBX_EXTERN void sbx_free(void *ptr);

/** The library version string, SBX_VERSION ("0.1.0"). Static: never free it. Thread-safe. */
SBX_EXTERN const char *sbx_version(void);

SBX_END_DECLS

#endif
