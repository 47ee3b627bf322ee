/*
 * bench/bench_c.c: the C side of the benchmark (bench/README.md). One process runs one
 * scenario once against fake-e2b through the public API (include/sandbox/)
 * and prints one JSON line of figures; bench/run.sh alternates it with the
 * Node peer (bench/node/bench.mjs) and builds the table.
 *
 *   bench_c --url URL [--admin URL] --scenario a|b|c|d|e|f|g [--count N]
 *           [--bytes N] [--cap N] [--sleep S] [--barrier]
 *
 * --barrier (b): each exec waits in the sandbox until all `count` have started
 * (a file each in /tmp/sbx-barrier), so all are in flight at once for certain
 * (bench/h2_multiplex.test.sh counts the streams per connection).
 * --url is where the library goes (API and envd; through the latency relay in
 * bench/run.sh --rtt), --admin is fake-e2b itself for its request log
 * (default: --url).
 * Figures: wall_ms (monotonic, measured phase only), cpu_ms (getrusage
 * user+sys delta over the measured phase), rss_kb (ru_maxrss: peak of the
 * whole process), server_ms / requests (sum of duration_ms and count in
 * fake-e2b's request log over the measured phase; the log is cleared just
 * before it). Setup (the sandbox the scenario runs in) is outside the phase.
 *
 * Profiling the phase alone: with BENCH_PERF_CTL and BENCH_PERF_ACK naming the
 * control and acknowledgement FIFOs of `perf record -D -1 --control
 * fifo:CTL,ACK`, the phase is bracketed by "enable" and "disable" (each waits
 * for perf's "ack"), so the profile holds the measured phase only
 * (bench/README.md "Profiling a scenario").
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sandbox/e2b.h>
#include <sandbox/sandbox.h>

#define LOG_MAX (256u * 1024u * 1024u)

typedef struct opts {
	const char *url;
	const char *admin;
	char scenario;
	long count;
	size_t bytes;
	size_t cap;
	const char *sleep_s;
	bool barrier;
} opts;

typedef struct figures {
	double wall_ms;
	double cpu_ms;
	long rss_kb;
	double server_ms;
	long requests;
	long ops;
	double ttfb_ms;
	bool skipped;
	long errors;
	char note[256];
} figures;

typedef struct bench {
	opts o;
	sbx_provider *p;
	char *id; /* the sandbox of exec / file scenarios */
	figures f;
	struct timespec t0;
	double cpu0;
} bench;

static double cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void die(const char *what, const sbx_error *e)
{
	fprintf(stderr, "bench_c: %s: %s (%s, http %d)\n", what, e ? e->message : "",
	        e ? sbx_error_code_name(e->code) : "", e ? e->http_status : 0);
	exit(1);
}

/* ---- fake-e2b request log (admin API, README "Request log") ---- */

typedef struct membuf {
	char *p;
	size_t len;
} membuf;

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
	membuf *b = ud;
	size_t add = size * n;
	if (b->len + add > LOG_MAX)
		return 0;
	char *np = realloc(b->p, b->len + add + 1);
	if (!np)
		return 0;
	memcpy(np + b->len, ptr, add);
	b->p = np;
	b->len += add;
	b->p[b->len] = 0;
	return add;
}

static int admin(const char *url, const char *method, membuf *out)
{
	char full[1024];
	snprintf(full, sizeof full, "%s/_fake/requests", url);
	CURL *c = curl_easy_init();
	if (!c)
		return -1;
	struct curl_slist *h = curl_slist_append(NULL, "X-API-Key: e2b_bench");
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	CURLcode rc = curl_easy_perform(c);
	long st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc == CURLE_OK && st < 300 ? 0 : -1;
}

static void log_clear(const char *url)
{
	membuf b = {0};
	if (admin(url, "DELETE", &b) < 0)
		fprintf(stderr, "bench_c: DELETE /_fake/requests failed\n");
	free(b.p);
}

static void log_collect(const char *url, figures *f)
{
	membuf b = {0};
	f->server_ms = -1;
	f->requests = -1;
	if (admin(url, "GET", &b) == 0) {
		json_t *a = json_loadb(b.p ? b.p : "", b.len, 0, NULL);
		if (json_is_array(a)) {
			size_t i;
			json_t *r;
			f->server_ms = 0;
			f->requests = 0;
			json_array_foreach(a, i, r)
			{
				f->server_ms +=
				    json_number_value(json_object_get(r, "duration_ms"));
				f->requests++;
			}
		}
		json_decref(a);
	}
	free(b.p);
}

/* ---- measured phase ---- */

