/*
 * cli/rpc/fail.c: the failure of one `serve` call: a JSON-RPC code and a
 * secret-free message, or a library error, and its JSON-RPC error object
 * ({"code", "message", "data": {"code", "http_status"?, "e2b_code"?}}).
 * The ground floor of serve/ with wire.c: it uses jansson and the library's
 * error codes, nothing of serve.
 */
#include "rpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int serve_failf(serve_fail *f, int rpc_code, const char *fmt, ...)
{
	va_list ap;

	memset(&f->lib, 0, sizeof(f->lib));
	f->rpc_code = rpc_code;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return -1;
}

const char *serve_code_name(int code)
{
	switch (code) {
	case SBX_EINVALID:
		return "invalid";
	case SBX_EGONE:
		return "gone";
	case SBX_EABORTED:
		return "aborted";
	case SBX_ETIMEOUT:
		return "timeout";
	case SBX_ETOOLARGE:
		return "too_large";
	case SBX_ENOMEM:
		return "no_memory";
	case SBX_EPROTOCOL:
		return "protocol";
	case SBX_EHTTP:
		return "http";
	case SBX_ENETWORK:
		return "network";
	case SBX_EUSER:
		return "user";
	case SBX_ESANDBOX:
		return "sandbox";
	default:
		return "internal";
	}
}

json_t *serve_error_object(const serve_fail *f)
{
	json_t *e = json_pack("{s:i,s:s}", "code", f->rpc_code, "message", f->message), *d;

	if (!e || !f->lib.code) {
		if (e && f->rpc_code == RPC_NOT_CONFIGURED)
			json_object_set_new(e, "data",
			                    json_pack("{s:s}", "code", "not_configured"));
		return e;
	}
	if (!(d = json_pack("{s:s}", "code", serve_code_name(f->lib.code)))) {
		json_decref(e);
		return NULL;
	}
	if (f->lib.http_status)
		json_object_set_new(d, "http_status", json_integer(f->lib.http_status));
	if (f->lib.e2b_code[0])
		json_object_set_new(d, "e2b_code", json_string(f->lib.e2b_code));
	json_object_set_new(e, "data", d);
	return e;
}
