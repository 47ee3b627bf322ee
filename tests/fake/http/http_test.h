/*
 * tests/fake/http/http_test.h — what the fake_http_test program's files share: the server it
 * starts, the tiny HTTP client, the sandbox and envd helpers (http_support.c) and the tests
 * main lists.
 */
#ifndef FK_TEST_HTTP_TEST_H
#define FK_TEST_HTTP_TEST_H

#include "fkserver.h"

#include <curl/curl.h>
#include <jansson.h>

#include <stddef.h>

#define KEY "e2b_http_test"

typedef struct resp {
	long status;
	char *body;
	size_t len;
	json_t *json;
	char next_token[512];
	int has_next;
	char ctype[128];
} resp;

typedef struct envd_ctx {
	char id[32];
	char token[80];
	char hid[64];
	char htok[128];
} envd_ctx;

extern const char *g_bin;
extern long g_timeout_ms;
extern CURLcode g_curl_rc;
extern int g_allow_curl_error;
extern fks g_srv;
int server_start(void **state);
int server_stop(void **state);
void resp_free(resp *r);
resp *http_raw(const char *method, const char *path, const char *ctype, const void *body,
               size_t blen, const char *const *headers, curl_mime *mime);
resp *http(const char *method, const char *path, const char *json_body);
void assert_e2b_error(resp *r, long status);
char *create_sandbox(const char *body);
char *sandbox_token(const char *id);
void delete_sandbox(const char *id);
int is_hex64(const char *s);
void envd_open(envd_ctx *e);
resp *rpc(envd_ctx *e, const char *method, const char *json_body);
json_t *stream(envd_ctx *e, const char *method, const char *json_body, long *status,
               const char *extra_header);
void add_fault(const char *kind);

/* The tests of the other files, which main lists. */
void test_control__template_build_requests(void **state);
void test_control__sandbox_limits_and_alias_follow_template(void **state);
void test_control__build_log_entries_carry_step(void **state);
void test_control__template_delete_in_use_follows_base_template(void **state);
void test_control__template_references_update_and_delete(void **state);
void test_admin__fault_409_times_then_success(void **state);
void test_admin__request_log_masks_secrets(void **state);
void test_admin__request_log_arrival_order(void **state);
void test_envd__health_token_and_502(void **state);
void test_envd__dead_pid1_is_sandbox_not_found(void **state);
void test_envd__auto_resume_on_traffic(void **state);
void test_envd__start_stream_frames_start_data_end(void **state);
void test_envd__send_signal_unknown_pid_404(void **state);
void test_envd__files_upload_download_stat(void **state);
void test_envd__stream_faults(void **state);
void test_envd__kill_ignored_survives_signal_until_pause(void **state);
void test_envd__300_concurrent_streams(void **state);

#endif
