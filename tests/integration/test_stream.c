/*
 * tests/integration/test_stream.c: streamed exec output and exec stdin
 * against fake-e2b (docs/exec.md "Streamed output", "stdin"): the chunks
 * equal the result (also at the budget, with a UTF-8 cut), they arrive while
 * the command runs, 1 MiB of stdin reaches sha256sum intact, a command that
 * stops reading is no error, callbacks can stop the exec, and a stream that
 * ends without end-stream keeps its output for the caller.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static char *g_id; /* one sandbox for the whole file */

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "stream", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

/* What the output callback saw: each stream concatenated, and the chunk count. */
typedef struct seen {
	unsigned char *bytes[2];
	size_t len[2];
	size_t chunks;
	const char *abort_on; /* abort `sig` once stdout holds this */
	sbx_signal *sig;
	int stop_with; /* return this from the callback once stdout is non-empty */
} seen;

static int on_out(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	seen *s = payload;
	int i = stream == SBX_STREAM_STDOUT ? 0 : 1;

	assert_true(stream == SBX_STREAM_STDOUT || stream == SBX_STREAM_STDERR);
	assert_true(len > 0);
	s->bytes[i] = realloc(s->bytes[i], s->len[i] + len + 1);
	assert_non_null(s->bytes[i]);
	memcpy(s->bytes[i] + s->len[i], data, len);
	s->len[i] += len;
	s->bytes[i][s->len[i]] = 0;
	s->chunks++;
	if (s->abort_on && s->len[0] && strstr((char *)s->bytes[0], s->abort_on))
		sbx_signal_abort(s->sig);
	return s->stop_with && s->len[0] ? s->stop_with : 0;
}

static void seen_free(seen *s)
{
	free(s->bytes[0]);
	free(s->bytes[1]);
	memset(s, 0, sizeof(*s));
}

/* The chunks of each stream, concatenated, are exactly the result's bytes. */
static void assert_chunks_equal_result(const seen *s, const sbx_exec_result *r)
{
	assert_int_equal(s->len[0], r->stdout_len);
	if (r->stdout_len)
		assert_memory_equal(s->bytes[0], r->stdout_data, r->stdout_len);
	assert_int_equal(s->len[1], r->stderr_len);
	if (r->stderr_len)
		assert_memory_equal(s->bytes[1], r->stderr_data, r->stderr_len);
}

static int exec_streamed(h_ctx *h, sbx_exec_result *r, const char *cmd, sbx_exec_options *o,
                         seen *s, sbx_signal *sig, sbx_error *err)
{
	o->on_output = on_out;
	o->output_payload = s;
	return h_exec_opts(h, r, g_id, cmd, o, sig, err);
}

static void test_stream__chunks_equal_the_result(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	seen s = {0};

	assert_int_equal(exec_streamed(h, &r,
	                               "echo one; echo err1 >&2; sleep 0.2; printf 'two\\000'; "
	                               "echo err2 >&2; exit 4",
	                               &o, &s, NULL, &err),
	                 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 4);
	assert_int_equal(r.stdout_len, 8);
	assert_memory_equal(r.stdout_data, "one\ntwo\0", 8);
	assert_string_equal((char *)r.stderr_data, "err1\nerr2\n");
	assert_chunks_equal_result(&s, &r);
	assert_true(s.chunks >= 2); /* the sleep splits the output */
	sbx_exec_result_free(&r);
	seen_free(&s);

	/* a UTF-8 character split across chunks, not truncated: delivered whole at the end */
	assert_int_equal(exec_streamed(h, &r, "printf 'a\\303'; sleep 0.2; printf '\\251b\\303'",
	                               &o, &s, NULL, &err),
	                 0);
	assert_int_equal(r.stdout_len, 5);
	assert_memory_equal(r.stdout_data,
	                    "a\xc3\xa9"
	                    "b\xc3",
	                    5);
	assert_chunks_equal_result(&s, &r);
	sbx_exec_result_free(&r);
	seen_free(&s);
}

