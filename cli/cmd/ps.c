/*
 * cli/cmd/ps.c: `sandbox-e2b ps ID`: sbx_process_list.
 */
#include "command.h"
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>

static int ps_run(cli *c, const cli_args *a)
{
	sbx_process_info_list *l = NULL;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_process_list(&l, c->prov, a->pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json) {
		cli_json_print(cli_shape_process_list(a->pos[0], l));
	} else {
		printf("%-8s %-16s %s\n", "PID", "TAG", "COMMAND");
		for (size_t i = 0; i < l->count; i++) {
			const sbx_process_info *p = &l->items[i];
			printf("%-8" PRIu32 " %-16s ", p->pid, p->tag ? p->tag : "-");
			if (p->command) {
				printf("%s\n", p->command);
				continue;
			}
			printf("%s", p->cmd ? p->cmd : "");
			for (size_t k = 0; k < p->nargs; k++)
				printf(" %s", p->args[k]);
			printf("\n");
		}
	}
	sbx_process_info_list_free(l);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_ps = {
    .name = "ps",
    .args = "ID",
    .summary = "list the commands running in a sandbox",
    .description =
        "Lists the commands envd runs in the sandbox (every client's): PID, TAG and the\n"
        "command (the shell text for commands started through exec). A paused sandbox\n"
        "is resumed first.\n",
    .examples = "  sandbox-e2b ps \"$id\"\n"
                "  sandbox-e2b ps \"$id\" --json | jq '.processes[].pid'\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = ps_run,
};
