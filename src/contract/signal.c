/*
 * contract/signal.c: the abort signal (docs/contract.md "Methods").
 *
 * An atomic flag answers sbx_signal_aborted() without a system call; an
 * eventfd (close-on-exec, non-blocking) lets every blocking wait watch the
 * signal in the same poll as its I/O. Abort does only an atomic exchange and
 * one write(2), both async-signal-safe, so a SIGINT handler may call it. The
 * eventfd is written once and never read, so it stays readable for good.
 */
#include <errno.h>
#include <sandbox/error.h>
#include <sandbox/signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/alloc.h"

struct sbx_signal {
	atomic_bool aborted;
	int fd;
};

int sbx_signal_new(sbx_signal **out)
{
	sbx_signal *sig;
	if (!out)
		return SBX_EINVALID;
	*out = NULL;
	if (!(sig = sbx__malloc(sizeof(*sig))))
		return SBX_ENOMEM;
	atomic_init(&sig->aborted, false);
	if ((sig->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		sbx__free(sig);
		return SBX_EINTERNAL;
	}
	*out = sig;
	return 0;
}

void sbx_signal_free(sbx_signal *sig)
{
	if (!sig)
		return;
	close(sig->fd);
	sbx__free(sig);
}

void sbx_signal_abort(sbx_signal *sig)
{
	uint64_t one = 1;
	int saved_errno;
	ssize_t n;

	if (!sig || atomic_exchange(&sig->aborted, true))
		return;      /* idempotent: only the first abort writes */
	saved_errno = errno; /* a signal handler must leave errno as it found it */
	do
		n = write(sig->fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
	errno = saved_errno;
}

bool sbx_signal_aborted(const sbx_signal *sig)
{
	return sig && atomic_load(&((sbx_signal *)sig)->aborted);
}

int sbx_signal_fd(const sbx_signal *sig)
{
	return sig ? sig->fd : -1;
}
