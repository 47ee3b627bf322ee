/*
 * cli/cmd/config.c: `sandbox-e2b config check [FILE]`: sbx_e2b_config_parse
 * and sbx_e2b_config_to_json (the API key redacted).
 */
#include "command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int config_run(cli *c, const cli_args *a)
{
	sbx_e2b_config *cfg = NULL;
	sbx_error err = {0};
	char *text = NULL, *out = NULL;
	int rc;

	if (a->npos == 0 || strcmp(a->pos[0], "check") != 0)
		return cli_usage_error(c, "expected 'config check [FILE]'");
	if (a->npos == 2)
		c->config_path = a->pos[1];
	if ((rc = cli_config_json(c, &text)) != 0)
		return rc;
	if ((rc = cli_config_parse(c, text, true, &cfg)) != 0)
		goto done;
	if ((rc = sbx_e2b_config_to_json(&out, cfg, &err)) < 0) {
		rc = cli_fail(c, rc, &err);
		goto done;
	}
	if (c->json) {
		json_t *o = json_loads(out, 0, NULL);
		cli_json_print(o ? json_pack("{s:b,s:o}", "valid", 1, "config", o) : NULL);
	} else {
		printf("%s\n", out);
		fprintf(stderr, "config is valid\n");
	}
	rc = CLI_EXIT_OK;
done:
	sbx_free(out);
	sbx_e2b_config_free(cfg);
	free(text);
	return rc;
}

const cli_command cli_cmd_config = {
    .name = "config",
    .args = "check [FILE]",
    .summary = "config check [FILE]: validate and print a deployment config",
    .description =
        "Validates a deployment config (FILE, or the configured source: --config,\n"
        "SANDBOX_E2B_CONFIG, E2B_* variables) and prints it normalized as JSON with the\n"
        "API key shown as \"[redacted]\". Exit 0 valid, 2 invalid (reasons on stderr).\n",
    .examples = "  sandbox-e2b config check deploy.json\n"
                "  E2B_API_KEY=e2b_... E2B_TEMPLATE=capybara-sandbox sandbox-e2b config check\n",
    .stop_after = -1,
    .min_pos = 0,
    .max_pos = 2,
    .complete = "check file",
    .run = config_run,
};
