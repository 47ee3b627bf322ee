/*
 * cli/cmd/resume.c: `sandbox-e2b resume ID`: sbx_sandbox_resume.
 */
#include "command.h"
#include "shapes.h"

#include <stdio.h>

static int resume_run(cli *c, const cli_args *a)
{
	sbx_resume_status st;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_resume(&st, c->prov, a->pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(cli_shape_resume(a->pos[0], st));
	else if (st == SBX_RESUMED)
		printf("resumed\n");
	else
		fprintf(stderr,
		        "gone: sandbox %s no longer exists; create a new one with "
		        "'%s create NAME'\n",
		        a->pos[0], c->prog);
	return st == SBX_RESUMED ? CLI_EXIT_OK : CLI_EXIT_NOTFOUND;
}

const cli_command cli_cmd_resume = {
    .name = "resume",
    .args = "ID",
    .summary = "resume (connect) a sandbox; exit 3 when it is gone",
    .description = "Resumes a paused sandbox or extends a running one's timeout. Prints 'resumed'\n"
                   "(exit 0), or says the sandbox is gone (exit 3).\n",
    .examples = "  sandbox-e2b resume \"$id\" || sandbox-e2b create conv-42\n",
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .flags = CLI_CMD_PROVIDER,
    .run = resume_run,
};
