/*
 * examples/list.c: list this deployment's sandboxes (optionally only those
 * named NAME), then describe each with sbx_sandbox_get_info() and list its
 * /workspace when it is running.
 *
 * Build (installed library):  cc list.c $(pkg-config --cflags --libs sandbox-e2b)
 * Built by CMake too:         build/examples/example-list
 * Run: SANDBOX_E2B_CONFIG='{"apiKey":"e2b_...","template":"capybara-sandbox"}' \
 *                             ./example-list [NAME]
 * (against fake-e2b add "apiUrl" to the config and SANDBOX_E2B_ENVD_URL, as in hello.c)
 */
#include <sandbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void print_time(const char *label, int64_t ms)
{
	char buf[32] = "unknown";
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (ms != 0 && gmtime_r(&t, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("  %s %s\n", label, buf);
}

int main(int argc, char **argv)
{
	const char *json = getenv("SANDBOX_E2B_CONFIG");
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_e2b_config *cfg = NULL;
	sbx_provider *p = NULL;
	sbx_info_list *list = NULL;
	sbx_error err = {0};
	int rc = 1;

	if (!json) {
		fprintf(stderr, "list: set SANDBOX_E2B_CONFIG to the deployment config JSON\n");
		return 2;
	}
	opts.envd_url = getenv("SANDBOX_E2B_ENVD_URL");
	lo.name = argc > 1 ? argv[1] : NULL;
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &err) < 0 ||
	    sbx_e2b_provider_new(&p, cfg, &opts, &err) < 0 ||
	    sbx_sandbox_list(&list, p, &lo, NULL, &err) < 0)
		goto done;
	printf("%zu sandbox(es)\n", list->count);
	for (size_t i = 0; i < list->count; i++) {
		sbx_sandbox_info *info = NULL;
		sbx_dir *dir = NULL;

		sbx_error_clear(&err);
		if (sbx_sandbox_get_info(&info, p, list->items[i].id, NULL, &err) < 0) {
			/* deleted since the list was taken: say so, go on */
			printf("%s: %s\n", list->items[i].id, err.message);
			continue;
		}
		printf("%s name=%s state=%s template=%s\n", info->id, info->name ? info->name : "-",
		       info->state == SBX_STATE_RUNNING ? "running" : "paused", info->template_id);
		print_time("started", info->started_at_ms);
		print_time("ends   ", info->end_at_ms);
		/* listing files connects, which would resume a paused sandbox: only running ones */
		if (info->state == SBX_STATE_RUNNING &&
		    sbx_sandbox_list_dir(&dir, p, info->id, "/workspace", NULL, &err) == 0 && dir) {
			for (size_t k = 0; k < dir->count; k++)
				printf("  /workspace/%s%s %llu bytes\n", dir->entries[k].name,
				       dir->entries[k].type == SBX_ENTRY_DIR ? "/" : "",
				       (unsigned long long)dir->entries[k].size);
		}
		sbx_dir_free(dir);
		sbx_sandbox_info_free(info);
	}
	rc = 0;
done:
	if (rc)
		fprintf(stderr, "list: %s (%s)\n", err.message, sbx_error_code_name(err.code));
	sbx_info_list_free(list);
	sbx_provider_free(p);
	sbx_e2b_config_free(cfg);
	return rc;
}
