/*
 * cli/main.c: entry point of sandbox-e2b: global options, dispatch to a
 * subcommand, Ctrl-C handling and the top-level --help.
 *
 * SIGINT and SIGTERM abort the run's signal (sbx_signal_abort is
 * async-signal-safe): the library stops the call, killing a remote command,
 * and the tool exits 128 + the signal (130 for Ctrl-C). SA_RESETHAND makes a
 * second Ctrl-C end the tool at once.
 */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sbx_signal *volatile abort_sig;

static void on_signal(int signo)
{
	cli_signo = signo;
	sbx_signal_abort(abort_sig);
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed stdout (e.g. `| head`) is an error on write, not a silent death. */
	sa.sa_handler = SIG_IGN;
	sa.sa_flags = 0;
	sigaction(SIGPIPE, &sa, NULL);
}

/* The top-level help: on stdout for --help, on stderr (exit 2) when no command is given. */
static void print_usage(FILE *f)
{
	fprintf(f, "sandbox-e2b %s: sandbox@1 on E2B from the command line\n\n", sbx_version());
	fprintf(f, "Usage: sandbox-e2b [--json] [--config FILE] COMMAND [ARGS...]\n"
	           "       sandbox-e2b COMMAND --help\n\nCommands:\n");
	for (size_t i = 0; i < cli_ncommands; i++)
		fprintf(f, "  %-16s %s\n", cli_commands[i].name, cli_commands[i].summary);
	fprintf(
	    f,
	    "\n"
	    "Configuration (first found wins):\n"
	    "  --config FILE          deployment config JSON: "
	    "{\"apiKey\",\"template\",\"apiUrl\",\n"
	    "                         \"domain\",\"timeoutSeconds\",\"domainAllowlist\",\n"
	    "                         \"allowOpenEgress\"}\n"
	    "  SANDBOX_E2B_CONFIG     the same JSON in an environment variable\n"
	    "  E2B_API_KEY            with E2B_TEMPLATE (or --template), E2B_API_URL, E2B_DOMAIN\n"
	    "  --envd-url URL         envd address for self-hosted or local envd\n"
	    "                         (or SANDBOX_E2B_ENVD_URL)\n"
	    "\n"
	    "Common options: --json (one JSON object on stdout), --template T, -h/--help,\n"
	    "  -v (also the library's debug/info log lines; warnings always show).\n"
	    "\n"
	    "Exit codes: 0 ok; 1 error (the message says what to do next); 2 usage error or\n"
	    "  invalid config; 3 not found (resume: gone, read/stat: no such path);\n"
	    "  exec: the command's own exit code, 124 timeout, 125 killed by an unknown\n"
	    "  signal; 130 interrupted by Ctrl-C (143 by SIGTERM).\n"
	    "\n"
	    "Examples:\n"
	    "  sandbox-e2b demo                       # no account needed: runs a local fake-e2b\n"
	    "  export E2B_API_KEY=e2b_... E2B_TEMPLATE=capybara-sandbox\n"
	    "  id=$(sandbox-e2b create conv-42)\n"
	    "  sandbox-e2b exec \"$id\" -- 'uname -a && ls /workspace'\n"
	    "  sandbox-e2b destroy \"$id\"\n");
}

/* Index of the subcommand word in argv, skipping global options (and their values). */
static int find_command(int argc, char **argv)
{
	static const char *const with_value[] = {"--config", "--template", "--envd-url",
	                                         "--fake-e2b"};
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-')
			return i;
		for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
			if (strcmp(argv[i], with_value[k]) == 0)
				i++;
	}
	return -1;
}

static bool has_flag(int argc, char **argv, const char *a, const char *b)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], a) == 0 || (b && strcmp(argv[i], b) == 0))
			return true;
	return false;
}

static int run(cli *c, int argc, char **argv)
{
	int ci = find_command(argc, argv), rc;
	char **rest;
	int nrest = 0;

	if (ci < 0) {
		if (has_flag(argc, argv, "--version", NULL)) {
			printf("sandbox-e2b %s\n", sbx_version());
			return 0;
		}
		if (argc > 1 && !has_flag(argc, argv, "--help", "-h"))
			return cli_usage_error(c, "missing COMMAND");
		/* No arguments at all: usage on stderr, exit 2 (docs/cli.md "Exit codes"). */
		print_usage(argc > 1 ? stdout : stderr);
		return argc > 1 ? 0 : CLI_EXIT_USAGE;
	}
	if (strcmp(argv[ci], "help") == 0) {
		if (ci + 1 >= argc) {
			print_usage(stdout);
			return 0;
		}
		c->cmd = argv[ci + 1];
		for (size_t i = 0; i < cli_ncommands; i++)
			if (strcmp(cli_commands[i].name, c->cmd) == 0)
				return cli_print_help(c);
		c->cmd = NULL;
		return cli_usage_error(c, "unknown command '%s'", argv[ci + 1]);
	}
	for (size_t i = 0; i < cli_ncommands; i++) {
		if (strcmp(cli_commands[i].name, argv[ci]) != 0)
			continue;
		c->cmd = cli_commands[i].name;
		/* The subcommand sees every word but its own name. */
		if (!(rest = calloc((size_t)argc, sizeof(*rest))))
			return cli_oom(c);
		for (int k = 1; k < argc; k++)
			if (k != ci)
				rest[nrest++] = argv[k];
		rc = cli_commands[i].run(c, nrest, rest);
		free(rest);
		return rc;
	}
	return cli_usage_error(c, "unknown command '%s'", argv[ci]);
}

int main(int argc, char **argv)
{
	cli c = {.prog = "sandbox-e2b"};
	int rc;

	if (sbx_signal_new(&c.sig) < 0) {
		fprintf(stderr, "sandbox-e2b: cannot create the abort signal (out of memory or "
		                "file descriptors)\n");
		return CLI_EXIT_ERROR;
	}
	abort_sig = c.sig;
	if (getenv("SANDBOX_E2B_ENVD_URL") && *getenv("SANDBOX_E2B_ENVD_URL"))
		c.envd_url = getenv("SANDBOX_E2B_ENVD_URL");
	/* Known before parsing, so even an early usage error prints its JSON object. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			c.json = true;
	install_handlers();
	rc = run(&c, argc, argv);
	fflush(stdout);
	sbx_provider_free(c.prov);
	sbx_e2b_config_free(c.cfg);
	/* Handlers stay installed but will see a NULL signal from here on. */
	abort_sig = NULL;
	sbx_signal_free(c.sig);
	return rc;
}
