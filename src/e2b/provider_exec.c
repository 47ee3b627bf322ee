/*
 * e2b/provider_exec.c: exec, the blocking command of the contract
 * (docs/contract.md "exec"; docs/exec.md "How a command runs", "Output: one
 * budget, truncation at a character boundary"): the options become one
 * sbx__run_opts under the exec wrapper (scripts.c), the sandbox is attached
 * with its timeout covering the command, sbx__e2b_run() (provider_run.c)
 * drives the Start stream (docs/internals/wire.md "Process start"), and the
 * output is handed over cut at a UTF-8 boundary. Background commands share
 * the preparation (sbx__e2b_exec_begin, provider_process.c).
 */
#include <string.h>

#include "contract/utf8.h"
#include "e2b/provider_int.h"
#include "e2b/run.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/err.h"

typedef sbx__run_opts run_opts;
typedef sbx__run_result run_result;

/*
 * Hand a buffer to the caller, cut at a UTF-8 boundary when truncated (docs/exec.md "Output: one
 * budget, truncation at a character boundary").
 */
static int detach_output(sbx_buf *b, bool truncated, unsigned char **data, size_t *len)
{
	size_t keep = sbx__utf8_keep_len(b->ptr, b->len, truncated);
	int error;

	if ((error = sbx_buf_detach(b, data, len)) < 0)
		return error;
	if (keep < *len) {
		(*data)[keep] = '\0';
		*len = keep;
	}
	return 0;
}

sbx_env_var *sbx__e2b_command_env(const sbx__command *cmd, const sbx_env_var *more, size_t nmore,
                                  size_t *n_out)
{
	sbx_env_var *env;
	size_t n = 2 + nmore;

	if (cmd->env_count > SIZE_MAX / sizeof(*env) - n ||
	    !(env = sbx__calloc(cmd->env_count + n, sizeof(*env))))
		return NULL;
	env[0] = (sbx_env_var){"HOME", cmd->user == SBX_USER_ROOT ? "/root" : "/workspace"};
	env[1] = (sbx_env_var){"LANG", "C.UTF-8"};
	for (size_t i = 0; i < nmore; i++)
		env[2 + i] = more[i];
	for (size_t i = 0; i < cmd->env_count; i++)
		env[n + i] = cmd->env[i];
	*n_out = cmd->env_count + n;
	return env;
}

