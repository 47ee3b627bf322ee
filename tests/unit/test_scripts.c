/* Unit tests of e2b/scripts.c: the seed's scripts (docs/exec.md "How a command runs"), exec argv,
 * seconds, control paths. */
#define _GNU_SOURCE
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <openssl/evp.h>
#include <sandbox/error.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2b/scripts.h"

static void sha256_hex(const char *s, char out[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	assert_int_equal(EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL), 1);
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* SHA-256 and length of each seed string (template literals expanded; docs/exec.md "How a
 * command runs"); the kill_all and kill_tagged scripts are ours
 * (test_scripts__kill_scripts_fork_nothing), and so is KILL_SCRIPT since its k kills the
 * session group by group (the seed's was 432 bytes, SHA-256 240768a4...4fc5: pkill -s). */
static void test_scripts__byte_exact_with_the_seed(void **state)
{
	(void)state;
	static const struct {
		const char *name, *script, *sha256;
		size_t len;
	} want[] = {
	    {"READ_SCRIPT", sbx__e2b_read_script,
	     "650cc86136093fa96829ed0ecc6d40a77300f166d36b55c33b504dda7d90f7bd", 93},
	    {"STAT_SCRIPT", sbx__e2b_stat_script,
	     "8697f2a95832126d0b1f3cec23317d53bd5ba34c47cd6fda0aa19dc67bf320d8", 166},
	    {"USER_WRITE_SCRIPT", sbx__e2b_user_write_script,
	     "256d805b5e0b8c97422b38f29a45207798d58249a4386c8febcecf9ec1a90c36", 150},
	    {"SKILLS_WRITE_SCRIPT", sbx__e2b_skills_write_script,
	     "06bc3a90291a90b0e6a566daa1844e5c93bb4907c2194cdc254b43e3e811568e", 120},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		char hex[65];
		print_message("%s\n", want[i].name);
		assert_int_equal(strlen(want[i].script), want[i].len);
		sha256_hex(want[i].script, hex);
		assert_string_equal(hex, want[i].sha256);
	}
	/* SEED_WRAPPER is the seed's exec wrapper byte for byte; EXEC_WRAPPER is ours: the exec
	 * helper with --session where the template has it, else exactly the seed's line (setsid -w
	 * /bin/sh -c SEED_WRAPPER capybara-exec CTL CMD SECONDS) */
	{
		char hex[65];
		assert_int_equal(strlen(sbx__e2b_exec_seed_wrapper), 147);
		sha256_hex(sbx__e2b_exec_seed_wrapper, hex);
		assert_string_equal(
		    hex, "4f9c1b93771be55d44b95748f2cdd7a1311521d285abe6d683fc235be5862f87");
		assert_string_equal(
		    sbx__e2b_exec_wrapper,
		    "if [ -x /opt/capybara-exec ]; then exec /opt/capybara-exec \"$1\" "
		    "\"$2\" \"$3\" --session; fi; exec setsid -w /bin/sh -c \"$4\" "
		    "capybara-exec \"$1\" \"$2\" \"$3\"");
	}
	assert_string_equal(sbx__e2b_read_script,
	                    "if [ ! -e \"$1\" ]; then exit 3; fi; if [ -d \"$1\" ]; then exit 4; "
	                    "fi; exec head -c \"$2\" -- \"$1\"");
	assert_non_null(strstr(sbx__e2b_user_write_script, "runuser -u sandbox -- "));
	assert_int_equal(strncmp(sbx__e2b_kill_script, "k() { ", 6), 0);
}

/* Every script as the sandbox receives it, pinned: SHA-256 and length of the string the build
 * makes from src/e2b/scripts/NAME.sh (cmake/embed.cmake), equal to the C literals the scripts
 * were before they moved to .sh files. A deliberate change to a script updates its line here
 * in the same commit; any other difference is the embedding going wrong. */
static void test_scripts__every_script_byte_exact(void **state)
{
	(void)state;
	static const struct {
		const char *name, *script, *sha256;
		size_t len;
	} want[] = {
#define PIN(n, len, sha) {#n, sbx__e2b_##n, sha, len}
	    PIN(exec_wrapper, 148,
	        "4cc5b78f5ba0843dae6c37d5fa2c624d0a01aa0e8a2d3e7c15d0122ebf0e76d3"),
	    PIN(exec_seed_wrapper, 147,
	        "4f9c1b93771be55d44b95748f2cdd7a1311521d285abe6d683fc235be5862f87"),
	    PIN(fileop_wrapper, 149,
	        "bd8a092cd4db08656353b3220408d4363d36eb99f465357432b4180cb4dffd5c"),
	    PIN(kill_script, 569,
	        "a3bbf5ead697094dc6666dcfb39a98d8f7e44744117f7d358e5834bc92dab41c"),
	    PIN(kill_all_script, 1213,
	        "630051b23de90e6e0278b1b292f6d2411e8c9d6407ed2feca81b175f26673236"),
	    PIN(kill_tagged_script, 1298,
	        "46c9ac4b13ad156a21c3c44376b01372ae23d550230b2417673a1b158b41e7af"),
	    PIN(read_script, 93,
	        "650cc86136093fa96829ed0ecc6d40a77300f166d36b55c33b504dda7d90f7bd"),
	    PIN(stat_script, 166,
	        "8697f2a95832126d0b1f3cec23317d53bd5ba34c47cd6fda0aa19dc67bf320d8"),
	    PIN(stage_read_script, 179,
	        "7b6ea5cf4df86e2178ea78591e73733fff9d4a1b15c47ad36f50df3c2d12cace"),
	    PIN(read_sized_script, 191,
	        "dad6f47091b09ecd3c873cec3b4b6691b54dd27d538a6d4c1f35f193099e7e1c"),
	    PIN(remove_script, 13,
	        "5692e76fade3bedb07291f7c5b57ec2f7b3ee3fd6687448c2b6cac80c9214ceb"),
	    PIN(list_script, 132,
	        "29773c8ec41cbfdea028df7287101e199b00ba562cbaa356bfe835e793c23279"),
	    PIN(template_check_script, 430,
	        "23df10596ac47c35f6c542b2337768e9611a00f1535a6026b7d33f0ac04e9e83"),
	    PIN(path_info_script, 220,
	        "f390f45e04babfc5d890df5e45c65a553800393c4699f3ac5d1ecedbda8f2eec"),
	    PIN(remove_path_script, 36,
	        "cc4b40d259a608f2c30d2a62438abc529384aa80d9b2c1d42a6a76bfd3048030"),
	    PIN(make_dir_script, 194,
	        "f8e99ba2ea9484ce255977e36b87b9ab7981885707e8d237ff79e4dcb911a9a0"),
	    PIN(rename_script, 346,
	        "2f7460bcbb443fa59b53d169226b97aea67257515629da819551b12d524fc0d9"),
	    PIN(write_many_script, 493,
	        "5a840cd577f6c0b2e1e26c1dcad81f3c2a68b11784dc99f8bb63ee7067021f46"),
	    PIN(watch_check_script, 95,
	        "af03195a90b5863af293acdab26909ca87b6e5f591ae89f5cf50aaf1794c10f9"),
	    PIN(user_write_script, 150,
	        "256d805b5e0b8c97422b38f29a45207798d58249a4386c8febcecf9ec1a90c36"),
	    PIN(skills_write_script, 120,
	        "06bc3a90291a90b0e6a566daa1844e5c93bb4907c2194cdc254b43e3e811568e"),
#undef PIN
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		char hex[65];
		print_message("%s\n", want[i].name);
		/* one line, no comment left in it */
		assert_null(strchr(want[i].script, '\n'));
		assert_int_equal(strlen(want[i].script), want[i].len);
		sha256_hex(want[i].script, hex);
		assert_string_equal(hex, want[i].sha256);
	}
}

static void test_scripts__exec_seconds_round_up_plus_grace(void **state)
{
	(void)state;
	static const struct {
		uint64_t ms, s;
	} cases[] = {
	    {0, 5},
	    {1, 6},
	    {999, 6},
	    {1000, 6},
	    {1001, 7},
	    {86400000, 86405},
	    {UINT64_C(2147483648), 2147489},
	    {UINT64_MAX, UINT64_C(18446744073709557)},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		assert_int_equal(sbx__e2b_exec_seconds(cases[i].ms), cases[i].s);
}

static void test_scripts__exec_args_are_the_line_and_the_seeds(void **state)
{
	(void)state;
	const char *args[SBX_E2B_EXEC_ARGC];
	char secs[24];
	assert_string_equal(SBX_E2B_EXEC_CMD, "/bin/sh");
	sbx__e2b_exec_args(args, secs, sizeof(secs), "/tmp/.capybara-exec-x", "echo hi", 1500);
	assert_string_equal(args[0], "-c");
	assert_ptr_equal(args[1], sbx__e2b_exec_wrapper);
	assert_string_equal(args[2], "capybara-exec");
	assert_string_equal(args[3], "/tmp/.capybara-exec-x");
	assert_string_equal(args[4], "echo hi");
	assert_string_equal(args[5], "7");
	assert_ptr_equal(args[6], sbx__e2b_exec_seed_wrapper);
	sbx__e2b_exec_args(args, secs, sizeof(secs), "c", "x", UINT64_MAX);
	assert_string_equal(args[5], "18446744073709557");
}

static void assert_uuid_v4(const char *u)
{
	assert_int_equal(strlen(u), 36);
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(u[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", u[i]));
	}
	assert_int_equal(u[14], '4');
	assert_non_null(strchr("89ab", u[19]));
}

static void test_scripts__control_paths_and_uuids(void **state)
{
	(void)state;
	char a[128], b[128], u[37];
	assert_int_equal(sbx__e2b_exec_control_path(a, sizeof(a), NULL), 0);
	assert_int_equal(strncmp(a, "/tmp/.capybara-exec-", 20), 0);
	assert_uuid_v4(a + 20);
	assert_int_equal(sbx__e2b_exec_control_path(b, sizeof(b), "job-1"), 0);
	assert_int_equal(strncmp(b, "/tmp/.capybara-exec-job-1-", 26), 0);
	assert_uuid_v4(b + 26);
	assert_int_equal(sbx__e2b_exec_control_path(b, sizeof(b), NULL), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(sbx__e2b_exec_control_path(a, 20, NULL), SBX_EINTERNAL);
	sbx__uuid(u);
	assert_uuid_v4(u);
}

/* Run argv (NULL-terminated), capturing stdout; returns the exit status. */
static int run_argv(const char *const *argv, char *out, size_t outlen)
{
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	size_t n = 0;
	ssize_t r;
	while ((r = read(pipefd[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(pipefd[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run `sh -c script capybara-test args...`, capturing stdout; returns the exit status. */
static int run_sh(const char *script, const char *const *args, size_t nargs, char *out,
                  size_t outlen)
{
	const char *argv[8] = {"/bin/sh", "-c", script, "capybara-test"};
	assert_true(nargs <= 3);
	for (size_t i = 0; i < nargs; i++)
		argv[4 + i] = args[i];
	return run_argv(argv, out, outlen);
}

/* The exec wrapper as the provider runs it: /bin/sh -c WRAPPER ... (no exec helper on this host:
 * the seed's line) */
static int run_wrapper(const char *ctl, const char *command, uint64_t timeout_ms, char *out,
                       size_t outlen)
{
	const char *argv[SBX_E2B_EXEC_ARGC + 2] = {SBX_E2B_EXEC_CMD};
	char secs[24];
	sbx__e2b_exec_args(argv + 1, secs, sizeof(secs), ctl, command, timeout_ms);
	return run_argv(argv, out, outlen);
}

static void test_scripts__exec_wrapper_runs_bash_and_keeps_the_status(void **state)
{
	(void)state;
	char dir[] = "/tmp/sbx-unit-XXXXXX", ctl[96], path[128], out[256];
	assert_non_null(mkdtemp(dir));
	snprintf(ctl, sizeof(ctl), "%s/.capybara-exec-test", dir);

	/* bash, not sh: [[ ]] works; stdout passes through; the status is kept */
	assert_int_equal(
	    run_wrapper(ctl, "[[ 1 == 1 ]] && echo \"$0 ok\"; exit 7", 10000, out, sizeof(out)), 7);
	assert_string_equal(out, "/bin/bash ok\n");
	snprintf(path, sizeof(path), "%s.pid", ctl);
	assert_int_equal(access(path, F_OK), -1); /* the pid file is removed */

	/* a kill that raced ahead of the start: the command never runs */
	snprintf(path, sizeof(path), "%s.kill", ctl);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(run_wrapper(ctl, "echo ran", 10000, out, sizeof(out)), 137);
	assert_string_equal(out, "");
	unlink(path);
	snprintf(path, sizeof(path), "%s.pid", ctl);
	unlink(path);
	rmdir(dir);
}

/* The file-op wrapper as the provider runs it: setsid ... /bin/sh -c SCRIPT NAME ARGS. */
static int run_fileop(const char *ctl, const char *script, const char *arg, uint64_t timeout_ms,
                      char *out, size_t outlen)
{
	const char *argv[SBX_E2B_FILEOP_ARGC + 6] = {"setsid"};
	char secs[24];
	sbx__e2b_fileop_args(argv + 1, secs, sizeof(secs), ctl, timeout_ms);
	argv[SBX_E2B_FILEOP_ARGC + 1] = "-c";
	argv[SBX_E2B_FILEOP_ARGC + 2] = script;
	argv[SBX_E2B_FILEOP_ARGC + 3] = "capybara-test";
	argv[SBX_E2B_FILEOP_ARGC + 4] = arg;
	return run_argv(argv, out, outlen);
}

static void test_scripts__fileop_wrapper_passes_args_and_kills_on_its_timer(void **state)
{
	(void)state;
	char dir[] = "/tmp/sbx-unit-XXXXXX", ctl[96], path[128], out[256];
	assert_non_null(mkdtemp(dir));
	snprintf(ctl, sizeof(ctl), "%s/.capybara-fileop-test", dir);

	/* the script gets its name and arguments untouched (spaces, quotes, $) */
	assert_int_equal(run_fileop(ctl, "printf '%s|%s' \"$0\" \"$1\"; exit 4", "a b'$x\"", 10000,
	                            out, sizeof(out)),
	                 4);
	assert_string_equal(out, "capybara-test|a b'$x\"");
	snprintf(path, sizeof(path), "%s.pid", ctl);
	assert_int_equal(access(path, F_OK), -1);
	/* the in-sandbox backstop: 1 ms rounds up to 1 s + 5 s grace */
	char secs[24];
	const char *argv[SBX_E2B_FILEOP_ARGC] = {0};
	sbx__e2b_fileop_args(argv, secs, sizeof(secs), ctl, 1);
	assert_string_equal(secs, "6");
	assert_string_equal(argv[4], "capybara-exec");
	assert_string_equal(argv[5], ctl);
	/* a kill that raced ahead: the script never runs */
	snprintf(path, sizeof(path), "%s.kill", ctl);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(run_fileop(ctl, "echo ran", "x", 10000, out, sizeof(out)), 137);
	assert_string_equal(out, "");
	unlink(path);
	snprintf(path, sizeof(path), "%s.pid", ctl);
	unlink(path);
	rmdir(dir);
	/* the control path is one killAll does not match */
	assert_int_equal(sbx__e2b_fileop_control_path(ctl, sizeof(ctl)), 0);
	assert_int_equal(strncmp(ctl, "/tmp/.capybara-fileop-", 22), 0);
	assert_int_equal(strlen(ctl), 22 + 36);
}

static void test_scripts__read_and_stat_scripts_behave(void **state)
{
	(void)state;
	char dir[] = "/tmp/sbx-unit-XXXXXX", file[64], out[256];
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/f", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs("hello world", f);
	fclose(f);

	const char *rd[] = {file, "6"};
	assert_int_equal(run_sh(sbx__e2b_read_script, rd, 2, out, sizeof(out)), 0);
	assert_string_equal(out, "hello ");
	const char *rd_dir[] = {dir, "6"};
	assert_int_equal(run_sh(sbx__e2b_read_script, rd_dir, 2, out, sizeof(out)), 4);
	const char *rd_missing[] = {"/nonexistent/x", "6"};
	assert_int_equal(run_sh(sbx__e2b_read_script, rd_missing, 2, out, sizeof(out)), 3);

	const char *st[] = {file};
	assert_int_equal(run_sh(sbx__e2b_stat_script, st, 1, out, sizeof(out)), 0);
	assert_string_equal(out, "11 file\n");
	const char *st_dir[] = {dir};
	assert_int_equal(run_sh(sbx__e2b_stat_script, st_dir, 1, out, sizeof(out)), 0);
	assert_non_null(strstr(out, " directory\n"));
	const char *st_missing[] = {"/nonexistent/x"};
	assert_int_equal(run_sh(sbx__e2b_stat_script, st_missing, 1, out, sizeof(out)), 3);

	unlink(file);
	rmdir(dir);
}

/* ---- the kill_all and kill_tagged scripts, run for real on this machine as a user of their own */

/* A uid no account has, only this test's processes: the scripts, which kill as that user, can
 * reach nothing else on the machine. Above fake-e2b's box ids (0x80000 to 0x6FFFFFFF). */
static uid_t kill_uid(void)
{
	return (uid_t)(0x7A000000 + (getpid() & 0xFFFFF));
}

/* Processes whose real uid is uid (each /proc/<pid>/status). */
static int count_uid(uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], line[256];
		unsigned long u;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Uid: %lu", &u) == 1) {
				n += u == uid;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Starts argv as uid (groups dropped), with at most nproc processes for that uid when nproc >
 * 0 (RLIMIT_NPROC: a fork past it is refused). */
static pid_t spawn_as(uid_t uid, rlim_t nproc, const char *const *argv)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {nproc, nproc};
		if ((nproc > 0 && setrlimit(RLIMIT_NPROC, &rl) < 0) || setgroups(0, NULL) < 0 ||
		    setgid(uid) < 0 || setuid(uid) < 0)
			_exit(125);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int exit_status_of(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One exec wrapper as the provider starts it, as uid, its control path under /tmp (the scripts
 * match /tmp/.capybara-exec-...). Its command writes "<pid> <pid>" of two background sleeps
 * (the second in a process group of its own, as `set -m` makes it) to ready, then waits. */
typedef struct wrapper {
	char ctl[160], ready[128];
	pid_t pid;      /* the wrapper (our child) */
	pid_t sleep[2]; /* the command's two sleeps */
} wrapper;

static void wrapper_start(wrapper *w, uid_t uid, const char *dir, const char *tag, int i)
{
	char u[37], cmd[512], secs[24];
	const char *argv[SBX_E2B_EXEC_ARGC + 2] = {SBX_E2B_EXEC_CMD};
	sbx__uuid(u);
	snprintf(w->ctl, sizeof(w->ctl), "/tmp/.capybara-exec-%s-%s", tag, u);
	snprintf(w->ready, sizeof(w->ready), "%s/ready-%d", dir, i);
	/* builtins only once the sleeps run: no short-lived process of the user's while the test
	 * counts them; echo's one write() makes the line appear whole */
	snprintf(cmd, sizeof(cmd),
	         "sleep 300 & a=$!; set -m; sleep 300 & echo \"$a $!\" > %s; wait", w->ready);
	sbx__e2b_exec_args(argv + 1, secs, sizeof(secs), w->ctl, cmd, 60000);
	w->pid = spawn_as(uid, 0, argv);
}

static void wrapper_wait_ready(wrapper *w)
{
	struct timespec ms10 = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(w->ready, "r");
		int a = 0, b = 0, got = f ? fscanf(f, "%d %d", &a, &b) : 0;
		if (f)
			fclose(f);
		if (got == 2) {
			w->sleep[0] = a;
			w->sleep[1] = b;
			return;
		}
		nanosleep(&ms10, NULL);
	}
	fail_msg("%s: the command did not start in 10 s", w->ctl);
}

/* pid has ended: no /proc/<pid> or a zombie (reaped by its parent or, once orphaned, by us). */
static bool ended(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	char *got = fgets(line, sizeof(line), f);
	fclose(f);
	char *end = got ? strrchr(line, ')') : NULL;
	return !end || end[1] != ' ' || end[2] == 'Z' || end[2] == 'X';
}

/* Reaps every ended child of ours (we are the subreaper of the wrappers' trees). */
static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* Each of the n wrappers (our child) was killed by SIGKILL (or saw its command killed first
 * and exited 137) and both sleeps of its command have ended, within 10 s. */
static void assert_trees_killed(wrapper *w, int n)
{
	struct timespec ms10 = {0, 10 * 1000 * 1000};
	for (int j = 0; j < n; j++) {
		int st = 0, i = 0;
		pid_t got = 0;
		for (; i < 1000 && (got = waitpid(w[j].pid, &st, WNOHANG)) == 0; i++)
			nanosleep(&ms10, NULL);
		if (got != w[j].pid)
			fail_msg("%s: the wrapper did not end in 10 s", w[j].ctl);
		if (WIFEXITED(st))
			assert_int_equal(WEXITSTATUS(st), 137);
		else
			assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		for (int k = 0; k < 2; k++) {
			for (i = 0; i < 1000 && !ended(w[j].sleep[k]); i++)
				nanosleep(&ms10, NULL);
			if (!ended(w[j].sleep[k]))
				fail_msg("%s: sleep %d of its command did not end in 10 s",
				         w[j].ctl, k + 1);
		}
		char pidfile[200];
		snprintf(pidfile, sizeof(pidfile), "%s.pid", w[j].ctl);
		unlink(pidfile);
		unlink(w[j].ready);
	}
	reap_all();
}

static void assert_running(const wrapper *w)
{
	int st;
	assert_int_equal(waitpid(w->pid, &st, WNOHANG), 0);
	assert_int_equal(kill(w->sleep[0], 0), 0);
	assert_int_equal(kill(w->sleep[1], 0), 0);
}

static char g_kill_dir[32];
static wrapper g_kill_wrappers[3];

/* Runs a kill script as uid with no process slot to spare: any fork it tried would fail. */
static int run_kill_script_at_cap(uid_t uid, const char *script, const char *name, const char *tag)
{
	const char *argv[] = {SBX_E2B_KILL_SHELL, "-c", script, name, tag, NULL};
	return exit_status_of(spawn_as(uid, (rlim_t)count_uid(uid) + 1, argv));
}

/*
 * KILL_TAGGED_SCRIPT and KILL_ALL_SCRIPT as docs/contract.md "Lifecycle" states them (kill_all,
 * kill_tagged): a tag's wrappers die with their whole trees (the command's group, a group it
 * made in its session), other tags' (one that starts with the tag and a UUID, one that extends
 * it) live on, then kill_all ends every wrapper; and both run to exit 0 while their user is at
 * its process cap (RLIMIT_NPROC), where a shell's command substitution (the seed's $(pgrep ...),
 * src/e2b/scripts/kill_scan.sh) is refused.
 */
static void test_scripts__kill_scripts_fork_nothing(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* the scripts run as a user of their own */
	uid_t uid = kill_uid();
	char *dir = g_kill_dir, tag[32], longer[96], other[40], u[37];
	snprintf(g_kill_dir, sizeof(g_kill_dir), "/tmp/sbx-unit-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chown(dir, uid, uid), 0);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	snprintf(tag, sizeof(tag), "unit%d", (int)getpid());
	sbx__uuid(u);
	snprintf(longer, sizeof(longer), "%s-%s", tag, u);
	snprintf(other, sizeof(other), "%sx", tag);
	wrapper *w = g_kill_wrappers;
	wrapper_start(&w[0], uid, dir, tag, 0);
	wrapper_start(&w[1], uid, dir, longer, 1);
	wrapper_start(&w[2], uid, dir, other, 2);
	for (int i = 0; i < 3; i++)
		wrapper_wait_ready(&w[i]);

	/* the cap holds: a command substitution is refused (dash, which does not retry) */
	const char *forks[] = {"/bin/sh", "-c", "x=$(echo forked) || exit 9; exit 0", NULL};
	assert_int_not_equal(exit_status_of(spawn_as(uid, (rlim_t)count_uid(uid) + 1, forks)), 0);

	assert_int_equal(
	    run_kill_script_at_cap(uid, sbx__e2b_kill_tagged_script, "capybara-killtagged", tag),
	    0);
	assert_trees_killed(&w[0], 1);
	assert_running(&w[1]);
	assert_running(&w[2]);

	assert_int_equal(
	    run_kill_script_at_cap(uid, sbx__e2b_kill_all_script, "capybara-killall", NULL), 0);
	assert_trees_killed(&w[1], 2);
	struct timespec ms10 = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 1000 && count_uid(uid) > 0; i++) {
		reap_all();
		nanosleep(&ms10, NULL);
	}
	assert_int_equal(count_uid(uid), 0);
}

/* Both sleeps of w's command have ended, within 10 s. */
static void assert_sleeps_ended(const wrapper *w)
{
	struct timespec ms10 = {0, 10 * 1000 * 1000};
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 1000 && !ended(w->sleep[k]); i++) {
			reap_all();
			nanosleep(&ms10, NULL);
		}
		if (!ended(w->sleep[k]))
			fail_msg("%s: sleep %d of its command did not end in 10 s", w->ctl, k + 1);
	}
}

/* w's wrapper dies (as the box's OOM killer may pick it under a fork bomb) and is reaped; its
 * command's processes live on in its session, its pid file names that session. */
static void wrapper_orphan(wrapper *w)
{
	int st;
	assert_int_equal(kill(w->pid, SIGKILL), 0);
	assert_int_equal(waitpid(w->pid, &st, 0), w->pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(kill(w->sleep[0], 0), 0);
	assert_int_equal(kill(w->sleep[1], 0), 0);
}

/* KILL_SCRIPT for a command whose CTL.kill another user of the box planted in the shared /tmp
 * first (its name is in every process list while the command runs): a symlink to a file of the
 * killer's (root's, for a root command), a FIFO. The seed's `: > CTL.kill` truncated the file
 * and waited for ever on the FIFO; now nothing there is opened, and a CTL.kill made by the
 * script still exists for the wrapper's check. */
static void test_scripts__kill_script_opens_nothing_planted_at_its_kill_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/sbx-unit-XXXXXX", victim[64], ctl[3][96], kf[3][104], out[256];
	assert_non_null(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	FILE *f = fopen(victim, "w");
	assert_non_null(f);
	fputs("keep\n", f);
	fclose(f);
	for (int i = 0; i < 3; i++) {
		snprintf(ctl[i], sizeof(ctl[i]), "%s/.capybara-exec-k%d", dir, i);
		snprintf(kf[i], sizeof(kf[i]), "%s.kill", ctl[i]);
	}
	assert_int_equal(symlink(victim, kf[0]), 0);
	assert_int_equal(mkfifo(kf[1], 0666), 0);
	for (int i = 0; i < 3; i++) {
		const char *argv[] = {
		    "timeout",       "20",   "/bin/sh", "-c", sbx__e2b_kill_script,
		    "capybara-kill", ctl[i], NULL};
		assert_int_equal(run_argv(argv, out, sizeof(out)),
		                 0); /* before: 124 for the FIFO */
	}
	f = fopen(victim, "r");
	assert_non_null(f);
	char got[16] = "";
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	assert_string_equal(got, "keep\n"); /* before: empty */
	assert_int_equal(access(kf[2], F_OK), 0);
	for (int i = 0; i < 3; i++)
		unlink(kf[i]);
	unlink(victim);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * A command whose wrapper died first is still an exec's: KILL_TAGGED_SCRIPT and KILL_ALL_SCRIPT
 * find its session through the wrapper's pid file (a session id is not reused while a process
 * of it lives) and kill every process of it, a tag's only its own, at the process cap.
 */
static void test_scripts__kill_scripts_end_orphaned_commands(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	uid_t uid = kill_uid();
	char *dir = g_kill_dir, tag[32], other[40];
	snprintf(g_kill_dir, sizeof(g_kill_dir), "/tmp/sbx-unit-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chown(dir, uid, uid), 0);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	snprintf(tag, sizeof(tag), "orph%d", (int)getpid());
	snprintf(other, sizeof(other), "%sx", tag);
	wrapper *w = g_kill_wrappers;
	wrapper_start(&w[0], uid, dir, tag, 0);
	wrapper_start(&w[1], uid, dir, other, 1);
	for (int i = 0; i < 2; i++) {
		wrapper_wait_ready(&w[i]);
		wrapper_orphan(&w[i]);
	}
	assert_int_equal(
	    run_kill_script_at_cap(uid, sbx__e2b_kill_tagged_script, "capybara-killtagged", tag),
	    0);
	assert_sleeps_ended(&w[0]);
	assert_int_equal(kill(w[1].sleep[0], 0), 0);
	assert_int_equal(kill(w[1].sleep[1], 0), 0);
	assert_int_equal(
	    run_kill_script_at_cap(uid, sbx__e2b_kill_all_script, "capybara-killall", NULL), 0);
	assert_sleeps_ended(&w[1]);
	for (int i = 0; i < 2; i++) {
		char pidfile[200];
		snprintf(pidfile, sizeof(pidfile), "%s.pid", w[i].ctl);
		unlink(pidfile);
		unlink(w[i].ready);
	}
}

/* Whatever the test did: every process of its user killed and reaped, its files removed. */
static int kill_scripts_teardown(void **state)
{
	(void)state;
	if (!g_kill_dir[0])
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(kill_uid()) < 0 || setuid(kill_uid()) < 0)
			_exit(1);
		kill(-1, SIGKILL); /* as that user: its processes only */
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	struct timespec ms10 = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 1000 && count_uid(kill_uid()) > 0; i++) {
		reap_all();
		nanosleep(&ms10, NULL);
	}
	reap_all();
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	for (int j = 0; j < 3; j++) {
		char pidfile[1024];
		snprintf(pidfile, sizeof(pidfile), "%s.pid", g_kill_wrappers[j].ctl);
		if (g_kill_wrappers[j].ctl[0])
			unlink(pidfile);
		if (g_kill_wrappers[j].ready[0])
			unlink(g_kill_wrappers[j].ready);
	}
	rmdir(g_kill_dir);
	g_kill_dir[0] = '\0';
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scripts__byte_exact_with_the_seed),
	    cmocka_unit_test(test_scripts__every_script_byte_exact),
	    cmocka_unit_test(test_scripts__exec_seconds_round_up_plus_grace),
	    cmocka_unit_test(test_scripts__exec_args_are_the_line_and_the_seeds),
	    cmocka_unit_test(test_scripts__control_paths_and_uuids),
	    cmocka_unit_test(test_scripts__fileop_wrapper_passes_args_and_kills_on_its_timer),
	    cmocka_unit_test(test_scripts__read_and_stat_scripts_behave),
	    cmocka_unit_test(test_scripts__exec_wrapper_runs_bash_and_keeps_the_status),
	    cmocka_unit_test(test_scripts__kill_script_opens_nothing_planted_at_its_kill_file),
	    cmocka_unit_test_teardown(test_scripts__kill_scripts_fork_nothing,
	                              kill_scripts_teardown),
	    cmocka_unit_test_teardown(test_scripts__kill_scripts_end_orphaned_commands,
	                              kill_scripts_teardown),
	};
	return cmocka_run_group_tests_name("scripts", tests, NULL, NULL);
}
