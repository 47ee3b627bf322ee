/*
 * fake-e2b/runtime/files.c — envd's files API (e2b-protocol.md §5) over a box's view.
 *
 * Everything resolves with openat2(RESOLVE_IN_ROOT) against an fd of the box's "/" taken from
 * /proc/<init>/root: the walk crosses the box's own mounts (/usr...), absolute symlinks resolve
 * inside the box and ".." cannot climb out, so a symlink planted in the box can never reach the
 * host's files. No fork, no chroot: every call is an ordinary thread-safe system call. Like envd
 * everything runs as root; the user only decides `~`, relative paths and who owns what is made.
 */
#define _GNU_SOURCE
#include "boxfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ------------------------------------------------------------ per-call context */

/* The box's user and group names by id, sorted by id (the first line of a repeated id first):
 * each entry of a listing looks its owner up by binary search, not by a scan of up to 1 MiB of
 * names. */
typedef struct idname {
	unsigned id;
	size_t ord; /* line number: the first of a repeated id wins, as getpwuid */
	char *name;
} idname;

typedef struct names {
	idname *u;
	size_t n_u;
	idname *g;
	size_t n_g;
} names;

typedef struct fctx {
	fk_box *b;
	int rootfd;
	fk_user user;
	char *abs; /* resolved target path */
	names nm;
	bool nm_loaded;
} fctx;

static int fctx_open(fctx *c, fk_rt *rt, const char *box_id, const char *path, const char *user,
                     fk_err *err)
{
	memset(c, 0, sizeof(*c));
	c->rootfd = -1;
	c->b = fk__box_get(rt, box_id);
	if (!c->b)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", box_id);
	pthread_rwlock_rdlock(&c->b->life);
	if (c->b->dead)
		return fk__fail(err, FK_ENOTFOUND, 0, "sandbox %s not found", box_id);
	c->rootfd = fk__box_rootfd(c->b, err);
	if (c->rootfd < 0)
		return c->rootfd;
	int rc = fk__user_lookup(c->b, c->rootfd, user, &c->user, err);
	if (rc < 0)
		return rc;
	if (path) {
		if (strlen(path) > 4096)
			return fk__fail(err, FK_EINVAL, 0, "path too long");
		c->abs = fk__path_resolve(path, c->user.home);
		if (!c->abs)
			return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	return 0;
}

static void names_free(names *nm)
{
	for (size_t i = 0; i < nm->n_u; i++)
		free(nm->u[i].name);
	for (size_t i = 0; i < nm->n_g; i++)
		free(nm->g[i].name);
	free(nm->u);
	free(nm->g);
}

static void fctx_close(fctx *c)
{
	if (c->rootfd >= 0)
		close(c->rootfd);
	if (c->b) {
		pthread_rwlock_unlock(&c->b->life);
		fk__box_put(c->b);
	}
	free(c->abs);
	names_free(&c->nm);
}

static int idname_cmp(const void *a, const void *b)
{
	const idname *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Appends (id, name) to *v (of *n, capacity *cap); false on OOM. */
static bool idname_add(idname **v, size_t *n, size_t *cap, unsigned id, const char *name)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		idname *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return false;
		*v = nv;
		*cap = nc;
	}
	char *copy = strdup(name);
	if (!copy)
		return false;
	(*v)[*n] = (idname){.id = id, .ord = *n, .name = copy};
	(*n)++;
	return true;
}

static void names_load(fctx *c)
{
	if (c->nm_loaded)
		return;
	c->nm_loaded = true;
	names *nm = &c->nm;
	size_t cap = 0;
	FILE *f = fk__fopen_in(c->rootfd, "/etc/passwd");
	if (f) {
		struct passwd pw, *res;
		char buf[2048];
		while (fgetpwent_r(f, &pw, buf, sizeof(buf), &res) == 0 &&
		       idname_add(&nm->u, &nm->n_u, &cap, pw.pw_uid, pw.pw_name))
			;
		fclose(f);
	}
	cap = 0;
	f = fk__fopen_in(c->rootfd, "/etc/group");
	if (f) {
		struct group gr, *res;
		char buf[4096];
		while (fgetgrent_r(f, &gr, buf, sizeof(buf), &res) == 0 &&
		       idname_add(&nm->g, &nm->n_g, &cap, gr.gr_gid, gr.gr_name))
			;
		fclose(f);
	}
	if (nm->n_u)
		qsort(nm->u, nm->n_u, sizeof(*nm->u), idname_cmp);
	if (nm->n_g)
		qsort(nm->g, nm->n_g, sizeof(*nm->g), idname_cmp);
}

