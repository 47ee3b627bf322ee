/*
 * capybara-exec CTL COMMAND SECONDS: the in-sandbox half of an exec when the template has it
 * (/opt/capybara-exec, templates/capybara-sandbox/Dockerfile; fake-e2b puts the same program
 * there). The exec wrapper (src/e2b/scripts/exec_wrapper.sh), already the session leader with
 * CTL.pid written and CTL.kill checked, `exec`s this program in its own place, so its pid,
 * session and "capybara-exec CTL" in its command line stay what the kill scripts look for. It
 * does what `timeout -s KILL SECONDS /bin/bash -c COMMAND; s=$?; rm -f CTL.pid; exit $s` did,
 * in one process instead of three (timeout, its fork, rm), docs/internals/exec-cost.md:
 *
 *   - runs `/bin/bash -c COMMAND` in a child that leads a process group of its own (as the
 *     group `timeout` made), with the signal mask and dispositions this process was given;
 *   - when SECONDS pass first, SIGKILLs that process group (the in-sandbox backstop that holds
 *     when the client is gone) and reports 137, as `timeout -s KILL` did;
 *   - removes CTL.pid, then exits with the command's status, 128 + N for a death by signal N.
 *
 * A bad invocation or a failed fork exits 125, as timeout(1) does. Only the C library and
 * system calls: built static, so that it runs in any image.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_BAD 125

/* SECONDS: decimal digits only, at most UINT64_MAX. */
static int parse_seconds(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void remove_pid_file(const char *ctl)
{
	size_t n = strlen(ctl);
	char *p = malloc(n + 5);

	if (!p)
		return;
	memcpy(p, ctl, n);
	memcpy(p + n, ".pid", 5);
	(void)unlink(p);
	free(p);
}

/* Waits for `pid` until `deadline` (CLOCK_MONOTONIC ns); SIGCHLD is blocked. 0: it ended. */
static int wait_until(pid_t pid, uint64_t deadline, int *status)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		uint64_t now, left;
		struct timespec ts;

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		now = now_ns();
		if (now >= deadline)
			return 1;
		left = deadline - now;
		/* at most a day per wait: a timespec holds that on every libc */
		if (left > 86400ull * 1000000000u)
			left = 86400ull * 1000000000u;
		ts.tv_sec = (time_t)(left / 1000000000u);
		ts.tv_nsec = (long)(left % 1000000000u);
		(void)sigtimedwait(&chld, NULL, &ts);
	}
}

int main(int argc, char **argv)
{
	sigset_t chld, old;
	uint64_t seconds, start, deadline;
	pid_t pid;
	int status = 0, r;

	if (argc != 4 || parse_seconds(argv[3], &seconds) < 0) {
		fprintf(stderr, "usage: capybara-exec CTL COMMAND SECONDS\n");
		return EXIT_BAD;
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	start = now_ns();
	deadline = seconds > (UINT64_MAX - start) / 1000000000u ? UINT64_MAX
	                                                        : start + seconds * 1000000000u;
	pid = fork();
	if (pid == 0) {
		char *const args[] = {"/bin/bash", "-c", argv[2], NULL};
		(void)setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execv(args[0], args);
		fprintf(stderr, "capybara-exec: /bin/bash: %s\n", strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	if (pid < 0) {
		fprintf(stderr, "capybara-exec: fork: %s\n", strerror(errno));
		remove_pid_file(argv[1]);
		return EXIT_BAD;
	}
	(void)setpgid(pid, pid); /* either side may run first; EACCES once it has exec'd */
	r = wait_until(pid, deadline, &status);
	if (r != 0) {
		/* the backstop: the command's whole process group, then its leader */
		(void)kill(-pid, SIGKILL);
		(void)kill(pid, SIGKILL);
		while ((r = (int)waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (r < 0) {
			remove_pid_file(argv[1]);
			return EXIT_BAD;
		}
	}
	remove_pid_file(argv[1]);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_BAD;
}
