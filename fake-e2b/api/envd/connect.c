/*
 * fake-e2b/api/envd/connect.c: the Connect protocol as envd speaks it
 * (docs/protocol.md "Connect protocol (JSON codec)"): envelopes, end-stream errors, unary errors
 * with the code → HTTP status map, and the request message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd.h"

int fk_obuf_put(fk_obuf *b, const void *data, size_t len)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + len)
			cap *= 2;
		unsigned char *p = realloc(b->ptr, cap);
		if (!p)
			return -1;
		b->ptr = p;
		b->cap = cap;
	}
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	return 0;
}

int fk_obuf_frame_raw(fk_obuf *b, unsigned flags, const void *payload, size_t len)
{
	unsigned char hdr[5] = {(unsigned char)flags, (unsigned char)(len >> 24),
	                        (unsigned char)(len >> 16), (unsigned char)(len >> 8),
	                        (unsigned char)len};
	if (fk_obuf_put(b, hdr, 5) < 0)
		return -1;
	return fk_obuf_put(b, payload, len);
}

int fk_obuf_frame(fk_obuf *b, unsigned flags, json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (!s)
		return -1;
	int rc = fk_obuf_frame_raw(b, flags, s, strlen(s));
	free(s);
	return rc;
}

json_t *fk_connect_end_error(const char *code, const char *message)
{
	return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
}

enum MHD_Result fk_connect_stream_error(fk_req *r, const char *code, const char *message)
{
	fk_obuf b = {0};
	fk_obuf_frame(&b, 2, fk_connect_end_error(code, message));
	enum MHD_Result ret = fk_reply(r, 200, "application/connect+json", b.ptr, b.len);
	free(b.ptr);
	return ret;
}

static const struct {
	const char *code;
	unsigned status;
} connect_codes[] = {
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
};

unsigned fk_connect_code_status(const char *code)
{
	for (size_t i = 0; i < sizeof(connect_codes) / sizeof(connect_codes[0]); i++)
		if (strcmp(connect_codes[i].code, code) == 0)
			return connect_codes[i].status;
	return 500;
}

enum MHD_Result fk_connect_error(fk_req *r, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fk_reply_json(r, fk_connect_code_status(code),
	                     json_pack("{s:s,s:s}", "code", code, "message", msg));
}

const char *fk_connect_code_of(int fk)
{
	switch (fk) {
	case FK_EINVAL:
	case FK_ENOCWD:
	case FK_EISDIR:
	case FK_ENOTDIR:
	case FK_ESPAWN:
		return "invalid_argument";
	case FK_ENOTFOUND:
		return "not_found";
	case FK_EEXIST:
		return "already_exists";
	case FK_ENOUSER:
		return "unauthenticated";
	case FK_ESTATE:
		return "unavailable";
	case FK_ENOSPC:
	case FK_ENOMEM:
		return "resource_exhausted";
	case FK_ECLOSED:
		return "failed_precondition";
	default:
		return "internal";
	}
}

int fk_envd_code(int rc, const fk_err *err)
{
	/* a symlink loop (or a magic link that leads nowhere) is a path that does not exist */
	return err && err->errnum == ELOOP && rc == FK_EIO ? FK_ENOTFOUND : rc;
}

enum MHD_Result fk_connect_runtime_error(fk_req *r, int rc, const fk_err *err)
{
	rc = fk_envd_code(rc, err);
	return fk_connect_error(r, fk_connect_code_of(rc), "%s",
	                        err->message[0] ? err->message : fk_code_name(rc));
}

int fk_connect_envelope(const unsigned char *p, size_t n, unsigned *flags, size_t *len)
{
	if (n < 5)
		return -1;
	*flags = p[0];
	*len = ((size_t)p[1] << 24) | ((size_t)p[2] << 16) | ((size_t)p[3] << 8) | p[4];
	return 0;
}

json_t *fk_connect_request(fk_req *r, int stream)
{
	if (!stream)
		return fk_body_json(r, 1);
	unsigned flags;
	size_t n;
	if (fk_connect_envelope(r->body, r->body_len, &flags, &n) < 0 || flags != 0 ||
	    n != r->body_len - 5)
		return NULL;
	return fk_json_parse(r->body + 5, n, 0);
}
