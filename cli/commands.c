/*
 * cli/commands.c: one subcommand per sandbox@1 method, plus `config check`.
 *
 * Each command parses its arguments, calls one library function and maps the
 * outcome to output and an exit code (docs/cli.md). No E2B knowledge here.
 */
#include "cli.h"
#include "shapes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_DEFAULT_READ_MAX (16u * 1024 * 1024)
#define CLI_MAX_WRITE        ((size_t)1 << 30)

/* Exactly `n` positionals (the names are for the message). */
static int want_pos(cli *c, const cli_args *a, size_t n, const char *names)
{
	if (a->npos < n)
		return cli_usage_error(c, "missing argument: expected %s", names);
	if (a->npos > n)
		return cli_usage_error(c, "unexpected argument '%s' (expected %s)", a->pos[n],
		                       names);
	return 0;
}

static int no_opts(cli *c, void *state, int id, const char *value)
{
	return 0;
}

/* Parse, handle --help, check the count of positionals and make the provider. */
static int prepare(cli *c, cli_args *a, int argc, char **argv, const cli_opt *opts, cli_opt_fn fn,
                   void *state, size_t npos, const char *names)
{
	int rc;

	if ((rc = cli_parse(a, c, argc, argv, opts, fn ? fn : no_opts, state)) != 0)
		return rc;
	if (a->help)
		return cli_print_help(c), -1;
	if (npos != (size_t)-1 && (rc = want_pos(c, a, npos, names)) != 0)
		return rc;
	return cli_provider(c);
}

/* Finish a command that returns nothing but success. */
static int done_ok(cli *c, const char *id, const char *what)
{
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s}", "ok", 1, "id", id));
	else
		fprintf(stderr, "%s\n", what);
	return CLI_EXIT_OK;
}

/* ---- hints for arguments the library rejects ----------------------------------------- */

#define TAG_RULE "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"

/* The tag rule of the contract (for the hint only; the library decides). */
static bool tag_ok(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)t[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		             (ch >= '0' && ch <= '9');
		if (!alnum && (i == 0 || (ch != '_' && ch != '-')))
			return false;
	}
	return true;
}

/* Report a failure; an invalid tag among tags[] gets a hint naming it and the rule. */
static int fail_tags(cli *c, int rc, const sbx_error *err, const char *const *tags, size_t n)
{
	char hint[512];

	if (rc == SBX_EINVALID && strcmp(err->message, "invalid sandbox tag") == 0)
		for (size_t i = 0; i < n; i++)
			if (!tag_ok(tags[i])) {
				snprintf(hint, sizeof(hint),
				         "tag '%.100s' must match " TAG_RULE
				         " (letters, digits, '_' and '-', at most 64)",
				         tags[i]);
				return cli_fail_hint(c, rc, err, hint);
			}
	return cli_fail(c, rc, err);
}

/* ---- create --------------------------------------------------------------------- */

enum { OPT_CPU = 1, OPT_MEMORY, OPT_DISK, OPT_EGRESS, OPT_ALLOW_HOST };

typedef struct create_state {
	sbx_limits lim;
	const char *hosts[CLI_MAX_POS];
	size_t nhosts;
} create_state;

static int create_opt(cli *c, void *state, int id, const char *v)
{
	create_state *s = state;

	switch (id) {
	case OPT_CPU:
		return cli_parse_double(c, "--cpu", v, &s->lim.cpu);
	case OPT_MEMORY:
		return cli_parse_double(c, "--memory-mb", v, &s->lim.memory_mb);
	case OPT_DISK:
		return cli_parse_double(c, "--disk-mb", v, &s->lim.disk_mb);
	case OPT_EGRESS:
		if (strcmp(v, "none") == 0)
			s->lim.egress = SBX_EGRESS_NONE;
		else if (strcmp(v, "allowlist") == 0)
			s->lim.egress = SBX_EGRESS_ALLOWLIST;
		else if (strcmp(v, "open") == 0)
			s->lim.egress = SBX_EGRESS_OPEN;
		else
			return cli_usage_error(
			    c, "--egress must be none, allowlist or open, got '%s'", v);
		return 0;
	case OPT_ALLOW_HOST:
		if (s->nhosts >= CLI_MAX_POS)
			return cli_usage_error(c, "too many --allow-host (at most %d)",
			                       CLI_MAX_POS);
		s->hosts[s->nhosts++] = v;
		return 0;
	}
	return 0;
}

