/*
 * fuzz_inputs: what a caller hands the library: a deployment config JSON
 * (sbx_e2b_config_parse, then sbx_e2b_config_to_json on success) and the
 * validators (path, tag, allow host, env key, sandbox name and id), plus the
 * UTF-8 trimming and quoting helpers every error message goes through. Every
 * failure must fill its error; the config's API key never appears in it.
 */
#include <sandbox/common.h>
#include <sandbox/e2b.h>
#include <sandbox/validate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/utf8.h"
#include "e2b/names.h"
#include "util/err.h"

static void check(int rc, const sbx_error *err)
{
	if (rc != 0 && (err->code != rc || !err->message[0]))
		abort();
	if (!memchr(err->message, '\0', sizeof(err->message)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_e2b_config *cfg = NULL;
	sbx_error err = {0};
	char *s, *json = NULL, q[SBX_QUOTE_SIZE];
	size_t keep;
	int rc;

	rc = sbx_e2b_config_parse(&cfg, (const char *)data, size, &err);
	check(rc, &err);
	if (rc == 0) {
		if (!cfg || !cfg->api_key)
			abort();
		memset(&err, 0, sizeof(err));
		if (sbx_e2b_config_to_json(&json, cfg, &err) == 0) {
			if (!strstr(json, "\"apiKey\":\"[redacted]\""))
				abort(); /* the key is never rendered */
			sbx_free(json);
		}
		sbx_e2b_config_free(cfg);
	} else if (cfg) {
		abort();
	}

	if (!(s = malloc(size + 1)))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&err, 0, sizeof(err));
	check(sbx_validate_path(s, size, &err), &err);
	memset(&err, 0, sizeof(err));
	check(sbx_validate_tag(s, &err), &err);
	memset(&err, 0, sizeof(err));
	check(sbx_validate_allow_host(s, &err), &err);
	memset(&err, 0, sizeof(err));
	check(sbx_validate_env_key(s, &err), &err);
	memset(&err, 0, sizeof(err));
	check(sbx__e2b_validate_name(s, &err), &err);
	memset(&err, 0, sizeof(err));
	check(sbx__e2b_validate_sandbox_id(s, &err), &err);
	(void)sbx__is_hostname(s, size);
	keep = sbx__utf8_keep_len(data, size, true);
	if (keep > size)
		abort();
	sbx__quote(q, sizeof(q), data, size);
	if (!memchr(q, '\0', sizeof(q)))
		abort();
	free(s);
	return 0;
}
