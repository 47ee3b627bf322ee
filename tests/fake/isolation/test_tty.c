/*
 * tests/fake/isolation/test_tty.c — no box process can reach the terminal fake-e2b runs on.
 *
 * The attack: fake-e2b started from an operator's shell (the demo, ctest, tmux) has that shell's
 * terminal as controlling tty. A box process that shares the server's session opens /dev/tty and
 * pushes bytes into the terminal's input with ioctl(TIOCSTI): the operator's shell runs them as
 * host root (CVE-2017-5226 for bubblewrap). So main() gives this program a terminal of its own (a
 * pty pair: the slave is its controlling tty and its stdin, stdout and stderr, as in a shell) and
 * relays the master to the real stdout, watching for the marker the attacks try to type. Inside
 * the boxes, as root and as `sandbox`, with and without a PTY: no controlling terminal but the
 * process's own PTY, /dev/tty answers ENXIO, TIOCSTI and TIOCLINUX are refused (EPERM) on every
 * fd, with high request bits too, and PID 1 holds no fd of the terminal. Runs the linked-in
 * runtime, as root; skips without isolation.
 */
#define _GNU_SOURCE
#include "box_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

/* What the attacks type; it must never reach the terminal. Never printed by this program. */
#define MARKER "fk-tiocsti-marker"

static fk_rt *rt;
static char state_dir[] = "/tmp/fk-tty-XXXXXX";

/* Compiled in the box: each attempt and the errno name it failed with. argv[1] "pty": the
 * process runs on a PTY of its own. */
static const char probe_src[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <sys/ioctl.h>\n#include <sys/stat.h>\n"
    "#include <sys/syscall.h>\n#include <unistd.h>\n"
    "static const char *en(long rc) { return rc >= 0 ? \"OK\" : strerrorname_np(errno); }\n"
    /* field 7 of /proc/<pid>/stat: the controlling terminal's device, 0 for none */
    "static long tty_nr(const char *pid) {\n"
    "  char p[64], b[1024]; snprintf(p, sizeof(p), \"/proc/%s/stat\", pid);\n"
    "  FILE *f = fopen(p, \"r\"); if (!f) return -1;\n"
    "  size_t n = fread(b, 1, sizeof(b) - 1, f); fclose(f); b[n] = 0;\n"
    "  char *q = strrchr(b, ')'); char st; int ppid, pgrp, sid, tty = -1;\n"
    "  if (!q || sscanf(q + 2, \"%c %d %d %d %d\", &st, &ppid, &pgrp, &sid, &tty) != 5)\n"
    "    return -1;\n"
    "  return tty; }\n"
    "static const char *ctty(const char *pid, int own_fd) {\n"
    "  long t = tty_nr(pid); struct stat st;\n"
    "  if (t == 0) return \"none\";\n"
    "  if (own_fd >= 0 && fstat(own_fd, &st) == 0 && (long)st.st_rdev == t) return \"own\";\n"
    "  return \"OTHER\"; }\n"
    /* types the marker into fd with `req` (the high bits are dropped by the kernel) */
    "static long sti(int fd, unsigned long req) {\n"
    "  const char *m = \"" MARKER "\\n\"; long rc = 0;\n"
    "  for (; *m && rc >= 0; m++) rc = syscall(SYS_ioctl, fd, req, m);\n"
    "  return rc; }\n"
    "int main(int argc, char **argv) {\n"
    "  int pty = argc > 1;\n"
    "  printf(\"leader=%s\\n\", getsid(0) == getpid() ? \"yes\" : \"no\");\n"
    "  printf(\"ctty=%s\\n\", ctty(\"self\", pty ? 0 : -1));\n"
    "  printf(\"init_ctty=%s\\n\", ctty(\"1\", -1));\n"
    "  int t = open(\"/dev/tty\", O_RDWR | O_NOCTTY);\n"
    "  printf(\"dev_tty=%s\\n\", en(t));\n"
    "  if (t >= 0) printf(\"sti_dev_tty=%s\\n\", en(sti(t, TIOCSTI)));\n"
    "  for (int fd = 0; fd < 64; fd++) {\n"
    "    long rc = sti(fd, TIOCSTI);\n"
    "    if (rc >= 0 || errno != EPERM) printf(\"sti_fd%d=%s\\n\", fd, en(rc)); }\n"
    "  printf(\"sti_high=%s\\n\", en(sti(0, TIOCSTI | (1UL << 32))));\n"
    "  char sub = 11; /* TIOCL_GETKMSGREDIRECT */\n"
    "  printf(\"tioclinux=%s\\n\", en(ioctl(0, TIOCLINUX, &sub)));\n"
    "  printf(\"tioclinux_high=%s\\n\",\n"
    "         en(syscall(SYS_ioctl, 0, TIOCLINUX | (1UL << 40), &sub)));\n"
    "  return 0; }\n";

static char *sh(const char *box, const char *user, const char *script)
{
	box_result r;
	assert_int_equal(box_bash(rt, box, user, true, &r, "%s", script), 0);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "`%s` in %s: status %d: %s\n", script, box, r.status, r.out);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	return r.out;
}