/* The name of `id` in sorted `v` (the first of its line order), else the id as digits. */
static char *id_name(const idname *v, size_t n, unsigned id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && v[lo].id == id)
		return strdup(v[lo].name);
	char *s;
	return asprintf(&s, "%u", id) < 0 ? NULL : s;
}

static char *uid_name(fctx *c, uid_t uid)
{
	names_load(c);
	return id_name(c->nm.u, c->nm.n_u, (unsigned)uid);
}

static char *gid_name(fctx *c, gid_t gid)
{
	names_load(c);
	return id_name(c->nm.g, c->nm.n_g, (unsigned)gid);
}

/* ------------------------------------------------------------ entries */

static void perm_string(mode_t m, char out[11])
{
	char t = '-';
	if (S_ISDIR(m))
		t = 'd';
	else if (S_ISLNK(m))
		t = 'L';
	else if (S_ISFIFO(m))
		t = 'p';
	else if (S_ISSOCK(m))
		t = 'S';
	else if (S_ISCHR(m))
		t = 'c';
	else if (S_ISBLK(m))
		t = 'D';
	out[0] = t;
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	out[10] = 0;
}

void fk_entry_clear(fk_entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->path);
	free(e->owner);
	free(e->group);
	free(e->symlink_target);
	for (size_t i = 0; i < e->n_meta; i++) {
		free(e->meta_keys[i]);
		free(e->meta_values[i]);
	}
	free(e->meta_keys);
	free(e->meta_values);
	memset(e, 0, sizeof(*e));
}

#define META_PREFIX     "user.e2b."
#define META_PREFIX_LEN (sizeof(META_PREFIX) - 1)

/* The user.e2b.* xnames of `path` (a /proc/self/fd link or an fd's path) into a malloc'ed list
 * of NUL-separated xnames; its length in *len_out. NULL when there are none or on failure. */
static char *meta_names(int fd, ssize_t *len_out)
{
	*len_out = 0;
	ssize_t n = flistxattr(fd, NULL, 0);
	if (n <= 0)
		return NULL;
	char *xnames = malloc((size_t)n);
	if (!xnames)
		return NULL;
	n = flistxattr(fd, xnames, (size_t)n);
	if (n <= 0) {
		free(xnames);
		return NULL;
	}
	*len_out = n;
	return xnames;
}

/* envd's metadata: the file's user.e2b.<key> extended attributes as key -> value, read through
 * `fd`; best effort (an entry without them, or on a filesystem without xattrs, has none). */
static void entry_meta_fd(int fd, fk_entry *e)
{
	ssize_t n;
	char *xnames = meta_names(fd, &n);
	for (ssize_t off = 0; xnames && off < n; off += (ssize_t)strlen(xnames + off) + 1) {
		const char *name = xnames + off;
		if (strncmp(name, META_PREFIX, META_PREFIX_LEN) || !name[META_PREFIX_LEN])
			continue;
		char val[4097];
		ssize_t vl = fgetxattr(fd, name, val, sizeof(val) - 1);
		if (vl < 0)
			continue;
		val[vl] = 0;
		char **k = realloc(e->meta_keys, (e->n_meta + 1) * sizeof(char *));
		if (k)
			e->meta_keys = k;
		char **v = k ? realloc(e->meta_values, (e->n_meta + 1) * sizeof(char *)) : NULL;
		if (v)
			e->meta_values = v;
		char *ks = v ? strdup(name + META_PREFIX_LEN) : NULL, *vs = ks ? strdup(val) : NULL;
		if (!vs) {
			free(ks);
			break;
		}
		e->meta_keys[e->n_meta] = ks;
		e->meta_values[e->n_meta++] = vs;
	}
	free(xnames);
}

