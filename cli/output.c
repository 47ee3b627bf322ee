/*
 * cli/output.c: how the tool reports results and failures.
 *
 * Human output goes to stdout (results) and stderr (messages). With --json,
 * stdout carries exactly one JSON object per run; byte strings that are not
 * valid UTF-8 are sent base64-encoded in "<key>_b64" with "<key>" null, so no
 * byte is lost (docs/cli.md "JSON output"). Errors always say what to do next.
 */
#include "cli.h"
#include "shapes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int cli_signo;

const char *cli_strerror(int errnum, char *buf, size_t len)
{
	/* GNU strerror_r (the tool is built with _GNU_SOURCE): may return a static string. */
	return strerror_r(errnum, buf, len);
}

int cli_abort_exit(void)
{
	return cli_signo ? 128 + cli_signo : CLI_EXIT_ABORTED;
}

void cli_json_print(json_t *obj)
{
	char *text;

	if (!obj) {
		fputs("{\"error\":{\"code\":\"SBX_ENOMEM\",\"message\":\"out of memory\"}}\n",
		      stdout);
		return;
	}
	text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (!text) {
		fputs("{\"error\":{\"code\":\"SBX_ENOMEM\",\"message\":\"out of memory\"}}\n",
		      stdout);
		return;
	}
	fputs(text, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	free(text);
}

static const char *http_hint(int status)
{
	if (status == 401 || status == 403)
		return "check the API key (E2B_API_KEY or the config's apiKey) and that it may use "
		       "this template";
	if (status == 404)
		return "check the sandbox id, the template and the API address (apiUrl / "
		       "E2B_API_URL, domain / E2B_DOMAIN)";
	if (status == 409)
		return "the sandbox is changing state; retry in a moment";
	if (status == 429)
		return "E2B's concurrency or rate limit was reached; destroy unused sandboxes "
		       "('sandbox-e2b destroy ID') or retry later";
	if (status >= 500)
		return "the E2B server failed; retry later";
	return "check the arguments and the config (the message above has the HTTP status)";
}

const char *cli_hint(const cli *c, int code, const sbx_error *err)
{
	switch (code) {
	case SBX_EINVALID:
		return "check the arguments (see --help) and the config ('sandbox-e2b config check "
		       "FILE')";
	case SBX_EGONE:
		return "the sandbox no longer exists; create a new one with 'sandbox-e2b create "
		       "NAME'";
	case SBX_EABORTED:
		return "interrupted; the remote command (if any) was killed";
	case SBX_ETIMEOUT:
		return "E2B (or the command inside the sandbox) did not answer in time; retry, and "
		       "check the network and apiUrl / E2B_API_URL";
	case SBX_ETOOLARGE:
		return "the server sent more than allowed; lower --max-bytes / --max-output-bytes";
	case SBX_ENOMEM:
		return "out of memory; lower --max-bytes / --max-output-bytes, or free memory and "
		       "retry";
	case SBX_EPROTOCOL:
		return "unexpected reply; check that apiUrl / E2B_API_URL and --envd-url point at "
		       "E2B (or fake-e2b)";
	case SBX_EHTTP:
		return http_hint(err ? err->http_status : 0);
	case SBX_ENETWORK:
		if (c->envd_url)
			return "could not reach the server; check the network, apiUrl / "
			       "E2B_API_URL and --envd-url / SANDBOX_E2B_ENVD_URL";
		/* envd's, not the API server's: the library says so as data (sandbox/e2b.h) */
		if (err && strcmp(err->e2b_code, SBX_E2B_ENVD_UNAVAILABLE) == 0)
			return "could not reach envd at https://49983-<sandbox id>.<domain>; check "
			       "the "
			       "network and domain / E2B_DOMAIN, or set --envd-url / "
			       "SANDBOX_E2B_ENVD_URL to your envd address (fake-e2b: its own URL)";
		return "could not reach the server; check the network and apiUrl / E2B_API_URL (or "
		       "domain / E2B_DOMAIN), and --envd-url / SANDBOX_E2B_ENVD_URL for a local "
		       "or self-hosted envd";
	case SBX_ESANDBOX:
		if (err && strcmp(err->e2b_code, "failed_precondition") == 0) /* the template */
			return "create sandboxes from a template built from "
			       "templates/capybara-sandbox "
			       "and set \"template\" (or --template) to it";
		return "a step inside the sandbox failed; check the path and its permissions "
		       "(the sandbox user owns /workspace; /skills is root's)";
	case SBX_EINTERNAL:
		return "a local system call failed (file descriptors, threads, libcurl); check "
		       "ulimit -n and free memory, then retry";
	default:
		return "unexpected error; retry, and report it with the message above if it "
		       "persists";
	}
}

const char *cli_lib_message(const char *msg)
{
	static const char prefix[] = "sandbox-e2b: ";

	if (msg && strncmp(msg, prefix, sizeof(prefix) - 1) == 0)
		return msg + sizeof(prefix) - 1;
	return msg;
}

int cli_fail(cli *c, int code, const sbx_error *err)
{
	return cli_fail_hint(c, code, err, NULL);
}

int cli_fail_hint(cli *c, int code, const sbx_error *err, const char *hint)
{
	const char *msg = err && err->message[0] ? cli_lib_message(err->message)
	                  : code == SBX_EABORTED ? "interrupted"
	                                         : sbx_error_code_name(code);

	if (!hint)
		hint = cli_hint(c, code, err);
	/* Bad arguments the library rejects before any request are usage errors. */
	int exit_code = code == SBX_EABORTED   ? cli_abort_exit()
	                : code == SBX_EINVALID ? CLI_EXIT_USAGE
	                                       : CLI_EXIT_ERROR;

	const char *sep = c->cmd ? " " : "", *cmd = c->cmd ? c->cmd : "";

	fprintf(stderr, "%s%s%s: %s (%s)\n", c->prog, sep, cmd, msg, sbx_error_code_name(code));
	fprintf(stderr, "%s%s%s: %s\n", c->prog, sep, cmd, hint);
	if (c->json) {
		json_t *e = cli_shape_error(code, err, msg, hint);
		cli_json_print(e ? json_pack("{s:o}", "error", e) : NULL);
	}
	return exit_code;
}

int cli_oom(cli *c)
{
	sbx_error err = {SBX_ENOMEM, 0, "", "out of memory"};

	return cli_fail(c, SBX_ENOMEM, &err);
}

int cli_usage_error(cli *c, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->cmd)
		fprintf(stderr, "%s %s: %s\nRun '%s %s --help' for usage.\n", c->prog, c->cmd, msg,
		        c->prog, c->cmd);
	else
		fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", c->prog, msg, c->prog);
	if (c->json || c->json_early) {
		json_t *o = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", "usage", "message", msg,
		                      "hint", "run with --help for usage");
		cli_json_print(o);
	}
	return CLI_EXIT_USAGE;
}

int cli_done_ok(cli *c, const char *id, const char *what)
{
	if (c->json)
		cli_json_print(json_pack("{s:b,s:s}", "ok", 1, "id", id));
	else
		fprintf(stderr, "%s\n", what);
	return CLI_EXIT_OK;
}

#define TAG_RULE "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"

int cli_fail_tags(cli *c, int code, const sbx_error *err, const char *const *tags, size_t n)
{
	char hint[512];

	/* the hint from the tags themselves (the library's own rule), never from the message */
	if (code == SBX_EINVALID)
		for (size_t i = 0; i < n; i++)
			if (sbx_validate_tag(tags[i], NULL) < 0) {
				snprintf(hint, sizeof(hint),
				         "tag '%.100s' must match " TAG_RULE
				         " (letters, digits, '_' and '-', at most 64)",
				         tags[i]);
				return cli_fail_hint(c, code, err, hint);
			}
	return cli_fail(c, code, err);
}
