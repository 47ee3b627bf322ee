/*
 * tests/integration/harness.c: see harness.h. Knows fake-e2b's command line
 * and admin API (fake-e2b/README.md); knows nothing of the library's insides.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#define LISTEN_PREFIX    "fake-e2b listening on "
#define START_TIMEOUT_MS 20000
#define STOP_TIMEOUT_MS  10000

uint64_t h_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void h_name(char *out, size_t outlen, const char *prefix)
{
	static int counter;
	snprintf(out, outlen, "%s-%d-%d", prefix, (int)getpid(),
	         __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST));
}

/* ---- server ---- */

static char *slurp(const char *path, size_t *len_out)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	return buf;
}

static int listening_port(const h_server *s)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/out.log", s->dir);
	char *text = slurp(path, NULL);
	int port = 0;
	if (text) {
		char *at = strstr(text, LISTEN_PREFIX);
		at = at ? strstr(at, "://127.0.0.1:") : NULL;
		if (at)
			port = (int)strtol(at + strlen("://127.0.0.1:"), NULL, 10);
		free(text);
	}
	return port;
}

static void dump_output(const h_server *s)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/out.log", s->dir);
	char *text = slurp(path, NULL);
	fprintf(stderr, "---- fake-e2b output ----\n%s\n----\n", text ? text : "(none)");
	free(text);
}

int h_server_start(h_server *s)
{
	const char *bin = getenv("FAKE_E2B_BIN");
	memset(s, 0, sizeof(*s));
	s->pid = -1;
	if (!bin || !*bin) {
		fprintf(stderr, "harness: FAKE_E2B_BIN is not set\n");
		return -1;
	}
	snprintf(s->dir, sizeof(s->dir), "/tmp/sbx-itest-XXXXXX");
	if (!mkdtemp(s->dir)) {
		fprintf(stderr, "harness: mkdtemp failed\n");
		return -1;
	}
	char state[300], portfile[300], out[300];
	snprintf(state, sizeof(state), "%s/state", s->dir);
	snprintf(portfile, sizeof(portfile), "%s/port", s->dir);
	snprintf(out, sizeof(out), "%s/out.log", s->dir);
	mkdir(state, 0700);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* $ITEST_FAKE_E2B_ARG: one extra server flag for a whole test file (e.g. --legacy-routes)
	 */
	const char *extra = getenv("ITEST_FAKE_E2B_ARG"), *tls = getenv("ITEST_TLS");
	s->tls = tls && *tls && strcmp(tls, "0") != 0;
	snprintf(s->ca, sizeof(s->ca), "%s/ca.pem", state);
	/* --ephemeral: a test's temporary state dir keeps nothing (README "What survives what") */
	/* $ITEST_SANDBOX_DISK_MB (default 64): each sandbox's disk is reserved whole on the state
	 * dir's file system (fake-e2b README "Disk cap"), so a test file that holds 101 sandboxes
	 * (paging) or moves 256 MiB files (file_stream) says what it needs */
	const char *disk = getenv("ITEST_SANDBOX_DISK_MB");
	char *argv[15] = {(char *)bin,
	                  "--port",
	                  "0",
	                  "--state-dir",
	                  state,
	                  "--ephemeral",
	                  "--port-file",
	                  portfile,
	                  "--api-key",
	                  H_API_KEY,
	                  "--sandbox-disk-mb",
	                  (char *)(disk && *disk ? disk : "64")};
	int argc = 12;
	if (s->tls)
		argv[argc++] = "--tls";
	if (extra && *extra)
		argv[argc++] = (char *)extra;
	argv[argc] = NULL;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fd);
		return -1;
	}
	if (pid == 0) {
		/* the server dies with the test, even when the test crashes */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		setpgid(0, 0);
		execv(bin, argv);
		_exit(127);
	}
	close(fd);
	s->pid = pid;
	/* ITEST_START_TIMEOUT_MS: longer, for a server under emulation (tests/vm/v2-checks.sh) */
	const char *st_env = getenv("ITEST_START_TIMEOUT_MS");
	int start_ms = st_env && atoi(st_env) > 0 ? atoi(st_env) : START_TIMEOUT_MS;
	uint64_t deadline = h_now_ms() + (uint64_t)start_ms;
	while (h_now_ms() < deadline) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			s->pid = -1;
			fprintf(stderr, "harness: fake-e2b exited before listening\n");
			dump_output(s);
			return -1;
		}
		if ((s->port = listening_port(s)) > 0) {
			snprintf(s->url, sizeof(s->url), "%s://127.0.0.1:%d",
			         s->tls ? "https" : "http", s->port);
			return 0;
		}
		sleep_ms(20);
	}
	fprintf(stderr, "harness: fake-e2b did not print its listening line in %d ms\n", start_ms);
	dump_output(s);
	h_server_stop(s);
	return -1;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void h_server_stop(h_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		uint64_t deadline = h_now_ms() + STOP_TIMEOUT_MS;
		int st;
		pid_t r;
		while ((r = waitpid(s->pid, &st, WNOHANG)) == 0 && h_now_ms() < deadline)
			sleep_ms(10);
		if (r == 0) {
			fprintf(stderr, "harness: fake-e2b ignored SIGTERM for %d ms; killing it\n",
			        STOP_TIMEOUT_MS);
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
		}
		s->pid = -1;
	}
	if (s->dir[0] && !getenv("ITEST_KEEP")) {
		/* FTW_MOUNT: never descend into anything mounted inside the state dir */
		nftw(s->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		s->dir[0] = '\0';
	}
}

