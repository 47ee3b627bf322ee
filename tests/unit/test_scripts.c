/* Unit tests of e2b/scripts.c: the seed's scripts, exec argv, seconds, control paths. */
#include "unit.h"

#include <openssl/evp.h>
#include <sandbox/error.h>
#include <stdio.h>
#include <sys/wait.h>
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

/* SHA-256 and length of each seed string (dist/index.mjs, template literals expanded). */
static void test_scripts__byte_exact_with_the_seed(void **state)
{
	(void)state;
	static const struct {
		const char *name, *script, *sha256;
		size_t len;
	} want[] = {
	    {"EXEC_WRAPPER", sbx__e2b_exec_wrapper,
	     "4f9c1b93771be55d44b95748f2cdd7a1311521d285abe6d683fc235be5862f87", 147},
	    {"KILL_ALL_SCRIPT", sbx__e2b_kill_all_script,
	     "9fdfd19bf5f5374c26409ce301c77cb49e9e9de19153d175e4035ce300612bf9", 242},
	    {"KILL_TAGGED_SCRIPT", sbx__e2b_kill_tagged_script,
	     "72176c81a11a223f5c970e28691acdad9fa6589a9a6d765d9fbc81ed6ca4ec33", 342},
	    {"KILL_SCRIPT", sbx__e2b_kill_script,
	     "240768a4ee3af9736129f9b9ee06916a00093065a692c59d57263297f74a4fc5", 432},
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
	assert_string_equal(sbx__e2b_read_script,
	                    "if [ ! -e \"$1\" ]; then exit 3; fi; if [ -d \"$1\" ]; then exit 4; "
	                    "fi; exec head -c \"$2\" -- \"$1\"");
	assert_non_null(strstr(sbx__e2b_user_write_script, "runuser -u sandbox -- "));
	assert_int_equal(strncmp(sbx__e2b_kill_script, "k() { ", 6), 0);
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

static void test_scripts__exec_args_are_the_seeds(void **state)
{
	(void)state;
	const char *args[SBX_E2B_EXEC_ARGC];
	char secs[24];
	sbx__e2b_exec_args(args, secs, sizeof(secs), "/tmp/.capybara-exec-x", "echo hi", 1500);
	assert_string_equal(args[0], "-w");
	assert_string_equal(args[1], "/bin/sh");
	assert_string_equal(args[2], "-c");
	assert_ptr_equal(args[3], sbx__e2b_exec_wrapper);
	assert_string_equal(args[4], "capybara-exec");
	assert_string_equal(args[5], "/tmp/.capybara-exec-x");
	assert_string_equal(args[6], "echo hi");
	assert_string_equal(args[7], "7");
	sbx__e2b_exec_args(args, secs, sizeof(secs), "c", "x", UINT64_MAX);
	assert_string_equal(args[7], "18446744073709557");
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

/* The exec wrapper as the provider runs it: setsid -w /bin/sh -c WRAPPER ... */
static int run_wrapper(const char *ctl, const char *command, uint64_t timeout_ms, char *out,
                       size_t outlen)
{
	const char *argv[SBX_E2B_EXEC_ARGC + 2] = {"setsid"};
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scripts__byte_exact_with_the_seed),
	    cmocka_unit_test(test_scripts__exec_seconds_round_up_plus_grace),
	    cmocka_unit_test(test_scripts__exec_args_are_the_seeds),
	    cmocka_unit_test(test_scripts__control_paths_and_uuids),
	    cmocka_unit_test(test_scripts__fileop_wrapper_passes_args_and_kills_on_its_timer),
	    cmocka_unit_test(test_scripts__read_and_stat_scripts_behave),
	    cmocka_unit_test(test_scripts__exec_wrapper_runs_bash_and_keeps_the_status),
	};
	return cmocka_run_group_tests_name("scripts", tests, NULL, NULL);
}
