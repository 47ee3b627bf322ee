/*
 * cli/cmd/mkdir.c: `sandbox-e2b mkdir ID PATH [--user root]`:
 * sbx_sandbox_make_dir (E2B's files.makeDir: parents made, an existing
 * directory is success).
 */
#include "command.h"

#include <stdio.h>

enum { OPT_USER = 1 };

static const cli_option mkdir_options[] = {
    {"user", 0, "USER", "act as USER: sandbox (default) or root", OPT_USER, "sandbox root"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int mkdir_run(cli *c, const cli_args *a)
{
	sbx_path_options o = SBX_PATH_OPTIONS_INIT;
	sbx_error err = {0};
	bool created = false;
	int rc;

	for (size_t i = 0; i < a->nopts; i++)
		if ((rc = cli_opt_user(c, a->opts[i].value, &o.user)) != 0)
			return rc;
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_make_dir(&created, c->prov, a->pos[0], a->pos[1], &o, c->sig, &err)) <
	    0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(json_pack("{s:s,s:b}", "path", a->pos[1], "created", created));
	else if (!created)
		fprintf(stderr, "%s mkdir: %s already exists\n", c->prog, a->pos[1]);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_mkdir = {
    .name = "mkdir",
    .args = "ID PATH [--user root]",
    .summary = "make a directory and its parents",
    .description = "Makes directory PATH and its missing parents (mkdir -p), owned by the sandbox\n"
                   "user unless --user root. A directory already there is success, said on stderr\n"
                   "(\"created\": false with --json); a file in the way is an error.\n",
    .examples = "  sandbox-e2b mkdir \"$id\" /workspace/out/logs\n"
                "  sandbox-e2b mkdir \"$id\" /workspace/out --json   # {\"path\",\"created\"}\n",
    .options = mkdir_options,
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .run = mkdir_run,
};
