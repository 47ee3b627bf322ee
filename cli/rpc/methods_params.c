/*
 * cli/rpc/methods_params.c: what every `serve` handler shares (bindings/protocol/methods.md):
 * reading params (wrong, missing or unknown fields are -32602 naming the field), bytes as
 * "key" or "key_b64", and the finish of a run step (the library's error, or the result).
 */

#include "cli.h"
#include "methods_int.h"
#include "rpc.h"
#include "shapes.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVE_MAX_LIST 4096

/* ---- params ---------------------------------------------------------------------------- */

/* Fail unless every key of obj is in allowed (NULL-terminated). `where`: "params", ... */
int serve_only_keys(json_t *obj, const char *const *allowed, const char *where, serve_fail *f)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		bool ok = false;
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(key, allowed[i]) == 0;
		if (!ok)
			return serve_failf(f, RPC_INVALID_PARAMS, "%s.%.100s: unknown field", where,
			                   key);
	}
	return 0;
}

/* A string field without NUL bytes; absent leaves *out as is unless required. */
int serve_get_str(json_t *obj, const char *key, bool required, const char *where, const char **out,
                  serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s is required (a string)",
			                   where, key);
		return 0;
	}
	if (!json_is_string(v))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must be a string", where, key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must not contain NUL characters",
		                   where, key);
	*out = json_string_value(v);
	return 0;
}

/* A non-negative integer field, at most max. */
int serve_get_uint(json_t *obj, const char *key, const char *where, uint64_t min, uint64_t max,
                   uint64_t *out, bool *given, serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (given)
		*given = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < min || (uint64_t)json_integer_value(v) > max)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "%s.%s must be an integer from %llu to %llu", where, key,
		                   (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	if (given)
		*given = true;
	return 0;
}

int serve_get_bool(json_t *obj, const char *key, const char *where, bool *out, serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must be true or false", where,
		                   key);
	*out = json_is_true(v);
	return 0;
}

int serve_get_number(json_t *obj, const char *key, const char *where, double *out, serve_fail *f)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return serve_failf(f, RPC_INVALID_PARAMS, "%s.%s must be a number", where, key);
	*out = json_number_value(v);
	return 0;
}

/* An array of strings (at most SERVE_MAX_LIST) into a malloc'd array of borrowed pointers. */
int serve_get_str_array(json_t *obj, const char *key, bool required, const char *where,
                        const char ***out, size_t *n, serve_fail *f)
{
	json_t *v = json_object_get(obj, key), *e;
	size_t i;

	if (!v || json_is_null(v)) {
		if (required)
			return serve_failf(f, RPC_INVALID_PARAMS,
			                   "%s.%s is required (an array of strings)", where, key);
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) > SERVE_MAX_LIST)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "%s.%s must be an array of at most %d strings", where, key,
		                   SERVE_MAX_LIST);
	if (!(*out = calloc(json_array_size(v) + 1, sizeof(**out))))
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
			return serve_failf(f, RPC_INVALID_PARAMS,
			                   "%s.%s[%zu] must be a string without NUL characters",
			                   where, key, i);
		(*out)[i] = json_string_value(e);
	}
	*n = json_array_size(v);
	return 0;
}

/* An object of strings under `key` (absent or null: none) into a new array of pairs. */
int serve_get_str_map(json_t *p, const char *key, sbx_env_var **out, size_t *n, serve_fail *f)
{
	json_t *m = json_object_get(p, key), *v;
	const char *k;

	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m) || json_object_size(m) > SERVE_MAX_LIST)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.%s must be an object of at most %d strings", key,
		                   SERVE_MAX_LIST);
	if (!(*out = calloc(json_object_size(m) + 1, sizeof(**out))))
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return serve_failf(
			    f, RPC_INVALID_PARAMS,
			    "params.%s.%.100s must be a string without NUL characters", key, k);
		(*out)[*n].key = k;
		(*out)[*n].value = json_string_value(v);
		(*n)++;
	}
	return 0;
}

int serve_parse_id(json_t *p, serve_args *a, serve_fail *f)
{
	return serve_get_str(p, "id", true, "params", &a->id, f);
}

int serve_parse_only_id(json_t *p, serve_args *a, serve_fail *f)
{
	static const char *const keys[] = {"id", NULL};
	if (serve_only_keys(p, keys, "params", f) < 0)
		return -1;
	return serve_parse_id(p, a, f);
}

