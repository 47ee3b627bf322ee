/*
 * examples/background.c: a background command. Starts `sort` in a new
 * sandbox with its stdin open, lists the sandbox's running commands, feeds
 * sort three lines from this thread, closes its stdin, waits for it and
 * prints its output; then starts `sleep 600` and kills it (whole tree).
 *
 * Configuration as in examples/hello.c (SANDBOX_E2B_CONFIG, SANDBOX_E2B_ENVD_URL).
 * Build (installed library):  cc background.c $(pkg-config --cflags --libs sandbox-e2b)
 */
#include <sandbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const sbx_error *err)
{
	fprintf(stderr, "background: %s failed: %s (%s)\n", what, err->message,
	        sbx_error_code_name(err->code));
	return 1;
}

static int run(sbx_provider *p, const char *id, sbx_error *err)
{
	sbx_process_options opts = SBX_PROCESS_OPTIONS_INIT;
	sbx_process_info_list *list = NULL;
	sbx_exec_result res = {0};
	sbx_process *sort = NULL, *sleeper = NULL;
	int rc = 1;

	opts.stdin_open = true;
	if (sbx_process_start(&sort, p, id, "sort", &opts, NULL, err) < 0)
		return fail("start", err);
	printf("sort runs as pid %u\n", (unsigned)sbx_process_pid(sort));
	if (sbx_process_list(&list, p, id, NULL, err) < 0) {
		rc = fail("list", err);
		goto done;
	}
	for (size_t i = 0; i < list->count; i++)
		printf("running: pid %u %s\n", (unsigned)list->items[i].pid,
		       list->items[i].command ? list->items[i].command : list->items[i].cmd);
	if (sbx_process_send_stdin(sort, "pear\napple\nfig\n", 15, NULL, err) < 0 ||
	    sbx_process_close_stdin(sort, NULL, err) < 0 ||
	    sbx_process_wait(&res, sort, NULL, err) < 0) {
		rc = fail("sort", err);
		goto done;
	}
	fwrite(res.stdout_data, 1, res.stdout_len, stdout);
	/* a command we give up on: kill ends it and everything it started */
	if (sbx_process_start(&sleeper, p, id, "sleep 600 & sleep 601", NULL, NULL, err) < 0 ||
	    sbx_process_kill(sleeper, NULL, err) < 0) {
		rc = fail("kill", err);
		goto done;
	}
	printf("killed pid %u\n", (unsigned)sbx_process_pid(sleeper));
	rc = 0;
done:
	sbx_process_info_list_free(list);
	sbx_exec_result_free(&res);
	sbx_process_free(sleeper);
	sbx_process_free(sort);
	return rc;
}

int main(void)
{
	const char *json = getenv("SANDBOX_E2B_CONFIG");
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_limits limits = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	sbx_e2b_config *cfg = NULL;
	sbx_provider *p = NULL;
	sbx_error err = {0};
	char *id = NULL;
	int rc = 1;

	if (!json) {
		fprintf(stderr,
		        "background: set SANDBOX_E2B_CONFIG to the deployment config JSON\n");
		return 2;
	}
	opts.envd_url = getenv("SANDBOX_E2B_ENVD_URL");
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &err) < 0) {
		rc = fail("config", &err);
		goto done;
	}
	if (sbx_e2b_provider_new(&p, cfg, &opts, &err) < 0) {
		rc = fail("provider", &err);
		goto done;
	}
	if (sbx_sandbox_create(&id, p, "background-example", &limits, NULL, &err) < 0) {
		rc = fail("create", &err);
		goto done;
	}
	rc = run(p, id, &err);
done:
	sbx_error_clear(&err);
	if (id && sbx_sandbox_destroy(p, id, NULL, &err) < 0)
		fail("destroy", &err);
	sbx_free(id);
	sbx_provider_free(p);
	sbx_e2b_config_free(cfg);
	return rc;
}