/* The metadata of a regular file or directory `name` under `dirfd` (never follows a symlink,
 * never opens a FIFO or device). */
static void entry_meta(int dirfd, const char *name, const struct stat *st, fk_entry *e)
{
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return;
	int fd = openat(dirfd, *name ? name : ".",
	                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	entry_meta_fd(fd, e);
	close(fd);
}

/* Removes every user.e2b.* attribute (an upload replaces the whole metadata set, envd). */
static void meta_clear(int fd)
{
	ssize_t n;
	char *xnames = meta_names(fd, &n);
	for (ssize_t off = 0; xnames && off < n; off += (ssize_t)strlen(xnames + off) + 1)
		if (!strncmp(xnames + off, META_PREFIX, META_PREFIX_LEN))
			fremovexattr(fd, xnames + off);
	free(xnames);
}

void fk_entries_free(fk_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		fk_entry_clear(&e[i]);
	free(e);
}

static const char *base_of(const char *abs)
{
	const char *s = strrchr(abs, '/');
	return (s && s[1]) ? s + 1 : "/";
}

/* Where symlink `abs_link` (whose text is `text`) leads, as envd reports it: absolute, every
 * symlink on the way resolved inside the box (at most 40, like the kernel); a part that does
 * not exist is kept as written. malloc'ed; NULL on OOM. */
static char *symlink_resolve(fctx *c, const char *abs_link, const char *text)
{
	char *path;
	if (text[0] == '/') {
		path = fk__path_resolve(text, "/");
	} else {
		char *dir = strdup(abs_link);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash)
			slash == dir ? (void)(dir[1] = 0) : (void)(*slash = 0);
		path = dir ? fk__path_resolve(text, dir) : NULL;
		free(dir);
	}
	for (int hops = 0; path && hops < 40; hops++) {
		/* walk from "/", one component at a time, until a symlink or the end */
		size_t len = strlen(path), at = 1;
		char *link = NULL;
		size_t comp_end = 0;
		while (at < len) {
			size_t end = at;
			while (end < len && path[end] != '/')
				end++;
			char save = path[end];
			path[end] = 0;
			int fd = fk__open_in(c->rootfd, path, O_PATH | O_NOFOLLOW, 0);
			if (fd >= 0 && fk__fd_refused(fd)) {
				/* /proc's links are the host's view (/proc/1/exe: the server's
				 * path): the rest is kept as written */
				close(fd);
				path[end] = save;
				return path;
			}
			struct stat st;
			bool is_link = fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
			if (is_link) {
				char t[4097];
				ssize_t n = readlinkat(fd, "", t, sizeof(t) - 1);
				if (n > 0) {
					t[n] = 0;
					link = strdup(t);
				}
			}
			if (fd >= 0)
				close(fd);
			path[end] = save;
			if (fd < 0 || link || is_link) {
				comp_end = end;
				break;
			}
			at = end + 1;
		}
		if (!link)
			return path; /* no symlink left (or a missing part, kept as written) */
		/* replace path[..comp_end) by the link's target, relative to its directory */
		char *parent = strndup(path, comp_end);
		char *slash = parent ? strrchr(parent, '/') : NULL;
		if (slash)
			slash == parent ? (void)(parent[1] = 0) : (void)(*slash = 0);
		char *joined = NULL;
		if (parent && asprintf(&joined, "%s%s", link, path + comp_end) < 0)
			joined = NULL;
		free(path);
		path = joined ? fk__path_resolve(joined, link[0] == '/' ? "/" : parent) : NULL;
		free(joined);
		free(parent);
		free(link);
	}
	return path;
}

/* The type and mode of where symlink entry `e` leads (envd's GetEntryInfo stats the target and
 * reports its type): the target resolved by symlink_resolve, looked at inside the box, not at
 * all when it is in /proc (whose links are the host's). */
