/*
 * fake-e2b/runtime/proc_pump.c — a process's references, its subscribers and its output pump
 * (proc_int.h), as envd's process handler multiplexes output: one thread per process reads
 * stdout/stderr in chunks of at most 32 KiB and copies each chunk to every subscriber's queue,
 * or drops it when nobody is subscribed (read in ticks then, FK_UNHEARD_READS). A full queue (1
 * MiB) makes the thread wait, so a slow subscriber slows the process instead of growing memory. The
 * end event comes after both pipes reach EOF and the process is reaped, or, after a SIGKILL or
 * SIGTERM through fk_proc_signal, right after reaping. Exits are kept 30 s for Connect.
 */
#define _GNU_SOURCE
#include "backend.h"
#include "box_cgroups.h"
#include "boxfs.h"
#include "linux/caps.h"
#include "linux/cgroup.h"
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ refs */

void fk_proc_ref(fk_proc *p)
{
	pthread_mutex_lock(&p->lock);
	p->refs++;
	pthread_mutex_unlock(&p->lock);
}

void fk__proc_info_clear(fk_proc_info *in)
{
	free(in->tag);
	free(in->cmd);
	for (size_t i = 0; i < in->n_args; i++)
		free(in->args[i]);
	free(in->args);
	for (size_t i = 0; i < in->n_envs; i++) {
		free(in->env_keys[i]);
		free(in->env_values[i]);
	}
	free(in->env_keys);
	free(in->env_values);
	free(in->cwd);
	memset(in, 0, sizeof(*in));
}

void fk_proc_unref(fk_proc *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	int left = --p->refs;
	pthread_mutex_unlock(&p->lock);
	if (left > 0)
		return;
	if (p->thread_started && !p->joined)
		pthread_join(p->thread, NULL);
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->shim_fd >= 0)
		close(p->shim_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	fk__proc_info_clear(&p->info);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->in_lock);
	pthread_mutex_destroy(&p->wr_lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

uint32_t fk_proc_pid(const fk_proc *p)
{
	return p->pid;
}

bool fk_proc_ended(fk_proc *p, int *wait_status_out)
{
	pthread_mutex_lock(&p->lock);
	bool ended = p->ended;
	if (ended && wait_status_out)
		*wait_status_out = p->wait_status;
	pthread_mutex_unlock(&p->lock);
	return ended;
}

fk_proc *fk__proc_alloc(void)
{
	fk_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->in_lock, NULL);
	pthread_mutex_init(&p->wr_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	p->refs = 1;
	p->pidfd = p->out_fd = p->err_fd = p->in_fd = p->shim_fd = -1;
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wake_fd < 0) {
		fk_proc_unref(p);
		return NULL;
	}
	return p;
}

void fk__proc_set_box(fk_proc *p, fk_box *b)
{
	p->box = b;
	p->rt = b->rt;
	snprintf(p->box_id, sizeof(p->box_id), "%s", b->id);
	if (!fk__cg_box_oom_file(b, p->oom_dir, sizeof(p->oom_dir), &p->oom_file))
		p->oom_dir[0] = 0;
}

int fk__proc_run_reader(fk_proc *p)
{
	/* the reader holds no ref: whoever drops the last ref joins it first */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 * 1024); /* the 32 KiB buffer is on the heap */
	int trc = pthread_create(&p->thread, &attr, fk__proc_reader_main, p);
	pthread_attr_destroy(&attr);
	if (trc != 0) {
		/* cannot forward output: kill it and reap synchronously */
		fk__proc_kill(p, SIGKILL);
		fk__proc_stop(p);
		fk__proc_reader_main(p);
		p->joined = true;
		return -1;
	}
	p->thread_started = true;
	return 0;
}

/* ------------------------------------------------------------ subscribers */

static bool any_sub_full(fk_proc *p)
{
	for (fk_sub *s = p->subs; s; s = s->next)
		if (s->bytes >= FK_SUB_QUEUE_CAP)
			return true;
	return false;
}

