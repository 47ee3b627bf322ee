/*
 * cli/cmd/rm.c: `sandbox-e2b rm ID PATH [--user root]`: sbx_sandbox_remove
 * (E2B's files.remove: recursive, a missing path is success).
 */
#include "command.h"

enum { OPT_USER = 1 };

static const cli_option rm_options[] = {
    {"user", 0, "USER", "act as USER: sandbox (default) or root", OPT_USER, "sandbox root"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int rm_run(cli *c, const cli_args *a)
{
	sbx_path_options o = SBX_PATH_OPTIONS_INIT;
	sbx_error err = {0};
	int rc;

	for (size_t i = 0; i < a->nopts; i++)
		if ((rc = cli_opt_user(c, a->opts[i].value, &o.user)) != 0)
			return rc;
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_remove(c->prov, a->pos[0], a->pos[1], &o, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s}", "ok", 1, "path", a->pos[1]));
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_rm = {
    .name = "rm",
    .args = "ID PATH [--user root]",
    .summary = "remove a file or a directory tree (a missing path is success)",
    .description =
        "Removes PATH and, when it is a directory, everything under it (rm -rf), as the\n"
        "sandbox user unless --user root; a symlink is removed, not followed. A missing\n"
        "path is success, as in E2B. \"/\" is refused. Prints nothing on success.\n",
    .examples = "  sandbox-e2b rm \"$id\" /workspace/build\n"
                "  sandbox-e2b rm \"$id\" /etc/motd --user root\n",
    .options = rm_options,
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .run = rm_run,
};
