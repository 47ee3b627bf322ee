/*
 * cli/cmd/list.c: `sandbox-e2b list`: sbx_sandbox_list.
 */
#include "command.h"
#include "shapes.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

enum { OPT_NAME = 1, OPT_STATE, OPT_ALL };

static const cli_option list_options[] = {
    {"name", 0, "NAME", "only sandboxes with this name", OPT_NAME, NULL},
    {"state", 0, "STATE", "running or paused (default both)", OPT_STATE, "running paused"},
    {"all", 'a', NULL, "also the sandboxes without a name (made by other clients)", OPT_ALL, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* A duration in whole units, as ps and docker do: "45s", "12m", "5h", "3d"; "-" when unknown. */
static const char *age_text(char *buf, size_t len, int64_t from_ms, int64_t to_ms)
{
	int64_t s = (to_ms - from_ms) / 1000;
	if (from_ms <= 0 || s < 0)
		return "-";
	if (s < 60)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm", (long long)(s / 60));
	else if (s < 86400)
		snprintf(buf, len, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, len, "%lldd", (long long)(s / 86400));
	return buf;
}

static int list_run(cli *c, const cli_args *a)
{
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	sbx_error err = {0};
	struct timespec now;
	char age[32];
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		const char *v = a->opts[i].value;
		if (a->opts[i].id == OPT_NAME)
			lo.name = v;
		else if (a->opts[i].id == OPT_ALL)
			lo.all = true;
		else if (strcmp(v, "running") == 0)
			lo.state = SBX_STATE_RUNNING;
		else if (strcmp(v, "paused") == 0)
			lo.state = SBX_STATE_PAUSED;
		else
			return cli_usage_error(c, "--state must be running or paused, got '%s'", v);
	}
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_list(&l, c->prov, &lo, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	clock_gettime(CLOCK_REALTIME, &now);
	if (c->json) {
		cli_json_print(cli_shape_info_list(l));
	} else {
		printf("%-24s %-24s %-8s %-24s %-24s %s\n", "ID", "NAME", "STATE", "STARTED", "END",
		       "AGE");
		for (size_t i = 0; i < l->count; i++) {
			const sbx_sandbox_info *s = &l->items[i];
			json_t *o = cli_shape_sandbox_info(s);
			const char *started =
			    o ? json_string_value(json_object_get(o, "started_at")) : NULL;
			const char *end =
			    o ? json_string_value(json_object_get(o, "end_at")) : NULL;
			printf("%-24s %-24s %-8s %-24s %-24s %s\n", s->id, s->name ? s->name : "-",
			       cli_shape_state_name(s->state), started ? started : "-",
			       end ? end : "-",
			       age_text(age, sizeof(age), s->started_at_ms,
			                (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000));
			json_decref(o);
		}
	}
	sbx_info_list_free(l);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_list = {
    .name = "list",
    .args = "[--name NAME] [--state running|paused] [--all]",
    .summary = "list this deployment's sandboxes",
    .description =
        "Lists the sandboxes made by create (those carrying a name), running and paused,\n"
        "all pages, newest first: ID, NAME, STATE, start and end time (UTC; a running\n"
        "sandbox is paused at its end) and AGE since the start. --all adds the sandboxes\n"
        "of the same E2B team that have no name (NAME -). With --json an array of\n"
        "{\"id\",\"name\",\"state\",\"template_id\",\"started_at\",\"end_at\"}.\n",
    .examples = "  sandbox-e2b list\n"
                "  sandbox-e2b list --state paused --json | jq -r '.[].id'\n"
                "  sandbox-e2b list --name conv-42\n",
    .options = list_options,
    .stop_after = -1,
    .min_pos = 0,
    .max_pos = 0,
    .run = list_run,
};