/* Nothing was typed into this program's terminal (its stdin is the slave, non-canonical: every
 * byte pushed with TIOCSTI would be waiting there). */
static void assert_terminal_untouched(void)
{
	int n = -1;
	assert_int_equal(ioctl(0, FIONREAD, &n), 0);
	assert_int_equal(n, 0);
}

/* A box with the probe built in /usr/local/bin (its writable layer) */
static void box_with_probe(const char *id)
{
	fk_err err = {0};
	int rc = fk_box_create(rt, id, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
	fk_writer *w;
	assert_int_equal(fk_file_write_open(rt, id, "/root/probe.c", "root", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_write(w, probe_src, strlen(probe_src), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	char *o = sh(id, "root",
	             "gcc -o /tmp/probe /root/probe.c 2>&1 && chmod 755 /tmp/probe && "
	             "echo built");
	assert_string_equal(o, "built\n");
	free(o);
}

static const char no_pty_expected[] = "leader=no\n"
                                      "ctty=none\n"
                                      "init_ctty=none\n"
                                      "dev_tty=ENXIO\n"
                                      "sti_high=EPERM\n"
                                      "tioclinux=EPERM\n"
                                      "tioclinux_high=EPERM\n";

static void run_probe(const char *box, const char *user, bool pty, const char *expected)
{
	const char *args[] = {"pty"};
	fk_proc_spec spec = {
	    .cmd = "/tmp/probe", .args = args, .n_args = pty ? 1 : 0, .user = user, .pty = pty};
	box_result r;
	fk_err err = {0};
	assert_int_equal(box_run_spec(rt, box, &spec, true, &r, &err), 0);
	if (strcmp(r.out, expected) != 0)
		fprintf(stderr, "probe as %s%s:\n%s", user, pty ? " on a PTY" : "", r.out);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_string_equal(r.out, expected);
	box_result_clear(&r);
	assert_terminal_untouched();
}

static void test_tty__no_terminal_without_pty(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_with_probe("nopty");
	run_probe("nopty", "sandbox", false, no_pty_expected);
	run_probe("nopty", "root", false, no_pty_expected);
	/* a shell's view: `tty` and /dev/tty as a script would try them */
	char *o = sh("nopty", "sandbox",
	             "tty; (echo x > /dev/tty) 2>&1 | sed 's/.*: //'; ls /dev/pts | tr '\\n' ' '");
	assert_string_equal(o, "not a tty\nNo such device or address\nptmx ");
	free(o);
	/* a member of a session, not its leader, as envd's processes are: setsid(1) then makes
	 * the session in place instead of forking, and a signal's death reaches the caller as
	 * 128 + n (with a fork: "setsid: child N did not exit normally", exit 9) */
	o = sh("nopty", "sandbox",
	       "{ setsid -w sh -c 'kill -KILL $$' 2>/tmp/e; echo \"rc=$? err=$(cat /tmp/e)\"; } "
	       "2>/dev/null");
	assert_string_equal(o, "rc=137 err=\n");
	free(o);
	assert_terminal_untouched();
	assert_int_equal(fk_box_destroy(rt, "nopty", NULL), 0);
}

/* A PTY process's terminal is its own (its devpts instance's), and even there TIOCSTI and
 * TIOCLINUX are refused. */
static void test_tty__pty_process_has_only_its_own_terminal(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_with_probe("pty");
	static const char expected[] = "leader=yes\r\n"
	                               "ctty=own\r\n"
	                               "init_ctty=none\r\n"
	                               "dev_tty=OK\r\n"
	                               "sti_dev_tty=EPERM\r\n"
	                               "sti_high=EPERM\r\n"
	                               "tioclinux=EPERM\r\n"
	                               "tioclinux_high=EPERM\r\n";
	run_probe("pty", "sandbox", true, expected);
	run_probe("pty", "root", true, expected);
	assert_int_equal(fk_box_destroy(rt, "pty", NULL), 0);
}

/* PID 1 (a copy of the server) keeps none of the server's stdin, stdout, stderr (this
 * program's terminal) and has no controlling terminal. */
static void test_tty__init_holds_no_terminal(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	fk_err err = {0};
	assert_int_equal(fk_box_create(rt, "init", NULL, &err), 0);
	pid_t init = fk_box_init_pid(rt, "init");
	assert_true(init > 1);
	char self[64], mine[256];
	snprintf(self, sizeof(self), "/proc/self/fd/0");
	ssize_t n = readlink(self, mine, sizeof(mine) - 1);
	assert_true(n > 0);
	mine[n] = 0; /* this program's terminal: /dev/pts/N */
	assert_int_equal(strncmp(mine, "/dev/pts/", 9), 0);
	struct stat term;
	assert_int_equal(fstat(0, &term), 0);
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)init);
	int checked = 0;
	for (int fd = 0; fd < 1024; fd++) {
		char p[96];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%d", dir, fd);
		if (stat(p, &st) < 0)
			continue;
		checked++;
		assert_false(S_ISCHR(st.st_mode) && st.st_rdev == term.st_rdev);
		if (fd <= 2) { /* the box's /dev/null */
			assert_true(S_ISCHR(st.st_mode));
			assert_int_equal(major(st.st_rdev), 1);
			assert_int_equal(minor(st.st_rdev), 3);
		}
	}
	assert_true(checked >= 3);
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)init);
	FILE *f = fopen(p, "re");
	assert_non_null(f);
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	char *q = strrchr(buf, ')');
	assert_non_null(q);
	char st;
	int ppid, pgrp, sid, tty = -1;
	assert_int_equal(sscanf(q + 2, "%c %d %d %d %d", &st, &ppid, &pgrp, &sid, &tty), 5);
	assert_int_equal(tty, 0);
	assert_int_equal(sid, (int)init); /* a session of its own */
	assert_int_equal(fk_box_destroy(rt, "init", NULL), 0);
}

