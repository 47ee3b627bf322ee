/*
 * fake-e2b/runtime/proc.c — processes inside a box, with envd's semantics (e2b-protocol.md §4.2).
 *
 * Spawn: a helper setns()'s into the box's namespaces (user, mount, PID, cgroup, IPC, UTS, net)
 * through the init's pidfd, joins the box's freezer cgroup and clone(CLONE_PARENT)s the process, so
 * the process is a child of this server (we reap it through a pidfd) while living in the box. Both
 * share the server's memory (CLONE_VM|CLONE_VFORK, like posix_spawn: no page tables copied, so
 * starts are cheap and do not serialise) until the process execs; sanitizer builds fork. The
 * helper and the child only make async-signal-safe calls (raw set*id system calls) on argv/env
 * built before; a close-on-exec status pipe carries the in-box pid and, on failure, the failed
 * step and errno.
 *
 * Output: one thread per process reads stdout/stderr in chunks of at most 32 KiB and copies each
 * chunk to every subscriber's queue, or drops it when nobody is subscribed. A full queue (1 MiB)
 * makes the thread wait, so a slow subscriber slows the process instead of growing memory. The
 * end event comes after both pipes reach EOF and the process is reaped, or, after a SIGKILL or
 * SIGTERM through fk_proc_signal, right after reaping. Exits are kept 30 s for Connect.
 */
#define _GNU_SOURCE
#include "backend.h"
#include "boxfs.h"
#include "linux/caps.h"
#include "procs.h"

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

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

typedef struct chunk {
	struct chunk *next;
	fk_event_type type;
	size_t len;
	unsigned char data[];
} chunk;

struct fk_sub {
	struct fk_proc *p;
	struct fk_sub *next;
	chunk *head, *tail;
	size_t bytes;
	bool end_queued;
	bool end_taken;
	bool wake;
};

struct fk_proc {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* events queued, space freed, stop requested */
	int refs;
	struct fk_proc *next; /* box->procs, under box->plock */
	fk_box *box;          /* weak: only for unlinking, under box->plock */

	uint32_t pid;
	pid_t host_pid;
	int pidfd;
	int out_fd, err_fd, wake_fd;
	pthread_mutex_t in_lock;
	int in_fd;        /* stdin's pipe, or the terminal's master for a PTY process */
	bool pty;         /* a PTY process: output and input go through the terminal */
	bool end_on_exit; /* the runtime's fk_rt_options.end_on_exit */
	bool stop;        /* stop forwarding (SendSignal kill, reboot, destroy) */
	bool ended;       /* end event exists */
	bool reaped;
	int wait_status;
	int64_t end_ms;
	fk_sub *subs;
	pthread_t thread;
	bool thread_started;
	bool joined;

	fk_proc_info info;
};

/* ------------------------------------------------------------ refs */

void fk_proc_ref(fk_proc *p)
{
	pthread_mutex_lock(&p->lock);
	p->refs++;
	pthread_mutex_unlock(&p->lock);
}

static void info_clear(fk_proc_info *in)
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
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	info_clear(&p->info);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->in_lock);
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

static void close_fd(int *fd)
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
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (!p->stop && any_sub_full(p))
			pthread_cond_wait(&p->cond, &p->lock);
		bool stop = p->stop;
		pthread_mutex_unlock(&p->lock);
		if (p->out_fd < 0 && p->err_fd < 0)
			return;
		if (exited_ms && (stop || fk__now_ms() - exited_ms >= FK_DRAIN_MAX_MS))
			return;
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
				close_fd(fd);
				continue;
			}
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

static void *reader_main(void *arg)
{
	fk_proc *p = arg;
	unsigned char *buf = malloc(FK_CHUNK_MAX);
	if (buf)
		pump(p, buf);
	free(buf);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	int rc;
	do
		rc = waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED);
	while (rc < 0 && errno == EINTR);
	pthread_mutex_lock(&p->lock);
	p->reaped = true;
	p->wait_status = rc == 0 ? status_from_siginfo(&si) : SIGKILL;
	p->ended = true;
	/* an ended process keeps its exit status for 30 s, not its fds (signals and wake-ups
	 * look at these under p->lock) */
	close_fd(&p->pidfd);
	close_fd(&p->wake_fd);
	p->end_ms = fk__now_ms();
	for (fk_sub *s = p->subs; s; s = s->next)
		s->end_queued = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_lock(&p->in_lock);
	close_fd(&p->in_fd);
	pthread_mutex_unlock(&p->in_lock);
	return NULL;
}

