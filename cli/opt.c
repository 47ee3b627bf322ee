/*
 * cli/opt.c: getopt_long over a command's option table plus the common
 * options, and typed option values (opt.h).
 */
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_option cli_common_options[] = {
    {"json", 0, NULL, "print exactly one JSON object on stdout", CLI_OPT_JSON, NULL},
    {"config", 0, "FILE",
     "deployment config JSON (else SANDBOX_E2B_CONFIG,\n"
     "else E2B_API_KEY, E2B_API_URL, E2B_DOMAIN and\n--template / E2B_TEMPLATE)",
     CLI_OPT_CONFIG, NULL},
    {"template", 0, "T", "template name or id (overrides the config's)", CLI_OPT_TEMPLATE, NULL},
    {"envd-url", 0, "URL",
     "envd address for self-hosted or local envd\n(or E2B_SANDBOX_URL, SANDBOX_E2B_ENVD_URL)",
     CLI_OPT_ENVD_URL, NULL},
    {"verbose", 'v', NULL,
     "also show the library's debug and info lines on\n"
     "stderr: one per HTTP request (method, path,\n"
     "status, ms), and the demo's fake-e2b output; or\n"
     "E2B_DEBUG=true (warnings always show)",
     CLI_OPT_VERBOSE, NULL},
    {"help", 'h', NULL, "this help", CLI_OPT_HELP, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* The combined table: the command's options, then the common ones (and --version). */
typedef struct opt_table {
	const cli_option *o[CLI_MAX_OPTS];
	size_t n;
	struct option lo[CLI_MAX_OPTS + 1];
	char shorts[2 * CLI_MAX_OPTS + 4];
} opt_table;

static const cli_option version_option = {"version", 0, NULL, NULL, CLI_OPT_VERSION, NULL};

static void table_add(opt_table *t, const cli_option *o)
{
	size_t len;

	if (t->n >= CLI_MAX_OPTS)
		return;
	t->lo[t->n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
	                              256 + (int)t->n};
	if (o->short_name) {
		len = strlen(t->shorts);
		t->shorts[len++] = (char)o->short_name;
		if (o->arg)
			t->shorts[len++] = ':';
		t->shorts[len] = '\0';
	}
	t->o[t->n++] = o;
}

static void table_build(opt_table *t, const cli_option *opts)
{
	memset(t, 0, sizeof(*t));
	/* '+': stop at a non-option (we take positionals ourselves); ':': report a missing value.
	 */
	memcpy(t->shorts, "+:", 3);
	for (; opts && opts->name; opts++)
		table_add(t, opts);
	for (const cli_option *o = cli_common_options; o->name; o++)
		table_add(t, o);
	table_add(t, &version_option);
}

static const cli_option *table_short(const opt_table *t, int ch)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->o[i]->short_name == ch)
			return t->o[i];
	return NULL;
}

static int apply(cli_args *out, cli *c, const cli_option *o, const char *value)
{
	switch (o->id) {
	case CLI_OPT_HELP:
		out->help = true;
		return 0;
	case CLI_OPT_VERSION:
		out->version = true;
		return 0;
	case CLI_OPT_JSON:
		c->json = true;
		return 0;
	case CLI_OPT_VERBOSE:
		c->verbose = true;
		return 0;
	case CLI_OPT_CONFIG:
		c->config_path = value;
		return 0;
	case CLI_OPT_TEMPLATE:
		c->template_id = value;
		return 0;
	case CLI_OPT_ENVD_URL:
		c->envd_url = value;
		return 0;
	}
	if (out->nopts >= CLI_MAX_OPTS)
		return cli_usage_error(c, "too many options (at most %d)", CLI_MAX_OPTS);
	out->opts[out->nopts++] = (cli_opt_value){o->id, value};
	return 0;
}

static int add_pos(cli *c, cli_args *out, const char *arg)
{
	if (out->npos >= CLI_MAX_POS)
		return cli_usage_error(c, "too many arguments (at most %d)", CLI_MAX_POS);
	out->pos[out->npos++] = arg;
	return 0;
}

