/*
 * Unit tests of the direct form's marker (docs/exec.md "How a command runs";
 * docs/internals/exec-cost.md "The direct form"): provider_run.c's output step takes the exec
 * helper's SBX_E2B_EXEC_MARK out of stderr however the stream splits it, keeps what envd's
 * shell printed before it, passes on a stderr with no marker once SBX_E2B_MARK_HOLD bytes came,
 * and sbx__e2b_mark_not_run() says the helper never ran only for a complete stream without the
 * marker, a status of 125 to 127 and nothing handed out.
 */
#include "unit.h"

#include "e2b/run.h"
#include "e2b/scripts.h"

#include <stdlib.h>
#include <string.h>

static const unsigned char MARK[] = SBX_E2B_EXEC_MARK;

static void marked(sbx__run_result *r, size_t max)
{
	sbx__e2b_run_result_init(r, max);
	r->marked = true;
}

static void feed(sbx__run_result *r, int stream, const void *p, size_t n)
{
	sbx__e2b_run_output(r, stream, p, n);
}

/* stderr as the chunks `parts` (each NUL-terminated text, "M" standing for the marker). */
static void feed_parts(sbx__run_result *r, const char *const *parts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(parts[i], "M") == 0)
			feed(r, 2, MARK, SBX_E2B_EXEC_MARK_LEN);
		else
			feed(r, 2, parts[i], strlen(parts[i]));
}

static void assert_err(const sbx__run_result *r, const char *want)
{
	if (r->err.len != strlen(want) ||
	    (r->err.len && memcmp(r->err.ptr, want, r->err.len) != 0)) /* ptr NULL when empty */
		fail_msg("stderr: got [%.*s] (%zu bytes) want [%s]", (int)r->err.len,
		         (const char *)r->err.ptr, r->err.len, want);
}

static void ended(sbx__run_result *r, int code)
{
	r->got_end = true;
	r->has_exit_code = true;
	r->exit_code = code;
}

static void test_exec_mark__taken_out_of_stderr_wherever_it_splits(void **state)
{
	(void)state;
	/* whole, then the command's bytes, in one chunk or after it */
	for (size_t cut = 0; cut <= SBX_E2B_EXEC_MARK_LEN; cut++) {
		sbx__run_result r;
		marked(&r, 1024);
		feed(&r, 2, MARK, cut);
		assert_int_equal(r.mark_seen, cut == SBX_E2B_EXEC_MARK_LEN);
		assert_int_equal(r.err.len, 0);
		feed(&r, 2, MARK + cut, SBX_E2B_EXEC_MARK_LEN - cut);
		assert_true(r.mark_seen);
		feed(&r, 2, "err\n", 4);
		sbx__e2b_run_output_end(&r);
		assert_err(&r, "err\n");
		assert_int_equal(r.used, 4);
		sbx__e2b_run_result_dispose(&r);
	}
	/* byte by byte, with what envd's shell printed first and the command's bytes in the same
	 * chunk as the marker's end */
	sbx__run_result r;
	unsigned char buf[64];
	size_t n = 0;
	memcpy(buf, "sh: warn\n", 9);
	n = 9;
	memcpy(buf + n, MARK, SBX_E2B_EXEC_MARK_LEN);
	n += SBX_E2B_EXEC_MARK_LEN;
	memcpy(buf + n, "cmd", 3);
	n += 3;
	marked(&r, 1024);
	for (size_t i = 0; i < n; i++)
		feed(&r, 2, buf + i, 1);
	feed(&r, 1, "out", 3);
	sbx__e2b_run_output_end(&r);
	assert_true(r.mark_seen);
	assert_err(&r, "sh: warn\ncmd");
	assert_int_equal(r.out.len, 3);
	ended(&r, 127);
	assert_false(sbx__e2b_mark_not_run(&r)); /* seen: the command's own 127 */
	sbx__e2b_run_result_dispose(&r);
}

static void test_exec_mark__only_the_first_is_the_helpers(void **state)
{
	(void)state;
	static const char *const parts[] = {"M", "a", "M", "b"};
	sbx__run_result r;
	marked(&r, 1024);
	feed_parts(&r, parts, 4);
	sbx__e2b_run_output_end(&r);
	assert_int_equal(r.err.len, 2 + SBX_E2B_EXEC_MARK_LEN);
	assert_memory_equal(r.err.ptr, "a", 1);
	assert_memory_equal(r.err.ptr + 1, MARK, SBX_E2B_EXEC_MARK_LEN);
	assert_memory_equal(r.err.ptr + 1 + SBX_E2B_EXEC_MARK_LEN, "b", 1);
	sbx__e2b_run_result_dispose(&r);
}

