/*
 * cli/cmd/exec.c: `sandbox-e2b exec ID COMMAND...`: sbx_sandbox_exec with
 * live output (and stdin with -i), or sbx_process_start with --background.
 */
#include "command.h"
#include "command_fields.h"
#include "shapes.h"
#include "stream.h"
#include "tty.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_MAX_TIMEOUT_MS (7ull * 24 * 3600 * 1000) /* a week */

enum {
	OPT_CWD = 1,
	OPT_ENV,
	OPT_TIMEOUT,
	OPT_MAX_OUTPUT,
	OPT_TAG,
	OPT_STDIN,
	OPT_BACKGROUND,
	OPT_USER,
	OPT_TTY
};

static const cli_option exec_options[] = {
    {"cwd", 0, "DIR", "working directory (default /workspace)", OPT_CWD, NULL},
    {"env", 0, "K=V", "environment variable; repeat for more", OPT_ENV, NULL},
    {"timeout-ms", 0, "DURATION",
     "kill the command after this long (default 60s;\n1500ms, 5s, 2m, 1h or a bare number "
     "of ms)",
     OPT_TIMEOUT, NULL},
    {"max-output-bytes", 0, "N",
     "budget of stdout + stderr together (default 1048576);\nmore is cut at a UTF-8 boundary "
     "and reported",
     OPT_MAX_OUTPUT, NULL},
    {"tag", 0, "T", "tag the command for kill-tagged", OPT_TAG, NULL},
    {"user", 0, "USER",
     "run as USER: sandbox (default) or root (HOME=/root);\nkill-all and kill-tagged do not "
     "reach a root command",
     OPT_USER, "sandbox root"},
    {"stdin", 'i', NULL,
     "forward this tool's stdin to the command (as docker exec -i);\nwithout it stdin is not "
     "read and the command reads EOF",
     OPT_STDIN, NULL},
    {"tty", 't', NULL,
     "run the command on a terminal in the sandbox (as docker exec -t);\nwith -i this "
     "terminal goes raw and every key goes there; no COMMAND:\nthe user's login shell",
     OPT_TTY, NULL},
    {"background", 0, NULL,
     "start the command, print its pid and return; see wait, kill,\nps (--timeout-ms still "
     "bounds it)",
     OPT_BACKGROUND, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct exec_state {
	sbx_exec_options o;
	bool background;
	bool stdin_fwd; /* -i */
	bool tty;       /* -t */
	bool timeout_given, max_output_given;
	bool env_shifted; /* -t put TERM first in env (env_keys is not shifted) */
	sbx_env_var env[CLI_MAX_OPTS];
	char *env_keys[CLI_MAX_OPTS];
} exec_state;

static int exec_opt(cli *c, exec_state *s, int id, const char *v)
{
	uint64_t n;
	const char *eq;
	int rc;

	switch (id) {
	case OPT_CWD:
		s->o.cwd = v;
		return 0;
	case OPT_ENV:
		if (!(eq = strchr(v, '=')) || eq == v)
			return cli_usage_error(c, "--env needs KEY=VALUE, got '%s'", v);
		if (!(s->env_keys[s->o.env_count] = strndup(v, (size_t)(eq - v))))
			return cli_oom(c);
		s->env[s->o.env_count].key = s->env_keys[s->o.env_count];
		s->env[s->o.env_count].value = eq + 1;
		s->o.env_count++;
		return 0;
	case OPT_TIMEOUT:
		if ((rc = cli_opt_duration_ms(c, "--timeout-ms", v, 1, EXEC_MAX_TIMEOUT_MS, &n)) !=
		    0)
			return rc;
		s->o.timeout_ms = n;
		s->timeout_given = true;
		return 0;
	case OPT_MAX_OUTPUT:
		if ((rc = cli_opt_u64(c, "--max-output-bytes", v, 0, SIZE_MAX / 2, &n)) != 0)
			return rc;
		s->o.max_output_bytes = (size_t)n;
		s->max_output_given = true;
		return 0;
	case OPT_TAG:
		s->o.tag = v;
		return 0;
	case OPT_STDIN:
		s->stdin_fwd = true;
		return 0;
	case OPT_BACKGROUND:
		s->background = true;
		return 0;
	case OPT_USER:
		return cli_opt_user(c, v, &s->o.user);
	case OPT_TTY:
		s->tty = true;
		return 0;
	}
	return 0;
}

/* The command: the words after ID, joined with spaces (as ssh does). malloc'd. */
static char *join_command(const cli_args *a)
{
	size_t len = 0;
	char *cmd, *p;

	for (size_t i = 1; i < a->npos; i++)
		len += strlen(a->pos[i]) + 1;
	if (!(cmd = malloc(len + 1)))
		return NULL;
	p = cmd;
	for (size_t i = 1; i < a->npos; i++) {
		size_t n = strlen(a->pos[i]);
		if (i > 1)
			*p++ = ' ';
		memcpy(p, a->pos[i], n);
		p += n;
	}
	*p = '\0';
	return cmd;
}

static int exec_exit_code(const sbx_exec_result *r)
{
	if (r->aborted)
		return cli_abort_exit();
	if (r->timed_out)
		return CLI_EXIT_TIMEOUT;
	if (!r->has_exit_code)
		return CLI_EXIT_NOCODE;
	return r->exit_code;
}

static void exec_report(cli *c, const sbx_exec_result *r, const exec_state *s)
{
	if (c->json) {
		cli_json_print(cli_shape_exec_result(r));
		return;
	}
	/* The output itself was written as it arrived (cli_stream_output). */
	if (r->truncated)
		fprintf(stderr,
		        "%s exec: output truncated to %zu bytes (raise --max-output-bytes)\n",
		        c->prog, s->o.max_output_bytes);
	if (r->timed_out)
		fprintf(stderr,
		        "%s exec: command timed out after %" PRIu64 " ms and was "
		        "killed (exit 124; raise --timeout-ms)\n",
		        c->prog, s->o.timeout_ms);
	else if (r->aborted)
		fprintf(stderr, "%s exec: interrupted; the command was killed\n", c->prog);
	else if (!r->has_exit_code)
		fprintf(stderr, "%s exec: the command was killed by an unknown signal (exit 125)\n",
		        c->prog);
}

/* --background: start, print the pid, let the command run on (bounded by its backstop). */
static int exec_background(cli *c, const cli_args *a, const char *cmd, const exec_state *s)
{
	sbx_process_options po = cli_process_options_of(&s->o);
	sbx_process *h = NULL;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_process_start(&h, c->prov, a->pos[0], cmd, &po, c->sig, &err)) < 0)
		return s->o.tag ? cli_fail_tags(c, rc, &err, &s->o.tag, 1) : cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(cli_shape_process_started(a->pos[0], sbx_process_pid(h)));
	else
		printf("%" PRIu32 "\n", sbx_process_pid(h));
	fflush(stdout);
	sbx_process_free(h); /* does not kill it */
	return CLI_EXIT_OK;
}

