/*
 * cli/cmd/stat.c: `sandbox-e2b stat ID PATH`: sbx_sandbox_stat.
 */
#include "command.h"
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>

static int stat_run(cli *c, const cli_args *a)
{
	sbx_stat st;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_stat(&st, c->prov, a->pos[0], a->pos[1], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(cli_shape_stat(a->pos[1], &st));
	else if (!st.exists)
		fprintf(stderr, "%s stat: %s: no such file or directory\n", c->prog, a->pos[1]);
	else if (st.is_dir)
		printf("directory %" PRIu64 " bytes\n", st.size);
	else
		printf("file %" PRIu64 " bytes\n", st.size);
	return st.exists ? CLI_EXIT_OK : CLI_EXIT_NOTFOUND;
}

const cli_command cli_cmd_stat = {
    .name = "stat",
    .args = "ID PATH",
    .summary = "print a path's size and type; exit 3 when missing",
    .description = "Prints 'file N bytes' or 'directory N bytes' (as the sandbox user); a missing\n"
                   "path exits 3.\n",
    .examples = "  sandbox-e2b stat \"$id\" /workspace --json\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .flags = CLI_CMD_PROVIDER,
    .run = stat_run,
};