static void link_target_type(fctx *c, fk_entry *e)
{
	if (!e->symlink_target)
		return;
	int fd = fk__open_in(c->rootfd, e->symlink_target, O_PATH | O_NOFOLLOW, 0);
	struct stat st;
	if (fd >= 0 && !fk__fd_refused(fd) && fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode)) {
		e->target_type = S_ISDIR(st.st_mode)   ? FK_FT_DIR
		                 : S_ISREG(st.st_mode) ? FK_FT_FILE
		                                       : FK_FT_OTHER;
		e->target_mode = st.st_mode;
	}
	if (fd >= 0)
		close(fd);
}

/* Fills `e` for `abs` from an lstat done through `dirfd`/`name` (or `st` if given). */
static int entry_fill(fctx *c, int dirfd, const char *name, const char *abs, fk_entry *e,
                      fk_err *err)
{
	struct stat st;
	memset(e, 0, sizeof(*e));
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
		return fk__fail(err, fk__errno_code(errno), errno, "path '%s' does not exist", abs);
	e->type = S_ISDIR(st.st_mode)   ? FK_FT_DIR
	          : S_ISREG(st.st_mode) ? FK_FT_FILE
	          : S_ISLNK(st.st_mode) ? FK_FT_SYMLINK
	                                : FK_FT_OTHER;
	e->size = st.st_size;
	e->mode = st.st_mode;
	perm_string(st.st_mode, e->permissions);
	e->mtime_sec = st.st_mtim.tv_sec;
	e->mtime_nsec = (int32_t)st.st_mtim.tv_nsec;
	e->name = strdup(base_of(abs));
	e->path = strdup(abs);
	e->owner = uid_name(c, fk__box_id(c->b, st.st_uid));
	e->group = gid_name(c, fk__box_id(c->b, st.st_gid));
	if (S_ISLNK(st.st_mode)) {
		char t[4097];
		ssize_t n = readlinkat(dirfd, name, t, sizeof(t) - 1);
		if (n >= 0) {
			t[n] = 0;
			e->symlink_target = symlink_resolve(c, abs, t);
		}
		link_target_type(c, e);
	}
	entry_meta(dirfd, name, &st, e);
	if (!e->name || !e->path || !e->owner || !e->group ||
	    (S_ISLNK(st.st_mode) && !e->symlink_target)) {
		fk_entry_clear(e);
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	return 0;
}

/* Opens the parent directory of `abs` (following symlinks inside the box); *base_out points
 * into abs. For "/" the parent is "/" and base ".". */
static int open_parent(fctx *c, const char *abs, const char **base_out)
{
	const char *slash = strrchr(abs, '/');
	if (!slash || (slash == abs && !slash[1])) {
		*base_out = ".";
		return fk__open_in(c->rootfd, "/", O_PATH | O_DIRECTORY, 0);
	}
	char *dir = strndup(abs, (size_t)(slash - abs));
	if (!dir) {
		errno = ENOMEM;
		return -1;
	}
	int fd = fk__open_in(c->rootfd, dir[0] ? dir : "/", O_PATH | O_DIRECTORY, 0);
	int e = errno;
	free(dir);
	errno = e;
	*base_out = slash + 1;
	return fd;
}

/* The /proc rule (fk__fd_refused) for `abs`, reached through `fd`: 0, or FK_EINVAL with the
 * reason. */
static int refuse_proc(int fd, const char *abs, fk_err *err)
{
	const char *why = fk__fd_refused(fd);
	return why ? fk__fail(err, FK_EINVAL, 0, "path '%s' %s", abs, why) : 0;
}

/* mkdir -p of `abs`, every directory made owned by the user (envd upload / MakeDir). Returns an
 * O_PATH fd of the directory. */
static int mkdir_parents(fctx *c, const char *abs, fk_err *err)
{
	int fd = fk__open_in(c->rootfd, abs, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0 || errno != ENOENT) {
		if (fd < 0)
			return fk__fail(err, fk__errno_code(errno), errno,
			                "cannot create directory '%s': %s", abs,
			                fk_strerror(errno));
		return fd;
	}
	char *p = strdup(abs);
	if (!p)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char saved = *s;
		*s = 0;
		const char *base;
		int pfd = open_parent(c, p, &base);
		if (pfd < 0) {
			int e = errno;
			free(p);
			return fk__fail(err, fk__errno_code(e), e,
			                "cannot create directory '%s': %s", abs, fk_strerror(e));
		}
		if (mkdirat(pfd, base, 0755) == 0) {
			if (fchownat(pfd, base, fk__host_id(c->b, c->user.uid),
			             fk__host_id(c->b, c->user.gid), AT_SYMLINK_NOFOLLOW) < 0 &&
			    geteuid() == 0)
				fprintf(stderr, "fake-e2b: chown %s: %s\n", p, fk_strerror(errno));
		} else if (errno != EEXIST) {
			int e = errno;
			close(pfd);
			free(p);
			return fk__fail(err, fk__errno_code(e), e,
			                "cannot create directory '%s': %s", abs, fk_strerror(e));
		}
		close(pfd);
		*s = saved;
		if (!saved)
			break;
	}
	free(p);
	fd = fk__open_in(c->rootfd, abs, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return fk__fail(err, fk__errno_code(errno), errno,
		                "cannot create directory '%s': %s", abs, fk_strerror(errno));
	return fd;
}

static int mkdir_parent_of(fctx *c, const char *abs, fk_err *err)
{
	const char *slash = strrchr(abs, '/');
	if (!slash || slash == abs)
		return fk__open_in(c->rootfd, "/", O_PATH | O_DIRECTORY, 0);
	char *dir = strndup(abs, (size_t)(slash - abs));
	if (!dir)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	int fd = mkdir_parents(c, dir, err);
	free(dir);
	return fd;
}

/* ------------------------------------------------------------ writer */

struct fk_writer {
	int fd;
	char *path;
};

static int open_for_write(fctx *c, fk_err *err)
{
	int pfd = mkdir_parent_of(c, c->abs, err);
	if (pfd < 0)
		return pfd;
	close(pfd);
	/* one open that follows a final symlink inside the box and creates its target if needed;
	 * no O_TRUNC: an existing file is chowned to the user before it is truncated (envd
	 * upload.go), a new one is chowned the same way */
	const char *why;
	int fd = fk__open_file_in(c->rootfd, c->abs, O_WRONLY | O_CREAT, 0644, &why);
	if (fd < 0) {
		if (why)
			return fk__fail(err, FK_EINVAL, EINVAL, "path '%s' %s", c->abs, why);
		if (errno == EISDIR)
			return fk__fail(err, FK_EISDIR, EISDIR, "path is a directory: %s", c->abs);
		return fk__fail(err, fk__errno_code(errno), errno, "error opening file '%s': %s",
		                c->abs, fk_strerror(errno));
	}
	/* without root (degraded mode) files simply stay ours */
	bool chown_ok =
	    fchown(fd, fk__host_id(c->b, c->user.uid), fk__host_id(c->b, c->user.gid)) == 0 ||
	    geteuid() != 0;
	if (!chown_ok || ftruncate(fd, 0) < 0) {
		int e = errno;
		close(fd);
		return fk__fail(err, fk__errno_code(e), e, "error opening file '%s': %s", c->abs,
		                fk_strerror(e));
	}
	meta_clear(fd);
	return fd;
}

int fk_file_resolve(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    char **abs_path_out, fk_err *err)
{
	fctx c;
	*abs_path_out = NULL;
	int rc = fctx_open(&c, rt, box_id, path ? path : "", user, err);
	if (rc == 0 && !(*abs_path_out = strdup(c.abs)))
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	fctx_close(&c);
	return rc;
}

int fk_file_write_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                       fk_writer **out, char **abs_path_out, fk_err *err)
{
	fctx c;
	*out = NULL;
	if (abs_path_out)
		*abs_path_out = NULL;
	int rc = fctx_open(&c, rt, box_id, path, user, err);
	if (rc == 0)
		rc = open_for_write(&c, err);
	if (rc >= 0) {
		fk_writer *w = calloc(1, sizeof(*w));
		char *ap = abs_path_out ? strdup(c.abs) : NULL;
		if (!w || (abs_path_out && !ap)) {
			close(rc);
			free(w);
			free(ap);
			rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		} else {
			w->fd = rc;
			w->path = NULL;
			*out = w;
			if (abs_path_out)
				*abs_path_out = ap;
			rc = 0;
		}
	}
	fctx_close(&c);
	return rc;
}

