/*
 * fake-e2b/runtime/proc.c — processes inside a box, with envd's semantics (docs/internals/wire.md
 * "Process start", "Other process RPCs"): the table of a box's processes (lookup by pid or tag,
 * signals, stdin, terminal size, the listing, box-wide stops). A process starts in proc_spawn.c;
 * its references, subscribers and output pump are proc_pump.c (proc_int.h).
 */
#define _GNU_SOURCE
#include "backend.h"
#include "boxfs.h"
#include "clock.h"
#include "linux/caps.h"
#include "proc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ lookup, signals, stdin */

static int find(fk_rt *rt, const char *box_id, uint32_t pid, const char *tag, bool live_only,
                fk_proc **out, fk_err *err)
{
	*out = NULL;
	fk_box *b = fk__box_get(rt, box_id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", box_id);
	fk_proc *found = NULL, *dead = NULL;
	pthread_mutex_lock(&b->plock);
	fk__proc_purge_retained(b, &dead);
	for (fk_proc *q = b->procs; q; q = q->next) {
		bool match = tag ? (q->info.tag && !strcmp(q->info.tag, tag)) : q->pid == pid;
		if (!match)
			continue;
		pthread_mutex_lock(&q->lock);
		bool ended = q->ended;
		pthread_mutex_unlock(&q->lock);
		if (ended && live_only)
			continue;
		if (!found || !ended) /* a live process wins over a retained exit */
			found = q;
		if (!ended)
			break;
	}
	if (found)
		fk_proc_ref(found);
	pthread_mutex_unlock(&b->plock);
	fk__box_put(b);
	fk__proc_unref_list(dead);
	if (!found) {
		if (tag)
			return fk__fail(err, FK_ENOTFOUND, 0, "process with tag %s not found", tag);
		return fk__fail(err, FK_ENOTFOUND, 0, "process with pid %u not found", pid);
	}
	*out = found;
	return 0;
}

int fk_proc_find(fk_rt *rt, const char *box_id, uint32_t pid, fk_proc **out, fk_err *err)
{
	return find(rt, box_id, pid, NULL, false, out, err);
}

int fk_proc_find_tag(fk_rt *rt, const char *box_id, const char *tag, fk_proc **out, fk_err *err)
{
	if (!tag)
		return fk__fail(err, FK_EINVAL, 0, "tag is required");
	return find(rt, box_id, 0, tag, false, out, err);
}

int fk_proc_signal(fk_rt *rt, const char *box_id, uint32_t pid, int sig, fk_err *err)
{
	if (sig != SIGKILL && sig != SIGTERM)
		return fk__fail(err, FK_EINVAL, 0, "invalid signal: %d", sig);
	fk_proc *p;
	int rc = find(rt, box_id, pid, NULL, true, &p, err);
	if (rc < 0)
		return rc;
	if (fk__proc_kill(p, sig) < 0 && errno != ESRCH)
		rc = fk__fail(err, FK_EIO, errno, "signal: %s", fk_strerror(errno));
	if (rc == 0)
		fk__proc_stop(p); /* envd: a kill stops forwarding; end comes after reaping */
	fk_proc_unref(p);
	return rc;
}

/* How long a stdin write waits for room before it looks at the server's stop, its caller's
 * cancel and its bound again; the bound: a write the process takes no byte of for this long
 * gives up (as the port proxy gives up on a body chunk the box does not take). */
#define STDIN_WAIT_SLICE_MS 200
#define STDIN_STALL_MS      60000

/* One write() of what is left to p's stdin, under in_lock (which an Update and the pump's end
 * take too, so it is never held while waiting): the bytes taken, 0 when the pipe or terminal
 * is full (*poll_fd: a duplicate of it to wait on, or -1), -1 with errno (EBADF: closed). */
static ssize_t stdin_write_once(fk_proc *p, const char *s, size_t len, int *poll_fd)
{
	*poll_fd = -1;
	pthread_mutex_lock(&p->in_lock);
	ssize_t n = -1;
	int e = EBADF;
	if (p->in_fd >= 0) {
		/* non-blocking: a process that does not read must not hold this thread (a kept
		 * server's processes outlive it: a blocked write() held its shutdown); the pump
		 * reads the terminal's master, which shares this flag, through poll and takes
		 * EAGAIN */
		int fl = fcntl(p->in_fd, F_GETFL);
		if (fl >= 0 && !(fl & O_NONBLOCK))
			fcntl(p->in_fd, F_SETFL, fl | O_NONBLOCK);
		n = write(p->in_fd, s, len);
		e = errno;
		if (n < 0 && e == EAGAIN) {
			*poll_fd = fcntl(p->in_fd, F_DUPFD_CLOEXEC, 0);
			n = 0;
		}
	}
	pthread_mutex_unlock(&p->in_lock);
	errno = e;
	return n;
}

/* Why the write waiting for room stops now (an error set), or 0 to wait on. */
static int stdin_give_up(fk_err *err, int64_t since_ms, int (*cancel)(void *), void *cls)
{
	if (fk_stopping())
		return fk__fail(err, FK_EIO, ESHUTDOWN,
		                "failed to write to stdin: the server is shutting down");
	if (cancel && cancel(cls))
		return fk__fail(err, FK_EIO, ECONNRESET,
		                "failed to write to stdin: the client left");
	if (fk__now_ms() - since_ms >= STDIN_STALL_MS)
		return fk__fail(err, FK_ETIMEOUT, ETIMEDOUT,
		                "failed to write to stdin: the process took no input for %d s",
		                STDIN_STALL_MS / 1000);
	return 0;
}

/* The writes of one SendInput, in order, each under in_lock only (wr_lock, held throughout,
 * keeps two SendInputs' bytes apart, as envd's one Write per call does). */
static int stdin_write_all(fk_proc *p, uint32_t pid, const char *s, size_t len,
                           int (*cancel)(void *), void *cls, const sigset_t *pipe_set, fk_err *err)
{
	int64_t since = fk__now_ms();
	while (len > 0) {
		int pfd;
		ssize_t n = stdin_write_once(p, s, len, &pfd);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EBADF)
			return fk__fail(err, FK_ECLOSED, 0, "stdin of process %u is closed", pid);
		if (n < 0) {
			int e = errno;
			if (e == EPIPE) { /* swallow the SIGPIPE it raised */
				struct timespec zero = {0, 0};
				sigtimedwait(pipe_set, NULL, &zero);
			}
			return fk__fail(err, e == EPIPE ? FK_ECLOSED : FK_EIO, e,
			                "failed to write to stdin: %s", fk_strerror(e));
		}
		if (n > 0) {
			s += n;
			len -= (size_t)n;
			since = fk__now_ms();
			continue;
		}
		int rc = stdin_give_up(err, since, cancel, cls);
		if (rc == 0 && pfd >= 0) {
			struct pollfd pw = {.fd = pfd, .events = POLLOUT};
			poll(&pw, 1, STDIN_WAIT_SLICE_MS);
		}
		if (pfd >= 0)
			close(pfd);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int fk_proc_write_stdin_until(fk_rt *rt, const char *box_id, uint32_t pid, const void *data,
                              size_t len, int (*cancel)(void *), void *cls, fk_err *err)
{
	fk_proc *p;
	int rc = find(rt, box_id, pid, NULL, true, &p, err);
	if (rc < 0)
		return rc;
	/* SIGPIPE would kill the server when the child closed its stdin: block it for this write
	 * and swallow the one it raises */
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	/* behind another SendInput of the same process: wait for it in slices too */
	int64_t since = fk__now_ms();
	struct timespec until;
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += STDIN_WAIT_SLICE_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (pthread_mutex_timedlock(&p->wr_lock, &until) == 0)
			break;
		if ((rc = stdin_give_up(err, since, cancel, cls)) < 0)
			break;
	}
	if (rc == 0) {
		rc = stdin_write_all(p, pid, data, len, cancel, cls, &pipe_set, err);
		pthread_mutex_unlock(&p->wr_lock);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fk_proc_unref(p);
	return rc;
}

int fk_proc_write_stdin(fk_rt *rt, const char *box_id, uint32_t pid, const void *data, size_t len,
                        fk_err *err)
{
	return fk_proc_write_stdin_until(rt, box_id, pid, data, len, NULL, NULL, err);
}

int fk_proc_close_stdin(fk_rt *rt, const char *box_id, uint32_t pid, fk_err *err)
{
	fk_proc *p;
	int rc = find(rt, box_id, pid, NULL, true, &p, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&p->in_lock);
	if (p->pty)
		rc = fk__fail(err, FK_ECLOSED, 0,
		              "cannot close stdin for PTY process — send Ctrl+D (0x04) instead");
	else if (p->in_fd < 0)
		rc = fk__fail(err, FK_ECLOSED, 0, "stdin of process %u is not open", pid);
	else
		fk__proc_close_fd(&p->in_fd);
	pthread_mutex_unlock(&p->in_lock);
	fk_proc_unref(p);
	return rc;
}

int fk_proc_resize(fk_rt *rt, const char *box_id, uint32_t pid, uint16_t cols, uint16_t rows,
                   fk_err *err)
{
	fk_proc *p;
	int rc = find(rt, box_id, pid, NULL, true, &p, err);
	if (rc < 0)
		return rc;
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	pthread_mutex_lock(&p->in_lock);
	if (!p->pty)
		rc = fk__fail(err, FK_ECLOSED, 0, "tty not assigned to process");
	else if (p->in_fd < 0 || ioctl(p->in_fd, TIOCSWINSZ, &ws) < 0)
		rc = fk__fail(err, FK_EIO, errno, "error resizing tty: %s", fk_strerror(errno));
	pthread_mutex_unlock(&p->in_lock);
	fk_proc_unref(p);
	return rc;
}

/* ------------------------------------------------------------ list */

static int info_copy(fk_proc_info *dst, const fk_proc_info *src)
{
	fk_proc_spec spec = {
	    .cmd = src->cmd,
	    .args = (const char *const *)src->args,
	    .n_args = src->n_args,
	    .env_keys = (const char *const *)src->env_keys,
	    .env_values = (const char *const *)src->env_values,
	    .n_envs = src->n_envs,
	    .cwd = src->cwd,
	    .tag = src->tag,
	};
	memset(dst, 0, sizeof(*dst));
	dst->pid = src->pid;
	return fk__proc_info_fill(dst, &spec);
}

static int info_cmp(const void *a, const void *b)
{
	uint32_t x = ((const fk_proc_info *)a)->pid, y = ((const fk_proc_info *)b)->pid;
	return x < y ? -1 : x > y;
}

int fk_proc_list(fk_rt *rt, const char *box_id, fk_proc_info **out, size_t *n_out, fk_err *err)
{
	*out = NULL;
	*n_out = 0;
	fk_box *b = fk__box_get(rt, box_id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", box_id);
	int rc = 0;
	size_t n = 0, cap = 0;
	fk_proc_info *v = NULL;
	pthread_mutex_lock(&b->plock);
	for (fk_proc *q = b->procs; q && rc == 0; q = q->next) {
		pthread_mutex_lock(&q->lock);
		bool ended = q->ended;
		pthread_mutex_unlock(&q->lock);
		if (ended)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			fk_proc_info *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
				break;
			}
			v = nv;
		}
		if (info_copy(&v[n], &q->info) < 0) {
			fk__proc_info_clear(&v[n]);
			rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
			break;
		}
		n++;
	}
	pthread_mutex_unlock(&b->plock);
	fk__box_put(b);
	if (rc < 0) {
		fk_proc_info_free(v, n);
		return rc;
	}
	if (n)
		qsort(v, n, sizeof(*v), info_cmp);
	*out = v;
	*n_out = n;
	return 0;
}

void fk_proc_info_free(fk_proc_info *infos, size_t n)
{
	for (size_t i = 0; infos && i < n; i++)
		fk__proc_info_clear(&infos[i]);
	free(infos);
}

/* ------------------------------------------------------------ box-wide */

void fk__box_procs_stop(fk_box *b)
{
	pthread_mutex_lock(&b->plock);
	for (fk_proc *q = b->procs; q; q = q->next)
		fk__proc_stop(q);
	pthread_mutex_unlock(&b->plock);
}

void fk__box_procs_signal(fk_box *b, int sig)
{
	pthread_mutex_lock(&b->plock);
	for (fk_proc *q = b->procs; q; q = q->next)
		fk__proc_kill(q, sig);
	pthread_mutex_unlock(&b->plock);
}

/* Destroy: every process has been killed; wait for the end events and drop the box's refs. */
void fk__box_procs_release(fk_box *b)
{
	pthread_mutex_lock(&b->plock);
	fk_proc *l = b->procs;
	b->procs = NULL;
	pthread_mutex_unlock(&b->plock);
	for (fk_proc *q = l; q; q = q->next) {
		pthread_mutex_lock(&q->lock);
		bool join = q->thread_started && !q->joined;
		q->joined = q->joined || join;
		pthread_mutex_unlock(&q->lock);
		if (join)
			pthread_join(q->thread, NULL);
	}
	fk__proc_unref_list(l);
}
