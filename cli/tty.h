/*
 * cli/tty.h: `exec -t` / `-it`: a command on a terminal in the sandbox,
 * driven from this tool's own terminal (tty.c).
 */
#ifndef SBX_CLI_TTY_H
#define SBX_CLI_TTY_H

#include "cli.h"

/*
 * Run `command` (NULL: the user's login shell) on a remote terminal of this
 * terminal's size (80 x 24 without one) with `opts`' cwd, env, user and
 * timeout; `input`: forward stdin (raw mode when it is a terminal). Returns 0
 * with *exit_code (the command's, 128 + N for signal N, 124 timed out, 125 no
 * code, 128 + our signal after SIGINT / SIGTERM / SIGHUP, which kill the
 * remote command), or a library failure (err filled). The terminal's
 * settings are restored on every return.
 */
int cli_tty_session(cli *c, const char *id, const char *command, const sbx_pty_options *opts,
                    bool input, int *exit_code, sbx_error *err);

#endif
