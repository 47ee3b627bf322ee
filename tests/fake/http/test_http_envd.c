/*
 * tests/fake/http/test_http_envd.c — envd over HTTP: health, token and 502, a dead PID 1, auto
 * resume on traffic, Start stream framing, signals, files upload/download/stat, stream faults.
 * Part of fake_http_test (main in test_http.c).
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

void test_envd__health_token_and_502(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	const char *h0[] = {"-", NULL};
	resp *r = http_raw("GET", "/health", NULL, NULL, 0, h0, NULL);
	assert_int_equal(r->status, 204);
	resp_free(r);
	const char *bad[] = {"-", e.hid, "X-Access-Token: nope", NULL};
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, bad, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 200);
	resp_free(r);
	const char *unknown[] = {"-", "E2b-Sandbox-Id: izzzzzzzzzzzzzzzzzzzz", e.htok, NULL};
	r = http_raw("POST", "/process.Process/List", "application/json", "{}", 2, unknown, NULL);
	assert_int_equal(r->status, 502);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 502);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "The sandbox was not found");
	resp_free(r);
	/* paused → 502 too */
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", e.id);
	resp_free(http("POST", path, "{}"));
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 502);
	resp_free(r);
	delete_sandbox(e.id);
}

/* Host pid of sandbox `id`'s PID 1: the server's child named fk-init in the sandbox's cgroup;
 * 0 when the server runs without isolation (no PID 1). */
static pid_t box_init_pid(const char *id)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	pid_t found = 0;
	struct dirent *de;
	char want[96];
	snprintf(want, sizeof(want), "/%s\n", id);
	while (!found && (de = readdir(d))) {
		char p[300], buf[4096];
		int ppid = 0;
		char comm[32] = "";
		snprintf(p, sizeof(p), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		int n = fscanf(f, "%*d (%31[^)]) %*c %d", comm, &ppid);
		fclose(f);
		if (n != 2 || ppid != (int)g_srv.pid || strcmp(comm, "fk-init") != 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cgroup", de->d_name);
		f = fopen(p, "r");
		size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[len] = '\0';
		if (strstr(buf, want))
			found = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return found;
}

/* A sandbox whose PID 1 dies (here killed from the host; or the OOM killer's last pick) is
 * gone, as when E2B's VM is: the API answers 404, envd's routes 502 "The sandbox was not
 * found", the list no longer has it. */
void test_envd__dead_pid1_is_sandbox_not_found(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	pid_t init = box_init_pid(e.id);
	if (init <= 0) {
		delete_sandbox(e.id);
		skip(); /* no isolation: no PID 1 */
	}
	assert_int_equal(kill(init, SIGKILL), 0);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s", e.id);
	/* the reaper notices within its 200 ms round */
	resp *r = NULL;
	int64_t until = fk_mono_ms() + 30000;
	for (;;) {
		r = http("GET", path, NULL);
		if (r->status != 200 || fk_mono_ms() > until)
			break;
		resp_free(r);
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_e2b_error(r, 404);
	char msg[128];
	snprintf(msg, sizeof(msg), "Sandbox \"%s\" doesn't exist or you don't have access to it",
	         e.id);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), msg);
	resp_free(r);
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 502);
	assert_string_equal(json_string_value(json_object_get(r->json, "sandboxId")), e.id);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 502);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "The sandbox was not found");
	resp_free(r);
	r = http("GET", "/v2/sandboxes", NULL);
	assert_int_equal(r->status, 200);
	size_t i;
	json_t *v;
	json_array_foreach(r->json, i, v)
	{
		assert_string_not_equal(json_string_value(json_object_get(v, "sandboxID")), e.id);
	}
	resp_free(r);
	r = http("DELETE", path, NULL);
	assert_e2b_error(r, 404);
	resp_free(r);
}

void test_envd__auto_resume_on_traffic(void **state)
{
	(void)state;
	envd_ctx e;
	char *id = create_sandbox("{\"templateID\":\"capybara-sandbox\",\"autoPause\":true,"
	                          "\"autoResume\":{\"enabled\":true}}");
	char *t = sandbox_token(id);
	snprintf(e.id, sizeof(e.id), "%s", id);
	snprintf(e.hid, sizeof(e.hid), "E2b-Sandbox-Id: %s", id);
	snprintf(e.htok, sizeof(e.htok), "X-Access-Token: %s", t);
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", id);
	resp *r = http("POST", path, "{}");
	assert_int_equal(r->status, 204);
	resp_free(r);
	r = rpc(&e, "process.Process/List", "{}");
	assert_int_equal(r->status, 200);
	resp_free(r);
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	r = http("GET", path, NULL);
	assert_string_equal(json_string_value(json_object_get(r->json, "state")), "running");
	assert_true(
	    json_is_true(json_object_get(json_object_get(r->json, "lifecycle"), "autoResume")));
	resp_free(r);
	delete_sandbox(id);
	free(id);
	free(t);
}

