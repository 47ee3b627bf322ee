/*
 * tests/integration/test_exec.c: exec of the E2B provider against fake-e2b
 * (docs/contract.md "exec"; docs/exec.md "How a command runs", "Exit codes",
 * "Output: one budget, truncation at a character boundary").
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* EXEC_WRAPPER, byte for byte (src/e2b/scripts/exec_wrapper.sh): the exec helper with
 * --session where the template has it, else the seed's line with SEED_WRAPPER (docs/exec.md
 * "How a command runs"). */
static const char EXEC_WRAPPER[] =
    "if [ -x /opt/capybara-exec ]; then exec /opt/capybara-exec \"$1\" \"$2\" \"$3\" --session; "
    "fi; exec setsid -w /bin/sh -c \"$4\" capybara-exec \"$1\" \"$2\" \"$3\"";
/* The seed's exec wrapper, byte for byte (src/e2b/scripts/exec_seed_wrapper.sh). */
static const char SEED_WRAPPER[] =
    "c=$1; echo $$ > \"$c.pid\" 2>/dev/null; if [ -e \"$c.kill\" ]; then exit 137; fi; timeout "
    "-s KILL \"$3\" /bin/bash -c \"$2\"; s=$?; rm -f \"$c.pid\"; exit $s";

static char *g_id; /* one sandbox for the whole file */

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "exec", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

static void assert_out(const sbx_exec_result *r, const char *out, const char *err)
{
	if (r->stdout_len != strlen(out) || memcmp(r->stdout_data, out, r->stdout_len) != 0)
		fail_msg("stdout: got [%.*s] want [%s]", (int)r->stdout_len, r->stdout_data, out);
	if (err &&
	    (r->stderr_len != strlen(err) || memcmp(r->stderr_data, err, r->stderr_len) != 0))
		fail_msg("stderr: got [%.*s] want [%s]", (int)r->stderr_len, r->stderr_data, err);
}

static int run(h_ctx *h, sbx_exec_result *r, const char *cmd, const sbx_exec_options *o,
               sbx_signal *sig)
{
	sbx_error err = {0};
	int rc = h_exec_opts(h, r, g_id, cmd, o, sig, &err);
	if (rc != 0)
		print_message("exec %s: %s (%s)\n", cmd, sbx_error_code_name(rc), err.message);
	return rc;
}

