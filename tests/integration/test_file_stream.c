/*
 * tests/integration/test_file_stream.c: streamed reads and writes of
 * sandbox/files.h against fake-e2b (docs/files.md): a 256 MiB file both ways
 * with flat memory and the same digest on both sides; the contract's
 * permission rules (as the sandbox user, symlinks included); large read_file
 * calls moving raw; and the faults of docs/files.md "Timeouts, aborts and leftovers": a file
 * operation that times out or is aborted (a FIFO) leaves no process in the sandbox, and a write
 * whose in-sandbox step failed leaves no staging file.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include "util/buf.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *g_id;

static int setup(void **state)
{
	return h_group_setup_sandbox(state, "fstream", &g_id);
}

static int teardown(void **state)
{
	return h_group_teardown_sandbox(state, &g_id);
}

/* Resident set size of this process in KiB (VmRSS). */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Deterministic pseudo-random bytes (xorshift64*), hashed as they go, RSS sampled. */
typedef struct gen {
	uint64_t state, left, total;
	EVP_MD_CTX *md;
	long rss_peak;
	int fail_after; /* > 0: return this code once `total` passes 1 MiB */
} gen;

static void gen_init(gen *g, uint64_t size)
{
	memset(g, 0, sizeof(*g));
	g->state = 0x9E3779B97F4A7C15ull;
	g->left = size;
	g->md = EVP_MD_CTX_new();
	assert_non_null(g->md);
	assert_int_equal(EVP_DigestInit_ex(g->md, EVP_sha256(), NULL), 1);
}

static void hex_digest(EVP_MD_CTX *md, char out[65])
{
	unsigned char d[32];
	unsigned n = 0;
	assert_int_equal(EVP_DigestFinal_ex(md, d, &n), 1);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	EVP_MD_CTX_free(md);
}

static void sample_rss(long *peak, uint64_t total, uint64_t n)
{
	if ((total >> 20) != ((total + n) >> 20)) { /* every MiB */
		long r = rss_kib();
		if (r > *peak)
			*peak = r;
	}
}

static int gen_source(size_t *len_out, unsigned char *buf, size_t cap, void *payload)
{
	gen *g = payload;
	size_t n = cap < g->left ? cap : (size_t)g->left;
	if (g->fail_after && g->total >= (1u << 20))
		return g->fail_after;
	for (size_t i = 0; i < n; i++) {
		g->state ^= g->state >> 12;
		g->state ^= g->state << 25;
		g->state ^= g->state >> 27;
		buf[i] = (unsigned char)((g->state * 0x2545F4914F6CDD1Dull) >> 56);
	}
	assert_int_equal(EVP_DigestUpdate(g->md, buf, n), 1);
	sample_rss(&g->rss_peak, g->total, n);
	g->left -= n;
	g->total += n;
	*len_out = n;
	return 0;
}

typedef struct hsink {
	EVP_MD_CTX *md;
	uint64_t total;
	long rss_peak;
	int stop_after; /* > 0: return it once total passes 1 MiB */
} hsink;

static void hsink_init(hsink *s)
{
	memset(s, 0, sizeof(*s));
	s->md = EVP_MD_CTX_new();
	assert_non_null(s->md);
	assert_int_equal(EVP_DigestInit_ex(s->md, EVP_sha256(), NULL), 1);
}

static int hash_sink(const unsigned char *data, size_t len, void *payload)
{
	hsink *s = payload;
	if (s->stop_after && s->total >= (1u << 20))
		return s->stop_after;
	assert_int_equal(EVP_DigestUpdate(s->md, data, len), 1);
	sample_rss(&s->rss_peak, s->total, len);
	s->total += len;
	return 0;
}

/* The staging path of the n-th upload in a request log (strdup'ed). */
static char *upload_path(json_t *log, size_t n)
{
	json_t *e = h_find(log, "POST", "/files", n);
	assert_non_null(e);
	return strdup(h_entry_query(e, "path"));
}

/* The staging path a staged read used: the 5th argument of its capybara-stage script. */
static char *stage_path(json_t *log)
{
	for (size_t i = 0;; i++) {
		json_t *e = h_find(log, "POST", "/process.Process/Start", i);
		assert_non_null(e);
		json_t *b = h_entry_json(e);
		json_t *args = json_object_get(json_object_get(b, "process"), "args");
		for (size_t k = 0; k + 2 < json_array_size(args); k++) {
			if (strcmp(json_string_value(json_array_get(args, k)), "capybara-stage") ==
			    0) {
				char *out = strdup(json_string_value(json_array_get(args, k + 2)));
				json_decref(b);
				return out;
			}
		}
		json_decref(b);
	}
}