/* ---- collector ---- */

static void add_line(h_ctx *h, sbx_log_level level, char *text)
{
	pthread_mutex_lock(&h->mu);
	if (h->nlines == h->caplines) {
		h->caplines = h->caplines ? h->caplines * 2 : 64;
		h->lines = realloc(h->lines, h->caplines * sizeof(*h->lines));
		if (!h->lines)
			abort();
	}
	h->lines[h->nlines].level = level;
	h->lines[h->nlines].text = text;
	h->nlines++;
	pthread_mutex_unlock(&h->mu);
}

static void collect(sbx_log_level level, const char *message, const sbx_log_field *fields,
                    size_t nfields, void *payload)
{
	h_ctx *h = payload;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fputs(message ? message : "(null)", f);
	for (size_t i = 0; i < nfields; i++)
		fprintf(f, " %s=%s", fields[i].key ? fields[i].key : "(null)",
		        fields[i].value ? fields[i].value : "(null)");
	fclose(f);
	if (getenv("ITEST_VERBOSE"))
		fprintf(stderr, "[log %s] %s\n", sbx_log_level_name(level), text);
	add_line(h, level, text);
}

void h_note_err(h_ctx *h, const sbx_error *err)
{
	if (!err || !err->code)
		return;
	char *text = NULL;
	if (asprintf(&text, "error %s %d %s: %s", sbx_error_code_name(err->code), err->http_status,
	             err->e2b_code, err->message) < 0)
		abort();
	add_line(h, (sbx_log_level)-1, text);
}

size_t h_log_count(h_ctx *h, sbx_log_level level, const char *needle)
{
	size_t n = 0;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < h->nlines; i++)
		if (h->lines[i].level == level && strstr(h->lines[i].text, needle))
			n++;
	pthread_mutex_unlock(&h->mu);
	return n;
}

size_t h_log_mark(h_ctx *h)
{
	pthread_mutex_lock(&h->mu);
	size_t n = h->nlines;
	pthread_mutex_unlock(&h->mu);
	return n;
}

long long h_log_max_field(h_ctx *h, size_t since, const char *message, const char *key)
{
	long long max = -1;
	size_t mlen = strlen(message), klen = strlen(key);
	pthread_mutex_lock(&h->mu);
	for (size_t i = since; i < h->nlines; i++) {
		const char *t = h->lines[i].text, *f;
		if (h->lines[i].level != SBX_LOG_DEBUG || strncmp(t, message, mlen) != 0 ||
		    t[mlen] != ' ')
			continue;
		for (f = strstr(t + mlen, " "); f; f = strstr(f + 1, " "))
			if (strncmp(f + 1, key, klen) == 0 && f[1 + klen] == '=') {
				long long v = strtoll(f + 2 + klen, NULL, 10);
				if (v > max)
					max = v;
				break;
			}
	}
	pthread_mutex_unlock(&h->mu);
	return max;
}