static void test_exec__stdout_stderr_exit_code(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	assert_int_equal(run(h, &r, "echo out; echo err >&2; exit 3", NULL, NULL), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 3);
	assert_out(&r, "out\n", "err\n");
	assert_false(r.truncated);
	assert_false(r.timed_out);
	assert_false(r.aborted);
	sbx_exec_result_free(&r);

	assert_int_equal(run(h, &r, "true", NULL, NULL), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	assert_out(&r, "", "");
	sbx_exec_result_free(&r);

	/* bash's own output is binary-safe: NUL bytes survive */
	assert_int_equal(run(h, &r, "printf 'a\\000b'", NULL, NULL), 0);
	assert_int_equal(r.stdout_len, 3);
	assert_memory_equal(r.stdout_data, "a\0b", 3);
	sbx_exec_result_free(&r);
}

static void test_exec__signal_exit_is_128_plus_n(void **state)
{
	h_ctx *h = *state;
	static const struct {
		const char *cmd;
		int code;
	} cases[] = {{"kill -SEGV $$", 139},
	             {"kill -TERM $$", 143},
	             {"kill -KILL $$", 137},
	             {"kill -INT $$", 130},
	             {"kill -HUP $$", 129}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sbx_exec_result r;
		assert_int_equal(run(h, &r, cases[i].cmd, NULL, NULL), 0);
		if (!r.has_exit_code || r.exit_code != cases[i].code)
			fail_msg("%s: has %d code %d, want %d", cases[i].cmd, r.has_exit_code,
			         r.exit_code, cases[i].code);
		assert_false(r.timed_out);
		sbx_exec_result_free(&r);
	}
}

static void test_exec__cwd_default_and_custom(void **state)
{
	h_ctx *h = *state;
	char *s = h_sh(h, g_id, "pwd");
	assert_string_equal(s, "/workspace\n");
	free(s);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.cwd = "/tmp";
	sbx_exec_result r;
	assert_int_equal(run(h, &r, "pwd", &o, NULL), 0);
	assert_out(&r, "/tmp\n", "");
	sbx_exec_result_free(&r);
}

static void test_exec__runs_as_sandbox_user_with_env(void **state)
{
	h_ctx *h = *state;
	sbx_env_var env[] = {{"FOO", "bar baz"}, {"_X1", "\xe2\x82\xac"}};
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.env = env;
	o.env_count = 2;
	sbx_exec_result r;
	assert_int_equal(run(h, &r, "echo \"$(id -un):$(id -u):$HOME:$LANG:$FOO:$_X1\"", &o, NULL),
	                 0);
	assert_out(&r, "sandbox:1000:/workspace:C.UTF-8:bar baz:\xe2\x82\xac\n", "");
	sbx_exec_result_free(&r);

	/* user env is applied after HOME and LANG */
	sbx_env_var over[] = {{"HOME", "/tmp"}, {"LANG", "C"}};
	o.env = over;
	o.env_count = 2;
	assert_int_equal(run(h, &r, "echo \"$HOME:$LANG\"", &o, NULL), 0);
	assert_out(&r, "/tmp:C\n", "");
	sbx_exec_result_free(&r);
}

static void test_exec__invalid_env_key_sends_no_request(void **state)
{
	h_ctx *h = *state;
	static const char *bad[] = {"1A", "A-B", "", "A B", "A=B", "\xc3\xa9"};
	h_reset(h);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_env_var env[] = {{"OK", "1"}, {bad[i], "v"}};
		sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
		o.env = env;
		o.env_count = 2;
		sbx_exec_result r;
		sbx_error err = {0};
		assert_int_equal(h_exec_opts(h, &r, g_id, "true", &o, NULL, &err), SBX_EINVALID);
	}
	/* an invalid tag too */
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.tag = "-bad";
	sbx_exec_result r;
	assert_int_equal(h_exec_opts(h, &r, g_id, "true", &o, NULL, NULL), SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

/*
 * The connect before an exec asks for min(86400, max(timeoutSeconds,
 * ceil(ms/1000) + 120)). A fresh provider per case: it knows nothing of the
 * sandbox, so it connects before the first exec.
 */
static void test_exec__connect_timeout_covers_command(void **state)
{
	h_ctx *h = *state;
	static const struct {
		uint64_t ms;
		long want;
		const char *seconds; /* the wrapper's in-sandbox timeout */
	} cases[] = {
	    {1000, 3600, "6"},       {3480000, 3600, "3485"},    {3480001, 3601, "3486"},
	    {4000000, 4120, "4005"}, {86280000, 86400, "86285"}, {100000000ULL, 86400, "100005"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
		o.timeout_ms = cases[i].ms;
		sbx_exec_result r;
		sbx_provider *fresh = h_provider_new(h, NULL, NULL);
		sbx_error err = {0};
		h_reset(h);
		assert_int_equal(sbx_sandbox_exec(&r, fresh, g_id, "true", &o, NULL, &err), 0);
		assert_int_equal(r.exit_code, 0);
		sbx_exec_result_free(&r);
		sbx_provider_free(fresh);
		json_t *log = h_reqlog(h);
		json_t *c = h_find(log, "POST", "/v2/sandboxes/", 0);
		assert_non_null(c);
		json_t *b = h_entry_json(c);
		if (json_integer_value(json_object_get(b, "timeout")) != cases[i].want)
			fail_msg("timeout_ms %llu: connect timeout %lld, want %ld",
			         (unsigned long long)cases[i].ms,
			         (long long)json_integer_value(json_object_get(b, "timeout")),
			         cases[i].want);
		assert_int_equal(json_object_size(b), 1);
		json_decref(b);
		json_t *s = h_find(log, "POST", "/process.Process/Start", 0);
		b = h_entry_json(s);
		/* a fresh provider knows nothing of the helper: the direct form, seconds third */
		json_t *pr = json_object_get(b, "process"), *args = json_object_get(pr, "args");
		assert_string_equal(json_string_value(json_object_get(pr, "cmd")),
		                    "/opt/capybara-exec");
		assert_string_equal(json_string_value(json_array_get(args, 2)), cases[i].seconds);
		json_decref(b);
		json_decref(log);
	}
}

/* The Start of an exec: the direct form (the exec helper as envd's command, CTL CMD 65
 * --session --mark) or the exec line (/bin/sh -c EXEC_WRAPPER ... SEED_WRAPPER). */
static void check_start_request(h_ctx *h, json_t *s, const char *cmd, const char *tag,
                                const char *cwd, bool direct)
{
	json_t *hd = json_object_get(s, "headers");
	assert_string_equal(json_string_value(json_object_get(hd, "e2b-sandbox-id")), g_id);
	assert_string_equal(json_string_value(json_object_get(hd, "e2b-sandbox-port")), "49983");
	assert_string_equal(json_string_value(json_object_get(hd, "keepalive-ping-interval")),
	                    "50");
	assert_string_equal(json_string_value(json_object_get(hd, "connect-protocol-version")),
	                    "1");
	assert_string_equal(json_string_value(json_object_get(hd, "content-type")),
	                    "application/connect+json");
	assert_string_equal(json_string_value(json_object_get(hd, "x-access-token")), "***");
	assert_string_equal(json_string_value(json_object_get(hd, "authorization")), "***");
	assert_null(json_object_get(hd, "connect-timeout-ms"));
	json_t *b = h_entry_json(s);
	assert_non_null(b);
	assert_true(json_is_false(json_object_get(b, "stdin")));
	json_t *p = json_object_get(b, "process");
	assert_string_equal(json_string_value(json_object_get(p, "cmd")),
	                    direct ? "/opt/capybara-exec" : "/bin/sh");
	assert_string_equal(json_string_value(json_object_get(p, "cwd")), cwd);
	json_t *args = json_object_get(p, "args");
	size_t at = direct ? 0 : 3; /* CTL's index */
	if (direct) {
		assert_int_equal(json_array_size(args), 5);
		assert_string_equal(json_string_value(json_array_get(args, 3)), "--session");
		assert_string_equal(json_string_value(json_array_get(args, 4)), "--mark");
	} else {
		assert_int_equal(json_array_size(args), 7);
		assert_string_equal(json_string_value(json_array_get(args, 0)), "-c");
		assert_string_equal(json_string_value(json_array_get(args, 1)), EXEC_WRAPPER);
		assert_string_equal(json_string_value(json_array_get(args, 2)), "capybara-exec");
		assert_string_equal(json_string_value(json_array_get(args, 6)), SEED_WRAPPER);
	}
	char pat[256];
	snprintf(
	    pat, sizeof(pat),
	    "^/tmp/\\.capybara-exec-%s%s[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
	    "[0-9a-f]{12}$",
	    tag ? tag : "", tag ? "-" : "");
	regex_t re;
	assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
	const char *ctl = json_string_value(json_array_get(args, at));
	if (!ctl || regexec(&re, ctl, 0, NULL, 0) != 0)
		fail_msg("control path %s does not match %s", ctl ? ctl : "(null)", pat);
	regfree(&re);
	assert_string_equal(json_string_value(json_array_get(args, at + 1)), cmd);
	assert_string_equal(json_string_value(json_array_get(args, at + 2)), "65"); /* 60 s + 5 */
	json_t *envs = json_object_get(p, "envs");
	assert_string_equal(json_string_value(json_object_get(envs, "HOME")), "/workspace");
	assert_string_equal(json_string_value(json_object_get(envs, "LANG")), "C.UTF-8");
	json_decref(b);
	(void)h;
}

/* With the helper there (capybara-sandbox's), an exec is one Start of the direct form; the exec
 * line's bytes are checked where the helper is gone (below). */
static void test_exec__start_request_is_the_direct_form(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	const char *cmd = "echo \"it's\" $((1+1)) | cat";
	h_reset(h);
	assert_int_equal(run(h, &r, cmd, NULL, NULL), 0);
	assert_out(&r, "it's 2\n", "");
	sbx_exec_result_free(&r);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), 1);
	/* Start only: the provider's last connect (or the create) still covers the command */
	assert_int_equal(json_array_size(log), 1);
	check_start_request(h, h_find(log, "POST", "/process.Process/Start", 0), cmd, NULL,
	                    "/workspace", true);
	json_decref(log);

	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.tag = "agent_7-x";
	o.cwd = "/";
	h_reset(h);
	assert_int_equal(run(h, &r, "true", &o, NULL), 0);
	sbx_exec_result_free(&r);
	log = h_reqlog(h);
	check_start_request(h, h_find(log, "POST", "/process.Process/Start", 0), "true",
	                    "agent_7-x", "/", true);
	json_decref(log);
}

/* The command's parent's command line, as ps shows it (arguments joined by spaces). */
static char *parent_cmdline(h_ctx *h)
{
	sbx_exec_result r;
	char *s;
	assert_int_equal(run(h, &r, "tr '\\0' ' ' < /proc/$PPID/cmdline", NULL, NULL), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	s = strndup((const char *)r.stdout_data, r.stdout_len);
	assert_non_null(s);
	sbx_exec_result_free(&r);
	return s;
}

static void as_root(h_ctx *h, const char *cmd)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	o.user = SBX_USER_ROOT;
	assert_int_equal(run(h, &r, cmd, &o, NULL), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	sbx_exec_result_free(&r);
}

/* As the command sees it: "SESSION PARENT PIDFILE GRANDPARENT": its session id, its parent's
 * and grandparent's pids, and what CTL.pid holds (CTL read from the session leader's argv). */
#define WHO_LEADS                                                                                  \
	"read -r -a f < /proc/$$/stat; mapfile -d '' -t a < /proc/${f[5]}/cmdline; for x in "      \
	"\"${a[@]}\"; do [[ $x == /tmp/.capybara-exec-* ]] && c=$x; done; read -r -a g < "         \
	"/proc/$PPID/stat; echo \"${f[5]} $PPID $(cat \"$c.pid\") ${g[3]}\""

/* The command's session and its leader, which CTL.pid names: with the exec helper the helper
 * (the command's parent, the process envd started) leads it; with the seed's line the
 * wrapper's sh, the parent of `timeout`. */
static void assert_session_led_by(h_ctx *h, bool helper)
{
	sbx_exec_result r;
	long sid = 0, parent = 0, pidfile = 0, grand = 0;
	assert_int_equal(run(h, &r, WHO_LEADS, NULL, NULL), 0);
	assert_true(r.has_exit_code);
	if (r.exit_code != 0 || sscanf((const char *)r.stdout_data, "%ld %ld %ld %ld", &sid,
	                               &parent, &pidfile, &grand) != 4)
		fail_msg("who leads: exit %d [%.*s]", r.exit_code, (int)r.stdout_len,
		         (const char *)r.stdout_data);
	sbx_exec_result_free(&r);
	assert_int_equal(pidfile, sid); /* CTL.pid names the session leader */
	assert_int_equal(helper ? parent : grand, sid);
}

/* What an exec's command prints of itself and the Starts it took: "OUT|ERR|CODE|STARTS". */
static char *ran(h_ctx *h, sbx_provider *p, const char *cmd, const sbx_exec_options *o)
{
	sbx_exec_result r;
	sbx_error err = {0};
	char *s;
	h_reset(h);
	if (sbx_sandbox_exec(&r, p, g_id, cmd, o, NULL, &err) != 0)
		fail_msg("exec %s: %s", cmd, err.message);
	json_t *log = h_reqlog(h);
	assert_true(r.has_exit_code);
	assert_int_equal(asprintf(&s, "%.*s|%.*s|%d|%zu", (int)r.stdout_len,
	                          (const char *)r.stdout_data, (int)r.stderr_len,
	                          (const char *)r.stderr_data, r.exit_code,
	                          h_count(log, "POST", "/process.Process/Start")) > 0,
	                 1);
	json_decref(log);
	sbx_exec_result_free(&r);
	return s;
}

static void assert_ran(h_ctx *h, sbx_provider *p, const char *cmd, const char *want)
{
	char *got = ran(h, p, cmd, NULL);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got [%s] want [%s]", cmd, got, want);
	free(got);
}

/* capybara-sandbox has the exec helper: the command's parent is it, with --session --mark, as
 * the process envd started (the direct form: pid, session, "capybara-exec CTL" for the kill
 * scripts). Without it (removed by root here), the direct form's Start runs nothing (envd's
 * shell exits 127, no marker) and the exec line runs the command once, then the seed's line
 * under `timeout`, with the same statuses and the same session and pid file; the provider
 * then starts the exec line directly. */
static void test_exec__exec_helper_when_present_else_the_seed_line(void **state)
{
	h_ctx *h = *state;
	static const struct {
		const char *cmd;
		int code;
	} cases[] = {{"exit 3", 3}, {"kill -TERM $$", 143}, {"kill -KILL $$", 137}};
	char *p = parent_cmdline(h);
	if (strncmp(p, "/opt/capybara-exec /tmp/.capybara-exec-", 39) != 0 ||
	    strcmp(p + strlen(p) - 21, " 65 --session --mark ") != 0)
		fail_msg("parent [%s], want the exec helper with --session --mark", p);
	free(p);
	assert_session_led_by(h, true);
	as_root(h, "rm -f /tmp/sbx-once; mv /opt/capybara-exec /opt/capybara-exec.off");
	/* the first exec after: the direct form, then the exec line; run once, output exact */
	assert_ran(h, h->p, "echo ran >> /tmp/sbx-once; echo out; echo err >&2; exit 5",
	           "out\n|err\n|5|2");
	json_t *log = h_reqlog(h);
	check_start_request(h, h_find(log, "POST", "/process.Process/Start", 0),
	                    "echo ran >> /tmp/sbx-once; echo out; echo err >&2; exit 5", NULL,
	                    "/workspace", true);
	check_start_request(h, h_find(log, "POST", "/process.Process/Start", 1),
	                    "echo ran >> /tmp/sbx-once; echo out; echo err >&2; exit 5", NULL,
	                    "/workspace", false);
	json_decref(log);
	assert_ran(h, h->p, "cat /tmp/sbx-once", "ran\n||0|1"); /* the exec line at once */
	p = parent_cmdline(h);
	if (strncmp(p, "timeout -s KILL 65 /bin/bash -c ", 32) != 0)
		fail_msg("parent [%s], want the seed's timeout", p);
	free(p);
	assert_session_led_by(h, false);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sbx_exec_result r;
		assert_int_equal(run(h, &r, cases[i].cmd, NULL, NULL), 0);
		if (!r.has_exit_code || r.exit_code != cases[i].code)
			fail_msg("%s: has %d code %d, want %d", cases[i].cmd, r.has_exit_code,
			         r.exit_code, cases[i].code);
		sbx_exec_result_free(&r);
	}
	as_root(h, "mv /opt/capybara-exec.off /opt/capybara-exec; rm -f /tmp/sbx-once");
	/* this provider keeps to the exec line, which execs the helper again */
	p = parent_cmdline(h);
	if (strncmp(p, "/opt/capybara-exec ", 19) != 0 ||
	    strcmp(p + strlen(p) - 14, " 65 --session ") != 0)
		fail_msg("parent [%s], want the exec helper by the exec line", p);
	free(p);
	/* a fresh one tries the direct form first */
	sbx_provider *fresh = h_provider_new(h, NULL, NULL);
	assert_ran(h, fresh,
	           "tr '\\0' ' ' < /proc/$PPID/cmdline | grep -c -- ' --session --mark $'",
	           "1\n||0|1");
	sbx_provider_free(fresh);
}

typedef struct chunks {
	char out[64], err[64];
	size_t nout, nerr;
} chunks;

static int keep_chunks(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	chunks *c = payload;
	char *to = stream == SBX_STREAM_STDOUT ? c->out : c->err;
	size_t *n = stream == SBX_STREAM_STDOUT ? &c->nout : &c->nerr;
	if (*n + len >= sizeof(c->out))
		return 1;
	memcpy(to + *n, data, len);
	*n += len;
	to[*n] = '\0';
	return 0;
}

/* The direct form with the helper there: the command's own 125, 126 and 127 are its statuses,
 * the command ran once (one Start), and the helper's marker never reaches the output, streamed
 * or collected. */
static void test_exec__direct_form_keeps_statuses_and_output(void **state)
{
	h_ctx *h = *state;
	as_root(h, "rm -f /tmp/sbx-once2");
	assert_ran(h, h->p, "echo ran >> /tmp/sbx-once2; echo e >&2; exit 127", "|e\n|127|1");
	assert_ran(h, h->p, "echo ran >> /tmp/sbx-once2; exit 126", "||126|1");
	assert_ran(h, h->p, "echo ran >> /tmp/sbx-once2; exit 125", "||125|1");
	assert_ran(h, h->p, "wc -l < /tmp/sbx-once2", "3\n||0|1");
	char *got = ran(h, h->p, "no-such-command-here", NULL);
	if (strcmp(got, "|/bin/bash: line 1: no-such-command-here: command not found\n|127|1") != 0)
		fail_msg("a missing command: got [%s]", got);
	free(got);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	chunks c = {0};
	o.on_output = keep_chunks;
	o.output_payload = &c;
	got = ran(h, h->p, "echo err >&2; echo out", &o);
	assert_string_equal(got, "out\n|err\n|0|1");
	assert_string_equal(c.out, "out\n");
	assert_string_equal(c.err, "err\n");
	free(got);
	as_root(h, "rm -f /tmp/sbx-once2");
}

typedef struct bg_exec {
	sbx_provider *p;
	sbx_exec_result r;
	int rc;
} bg_exec;

static void *exec_tagged(void *arg)
{
	bg_exec *b = arg;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_error err = {0};
	o.tag = "listed";
	b->rc = sbx_sandbox_exec(&b->r, b->p, g_id, "sleep 30", &o, NULL, &err);
	return NULL;
}

/* A blocking exec in the direct form, while it runs: envd lists the helper as its command, the
 * library knows it as its own (its shell text, found through CTL), and kill_tagged ends it. */
static void test_exec__a_running_direct_exec_is_listed_as_ours(void **state)
{
	h_ctx *h = *state;
	sbx_provider *fresh = h_provider_new(h, NULL, NULL); /* h->p took the exec line above */
	bg_exec b = {fresh, {0}, -1};
	sbx_process_info_list *l = NULL;
	const sbx_process_info *it = NULL;
	const char *tags[] = {"listed"};
	sbx_error err = {0};
	pthread_t th;
	uint64_t until = h_now_ms() + 30000;

	assert_int_equal(pthread_create(&th, NULL, exec_tagged, &b), 0);
	while (!it && h_now_ms() < until) { /* until envd lists it */
		sbx_process_info_list_free(l);
		l = NULL;
		assert_int_equal(sbx_process_list(&l, fresh, g_id, NULL, &err), 0);
		for (size_t i = 0; i < l->count && !it; i++)
			if (l->items[i].command && strcmp(l->items[i].command, "sleep 30") == 0)
				it = &l->items[i];
		if (!it)
			usleep(20000);
	}
	if (!it)
		fail_msg("the running exec was never listed as ours");
	assert_string_equal(it->cmd, "/opt/capybara-exec");
	assert_int_equal(it->nargs, 5);
	assert_string_equal(it->args[1], "sleep 30");
	assert_string_equal(it->args[3], "--session");
	assert_string_equal(it->args[4], "--mark");
	assert_ptr_equal(it->command, it->args[1]);
	assert_int_equal(sbx_sandbox_kill_tagged(fresh, g_id, tags, 1, NULL, &err), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.rc, 0);
	assert_true(b.r.has_exit_code);
	assert_int_equal(b.r.exit_code, 137);
	sbx_exec_result_free(&b.r);
	sbx_process_info_list_free(l);
	sbx_provider_free(fresh);
}

static int read_once(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	const char **p = payload;
	size_t n = strlen(*p) < cap ? strlen(*p) : cap;
	memcpy(buf, *p, n);
	*p += n;
	*len_out = n;
	return 0;
}

/* A stdin read callback cannot be read twice: until the provider knows the helper is there, such
 * an exec takes the exec line; once it does, the direct form. */
static void test_exec__stdin_callback_waits_for_a_known_helper(void **state)
{
	h_ctx *h = *state;
	sbx_provider *fresh = h_provider_new(h, NULL, NULL);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	const char *in = "abc";
	o.stdin_read = read_once;
	o.stdin_payload = &in;
	char *got = ran(h, fresh, "cat", &o);
	assert_string_equal(got, "abc||0|1");
	free(got);
	json_t *log = h_reqlog(h);
	json_t *b = h_entry_json(h_find(log, "POST", "/process.Process/Start", 0));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(b, "process"), "cmd")), "/bin/sh");
	json_decref(b);
	json_decref(log);
	assert_ran(h, fresh, "true", "||0|1"); /* the direct form: the helper ran */
	in = "def";
	got = ran(h, fresh, "cat", &o);
	assert_string_equal(got, "def||0|1");
	free(got);
	log = h_reqlog(h);
	b = h_entry_json(h_find(log, "POST", "/process.Process/Start", 0));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(b, "process"), "cmd")),
	    "/opt/capybara-exec");
	json_decref(b);
	json_decref(log);
	sbx_provider_free(fresh);
}

