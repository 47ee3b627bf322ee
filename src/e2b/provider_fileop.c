/*
 * e2b/provider_fileop.c: a file operation, an in-sandbox script as a command
 * (docs/contract.md "Files"; docs/files.md "Timeouts, aborts and leftovers"):
 * /bin/sh in "/" under the file-op wrapper (scripts/fileop_wrapper.sh), run by sbx__e2b_run()
 * (provider_run.c) on envd's Start (docs/internals/wire.md "Process start"),
 * with the attach and the retry on envd's 502 (sbx__e2b_with_attach); and a
 * script's stderr turned into an error message. The file operations built on
 * it live in provider_files.c, provider_paths.c and provider_transfer.c; the
 * kill scripts in provider_kill.c.
 */
#include <stdio.h>
#include <string.h>

#include "contract/utf8.h"
#include "e2b/provider_int.h"
#include "e2b/run.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/err.h"

#define FILE_OP_TIMEOUT_MS 120000 /* a file operation's timeout when the caller gives none */

typedef sbx__run_opts run_opts;
typedef sbx__run_result run_result;

/*
 * A file operation: /bin/sh in "/", timeout_ms (the seed: 120 s); a timeout is an
 * error, an abort is SBX_EABORTED. Unlike the seed, the script runs as an
 * exec does: in its own session under the file-op wrapper, with an
 * in-sandbox `timeout -s KILL` backstop, and on a timeout or abort the kill
 * path (kill script as `user`, SIGKILL, reboot as the last resort) stops it,
 * so no process is left behind (a read of a FIFO blocks forever). The kill
 * scripts themselves (kill_all, kill_tagged) run bare, as the seed's do:
 * `bare` is their shell, started with `args` directly; they end on their
 * own. NULL: the wrapped /bin/sh.
 */