/* Under p->lock. Copies one chunk to every subscriber (none: dropped, like envd). */
static void deliver(fk_proc *p, fk_event_type type, const unsigned char *data, size_t len)
{
	for (fk_sub *s = p->subs; s; s = s->next) {
		chunk *c = malloc(sizeof(*c) + len);
		if (!c)
			continue; /* memory pressure: this subscriber loses the chunk */
		c->next = NULL;
		c->type = type;
		c->len = len;
		memcpy(c->data, data, len);
		if (s->tail)
			s->tail->next = c;
		else
			s->head = c;
		s->tail = c;
		s->bytes += len;
	}
	pthread_cond_broadcast(&p->cond);
}

int fk_sub_new(fk_proc *p, fk_sub **out, fk_err *err)
{
	fk_sub *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	pthread_mutex_lock(&p->lock);
	p->refs++;
	s->p = p;
	s->end_queued = p->ended;
	s->next = p->subs;
	p->subs = s;
	uint64_t one = 1; /* a pump waiting while nobody listened reads at once */
	if (p->wake_fd >= 0 && write(p->wake_fd, &one, sizeof(one)) < 0)
		one = 0; /* the eventfd counter cannot overflow here */
	pthread_mutex_unlock(&p->lock);
	*out = s;
	return 0;
}

