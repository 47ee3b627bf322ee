/*
 * cli/command.h: the descriptor of a command. The driver (main.c), the help
 * and the completion (usage.c) read only these; each command's file under
 * cli/cmd/ defines one (or a few close ones) and table.c lists them.
 */
#ifndef SBX_CLI_COMMAND_H
#define SBX_CLI_COMMAND_H

#include "cli.h"
#include "opt.h"

enum {
	CLI_CMD_PROVIDER = 1 << 0, /* the driver makes c->prov before run() */
	CLI_CMD_HIDDEN = 1 << 1,   /* not in the usage listing nor completed */
};

typedef struct cli_command {
	const char *name;
	const char *args;        /* the synopsis after the name, e.g. "ID PATH [--max-bytes N]" */
	const char *summary;     /* one line for the listing */
	const char *description; /* paragraphs for --help (may be NULL) */
	const char *examples;    /* lines for --help, each indented by two spaces (may be NULL) */
	/* More --help paragraphs made from data at run time, printed after description (may be
	 * NULL): serve lists its method table */
	void (*help_more)(void);
	const cli_option *options; /* the command's own options (NULL-terminated), or NULL */
	int stop_after; /* cli_opt_parse's: -1 options anywhere, n: end after n positionals */
	size_t min_pos, max_pos; /* how many positionals it takes (SIZE_MAX: no upper bound) */
	const char *complete;    /* what each positional is, for completion: e.g. "id path" */
	unsigned flags;          /* CLI_CMD_* */
	/* Run the command; returns the exit code (messages printed). */
	int (*run)(cli *c, const cli_args *a);
} cli_command;

/* The commands, in display order (table.c). */
extern const cli_command *const cli_commands[];
extern const size_t cli_ncommands;

/* The command named `name`, or NULL. */
const cli_command *cli_command_find(const char *name);

/*
 * What an unknown command word may have meant (usage.c): a command's name for
 * another tool's verb with the same meaning (docker's, e2b's: "pause" is
 * "suspend") or for a typo (at most 2 edits), as text to print after "did you
 * mean "; NULL when nothing is close. Never run: the caller only says it.
 */
const char *cli_command_suggest(const char *word);

/* Print a command's --help on stdout (usage.c). */
void cli_command_help(const cli_command *cmd);
/* The general usage (usage.c); on `f` (stdout for --help, stderr for no command). */
void cli_usage(FILE *f);
/*
 * `sandbox-e2b __complete WORD...`: the words typed after the program name,
 * the last one being completed (may be ""); prints the candidates, one a line.
 */
int cli_complete(int nwords, char **words);

#endif
