/*
 * cli/cmd/info.c: `sandbox-e2b info ID`: sbx_sandbox_get_info.
 */
#include "command.h"
#include "shapes.h"

#include <stdio.h>

static int info_run(cli *c, const cli_args *a)
{
	sbx_sandbox_info *info = NULL;
	sbx_error err = {0};
	json_t *o;
	int rc;

	if ((rc = sbx_sandbox_get_info(&info, c->prov, a->pos[0], c->sig, &err)) < 0) {
		if (rc != SBX_EGONE)
			return cli_fail(c, rc, &err);
		cli_fail_hint(c, rc, &err,
		              "no sandbox with that id; list them with 'sandbox-e2b list'");
		return CLI_EXIT_NOTFOUND;
	}
	o = cli_shape_sandbox_info(info);
	sbx_sandbox_info_free(info);
	if (!o)
		return cli_oom(c);
	if (c->json) {
		cli_json_print(o);
		return CLI_EXIT_OK;
	}
	static const char *const keys[] = {"id",          "name",       "state",
	                                   "template_id", "started_at", "end_at"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = json_string_value(json_object_get(o, keys[i]));
		printf("%-12s %s\n", keys[i], v && *v ? v : "-");
	}
	json_decref(o);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_info = {
    .name = "info",
    .args = "ID",
    .summary = "describe one sandbox; exit 3 when it does not exist",
    .description =
        "Prints the sandbox's id, name, state (running or paused), template and its start\n"
        "and end times (UTC; end: when a running sandbox times out and is paused, or when\n"
        "a paused one was paused). A paused sandbox stays paused. No such sandbox: exit 3.\n",
    .examples = "  sandbox-e2b info \"$id\"\n"
                "  sandbox-e2b info \"$id\" --json | jq -r .state\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = info_run,
};