/* GET /files as root straight from envd: the HTTP status (404: the staging file is gone). */
static long root_get_status(h_ctx *h, const char *path)
{
	char *tok = h_token_of(h, g_id), *url = NULL, *hdrs = NULL;
	long st = 0;
	assert_non_null(tok);
	h_add_secret(h, tok);
	assert_true(asprintf(&url, "/files?path=%s&username=root", path) > 0);
	assert_true(asprintf(&hdrs, "E2b-Sandbox-Id: %s\nX-Access-Token: %s", g_id, tok) > 0);
	json_decref(h_http(h, "GET", url, NULL, &st, hdrs));
	free(url);
	free(hdrs);
	free(tok);
	return st;
}

/* No process the library started is left: no file-op wrapper, no head/cat of our FIFO. */
static void assert_no_leftover(h_ctx *h, const char *what)
{
	char *n =
	    h_sh(h, g_id,
	         "ps -eo args= | grep -E -c '[c]apybara-fileop|^head -c|^cat$|capybara-[w]rite' "
	         "|| true");
	if (strcmp(n, "0\n") != 0) {
		char *all = h_sh(h, g_id, "ps -eo user=,args=");
		fail_msg("%s: %s process(es) left:\n%s", what, n, all);
	}
	free(n);
}

static void test_stream__256_mib_both_ways_flat_memory(void **state)
{
	h_ctx *h = *state;
	enum { MIB = 1 << 20 };
	const uint64_t size = 256ull * MIB;
	sbx_error err = {0};
	char want[65], got[65];
	gen g;
	hsink s;
	sbx_read_result rr;

	/* warm up the code paths once so their allocations are not counted as growth */
	gen_init(&g, 1);
	assert_int_equal(sbx_sandbox_write_file_from(h->p, g_id, "/workspace/warm", gen_source, &g,
	                                             NULL, NULL, &err),
	                 0);
	hex_digest(g.md, want);
	hsink_init(&s);
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/warm", hash_sink, &s,
	                                          NULL, NULL, &err),
	                 0);
	hex_digest(s.md, got);

	long base = rss_kib();
	uint64_t t0 = h_now_ms();
	gen_init(&g, size);
	g.rss_peak = base;
	int rc = sbx_sandbox_write_file_from(h->p, g_id, "/workspace/big.bin", gen_source, &g, NULL,
	                                     NULL, &err);
	h_note_err(h, &err);
	assert_int_equal(rc, 0);
	uint64_t t1 = h_now_ms();
	assert_int_equal(g.total, size);
	hex_digest(g.md, want);

	/* what the sandbox holds is what was sent */
	char *sum = h_sh(h, g_id, "sha256sum /workspace/big.bin | cut -c1-64");
	assert_memory_equal(sum, want, 64);
	free(sum);

	uint64_t t2 = h_now_ms();
	hsink_init(&s);
	s.rss_peak = base;
	rc = sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/big.bin", hash_sink, &s, NULL,
	                              NULL, &err);
	h_note_err(h, &err);
	assert_int_equal(rc, 0);
	uint64_t t3 = h_now_ms();
	hex_digest(s.md, got);
	assert_true(rr.found);
	assert_false(rr.truncated);
	assert_int_equal(rr.bytes, size);
	assert_string_equal(got, want);
	long peak = g.rss_peak > s.rss_peak ? g.rss_peak : s.rss_peak;
	print_message("256 MiB: write %llu ms, read %llu ms, RSS %ld KiB before, peak %ld KiB "
	              "(+%ld KiB)\n",
	              (unsigned long long)(t1 - t0), (unsigned long long)(t3 - t2), base, peak,
	              peak - base);
	assert_true(peak - base < 16 * 1024);
	free(h_sh(h, g_id, "rm -f /workspace/big.bin /workspace/warm"));
}

static int count_sink(const unsigned char *data, size_t len, void *payload)
{
	sbx_buf *b = payload;
	(void)b;
	return sbx_buf_put(b, data, len) < 0 ? 1 : 0;
}

