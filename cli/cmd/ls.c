/*
 * cli/cmd/ls.c: `sandbox-e2b ls ID PATH`: sbx_sandbox_list_dir.
 */
#include "command.h"
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int ls_run(cli *c, const cli_args *a)
{
	static const char type_char[] = {'?', '-', 'd', 'l', '?'};
	sbx_dir *d = NULL;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_list_dir(&d, c->prov, a->pos[0], a->pos[1], c->sig, &err)) < 0) {
		/* a file: the library's data says so (docs/files.md), never the message */
		if (rc == SBX_ESANDBOX && strcmp(err.e2b_code, "invalid_argument") == 0)
			return cli_fail_hint(
			    c, rc, &err,
			    "read a file with 'sandbox-e2b read ID PATH', or give ls "
			    "its directory");
		return cli_fail(c, rc, &err);
	}
	if (!d) {
		if (c->json)
			cli_json_print(json_pack("{s:s,s:b}", "path", a->pos[1], "exists", 0));
		fprintf(stderr, "%s ls: %s: no such file or directory\n", c->prog, a->pos[1]);
		return CLI_EXIT_NOTFOUND;
	}
	if (c->json) {
		cli_json_print(cli_shape_dir(a->pos[1], d));
	} else {
		for (size_t i = 0; i < d->count; i++) {
			const sbx_dir_entry *e = &d->entries[i];
			printf("%c %12" PRIu64 " %s%s\n", type_char[e->type <= 4 ? e->type : 0],
			       e->size, e->name, e->type == SBX_ENTRY_DIR ? "/" : "");
		}
		if (d->truncated)
			fprintf(stderr, "%s ls: more than %d entries; only the first were listed\n",
			        c->prog, SBX_DIR_MAX_ENTRIES);
	}
	sbx_dir_free(d);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_ls = {
    .name = "ls",
    .args = "ID PATH",
    .summary = "list a directory; exit 3 when missing",
    .description =
        "Lists the entries of directory PATH as the sandbox user, sorted by name, one a\n"
        "line: type (- file, d directory, l symlink, ? other), size in bytes, name\n"
        "(directories end in /). A missing path exits 3; a file is an error.\n",
    .examples = "  sandbox-e2b ls \"$id\" /workspace\n"
                "  sandbox-e2b ls \"$id\" /workspace --json | jq -r '.entries[].name'\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .flags = CLI_CMD_PROVIDER,
    .run = ls_run,
};
