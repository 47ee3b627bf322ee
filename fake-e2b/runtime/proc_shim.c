/*
 * fake-e2b/runtime/proc_shim.c — a live-restore runtime's process shims (proc_int.h), in
 * containerd-shim's shape: each process a kept server starts has a shim, a process of its own
 * outside the server and the box, that is the process's parent and holds its output pipes'
 * reading ends (and its stdin's writing end, or its terminal), so neither the process nor its
 * output dies with the server. The server reads the pipes itself, as for any process (the shim
 * never reads a byte the box writes: nothing of the box's is parsed or buffered by it); what the
 * shim adds is the process's exit status (its parent reaps it) and a way back in: a unix socket,
 * <state>/.live/<id>.p/<name>.sock (0700 directories, host root's), where a restarted server
 * connects and gets the process's pidfd and pipe ends again (SCM_RIGHTS), its in-box pid and
 * what Process/List shows of it (written by the server at the start, handed back as it was).
 * While no server is connected the pipes hold what the process writes, up to their kernel
 * buffer (64 KiB each): then its writes wait, bounded, until a server reads again.
 *
 * The shim is forked from the server (a multithreaded process): from the fork on it makes only
 * system calls, on memory prepared before. It exits once its process has exited and a server
 * has taken the exit status (closed its connection after the exit message), or 30 s after the
 * exit when no server came (as envd keeps an exit for Connect).
 */
#define _GNU_SOURCE
#include "cg_join.h"
#include "proc_int.h"
#include "procs.h"

#include "clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ the info blob */

static bool put(unsigned char *buf, size_t cap, size_t *off, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;
	size_t need = sizeof(n) + (s ? n : 0);
	if (*off + need > cap)
		return false;
	memcpy(buf + *off, &n, sizeof(n));
	if (s)
		memcpy(buf + *off + sizeof(n), s, n);
	*off += need;
	return true;
}

/* Process/List's view of a process, for its shim to hand back: cmd, tag, cwd, args, envs. */
static unsigned char *info_encode(const fk_proc_info *in, size_t *len)
{
	unsigned char *buf = malloc(SHIM_INFO_MAX);
	size_t off = 0;
	char n[2][16];
	snprintf(n[0], sizeof(n[0]), "%zu", in->n_args);
	snprintf(n[1], sizeof(n[1]), "%zu", in->n_envs);
	bool ok = buf && put(buf, SHIM_INFO_MAX, &off, in->cmd) &&
	          put(buf, SHIM_INFO_MAX, &off, in->tag) &&
	          put(buf, SHIM_INFO_MAX, &off, in->cwd) && put(buf, SHIM_INFO_MAX, &off, n[0]);
	for (size_t i = 0; ok && i < in->n_args; i++)
		ok = put(buf, SHIM_INFO_MAX, &off, in->args[i]);
	ok = ok && put(buf, SHIM_INFO_MAX, &off, n[1]);
	for (size_t i = 0; ok && i < in->n_envs; i++)
		ok = put(buf, SHIM_INFO_MAX, &off, in->env_keys[i]) &&
		     put(buf, SHIM_INFO_MAX, &off, in->env_values[i]);
	if (!ok && buf) { /* too long to keep whole: its command alone */
		off = 0;
		ok = put(buf, SHIM_INFO_MAX, &off, in->cmd) &&
		     put(buf, SHIM_INFO_MAX, &off, NULL) && put(buf, SHIM_INFO_MAX, &off, NULL) &&
		     put(buf, SHIM_INFO_MAX, &off, "0") && put(buf, SHIM_INFO_MAX, &off, "0");
	}
	if (!ok) {
		free(buf);
		return NULL;
	}
	*len = off;
	return buf;
}

/* One string of the blob (NULL allowed when `nullable`); false when the blob is malformed. */
static bool get(const unsigned char *buf, size_t len, size_t *off, char **out, bool nullable)
{
	uint32_t n;
	*out = NULL;
	if (*off + sizeof(n) > len)
		return false;
	memcpy(&n, buf + *off, sizeof(n));
	*off += sizeof(n);
	if (n == UINT32_MAX)
		return nullable;
	if (n > len - *off || !(*out = strndup((const char *)buf + *off, n)))
		return false;
	*off += n;
	return true;
}

