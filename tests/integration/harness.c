/*
 * tests/integration/harness.c: see harness.h. Knows fake-e2b's command line
 * and admin API (fake-e2b/README.md); knows nothing of the library's insides.
 *
 * This file: the fake-e2b server (start, stop), the log collector and secrets, the test
 * context and its provider. The others: harness_fake.c (HTTP to the fake, its admin API and
 * request log, its sandboxes), harness_contract.c (the contract helpers: create, exec, group
 * setups, aborts).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "harness_int.h"

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

void add_secret(h_ctx *h, const char *tok)
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
