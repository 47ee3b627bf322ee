/*
 * fake-e2b/util/fstree.c: see fstree.h.
 *
 * glibc's nftw and GNU cp are no use on a sandbox's tree: nftw recurses once per level (a
 * 1,900-level tree overflowed a connection thread's 512 KiB stack and took the server down) and
 * both hand the kernel whole paths, which stop at PATH_MAX (4,096 bytes: 2,048 levels of
 * one-letter names). fts(3) keeps paths too, and without them it fchdir()s, which moves the
 * whole server's working directory.
 */
#define _GNU_SOURCE
#include "fstree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ------------------------------------------------------------ the walk */

/* A path below the top, grown and cut back as the walk goes down and up. */
typedef struct pathbuf {
	char *s;
	size_t len, cap;
} pathbuf;

/* Appends "/name" ("name" at the top); the length before, or (size_t)-1 on ENOMEM. */
static size_t path_push(pathbuf *p, const char *name)
{
	size_t before = p->len, n = strlen(name), need = p->len + 1 + n + 1;
	if (need > p->cap) {
		size_t nc = p->cap ? p->cap : 256;
		while (nc < need)
			nc *= 2;
		char *ns = realloc(p->s, nc);
		if (!ns)
			return (size_t)-1;
		p->s = ns;
		p->cap = nc;
	}
	if (p->len)
		p->s[p->len++] = '/';
	memcpy(p->s + p->len, name, n + 1);
	p->len += n;
	return before;
}

static void path_cut(pathbuf *p, size_t len)
{
	p->len = len;
	if (p->s)
		p->s[len] = 0;
}

/* A directory above the walk's current one. */
typedef struct level {
	dev_t dev; /* the directory itself: what ".." must lead back to */
	ino_t ino;
	long pos;        /* where its reading stopped (telldir) */
	char *child;     /* the entry walked into */
	struct stat cst; /* its lstat */
	size_t plen;     /* the path's length without the child */
} level;

/* Opens directory `name` of `dfd` that lstat said is `want`: its fd; -2 when it is gone or is
 * no longer that directory (a symlink or another directory put there meanwhile); -1 on another
 * error. */
static int open_dir(int dfd, const char *name, const struct stat *want)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -2 : -1;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (st.st_dev != want->st_dev || st.st_ino != want->st_ino) {
		close(fd);
		return -2;
	}
	return fd;
}

typedef struct walk {
	fk_tree_fn fn;
	void *ud;
	struct stat top; /* the top: its device bounds the walk */
	struct stat cst; /* the directory being read */
	pathbuf pb;      /* its path below the top */
	level *lv;       /* the directories above it */
	size_t depth, cap;
	int err;
} walk;

/* Reads directory `d` on from where it is, calling back on each entry: the fd of a
 * subdirectory to walk into (its parent pushed as a level; `d` is left to the caller), -2 at
 * the end of `d`, -1 on an error (w->err). */
static int walk_next(walk *w, DIR *d)
{
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			w->err = errno; /* 0: the end */
			return w->err ? -1 : -2;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed meanwhile */
			w->err = errno;
			return -1;
		}
		if (st.st_dev != w->top.st_dev)
			continue; /* a mount point: not ours to walk */
		size_t plen = path_push(&w->pb, de->d_name);
		if (plen == (size_t)-1) {
			w->err = ENOMEM;
			return -1;
		}
		fk_tree_ent e = {dirfd(d), de->d_name, w->pb.s, &st, w->depth + 1, false};
		int r = w->fn(&e, w->ud);
		int child = r < 0 ? -1
		            : !S_ISDIR(st.st_mode) || r == FK_TREE_SKIP
		                ? -3
		                : open_dir(dirfd(d), de->d_name, &st);
		if (child == -2) { /* gone: an empty directory */
			e.post = true;
			child = w->fn(&e, w->ud) < 0 ? -1 : -3;
		}
		if (child == -1) {
			w->err = errno;
			return -1;
		}
		if (child == -3) {
			path_cut(&w->pb, plen);
			continue;
		}
		if (w->depth == w->cap) {
			size_t nc = w->cap ? w->cap * 2 : 64;
			level *nl = realloc(w->lv, nc * sizeof(*nl));
			if (nl) {
				w->lv = nl;
				w->cap = nc;
			}
		}
		char *cn = w->depth < w->cap ? strdup(de->d_name) : NULL;
		if (!cn) {
			close(child);
			w->err = ENOMEM;
			return -1;
		}
		w->lv[w->depth++] = (level){w->cst.st_dev, w->cst.st_ino, telldir(d), cn, st, plen};
		w->cst = st;
		return child;
	}
}

