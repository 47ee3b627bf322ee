/*
 * examples/hello.c: the smallest complete use of libsandbox-e2b: create a
 * sandbox, run `echo hello` in it, print the output, destroy it.
 *
 * Build (installed library):  cc hello.c $(pkg-config --cflags --libs sandbox-e2b)
 * Run against E2B: SANDBOX_E2B_CONFIG='{"apiKey":"e2b_...","template":"capybara-sandbox"}' ./hello
 * Run against fake-e2b (started with --api-key e2b_local_key):
 *   SANDBOX_E2B_CONFIG='{"apiKey":"e2b_local_key","template":"capybara-sandbox",
 *                        "apiUrl":"http://127.0.0.1:PORT"}' \
 *   SANDBOX_E2B_ENVD_URL=http://127.0.0.1:PORT ./hello
 */
#include <sandbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const sbx_error *err)
{
	fprintf(stderr, "hello: %s failed: %s (%s)\n", what, err->message,
	        sbx_error_code_name(err->code));
	return 1;
}

int main(void)
{
	const char *json = getenv("SANDBOX_E2B_CONFIG");
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_exec_options exec = SBX_EXEC_OPTIONS_INIT;
	sbx_limits limits = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	sbx_exec_result res = {0};
	sbx_e2b_config *cfg = NULL;
	sbx_provider *p = NULL;
	sbx_error err = {0}, derr = {0};
	char *id = NULL;
	int rc = 1;

	if (!json) {
		fprintf(stderr, "hello: set SANDBOX_E2B_CONFIG to the deployment config JSON\n");
		return 2;
	}
	opts.envd_url = getenv("SANDBOX_E2B_ENVD_URL"); /* NULL: E2B's own envd address */
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &err) < 0) {
		rc = fail("config", &err);
		goto done;
	}
	if (sbx_e2b_provider_new(&p, cfg, &opts, &err) < 0) {
		rc = fail("provider", &err);
		goto done;
	}
	/* NULL abort signal: these calls are not interrupted. */
	if (sbx_sandbox_create(&id, p, "hello-example", &limits, NULL, &err) < 0) {
		rc = fail("create", &err);
		goto done;
	}
	if (sbx_sandbox_exec(&res, p, id, "echo hello", &exec, NULL, &err) < 0) {
		rc = fail("exec", &err);
		goto done;
	}
	fwrite(res.stdout_data, 1, res.stdout_len, stdout);
	rc = res.has_exit_code ? res.exit_code : 1;
done:
	/* A fresh error: err may still hold the failure that brought us here. */
	if (id && sbx_sandbox_destroy(p, id, NULL, &derr) < 0)
		fail("destroy", &derr);
	sbx_exec_result_free(&res);
	sbx_free(id);
	sbx_provider_free(p);
	sbx_e2b_config_free(cfg);
	return rc;
}