static void test_stream__truncation_at_the_budget_cuts_chunks_like_the_result(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	seen s = {0};

	/* 8 + 2 bytes fill the budget of 10 with the lead byte of 'é' last; the rest overflows */
	o.max_output_bytes = 10;
	assert_int_equal(exec_streamed(h, &r,
	                               "printf abcdefgh; sleep 0.2; printf 'i\\303'; sleep 0.2; "
	                               "printf '\\251xyz'",
	                               &o, &s, NULL, &err),
	                 0);
	assert_true(r.truncated);
	assert_int_equal(r.stdout_len, 9);
	assert_memory_equal(r.stdout_data, "abcdefghi", 9);
	assert_chunks_equal_result(&s, &r);
	sbx_exec_result_free(&r);
	seen_free(&s);

	/* one shared budget over both streams, 3 MiB of output for 1 MiB */
	o.max_output_bytes = 1024 * 1024;
	assert_int_equal(exec_streamed(h, &r,
	                               "head -c 1500000 /dev/zero | tr '\\0' 'o'; "
	                               "head -c 1500000 /dev/zero | tr '\\0' 'e' >&2",
	                               &o, &s, NULL, &err),
	                 0);
	assert_true(r.truncated);
	assert_int_equal(r.stdout_len + r.stderr_len, 1024 * 1024);
	assert_chunks_equal_result(&s, &r);
	sbx_exec_result_free(&r);
	seen_free(&s);
}

/* Output arrives while the command runs: the callback aborts on the first line. */
static void test_stream__output_arrives_while_the_command_runs(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	sbx_signal *sig;
	seen s = {0};
	uint64_t t0;

	assert_int_equal(sbx_signal_new(&sig), 0);
	s.abort_on = "first\n";
	s.sig = sig;
	o.timeout_ms = 60000;
	t0 = h_now_ms();
	assert_int_equal(
	    exec_streamed(h, &r, "echo first; sleep 50; echo never", &o, &s, sig, &err), 0);
	print_message("aborted after %llu ms\n", (unsigned long long)(h_now_ms() - t0));
	assert_true(r.aborted); /* it never waited for the sleep: "never" is not in the output */
	assert_false(r.has_exit_code);
	assert_string_equal((char *)r.stdout_data, "first\n");
	assert_chunks_equal_result(&s, &r);
	sbx_exec_result_free(&r);
	seen_free(&s);
	sbx_signal_free(sig);
	/* the abort killed it: no "sleep 50" left in the sandbox */
	char *left = h_sh(h, g_id, "pgrep -f 'sleep 5[0]' || true");
	assert_string_equal(left, "");
	free(left);
}

static void test_stream__output_callback_stop_kills_and_returns_euser(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	seen s = {0};

	s.stop_with = 7;
	assert_int_equal(exec_streamed(h, &r, "echo go; sleep 51", &o, &s, NULL, &err), SBX_EUSER);
	assert_string_equal(err.message, "exec stopped: on_output callback returned 7");
	assert_null(r.stdout_data);
	assert_int_equal(s.chunks, 1);
	seen_free(&s);
	char *left = h_sh(h, g_id, "pgrep -f 'sleep 5[1]' || true");
	assert_string_equal(left, "");
	free(left);
}

/* 1 MiB of stdin, a pattern that no chunking can hide a reordering or a loss in. */
#define MIB (1024 * 1024)
static unsigned char *pattern(void)
{
	unsigned char *p = malloc(MIB);
	assert_non_null(p);
	for (size_t i = 0; i < MIB; i++)
		p[i] = (unsigned char)((i * 31 + i / 4093) % 251);
	return p;
}

static void sha256_line(char out[80], const unsigned char *p, size_t n)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	assert_int_equal(EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL), 1);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	memcpy(out + 64, "  -\n", 5);
}

typedef struct reader {
	const unsigned char *p;
	size_t len, off, step, calls;
	int fail_at; /* return -5 on this call (1-based), 0 = never */
} reader;

static int read_in(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	reader *rd = payload;
	size_t n = rd->len - rd->off;

	rd->calls++;
	if (rd->fail_at && (int)rd->calls == rd->fail_at)
		return -5;
	if (n > rd->step)
		n = rd->step;
	if (n > cap)
		n = cap;
	memcpy(buf, rd->p + rd->off, n);
	rd->off += n;
	*len_out = n;
	return 0;
}

static void test_stream__one_mib_of_stdin_reaches_sha256sum(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	unsigned char *in = pattern();
	char want[80];
	reader rd = {in, MIB, 0, 7777, 0, 0};

	sha256_line(want, in, MIB);
	o.stdin_data = in;
	o.stdin_len = MIB;
	assert_int_equal(h_exec_opts(h, &r, g_id, "sha256sum", &o, NULL, &err), 0);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.stdout_data, want);
	sbx_exec_result_free(&r);

	/* the same bytes from a read callback in odd-sized pieces */
	o.stdin_data = NULL;
	o.stdin_len = 0;
	o.stdin_read = read_in;
	o.stdin_payload = &rd;
	assert_int_equal(h_exec_opts(h, &r, g_id, "sha256sum", &o, NULL, &err), 0);
	assert_string_equal((char *)r.stdout_data, want);
	assert_int_equal(rd.off, MIB);
	assert_int_equal(rd.calls, MIB / 7777 + 2); /* full pieces, the rest, then 0 = EOF */
	sbx_exec_result_free(&r);
	free(in);
}

