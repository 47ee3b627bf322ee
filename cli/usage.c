/*
 * cli/usage.c: the general usage, each command's --help and the hidden
 * `__complete`, all derived from the command descriptors (command.h), so help,
 * usage and completion cannot drift apart.
 */
#include "command.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const cli_command *cli_command_find(const char *name)
{
	for (size_t i = 0; i < cli_ncommands; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}

/* One option as "  -v, --verbose      help" with continuation lines aligned. */
static void print_option(FILE *f, const cli_option *o)
{
	char head[64];
	const char *p = o->help, *nl;

	snprintf(head, sizeof(head), "%c%c%c --%s%s%s", o->short_name ? '-' : ' ',
	         o->short_name ? o->short_name : ' ', o->short_name ? ',' : ' ', o->name,
	         o->arg ? " " : "", o->arg ? o->arg : "");
	if (strlen(head) > 24)
		fprintf(f, "  %s\n  %-24s ", head, "");
	else
		fprintf(f, "  %-24s ", head);
	while ((nl = strchr(p, '\n'))) {
		fprintf(f, "%.*s\n  %-24s ", (int)(nl - p), p, "");
		p = nl + 1;
	}
	fprintf(f, "%s\n", p);
}

void cli_usage(FILE *f)
{
	fprintf(f, "sandbox-e2b %s: sandbox@1 on E2B from the command line\n\n", sbx_version());
	fprintf(f, "Usage: sandbox-e2b [--json] [--config FILE] COMMAND [ARGS...]\n"
	           "       sandbox-e2b COMMAND --help\n\nCommands:\n");
	for (size_t i = 0; i < cli_ncommands; i++)
		if (!(cli_commands[i]->flags & CLI_CMD_HIDDEN))
			fprintf(f, "  %-16s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
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
	    "                         (or E2B_SANDBOX_URL, SANDBOX_E2B_ENVD_URL)\n"
	    "\n"
	    "Common options:\n");
	for (const cli_option *o = cli_common_options; o->name; o++)
		print_option(f, o);
	fprintf(
	    f,
	    "        --version          print the version\n"
	    "\n"
	    "Durations (--timeout-ms) take 1500ms, 5s, 2m, 1h or a bare number of ms.\n"
	    "\n"
	    "Exit codes: 0 ok; 1 error (the message says what to do next); 2 usage error or\n"
	    "  invalid config; 3 not found (resume: gone, read/stat/info: no such path or\n"
	    "  sandbox); exec and wait: the command's own exit code, 124 timeout, 125 killed\n"
	    "  by an unknown signal; 130 interrupted by Ctrl-C (143 by SIGTERM); 141 stdout\n"
	    "  closed by its reader (e.g. | head).\n"
	    "\n"
	    "Examples:\n"
	    "  sandbox-e2b demo                       # no account needed: runs a local fake-e2b\n"
	    "  export E2B_API_KEY=e2b_... E2B_TEMPLATE=capybara-sandbox\n"
	    "  id=$(sandbox-e2b create conv-42)\n"
	    "  sandbox-e2b exec \"$id\" 'uname -a && ls /workspace'\n"
	    "  sandbox-e2b destroy \"$id\"\n");
}

void cli_command_help(const cli_command *cmd)
{
	printf("sandbox-e2b %s: %s\n\n", cmd->name, cmd->summary);
	printf("Usage: sandbox-e2b %s%s%s\n", cmd->name, cmd->args[0] ? " " : "", cmd->args);
	if (cmd->description)
		printf("\n%s", cmd->description);
	if (cmd->help_more)
		cmd->help_more();
	if (cmd->options && cmd->options->name) {
		printf("\nOptions:\n");
		for (const cli_option *o = cmd->options; o->name; o++)
			print_option(stdout, o);
	}
	if (cmd->examples)
		printf("\nExamples:\n%s", cmd->examples);
	printf("\nCommon options:\n");
	for (const cli_option *o = cli_common_options; o->name; o++)
		print_option(stdout, o);
}

/* ---- __complete ----------------------------------------------------------------------- */

static void candidate(const char *word, const char *prefix, size_t plen)
{
	if (strncmp(word, prefix, plen) == 0)
		printf("%s\n", word);
}

/* Print the space-separated words of `list` that start with the prefix. */
static void candidates(const char *list, const char *prefix)
{
	size_t plen = strlen(prefix);
	char word[128];

	while (list && *list) {
		size_t n = strcspn(list, " ");
		if (n < sizeof(word)) {
			memcpy(word, list, n);
			word[n] = '\0';
			candidate(word, prefix, plen);
		}
		list += n + (list[n] == ' ');
	}
}

static const cli_option *find_long(const cli_command *cmd, const char *word)
{
	const cli_option *tables[2] = {cmd ? cmd->options : NULL, cli_common_options};

	if (strncmp(word, "--", 2) != 0)
		return NULL;
	for (size_t t = 0; t < 2; t++)
		for (const cli_option *o = tables[t]; o && o->name; o++)
			if (strcmp(o->name, word + 2) == 0)
				return o;
	return NULL;
}

static void complete_options(const cli_command *cmd, const char *cur)
{
	char word[80];
	size_t plen = strlen(cur);
	const cli_option *tables[2] = {cmd ? cmd->options : NULL, cli_common_options};

	for (size_t t = 0; t < 2; t++)
		for (const cli_option *o = tables[t]; o && o->name; o++) {
			snprintf(word, sizeof(word), "--%s", o->name);
			candidate(word, cur, plen);
		}
}

#define COMPLETE_DEADLINE_MS 2000 /* a completion waits no longer for E2B */

static void *abort_later(void *sig)
{
	struct timespec ts = {COMPLETE_DEADLINE_MS / 1000,
	                      (COMPLETE_DEADLINE_MS % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	sbx_signal_abort(sig);
	return NULL;
}

/*
 * The ids (and, with `names`, the names) of this deployment's sandboxes that
 * start with `cur`, from one list request under the configured sources.
 * Quiet: a completion prints nothing but candidates (no config, no network:
 * none), and gives up after COMPLETE_DEADLINE_MS.
 */
static void complete_sandboxes(const char *cur, bool ids, bool names)
{
	cli c = {.prog = "sandbox-e2b", .cmd = "list"};
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	size_t plen = strlen(cur);
	pthread_t t;

	if (!freopen("/dev/null", "w", stderr) || sbx_signal_new(&c.sig) < 0)
		return;
	if (pthread_create(&t, NULL, abort_later, c.sig) != 0) {
		sbx_signal_free(c.sig);
		return;
	}
	pthread_detach(t); /* the process ends right after: the thread may still sleep */
	if (cli_provider(&c) == 0 && sbx_sandbox_list(&l, c.prov, &lo, c.sig, NULL) == 0) {
		for (size_t i = 0; i < l->count; i++) {
			if (ids)
				candidate(l->items[i].id, cur, plen);
			if (names && l->items[i].name)
				candidate(l->items[i].name, cur, plen);
		}
		sbx_info_list_free(l);
	}
	fflush(stdout);
	sbx_provider_free(c.prov);
	sbx_e2b_config_free(c.cfg);
}

int cli_complete(int nwords, char **words)
{
	const cli_command *cmd = NULL;
	const char *cur = nwords > 0 ? words[nwords - 1] : "";
	const cli_option *prev;
	size_t npos = 0;
	int i = 0;

	/* Skip global options (and their values) up to the command word. */
	for (; i < nwords - 1; i++) {
		if (words[i][0] != '-')
			break;
		if ((prev = find_long(NULL, words[i])) && prev->arg)
			i++;
	}
	if (i >= nwords - 1) {
		if (cur[0] == '-') {
			complete_options(NULL, cur);
			return 0;
		}
		for (size_t k = 0; k < cli_ncommands; k++)
			if (!(cli_commands[k]->flags & CLI_CMD_HIDDEN))
				candidate(cli_commands[k]->name, cur, strlen(cur));
		return 0;
	}
	if (!(cmd = cli_command_find(words[i])))
		return 0;
	if (nwords >= 2 && (prev = find_long(cmd, words[nwords - 2])) && prev->arg) {
		candidates(prev->choices, cur);
		return 0;
	}
	if (cur[0] == '-') {
		complete_options(cmd, cur);
		return 0;
	}
	for (int k = i + 1; k < nwords - 1; k++) {
		if (words[k][0] == '-') {
			if ((prev = find_long(cmd, words[k])) && prev->arg)
				k++;
			continue;
		}
		npos++;
	}
	/* What the positional at this index is: "id", "path", a fixed word list... */
	const char *kinds = cmd->complete ? cmd->complete : "";
	for (size_t k = 0; k < npos && *kinds; k++) {
		kinds += strcspn(kinds, " ");
		kinds += *kinds == ' ';
	}
	if (strncmp(kinds, "check", 5) == 0)
		candidates("check", cur);
	else if (strncmp(kinds, "id", 2) == 0 && (kinds[2] == ' ' || !kinds[2]))
		complete_sandboxes(cur, true, true); /* a name goes where an id does (resolve.c) */
	else if (strncmp(kinds, "name", 4) == 0 && (kinds[4] == ' ' || !kinds[4]) &&
	         strcmp(cmd->name, "create") != 0) /* create's NAME is a new one */
		complete_sandboxes(cur, false, true);
	return 0;
}

/* Other tools' verbs (docker, the e2b CLI and SDK) and what they are here. */
static const struct {
	const char *verb, *here;
} verbs[] = {
    {"pause", "suspend"},
    {"unpause", "resume"},
    {"connect", "exec -i ID bash (no terminal yet: no prompt, no job control)"},
    {"shell", "exec -i ID bash (no terminal yet: no prompt, no job control)"},
    {"attach", "wait ID PID"},
    {"logs", "wait ID PID"},
    {"cp", "read ID PATH > FILE, or write ID PATH FILE"},
    {"cat", "read"},
    {"delete", "destroy"},
    {"remove", "destroy (a sandbox) or rm (a path)"},
    {"kill-sandbox", "destroy"},
    {"start", "create, or resume"},
    {"stop", "suspend, or destroy"},
    {"run", "exec"},
    {"ls-sandboxes", "list"},
    {"inspect", "info"},
    {"top", "metrics"},
    {"stats", "metrics"},
    {"port", "host"},
    {"url", "host"},
    {"get-host", "host"},
    {"timeout", "set-timeout"},
    {"mkdirs", "mkdir"},
    {"rename", "mv"},
    {"move", "mv"},
    {"upload", "write"},
    {"download", "read"},
};

/* Levenshtein distance of a and b, stopping at 3 (all that matters here). */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev, cur;

	if (la >= sizeof(row) || lb >= sizeof(row))
		return 3;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev + (a[i - 1] != b[j - 1]);
			cur = row[j];
			row[j] = sub;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (cur + 1 < row[j])
				row[j] = cur + 1;
			prev = cur;
		}
	}
	return row[lb] < 3 ? row[lb] : 3;
}

const char *cli_command_suggest(const char *word)
{
	const char *best = NULL;
	size_t bd = 3;

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(word, verbs[i].verb) == 0)
			return verbs[i].here;
	for (size_t i = 0; i < cli_ncommands; i++) {
		size_t d;
		if (cli_commands[i]->flags & CLI_CMD_HIDDEN)
			continue;
		d = distance(word, cli_commands[i]->name);
		if (d < bd && d < strlen(cli_commands[i]->name)) {
			bd = d;
			best = cli_commands[i]->name;
		}
	}
	return best;
}