int fk_writer_write(fk_writer *w, const void *data, size_t len, fk_err *err)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fk__fail(err, fk__errno_code(errno), errno, "write: %s",
			                fk_strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fk_writer_set_meta(fk_writer *w, const char *key, const char *value, fk_err *err)
{
	char name[300];
	snprintf(name, sizeof(name), "user.e2b.%s", key);
	for (char *s = name; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
	if (fsetxattr(w->fd, name, value, strlen(value), 0) < 0)
		return fk__fail(err, fk__errno_code(errno), errno, "setxattr: %s",
		                fk_strerror(errno));
	return 0;
}

int fk_writer_close(fk_writer *w, fk_err *err)
{
	if (!w)
		return 0;
	int rc = 0;
	if (close(w->fd) < 0 && errno != EINTR)
		rc = fk__fail(err, fk__errno_code(errno), errno, "close: %s", fk_strerror(errno));
	free(w->path);
	free(w);
	return rc;
}

/* ------------------------------------------------------------ reader, stat, list */

int fk_file_read_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                      int *fd_out, uint64_t *size_out, fk_err *err)
{
	fctx c;
	*fd_out = -1;
	int rc = fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	const char *why;
	int fd = fk__open_file_in(c.rootfd, c.abs, O_RDONLY, 0, &why);
	struct stat st;
	if (fd < 0) {
		rc = why ? fk__fail(err, FK_EINVAL, 0, "path '%s' %s", c.abs, why)
		     : errno == EISDIR
		         ? fk__fail(err, FK_EISDIR, EISDIR, "path '%s' is a directory", c.abs)
		     : errno == ENOENT || errno == ENOTDIR || errno == ELOOP
		         ? fk__fail(err, FK_ENOTFOUND, errno, "path '%s' does not exist", c.abs)
		         : fk__fail(err, fk__errno_code(errno), errno, "cannot open '%s': %s",
		                    c.abs, fk_strerror(errno));
		goto done;
	}
	if (fstat(fd, &st) < 0) {
		rc = fk__fail(err, fk__errno_code(errno), errno, "cannot open '%s': %s", c.abs,
		              fk_strerror(errno));
		close(fd);
		goto done;
	}
	*fd_out = fd;
	*size_out = (uint64_t)st.st_size;
done:
	fctx_close(&c);
	return rc;
}

static int stat_abs(fctx *c, const char *abs, fk_entry *out, fk_err *err)
{
	const char *base;
	int pfd = open_parent(c, abs, &base);
	if (pfd < 0)
		return fk__fail(err, errno == ENOENT || errno == ENOTDIR ? FK_ENOTFOUND : FK_EIO,
		                errno, "path '%s' does not exist", abs);
	int rc = refuse_proc(pfd, abs, err);
	if (rc == 0)
		rc = entry_fill(c, pfd, strcmp(base, ".") ? base : "", abs, out, err);
	close(pfd);
	return rc;
}

int fk_file_stat(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                 fk_err *err)
{
	fctx c;
	memset(out, 0, sizeof(*out));
	int rc = fctx_open(&c, rt, box_id, path, user, err);
	if (rc == 0)
		rc = stat_abs(&c, c.abs, out, err);
	fctx_close(&c);
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

/* Lists `dir_abs` (opened as `dfd`) and, breadth-first, its subdirectories down to `depth`
 * levels. Directories are reopened by path inside the box (never following a final symlink),
 * paths past PATH_MAX too (open_in_long). */
static int list_dir(fctx *c, int dfd, const char *dir_abs, unsigned depth, elist *l, fk_err *err)
{
	pending *q = malloc(sizeof(*q));
	size_t head = 0, n = 0, cap = 1, bytes = 0;
	int rc = 0;
	if (!q || !(q[0].abs = strdup(dir_abs))) {
		free(q);
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	}
	q[0].level = 1;
	n = 1;
	for (; rc == 0 && head < n; head++) {
		pending cur = q[head];
		int fd = head == 0 ? openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		                   : open_in_long(c->rootfd, cur.abs,
		                                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		if (fd < 0) {
			if (head == 0)
				rc = fk__fail(err, FK_EIO, errno, "cannot list '%s': %s", cur.abs,
				              fk_strerror(errno));
			continue; /* a subdirectory that changed meanwhile: skipped */
		}
		if (head > 0 && fk__fd_refused(fd)) {
			close(fd); /* /proc (or /sys) is listed, never walked into */
			continue;
		}
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
			break;
		}
		struct dirent *de;
		while (rc == 0 && (de = readdir(d)) != NULL) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (l->n >= FK_LIST_ENTRIES_MAX) {
				rc = fk__fail(
				    err, FK_EINVAL, E2BIG,
				    "listing '%s' holds more than %d entries, more than "
				    "ListDir answers: list a subdirectory or a smaller depth",
				    dir_abs, FK_LIST_ENTRIES_MAX);
				break;
			}
			if ((rc = elist_grow(l, err)) < 0)
				break;
			char *abs;
			if (asprintf(&abs, "%s/%s", strcmp(cur.abs, "/") ? cur.abs : "",
			             de->d_name) < 0) {
				rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
				break;
			}
			if (entry_fill(c, dirfd(d), de->d_name, abs, &l->v[l->n], NULL) != 0) {
				free(abs);
				continue;
			}
			bytes += entry_bytes(&l->v[l->n]);
			l->n++;
			if (bytes > FK_LIST_BYTES_MAX) {
				free(abs);
				rc = fk__fail(
				    err, FK_EINVAL, E2BIG,
				    "listing '%s' holds more than %d bytes of names, paths, "
				    "owners, "
				    "links and metadata, more than ListDir answers: list a "
				    "subdirectory or a smaller depth",
				    dir_abs, FK_LIST_BYTES_MAX);
				break;
			}
			if (cur.level >= depth || l->v[l->n - 1].type != FK_FT_DIR) {
				free(abs);
				continue;
			}
			if (n == cap) {
				size_t nc = cap * 2;
				pending *nq = realloc(q, nc * sizeof(*nq));
				if (!nq) {
					free(abs);
					rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
					break;
				}
				q = nq;
				cap = nc;
			}
			q[n++] = (pending){abs, cur.level + 1};
		}
		closedir(d);
	}
	for (size_t i = 0; i < n; i++)
		free(q[i].abs);
	free(q);
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const fk_entry *)a)->path, ((const fk_entry *)b)->path);
}

