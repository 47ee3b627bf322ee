/*
 * tests/integration/test_files.c: read_file / write_file / stat of the E2B
 * provider against fake-e2b (docs/contract.md "Files"; the scripts of
 * src/e2b/scripts/: read_script.sh, stat_script.sh, user_write_script.sh,
 * skills_write_script.sh).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "files", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

/* GET /files as root straight from envd (libcurl): HTTP status. */
static long envd_root_get_status(h_ctx *h, const char *path)
{
	char *tok = h_token_of(h, g_id);
	assert_non_null(tok);
	h_add_secret(h, tok);
	char *url_path = NULL, *hdrs = NULL;
	assert_true(asprintf(&url_path, "/files?path=%s&username=root", path) > 0);
	assert_true(asprintf(&hdrs, "E2b-Sandbox-Id: %s\nX-Access-Token: %s", g_id, tok) > 0);
	long st = 0;
	json_decref(h_http(h, "GET", url_path, NULL, &st, hdrs));
	free(hdrs);
	free(url_path);
	free(tok);
	return st;
}

static void write_ok(h_ctx *h, const char *path, const void *data, size_t len)
{
	sbx_error err = {0};
	int rc = sbx_sandbox_write_file(h->p, g_id, path, data, len, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("write %s: %s (%s)", path, sbx_error_code_name(rc), err.message);
}

static sbx_file *read_ok(h_ctx *h, const char *path, size_t max)
{
	sbx_error err = {0};
	sbx_file *f = NULL;
	int rc = sbx_sandbox_read_file(&f, h->p, g_id, path, max, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("read %s: %s (%s)", path, sbx_error_code_name(rc), err.message);
	return f;
}

/* The file-op wrapper's head: setsid -w /bin/sh -c WRAPPER capybara-exec CTL SECONDS /bin/sh. */
enum { W = 8 };
static void check_fileop_head(json_t *args)
{
	assert_string_equal(json_string_value(json_array_get(args, 0)), "-w");
	assert_string_equal(json_string_value(json_array_get(args, 4)), "capybara-exec");
	assert_int_equal(
	    strncmp(json_string_value(json_array_get(args, 5)), "/tmp/.capybara-fileop-", 22), 0);
	assert_string_equal(json_string_value(json_array_get(args, 6)), "125"); /* 120 s + 5 */
	assert_string_equal(json_string_value(json_array_get(args, 7)), "/bin/sh");
}

static void test_read_file__head_c_max_plus_one(void **state)
{
	h_ctx *h = *state;
	free(h_sh(h, g_id, "printf 'hello world' > /workspace/r.txt"));
	static const struct {
		size_t max;
		const char *want;
		bool truncated;
	} cases[] = {{0, "", true},
	             {5, "hello", true},
	             {10, "hello worl", true},
	             {11, "hello world", false},
	             {12, "hello world", false},
	             {1 << 20, "hello world", false}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h_reset(h);
		sbx_file *f = read_ok(h, "/workspace/r.txt", cases[i].max);
		assert_non_null(f);
		assert_int_equal(f->len, strlen(cases[i].want));
		assert_memory_equal(f->data, cases[i].want, f->len);
		assert_int_equal(f->truncated, cases[i].truncated);
		sbx_file_free(f);
		json_t *log = h_reqlog(h);
		json_t *s = h_find(log, "POST", "/process.Process/Start", 0);
		json_t *b = h_entry_json(s);
		json_t *p = json_object_get(b, "process");
		json_t *args = json_object_get(p, "args");
		char want[32];
		snprintf(want, sizeof(want), "%zu", cases[i].max + 1);
		/* the seed's read script and arguments (src/e2b/scripts/read_script.sh), under the
		 * file-op wrapper (kill path) */
		assert_string_equal(json_string_value(json_object_get(p, "cmd")), "setsid");
		assert_string_equal(json_string_value(json_object_get(p, "cwd")), "/");
		check_fileop_head(args);
		assert_int_equal(json_array_size(args), W + 5);
		assert_string_equal(json_string_value(json_array_get(args, W + 0)), "-c");
		assert_string_equal(json_string_value(json_array_get(args, W + 2)),
		                    "capybara-read");
		assert_string_equal(json_string_value(json_array_get(args, W + 3)),
		                    "/workspace/r.txt");
		assert_string_equal(json_string_value(json_array_get(args, W + 4)), want);
		json_decref(b);
		json_decref(log);
	}
}

static void test_read_file__missing_or_directory_is_null(void **state)
{
	h_ctx *h = *state;
	assert_null(read_ok(h, "/workspace/does-not-exist", 100));
	assert_null(read_ok(h, "/workspace", 100));
	assert_null(read_ok(h, "/tmp/", 100));
	/* a dangling symlink is missing too */
	free(h_sh(h, g_id, "ln -sfn /nowhere /workspace/dangling"));
	assert_null(read_ok(h, "/workspace/dangling", 100));
}

static void test_write_file__all_byte_values_round_trip(void **state)
{
	h_ctx *h = *state;
	unsigned char data[256 * 4];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + i / 256);
	write_ok(h, "/workspace/bytes.bin", data, sizeof(data));
	sbx_file *f = read_ok(h, "/workspace/bytes.bin", sizeof(data));
	assert_non_null(f);
	assert_false(f->truncated);
	assert_int_equal(f->len, sizeof(data));
	assert_memory_equal(f->data, data, sizeof(data));
	sbx_file_free(f);
	char *s = h_sh(h, g_id,
	               "od -An -v -tu1 /workspace/bytes.bin | tr -s ' ' '\\n' | "
	               "grep -c . ; sort -u -n <(od -An -v -tu1 /workspace/bytes.bin | tr -s "
	               "' ' '\\n' | grep .) | wc -l");
	assert_string_equal(s, "1024\n256\n");
	free(s);
	/* empty file */
	write_ok(h, "/workspace/empty", "", 0);
	f = read_ok(h, "/workspace/empty", 10);
	assert_non_null(f);
	assert_int_equal(f->len, 0);
	assert_false(f->truncated);
	sbx_file_free(f);
	/* overwrite truncates */
	write_ok(h, "/workspace/bytes.bin", "xy", 2);
	f = read_ok(h, "/workspace/bytes.bin", 100);
	assert_int_equal(f->len, 2);
	assert_memory_equal(f->data, "xy", 2);
	sbx_file_free(f);
}

/*
 * A file over 4 MiB moves raw (GET /files of a staging copy) into the result's buffer: every
 * byte back, at the exact size, cut to max_bytes (NUL after) when longer; on the TLS run
 * through the HTTPS loop.
 */
static void test_read_file__raw_whole_exact_and_cut(void **state)
{
	h_ctx *h = *state;
	enum { N = (5 << 20) + 3 };
	unsigned char *data = malloc(N);
	sbx_file *f;

	assert_non_null(data);
	for (size_t i = 0; i < N; i++)
		data[i] = (unsigned char)(i * 7 + i / 251);
	write_ok(h, "/workspace/raw.bin", data, N);
	h_reset(h);
	f = read_ok(h, "/workspace/raw.bin", 16 << 20);
	assert_int_equal(f->len, N);
	assert_false(f->truncated);
	assert_memory_equal(f->data, data, N);
	assert_int_equal(f->data[N], 0);
	sbx_file_free(f);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/files"), 1);
	json_decref(log);
	f = read_ok(h, "/workspace/raw.bin", N); /* exactly its size */
	assert_int_equal(f->len, N);
	assert_false(f->truncated);
	assert_memory_equal(f->data, data, N);
	sbx_file_free(f);
	f = read_ok(h, "/workspace/raw.bin", N - 1000); /* one byte past max is staged: cut */
	assert_int_equal(f->len, N - 1000);
	assert_true(f->truncated);
	assert_memory_equal(f->data, data, N - 1000);
	assert_int_equal(f->data[N - 1000], 0);
	sbx_file_free(f);
	free(data);
}

static void test_stat__size_dir_and_missing(void **state)
{
	h_ctx *h = *state;
	sbx_stat st;
	sbx_error err = {0};
	free(h_sh(h, g_id,
	          "printf 12345 > /workspace/s.txt; mkdir -p /workspace/sd; "
	          "ln -sfn /workspace/s.txt /workspace/s.lnk"));
	assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, "/workspace/s.txt", NULL, &err), 0);
	assert_true(st.exists);
	assert_int_equal(st.size, 5);
	assert_false(st.is_dir);
	assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, "/workspace/s.lnk", NULL, &err), 0);
	assert_true(st.exists);
	assert_int_equal(st.size, 5); /* stat -L */
	assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, "/workspace/sd", NULL, &err), 0);
	assert_true(st.exists);
	assert_true(st.is_dir);
	assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, "/workspace/nope", NULL, &err), 0);
	assert_false(st.exists);
	assert_int_equal(st.size, 0);
	assert_false(st.is_dir);
	h_note_err(h, &err);
}

