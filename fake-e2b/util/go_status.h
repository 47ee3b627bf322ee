/*
 * fake-e2b/util/go_status.h: a waitpid status in the words of Go's os.ProcessState.String(), as
 * envd reports a process's end (its process service's end event, "exit status 3",
 * "signal: killed") and as the sandbox logs repeat it.
 */
#ifndef FK_UTIL_GO_STATUS_H
#define FK_UTIL_GO_STATUS_H

#include <stddef.h>

/* *status (cap bytes, cut to fit) gets "exit status N" or "signal: <Go's name>[ (core
 * dumped)]", *exit_code N or -1. Thread-safe; no allocation. */
void fk_go_process_status(int ws, char *status, size_t cap, int *exit_code);
/* Go's name of signal `sig` (static storage), NULL when Go has none. */
const char *fk_go_signal_name(int sig);

#endif
