/*
 * contract/command.c: the shared command fields read out of exec's, a
 * background command's and a terminal's options, and the checks they share
 * (contract/command.h; docs/contract.md "exec", docs/exec.md "How a command
 * runs").
 */
#include "contract/command.h"

#include <sandbox/validate.h>

#include "util/err.h"

sbx__command sbx__command_of_exec(const sbx_exec_options *o)
{
	return (sbx__command){o->cwd, o->env, o->env_count, o->timeout_ms, o->max_output_bytes,
	                      o->tag, o->user};
}

sbx__command sbx__command_of_process(const sbx_process_options *o)
{
	return (sbx__command){o->cwd, o->env, o->env_count, o->timeout_ms, o->max_output_bytes,
	                      o->tag, o->user};
}

sbx__command sbx__command_of_pty(const sbx_pty_options *o)
{
	return (sbx__command){o->cwd, o->env, o->env_count, o->timeout_ms, 0, NULL, o->user};
}

int sbx__env_check(const sbx_env_var *env, size_t n, sbx_error *err)
{
	int error;
	if (n > 0 && !env)
		return sbx__error_set(err, SBX_EINVALID, "env is NULL");
	for (size_t i = 0; i < n; i++) {
		if ((error = sbx_validate_env_key(env[i].key, err)) < 0)
			return error;
		if (!env[i].value)
			return sbx__error_set(err, SBX_EINVALID,
			                      "environment variable %s has a NULL value",
			                      env[i].key);
	}
	return 0;
}

int sbx__command_check(const sbx__command *c, unsigned rules, sbx_error *err)
{
	int error;
	if (c->tag && (error = sbx_validate_tag(c->tag, err)) < 0)
		return error;
	if ((error = sbx__env_check(c->env, c->env_count, err)) < 0)
		return error;
	if ((rules & SBX__CMD_TIMEOUT) && c->timeout_ms == 0)
		return sbx__error_set(err, SBX_EINVALID, "exec timeout_ms must be positive");
	return rules & SBX__CMD_USER ? sbx__command_check_user(c, err) : 0;
}

int sbx__command_check_user(const sbx__command *c, sbx_error *err)
{
	if (c->user != SBX_USER_SANDBOX && c->user != SBX_USER_ROOT)
		return sbx__error_set(err, SBX_EINVALID,
		                      "exec user must be SBX_USER_SANDBOX or SBX_USER_ROOT, not %d",
		                      (int)c->user);
	return 0;
}