/* From finished directory `d` (closed here) back to its parent, which must be the directory
 * the walk came down from, and the parent's post call for it: the parent's fd, its reading to
 * resume at *resume; -1 on an error (w->err). */
static int walk_up(walk *w, DIR *d, long *resume)
{
	int up = openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	closedir(d);
	level *l = &w->lv[--w->depth];
	struct stat ust;
	if (up < 0 || fstat(up, &ust) < 0 || ust.st_dev != l->dev || ust.st_ino != l->ino) {
		w->err = up < 0 ? e : ESTALE; /* moved meanwhile: the walk stops here */
		if (up >= 0)
			close(up);
		free(l->child);
		return -1;
	}
	w->cst = ust;
	*resume = l->pos;
	fk_tree_ent pe = {up, l->child, w->pb.s, &l->cst, w->depth + 1, true};
	int r = w->fn(&pe, w->ud);
	w->err = errno;
	path_cut(&w->pb, l->plen);
	free(l->child);
	if (r < 0) {
		close(up);
		return -1;
	}
	return up;
}

int fk_tree_walk(int parent, const char *name, fk_tree_fn fn, void *ud)
{
	walk w = {.fn = fn, .ud = ud};
	if (!name || !*name) {
		errno = EINVAL;
		return -1;
	}
	if (fstatat(parent, name, &w.top, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	fk_tree_ent e = {parent, name, "", &w.top, 0, false};
	int r = fn(&e, ud);
	if (r < 0)
		return -1;
	if (!S_ISDIR(w.top.st_mode) || r == FK_TREE_SKIP)
		return 0;
	int cur = open_dir(parent, name, &w.top);
	if (cur == -1)
		return -1;
	w.cst = w.top;
	long resume = -1;
	int rc = 0;
	while (cur >= 0) {
		DIR *d = fdopendir(cur);
		if (!d) {
			w.err = errno;
			close(cur);
			rc = -1;
			break;
		}
		if (resume >= 0)
			seekdir(d, resume);
		resume = -1;
		int down = walk_next(&w, d);
		if (down == -2 && w.depth == 0) { /* the top is done */
			closedir(d);
			break;
		}
		if (down == -2) {
			cur = walk_up(&w, d, &resume);
		} else {
			closedir(d);
			cur = down;
		}
		rc = cur == -1 ? -1 : 0;
	}
	for (size_t i = 0; i < w.depth; i++)
		free(w.lv[i].child);
	free(w.lv);
	free(w.pb.s);
	if (rc == 0) {
		e = (fk_tree_ent){parent, name, "", &w.top, 0, true};
		return fn(&e, ud) < 0 ? -1 : 0;
	}
	errno = w.err ? w.err : EIO;
	return -1;
}

/* ------------------------------------------------------------ size */

static int add_blocks(const fk_tree_ent *e, void *ud)
{
	if (!e->post)
		*(uint64_t *)ud += (uint64_t)e->st->st_blocks * 512;
	return FK_TREE_GO;
}

int fk_tree_bytes(const char *dir, uint64_t *bytes)
{
	*bytes = 0;
	if (!dir || !*dir) {
		errno = EINVAL;
		return -1;
	}
	return fk_tree_walk(AT_FDCWD, dir, add_blocks, bytes);
}

/* ------------------------------------------------------------ removal */

/* Tries to remove entry `name` of `dirfd`: 0 when gone, 1 when it is a non-empty directory,
 * -1 on another error. */
static int try_remove(int dirfd, const char *name)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
		return 0;
	return errno == ENOTEMPTY || errno == EEXIST ? 1 : -1;
}

typedef struct dev_ino {
	dev_t dev;
	ino_t ino;
	char *child; /* the entry walked into */
} dev_ino;

/* The first entry of directory `cur` that try_remove leaves as a non-empty directory, opened
 * (no symlink followed) in *down with its name in *child (malloc'd); the entries before it are
 * removed as they come. 1 when found, 0 when none is left, -1 on an error. */
static int first_full_dir(int cur, int *down, char **child)
{
	DIR *d = fdopendir(dup(cur));
	struct dirent *de;
	int rc = 0;

	*down = -1;
	*child = NULL;
	if (!d)
		return -1;
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (try_remove(cur, de->d_name) != 1)
			continue; /* gone, or not removable (then the parent's rmdir fails) */
		*down = openat(cur, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (*down < 0)
			continue;
		if (!(*child = strdup(de->d_name))) {
			close(*down);
			*down = -1;
			rc = -1;
		} else {
			rc = 1;
		}
		break;
	}
	closedir(d);
	return rc;
}

/* Down one level: cur's (device, inode) and the entry walked into, kept to climb back. */
static int push_level(dev_ino **up, size_t *depth, size_t *cap, int cur, char *child)
{
	struct stat st;

	if (*depth == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		dev_ino *nu = realloc(*up, nc * sizeof(*nu));
		if (!nu)
			return -1;
		*up = nu;
		*cap = nc;
	}
	if (fstat(cur, &st) < 0)
		return -1;
	(*up)[(*depth)++] = (dev_ino){st.st_dev, st.st_ino, child};
	return 0;
}

/* Up one level through "..", which must be the directory kept for it (else ESTALE): its fd,
 * or -1. */
static int climb(int cur, const dev_ino *above)
{
	struct stat st;
	int p = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (p < 0 || fstat(p, &st) < 0 || st.st_dev != above->dev || st.st_ino != above->ino) {
		if (p >= 0)
			close(p);
		errno = ESTALE;
		return -1;
	}
	return p;
}

/* Not fk_tree_walk: removing entries moves the others' positions in some file systems (tmpfs),
 * so a saved position is no use. This walks down into the first non-empty directory, empties
 * it, and climbs back through ".." (checked like the walk's) to read its parent again from the
 * start. An entry that cannot be removed stops it (-1): no loop, no escape. */
int fk_tree_remove(int parent, const char *name)
{
	int r = try_remove(parent, name);
	if (r <= 0)
		return r;
	int cur = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cur < 0)
		return -1;
	dev_ino *up = NULL; /* up[i]: the directory above level i+1 */
	size_t depth = 0, cap = 0;
	int rc = 0;
	for (;;) {
		int down;
		char *child;
		int found = first_full_dir(cur, &down, &child);
		if (found < 0) {
			rc = -1;
			break;
		}
		if (found) {
			if (push_level(&up, &depth, &cap, cur, child) < 0) {
				close(down);
				free(child);
				rc = -1;
				break;
			}
			close(cur);
			cur = down;
			continue;
		}
		if (depth == 0)
			break;
		int p = climb(cur, &up[depth - 1]);
		if (p < 0) {
			rc = -1;
			break;
		}
		depth--;
		close(cur);
		cur = p;
		int gone = try_remove(cur, up[depth].child);
		free(up[depth].child);
		if (gone != 0) {
			rc = -1;
			break;
		}
	}
	int e = errno;
	close(cur);
	for (size_t i = 0; i < depth; i++)
		free(up[i].child);
	free(up);
	if (rc < 0) {
		errno = e;
		return -1;
	}
	return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* ------------------------------------------------------------ copy */

#define COPY_BUF (128 * 1024)

/* A file with more than one link, copied once: where (below the top) its copy is. */
typedef struct link_slot {
	dev_t dev;
	ino_t ino;
	char *path; /* NULL: a free slot */
} link_slot;

typedef struct copy_ctx {
	int dst_parent;
	const char *dst_name;
	int dcur; /* the copy of the directory whose entries the walk is at */
	int dtop; /* the copy's top (hard links are made from it) */
	link_slot *links;
	size_t n_links, cap_links; /* cap: a power of two */
	char *buf;
} copy_ctx;

static size_t link_hash(dev_t dev, ino_t ino, size_t cap)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static link_slot *link_find(copy_ctx *c, dev_t dev, ino_t ino)
{
	if (!c->cap_links)
		return NULL;
	for (size_t i = link_hash(dev, ino, c->cap_links);; i = (i + 1) & (c->cap_links - 1)) {
		link_slot *s = &c->links[i];
		if (!s->path)
			return NULL;
		if (s->dev == dev && s->ino == ino)
			return s;
	}
}

/* Remembers where the first copy of a multiply-linked file went; out of memory only loses the
 * link (the next name is copied as a file of its own). */
static void link_add(copy_ctx *c, dev_t dev, ino_t ino, const char *path)
{
	if ((c->n_links + 1) * 2 > c->cap_links) {
		size_t nc = c->cap_links ? c->cap_links * 2 : 64;
		link_slot *nv = calloc(nc, sizeof(*nv));
		if (!nv)
			return;
		for (size_t i = 0; i < c->cap_links; i++) {
			if (!c->links[i].path)
				continue;
			size_t j = link_hash(c->links[i].dev, c->links[i].ino, nc);
			while (nv[j].path)
				j = (j + 1) & (nc - 1);
			nv[j] = c->links[i];
		}
		free(c->links);
		c->links = nv;
		c->cap_links = nc;
	}
	char *p = strdup(path);
	if (!p)
		return;
	size_t j = link_hash(dev, ino, c->cap_links);
	while (c->links[j].path)
		j = (j + 1) & (c->cap_links - 1);
	c->links[j] = (link_slot){dev, ino, p};
	c->n_links++;
}

/* Copies bytes [from, to) of sfd to dfd: copy_file_range, read/write where that cannot. 0 or
 * -1; a source that shrank meanwhile ends the copy early. */
static int copy_range(int sfd, int dfd, off_t from, off_t to, char *buf)
{
	off_t in = from, out = from;
	bool plain = false;
	while (in < to) {
		size_t want = (size_t)(to - in > (1 << 30) ? (1 << 30) : to - in);
		ssize_t n;
		if (!plain) {
			n = copy_file_range(sfd, &in, dfd, &out, want, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			              errno == EOPNOTSUPP || errno == EPERM)) {
				plain = true;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -1;
			if (n == 0)
				return 0;
			continue;
		}
		n = pread(sfd, buf, want < COPY_BUF ? want : COPY_BUF, in);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -1 : 0;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(dfd, buf + done, (size_t)(n - done), out);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			done += w;
			out += w;
		}
		in += n;
	}
	return 0;
}

