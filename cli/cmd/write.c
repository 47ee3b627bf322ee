/*
 * cli/cmd/write.c: `sandbox-e2b write ID PATH [FILE|-]`:
 * sbx_sandbox_write_file_from, streaming FILE (or stdin) with bounded memory.
 */
#include "command.h"
#include "progress.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct write_source {
	int fd;
	uint64_t bytes;
	int read_errno;
	cli_progress prog;
} write_source;

static int source(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	write_source *s = payload;
	ssize_t n;

	do
		n = read(s->fd, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		s->read_errno = errno;
		return 1;
	}
	*len_out = (size_t)n;
	s->bytes += (uint64_t)n;
	cli_progress_update(&s->prog, s->bytes);
	return 0;
}

static int write_run(cli *c, const cli_args *a)
{
	const char *src = a->npos == 3 ? a->pos[2] : "-";
	write_source s = {.fd = STDIN_FILENO};
	sbx_error err = {0};
	char ebuf[128];
	int rc;

	if (strcmp(src, "-") != 0 && (s.fd = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return cli_usage_error(c, "cannot read '%s': %s", src,
		                       cli_strerror(errno, ebuf, sizeof(ebuf)));
	if (strcmp(src, "-") == 0 && isatty(STDIN_FILENO))
		fprintf(stderr, "%s write: reading the contents from stdin (end with Ctrl-D)\n",
		        c->prog);
	if ((rc = cli_provider(c)) != 0)
		goto done;
	struct stat st;
	char what[96];
	snprintf(what, sizeof(what), "write %.80s", a->pos[1]);
	cli_progress_init(&s.prog, c, what,
	                  fstat(s.fd, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0,
	                  false);
	rc = sbx_sandbox_write_file_from(c->prov, a->pos[0], a->pos[1], source, &s, NULL, c->sig,
	                                 &err);
	cli_progress_done(&s.prog);
	if (rc == SBX_EUSER && s.read_errno) {
		fprintf(stderr, "%s write: cannot read '%s': %s; %s was not written\n", c->prog,
		        src, cli_strerror(s.read_errno, ebuf, sizeof(ebuf)), a->pos[1]);
		rc = CLI_EXIT_ERROR;
		goto done;
	}
	if (rc < 0) {
		rc = cli_fail(c, rc, &err);
		goto done;
	}
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a->pos[1], "bytes",
		                         (json_int_t)s.bytes));
	else
		fprintf(stderr, "wrote %" PRIu64 " bytes to %s\n", s.bytes, a->pos[1]);
	rc = CLI_EXIT_OK;
done:
	if (s.fd != STDIN_FILENO)
		close(s.fd);
	return rc;
}

const cli_command cli_cmd_write = {
    .name = "write",
    .args = "ID PATH [FILE|-]",
    .summary = "write a file from FILE or stdin",
    .description =
        "Writes FILE (or stdin when FILE is '-' or absent) to PATH as the sandbox user,\n"
        "creating parent directories; under /skills it writes as root, mode 0644. The\n"
        "bytes stream with bounded memory, whatever the size.\n",
    .examples = "  printf 'int main(void) { return 0; }\\n' > main.c\n"
                "  sandbox-e2b write \"$id\" /workspace/main.c main.c\n"
                "  echo 'hello' | sandbox-e2b write \"$id\" /workspace/hello.txt\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 3,
    .complete = "id path file",
    .run = write_run,
};