static void test_exec__shared_budget_utf8_safe_cut(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;

	/* a 3-byte character straddles the 10-byte cap: cut before it */
	o.max_output_bytes = 10;
	assert_int_equal(run(h, &r, "printf 'abcdefghi\\342\\202\\254xyz'", &o, NULL), 0);
	assert_true(r.truncated);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	assert_out(&r, "abcdefghi", "");
	sbx_exec_result_free(&r);

	/* exactly the cap: not truncated */
	assert_int_equal(run(h, &r, "printf 1234567890", &o, NULL), 0);
	assert_false(r.truncated);
	assert_out(&r, "1234567890", "");
	sbx_exec_result_free(&r);

	/* a character ending exactly at the cap is kept */
	o.max_output_bytes = 11;
	assert_int_equal(run(h, &r, "printf 'abcdefgh\\342\\202\\254xyz'", &o, NULL), 0);
	assert_true(r.truncated);
	assert_out(&r, "abcdefgh\xe2\x82\xac", "");
	sbx_exec_result_free(&r);

	/* stdout and stderr share one budget */
	o.max_output_bytes = 8;
	assert_int_equal(run(h, &r, "printf 12345; sleep 1; printf 67890abc >&2; exit 4", &o, NULL),
	                 0);
	assert_true(r.truncated);
	assert_int_equal(r.exit_code, 4);
	assert_out(&r, "12345", "678");
	sbx_exec_result_free(&r);

	/* budget used up by stdout: stderr empty */
	o.max_output_bytes = 4;
	assert_int_equal(run(h, &r, "printf 12345; sleep 1; echo more >&2", &o, NULL), 0);
	assert_true(r.truncated);
	assert_out(&r, "1234", "");
	sbx_exec_result_free(&r);
}