static bool get_count(const unsigned char *buf, size_t len, size_t *off, size_t *n)
{
	char *s;
	if (!get(buf, len, off, &s, false))
		return false;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	bool ok = *s && !*end && v <= SHIM_INFO_MAX / 4;
	free(s);
	*n = v;
	return ok;
}

static bool info_decode(fk_proc_info *in, const unsigned char *buf, size_t len)
{
	size_t off = 0, n;
	memset(in, 0, sizeof(*in));
	if (!get(buf, len, &off, &in->cmd, false) || !get(buf, len, &off, &in->tag, true) ||
	    !get(buf, len, &off, &in->cwd, true) || !get_count(buf, len, &off, &n) ||
	    !(in->args = calloc(n ? n : 1, sizeof(char *))))
		return false;
	for (; in->n_args < n; in->n_args++)
		if (!get(buf, len, &off, &in->args[in->n_args], false))
			return false;
	if (!get_count(buf, len, &off, &n) || !(in->env_keys = calloc(n ? n : 1, sizeof(char *))) ||
	    !(in->env_values = calloc(n ? n : 1, sizeof(char *))))
		return false;
	for (; in->n_envs < n; in->n_envs++)
		if (!get(buf, len, &off, &in->env_keys[in->n_envs], false) ||
		    !get(buf, len, &off, &in->env_values[in->n_envs], false))
			return false;
	return off == len;
}

/* ------------------------------------------------------------ the shim (after the fork) */

typedef struct shim_state {
	int sock, listen_fd, dirfd;
	const char *name;
	int pidfd, out, err;
	bool pty;
	int32_t pid, host_pid;
	bool exited;
	int status;
	int64_t exited_ms;
	const unsigned char *info;
	size_t info_len;
} shim_state;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool write_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		s += w;
		n -= (size_t)w;
	}
	return true;
}

static bool shim_hello(const shim_state *st, int conn)
{
	shim_msg m = {.magic = SHIM_MAGIC,
	              .type = MSG_HELLO,
	              .pid = st->pid,
	              .host_pid = st->host_pid,
	              .exited = st->exited,
	              .status = st->status,
	              .pty = st->pty,
	              .len = (uint32_t)st->info_len};
	int fds[3], n = 0;
	if (st->pidfd >= 0 && !st->exited)
		fds[n++] = st->pidfd, m.fds |= FD_PIDFD;
	if (st->out >= 0)
		fds[n++] = st->out, m.fds |= FD_OUT;
	if (st->err >= 0)
		fds[n++] = st->err, m.fds |= FD_ERR;
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	}
	ssize_t w;
	do
		w = sendmsg(conn, &mh, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sizeof(m) && write_all(conn, st->info, st->info_len);
}

static void shim_exit_msg(const shim_state *st, int conn)
{
	shim_msg m = {.magic = SHIM_MAGIC, .type = MSG_EXIT, .status = st->status};
	write_all(conn, &m, sizeof(m));
}