/* Report a failed create, with a hint for a refused egress policy or allow host. */
static int create_fail(cli *c, int rc, const sbx_error *err, const create_state *s)
{
	char hint[512];

	if (rc != SBX_EINVALID)
		return cli_fail(c, rc, err);
	if (s->lim.egress == SBX_EGRESS_OPEN && strstr(err->message, "allowOpenEgress"))
		return cli_fail_hint(c, rc, err,
		                     "set \"allowOpenEgress\": true in the deployment config "
		                     "(--config FILE or SANDBOX_E2B_CONFIG), or use --egress "
		                     "allowlist with --allow-host");
	if (s->nhosts && strstr(err->message, "allowHosts")) {
		const char *bad = NULL;
		for (size_t i = 0; i < s->nhosts && !bad; i++)
			if (strstr(s->hosts[i], "://") || strchr(s->hosts[i], ':'))
				bad = s->hosts[i];
		snprintf(hint, sizeof(hint),
		         "%s%.200s%sallow hosts are hostnames (optionally '*.' first, e.g. "
		         "'*.pythonhosted.org'), IPv4 addresses or CIDRs (10.0.0.0/8), not URLs",
		         bad ? "'" : "", bad ? bad : "", bad ? "' is a URL; " : "");
		return cli_fail_hint(c, rc, err, hint);
	}
	return cli_fail(c, rc, err);
}

static int cmd_create(cli *c, int argc, char **argv)
{
	static const cli_opt opts[] = {
	    {"cpu", true, OPT_CPU},
	    {"memory-mb", true, OPT_MEMORY},
	    {"disk-mb", true, OPT_DISK},
	    {"egress", true, OPT_EGRESS},
	    {"allow-host", true, OPT_ALLOW_HOST},
	    {NULL, false, 0},
	};
	create_state s = {.lim = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0}};
	sbx_error err = {0};
	cli_args a;
	char *id = NULL;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, opts, create_opt, &s, 1, "NAME")) != 0)
		return rc < 0 ? 0 : rc;
	if (s.nhosts && s.lim.egress != SBX_EGRESS_ALLOWLIST)
		return cli_usage_error(c, "--allow-host needs --egress allowlist");
	s.lim.allow_hosts = s.hosts;
	s.lim.allow_hosts_count = s.nhosts;
	if ((rc = sbx_sandbox_create(&id, c->prov, a.pos[0], &s.lim, c->sig, &err)) < 0)
		return create_fail(c, rc, &err, &s);
	if (c->json)
		cli_json_print(cli_shape_created(id, a.pos[0]));
	else
		printf("%s\n", id);
	sbx_free(id);
	return CLI_EXIT_OK;
}

/* ---- resume, suspend, destroy, destroy-by-name, kill-all, kill-tagged --------------- */

static int cmd_resume(cli *c, int argc, char **argv)
{
	sbx_resume_status st;
	sbx_error err = {0};
	cli_args a;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, NULL, NULL, NULL, 1, "ID")) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = sbx_sandbox_resume(&st, c->prov, a.pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(cli_shape_resume(a.pos[0], st));
	else if (st == SBX_RESUMED)
		printf("resumed\n");
	else
		fprintf(stderr,
		        "gone: sandbox %s no longer exists; create a new one with "
		        "'%s create NAME'\n",
		        a.pos[0], c->prog);
	return st == SBX_RESUMED ? CLI_EXIT_OK : CLI_EXIT_NOTFOUND;
}

typedef int (*id_fn)(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err);

static int simple_id_cmd(cli *c, int argc, char **argv, id_fn fn, const char *arg, const char *what)
{
	sbx_error err = {0};
	cli_args a;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, NULL, NULL, NULL, 1, arg)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = fn(c->prov, a.pos[0], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json && strcmp(arg, "NAME") == 0) {
		cli_json_print(json_pack("{s:b,s:s}", "ok", 1, "name", a.pos[0]));
		return CLI_EXIT_OK;
	}
	return done_ok(c, a.pos[0], what);
}

