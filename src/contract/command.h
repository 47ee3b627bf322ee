/*
 * contract/command.h: the fields every way of starting a command shares
 * (docs/exec.md "How a command runs"): exec (sbx_exec_options), a background
 * command (sbx_process_options) and a terminal (sbx_pty_options) each carry
 * cwd, env, timeout_ms and user, the first two max_output_bytes and tag as
 * well. The public structs keep their own fields (their layouts are versioned
 * ABI, include/sandbox/sandbox.h); inside the library they are read once,
 * into an sbx__command, which the shared checks here and the provider's
 * preparation (e2b/provider_exec.c, provider_process.c, provider_pty.c) take.
 * Internal to the library.
 */
#ifndef SBX_CONTRACT_COMMAND_H
#define SBX_CONTRACT_COMMAND_H

#include <sandbox/process.h>
#include <sandbox/pty.h>
#include <sandbox/sandbox.h>

/* The shared fields, borrowed from the options they were read from. */
typedef struct sbx__command {
	const char *cwd;         /* working directory; NULL = /workspace */
	const sbx_env_var *env;  /* extra environment, after the provider's own; may be NULL */
	size_t env_count;        /* entries in env */
	uint64_t timeout_ms;     /* the command's timeout in ms (a terminal: 0 = none) */
	size_t max_output_bytes; /* the shared stdout + stderr budget (a terminal: 0, unused) */
	const char *tag;         /* holder tag for kill_tagged, or NULL (a terminal: NULL) */
	sbx_user user;           /* who runs it */
} sbx__command;

/* The shared fields of normalised options (all fields of their current version set). */
sbx__command sbx__command_of_exec(const sbx_exec_options *o);
sbx__command sbx__command_of_process(const sbx_process_options *o);
sbx__command sbx__command_of_pty(const sbx_pty_options *o);

/*
 * `n` environment variables: env not NULL when n > 0, keys as sbx_validate_env_key, no NULL
 * value (also create's env, contract/lifetime.c). 0 or SBX_EINVALID.
 */
int sbx__env_check(const sbx_env_var *env, size_t n, sbx_error *err);
/*
 * exec's rules on the shared fields, in the seed's order (docs/contract.md
 * "exec"): the tag, the env keys and values, then ours: a timeout_ms > 0
 * with SBX__CMD_TIMEOUT, the user (sbx__command_check_user) with
 * SBX__CMD_USER. 0 or SBX_EINVALID.
 */
#define SBX__CMD_TIMEOUT 1u
#define SBX__CMD_USER    2u
int sbx__command_check(const sbx__command *c, unsigned rules, sbx_error *err);
/* user is SBX_USER_SANDBOX or SBX_USER_ROOT ("exec user must be ..."). 0 or SBX_EINVALID. */
int sbx__command_check_user(const sbx__command *c, sbx_error *err);

#endif