/* Milliseconds of the clock the library's debug lines use (CLOCK_MONOTONIC). */
static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* cat echoes stdin while it is still being sent: no deadlock on full pipes. */
static void test_stream__stdin_through_cat_while_output_flows(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	unsigned char *in = pattern();
	seen s = {0};

	o.stdin_data = in;
	o.stdin_len = MIB;
	o.max_output_bytes = 2 * MIB;
	size_t mark = h_log_mark(h);
	long long t0 = mono_ms();
	assert_int_equal(exec_streamed(h, &r, "cat", &o, &s, NULL, &err), 0);
	/* every call's debug line counts its time from its own start, the SendInput and
	 * CloseStdin calls joined to the stream too (they were counted from 0) */
	long long took = mono_ms() - t0, max = h_log_max_field(h, mark, "http", "ms");
	assert_true(max >= 0);
	if (max > took)
		fail_msg("an http debug line says %lld ms in a %lld ms exec", max, took);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(r.stdout_len, MIB);
	assert_memory_equal(r.stdout_data, in, MIB);
	assert_chunks_equal_result(&s, &r);
	sbx_exec_result_free(&r);
	seen_free(&s);

	/* no stdin given: EOF at once, as before */
	o.stdin_data = NULL;
	o.stdin_len = 0;
	o.on_output = NULL;
	assert_int_equal(h_exec_opts(h, &r, g_id, "wc -c", &o, NULL, &err), 0);
	assert_string_equal((char *)r.stdout_data, "0\n");
	sbx_exec_result_free(&r);
	free(in);
}

static void test_stream__a_command_that_stops_reading_is_no_error(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	unsigned char *in = pattern();

	o.stdin_data = in;
	o.stdin_len = MIB;
	assert_int_equal(h_exec_opts(h, &r, g_id, "head -c 5 | od -An -tu1", &o, NULL, &err), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.stdout_data, "   0  31  62  93 124\n");
	sbx_exec_result_free(&r);
	assert_int_equal(h_exec_opts(h, &r, g_id, "exit 3", &o, NULL, &err), 0);
	assert_int_equal(r.exit_code, 3);
	sbx_exec_result_free(&r);
	free(in);
}

static void test_stream__stdin_callback_stop_kills_and_returns_euser(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	unsigned char *in = pattern();
	reader rd = {in, MIB, 0, 1000, 0, 3};

	o.stdin_read = read_in;
	o.stdin_payload = &rd;
	assert_int_equal(h_exec_opts(h, &r, g_id, "cat >/dev/null; sleep 52", &o, NULL, &err),
	                 SBX_EUSER);
	assert_string_equal(err.message, "exec stopped: stdin_read callback returned -5");
	assert_int_equal(rd.calls, 3);
	char *left = h_sh(h, g_id, "pgrep -f 'sleep 5[2]' || true");
	assert_string_equal(left, "");
	free(left);
	free(in);
}

/* A stream cut after the end event but before end-stream: an error, with the output kept. */
static void test_stream__stream_without_end_keeps_the_output(void **state)
{
	h_ctx *h = *state;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r;
	sbx_error err = {0};
	seen s = {0};

	h_fault_kind(h, "POST", "/process.Process/Start", "stream_no_end", 1);
	assert_int_equal(exec_streamed(h, &r, "echo partial; echo e >&2", &o, &s, NULL, &err),
	                 SBX_EPROTOCOL);
	assert_non_null(strstr(err.message, "without an end-of-stream message"));
	assert_string_equal((char *)r.stdout_data, "partial\n");
	assert_string_equal((char *)r.stderr_data, "e\n");
	assert_chunks_equal_result(&s, &r);
	sbx_exec_result_free(&r);
	seen_free(&s);
	h_reset(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream__chunks_equal_the_result),
	    cmocka_unit_test(test_stream__truncation_at_the_budget_cuts_chunks_like_the_result),
	    cmocka_unit_test(test_stream__output_arrives_while_the_command_runs),
	    cmocka_unit_test(test_stream__output_callback_stop_kills_and_returns_euser),
	    cmocka_unit_test(test_stream__one_mib_of_stdin_reaches_sha256sum),
	    cmocka_unit_test(test_stream__stdin_through_cat_while_output_flows),
	    cmocka_unit_test(test_stream__a_command_that_stops_reading_is_no_error),
	    cmocka_unit_test(test_stream__stdin_callback_stop_kills_and_returns_euser),
	    cmocka_unit_test(test_stream__stream_without_end_keeps_the_output),
	};
	return cmocka_run_group_tests_name("stream", tests, setup, teardown);
}
