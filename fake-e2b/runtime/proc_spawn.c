/*
 * fake-e2b/runtime/proc_spawn.c — a process started in its box (fk_proc_start; proc_int.h).
 *
 * A helper, made in the box's cgroup v2 (cg_join.h), joins its v1 cgroups, setns()'s into the
 * box's namespaces (user, mount, PID, cgroup, IPC, UTS, net) through the init's pidfd and
 * clone(CLONE_PARENT)s the process, so the process is a child of this server (we reap it
 * through a pidfd) while living in the box. Both share the server's memory (CLONE_VM|CLONE_VFORK,
 * like posix_spawn: no page tables copied, so starts are cheap and do not serialise) until the
 * process execs; sanitizer builds fork. The helper and the child only make async-signal-safe
 * calls (raw set*id system calls) on argv/env built before; a close-on-exec status pipe carries
 * the in-box pid and, on failure, the failed step and errno. Its output pump (proc_pump.c)
 * starts once it runs.
 */
#define _GNU_SOURCE
#include "backend.h"
#include "box_cgroups.h"
#include "boxfs.h"
#include "cg_join.h"
#include "linux/caps.h"
#include "proc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/openat2.h>
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
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ spawn */

typedef struct spawn_plan {
	char **argv;
	char **envp;
	char *cwd;
	fk_user user;
	int ns_flags;
	int init_pidfd;
	fk_cg_join cg; /* its cgroups: made in the v2 one, joining the v1 ones (cg_join.h) */
	const struct sock_fprog *seccomp;
	uint64_t caps_keep;
	int last_cap;
	int stdin_fd, stdout_fd, stderr_fd; /* child ends */
	int status_w;                       /* child -> server: in-box pid, then failure */
	int pid_w;                          /* helper -> server: host pid of the child */
	int pid_w2;                         /* helper -> its shim: the same (live restore), or -1 */
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
	STEP_CAPS,
	STEP_SESSION
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
	/* the helper gave us a session without a controlling terminal (helper_main); a PTY
	 * process leads a session of its own with its PTY as that terminal, like a login's
	 * (envd starts PTY processes with setsid + TIOCSCTTY) */
	if (sp->pty && (setsid() < 0 || ioctl(0, TIOCSCTTY, 0) < 0))
		child_fail(sp, STEP_SESSION);
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
	/* out of the server's session (bubblewrap's --new-session): it may have a controlling
	 * terminal (fake-e2b started from a shell, the demo, tmux), which a process left in it
	 * could open as /dev/tty and type into with TIOCSTI, and whose Ctrl-C would reach its
	 * process group. The process we clone inherits this session, which has no terminal, as
	 * a member, not its leader: as envd's processes are members of envd's session, so
	 * setsid(1) in a command does not fork (the contract's exec wrapper relies on that:
	 * docs/exec.md). Cannot fail: a fresh child of the server leads no process group. */
	if (setsid() < 0) {
		msg[0] = -STEP_SESSION;
		msg[1] = errno;
	}
	/* the runtime's life pipe: only the server may hold its write end (box inits exit on EOF)
	 */
	if (sp->life_w >= 0)
		close(sp->life_w);
	/* the box's processes are the OOM killer's candidates, whatever the server's own score
	 * (a service manager's OOMScoreAdjust=): 0, as on E2B, set while still the host's root
	 * (best effort; the box's PID 1 alone is exempt, backend_boot.c) */
	int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (oom >= 0) {
		if (write(oom, "0", 1) < 0) { /* keeps the server's: nothing better to do */
		}
		close(oom);
	}
	/* cgroups first: they are named in the host's cgroup namespace. Made in the v2 one
	 * (spawn_helper), this one thread joins the v1 ones without the kernel's global lock
	 * (cg_join.h) */
	if (msg[0] == 0 && fk__cg_join_self(&sp->cg) < 0) {
		msg[0] = -STEP_CGROUP;
		msg[1] = errno;
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
		if (pid < 0 && errno == EAGAIN && fk__cg_join_reserve(&sp->cg) == 0)
			pid = clone_child(sp);
		msg[0] = (int32_t)pid;
		msg[1] = pid < 0 ? errno : 0;
		if (pid < 0)
			msg[0] = -STEP_CLONE;
	}
	if (write(sp->pid_w, msg, sizeof(msg)) < 0)
		_exit(1);
	if (sp->pid_w2 >= 0 && write(sp->pid_w2, msg, sizeof(msg)) < 0)
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
	case STEP_SESSION:
		return "setsid";
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

/* Starts helper_main in a new task and returns its pid once the helper has exited (or, in
 * sanitizer builds, as soon as it is forked). The fast path never copies the server's page
 * tables: the helper and the process share our memory on their own stacks (CLONE_VM) while this
 * thread waits (CLONE_VFORK) until the helper is done, so parallel starts do not serialise on
 * fork(). Every signal is blocked meanwhile so no handler of ours runs on a task sharing our
 * memory. The helper is made in the box's cgroup v2 (clone3 CLONE_INTO_CGROUP), the process
 * it clones inherits it: no cgroup.procs write, whose global lock costs several ms after an
 * idle moment (cg_join.h). */
static pid_t spawn_helper(spawn_plan *sp)
{
#if FK_SPAWN_FORK
	pid_t pid = fk__cg_spawn(&sp->cg, 0, NULL, 0, NULL, NULL);
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
	pid_t pid =
	    fk__cg_spawn(&sp->cg, CLONE_VM | CLONE_VFORK, stacks, SPAWN_STACK, helper_fn, sp);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stacks, 2 * SPAWN_STACK);
	errno = e;
	return pid;
#endif
}