int fk_file_list(fk_rt *rt, const char *box_id, const char *path, const char *user, unsigned depth,
                 fk_entry **out, size_t *n_out, fk_err *err)
{
	fctx c;
	elist l = {0};
	*out = NULL;
	*n_out = 0;
	int rc = fctx_open(&c, rt, box_id, path, user, err);
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
	rc = refuse_proc(dfd, c.abs, err);
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
	fctx_close(&c);
	return rc;
}

/* ------------------------------------------------------------ mkdir, remove, move */

/* Whether `base` in directory `pfd` is a mount point of the box (its mount differs from its
 * directory's; "." is the box's "/"). The server is in the host's mount namespace, where the
 * box's mount points (/usr, /etc, /dev, /proc...) are plain directories: the kernel's EBUSY
 * guards only the caller's own namespace, so removing one detached the box's mount, renaming one
 * carried it elsewhere and renaming onto one detached it. */
static bool is_mount_point(int pfd, const char *base)
{
	if (!strcmp(base, ".") || !strcmp(base, "/"))
		return true;
	struct statx sp, se;
	return statx(pfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sp) == 0 &&
	       statx(pfd, base, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &se) == 0 &&
	       (sp.stx_mask & se.stx_mask & STATX_MNT_ID) && sp.stx_mnt_id != se.stx_mnt_id;
}

