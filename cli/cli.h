/*
 * cli/cli.h: the sandbox-e2b command-line tool, shared between its files.
 *
 * The tool is a thin layer over the public API (include/sandbox.h): it parses
 * arguments, loads the deployment config, calls one contract method and maps
 * the outcome to output and an exit code (docs/cli.md "Exit codes"). It knows
 * nothing of the wire; everything E2B-specific stays in the library.
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <jansson.h>
#include <sandbox.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes (documented in --help and docs/cli.md). */
#define CLI_EXIT_OK       0
#define CLI_EXIT_ERROR    1   /* a library or system error */
#define CLI_EXIT_USAGE    2   /* bad arguments or an invalid config */
#define CLI_EXIT_NOTFOUND 3   /* resume: gone; read/stat: no such path */
#define CLI_EXIT_TIMEOUT  124 /* exec: the command hit --timeout-ms */
#define CLI_EXIT_NOCODE   125 /* exec: killed by a signal with no known number */
#define CLI_EXIT_ABORTED  130 /* Ctrl-C (128 + SIGINT); SIGTERM gives 143 */

/* State shared by every subcommand: the global options and lazily made objects. */
typedef struct cli {
	const char *prog;        /* "sandbox-e2b" */
	const char *cmd;         /* the subcommand, for messages */
	bool json;               /* --json: exactly one JSON object on stdout */
	bool verbose;            /* -v: library debug/info logs (warnings always show), and
	                            the demo's fake-e2b output, on stderr */
	const char *config_path; /* --config FILE */
	const char *template_id; /* --template T */
	const char *envd_url;    /* --envd-url URL or SANDBOX_E2B_ENVD_URL */
	sbx_e2b_config *cfg;     /* loaded by cli_provider() */
	sbx_provider *prov;
	sbx_signal *sig; /* aborted by SIGINT / SIGTERM */
} cli;

/* ---- argument parsing (args.c) ------------------------------------------------ */

/* One long option of a subcommand: "--name VALUE" / "--name=VALUE" when has_arg. */
typedef struct cli_opt {
	const char *name;
	bool has_arg;
	int id;
} cli_opt;

/* Ids of the options every subcommand accepts. */
enum { OPT_HELP = 1000, OPT_JSON, OPT_VERBOSE, OPT_CONFIG, OPT_TEMPLATE, OPT_ENVD_URL };

#define CLI_MAX_POS 256

/* Called for each option of the subcommand's own table; returns 0 or CLI_EXIT_USAGE. */
typedef int (*cli_opt_fn)(cli *c, void *state, int id, const char *value);

typedef struct cli_args {
	const char *pos[CLI_MAX_POS]; /* positional arguments, in order */
	size_t npos;
	size_t ndash;  /* how many positionals came before "--" (npos if none) */
	bool dashdash; /* "--" was given */
	bool help;
} cli_args;

/*
 * Parse argv[0..argc) (the words after the subcommand): common options go to
 * `c`, the subcommand's own ones to fn(state). Returns 0 or CLI_EXIT_USAGE
 * (message printed).
 */
int cli_parse(cli_args *out, cli *c, int argc, char **argv, const cli_opt *opts, cli_opt_fn fn,
              void *state);
int cli_usage_error(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_parse_u64(cli *c, const char *opt, const char *s, uint64_t min, uint64_t *out);
int cli_parse_double(cli *c, const char *opt, const char *s, double *out);

/* ---- config and provider (config.c) ------------------------------------------- */

/*
 * The deployment config JSON from --config, SANDBOX_E2B_CONFIG, or
 * E2B_API_KEY / E2B_API_URL / E2B_DOMAIN + --template / E2B_TEMPLATE, with
 * --template overriding "template". `*out` is malloc'd JSON text. Returns 0,
 * CLI_EXIT_USAGE (nothing configured, unreadable file: message printed).
 */
int cli_config_json(cli *c, char **out);
/* True when any E2B credentials source is present (for the demo). */
bool cli_have_credentials(const cli *c);
/*
 * Parse + validate a config JSON; on failure print the reasons, return
 * CLI_EXIT_USAGE. `check`: for `config check`, whose --json failure object is
 * {"valid":false,"error":{...}}; every other command prints {"error":{...}}.
 */
int cli_config_parse(cli *c, const char *json, bool check, sbx_e2b_config **out);
/* Load the config and make c->prov once. Returns 0 or an exit code (message printed). */
int cli_provider(cli *c);
/* Read a whole file ("-" = stdin) into malloc'd memory (NUL-terminated). 0 or -errno. */
int cli_read_file(const char *path, char **data, size_t *len, size_t max);

/* ---- output (output.c) -------------------------------------------------------- */

/*
 * Print a library failure (message + what to do next; with --json also one
 * {"error":{...}} object on stdout) and return its exit code.
 */
int cli_fail(cli *c, int code, const sbx_error *err);
/* cli_fail with a hint of the caller's (NULL: cli_hint's). */
int cli_fail_hint(cli *c, int code, const sbx_error *err, const char *hint);
/* A library message without a leading "sandbox-e2b: " (the tool adds its own prefix). */
const char *cli_lib_message(const char *msg);
/* A local allocation failed: reported as SBX_ENOMEM through cli_fail (not a usage error). */
int cli_oom(cli *c);
/* What to do next about an error, one sentence (static string). */
const char *cli_hint(const cli *c, int code, const sbx_error *err);
/* Print a JSON object as one line on stdout and free it (steals obj). */
void cli_json_print(json_t *obj);
/* The exit code for an abort (128 + the signal received, 130 by default). */
int cli_abort_exit(void);
/* strerror, thread-safe, into buf. Returns buf or a static string. */
const char *cli_strerror(int errnum, char *buf, size_t len);

/* The signal that aborted the run (SIGINT, SIGTERM) or 0; set by main.c's handler. */
extern volatile int cli_signo;

/* ---- subcommands (commands.c, demo.c) ------------------------------------------ */

typedef struct cli_command {
	const char *name;
	int (*run)(cli *c, int argc, char **argv);
	const char *summary;
	const char *help; /* full --help text after the first line */
} cli_command;

extern const cli_command cli_commands[];
extern const size_t cli_ncommands;

int cli_cmd_demo(cli *c, int argc, char **argv);
/* Print the --help of c->cmd on stdout. Returns 0. */
int cli_print_help(cli *c);
extern const char cli_demo_help[];

/* ---- the wordfreq example, embedded at build time (embedded.c, generated) ------- */

typedef struct cli_embedded_file {
	const char *path; /* relative to examples/wordfreq, e.g. "Makefile" */
	const unsigned char *data;
	size_t len;
} cli_embedded_file;

extern const cli_embedded_file cli_wordfreq_files[];
extern const size_t cli_wordfreq_nfiles;

#endif
