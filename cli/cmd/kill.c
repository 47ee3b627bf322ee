/*
 * cli/cmd/kill.c: `sandbox-e2b kill ID PID` (sbx_process_kill_pid),
 * `kill-all ID` (sbx_sandbox_kill_all) and `kill-tagged ID TAG...`
 * (sbx_sandbox_kill_tagged).
 */
#include "command.h"

#include <stdio.h>

static int kill_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	uint64_t pid;
	int rc;

	if ((rc = cli_opt_u64(c, "PID", a->pos[1], 1, UINT32_MAX, &pid)) != 0)
		return rc;
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_process_kill_pid(c->prov, a->pos[0], (uint32_t)pid, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(
		    json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->pos[0], "pid", (json_int_t)pid));
	else
		fprintf(stderr, "killed (or it was not running)\n");
	return CLI_EXIT_OK;
}

static int kill_all_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_kill_all(c->prov, a->pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	return cli_done_ok(c, a->pos[0], "killed");
}

static int kill_tagged_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_kill_tagged(c->prov, a->pos[0], a->pos + 1, a->npos - 1, c->sig,
	                                  &err)) < 0)
		return cli_fail_tags(c, rc, &err, a->pos + 1, a->npos - 1);
	return cli_done_ok(c, a->pos[0], "killed");
}

const cli_command cli_cmd_kill = {
    .name = "kill",
    .args = "ID PID",
    .summary = "kill one command and everything it started",
    .description = "Kills the command with that pid (from 'exec --background' or 'ps'): its whole\n"
                   "process tree when it was started through exec, else the pid alone (SIGKILL).\n"
                   "A pid that is not running is success.\n",
    .examples = "  pid=$(sandbox-e2b exec --background \"$id\" sleep 300)\n"
                "  sandbox-e2b kill \"$id\" \"$pid\"\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id pid",
    .run = kill_run,
};

const cli_command cli_cmd_kill_all = {
    .name = "kill-all",
    .args = "ID",
    .summary = "kill every command started through exec",
    .description = "Kills every command started through exec that is still running in the sandbox\n"
                   "(a paused sandbox is resumed first).\n",
    .examples = "  sandbox-e2b kill-all \"$id\"\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = kill_all_run,
};

const cli_command cli_cmd_kill_tagged = {
    .name = "kill-tagged",
    .args = "ID TAG...",
    .summary = "kill the commands started with one of the tags",
    .description = "Kills only the running commands that exec started with --tag TAG.\n"
                   "TAG: ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$.\n",
    .examples = "  sandbox-e2b exec \"$id\" --tag bg -- sleep 300 &\n"
                "  sandbox-e2b kill-tagged \"$id\" bg\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = CLI_MAX_POS,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = kill_tagged_run,
};
