/*
 * fake-e2b/runtime/files_list.c — envd's Stat and ListDir (docs/internals/wire.md "Filesystem
 * RPCs"): one entry, or a directory listed breadth-first down to a depth, within caps on the
 * depth, the entries and their bytes, paths past PATH_MAX reopened part by part
 * (fake-e2b/SECURITY.md "deep trees and the files API's `/proc`"), sorted by path.
 */
#define _GNU_SOURCE
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int fk_file_stat(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                 fk_err *err)
{
	fk_fctx c;
	memset(out, 0, sizeof(*out));
	int rc = fk__fctx_open(&c, rt, box_id, path, user, err);
	if (rc == 0)
		rc = fk__stat_abs(&c, c.abs, out, err);
	fk__fctx_close(&c);
	return rc;
}

typedef struct elist {
	fk_entry *v;
	size_t n, cap;
} elist;

/* Levels ListDir descends at most, whatever the request asks: the walk below keeps one path per
 * pending directory (no recursion, one fd at a time), so memory, not the stack, bounds it. */
#define FK_LIST_DEPTH_MAX 256
/* Entries one ListDir answers at most: the reply is built whole (about 3 KB of memory per entry
 * while it is, 300,000 files of 150-byte names took the server from 77 to 885 MB), and the box
 * decides how many files there are. */
#define FK_LIST_ENTRIES_MAX 100000
/* Bytes of strings (name, path, owner, group, symlink target, metadata) one ListDir answers at
 * most: the entry cap alone let 100,000 entries of 160-byte names cost 334 MB while the reply was
 * built; the box decides how long its names are. */
#define FK_LIST_BYTES_MAX (16 * 1024 * 1024)

static size_t entry_bytes(const fk_entry *e)
{
	size_t n = 0;
	const char *const s[] = {e->name, e->path, e->owner, e->group, e->symlink_target};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		n += s[i] ? strlen(s[i]) : 0;
	for (size_t i = 0; i < e->n_meta; i++)
		n += strlen(e->meta_keys[i]) + strlen(e->meta_values[i]);
	return n;
}

static int elist_grow(elist *l, fk_err *err)
{
	if (l->n < l->cap)
		return 0;
	size_t nc = l->cap ? l->cap * 2 : 64;
	fk_entry *nv = realloc(l->v, nc * sizeof(*nv));
	if (!nv)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	l->v = nv;
	l->cap = nc;
	return 0;
}

typedef struct pending {
	char *abs;
	unsigned level; /* 1 = the listed directory itself */
} pending;

/* fk__open_in() of `abs` whatever its length: a box's tree goes deeper than the kernel takes a
 * path (PATH_MAX, 4,096 bytes: 20 levels of 200-byte names). Past that length the first part
 * (up to a '/' within it) opens as fk__open_in() does, and each further part below the one
 * before without following any symlink: those directories are the listing's own, found by
 * readdir a moment ago, and one swapped for a symlink meanwhile is not followed. */
#define OPEN_PART_MAX 4000

static int open_beneath(int dirfd, const char *rel, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	while (*rel == '/')
		rel++;
	int fd;
	do
		fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd;
}

static int open_in_long(int rootfd, const char *abs, int flags)
{
	size_t len = strlen(abs), at = 0;
	if (len < OPEN_PART_MAX)
		return fk__open_in(rootfd, abs, flags, 0);
	int fd = -1;
	for (;;) {
		bool last = len - at < OPEN_PART_MAX;
		size_t end = len;
		if (!last) {
			end = at + OPEN_PART_MAX;
			while (end > at && abs[end] != '/')
				end--;
		}
		char *part = end > at ? strndup(abs + at, end - at) : NULL;
		int next = -1, e = end > at ? ENOMEM : ENAMETOOLONG;
		if (part) {
			int pflags = last ? flags : O_PATH | O_DIRECTORY;
			next = fd < 0 ? fk__open_in(rootfd, part, pflags, 0)
			              : open_beneath(fd, part, pflags);
			e = errno;
			free(part);
		}
		if (fd >= 0)
			close(fd);
		if (next < 0) {
			errno = e;
			return -1;
		}
		fd = next;
		at = end;
		if (last)
			return fd;
	}
}

/* One ListDir walk: the listing so far and the directories still to list, breadth-first. */
typedef struct walk {
	fk_fctx *c;
	const char *top; /* the listed directory, for messages */
	unsigned depth;
	elist *l;
	size_t bytes; /* entry_bytes() of l's entries */
	pending *q;
	size_t head, n, cap;
} walk;

/* Queues directory `abs` (taken: freed on failure) at `level`. */
static int walk_push(walk *w, char *abs, unsigned level, fk_err *err)
{
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 16;
		pending *nq = realloc(w->q, nc * sizeof(*nq));
		if (!nq) {
			free(abs);
			return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		}
		w->q = nq;
		w->cap = nc;
	}
	w->q[w->n++] = (pending){abs, level};
	return 0;
}

