/* Unit tests of e2b/exit_status.c: envd's end event → exit code (docs/exec.md "Exit codes"). */
#include "unit.h"

#include <stdio.h>

#include "e2b/exit_status.h"

static const char *const go_names[32] = {
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

static void test_exit_status__every_signal_name_1_to_31(void **state)
{
	(void)state;
	for (int n = 1; n <= 31; n++) {
		char status[80];
		int code = -1;
		assert_string_equal(sbx__e2b_signal_name(n), go_names[n]);
		snprintf(status, sizeof(status), "signal: %s", go_names[n]);
		assert_true(sbx__e2b_exit_code(false, 0, status, &code));
		assert_int_equal(code, 128 + n);
		snprintf(status, sizeof(status), "signal: %s (core dumped)", go_names[n]);
		code = -1;
		assert_true(sbx__e2b_exit_code(false, 0, status, &code));
		assert_int_equal(code, 128 + n);
	}
	assert_null(sbx__e2b_signal_name(0));
	assert_null(sbx__e2b_signal_name(32));
	assert_null(sbx__e2b_signal_name(-1));
	assert_string_equal(sbx__e2b_signal_name(9), "killed");
}

static void test_exit_status__unknown_signals_have_no_code(void **state)
{
	(void)state;
	const char *unknown[] = {"signal: foo",
	                         "signal: signal 34",
	                         "signal: ",
	                         "signal:  killed",
	                         "signal: killed extra",
	                         "signal: Killed",
	                         "signal: (core dumped)",
	                         "signal:  (core dumped)",
	                         "signal: killed (core dumped) ",
	                         "killed",
	                         "",
	                         "stop signal: stopped",
	                         "exit status"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(*unknown); i++) {
		int code = -7;
		print_message("%s\n", unknown[i]);
		assert_false(sbx__e2b_exit_code(false, 0, unknown[i], &code));
		assert_int_equal(code, -7);
	}
	int code = -7;
	assert_false(sbx__e2b_exit_code(false, 0, NULL, &code));
	assert_false(sbx__e2b_exit_code(false, 5, NULL, &code));
}

static void test_exit_status__exited_or_exit_status_gives_exit_code(void **state)
{
	(void)state;
	int code = -1;
	assert_true(sbx__e2b_exit_code(true, 3, NULL, &code));
	assert_int_equal(code, 3);
	assert_true(sbx__e2b_exit_code(true, 0, NULL, &code)); /* exitCode absent = 0 */
	assert_int_equal(code, 0);
	assert_true(sbx__e2b_exit_code(false, 2, "exit status 2", &code)); /* no `exited` */
	assert_int_equal(code, 2);
	assert_true(sbx__e2b_exit_code(false, 0, "exit status 0", &code));
	assert_int_equal(code, 0);
	/* exited wins over a signal status (a normal exit: docs/contract.md "exec", Results) */
	assert_true(sbx__e2b_exit_code(true, 1, "signal: killed", &code));
	assert_int_equal(code, 1);
	/* the code comes from exitCode, not the text */
	assert_true(sbx__e2b_exit_code(false, 0, "exit status 7", &code));
	assert_int_equal(code, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exit_status__every_signal_name_1_to_31),
	    cmocka_unit_test(test_exit_status__unknown_signals_have_no_code),
	    cmocka_unit_test(test_exit_status__exited_or_exit_status_gives_exit_code),
	};
	return cmocka_run_group_tests_name("exit_status", tests, NULL, NULL);
}
