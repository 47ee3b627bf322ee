/*
 * cli/cmd/host.c: `sandbox-e2b host ID PORT`: sbx_sandbox_host, the URL of a
 * port of the sandbox (E2B's getHost).
 */
#include "command.h"

#include <stdio.h>

static int host_run(cli *c, const cli_args *a)
{
	sbx_host *h = NULL;
	sbx_error err = {0};
	uint64_t port;
	int rc;

	if ((rc = cli_opt_u64(c, "PORT", a->pos[1], 1, 65535, &port)) != 0)
		return rc;
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_host(&h, c->prov, a->pos[0], (unsigned)port, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json) {
		cli_json_print(json_pack("{s:s,s:s,s:I,s:s?}", "url", h->url, "hostname",
		                         h->hostname, "port", (json_int_t)port, "traffic_token",
		                         h->traffic_token));
	} else {
		printf("%s\n", h->url);
		if (h->traffic_token)
			fprintf(stderr,
			        "%s host: this sandbox takes only traffic with the header %s; "
			        "--json prints it (traffic_token)\n",
			        c->prog, SBX_TRAFFIC_TOKEN_HEADER);
	}
	sbx_host_free(h);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_host = {
    .name = "host",
    .args = "ID PORT",
    .summary = "print the URL of a port of the sandbox",
    .description =
        "Prints https://PORT-ID.DOMAIN, where E2B's proxy reaches PORT inside the sandbox\n"
        "(a server there must listen on 0.0.0.0 or [::], not only 127.0.0.1). A paused\n"
        "sandbox is resumed. A sandbox made with private traffic also has a traffic\n"
        "token, sent as the header e2b-traffic-access-token: --json prints it\n"
        "(traffic_token; null for public traffic, as every sandbox create makes).\n",
    .examples = "  sandbox-e2b exec --background \"$id\" 'python3 -m http.server 8000'\n"
                "  curl \"$(sandbox-e2b host \"$id\" 8000)/\"\n",
    .stop_after = -1,
    .min_pos = 2,
    .max_pos = 2,
    .complete = "id",
    .run = host_run,
};