static void timespec_after(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int fk_sub_next(fk_sub *s, fk_event *ev, int timeout_ms)
{
	fk_proc *p = s->p;
	struct timespec deadline;
	memset(ev, 0, sizeof(*ev));
	if (timeout_ms >= 0)
		timespec_after(&deadline, timeout_ms);
	pthread_mutex_lock(&p->lock);
	int rc;
	for (;;) {
		if (s->head) {
			chunk *c = s->head;
			s->head = c->next;
			if (!s->head)
				s->tail = NULL;
			bool was_full = s->bytes >= FK_SUB_QUEUE_CAP;
			s->bytes -= c->len;
			if (was_full && s->bytes < FK_SUB_QUEUE_CAP)
				pthread_cond_broadcast(&p->cond);
			pthread_mutex_unlock(&p->lock);
			/* hand the chunk's bytes over without a copy: data points into it */
			ev->type = c->type;
			ev->len = c->len;
			memmove(c, c->data, c->len);
			ev->data = (unsigned char *)c;
			return 0;
		}
		if (s->end_queued && !s->end_taken) {
			s->end_taken = true;
			ev->type = FK_EV_END;
			ev->wait_status = p->wait_status;
			rc = 0;
			break;
		}
		if (s->end_taken) {
			rc = FK_ECLOSED;
			break;
		}
		if (s->wake) {
			s->wake = false;
			rc = FK_ETIMEOUT;
			break;
		}
		if (timeout_ms < 0) {
			pthread_cond_wait(&p->cond, &p->lock);
		} else if (pthread_cond_timedwait(&p->cond, &p->lock, &deadline) == ETIMEDOUT) {
			rc = FK_ETIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void fk_sub_wake(fk_sub *s)
{
	pthread_mutex_lock(&s->p->lock);
	s->wake = true;
	pthread_cond_broadcast(&s->p->cond);
	pthread_mutex_unlock(&s->p->lock);
}

void fk_event_clear(fk_event *ev)
{
	if (!ev)
		return;
	free(ev->data);
	memset(ev, 0, sizeof(*ev));
}

void fk_sub_free(fk_sub *s)
{
	if (!s)
		return;
	fk_proc *p = s->p;
	pthread_mutex_lock(&p->lock);
	for (fk_sub **pp = &p->subs; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_cond_broadcast(&p->cond); /* the reader may wait for this queue's space */
	pthread_mutex_unlock(&p->lock);
	for (chunk *c = s->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(s);
	fk_proc_unref(p);
}

/* ------------------------------------------------------------ the reader thread */

void fk__proc_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int status_from_siginfo(const siginfo_t *si)
{
	switch (si->si_code) {
	case CLD_EXITED:
		return (si->si_status & 0xff) << 8;
	case CLD_DUMPED:
		return (si->si_status & 0x7f) | 0x80;
	default:
		return si->si_status & 0x7f;
	}
}

/* After the process exits, output still arriving is forwarded until the pipes stay quiet this
 * long, or at most FK_DRAIN_MAX_MS (envd: a read deadline after Wait). */
#define FK_DRAIN_QUIET_MS 50
#define FK_DRAIN_MAX_MS   1000

/* Output nobody listens to (no subscriber) is dropped, as envd drops it, but it is read by the
 * server, outside the box's CPU limit: read as fast as a box writes, it cost the server about
 * as much CPU as the box spent writing (8 `yes` in one command: 0.72 of a core for the box's
 * 0.81). So while nobody listens the pump reads at most FK_UNHEARD_READS chunks, then waits
 * FK_UNHEARD_TICK_MS (a new subscriber, a stop or the exit end the wait): at most 128 KiB per
 * 10 ms per process, and the box's writer waits on its full pipe meanwhile. */
#define FK_UNHEARD_READS   4
#define FK_UNHEARD_TICK_MS 10

/* The wait between two rounds of reads nobody listens to; watch_exit as pump's pidfd. */
static void unheard_wait(fk_proc *p, bool watch_exit, int64_t *exited_ms)
{
	struct pollfd pfd[2] = {{.fd = p->wake_fd, .events = POLLIN},
	                        {.fd = watch_exit ? p->pidfd : -1, .events = POLLIN}};
	if (poll(pfd, 2, FK_UNHEARD_TICK_MS) <= 0)
		return;
	uint64_t v;
	if (pfd[0].revents && read(p->wake_fd, &v, sizeof(v)) < 0)
		v = 0; /* EAGAIN: another wake-up took it */
	if (pfd[1].revents)
		*exited_ms = fk__now_ms();
}

/* Forwards output until both pipes reach EOF (envd 0.6.13: a descendant still holding them
 * holds the end) or, with end_on_exit, once the process has exited, until they are drained: a
 * descendant holding them (`sleep 30 &`) does not hold the stream, and the output's tail is not
 * lost (envd's reap-then-drain handler: reap, then read what is left with a deadline). Once told to
 * stop (SendSignal kill, reboot, destroy) it keeps draining the pipes but drops what it reads,
 * and returns as soon as the process itself has exited: a handler writing on SIGTERM must not
 * die of SIGPIPE. */
static void pump(fk_proc *p, unsigned char *buf)
{
	int64_t exited_ms = 0; /* when the pidfd said the process exited; 0 = still running */
	int unheard = 0;       /* reads since the last wait while nobody listened */
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (!p->stop && any_sub_full(p))
			pthread_cond_wait(&p->cond, &p->lock);
		bool stop = p->stop, heard = p->subs != NULL;
		pthread_mutex_unlock(&p->lock);
		if (p->out_fd < 0 && p->err_fd < 0)
			return;
		if (exited_ms && (stop || fk__now_ms() - exited_ms >= FK_DRAIN_MAX_MS))
			return;
		if (heard || stop || exited_ms) {
			unheard = 0;
		} else if (unheard >= FK_UNHEARD_READS) {
			unheard_wait(p, p->end_on_exit, &exited_ms);
			unheard = 0;
			continue;
		}
		struct pollfd pfd[4] = {
		    {.fd = p->out_fd, .events = POLLIN},
		    {.fd = p->err_fd, .events = POLLIN},
		    {.fd = p->wake_fd, .events = POLLIN},
		    {.fd = exited_ms || (!stop && !p->end_on_exit) ? -1 : p->pidfd,
		     .events = POLLIN},
		};
		int n_ready = poll(pfd, 4, exited_ms ? FK_DRAIN_QUIET_MS : -1);
		if (n_ready < 0)
			continue;
		if (n_ready == 0)
			return; /* exited and the pipes stayed quiet: drained */
		if (pfd[3].revents) {
			if (stop)
				return; /* stopped and exited: the end need not wait for EOF */
			exited_ms = fk__now_ms();
		}
		if (pfd[2].revents) {
			uint64_t v;
			if (read(p->wake_fd, &v, sizeof(v)) < 0)
				continue;
			continue;
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &p->out_fd : &p->err_fd;
			if (*fd < 0 || !pfd[i].revents)
				continue;
			ssize_t n = read(*fd, buf, FK_CHUNK_MAX);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) { /* EOF; a terminal whose every slave closed reads EIO */
				fk__proc_close_fd(fd);
				continue;
			}
			p->out_bytes[i] += (uint64_t)n; /* only this thread touches them */
			unheard++;
			if (stop)
				continue;
			pthread_mutex_lock(&p->lock);
			if (!p->stop)
				deliver(p,
				        p->pty   ? FK_EV_PTY
				        : i == 0 ? FK_EV_STDOUT
				                 : FK_EV_STDERR,
				        buf, (size_t)n);
			pthread_mutex_unlock(&p->lock);
		}
	}
}

/* The end hook (fk_rt_set_proc_end_hook), before the end event exists. */
static void tell_end(fk_proc *p, int status)
{
	if (!p->rt)
		return;
	pthread_rwlock_rdlock(&p->rt->hook_lock);
	if (p->rt->proc_end_hook) {
		fk_proc_end e = {.pid = p->pid, .wait_status = status, .pty = p->pty};
		if (p->pty)
			e.pty_bytes = p->out_bytes[0];
		else
			e.stdout_bytes = p->out_bytes[0];
		e.stderr_bytes = p->out_bytes[1];
		e.oom_known = p->oom_dir[0] && fk_lx_cg_read_u64(p->oom_dir, p->oom_file,
		                                                 "oom_kill", &e.oom_kills) == 0;
		p->rt->proc_end_hook(p->rt->proc_end_ctx, p->box_id, &e);
	}
	pthread_rwlock_unlock(&p->rt->hook_lock);
}

int fk__shim_wait_exit(fk_proc *p)
{
	if (p->shim_exited)
		return p->shim_status;
	for (;;) {
		shim_msg m;
		ssize_t n = recv(p->shim_fd, &m, sizeof(m), MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(m) || m.magic != SHIM_MAGIC)
			return SIGKILL; /* the shim is gone: its process with it */
		if (m.type == MSG_EXIT)
			return m.status;
	}
}

void *fk__proc_reader_main(void *arg)
{
	fk_proc *p = arg;
	unsigned char *buf = malloc(FK_CHUNK_MAX);
	if (buf)
		pump(p, buf);
	free(buf);
	fk__proc_close_fd(&p->out_fd);
	fk__proc_close_fd(&p->err_fd);
	int status;
	if (p->shim_fd >= 0) {
		/* live restore: its shim is its parent and reports its exit */
		status = fk__shim_wait_exit(p);
		fk__proc_close_fd(&p->shim_fd); /* it took the exit: the shim ends */
	} else {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		int rc;
		do
			rc = waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED);
		while (rc < 0 && errno == EINTR);
		status = rc == 0 ? status_from_siginfo(&si) : SIGKILL;
	}
	tell_end(p, status);
	if (p->slot) /* before the end exists: whoever saw it may start the next at once */
		fk__proc_slot_give(p->rt);
	pthread_mutex_lock(&p->lock);
	p->reaped = true;
	p->wait_status = status;
	p->ended = true;
	/* an ended process keeps its exit status for 30 s, not its fds (signals and wake-ups
	 * look at these under p->lock) */
	fk__proc_close_fd(&p->pidfd);
	fk__proc_close_fd(&p->wake_fd);
	p->end_ms = fk__now_ms();
	for (fk_sub *s = p->subs; s; s = s->next)
		s->end_queued = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_lock(&p->in_lock);
	fk__proc_close_fd(&p->in_fd);
	pthread_mutex_unlock(&p->in_lock);
	return NULL;
}

void fk__proc_stop(fk_proc *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	uint64_t one = 1;
	if (p->wake_fd >= 0 && write(p->wake_fd, &one, sizeof(one)) < 0)
		one = 0; /* the eventfd counter cannot overflow here */
	pthread_mutex_unlock(&p->lock);
}

/* Sends `sig` unless the process was reaped (its pidfd is closed then). Under p->lock, so the
 * reader cannot close the pidfd meanwhile. 0, or -1 with errno. */
int fk__proc_kill(fk_proc *p, int sig)
{
	int rc = 0;
	pthread_mutex_lock(&p->lock);
	if (!p->reaped && p->pidfd >= 0)
		rc = (int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* ------------------------------------------------------------ the table's helpers */

/* Per started process: up to 6 fds while it runs, about 10 more while it starts. */
#define FK_FDS_PER_PROC 16

int fk__proc_slot_take(fk_rt *rt, fk_err *err)
{
	struct rlimit rl;
	long most = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
	                ? (long)(rl.rlim_cur / FK_FDS_PER_PROC)
	                : 65536;
	if (most < 8)
		most = 8;
	int now = __atomic_add_fetch(&rt->procs_running, 1, __ATOMIC_ACQ_REL);
	if (now <= most)
		return 0;
	__atomic_sub_fetch(&rt->procs_running, 1, __ATOMIC_ACQ_REL);
	return fk__fail(err, FK_ENOMEM, EMFILE,
	                "the server runs %ld processes, the most its open-file limit (%llu) "
	                "allows: wait for one to end",
	                most, (unsigned long long)rl.rlim_cur);
}

void fk__proc_slot_give(fk_rt *rt)
{
	__atomic_sub_fetch(&rt->procs_running, 1, __ATOMIC_ACQ_REL);
}

int fk__proc_info_fill(fk_proc_info *in, const fk_proc_spec *spec)
{
	bool ok = (in->cmd = strdup(spec->cmd)) != NULL;
	if (ok && spec->tag)
		ok = (in->tag = strdup(spec->tag)) != NULL;
	if (ok && spec->cwd)
		ok = (in->cwd = strdup(spec->cwd)) != NULL;
	if (ok && spec->n_args) {
		ok = (in->args = calloc(spec->n_args, sizeof(char *))) != NULL;
		for (size_t i = 0; ok && i < spec->n_args; i++) {
			ok = (in->args[i] = strdup(spec->args[i] ? spec->args[i] : "")) != NULL;
			in->n_args = i + 1;
		}
	}
	if (ok && spec->n_envs) {
		in->env_keys = calloc(spec->n_envs, sizeof(char *));
		in->env_values = calloc(spec->n_envs, sizeof(char *));
		ok = in->env_keys && in->env_values;
		for (size_t i = 0; ok && i < spec->n_envs; i++) {
			in->env_keys[i] = strdup(spec->env_keys[i] ? spec->env_keys[i] : "");
			in->env_values[i] = strdup(spec->env_values[i] ? spec->env_values[i] : "");
			in->n_envs = i + 1;
			ok = in->env_keys[i] && in->env_values[i];
		}
	}
	return ok ? 0 : -1;
}

void fk__proc_purge_retained(fk_box *b, fk_proc **dead)
{
	int64_t now = fk__now_ms();
	for (fk_proc **pp = &b->procs; *pp;) {
		fk_proc *q = *pp;
		pthread_mutex_lock(&q->lock);
		bool expired = q->ended && now - q->end_ms >= FK_RETAIN_MS;
		pthread_mutex_unlock(&q->lock);
		if (expired) {
			*pp = q->next;
			q->next = *dead;
			*dead = q;
		} else {
			pp = &q->next;
		}
	}
}

void fk__proc_unref_list(fk_proc *l)
{
	while (l) {
		fk_proc *n = l->next;
		fk_proc_unref(l);
		l = n;
	}
}
