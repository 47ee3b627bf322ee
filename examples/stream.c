/*
 * examples/stream.c: streamed exec with stdin. Runs a command in a new
 * sandbox, printing its stdout and stderr as they arrive (not at the end),
 * and with -i feeds this program's own stdin to the command.
 *
 *   ./stream [-i] [COMMAND]
 *   printf 'b\na\n' | ./stream -i sort
 *
 * Default command: three lines one second apart. Configuration as in
 * examples/hello.c (SANDBOX_E2B_CONFIG, SANDBOX_E2B_ENVD_URL).
 * Build (installed library):  cc stream.c $(pkg-config --cflags --libs sandbox-e2b)
 */
#include <sandbox.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Called on this thread as output arrives: write it through at once. */
static int on_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	FILE *f = stream == SBX_STREAM_STDOUT ? stdout : stderr;
	(void)payload;
	fwrite(data, 1, len, f);
	fflush(f);
	return 0;
}

/* Pulled on this thread until it gives 0 bytes: the command then reads EOF. */
static int read_stdin(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	ssize_t n;
	(void)payload;
	do
		n = read(STDIN_FILENO, buf, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1; /* stops the exec with SBX_EUSER */
	*len_out = (size_t)n;
	return 0;
}

static int fail(const char *what, const sbx_error *err)
{
	fprintf(stderr, "stream: %s failed: %s (%s)\n", what, err->message,
	        sbx_error_code_name(err->code));
	return 1;
}

int main(int argc, char **argv)
{
	const char *json = getenv("SANDBOX_E2B_CONFIG");
	const char *command = "for i in 1 2 3; do echo line $i; sleep 1; done";
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_exec_options exec = SBX_EXEC_OPTIONS_INIT;
	sbx_limits limits = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	sbx_exec_result res = {0};
	sbx_e2b_config *cfg = NULL;
	sbx_provider *p = NULL;
	sbx_error err = {0};
	char *id = NULL;
	int rc = 1, argi = 1;

	if (!json) {
		fprintf(stderr, "stream: set SANDBOX_E2B_CONFIG to the deployment config JSON\n");
		return 2;
	}
	if (argi < argc && strcmp(argv[argi], "-i") == 0) {
		exec.stdin_read = read_stdin;
		argi++;
	}
	if (argi < argc)
		command = argv[argi];
	exec.on_output = on_output;
	opts.envd_url = getenv("SANDBOX_E2B_ENVD_URL");
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &err) < 0) {
		rc = fail("config", &err);
		goto done;
	}
	if (sbx_e2b_provider_new(&p, cfg, &opts, &err) < 0) {
		rc = fail("provider", &err);
		goto done;
	}
	if (sbx_sandbox_create(&id, p, "stream-example", &limits, NULL, &err) < 0) {
		rc = fail("create", &err);
		goto done;
	}
	/* the output was printed by on_output already; res holds the same bytes */
	if (sbx_sandbox_exec(&res, p, id, command, &exec, NULL, &err) < 0) {
		rc = fail("exec", &err);
		goto done;
	}
	rc = res.has_exit_code ? res.exit_code : 1;
done:
	sbx_error_clear(&err);
	if (id && sbx_sandbox_destroy(p, id, NULL, &err) < 0)
		fail("destroy", &err);
	sbx_exec_result_free(&res);
	sbx_free(id);
	sbx_provider_free(p);
	sbx_e2b_config_free(cfg);
	return rc;
}
