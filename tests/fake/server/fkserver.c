/*
 * tests/fake/server/fkserver.c: see fkserver.h.
 */
#define _GNU_SOURCE
#include "fkserver.h"
#include "clock.h"
#include "connect_frame.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static void read_file(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* The server's output so far, the last sizeof(s->out) - 1 bytes of it, in s->out. */
static void read_file_tail(fks *s)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/out", s->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	if (size > (long)sizeof(s->out) - 1)
		fseek(f, size - (long)sizeof(s->out) + 1, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	size_t n = fread(s->out, 1, sizeof(s->out) - 1, f);
	s->out[n] = '\0';
	fclose(f);
}

int fks_start(fks *s, const char *bin, const char *const *flags)
{
	return fks_start_in(s, bin, NULL, flags);
}

int fks_start_in(fks *s, const char *bin, const char *state_dir, const char *const *flags)
{
	char portfile[128], out[128], sdir[128];
	const char *argv[64];
	int n = 0;
	memset(s, 0, sizeof(*s));
	s->pid = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/fk-srv-XXXXXX");
	if (!mkdtemp(s->dir))
		return -1;
	snprintf(portfile, sizeof(portfile), "%s/port", s->dir);
	snprintf(out, sizeof(out), "%s/out", s->dir);
	snprintf(sdir, sizeof(sdir), "%s/state", s->dir);
	if (state_dir)
		snprintf(sdir, sizeof(sdir), "%s", state_dir); /* "": none (its own default) */
	snprintf(s->state, sizeof(s->state), "%s", sdir);
	argv[n++] = bin;
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--port-file";
	argv[n++] = portfile;
	if (!state_dir || *state_dir) {
		argv[n++] = "--state-dir";
		argv[n++] = sdir;
	}
	if (!state_dir)
		argv[n++] = "--ephemeral"; /* its private state goes with it: nothing kept */
	for (const char *const *f = flags; f && *f && n < 62; f++) {
		argv[n++] = *f;
		if (!strcmp(*f, "--api-key") && f[1])
			snprintf(s->key, sizeof(s->key), "%s", f[1]);
	}
	argv[n] = NULL;
	pid_t parent = getpid();
	s->pid = fork();
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	for (long deadline = fk_mono_ms() + 30000; fk_mono_ms() < deadline; fk_sleep_ms(20)) {
		char text[8192];
		read_file(out, text, sizeof(text));
		char *line = strstr(text, "fake-e2b listening on ");
		char scheme[8];
		unsigned port = 0;
		if (line && sscanf(line, "fake-e2b listening on %7[a-z]://127.0.0.1:%u", scheme,
		                   &port) == 2) {
			s->port = port;
			snprintf(s->url, sizeof(s->url), "%s://127.0.0.1:%u", scheme, port);
			if (!strcmp(scheme, "https"))
				snprintf(s->cafile, sizeof(s->cafile), "%s/ca.pem", sdir);
			if (!s->key[0]) {
				char kf[160];
				snprintf(kf, sizeof(kf), "%s.api-key", portfile);
				read_file(kf, s->key, sizeof(s->key));
				s->key[strcspn(s->key, "\r\n")] = '\0';
			}
			return 0;
		}
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->exit_status = st;
			s->pid = -1;
			read_file(out, s->out, sizeof(s->out));
			fks_stop(s); /* its dir goes (its output is in s->out) */
			return -1;
		}
	}
	read_file(out, s->out, sizeof(s->out));
	fks_stop(s);
	return -1;
}

int fks_kill(fks *s)
{
	int st = 0;
	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
	s->exit_status = st;
	s->pid = -1;
	read_file_tail(s);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -1;
}

