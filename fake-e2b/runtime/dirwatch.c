/*
 * fake-e2b/runtime/dirwatch.c — directory watches (dirwatch.h): one inotify instance per watch, its
 * directories opened inside the box's "/" (boxfs.c, so a symlink cannot lead out of the box)
 * and added through /proc/self/fd/N; the watch descriptors map back to paths relative to the
 * watched directory. Operations follow fsnotify's inotify backend, which envd uses.
 */
#define _GNU_SOURCE
#include "dirwatch.h"
#include "boxfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* fsnotify's mask: every operation envd reports */
#define WATCH_MASK                                                                                 \
	(IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF |          \
	 IN_DELETE | IN_DELETE_SELF)
#define WATCH_DEPTH_MAX 256 /* levels a recursive watch descends, like ListDir */
/* Directories one watch takes at most: each is an inotify watch of the server's user (the host's
 * root), whose budget (fs.inotify.max_user_watches, 192,530 on the test machine) every root
 * process of the machine shares, and a box decides how many directories there are. */
#define WATCH_DIRS_MAX 10000
#define WATCH_BUF      (64 * 1024)

/* Across watches: each watch is an inotify instance of the host's root (fs.inotify.
 * max_user_instances, 128 here, shared by every root process) and each directory an inotify
 * watch of its budget; a box's clients decide how many watches are open. Counted per server
 * (process) and per box, taken at start, given back when a watch is freed (its stream ended, or
 * its sandbox was paused or deleted). */
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned server_watchers; /* open watches of the server */
static size_t server_dirs;       /* directories they watch */
typedef struct box_count {
	char id[FK_BOX_ID_MAX + 1];
	unsigned n;
} box_count;
static box_count *box_counts;
static size_t n_box_counts;

static box_count *box_count_find(const char *id)
{
	for (size_t i = 0; i < n_box_counts; i++)
		if (!strcmp(box_counts[i].id, id))
			return &box_counts[i];
	return NULL;
}

/* Takes one watcher for box `id`: 0, or FK_ENOSPC / FK_ENOMEM with err set. */
static int watcher_take(const char *id, fk_err *err)
{
	pthread_mutex_lock(&budget_lock);
	box_count *c = box_count_find(id);
	int rc = 0;
	if (server_watchers >= FK_DIRWATCH_SERVER_MAX)
		rc = fk__fail(
		    err, FK_ENOSPC, EMFILE,
		    "error creating watcher: the server has %d watches open, as many as it "
		    "keeps: end one first",
		    FK_DIRWATCH_SERVER_MAX);
	else if (c && c->n >= FK_DIRWATCH_BOX_MAX)
		rc = fk__fail(err, FK_ENOSPC, EMFILE,
		              "error creating watcher: the sandbox has %d watches open, as many as "
		              "it may: end one first",
		              FK_DIRWATCH_BOX_MAX);
	else if (!c) {
		box_count *v = realloc(box_counts, (n_box_counts + 1) * sizeof(*v));
		if (!v) {
			rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		} else {
			box_counts = v;
			c = &box_counts[n_box_counts++];
			snprintf(c->id, sizeof(c->id), "%s", id);
			c->n = 0;
		}
	}
	if (rc == 0) {
		c->n++;
		server_watchers++;
	}
	pthread_mutex_unlock(&budget_lock);
	return rc;
}

static void watcher_give(const char *id)
{
	pthread_mutex_lock(&budget_lock);
	box_count *c = box_count_find(id);
	if (c && --c->n == 0) {
		*c = box_counts[--n_box_counts];
		if (!n_box_counts) {
			free(box_counts);
			box_counts = NULL;
		}
	}
	server_watchers--;
	pthread_mutex_unlock(&budget_lock);
}

/* Takes one directory of the server's budget: false when it is spent. */
static bool dir_take(void)
{
	pthread_mutex_lock(&budget_lock);
	bool ok = server_dirs < FK_DIRWATCH_SERVER_DIRS_MAX;
	if (ok)
		server_dirs++;
	pthread_mutex_unlock(&budget_lock);
	return ok;
}

static void dirs_give(size_t n)
{
	pthread_mutex_lock(&budget_lock);
	server_dirs -= n;
	pthread_mutex_unlock(&budget_lock);
}

void fk_dirwatch_counts(unsigned *watchers, size_t *dirs)
{
	pthread_mutex_lock(&budget_lock);
	*watchers = server_watchers;
	*dirs = server_dirs;
	pthread_mutex_unlock(&budget_lock);
}

typedef struct wd_path {
	int wd;
	char *rel; /* "" for the watched directory itself */
} wd_path;