static void check_staging_upload(h_ctx *h, json_t *log, char staging_out[128])
{
	assert_int_equal(h_count(log, "POST", "/files"), 1);
	json_t *up = h_find(log, "POST", "/files", 0);
	const char *path = h_entry_query(up, "path");
	assert_non_null(path);
	regex_t re;
	assert_int_equal(regcomp(&re,
	                         "^/opt/capybara/upload/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
	                         "[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
	                         REG_EXTENDED | REG_NOSUB),
	                 0);
	if (regexec(&re, path, 0, NULL, 0) != 0)
		fail_msg("staging path %s", path);
	regfree(&re);
	assert_string_equal(h_entry_query(up, "username"), "root");
	snprintf(staging_out, 128, "%s", path);
	/* the staged file is gone afterwards (checked as root, straight from envd) */
	assert_int_equal(envd_root_get_status(h, path), 404);
	(void)h;
}

static void test_write_file__stages_as_root_and_cleans_up(void **state)
{
	h_ctx *h = *state;
	char staging[128];
	h_reset(h);
	write_ok(h, "/workspace/w/a/b.txt", "data", 4);
	json_t *log = h_reqlog(h);
	check_staging_upload(h, log, staging);
	/* then the write script runs as root with the target and the staged file */
	json_t *s = h_find(log, "POST", "/process.Process/Start", 0);
	json_t *b = h_entry_json(s);
	json_t *args = json_object_get(json_object_get(b, "process"), "args");
	check_fileop_head(args);
	assert_string_equal(json_string_value(json_array_get(args, W + 2)), "capybara-write");
	assert_string_equal(json_string_value(json_array_get(args, W + 3)), "/workspace/w/a/b.txt");
	assert_string_equal(json_string_value(json_array_get(args, W + 4)), staging);
	json_decref(b);
	json_decref(log);
	/* parents created as the user */
	char *o =
	    h_sh(h, g_id, "stat -c '%u %g %a' /workspace/w /workspace/w/a /workspace/w/a/b.txt");
	assert_string_equal(o, "1000 1000 755\n1000 1000 755\n1000 1000 644\n");
	free(o);
}