static void proc_stop(fk_proc *p)
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
static int proc_kill(fk_proc *p, int sig)
{
	int rc = 0;
	pthread_mutex_lock(&p->lock);
	if (!p->reaped && p->pidfd >= 0)
		rc = (int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* ------------------------------------------------------------ spawn */

typedef struct spawn_plan {
	char **argv;
	char **envp;
	char *cwd;
	fk_user user;
	int ns_flags;
	int init_pidfd;
	int cg_fds[FK_CG_MAX_FDS];
	int n_cg;
	int reserve_fd; /* the box's pids reserve, tried when the clone hits the limit */
	const struct sock_fprog *seccomp;
	uint64_t caps_keep;
	int last_cap;
	int stdin_fd, stdout_fd, stderr_fd; /* child ends */
	int status_w;                       /* child -> server: in-box pid, then failure */
	int pid_w;                          /* helper -> server: host pid of the child */
	int life_w;                         /* the runtime's life pipe, closed in the helper */
	bool isolated;
	bool pty;          /* stdin/stdout/stderr are a terminal, the session's controlling tty */
	char *child_stack; /* top of the process's stack while it shares our memory */
} spawn_plan;

/* The fast spawn shares our memory (CLONE_VM); sanitizers cannot follow a task running on a
 * stack they do not know, so their builds fork instead. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define FK_SPAWN_FORK 1
#else
#define FK_SPAWN_FORK 0
#endif

enum {
	STEP_SETNS = 1,
	STEP_CGROUP,
	STEP_CLONE,
	STEP_IDS,
	STEP_CHDIR,
	STEP_EXEC,
	STEP_FDS,
	STEP_SECCOMP,
	STEP_CAPS
};

static void child_fail(const spawn_plan *sp, int step)
{
	int msg[2] = {step, errno};
	if (write(sp->status_w, msg, sizeof(msg)) < 0)
		_exit(126);
	_exit(127);
}

/* The process itself: async-signal-safe calls only. */
static void child_main(const spawn_plan *sp)
{
	int32_t pid = (int32_t)getpid(); /* in the box's PID namespace */
	if (write(sp->status_w, &pid, sizeof(pid)) != sizeof(pid))
		_exit(126);
	sigset_t none;
	sigemptyset(&none);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(sp->stdin_fd, 0) < 0 || dup2(sp->stdout_fd, 1) < 0 || dup2(sp->stderr_fd, 2) < 0)
		child_fail(sp, STEP_FDS);
	/* a session of its own, always (bubblewrap's --new-session): the server's session may
	 * have a controlling terminal (fake-e2b started from a shell, the demo, tmux), which a
	 * process left in it could open as /dev/tty and type into with TIOCSTI. Without a PTY
	 * it has no controlling terminal at all (/dev/tty: ENXIO); with one, that terminal is
	 * its own, like a login's. */
	if (setsid() < 0 || (sp->pty && ioctl(0, TIOCSCTTY, 0) < 0))
		child_fail(sp, STEP_FDS);
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	/* raw system calls: glibc's setuid() would broadcast to the server's threads (setxid)
	 * since this task shares the server's memory */
	if (sp->isolated) {
		/* while we still hold CAP_SYS_ADMIN (no no_new_privs: sudo keeps working) */
		if (sp->seccomp && fk_lx_seccomp_install(sp->seccomp) < 0)
			child_fail(sp, STEP_SECCOMP);
		if (fk_lx_caps_limit(sp->caps_keep, sp->last_cap) < 0)
			child_fail(sp, STEP_CAPS);
		if (syscall(SYS_setgroups, (size_t)sp->user.n_groups, sp->user.groups) < 0 ||
		    syscall(SYS_setgid, sp->user.gid) < 0 || syscall(SYS_setuid, sp->user.uid) < 0)
			child_fail(sp, STEP_IDS);
	}
	if (chdir(sp->cwd) < 0)
		child_fail(sp, STEP_CHDIR);
	execve(sp->argv[0], sp->argv, sp->envp);
	child_fail(sp, STEP_EXEC);
}

#if !FK_SPAWN_FORK
static int child_fn(void *arg)
{
	child_main(arg);
	return 127;
}
#endif

/* Clones the process as a sibling of the helper (a child of the server); returns in the helper
 * only. */
static long clone_child(const spawn_plan *sp)
{
#if defined(__SANITIZE_THREAD__)
	/* TSan cannot follow a raw clone: fork, the runtime is a subreaper and adopts it */
	long pid = fork();
#elif FK_SPAWN_FORK
	long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
#else
	/* shares the server's memory (no page tables copied) until its execve, like
	 * posix_spawn; the helper sleeps (CLONE_VFORK) until then */
	long pid = clone(child_fn, sp->child_stack, CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD,
	                 (void *)sp);
#endif
	if (pid == 0)
		child_main(sp);
	return pid;
}

/* The helper: enters the box, then clones the process as a sibling (a child of the server). */
static void helper_main(const spawn_plan *sp)
{
	int32_t msg[2] = {0, 0};
	/* the runtime's life pipe: only the server may hold its write end (box inits exit on EOF)
	 */
	if (sp->life_w >= 0)
		close(sp->life_w);
	/* the box's processes are the OOM killer's candidates, whatever the server's own score
	 * (a service manager's OOMScoreAdjust=): 0, as on E2B, set while still the host's root
	 * (best effort; the box's PID 1 alone is exempt, backend_ns.c) */
	int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (oom >= 0) {
		if (write(oom, "0", 1) < 0) { /* keeps the server's: nothing better to do */
		}
		close(oom);
	}
	/* cgroups first: they are named in the host's cgroup namespace */
	for (int i = 0; i < sp->n_cg && msg[0] == 0; i++) {
		if (write(sp->cg_fds[i], "0", 1) < 0) {
			msg[0] = -STEP_CGROUP;
			msg[1] = errno;
		}
	}
	if (msg[0] == 0 && sp->isolated && setns(sp->init_pidfd, sp->ns_flags) < 0) {
		msg[0] = -STEP_SETNS;
		msg[1] = errno;
	} else if (msg[0] == 0 && (sp->ns_flags & CLONE_NEWUSER) &&
	           (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0)) {
		/* become the box's root first, so that a later setuid() to another user drops the
		 * capabilities as it does for root (the host's root is nobody in the box) */
		msg[0] = -STEP_SETNS;
		msg[1] = errno;
	} else if (msg[0] == 0) {
		long pid = clone_child(sp);
		/* the box's processes use every slot of their pids limit (a fork bomb): envd's
		 * start takes one of the box's reserved slots instead */
		if (pid < 0 && errno == EAGAIN && sp->reserve_fd >= 0 &&
		    write(sp->reserve_fd, "0", 1) == 1)
			pid = clone_child(sp);
		msg[0] = (int32_t)pid;
		msg[1] = pid < 0 ? errno : 0;
		if (pid < 0)
			msg[0] = -STEP_CLONE;
	}
	if (write(sp->pid_w, msg, sizeof(msg)) < 0)
		_exit(1);
	_exit(0);
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static char **build_argv(const fk_proc_spec *spec)
{
	/* like envd: /bin/sh -c 'exec "$@"' -- cmd args..., the reported pid execs into cmd */
	char **v = calloc(spec->n_args + 6, sizeof(char *));
	if (!v)
		return NULL;
	const char *head[] = {"/bin/sh", "-c", "exec \"$@\"", "--", spec->cmd};
	size_t n = 0;
	for (; n < 5; n++)
		if (!(v[n] = strdup(head[n])))
			goto oom;
	for (size_t i = 0; i < spec->n_args; i++, n++)
		if (!(v[n] = strdup(spec->args[i] ? spec->args[i] : "")))
			goto oom;
	return v;
oom:
	strv_free(v);
	return NULL;
}

/* Sets KEY=VALUE in env (later wins), keeping first-set order. */
static int env_set(char ***env, size_t *n, const char *key, size_t klen, const char *value)
{
	char *kv;
	if (asprintf(&kv, "%.*s=%s", (int)klen, key, value) < 0)
		return -1;
	for (size_t i = 0; i < *n; i++) {
		if (!strncmp((*env)[i], key, klen) && (*env)[i][klen] == '=') {
			free((*env)[i]);
			(*env)[i] = kv;
			return 0;
		}
	}
	char **nv = realloc(*env, (*n + 2) * sizeof(char *));
	if (!nv) {
		free(kv);
		return -1;
	}
	*env = nv;
	nv[(*n)++] = kv;
	nv[*n] = NULL;
	return 0;
}

static char **build_envp(fk_box *b, const fk_user *u, const fk_proc_spec *spec)
{
	char **env = calloc(1, sizeof(char *));
	size_t n = 0;
	if (!env)
		return NULL;
	char *home = NULL; /* degraded: the box's "/" is its directory on the host */
	if (!b->rt->isolated && asprintf(&home, "%s%s", b->root, u->home) < 0)
		home = NULL;
	int rc = env_set(&env, &n, "PATH", 4, FK_PATH_ENV);
	rc |= env_set(&env, &n, "HOME", 4, home ? home : u->home);
	free(home);
	rc |= env_set(&env, &n, "USER", 4, u->name);
	rc |= env_set(&env, &n, "LOGNAME", 7, u->name);
	for (size_t i = 0; rc == 0 && i < b->n_envs; i++) {
		const char *eq = strchr(b->envs[i], '=');
		if (eq)
			rc = env_set(&env, &n, b->envs[i], (size_t)(eq - b->envs[i]), eq + 1);
	}
	for (size_t i = 0; rc == 0 && i < spec->n_envs; i++) {
		const char *k = spec->env_keys[i], *v = spec->env_values[i];
		if (k && *k)
			rc = env_set(&env, &n, k, strlen(k), v ? v : "");
	}
	if (rc != 0) {
		strv_free(env);
		return NULL;
	}
	return env;
}

static char *resolve_cwd(fk_box *b, const fk_user *u, const char *cwd)
{
	char *abs;
	if (!cwd || !*cwd)
		/* envd: the template's workdir, whoever runs */
		abs = strdup(b->workdir ? b->workdir : b->tpl->workdir);
	else
		abs = fk__path_resolve(cwd, u->home);
	if (!abs || b->rt->isolated)
		return abs;
	/* degraded: the box's "/" is its directory on the host */
	char *host;
	if (asprintf(&host, "%s%s", b->root, abs) < 0)
		host = NULL;
	free(abs);
	return host;
}

static int info_fill(fk_proc_info *in, const fk_proc_spec *spec)
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

static fk_proc *proc_alloc(void)
{
	fk_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->in_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	p->refs = 1;
	p->pidfd = p->out_fd = p->err_fd = p->in_fd = -1;
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wake_fd < 0) {
		fk_proc_unref(p);
		return NULL;
	}
	return p;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (int)got;
}

static const char *step_name(int step)
{
	switch (step) {
	case STEP_SETNS:
		return "setns";
	case STEP_CGROUP:
		return "cgroup";
	case STEP_CLONE:
		return "clone";
	case STEP_IDS:
		return "setuid";
	case STEP_CHDIR:
		return "chdir";
	case STEP_EXEC:
		return "exec";
	case STEP_SECCOMP:
		return "seccomp";
	case STEP_CAPS:
		return "capabilities";
	default:
		return "setup";
	}
}

#if !FK_SPAWN_FORK
static int helper_fn(void *arg)
{
	helper_main(arg);
	return 1;
}
#endif

#define SPAWN_STACK (128 * 1024)

/* Starts helper_main in a new task and returns its pid once the helper has exited (or, under
 * TSan, as soon as it is forked). The fast path never copies the server's page tables: the helper
 * and the process share our memory on their own stacks (CLONE_VM) while this thread waits
 * (CLONE_VFORK) until the helper is done, so parallel starts do not serialise on fork(). Every
 * signal is blocked meanwhile so no handler of ours runs on a task sharing our memory. */
static pid_t spawn_helper(spawn_plan *sp)
{
#if FK_SPAWN_FORK
	pid_t pid = fork();
	if (pid == 0)
		helper_main(sp);
	return pid;
#else
	char *stacks = mmap(NULL, 2 * SPAWN_STACK, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED)
		return -1;
	sp->child_stack = stacks + 2 * SPAWN_STACK;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(helper_fn, stacks + SPAWN_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, sp);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stacks, 2 * SPAWN_STACK);
	errno = e;
	return pid;
#endif
}

