/*
 * fuzz_fake_http: fake-e2b's whole HTTP side in-process (libmicrohttpd, the
 * router, the control plane, envd, /files multipart uploads, the admin API)
 * over the stub runtime (fake_stub_runtime.c). Each input is the raw bytes a
 * client sends on one connection; "@ID@", "@TOK@" and "@KEY@" are replaced by
 * a running sandbox's id, its envd token and the API key so that inputs reach
 * past the auth checks. Nothing may crash, leak or hang (each connection is
 * read to EOF within 5 s).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "router.h"

#define KEY "e2b_fuzz_key_0123"

static fk_app g_app;
static fk_http *g_http;
static fk_http_hooks g_hooks;
static unsigned g_port;
static char g_id[FK_ID_LEN + 1], g_tok[65];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	unsigned char seed[32] = {1, 2, 3};
	fk_err err = {0};
	signal(SIGPIPE, SIG_IGN);
	if (fk_rt_new(&g_app.rt, NULL, &err) < 0 || !(g_app.faults = fk_faults_new()) ||
	    !(g_app.log = fk_reqlog_new(0)) || fk_registry_new(&g_app.reg, g_app.rt, seed) < 0 ||
	    fk_tstore_new(&g_app.templates, g_app.rt, seed, NULL) < 0) /* as fake-e2b's main.c */
		abort();
	g_app.api_key = KEY;
	g_app.quiet = 1;
	g_app.max_upload = 1 << 20;
	fk_sandbox *sb = fk_sandbox_new(g_app.reg);
	sb->secured = 1;
	sb->template_id = strdup("base");
	sb->metadata = json_object();
	sb->started_ns = 0;
	sb->end_ns = INT64_MAX / 2;
	if (fk_registry_boot(g_app.reg, sb, NULL, NULL, 0, &err) < 0)
		abort();
	memcpy(g_id, sb->id, sizeof(g_id));
	memcpy(g_tok, sb->token, sizeof(g_tok));
	fk_registry_add(g_app.reg, sb);
	g_hooks = fk_router_hooks(&g_app);
	fk_http_options o = {.host = "127.0.0.1", .port = 0};
	if (fk_http_start(&g_http, &o, &g_hooks, &g_port) < 0)
		abort();
	return 0;
}

/* Input with the placeholders replaced; caller frees. */
static char *expand(const uint8_t *data, size_t size, size_t *out_len)
{
	size_t cap = size * 4 + 256, o = 0;
	char *out = malloc(cap);
	for (size_t i = 0; i < size && out;) {
		const char *rep = NULL;
		size_t skip = 0;
		if (size - i >= 4 && !memcmp(data + i, "@ID@", 4))
			rep = g_id, skip = 4;
		else if (size - i >= 5 && !memcmp(data + i, "@TOK@", 5))
			rep = g_tok, skip = 5;
		else if (size - i >= 5 && !memcmp(data + i, "@KEY@", 5))
			rep = KEY, skip = 5;
		if (rep) {
			size_t n = strlen(rep);
			memcpy(out + o, rep, n);
			o += n;
			i += skip;
		} else {
			out[o++] = (char)data[i++];
		}
	}
	*out_len = o;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	size_t len = 0;
	char *req = expand(data, size, &len);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!req || fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char buf[65536];
		if (poll(&p, 1, 5000) <= 0)
			abort(); /* the server hangs on this input */
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 10)
			abort();
	}
	close(fd);
	free(req);
	/* the fault rules and the log an input made do not carry over */
	fk_faults_clear(g_app.faults);
	fk_reqlog_clear(g_app.log);
	return 0;
}
