/*
 * cli/opt.h: option parsing for every command (getopt_long) and typed values.
 *
 * A command declares its options as a table of cli_option; the parser adds the
 * common ones (--json, --config, ...; cli_common_options), runs getopt_long
 * over the words and hands back the positionals and the command's own options
 * in the order given. Options may come before, between or after positionals,
 * "--name VALUE" and "--name=VALUE" are the same, "--" ends the options, a
 * lone "-" is positional (stdin). A command may end its options at a
 * positional (exec: the first word after ID starts the command).
 */
#ifndef SBX_CLI_OPT_H
#define SBX_CLI_OPT_H

#include "cli.h"

/* One option of a command (or a common one). */
typedef struct cli_option {
	const char *name;    /* long name without "--"; NULL ends a table */
	int short_name;      /* 'i' for -i, or 0 */
	const char *arg;     /* value placeholder for help ("N", "DIR"); NULL: a flag */
	const char *help;    /* help text; "\n" starts a continuation line */
	int id;              /* handed back in cli_args.opts (unique within the command) */
	const char *choices; /* the values it takes, space-separated (completion), or NULL */
} cli_option;

/* Ids of the common options (commands use ids below CLI_OPT_COMMON). */
enum {
	CLI_OPT_COMMON = 1000,
	CLI_OPT_HELP,
	CLI_OPT_JSON,
	CLI_OPT_VERBOSE,
	CLI_OPT_CONFIG,
	CLI_OPT_TEMPLATE,
	CLI_OPT_ENVD_URL,
	CLI_OPT_VERSION,
};

/* The options every command accepts, in help order (NULL-terminated). */
extern const cli_option cli_common_options[];

#define CLI_MAX_POS  256
#define CLI_MAX_OPTS 256

/* An option given on the command line: its id and value (NULL for a flag). */
typedef struct cli_opt_value {
	int id;
	const char *value;
} cli_opt_value;

typedef struct cli_args {
	const char *pos[CLI_MAX_POS]; /* positional arguments, in order */
	size_t npos;
	size_t ndash;                     /* how many positionals came before "--" (npos if none) */
	bool dashdash;                    /* "--" was given */
	cli_opt_value opts[CLI_MAX_OPTS]; /* the command's own options, in order */
	size_t nopts;
	bool help;
	bool version;
} cli_args;

/*
 * Parse argv[1..argc) (argv[0] is the command's name, for nothing but
 * getopt). Common options go to `c` (and help/version to `out`), the command's
 * own `opts` (may be NULL) to out->opts. stop_after >= 0: once that many
 * positionals were seen, the next positional ends the options (it and every
 * word after it are positional); -1: options anywhere. Returns 0 or
 * CLI_EXIT_USAGE (message printed). Not thread-safe (getopt's state).
 */
int cli_opt_parse(cli_args *out, cli *c, int argc, char **argv, const cli_option *opts,
                  int stop_after);

/* A whole number in [min, max] (no sign, no fraction): 0 or CLI_EXIT_USAGE (message printed). */
int cli_opt_u64(cli *c, const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A decimal number in (0, max] (e.g. --cpu 0.5): 0 or CLI_EXIT_USAGE. */
int cli_opt_number(cli *c, const char *opt, const char *s, double max, double *out);
/*
 * A duration in ms: "1500ms", "5s", "2m", "1h" or a bare number of ms, in
 * [min_ms, max_ms]: 0 or CLI_EXIT_USAGE.
 */
int cli_opt_duration_ms(cli *c, const char *opt, const char *s, uint64_t min_ms, uint64_t max_ms,
                        uint64_t *out);

/* --user NAME: "sandbox" or "root" (sandbox/paths.h sbx_user): 0 or CLI_EXIT_USAGE. */
int cli_opt_user(cli *c, const char *s, sbx_user *out);

#endif