static void test_exec_mark__never_ran_only_without_it_and_at_125_to_127(void **state)
{
	(void)state;
	static const char sh[] = "/bin/sh: 1: exec: /opt/capybara-exec: not found\n";
	for (int code = 0; code < 256; code++) {
		sbx__run_result r;
		marked(&r, 1024);
		feed(&r, 2, sh, strlen(sh));
		ended(&r, code);
		bool never = sbx__e2b_mark_not_run(&r);
		sbx__e2b_run_output_end(&r);
		assert_int_equal(never, code >= 125 && code <= 127);
		/* kept for a rerun: nothing in the result; else the shell's bytes are output */
		assert_err(&r, never ? "" : sh);
		sbx__e2b_run_result_dispose(&r);
	}
	/* not when the stream broke, timed out, or something was handed out */
	for (int k = 0; k < 6; k++) {
		sbx__run_result r;
		marked(&r, 1024);
		feed(&r, 2, sh, strlen(sh));
		ended(&r, 127);
		switch (k) {
		case 0:
			r.got_end = false;
			break;
		case 1:
			r.timed_out = true;
			break;
		case 2:
			r.aborted = true;
			break;
		case 3:
			feed(&r, 1, "x", 1);
			break;
		case 4:
			r.has_exit_code = false;
			break;
		case 5:
			r.marked = false;
			break;
		}
		assert_false(sbx__e2b_mark_not_run(&r));
		sbx__e2b_run_result_dispose(&r);
	}
}

static void test_exec_mark__no_marker_past_the_hold_passes_stderr_on(void **state)
{
	(void)state;
	size_t n = SBX_E2B_MARK_HOLD + SBX_E2B_EXEC_MARK_LEN + 100;
	unsigned char *big = malloc(n + SBX_E2B_EXEC_MARK_LEN);
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (unsigned char)('a' + i % 26);
	/* in one chunk, and in chunks of 1000 */
	for (size_t step = n; step >= 1000; step = step == n ? 1000 : 0) {
		sbx__run_result r;
		marked(&r, 1 << 20);
		for (size_t off = 0; off < n; off += step)
			feed(&r, 2, big + off, off + step > n ? n - off : step);
		assert_true(r.mark_gave_up);
		assert_int_equal(r.err.len, n);
		assert_memory_equal(r.err.ptr, big, n);
		ended(&r, 127);
		assert_false(sbx__e2b_mark_not_run(&r));
		sbx__e2b_run_result_dispose(&r);
		if (step == 1000)
			break;
	}
	/* a marker that ends exactly at the hold's last byte is still found */
	sbx__run_result r;
	marked(&r, 1 << 20);
	memcpy(big + SBX_E2B_MARK_HOLD, MARK, SBX_E2B_EXEC_MARK_LEN);
	feed(&r, 2, big, SBX_E2B_MARK_HOLD + SBX_E2B_EXEC_MARK_LEN + 7);
	assert_true(r.mark_seen);
	assert_int_equal(r.err.len, SBX_E2B_MARK_HOLD + 7);
	sbx__e2b_run_result_dispose(&r);
	free(big);
}

typedef struct got {
	char err[64];
	size_t n;
	int calls;
} got;

static int keep(sbx_stream s, const unsigned char *p, size_t n, void *payload)
{
	got *g = payload;
	assert_int_equal(s, SBX_STREAM_STDERR);
	assert_true(g->n + n < sizeof(g->err));
	memcpy(g->err + g->n, p, n);
	g->n += n;
	g->calls++;
	return 0;
}

static void
test_exec_mark__the_callback_never_sees_it_and_the_budget_counts_without_it(void **state)
{
	(void)state;
	static const char *const parts[] = {"x", "M", "yz"};
	sbx__run_result r;
	got g = {0};
	marked(&r, 1024);
	r.cb = keep;
	r.cb_payload = &g;
	feed_parts(&r, parts, 3);
	sbx__e2b_run_output_end(&r);
	assert_int_equal(g.n, 3);
	assert_memory_equal(g.err, "xyz", 3);
	sbx__e2b_run_result_dispose(&r);
	/* a budget of 2: the marker takes none of it */
	marked(&r, 2);
	feed(&r, 2, MARK, SBX_E2B_EXEC_MARK_LEN);
	feed(&r, 2, "abc", 3);
	assert_true(r.truncated);
	assert_err(&r, "ab");
	sbx__e2b_run_result_dispose(&r);
	/* bytes past the budget before the marker is seen (p NULL) are counted, not looked in */
	marked(&r, 2);
	feed(&r, 1, "ab", 2);
	feed(&r, 2, NULL, 5);
	assert_true(r.truncated);
	assert_false(r.mark_seen);
	sbx__e2b_run_result_dispose(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exec_mark__taken_out_of_stderr_wherever_it_splits),
	    cmocka_unit_test(test_exec_mark__only_the_first_is_the_helpers),
	    cmocka_unit_test(test_exec_mark__never_ran_only_without_it_and_at_125_to_127),
	    cmocka_unit_test(test_exec_mark__no_marker_past_the_hold_passes_stderr_on),
	    cmocka_unit_test(
	        test_exec_mark__the_callback_never_sees_it_and_the_budget_counts_without_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
