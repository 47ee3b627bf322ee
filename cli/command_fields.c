/*
 * cli/command_fields.c: exec's options as a background command's and a terminal's
 * (command_fields.h; docs/exec.md "How a command runs", "Background commands", docs/pty.md).
 */
#include "command_fields.h"

sbx_process_options cli_process_options_of(const sbx_exec_options *o)
{
	sbx_process_options po = SBX_PROCESS_OPTIONS_INIT;

	po.cwd = o->cwd;
	po.env = o->env;
	po.env_count = o->env_count;
	po.timeout_ms = o->timeout_ms;
	po.max_output_bytes = o->max_output_bytes;
	po.tag = o->tag;
	po.user = o->user;
	return po;
}

sbx_pty_options cli_pty_options_of(const sbx_exec_options *o)
{
	sbx_pty_options po = SBX_PTY_OPTIONS_INIT;

	po.cwd = o->cwd;
	po.env = o->env;
	po.env_count = o->env_count;
	po.timeout_ms = o->timeout_ms;
	po.user = o->user;
	return po;
}