static void add_secret(h_ctx *h, const char *tok)
{
	for (size_t i = 0; i < h->nsecrets; i++)
		if (strcmp(h->secrets[i], tok) == 0)
			return;
	h->secrets = realloc(h->secrets, (h->nsecrets + 1) * sizeof(*h->secrets));
	if (!h->secrets)
		abort();
	h->secrets[h->nsecrets++] = strdup(tok);
}

void h_assert_secret_free(h_ctx *h)
{
	size_t leaks = 0;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < h->nlines; i++) {
		const char *t = h->lines[i].text;
		if (strstr(t, H_API_KEY) || strstr(t, "e2b_itest0secret")) {
			fprintf(stderr, "LEAK of the API key in: %.200s\n", t);
			leaks++;
		}
		for (size_t k = 0; k < h->nsecrets; k++)
			if (strlen(h->secrets[k]) >= 8 && strstr(t, h->secrets[k])) {
				fprintf(stderr, "LEAK of an envd token in a log line or error\n");
				leaks++;
			}
	}
	pthread_mutex_unlock(&h->mu);
	assert_int_equal(leaks, 0);
}

/* ---- context ---- */

h_ctx *h_ctx_new(void)
{
	h_ctx *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	pthread_mutex_init(&h->mu, NULL);
	if (h_server_start(&h->srv) < 0) {
		free(h);
		return NULL;
	}
	h->p = h_provider_new(h, NULL, NULL);
	if (!h->p) {
		h_server_stop(&h->srv);
		free(h);
		return NULL;
	}
	return h;
}

void h_ctx_free(h_ctx *h)
{
	if (!h)
		return;
	if (h->srv.pid > 0)
		h_learn_tokens(h);
	size_t leaks = 0;
	for (size_t i = 0; i < h->nlines; i++) {
		const char *t = h->lines[i].text;
		if (strstr(t, H_API_KEY))
			leaks++;
		for (size_t k = 0; k < h->nsecrets; k++)
			if (strlen(h->secrets[k]) >= 8 && strstr(t, h->secrets[k]))
				leaks++;
	}
	if (leaks)
		fprintf(stderr, "harness: %zu secret leak(s) in log lines or errors\n", leaks);
	sbx_provider_free(h->p);
	h_server_stop(&h->srv);
	for (size_t i = 0; i < h->nlines; i++)
		free(h->lines[i].text);
	free(h->lines);
	for (size_t i = 0; i < h->nsecrets; i++)
		free(h->secrets[i]);
	free(h->secrets);
	pthread_mutex_destroy(&h->mu);
	free(h);
	if (leaks)
		fail_msg("secrets leaked into logs or errors");
}

int h_group_setup(void **state)
{
	sbx_global_init();
	h_ctx *h = h_ctx_new();
	*state = h;
	return h ? 0 : -1;
}

int h_group_teardown(void **state)
{
	h_ctx_free(*state);
	*state = NULL;
	return 0;
}

sbx_provider *h_provider_new(h_ctx *h, const char *extra_cfg, const char *url)
{
	const char *u = url ? url : h->srv.url;
	int production = h->srv.tls && !url; /* E2B's own addresses, through TLS */
	char json[1024], connect_to[64];
	if (production)
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"" H_API_KEY
		         "\",\"template\":\"capybara-sandbox\",\"domain\":"
		         "\"e2b.localhost\"%s%s}",
		         extra_cfg ? "," : "", extra_cfg ? extra_cfg : "");
	else
		snprintf(json, sizeof(json),
		         "{\"apiKey\":\"" H_API_KEY
		         "\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"%s\"%s%s}",
		         u, extra_cfg ? "," : "", extra_cfg ? extra_cfg : "");
	sbx_error err = {0};
	sbx_e2b_config *cfg = NULL;
	if (sbx_e2b_config_parse(&cfg, json, strlen(json), &err) < 0) {
		fprintf(stderr, "harness: config rejected: %s\n", err.message);
		return NULL;
	}
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	opts.envd_url = production ? NULL : u;
	if (h->srv.tls) {
		snprintf(connect_to, sizeof(connect_to), "::127.0.0.1:%d", h->srv.port);
		opts.tls_ca_file = h->srv.ca;
		opts.connect_to = production ? connect_to : NULL;
	}
	opts.logger.fn = collect;
	opts.logger.payload = h;
	sbx_provider *p = NULL;
	if (sbx_e2b_provider_new(&p, cfg, &opts, &err) < 0) {
		fprintf(stderr, "harness: provider_new failed: %s\n", err.message);
		p = NULL;
	}
	sbx_e2b_config_free(cfg);
	return p;
}

