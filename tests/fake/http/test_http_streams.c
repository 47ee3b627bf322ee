/*
 * tests/fake/http/test_http_streams.c — envd streams at once (curl multi): a stream whose kill
 * is ignored (the kill_ignored fault) lives until pause; 300 concurrent streams, each with its
 * output and end. Part of
 * fake_http_test (main in test_http.c).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "connect_frame.h"
#include "fkserver.h"
#include "http_test.h"

/* ---- concurrent streams (curl multi) ----------------------------------------------------- */

typedef struct mstream {
	CURL *c;
	struct curl_slist *h;
	unsigned char *req;
	fkr r; /* body and len only */
	int done;
	CURLcode rc;
} mstream;

static void mstream_begin(CURLM *m, mstream *s, envd_ctx *e, const char *json_body)
{
	size_t n = strlen(json_body);
	memset(s, 0, sizeof(*s));
	s->req = malloc(n + 5);
	s->req[0] = 0;
	s->req[1] = (unsigned char)(n >> 24);
	s->req[2] = (unsigned char)(n >> 16);
	s->req[3] = (unsigned char)(n >> 8);
	s->req[4] = (unsigned char)n;
	memcpy(s->req + 5, json_body, n);
	s->h = curl_slist_append(s->h, e->hid);
	s->h = curl_slist_append(s->h, e->htok);
	s->h = curl_slist_append(s->h, "Content-Type: application/connect+json");
	s->h = curl_slist_append(s->h, "Keepalive-Ping-Interval: 1");
	s->h = curl_slist_append(s->h, "Expect:");
	char url[320];
	snprintf(url, sizeof(url), "%s/process.Process/Start", g_srv.url);
	s->c = curl_easy_init();
	curl_easy_setopt(s->c, CURLOPT_URL, url);
	curl_easy_setopt(s->c, CURLOPT_POSTFIELDS, s->req);
	curl_easy_setopt(s->c, CURLOPT_POSTFIELDSIZE, (long)(n + 5));
	curl_easy_setopt(s->c, CURLOPT_HTTPHEADER, s->h);
	curl_easy_setopt(s->c, CURLOPT_WRITEFUNCTION, fkr_write_body);
	curl_easy_setopt(s->c, CURLOPT_WRITEDATA, &s->r);
	curl_easy_setopt(s->c, CURLOPT_PRIVATE, s);
	curl_easy_setopt(s->c, CURLOPT_TIMEOUT, 450L);
	curl_multi_add_handle(m, s->c);
}

static void mstream_end(CURLM *m, mstream *s)
{
	curl_multi_remove_handle(m, s->c);
	curl_easy_cleanup(s->c);
	curl_slist_free_all(s->h);
	free(s->req);
	free(s->r.body);
}

/* Run the transfers for up to ms, or until `until_done` of them finished. Returns done count. */
static int multi_pump(CURLM *m, long ms, int until_done)
{
	int running = 1, done = 0;
	long deadline = fk_mono_ms() + ms;
	while (fk_mono_ms() < deadline) {
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			mstream *s;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			s->done = 1;
			s->rc = msg->data.result;
			done++;
		}
		if (until_done && done >= until_done)
			break;
		curl_multi_poll(m, NULL, 0, 50, NULL);
	}
	return done;
}

/* The first frame of a stream: {"event":{"start":{"pid":N}}}. */
static uint32_t mstream_pid(mstream *s)
{
	if (s->r.len < 5)
		return 0;
	const unsigned char *b = (const unsigned char *)s->r.body;
	size_t len = ((size_t)b[1] << 24) | ((size_t)b[2] << 16) | ((size_t)b[3] << 8) | b[4];
	if (s->r.len < 5 + len)
		return 0;
	json_t *j = json_loadb((const char *)b + 5, len, 0, NULL);
	uint32_t pid = (uint32_t)json_integer_value(
	    json_object_get(json_object_get(json_object_get(j, "event"), "start"), "pid"));
	json_decref(j);
	return pid;
}