/*
 * -i: the command runs as a background command whose stdin a thread feeds
 * from ours (cli_stdin_pump), while this thread waits for it: so the tool
 * returns as soon as the command ends, whether or not stdin reached EOF.
 * Ctrl-C stops the wait and kills the command (as exec's abort does).
 */
static int exec_interactive(cli *c, const char *id, const char *cmd, const exec_state *s,
                            cli_stream *st, sbx_exec_result *r, sbx_error *err)
{
	sbx_process_options po = cli_process_options_of(&s->o);
	cli_stdin_pump pump = {0};
	sbx_process *h = NULL;
	sbx_error kerr = {0};
	int rc;

	po.stdin_open = true;
	if (!c->json) {
		po.on_output = cli_stream_output;
		po.output_payload = st;
	}
	if ((rc = sbx_process_start(&h, c->prov, id, cmd, &po, c->sig, err)) < 0)
		return rc;
	if (cli_stdin_pump_start(&pump, c, h) < 0) {
		(void)sbx_process_kill(h, NULL, &kerr);
		sbx_process_free(h);
		*err = (sbx_error){.code = SBX_EINTERNAL};
		snprintf(err->message, sizeof(err->message), "cannot start the stdin thread");
		return SBX_EINTERNAL;
	}
	rc = sbx_process_wait(r, h, c->sig, err);
	if (rc == SBX_EABORTED) {
		/* Ctrl-C: kill the command, then its result says aborted. */
		(void)sbx_process_kill(h, NULL, &kerr);
		*err = (sbx_error){0};
		rc = sbx_process_wait(r, h, NULL, err);
	}
	cli_stdin_pump_stop(&pump);
	sbx_process_free(h);
	if (pump.read_errno) {
		char ebuf[128];
		fprintf(stderr, "%s exec: cannot read stdin: %s; the command got EOF\n", c->prog,
		        cli_strerror(pump.read_errno, ebuf, sizeof(ebuf)));
	}
	return rc;
}