static __attribute__((noreturn)) void shim_loop(shim_state *st)
{
	int conn = st->sock;
	if (!shim_hello(st, conn)) {
		close(conn);
		conn = -1;
	}
	for (;;) {
		if (st->exited && (conn < 0 && mono_ms() - st->exited_ms >= FK_RETAIN_MS))
			break;
		struct pollfd pfd[3] = {{.fd = st->exited ? -1 : st->pidfd, .events = POLLIN},
		                        {.fd = st->listen_fd, .events = POLLIN},
		                        {.fd = conn, .events = POLLIN}};
		int r = poll(pfd, 3, st->exited ? 1000 : -1);
		if (r < 0)
			continue;
		if (pfd[0].revents) {
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			int rc;
			do
				rc = waitid((idtype_t)P_PIDFD, (id_t)st->pidfd, &si, WEXITED);
			while (rc < 0 && errno == EINTR);
			st->exited = true;
			st->exited_ms = mono_ms();
			st->status = rc < 0                     ? SIGKILL
			             : si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
			             : si.si_code == CLD_DUMPED ? (si.si_status & 0x7f) | 0x80
			                                        : si.si_status & 0x7f;
			if (conn >= 0)
				shim_exit_msg(st, conn);
		}
		if (pfd[1].revents) {
			int c = accept4(st->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) { /* a new server: it replaces the one before */
				if (conn >= 0)
					close(conn);
				conn = c;
				if (!shim_hello(st, conn)) {
					close(conn);
					conn = -1;
				} else if (st->exited) {
					shim_exit_msg(st, conn);
				}
			}
		}
		if (conn >= 0 && pfd[2].revents) {
			shim_msg m;
			ssize_t n = recv(conn, &m, sizeof(m), MSG_WAITALL);
			if (n == (ssize_t)sizeof(m) && m.magic == SHIM_MAGIC &&
			    m.type == MSG_SETPID) {
				st->pid = m.pid;
			} else if (n <= 0 || n != (ssize_t)sizeof(m)) {
				close(conn); /* the server is gone, or done with us */
				conn = -1;
				if (st->exited)
					break; /* it took the exit */
			}
		}
	}
	unlinkat(st->dirfd, st->name, 0);
	_exit(0);
}

/* Closes every fd but the `n` in keep (async-signal-safe: a sort and close_range). */
static void close_all_but(int *keep, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned from = 3;
	for (int i = 0; i < n; i++) {
		if (keep[i] < 3)
			continue;
		if ((unsigned)keep[i] > from)
			close_range(from, (unsigned)keep[i] - 1, 0);
		from = (unsigned)keep[i] + 1;
	}
	close_range(from, ~0U, 0);
}

/* A copy of the server: its command line (which may carry the API key, and which a look for
 * the server by command line would match) becomes "fk-shim", as a box's PID 1 hides its own.
 * System calls only: the argv area is the kernel's /proc/self/cmdline, program_invocation_name
 * its first string. */
static void shim_hide_cmdline(void)
{
	char buf[8192];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	if (n <= 8 || (size_t)n >= sizeof(buf) || strcmp(buf, program_invocation_name))
		return;
	memset(program_invocation_name, 0, (size_t)n);
	memcpy(program_invocation_name, "fk-shim", 8);
}

/* The shim, once forked: out of the server's session and cgroup, holding only what it needs,
 * it runs the start (spawn) and then holds the process until it is done with it. */
static __attribute__((noreturn)) void shim_main(fk_shim *sh, int sock, int hp[2],
                                                const int *keep_spawn, int n_keep,
                                                pid_t (*spawn)(void *), void *arg)
{
	/* the shim: out of the server's session and cgroup (a service manager stopping the
	 * server kills what is left in its cgroup), named, holding only what it needs. Made in
	 * .shims (fk__shim_fork) where the kernel allows: else it moves itself */
	if (fk__cg_join_self(&sh->cg) < 0) { /* stays in the server's */
	}
	setsid();
	prctl(PR_SET_NAME, "fk-shim");
	shim_hide_cmdline();
	int keep[FK_CG_MAX_FDS + 24], n = 0;
	for (int i = 0; i < n_keep && n < FK_CG_MAX_FDS + 16; i++)
		if (keep_spawn[i] >= 0)
			keep[n++] = keep_spawn[i];
	fk__cg_join_close(&sh->cg);
	int mine[] = {sock, hp[0], hp[1], sh->listen_fd, sh->dirfd, sh->out, sh->err};
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (mine[i] >= 0)
			keep[n++] = mine[i];
	close_all_but(keep, n);
	pid_t helper = spawn(arg);
	close(hp[1]);
	int32_t msg[2] = {-1, EPIPE};
	ssize_t got = helper < 0 ? -1 : read(hp[0], msg, sizeof(msg));
	if (helper > 0)
		while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
			;
	if (got != (ssize_t)sizeof(msg) || msg[0] <= 0) {
		unlinkat(sh->dirfd, sh->name, 0);
		_exit(0); /* the start failed: the server says why */
	}
	shim_state st = {.sock = sock,
	                 .listen_fd = sh->listen_fd,
	                 .dirfd = sh->dirfd,
	                 .name = sh->name,
	                 .out = sh->out,
	                 .err = sh->err,
	                 .pty = sh->pty,
	                 .host_pid = msg[0],
	                 .info = sh->info,
	                 .info_len = sh->info_len};
	st.pidfd = (int)syscall(SYS_pidfd_open, (pid_t)msg[0], 0);
	/* what the start needed is the process's now: only ours stay */
	int last[] = {sock, sh->listen_fd, sh->dirfd, sh->out, sh->err, st.pidfd};
	n = 0;
	for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++)
		if (last[i] >= 0)
			keep[n++] = last[i];
	close_all_but(keep, n);
	if (st.pidfd < 0) { /* cannot happen for our own unreaped child */
		kill((pid_t)msg[0], SIGKILL);
		_exit(0);
	}
	shim_loop(&st);
}

