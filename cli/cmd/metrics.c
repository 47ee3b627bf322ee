/*
 * cli/cmd/metrics.c: `sandbox-e2b metrics ID [--since DURATION]`:
 * sbx_sandbox_metrics (E2B's getMetrics).
 */
#include "command.h"
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

enum { OPT_SINCE = 1 };

static const cli_option metrics_options[] = {
    {"since", 0, "DURATION", "only the last DURATION (5m, 2h; default: since the start)", OPT_SINCE,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

#define MIB (1024.0 * 1024.0)

static const char *stamp(char *buf, size_t len, int64_t unix_s)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRId64, unix_s);
	return buf;
}

static int metrics_run(cli *c, const cli_args *a)
{
	sbx_metrics *m = NULL;
	sbx_error err = {0};
	int64_t start = 0;
	uint64_t ms;
	char ts[40];
	int rc;

	for (size_t i = 0; i < a->nopts; i++) {
		if ((rc = cli_opt_duration_ms(c, "--since", a->opts[i].value, 1000,
		                              (uint64_t)365 * 24 * 3600 * 1000, &ms)) != 0)
			return rc;
		start = (int64_t)time(NULL) - (int64_t)(ms / 1000);
	}
	if ((rc = cli_provider(c)) != 0)
		return rc;
	if ((rc = sbx_sandbox_metrics(&m, c->prov, a->pos[0], start, 0, c->sig, &err)) < 0)
		return cli_fail(c, rc, &err);
	if (c->json) {
		json_t *o = cli_shape_metrics(a->pos[0], m);
		sbx_metrics_free(m);
		if (!o)
			return cli_oom(c);
		cli_json_print(o);
		return CLI_EXIT_OK;
	}
	printf("%-20s %4s %6s %17s %17s\n", "TIME", "CPUS", "CPU%", "MEM MiB", "DISK MiB");
	for (size_t i = 0; i < m->count; i++) {
		const sbx_metric *x = &m->items[i];
		printf("%-20s %4" PRIu32 " %6.1f %8.1f/%-8.0f %8.1f/%-8.0f\n",
		       stamp(ts, sizeof(ts), x->timestamp_unix), x->cpu_count, x->cpu_used_pct,
		       (double)x->mem_used / MIB, (double)x->mem_total / MIB,
		       (double)x->disk_used / MIB, (double)x->disk_total / MIB);
	}
	if (m->count == 0)
		fprintf(stderr,
		        "%s metrics: no samples in that range (one is kept every 5 s while "
		        "the sandbox runs)\n",
		        c->prog);
	sbx_metrics_free(m);
	return CLI_EXIT_OK;
}

const cli_command cli_cmd_metrics = {
    .name = "metrics",
    .args = "ID [--since DURATION]",
    .summary = "print the sandbox's CPU, memory and disk use over time",
    .description =
        "Prints E2B's samples of the sandbox, oldest first: time (UTC), cores, CPU used\n"
        "(percent of all cores), memory and disk used/total in MiB. E2B keeps a sample\n"
        "every 5 s while the sandbox runs and groups them by the range (5 s under an\n"
        "hour, 30 s under 6 h, ...). --since limits it to the last DURATION. Reads the\n"
        "control plane only: a paused sandbox stays paused.\n",
    .examples = "  sandbox-e2b metrics \"$id\" --since 10m\n"
                "  sandbox-e2b metrics \"$id\" --json | jq '.metrics[-1].mem_used'\n",
    .options = metrics_options,
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "id",
    .run = metrics_run,
};
