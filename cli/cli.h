/*
 * cli/cli.h: the core of the sandbox-e2b command-line tool: the run's state,
 * config and provider (config.c), output and exit codes (output.c).
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
#define CLI_EXIT_PIPE     141 /* stdout closed by its reader (128 + SIGPIPE), said nowhere */

/* State shared by every subcommand: the global options and lazily made objects. */
typedef struct cli {
	const char *prog;        /* "sandbox-e2b" */
	const char *cmd;         /* the subcommand, for messages */
	bool json;               /* --json: exactly one JSON object on stdout */
	bool json_early;         /* --json is among the words: usage errors print JSON too */
	bool verbose;            /* -v or E2B_DEBUG=true: library debug/info logs (one line
	                            per HTTP request; warnings always show), and the demo's
	                            fake-e2b output, on stderr */
	const char *config_path; /* --config FILE */
	const char *template_id; /* --template T */
	const char *envd_url;    /* --envd-url URL, E2B_SANDBOX_URL or SANDBOX_E2B_ENVD_URL */
	sbx_e2b_config *cfg;     /* loaded by cli_provider() */
	sbx_provider *prov;
	sbx_signal *sig; /* aborted by SIGINT / SIGTERM */
	/* the command's ID argument, which cli_provider() resolves when it is a name (resolve.c) */
	const char **resolve;
	char *resolved_id; /* what it was resolved to (owned) */
} cli;

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
 * The rule of every front end (README "Configuration"): each key the config object `o` leaves
 * out is set from its E2B_* variable when that is set and not empty (apiKey: E2B_API_KEY,
 * template: E2B_TEMPLATE, apiUrl: E2B_API_URL, domain: E2B_DOMAIN); a key it has, null
 * included, stays. serve applies it to initialize's config, so the packages need not.
 * Returns how many keys it set, or -1 out of memory.
 */
int cli_config_fill_env(json_t *o);
/*
 * The variables behind the config cli_config_json finds, for a front end with no flags (serve,
 * for the packages' "not configured" errors): SANDBOX_E2B_CONFIG when it is the source, then
 * the E2B_* variables of the keys (cli_config_fill_env's); with no source at all, the two of
 * the keys a config must have, E2B_API_KEY and E2B_TEMPLATE. A new JSON array of strings, or
 * NULL out of memory.
 */
json_t *cli_config_vars(const cli *c);
/*
 * Parse + validate a config JSON; on failure print the reasons, return
 * CLI_EXIT_USAGE. `check`: for `config check`, whose --json failure object is
 * {"valid":false,"error":{...}}; every other command prints {"error":{...}}.
 */
int cli_config_parse(cli *c, const char *json, bool check, sbx_e2b_config **out);
/*
 * Load the config and make c->prov once, then resolve c->resolve
 * (cli_resolve_sandbox). Returns 0 or an exit code (message printed).
 */
int cli_provider(cli *c);
/* The provider's logger: warnings on stderr, and with -v / E2B_DEBUG=true one line per request. */
void cli_set_logger(cli *c, sbx_e2b_options *opts);
/*
 * The ID argument may be a sandbox's name (resolve.c, docs/cli.md "IDs and
 * names"): when *c->resolve has a name's shape and exactly one of this
 * deployment's sandboxes carries that name, *c->resolve becomes its id; none:
 * it stays (an id); more than one: a usage error naming their ids. One list
 * request. 0 or an exit code (message printed).
 */
int cli_resolve_sandbox(cli *c);
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
/*
 * cli_fail for a failure of a call that took tags: an invalid tag among
 * tags[0..n) gets a hint naming it and the contract's rule.
 */
int cli_fail_tags(cli *c, int code, const sbx_error *err, const char *const *tags, size_t n);
/* Print a usage error (and with --json the {"error":{"code":"usage"}} object); CLI_EXIT_USAGE. */
int cli_usage_error(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Finish a command that returns nothing but success: {"ok":true,"id":ID} or `what` on stderr. */
int cli_done_ok(cli *c, const char *id, const char *what);
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

/* ---- the wordfreq example, embedded at build time (embedded.c, generated) ------- */

typedef struct cli_embedded_file {
	const char *path; /* relative to examples/wordfreq, e.g. "Makefile" */
	const unsigned char *data;
	size_t len;
} cli_embedded_file;

extern const cli_embedded_file cli_wordfreq_files[];
extern const size_t cli_wordfreq_nfiles;

#endif