static void test_stream__truncation_missing_and_permissions(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_read_result rr;
	sbx_file_options o = SBX_FILE_OPTIONS_INIT;
	sbx_buf b = SBX_BUF_INIT(1 << 20);

	free(h_sh(h, g_id,
	          "printf 0123456789 > /workspace/ten; ln -sfn /etc/shadow /workspace/shadow; "
	          "ln -sfn /workspace/ten /workspace/ten-link; mkdir -p /workspace/adir"));
	o.max_bytes = 4;
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/ten", count_sink, &b,
	                                          &o, NULL, &err),
	                 0);
	assert_true(rr.found && rr.truncated);
	assert_int_equal(rr.bytes, 4);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.ptr, "0123", 4);
	sbx_buf_clear(&b);
	o.max_bytes = 10; /* exactly the size: not truncated */
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/ten-link",
	                                          count_sink, &b, &o, NULL, &err),
	                 0);
	assert_true(rr.found && !rr.truncated);
	assert_int_equal(b.len, 10);
	sbx_buf_clear(&b);
	/* missing, directory: not found, nothing delivered */
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/none", count_sink,
	                                          &b, NULL, NULL, &err),
	                 0);
	assert_false(rr.found);
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/adir", count_sink,
	                                          &b, NULL, NULL, &err),
	                 0);
	assert_false(rr.found);
	assert_int_equal(b.len, 0);
	/* as the sandbox user: root-only files stay unreadable, through a symlink too */
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/shadow", count_sink,
	                                          &b, NULL, NULL, &err),
	                 SBX_ESANDBOX);
	assert_string_equal(
	    err.message, "cannot read /workspace/shadow: permission denied for /workspace/shadow");
	h_note_err(h, &err);
	sbx_error_clear(&err);
	assert_int_equal(b.len, 0);
	/* a write through a symlink to a root-owned file fails, the file is unchanged */
	char *before = h_sh(h, g_id, "md5sum /etc/passwd");
	free(h_sh(h, g_id, "ln -sfn /etc/passwd /workspace/pw"));
	gen g;
	gen_init(&g, 100);
	assert_int_equal(sbx_sandbox_write_file_from(h->p, g_id, "/workspace/pw", gen_source, &g,
	                                             NULL, NULL, &err),
	                 SBX_ESANDBOX);
	EVP_MD_CTX_free(g.md);
	h_note_err(h, &err);
	sbx_error_clear(&err);
	char *after = h_sh(h, g_id, "md5sum /etc/passwd");
	assert_string_equal(before, after);
	free(before);
	free(after);
	sbx_buf_dispose(&b);
}

/* The file descriptor forms, and /skills written as root 0644. */
static void test_stream__fd_forms(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_read_result rr;
	char tmpl[] = "/tmp/sbx-fstream-XXXXXX", out[] = "/tmp/sbx-fstream-out-XXXXXX";
	int fd = mkstemp(tmpl), ofd = mkstemp(out);
	assert_true(fd >= 0 && ofd >= 0);
	unlink(tmpl);
	unlink(out);
	for (int i = 0; i < 3000; i++)
		assert_int_equal(dprintf(fd, "line %d\n", i) > 0, 1);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(
	    sbx_sandbox_write_file_fd(h->p, g_id, "/skills/fd/lines.txt", fd, NULL, NULL, &err), 0);
	char *st = h_sh(h, g_id, "stat -c '%U %a %s' /skills/fd/lines.txt");
	off_t size = lseek(fd, 0, SEEK_END);
	char want[64];
	snprintf(want, sizeof(want), "root 644 %lld\n", (long long)size);
	assert_string_equal(st, want);
	free(st);
	assert_int_equal(sbx_sandbox_read_file_fd(&rr, h->p, g_id, "/skills/fd/lines.txt", ofd,
	                                          NULL, NULL, &err),
	                 0);
	assert_int_equal(rr.bytes, (uint64_t)size);
	assert_int_equal(lseek(ofd, 0, SEEK_END), size);
	/* a bad fd: the read(2) error, worded */
	assert_int_equal(
	    sbx_sandbox_write_file_fd(h->p, g_id, "/workspace/x", 987, NULL, NULL, &err),
	    SBX_EUSER);
	assert_non_null(strstr(err.message, "Bad file descriptor"));
	close(fd);
	close(ofd);
}

