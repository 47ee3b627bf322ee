/*
 * tests/fake/server/floods_test.h — what the floods test program's files share: the server
 * binary, its memory read from /proc (RSS_BOUND), raw requests and bodies, a box port that
 * never answers (floods_support.c), and the tests main lists.
 */
#ifndef FK_TEST_FLOODS_TEST_H
#define FK_TEST_FLOODS_TEST_H

#include "fkserver.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The sanitizers' allocators pad every block and keep freed ones in quarantine: the server's
 * RSS under them says nothing of its own bounds, which the plain build checks (the figures are
 * printed either way). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_BOUND(cond) ((void)0)
#else
#define RSS_BOUND(cond) assert_true(cond)
#endif

#define KEY "e2b_floods_test_key"
#define MIB (1024L * 1024L)

extern const char *g_bin;
long status_kb(pid_t pid, const char *field);
void start(fks *s, const char *const *extra);
int body_begin(unsigned port, const char *path, const char *headers, const char *body, size_t total,
               size_t first);
int raw_post(unsigned port, const char *path, const char *headers, const void *body, size_t len);
char *empty_arrays(size_t n);
char *envelope(const char *json, size_t n);
json_t *request_log(fks *s);
size_t entry_bytes(json_t *e);
void box_silent_port(fks *s, fks_box *b, const char *listen, const char *then, const char *ready);
void requests_to_port_8100(fks *s, fks_box *b, int *fds, int n);
int poll_unanswered(const int *fds, const bool *answered, bool *ready, int n, int ms);
int read_head(int fd, char *buf, size_t cap, long max_ms);

/* The tests of the other files, which main lists. */
void test_floods__refused_requests_are_answered_from_their_headers(void **state);
void test_floods__stalled_bodies_from_many_addresses_do_not_starve_a_client(void **state);
void test_floods__a_stalled_body_is_cut(void **state);
void test_floods__the_port_proxy_streams_large_answers(void **state);
void test_floods__start_fields_are_bounded(void **state);
void test_floods__log_lines_are_bounded(void **state);
void test_floods__a_build_log_keeps_its_last_mib(void **state);
void test_floods__log_lines_escape_control_bytes(void **state);
void test_floods__requests_to_a_silent_box_port_are_capped(void **state);
void test_floods__the_port_proxy_streams_request_bodies(void **state);
void test_floods__clients_that_leave_free_their_slots(void **state);
void test_floods__a_client_that_leaves_a_body_frees_its_request(void **state);

#endif
