/*
 * cli/cmd/wait.c: `sandbox-e2b wait ID PID`: sbx_process_attach +
 * sbx_process_wait: follow a running command (e.g. one started with
 * `exec --background`) to its end, printing its output as it arrives.
 */
#include "command.h"
#include "shapes.h"
#include "stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { OPT_MAX_OUTPUT = 1 };

static const cli_option wait_options[] = {
    {"max-output-bytes", 0, "N", "budget of stdout + stderr together (default 1048576)",
     OPT_MAX_OUTPUT, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int wait_run(cli *c, const cli_args *a)
{
	sbx_process_options po = SBX_PROCESS_OPTIONS_INIT;
	cli_stream st = {.c = c};
	sbx_exec_result r = {0};
	sbx_process *h = NULL;
	sbx_error err = {0};
	uint64_t n, pid;
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if ((rc = cli_opt_u64(c, "--max-output-bytes", a->opts[i].value, 0, SIZE_MAX / 2,
		                      &n)) != 0)
			return rc;
		po.max_output_bytes = (size_t)n;
	}
	if ((rc = cli_opt_u64(c, "PID", a->pos[1], 1, UINT32_MAX, &pid)) != 0)
		return rc;
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if (!c->json) {
		po.on_output = cli_stream_output;
		po.output_payload = &st;
	}
	if ((rc = sbx_process_attach(&h, c->prov, a->pos[0], (uint32_t)pid, &po, c->sig, &err)) <
	    0) {
		if (rc == SBX_EHTTP && strcmp(err.e2b_code, "not_found") == 0) {
			/* a missing process is "not found", as a missing sandbox or path is */
			(void)cli_fail_hint(c, rc, &err,
			                    "no command with that pid is running (it may have "
			                    "ended more than 30 s ago); list them with "
			                    "'sandbox-e2b ps ID'");
			return CLI_EXIT_NOTFOUND;
		}
		return cli_fail(c, rc, &err);
	}
	rc = sbx_process_wait(&r, h, c->sig, &err);
	sbx_process_free(h); /* the command goes on if the wait was interrupted */
	if (rc == SBX_EABORTED) {
		fprintf(stderr,
		        "%s wait: interrupted; the command goes on (kill it with '%s kill %s "
		        "%" PRIu64 "')\n",
		        c->prog, c->prog, a->pos[0], pid);
		sbx_exec_result_free(&r);
		return cli_abort_exit();
	}
	if (rc < 0) {
		sbx_exec_result_free(&r);
		if (rc == SBX_EUSER && st.write_errno == EPIPE)
			return CLI_EXIT_PIPE; /* e.g. `| head` */
		if (rc == SBX_EUSER && st.write_errno) {
			char ebuf[128];
			fprintf(stderr,
			        "%s wait: cannot write the output: %s; the command was killed\n",
			        c->prog, cli_strerror(st.write_errno, ebuf, sizeof(ebuf)));
			return CLI_EXIT_ERROR;
		}
		return cli_fail(c, rc, &err);
	}
	if (c->json)
		cli_json_print(cli_shape_exec_result(&r));
	else if (r.truncated)
		fprintf(stderr, "%s wait: output truncated (raise --max-output-bytes)\n", c->prog);
	if (!c->json && r.timed_out)
		fprintf(stderr, "%s wait: the command timed out and was killed (exit 124)\n",
		        c->prog);
	rc = r.aborted          ? cli_abort_exit()
	     : r.timed_out      ? CLI_EXIT_TIMEOUT
	     : !r.has_exit_code ? CLI_EXIT_NOCODE
	                        : r.exit_code;
	sbx_exec_result_free(&r);
	return rc;
}

const cli_command cli_cmd_wait = {
    .name = "wait",
    .args = "ID PID [--max-output-bytes N]",
    .summary = "follow a running command to its end; exits with its exit code",
    .description =
        "Attaches to the command with that pid (from 'exec --background' or 'ps'), prints\n"
        "its output from now on as it arrives (earlier output is not kept by envd) and\n"
        "exits with its exit code, as exec does. A command that ended less than 30 s\n"
        "ago still gives its exit code. Ctrl-C stops waiting; the command goes on.\n",
    .examples = "  pid=$(sandbox-e2b exec --background \"$id\" 'sleep 2; echo done')\n"
                "  sandbox-e2b wait \"$id\" \"$pid\"          # prints done, exit 0\n",
    .options = wait_options,
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id pid",
    .run = wait_run,
};