int fk_file_mkdir(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                  fk_err *err)
{
	fctx c;
	if (out)
		memset(out, 0, sizeof(*out));
	int rc = fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	const char *base;
	int pfd = open_parent(&c, c.abs, &base);
	rc = pfd >= 0 ? refuse_proc(pfd, c.abs, err) : 0;
	if (pfd >= 0)
		close(pfd);
	if (rc < 0)
		goto done;
	int fd = fk__open_in(c.rootfd, c.abs, O_PATH, 0);
	if (fd >= 0) {
		struct stat st;
		bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
		close(fd);
		rc = dir ? fk__fail(err, FK_EEXIST, EEXIST, "directory '%s' already exists", c.abs)
		         : fk__fail(err, FK_ENOTDIR, EEXIST,
		                    "path '%s' already exists and is not a directory", c.abs);
		goto done;
	}
	fd = mkdir_parents(&c, c.abs, err);
	if (fd < 0) {
		rc = fd;
		goto done;
	}
	close(fd);
	if (out)
		rc = stat_abs(&c, c.abs, out, err);
done:
	fctx_close(&c);
	return rc;
}

int fk_file_remove(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_err *err)
{
	fctx c;
	int rc = fctx_open(&c, rt, box_id, path, user, err);
	if (rc < 0)
		goto done;
	if (!strcmp(c.abs, "/")) {
		rc = fk__fail(err, FK_EINVAL, 0, "cannot remove '/'");
		goto done;
	}
	const char *base;
	int pfd = open_parent(&c, c.abs, &base);
	if (pfd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			rc = fk__fail(err, FK_EIO, errno, "remove '%s': %s", c.abs,
			              fk_strerror(errno));
		goto done;
	}
	if ((rc = refuse_proc(pfd, c.abs, err)) < 0) {
		close(pfd);
		goto done;
	}
	if (is_mount_point(pfd, base)) {
		close(pfd);
		rc = fk__fail(err, FK_EINVAL, EBUSY, "remove '%s': a mount point of the sandbox",
		              c.abs);
		goto done;
	}
	/* O_PATH fds cannot be used with unlinkat's directory walk: reopen for reading */
	int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	if (dfd < 0 || fk_tree_remove(dfd, base) < 0)
		rc = fk__fail(err, fk__errno_code(errno), errno, "remove '%s': %s", c.abs,
		              fk_strerror(errno));
	if (dfd >= 0)
		close(dfd);
done:
	fctx_close(&c);
	return rc;
}

