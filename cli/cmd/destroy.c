/*
 * cli/cmd/destroy.c: `sandbox-e2b destroy ID` (sbx_sandbox_destroy) and
 * `destroy-by-name NAME` (sbx_sandbox_destroy_by_name).
 */
#include "command.h"

static int destroy_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_destroy(c->prov, a->pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	return cli_done_ok(c, a->pos[0], "destroyed (or it was already gone)");
}

static int destroy_by_name_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_destroy_by_name(c->prov, a->pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s}", "ok", 1, "name", a->pos[0]));
	else
		fprintf(stderr, "destroyed every sandbox with that name (if any)\n");
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_destroy = {
    .name = "destroy",
    .args = "ID",
    .summary = "delete a sandbox",
    .description = "Deletes the sandbox and everything in it. A missing sandbox is success.\n",
    .examples = "  sandbox-e2b destroy \"$id\"\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = destroy_run,
};

const cli_command cli_cmd_destroy_by_name = {
    .name = "destroy-by-name",
    .args = "NAME",
    .summary = "delete every sandbox named NAME",
    .description =
        "Deletes every sandbox (running or paused) whose name is NAME. None is success.\n",
    .examples = "  sandbox-e2b destroy-by-name conv-42\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "name",
    .flags = CLI_CMD_PROVIDER,
    .run = destroy_by_name_run,
};