static void test_exec__timeout_reports_timed_out_without_exit_code(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.timeout_ms = 1000;
	sbx_exec_result r;
	uint64_t t0 = h_now_ms();
	assert_int_equal(run(h, &r, "echo before; sleep 60; echo after", &o, NULL), 0);
	uint64_t took = h_now_ms() - t0;
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	assert_false(r.aborted);
	assert_out(&r, "before\n", NULL);
	print_message("timeout of 1 s returned after %llu ms\n", (unsigned long long)took);
	assert_true(took >= 1000); /* "after" is not in the output: the sleep 60 was cut */
	sbx_exec_result_free(&r);
	char *s = h_sh(h, g_id, "pgrep -f 'sleep 6[0]' || true");
	assert_string_equal(s, "");
	free(s);
}

/* Aborts the call's signal once its stdout has said `after` (a whole chunk's worth). */
typedef struct abort_on {
	sbx_signal *sig;
	const char *after;
	char seen[64];
	size_t n;
	uint64_t at; /* when it aborted */
} abort_on;

static int abort_on_output(sbx_stream stream, const unsigned char *data, size_t len, void *p)
{
	abort_on *a = p;

	if (stream != SBX_STREAM_STDOUT || a->at)
		return 0;
	for (size_t i = 0; i < len && a->n + 1 < sizeof(a->seen); i++)
		a->seen[a->n++] = (char)data[i];
	a->seen[a->n] = '\0';
	if (strstr(a->seen, a->after)) {
		a->at = h_now_ms();
		sbx_signal_abort(a->sig);
	}
	return 0;
}

