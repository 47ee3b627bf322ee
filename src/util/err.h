/*
 * util/err.h: filling an sbx_error where a failure is detected.
 *
 * The first failure stays: if err->code is already non-zero nothing is
 * overwritten. Every setter returns `code`, so `return sbx__error_set(...)`.
 * Messages must never contain secrets; quote server data only through
 * sbx__quote (at most 64 bytes, non-printables escaped).
 */
#ifndef SBX_UTIL_ERR_H
#define SBX_UTIL_ERR_H

#include <sandbox/error.h>
#include <stddef.h>

int sbx__error_set(sbx_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, recording the HTTP status and the E2B/Connect code string (may be NULL). */
int sbx__error_set_http(sbx_error *err, int code, int http_status, const char *e2b_code,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/*
 * Quote up to 64 bytes of untrusted data into `out` (size >= 4 * 64 + 8) as a
 * printable string: non-printable bytes become \xNN, a longer input ends with
 * "...". Returns out.
 */
char *sbx__quote(char *out, size_t outlen, const void *data, size_t len);
#define SBX_QUOTE_SIZE (4 * 64 + 8)

#endif
