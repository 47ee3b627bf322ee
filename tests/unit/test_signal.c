/* Unit tests of contract/signal.c: the abort signal. */
#include "unit.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sandbox.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/clock.h"

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void test_signal__starts_unaborted_with_a_quiet_cloexec_fd(void **state)
{
	(void)state;
	sbx_signal *sig = NULL;
	assert_int_equal(sbx_signal_new(&sig), 0);
	assert_false(sbx_signal_aborted(sig));
	int fd = sbx_signal_fd(sig);
	assert_true(fd >= 0);
	assert_false(readable(fd, 0));
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	sbx_signal_free(sig);
}

static void test_signal__abort_is_idempotent_and_stays_readable(void **state)
{
	(void)state;
	sbx_signal *sig;
	assert_int_equal(sbx_signal_new(&sig), 0);
	sbx_signal_abort(sig);
	sbx_signal_abort(sig);
	assert_true(sbx_signal_aborted(sig));
	for (int i = 0; i < 3; i++)
		assert_true(readable(sbx_signal_fd(sig), 0));
	sbx_signal_free(sig);
}

static void test_signal__null_is_harmless(void **state)
{
	(void)state;
	assert_false(sbx_signal_aborted(NULL));
	assert_int_equal(sbx_signal_fd(NULL), -1);
	sbx_signal_abort(NULL);
	sbx_signal_free(NULL);
	assert_int_equal(sbx_signal_new(NULL), SBX_EINVALID);
}

static void test_signal__oom_is_reported(void **state)
{
	(void)state;
	sbx_signal *sig = (sbx_signal *)1;
	sbx__alloc_fail_after(0);
	assert_int_equal(sbx_signal_new(&sig), SBX_ENOMEM);
	sbx__alloc_fail_after(-1);
	assert_null(sig);
}

struct aborter {
	sbx_signal *sig;
	uint64_t aborted_at;
};

static void *abort_later(void *arg)
{
	struct aborter *a = arg;
	struct timespec ts = {0, 30 * 1000 * 1000};
	nanosleep(&ts, NULL);
	a->aborted_at = sbx__now_ms();
	sbx_signal_abort(a->sig);
	return NULL;
}

static void test_signal__abort_from_another_thread_wakes_poll_within_50ms(void **state)
{
	(void)state;
	struct aborter a = {0};
	pthread_t t;
	assert_int_equal(sbx_signal_new(&a.sig), 0);
	assert_int_equal(pthread_create(&t, NULL, abort_later, &a), 0);
	assert_true(readable(sbx_signal_fd(a.sig), 10000));
	uint64_t woke = sbx__now_ms();
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(sbx_signal_aborted(a.sig));
	assert_true(woke - a.aborted_at < 50);
	sbx_signal_free(a.sig);
}

static sbx_signal *handler_sig;

static void on_usr1(int signo)
{
	(void)signo;
	sbx_signal_abort(handler_sig);
}

static void test_signal__abort_from_a_signal_handler(void **state)
{
	(void)state;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sbx_signal_new(&handler_sig), 0);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	assert_true(sbx_signal_aborted(handler_sig));
	assert_true(readable(sbx_signal_fd(handler_sig), 0));
	sbx_signal_free(handler_sig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_signal__starts_unaborted_with_a_quiet_cloexec_fd),
	    cmocka_unit_test(test_signal__abort_is_idempotent_and_stays_readable),
	    cmocka_unit_test(test_signal__null_is_harmless),
	    cmocka_unit_test(test_signal__oom_is_reported),
	    cmocka_unit_test(test_signal__abort_from_another_thread_wakes_poll_within_50ms),
	    cmocka_unit_test(test_signal__abort_from_a_signal_handler),
	};
	return cmocka_run_group_tests_name("signal", tests, NULL, NULL);
}
