/*
 * cli/config.c: where the tool's deployment config comes from, and the
 * provider made from it.
 *
 * Sources, first found wins: --config FILE; SANDBOX_E2B_CONFIG (the JSON
 * itself); E2B_API_KEY. In each, --template sets the template and a key left
 * out comes from E2B_API_KEY / E2B_TEMPLATE / E2B_API_URL / E2B_DOMAIN, the
 * variables E2B users already have (serve applies the same rule to the config
 * `initialize` gives it, for bindings/node and bindings/python). Every source
 * becomes the deployment-config JSON (docs/contract.md "The deployment config")
 * and goes through sbx_e2b_config_parse(), so one validator decides. The API
 * key is never printed.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_CONFIG (1024 * 1024)

int cli_read_file(const char *path, char **data, size_t *len, size_t max)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *buf;
	int error = 0;

	if (!f)
		return -errno;
	if (!(buf = malloc(cap + 1))) {
		error = -ENOMEM;
		goto done;
	}
	for (;;) {
		size_t got;
		if (n == cap) {
			char *nb;
			if (cap >= max) {
				error = -EFBIG;
				goto done;
			}
			cap = cap * 2 > max ? max : cap * 2;
			if (!(nb = realloc(buf, cap + 1))) {
				error = -ENOMEM;
				goto done;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f))
				error = -EIO;
			break;
		}
	}
done:
	if (f != stdin)
		fclose(f);
	if (error) {
		free(buf);
		return error;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

bool cli_have_credentials(const cli *c)
{
	return c->config_path || env("SANDBOX_E2B_CONFIG") || env("E2B_API_KEY");
}

/*
 * The keys taken from E2B_* variables, as E2B's SDKs do (README "Configuration"): the rule's
 * one source. README.md's table repeats it (scripts/check-facts.sh, run by lint, fails when
 * they differ); the Node and Python packages leave it to serve's initialize.
 */
static const char *const env_keys[][2] = {{"apiKey", "E2B_API_KEY"},
                                          {"template", "E2B_TEMPLATE"},
                                          {"apiUrl", "E2B_API_URL"},
                                          {"domain", "E2B_DOMAIN"}};

int cli_config_fill_env(json_t *o)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(env_keys) / sizeof(env_keys[0]); i++) {
		if (json_object_get(o, env_keys[i][0]) || !env(env_keys[i][1]))
			continue;
		if (json_object_set_new(o, env_keys[i][0], json_string(env(env_keys[i][1]))) < 0)
			return -1;
		n++;
	}
	return n;
}

json_t *cli_config_vars(const cli *c)
{
	json_t *vars = json_array();
	/* with no source: the variables of the two keys a config must have (apiKey, template) */
	size_t n = cli_have_credentials(c) ? sizeof(env_keys) / sizeof(env_keys[0]) : 2;

	if (vars && !c->config_path && env("SANDBOX_E2B_CONFIG") &&
	    json_array_append_new(vars, json_string("SANDBOX_E2B_CONFIG")) < 0)
		goto oom;
	for (size_t i = 0; vars && i < n; i++)
		if (json_array_append_new(vars, json_string(env_keys[i][1])) < 0)
			goto oom;
	return vars;
oom:
	json_decref(vars);
	return NULL;
}

/*
 * The rule of every front end (README "Configuration"): --template replaces the template; a
 * key the config leaves out comes from its variable (cli_config_fill_env). Text that is not
 * an object is left to the validator.
 */
static int complete_from_env(cli *c, char **json, size_t len)
{
	json_error_t jerr;
	json_t *o;
	char *text;
	int filled;
	bool changed = false;

	o = json_loadb(*json, len, 0, &jerr);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return 0;
	}
	if (c->template_id) {
		json_object_set_new(o, "template", json_string(c->template_id));
		changed = true;
	}
	if ((filled = cli_config_fill_env(o)) < 0) {
		json_decref(o);
		return cli_oom(c);
	}
	changed = changed || filled > 0;
	text = changed ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!changed)
		return 0;
	if (!text)
		return cli_oom(c);
	memset(*json, 0, len); /* holds the API key */
	free(*json);
	*json = text;
	return 0;
}

int cli_config_json(cli *c, char **out)
{
	char *text = NULL;
	size_t len;
	int rc;

	if (c->config_path) {
		char ebuf[128];
		if ((rc = cli_read_file(c->config_path, &text, &len, CLI_MAX_CONFIG)) < 0)
			return cli_usage_error(c, "cannot read config file '%s': %s",
			                       c->config_path,
			                       cli_strerror(-rc, ebuf, sizeof(ebuf)));
	} else if (env("SANDBOX_E2B_CONFIG")) {
		if (!(text = strdup(env("SANDBOX_E2B_CONFIG"))))
			return cli_oom(c);
		len = strlen(text);
	} else if (env("E2B_API_KEY")) {
		if (!(text = strdup("{}"))) /* every key from its variable */
			return cli_oom(c);
		len = 2;
	} else {
		return cli_usage_error(
		    c, "no E2B configuration: set E2B_API_KEY and E2B_TEMPLATE (or --template), "
		       "or pass --config FILE, or set SANDBOX_E2B_CONFIG to the config JSON "
		       "(try 'sandbox-e2b demo', which needs none)");
	}
	if ((rc = complete_from_env(c, &text, len)) != 0) {
		free(text);
		return rc;
	}
	*out = text;
	return 0;
}

/* Where the config came from, for the hint (the order of cli_config_json). */
static bool config_from_env_vars(const cli *c)
{
	return !c->config_path && !env("SANDBOX_E2B_CONFIG") && env("E2B_API_KEY");
}