int fk__shim_fork(fk_shim *sh, const int *keep_spawn, int n_keep, pid_t (*spawn)(void *), void *arg)
{
	int sv[2], hp[2] = {sh->helper_r, sh->helper_w};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	/* forked twice: the shim is no child of ours (nothing of the server waits for it), the
	 * host's init (or a subreaper) reaps it */
	pid_t mid = fork();
	if (mid > 0) {
		int st = 0, e = 0;
		while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			e = EAGAIN;
		close(sv[1]);
		if (e) {
			close(sv[0]);
			errno = e;
			return -1;
		}
		sh->conn = sv[0];
		return 0;
	}
	if (mid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		errno = e;
		return -1;
	}
	/* made in .shims (cg_join.h: no cgroup.procs write, whose global lock costs ms) */
	pid_t shim = fk__cg_spawn(&sh->cg, 0, NULL, 0, NULL, NULL);
	if (shim != 0)
		_exit(shim < 0 ? 1 : 0);
	shim_main(sh, sv[1], hp, keep_spawn, n_keep, spawn, arg);
}

/* ------------------------------------------------------------ the server's side */

static void proc_dir(const fk_box *b, char *out, size_t n)
{
	snprintf(out, n, "%s/.live/%s.p", b->rt->state_dir, b->id);
}

