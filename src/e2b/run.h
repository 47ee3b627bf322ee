/*
 * e2b/run.h: one command in a sandbox, as provider_run.c runs it (docs/exec.md "How a
 * command runs", "Timeout, abort and the kill tree"), for exec (provider_exec.c), the file
 * operations (provider_fileop.c), the kill scripts (provider_kill.c) and provider_process.c,
 * which runs the same thing on a background handle's reader thread. Internal to the E2B
 * provider.
 */
#ifndef SBX_E2B_RUN_H
#define SBX_E2B_RUN_H

#include <stdatomic.h>

#include "contract/command.h"
#include "e2b/provider_int.h"
#include "e2b/scripts.h"
#include "util/buf.h"

/* One command to run (docs/contract.md "exec"). */
typedef struct sbx__run_opts {
	const char *user;
	const char *cmd;
	const char *const *args;
	size_t nargs;
	const sbx_env_var *env; /* NULL: no envs */
	size_t nenv;
	const char *cwd;
	size_t max_output;
	uint64_t timeout_ms;
	uint64_t abort_after_ms; /* a deadline acting as an abort (AbortSignal.timeout), 0 = none */
	sbx_signal *sig;
	/* exec only: kill on timeout/abort, reboot when that fails */
	const char *ctl;
	const char *ctl_user; /* who runs the kill script: the command's user (NULL: sandbox) */
	const char *sandbox_id;
	uint32_t
	    attach_pid;  /* > 0: follow this running process (envd Connect) instead of starting */
	bool stdin_open; /* start with a stdin pipe even without stdin_data/stdin_read */
	/* streamed output and stdin (sbx_exec_options version 2) */
	sbx_output_fn on_output;
	void *output_payload;
	const void *stdin_data;
	size_t stdin_len;
	sbx_input_fn stdin_read;
	void *stdin_payload;
} sbx__run_opts;

/* What run() collected. Dispose with run_result_dispose(). */
typedef struct sbx__run_result {
	sbx_buf out;
	sbx_buf err;
	size_t used;
	bool truncated;
	bool timed_out;
	bool aborted;
	bool got_end;
	bool has_exit_code;
	int exit_code;
	bool have_pid;
	uint32_t pid;
	bool oom;
	/* streamed output: bytes of out (sent[0]) and err (sent[1]) handed to cb so far */
	sbx_output_fn cb;
	void *cb_payload;
	size_t sent[2];
	bool yield_for_pid; /* hand control back once the pid is known (to send stdin) */
	bool user_stop;     /* a callback returned non-zero: stop as on abort */
	int user_rc;
	const char *user_what; /* "on_output" or "stdin_read" */
	bool partial;          /* failed after start: the output so far is kept for the caller */
	/* background commands: told of the pid from the reader thread; detach = disconnect on
	 * abort without killing (a handle freed without waiting) */
	void (*on_pid)(void *ctx);
	void *pid_ctx;
	_Atomic bool detach;
	/* the direct form (set before sbx__e2b_run): stderr carries SBX_E2B_EXEC_MARK first when
	 * the exec helper ran; it is taken out, what came before it held in `pre` until then */
	bool marked;
	bool mark_seen;
	bool mark_gave_up; /* SBX_E2B_MARK_HOLD bytes came without it: passed on as they were */
	sbx_buf pre;
} sbx__run_result;

/* Most stderr bytes held while looking for the exec helper's marker (envd's own shell may
 * print before the helper runs; nothing else can). */
#define SBX_E2B_MARK_HOLD 4096

/*
 * The direct form's verdict once its stream ended: the exec helper never ran, so nothing of the
 * command did (no marker, the status envd's shell gives for a missing or unrunnable helper, 126
 * or 127, or an older helper's 125 for --mark; nothing handed out), and the exec line may run it.
 */
bool sbx__e2b_mark_not_run(const sbx__run_result *r);
/* The stream handler's output step (stream 1 stdout, 2 stderr, 3 a terminal; p NULL: n bytes
 * past the budget, counted only) and, once the stream is over, its end step (held stderr
 * without a marker becomes output unless the helper never ran). provider_run.c runs them; the
 * unit tests feed them. */