/* ---- HTTP to the fake ---- */

typedef struct membuf {
	char *ptr;
	size_t len;
} membuf;

static size_t on_body(char *data, size_t size, size_t n, void *payload)
{
	membuf *m = payload;
	size_t add = size * n;
	m->ptr = realloc(m->ptr, m->len + add + 1);
	if (!m->ptr)
		abort();
	memcpy(m->ptr + m->len, data, add);
	m->len += add;
	m->ptr[m->len] = '\0';
	return add;
}

/* Parse a JSON document, or JSON lines into an array. */
static json_t *parse_json_or_lines(const char *text, size_t len)
{
	json_error_t jerr;
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
	if (j)
		return j;
	json_t *arr = json_array();
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n > 0) {
			json_t *e = json_loadb(p, n, JSON_DECODE_ANY, &jerr);
			if (e)
				json_array_append_new(arr, e);
		}
		p += n + 1;
	}
	return arr;
}

json_t *h_http(h_ctx *h, const char *method, const char *path, const char *body, long *status,
               const char *extra_header)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s%s", h->srv.url, path);
	CURL *c = curl_easy_init();
	membuf m = {NULL, 0};
	struct curl_slist *hdr = NULL;
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	if (h->srv.tls)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->srv.ca);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	hdr = curl_slist_append(hdr, "X-API-Key: " H_API_KEY);
	if (extra_header) {
		char *copy = strdup(extra_header), *save = NULL;
		for (char *line = strtok_r(copy, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			hdr = curl_slist_append(hdr, line);
		free(copy);
	}
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	CURLcode rc = curl_easy_perform(c);
	long st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (status)
		*status = rc == CURLE_OK ? st : -1;
	json_t *j = NULL;
	if (m.ptr && m.len)
		j = parse_json_or_lines(m.ptr, m.len);
	free(m.ptr);
	return j;
}

/* Admin routes (fake-e2b/README.md). */
#define ADMIN_REQUESTS  "/_fake/requests"
#define ADMIN_FAULTS    "/_fake/faults"
#define ADMIN_SANDBOXES "/_fake/sandboxes"

static json_t *reqlog_once(h_ctx *h)
{
	long st = 0;
	json_t *j = h_http(h, "GET", ADMIN_REQUESTS, NULL, &st, NULL);
	assert_int_equal(st, 200);
	if (j && json_is_object(j)) {
		json_t *arr = json_object_get(j, "requests");
		if (json_is_array(arr)) {
			json_incref(arr);
			json_decref(j);
			j = arr;
		}
	}
	if (!j)
		j = json_array();
	assert_true(json_is_array(j));
	/* the admin API's own requests are not the library's */
	size_t i = 0;
	while (i < json_array_size(j)) {
		const char *p = h_entry_path(json_array_get(j, i));
		if (p && strncmp(p, "/_fake", 6) == 0)
			json_array_remove(j, i);
		else
			i++;
	}
	return j;
}

/*
 * fake-e2b logs a request when the response is complete on its side, which
 * can be just after the client has read it: read until two reads 100 ms apart
 * agree.
 */
json_t *h_reqlog(h_ctx *h)
{
	json_t *prev = reqlog_once(h);
	for (int i = 0; i < 40; i++) {
		usleep(100 * 1000);
		json_t *cur = reqlog_once(h);
		bool same = json_array_size(cur) == json_array_size(prev);
		json_decref(prev);
		prev = cur;
		if (same)
			break;
	}
	return prev;
}

void h_reqlog_clear(h_ctx *h)
{
	long st = 0;
	json_decref(h_http(h, "DELETE", ADMIN_REQUESTS, NULL, &st, NULL));
	assert_true(st >= 200 && st < 300);
}

void h_fault(h_ctx *h, const char *fault_json)
{
	long st = 0;
	json_decref(h_http(h, "POST", ADMIN_FAULTS, fault_json, &st, NULL));
	if (st < 200 || st >= 300)
		fail_msg("fake-e2b refused fault %s (HTTP %ld)", fault_json, st);
}

void h_faults_clear(h_ctx *h)
{
	long st = 0;
	json_decref(h_http(h, "DELETE", ADMIN_FAULTS, NULL, &st, NULL));
	assert_true(st >= 200 && st < 300);
}

char *h_token_of(h_ctx *h, const char *id)
{
	char path[256];
	long st = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	json_t *j = h_http(h, "GET", path, NULL, &st, NULL);
	const char *tok = json_string_value(json_object_get(j, "envdAccessToken"));
	char *out = tok && *tok ? strdup(tok) : NULL;
	json_decref(j);
	return out;
}

void h_learn_tokens(h_ctx *h)
{
	long st = 0;
	json_t *arr = h_http(h, "GET", ADMIN_SANDBOXES, NULL, &st, NULL);
	size_t i;
	json_t *sb;
	if (st == 200 && json_is_array(arr)) {
		json_array_foreach(arr, i, sb)
		{
			const char *id = json_string_value(json_object_get(sb, "sandboxID"));
			char *tok = id ? h_token_of(h, id) : NULL;
			if (tok)
				add_secret(h, tok);
			free(tok);
		}
	}
	json_decref(arr);
}

void h_learn_token(h_ctx *h, const char *id)
{
	char *tok = h_token_of(h, id);
	if (tok)
		h_add_secret(h, tok);
	free(tok);
}

void h_add_secret(h_ctx *h, const char *tok)
{
	pthread_mutex_lock(&h->mu);
	add_secret(h, tok);
	pthread_mutex_unlock(&h->mu);
}

void h_fault_status(h_ctx *h, const char *method, const char *path, int status, const char *body,
                    int times)
{
	json_t *f = json_pack("{s:s, s:s, s:i, s:i}", "method", method ? method : "*", "path", path,
	                      "status", status, "times", times);
	if (body)
		json_object_set_new(f, "body", json_string(body));
	char *text = json_dumps(f, JSON_COMPACT);
	h_fault(h, text);
	free(text);
	json_decref(f);
}

void h_fault_kind(h_ctx *h, const char *method, const char *path, const char *kind, int times)
{
	json_t *f = json_pack("{s:s, s:s, s:s, s:i}", "method", method ? method : "*", "path", path,
	                      "kind", kind, "times", times);
	char *text = json_dumps(f, JSON_COMPACT);
	h_fault(h, text);
	free(text);
	json_decref(f);
}

void h_reset(h_ctx *h)
{
	h_faults_clear(h);
	h_reqlog_clear(h);
}

size_t h_count_envd(json_t *log)
{
	size_t n = 0, i;
	json_t *e;
	json_array_foreach(log, i, e)
	{
		const char *p = h_entry_path(e);
		if (p && (strncmp(p, "/process.", 9) == 0 || strncmp(p, "/filesystem.", 12) == 0 ||
		          strncmp(p, "/files", 6) == 0 || strncmp(p, "/health", 7) == 0))
			n++;
	}
	return n;
}

/* ---- request log entries ---- */

static const char *str_of(json_t *e, const char *k1, const char *k2)
{
	const char *s = json_string_value(json_object_get(e, k1));
	if (!s && k2)
		s = json_string_value(json_object_get(e, k2));
	return s;
}

const char *h_entry_method(json_t *e)
{
	return str_of(e, "method", NULL);
}

const char *h_entry_path(json_t *e)
{
	return str_of(e, "path", "url");
}

const char *h_entry_query(json_t *e, const char *key)
{
	return json_string_value(json_object_get(json_object_get(e, "query"), key));
}

int h_entry_status(json_t *e)
{
	return (int)json_integer_value(json_object_get(e, "status"));
}

json_t *h_entry_json(json_t *e)
{
	json_t *b = json_object_get(e, "body");
	return b ? json_incref(b) : NULL;
}

static bool entry_matches(json_t *e, const char *method, const char *prefix)
{
	const char *m = h_entry_method(e), *p = h_entry_path(e);
	if (method && (!m || strcmp(m, method) != 0))
		return false;
	if (prefix) {
		size_t n = strlen(prefix);
		bool exact = n > 0 && prefix[n - 1] == '$';
		if (!p || strncmp(p, prefix, exact ? n - 1 : n) != 0 || (exact && p[n - 1] != '\0'))
			return false;
	}
	return true;
}

size_t h_count(json_t *log, const char *method, const char *prefix)
{
	size_t n = 0, i;
	json_t *e;
	json_array_foreach(log, i, e) if (entry_matches(e, method, prefix)) n++;
	return n;
}

void h_wait_requests(h_ctx *h, const char *method, const char *prefix, size_t n, uint64_t guard_ms)
{
	uint64_t deadline = h_now_ms() + guard_ms;

	for (;;) {
		json_t *log = reqlog_once(h);
		size_t got = h_count(log, method, prefix);
		json_decref(log);
		if (got >= n)
			return;
		assert_true(h_now_ms() < deadline);
		usleep(20 * 1000);
	}
}

json_t *h_find(json_t *log, const char *method, const char *prefix, size_t n)
{
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e)
	{
		if (entry_matches(e, method, prefix) && n-- == 0)
			return e;
	}
	return NULL;
}

