/*
 * fake-e2b/runtime.c — the runtime object, its table of boxes and the box lifecycle (create,
 * freeze, thaw, reboot, destroy). The box's PID 1 and mounts live in box_init.c, processes in
 * proc.c, files in box_files.c. Knows nothing of HTTP.
 */
#define _GNU_SOURCE
#include "runtime_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FREEZER_ROOT "/sys/fs/cgroup/freezer"

int fk__fail(fk_err *err, int code, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		err->errnum = errnum;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

int fk__errno_code(int errnum)
{
	switch (errnum) {
	case ENOENT:
		return FK_ENOTFOUND;
	case EISDIR:
		return FK_EISDIR;
	case ENOTDIR:
		return FK_ENOTDIR;
	case EEXIST:
		return FK_EEXIST;
	case ENOSPC:
	case EDQUOT:
		return FK_ENOSPC;
	case ENOMEM:
		return FK_ENOMEM;
	case EINVAL:
	case ENAMETOOLONG:
	case ELOOP:
	case EXDEV:
		return FK_EINVAL;
	default:
		return FK_EIO;
	}
}

const char *fk_code_name(int code)
{
	switch (code) {
	case FK_OK:
		return "FK_OK";
	case FK_EINVAL:
		return "FK_EINVAL";
	case FK_ENOTFOUND:
		return "FK_ENOTFOUND";
	case FK_ENOCWD:
		return "FK_ENOCWD";
	case FK_EISDIR:
		return "FK_EISDIR";
	case FK_ENOTDIR:
		return "FK_ENOTDIR";
	case FK_EEXIST:
		return "FK_EEXIST";
	case FK_ENOUSER:
		return "FK_ENOUSER";
	case FK_ESTATE:
		return "FK_ESTATE";
	case FK_ENOSPC:
		return "FK_ENOSPC";
	case FK_ETIMEOUT:
		return "FK_ETIMEOUT";
	case FK_EIO:
		return "FK_EIO";
	case FK_ENOMEM:
		return "FK_ENOMEM";
	case FK_ESPAWN:
		return "FK_ESPAWN";
	case FK_ECLOSED:
		return "FK_ECLOSED";
	default:
		return "FK_E?";
	}
}

int64_t fk__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* rm -rf of `name` under `dirfd`, never following symlinks (the box's files are hostile). */
int fk__rm_rf_at(int parent, const char *name)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		fk__rm_rf_at(dirfd(d), de->d_name);
	}
	closedir(d);
	return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

static int write_file_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static bool probe_isolation(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "fake-e2b: not running as root: sandboxes are NOT isolated (no "
		                "namespaces, no users, no freezer); processes run in a per-sandbox "
		                "directory on the host\n");
		return false;
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWNS | CLONE_NEWPID) == 0 ? 0 : 1);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fake-e2b: cannot create mount/PID namespaces: sandboxes are NOT "
		                "isolated\n");
		return false;
	}
	return true;
}

/* Removes the (empty) cgroups a crashed fake-e2b left under fake-e2b/: a runtime's dir is
 * named rt-<pid>-<n>, so a dir whose pid is gone is stale. Best effort. */
