/*
 * cli/cmd/stat.c: `sandbox-e2b stat ID PATH`: sbx_sandbox_stat (the
 * contract's size and type); with --long, sbx_sandbox_path_info (E2B's
 * EntryInfo: lstat's type, size, mode, owner, group, mtime, symlink target).
 */
#include "command.h"
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { OPT_LONG = 1, OPT_USER };

static const cli_option stat_options[] = {
    {"long", 'l', NULL, "every field of the entry (lstat: a symlink is not followed)", OPT_LONG,
     NULL},
    {"user", 0, "USER", "with --long: act as USER, sandbox (default) or root", OPT_USER,
     "sandbox root"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void print_long(const sbx_entry_info *e)
{
	json_t *j = cli_shape_entry_info(e);
	const char *mtime = j ? json_string_value(json_object_get(j, "mtime")) : NULL;

	printf("path: %s\ntype: %s\nsize: %" PRIu64 "\nmode: %04o (%s)\nowner: %s\ngroup: %s\n"
	       "mtime: %s\n",
	       e->path, cli_shape_entry_type_name(e->type), e->size, e->mode, e->permissions,
	       e->owner, e->group, mtime ? mtime : "?");
	if (e->symlink_target)
		printf("target: %s\n", e->symlink_target);
	json_decref(j);
}

static int stat_long(cli *c, const cli_args *a, const sbx_path_options *o)
{
	sbx_entry_info *e = NULL;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_sandbox_path_info(&e, c->prov, a->pos[0], a->pos[1], o, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (!e) {
		if (c->json)
			cli_json_print(json_pack("{s:s,s:b}", "path", a->pos[1], "exists", 0));
		fprintf(stderr, "%s stat: %s: no such file or directory\n", c->prog, a->pos[1]);
		return CLI_EXIT_NOTFOUND;
	}
	if (c->json)
		cli_json_print(cli_shape_entry_info(e));
	else
		print_long(e);
	sbx_entry_info_free(e);
	return CLI_EXIT_OK;
}

static int stat_run(cli *c, const cli_args *a)
{
	sbx_path_options o = SBX_PATH_OPTIONS_INIT;
	bool lng = false, user = false;
	sbx_stat st;
	sbx_error err = {0};
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if (a->opts[i].id == OPT_LONG) {
			lng = true;
		} else {
			if ((rc = cli_opt_user(c, a->opts[i].value, &o.user)) != 0)
				return rc;
			user = true;
		}
	}
	if (user && !lng)
		return cli_usage_error(c, "--user goes with --long (the plain stat is the "
		                          "contract's, as the sandbox user)");
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if (lng)
		return stat_long(c, a, &o);
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
    .args = "ID PATH [--long [--user root]]",
    .summary = "print a path's size and type (--long: every field); exit 3 when missing",
    .description = "Prints 'file N bytes' or 'directory N bytes' (the contract's stat, as the\n"
                   "sandbox user; a symlink is followed). With --long (-l) prints E2B's entry\n"
                   "information, one 'field: value' a line: path, type (file, dir, symlink,\n"
                   "other), size, mode (octal and as envd writes it), owner, group, mtime (RFC\n"
                   "3339 UTC) and target for a symlink; a symlink is described, not followed;\n"
                   "--user root acts as root. A missing path exits 3.\n",
    .examples = "  sandbox-e2b stat \"$id\" /workspace --json\n"
                "  sandbox-e2b stat \"$id\" /workspace/link --long\n",
    .options = stat_options,
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .run = stat_run,
};
