/*
 * cli/cmd/list.c: `sandbox-e2b list`: sbx_sandbox_list.
 */
#include "command.h"
#include "shapes.h"

#include <stdio.h>
#include <string.h>

enum { OPT_NAME = 1, OPT_STATE };

static const cli_option list_options[] = {
    {"name", 0, "NAME", "only sandboxes with this name", OPT_NAME, NULL},
    {"state", 0, "STATE", "running or paused (default both)", OPT_STATE, "running paused"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int list_run(cli *c, const cli_args *a)
{
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	sbx_error err = {0};
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		const char *v = a->opts[i].value;
		if (a->opts[i].id == OPT_NAME)
			lo.name = v;
		else if (strcmp(v, "running") == 0)
			lo.state = SBX_STATE_RUNNING;
		else if (strcmp(v, "paused") == 0)
			lo.state = SBX_STATE_PAUSED;
		else
			return cli_usage_error(c, "--state must be running or paused, got '%s'", v);
	}
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_list(&l, c->prov, &lo, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json) {
		cli_json_print(cli_shape_info_list(l));
	} else {
		printf("%-24s %-24s %-8s %s\n", "ID", "NAME", "STATE", "STARTED");
		for (size_t i = 0; i < l->count; i++) {
			json_t *o = cli_shape_sandbox_info(&l->items[i]);
			const char *started =
			    o ? json_string_value(json_object_get(o, "started_at")) : NULL;
			printf("%-24s %-24s %-8s %s\n", l->items[i].id,
			       l->items[i].name ? l->items[i].name : "-",
			       cli_shape_state_name(l->items[i].state), started ? started : "-");
			json_decref(o);
		}
	}
	sbx_info_list_free(l);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_list = {
    .name = "list",
    .args = "[--name NAME] [--state running|paused]",
    .summary = "list this deployment's sandboxes",
    .description =
        "Lists the sandboxes made by create (those carrying a name), running and paused,\n"
        "all pages, newest first: ID, NAME, STATE and start time (UTC). With --json an\n"
        "array of {\"id\",\"name\",\"state\",\"template_id\",\"started_at\",\"end_at\"}.\n",
    .examples = "  sandbox-e2b list\n"
                "  sandbox-e2b list --state paused --json | jq -r '.[].id'\n"
                "  sandbox-e2b list --name conv-42\n",
    .options = list_options,
    .stop_after = -1,
    .min_pos = 0,
    .max_pos = 0,
    .run = list_run,
};
