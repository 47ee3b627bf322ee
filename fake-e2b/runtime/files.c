/*
 * fake-e2b/runtime/files.c — the floor of envd's files API over a box's view (files.h):
 * the per-call context (the box, its root fd, the user, the resolved path, owners by name), an
 * entry as envd's EntryInfo reports it (docs/internals/wire.md "Filesystem RPCs": type, mode,
 * permissions, owner and group by name, symlink target, metadata), and the steps uploads, MakeDir
 * and Move share (a path's parent, `mkdir -p` given to the user, the /proc rule of
 * fake-e2b/SECURITY.md "deep trees and the files API's `/proc`"). The calls themselves are in
 * files_read.c, files_write.c, files_list.c and files_change.c.
 *
 * Everything resolves with openat2(RESOLVE_IN_ROOT) against an fd of the box's "/" taken from
 * /proc/<init>/root: the walk crosses the box's own mounts (/usr...), absolute symlinks resolve
 * inside the box and ".." cannot climb out, so a symlink planted in the box can never reach the
 * host's files. No fork, no chroot: every call is an ordinary thread-safe system call. Like envd
 * everything runs as root; the user only decides `~`, relative paths and who owns what is made.
 */
#define _GNU_SOURCE
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ------------------------------------------------------------ per-call context */

int fk__fctx_open(fk_fctx *c, fk_rt *rt, const char *box_id, const char *path, const char *user,
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

static void names_free(fk_names *nm)
{
	for (size_t i = 0; i < nm->n_u; i++)
		free(nm->u[i].name);
	for (size_t i = 0; i < nm->n_g; i++)
		free(nm->g[i].name);
	free(nm->u);
	free(nm->g);
}

void fk__fctx_close(fk_fctx *c)
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
	const fk_idname *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Appends (id, name) to *v (of *n, capacity *cap); false on OOM. */
static bool idname_add(fk_idname **v, size_t *n, size_t *cap, unsigned id, const char *name)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		fk_idname *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return false;
		*v = nv;
		*cap = nc;
	}
	char *copy = strdup(name);
	if (!copy)
		return false;
	(*v)[*n] = (fk_idname){.id = id, .ord = *n, .name = copy};
	(*n)++;
	return true;
}

static void names_load(fk_fctx *c)
{
	if (c->nm_loaded)
		return;
	c->nm_loaded = true;
	fk_names *nm = &c->nm;
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
static char *id_name(const fk_idname *v, size_t n, unsigned id)
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

static char *uid_name(fk_fctx *c, uid_t uid)
{
	names_load(c);
	return id_name(c->nm.u, c->nm.n_u, (unsigned)uid);
}

static char *gid_name(fk_fctx *c, gid_t gid)
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
void fk__meta_clear(int fd)
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

const char *fk__base_of(const char *abs)
{
	const char *s = strrchr(abs, '/');
	return (s && s[1]) ? s + 1 : "/";
}

/* Where symlink `abs_link` (whose text is `text`) leads, as envd reports it: absolute, every
 * symlink on the way resolved inside the box (at most 40, like the kernel); a part that does
 * not exist is kept as written. malloc'ed; NULL on OOM. */
static char *symlink_resolve(fk_fctx *c, const char *abs_link, const char *text)
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
static void link_target_type(fk_fctx *c, fk_entry *e)
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
int fk__entry_fill(fk_fctx *c, int dirfd, const char *name, const char *abs, fk_entry *e,
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
	e->name = strdup(fk__base_of(abs));
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
int fk__open_parent(fk_fctx *c, const char *abs, const char **base_out)
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
int fk__refuse_proc(int fd, const char *abs, fk_err *err)
{
	const char *why = fk__fd_refused(fd);
	return why ? fk__fail(err, FK_EINVAL, 0, "path '%s' %s", abs, why) : 0;
}

/* mkdir -p of `abs`, every directory made owned by the user (envd upload / MakeDir). Returns an
 * O_PATH fd of the directory. */
int fk__mkdir_parents(fk_fctx *c, const char *abs, fk_err *err)
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
		int pfd = fk__open_parent(c, p, &base);
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

int fk__mkdir_parent_of(fk_fctx *c, const char *abs, fk_err *err)
{
	const char *slash = strrchr(abs, '/');
	if (!slash || slash == abs)
		return fk__open_in(c->rootfd, "/", O_PATH | O_DIRECTORY, 0);
	char *dir = strndup(abs, (size_t)(slash - abs));
	if (!dir)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	int fd = fk__mkdir_parents(c, dir, err);
	free(dir);
	return fd;
}

int fk__stat_abs(fk_fctx *c, const char *abs, fk_entry *out, fk_err *err)
{
	const char *base;
	int pfd = fk__open_parent(c, abs, &base);
	if (pfd < 0)
		return fk__fail(err, errno == ENOENT || errno == ENOTDIR ? FK_ENOTFOUND : FK_EIO,
		                errno, "path '%s' does not exist", abs);
	int rc = fk__refuse_proc(pfd, abs, err);
	if (rc == 0)
		rc = fk__entry_fill(c, pfd, strcmp(base, ".") ? base : "", abs, out, err);
	close(pfd);
	return rc;
}