static int cmd_suspend(cli *c, int argc, char **argv)
{
	/* The contract reports a missing sandbox as success: say only what is known. */
	return simple_id_cmd(c, argc, argv, sbx_sandbox_suspend, "ID",
	                     "suspended (or it was already paused or gone)");
}

static int cmd_destroy(cli *c, int argc, char **argv)
{
	return simple_id_cmd(c, argc, argv, sbx_sandbox_destroy, "ID",
	                     "destroyed (or it was already gone)");
}

static int cmd_destroy_by_name(cli *c, int argc, char **argv)
{
	return simple_id_cmd(c, argc, argv, sbx_sandbox_destroy_by_name, "NAME",
	                     "destroyed every sandbox with that name (if any)");
}

static int cmd_kill_all(cli *c, int argc, char **argv)
{
	return simple_id_cmd(c, argc, argv, sbx_sandbox_kill_all, "ID", "killed");
}

static int cmd_kill_tagged(cli *c, int argc, char **argv)
{
	sbx_error err = {0};
	cli_args a;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, NULL, NULL, NULL, (size_t)-1, NULL)) != 0)
		return rc < 0 ? 0 : rc;
	if (a.npos < 2)
		return cli_usage_error(c, "missing argument: expected ID TAG...");
	if ((rc = sbx_sandbox_kill_tagged(c->prov, a.pos[0], a.pos + 1, a.npos - 1, c->sig, &err)) <
	    0)
		return fail_tags(c, rc, &err, a.pos + 1, a.npos - 1);
	return done_ok(c, a.pos[0], "killed");
}

/* ---- exec ------------------------------------------------------------------------- */

enum { OPT_CWD = 1, OPT_ENV, OPT_TIMEOUT, OPT_MAX_OUTPUT, OPT_TAG };

typedef struct exec_state {
	sbx_exec_options o;
	sbx_env_var env[CLI_MAX_POS];
	char *env_keys[CLI_MAX_POS];
} exec_state;

static int exec_opt(cli *c, void *state, int id, const char *v)
{
	exec_state *s = state;
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
		if (s->o.env_count >= CLI_MAX_POS)
			return cli_usage_error(c, "too many --env (at most %d)", CLI_MAX_POS);
		if (!(s->env_keys[s->o.env_count] = strndup(v, (size_t)(eq - v))))
			return cli_oom(c);
		s->env[s->o.env_count].key = s->env_keys[s->o.env_count];
		s->env[s->o.env_count].value = eq + 1;
		s->o.env_count++;
		return 0;
	case OPT_TIMEOUT:
		if ((rc = cli_parse_u64(c, "--timeout-ms", v, 1, &n)) != 0)
			return rc;
		s->o.timeout_ms = n;
		return 0;
	case OPT_MAX_OUTPUT:
		if ((rc = cli_parse_u64(c, "--max-output-bytes", v, 0, &n)) != 0)
			return rc;
		if (n > SIZE_MAX / 2)
			return cli_usage_error(c, "--max-output-bytes is too large");
		s->o.max_output_bytes = (size_t)n;
		return 0;
	case OPT_TAG:
		s->o.tag = v;
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
	json_t *o;

	if (!c->json) {
		fwrite(r->stdout_data, 1, r->stdout_len, stdout);
		fflush(stdout);
		fwrite(r->stderr_data, 1, r->stderr_len, stderr);
		if (r->truncated)
			fprintf(stderr,
			        "%s exec: output truncated to %zu bytes (raise "
			        "--max-output-bytes)\n",
			        c->prog, s->o.max_output_bytes);
		if (r->timed_out)
			fprintf(stderr,
			        "%s exec: command timed out after %" PRIu64 " ms and was "
			        "killed (exit 124; raise --timeout-ms)\n",
			        c->prog, s->o.timeout_ms);
		else if (r->aborted)
			fprintf(stderr, "%s exec: interrupted; the command was killed\n", c->prog);
		else if (!r->has_exit_code)
			fprintf(stderr,
			        "%s exec: the command was killed by an unknown signal (exit "
			        "125)\n",
			        c->prog);
		return;
	}
	o = cli_shape_exec_result(r);
	cli_json_print(o);
}