/* Large read_file calls move raw (GET /files); small ones keep the one-request path. */
static void test_read_file__large_goes_raw_small_stays(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_file *f = NULL;

	free(h_sh(h, g_id,
	          "head -c 5000000 /dev/urandom > /workspace/five; head -c 1000 /dev/urandom > "
	          "/workspace/small"));
	char *sum = h_sh(h, g_id, "sha256sum < /workspace/five | cut -c1-64");
	h_reset(h);
	assert_int_equal(
	    sbx_sandbox_read_file(&f, h->p, g_id, "/workspace/five", 16 << 20, NULL, &err), 0);
	assert_int_equal(f->len, 5000000);
	assert_false(f->truncated);
	assert_int_equal(f->data[f->len], 0);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	char got[65];
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	EVP_DigestUpdate(md, f->data, f->len);
	hex_digest(md, got);
	assert_memory_equal(sum, got, 64);
	free(sum);
	sbx_file_free(f);
	json_t *log = h_reqlog(h);
	assert_int_equal(h_count(log, "GET", "/files"), 1);
	char *staging = stage_path(log);
	json_decref(log);
	assert_int_equal(root_get_status(h, staging), 404); /* removed */
	free(staging);
	/* truncated raw read: the first max bytes */
	assert_int_equal(
	    sbx_sandbox_read_file(&f, h->p, g_id, "/workspace/five", 4500000, NULL, &err), 0);
	assert_int_equal(f->len, 4500000);
	assert_true(f->truncated);
	sbx_file_free(f);
	/* small: one Start, no /files */
	h_reset(h);
	assert_int_equal(
	    sbx_sandbox_read_file(&f, h->p, g_id, "/workspace/small", 16 << 20, NULL, &err), 0);
	assert_int_equal(f->len, 1000);
	sbx_file_free(f);
	log = h_reqlog(h);
	assert_int_equal(h_count(log, NULL, "/files"), 0);
	assert_int_equal(h_count(log, "POST", "/process.Process/Start"), 1);
	json_decref(log);
}

/* A read of a FIFO times out; nothing is left running, no staging file is left. */
static void test_stream__fifo_timeout_leaves_nothing(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_read_result rr;
	sbx_file_options o = SBX_FILE_OPTIONS_INIT;
	sbx_buf b = SBX_BUF_INIT(1 << 20);

	free(h_sh(h, g_id, "rm -f /workspace/p; mkfifo /workspace/p"));
	h_reset(h);
	o.timeout_ms = 1500;
	uint64_t t0 = h_now_ms();
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/p", count_sink, &b,
	                                          &o, NULL, &err),
	                 SBX_ETIMEOUT);
	print_message("FIFO read timed out after %llu ms\n", (unsigned long long)(h_now_ms() - t0));
	h_note_err(h, &err);
	sbx_error_clear(&err);
	assert_no_leftover(h, "read timeout");
	json_t *log = h_reqlog(h);
	char *staging = stage_path(log);
	json_decref(log);
	assert_int_equal(root_get_status(h, staging), 404);
	free(staging);

	/* a write into a FIFO blocks in the user's `cat`: killed too, staging removed */
	h_reset(h);
	gen g;
	gen_init(&g, 10);
	assert_int_equal(
	    sbx_sandbox_write_file_from(h->p, g_id, "/workspace/p", gen_source, &g, &o, NULL, &err),
	    SBX_ETIMEOUT);
	EVP_MD_CTX_free(g.md);
	h_note_err(h, &err);
	sbx_error_clear(&err);
	assert_no_leftover(h, "write timeout");
	log = h_reqlog(h);
	staging = upload_path(log, 0);
	json_decref(log);
	assert_int_equal(root_get_status(h, staging), 404);
	free(staging);

	/* the next writer's data reaches a new reader, not a leftover one */
	free(h_sh(h, g_id, "(sleep 0.3; echo fresh > /workspace/p) & head -c 6 /workspace/p"));
	free(h_sh(h, g_id, "rm -f /workspace/p"));
	sbx_buf_dispose(&b);
}

typedef struct abort_read {
	h_ctx *h;
	sbx_signal *sig;
	int rc;
	uint64_t done;
	atomic_bool ended; /* the read returned */
} abort_read;