int fk__shim_prepare(fk_box *b, fk_proc *p, fk_shim *sh, fk_err *err)
{
	static unsigned seq;
	char dir[4200], top[4200];
	memset(sh, 0, sizeof(*sh));
	sh->conn = sh->listen_fd = sh->dirfd = sh->helper_r = sh->helper_w = -1;
	/* <v2 of this runtime>/.shims: outside any service's cgroup (a name no box has) */
	char cg[700];
	fk__cg_join_init(&sh->cg, b->rt);
	if (b->rt->cg2_dir) {
		snprintf(cg, sizeof(cg), "%s/.shims", b->rt->cg2_dir);
		if (mkdir(cg, 0755) == 0 || errno == EEXIST)
			sh->cg.v2 = open(cg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	int hp[2];
	if (pipe2(hp, O_CLOEXEC) < 0)
		return fk__fail(err, FK_EIO, errno, "pipe: %s", fk_strerror(errno));
	sh->helper_r = hp[0];
	sh->helper_w = hp[1];
	/* its stdin (a pipe's writing end) is the server's alone: a CloseStdin must reach the
	 * process as EOF, so that end dies with the server; a terminal's master is its output */
	sh->out = p->out_fd;
	sh->err = p->err_fd;
	sh->pty = p->pty;
	snprintf(top, sizeof(top), "%s/.live", b->rt->state_dir);
	proc_dir(b, dir, sizeof(dir));
	if ((mkdir(top, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST) ||
	    (sh->dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto fail;
	/* a random part: a restarted server may have the pid of the one before (a container's
	 * PID 1), whose adopted processes' shims still listen under its names */
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		goto fail;
	snprintf(sh->name, sizeof(sh->name), "%d-%u-%016llx.sock", (int)getpid(),
	         __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED), (unsigned long long)rnd);
	/* through the directory's fd: a state dir's path may be longer than sun_path */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%.60s", sh->dirfd, sh->name);
	sh->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sh->listen_fd < 0 || bind(sh->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(sh->listen_fd, 4) < 0)
		goto fail;
	if (!(sh->info = info_encode(&p->info, &sh->info_len))) {
		errno = ENOMEM;
		goto fail;
	}
	return 0;
fail:;
	int e = errno;
	fk__shim_done(sh);
	return fk__fail(err, FK_EIO, e, "the process's shim: %s", fk_strerror(e));
}

void fk__shim_done(fk_shim *sh)
{
	if (sh->listen_fd >= 0)
		close(sh->listen_fd);
	if (sh->dirfd >= 0)
		close(sh->dirfd);
	if (sh->helper_r >= 0)
		close(sh->helper_r);
	if (sh->helper_w >= 0)
		close(sh->helper_w);
	if (sh->conn >= 0)
		close(sh->conn);
	fk__cg_join_close(&sh->cg);
	free(sh->info);
	sh->info = NULL;
	sh->listen_fd = sh->dirfd = sh->helper_r = sh->helper_w = sh->conn = -1;
}

/* The hello of a shim on `conn` (at most SHIM_HELLO_MS): into p, its info decoded. 0 or -1. */
static int recv_hello(int conn, fk_proc *p, bool with_info)
{
	struct pollfd pfd = {.fd = conn, .events = POLLIN};
	if (poll(&pfd, 1, SHIM_HELLO_MS) != 1)
		return -1;
	shim_msg m;
	int fds[3] = {-1, -1, -1};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov,
	                    .msg_iovlen = 1,
	                    .msg_control = u.buf,
	                    .msg_controllen = sizeof(u.buf)};
	ssize_t n = recvmsg(conn, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	int nfd = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			nfd = nfd > 3 ? 3 : nfd;
			memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)nfd);
		}
	int want = __builtin_popcount(n == (ssize_t)sizeof(m) ? m.fds & 7u : 0);
	if (n != (ssize_t)sizeof(m) || m.magic != SHIM_MAGIC || m.type != MSG_HELLO ||
	    (mh.msg_flags & MSG_CTRUNC) || nfd != want || m.len > SHIM_INFO_MAX)
		goto bad;
	unsigned char *info = m.len ? malloc(m.len) : NULL;
	if (m.len && (!info || recv(conn, info, m.len, MSG_WAITALL) != (ssize_t)m.len)) {
		free(info);
		goto bad;
	}
	bool ok = !with_info || info_decode(&p->info, info, m.len);
	free(info);
	if (!ok) {
		fk__proc_info_clear(&p->info);
		goto bad;
	}
	int k = 0;
	p->pidfd = (m.fds & FD_PIDFD) ? fds[k++] : -1;
	p->out_fd = (m.fds & FD_OUT) ? fds[k++] : -1;
	p->err_fd = (m.fds & FD_ERR) ? fds[k++] : -1;
	/* a terminal takes input through its master; a pipe's stdin ended with its server */
	p->in_fd = -1;
	if (m.pty && p->out_fd >= 0)
		p->in_fd = fcntl(p->out_fd, F_DUPFD_CLOEXEC, 0);
	p->pid = (uint32_t)m.pid;
	p->info.pid = p->pid;
	p->host_pid = m.host_pid;
	p->pty = m.pty != 0;
	p->shim_exited = m.exited != 0;
	p->shim_status = m.status;
	return 0;
bad:
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	return -1;
}

int fk__shim_started(fk_proc *p, fk_shim *sh)
{
	p->shim_fd = sh->conn;
	sh->conn = -1;
	fk_proc tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (recv_hello(p->shim_fd, &tmp, false) < 0)
		return -1;
	/* the pipe ends it sent are copies of ours: only its pidfd is new */
	if (tmp.out_fd >= 0)
		close(tmp.out_fd);
	if (tmp.err_fd >= 0)
		close(tmp.err_fd);
	if (tmp.pidfd < 0)
		return -1;
	p->pidfd = tmp.pidfd;
	shim_msg m = {.magic = SHIM_MAGIC, .type = MSG_SETPID, .pid = (int32_t)p->pid};
	return write_all(p->shim_fd, &m, sizeof(m)) ? 0 : -1;
}

/* One shim of box b (its socket `name` in `dirfd`): its process back in the box's table. */
static void adopt_one(fk_box *b, int dirfd, const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%.60s", dirfd, name);
	int conn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn < 0)
		return;
	if (connect(conn, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ECONNREFUSED || errno == ENOENT)
			unlinkat(dirfd, name, 0); /* its shim is gone */
		close(conn);
		return;
	}
	fk_proc *p = fk__proc_alloc();
	if (!p) {
		close(conn);
		return;
	}
	if (recv_hello(conn, p, true) < 0) {
		close(conn);
		fk_proc_unref(p);
		return;
	}
	p->shim_fd = conn;
	p->end_on_exit = b->rt->end_on_exit;
	p->box = b;
	if (fk__proc_run_reader(p) < 0) {
		fk_proc_unref(p);
		return;
	}
	fk_proc *dead = NULL;
	pthread_mutex_lock(&b->plock);
	fk__proc_purge_retained(b, &dead);
	p->next = b->procs;
	b->procs = p; /* the box's list holds our ref */
	pthread_mutex_unlock(&b->plock);
	fk__proc_unref_list(dead);
}