static int cmd_exec(cli *c, int argc, char **argv)
{
	static const cli_opt opts[] = {
	    {"cwd", true, OPT_CWD},
	    {"env", true, OPT_ENV},
	    {"timeout-ms", true, OPT_TIMEOUT},
	    {"max-output-bytes", true, OPT_MAX_OUTPUT},
	    {"tag", true, OPT_TAG},
	    {NULL, false, 0},
	};
	exec_state s = {.o = SBX_EXEC_OPTIONS_INIT};
	sbx_exec_result r = {0};
	sbx_error err = {0};
	char *cmd = NULL;
	cli_args a;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, opts, exec_opt, &s, (size_t)-1, NULL)) != 0) {
		rc = rc < 0 ? 0 : rc;
		goto done;
	}
	s.o.env = s.env;
	if (a.npos < 2) {
		rc = cli_usage_error(c, "missing argument: expected ID -- COMMAND");
		goto done;
	}
	if (a.dashdash && a.ndash > 1) {
		rc =
		    cli_usage_error(c, "put the command after '--' (got '%s' before it)", a.pos[1]);
		goto done;
	}
	if (!(cmd = join_command(&a))) {
		rc = cli_oom(c);
		goto done;
	}
	if ((rc = sbx_sandbox_exec(&r, c->prov, a.pos[0], cmd, &s.o, c->sig, &err)) < 0) {
		rc = s.o.tag ? fail_tags(c, rc, &err, &s.o.tag, 1) : cli_fail(c, rc, &err);
		goto done;
	}
	exec_report(c, &r, &s);
	rc = exec_exit_code(&r);
done:
	sbx_exec_result_free(&r);
	free(cmd);
	for (size_t i = 0; i < s.o.env_count; i++)
		free(s.env_keys[i]);
	return rc;
}

/* ---- read, write, stat ------------------------------------------------------------ */

enum { OPT_MAX_BYTES = 1 };

static int read_opt(cli *c, void *state, int id, const char *v)
{
	uint64_t n;
	int rc;

	if ((rc = cli_parse_u64(c, "--max-bytes", v, 0, &n)) != 0)
		return rc;
	if (n > SIZE_MAX / 2)
		return cli_usage_error(c, "--max-bytes is too large");
	*(size_t *)state = (size_t)n;
	return 0;
}

static int cmd_read(cli *c, int argc, char **argv)
{
	static const cli_opt opts[] = {{"max-bytes", true, OPT_MAX_BYTES}, {NULL, false, 0}};
	size_t max = CLI_DEFAULT_READ_MAX;
	sbx_file *f = NULL;
	sbx_error err = {0};
	cli_args a;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, opts, read_opt, &max, 2, "ID PATH")) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = sbx_sandbox_read_file(&f, c->prov, a.pos[0], a.pos[1], max, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (!f) {
		if (c->json)
			cli_json_print(cli_shape_file(a.pos[1], NULL));
		fprintf(stderr, "%s read: %s: no such file (or it is a directory)\n", c->prog,
		        a.pos[1]);
		return CLI_EXIT_NOTFOUND;
	}
	if (c->json) {
		cli_json_print(cli_shape_file(a.pos[1], f));
	} else {
		fwrite(f->data, 1, f->len, stdout);
		if (fflush(stdout) != 0) {
			char ebuf[128];
			int e = errno;
			sbx_file_free(f);
			fprintf(stderr,
			        "%s read: cannot write to stdout: %s; check the disk or the "
			        "program reading the pipe\n",
			        c->prog, cli_strerror(e, ebuf, sizeof(ebuf)));
			return CLI_EXIT_ERROR;
		}
		if (f->truncated)
			fprintf(stderr,
			        "%s read: %s is longer than %zu bytes; output truncated "
			        "(raise --max-bytes)\n",
			        c->prog, a.pos[1], max);
	}
	sbx_file_free(f);
	return CLI_EXIT_OK;
}