/* Forks the helper, collects the host pid and the in-box pid. On success p->host_pid, p->pid,
 * p->pidfd are set. */
/* The shim's start (live restore): the helper runs in it. */
static pid_t shim_spawn(void *arg)
{
	return spawn_helper(arg);
}

/* Starts the helper: from the server, or (sh, live restore) from the process's shim, which
 * becomes the process's parent. The helper's pid (0 for a shim, waited for already). */
static pid_t start_helper(spawn_plan *sp, fk_shim *sh)
{
	if (!sh)
		return spawn_helper(sp);
	int keep[FK_CG_MAX_FDS + 10], n = 0;
	int fds[] = {sp->stdin_fd,   sp->stdout_fd, sp->stderr_fd,     sp->status_w,  sp->pid_w,
	             sp->init_pidfd, sp->cg.v2,     sp->cg.v2_reserve, sp->cg.reserve};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		keep[n++] = fds[i];
	for (int i = 0; i < sp->cg.n_tasks; i++)
		keep[n++] = sp->cg.tasks[i];
	sp->life_w = -1; /* the shim has none of the server's to close */
	if (fk__shim_fork(sh, keep, n, shim_spawn, sp) < 0)
		return -1;
	return 0;
}

static int run_spawn(spawn_plan *sp, fk_proc *p, const char *cwd_req, fk_shim *sh, fk_err *err)
{
	int status[2] = {-1, -1}, pidp[2] = {-1, -1};
	int rc = 0;
	if (pipe2(status, O_CLOEXEC) < 0 || pipe2(pidp, O_CLOEXEC) < 0) {
		rc = fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
		goto done;
	}
	sp->status_w = status[1];
	sp->pid_w = pidp[1];
	sp->pid_w2 = sh ? sh->helper_w : -1;
	pid_t helper = start_helper(sp, sh);
	if (helper < 0) {
		rc = fk__fail(err, FK_EIO, errno, "fork: %s", fk_strerror(errno));
		goto done;
	}
	fk__proc_close_fd(&status[1]);
	fk__proc_close_fd(&pidp[1]);
	int32_t hmsg[2] = {-STEP_CLONE, EPIPE};
	read_full(pidp[0], hmsg, sizeof(hmsg));
	while (helper > 0 && waitpid(helper, NULL, 0) < 0 && errno == EINTR)
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
	if (sh) { /* the shim's child: its pidfd from the shim, which reaps it */
		if (fk__shim_started(p, sh) < 0) {
			rc = fk__fail(err, FK_EIO, EPIPE, "the process's shim did not answer");
			kill(p->host_pid, SIGKILL);
		}
		goto done;
	}
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
	fk__proc_close_fd(&status[0]);
	fk__proc_close_fd(&status[1]);
	fk__proc_close_fd(&pidp[0]);
	fk__proc_close_fd(&pidp[1]);
	return rc;
}

/* The box's own terminal multiplexer: `ptmx` of the devpts mounted at its /dev/pts, reached
 * without following any symlink and checked to be the multiplexer (char 5:2). Box root owns
 * /dev: it may point /dev/ptmx at a FIFO, at /dev/tty or at nothing, and the server used to
 * follow it, falling back to the host's /dev/ptmx when the open failed (a host pty, its slave
 * given to the box user's id as the host reads it: another host user's). -1 with errno
 * ENODEV when the box has no devpts of its own (its /dev/pts is a mount point: box root
 * cannot swap it). */