static void sweep_stale_cgroups(const char *top)
{
	DIR *d = opendir(top);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		int pid = 0;
		if (sscanf(de->d_name, "rt-%d-", &pid) != 1 || pid <= 0 ||
		    (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", top, de->d_name);
		DIR *sub = opendir(path);
		struct dirent *se;
		while (sub && (se = readdir(sub)) != NULL) {
			char box[8192];
			if (se->d_type != DT_DIR || se->d_name[0] == '.')
				continue;
			snprintf(box, sizeof(box), "%s/%s", path, se->d_name);
			rmdir(box);
		}
		if (sub)
			closedir(sub);
		rmdir(path);
	}
	if (d)
		closedir(d);
}

/* Freezer cgroups live under fake-e2b/rt-<pid>-<n>/<box id>, so several fake-e2b processes
 * (and several runtimes in one process) never share a box's cgroup. */
static bool probe_freezer(fk_rt *rt)
{
	static int seq;
	const char *top = FREEZER_ROOT "/fake-e2b";
	if (mkdir(top, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr,
		        "fake-e2b: no freezer cgroup at %s (%s): pause stops processes with "
		        "SIGSTOP instead\n",
		        FREEZER_ROOT, fk_strerror(errno));
		return false;
	}
	sweep_stale_cgroups(top);
	int n = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
	if (asprintf(&rt->cg_root, "%s/rt-%d-%d", top, (int)getpid(), n) < 0) {
		rt->cg_root = NULL;
		return false;
	}
	if (mkdir(rt->cg_root, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "fake-e2b: cannot create %s (%s): pause uses SIGSTOP\n",
		        rt->cg_root, fk_strerror(errno));
		free(rt->cg_root);
		rt->cg_root = NULL;
		return false;
	}
	return true;
}

int fk_rt_new(fk_rt **out, const fk_rt_options *opts, fk_err *err)
{
	*out = NULL;
	fk_rt *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	pthread_mutex_init(&rt->lock, NULL);
	rt->life_pipe[0] = rt->life_pipe[1] = -1;
	if (opts && opts->state_dir) {
		rt->state_dir = strdup(opts->state_dir);
		if (rt->state_dir && mkdir(rt->state_dir, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			fk_rt_free(rt);
			return fk__fail(err, FK_EIO, e, "cannot create state dir: %s",
			                fk_strerror(e));
		}
	} else {
		/* tmpfs when there is one: uploads of 64 MiB at >= 200 MB/s even on a busy disk */
		struct stat st;
		bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
		           access("/dev/shm", W_OK) == 0;
		rt->state_dir = strdup(shm ? "/dev/shm/fake-e2b-XXXXXX" : "/tmp/fake-e2b-XXXXXX");
		if (rt->state_dir && !mkdtemp(rt->state_dir)) {
			int e = errno;
			fk_rt_free(rt);
			return fk__fail(err, FK_EIO, e, "mkdtemp: %s", fk_strerror(e));
		}
		rt->state_is_tmp = true;
	}
	if (!rt->state_dir) {
		fk_rt_free(rt);
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	chmod(rt->state_dir, 0755);
	rt->isolated = !(opts && opts->no_isolation) && probe_isolation();
	if (rt->isolated)
		rt->freezer = probe_freezer(rt);
#if defined(__SANITIZE_THREAD__)
	prctl(PR_SET_CHILD_SUBREAPER, 1); /* proc.c forks instead of clone(CLONE_PARENT) */
#endif
	if (rt->isolated && pipe2(rt->life_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		fk_rt_free(rt);
		return fk__fail(err, FK_EIO, e, "pipe: %s", fk_strerror(e));
	}
	if (rt->isolated)
		fk__rt_etc_template(rt);
	*out = rt;
	return 0;
}

bool fk_rt_isolated(const fk_rt *rt)
{
	return rt && rt->isolated;
}

fk_box *fk__box_get(fk_rt *rt, const char *id)
{
	fk_box *b;
	pthread_mutex_lock(&rt->lock);
	for (b = rt->boxes; b; b = b->next)
		if (!strcmp(b->id, id))
			break;
	if (b)
		b->refs++;
	pthread_mutex_unlock(&rt->lock);
	return b;
}

static void box_free(fk_box *b)
{
	for (size_t i = 0; i < b->n_envs; i++)
		free(b->envs[i]);
	free(b->envs);
	free(b->default_user);
	free(b->dir);
	free(b->root);
	free(b->cg);
	pthread_rwlock_destroy(&b->life);
	pthread_mutex_destroy(&b->plock);
	free(b);
}

void fk__box_put(fk_box *b)
{
	if (!b)
		return;
	fk_rt *rt = b->rt;
	pthread_mutex_lock(&rt->lock);
	int left = --b->refs;
	pthread_mutex_unlock(&rt->lock);
	if (left == 0)
		box_free(b);
}

static bool valid_id(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > FK_BOX_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return false;
	}
	return true;
}

static fk_box *box_new(fk_rt *rt, const char *id, const fk_box_options *opts)
{
	fk_box *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->rt = rt;
	b->refs = 1;
	b->init_pidfd = -1;
	snprintf(b->id, sizeof(b->id), "%s", id);
	pthread_rwlock_init(&b->life, NULL);
	pthread_mutex_init(&b->plock, NULL);
	bool ok = asprintf(&b->dir, "%s/%s", rt->state_dir, id) >= 0;
	ok = ok && asprintf(&b->root, "%s/%s/root", rt->state_dir, id) >= 0;
	if (ok && rt->freezer)
		ok = asprintf(&b->cg, "%s/%s", rt->cg_root, id) >= 0;
	b->net_none = opts && opts->net_none;
	if (ok && opts && opts->n_envs) {
		b->envs = calloc(opts->n_envs, sizeof(char *));
		ok = b->envs != NULL;
		for (size_t i = 0; ok && i < opts->n_envs; i++) {
			b->envs[i] = strdup(opts->envs[i]);
			ok = b->envs[i] != NULL;
			b->n_envs = i + 1;
		}
	}
	if (ok && opts && opts->default_user)
		ok = (b->default_user = strdup(opts->default_user)) != NULL;
	if (!ok) {
		box_free(b);
		return NULL;
	}
	return b;
}

static int cg_set_state(fk_box *b, const char *state)
{
	char path[512], cur[32];
	snprintf(path, sizeof(path), "%s/freezer.state", b->cg);
	if (write_file_str(path, state) < 0)
		return -1;
	/* FREEZING is transient: wait until every task is frozen (or thawed) */
	for (int i = 0; i < 10000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		ssize_t n = read(fd, cur, sizeof(cur) - 1);
		close(fd);
		if (n > 0 && !strncmp(cur, state, strlen(state)))
			return 0;
		if (i % 100 == 99)
			write_file_str(path, state);
		usleep(1000);
	}
	errno = ETIMEDOUT;
	return -1;
}

/* Stops every process of the box and its PID 1, and waits until the PID namespace is empty
 * (the kernel keeps PID 1 unreapable until every task of the namespace is reaped, and our
 * process threads reap theirs once told to stop forwarding). Under b->life exclusive. */
static void box_kill_all(fk_box *b)
{
	fk__box_procs_stop(b);
	if (b->init_pid > 0) {
		kill(b->init_pid, SIGKILL);
		/* a frozen task cannot die: thaw after the kill is queued */
		if (b->cg && b->frozen)
			cg_set_state(b, "THAWED");
		while (waitpid(b->init_pid, NULL, 0) < 0 && errno == EINTR)
			;
		b->init_pid = 0;
	} else if (!b->rt->isolated) {
		fk__box_procs_stop_hostpids(b, SIGCONT);
		fk__box_procs_stop_hostpids(b, SIGKILL);
	}
	if (b->init_pidfd >= 0)
		close(b->init_pidfd);
	b->init_pidfd = -1;
	b->frozen = false;
}

int fk_box_create(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err)
{
	if (!valid_id(id))
		return fk__fail(err, FK_EINVAL, 0, "invalid sandbox id");
	fk_box *b = box_new(rt, id, opts);
	if (!b)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	pthread_mutex_lock(&rt->lock);
	for (fk_box *o = rt->boxes; o; o = o->next) {
		if (!strcmp(o->id, id)) {
			pthread_mutex_unlock(&rt->lock);
			box_free(b);
			return fk__fail(err, FK_EEXIST, 0, "sandbox %s already exists", id);
		}
	}
	b->next = rt->boxes;
	rt->boxes = b;
	b->refs++; /* ours until the end of this function */
	pthread_rwlock_wrlock(&b->life);
	pthread_mutex_unlock(&rt->lock);

	int rc = fk__box_populate(b, err);
	if (rc == 0 && rt->isolated)
		rc = fk__box_boot(b, err);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	if (rc < 0)
		fk_box_destroy(rt, id, NULL);
	return rc;
}

static int box_op(fk_rt *rt, const char *id, fk_box **out, fk_err *err)
{
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", id);
	pthread_rwlock_wrlock(&b->life);
	if (b->dead) {
		pthread_rwlock_unlock(&b->life);
		fk__box_put(b);
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", id);
	}
	*out = b;
	return 0;
}

static void box_op_done(fk_box *b)
{
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
}

int fk_box_freeze(fk_rt *rt, const char *id, fk_err *err)
{
	fk_box *b;
	int rc = box_op(rt, id, &b, err);
	if (rc < 0)
		return rc;
	if (!b->frozen) {
		if (b->cg) {
			if (cg_set_state(b, "FROZEN") < 0) {
				int e = errno;
				rc = fk__fail(err, FK_EIO, e, "freeze: %s", fk_strerror(e));
			}
		} else {
			fk__box_procs_stop_hostpids(b, SIGSTOP);
		}
		if (rc == 0)
			b->frozen = true;
	}
	box_op_done(b);
	return rc;
}

int fk_box_thaw(fk_rt *rt, const char *id, fk_err *err)
{
	fk_box *b;
	int rc = box_op(rt, id, &b, err);
	if (rc < 0)
		return rc;
	if (b->frozen) {
		if (b->cg) {
			if (cg_set_state(b, "THAWED") < 0) {
				int e = errno;
				rc = fk__fail(err, FK_EIO, e, "thaw: %s", fk_strerror(e));
			}
		} else {
			fk__box_procs_stop_hostpids(b, SIGCONT);
		}
		if (rc == 0)
			b->frozen = false;
	}
	box_op_done(b);
	return rc;
}

int fk_box_reboot(fk_rt *rt, const char *id, fk_err *err)
{
	fk_box *b;
	int rc = box_op(rt, id, &b, err);
	if (rc < 0)
		return rc;
	box_kill_all(b);
	fk__box_prepare_fs(b, false);
	if (rt->isolated)
		rc = fk__box_boot(b, err);
	box_op_done(b);
	return rc;
}

int fk_box_destroy(fk_rt *rt, const char *id, fk_err *err)
{
	fk_box *b = NULL, **pp;
	pthread_mutex_lock(&rt->lock);
	for (pp = &rt->boxes; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->id, id)) {
			b = *pp;
			*pp = b->next; /* the table's ref is now ours */
			break;
		}
	}
	pthread_mutex_unlock(&rt->lock);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", id);
	pthread_rwlock_wrlock(&b->life);
	b->dead = true;
	box_kill_all(b);
	fk__box_procs_release(b);
	if (b->cg && rmdir(b->cg) < 0 && errno != ENOENT)
		fprintf(stderr, "fake-e2b: rmdir %s: %s\n", b->cg, fk_strerror(errno));
	int dfd = open(b->rt->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fk__rm_rf_at(dfd, b->id);
		close(dfd);
	}
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return 0;
}

bool fk_box_exists(fk_rt *rt, const char *id, bool *frozen_out)
{
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return false;
	if (frozen_out) {
		pthread_rwlock_rdlock(&b->life);
		*frozen_out = b->frozen;
		pthread_rwlock_unlock(&b->life);
	}
	fk__box_put(b);
	return true;
}

pid_t fk_box_init_pid(fk_rt *rt, const char *id)
{
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return 0;
	pthread_rwlock_rdlock(&b->life);
	pid_t pid = b->init_pid;
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return pid;
}

void fk_rt_free(fk_rt *rt)
{
	if (!rt)
		return;
	for (;;) {
		char id[FK_BOX_ID_MAX + 1];
		pthread_mutex_lock(&rt->lock);
		bool any = rt->boxes != NULL;
		if (any)
			snprintf(id, sizeof(id), "%s", rt->boxes->id);
		pthread_mutex_unlock(&rt->lock);
		if (!any)
			break;
		fk_box_destroy(rt, id, NULL);
	}
	if (rt->cg_root) {
		rmdir(rt->cg_root);
		rmdir(FREEZER_ROOT
		      "/fake-e2b"); /* fails harmlessly while another runtime uses it */
	}
	for (int i = 0; i < 2; i++)
		if (rt->life_pipe[i] >= 0)
			close(rt->life_pipe[i]);
	if (rt->etc_template)
		fk__rm_rf_at(AT_FDCWD, rt->etc_template);
	if (rt->state_is_tmp && rt->state_dir)
		fk__rm_rf_at(AT_FDCWD, rt->state_dir);
	free(rt->etc_template);
	free(rt->cg_root);
	free(rt->state_dir);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}