void sbx__e2b_run_output(sbx__run_result *r, int stream, const unsigned char *p, size_t n);
void sbx__e2b_run_output_end(sbx__run_result *r);

/* An exec-style command (the setsid wrapper) ready to run: see sbx__e2b_exec_begin(). */
typedef struct sbx__exec_cmd {
	const char *args[SBX_E2B_EXEC_ARGC];
	const char *direct[SBX_E2B_EXEC_DIRECT_ARGC]; /* the same command in the direct form */
	char ctl[128];
	char secs[32];
	sbx_env_var *env;
	sbx_envd_target t;
	sbx__run_opts o; /* points into this struct: never copy or move it */
} sbx__exec_cmd;

void sbx__e2b_run_result_init(sbx__run_result *r, size_t max_output);
void sbx__e2b_run_result_dispose(sbx__run_result *r);

/*
 * Run one command to its end, timeout or abort (o->sig), collecting its
 * output into `r` (see provider_run.c). With o->ctl a timeout or abort
 * kills the command's tree (and reboots the sandbox when that fails), unless
 * r->detach is set. Returns 0 or the failure; r->partial says whether the
 * output so far is still the caller's.
 */
int sbx__e2b_run(sbx__e2b_provider *p, const sbx_envd_target *t, const sbx__run_opts *o,
                 sbx__run_result *r, sbx_error *err);

/*
 * exec's preparation from the shared command fields: control path,
 * environment (sbx__e2b_command_env), the setsid argv, and attach() with the
 * sandbox timeout pushed to the command's + 120 s. `c` is filled for
 * sbx__e2b_run(&c->t, &c->o) but for the streamed output and stdin fields,
 * which the caller sets; dispose with sbx__e2b_exec_end() (also after a
 * failure).
 */
int sbx__e2b_exec_begin(sbx__exec_cmd *c, sbx__e2b_provider *p, const char *id, const char *command,
                        const sbx__command *cmd, sbx_signal *sig, sbx_error *err);
/*
 * The environment a command of `cmd` starts with (docs/exec.md "How a command runs"): HOME
 * (/workspace; /root for root), LANG=C.UTF-8, then the `nmore` of `more` (a terminal's TERM),
 * then cmd's variables, so the caller's win. *n_out entries to sbx__free(); NULL when out of
 * memory. The strings stay borrowed.
 */
sbx_env_var *sbx__e2b_command_env(const sbx__command *cmd, const sbx_env_var *more, size_t nmore,
                                  size_t *n_out);
void sbx__e2b_exec_end(sbx__exec_cmd *c);

/* Move r's output into `out` (UTF-8-safe cut when truncated). 0 or SBX_ENOMEM. */
int sbx__e2b_result_out(sbx_exec_result *out, sbx__run_result *r, sbx_error *err);

/* What the sandbox's timeout must cover for a command of timeout_ms: it + 120 s, in seconds. */
uint64_t sbx__e2b_run_min_seconds(uint64_t timeout_ms);

/*
 * provider_fileop.c: attach + a kill script (`/bin/bash ARGS...`, bare: no wrapper) as the
 * sandbox user, collecting into `r` (init'ed here, dispose it), once more after a fresh
 * connect on envd's 502. Fills `t` (dispose it). 0 or the failure, in `err`.
 */
int sbx__e2b_attached_kill_script(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                                  const char *const *args, size_t nargs, sbx_signal *sig,
                                  sbx__run_result *r, sbx_error *err);

/* The kill script for control path `ctl`, as its own command. True when it exited 0. */
bool sbx__e2b_kill_script_ok(sbx__e2b_provider *p, const sbx_envd_target *t, const char *ctl);
/* The same as `user` (NULL: the sandbox user): a root file operation is killed by root. */
bool sbx__e2b_kill_script_as(sbx__e2b_provider *p, const sbx_envd_target *t, const char *ctl,
                             const char *user);

#endif
