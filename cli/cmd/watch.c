/*
 * cli/cmd/watch.c: `sandbox-e2b watch ID PATH [--recursive] [--user root]`:
 * sbx_sandbox_watch_dir, one line per event until Ctrl-C (docs/watch.md).
 */
#include "command.h"

#include <stdio.h>
#include <string.h>

#include "shapes.h"

enum { OPT_USER = 1, OPT_RECURSIVE };

static const cli_option watch_options[] = {
    {"recursive", 'r', NULL, "also the directories below PATH", OPT_RECURSIVE, NULL},
    {"user", 0, "USER", "watch as USER: sandbox (default) or root", OPT_USER, "sandbox root"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int watch_run(cli *c, const cli_args *a)
{
	sbx_watch_options o = SBX_WATCH_OPTIONS_INIT;
	sbx_watch *w = NULL;
	sbx_watch_event e;
	sbx_error err = {0};
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if (a->opts[i].id == OPT_RECURSIVE)
			o.recursive = true;
		else if ((rc = cli_opt_user(c, a->opts[i].value, &o.user)) != 0)
			return rc;
	}
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_watch_dir(&w, c->prov, a->pos[0], a->pos[1], &o, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (!c->json)
		fprintf(stderr, "watching %s%s (Ctrl-C ends)\n", a->pos[1],
		        o.recursive ? " and below" : "");
	for (;;) {
		memset(&err, 0, sizeof(err));
		rc = sbx_watch_next(&e, w, UINT64_MAX, c->sig, &err);
		if (rc == SBX_EABORTED) {
			rc = cli_abort_exit();
			break;
		}
		if (rc < 0) {
			rc = cli_fail(c, rc, &err);
			break;
		}
		if (c->json) {
			json_t *o2 =
			    json_pack("{s:s,s:s}", "op", sbx_watch_op_name(e.op), "name", "");
			if (o2)
				cli_shape_bytes(o2, "name", (const unsigned char *)e.name,
				                strlen(e.name));
			cli_json_print(o2);
		} else {
			printf("%s %s\n", sbx_watch_op_name(e.op), e.name);
		}
		fflush(stdout);
		sbx_watch_event_dispose(&e);
	}
	sbx_watch_free(w);
	return rc;
}

const cli_command cli_cmd_watch = {
    .name = "watch",
    .args = "ID PATH [--recursive] [--user root]",
    .summary = "print what happens in a directory, one event a line, until Ctrl-C",
    .description =
        "Watches directory PATH (E2B's files.watchDir: envd's WatchDir stream) and prints\n"
        "one line per event as it happens: OP NAME, OP one of create, write, remove,\n"
        "rename, chmod, NAME relative to PATH (sub/x.txt with --recursive). PATH must be\n"
        "a directory the user (sandbox, or root with --user root) may list. With --json,\n"
        "one object per event and line: {\"op\",\"name\"}. Ends with Ctrl-C (exit 130) or\n"
        "when the stream does (the sandbox paused or went: exit 1).\n",
    .examples = "  sandbox-e2b watch \"$id\" /workspace --recursive\n"
                "  sandbox-e2b watch \"$id\" /workspace/out --json | jq -r .name\n",
    .options = watch_options,
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .run = watch_run,
};