/* exec_begin without the attach: control path, environment, argv, run options. */
static int exec_prepare(sbx__exec_cmd *c, const char *command, const sbx__command *cmd,
                        sbx_signal *sig, sbx_error *err)
{
	run_opts *o = &c->o;
	int error;

	memset(c, 0, sizeof(*c));
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if ((error = sbx__e2b_exec_control_path(c->ctl, sizeof(c->ctl), cmd->tag)) < 0)
		return sbx__error_set(err, error, "cannot make an exec control path");
	if (!(c->env = sbx__e2b_command_env(cmd, NULL, 0, &o->nenv)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	sbx__e2b_exec_args(c->args, c->secs, sizeof(c->secs), c->ctl, command, cmd->timeout_ms);
	sbx__e2b_exec_direct_args(c->direct, c->ctl, command, c->secs);
	o->user = sbx__e2b_user_name(cmd->user);
	o->ctl_user = o->user; /* the kill on timeout or abort, as the command's user */
	o->cmd = SBX_E2B_EXEC_CMD;
	o->args = c->args;
	o->nargs = SBX_E2B_EXEC_ARGC;
	o->env = c->env;
	o->cwd = cmd->cwd ? cmd->cwd : "/workspace";
	o->max_output = cmd->max_output_bytes;
	o->timeout_ms = cmd->timeout_ms;
	o->sig = sig;
	o->ctl = c->ctl;
	return 0;
}

int sbx__e2b_exec_begin(sbx__exec_cmd *c, sbx__e2b_provider *p, const char *id, const char *command,
                        const sbx__command *cmd, sbx_signal *sig, sbx_error *err)
{
	int error;

	if ((error = exec_prepare(c, command, cmd, sig, err)) < 0 ||
	    (error = sbx__e2b_attach(p, &c->t, id, sbx__e2b_run_min_seconds(cmd->timeout_ms), sig,
	                             err)) < 0)
		return error;
	c->o.sandbox_id = c->t.sandbox_id;
	return 0;
}

void sbx__e2b_exec_end(sbx__exec_cmd *c)
{
	sbx__envd_target_dispose(&c->t);
	sbx__free(c->env);
	memset(c, 0, sizeof(*c));
}

int sbx__e2b_result_out(sbx_exec_result *out, run_result *r, sbx_error *err)
{
	int rc;

	if ((rc = detach_output(&r->out, r->truncated, &out->stdout_data, &out->stdout_len)) < 0 ||
	    (rc = detach_output(&r->err, r->truncated, &out->stderr_data, &out->stderr_len)) < 0)
		return sbx__error_set(err, rc, "out of memory");
	out->has_exit_code = r->has_exit_code;
	out->exit_code = r->has_exit_code ? r->exit_code : 0;
	out->truncated = r->truncated;
	out->timed_out = r->timed_out;
	out->aborted = r->aborted;
	return 0;
}

/* exec's step for sbx__e2b_with_attach: the command on the attached target. */
typedef struct exec_step {
	sbx__exec_cmd *c;
	run_result *r;
	size_t max_output;
	const char *id;
} exec_step;

static void exec_step_reset(void *ctx);

/* The exec line (the wrapper's /bin/sh) or the direct form (the exec helper as envd's command). */
static void exec_form(sbx__exec_cmd *c, run_result *r, bool direct)
{
	c->o.cmd = direct ? SBX_E2B_EXEC_HELPER : SBX_E2B_EXEC_CMD;
	c->o.args = direct ? c->direct : c->args;
	c->o.nargs = direct ? SBX_E2B_EXEC_DIRECT_ARGC : SBX_E2B_EXEC_ARGC;
	r->marked = direct;
}

/*
 * The direct form unless this sandbox is known to lack the helper (docs/exec.md "How a command
 * runs"): one process less per exec. Where the helper never ran (its marker missing, envd's
 * shell's 126 or 127), nothing of the command did either, and the exec line runs it; a stdin
 * read callback, whose bytes could not be read twice, waits until the helper is known.
 */
static int exec_step_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	exec_step *x = ctx;
	int known = sbx__e2b_exec_helper_known(p, x->id), error;
	bool direct = known > 0 || (known == 0 && !x->c->o.stdin_read);

	x->c->o.sandbox_id = t->sandbox_id;
	exec_form(x->c, x->r, direct);
	error = sbx__e2b_run(p, t, &x->c->o, x->r, local);
	if (!direct)
		return error;
	if (x->r->mark_seen) {
		if (known == 0)
			sbx__e2b_exec_helper_learnt(p, x->id, 1);
		return error;
	}
	if (error < 0 || !sbx__e2b_mark_not_run(x->r))
		return error;
	sbx__e2b_exec_helper_learnt(p, x->id, -1);
	exec_step_reset(x);
	exec_form(x->c, x->r, false);
	return sbx__e2b_run(p, t, &x->c->o, x->r, local);
}

/* Started again only when the refused run handed nothing out (no output, no stdin read). */
static bool exec_step_again(void *ctx)
{
	const exec_step *x = ctx;
	return !x->r->partial;
}

static void exec_step_reset(void *ctx)
{
	exec_step *x = ctx;
	sbx__e2b_run_result_dispose(x->r);
	sbx__e2b_run_result_init(x->r, x->max_output);
}

int sbx__e2b_exec(void *impl, sbx_exec_result *out, const char *id, const char *command,
                  const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx__command cmd = sbx__command_of_exec(opts);
	sbx__exec_cmd c;
	run_result r;
	exec_step x = {&c, &r, opts->max_output_bytes, id};
	sbx__e2b_step step = {exec_step_run, exec_step_again, exec_step_reset, &x};
	sbx_error local = {0};
	int error, rc;

	sbx__e2b_run_result_init(&r, opts->max_output_bytes);
	/*
	 * No connect while the provider's last one still covers the command; when
	 * envd says the sandbox is not running (paused or gone behind our back),
	 * nothing ran (no output, no stdin read): connect (resume, or find it
	 * gone) and start again, once.
	 */
	if ((error = exec_prepare(&c, command, &cmd, sig, err)) < 0)
		goto done;
	c.o.on_output = opts->on_output;
	c.o.output_payload = opts->output_payload;
	c.o.stdin_data = opts->stdin_data;
	c.o.stdin_len = opts->stdin_len;
	c.o.stdin_read = opts->stdin_read;
	c.o.stdin_payload = opts->stdin_payload;
	error = sbx__e2b_with_attach(impl, &c.t, id, sbx__e2b_run_min_seconds(opts->timeout_ms),
	                             &step, sig, &local, err);
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	/* a stream that broke after start still hands over its output (with the error) */
	if (error < 0 && !r.partial)
		goto done;
	if ((rc = sbx__e2b_result_out(out, &r, err)) < 0)
		error = rc;
done:
	sbx__e2b_exec_end(&c);
	sbx__e2b_run_result_dispose(&r);
	return error;
}
