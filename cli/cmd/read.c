/*
 * cli/cmd/read.c: `sandbox-e2b read ID PATH`: sbx_sandbox_read_file.
 */
#include "command.h"
#include "shapes.h"

#include <errno.h>
#include <stdio.h>

#define READ_DEFAULT_MAX (16u * 1024 * 1024)

enum { OPT_MAX_BYTES = 1 };

static const cli_option read_options[] = {
    {"max-bytes", 0, "N", "read at most N bytes (default 16777216); more is cut and reported",
     OPT_MAX_BYTES, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int read_run(cli *c, const cli_args *a)
{
	size_t max = READ_DEFAULT_MAX;
	sbx_file *f = NULL;
	sbx_error err = {0};
	uint64_t n;
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if ((rc = cli_opt_u64(c, "--max-bytes", a->opts[i].value, 0, SIZE_MAX / 2, &n)) !=
		    0)
			return rc;
		max = (size_t)n;
	}
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_read_file(&f, c->prov, a->pos[0], a->pos[1], max, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (!f) {
		if (c->json)
			cli_json_print(cli_shape_file(a->pos[1], NULL));
		fprintf(stderr, "%s read: %s: no such file (or it is a directory)\n", c->prog,
		        a->pos[1]);
		return CLI_EXIT_NOTFOUND;
	}
	if (c->json) {
		cli_json_print(cli_shape_file(a->pos[1], f));
	} else {
		fwrite(f->data, 1, f->len, stdout);
		if (fflush(stdout) != 0) {
			char ebuf[128];
			int e = errno;
			sbx_file_free(f);
			fprintf(stderr,
			        "%s read: cannot write to stdout: %s; check the disk or the "
			        "program reading the pipe\n",
			        c->prog, cli_strerror(e, ebuf, sizeof(ebuf)));
			return CLI_EXIT_ERROR;
		}
		if (f->truncated)
			fprintf(stderr,
			        "%s read: %s is longer than %zu bytes; output truncated "
			        "(raise --max-bytes)\n",
			        c->prog, a->pos[1], max);
	}
	sbx_file_free(f);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_read = {
    .name = "read",
    .args = "ID PATH [--max-bytes N]",
    .summary = "print a file's bytes; exit 3 when missing",
    .description =
        "Writes the file's raw bytes to stdout (as the sandbox user). At most N bytes\n"
        "(default 16777216); a longer file is cut and reported on stderr. A missing path\n"
        "or a directory exits 3.\n",
    .examples = "  sandbox-e2b exec \"$id\" 'echo done > /workspace/report.txt'\n"
                "  sandbox-e2b read \"$id\" /workspace/report.txt > report.txt\n"
                "  sandbox-e2b read \"$id\" /workspace/report.txt --json   # content or "
                "content_b64\n",
    .options = read_options,
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id path",
    .run = read_run,
};