static int box_ptmx(int rootfd)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS};
	int d = (int)syscall(SYS_openat2, rootfd, "dev/pts", &how, sizeof(how));
	struct statfs sf;
	if (d < 0 || fstatfs(d, &sf) < 0 || sf.f_type != DEVPTS_SUPER_MAGIC) {
		if (d >= 0)
			close(d);
		errno = ENODEV;
		return -1;
	}
	how = (struct open_how){.flags = O_RDWR | O_NOCTTY | O_CLOEXEC,
	                        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV};
	int m = (int)syscall(SYS_openat2, d, "ptmx", &how, sizeof(how));
	int e = errno;
	close(d);
	struct stat st;
	if (m >= 0 && (fstat(m, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2))) {
		close(m);
		m = -1;
		e = EINVAL;
	}
	errno = e;
	return m;
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
		m = box_ptmx(rootfd);
		int e = errno;
		close(rootfd);
		if (m < 0 && e != ENODEV)
			return fk__fail(err, FK_ESPAWN, e, "error starting pty: %s",
			                fk_strerror(e));
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
	/* the user's ids as the host has them (the box's range): never another host user's */
	if (fchown(slave, fk__host_id(b, sp->user.uid), fk__host_id(b, sp->user.gid)) < 0 &&
	    geteuid() == 0)
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
	fk__proc_close_fd(&sp->stdin_fd);
	fk__proc_close_fd(&sp->stdout_fd);
	fk__proc_close_fd(&sp->stderr_fd);
	fk__cg_join_close(&sp->cg);
	strv_free(sp->argv);
	strv_free(sp->envp);
	free(sp->cwd);
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
	sp->cg = e.cg;
	sp->seccomp = e.seccomp;
	sp->caps_keep = e.caps_keep;
	sp->last_cap = e.last_cap;
	return 0;
}

/* Every fd of a plan starts as -1: a start refused before plan_build filled them (a paused
 * box, no fd left for its cgroups' files) closes none of the server's (plan_close). */
static const spawn_plan plan_empty = {.init_pidfd = -1,
                                      .cg = {.v2 = -1, .v2_reserve = -1, .reserve = -1},
                                      .stdin_fd = -1,
                                      .stdout_fd = -1,
                                      .stderr_fd = -1,
                                      .pid_w2 = -1,
                                      .life_w = -1};

int fk_proc_start(fk_rt *rt, const char *box_id, const fk_proc_spec *spec, fk_proc **proc_out,
                  fk_sub **sub_out, fk_err *err)
{
	spawn_plan sp = plan_empty;
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
	bool slot = rc == 0 && (rc = fk__proc_slot_take(rt, err)) == 0;
	if (rc == 0)
		rc = plan_build(b, spec, &sp, err);
	if (rc == 0 && !(p = fk__proc_alloc()))
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	if (rc == 0 && fk__proc_info_fill(&p->info, spec) < 0)
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	if (p)
		p->end_on_exit = rt->end_on_exit;
	if (rc == 0)
		rc = spec->pty ? open_pty(b, &sp, p, spec, err)
		               : open_pipes(&sp, p, spec->stdin_pipe, err);
	/* live restore: a shim holds the process and its output pipes (proc_shim.c) */
	fk_shim sh, *shp = NULL;
	if (rc == 0 && rt->live && rt->isolated) {
		rc = fk__shim_prepare(b, p, &sh, err);
		shp = rc == 0 ? &sh : NULL;
	}
	if (rc == 0)
		rc = run_spawn(&sp, p, spec->cwd ? spec->cwd : "", shp, err);
	if (shp)
		fk__shim_done(shp);
	plan_close(&sp);
	if (rc < 0)
		goto fail;
	p->info.pid = p->pid;
	if (sub_out)
		fk_sub_new(p, &sub, NULL); /* before the reader runs: nothing is missed */
	fk__proc_set_box(p, b);
	p->slot = true; /* the reader gives it back */
	fk__proc_run_reader(p);
	pthread_mutex_lock(&b->plock);
	fk__proc_purge_retained(b, &dead);
	p->refs++; /* the box's list */
	p->next = b->procs;
	b->procs = p;
	pthread_mutex_unlock(&b->plock);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	fk__proc_unref_list(dead);
	if (sub_out)
		*sub_out = sub;
	if (proc_out)
		*proc_out = p;
	else
		fk_proc_unref(p);
	return 0;
fail:
	if (slot)
		fk__proc_slot_give(rt);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	if (p) {
		fk__proc_close_fd(&p->out_fd);
		fk__proc_close_fd(&p->err_fd);
		fk_proc_unref(p);
	}
	return rc;
}
