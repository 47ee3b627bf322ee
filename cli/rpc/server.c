/*
 * cli/rpc/server.c: what every call of one `serve` process shares: the one
 * writer, the provider made from the deployment config (at start, or by
 * `initialize`, whose config gets its missing keys from the E2B_* variables
 * as the CLI's does: cli_config_fill_env), the logger that sends the library's log lines as `log`
 * notifications or to stderr, and the lock and list head that processes.c
 * keeps its background commands under.
 *
 * The provider changes only through serve_configure, which dispatch.c runs on
 * the reader thread while no call is in flight and no background command is
 * remembered, so a call's provider never changes under it.
 */
#include "cli.h"
#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct serve_server {
	serve_writer w;
	size_t max_line;
	sbx_provider *prov;
	sbx_e2b_config *cfg;
	char *envd_url;
	char config_error[640]; /* why the CLI's config was refused, for -32001 */
	char config_reason[32]; /* its SBX_E2B_CONFIG_* reason */
	json_t *config_vars;    /* the variables behind the CLI's config (cli_config_vars) */
	bool log_notify;
	int log_min;        /* lines below this level are dropped (-v: debug; else warn) */
	pthread_mutex_t mu; /* guards procs */
	serve_proc *procs;  /* background commands (processes.c) */
	serve_pty *ptys;    /* terminals (ptys.c), under mu too */
};

static void log_line(sbx_log_level level, const char *message, const sbx_log_field *fields,
                     size_t nfields, void *payload)
{
	serve_server *s = payload;

	if ((int)level < s->log_min)
		return;
	if (s->log_notify) {
		serve_notify_log(&s->w, level, message, fields, nfields);
		return;
	}
	flockfile(stderr);
	fprintf(stderr, "sandbox-e2b serve: %s: %s", sbx_log_level_name(level),
	        cli_lib_message(message));
	for (size_t i = 0; i < nfields; i++)
		fprintf(stderr, " %s=%s", fields[i].key, fields[i].value ? fields[i].value : "");
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* Make the provider from a config JSON text; on failure f says why (secret-free), and a refused
 * config's reason goes to `reason` (when not NULL: initialize's error leaves it out, so the
 * packages' errors stay as they were). */
static int make_provider(serve_server *s, const char *json, size_t len, serve_fail *f,
                         char reason[32])
{
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_e2b_config *cfg = NULL;
	sbx_provider *prov = NULL;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_e2b_config_parse(&cfg, json, len, &err)) < 0) {
		serve_failf(f, RPC_INVALID_PARAMS, "invalid deployment config: %s",
		            cli_lib_message(err.message));
		f->lib = err;
		f->lib.code = rc;
		if (reason)
			snprintf(reason, 32, "%s", err.e2b_code);
		f->lib.e2b_code[0] = '\0';
		return -1;
	}
	opts.envd_url = s->envd_url;
	opts.logger.fn = log_line;
	opts.logger.payload = s;
	if ((rc = sbx_e2b_provider_new(&prov, cfg, &opts, &err)) < 0) {
		sbx_e2b_config_free(cfg);
		serve_failf(f, RPC_INVALID_PARAMS, "%s", cli_lib_message(err.message));
		f->lib = err;
		f->lib.code = rc;
		return -1;
	}
	sbx_provider_free(s->prov);
	sbx_e2b_config_free(s->cfg);
	s->prov = prov;
	s->cfg = cfg;
	return 0;
}

int serve_server_new(serve_server **out, const serve_options *o)
{
	serve_server *s = calloc(1, sizeof(*s));
	serve_fail f;

	*out = NULL;
	if (!s)
		return -1;
	if (o->envd_url && !(s->envd_url = strdup(o->envd_url))) {
		free(s);
		return -1;
	}
	s->max_line = o->max_line;
	s->log_min = o->verbose ? SBX_LOG_DEBUG : SBX_LOG_WARN;
	wire_writer_init(&s->w, o->out_fd);
	pthread_mutex_init(&s->mu, NULL);
	s->config_vars = json_incref(o->config_vars);
	if (o->config_json &&
	    make_provider(s, o->config_json, strlen(o->config_json), &f, s->config_reason) < 0) {
		snprintf(s->config_error, sizeof(s->config_error), "%s", f.message);
		fprintf(stderr, "sandbox-e2b serve: %s; waiting for initialize\n", f.message);
	}
	*out = s;
	return 0;
}

void serve_server_free(serve_server *s)
{
	if (!s)
		return;
	sbx_provider_free(s->prov);
	sbx_e2b_config_free(s->cfg);
	free(s->envd_url);
	json_decref(s->config_vars);
	pthread_mutex_destroy(&s->mu);
	wire_writer_free(&s->w);
	free(s);
}

int serve_configure(serve_server *s, json_t *config, const char *envd_url, const char *log_mode,
                    int log_min, serve_fail *f)
{
	if (log_mode)
		s->log_notify = strcmp(log_mode, "notify") == 0;
	if (log_min >= 0)
		s->log_min = log_min;
	if (envd_url) {
		char *copy = strdup(envd_url);
		if (!copy)
			return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
		free(s->envd_url);
		s->envd_url = copy;
	}
	if (config) {
		/* a key it leaves out comes from its E2B_* variable, as for every front end */
		json_t *full = json_copy(config);
		char *text =
		    full && cli_config_fill_env(full) >= 0 ? json_dumps(full, JSON_COMPACT) : NULL;
		json_decref(full);
		if (!text)
			return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
		int rc = make_provider(s, text, strlen(text), f, NULL);
		memset(text, 0, strlen(text)); /* holds the API key */
		free(text);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int serve_server_describe(serve_server *s, json_t *into)
{
	char *redacted = NULL;
	json_t *r;

	if (s->cfg && sbx_e2b_config_to_json(&redacted, s->cfg, NULL) < 0)
		return -1;
	r = json_pack("{s:b,s:I,s:b,s:o}", "concurrent_exec",
	              s->prov ? sbx_provider_concurrent_exec(s->prov) : true, "max_line_bytes",
	              (json_int_t)s->max_line, "configured", s->prov != NULL, "error_codes",
	              serve_error_codes());
	if (r && redacted)
		json_object_set_new(r, "config", json_loads(redacted, 0, NULL));
	sbx_free(redacted);
	if (!r || json_object_update(into, r) < 0) {
		json_decref(r);
		return -1;
	}
	json_decref(r);
	return 0;
}

sbx_provider *serve_provider_of(serve_server *s)
{
	return s->prov;
}

const char *serve_config_error(serve_server *s)
{
	return s->config_error;
}

const char *serve_config_reason(serve_server *s)
{
	return s->config_reason;
}

json_t *serve_config_vars(serve_server *s)
{
	return s->config_vars;
}

serve_writer *serve_writer_of(serve_server *s)
{
	return &s->w;
}

serve_proc **serve_procs_of(serve_server *s)
{
	return &s->procs;
}

serve_pty **serve_ptys_of(serve_server *s)
{
	return &s->ptys;
}

pthread_mutex_t *serve_lock_of(serve_server *s)
{
	return &s->mu;
}