static int cmd_write(cli *c, int argc, char **argv)
{
	const char *src = "-";
	sbx_error err = {0};
	char *data = NULL, ebuf[128];
	size_t len = 0;
	cli_args a;
	int rc;

	if ((rc = cli_parse(&a, c, argc, argv, NULL, no_opts, NULL)) != 0)
		return rc;
	if (a.help)
		return cli_print_help(c), 0;
	if (a.npos < 2 || a.npos > 3)
		return want_pos(c, &a, a.npos < 2 ? 2 : 3, "ID PATH [FILE|-]");
	if (a.npos == 3)
		src = a.pos[2];
	if (strcmp(src, "-") == 0 && isatty(STDIN_FILENO))
		fprintf(stderr, "%s write: reading the contents from stdin (end with Ctrl-D)\n",
		        c->prog);
	if ((rc = cli_read_file(src, &data, &len, CLI_MAX_WRITE)) < 0)
		return cli_usage_error(c, "cannot read '%s': %s", src,
		                       rc == -EFBIG ? "larger than 1 GiB"
		                                    : cli_strerror(-rc, ebuf, sizeof(ebuf)));
	if ((rc = cli_provider(c)) != 0)
		goto done;
	if ((rc = sbx_sandbox_write_file(c->prov, a.pos[0], a.pos[1], data, len, c->sig, &err)) <
	    0) {
		rc = cli_fail(c, rc, &err);
		goto done;
	}
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s,s:I}", "ok", 1, "path", a.pos[1], "bytes",
		                         (json_int_t)len));
	else
		fprintf(stderr, "wrote %zu bytes to %s\n", len, a.pos[1]);
	rc = CLI_EXIT_OK;
done:
	free(data);
	return rc;
}