/* ---- fake-e2b state ---- */

/* Create a sandbox behind the provider's back (libcurl), named `name` in metadata. */
char *h_raw_create(h_ctx *h, const char *name)
{
	char body[512];
	long st = 0;
	snprintf(body, sizeof(body),
	         "{\"templateID\":\"capybara-sandbox\",\"timeout\":900,\"metadata\":{\"capybara-"
	         "sandbox-name\":"
	         "\"%s\"}}",
	         name);
	json_t *j = h_http(h, "POST", "/v2/sandboxes", body, &st, NULL);
	assert_int_equal(st, 201);
	const char *id = json_string_value(json_object_get(j, "sandboxID"));
	const char *tok = json_string_value(json_object_get(j, "envdAccessToken"));
	assert_non_null(id);
	if (tok)
		h_add_secret(h, tok);
	char *out = strdup(id);
	json_decref(j);
	return out;
}

/* State of a sandbox in fake-e2b ("running", "paused"), or NULL when it does not exist. */
char *h_fake_state(h_ctx *h, const char *id)
{
	long st = 0;
	json_t *arr = h_http(h, "GET", "/_fake/sandboxes", NULL, &st, NULL);
	size_t i;
	json_t *sb;
	char *out = NULL;
	assert_int_equal(st, 200);
	json_array_foreach(arr, i, sb)
	{
		if (strcmp(json_string_value(json_object_get(sb, "sandboxID")), id) == 0)
			out = strdup(json_string_value(json_object_get(sb, "state")));
	}
	json_decref(arr);
	return out;
}