static const char *event_kind(json_t *frame)
{
	json_t *ev = json_object_get(json_object_get(frame, "msg"), "event");
	const char *k;
	json_t *v;
	json_object_foreach(ev, k, v) return k;
	return NULL;
}

void test_envd__start_stream_frames_start_data_end(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	long st;
	json_t *f =
	    stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo hi; exit 3\"]},"
	           "\"stdin\":false}",
	           &st, NULL);
	assert_int_equal(st, 200);
	size_t n = json_array_size(f);
	assert_true(n >= 4);
	assert_string_equal(event_kind(json_array_get(f, 0)), "start");
	assert_true(json_integer_value(json_object_get(
	                json_object_get(
	                    json_object_get(json_object_get(json_array_get(f, 0), "msg"), "event"),
	                    "start"),
	                "pid")) > 0);
	/* data frames concatenate to "hi\n" */
	char out[64] = "";
	for (size_t i = 1; i + 2 < n; i++) {
		json_t *d = json_object_get(
		    json_object_get(json_object_get(json_array_get(f, i), "msg"), "event"), "data");
		if (!d)
			continue;
		const char *b64 = json_string_value(json_object_get(d, "stdout"));
		unsigned char dec[64];
		int m = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)strlen(b64));
		size_t l = strlen(b64),
		       pad = (l && b64[l - 1] == '=') + (l > 1 && b64[l - 2] == '=');
		strncat(out, (char *)dec, (size_t)m - pad);
	}
	assert_string_equal(out, "hi\n");
	json_t *end = json_object_get(
	    json_object_get(json_object_get(json_array_get(f, n - 2), "msg"), "event"), "end");
	assert_non_null(end);
	assert_int_equal(json_integer_value(json_object_get(end, "exitCode")), 3);
	assert_true(json_is_true(json_object_get(end, "exited")));
	assert_string_equal(json_string_value(json_object_get(end, "status")), "exit status 3");
	json_t *last = json_array_get(f, n - 1);
	assert_int_equal(json_integer_value(json_object_get(last, "flags")), 2);
	assert_int_equal(json_object_size(json_object_get(last, "msg")), 0);
	json_decref(f);

	/* a clean exit omits exitCode */
	f = stream(&e, "process.Process/Start", "{\"process\":{\"cmd\":\"/bin/true\"}}", &st, NULL);
	n = json_array_size(f);
	end = json_object_get(
	    json_object_get(json_object_get(json_array_get(f, n - 2), "msg"), "event"), "end");
	assert_null(json_object_get(end, "exitCode"));
	assert_string_equal(json_string_value(json_object_get(end, "status")), "exit status 0");
	json_decref(f);

	/* missing cwd: HTTP 200 + end-stream error */
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/true\",\"cwd\":\"/nope\"}}", &st, NULL);
	assert_int_equal(st, 200);
	assert_int_equal(json_array_size(f), 1);
	json_t *err = json_object_get(json_object_get(json_array_get(f, 0), "msg"), "error");
	assert_string_equal(json_string_value(json_object_get(err, "code")), "invalid_argument");
	assert_string_equal(json_string_value(json_object_get(err, "message")),
	                    "cwd '/nope' does not exist");
	json_decref(f);

	/* unknown Basic user */
	f = stream(&e, "process.Process/Start", "{\"process\":{\"cmd\":\"/bin/true\"}}", &st,
	           "Authorization: Basic bm9ib2R5eHg6"); /* "nobodyxx:" */
	err = json_object_get(json_object_get(json_array_get(f, 0), "msg"), "error");
	assert_string_equal(json_string_value(json_object_get(err, "code")), "unauthenticated");
	assert_string_equal(json_string_value(json_object_get(err, "message")),
	                    "invalid username: 'nobodyxx'");
	json_decref(f);

	/* the default user is `sandbox` in /workspace */
	f = stream(
	    &e, "process.Process/Start",
	    "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo $(id -un) $(pwd)\"]}}", &st,
	    NULL);
	json_t *d = json_object_get(
	    json_object_get(json_object_get(json_array_get(f, 1), "msg"), "event"), "data");
	assert_string_equal(json_string_value(json_object_get(d, "stdout")),
	                    "c2FuZGJveCAvd29ya3NwYWNlCg=="); /* "sandbox /workspace\n" */
	json_decref(f);
	delete_sandbox(e.id);
}