static void test_write_file__failure_removes_staging_and_errors(void **state)
{
	h_ctx *h = *state;
	char staging[128];
	sbx_error err = {0};
	h_reset(h);
	/* the sandbox user may not write /etc */
	int rc = sbx_sandbox_write_file(h->p, g_id, "/etc/evil.conf", "x", 1, NULL, &err);
	h_note_err(h, &err);
	assert_int_equal(rc, SBX_ESANDBOX);
	json_t *log = h_reqlog(h);
	check_staging_upload(h, log, staging);
	json_decref(log);
	sbx_stat st;
	assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, "/etc/evil.conf", NULL, NULL), 0);
	assert_false(st.exists);
}

static void test_write_file__symlink_into_etc_fails(void **state)
{
	h_ctx *h = *state;
	char *before = h_sh(h, g_id,
	                    "ls -la --time-style=+%s /etc | md5sum; md5sum /etc/hostname "
	                    "/etc/passwd");
	free(h_sh(h, g_id, "ln -sfn /etc /workspace/etc-link; ln -sfn /etc/passwd /workspace/pw"));
	sbx_error err = {0};
	assert_true(
	    sbx_sandbox_write_file(h->p, g_id, "/workspace/etc-link/evil", "x", 1, NULL, &err) < 0);
	h_note_err(h, &err);
	sbx_error_clear(&err);
	assert_true(sbx_sandbox_write_file(h->p, g_id, "/workspace/pw", "root::0:0::/:/bin/sh\n",
	                                   21, NULL, &err) < 0);
	h_note_err(h, &err);
	sbx_error_clear(&err);
	assert_true(sbx_sandbox_write_file(h->p, g_id, "/workspace/etc-link/newdir/f", "x", 1, NULL,
	                                   &err) < 0);
	h_note_err(h, &err);
	char *after = h_sh(h, g_id,
	                   "ls -la --time-style=+%s /etc | md5sum; md5sum /etc/hostname "
	                   "/etc/passwd");
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_write_file__skills_written_by_root_0644(void **state)
{
	h_ctx *h = *state;
	write_ok(h, "/skills/pack/SKILL.md", "# skill\n", 8);
	char *o = h_sh(h, g_id,
	               "stat -c '%U %a' /skills/pack /skills/pack/SKILL.md; cat "
	               "/skills/pack/SKILL.md; touch /skills/x 2>/dev/null && echo writable "
	               "|| echo read-only");
	assert_string_equal(o, "root 755\nroot 644\n# skill\nread-only\n");
	free(o);
	sbx_file *f = read_ok(h, "/skills/pack/SKILL.md", 100);
	assert_int_equal(f->len, 8);
	sbx_file_free(f);
}

static void test_files__invalid_path_sends_no_request(void **state)
{
	h_ctx *h = *state;
	char seg[300], longp[4200];
	seg[0] = '/';
	memset(seg + 1, 'a', 256);
	seg[257] = '\0';
	longp[0] = '/';
	for (size_t i = 1; i < 4097; i++)
		longp[i] = (i % 100 == 0) ? '/' : 'b';
	longp[4097] = '\0';
	const char *bad[] = {"relative", "",      "/a/../b", "/a/./b", "/a//b",
	                     "/a\nb",    "/a\tb", "//",      seg,      longp};
	h_reset(h);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_file *f = NULL;
		sbx_stat st;
		assert_int_equal(sbx_sandbox_read_file(&f, h->p, g_id, bad[i], 10, NULL, NULL),
		                 SBX_EINVALID);
		assert_int_equal(sbx_sandbox_write_file(h->p, g_id, bad[i], "x", 1, NULL, NULL),
		                 SBX_EINVALID);
		assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, bad[i], NULL, NULL),
		                 SBX_EINVALID);
	}
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