struct fk_dirwatch {
	fk_rt *rt;
	char box_id[FK_BOX_ID_MAX + 1];
	char *abs; /* the watched directory, absolute inside the box */
	bool recursive;
	bool counted; /* holds one watcher of the budget */
	int ifd;      /* inotify */
	int wake_fd;  /* eventfd: fk_dirwatch_wake */
	wd_path *wds;
	size_t n_wds, cap_wds;
	unsigned char *buf; /* events read, not yet returned */
	size_t len, off;
	uint32_t pending; /* ops of the event at buf+off not yet returned */
};

void fk_dirwatch_event_clear(fk_dirwatch_event *ev)
{
	if (!ev)
		return;
	free(ev->name);
	free(ev->path);
	memset(ev, 0, sizeof(*ev));
}

static wd_path *wd_find(fk_dirwatch *w, int wd)
{
	for (size_t i = 0; i < w->n_wds; i++)
		if (w->wds[i].wd == wd)
			return &w->wds[i];
	return NULL;
}

static int wd_set(fk_dirwatch *w, int wd, const char *rel)
{
	char *copy = strdup(rel);
	if (!copy)
		return -1;
	wd_path *e = wd_find(w, wd);
	if (e) { /* the same directory again (a bind mount, a move): the newest name wins */
		free(e->rel);
		e->rel = copy;
		return 0;
	}
	if (w->n_wds == w->cap_wds) {
		size_t cap = w->cap_wds ? w->cap_wds * 2 : 16;
		wd_path *v = realloc(w->wds, cap * sizeof(*v));
		if (!v) {
			free(copy);
			return -1;
		}
		w->wds = v;
		w->cap_wds = cap;
	}
	w->wds[w->n_wds++] = (wd_path){.wd = wd, .rel = copy};
	return 0; /* its directory was taken from the budget before it was added */
}

static void wd_drop(fk_dirwatch *w, int wd)
{
	for (size_t i = 0; i < w->n_wds; i++) {
		if (w->wds[i].wd == wd) {
			free(w->wds[i].rel);
			w->wds[i] = w->wds[--w->n_wds];
			dirs_give(1);
			return;
		}
	}
}

/* "rel/name" with the empty parts left out; "." for the watched directory itself. */
static char *join_rel(const char *rel, const char *name)
{
	char *s;
	if (!*rel)
		s = strdup(*name ? name : ".");
	else if (!*name)
		s = strdup(rel);
	else if (asprintf(&s, "%s/%s", rel, name) < 0)
		s = NULL;
	return s;
}

static char *join_abs(const char *abs, const char *rel)
{
	char *s;
	if (!*rel || !strcmp(rel, "."))
		return strdup(abs);
	if (asprintf(&s, "%s%s%s", abs, strcmp(abs, "/") ? "/" : "", rel) < 0)
		return NULL;
	return s;
}

static int open_dir_in_box(fk_dirwatch *w, const char *rel, bool follow_top, fk_err *err);

/* Adds the directory open as `fd` (rel to the watched dir) and, when recursive, every directory
 * below it (breadth-first, at most WATCH_DEPTH_MAX levels, no recursion). Takes `fd`. The walk
 * keeps the path of each directory waiting in it, not an open fd (a box's directory of 25,000
 * subdirectories held 25,000 of the server's fds at once), and opens one at a time inside the
 * box. 0; -1 when the top directory cannot be watched; -2 when the watch would pass
 * WATCH_DIRS_MAX directories (those past it are not watched). */
static int add_tree(fk_dirwatch *w, int fd, const char *rel)
{
	typedef struct pend {
		char *rel;
		unsigned depth;
	} pend;
	pend *q = malloc(sizeof(*q));
	char *r0 = q ? strdup(rel) : NULL;
	if (!r0) {
		free(q);
		close(fd);
		return -1;
	}
	size_t n = 1, cap = 1, head = 0;
	q[0] = (pend){r0, 0};
	int rc = 0;
	while (head < n) {
		pend cur = q[head++];
		int cfd = head == 1 ? fd : open_dir_in_box(w, cur.rel, false, NULL);
		if (cfd < 0) {
			free(cur.rel);
			continue; /* not a directory any more, or gone already */
		}
		if (w->n_wds >= WATCH_DIRS_MAX || !dir_take()) {
			close(cfd);
			free(cur.rel);
			rc = w->n_wds >= WATCH_DIRS_MAX ? -2 : -3;
			break;
		}
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", cfd);
		int wd = inotify_add_watch(w->ifd, proc, WATCH_MASK | IN_ONLYDIR);
		bool again = wd >= 0 && wd_find(w, wd); /* already watched: no new inotify watch */
		if (wd < 0 || again || wd_set(w, wd, cur.rel) < 0) {
			dirs_give(1);
			if (again)
				wd_set(w, wd, cur.rel);
			else if (head == 1)
				rc = -1; /* the top directory itself */
		}
		DIR *d = (w->recursive && wd >= 0 && cur.depth < WATCH_DEPTH_MAX) ? fdopendir(cfd)
		                                                                  : NULL;
		if (!d)
			close(cfd);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
				continue;
			char *crel = join_rel(cur.rel, de->d_name);
			if (n == cap) {
				size_t nc = cap * 2;
				pend *v = crel ? realloc(q, nc * sizeof(*v)) : NULL;
				if (!v) {
					free(crel);
					break;
				}
				q = v;
				cap = nc;
			}
			if (!crel)
				break;
			q[n++] = (pend){crel, cur.depth + 1};
		}
		if (d)
			closedir(d);
		free(cur.rel);
	}
	for (; head < n; head++)
		free(q[head].rel);
	free(q);
	return rc;
}

