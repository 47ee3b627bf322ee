/*
 * e2b/exit_status.c: envd's process end event → exit code.
 *
 * As docs/exec.md "Exit codes" states: `exited` or a status "exit status N" gives exitCode
 * (absent = 0, protobuf-JSON default); "signal: NAME" or "signal: NAME (core
 * dumped)" gives 128 + n. envd formats the status with Go's
 * os.ProcessState.String(), whose signal names come from Go's Linux signal
 * table (syscall/zerrors_linux_amd64.go); the seed knew 1..15, we know 1..31.
 */
#include "e2b/exit_status.h"

#include <stddef.h>
#include <string.h>

static const char *const signal_names[32] = {
    NULL,
    "hangup",                   /* 1 SIGHUP */
    "interrupt",                /* 2 SIGINT */
    "quit",                     /* 3 SIGQUIT */
    "illegal instruction",      /* 4 SIGILL */
    "trace/breakpoint trap",    /* 5 SIGTRAP */
    "aborted",                  /* 6 SIGABRT */
    "bus error",                /* 7 SIGBUS */
    "floating point exception", /* 8 SIGFPE */
    "killed",                   /* 9 SIGKILL */
    "user defined signal 1",    /* 10 SIGUSR1 */
    "segmentation fault",       /* 11 SIGSEGV */
    "user defined signal 2",    /* 12 SIGUSR2 */
    "broken pipe",              /* 13 SIGPIPE */
    "alarm clock",              /* 14 SIGALRM */
    "terminated",               /* 15 SIGTERM */
    "stack fault",              /* 16 SIGSTKFLT */
    "child exited",             /* 17 SIGCHLD */
    "continued",                /* 18 SIGCONT */
    "stopped (signal)",         /* 19 SIGSTOP */
    "stopped",                  /* 20 SIGTSTP */
    "stopped (tty input)",      /* 21 SIGTTIN */
    "stopped (tty output)",     /* 22 SIGTTOU */
    "urgent I/O condition",     /* 23 SIGURG */
    "CPU time limit exceeded",  /* 24 SIGXCPU */
    "file size limit exceeded", /* 25 SIGXFSZ */
    "virtual timer expired",    /* 26 SIGVTALRM */
    "profiling timer expired",  /* 27 SIGPROF */
    "window changed",           /* 28 SIGWINCH */
    "I/O possible",             /* 29 SIGIO */
    "power failure",            /* 30 SIGPWR */
    "bad system call",          /* 31 SIGSYS */
};

const char *sbx__e2b_signal_name(int signo)
{
	if (signo < 1 || signo > 31)
		return NULL;
	return signal_names[signo];
}

/* The signal number whose name is exactly s[0..len), or 0. */
static int signal_number(const char *s, size_t len)
{
	for (int n = 1; n <= 31; n++) {
		if (strlen(signal_names[n]) == len && memcmp(signal_names[n], s, len) == 0)
			return n;
	}
	return 0;
}

bool sbx__e2b_exit_code(bool exited, int exit_code, const char *status, int *code_out)
{
	static const char exit_prefix[] = "exit status ";
	static const char sig_prefix[] = "signal: ";
	static const char core[] = " (core dumped)";
	const char *name;
	size_t len;
	int n;

	if (!status)
		status = "";
	if (exited || strncmp(status, exit_prefix, sizeof(exit_prefix) - 1) == 0) {
		*code_out = exit_code;
		return true;
	}
	if (strncmp(status, sig_prefix, sizeof(sig_prefix) - 1) != 0)
		return false;
	name = status + sizeof(sig_prefix) - 1;
	len = strlen(name);
	/* As /^signal: (.+?)(?: \(core dumped\))?$/ reads it: the lazy group takes
	 * the name without the suffix when the suffix is there. */
	if (len > sizeof(core) - 1 && strcmp(name + len - (sizeof(core) - 1), core) == 0)
		len -= sizeof(core) - 1;
	if ((n = signal_number(name, len)) == 0)
		return false;
	*code_out = 128 + n;
	return true;
}
