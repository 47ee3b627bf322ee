/*
 * cli/demo/demo.c: `sandbox-e2b demo`, an agent-like session end to end.
 *
 * Without E2B credentials it starts the local fake-e2b (port 0) and stops it
 * afterwards; with them it uses E2B. It then creates a sandbox, writes the
 * wordfreq example (a multi-file C program and its Makefile, embedded at build
 * time) into /workspace, builds and runs it with make and gcc, reads and stats
 * the report the program wrote, kills a tagged background command, pauses and
 * resumes the sandbox, checks the files are still there, and destroys it. One
 * narrated line per step with its time in ms; the first failing step is named
 * and the exit code is 1. This file is the command; demo.h names the others.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "demo.h"
#include "shapes.h"

enum { OPT_FAKE = 1, OPT_LOCAL, OPT_KEEP, OPT_NAME };

static const cli_option demo_options[] = {
    {"fake-e2b", 0, "PATH", "the fake-e2b binary to start", OPT_FAKE, NULL},
    {"local", 0, NULL, "use fake-e2b even when E2B credentials are set", OPT_LOCAL, NULL},
    {"keep", 0, NULL, "do not destroy the sandbox at the end (prints its id)", OPT_KEEP, NULL},
    {"name", 0, "NAME", "sandbox name (default sbx-demo-<pid>)", OPT_NAME, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void demo_opt(demo *d, int id, const char *v)
{
	switch (id) {
	case OPT_FAKE:
		d->fake_path = v;
		break;
	case OPT_LOCAL:
		d->local = true;
		break;
	case OPT_KEEP:
		d->keep = true;
		break;
	case OPT_NAME:
		d->name = v;
		break;
	}
}

/* Destroy a sandbox left by a failed step and stop the local server. */
static void demo_cleanup(demo *d, int rc)
{
	cli *c = d->c;

	if (d->id && !d->keep) {
		sbx_error err = {0};
		/* No abort signal, so Ctrl-C still cleans up. */
		if (sbx_sandbox_destroy(c->prov, d->id, NULL, &err) < 0)
			fprintf(stderr,
			        "%s demo: could not destroy sandbox %s: %s; run '%s destroy %s'\n",
			        c->prog, d->id, err.message, c->prog, d->id);
	}
	if (d->local && d->fake_pid > 0) {
		/* The provider goes first: its connections point at the server. */
		sbx_provider_free(c->prov);
		c->prov = NULL;
		demo_step_begin(d);
		demo_stop_fake(d);
		if (rc == 0)
			demo_step_ok(d, "stop fake-e2b", "stopped");
	}
}

/* --json: {"passed","failed_step","total_ms","sandbox_id"?,"report"?,"steps":[...]}. */
static void demo_print_json(demo *d, int rc)
{
	json_t *o = json_pack("{s:b,s:s?,s:I,s:o}", "passed", rc == 0, "failed_step", d->failed,
	                      "total_ms", (json_int_t)(demo_now_ms() - d->t0), "steps", d->steps);

	d->steps = NULL; /* stolen by "o" */
	if (o && d->keep && d->id)
		json_object_set_new(o, "sandbox_id", json_string(d->id));
	if (o && d->report && cli_shape_bytes(o, "report", d->report, d->report_len) < 0) {
		json_decref(o);
		o = NULL;
	}
	cli_json_print(o);
}

static int demo_run(cli *c, const cli_args *a)
{
	demo d = {.c = c, .fake_fd = -1};
	int rc;

	for (size_t i = 0; i < a->nopts; i++)
		demo_opt(&d, a->opts[i].id, a->opts[i].value);
	if (!d.name) {
		snprintf(d.name_buf, sizeof(d.name_buf), "sbx-demo-%d", (int)getpid());
		d.name = d.name_buf;
	}
	d.local = d.local || !cli_have_credentials(c);
	d.t0 = demo_now_ms();
	if (c->json && !(d.steps = json_array()))
		return cli_oom(c);
	if (d.local) {
		if (!c->json)
			printf(
			    "sandbox-e2b demo: local fake-e2b (no E2B credentials; set E2B_API_KEY "
			    "and E2B_TEMPLATE to use E2B)\n");
		fflush(stdout);
		demo_hold(&d, "local fake-e2b");
		rc = demo_start_local(&d);
	} else if ((rc = cli_provider(c)) == 0 && !c->json) {
		printf("sandbox-e2b demo: E2B at %s, template %s\n", c->cfg->effective_api_url,
		       c->cfg->template_id);
		fflush(stdout);
	}
	if (rc == 0)
		rc = demo_session(&d);
	demo_cleanup(&d, rc);
	/* A Ctrl-C during the last step or the cleanup still fails the run. */
	if (rc == 0)
		rc = demo_check_abort(&d, "finish");
	if (c->json)
		demo_print_json(&d, rc);
	else if (rc == 0)
		printf("demo passed: %d steps in %" PRIu64 " ms\n", d.step, demo_now_ms() - d.t0);
	sbx_free(d.id);
	free(d.report);
	return rc;
}

const cli_command cli_cmd_demo = {
    .name = "demo",
    .args = "[--fake-e2b PATH] [--local] [--keep] [--name NAME]",
    .summary = "an agent-like session end to end, narrated with timings",
    .description =
        "Runs an agent-like session and narrates each step with its time in ms: create a\n"
        "sandbox, write a multi-file C program (wordfreq) and its Makefile into\n"
        "/workspace, build and run it with make and gcc, read and stat the report it\n"
        "wrote, start 'sleep 300' tagged 'bg' and kill it by tag, pause and resume the\n"
        "sandbox and check the files are still there, then destroy it.\n"
        "\n"
        "Without E2B credentials (--config, SANDBOX_E2B_CONFIG or E2B_API_KEY) it starts\n"
        "the local fake-e2b server on a free port and stops it afterwards. fake-e2b is\n"
        "looked up as --fake-e2b PATH, $FAKE_E2B, ../fake-e2b/fake-e2b next to this\n"
        "program (the build tree), this program's directory, then PATH.\n"
        "\n"
        "With --json, one object: {\"passed\",\"failed_step\",\"total_ms\",\"steps\":[...],\n"
        "\"report\"}.\n"
        "\n"
        "Exit 0 when every step passed; 1 naming the failed step; 130 on Ctrl-C.\n",
    .examples = "  sandbox-e2b demo\n"
                "  E2B_API_KEY=e2b_... E2B_TEMPLATE=capybara-sandbox sandbox-e2b demo\n",
    .options = demo_options,
    .stop_after = -1,
    .min_pos = 0,
    .max_pos = 0,
    .run = demo_run,
};