typedef struct reader {
	h_ctx *h;
	sbx_signal *sig;
	int rc;
	uint64_t done;
} reader;

static void *read_fifo(void *arg)
{
	reader *r = arg;
	sbx_file *f = NULL;
	r->rc = sbx_sandbox_read_file(&f, r->h->p, g_id, "/workspace/fifo", 100, r->sig, NULL);
	r->done = h_now_ms();
	sbx_file_free(f);
	return NULL;
}

/* how many of the read's `head -c 101 -- /workspace/fifo` run in the sandbox */
static long fifo_readers(h_ctx *h)
{
	char *n =
	    h_sh(h, g_id, "ps -eo args= | grep -c '^head -c 101 -- /workspace/fif[o]$' || true");
	long count = strtol(n, NULL, 10);
	free(n);
	return count;
}

/*
 * A read that blocks in the sandbox (a FIFO without a writer) is aborted promptly.
 * The abort runs the kill script in the sandbox (one more command) and SendSignal
 * before the read returns: on a quiet machine ~20 ms. Measured robustly: the best
 * of three aborts, each only once the reader is blocked, against 250 ms or, on a
 * machine so loaded (or sanitized) that a plain `true` exec alone takes over 80 ms,
 * three times the best such exec measured in the same run.
 */
static void test_read_file__abort_while_blocked(void **state)
{
	h_ctx *h = *state;
	uint64_t best = UINT64_MAX, plain = UINT64_MAX;
	int rcs[3];

	free(h_sh(h, g_id, "rm -f /workspace/fifo; mkfifo /workspace/fifo"));
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = h_now_ms();
		free(h_sh(h, g_id, "true"));
		uint64_t took = h_now_ms() - t0;
		plain = took < plain ? took : plain;

		reader r = {h, NULL, 0, 0};
		assert_int_equal(sbx_signal_new(&r.sig), 0);
		pthread_t t;
		pthread_create(&t, NULL, read_fifo, &r);
		bool blocked = false;
		for (uint64_t until = h_now_ms() + 60000; !blocked && h_now_ms() < until;)
			if (!(blocked = fifo_readers(h) == 1))
				usleep(20 * 1000);
		uint64_t at = h_now_ms();
		sbx_signal_abort(r.sig); /* also ends a read that never got blocked */
		pthread_join(t, NULL);
		sbx_signal_free(r.sig);
		assert_true(blocked);
		rcs[i] = r.rc;
		best = r.done - at < best ? r.done - at : best;
		print_message(
		    "blocked read_file returned %llu ms after the abort (plain exec %llu ms)\n",
		    (unsigned long long)(r.done - at), (unsigned long long)took);
		/* the abort killed the reader: nothing is left in the sandbox (docs/files.md) */
		assert_int_equal(fifo_readers(h), 0);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(rcs[i], SBX_EABORTED);
	uint64_t bound = 3 * plain > 250 ? 3 * plain : 250;
	print_message("best abort %llu ms, bound %llu ms\n", (unsigned long long)best,
	              (unsigned long long)bound);
	assert_true(best < bound);
	free(h_sh(h, g_id, "rm -f /workspace/fifo"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_file__head_c_max_plus_one),
	    cmocka_unit_test(test_read_file__missing_or_directory_is_null),
	    cmocka_unit_test(test_write_file__all_byte_values_round_trip),
	    cmocka_unit_test(test_read_file__raw_whole_exact_and_cut),
	    cmocka_unit_test(test_stat__size_dir_and_missing),
	    cmocka_unit_test(test_write_file__stages_as_root_and_cleans_up),
	    cmocka_unit_test(test_write_file__failure_removes_staging_and_errors),
	    cmocka_unit_test(test_write_file__symlink_into_etc_fails),
	    cmocka_unit_test(test_write_file__skills_written_by_root_0644),
	    cmocka_unit_test(test_files__invalid_path_sends_no_request),
	    cmocka_unit_test(test_read_file__abort_while_blocked),
	};
	return cmocka_run_group_tests_name("integration_files", tests, setup, teardown);
}