static void test_exec__abort_after_start_returns_output_so_far(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	abort_on a = {.after = "started\n"};
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	o.on_output = abort_on_output;
	o.output_payload = &a;
	sbx_exec_result r;
	/* the abort comes once "started" was read: only it can end the sleep 60 */
	assert_int_equal(run(h, &r, "echo started; sleep 60", &o, a.sig), 0);
	uint64_t done = h_now_ms();
	assert_true(a.at != 0);
	assert_true(r.aborted);
	assert_false(r.timed_out);
	assert_false(r.has_exit_code);
	assert_out(&r, "started\n", NULL);
	print_message("exec returned %llu ms after the abort\n", (unsigned long long)(done - a.at));
	sbx_exec_result_free(&r);
	sbx_signal_free(a.sig);
	char *s = h_sh(h, g_id, "pgrep -f 'sleep 6[0]' || true");
	assert_string_equal(s, "");
	free(s);
}

static void test_exec__already_aborted_sends_no_request(void **state)
{
	h_ctx *h = *state;
	sbx_signal *sig = NULL;
	assert_int_equal(sbx_signal_new(&sig), 0);
	sbx_signal_abort(sig);
	h_reset(h);
	sbx_exec_result r;
	sbx_error err = {0};
	assert_int_equal(h_exec_opts(h, &r, g_id, "true", NULL, sig, &err), SBX_EABORTED);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
	sbx_signal_free(sig);
}