/* Opens directory `rel` of the watch inside the box, as root (the watch was allowed at start). */
static int open_dir_in_box(fk_dirwatch *w, const char *rel, bool follow_top, fk_err *err)
{
	fk_box *b = fk__box_get(w->rt, w->box_id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", w->box_id);
	pthread_rwlock_rdlock(&b->life);
	int rc;
	if (b->dead) {
		rc = fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", w->box_id);
	} else {
		rc = fk__box_rootfd(b, err);
		if (rc >= 0) {
			int rootfd = rc;
			const char *why;
			char *abs = join_abs(w->abs, rel);
			rc = abs ? fk__open_in(
			               rootfd, abs,
			               O_RDONLY | O_DIRECTORY | (follow_top ? 0 : O_NOFOLLOW), 0)
			         : -1;
			if (rc < 0) {
				rc = fk__fail(err, abs ? fk__errno_code(errno) : FK_ENOMEM, errno,
				              "path '%s' does not exist", abs ? abs : w->abs);
			} else if ((why = fk__fd_refused(rc)) != NULL) {
				close(rc); /* /proc is not watched, nor walked into */
				rc = fk__fail(err, FK_EINVAL, 0, "path '%s' %s", abs, why);
			}
			free(abs);
			close(rootfd);
		}
	}
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return rc;
}

/* Resolves `path` for `user` into w->abs and checks it is a directory. */
static int resolve_top(fk_dirwatch *w, const char *path, const char *user, fk_err *err)
{
	fk_box *b = fk__box_get(w->rt, w->box_id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", w->box_id);
	pthread_rwlock_rdlock(&b->life);
	int rc = b->dead ? fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", w->box_id) : 0;
	int rootfd = rc == 0 ? fk__box_rootfd(b, err) : -1;
	if (rc == 0 && rootfd < 0)
		rc = rootfd;
	fk_user u;
	if (rc == 0)
		rc = fk__user_lookup(b, rootfd, user, &u, err);
	if (rc == 0 && strlen(path) > 4096)
		rc = fk__fail(err, FK_EINVAL, 0, "path too long");
	if (rc == 0 && !(w->abs = fk__path_resolve(path, u.home)))
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	if (rc == 0) {
		int fd = fk__open_in(rootfd, w->abs, O_PATH, 0);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			rc = fk__fail(err,
			              errno == ENOENT || errno == ENOTDIR ? FK_ENOTFOUND : FK_EIO,
			              errno, "path '%s' does not exist", w->abs);
		else if (!S_ISDIR(st.st_mode))
			rc = fk__fail(err, FK_EINVAL, 0, "path '%s' is not a directory", w->abs);
		if (fd >= 0)
			close(fd);
	}
	if (rootfd >= 0)
		close(rootfd);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return rc;
}

int fk_dirwatch_new(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    bool recursive, fk_dirwatch **out, char **abs_out, fk_err *err)
{
	*out = NULL;
	if (abs_out)
		*abs_out = NULL;
	if (!box_id || strlen(box_id) > FK_BOX_ID_MAX)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox not found");
	fk_dirwatch *w = calloc(1, sizeof(*w));
	if (!w)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	w->rt = rt;
	snprintf(w->box_id, sizeof(w->box_id), "%s", box_id);
	w->recursive = recursive;
	w->ifd = w->wake_fd = -1;
	int rc = resolve_top(w, path ? path : "", user, err);
	if (rc == 0 && (rc = watcher_take(box_id, err)) == 0)
		w->counted = true;
	if (rc == 0 && (!(w->buf = malloc(WATCH_BUF)) ||
	                (w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 ||
	                (w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0))
		rc = fk__fail(err, FK_EIO, errno, "error creating watcher: %s", fk_strerror(errno));
	if (rc == 0) {
		int fd = open_dir_in_box(w, "", true, err);
		rc = fd < 0 ? fd : 0;
		int added = rc == 0 ? add_tree(w, fd, "") : 0;
		if (added == -2)
			rc = fk__fail(
			    err, FK_EINVAL, 0,
			    "watching '%s' recursively takes more than %d directories, more "
			    "than WatchDir watches: watch a subdirectory",
			    w->abs, WATCH_DIRS_MAX);
		else if (added == -3)
			rc = fk__fail(
			    err, FK_ENOSPC, ENOSPC,
			    "watching '%s' takes more directories than are left of the %d "
			    "the server's watches take at most: end other watches or watch a "
			    "subdirectory",
			    w->abs, FK_DIRWATCH_SERVER_DIRS_MAX);
		else if (added < 0)
			rc = fk__fail(err, FK_EIO, errno, "error adding path %s to watcher: %s",
			              w->abs, fk_strerror(errno));
	}
	if (rc == 0 && abs_out && !(*abs_out = strdup(w->abs)))
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	if (rc < 0) {
		fk_dirwatch_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The next op of `mask` in envd's order (create, rename, chmod, write, remove), 0 if none. */
static fk_dirwatch_op take_op(uint32_t *mask)
{
	static const struct {
		uint32_t bits;
		fk_dirwatch_op op;
	} order[] = {{IN_CREATE | IN_MOVED_TO, FK_DIRWATCH_CREATE},
	             {IN_MOVED_FROM | IN_MOVE_SELF, FK_DIRWATCH_RENAME},
	             {IN_ATTRIB, FK_DIRWATCH_CHMOD},
	             {IN_MODIFY, FK_DIRWATCH_WRITE},
	             {IN_DELETE | IN_DELETE_SELF, FK_DIRWATCH_REMOVE}};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (*mask & order[i].bits) {
			*mask &= ~order[i].bits;
			return order[i].op;
		}
	}
	return 0;
}

/* Returns the next op of the event at buf+off, moving on when it has none left. 1 = filled. */
static int next_buffered(fk_dirwatch *w, fk_dirwatch_event *ev)
{
	while (w->off < w->len) {
		const struct inotify_event *ie = (const void *)(w->buf + w->off);
		size_t size = sizeof(*ie) + ie->len;
		if (!w->pending) {
			w->pending = ie->mask & WATCH_MASK;
			if (ie->mask & IN_IGNORED)
				wd_drop(w, ie->wd);
			wd_path *wp = wd_find(w, ie->wd);
			/* a directory created or moved in below a recursive watch is watched too */
			if (wp && w->recursive && (ie->mask & IN_ISDIR) &&
			    (ie->mask & (IN_CREATE | IN_MOVED_TO)) && ie->len) {
				char *rel = join_rel(wp->rel, ie->name);
				int fd = rel ? open_dir_in_box(w, rel, false, NULL) : -1;
				if (fd >= 0)
					add_tree(w, fd, rel);
				free(rel);
			}
		}
		wd_path *wp = wd_find(w, ie->wd);
		fk_dirwatch_op op = wp ? take_op(&w->pending) : 0;
		if (!op) {
			w->pending = 0;
			w->off += size;
			continue;
		}
		const char *name = ie->len ? ie->name : "";
		ev->op = op;
		ev->name = join_rel(wp->rel, name);
		ev->path = ev->name ? join_abs(w->abs, ev->name) : NULL;
		if (!w->pending)
			w->off += size;
		if (!ev->name || !ev->path) {
			fk_dirwatch_event_clear(ev);
			continue; /* out of memory: this event is lost, like an inotify overflow */
		}
		return 1;
	}
	w->off = w->len = 0;
	return 0;
}

int fk_dirwatch_next(fk_dirwatch *w, fk_dirwatch_event *ev, int timeout_ms)
{
	memset(ev, 0, sizeof(*ev));
	for (;;) {
		if (next_buffered(w, ev))
			return 0;
		struct pollfd pfd[2] = {{.fd = w->ifd, .events = POLLIN},
		                        {.fd = w->wake_fd, .events = POLLIN}};
		int n = poll(pfd, 2, timeout_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return FK_EIO;
		if (n == 0)
			return FK_ETIMEOUT;
		if (pfd[1].revents) {
			uint64_t v;
			if (read(w->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return FK_EIO;
			return FK_ETIMEOUT;
		}
		ssize_t got = read(w->ifd, w->buf, WATCH_BUF);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got <= 0)
			return FK_EIO;
		w->len = (size_t)got;
		w->off = 0;
		w->pending = 0;
	}
}

void fk_dirwatch_wake(fk_dirwatch *w)
{
	uint64_t one = 1;
	if (w && w->wake_fd >= 0 && write(w->wake_fd, &one, sizeof(one)) < 0)
		one = 0; /* the counter cannot overflow: each wake-up is read at once */
}

void fk_dirwatch_free(fk_dirwatch *w)
{
	if (!w)
		return;
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	for (size_t i = 0; i < w->n_wds; i++)
		free(w->wds[i].rel);
	dirs_give(w->n_wds);
	if (w->counted)
		watcher_give(w->box_id);
	free(w->wds);
	free(w->buf);
	free(w->abs);
	free(w);
}