/* Decode base64 (RFC 4648, padded, whitespace-free) into a malloc'd buffer. */
static int b64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
	unsigned char *buf;
	int got;
	size_t pad = 0;

	if (n % 4 != 0 || n > (size_t)INT32_MAX)
		return -1;
	if (!(buf = malloc(n / 4 * 3 + 1)))
		return -2;
	if (n && (got = EVP_DecodeBlock(buf, (const unsigned char *)s, (int)n)) < 0) {
		free(buf);
		return -1;
	}
	for (size_t i = n; i > 0 && s[i - 1] == '=' && pad < 2; i--)
		pad++;
	/* '=' only as padding: EVP_DecodeBlock would read "a=bc" as data. */
	for (size_t i = 0; i + pad < n; i++)
		if (s[i] == '=') {
			free(buf);
			return -1;
		}
	*out = buf;
	*len = n / 4 * 3 - pad;
	return 0;
}

/*
 * Bytes given as `key` (UTF-8 text) or `key`_b64 (base64) into a->data (owned).
 * Neither: an error when required, else nothing. Both: an error.
 */
int serve_get_bytes(json_t *p, const char *key, bool required, serve_args *a, serve_fail *f)
{
	char b64key[32];
	json_t *d, *b;

	snprintf(b64key, sizeof(b64key), "%s_b64", key);
	d = json_object_get(p, key);
	b = json_object_get(p, b64key);
	if (d && json_is_null(d))
		d = NULL;
	if (b && json_is_null(b))
		b = NULL;
	if (!d && !b && !required)
		return 0;
	if (!d == !b)
		return serve_failf(
		    f, RPC_INVALID_PARAMS,
		    "params.%s (UTF-8 text) or params.%s (base64) is required, not both", key,
		    b64key);
	if (d) {
		if (!json_is_string(d))
			return serve_failf(f, RPC_INVALID_PARAMS, "params.%s must be a string",
			                   key);
		a->data_len = json_string_length(d);
		if (!(a->data = malloc(a->data_len + 1)))
			return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
		memcpy(a->data, json_string_value(d), a->data_len);
		return 0;
	}
	if (!json_is_string(b))
		return serve_failf(f, RPC_INVALID_PARAMS, "params.%s must be a string", b64key);
	switch (b64_decode(json_string_value(b), json_string_length(b), &a->data, &a->data_len)) {
	case 0:
		return 0;
	case -2:
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	default:
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.%s must be base64 (RFC 4648, with padding)", b64key);
	}
}

void serve_args_free(serve_args *a)
{
	for (size_t i = 0; a->wbufs && i < a->nwfiles; i++)
		free(a->wbufs[i]);
	free(a->wbufs);
	free(a->wfiles);
	free(a->hosts);
	free(a->env);
	free(a->meta);
	free(a->tags);
	if (a->data) {
		memset(a->data, 0, a->data_len); /* file contents may be private */
		free(a->data);
	}
	memset(a, 0, sizeof(*a));
}

/* ---- results (the CLI's --json shapes) ------------------------------------------------- */

json_t *serve_ok_with(const char *key, const char *value)
{
	return json_pack("{s:b,s:s}", "ok", 1, key, value);
}

/* ---- the end of a run step ----------------------------------------------------------------- */

/* Finish a library call: 0 and the result (NULL result: out of memory), or -1 with f filled. */
int serve_finish(int rc, const sbx_error *err, json_t *result, json_t **out, serve_fail *f)
{
	if (rc < 0) {
		json_decref(result);
		f->rpc_code = rc == SBX_EABORTED ? RPC_REQUEST_CANCELED : RPC_LIBRARY_ERROR;
		f->lib = *err;
		if (!f->lib.code)
			f->lib.code = rc;
		snprintf(f->message, sizeof(f->message), "%s",
		         err->message[0] ? cli_lib_message(err->message) : sbx_error_code_name(rc));
		return -1;
	}
	if (!result)
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	*out = result;
	return 0;
}

/* "env" (an object of strings) into a->env, and a->cmd's env pointing at it. */
int serve_parse_env(json_t *p, serve_args *a, serve_fail *f)
{
	if (serve_get_str_map(p, "env", &a->env, &a->nenv, f) < 0)
		return -1;
	a->cmd.env = a->env;
	a->cmd.env_count = a->nenv;
	return 0;
}

/* "user": "sandbox" (default) or "root" into a->popts and a->cmd. */
int serve_parse_user(json_t *p, serve_args *a, serve_fail *f)
{
	const char *user = "sandbox";
	a->popts = (sbx_path_options)SBX_PATH_OPTIONS_INIT;
	if (serve_get_str(p, "user", false, "params", &user, f) < 0)
		return -1;
	if (strcmp(user, "root") == 0)
		a->popts.user = SBX_USER_ROOT;
	else if (strcmp(user, "sandbox") != 0)
		return serve_failf(f, RPC_INVALID_PARAMS,
		                   "params.user must be \"sandbox\" or \"root\"");
	a->cmd.user = a->popts.user;
	return 0;
}