static void *fifo_reader(void *arg)
{
	abort_read *a = arg;
	sbx_read_result rr;
	sbx_buf b = SBX_BUF_INIT(1 << 20);
	sbx_error err = {0};
	a->rc = sbx_sandbox_read_file_to(&rr, a->h->p, g_id, "/workspace/q", count_sink, &b, NULL,
	                                 a->sig, &err);
	a->done = h_now_ms();
	atomic_store(&a->ended, true);
	h_note_err(a->h, &err);
	sbx_buf_dispose(&b);
	return NULL;
}

/*
 * A streamed read blocked in the sandbox (a FIFO no one writes) ends only by the abort: it is
 * still running when the test aborts it, it returns SBX_EABORTED (its in-sandbox step's
 * 120 s timeout would say SBX_ETIMEOUT), and nothing is left running. How promptly is measured
 * in test_files (test_read_file__abort_while_blocked).
 */
static void test_stream__fifo_abort_leaves_nothing(void **state)
{
	h_ctx *h = *state;
	abort_read a = {h, NULL, 0, 0, false};
	pthread_t t;
	bool blocked = false;

	free(h_sh(h, g_id, "rm -f /workspace/q; mkfifo /workspace/q"));
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	pthread_create(&t, NULL, fifo_reader, &a);
	/* wait until the reader is blocked in the sandbox, then abort */
	for (uint64_t until = h_now_ms() + 60000; !blocked && h_now_ms() < until;) {
		char *n =
		    h_sh(h, g_id, "ps -eo args= | grep -c '^head -c .* /workspace/[q]' || true");
		blocked = strcmp(n, "1\n") == 0;
		free(n);
		if (!blocked)
			usleep(20 * 1000);
	}
	assert_false(atomic_load(&a.ended)); /* blocked: nothing but the abort can end it */
	uint64_t at = h_now_ms();
	sbx_signal_abort(a.sig);
	pthread_join(t, NULL);
	assert_true(blocked);
	assert_int_equal(a.rc, SBX_EABORTED);
	print_message("aborted FIFO read returned %llu ms after the abort\n",
	              (unsigned long long)(a.done - at));
	sbx_signal_free(a.sig);
	assert_no_leftover(h, "read abort");
	free(h_sh(h, g_id, "rm -f /workspace/q"));
}

/* The upload succeeded, the in-sandbox step failed: the staging file is removed. */
static void test_write__failed_step_removes_staging(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};

	/* the contract's write_file: the write script's Start is refused */
	h_reset(h);
	h_fault_status(h, "POST", "/process.Process/Start", 500, NULL, 1);
	assert_int_equal(sbx_sandbox_write_file(h->p, g_id, "/workspace/f1", "abc", 3, NULL, &err),
	                 SBX_EHTTP);
	h_note_err(h, &err);
	sbx_error_clear(&err);
	json_t *log = h_reqlog(h);
	char *staging = upload_path(log, 0);
	json_decref(log);
	h_faults_clear(h);
	assert_int_equal(root_get_status(h, staging), 404);
	free(staging);

	/* the streamed write, the same */
	h_reset(h);
	h_fault_status(h, "POST", "/process.Process/Start", 500, NULL, 1);
	gen g;
	gen_init(&g, 3 << 20);
	assert_int_equal(sbx_sandbox_write_file_from(h->p, g_id, "/workspace/f2", gen_source, &g,
	                                             NULL, NULL, &err),
	                 SBX_EHTTP);
	EVP_MD_CTX_free(g.md);
	h_note_err(h, &err);
	sbx_error_clear(&err);
	log = h_reqlog(h);
	staging = upload_path(log, 0);
	json_decref(log);
	h_faults_clear(h);
	assert_int_equal(root_get_status(h, staging), 404);
	free(staging);

	/* a source that fails midway: SBX_EUSER, nothing written, staging removed */
	h_reset(h);
	gen_init(&g, 8 << 20);
	g.fail_after = 7;
	assert_int_equal(sbx_sandbox_write_file_from(h->p, g_id, "/workspace/f3", gen_source, &g,
	                                             NULL, NULL, &err),
	                 SBX_EUSER);
	EVP_MD_CTX_free(g.md);
	assert_non_null(strstr(err.message, "source returned 7"));
	sbx_error_clear(&err);
	sbx_stat st;
	assert_int_equal(sbx_sandbox_stat(&st, h->p, g_id, "/workspace/f3", NULL, NULL), 0);
	assert_false(st.exists);
	log = h_reqlog(h);
	staging = upload_path(log, 0);
	json_decref(log);
	assert_int_equal(root_get_status(h, staging), 404);
	free(staging);

	/* a sink that stops: SBX_EUSER, staging removed */
	free(h_sh(h, g_id, "head -c 3000000 /dev/zero > /workspace/z"));
	h_reset(h);
	hsink s;
	hsink_init(&s);
	s.stop_after = 9;
	sbx_read_result rr;
	assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/z", hash_sink, &s,
	                                          NULL, NULL, &err),
	                 SBX_EUSER);
	EVP_MD_CTX_free(s.md);
	assert_non_null(strstr(err.message, "sink returned 9"));
	log = h_reqlog(h);
	staging = stage_path(log);
	json_decref(log);
	assert_int_equal(root_get_status(h, staging), 404);
	free(staging);
}