/* Run `cmd` with a 1.5 s timeout; then no process matching `pattern` may be left. */
static void timeout_leaves_nothing(h_ctx *h, const char *cmd, const char *pattern)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.timeout_ms = 1500;
	sbx_exec_result r;
	uint64_t t0 = h_now_ms();
	assert_int_equal(run(h, &r, cmd, &o, NULL), 0);
	uint64_t took = h_now_ms() - t0;
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	print_message("%s: exec returned after %llu ms\n", cmd, (unsigned long long)took);
	sbx_exec_result_free(&r);
	char check[256];
	snprintf(check, sizeof(check), "pgrep -af '%s' || true", pattern);
	char *s = h_sh(h, g_id, check);
	if (*s) {
		/* clean up for the next test, then fail */
		char kill[256];
		snprintf(kill, sizeof(kill), "pkill -9 -f '%s'; true", pattern);
		free(h_sh(h, g_id, kill));
		fail_msg("left running after the timeout: %s", s);
	}
	free(s);
}

/* nohup children (same session, holding the output pipes) are gone after the timeout. */
static void test_exec__nohup_children_gone_after_timeout(void **state)
{
	timeout_leaves_nothing(*state,
	                       "nohup sleep 300 & nohup sleep 301 >/dev/null 2>&1 & echo ok; "
	                       "sleep 302",
	                       "sleep 30[0-2]");
}

