/*
 * cli/cmd/set_timeout.c: `sandbox-e2b set-timeout ID DURATION`:
 * sbx_sandbox_set_timeout (E2B's POST /sandboxes/{id}/timeout, which may
 * shorten the sandbox's life).
 */
#include "command.h"

#include <inttypes.h>
#include <stdio.h>

static int set_timeout_run(cli *c, const cli_args *a)
{
	sbx_error err = {0};
	uint64_t ms, secs;
	int rc;

	if ((rc = cli_opt_duration_ms(c, "DURATION", a->pos[1], 0,
	                              (uint64_t)SBX_MAX_TIMEOUT_SECONDS * 1000, &ms)) != 0)
		return rc;
	secs = ms / 1000 + (ms % 1000 != 0);
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_set_timeout(c->prov, a->pos[0], secs, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s,s:I}", "ok", 1, "id", a->pos[0],
		                         "timeout_seconds", (json_int_t)secs));
	else if (secs == 0)
		fprintf(stderr, "the sandbox ends now (it is paused; a later call resumes it)\n");
	else
		fprintf(stderr, "the sandbox now ends in %" PRIu64 " s\n", secs);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_set_timeout = {
    .name = "set-timeout",
    .args = "ID DURATION",
    .summary = "end the sandbox DURATION from now (shorter or longer)",
    .description =
        "Sets the sandbox's end to now + DURATION exactly (E2B's setTimeout): it may\n"
        "shorten its life. DURATION: 0 to 24h (30s, 5m, 2h; a fraction of a second\n"
        "rounds up; 0 ends it now). A paused sandbox is resumed first. At its end it is\n"
        "paused (autoPause, as every sandbox this tool creates). A later exec or file\n"
        "command connects and extends it again to the config's timeoutSeconds.\n",
    .examples = "  sandbox-e2b set-timeout \"$id\" 10m\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id",
    .run = set_timeout_run,
};