int fks_stop(fks *s)
{
	int st = 0, rc = 0;
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		long deadline = fk_mono_ms() + 30000;
		pid_t r;
		while ((r = waitpid(s->pid, &st, WNOHANG)) == 0 && fk_mono_ms() < deadline)
			fk_sleep_ms(20);
		if (r == 0) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
			rc = -1;
		}
		s->exit_status = st;
		s->pid = -1;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = -1;
		read_file_tail(s);
	}
	if (s->dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
		if (system(cmd) != 0)
			rc = -1;
		s->dir[0] = '\0';
	}
	return rc;
}

size_t fkr_write_body(char *p, size_t sz, size_t n, void *ud)
{
	fkr *r = ud;
	char *nb = realloc(r->body, r->len + sz * n + 1);
	if (!nb)
		return 0;
	memcpy(nb + r->len, p, sz * n);
	r->body = nb;
	r->len += sz * n;
	r->body[r->len] = '\0';
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	fkr *r = ud;
	size_t have = strlen(r->headers), len = sz * n;
	if (have + len < sizeof(r->headers)) {
		memcpy(r->headers + have, p, len);
		r->headers[have + len] = '\0';
	}
	return len;
}

fkr *fks_do(fks *s, const fks_call *call)
{
	fkr *r = calloc(1, sizeof(*r));
	CURL *c = curl_easy_init();
	char url[2048], resolve[512];
	struct curl_slist *res = NULL;
	if (call->host) {
		snprintf(url, sizeof(url), "%s://%s:%u%s", s->cafile[0] ? "https" : "http",
		         call->host, s->port, call->path);
		snprintf(resolve, sizeof(resolve), "%s:%u:127.0.0.1", call->host, s->port);
		res = curl_slist_append(NULL, resolve);
		curl_easy_setopt(c, CURLOPT_RESOLVE, res);
	} else {
		snprintf(url, sizeof(url), "%s%s", s->url, call->path);
	}
	if (s->cafile[0])
		curl_easy_setopt(c, CURLOPT_CAINFO, s->cafile);
	struct curl_slist *h = curl_slist_append(NULL, "Expect:");
	for (const char *const *p = call->headers; p && *p; p++)
		h = curl_slist_append(h, *p);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call->method);
	if (call->mime) {
		curl_easy_setopt(c, CURLOPT_MIMEPOST, call->mime);
	} else if (call->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, call->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)call->blen);
	} else if (!strcmp(call->method, "GET")) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fkr_write_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, call->timeout_ms ? call->timeout_ms : 60000L);
	r->curl_rc = (int)curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_slist_free_all(res);
	curl_easy_cleanup(c);
	if (r->body)
		r->json = json_loadb(r->body, r->len, JSON_DECODE_ANY, NULL);
	return r;
}

fkr *fks_req(fks *s, const char *method, const char *path, const char *const *headers,
             const void *body, size_t blen)
{
	fks_call c = {NULL, method, path, headers, body, blen, NULL, 0};
	return fks_do(s, &c);
}

fkr *fks_req_host(fks *s, const char *host, const char *method, const char *path,
                  const char *const *headers, const void *body, size_t blen)
{
	fks_call c = {host, method, path, headers, body, blen, NULL, 0};
	return fks_do(s, &c);
}

void fkr_free(fkr *r)
{
	if (!r)
		return;
	json_decref(r->json);
	free(r->body);
	free(r);
}

const char *fkr_header(const fkr *r, const char *name, char *buf, size_t cap)
{
	size_t nl = strlen(name);
	for (const char *p = r->headers; p && *p;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ')
				v++;
			size_t n = strcspn(v, "\r\n");
			snprintf(buf, cap, "%.*s", (int)n, v);
			return buf;
		}
	}
	return NULL;
}