/* tell perf record (BENCH_PERF_CTL/ACK FIFOs) to start or stop sampling; no-op without them */
static void perf_ctl(const char *cmd)
{
	const char *ctl = getenv("BENCH_PERF_CTL"), *ack = getenv("BENCH_PERF_ACK");
	char buf[16];
	FILE *c, *a;
	if (!ctl || !ack)
		return;
	if (!(c = fopen(ctl, "w")) || !(a = fopen(ack, "r")))
		die("BENCH_PERF_CTL/BENCH_PERF_ACK", NULL);
	fprintf(c, "%s\n", cmd);
	fclose(c);
	if (!fgets(buf, sizeof buf, a))
		die("perf did not acknowledge", NULL);
	fclose(a);
}

static void phase_begin(bench *b)
{
	log_clear(b->o.admin);
	perf_ctl("enable");
	b->cpu0 = cpu_ms();
	clock_gettime(CLOCK_MONOTONIC, &b->t0);
}

static void phase_end(bench *b)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	b->f.wall_ms = (t1.tv_sec - b->t0.tv_sec) * 1e3 + (t1.tv_nsec - b->t0.tv_nsec) / 1e6;
	b->f.cpu_ms = cpu_ms() - b->cpu0;
	perf_ctl("disable");
	log_collect(b->o.admin, &b->f);
}

/* ---- scenarios ---- */

static int exec_once(bench *b, const char *cmd, const char *expect, uint64_t timeout_ms, size_t cap,
                     sbx_exec_result *keep)
{
	sbx_exec_options eo = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r = {0};
	sbx_error e = {0};
	eo.timeout_ms = timeout_ms;
	eo.max_output_bytes = cap;
	if (sbx_sandbox_exec(&r, b->p, b->id, cmd, &eo, NULL, &e) < 0) {
		fprintf(stderr, "bench_c: exec: %s (%s)\n", e.message, sbx_error_code_name(e.code));
		return -1;
	}
	int ok = r.has_exit_code && r.exit_code == 0 &&
	         (!expect || (r.stdout_len == strlen(expect) &&
	                      memcmp(r.stdout_data, expect, r.stdout_len) == 0));
	if (!ok)
		fprintf(stderr, "bench_c: exec %s: exit %d (has %d), %zu bytes\n", cmd, r.exit_code,
		        r.has_exit_code, r.stdout_len);
	if (keep)
		*keep = r;
	else
		sbx_exec_result_free(&r);
	return ok ? 0 : -1;
}

static void scenario_a(bench *b)
{
	phase_begin(b);
	for (long i = 0; i < b->o.count; i++)
		if (exec_once(b, "true", "", 60000, 1024 * 1024, NULL) < 0)
			b->f.errors++;
	phase_end(b);
}

typedef struct job {
	bench *b;
	const char *cmd;
	const char *expect;
	int rc;
} job;

static void *job_main(void *arg)
{
	job *j = arg;
	j->rc = exec_once(j->b, j->cmd, j->expect, 120000, 1024 * 1024, NULL);
	return NULL;
}

/* count concurrent execs, one thread each (b and e). */
static void concurrent(bench *b, const char *cmd, const char *expect)
{
	long n = b->o.count;
	pthread_t *th = calloc((size_t)n, sizeof *th);
	job *jobs = calloc((size_t)n, sizeof *jobs);
	pthread_attr_t at;
	if (!th || !jobs)
		die("calloc", NULL);
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 512 * 1024);
	phase_begin(b);
	long started = 0;
	for (long i = 0; i < n; i++) {
		jobs[i] = (job){b, cmd, expect, -1};
		if (pthread_create(&th[i], &at, job_main, &jobs[i]) != 0)
			break;
		started++;
	}
	for (long i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		if (jobs[i].rc < 0)
			b->f.errors++;
	}
	b->f.errors += n - started;
	phase_end(b);
	pthread_attr_destroy(&at);
	free(th);
	free(jobs);
}

static void scenario_b(bench *b)
{
	char cmd[256];
	if (b->o.barrier)
		snprintf(cmd, sizeof cmd,
		         "mkdir -p /tmp/sbx-barrier && touch /tmp/sbx-barrier/$$ && "
		         "while [ $(ls /tmp/sbx-barrier | wc -l) -lt %ld ]; do sleep 0.05; done; "
		         "echo x",
		         b->o.count);
	else
		snprintf(cmd, sizeof cmd, "sleep %s; echo x", b->o.sleep_s);
	concurrent(b, cmd, "x\n");
}

static void scenario_e(bench *b)
{
	char cmd[64];
	snprintf(cmd, sizeof cmd, "sleep %s", b->o.sleep_s);
	concurrent(b, cmd, "");
}