void test_envd__kill_ignored_survives_signal_until_pause(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	add_fault("kill_ignored");
	CURLM *m = curl_multi_init();
	mstream s;
	mstream_begin(m, &s, &e, "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"60\"]}}");
	uint32_t pid = 0;
	for (long deadline = fk_mono_ms() + 20000; !pid && fk_mono_ms() < deadline;) {
		multi_pump(m, 50, 1);
		pid = mstream_pid(&s);
	}
	assert_true(pid > 0);
	char body[128];
	snprintf(body, sizeof(body), "{\"process\":{\"pid\":%u},\"signal\":\"SIGNAL_SIGKILL\"}",
	         pid);
	resp *r = rpc(&e, "process.Process/SendSignal", body);
	assert_int_equal(r->status, 200);
	assert_string_equal(r->body, "{}");
	resp_free(r);
	assert_int_equal(multi_pump(m, 1500, 1), 0); /* the stream does not end */
	assert_false(s.done);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", e.id);
	r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	assert_int_equal(multi_pump(m, 20000, 1), 1); /* pausing drops the stream */
	assert_int_not_equal(s.rc, CURLE_OK);
	mstream_end(m, &s);
	curl_multi_cleanup(m);
	delete_sandbox(e.id);
}

/* 300 streams at once, each gets its output and end; a process survives its client leaving. */
void test_envd__300_concurrent_streams(void **state)
{
	(void)state;
	enum { N = 300 };
	envd_ctx e;
	envd_open(&e);
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
	mstream *s = calloc(N, sizeof(*s));
	for (int i = 0; i < N; i++)
		mstream_begin(m, &s[i], &e,
		              "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"sleep 2; echo "
		              "ok\"]}}");
	int done = 0;
	for (long deadline = fk_mono_ms() + 400000; done < N && fk_mono_ms() < deadline;)
		done += multi_pump(m, 1000, N - done);
	/* checked after every handle is freed: a failure leaks nothing */
	int first_bad = -1, bad = 0, bad_rc = 0;
	for (int i = 0; i < N; i++) {
		/* ... "ok\n" base64 is b2sK; the last frame is end-stream {} */
		int ok = s[i].done && s[i].rc == CURLE_OK && s[i].r.len >= 7 &&
		         memmem(s[i].r.body, s[i].r.len, "b2sK", 4) &&
		         !memcmp(s[i].r.body + s[i].r.len - 7, "\x02\0\0\0\x02{}", 7);
		if (!ok && bad++ == 0) {
			first_bad = i;
			bad_rc = s[i].rc;
		}
		mstream_end(m, &s[i]);
	}
	free(s);
	if (bad) {
		curl_multi_cleanup(m);
		delete_sandbox(e.id);
		fail_msg("%d of %d streams failed (%d done); first: #%d, curl %d", bad, N, done,
		         first_bad, bad_rc);
	}

	/* client leaves: the process keeps running (it writes a file after the disconnect) */
	mstream one;
	mstream_begin(m, &one, &e,
	              "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"sleep 1; echo done > "
	              "/tmp/after\"]}}");
	for (long deadline = fk_mono_ms() + 20000; !mstream_pid(&one) && fk_mono_ms() < deadline;)
		multi_pump(m, 50, 1);
	uint32_t pid = mstream_pid(&one);
	mstream_end(m, &one);
	curl_multi_cleanup(m);
	const char *h[] = {"-", e.hid, e.htok, NULL};
	int found = 0;
	for (long deadline = fk_mono_ms() + 20000; pid && !found && fk_mono_ms() < deadline;
	     fk_sleep_ms(100)) {
		resp *r = http_raw("GET", "/files?path=/tmp/after", NULL, NULL, 0, h, NULL);
		found = r->status == 200 && r->len == 5 && !memcmp(r->body, "done\n", 5);
		resp_free(r);
	}
	delete_sandbox(e.id);
	assert_true(pid > 0);
	assert_true(found);
}
