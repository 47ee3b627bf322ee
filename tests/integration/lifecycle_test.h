/*
 * tests/integration/lifecycle_test.h — what the lifecycle test program's files share: its two
 * assertions (defined in test_lifecycle.c) and the tests main lists.
 */
#ifndef SBX_ITEST_LIFECYCLE_TEST_H
#define SBX_ITEST_LIFECYCLE_TEST_H

#include "harness.h"

void assert_json_eq(json_t *got, const char *want_text);

/* The tests of the other files, which main lists. */
void test_resume__resumed_then_gone_after_destroy(void **state);
void test_suspend__twice_and_missing_are_success(void **state);
void test_destroy__missing_is_success(void **state);
void test_destroy_by_name__deletes_all_of_that_name_only(void **state);
void test_resume__409_retried_five_times(void **state);
void test_resume__six_409_fail(void **state);
void test_resume__abort_during_409_wait_returns_promptly(void **state);
void test_resume__bare_404_401_5xx_are_ordinary_errors(void **state);
void test_resume__network_error_is_ordinary_error(void **state);
void test_connect__no_token_is_gone_and_sends_no_envd_request(void **state);
void test_secrets__echoed_by_server_never_reach_errors_or_logs(void **state);
void test_gone__every_method_after_destroy(void **state);
void test_auth__wrong_api_key_is_http_401(void **state);

#endif