void test_envd__send_signal_unknown_pid_404(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	resp *r = rpc(&e, "process.Process/SendSignal",
	              "{\"process\":{\"pid\":99999},\"signal\":\"SIGNAL_SIGKILL\"}");
	assert_int_equal(r->status, 404);
	assert_string_equal(r->ctype, "application/json");
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "process with pid 99999 not found");
	resp_free(r);
	delete_sandbox(e.id);
}

void test_envd__files_upload_download_stat(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	CURL *c = curl_easy_init();
	curl_mime *m = curl_mime_init(c);
	curl_mimepart *p = curl_mime_addpart(m);
	curl_mime_name(p, "file");
	curl_mime_filename(p, "/workspace/sub/dir/hello.txt");
	curl_mime_data(p, "hello\0world", 11);
	const char *h[] = {"-", e.hid, e.htok, NULL};
	resp *r = http_raw("POST", "/files", NULL, NULL, 0, h, m);
	curl_mime_free(m);
	curl_easy_cleanup(c);
	assert_int_equal(r->status, 200);
	assert_true(json_is_array(r->json));
	json_t *it = json_array_get(r->json, 0);
	assert_string_equal(json_string_value(json_object_get(it, "path")),
	                    "/workspace/sub/dir/hello.txt");
	assert_string_equal(json_string_value(json_object_get(it, "name")), "hello.txt");
	assert_string_equal(json_string_value(json_object_get(it, "type")), "file");
	resp_free(r);

	r = http_raw("GET", "/files?path=%2Fworkspace%2Fsub%2Fdir%2Fhello.txt", NULL, NULL, 0, h,
	             NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 11);
	assert_memory_equal(r->body, "hello\0world", 11);
	resp_free(r);

	r = http_raw("GET", "/files?path=/workspace/missing", NULL, NULL, 0, h, NULL);
	assert_e2b_error(r, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "path '/workspace/missing' does not exist");
	resp_free(r);
	r = http_raw("GET", "/files?path=/workspace", NULL, NULL, 0, h, NULL);
	assert_e2b_error(r, 400);
	resp_free(r);

	/* octet-stream with the path query */
	r = http_raw("POST", "/files?path=/tmp/raw.bin&username=root", "application/octet-stream",
	             "abc", 3, h, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);

	r = rpc(&e, "filesystem.Filesystem/Stat", "{\"path\":\"/workspace/sub/dir/hello.txt\"}");
	assert_int_equal(r->status, 200);
	json_t *entry = json_object_get(r->json, "entry");
	assert_string_equal(json_string_value(json_object_get(entry, "type")), "FILE_TYPE_FILE");
	assert_string_equal(json_string_value(json_object_get(entry, "size")), "11");
	assert_string_equal(json_string_value(json_object_get(entry, "owner")), "sandbox");
	resp_free(r);
	r = rpc(&e, "filesystem.Filesystem/Stat", "{\"path\":\"/nope\"}");
	assert_int_equal(r->status, 404);
	assert_string_equal(json_string_value(json_object_get(r->json, "code")), "not_found");
	resp_free(r);

	/* a path given twice: 400, and what the first part wrote is kept (checked before the
	 * second part opens, and so truncates, the file) */
	m = curl_mime_init(NULL);
	for (int i = 0; i < 2; i++) {
		p = curl_mime_addpart(m);
		curl_mime_name(p, "file");
		curl_mime_filename(p, i == 0 ? "/workspace/twice.txt" : "twice.txt");
		curl_mime_data(p, i == 0 ? "first" : "second", CURL_ZERO_TERMINATED);
	}
	r = http_raw("POST", "/files", NULL, NULL, 0, h, m);
	curl_mime_free(m);
	assert_e2b_error(r, 400);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")),
	                    "path '/workspace/twice.txt' was given more than once");
	resp_free(r);
	r = http_raw("GET", "/files?path=/workspace/twice.txt", NULL, NULL, 0, h, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 5);
	assert_memory_equal(r->body, "first", 5);
	resp_free(r);

	/* /etc is the box's own (an overlay on the runtime's template): writable by root, and
	 * has the user sandbox */
	r = http_raw("POST", "/files?path=/etc/fk-test.conf&username=root",
	             "application/octet-stream", "x=1", 3, h, NULL);
	assert_int_equal(r->status, 200);
	resp_free(r);
	r = http_raw("GET", "/files?path=/etc/fk-test.conf", NULL, NULL, 0, h, NULL);
	assert_int_equal(r->status, 200);
	assert_int_equal(r->len, 3);
	resp_free(r);
	r = http_raw("GET", "/files?path=/etc/passwd", NULL, NULL, 0, h, NULL);
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->body, "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"));
	resp_free(r);

	/* without the token: 401 unless signed */
	const char *noauth[] = {"-", e.hid, NULL};
	r = http_raw("GET", "/files?path=/tmp/raw.bin", NULL, NULL, 0, noauth, NULL);
	assert_e2b_error(r, 401);
	resp_free(r);
	delete_sandbox(e.id);
}