/*
 * A failed exec. In human mode the output that arrived before the failure was
 * already printed; with --json a stream that ended without an exit status
 * (SBX_EPROTOCOL) prints the output so far with the error:
 * {"error":{...},"exit_code":null,"stdout",...} (docs/cli.md "Errors and --json").
 */
static int exec_fail(cli *c, int rc, const sbx_error *err, const exec_state *s,
                     const cli_stream *st, const sbx_exec_result *r)
{
	char ebuf[128];

	if (rc == SBX_EPROTOCOL && c->json && (r->stdout_len || r->stderr_len)) {
		json_t *o = cli_shape_exec_result(r);
		bool json = c->json;
		if (o)
			json_object_set_new(o, "error",
			                    cli_shape_error(rc, err, NULL, cli_hint(c, rc, err)));
		c->json = false; /* the messages on stderr only; the one object is ours */
		rc = cli_fail(c, rc, err);
		c->json = json;
		cli_json_print(o);
		return rc;
	}

	if (rc == SBX_EUSER && st->write_errno == EPIPE)
		return CLI_EXIT_PIPE; /* e.g. `| head`: the reader has all it wanted */
	if (rc == SBX_EUSER && st->write_errno) {
		fprintf(stderr,
		        "%s exec: cannot write the output: %s; the command was killed (check the "
		        "disk or the program reading the pipe)\n",
		        c->prog, cli_strerror(st->write_errno, ebuf, sizeof(ebuf)));
		return CLI_EXIT_ERROR;
	}
	return s->o.tag ? cli_fail_tags(c, rc, err, &s->o.tag, 1) : cli_fail(c, rc, err);
}

/* What -t refuses: options that do not apply to a terminal. Returns 0 or a usage error. */
static int tty_check(cli *c, const exec_state *s)
{
	if (s->background)
		return cli_usage_error(c, "--tty does not go with --background");
	if (c->json)
		return cli_usage_error(c, "--tty does not go with --json (a terminal's output is "
		                          "not a result)");
	if (s->o.tag)
		return cli_usage_error(c, "--tty does not go with --tag");
	if (s->max_output_given)
		return cli_usage_error(c, "--tty does not go with --max-output-bytes (nothing is "
		                          "kept)");
	return 0;
}

/*
 * -t: the command (or the login shell) on a terminal in the sandbox, with
 * this tool's TERM; no time limit unless --timeout-ms.
 */
static int exec_tty(cli *c, const char *id, const char *cmd, exec_state *s)
{
	sbx_pty_options po = cli_pty_options_of(&s->o);
	const char *term = getenv("TERM");
	sbx_error err = {0};
	int code = 0, rc;

	po.timeout_ms = s->timeout_given ? s->o.timeout_ms : 0;
	if (term && *term && s->o.env_count < CLI_MAX_OPTS) {
		/* first, so that an --env TERM=... still wins */
		memmove(&s->env[1], &s->env[0], s->o.env_count * sizeof(s->env[0]));
		s->env[0] = (sbx_env_var){"TERM", term};
		s->o.env_count++;
		s->env_shifted = true;
	}
	po.env = s->env;
	po.env_count = s->o.env_count;
	if ((rc = cli_tty_session(c, id, cmd, &po, s->stdin_fwd, &code, &err)) < 0)
		return cli_fail(c, rc, &err);
	return code;
}

