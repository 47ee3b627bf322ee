/*
 * cli/cmd/suspend.c: `sandbox-e2b suspend ID`: sbx_sandbox_suspend.
 */
#include "command.h"

static int suspend_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_suspend(c->prov, a->pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	/* The contract reports a missing sandbox as success: say only what is known. */
	return cli_done_ok(c, a->pos[0], "suspended (or it was already paused or gone)");
}

const cli_command cli_cmd_suspend = {
    .name = "suspend",
    .args = "ID",
    .summary = "pause a sandbox (files and processes are kept)",
    .description =
        "Pauses the sandbox; memory, processes and files are kept until resume. A missing\n"
        "or already paused sandbox is success.\n",
    .examples = "  sandbox-e2b suspend \"$id\"\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = suspend_run,
};