/* A regular file's contents, its holes kept holes (SEEK_DATA / SEEK_HOLE). */
static int copy_data(int sfd, int dfd, off_t size, char *buf)
{
	off_t off = 0;
	while (off < size) {
		off_t data = lseek(sfd, off, SEEK_DATA), hole;
		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (data < 0) {
			data = off; /* no SEEK_DATA here: all of it */
			hole = size;
		} else {
			hole = lseek(sfd, data, SEEK_HOLE);
			if (hole < 0 || hole > size)
				hole = size;
		}
		if (data >= size)
			break;
		if (copy_range(sfd, dfd, data, hole, buf) < 0)
			return -1;
		off = hole;
	}
	return ftruncate(dfd, size);
}

/* The extended attributes of `sfd` onto `dfd` (either may be an O_PATH fd, reached through
 * /proc/self/fd). What the destination refuses (trusted.* without privilege, a file system
 * without them) is left out, as cp -a does. */
static void copy_xattrs(int sfd, int dfd)
{
	char sp[40], dp[40];
	snprintf(sp, sizeof(sp), "/proc/self/fd/%d", sfd);
	snprintf(dp, sizeof(dp), "/proc/self/fd/%d", dfd);
	ssize_t n = listxattr(sp, NULL, 0);
	if (n <= 0)
		return;
	char *names = malloc((size_t)n + 1);
	if (!names)
		return;
	n = listxattr(sp, names, (size_t)n);
	char *val = NULL;
	size_t vcap = 0;
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(names + i) + 1) {
		const char *k = names + i;
		ssize_t vn = getxattr(sp, k, NULL, 0);
		if (vn < 0)
			continue;
		if ((size_t)vn + 1 > vcap) {
			char *nv = realloc(val, (size_t)vn + 1);
			if (!nv)
				break;
			val = nv;
			vcap = (size_t)vn + 1;
		}
		vn = getxattr(sp, k, val, (size_t)vn);
		if (vn >= 0)
			(void)setxattr(dp, k, val, (size_t)vn, 0);
	}
	free(val);
	free(names);
}

