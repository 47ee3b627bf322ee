/*
 * fake-e2b/http/reply.c: replies. Each queues one response and then tells the
 * `replied` hook (the request log shows the request from then on).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

enum MHD_Result fk_reply_response(fk_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp)
		return MHD_NO;
	r->status = status;
	enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES && r->hooks && r->hooks->replied)
		r->hooks->replied(r->hooks->cls, r);
	return ret;
}

enum MHD_Result fk_reply(fk_req *r, unsigned status, const char *ctype, const void *data,
                         size_t len)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	return fk_reply_response(r, status, resp);
}

enum MHD_Result fk_reply_json(fk_req *r, unsigned status, json_t *steal)
{
	char *s = steal ? json_dumps(steal, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(steal);
	if (!s)
		return fk_reply(r, 500, "application/json",
		                "{\"code\":500,\"message\":\"out of memory\"}", 39);
	enum MHD_Result ret = fk_reply(r, status, "application/json", s, strlen(s));
	free(s);
	return ret;
}

enum MHD_Result fk_reply_error(fk_req *r, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fk_reply_json(r, status,
	                     json_pack("{s:i,s:s}", "code", (int)status, "message", msg));
}

/* RFC 2045 tspecials, as Go's mime package lists them. */
static int tspecial(unsigned char c)
{
	return c && strchr("()<>@,;:\\\"/[]?=", c) != NULL;
}

static int token_char(unsigned char c)
{
	return c > ' ' && c < 0x7f && !tspecial(c);
}

int fk_content_disposition(char *buf, size_t cap, const char *type, const char *filename)
{
	size_t o = 0, n = strlen(filename);
	int enc = 0, token = n > 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)filename[i];
		enc |= (ch < ' ' || ch > '~') && ch != '\t';
		token &= token_char(ch);
	}
#define PUT(ch)                                                                                    \
	do {                                                                                       \
		if (o + 1 >= cap)                                                                  \
			return -1;                                                                 \
		buf[o++] = (char)(ch);                                                             \
	} while (0)
	for (const char *p = type; *p; p++)
		PUT(*p);
	for (const char *p = enc ? "; filename*=utf-8''" : "; filename="; *p; p++)
		PUT(*p);
	if (!enc && !token)
		PUT('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)filename[i];
		if (enc && (ch <= ' ' || ch >= 0x7f || ch == '*' || ch == '\'' || ch == '%' ||
		            tspecial(ch))) {
			PUT('%');
			PUT("0123456789ABCDEF"[ch >> 4]);
			PUT("0123456789ABCDEF"[ch & 15]);
			continue;
		}
		if (!enc && !token && (ch == '"' || ch == '\\'))
			PUT('\\');
		PUT(ch);
	}
	if (!enc && !token)
		PUT('"');
#undef PUT
	buf[o] = '\0';
	return 0;
}