static int count_kind(json_t *frames, const char *kind)
{
	int n = 0;
	size_t i;
	json_t *f;
	json_array_foreach(frames, i, f) if (json_is_object(json_object_get(f, "msg")) &&
	                                     event_kind(f) && !strcmp(event_kind(f), kind)) n++;
	return n;
}

static int count_end_stream(json_t *frames)
{
	int n = 0;
	size_t i;
	json_t *f;
	json_array_foreach(frames, i, f) n += json_integer_value(json_object_get(f, "flags")) == 2;
	return n;
}

void test_envd__stream_faults(void **state)
{
	(void)state;
	envd_ctx e;
	envd_open(&e);
	long st;
	const char *cmd = "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo x\"]}}";
	g_allow_curl_error = 1;

	add_fault("stream_no_end"); /* events incl. end, then a clean close without end-stream */
	json_t *f = stream(&e, "process.Process/Start", cmd, &st, NULL);
	assert_int_equal(g_curl_rc, CURLE_OK);
	assert_int_equal(count_kind(f, "start"), 1);
	assert_int_equal(count_kind(f, "end"), 1);
	assert_int_equal(count_end_stream(f), 0);
	json_decref(f);

	add_fault("stream_garbage"); /* start, then a frame that is not JSON, then a broken close */
	f = stream(&e, "process.Process/Start", cmd, &st, NULL);
	assert_int_not_equal(g_curl_rc, CURLE_OK);
	assert_int_equal(json_array_size(f), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "msg")),
	                    "garbage");
	json_decref(f);

	add_fault("stream_oversize"); /* start, then a header claiming 2^31 bytes */
	f = stream(&e, "process.Process/Start", cmd, &st, NULL);
	assert_int_not_equal(g_curl_rc, CURLE_OK);
	assert_int_equal(json_array_size(f), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "msg")),
	                    "oversize");
	json_decref(f);

	add_fault("stream_keepalive_only"); /* only keepalives, at the requested interval */
	g_timeout_ms = 2600;
	f = stream(&e, "process.Process/Start", cmd, &st, "Keepalive-Ping-Interval: 1");
	assert_int_equal(g_curl_rc, CURLE_OPERATION_TIMEDOUT);
	assert_int_equal(count_kind(f, "start"), 1);
	assert_int_equal(count_kind(f, "data"), 0);
	assert_int_equal(count_kind(f, "end"), 0);
	assert_true(count_kind(f, "keepalive") >= 1);
	json_decref(f);

	/* normal stream: keepalives while idle, then the end */
	g_timeout_ms = 60000;
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"2.5\"]}}", &st,
	           "Keepalive-Ping-Interval: 1");
	assert_int_equal(g_curl_rc, CURLE_OK);
	assert_true(count_kind(f, "keepalive") >= 1);
	assert_int_equal(count_kind(f, "end"), 1);
	assert_int_equal(count_end_stream(f), 1);
	json_decref(f);

	/* Connect-Timeout-Ms: SIGKILL and end-stream deadline_exceeded */
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"30\"]}}", &st,
	           "Connect-Timeout-Ms: 500");
	assert_int_equal(g_curl_rc, CURLE_OK);
	json_t *last = json_object_get(json_array_get(f, json_array_size(f) - 1), "msg");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(last, "error"), "code")),
	    "deadline_exceeded");
	json_decref(f);

	/* ... also when the client left before the deadline */
	g_timeout_ms = 300;
	f = stream(&e, "process.Process/Start",
	           "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"31\"]}}", &st,
	           "Connect-Timeout-Ms: 1500");
	assert_int_equal(g_curl_rc, CURLE_OPERATION_TIMEDOUT);
	json_decref(f);
	g_timeout_ms = 60000;
	int gone = 0;
	for (long deadline = fk_mono_ms() + 20000; !gone && fk_mono_ms() < deadline;
	     fk_sleep_ms(100)) {
		resp *r = rpc(&e, "process.Process/List", "{}");
		gone = r->status == 200 && !strstr(r->body, "\"31\"");
		resp_free(r);
	}
	assert_true(gone);

	/* WatchDir of a missing directory: a Connect stream error, not a unary one */
	f = stream(&e, "filesystem.Filesystem/WatchDir", "{\"path\":\"/no/such/dir\"}", &st, NULL);
	assert_int_equal(st, 200);
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(json_array_get(f, 0), "msg"), "error"), "code")),
	    "not_found");
	json_decref(f);
	g_allow_curl_error = 0;
	delete_sandbox(e.id);
}
