/*
 * cli/shapes.c: library results as the JSON of --json and serve (shapes.h).
 */
#include "shapes.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_shape_bytes(json_t *obj, const char *key, const unsigned char *data, size_t len)
{
	char b64key[64];
	unsigned char *enc;
	json_t *s;

	if (!obj)
		return -1;
	/* json_stringn() accepts any valid UTF-8, NUL bytes included (sent as \u0000). */
	if ((s = json_stringn((const char *)data, len)))
		return json_object_set_new(obj, key, s);
	if (len > (size_t)INT32_MAX / 4 * 3)
		return -1;
	if (!(enc = malloc(4 * ((len + 2) / 3) + 1)))
		return -1;
	EVP_EncodeBlock(enc, data, (int)len);
	snprintf(b64key, sizeof(b64key), "%s_b64", key);
	s = json_string((const char *)enc);
	free(enc);
	if (!s || json_object_set_new(obj, key, json_null()) < 0 ||
	    json_object_set_new(obj, b64key, s) < 0)
		return -1;
	return 0;
}

/* The library's message without the leading "sandbox-e2b: ". */
static const char *lib_message(const char *msg)
{
	static const char prefix[] = "sandbox-e2b: ";

	if (msg && strncmp(msg, prefix, sizeof(prefix) - 1) == 0)
		return msg + sizeof(prefix) - 1;
	return msg;
}

json_t *cli_shape_error(int code, const sbx_error *err, const char *message, const char *hint)
{
	json_t *e;

	if (!message)
		message =
		    err && err->message[0] ? lib_message(err->message) : sbx_error_code_name(code);
	e = json_pack("{s:s,s:s}", "code", sbx_error_code_name(code), "message", message);
	if (!e)
		return NULL;
	if (hint)
		json_object_set_new(e, "hint", json_string(hint));
	if (err && err->http_status)
		json_object_set_new(e, "http_status", json_integer(err->http_status));
	if (err && err->e2b_code[0])
		json_object_set_new(e, "e2b_code", json_string(err->e2b_code));
	return e;
}

json_t *cli_shape_exec_result(const sbx_exec_result *r)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "exit_code",
	                    r->has_exit_code ? json_integer(r->exit_code) : json_null());
	if (cli_shape_bytes(o, "stdout", r->stdout_data, r->stdout_len) < 0 ||
	    cli_shape_bytes(o, "stderr", r->stderr_data, r->stderr_len) < 0) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "truncated", json_boolean(r->truncated));
	json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
	json_object_set_new(o, "aborted", json_boolean(r->aborted));
	return o;
}

json_t *cli_shape_created(const char *id, const char *name)
{
	return json_pack("{s:s,s:s}", "id", id, "name", name);
}

json_t *cli_shape_resume(const char *id, sbx_resume_status st)
{
	return json_pack("{s:s,s:s}", "id", id, "status", st == SBX_RESUMED ? "resumed" : "gone");
}

json_t *cli_shape_file(const char *path, const sbx_file *f)
{
	json_t *o;

	if (!f)
		return json_pack("{s:s,s:b}", "path", path, "exists", 0);
	o = json_pack("{s:s,s:b,s:I,s:b}", "path", path, "exists", 1, "size", (json_int_t)f->len,
	              "truncated", f->truncated);
	if (o && cli_shape_bytes(o, "content", f->data, f->len) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_shape_stat(const char *path, const sbx_stat *st)
{
	return json_pack("{s:s,s:b,s:I,s:b}", "path", path, "exists", st->exists, "size",
	                 (json_int_t)st->size, "is_dir", st->is_dir);
}