static int cmd_stat(cli *c, int argc, char **argv)
{
	sbx_stat st;
	sbx_error err = {0};
	cli_args a;
	int rc;

	if ((rc = prepare(c, &a, argc, argv, NULL, NULL, NULL, 2, "ID PATH")) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = sbx_sandbox_stat(&st, c->prov, a.pos[0], a.pos[1], c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json)
		cli_json_print(cli_shape_stat(a.pos[1], &st));
	else if (!st.exists)
		fprintf(stderr, "%s stat: %s: no such file or directory\n", c->prog, a.pos[1]);
	else if (st.is_dir)
		printf("directory %" PRIu64 " bytes\n", st.size);
	else
		printf("file %" PRIu64 " bytes\n", st.size);
	return st.exists ? CLI_EXIT_OK : CLI_EXIT_NOTFOUND;
}

/* ---- config check ------------------------------------------------------------------ */

static int cmd_config(cli *c, int argc, char **argv)
{
	sbx_e2b_config *cfg = NULL;
	sbx_error err = {0};
	char *text = NULL, *out = NULL;
	cli_args a;
	int rc;

	if ((rc = cli_parse(&a, c, argc, argv, NULL, no_opts, NULL)) != 0)
		return rc;
	if (a.help)
		return cli_print_help(c), 0;
	if (a.npos == 0 || strcmp(a.pos[0], "check") != 0)
		return cli_usage_error(c, "expected 'config check [FILE]'");
	if (a.npos > 2)
		return cli_usage_error(c, "unexpected argument '%s'", a.pos[2]);
	if (a.npos == 2)
		c->config_path = a.pos[1];
	if ((rc = cli_config_json(c, &text)) != 0)
		return rc;
	if ((rc = cli_config_parse(c, text, true, &cfg)) != 0)
		goto done;
	if ((rc = sbx_e2b_config_to_json(&out, cfg, &err)) < 0) {
		rc = cli_fail(c, rc, &err);
		goto done;
	}
	if (c->json) {
		json_t *o = json_loads(out, 0, NULL);
		cli_json_print(o ? json_pack("{s:b,s:o}", "valid", 1, "config", o) : NULL);
	} else {
		printf("%s\n", out);
		fprintf(stderr, "config is valid\n");
	}
	rc = CLI_EXIT_OK;
done:
	sbx_free(out);
	sbx_e2b_config_free(cfg);
	free(text);
	return rc;
}

/* ---- the table and --help ----------------------------------------------------------- */

const cli_command cli_commands[] = {
    {"create", cmd_create, "create a sandbox named NAME (replacing one with that name)",
     "Usage: sandbox-e2b create NAME [--cpu N] [--memory-mb N] [--disk-mb N]\n"
     "                          [--egress none|allowlist|open] [--allow-host H]...\n"
     "\n"
     "Creates a sandbox and prints its id. Any sandbox already named NAME (running or\n"
     "paused) is destroyed first. NAME: ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$.\n"
     "cpu / memory / disk are validated only (E2B fixes them in the template).\n"
     "\n"
     "  --cpu N            cores (default 1)\n"
     "  --memory-mb N      MiB (default 2048)\n"
     "  --disk-mb N        MiB (default 10240)\n"
     "  --egress POLICY    none (default), allowlist, or open (needs allowOpenEgress)\n"
     "  --allow-host H     with --egress allowlist: a hostname, *.domain, IPv4 or CIDR;\n"
     "                     repeat for more\n"
     "\n"
     "Examples:\n"
     "  id=$(sandbox-e2b create conv-42)\n"
     "  sandbox-e2b create conv-42 --egress allowlist --allow-host pypi.org \\\n"
     "      --allow-host '*.pythonhosted.org'\n"},
    {"resume", cmd_resume, "resume (connect) a sandbox; exit 3 when it is gone",
     "Usage: sandbox-e2b resume ID\n"
     "\n"
     "Resumes a paused sandbox or extends a running one's timeout. Prints 'resumed'\n"
     "(exit 0), or says the sandbox is gone (exit 3).\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b resume \"$id\" || sandbox-e2b create conv-42\n"},
    {"suspend", cmd_suspend, "pause a sandbox (files and processes are kept)",
     "Usage: sandbox-e2b suspend ID\n"
     "\n"
     "Pauses the sandbox; memory, processes and files are kept until resume. A missing\n"
     "or already paused sandbox is success.\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b suspend \"$id\"\n"},
    {"destroy", cmd_destroy, "delete a sandbox",
     "Usage: sandbox-e2b destroy ID\n"
     "\n"
     "Deletes the sandbox and everything in it. A missing sandbox is success.\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b destroy \"$id\"\n"},
    {"destroy-by-name", cmd_destroy_by_name, "delete every sandbox named NAME",
     "Usage: sandbox-e2b destroy-by-name NAME\n"
     "\n"
     "Deletes every sandbox (running or paused) whose name is NAME. None is success.\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b destroy-by-name conv-42\n"},
    {"kill-all", cmd_kill_all, "kill every command started through exec",
     "Usage: sandbox-e2b kill-all ID\n"
     "\n"
     "Kills every command started through exec that is still running in the sandbox\n"
     "(a paused sandbox is resumed first).\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b kill-all \"$id\"\n"},
    {"kill-tagged", cmd_kill_tagged, "kill the commands started with one of the tags",
     "Usage: sandbox-e2b kill-tagged ID TAG...\n"
     "\n"
     "Kills only the running commands that exec started with --tag TAG.\n"
     "TAG: ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$.\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b exec \"$id\" --tag bg -- sleep 300 &\n"
     "  sandbox-e2b kill-tagged \"$id\" bg\n"},
    {"exec", cmd_exec, "run a shell command; exits with its exit code",
     "Usage: sandbox-e2b exec ID [--cwd DIR] [--env K=V]... [--timeout-ms N]\n"
     "                        [--max-output-bytes N] [--tag T] -- COMMAND...\n"
     "\n"
     "Runs COMMAND with /bin/bash -c as the sandbox user. Words after ID (or after\n"
     "'--') are joined with spaces into one command line, as ssh does. The command's\n"
     "stdout and stderr go to this tool's stdout and stderr.\n"
     "\n"
     "  --cwd DIR              working directory (default /workspace)\n"
     "  --env K=V              environment variable; repeat for more\n"
     "  --timeout-ms N         kill the command after N ms (default 60000)\n"
     "  --max-output-bytes N   budget of stdout + stderr together (default 1048576);\n"
     "                         more is cut at a UTF-8 boundary and reported\n"
     "  --tag T                tag the command for kill-tagged\n"
     "\n"
     "Exit: the command's exit code (128+N when killed by signal N); 124 timed out;\n"
     "125 killed by an unknown signal; 130 interrupted (Ctrl-C kills the remote\n"
     "command); 1 library error; 2 usage error.\n"
     "\n"
     "Examples:\n"
     "  sandbox-e2b exec \"$id\" -- 'make -C /workspace/app && ./app'\n"
     "  sandbox-e2b exec \"$id\" --cwd /tmp --env LANG=C --timeout-ms 5000 -- ls -la\n"
     "  sandbox-e2b exec \"$id\" --json -- 'echo hi' | jq .stdout\n"},
    {"read", cmd_read, "print a file's bytes; exit 3 when missing",
     "Usage: sandbox-e2b read ID PATH [--max-bytes N]\n"
     "\n"
     "Writes the file's raw bytes to stdout (as the sandbox user). At most N bytes\n"
     "(default 16777216); a longer file is cut and reported on stderr. A missing path\n"
     "or a directory exits 3.\n"
     "\n"
     "Examples:\n"
     "  sandbox-e2b read \"$id\" /workspace/report.txt > report.txt\n"
     "  sandbox-e2b read \"$id\" /workspace/data.bin --json   # content or content_b64\n"},
    {"write", cmd_write, "write a file from FILE or stdin",
     "Usage: sandbox-e2b write ID PATH [FILE|-]\n"
     "\n"
     "Writes FILE (or stdin when FILE is '-' or absent) to PATH as the sandbox user,\n"
     "creating parent directories; under /skills it writes as root, mode 0644.\n"
     "\n"
     "Examples:\n"
     "  sandbox-e2b write \"$id\" /workspace/main.c main.c\n"
     "  echo 'hello' | sandbox-e2b write \"$id\" /workspace/hello.txt\n"},
    {"stat", cmd_stat, "print a path's size and type; exit 3 when missing",
     "Usage: sandbox-e2b stat ID PATH\n"
     "\n"
     "Prints 'file N bytes' or 'directory N bytes' (as the sandbox user); a missing\n"
     "path exits 3.\n"
     "\n"
     "Example:\n"
     "  sandbox-e2b stat \"$id\" /workspace --json\n"},
    {"config", cmd_config, "config check [FILE]: validate and print a deployment config",
     "Usage: sandbox-e2b config check [FILE]\n"
     "\n"
     "Validates a deployment config (FILE, or the configured source: --config,\n"
     "SANDBOX_E2B_CONFIG, E2B_* variables) and prints it normalized as JSON with the\n"
     "API key shown as \"[redacted]\". Exit 0 valid, 2 invalid (reasons on stderr).\n"
     "\n"
     "Examples:\n"
     "  sandbox-e2b config check deploy.json\n"
     "  E2B_API_KEY=e2b_... E2B_TEMPLATE=capybara-sandbox sandbox-e2b config check\n"},
    {"demo", cli_cmd_demo, "an agent-like session end to end, narrated with timings",
     cli_demo_help},
};

const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

static const char common_help[] =
    "\n"
    "Common options:\n"
    "  --json            print exactly one JSON object on stdout\n"
    "  --config FILE     deployment config JSON (else SANDBOX_E2B_CONFIG, else E2B_API_KEY,\n"
    "                    E2B_API_URL, E2B_DOMAIN and --template / E2B_TEMPLATE)\n"
    "  --template T      template name or id (overrides the config's)\n"
    "  --envd-url URL    envd address for self-hosted or local envd (SANDBOX_E2B_ENVD_URL)\n"
    "  -v, --verbose     also show the library's debug and info log lines (warnings\n"
    "                    always show), and the demo's fake-e2b output, on stderr\n"
    "  -h, --help        this help\n";

int cli_print_help(cli *c)
{
	for (size_t i = 0; i < cli_ncommands; i++)
		if (strcmp(cli_commands[i].name, c->cmd) == 0) {
			printf("sandbox-e2b %s: %s\n\n%s%s", cli_commands[i].name,
			       cli_commands[i].summary, cli_commands[i].help, common_help);
			break;
		}
	return 0;
}
