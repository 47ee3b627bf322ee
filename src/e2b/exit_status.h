/*
 * e2b/exit_status.h: envd's process end event → exit code (docs/exec.md "Exit codes": every
 * signal name Go prints on Linux, 1..31).
 */
#ifndef SBX_E2B_EXIT_STATUS_H
#define SBX_E2B_EXIT_STATUS_H

#include <stdbool.h>

/*
 * `exited` and `exit_code` as received (absent = false / 0, protobuf-JSON
 * defaults); `status` may be NULL (absent). Returns true and sets *code_out
 * when there is an exit code: exited or "exit status N" → exit_code;
 * "signal: NAME" or "signal: NAME (core dumped)" → 128 + n. Else false.
 */
bool sbx__e2b_exit_code(bool exited, int exit_code, const char *status, int *code_out);

/* Go's name of a Linux signal ("killed" for 9), or NULL outside 1..31. */
const char *sbx__e2b_signal_name(int signo);

#endif