/* Number of sandboxes fake-e2b holds with metadata capybara-sandbox-name = name. */
size_t h_fake_count_named(h_ctx *h, const char *name)
{
	long st = 0;
	json_t *arr = h_http(h, "GET", "/_fake/sandboxes", NULL, &st, NULL);
	size_t i, n = 0;
	json_t *sb;
	json_array_foreach(arr, i, sb)
	{
		const char *v = json_string_value(
		    json_object_get(json_object_get(sb, "metadata"), "capybara-sandbox-name"));
		if (v && strcmp(v, name) == 0)
			n++;
	}
	json_decref(arr);
	return n;
}

/* ---- contract helpers ---- */

sbx_limits h_limits(sbx_egress egress)
{
	sbx_limits l = {1, 2048, 10240, egress, NULL, 0};
	return l;
}

char *h_create(h_ctx *h, sbx_provider *p, const char *name)
{
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	char *id = NULL;
	int rc = sbx_sandbox_create(&id, p ? p : h->p, name, &l, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("create %s: %s (%s)", name, sbx_error_code_name(rc), err.message);
	assert_non_null(id);
	h_learn_token(h, id);
	return id;
}

int h_exec_opts(h_ctx *h, sbx_exec_result *out, const char *id, const char *cmd,
                const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_exec_options def = SBX_EXEC_OPTIONS_INIT;
	int rc = sbx_sandbox_exec(out, h->p, id, cmd, opts ? opts : &def, sig, err);
	h_note_err(h, err);
	return rc;
}

void h_exec(h_ctx *h, sbx_exec_result *out, const char *id, const char *cmd)
{
	sbx_error err = {0};
	int rc = h_exec_opts(h, out, id, cmd, NULL, NULL, &err);
	if (rc != 0)
		fail_msg("exec %s: %s (%s)", cmd, sbx_error_code_name(rc), err.message);
}

char *h_sh(h_ctx *h, const char *id, const char *cmd)
{
	sbx_exec_result r;
	h_exec(h, &r, id, cmd);
	if (!r.has_exit_code || r.exit_code != 0)
		fail_msg("exec %s: exit %d (has %d) stderr %.*s", cmd, r.exit_code, r.has_exit_code,
		         (int)r.stderr_len, (const char *)r.stderr_data);
	char *s = strndup((const char *)r.stdout_data, r.stdout_len);
	sbx_exec_result_free(&r);
	return s;
}

int h_group_setup_sandbox(void **state, const char *prefix, char **id_out)
{
	char name[64];
	sbx_error err = {0};
	h_ctx *h;

	if (h_group_setup(state) < 0)
		return -1;
	h = *state;
	h_name(name, sizeof(name), prefix);
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	if (sbx_sandbox_create(id_out, h->p, name, &l, NULL, &err) < 0) {
		fprintf(stderr, "create failed: %s\n", err.message);
		return -1;
	}
	h_learn_token(h, *id_out);
	return 0;
}

int h_group_teardown_sandbox(void **state, char **id)
{
	h_ctx *h = *state;

	if (h && *id)
		sbx_sandbox_destroy(h->p, *id, NULL, NULL);
	sbx_free(*id);
	*id = NULL;
	return h_group_teardown(state);
}

void *h_abort_later(void *h_aborter_arg)
{
	h_aborter *a = h_aborter_arg;
	usleep(a->delay_ms * 1000u);
	a->at = h_now_ms();
	sbx_signal_abort(a->sig);
	return NULL;
}

typedef struct resume_call {
	h_ctx *h;
	const char *id;
	sbx_signal *sig;
	int rc;
	uint64_t done; /* when resume returned */
	sbx_error err;
} resume_call;

static void *resume_call_run(void *arg)
{
	resume_call *c = arg;
	sbx_resume_status rs;
	c->rc = sbx_sandbox_resume(&rs, c->h->p, c->id, c->sig, &c->err);
	c->done = h_now_ms();
	return NULL;
}

void h_assert_resume_aborts_promptly(h_ctx *h, const char *id, void (*arm)(h_ctx *),
                                     void (*wait_in)(h_ctx *), const char *what)
{
	uint64_t best = UINT64_MAX, plain = UINT64_MAX;
	int rcs[3];

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = h_now_ms();
		free(h_sh(h, id, "true"));
		uint64_t took = h_now_ms() - t0;
		plain = took < plain ? took : plain;
		h_reset(h);
		arm(h);
		resume_call c = {h, id, NULL, 0, 0, {0}};
		assert_int_equal(sbx_signal_new(&c.sig), 0);
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, resume_call_run, &c), 0);
		wait_in(h);
		uint64_t at = h_now_ms();
		sbx_signal_abort(c.sig);
		pthread_join(t, NULL);
		sbx_signal_free(c.sig);
		h_note_err(h, &c.err);
		h_faults_clear(h);
		rcs[i] = c.rc;
		best = c.done - at < best ? c.done - at : best;
		print_message("%s returned %llu ms after the abort (plain exec %llu ms)\n", what,
		              (unsigned long long)(c.done - at), (unsigned long long)took);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(rcs[i], SBX_EABORTED);
	uint64_t bound = 3 * plain > 250 ? 3 * plain : 250;
	print_message("best abort %llu ms, bound %llu ms\n", (unsigned long long)best,
	              (unsigned long long)bound);
	assert_true(best < bound);
}
