/*
 * util/err.c: filling an sbx_error where the failure is detected.
 *
 * The first failure stays (curl's failf, jansson's error.c): a setter called on
 * an error whose code is already non-zero changes nothing, so outer layers can
 * never overwrite the deepest cause. Formatting uses vsnprintf into the fixed
 * message buffer: no allocation, so SBX_ENOMEM is always reportable.
 */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void error_vset(sbx_error *err, int code, int http_status, const char *e2b_code,
                       const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
static void error_vset(sbx_error *err, int code, int http_status, const char *e2b_code,
                       const char *fmt, va_list ap)
{
	err->code = code;
	err->http_status = http_status;
	err->e2b_code[0] = '\0';
	if (e2b_code)
		snprintf(err->e2b_code, sizeof(err->e2b_code), "%s", e2b_code);
	if (vsnprintf(err->message, sizeof(err->message), fmt, ap) < 0)
		err->message[0] = '\0';
}

int sbx__error_set(sbx_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	if (!err || err->code != 0)
		return code;
	va_start(ap, fmt);
	error_vset(err, code, 0, NULL, fmt, ap);
	va_end(ap);
	return code;
}

int sbx__error_set_http(sbx_error *err, int code, int http_status, const char *e2b_code,
                        const char *fmt, ...)
{
	va_list ap;
	if (!err || err->code != 0)
		return code;
	va_start(ap, fmt);
	error_vset(err, code, http_status, e2b_code, fmt, ap);
	va_end(ap);
	return code;
}

char *sbx__quote(char *out, size_t outlen, const void *data, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = data;
	size_t n = len > 64 ? 64 : len, o = 0;

	if (!out || outlen == 0)
		return out;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (o + 1 >= outlen)
				break;
			out[o++] = (char)c;
		} else if (c == '\\') {
			if (o + 2 >= outlen)
				break;
			out[o++] = '\\';
			out[o++] = '\\';
		} else {
			if (o + 4 >= outlen)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (len > 64 && o + 3 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}