/*
 * What to do about an invalid config, from the validator's reason (sandbox/e2b.h
 * SBX_E2B_CONFIG_*), never its message: a key's name in the message comes from the input.
 */
static const char *config_hint(const cli *c, const char *reason)
{
	if (strcmp(reason, SBX_E2B_CONFIG_NOT_JSON) == 0)
		return "fix the JSON syntax near the line and column named above";
	if (strcmp(reason, SBX_E2B_CONFIG_NOT_OBJECT) == 0)
		return "the config must be one JSON object, e.g. "
		       "{\"apiKey\":\"e2b_...\",\"template\":\"base\"}";
	if (config_from_env_vars(c) && strcmp(reason, SBX_E2B_CONFIG_TEMPLATE) == 0)
		return "set E2B_TEMPLATE or pass --template T";
	if (config_from_env_vars(c)) {
		static char vars[256]; /* the CLI's one thread */
		int n = snprintf(vars, sizeof(vars),
		                 "fix the E2B_* variable behind the key named above (");
		for (size_t i = 0; i < sizeof(env_keys) / sizeof(env_keys[0]); i++)
			if (n > 0 && (size_t)n < sizeof(vars))
				n += snprintf(vars + n, sizeof(vars) - (size_t)n, "%s%s: %s",
				              i ? ", " : "", env_keys[i][0], env_keys[i][1]);
		if (n > 0 && (size_t)n < sizeof(vars))
			snprintf(vars + n, sizeof(vars) - (size_t)n, ")");
		return vars;
	}
	return "fix the keys named above (see docs/cli.md \"Configuration\"; check a file with "
	       "'sandbox-e2b config check FILE')";
}

int cli_config_parse(cli *c, const char *json, bool check, sbx_e2b_config **out)
{
	sbx_error err = {0};
	int rc = sbx_e2b_config_parse(out, json, strlen(json), &err);
	const char *msg, *hint;

	if (rc == 0)
		return 0;
	if (rc != SBX_EINVALID)
		return cli_fail(c, rc, &err);
	msg = cli_lib_message(err.message);
	hint = config_hint(c, err.e2b_code);
	fprintf(stderr, "%s: invalid deployment config: %s\n", c->prog, msg);
	fprintf(stderr, "%s: %s\n", c->prog, hint);
	if (c->json) {
		json_t *e = json_pack("{s:s,s:s,s:s}", "code", "SBX_EINVALID", "message", msg,
		                      "hint", hint);
		if (check)
			cli_json_print(e ? json_pack("{s:b,s:o}", "valid", 0, "error", e) : NULL);
		else
			cli_json_print(e ? json_pack("{s:o}", "error", e) : NULL);
	}
	return CLI_EXIT_USAGE;
}

static void log_to_stderr(sbx_log_level level, const char *message, const sbx_log_field *fields,
                          size_t nfields, void *payload)
{
	const cli *c = payload;

	if (level < SBX_LOG_WARN && !c->verbose)
		return;
	flockfile(stderr);
	fprintf(stderr, "%s: %s: %s", c->prog, sbx_log_level_name(level), cli_lib_message(message));
	for (size_t i = 0; i < nfields; i++)
		fprintf(stderr, " %s=%s", fields[i].key, fields[i].value ? fields[i].value : "");
	fputc('\n', stderr);
	funlockfile(stderr);
}

void cli_set_logger(cli *c, sbx_e2b_options *opts)
{
	opts->logger.fn = log_to_stderr;
	opts->logger.payload = c;
}

/*
 * Only create and demo send the template (the create body's templateID). The seed's schema
 * (docs/contract.md "The deployment config") requires it at load, so for every other command a
 * config without one gets this stand-in: `list` with only E2B_API_KEY + E2B_API_URL works (README
 * "Where sandbox-e2b differs from the seed"). `config check` still requires it.
 */
#define CLI_NO_TEMPLATE "(none: this command creates no sandbox)"

/* create and demo send the template: they get none stood in, so a missing one is named. */
static bool cli_creates_sandboxes(const cli *c)
{
	return c->cmd && (strcmp(c->cmd, "create") == 0 || strcmp(c->cmd, "demo") == 0);
}

static int stand_in_template(cli *c, char **json)
{
	json_error_t jerr;
	json_t *o = json_loads(*json, 0, &jerr);
	char *text;

	if (!o || !json_is_object(o) || json_object_get(o, "template")) {
		json_decref(o);
		return 0;
	}
	json_object_set_new(o, "template", json_string(CLI_NO_TEMPLATE));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return cli_oom(c);
	memset(*json, 0, strlen(*json)); /* holds the API key */
	free(*json);
	*json = text;
	return 0;
}

int cli_provider(cli *c)
{
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_error err = {0};
	char *json = NULL;
	int rc;

	if (c->prov)
		return 0;
	if ((rc = cli_config_json(c, &json)) != 0)
		return rc;
	if (!cli_creates_sandboxes(c) && (rc = stand_in_template(c, &json)) != 0) {
		free(json);
		return rc;
	}
	rc = cli_config_parse(c, json, false, &c->cfg);
	free(json);
	if (rc != 0)
		return rc;
	opts.envd_url = c->envd_url;
	/* OpenSSL's variable: trust only this PEM bundle (docs/cli.md) */
	opts.tls_ca_file = env("SSL_CERT_FILE");
	cli_set_logger(c, &opts);
	if ((rc = sbx_e2b_provider_new(&c->prov, c->cfg, &opts, &err)) < 0)
		return cli_fail(c, rc, &err);
	return cli_resolve_sandbox(c);
}
