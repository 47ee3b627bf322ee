/*
 * fuzz_api_reply: the control-plane reply handling of src/e2b/api.c and
 * provider.c on any body: the error-body reader (errorOf), the connect
 * reply's Sandbox object (targetOf: sandboxID, domain, envdAccessToken) and a
 * list page (destroyByName). The first byte picks the HTTP status. Errors must
 * be filled, secret-free and NUL-terminated; a target, when made, must carry
 * a valid id and an http(s) URL.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/api.h"
#include "e2b/names.h"
#include "e2b/provider_int.h"

static const char KEY[] = "e2b_fuzz_api_key_0123";

static void check_err(const sbx_error *err, int rc, const char *secret)
{
	if (rc < 0 && err->code != rc)
		abort();
	if (!memchr(err->message, '\0', sizeof(err->message)) ||
	    !memchr(err->e2b_code, '\0', sizeof(err->e2b_code)))
		abort();
	if (strstr(err->message, KEY) || (secret && strstr(err->message, secret)))
		abort();
	if (strstr(err->e2b_code, KEY) || strstr(err->e2b_code, "envd_tok_secret"))
		abort(); /* the code is server text too */
	for (const char *c = err->e2b_code; *c; c++)
		if ((unsigned char)*c < 0x20)
			abort();
}

static void fuzz_target(const char *body, size_t len, bool with_url)
{
	char domain[] = "e2b.app", envd_url[] = "http://127.0.0.1:5";
	sbx__e2b_provider p;
	sbx_envd_target t;
	sbx_error err = {0};
	json_t *j = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	int rc;

	memset(&p, 0, sizeof(p));
	p.domain = domain;
	p.envd_url = with_url ? envd_url : NULL;
	p.api.api_key = (char *)KEY;
	json_t *tok = json_object_get(j, "envdAccessToken");
	rc = sbx__e2b_target_of(&p, &t, j, "fallback-id", &err);
	/* secrets shorter than 4 bytes are not scrubbed: they would blank ordinary words */
	check_err(&err, rc,
	          json_is_string(tok) && json_string_length(tok) >= 4 &&
	                  strlen(json_string_value(tok)) == json_string_length(tok)
	              ? json_string_value(tok)
	              : NULL);
	if (rc == 0) {
		if (sbx__e2b_validate_sandbox_id(t.sandbox_id, NULL) < 0 || !t.token ||
		    !t.token[0] || strncmp(t.url, "http", 4) != 0)
			abort();
	}
	sbx__envd_target_dispose(&t);
	json_decref(j);
}

static void fuzz_list(const char *body, size_t len)
{
	json_t *j = json_loadb(body, len, JSON_DECODE_ANY, NULL), *ids = json_array(), *v;
	sbx_error err = {0};
	size_t i;
	int rc;

	if (!ids)
		abort();
	rc = sbx__e2b_collect_page(j, "box", ids, &err);
	check_err(&err, rc, NULL);
	json_array_foreach(ids, i, v)
	{
		if (sbx__e2b_validate_sandbox_id(json_string_value(v), NULL) < 0)
			abort();
	}
	json_decref(ids);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = {400, 401, 404, 409, 500, 502, 200, 0};
	sbx_error err = {0};
	bool nf = true;
	const char *body;
	size_t len;
	int rc;

	if (size < 1)
		return 0;
	body = (const char *)data + 1;
	len = size - 1;
	rc = sbx__e2b_http_error(&err, "GET /v2/sandboxes", statuses[data[0] & 7],
	                         (const unsigned char *)body, len, "envd_tok_secret", KEY, &nf);
	check_err(&err, rc, "envd_tok_secret");
	if (rc != SBX_EHTTP || (nf && statuses[data[0] & 7] != 404))
		abort();
	fuzz_target(body, len, data[0] & 8);
	fuzz_list(body, len);
	return 0;
}
