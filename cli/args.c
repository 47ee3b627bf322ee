/*
 * cli/args.c: argument parsing shared by every subcommand.
 *
 * Options may come before, between or after the positional arguments;
 * "--name VALUE" and "--name=VALUE" are the same; "--" ends the options (what
 * follows is positional, e.g. exec's command); a lone "-" is positional
 * (stdin). Common options (--json, --config, ...) are accepted everywhere.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cli_opt common_opts[] = {
    {"help", false, OPT_HELP},
    {"json", false, OPT_JSON},
    {"verbose", false, OPT_VERBOSE},
    {"config", true, OPT_CONFIG},
    {"template", true, OPT_TEMPLATE},
    {"envd-url", true, OPT_ENVD_URL},
    {NULL, false, 0},
};

int cli_usage_error(cli *c, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->cmd)
		fprintf(stderr, "%s %s: %s\nRun '%s %s --help' for usage.\n", c->prog, c->cmd, msg,
		        c->prog, c->cmd);
	else
		fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", c->prog, msg, c->prog);
	if (c->json) {
		json_t *o = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", "usage", "message", msg,
		                      "hint", "run with --help for usage");
		cli_json_print(o);
	}
	return CLI_EXIT_USAGE;
}

static const cli_opt *find_opt(const cli_opt *table, const char *name, size_t len)
{
	for (; table && table->name; table++)
		if (strlen(table->name) == len && memcmp(table->name, name, len) == 0)
			return table;
	return NULL;
}

static int apply_common(cli *c, cli_args *out, int id, const char *value)
{
	switch (id) {
	case OPT_HELP:
		out->help = true;
		break;
	case OPT_JSON:
		c->json = true;
		break;
	case OPT_VERBOSE:
		c->verbose = true;
		break;
	case OPT_CONFIG:
		c->config_path = value;
		break;
	case OPT_TEMPLATE:
		c->template_id = value;
		break;
	case OPT_ENVD_URL:
		c->envd_url = value;
		break;
	}
	return 0;
}

static int add_pos(cli *c, cli_args *out, const char *arg)
{
	if (out->npos >= CLI_MAX_POS)
		return cli_usage_error(c, "too many arguments (at most %d)", CLI_MAX_POS);
	out->pos[out->npos++] = arg;
	return 0;
}

/* One "--name[=value]" or "-h"/"-v" at argv[*i]; advances *i past a separate value. */
static int parse_one(cli_args *out, cli *c, int argc, char **argv, int *i, const cli_opt *opts,
                     cli_opt_fn fn, void *state)
{
	const char *arg = argv[*i], *name, *eq, *value = NULL;
	const cli_opt *o;
	bool common = false;
	size_t len;

	if (strcmp(arg, "-h") == 0)
		return apply_common(c, out, OPT_HELP, NULL);
	if (strcmp(arg, "-v") == 0)
		return apply_common(c, out, OPT_VERBOSE, NULL);
	if (arg[1] != '-')
		return cli_usage_error(c, "unknown option '%s'", arg);
	name = arg + 2;
	eq = strchr(name, '=');
	len = eq ? (size_t)(eq - name) : strlen(name);
	if (!(o = find_opt(opts, name, len))) {
		o = find_opt(common_opts, name, len);
		common = true;
	}
	if (!o)
		return cli_usage_error(c, "unknown option '--%.*s'", (int)len, name);
	if (o->has_arg) {
		if (eq)
			value = eq + 1;
		else if (*i + 1 < argc)
			value = argv[++*i];
		else
			return cli_usage_error(c, "option '--%s' needs a value", o->name);
	} else if (eq) {
		return cli_usage_error(c, "option '--%s' takes no value", o->name);
	}
	if (common)
		return apply_common(c, out, o->id, value);
	return fn(c, state, o->id, value);
}

int cli_parse(cli_args *out, cli *c, int argc, char **argv, const cli_opt *opts, cli_opt_fn fn,
              void *state)
{
	bool dashdash = false;
	int error;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		if (dashdash || arg[0] != '-' || arg[1] == '\0') {
			if ((error = add_pos(c, out, arg)) != 0)
				return error;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			dashdash = true;
			out->ndash = out->npos;
			continue;
		}
		if ((error = parse_one(out, c, argc, argv, &i, opts, fn, state)) != 0)
			return error;
	}
	if (!dashdash)
		out->ndash = out->npos;
	out->dashdash = dashdash;
	return 0;
}

int cli_parse_u64(cli *c, const char *opt, const char *s, uint64_t min, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == '+')
		return cli_usage_error(c, "%s needs a whole number, got '%s'", opt, s ? s : "");
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return cli_usage_error(c, "%s needs a whole number, got '%s'", opt, s);
	if (v < min)
		return cli_usage_error(c, "%s must be at least %" PRIu64 ", got '%s'", opt, min, s);
	*out = v;
	return 0;
}

int cli_parse_double(cli *c, const char *opt, const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0)
		return cli_usage_error(c, "%s needs a positive number, got '%s'", opt, s);
	*out = v;
	return 0;
}
