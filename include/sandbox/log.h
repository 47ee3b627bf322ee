/*
 * sandbox/log.h: the logger callback.
 *
 * The library logs through a callback the host installs per provider; with
 * none installed it is silent. Messages and fields never carry secrets.
 */
#ifndef SANDBOX_LOG_H
#define SANDBOX_LOG_H

#include "common.h"

SBX_BEGIN_DECLS

typedef enum sbx_log_level {
	SBX_LOG_DEBUG = 0,
	SBX_LOG_INFO = 1,
	SBX_LOG_WARN = 2,
	SBX_LOG_ERROR = 3
} sbx_log_level;

/** One structured field of a log line, e.g. {"sandboxId", "i0a1..."}. */
typedef struct sbx_log_field {
	const char *key;
	const char *value;
} sbx_log_field;

/**
 * Log callback. `message` and `fields` are borrowed for the duration of the
 * call only. It may be called from any thread that calls into the provider,
 * concurrently; it must not call back into the provider that logs.
 */
typedef void (*sbx_log_fn)(sbx_log_level level, const char *message, const sbx_log_field *fields,
                           size_t nfields, void *payload);

/** A logger: the callback (NULL = silent) and its payload, passed back as is. */
typedef struct sbx_logger {
	sbx_log_fn fn;
	void *payload;
} sbx_logger;

/**
 * Name of a level: "debug", "info", "warn", "error"; another value gives
 * "unknown". Static string, never freed. Thread-safe.
 */
SBX_EXTERN const char *sbx_log_level_name(sbx_log_level level);

SBX_END_DECLS

#endif
