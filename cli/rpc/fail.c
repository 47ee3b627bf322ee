/*
 * cli/rpc/fail.c: the failure of one `serve` call: a JSON-RPC code and a
 * secret-free message, or a library error, and its JSON-RPC error object
 * ({"code", "message", "data": {"code", "http_status"?, "e2b_code"?}}), and the
 * names data.code holds.
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
	f->named = false;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * data.code, the names of every failure serve reports: the one table (bindings/protocol/methods.md
 * "Errors"; initialize returns rpc_names as "error_codes", so the packages keep no copy). A
 * library failure is named by its code; any other error by its JSON-RPC code.
 */
typedef struct code_name {
	int code;
	const char *name;
} code_name;

/* the library's codes (include/sandbox/error.h) but SBX_EINTERNAL, which is "internal" */
static const code_name lib_names[] = {
    {SBX_EINVALID, "invalid"},   {SBX_EGONE, "gone"},          {SBX_EABORTED, "aborted"},
    {SBX_ETIMEOUT, "timeout"},   {SBX_ETOOLARGE, "too_large"}, {SBX_ENOMEM, "no_memory"},
    {SBX_EPROTOCOL, "protocol"}, {SBX_EHTTP, "http"},          {SBX_ENETWORK, "network"},
    {SBX_EUSER, "user"},         {SBX_ESANDBOX, "sandbox"},
};

/* the JSON-RPC codes (rpc.h), for an error without a library failure */
static const code_name rpc_names[] = {
    {RPC_PARSE_ERROR, "parse_error"},           {RPC_INVALID_REQUEST, "invalid_request"},
    {RPC_METHOD_NOT_FOUND, "method_not_found"}, {RPC_INVALID_PARAMS, "invalid_params"},
    {RPC_INTERNAL_ERROR, "internal"},           {RPC_LIBRARY_ERROR, "internal"},
    {RPC_NOT_CONFIGURED, "not_configured"},     {RPC_REQUEST_CANCELED, "aborted"},
};

static const char *name_of(const code_name *t, size_t n, int code)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return "internal";
}

const char *serve_code_name(int code)
{
	return name_of(lib_names, sizeof(lib_names) / sizeof(lib_names[0]), code);
}

const char *serve_rpc_code_name(int rpc_code)
{
	return name_of(rpc_names, sizeof(rpc_names) / sizeof(rpc_names[0]), rpc_code);
}

json_t *serve_error_codes(void)
{
	json_t *o = json_object();
	char key[16];

	for (size_t i = 0; o && i < sizeof(rpc_names) / sizeof(rpc_names[0]); i++) {
		snprintf(key, sizeof(key), "%d", rpc_names[i].code);
		if (json_object_set_new(o, key, json_string(rpc_names[i].name)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *serve_error_object(const serve_fail *f)
{
	json_t *e = json_pack("{s:i,s:s}", "code", f->rpc_code, "message", f->message), *d;

	if (!e || !f->lib.code) {
		if (e && (f->named || f->rpc_code == RPC_NOT_CONFIGURED))
			json_object_set_new(
			    e, "data",
			    json_pack("{s:s}", "code", serve_rpc_code_name(f->rpc_code)));
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