/* The word getopt just complained about, for the message. */
static int bad_option(cli *c, const opt_table *t, int ch, char **argv, int argc)
{
	const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "?";

	if (ch == ':') {
		if (optopt >= 256)
			return cli_usage_error(c, "option '--%s' needs a value",
			                       t->o[optopt - 256]->name);
		return cli_usage_error(c, "option '-%c' needs a value", optopt);
	}
	if (optopt >= 256)
		return cli_usage_error(c, "option '--%s' takes no value", t->o[optopt - 256]->name);
	if (optopt > 0)
		return cli_usage_error(c, "unknown option '-%c'", optopt);
	return cli_usage_error(c, "unknown option '%s'", word);
}

int cli_opt_parse(cli_args *out, cli *c, int argc, char **argv, const cli_option *opts,
                  int stop_after)
{
	static opt_table t;
	bool rest = false;
	int ch, rc;

	memset(out, 0, sizeof(*out));
	table_build(&t, opts);
	opterr = 0;
	optind = 0; /* glibc: a full reset of getopt's state */
	for (;;) {
		int i = optind ? optind : 1;
		if (i >= argc)
			break;
		if (rest || strcmp(argv[i], "--") == 0 || argv[i][0] != '-' || argv[i][1] == '\0') {
			if (!rest && strcmp(argv[i], "--") == 0) {
				out->dashdash = true;
				out->ndash = out->npos;
				rest = true;
			} else {
				if (!rest && stop_after >= 0 && out->npos >= (size_t)stop_after)
					rest = true;
				if ((rc = add_pos(c, out, argv[i])) != 0)
					return rc;
			}
			optind = i + 1;
			continue;
		}
		ch = getopt_long(argc, argv, t.shorts, t.lo, NULL);
		if (ch == -1)
			break;
		if (ch == '?' || ch == ':')
			return bad_option(c, &t, ch, argv, argc);
		const cli_option *o = ch >= 256 ? t.o[ch - 256] : table_short(&t, ch);
		if (!o)
			return cli_usage_error(c, "unknown option '-%c'", ch);
		if ((rc = apply(out, c, o, optarg)) != 0)
			return rc;
	}
	if (!out->dashdash)
		out->ndash = out->npos;
	return 0;
}

int cli_opt_u64(cli *c, const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return cli_usage_error(c, "%s needs a whole number, got '%s'", opt, s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return cli_usage_error(c, "%s needs a whole number, got '%s'", opt, s);
	if (errno == ERANGE || v > max)
		return cli_usage_error(c, "%s must be at most %" PRIu64 ", got '%s'", opt, max, s);
	if (v < min)
		return cli_usage_error(c, "%s must be at least %" PRIu64 ", got '%s'", opt, min, s);
	*out = v;
	return 0;
}

int cli_opt_number(cli *c, const char *opt, const char *s, double max, double *out)
{
	char *end;
	double v;

	/* Plain decimals only: no sign, no hex, no inf/nan, no exponent surprises. */
	if (!s || strspn(s, "0123456789.") != strlen(s) || !*s)
		return cli_usage_error(c, "%s needs a positive number, got '%s'", opt, s ? s : "");
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v <= 0)
		return cli_usage_error(c, "%s needs a positive number, got '%s'", opt, s);
	if (errno == ERANGE || v > max)
		return cli_usage_error(c, "%s must be at most %.0f, got '%s'", opt, max, s);
	*out = v;
	return 0;
}

int cli_opt_duration_ms(cli *c, const char *opt, const char *s, uint64_t min_ms, uint64_t max_ms,
                        uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1}};
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (errno == ERANGE || v > max_ms / units[i].ms)
			return cli_usage_error(c, "%s must be at most %" PRIu64 " ms, got '%s'",
			                       opt, max_ms, s);
		v *= units[i].ms;
		if (v < min_ms)
			return cli_usage_error(c, "%s must be at least %" PRIu64 " ms, got '%s'",
			                       opt, min_ms, s);
		*out = v;
		return 0;
	}
bad:
	return cli_usage_error(c, "%s needs a duration such as 1500ms, 5s or 2m, got '%s'", opt,
	                       s ? s : "");
}

int cli_opt_user(cli *c, const char *s, sbx_user *out)
{
	if (s && strcmp(s, "sandbox") == 0)
		*out = SBX_USER_SANDBOX;
	else if (s && strcmp(s, "root") == 0)
		*out = SBX_USER_ROOT;
	else
		return cli_usage_error(c, "--user must be 'sandbox' or 'root', got '%s'",
		                       s ? s : "");
	return 0;
}