void fks_box_create(fks *s, const char *key, const char *body, fks_box *b)
{
	char hk[256];
	snprintf(hk, sizeof(hk), "X-API-Key: %s", key);
	const char *h[] = {hk, "Content-Type: application/json", NULL};
	if (!body)
		body = "{\"templateID\":\"base\"}";
	fkr *r = fks_req(s, "POST", "/v2/sandboxes", h, body, strlen(body));
	assert_int_equal(r->status, 201);
	memset(b, 0, sizeof(*b));
	snprintf(b->id, sizeof(b->id), "%s",
	         json_string_value(json_object_get(r->json, "sandboxID")));
	snprintf(b->token, sizeof(b->token), "%s",
	         json_string_value(json_object_get(r->json, "envdAccessToken")));
	json_t *t = json_object_get(r->json, "trafficAccessToken");
	if (json_is_string(t))
		snprintf(b->traffic, sizeof(b->traffic), "%s", json_string_value(t));
	snprintf(b->hid, sizeof(b->hid), "E2b-Sandbox-Id: %s", b->id);
	snprintf(b->htok, sizeof(b->htok), "X-Access-Token: %s", b->token);
	fkr_free(r);
}

void fks_box_delete(fks *s, const char *key, fks_box *b)
{
	char path[128], hk[256];
	snprintf(hk, sizeof(hk), "X-API-Key: %s", key);
	const char *h[] = {hk, NULL};
	snprintf(path, sizeof(path), "/sandboxes/%s", b->id);
	fkr *r = fks_req(s, "DELETE", path, h, NULL, 0);
	if (r->status != 204) { /* say why: a curl error (and whether the server still runs) */
		int st = 0;
		pid_t w = waitpid(s->pid, &st, WNOHANG);
		fprintf(stderr, "DELETE %s: status %ld, curl %d, server %s (status %d)\n", path,
		        r->status, r->curl_rc, w == s->pid ? "exited" : "running", st);
	}
	assert_int_equal(r->status, 204);
	fkr_free(r);
}

bool fks_box_run(fks *s, fks_box *b, const char *line)
{
	json_t *m = json_pack("{s:{s:s,s:[s,s]}}", "process", "cmd", "/bin/sh", "args", "-c", line);
	char *js = json_dumps(m, JSON_COMPACT);
	size_t n;
	assert_non_null(js);
	unsigned char *env = connect_frame(js, strlen(js), &n);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/connect+json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	fkr *r = fks_req(s, "POST", "/process.Process/Start", h, env, n);
	assert_int_equal(r->status, 200);
	bool ok = memmem(r->body, r->len, "exit status 0", 13) != NULL;
	fkr_free(r);
	free(env);
	free(js);
	json_decref(m);
	return ok;
}

void fks_box_sh(fks *s, fks_box *b, const char *line)
{
	assert_true(fks_box_run(s, b, line));
}

const char *fks_bin_arg(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FAKE_E2B_BIN\n", argv[0]);
		return NULL;
	}
	return argv[1];
}

int fks_up(fks *s, const char *bin, const char *const *flags)
{
	if (fks_start(s, bin, flags) < 0) {
		fprintf(stderr, "fake-e2b did not start:\n%s\n", s->out);
		return -1;
	}
	return 0;
}

void fks_start_key(fks *s, const char *bin, const char *key, const char *const *extra)
{
	const char *flags[16] = {"--api-key", key, "--quiet"};
	int n = 3;
	for (; extra && *extra; extra++) {
		assert_true(n < 15);
		flags[n++] = *extra;
	}
	flags[n] = NULL;
	assert_int_equal(fks_start(s, bin, flags), 0);
}

fks_root_suite fks_root;

int fks_root_init(int argc, char **argv, const char *key, fks *srv, fks_box *box)
{
	const char *bin = fks_bin_arg(argc, argv);
	if (!bin)
		return -1;
	fks_root = (fks_root_suite){bin, key, srv, box};
	return 0;
}

int fks_root_setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	const char *flags[] = {"--api-key", fks_root.key, "--quiet", NULL};
	if (fks_up(fks_root.srv, fks_root.bin, flags) < 0)
		return -1;
	if (fks_root.box)
		fks_box_create(fks_root.srv, fks_root.key, NULL, fks_root.box);
	return 0;
}

int fks_root_teardown(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	if (fks_root.box)
		fks_box_delete(fks_root.srv, fks_root.key, fks_root.box);
	return fks_stop(fks_root.srv);
}