/* Forks the helper, collects the host pid and the in-box pid. On success p->host_pid, p->pid,
 * p->pidfd are set. */
static int run_spawn(spawn_plan *sp, fk_proc *p, const char *cwd_req, fk_err *err)
{
	int status[2] = {-1, -1}, pidp[2] = {-1, -1};
	int rc = 0;
	if (pipe2(status, O_CLOEXEC) < 0 || pipe2(pidp, O_CLOEXEC) < 0) {
		rc = fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
		goto done;
	}
	sp->status_w = status[1];
	sp->pid_w = pidp[1];
	pid_t helper = spawn_helper(sp);
	if (helper < 0) {
		rc = fk__fail(err, FK_EIO, errno, "fork: %s", fk_strerror(errno));
		goto done;
	}
	close_fd(&status[1]);
	close_fd(&pidp[1]);
	int32_t hmsg[2] = {-STEP_CLONE, EPIPE};
	read_full(pidp[0], hmsg, sizeof(hmsg));
	while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
		;
	if (hmsg[0] <= 0) {
		rc = fk__fail(err, FK_ESPAWN, hmsg[1], "error starting process: %s: %s",
		              step_name(-hmsg[0]), fk_strerror(hmsg[1]));
		goto done;
	}
	p->host_pid = hmsg[0];
	int32_t inpid = 0;
	int smsg[2] = {0, 0};
	int got = read_full(status[0], &inpid, sizeof(inpid));
	if (got == (int)sizeof(inpid))
		got = read_full(status[0], smsg, sizeof(smsg));
	else
		smsg[0] = STEP_FDS, smsg[1] = EPIPE;
	if (smsg[0] != 0) {
		while (waitpid(p->host_pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (smsg[0] == STEP_CHDIR && (smsg[1] == ENOENT || smsg[1] == ENOTDIR))
			rc = fk__fail(err, FK_ENOCWD, smsg[1], "cwd '%s' does not exist", cwd_req);
		else
			rc = fk__fail(err, FK_ESPAWN, smsg[1], "error starting process: %s: %s",
			              step_name(smsg[0]), fk_strerror(smsg[1]));
		goto done;
	}
	p->pid = (uint32_t)inpid;
	p->pidfd = (int)syscall(SYS_pidfd_open, p->host_pid, 0);
	if (p->pidfd < 0) { /* cannot happen for our own unreaped child; be safe */
		rc = fk__fail(err, FK_EIO, errno, "pidfd_open: %s", fk_strerror(errno));
		kill(p->host_pid, SIGKILL);
		while (waitpid(p->host_pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto done;
	}
	fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
done:
	close_fd(&status[0]);
	close_fd(&status[1]);
	close_fd(&pidp[0]);
	close_fd(&pidp[1]);
	return rc;
}

/* A terminal for a PTY process: the master from the box's own devpts instance (so `tty` and
 * ttyname work inside), its slave for the child's stdin, stdout and stderr, owned by the user. */
static int open_pty(fk_box *b, spawn_plan *sp, fk_proc *p, const fk_proc_spec *spec, fk_err *err)
{
	int m = -1;
	if (b->rt->isolated) {
		int rootfd = fk__box_rootfd(b, err);
		if (rootfd < 0)
			return rootfd;
		m = fk__open_in(rootfd, "/dev/ptmx", O_RDWR | O_NOCTTY, 0);
		close(rootfd);
	}
	if (m < 0) /* degraded mode (or a box without devpts): the host's */
		m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int unlock = 0;
	struct winsize ws = {.ws_row = spec->pty_rows ? spec->pty_rows : 24,
	                     .ws_col = spec->pty_cols ? spec->pty_cols : 80};
	if (m < 0 || ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCSWINSZ, &ws) < 0) {
		int e = errno;
		if (m >= 0)
			close(m);
		return fk__fail(err, FK_ESPAWN, e, "error starting pty: %s", fk_strerror(e));
	}
	int slave = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	int in = slave >= 0 ? fcntl(m, F_DUPFD_CLOEXEC, 0) : -1;
	int out = in >= 0 ? fcntl(slave, F_DUPFD_CLOEXEC, 0) : -1;
	int errfd = out >= 0 ? fcntl(slave, F_DUPFD_CLOEXEC, 0) : -1;
	if (errfd < 0) {
		int e = errno;
		close(m);
		if (slave >= 0)
			close(slave);
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
		return fk__fail(err, FK_ESPAWN, e, "error starting pty: %s", fk_strerror(e));
	}
	if (fchown(slave, sp->user.uid, sp->user.gid) < 0 && geteuid() == 0)
		fprintf(stderr, "fake-e2b: chown pty: %s\n", fk_strerror(errno));
	p->pty = true;
	p->out_fd = m;
	p->in_fd = in;
	sp->pty = true;
	sp->stdin_fd = slave;
	sp->stdout_fd = out;
	sp->stderr_fd = errfd;
	return 0;
}

static int open_pipes(spawn_plan *sp, fk_proc *p, bool stdin_pipe, fk_err *err)
{
	int o[2], e[2], i[2];
	if (pipe2(o, O_CLOEXEC) < 0)
		return fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
	p->out_fd = o[0];
	sp->stdout_fd = o[1];
	if (pipe2(e, O_CLOEXEC) < 0)
		return fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
	p->err_fd = e[0];
	sp->stderr_fd = e[1];
	if (stdin_pipe) {
		if (pipe2(i, O_CLOEXEC) < 0)
			return fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
		p->in_fd = i[1];
		sp->stdin_fd = i[0];
	} else {
		sp->stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (sp->stdin_fd < 0)
			return fk__fail(err, FK_EIO, errno, "/dev/null: %s", fk_strerror(errno));
	}
	return 0;
}

static void plan_close(spawn_plan *sp)
{
	close_fd(&sp->stdin_fd);
	close_fd(&sp->stdout_fd);
	close_fd(&sp->stderr_fd);
	for (int i = 0; i < sp->n_cg; i++)
		close_fd(&sp->cg_fds[i]);
	sp->n_cg = 0;
	close_fd(&sp->reserve_fd);
	strv_free(sp->argv);
	strv_free(sp->envp);
	free(sp->cwd);
}

static void purge_retained(fk_box *b, fk_proc **dead)
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

static void unref_list(fk_proc *l)
{
	while (l) {
		fk_proc *n = l->next;
		fk_proc_unref(l);
		l = n;
	}
}

static int plan_build(fk_box *b, const fk_proc_spec *spec, spawn_plan *sp, fk_err *err)
{
	int rootfd = fk__box_rootfd(b, err);
	if (rootfd < 0)
		return rootfd;
	int rc = fk__user_lookup(b, rootfd, spec->user, &sp->user, err);
	close(rootfd);
	if (rc < 0)
		return rc;
	sp->argv = build_argv(spec);
	sp->envp = build_envp(b, &sp->user, spec);
	sp->cwd = resolve_cwd(b, &sp->user, spec->cwd);
	if (!sp->argv || !sp->envp || !sp->cwd)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	fk_enter e;
	rc = fk__backend_enter(b, &e, err);
	if (rc < 0)
		return rc;
	sp->isolated = e.isolated;
	sp->life_w = e.life_w;
	sp->init_pidfd = e.init_pidfd;
	sp->ns_flags = e.ns_flags;
	for (int i = 0; i < e.n_cg; i++)
		sp->cg_fds[i] = e.cg_fds[i];
	sp->n_cg = e.n_cg;
	sp->reserve_fd = e.reserve_fd;
	sp->seccomp = e.seccomp;
	sp->caps_keep = e.caps_keep;
	sp->last_cap = e.last_cap;
	return 0;
}

int fk_proc_start(fk_rt *rt, const char *box_id, const fk_proc_spec *spec, fk_proc **proc_out,
                  fk_sub **sub_out, fk_err *err)
{
	spawn_plan sp = {.stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1, .life_w = -1};
	fk_proc *p = NULL, *dead = NULL;
	fk_sub *sub = NULL;
	if (proc_out)
		*proc_out = NULL;
	if (sub_out)
		*sub_out = NULL;
	if (!spec || !spec->cmd || !*spec->cmd)
		return fk__fail(err, FK_EINVAL, 0, "process cmd is required");
	fk_box *b = fk__box_get(rt, box_id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", box_id);
	pthread_rwlock_rdlock(&b->life);
	int rc = 0;
	if (b->dead || (rt->isolated && b->init_pid <= 0))
		rc = fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", box_id);
	else if (b->frozen)
		rc = fk__fail(err, FK_ESTATE, 0, "sandbox %s is paused", box_id);
	if (rc == 0)
		rc = plan_build(b, spec, &sp, err);
	if (rc == 0 && !(p = proc_alloc()))
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	if (rc == 0 && info_fill(&p->info, spec) < 0)
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	if (p)
		p->end_on_exit = rt->end_on_exit;
	if (rc == 0)
		rc = spec->pty ? open_pty(b, &sp, p, spec, err)
		               : open_pipes(&sp, p, spec->stdin_pipe, err);
	if (rc == 0)
		rc = run_spawn(&sp, p, spec->cwd ? spec->cwd : "", err);
	plan_close(&sp);
	if (rc < 0)
		goto fail;
	p->info.pid = p->pid;
	if (sub_out)
		fk_sub_new(p, &sub, NULL); /* before the reader runs: nothing is missed */
	p->box = b;
	/* the reader holds no ref: whoever drops the last ref joins it first */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 * 1024); /* the 32 KiB buffer is on the heap */
	int trc = pthread_create(&p->thread, &attr, reader_main, p);
	pthread_attr_destroy(&attr);
	if (trc != 0) {
		/* cannot forward output: kill it and reap synchronously */
		kill(p->host_pid, SIGKILL);
		proc_stop(p);
		reader_main(p);
		p->joined = true;
	} else {
		p->thread_started = true;
	}
	pthread_mutex_lock(&b->plock);
	purge_retained(b, &dead);
	p->refs++; /* the box's list */
	p->next = b->procs;
	b->procs = p;
	pthread_mutex_unlock(&b->plock);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	unref_list(dead);
	if (sub_out)
		*sub_out = sub;
	if (proc_out)
		*proc_out = p;
	else
		fk_proc_unref(p);
	return 0;
fail:
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	if (p) {
		close_fd(&p->out_fd);
		close_fd(&p->err_fd);
		fk_proc_unref(p);
	}
	return rc;
}

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
	purge_retained(b, &dead);
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
	unref_list(dead);
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
	if (proc_kill(p, sig) < 0 && errno != ESRCH)
		rc = fk__fail(err, FK_EIO, errno, "signal: %s", fk_strerror(errno));
	if (rc == 0)
		proc_stop(p); /* envd: a kill stops forwarding; end comes after reaping */
	fk_proc_unref(p);
	return rc;
}

int fk_proc_write_stdin(fk_rt *rt, const char *box_id, uint32_t pid, const void *data, size_t len,
                        fk_err *err)
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
	pthread_mutex_lock(&p->in_lock);
	if (p->in_fd < 0) {
		rc = fk__fail(err, FK_ECLOSED, 0, "stdin of process %u is closed", pid);
	} else {
		const char *s = data;
		while (len > 0) {
			ssize_t n = write(p->in_fd, s, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				int e = errno;
				rc = fk__fail(err, e == EPIPE ? FK_ECLOSED : FK_EIO, e,
				              "failed to write to stdin: %s", fk_strerror(e));
				if (e == EPIPE) {
					struct timespec zero = {0, 0};
					sigtimedwait(&pipe_set, NULL, &zero);
				}
				break;
			}
			s += n;
			len -= (size_t)n;
		}
	}
	pthread_mutex_unlock(&p->in_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fk_proc_unref(p);
	return rc;
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
		close_fd(&p->in_fd);
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
	return info_fill(dst, &spec);
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
			info_clear(&v[n]);
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
		info_clear(&infos[i]);
	free(infos);
}

/* ------------------------------------------------------------ box-wide */

void fk__box_procs_stop(fk_box *b)
{
	pthread_mutex_lock(&b->plock);
	for (fk_proc *q = b->procs; q; q = q->next)
		proc_stop(q);
	pthread_mutex_unlock(&b->plock);
}

void fk__box_procs_signal(fk_box *b, int sig)
{
	pthread_mutex_lock(&b->plock);
	for (fk_proc *q = b->procs; q; q = q->next)
		proc_kill(q, sig);
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
	unref_list(l);
}