static void scenario_c(bench *b)
{
	char cmd[128];
	sbx_exec_result r = {0};
	snprintf(cmd, sizeof cmd, "head -c %zu /dev/zero | tr '\\0' x", b->o.bytes);
	phase_begin(b);
	if (exec_once(b, cmd, NULL, 600000, b->o.cap, &r) < 0)
		b->f.errors++;
	phase_end(b);
	if (!r.truncated || r.stdout_len > b->o.cap)
		b->f.errors++;
	snprintf(b->f.note, sizeof b->f.note, "kept %zu of %zu bytes, truncated=%s", r.stdout_len,
	         b->o.bytes, r.truncated ? "true" : "false");
	sbx_exec_result_free(&r);
}

static void sha256(const void *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;
	EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

static void scenario_d(bench *b)
{
	const char *path = "/tmp/bench-d.bin";
	unsigned char *data = malloc(b->o.bytes ? b->o.bytes : 1);
	unsigned char want[32], got[32];
	sbx_file *file = NULL;
	sbx_error e = {0};
	if (!data || RAND_bytes(data, (int)b->o.bytes) != 1)
		die("random data", NULL);
	sha256(data, b->o.bytes, want);
	phase_begin(b);
	if (sbx_sandbox_write_file(b->p, b->id, path, data, b->o.bytes, NULL, &e) < 0) {
		fprintf(stderr, "bench_c: write_file: %s\n", e.message);
		b->f.errors++;
	} else if (sbx_sandbox_read_file(&file, b->p, b->id, path, b->o.bytes, NULL, &e) < 0 ||
	           !file) {
		fprintf(stderr, "bench_c: read_file: %s\n", file ? "" : e.message);
		b->f.errors++;
	} else {
		sha256(file->data, file->len, got);
		if (file->len != b->o.bytes || memcmp(want, got, 32) != 0) {
			fprintf(stderr, "bench_c: hash mismatch (%zu bytes back)\n", file->len);
			b->f.errors++;
		}
	}
	phase_end(b);
	sbx_file_free(file);
	free(data);
}

static const sbx_limits LIMITS = {1, 512, 1024, SBX_EGRESS_NONE, NULL, 0};

static void scenario_f(bench *b)
{
	phase_begin(b);
	for (long i = 0; i < b->o.count; i++) {
		char name[64], *id = NULL;
		sbx_error e = {0};
		snprintf(name, sizeof name, "bench-f-%ld-%ld", (long)getpid(), i);
		if (sbx_sandbox_create(&id, b->p, name, &LIMITS, NULL, &e) < 0) {
			fprintf(stderr, "bench_c: create: %s\n", e.message);
			b->f.errors++;
			continue;
		}
		if (sbx_sandbox_destroy(b->p, id, NULL, &e) < 0)
			b->f.errors++;
		sbx_free(id);
	}
	phase_end(b);
}

/*
 * g: streamed exec: the output through on_output as it arrives (time to the
 * first streamed byte, CPU for the whole stream). The budget covers all of it,
 * so the result keeps it too, as the SDK's does.
 */
typedef struct stream_count {
	bench *b;
	size_t n;
} stream_count;

static int on_chunk(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	stream_count *sc = payload;
	struct timespec t1;
	(void)data;
	if (stream != SBX_STREAM_STDOUT)
		return 0;
	if (sc->n == 0 && len > 0) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		sc->b->f.ttfb_ms =
		    (t1.tv_sec - sc->b->t0.tv_sec) * 1e3 + (t1.tv_nsec - sc->b->t0.tv_nsec) / 1e6;
	}
	sc->n += len;
	return 0;
}

static void scenario_g(bench *b)
{
	char cmd[128];
	sbx_exec_options eo = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r = {0};
	sbx_error e = {0};
	stream_count sc = {b, 0};
	snprintf(cmd, sizeof cmd, "head -c %zu /dev/zero | tr '\\0' x", b->o.bytes);
	eo.timeout_ms = 600000;
	eo.max_output_bytes = b->o.bytes + 1;
	eo.on_output = on_chunk;
	eo.output_payload = &sc;
	phase_begin(b);
	if (sbx_sandbox_exec(&r, b->p, b->id, cmd, &eo, NULL, &e) < 0) {
		fprintf(stderr, "bench_c: exec: %s\n", e.message);
		b->f.errors++;
	}
	phase_end(b);
	if (sc.n != b->o.bytes || r.stdout_len != b->o.bytes)
		b->f.errors++;
	snprintf(b->f.note, sizeof b->f.note, "streamed %zu of %zu bytes", sc.n, b->o.bytes);
	sbx_exec_result_free(&r);
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr, "usage: bench_c --url URL [--admin URL] --scenario a|b|c|d|e|f|g "
	                "[--count N] [--bytes N] [--cap N] [--sleep S] [--barrier]\n");
	exit(2);
}

