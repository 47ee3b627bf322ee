/*
 * cli/cmd/write.c: `sandbox-e2b write ID PATH [FILE|-]`: sbx_sandbox_write_file.
 */
#include "command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WRITE_MAX ((size_t)1 << 30)

static int write_run(cli *c, const cli_args *a)
{
	const char *src = a->npos == 3 ? a->pos[2] : "-";
	sbx_error err = {0};
	char *data = NULL, ebuf[128];
	size_t len = 0;
	int rc;

	if (strcmp(src, "-") == 0 && isatty(STDIN_FILENO))
		fprintf(stderr, "%s write: reading the contents from stdin (end with Ctrl-D)\n",
		        c->prog);
	if ((rc = cli_read_file(src, &data, &len, WRITE_MAX)) < 0)
		return cli_usage_error(c, "cannot read '%s': %s", src,
		                       rc == -EFBIG ? "larger than 1 GiB"
		                                    : cli_strerror(-rc, ebuf, sizeof(ebuf)));
	if ((rc = cli_provider(c)) != 0)
		goto done;
	if ((rc = sbx_sandbox_write_file(c->prov, a->pos[0], a->pos[1], data, len, c->sig, &err)) <
	    0) {
		rc = cli_fail(c, rc, &err);
		goto done;
	}
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a->pos[1], "bytes",
		                         (json_int_t)len));
	else
		fprintf(stderr, "wrote %zu bytes to %s\n", len, a->pos[1]);
	rc = CLI_EXIT_OK;
done:
	free(data);
	return rc;
}

const cli_command cli_cmd_write = {
    .name = "write",
    .args = "ID PATH [FILE|-]",
    .summary = "write a file from FILE or stdin",
    .description =
        "Writes FILE (or stdin when FILE is '-' or absent) to PATH as the sandbox user,\n"
        "creating parent directories; under /skills it writes as root, mode 0644.\n",
    .examples = "  printf 'int main(void) { return 0; }\\n' > main.c\n"
                "  sandbox-e2b write \"$id\" /workspace/main.c main.c\n"
                "  echo 'hello' | sandbox-e2b write \"$id\" /workspace/hello.txt\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 3,
    .complete = "id path file",
    .run = write_run,
};
