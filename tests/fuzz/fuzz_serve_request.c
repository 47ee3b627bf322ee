/*
 * fuzz_serve_request: what a host sends `sandbox-e2b serve`: the bytes go
 * through the line reader (cli/rpc/wire.c, over a pipe, with a small cap so
 * the over-the-cap path runs too), and each line through the JSON-RPC request
 * parser and the method's params parser (cli/rpc/dispatch.c, methods.c),
 * which send nothing and call no library function. Every refusal must give a
 * well-formed error response; nothing may crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc/rpc.h"

/* cli/output.c's, without the rest of the CLI. */
const char *cli_lib_message(const char *msg);
const char *cli_lib_message(const char *msg)
{
	return strncmp(msg, "sandbox-e2b: ", 13) == 0 ? msg + 13 : msg;
}

static void one_line(const char *line, size_t len)
{
	serve_request rq;
	serve_args a;
	serve_fail f;

	serve_request_parse(&rq, line, len);
	if (rq.kind < 0 && rq.error) {
		char *s = json_dumps(rq.error, JSON_COMPACT);
		if (!s || !strstr(s, "\"code\":-32"))
			abort();
		free(s);
	}
	if (rq.kind == 0) {
		memset(&a, 0, sizeof(a));
		memset(&f, 0, sizeof(f));
		if (rq.method->parse(rq.params, &a, &f) < 0) {
			json_t *e = serve_error_object(&f);
			if (!e || f.rpc_code > -32000 || !f.message[0])
				abort();
			json_decref(e);
		}
		serve_args_free(&a);
	}
	serve_request_free(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	serve_reader r;
	const char *line;
	size_t len;
	int fds[2], rc;

	one_line((const char *)data, size);
	/* The framing: at most one pipe buffer, so the write never blocks. */
	if (size > 60000 || pipe(fds) < 0)
		return 0;
	if (size && write(fds[1], data, size) != (ssize_t)size)
		abort();
	close(fds[1]);
	wire_reader_init(&r, fds[0], -1, SERVE_MAX_LINE_MIN);
	while ((rc = wire_read_line(&r, &line, &len)) != WIRE_EOF) {
		if (rc == WIRE_ERROR)
			abort();
		if (rc == WIRE_LINE && (len > SERVE_MAX_LINE_MIN || memchr(line, '\n', len)))
			abort();
		if (rc == WIRE_LINE)
			one_line(line, len);
	}
	wire_reader_free(&r);
	close(fds[0]);
	return 0;
}