/* Adds entry `name` of directory `cur` (open as `d`) to the listing, and queues it when it is a
 * directory above the depth. An entry gone meanwhile is skipped; past a cap the walk stops. */
static int walk_entry(walk *w, DIR *d, const pending *cur, const char *name, fk_err *err)
{
	if (w->l->n >= FK_LIST_ENTRIES_MAX)
		return fk__fail(err, FK_EINVAL, E2BIG,
		                "listing '%s' holds more than %d entries, more than "
		                "ListDir answers: list a subdirectory or a smaller depth",
		                w->top, FK_LIST_ENTRIES_MAX);
	int rc = elist_grow(w->l, err);
	if (rc < 0)
		return rc;
	char *abs;
	if (asprintf(&abs, "%s/%s", strcmp(cur->abs, "/") ? cur->abs : "", name) < 0)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	fk_entry *e = &w->l->v[w->l->n];
	if (fk__entry_fill(w->c, dirfd(d), name, abs, e, NULL) != 0) {
		free(abs);
		return 0;
	}
	w->bytes += entry_bytes(e);
	w->l->n++;
	if (w->bytes > FK_LIST_BYTES_MAX) {
		free(abs);
		return fk__fail(err, FK_EINVAL, E2BIG,
		                "listing '%s' holds more than %d bytes of names, paths, "
		                "owners, "
		                "links and metadata, more than ListDir answers: list a "
		                "subdirectory or a smaller depth",
		                w->top, FK_LIST_BYTES_MAX);
	}
	if (cur->level >= w->depth || e->type != FK_FT_DIR) {
		free(abs);
		return 0;
	}
	return walk_push(w, abs, cur->level + 1, err);
}

/* Lists the walk's next directory (the first is `dfd` itself; the others are reopened by path
 * inside the box, never following a final symlink, paths past PATH_MAX too: open_in_long). A
 * subdirectory that changed meanwhile is skipped, /proc (or /sys) is listed, never walked into. */
static int walk_dir(walk *w, int dfd, fk_err *err)
{
	pending cur = w->q[w->head];
	int fd = w->head == 0
	             ? openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
	             : open_in_long(w->c->rootfd, cur.abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return w->head == 0 ? fk__fail(err, FK_EIO, errno, "cannot list '%s': %s", cur.abs,
		                               fk_strerror(errno))
		                    : 0;
	if (w->head > 0 && fk__fd_refused(fd)) {
		close(fd);
		return 0;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = walk_entry(w, d, &cur, de->d_name, err);
	closedir(d);
	return rc;
}

/* Lists `dir_abs` (opened as `dfd`) and, breadth-first, its subdirectories down to `depth`
 * levels, one directory fd at a time (no recursion: memory, not the stack, bounds the depth). */
static int list_dir(fk_fctx *c, int dfd, const char *dir_abs, unsigned depth, elist *l, fk_err *err)
{
	walk w = {.c = c, .top = dir_abs, .depth = depth, .l = l};
	char *top = strdup(dir_abs);
	int rc =
	    top ? walk_push(&w, top, 1, err) : fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	for (; rc == 0 && w.head < w.n; w.head++)
		rc = walk_dir(&w, dfd, err);
	for (size_t i = 0; i < w.n; i++)
		free(w.q[i].abs);
	free(w.q);
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const fk_entry *)a)->path, ((const fk_entry *)b)->path);
}

int fk_file_list(fk_rt *rt, const char *box_id, const char *path, const char *user, unsigned depth,
                 fk_entry **out, size_t *n_out, fk_err *err)
{
	fk_fctx c;
	elist l = {0};
	*out = NULL;
	*n_out = 0;
	int rc = fk__fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	int dfd = fk__open_in(c.rootfd, c.abs, O_PATH | O_DIRECTORY, 0);
	if (dfd < 0) {
		int e = errno;
		int fd = fk__open_in(c.rootfd, c.abs, O_PATH, 0);
		if (fd >= 0) {
			close(fd);
			rc = fk__fail(err, FK_ENOTDIR, ENOTDIR, "path '%s' is not a directory",
			              c.abs);
		} else {
			rc = fk__fail(err, e == ENOENT || e == ENOTDIR ? FK_ENOTFOUND : FK_EIO, e,
			              "path '%s' does not exist", c.abs);
		}
		goto done;
	}
	if (depth == 0)
		depth = 1;
	if (depth > FK_LIST_DEPTH_MAX)
		depth = FK_LIST_DEPTH_MAX;
	rc = fk__refuse_proc(dfd, c.abs, err);
	if (rc == 0)
		rc = list_dir(&c, dfd, c.abs, depth, &l, err);
	close(dfd);
	if (rc < 0) {
		fk_entries_free(l.v, l.n);
		goto done;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), entry_cmp);
	*out = l.v;
	*n_out = l.n;
done:
	fk__fctx_close(&c);
	return rc;
}