void fks_need_root(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: sandboxes need root\n");
		skip();
	}
}

fkr *fks_fs_call(fks *s, const fks_box *b, const char *rpc, const char *body)
{
	char path[96];
	snprintf(path, sizeof(path), "/filesystem.Filesystem/%s", rpc);
	const char *h[] = {b->hid, b->htok, "Content-Type: application/json",
	                   "Authorization: Basic cm9vdDo=", NULL};
	return fks_req(s, "POST", path, h, body, strlen(body));
}

int fks_tcp_connect(unsigned port, bool nonblock, unsigned src)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	struct sockaddr_in me = {.sin_family = AF_INET};
	me.sin_addr.s_addr = htonl(0x7f000000u | src);
	if (src && bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) {
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    !(nonblock && errno == EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

long fks_ms_until_closed(int fd, long max_ms)
{
	long t0 = fk_mono_ms();
	char buf[4096];
	for (;;) {
		long left = max_ms - (fk_mono_ms() - t0);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		if (read(fd, buf, sizeof(buf)) <= 0)
			return fk_mono_ms() - t0;
	}
}

void fks_need_fds(unsigned long n)
{
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < n)
		skip();
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

char *fks_repeat(char ch, size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, ch, n);
	s[n] = '\0';
	return s;
}

int fks_read_status(int fd, long max_ms)
{
	char buf[512];
	size_t got = 0;
	long t0 = fk_mono_ms();
	while (got < 12) {
		long left = max_ms - (fk_mono_ms() - t0);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return strncmp(buf, "HTTP/1.1 ", 9) ? 0 : atoi(buf + 9);
}

long fks_threads(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long n = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

bool fks_pid1_prepare(fks_pid1 *p, const char *bin)
{
	*p = (fks_pid1){.server = 0};
	if (geteuid() != 0 || system("unshare --pid --fork --mount-proc true 2>/dev/null") != 0)
		return false;
	snprintf(p->tmp, sizeof(p->tmp), "/var/tmp/fk-pid1-XXXXXX");
	assert_non_null(mkdtemp(p->tmp));
	snprintf(p->wrapper, sizeof(p->wrapper), "%s/pid1.sh", p->tmp);
	FILE *w = fopen(p->wrapper, "w");
	assert_non_null(w);
	fprintf(w, "#!/bin/sh\nexec unshare --pid --fork --mount-proc '%s' \"$@\"\n", bin);
	fclose(w);
	assert_int_equal(chmod(p->wrapper, 0700), 0);
	return true;
}

/* The one child of `pid` (the server under unshare --fork), 0 when none. */
static pid_t child_of(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(p, "r");
	int c = 0;
	if (f && fscanf(f, "%d", &c) != 1)
		c = 0;
	if (f)
		fclose(f);
	return (pid_t)c;
}

void fks_pid1_start(fks_pid1 *p, fks *s, const char *state_dir, const char *const *flags)
{
	assert_int_equal(fks_start_in(s, p->wrapper, state_dir, flags), 0);
	p->server = child_of(s->pid);
	assert_true(p->server > 0);
}

/* Signal `sig` to p->server and wait (30 s at most) until it is gone. */
static void pid1_end(fks_pid1 *p, int sig)
{
	if (p->server > 0)
		kill(p->server, sig);
	for (long t0 = fk_mono_ms();
	     p->server > 0 && kill(p->server, 0) == 0 && fk_mono_ms() - t0 < 30000;)
		fk_sleep_ms(20);
	p->server = 0;
}

void fks_pid1_stop(fks_pid1 *p, fks *s)
{
	pid1_end(p, SIGTERM);
	fks_stop(s);
}

void fks_pid1_kill(fks_pid1 *p)
{
	pid1_end(p, SIGKILL);
}

void fks_pid1_remove(fks_pid1 *p)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->tmp);
	assert_int_equal(system(cmd), 0);
}
