/*
 * cli/cmd/mv.c: `sandbox-e2b mv ID FROM TO [--user root]`:
 * sbx_sandbox_rename (E2B's files.rename); exit 3 when FROM is missing.
 */
#include "command.h"
#include "shapes.h"

#include <stdio.h>

enum { OPT_USER = 1 };

static const cli_option mv_options[] = {
    {"user", 0, "USER", "act as USER: sandbox (default) or root", OPT_USER, "sandbox root"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int mv_run(cli *c, const cli_args *a)
{
	sbx_path_options o = SBX_PATH_OPTIONS_INIT;
	sbx_entry_info *e = NULL;
	sbx_error err = {0};
	int rc;

	for (size_t i = 0; i < a->nopts; i++)
		if ((rc = cli_opt_user(c, a->opts[i].value, &o.user)) != 0)
			return rc;
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_rename(&e, c->prov, a->pos[0], a->pos[1], a->pos[2], &o, c->sig,
	                             &err)) < 0)
		return cli_fail(c, rc, &err);
	if (!e) {
		if (c->json)
			cli_json_print(json_pack("{s:s,s:b}", "path", a->pos[1], "exists", 0));
		fprintf(stderr, "%s mv: %s: no such file or directory\n", c->prog, a->pos[1]);
		return CLI_EXIT_NOTFOUND;
	}
	if (c->json)
		cli_json_print(cli_shape_entry_info(e));
	sbx_entry_info_free(e);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_mv = {
    .name = "mv",
    .args = "ID FROM TO [--user root]",
    .summary = "rename a path; exit 3 when FROM is missing",
    .description =
        "Renames FROM to TO as the sandbox user unless --user root, with rename(2)'s\n"
        "meaning (E2B's files.rename): TO is replaced when it is a file or an empty\n"
        "directory, never moved into; TO's missing parents are made. Prints nothing on\n"
        "success; --json prints TO's entry as 'stat --long --json' does. A missing FROM\n"
        "exits 3.\n",
    .examples = "  sandbox-e2b mv \"$id\" /workspace/out.tmp /workspace/out\n",
    .options = mv_options,
    .stop_after = -1,
    .min_pos = 3,
    .max_pos = 3,
    .complete = "id path path",
    .run = mv_run,
};