static int group_setup(void **state)
{
	(void)state;
	fk_err err = {0};
	assert_non_null(mkdtemp(state_dir));
	fk_rt_options o = {.state_dir = state_dir};
	if (fk_rt_new(&rt, &o, &err) != 0) {
		fprintf(stderr, "fk_rt_new: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	fk_rt_free(rt);
	if (rmdir(state_dir) < 0)
		fprintf(stderr, "state dir %s left: %s\n", state_dir, strerror(errno));
	return 0;
}

static int tty_tests(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tty__no_terminal_without_pty),
	    cmocka_unit_test(test_tty__pty_process_has_only_its_own_terminal),
	    cmocka_unit_test(test_tty__init_holds_no_terminal),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* Writes what the master gives to stdout; true when the marker came through (kept across reads
 * in `tail`). */
static bool relay(int m, char *tail, size_t *tail_len)
{
	char buf[4096 + sizeof(MARKER)];
	bool seen = false;
	for (;;) {
		ssize_t n = read(m, buf + *tail_len, 4096);
		if (n <= 0)
			return seen;
		if (write(1, buf + *tail_len, (size_t)n) < 0) { /* the log only */
		}
		memcpy(buf, tail, *tail_len);
		size_t len = *tail_len + (size_t)n;
		seen = seen || memmem(buf, len, MARKER, strlen(MARKER)) != NULL;
		*tail_len = len < sizeof(MARKER) ? len : sizeof(MARKER) - 1;
		memcpy(tail, buf + len - *tail_len, *tail_len);
	}
}

int main(void)
{
	if (geteuid() != 0)
		return tty_tests(); /* each test skips */
	int m, s;
	if (openpty(&m, &s, NULL, NULL, NULL) < 0) {
		perror("openpty");
		return 1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		/* the terminal an operator's shell gives it: controlling tty, stdin, stdout,
		 * stderr; non-canonical with echo, so a typed byte is both readable here and
		 * echoed to the master */
		close(m);
		struct termios t;
		if (setsid() < 0 || ioctl(s, TIOCSCTTY, 0) < 0 || tcgetattr(s, &t) < 0) {
			perror("terminal");
			_exit(1);
		}
		t.c_lflag &= ~(tcflag_t)ICANON;
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		if (tcsetattr(s, TCSANOW, &t) < 0 || dup2(s, 0) < 0 || dup2(s, 1) < 0 ||
		    dup2(s, 2) < 0) {
			perror("terminal");
			_exit(1);
		}
		if (s > 2)
			close(s);
		_exit(tty_tests() == 0 ? 0 : 1);
	}
	close(s);
	fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
	char tail[sizeof(MARKER)];
	size_t tail_len = 0;
	bool seen = false;
	int status = 0;
	for (;;) {
		struct pollfd p = {.fd = m, .events = POLLIN};
		poll(&p, 1, 200);
		seen = relay(m, tail, &tail_len) || seen;
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("waitpid");
			return 1;
		}
	}
	seen = relay(m, tail, &tail_len) || seen;
	if (seen)
		fprintf(stderr, "FAIL: text typed from a sandbox reached the terminal\n");
	return seen || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? 1 : 0;
}
