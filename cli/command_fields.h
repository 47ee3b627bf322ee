/*
 * cli/command_fields.h: the fields exec, a background command and a terminal share (cwd, env,
 * timeout_ms, the output budget, tag, user). The tool holds them once, as exec's options (the
 * only struct that has them all: `exec`'s flags, serve's exec and pty_start params), and gives
 * them to sbx_process_start() and sbx_pty_start() as their own option structs from here
 * (command_fields.c). Core: any command or serve file may use it.
 */
#ifndef SBX_CLI_COMMAND_FIELDS_H
#define SBX_CLI_COMMAND_FIELDS_H

#include <sandbox.h>
#include <sandbox/process.h>
#include <sandbox/pty.h>

/* SBX_PROCESS_OPTIONS_INIT with o's cwd, env, timeout_ms, max_output_bytes, tag and user. */
sbx_process_options cli_process_options_of(const sbx_exec_options *o);
/* SBX_PTY_OPTIONS_INIT with o's cwd, env, timeout_ms and user (a terminal has no budget or tag). */
sbx_pty_options cli_pty_options_of(const sbx_exec_options *o);

#endif
