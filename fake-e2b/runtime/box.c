/*
 * fake-e2b/runtime/box.c — the runtime's shared core: the box table (lookup by id, refcounts),
 * error helpers (fk_err filling, errno -> fk_code, code names), the monotonic clock and a
 * symlink-safe rm -rf. Every other runtime file sits on top of this one; it calls none of them.
 */
#define _GNU_SOURCE
#include "runtime_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

void fk__box_free(fk_box *b)
{
	for (size_t i = 0; i < b->n_envs; i++)
		free(b->envs[i]);
	free(b->envs);
	free(b->default_user);
	free(b->layer_dir);
	free(b->workdir);
	free(b->dir);
	free(b->root);
	free(b->hdir);
	free(b->hroot);
	if (b->disk_fd >= 0)
		close(b->disk_fd);
	free(b->disk_img);
	free(b->cg);
	fk__erules_unref(b->egress);
	if (b->userns_fd >= 0)
		close(b->userns_fd);
	for (int i = 0; i < 2; i++)
		if (b->bind_links[i] >= 0)
			close(b->bind_links[i]);
	if (b->idrange_fd >= 0)
		close(b->idrange_fd); /* the range is free once the box's files are gone */
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
		fk__box_free(b);
}

uid_t fk__host_id(const fk_box *b, uid_t box_id)
{
	if (!b->id_base)
		return box_id;
	return b->id_base + (box_id < FK_IDS_SIZE ? box_id : FK_ID_NOBODY);
}

uid_t fk__box_id(const fk_box *b, uid_t host_id)
{
	if (!b->id_base)
		return host_id;
	if (host_id >= b->id_base && host_id - b->id_base < FK_IDS_SIZE)
		return host_id - b->id_base;
	return FK_ID_NOBODY;
}

bool fk__valid_id(const char *id)
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

fk_box *fk__box_new(fk_rt *rt, const char *id, const fk_box_options *opts)
{
	fk_box *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->rt = rt;
	b->refs = 1;
	b->init_pidfd = -1;
	b->idrange_fd = b->userns_fd = b->disk_fd = -1;
	b->bind_links[0] = b->bind_links[1] = -1;
	snprintf(b->id, sizeof(b->id), "%s", id);
	pthread_rwlock_init(&b->life, NULL);
	pthread_mutex_init(&b->plock, NULL);
	bool ok = asprintf(&b->dir, "%s/%s", rt->state_dir, id) >= 0;
	ok = ok && asprintf(&b->root, "%s/%s/root", rt->state_dir, id) >= 0;
	ok = ok && (b->hdir = strdup(b->dir)) && (b->hroot = strdup(b->root));
	if (ok && rt->freezer)
		ok = asprintf(&b->cg, "%s/%s", rt->cg_root, id) >= 0;
	b->net_none = opts && opts->net_none;
	static const char *const deny_all[] = {"0.0.0.0/0"};
	if (ok && opts && !b->net_none)
		b->egress = fk__erules_new(opts->allow_out, opts->n_allow_out, opts->deny_out,
		                           opts->n_deny_out);
	else if (ok)
		b->egress = b->net_none ? fk__erules_new(NULL, 0, deny_all, 1)
		                        : fk__erules_new(NULL, 0, NULL, 0);
	ok = ok && b->egress;
	fk__policy_limits(opts, &b->limits);
	if (!(opts && opts->disk_mb))
		b->limits.disk_bytes = (uint64_t)rt->default_disk_mb << 20;
	if (ok && opts && opts->n_envs) {
		b->envs = calloc(opts->n_envs, sizeof(char *));
		ok = b->envs != NULL;
		for (size_t i = 0; ok && i < opts->n_envs; i++) {
			b->envs[i] = strdup(opts->envs[i]);
			ok = b->envs[i] != NULL;
			b->n_envs = i + 1;
		}
	}
	b->tpl =
	    fk_template_find(opts && opts->template_id ? opts->template_id : FK_TEMPLATE_DEFAULT);
	ok = ok && b->tpl;
	if (ok && opts && opts->default_user)
		ok = (b->default_user = strdup(opts->default_user)) != NULL;
	if (ok && opts && opts->layer_dir)
		ok = (b->layer_dir = strdup(opts->layer_dir)) != NULL;
	if (ok && opts && opts->workdir)
		ok = (b->workdir = strdup(opts->workdir)) != NULL;
	if (!ok) {
		fk__box_free(b);
		return NULL;
	}
	return b;
}

int fk__box_init_open(fk_box *b, const char *what, int flags)
{
	char p[128];
	if (b->init_pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)b->init_pid, what);
	int fd = open(p, flags | O_CLOEXEC);
	if (fd < 0 || !b->adopted)
		return fd;
	/* an adopted PID 1 is not our child: its pid is another process's once it is reaped.
	 * Alive after the open: what was opened was its own. */
	struct pollfd pfd = {.fd = b->init_pidfd, .events = POLLIN};
	if (b->init_pidfd < 0 || poll(&pfd, 1, 0) != 0) {
		close(fd);
		errno = ESRCH;
		return -1;
	}
	return fd;
}
