/*
 * cli/cmd/read.c: `sandbox-e2b read ID PATH`: sbx_sandbox_read_file_to, so a
 * file of any size streams to stdout with bounded memory; --max-bytes N stops
 * after N bytes and says so (stderr, and "truncated" with --json).
 */
#include "command.h"
#include "progress.h"
#include "shapes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_MAX_BYTES = 1 };

static const cli_option read_options[] = {
    {"max-bytes", 0, "N", "read at most N bytes; more is cut and reported (default: all)",
     OPT_MAX_BYTES, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* Where the bytes go: stdout as they come, or memory for --json. */
typedef struct read_sink {
	bool to_memory;
	unsigned char *buf;
	size_t len, cap;
	int write_errno;
	bool oom;
	uint64_t bytes;
	cli_progress prog;
} read_sink;

static int sink(const unsigned char *data, size_t len, void *payload)
{
	read_sink *s = payload;

	s->bytes += len;
	cli_progress_update(&s->prog, s->bytes);

	if (s->to_memory) {
		if (s->len + len > s->cap) {
			size_t cap = s->cap ? s->cap : 65536;
			unsigned char *nb;
			while (cap < s->len + len)
				cap *= 2;
			if (!(nb = realloc(s->buf, cap))) {
				s->oom = true;
				return 1;
			}
			s->buf = nb;
			s->cap = cap;
		}
		memcpy(s->buf + s->len, data, len);
		s->len += len;
		return 0;
	}
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->write_errno = n < 0 ? errno : EIO;
			return 1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The read into `s`, with its progress on a terminal (progress.h). */
static int read_to_sink(cli *c, const cli_args *a, read_sink *s, const sbx_file_options *fo,
                        sbx_read_result *rr, sbx_error *err)
{
	char what[96];
	int rc;

	snprintf(what, sizeof(what), "read %.80s", a->pos[1]);
	/* not when the bytes go to that same terminal: the line would garble them */
	cli_progress_init(&s->prog, c, what, 0, isatty(STDOUT_FILENO));
	rc = sbx_sandbox_read_file_to(rr, c->prov, a->pos[0], a->pos[1], sink, s, fo, c->sig, err);
	cli_progress_done(&s->prog);
	return rc;
}

static int read_run(cli *c, const cli_args *a)
{
	sbx_file_options fo = SBX_FILE_OPTIONS_INIT;
	read_sink s = {.to_memory = c->json};
	sbx_read_result rr = {0};
	sbx_error err = {0};
	char ebuf[128];
	bool capped = false;
	uint64_t n;
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if ((rc = cli_opt_u64(c, "--max-bytes", a->opts[i].value, 0, SIZE_MAX / 2, &n)) !=
		    0)
			return rc;
		fo.max_bytes = n;
		capped = true;
	}
	if ((rc = cli_provider(c)) != 0)
		return rc;
	rc = read_to_sink(c, a, &s, &fo, &rr, &err);
	if (rc == SBX_EUSER && s.write_errno == EPIPE) {
		rc = CLI_EXIT_PIPE; /* e.g. `| head`: the reader has all it wanted */
		goto done;
	}
	if (rc == SBX_EUSER && s.write_errno) {
		fprintf(
		    stderr,
		    "%s read: cannot write to stdout: %s; check the disk or the program reading "
		    "the pipe\n",
		    c->prog, cli_strerror(s.write_errno, ebuf, sizeof(ebuf)));
		rc = CLI_EXIT_ERROR;
		goto done;
	}
	if (rc == SBX_EUSER && s.oom) {
		rc = cli_oom(c);
		goto done;
	}
	if (rc < 0) {
		rc = cli_fail(c, rc, &err);
		goto done;
	}
	if (!rr.found) {
		/* the contract says only "none" for both: one stat, on this path alone, tells */
		sbx_stat st = {0};
		sbx_error serr = {0};
		int src = sbx_sandbox_stat(&st, c->prov, a->pos[0], a->pos[1], c->sig, &serr);
		if (c->json)
			cli_json_print(cli_shape_file(a->pos[1], NULL));
		if (src == 0 && st.exists && st.is_dir)
			fprintf(stderr,
			        "%s read: %s is a directory; list it with 'sandbox-e2b ls %s %s'\n",
			        c->prog, a->pos[1], a->pos[0], a->pos[1]);
		else if (src == 0)
			fprintf(stderr, "%s read: %s: no such file\n", c->prog, a->pos[1]);
		else
			fprintf(stderr, "%s read: %s: no such file, or a directory\n", c->prog,
			        a->pos[1]);
		rc = CLI_EXIT_NOTFOUND;
		goto done;
	}
	if (c->json) {
		sbx_file f = {s.buf ? s.buf : (unsigned char *)"", s.len, rr.truncated};
		cli_json_print(cli_shape_file(a->pos[1], &f));
	}
	if (rr.truncated && capped)
		fprintf(stderr,
		        "%s read: %s is longer than %" PRIu64 " bytes; output truncated (raise "
		        "--max-bytes)\n",
		        c->prog, a->pos[1], fo.max_bytes);
	rc = CLI_EXIT_OK;
done:
	free(s.buf);
	return rc;
}

const cli_command cli_cmd_read = {
    .name = "read",
    .args = "ID PATH [--max-bytes N]",
    .summary = "print a file's bytes; exit 3 when missing",
    .description =
        "Writes the file's raw bytes to stdout as they arrive (as the sandbox user), with\n"
        "bounded memory whatever its size. With --max-bytes N at most N bytes; a longer\n"
        "file is cut and that is said on stderr (and as \"truncated\" with --json). A\n"
        "missing path or a directory exits 3.\n",
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
