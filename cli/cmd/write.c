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
#include <stdlib.h>
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

/*
 * write ID PATH FILE PATH FILE...: every FILE read (at most the library's total), then one
 * sbx_sandbox_write_files (one upload, one in-sandbox step).
 */
static int write_many(cli *c, const cli_args *a)
{
	size_t n = (a->npos - 1) / 2, total = 0;
	sbx_write_entry *f = calloc(n, sizeof(*f));
	char **data = calloc(n, sizeof(*data)), ebuf[128];
	sbx_error err = {0};
	int rc = 0;

	if (!f || !data) {
		rc = cli_oom(c);
		goto done;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *local = a->pos[2 + 2 * i];
		size_t len = 0;
		int e = cli_read_file(local, &data[i], &len, SBX_WRITE_FILES_MAX_BYTES - total);
		if (e < 0) {
			rc =
			    cli_usage_error(c, "cannot read '%s': %s", local,
			                    e == -EFBIG ? "more than 64 MiB in all (write them one "
			                                  "by one, which streams)"
			                                : cli_strerror(-e, ebuf, sizeof(ebuf)));
			break;
		}
		total += len;
		f[i] = (sbx_write_entry){a->pos[1 + 2 * i], data[i], len};
	}
	if (rc == 0 && (rc = cli_provider(c)) == 0) {
		if ((rc = sbx_sandbox_write_files(c->prov, a->pos[0], f, n, NULL, c->sig, &err)) <
		    0)
			rc = cli_fail(c, rc, &err);
		else if (c->json)
			cli_json_print(json_pack("{s:b,s:I,s:I}", "ok", 1, "files", (json_int_t)n,
			                         "bytes", (json_int_t)total));
		else
			fprintf(stderr, "wrote %zu files, %zu bytes\n", n, total);
	}
done:
	for (size_t i = 0; data && i < n; i++)
		free(data[i]);
	free(data);
	free(f);
	return rc;
}

static int write_run(cli *c, const cli_args *a)
{
	const char *src = a->npos == 3 ? a->pos[2] : "-";
	write_source s = {.fd = STDIN_FILENO};
	sbx_error err = {0};
	char ebuf[128];
	int rc;

	if (a->npos > 3 && a->npos % 2 == 0)
		return cli_usage_error(c,
		                       "write takes ID PATH [FILE], or ID PATH FILE PATH FILE...: "
		                       "'%s' has no FILE",
		                       a->pos[a->npos - 1]);
	if (a->npos > 3)
		return write_many(c, a);

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
    .args = "ID PATH [FILE|-] | ID PATH FILE PATH FILE...",
    .summary = "write a file from FILE or stdin, or several files in one upload",
    .description =
        "Writes FILE (or stdin when FILE is '-' or absent) to PATH as the sandbox user,\n"
        "creating parent directories; under /skills it writes as root, mode 0644. The\n"
        "bytes stream with bounded memory, whatever the size. With several PATH FILE\n"
        "pairs (E2B's files.write([...])) the files go in one upload and are written in\n"
        "order by one step in the sandbox; 64 MiB in all at most; the first that cannot\n"
        "be written stops the rest (the ones before it stay written).\n",
    .examples = "  printf 'int main(void) { return 0; }\\n' > main.c\n"
                "  sandbox-e2b write \"$id\" /workspace/main.c main.c\n"
                "  echo 'hello' | sandbox-e2b write \"$id\" /workspace/hello.txt\n"
                "  sandbox-e2b write \"$id\" /workspace/a.c a.c /workspace/b.c b.c\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = CLI_MAX_POS,
    .complete = "id path file",
    .run = write_run,
};
