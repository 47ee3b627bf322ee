/*
 * cli/main.c: entry point of sandbox-e2b: the abort signal and its
 * SIGINT/SIGTERM handlers, the global options, finding the command in the
 * table, the setup its flags ask for, running it, freeing.
 *
 * SIGINT and SIGTERM abort the run's signal (sbx_signal_abort is
 * async-signal-safe): the library stops the call, killing a remote command,
 * and the tool exits 128 + the signal (130 for Ctrl-C). SA_RESETHAND makes a
 * second Ctrl-C end the tool at once.
 */
#include "command.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/*
 * A closed stdin, stdout or stderr becomes /dev/null, so no descriptor the
 * library opens (sockets, eventfds) is ever taken for one of them: `exec -i`
 * with stdin closed then reads EOF, not a socket.
 */
static void open_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
			break;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Run one command: its words are argv[0..argc), argv[0] its name. */
static int run_command(cli *c, const cli_command *cmd, int argc, char **argv)
{
	cli_args *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return cli_oom(c);
	c->cmd = cmd->name;
	if ((rc = cli_opt_parse(a, c, argc, argv, cmd->options, cmd->stop_after)) != 0)
		goto done;
	if (a->help) {
		cli_command_help(cmd);
		goto done;
	}
	if (a->npos < cmd->min_pos)
		rc = cli_usage_error(c, "missing argument: expected %s", cmd->args);
	else if (a->npos > cmd->max_pos)
		rc = cli_usage_error(c, "unexpected argument '%s' (expected %s)",
		                     a->pos[cmd->max_pos], cmd->args);
	else {
		/* an ID argument may be a name: cli_provider() resolves it (resolve.c) */
		if (cmd->complete && strncmp(cmd->complete, "id", 2) == 0 &&
		    (cmd->complete[2] == ' ' || cmd->complete[2] == '\0') && a->npos >= 1)
			c->resolve = &a->pos[0];
		if (!(cmd->flags & CLI_CMD_PROVIDER) || (rc = cli_provider(c)) == 0)
			rc = cmd->run(c, a);
		c->resolve = NULL;
	}
done:
	free(a);
	return rc;
}

static int run(cli *c, int argc, char **argv)
{
	const cli_command *cmd;
	cli_args *g;
	int rc, ci;

	if (argc > 1 && strcmp(argv[1], "__complete") == 0)
		return cli_complete(argc - 2, argv + 2);
	if (!(g = calloc(1, sizeof(*g))))
		return cli_oom(c);
	/* Global options up to the command word; everything from it on is the command's. */
	if ((rc = cli_opt_parse(g, c, argc, argv, NULL, 0)) != 0)
		goto done;
	if (g->npos == 0) {
		if (g->version)
			printf("sandbox-e2b %s\n", sbx_version());
		else if (g->help || argc == 1)
			/* No arguments at all: usage on stderr, exit 2 (docs/cli.md "Exit codes").
			 */
			cli_usage(argc == 1 ? stderr : stdout);
		else
			rc = cli_usage_error(c, "missing COMMAND");
		if (argc == 1)
			rc = CLI_EXIT_USAGE;
		goto done;
	}
	ci = argc - (int)g->npos; /* the command word's index */
	if (strcmp(argv[ci], "help") == 0) {
		if (g->npos == 1)
			cli_usage(stdout);
		else if ((cmd = cli_command_find(argv[ci + 1])))
			cli_command_help(cmd);
		else
			rc = cli_usage_error(c, "unknown command '%s'", argv[ci + 1]);
		goto done;
	}
	if (!(cmd = cli_command_find(argv[ci]))) {
		const char *hint = cli_command_suggest(argv[ci]);
		if (hint && !strchr(hint, ' '))
			rc = cli_usage_error(c, "unknown command '%s'; did you mean '%s'?",
			                     argv[ci], hint);
		else if (hint) /* another tool's verb: what it is called here */
			rc = cli_usage_error(c, "unknown command '%s'; here that is: %s", argv[ci],
			                     hint);
		else
			rc = cli_usage_error(c, "unknown command '%s'", argv[ci]);
	} else
		rc = run_command(c, cmd, argc - ci, argv + ci);
done:
	free(g);
	return rc;
}

int main(int argc, char **argv)
{
	cli c = {.prog = "sandbox-e2b"};
	int rc;

	open_std_fds();
	if (sbx_signal_new(&c.sig) < 0) {
		fprintf(stderr, "sandbox-e2b: cannot create the abort signal (out of memory or "
		                "file descriptors)\n");
		return CLI_EXIT_ERROR;
	}
	abort_sig = c.sig;
	/* E2B_SANDBOX_URL is the official SDK's name; SANDBOX_E2B_ENVD_URL ours (it wins). */
	c.envd_url =
	    env("SANDBOX_E2B_ENVD_URL") ? env("SANDBOX_E2B_ENVD_URL") : env("E2B_SANDBOX_URL");
	c.verbose = env("E2B_DEBUG") && strcasecmp(env("E2B_DEBUG"), "true") == 0;
	/* Known before parsing, so even an early usage error prints its JSON object. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			c.json_early = true;
	install_handlers();
	rc = run(&c, argc, argv);
	fflush(stdout);
	sbx_provider_free(c.prov);
	free(c.resolved_id);
	sbx_e2b_config_free(c.cfg);
	/* Handlers stay installed but will see a NULL signal from here on. */
	abort_sig = NULL;
	sbx_signal_free(c.sig);
	return rc;
}
