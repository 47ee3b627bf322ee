/* fake-e2b/util/go_status.c: Go's words for a waitpid status (go_status.h). */
#include "go_status.h"

#include <stdio.h>
#include <sys/wait.h>

const char *fk_go_signal_name(int sig)
{
	static const char *const names[] = {
	    NULL,
	    "hangup",
	    "interrupt",
	    "quit",
	    "illegal instruction",
	    "trace/breakpoint trap",
	    "aborted",
	    "bus error",
	    "floating point exception",
	    "killed",
	    "user defined signal 1",
	    "segmentation fault",
	    "user defined signal 2",
	    "broken pipe",
	    "alarm clock",
	    "terminated",
	    "stack fault",
	    "child exited",
	    "continued",
	    "stopped (signal)",
	    "stopped",
	    "stopped (tty input)",
	    "stopped (tty output)",
	    "urgent I/O condition",
	    "CPU time limit exceeded",
	    "file size limit exceeded",
	    "virtual timer expired",
	    "profiling timer expired",
	    "window changed",
	    "I/O possible",
	    "power failure",
	    "bad system call",
	};
	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])))
		return names[sig];
	return NULL;
}

void fk_go_process_status(int ws, char *status, size_t cap, int *exit_code)
{
	if (WIFEXITED(ws)) {
		*exit_code = WEXITSTATUS(ws);
		snprintf(status, cap, "exit status %d", *exit_code);
		return;
	}
	int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	const char *name = fk_go_signal_name(sig);
	char num[32];
	if (!name) {
		snprintf(num, sizeof(num), "signal %d", sig);
		name = num;
	}
	snprintf(status, cap, "signal: %s%s", name,
	         WIFSIGNALED(ws) && WCOREDUMP(ws) ? " (core dumped)" : "");
	*exit_code = -1;
}