static int file_op(sbx__e2b_provider *p, const sbx_envd_target *t, const char *user,
                   const char *const *args, size_t nargs, size_t max_output, uint64_t timeout_ms,
                   const char *bare, sbx_signal *sig, run_result *r, sbx_error *err)
{
	bool killable = !bare;
	char ctl[128], secs[32];
	const char **wargs = NULL;
	run_opts o = {0};
	int error;

	sbx__e2b_run_result_init(r, max_output);
	if ((error = sbx__e2b_fileop_control_path(ctl, sizeof(ctl))) < 0)
		return sbx__error_set(err, error, "cannot make a file-op control path");
	if (nargs > SIZE_MAX / sizeof(*wargs) - SBX_E2B_FILEOP_ARGC ||
	    !(wargs = sbx__calloc(nargs + SBX_E2B_FILEOP_ARGC, sizeof(*wargs))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	sbx__e2b_fileop_args(wargs, secs, sizeof(secs), ctl, timeout_ms);
	for (size_t i = 0; i < nargs; i++)
		wargs[SBX_E2B_FILEOP_ARGC + i] = args[i];
	o.user = user;
	o.cmd = killable ? "setsid" : bare;
	o.args = killable ? wargs : args;
	o.nargs = killable ? nargs + SBX_E2B_FILEOP_ARGC : nargs;
	o.cwd = "/";
	o.max_output = max_output;
	o.timeout_ms = timeout_ms;
	o.sig = sig;
	o.ctl = killable ? ctl : NULL;
	o.ctl_user = user;
	o.sandbox_id = t->sandbox_id;
	error = sbx__e2b_run(p, t, &o, r, err);
	sbx__free(wargs);
	if (error < 0)
		return error;
	if (r->aborted)
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	if (r->timed_out)
		return sbx__error_set(err, SBX_ETIMEOUT, "sandbox file operation timed out");
	return 0;
}

int sbx__e2b_file_op(sbx__e2b_provider *p, const sbx_envd_target *t, const char *user,
                     const char *const *args, size_t nargs, size_t max_output, uint64_t timeout_ms,
                     sbx_signal *sig, sbx__file_op *res, sbx_error *err)
{
	run_result r;
	int error = file_op(p, t, user, args, nargs, max_output,
	                    timeout_ms ? timeout_ms : FILE_OP_TIMEOUT_MS, NULL, sig, &r, err);

	res->out = r.out; /* the buffers move to res */
	res->err = r.err;
	res->truncated = r.truncated;
	res->has_exit_code = r.has_exit_code;
	res->exit_code = r.exit_code;
	return error;
}

/* A file operation as a step of sbx__e2b_with_attach. */
typedef struct file_op_step {
	const char *user;
	const char *const *args;
	size_t nargs, max_output;
	uint64_t timeout_ms;
	const char *bare; /* NULL: the wrapped /bin/sh; else run_result `r` and file_op() bare */
	sbx_signal *sig;
	sbx__file_op *res;
	run_result *r;
} file_op_step;

static int file_op_step_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	file_op_step *x = ctx;
	if (x->bare)
		return file_op(p, t, x->user, x->args, x->nargs, x->max_output, x->timeout_ms,
		               x->bare, x->sig, x->r, local);
	return sbx__e2b_file_op(p, t, x->user, x->args, x->nargs, x->max_output, x->timeout_ms,
	                        x->sig, x->res, local);
}

static void file_op_step_reset(void *ctx)
{
	file_op_step *x = ctx;
	if (x->bare)
		sbx__e2b_run_result_dispose(x->r);
	else
		sbx__e2b_file_op_dispose(x->res);
}

int sbx__e2b_attached_file_op(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                              const char *user, const char *const *args, size_t nargs,
                              size_t max_output, uint64_t timeout_ms, sbx_signal *sig,
                              sbx__file_op *res, sbx_error *err)
{
	uint64_t ms = timeout_ms ? timeout_ms : FILE_OP_TIMEOUT_MS;
	file_op_step x = {user, args, nargs, max_output, timeout_ms, NULL, sig, res, NULL};
	sbx__e2b_step step = {file_op_step_run, NULL, file_op_step_reset, &x};
	sbx_error local;
	int error;

	memset(res, 0, sizeof(*res));
	error =
	    sbx__e2b_with_attach(p, t, id, sbx__e2b_run_min_seconds(ms), &step, sig, &local, err);
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	return error;
}

void sbx__e2b_file_op_dispose(sbx__file_op *res)
{
	sbx_buf_dispose(&res->out);
	sbx_buf_dispose(&res->err);
	memset(res, 0, sizeof(*res));
}

/* attach + the kill script as the sandbox user, once more after a fresh connect on envd's 502. */
int sbx__e2b_attached_kill_script(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                                  const char *const *args, size_t nargs, sbx_signal *sig,
                                  run_result *r, sbx_error *err)
{
	file_op_step x = {SBX_E2B_SANDBOX_USER,
	                  args,
	                  nargs,
	                  SBX_E2B_STDERR_ROOM,
	                  FILE_OP_TIMEOUT_MS,
	                  SBX_E2B_KILL_SHELL,
	                  sig,
	                  NULL,
	                  r};
	sbx__e2b_step step = {file_op_step_run, NULL, file_op_step_reset, &x};
	sbx_error local;
	int error = sbx__e2b_with_attach(p, t, id, sbx__e2b_run_min_seconds(FILE_OP_TIMEOUT_MS),
	                                 &step, sig, &local, err);

	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	return error;
}

bool sbx__e2b_runuser_no_sandbox(const sbx_buf *e)
{
	char text[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	return strstr(sbx__e2b_stderr_text(e, text, sizeof(text)),
	              "runuser: user sandbox does not exist") != NULL;
}

/*
 * The in-sandbox scripts run as `sh -c SCRIPT capybara-NAME ...`, so dash names
 * its errors "capybara-write: 1: cannot create /etc/passwd: Permission denied".
 * Drop that prefix (an internal name), and say a refused permission as
 * "permission denied for PATH".
 */
static void reword_script_error(char *buf, size_t buflen)
{
	static const char denied[] = ": Permission denied";
	static const char *const leads[] = {"cannot create directory ", "cannot create ",
	                                    "cannot open directory ",   "cannot open ",
	                                    "cannot remove ",           "can't cd to "};
	char subject[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	size_t n, dl = sizeof(denied) - 1, sl;
	const char *from = NULL;

	if (strncmp(buf, "capybara-", 9) == 0) {
		const char *p = buf + 9;
		while (*p && *p != ':' && *p != ' ')
			p++;
		if (p[0] == ':' && p[1] == ' ' && p[2] >= '0' && p[2] <= '9') {
			p += 2;
			while (*p >= '0' && *p <= '9')
				p++;
			if (p[0] == ':' && p[1] == ' ')
				memmove(buf, p + 2, strlen(p + 2) + 1);
		}
	}
	n = strlen(buf);
	if (strstr(buf, "cannot move ")) /* mv names two paths: its own words say which */
		return;
	if (strchr(buf, '\n') || n <= dl || strcmp(buf + n - dl, denied) != 0 ||
	    n - dl >= sizeof(subject))
		return;
	for (size_t i = 0; !from && i < sizeof(leads) / sizeof(leads[0]); i++) {
		const char *at = strstr(buf, leads[i]);
		if (at && at + strlen(leads[i]) <= buf + n - dl)
			from = at + strlen(leads[i]);
	}
	if (!from) { /* "cat: /root/x: Permission denied": the tool's name first */
		const char *colon = strstr(buf, ": ");
		from = colon && colon < buf + n - dl ? colon + 2 : buf;
	}
	sl = (size_t)(buf + n - dl - from);
	memcpy(subject, from, sl);
	subject[sl] = '\0';
	if (subject[0] == '\'' || subject[0] == '"') { /* "'/x' for reading": the quoted part */
		char *close = strchr(subject + 1, subject[0]);
		if (close) {
			*close = '\0';
			memmove(subject, subject + 1, strlen(subject + 1) + 1);
		}
	}
	if (subject[0] && strlen("permission denied for ") + strlen(subject) < buflen)
		snprintf(buf, buflen, "permission denied for %s", subject);
}

const char *sbx__e2b_stderr_text(const sbx_buf *err, char *buf, size_t buflen)
{
	const unsigned char *s = err->ptr ? err->ptr : (const unsigned char *)"";
	size_t a = 0, b = err->len, n;

	while (a < b && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r')))
		a++;
	while (b > a && (s[b - 1] == ' ' || (s[b - 1] >= '\t' && s[b - 1] <= '\r')))
		b--;
	n = b - a;
	if (n > SBX_E2B_STDERR_MESSAGE_MAX)
		n = sbx__utf8_keep_len(s + a, SBX_E2B_STDERR_MESSAGE_MAX, true);
	if (n >= buflen)
		n = buflen - 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = s[a + i] ? (char)s[a + i] : ' ';
	buf[n] = '\0';
	reword_script_error(buf, buflen);
	return buf;
}