/*
 * A setsid child (its own session) that keeps the output pipe is gone after the
 * timeout too (docs/exec.md "Timeout, abort and the kill tree"). The kill script cannot reach
 * another session; the stream staying open triggers the reboot fallback (docs/contract.md
 * "exec", last resort).
 */
static void test_exec__setsid_children_gone_after_timeout(void **state)
{
	timeout_leaves_nothing(*state, "setsid sleep 311 & echo ok; sleep 312", "sleep 31[12]");
}

/* A command whose kill has no effect: pause + cold connect, a warning, still timed_out. */
static void test_exec__reboot_fallback_when_kill_is_ignored(void **state)
{
	h_ctx *h = *state;
	const char *warn = "sandbox-e2b: could not stop a command cleanly; rebooting the sandbox";
	size_t before = h_log_count(h, SBX_LOG_WARN, warn);
	h_reset(h);
	h_fault_kind(h, "POST", "/process.Process/Start", "kill_ignored", 1);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	o.timeout_ms = 1000;
	sbx_exec_result r;
	uint64_t t0 = h_now_ms();
	assert_int_equal(run(h, &r, "echo x; sleep 120", &o, NULL), 0);
	uint64_t took = h_now_ms() - t0;
	assert_true(r.timed_out);
	assert_false(r.has_exit_code);
	assert_out(&r, "x\n", NULL);
	print_message("reboot fallback: exec returned after %llu ms\n", (unsigned long long)took);
	assert_true(took >= 3000); /* 3 s grace, then the reboot (the sleep 120 was cut) */
	sbx_exec_result_free(&r);
	assert_int_equal(h_log_count(h, SBX_LOG_WARN, warn), before + 1);
	json_t *log = h_reqlog(h);
	char pause[128], conn[128];
	snprintf(pause, sizeof(pause), "/sandboxes/%s/pause", g_id);
	snprintf(conn, sizeof(conn), "/v2/sandboxes/%s/connect", g_id);
	assert_int_equal(h_count(log, "POST", pause), 1);
	/* the last connect is the cold one, after the pause */
	size_t nconn = h_count(log, "POST", conn);
	assert_true(nconn >= 1);
	json_t *cold = h_find(log, "POST", conn, nconn - 1);
	json_t *b = h_entry_json(cold);
	json_t *want = json_loads("{\"timeout\":3600,\"memory\":false}", 0, NULL);
	assert_true(json_equal(b, want));
	json_decref(want);
	json_decref(b);
	/* pause before the cold connect: shown by the stuck command being gone below
	 * (memory:false on a running sandbox changes nothing); the log is in completion
	 * order, so its order is not checked */
	json_decref(log);
	h_faults_clear(h);
	/* the sandbox works afterwards, and the stuck command is gone */
	char *s = h_sh(h, g_id, "pgrep -f 'sleep 12[0]' || true");
	assert_string_equal(s, "");
	free(s);
}

