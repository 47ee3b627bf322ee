/*
 * capybara-exec CTL COMMAND SECONDS [--session [--mark]]: the in-sandbox half of an exec when the
 * template has it (/opt/capybara-exec, templates/capybara-sandbox/Dockerfile; fake-e2b puts the
 * same program there). The library starts it as envd's command with --session --mark, or the
 * exec line (src/e2b/scripts/exec_wrapper.sh) `exec`s it from the shell envd started, with
 * --session; either way it keeps the pid envd reported and has "capybara-exec CTL" in its
 * command line, which the kill scripts look for (docs/internals/exec-cost.md):
 *
 *   - with --mark, before anything else, MARK (15 bytes: NUL "capybara-exec" NUL) on stderr in
 *     one write: nothing of the command can come before it, so a stream whose stderr lacks it
 *     is one where this program never ran (not there: envd's shell exits 126 or 127; an older
 *     helper refusing --mark: 125), and the library runs the command by the exec line instead;
 *     the library removes MARK from the output;
 *   - with --session, first what the seed's wrapper did under setsid: a session of its own
 *     (setsid(); a process group leader forks first, as `setsid -w`, and waits), its pid in
 *     CTL.pid, and 137 without running anything when CTL.kill exists (a kill raced ahead of
 *     the start); without --session the caller did all that (the line of an older library);
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
#include <fcntl.h>
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
/* --mark's marker; the library's SBX_E2B_EXEC_MARK (src/e2b/scripts.h), byte for byte */
static const char MARK[] = "\0capybara-exec\0";

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

/* The status of a child as this program reports it: its exit status, 128 + N for signal N. */
static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_BAD;
}

/*
 * --session: a session of its own, CTL.pid, the kill check, as the seed's `setsid -w` and the
 * first three steps of its wrapper. -1 when this process is to go on, else the status to exit
 * with (the kill check's 137; a leader's child's status after it waited; 125).
 */
static int session(const char *ctl)
{
	size_t n = strlen(ctl);
	char *p = malloc(n + 6), line[32];
	int fd, len, status;
	pid_t pid;

	if (!p)
		return EXIT_BAD;
	if (setsid() < 0) {
		/* a process group leader cannot: as setsid -w, a child does, this one waits */
		if ((pid = fork()) < 0) {
			fprintf(stderr, "capybara-exec: fork: %s\n", strerror(errno));
			free(p);
			return EXIT_BAD;
		}
		if (pid > 0) {
			free(p);
			while (waitpid(pid, &status, 0) < 0)
				if (errno != EINTR)
					return EXIT_BAD;
			return status_code(status);
		}
		(void)setsid();
	}
	/* echo $$ > "$c.pid" 2>/dev/null, but never through what another user of the box put at
	 * that name in the shared /tmp while the exec line started (a symlink to a file of this
	 * user's, root's for a root command; a FIFO): a new file, once more after unlinking
	 * whatever was there */
	memcpy(p, ctl, n);
	memcpy(p + n, ".pid", 5);
	len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST && unlink(p) == 0)
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!write(fd, line, (size_t)len);
		close(fd);
	}
	/* if [ -e "$c.kill" ]; then exit 137; fi */
	memcpy(p + n, ".kill", 6);
	status = access(p, F_OK) == 0 ? 137 : -1;
	free(p);
	return status;
}

int main(int argc, char **argv)
{
	sigset_t chld, old;
	uint64_t seconds, start, deadline;
	pid_t pid;
	int status = 0, r;

	if ((argc != 4 && (argc < 5 || argc > 6 || strcmp(argv[4], "--session") != 0 ||
	                   (argc == 6 && strcmp(argv[5], "--mark") != 0))) ||
	    parse_seconds(argv[3], &seconds) < 0) {
		fprintf(stderr, "usage: capybara-exec CTL COMMAND SECONDS [--session [--mark]]\n");
		return EXIT_BAD;
	}
	/* the marker first, whole, or nothing runs (the library then runs the exec line) */
	if (argc == 6 && write(2, MARK, sizeof(MARK) - 1) != (ssize_t)(sizeof(MARK) - 1))
		return EXIT_BAD;
	if (argc >= 5 && (r = session(argv[1])) >= 0)
		return r;
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
	return status_code(status);
}
