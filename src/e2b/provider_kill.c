/*
 * e2b/provider_kill.c: kill_all and kill_tagged (docs/contract.md "Lifecycle";
 * docs/exec.md "Background commands"): the in-sandbox kill scripts
 * (e2b/scripts/kill_*.sh) run bare as the sandbox user through provider_fileop.c, their
 * exit status and stderr as the error, and the start again when envd refused
 * it for want of a process slot or memory or the script died by a signal
 * (docs/internals/wire.md "Process start").
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "e2b/provider_int.h"
#include "e2b/run.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/err.h"

#define KILL_SCRIPT_TRIES  5   /* kill_all / kill_tagged: starts at most */
#define KILL_RETRY_WAIT_MS 100 /* before the 2nd start; doubled for each next */

typedef sbx__run_result run_result;

static bool exited_with(const run_result *r, int code)
{
	return r->has_exit_code && r->exit_code == code;
}

static const char *stderr_of(run_result *r, char *buf, size_t buflen)
{
	return sbx__e2b_stderr_text(&r->err, buf, buflen);
}

/* s holds word, ASCII letters compared without case. */
static bool has_words(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; *s; s++)
		if (strncasecmp(s, word, n) == 0)
			return true;
	return false;
}

/*
 * envd refused to start the kill script for want of a process slot or of
 * memory (envd: invalid_argument "error starting process ...: fork/exec ...:
 * resource temporarily unavailable" or "cannot allocate memory"): nothing
 * ran, so starting it again is safe.
 */
static bool start_refused(int error, const sbx_error *e, const run_result *r)
{
	if (error != SBX_EHTTP || r->have_pid)
		return false;
	if (strcmp(e->e2b_code, "invalid_argument") != 0 &&
	    strcmp(e->e2b_code, "resource_exhausted") != 0)
		return false;
	return has_words(e->message, "resource temporarily unavailable") ||
	       has_words(e->message, "cannot allocate memory");
}

/*
 * The attach + kill script + exit-status check shared by kill_all and
 * kill_tagged. The script needs no process once its shell runs, but the
 * start itself needs a slot and memory, and the box's OOM killer may pick
 * the shell: when envd refused the start for want of either
 * (start_refused) or the script ended by a signal (status 128 + n), it is
 * started again, at most KILL_SCRIPT_TRIES times in all after waits of
 * 100, 200, 400 and 800 ms (each retry logged at warn level). The kill is
 * idempotent. An abort ends a wait at once (SBX_EABORTED).
 */
static int kill_script(sbx__e2b_provider *p, const char *id, const char *const *args, size_t nargs,
                       const char *failure, sbx_signal *sig, sbx_error *err)
{
	char se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	int error;

	for (unsigned n = 0;; n++) {
		sbx_envd_target t = {0};
		run_result r = {0};
		sbx_error local = {0};
		bool again, signalled = false;

		error = sbx__e2b_attached_kill_script(p, &t, id, args, nargs, sig, &r, &local);
		if (error == 0 && !exited_with(&r, 0)) {
			signalled = !r.has_exit_code || r.exit_code > 128;
			const char *why = stderr_of(&r, se, sizeof(se));
			if (*why)
				error =
				    sbx__error_set(&local, SBX_ESANDBOX, "%s: %s", failure, why);
			else if (r.has_exit_code)
				error = sbx__error_set(&local, SBX_ESANDBOX, "%s: exit status %d",
				                       failure, r.exit_code);
			else
				error = sbx__error_set(&local, SBX_ESANDBOX, "%s: no exit status",
				                       failure);
		}
		again = error < 0 && n + 1 < KILL_SCRIPT_TRIES &&
		        (signalled || start_refused(error, &local, &r));
		sbx__e2b_run_result_dispose(&r);
		sbx__envd_target_dispose(&t);
		if (!again) {
			if (error < 0)
				sbx__e2b_pass_error(err, &local);
			return error;
		}
		uint64_t wait_ms = KILL_RETRY_WAIT_MS << n;
		char attempt[16], ms[24];
		sbx_log_field f[4] = {{"sandboxId", id},
		                      {"cause", local.message},
		                      {"attempt", attempt},
		                      {"delayMs", ms}};
		snprintf(attempt, sizeof(attempt), "%u", n + 2);
		snprintf(ms, sizeof(ms), "%llu", (unsigned long long)wait_ms);
		sbx__e2b_log(p, SBX_LOG_WARN, "sandbox-e2b: starting the kill script again", f, 4);
		if ((error = sbx__http_sleep(wait_ms, sig, err)) < 0)
			return error;
	}
}

int sbx__e2b_kill_all(void *impl, const char *id, sbx_signal *sig, sbx_error *err)
{
	const char *args[] = {"-c", sbx__e2b_kill_all_script, "capybara-killall"};
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	return kill_script(impl, id, args, 3, "cannot stop leftover commands", sig, err);
}

int sbx__e2b_kill_tagged(void *impl, const char *id, const char *const *tags, size_t ntags,
                         sbx_signal *sig, sbx_error *err)
{
	const char **args;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if (ntags == 0)
		return 0;
	if (ntags > SIZE_MAX / sizeof(*args) - 3 || !(args = sbx__calloc(ntags + 3, sizeof(*args))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	args[0] = "-c";
	args[1] = sbx__e2b_kill_tagged_script;
	args[2] = "capybara-killtagged";
	for (size_t i = 0; i < ntags; i++)
		args[i + 3] = tags[i];
	error = kill_script(impl, id, args, ntags + 3, "cannot stop crashed holders' commands", sig,
	                    err);
	sbx__free(args);
	return error;
}