/* A sandbox paused behind the provider's back: the streamed calls resume it (the attach cache). */
static void test_stream__paused_behind_our_back(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	char path[128], want[65], got[65];
	long st = 0;
	gen g;
	hsink s;
	sbx_read_result rr;

	for (int round = 0; round < 2; round++) {
		snprintf(path, sizeof(path), "/sandboxes/%s/pause", g_id);
		json_decref(h_http(h, "POST", path, "{}", &st, NULL));
		assert_int_equal(st, 204);
		gen_init(&g, round == 0 ? 3 : 3u << 20);
		int rc = sbx_sandbox_write_file_from(h->p, g_id, "/workspace/paused.bin",
		                                     gen_source, &g, NULL, NULL, &err);
		if (rc != 0)
			fail_msg("write after a pause: %s", err.message);
		hex_digest(g.md, want);
		json_decref(h_http(h, "POST", path, "{}", &st, NULL));
		assert_int_equal(st, 204);
		hsink_init(&s);
		assert_int_equal(sbx_sandbox_read_file_to(&rr, h->p, g_id, "/workspace/paused.bin",
		                                          hash_sink, &s, NULL, NULL, &err),
		                 0);
		hex_digest(s.md, got);
		assert_string_equal(got, want);
	}
}

static void test_stream__bad_arguments_send_nothing(void **state)
{
	h_ctx *h = *state;
	sbx_error err = {0};
	sbx_read_result rr;
	sbx_file_options o = SBX_FILE_OPTIONS_INIT;
	sbx_buf b = SBX_BUF_INIT(16);

	h_reset(h);
	assert_int_equal(
	    sbx_sandbox_read_file_to(&rr, h->p, g_id, "rel", count_sink, &b, NULL, NULL, &err),
	    SBX_EINVALID);
	assert_int_equal(
	    sbx_sandbox_read_file_to(&rr, h->p, g_id, "/x", NULL, &b, NULL, NULL, &err),
	    SBX_EINVALID);
	o.version = 9;
	assert_int_equal(
	    sbx_sandbox_read_file_to(&rr, h->p, g_id, "/x", count_sink, &b, &o, NULL, &err),
	    SBX_EINVALID);
	assert_int_equal(
	    sbx_sandbox_write_file_from(h->p, g_id, "/x", NULL, NULL, NULL, NULL, &err),
	    SBX_EINVALID);
	assert_int_equal(sbx_sandbox_write_file_fd(h->p, g_id, "/x", -1, NULL, NULL, &err),
	                 SBX_EINVALID);
	assert_int_equal(sbx_sandbox_read_file_fd(&rr, h->p, "bad id", "/x", 1, NULL, NULL, &err),
	                 SBX_EINVALID);
	json_t *log = h_reqlog(h);
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream__256_mib_both_ways_flat_memory),
	    cmocka_unit_test(test_stream__truncation_missing_and_permissions),
	    cmocka_unit_test(test_stream__fd_forms),
	    cmocka_unit_test(test_read_file__large_goes_raw_small_stays),
	    cmocka_unit_test(test_stream__fifo_timeout_leaves_nothing),
	    cmocka_unit_test(test_stream__fifo_abort_leaves_nothing),
	    cmocka_unit_test(test_write__failed_step_removes_staging),
	    cmocka_unit_test(test_stream__paused_behind_our_back),
	    cmocka_unit_test(test_stream__bad_arguments_send_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
