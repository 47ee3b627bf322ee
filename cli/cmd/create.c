/*
 * cli/cmd/create.c: `sandbox-e2b create NAME`: sbx_sandbox_create.
 */
#include "command.h"
#include "shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds of the validated-only limits: far above any machine, low enough to be a typo. */
#define CREATE_MAX_CPU       1024.0
#define CREATE_MAX_MEMORY_MB (1024.0 * 1024 * 1024) /* 1 PiB */
#define CREATE_MAX_DISK_MB   (1024.0 * 1024 * 1024)

enum {
	OPT_CPU = 1,
	OPT_MEMORY,
	OPT_DISK,
	OPT_EGRESS,
	OPT_ALLOW_HOST,
	OPT_TIMEOUT,
	OPT_ENV,
	OPT_METADATA
};

static const cli_option create_options[] = {
    {"cpu", 0, "N", "cores (default 1; at most 1024)", OPT_CPU, NULL},
    {"memory-mb", 0, "N", "MiB (default 2048)", OPT_MEMORY, NULL},
    {"disk-mb", 0, "N", "MiB (default 10240)", OPT_DISK, NULL},
    {"egress", 0, "POLICY",
     "none (default), allowlist, or open (open needs\nallowOpenEgress in the config)", OPT_EGRESS,
     "none allowlist open"},
    {"allow-host", 0, "H",
     "with --egress allowlist: a hostname, *.domain,\nIPv4 or CIDR; repeat for more",
     OPT_ALLOW_HOST, NULL},
    {"timeout", 0, "DURATION",
     "the sandbox's first lifetime (5m, 2h; whole seconds, at\nmost 24h; default the "
     "config's timeoutSeconds)",
     OPT_TIMEOUT, NULL},
    {"env", 0, "K=V", "environment of every process in the sandbox; repeat", OPT_ENV, NULL},
    {"metadata", 0, "K=V", "a metadata pair (list and info do not show it); repeat", OPT_METADATA,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct create_state {
	sbx_limits lim;
	const char *hosts[CLI_MAX_OPTS];
	size_t nhosts;
	sbx_create_options o;
	sbx_env_var env[CLI_MAX_OPTS], md[CLI_MAX_OPTS];
	char *keys[CLI_MAX_OPTS]; /* the K of each K=V, malloc'd */
	size_t nkeys;
	bool with; /* a lifetime option was given: sbx_sandbox_create_with */
} create_state;

/* K=V into *kv (K copied); 0 or an exit code. */
static int key_value(cli *c, create_state *s, const char *opt, const char *v, sbx_env_var *kv)
{
	const char *eq = strchr(v, '=');

	if (!eq || eq == v)
		return cli_usage_error(c, "%s needs KEY=VALUE, got '%s'", opt, v);
	if (!(s->keys[s->nkeys] = strndup(v, (size_t)(eq - v))))
		return cli_oom(c);
	kv->key = s->keys[s->nkeys++];
	kv->value = eq + 1;
	s->with = true;
	return 0;
}

static int create_opt(cli *c, create_state *s, int id, const char *v)
{
	switch (id) {
	case OPT_CPU:
		return cli_opt_number(c, "--cpu", v, CREATE_MAX_CPU, &s->lim.cpu);
	case OPT_MEMORY:
		return cli_opt_number(c, "--memory-mb", v, CREATE_MAX_MEMORY_MB, &s->lim.memory_mb);
	case OPT_DISK:
		return cli_opt_number(c, "--disk-mb", v, CREATE_MAX_DISK_MB, &s->lim.disk_mb);
	case OPT_EGRESS:
		if (strcmp(v, "none") == 0)
			s->lim.egress = SBX_EGRESS_NONE;
		else if (strcmp(v, "allowlist") == 0)
			s->lim.egress = SBX_EGRESS_ALLOWLIST;
		else if (strcmp(v, "open") == 0)
			s->lim.egress = SBX_EGRESS_OPEN;
		else
			return cli_usage_error(
			    c, "--egress must be none, allowlist or open, got '%s'", v);
		return 0;
	case OPT_ALLOW_HOST:
		s->hosts[s->nhosts++] = v; /* at most CLI_MAX_OPTS options in all */
		return 0;
	case OPT_TIMEOUT: {
		uint64_t ms;
		int rc = cli_opt_duration_ms(c, "--timeout", v, 1000,
		                             (uint64_t)SBX_MAX_TIMEOUT_SECONDS * 1000, &ms);
		if (rc != 0)
			return rc;
		s->o.timeout_seconds = ms / 1000 + (ms % 1000 != 0);
		s->with = true;
		return 0;
	}
	case OPT_ENV:
		return key_value(c, s, "--env", v, &s->env[s->o.env_count++]);
	case OPT_METADATA:
		return key_value(c, s, "--metadata", v, &s->md[s->o.metadata_count++]);
	}
	return 0;
}

/* The first allow host the library's rule refuses, or NULL. */
static const char *refused_host(const create_state *s)
{
	for (size_t i = 0; i < s->nhosts; i++)
		if (sbx_validate_allow_host(s->hosts[i], NULL) < 0)
			return s->hosts[i];
	return NULL;
}

/*
 * Report a failed create, with a hint for a refused egress policy or allow host: chosen from
 * the request and the config (the library's rules), never from the message.
 */
static int create_fail(cli *c, int rc, const sbx_error *err, const create_state *s)
{
	char hint[512];

	if (rc != SBX_EINVALID)
		return cli_fail(c, rc, err);
	if (s->lim.egress == SBX_EGRESS_OPEN && c->cfg && !c->cfg->allow_open_egress)
		return cli_fail_hint(c, rc, err,
		                     "set \"allowOpenEgress\": true in the deployment config "
		                     "(--config FILE or SANDBOX_E2B_CONFIG), or use --egress "
		                     "allowlist with --allow-host");
	if (s->lim.egress == SBX_EGRESS_ALLOWLIST && refused_host(s)) {
		const char *bad = NULL;
		for (size_t i = 0; i < s->nhosts && !bad; i++)
			if (strstr(s->hosts[i], "://") || strchr(s->hosts[i], ':'))
				bad = s->hosts[i];
		snprintf(hint, sizeof(hint),
		         "%s%.200s%sallow hosts are hostnames (optionally '*.' first, e.g. "
		         "'*.pythonhosted.org'), IPv4 addresses or CIDRs (10.0.0.0/8), not URLs",
		         bad ? "'" : "", bad ? bad : "", bad ? "' is a URL; " : "");
		return cli_fail_hint(c, rc, err, hint);
	}
	return cli_fail(c, rc, err);
}

static int create_run(cli *c, const cli_args *a)
{
	static create_state s; /* large (the K=V tables); one create per run */
	sbx_error err = {0};
	char *id = NULL;
	int rc;

	s = (create_state){.lim = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0},
	                   .o = SBX_CREATE_OPTIONS_INIT};
	for (size_t i = 0; i < a->nopts; i++)
		if ((rc = create_opt(c, &s, a->opts[i].id, a->opts[i].value)) != 0)
			goto done;
	rc = CLI_EXIT_USAGE;
	if (s.nhosts && s.lim.egress != SBX_EGRESS_ALLOWLIST) {
		rc = cli_usage_error(c, "--allow-host needs --egress allowlist");
		goto done;
	}
	if ((rc = cli_provider(c)) != 0)
		goto done;
	s.lim.allow_hosts = s.hosts;
	s.lim.allow_hosts_count = s.nhosts;
	s.o.env = s.env;
	s.o.metadata = s.md;
	/* what create will replace, for the notice (create itself says nothing of it) */
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *before = NULL;
	lo.name = a->pos[0];
	if (sbx_sandbox_list(&before, c->prov, &lo, c->sig, NULL) < 0)
		before = NULL; /* no notice then; create reports its own errors */
	if ((rc = sbx_sandbox_create_with(&id, c->prov, a->pos[0], &s.lim, s.with ? &s.o : NULL,
	                                  c->sig, &err)) < 0) {
		rc = create_fail(c, rc, &err, &s);
		sbx_info_list_free(before);
		goto done;
	}
	if (before && before->count > 0)
		fprintf(stderr, "%s create: replaced %zu sandbox%s named %s (%s%s)\n", c->prog,
		        before->count, before->count == 1 ? "" : "es", a->pos[0],
		        before->items[0].id, before->count > 1 ? ", ..." : "");
	sbx_info_list_free(before);
	if (c->json)
		cli_json_print(cli_shape_created(id, a->pos[0]));
	else
		printf("%s\n", id);
	sbx_free(id);
	rc = CLI_EXIT_OK;
done:
	for (size_t i = 0; i < s.nkeys; i++)
		free(s.keys[i]);
	return rc;
}

const cli_command cli_cmd_create = {
    .name = "create",
    .args = "NAME [--cpu N] [--memory-mb N] [--disk-mb N]\n"
            "                          [--egress none|allowlist|open] [--allow-host H]...\n"
            "                          [--timeout DURATION] [--env K=V]... [--metadata K=V]...",
    .summary = "create a sandbox named NAME (replacing one with that name)",
    .description =
        "Creates a sandbox and prints its id. Any sandbox already named NAME (running or\n"
        "paused) is destroyed first, and a line on stderr says so.\n"
        "NAME: ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$.\n"
        "cpu / memory / disk are validated only (E2B fixes them in the template).\n"
        "--timeout sets the first lifetime only: a later exec or file command connects\n"
        "and extends it to the config's timeoutSeconds; set-timeout sets it exactly.\n",
    .examples = "  id=$(sandbox-e2b create conv-42)\n"
                "  sandbox-e2b create conv-42 --egress allowlist --allow-host pypi.org \\\n"
                "      --allow-host '*.pythonhosted.org'\n"
                "  sandbox-e2b create job-7 --timeout 10m --env MODE=ci --metadata owner=ana\n",
    .options = create_options,
    .stop_after = -1,
    .min_pos = 1,
    .max_pos = 1,
    .complete = "name",
    .run = create_run,
};