void fk__procs_adopt(fk_box *b)
{
	if (!b->rt->live || b->init_pid <= 0)
		return;
	char dir[4200];
	proc_dir(b, dir, sizeof(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	DIR *d = fdopendir(dup(dfd));
	for (struct dirent *de; d && (de = readdir(d));) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.' || n < 6 || n > 60 || strcmp(de->d_name + n - 5, ".sock"))
			continue;
		adopt_one(b, dfd, de->d_name);
	}
	if (d)
		closedir(d);
	close(dfd);
}

/* ------------------------------------------------------------ exited shims' reaper */

/* Whether `pid` is a zombie child of `me` named fk-shim (its /proc stat). */
static bool zombie_shim(const char *pid, pid_t me)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%s/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
	char state = 0;
	int ppid = 0;
	return open_paren && close_paren && close_paren - open_paren == 8 &&
	       !strncmp(open_paren + 1, "fk-shim", 7) &&
	       sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && state == 'Z' &&
	       ppid == (int)me;
}

/* A shim is no child of the server (forked twice), so the host's init reaps it when it exits,
 * or the nearest child subreaper: when fake-e2b is that (a container's PID 1), every exited
 * shim stayed its zombie for good, one pid per Start (21 zombies after 21 Starts). Once a
 * second this reaps the zombies among its children that are shims; its own children (a box's
 * dead PID 1, kept so that its pid is not reused) are left to whoever waits for them. */
static void *shim_reaper(void *unused)
{
	(void)unused;
	pid_t me = getpid();
	while (fk_stop_sleep(1000) == 0) {
		DIR *d = opendir("/proc");
		for (struct dirent *de; d && (de = readdir(d));)
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
			    zombie_shim(de->d_name, me))
				waitpid((pid_t)strtol(de->d_name, NULL, 10), NULL, WNOHANG);
		if (d)
			closedir(d);
	}
	return NULL;
}

static void shim_reaper_once(void)
{
	int sub = 0;
	if (getpid() != 1 && (prctl(PR_GET_CHILD_SUBREAPER, &sub) < 0 || !sub))
		return;
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int e = pthread_create(&t, &a, shim_reaper, NULL);
	if (e)
		fprintf(stderr, "fake-e2b: runtime: no reaper for exited process shims: %s\n",
		        fk_strerror(e));
	pthread_attr_destroy(&a);
}

void fk__shim_reaper_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, shim_reaper_once);
}