/* The owner, extended attributes, mode and times of `sname` of `sdir` onto its copy `dname` of
 * `ddir`, in that order: chown clears the setuid bits and file capabilities. Owners the caller
 * may not give (no root) are left, as cp -a does. */
static int copy_meta(int sdir, const char *sname, int ddir, const char *dname,
                     const struct stat *st)
{
	if (fchownat(ddir, dname, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno != EPERM)
		return -1;
	if (!S_ISLNK(st->st_mode)) {
		int sfd = openat(sdir, sname, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		int dfd = openat(ddir, dname, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (sfd >= 0 && dfd >= 0)
			copy_xattrs(sfd, dfd);
		if (sfd >= 0)
			close(sfd);
		if (dfd >= 0)
			close(dfd);
		if (fchmodat(ddir, dname, st->st_mode & 07777, 0) < 0)
			return -1;
	}
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	return utimensat(ddir, dname, ts, AT_SYMLINK_NOFOLLOW);
}

/* Everything but a directory: a hard link to an earlier copy, or a new node. */
static int copy_node(copy_ctx *c, const fk_tree_ent *e, int ddir, const char *dname)
{
	const struct stat *st = e->st;
	if (st->st_nlink > 1) {
		link_slot *s = link_find(c, st->st_dev, st->st_ino);
		if (s && linkat(c->dtop, s->path, ddir, dname, 0) == 0)
			return 0;
		if (!s && e->depth > 0 && strlen(e->path) < PATH_MAX)
			link_add(c, st->st_dev, st->st_ino, e->path);
	}
	int rc = -1;
	if (S_ISREG(st->st_mode)) {
		int sfd = openat(e->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat now;
		if (sfd < 0 || fstat(sfd, &now) < 0 || now.st_ino != st->st_ino ||
		    now.st_dev != st->st_dev) {
			if (sfd >= 0)
				close(sfd);
			errno = sfd >= 0 ? ESTALE : errno;
			return -1;
		}
		int dfd =
		    openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		rc = dfd < 0 ? -1 : copy_data(sfd, dfd, now.st_size, c->buf);
		int err = errno;
		if (dfd >= 0)
			close(dfd);
		close(sfd);
		errno = err;
	} else if (S_ISLNK(st->st_mode)) {
		char t[PATH_MAX + 1];
		ssize_t n = readlinkat(e->dirfd, e->name, t, sizeof(t) - 1);
		if (n >= 0) {
			t[n] = 0;
			rc = symlinkat(t, ddir, dname);
		}
	} else {
		rc = mknodat(ddir, dname, (st->st_mode & S_IFMT) | 0600, st->st_rdev);
	}
	return rc < 0 ? -1 : copy_meta(e->dirfd, e->name, ddir, dname, st);
}

static int copy_entry(const fk_tree_ent *e, void *ud)
{
	copy_ctx *c = ud;
	bool top = e->depth == 0;
	int ddir = top ? c->dst_parent : c->dcur;
	const char *dname = top ? c->dst_name : e->name;
	if (!S_ISDIR(e->st->st_mode))
		return copy_node(c, e, ddir, dname) < 0 ? -1 : FK_TREE_GO;
	if (e->post) {
		if (!top) { /* back up to the copy of its parent */
			int up = openat(c->dcur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (up < 0)
				return -1;
			close(c->dcur);
			c->dcur = up;
			ddir = up;
		}
		return copy_meta(e->dirfd, e->name, ddir, dname, e->st) < 0 ? -1 : FK_TREE_GO;
	}
	if (mkdirat(ddir, dname, 0700) < 0)
		return -1;
	int fd = openat(ddir, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (top) {
		c->dtop = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (c->dtop < 0) {
			close(fd);
			return -1;
		}
	} else {
		close(c->dcur);
	}
	c->dcur = fd;
	return FK_TREE_GO;
}

int fk_tree_copy(int src_parent, const char *src_name, int dst_parent, const char *dst_name)
{
	copy_ctx c = {dst_parent, dst_name, -1, -1, NULL, 0, 0, malloc(COPY_BUF)};
	if (!c.buf) {
		errno = ENOMEM;
		return -1;
	}
	int rc = fk_tree_walk(src_parent, src_name, copy_entry, &c);
	int e = errno;
	if (c.dcur >= 0)
		close(c.dcur);
	if (c.dtop >= 0)
		close(c.dtop);
	for (size_t i = 0; i < c.cap_links; i++)
		free(c.links[i].path);
	free(c.links);
	free(c.buf);
	errno = e;
	return rc;
}
