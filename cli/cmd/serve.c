/*
 * cli/cmd/serve.c: `sandbox-e2b serve`: hands stdin/stdout to the JSON-RPC
 * server in cli/rpc/ (bindings/protocol/methods.md).
 *
 * The deployment config comes from the CLI's usual sources when one is set
 * (--config, SANDBOX_E2B_CONFIG, E2B_API_KEY ...) and --config-from-initialize
 * is not given (the packages give it with a config of their own), else from
 * the first `initialize` request; a bad source is reported on stderr and the
 * server waits for initialize.
 */
#include "command.h"
#include "rpc/rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_MAX_LINE = 1, OPT_FROM_INITIALIZE };

static const cli_option serve_options_table[] = {
    {"max-line-bytes", 0, "N",
     "refuse a request line over N bytes without reading it\n(default 67108864)", OPT_MAX_LINE,
     NULL},
    {"config-from-initialize", 0, NULL,
     "read no config source at start: the config comes from\ninitialize (its missing keys "
     "from E2B_*)",
     OPT_FROM_INITIALIZE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int serve_cmd_run(cli *c, const cli_args *a)
{
	serve_options o = {0};
	char *json = NULL;
	bool from_initialize = false;
	uint64_t n;
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if (a->opts[i].id == OPT_FROM_INITIALIZE) {
			from_initialize = true;
			continue;
		}
		if ((rc = cli_opt_u64(c, "--max-line-bytes", a->opts[i].value, SERVE_MAX_LINE_MIN,
		                      SIZE_MAX / 4, &n)) != 0)
			return rc;
		o.max_line = (size_t)n;
	}
	if (!from_initialize && cli_have_credentials(c) && (rc = cli_config_json(c, &json)) != 0)
		return rc;
	o.config_json = json;
	/* the variables behind it, for the packages' "not configured" errors (with
	 * --config-from-initialize: those that fill initialize's config) */
	json_t *vars = cli_config_vars(c);
	o.config_vars = vars;
	o.envd_url = c->envd_url;
	o.verbose = c->verbose;
	o.stop = c->sig;
	o.in_fd = STDIN_FILENO;
	o.out_fd = STDOUT_FILENO;
	rc = serve_run(&o);
	json_decref(vars);
	free(json);
	return rc;
}

/* --help's list of methods, from the method table itself (rpc/methods.c), wrapped at 80. */
static void serve_help_methods(void)
{
	json_t *names = serve_method_names();
	size_t col = 2, i;
	json_t *v;

	printf("\nMethods (bindings/protocol/methods.md):\n ");
	json_array_foreach(names, i, v)
	{
		const char *n = json_string_value(v);
		size_t len = strlen(n) + (i + 1 < json_array_size(names)); /* the comma */
		if (col + 1 + len > 80) {
			printf("\n ");
			col = 2;
		}
		printf(" %s%s", n, i + 1 < json_array_size(names) ? "," : "");
		col += 1 + len;
	}
	printf("\n");
	json_decref(names);
}

const cli_command cli_cmd_serve = {
    .name = "serve",
    .args = "[--max-line-bytes N] [--config-from-initialize]",
    .summary = "JSON-RPC 2.0 on stdin/stdout for Node and Python hosts",
    .description = "JSON-RPC 2.0 on stdin/stdout, one JSON object per line (bindings/node,\n"
                   "bindings/python; bindings/protocol/methods.md). Calls run at once and answers\n"
                   "come in any order; $/cancelRequest {\"id\"} aborts one. EOF on stdin (or\n"
                   "SIGTERM) aborts the calls in flight, kills their remote commands and exits 0.\n"
                   "The config comes from --config / SANDBOX_E2B_CONFIG / E2B_API_KEY, or from an\n"
                   "initialize request, whose missing keys come from their E2B_* variables, as\n"
                   "for every command (see --config below). Logs go to stderr (or as log\n"
                   "notifications).\n",
    .help_more = serve_help_methods,
    .examples = "  printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"create\","
                "\"params\":{\"name\":\"conv-42\"}}' | sandbox-e2b serve\n",
    .options = serve_options_table,
    .stop_after = -1,
    .min_pos = 0,
    .max_pos = 0,
    .complete = "",
    .flags = 0,
    .run = serve_cmd_run,
};