static void test_exec__reboot_fallback_on_abort(void **state)
{
	h_ctx *h = *state;
	const char *warn = "sandbox-e2b: could not stop a command cleanly; rebooting the sandbox";
	size_t before = h_log_count(h, SBX_LOG_WARN, warn);
	h_reset(h);
	h_fault_kind(h, "POST", "/process.Process/Start", "kill_ignored", 1);
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	abort_on a = {.after = "y\n"};
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	o.on_output = abort_on_output;
	o.output_payload = &a;
	sbx_exec_result r;
	assert_int_equal(run(h, &r, "echo y; sleep 120", &o, a.sig), 0);
	assert_true(a.at != 0);
	assert_true(r.aborted);
	assert_false(r.has_exit_code);
	assert_false(r.timed_out);
	sbx_exec_result_free(&r);
	sbx_signal_free(a.sig);
	assert_int_equal(h_log_count(h, SBX_LOG_WARN, warn), before + 1);
	json_t *log = h_reqlog(h);
	char pause[128];
	snprintf(pause, sizeof(pause), "/sandboxes/%s/pause", g_id);
	assert_int_equal(h_count(log, "POST", pause), 1);
	json_decref(log);
	h_faults_clear(h);
}

/* A sandbox paused between calls is auto-started by exec (the contract's auto-start). */
static void test_exec__resumes_a_paused_sandbox(void **state)
{
	h_ctx *h = *state;
	char *s = h_sh(h, g_id, "echo keep > /tmp/keep; (sleep 1000 >/dev/null 2>&1 &) ; echo ok");
	free(s);
	assert_int_equal(sbx_sandbox_suspend(h->p, g_id, NULL, NULL), 0);
	s = h_sh(h, g_id, "cat /tmp/keep; pgrep -c -f 'sleep 100[0]'");
	assert_string_equal(s, "keep\n1\n");
	free(s);
	s = h_sh(h, g_id, "pkill -f 'sleep 100[0]'; true");
	free(s);
}

/*
 * A child forked after the provider's first call (over HTTPS: the library's HTTP/2 loop thread
 * is running in the parent, not in the child) still gets its exec done, on its own
 * connection; a hang is caught by the child's alarm.
 */
static void test_exec__forked_child_uses_the_provider(void **state)
{
	h_ctx *h = *state;
	sbx_exec_result r;
	int status = 0;

	assert_int_equal(run(h, &r, "echo parent", NULL, NULL), 0);
	assert_out(&r, "parent\n", "");
	sbx_exec_result_free(&r);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60);
		sbx_error err = {0};
		int rc = h_exec_opts(h, &r, g_id, "echo child", NULL, NULL, &err);
		_exit(rc == 0 && r.stdout_len == 6 && memcmp(r.stdout_data, "child\n", 6) == 0 ? 0
		                                                                               : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* and the parent's loop goes on */
	assert_int_equal(run(h, &r, "echo again", NULL, NULL), 0);
	assert_out(&r, "again\n", "");
	sbx_exec_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exec__stdout_stderr_exit_code),
	    cmocka_unit_test(test_exec__signal_exit_is_128_plus_n),
	    cmocka_unit_test(test_exec__cwd_default_and_custom),
	    cmocka_unit_test(test_exec__runs_as_sandbox_user_with_env),
	    cmocka_unit_test(test_exec__invalid_env_key_sends_no_request),
	    cmocka_unit_test(test_exec__connect_timeout_covers_command),
	    cmocka_unit_test(test_exec__start_request_is_the_direct_form),
	    cmocka_unit_test(test_exec__exec_helper_when_present_else_the_seed_line),
	    cmocka_unit_test(test_exec__direct_form_keeps_statuses_and_output),
	    cmocka_unit_test(test_exec__stdin_callback_waits_for_a_known_helper),
	    cmocka_unit_test(test_exec__a_running_direct_exec_is_listed_as_ours),
	    cmocka_unit_test(test_exec__shared_budget_utf8_safe_cut),
	    cmocka_unit_test(test_exec__timeout_reports_timed_out_without_exit_code),
	    cmocka_unit_test(test_exec__abort_after_start_returns_output_so_far),
	    cmocka_unit_test(test_exec__already_aborted_sends_no_request),
	    cmocka_unit_test(test_exec__resumes_a_paused_sandbox),
	    cmocka_unit_test(test_exec__nohup_children_gone_after_timeout),
	    cmocka_unit_test(test_exec__setsid_children_gone_after_timeout),
	    cmocka_unit_test(test_exec__reboot_fallback_when_kill_is_ignored),
	    cmocka_unit_test(test_exec__reboot_fallback_on_abort),
	    cmocka_unit_test(test_exec__forked_child_uses_the_provider),
	};
	return cmocka_run_group_tests_name("integration_exec", tests, setup, teardown);
}