int fk_file_move(fk_rt *rt, const char *box_id, const char *src, const char *dst, const char *user,
                 fk_entry *out, fk_err *err)
{
	fctx c;
	char *dabs = NULL;
	int sfd = -1, dfd = -1;
	if (out)
		memset(out, 0, sizeof(*out));
	int rc = fctx_open(&c, rt, box_id, src, user, err);
	if (rc < 0)
		goto done;
	if (!(dabs = fk__path_resolve(dst, c.user.home))) {
		rc = fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
		goto done;
	}
	const char *sbase, *dbase;
	sfd = open_parent(&c, c.abs, &sbase);
	if (sfd < 0 || faccessat(sfd, sbase, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = fk__fail(err, FK_ENOTFOUND, errno, "path '%s' does not exist", c.abs);
		goto done;
	}
	dfd = mkdir_parent_of(&c, dabs, err);
	if (dfd < 0) {
		rc = dfd;
		goto done;
	}
	dbase = base_of(dabs);
	if ((rc = refuse_proc(sfd, c.abs, err)) < 0 || (rc = refuse_proc(dfd, dabs, err)) < 0)
		goto done;
	if (is_mount_point(sfd, sbase)) {
		rc = fk__fail(err, FK_EINVAL, EBUSY,
		              "move '%s' to '%s': a mount point of the sandbox", c.abs, dabs);
		goto done;
	}
	if (is_mount_point(dfd, dbase)) {
		rc = fk__fail(err, FK_EINVAL, EBUSY,
		              "move '%s' to '%s': '%s' is a mount point of the sandbox", c.abs,
		              dabs, dabs);
		goto done;
	}
	if (renameat(sfd, sbase, dfd, dbase) < 0) {
		rc = fk__fail(err, fk__errno_code(errno), errno, "move '%s' to '%s': %s", c.abs,
		              dabs, fk_strerror(errno));
		goto done;
	}
	if (out)
		rc = stat_abs(&c, dabs, out, err);
done:
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	free(dabs);
	fctx_close(&c);
	return rc;
}