static opts parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"url", 1, 0, 'u'},   {"admin", 1, 0, 'a'},   {"scenario", 1, 0, 's'},
	    {"count", 1, 0, 'n'}, {"bytes", 1, 0, 'b'},   {"cap", 1, 0, 'c'},
	    {"sleep", 1, 0, 'z'}, {"barrier", 0, 0, 'w'}, {0, 0, 0, 0}};
	opts o = {NULL, NULL, 0, 1, 1024, 1024 * 1024, "0.2", false};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'u':
			o.url = optarg;
			break;
		case 'a':
			o.admin = optarg;
			break;
		case 's':
			o.scenario = optarg[0];
			break;
		case 'n':
			o.count = strtol(optarg, NULL, 10);
			break;
		case 'b':
			o.bytes = strtoull(optarg, NULL, 10);
			break;
		case 'c':
			o.cap = strtoull(optarg, NULL, 10);
			break;
		case 'z':
			o.sleep_s = optarg;
			break;
		case 'w':
			o.barrier = true;
			break;
		default:
			usage();
		}
	}
	if (!o.url || !strchr("abcdefg", o.scenario) || !o.scenario || o.count < 1)
		usage();
	if (!o.admin)
		o.admin = o.url;
	return o;
}

static sbx_provider *provider_new(const char *url)
{
	char json[1024];
	sbx_e2b_config *cfg = NULL;
	sbx_e2b_options eo = SBX_E2B_OPTIONS_INIT;
	sbx_provider *p = NULL;
	sbx_error e = {0};
	snprintf(json, sizeof json,
	         "{\"apiKey\":\"e2b_bench\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"%s\"}",
	         url);
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &e) < 0)
		die("config", &e);
	eo.envd_url = url;
	if (sbx_e2b_provider_new(&p, cfg, &eo, &e) < 0)
		die("provider", &e);
	sbx_e2b_config_free(cfg);
	return p;
}

static void print_figures(const bench *b)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	char sc[2] = {b->o.scenario, 0};
	json_t *j =
	    json_pack("{s:s, s:s, s:b, s:b, s:I, s:f, s:f, s:I, s:f, s:I, s:I, s:f, s:s}", "impl",
	              "c", "scenario", sc, "ok", b->f.errors == 0, "skipped", b->f.skipped,
	              "errors", (json_int_t)b->f.errors, "wall_ms", b->f.wall_ms, "cpu_ms",
	              b->f.cpu_ms, "rss_kb", (json_int_t)ru.ru_maxrss, "server_ms", b->f.server_ms,
	              "requests", (json_int_t)b->f.requests, "ops", (json_int_t)b->f.ops, "ttfb_ms",
	              b->f.ttfb_ms, "note", b->f.note);
	char *s = json_dumps(j, JSON_COMPACT);
	printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(j);
}

int main(int argc, char **argv)
{
	bench b = {0};
	sbx_error e = {0};
	b.o = parse_args(argc, argv);
	b.f.ops = strchr("abef", b.o.scenario) ? b.o.count : 1;
	b.f.ttfb_ms = -1;
	if (sbx_global_init() < 0)
		die("init", NULL);
	b.p = provider_new(b.o.url);
	if (b.o.scenario != 'f') {
		char name[64];
		snprintf(name, sizeof name, "bench-c-%ld", (long)getpid());
		if (sbx_sandbox_create(&b.id, b.p, name, &LIMITS, NULL, &e) < 0)
			die("create", &e);
	}
	switch (b.o.scenario) {
	case 'a':
		scenario_a(&b);
		break;
	case 'b':
		scenario_b(&b);
		break;
	case 'c':
		scenario_c(&b);
		break;
	case 'd':
		scenario_d(&b);
		break;
	case 'e':
		scenario_e(&b);
		break;
	case 'f':
		scenario_f(&b);
		break;
	case 'g':
		scenario_g(&b);
		break;
	}
	if (b.id) {
		sbx_error_clear(&e);
		if (sbx_sandbox_destroy(b.p, b.id, NULL, &e) < 0)
			fprintf(stderr, "bench_c: destroy: %s\n", e.message);
		sbx_free(b.id);
	}
	print_figures(&b);
	sbx_provider_free(b.p);
	return b.f.errors == 0 ? 0 : 1;
}