static int exec_run(cli *c, const cli_args *a)
{
	exec_state *s = calloc(1, sizeof(*s));
	cli_stream st = {.c = c};
	sbx_exec_result r = {0};
	sbx_error err = {0};
	char *cmd = NULL;
	int rc = 0;

	if (!s)
		return cli_oom(c);
	s->o = (sbx_exec_options)SBX_EXEC_OPTIONS_INIT;
	s->o.env = s->env;
	for (size_t i = 0; i < a->nopts && rc == 0; i++)
		rc = exec_opt(c, s, a->opts[i].id, a->opts[i].value);
	if (rc != 0)
		goto done;
	if (a->npos < (s->tty ? 1 : 2)) {
		rc = cli_usage_error(c, "missing argument: expected ID COMMAND...");
		goto done;
	}
	if (s->tty && (rc = tty_check(c, s)) != 0)
		goto done;
	if (a->dashdash && a->ndash > 1) {
		rc = cli_usage_error(c, "put the command after '--' (got '%s' before it)",
		                     a->pos[1]);
		goto done;
	}
	if (!(cmd = join_command(a))) {
		rc = cli_oom(c);
		goto done;
	}
	if (s->background && s->stdin_fwd) {
		rc = cli_usage_error(c, "--stdin does not go with --background");
		goto done;
	}
	if ((rc = cli_provider(c)) != 0)
		goto done;
	if (s->background) {
		rc = exec_background(c, a, cmd, s);
		goto done;
	}
	if (s->tty) {
		rc = exec_tty(c, a->pos[0], a->npos > 1 ? cmd : NULL, s);
		goto done;
	}
	/* Live output in human mode; --json keeps one object at the end. */
	if (!c->json)
		s->o.on_output = cli_stream_output;
	s->o.output_payload = &st;
	if (s->stdin_fwd)
		rc = exec_interactive(c, a->pos[0], cmd, s, &st, &r, &err);
	else
		rc = sbx_sandbox_exec(&r, c->prov, a->pos[0], cmd, &s->o, c->sig, &err);
	if (rc < 0) {
		rc = exec_fail(c, rc, &err, s, &st, &r);
		goto done;
	}
	exec_report(c, &r, s);
	rc = exec_exit_code(&r);
done:
	sbx_exec_result_free(&r);
	free(cmd);
	for (size_t i = 0; i < s->o.env_count - (s->env_shifted ? 1 : 0); i++)
		free(s->env_keys[i]);
	free(s);
	return rc;
}

const cli_command cli_cmd_exec = {
    .name = "exec",
    .args = "[OPTIONS] ID [--] COMMAND...",
    .summary = "run a shell command; exits with its exit code",
    .description =
        "Runs COMMAND with /bin/bash -c as the sandbox user. Options go before the\n"
        "command: the first word after ID (or everything after '--') starts it, and the\n"
        "words are joined with spaces into one command line, as ssh does. The command's\n"
        "stdout and stderr go to this tool's stdout and stderr as they arrive. stdin is\n"
        "not read unless -i is given (the command then reads this tool's stdin until\n"
        "EOF). With --json the output comes in one object at the end instead.\n"
        "\n"
        "--background starts the command and prints its pid at once; 'wait ID PID'\n"
        "follows it to its end, 'kill ID PID' kills it with its whole tree, 'ps ID'\n"
        "lists the running commands. It is killed --timeout-ms (+5 s) after it started.\n"
        "\n"
        "-t runs COMMAND (none: the user's login shell) on a terminal in the sandbox,\n"
        "of this terminal's size, following its resizes, with this TERM. With -i (-it)\n"
        "this terminal goes raw: every key goes to the remote terminal, so Ctrl-C\n"
        "interrupts the remote job, Ctrl-D ends its input, Ctrl-Z stops it; the\n"
        "terminal's settings come back however the session ends. No time limit\n"
        "unless --timeout-ms. SIGTERM or SIGHUP of this tool kills the remote command.\n"
        "\n"
        "Exit: the command's exit code (128+N when killed by signal N); 124 timed out;\n"
        "125 killed by an unknown signal; 130 interrupted (Ctrl-C kills the remote\n"
        "command); 1 library error; 2 usage error.\n",
    .examples =
        "  sandbox-e2b exec \"$id\" ls -la /workspace\n"
        "  sandbox-e2b exec \"$id\" 'cd /workspace && echo hi > hello.txt && cat hello.txt'\n"
        "  sandbox-e2b exec \"$id\" --cwd /tmp --env LANG=C --timeout-ms 5s -- ls -la\n"
        "  sandbox-e2b exec \"$id\" --json -- 'echo hi' | jq .stdout\n"
        "  sandbox-e2b exec -it \"$id\"                  # a shell in the sandbox\n"
        "  sandbox-e2b exec -it --user root \"$id\" top\n",
    .options = exec_options,
    .stop_after = 1,
    .min_pos = 0,
    .max_pos = CLI_MAX_POS,
    .complete = "id",
    .run = exec_run,
};
