/*
 * fake-e2b/runtime/backend_files.c — a box's files on the host (backend_int.h): its root and
 * template directories, its /etc (an overlay over the template's, or a copy), a layer's files
 * given to its id range, the id range and user namespace, prepare, commit and copy, and for a
 * kept server the cold restore of a box's files (fake-e2b/README.md "What survives what"). The
 * start-up sweep of what dead servers left is backend_sweep.c.
 */
#define _GNU_SOURCE
#include "backend_int.h"
#include "boxfs.h"
#include "etc_layer.h"
#include "linux/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ files on the host */

/* mkdir <box root>/<rel> owned by the box's `uid`:`gid` (box ids) */
static void mkdir_mode(const fk_box *b, const char *rel, mode_t mode, uid_t uid, gid_t gid)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", b->hroot, rel);
	if (mkdir(p, mode) == 0) {
		chmod(p, mode); /* umask */
		if (chown(p, fk__host_id(b, uid), fk__host_id(b, gid)) < 0 && geteuid() == 0)
			fprintf(stderr, "fake-e2b: chown %s: %s\n", p, fk_strerror(errno));
	}
}

/* mkdir -p of a template directory: missing parents root-owned 0755, the directory itself
 * with the template's mode and owner. */
static void mkdir_template_dir(const fk_box *b, const fk_template *t, const fk_template_dir *d)
{
	char rel[4096];
	snprintf(rel, sizeof(rel), "%s", d->path + (d->path[0] == '/'));
	for (char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir_mode(b, rel, 0755, 0, 0);
		*s = '/';
	}
	mkdir_mode(b, rel, d->mode, d->user_owned ? t->uid : 0, d->user_owned ? t->gid : 0);
}

/*
 * The template's exec helper (template.h exec_helper) as /opt/capybara-exec, root's, 0755, when
 * the box has none: a box's root may have replaced or removed its own, as an E2B sandbox's root
 * may change its image; that is its own. Resolved inside the box's root (a planted symlink
 * cannot send the write to the host), written under a temporary name and renamed into place,
 * so a command never runs a partial one.
 */
static void write_exec_helper(const fk_box *b)
{
	static const char tmp[] = ".capybara-exec.fake-e2b";
	int root = open(b->hroot, O_PATH | O_DIRECTORY | O_CLOEXEC), opt = -1, fd = -1;
	size_t off = 0;
	bool ok = false;

	if (root < 0 || (opt = fk__open_in(root, "/opt", O_PATH | O_DIRECTORY, 0)) < 0)
		goto out;
	if (faccessat(opt, "capybara-exec", F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		goto out;
	(void)unlinkat(opt, tmp, 0);
	if ((fd = openat(opt, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700)) < 0)
		goto out;
	while (off < fk_capybara_exec_len) {
		ssize_t n = write(fd, fk_capybara_exec + off, fk_capybara_exec_len - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	ok = off == fk_capybara_exec_len &&
	     (fchown(fd, fk__host_id(b, 0), fk__host_id(b, 0)) == 0 || geteuid() != 0) &&
	     fchmod(fd, 0755) == 0 && close(fd) == 0;
	fd = -1;
	ok = ok && renameat(opt, tmp, opt, "capybara-exec") == 0;
	if (!ok) {
		fprintf(stderr, "fake-e2b: cannot write %s in %s: %s\n", FK_EXEC_HELPER_PATH,
		        b->hroot, fk_strerror(errno));
		(void)unlinkat(opt, tmp, 0);
	}
out:
	if (fd >= 0)
		close(fd);
	if (opt >= 0)
		close(opt);
	if (root >= 0)
		close(root);
}

void fk__ns_box_prepare_fs(fk_box *b)
{
	const char *r = b->hroot;
	for (size_t i = 0; i < b->tpl->n_dirs; i++)
		mkdir_template_dir(b, b->tpl, &b->tpl->dirs[i]);
	if (b->tpl->exec_helper)
		write_exec_helper(b);
	mkdir_mode(b, "tmp", 01777, 0, 0);
	mkdir_mode(b, "var", 0755, 0, 0);
	mkdir_mode(b, "var/tmp", 01777, 0, 0);
	mkdir_mode(b, "root", 0700, 0, 0);
	mkdir_mode(b, "home", 0755, 0, 0);
	mkdir_mode(b, "run", 0755, 0, 0);
	mkdir_mode(b, "proc", 0555, 0, 0);
	mkdir_mode(b, "dev", 0755, 0, 0);
	mkdir_mode(b, "sys", 0555, 0, 0);
	mkdir_mode(b, "mnt", 0755, 0, 0);
	for (size_t i = 0; i < N_HOST_DIRS; i++) {
		char host[64], dst[4096], target[4096];
		struct stat st;
		snprintf(host, sizeof(host), "/%s", host_dirs[i]);
		snprintf(dst, sizeof(dst), "%s/%s", r, host_dirs[i]);
		if (lstat(host, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(host, target, sizeof(target) - 1);
			if (n > 0) {
				target[n] = 0;
				if (symlink(target, dst) < 0 && errno != EEXIST)
					fprintf(stderr, "fake-e2b: symlink %s: %s\n", dst,
					        fk_strerror(errno));
			}
		} else if (S_ISDIR(st.st_mode)) {
			mkdir(dst, 0755);
		}
	}
}

static void overlay_opts(char *buf, size_t size, const char *lower, const char *dir)
{
	int n = snprintf(buf, size, "lowerdir=%s,upperdir=%s/etc-upper,workdir=%s/etc-work", lower,
	                 dir, dir);
	if (n < 0 || (size_t)n >= size)
		buf[0] = 0; /* too long: the mount fails (probe) or the box fails to boot */
}

/* Can this kernel mount an overlay with the template as lower layer (in a throwaway mount
 * namespace)? With `lower_fd` >= 0 (an idmapped copy of the template) the lower layer is that
 * copy, attached first. The child only makes system calls. */
static bool overlay_works(const char *state_dir, const char *lower, int lower_fd)
{
	char dir[4096], up[4200], work[4200], mnt[4200], low[4200], opts[4096];
	snprintf(dir, sizeof(dir), "%s/.overlay-probe", state_dir);
	snprintf(up, sizeof(up), "%s/etc-upper", dir);
	snprintf(work, sizeof(work), "%s/etc-work", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(low, sizeof(low), "%s/etc-lower", dir);
	overlay_opts(opts, sizeof(opts), lower_fd >= 0 ? low : lower, dir);
	bool ok = false;
	if (mkdir(dir, 0700) == 0 && mkdir(up, 0755) == 0 && mkdir(work, 0755) == 0 &&
	    mkdir(mnt, 0755) == 0 && mkdir(low, 0755) == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			if (unshare(CLONE_NEWNS) < 0 ||
			    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    (lower_fd >= 0 && fk_lx_mount_move(lower_fd, low) < 0) ||
			    mount("overlay", mnt, "overlay", 0, opts) < 0)
				_exit(1);
			_exit(0);
		}
		int st = 0;
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		ok = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	fk_tree_remove(AT_FDCWD, dir);
	return ok;
}

/* Makes every template's /etc under the state dir, if overlayfs can use them as lower layers;
 * otherwise leaves rt->etc_templates NULL (each box copies /etc). */
void fk__ns_rt_etc_templates(fk_rt *rt)
{
	size_t n;
	const fk_template *t = fk_templates(&n);
	char **v = calloc(n, sizeof(char *));
	bool ok = v != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		ok = asprintf(&v[i], "%s/.etc-%s", rt->state_dir, t[i].id) >= 0;
		if (!ok) {
			v[i] = NULL;
			break;
		}
		if (rt->live) {
			/* live restore: the boxes a dead runtime left have theirs mounted as their
			 * /etc's lower layer, which must not change under them: kept as made
			 * (whole, or not at all: made aside, then renamed) */
			if (access(v[i], F_OK) == 0)
				continue;
			char *tmp = NULL;
			ok = asprintf(&tmp, "%s.new", v[i]) >= 0;
			if (ok) {
				fk_tree_remove(AT_FDCWD, tmp);
				ok = fk__etc_make(tmp, &t[i], rt->egress_ns) == 0 &&
				     rename(tmp, v[i]) == 0;
				if (!ok)
					fk_tree_remove(AT_FDCWD, tmp);
			}
			free(tmp);
			continue;
		}
		fk_tree_remove(AT_FDCWD, v[i]);
		ok = fk__etc_make(v[i], &t[i], rt->egress_ns) == 0;
	}
	if (ok && overlay_works(rt->state_dir, v[0], -1)) {
		rt->etc_templates = v;
		return;
	}
	fprintf(stderr, "fake-e2b: no overlayfs: every sandbox gets its own copy of /etc (slower "
	                "create)\n");
	for (size_t i = 0; v && i < n; i++) {
		if (v[i])
			fk_tree_remove(AT_FDCWD, v[i]);
		free(v[i]);
	}
	free(v);
}

/* The lower layer of box `b`'s /etc, NULL when boxes copy /etc. */
const char *fk__ns_box_etc_template(const fk_box *b)
{
	size_t n;
	const fk_template *t = fk_templates(&n);
	return b->rt->etc_templates ? b->rt->etc_templates[b->tpl - t] : NULL;
}

/* Owner ids of a committed layer's files moved into the range of the box copying them: a box
 * id N stored as another range's host id (or, from a box without a user namespace, as N
 * itself) becomes base + N. chown clears setuid bits: the mode is put back. */
static int box_from_layer_copy(fk_box *b, fk_err *err);

static uid_t shift_one(uid_t base, uid_t id)
{
	uid_t n = id >= FK_IDS_FIRST ? (id - FK_IDS_FIRST) % FK_IDS_SIZE
	                             : (id < FK_IDS_SIZE ? id : FK_ID_NOBODY);
	return base + n;
}

static int shift_entry(const fk_tree_ent *e, void *ud)
{
	uid_t base = *(const uid_t *)ud;
	const struct stat *st = e->st;
	uid_t u = shift_one(base, st->st_uid), g = shift_one(base, st->st_gid);
	if (!e->post && (u != st->st_uid || g != st->st_gid) &&
	    fchownat(e->dirfd, e->name, u, g, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) &&
	    (st->st_mode & (S_ISUID | S_ISGID)))
		fchmodat(e->dirfd, e->name, st->st_mode & 07777, 0);
	return FK_TREE_GO;
}

/* Iterative (fstree.h): the layer is as deep as the sandbox that made it. */
static int shift_ids(const char *path, uid_t base)
{
	return fk_tree_walk(AT_FDCWD, path, shift_entry, &base);
}

/* A new box's files from a committed layer (fk_box_commit): a copy of its root and, when boxes
 * have an /etc overlay, of its /etc upper layer; with a user namespace, owned by its range. */
static int box_from_layer(fk_box *b, fk_err *err)
{
	int rc = box_from_layer_copy(b, err);
	if (rc < 0 || !b->id_base)
		return rc;
	char p[4200];
	snprintf(p, sizeof(p), "%s/etc-upper", b->hdir);
	if (shift_ids(b->hroot, b->id_base) < 0 ||
	    (access(p, F_OK) == 0 && shift_ids(p, b->id_base) < 0))
		return fk__fail(err, FK_EIO, errno,
		                "giving the template's files to the sandbox: %s",
		                fk_strerror(errno));
	snprintf(p, sizeof(p), "%s/etc-lower", b->hdir);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", p, fk_strerror(errno));
	return 0;
}

static int box_from_layer_copy(fk_box *b, fk_err *err)
{
	char src[4200], dst[4200];
	snprintf(src, sizeof(src), "%s/root", b->layer_dir);
	if (fk_tree_copy(AT_FDCWD, src, AT_FDCWD, b->hroot) < 0)
		return fk__fail(err, FK_EIO, errno, "copying the template's files: %s",
		                fk_strerror(errno));
	if (!fk__ns_box_etc_template(b))
		return 0;
	snprintf(src, sizeof(src), "%s/etc-upper", b->layer_dir);
	snprintf(dst, sizeof(dst), "%s/etc-upper", b->hdir);
	if (access(src, F_OK) == 0 ? fk_tree_copy(AT_FDCWD, src, AT_FDCWD, dst) < 0
	                           : mkdir(dst, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "copying the template's /etc: %s",
		                fk_strerror(errno));
	snprintf(dst, sizeof(dst), "%s/etc-work", b->hdir);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", dst, fk_strerror(errno));
	snprintf(dst, sizeof(dst), "%s/etc", b->hroot);
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", dst, fk_strerror(errno));
	return 0;
}

/* A user namespace per box needs idmapped mounts of the host's trees and an overlay over an
 * idmapped template (Linux 5.19), and a directory for the range claims (shared by every fake-e2b
 * on this machine). */
void fk__ns_rt_userns(fk_rt *rt)
{
	const char *why = "overlay for /etc";
	if (rt->etc_templates) {
		why = "directory for id range claims";
		const char *dir = "/run/fake-e2b/idranges";
		if ((mkdir("/run/fake-e2b", 0700) == 0 || errno == EEXIST) &&
		    (mkdir(dir, 0700) == 0 || errno == EEXIST))
			rt->idrange_dir = strdup(dir);
	}
	if (rt->idrange_dir) {
		why = "user namespaces";
		int ns = fk_lx_userns_new(FK_IDS_FIRST, FK_IDS_SIZE);
		int usr = -1, etc = -1;
		if (ns >= 0) {
			why = "idmapped mounts";
			usr = fk_lx_idmapped_tree("/usr", ns, true, true);
			etc = fk_lx_idmapped_tree(rt->etc_templates[0], ns, false, true);
		}
		if (usr >= 0 && etc >= 0) {
			why = "overlay over an idmapped layer";
			rt->userns = overlay_works(rt->state_dir, rt->etc_templates[0], etc);
		}
		int fds[3] = {ns, usr, etc};
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	if (!rt->userns)
		fprintf(stderr,
		        "fake-e2b: no %s: sandboxes have NO user namespace (root inside is host "
		        "root with fewer capabilities)\n",
		        why);
}

/* The box's own id range and user namespace, kept for its whole life (its files are owned by
 * the range's ids across pause, resume and reboot). */
static int box_userns(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	if (!rt->userns || b->userns_fd >= 0)
		return 0;
	uint32_t k = 0;
	pthread_mutex_lock(&rt->lock);
	b->idrange_fd =
	    fk_lx_idrange_claim(rt->idrange_dir, FK_IDS_RANGES, &rt->idrange_cursor, &k);
	pthread_mutex_unlock(&rt->lock);
	if (b->idrange_fd < 0)
		return fk__fail(err, FK_EIO, errno, "no free id range for the sandbox: %s",
		                fk_strerror(errno));
	b->id_base = FK_IDS_FIRST + k * FK_IDS_SIZE;
	b->userns_fd = fk_lx_userns_new(b->id_base, FK_IDS_SIZE);
	if (b->userns_fd < 0)
		return fk__fail(err, FK_EIO, errno, "user namespace: %s", fk_strerror(errno));
	return 0;
}

/* A machine id of the box's own in its /etc (the upper layer of its overlay, or its copy): a new
 * box, from a layer or not, is a new machine. */
static int box_machine_id(fk_box *b, fk_err *err)
{
	char p[4200];
	if (fk__ns_box_etc_template(b))
		snprintf(p, sizeof(p), "%s/etc-upper/machine-id", b->hdir);
	else
		snprintf(p, sizeof(p), "%s/etc/machine-id", b->hroot);
	if (fk__etc_machine_id(p, fk__host_id(b, 0)) < 0)
		return fk__fail(err, FK_EIO, errno, "the sandbox's machine id: %s",
		                fk_strerror(errno));
	return 0;
}

int fk__backend_box_prepare(fk_box *b, fk_err *err)
{
	/* its disk must fit the state dir's file system (reserved below, disk_make): refused
	 * before anything of the box is made */
	if (b->rt->disks && b->disk_fd < 0 && b->limits.disk_bytes > fk__ns_state_free(b->rt))
		return fk__ns_no_room(b->rt, "the sandbox's disk", b->limits.disk_bytes, err);
	int rc = box_userns(b, err);
	if (rc < 0)
		return rc;
	/* 0700, the host's root's: a local user who knows a sandbox id cannot reach what its root
	 * left in its tree (a setuid copy of a shell owned by the box's root). Only the server
	 * and the box's PID 1 go through it, as the host's root, before PID 1 pivots into its
	 * root and enters its user namespace; the box's processes never see this path. */
	if ((mkdir(b->dir, 0700) < 0 && errno != EEXIST) || chmod(b->dir, 0700) < 0)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", b->dir, fk_strerror(errno));
	rc = fk__ns_box_disk(b, false, err);
	if (rc < 0)
		return rc;
	/* the disk's own top (attached at b->dir in the box's mount namespace): 0700 too */
	if (b->disk_fd >= 0 && chmod(b->hdir, 0700) < 0)
		return fk__fail(err, FK_EIO, errno, "chmod the sandbox's disk: %s",
		                fk_strerror(errno));
	if (b->layer_dir && access(b->hroot, F_OK) < 0) {
		rc = box_from_layer(b, err);
		if (rc < 0)
			return rc;
		fk__ns_box_prepare_fs(b);
		return box_machine_id(b, err);
	}
	bool fresh = mkdir(b->hroot, 0755) == 0;
	if (!fresh && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", b->root, fk_strerror(errno));
	/* the box's "/" belongs to its root */
	if (fresh && b->id_base && chown(b->hroot, b->id_base, b->id_base) < 0)
		return fk__fail(err, FK_EIO, errno, "chown %s: %s", b->root, fk_strerror(errno));
	if (fresh && fk__ns_box_etc_template(b)) {
		/* /etc = overlay of the runtime's template (mounted by the init); with a user
		 * namespace the template is seen through an idmapped mount at etc-lower */
		static const char *const sub[] = {"root/etc", "etc-upper", "etc-work", "etc-lower"};
		for (size_t i = 0; i < 4; i++) {
			char p[4200];
			snprintf(p, sizeof(p), "%s/%s", b->hdir, sub[i]);
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return fk__fail(err, FK_EIO, errno, "mkdir %s: %s", p,
				                fk_strerror(errno));
			/* the upper layer's root is /etc's inode: root's inside the box */
			if (i == 1 && b->id_base && chown(p, b->id_base, b->id_base) < 0)
				return fk__fail(err, FK_EIO, errno, "chown %s: %s", p,
				                fk_strerror(errno));
		}
	} else if (fresh) {
		char etc[4200];
		snprintf(etc, sizeof(etc), "%s/etc", b->hroot);
		if (fk__etc_make(etc, b->tpl, b->rt->egress_ns) != 0)
			return fk__fail(err, FK_EIO, errno, "writing the box's /etc failed");
	}
	fk__ns_box_prepare_fs(b);
	return fresh ? box_machine_id(b, err) : 0;
}

#define COPY_WHAT "a copy of the sandbox's files"

/* A copy of a box's files out of its disk (a layer: commit, snapshot) needs what the disk
 * holds on the state dir's file system: refused up front when that is more than it has free.
 * *need: those bytes (0 without a disk: commit then moves the files, a copy shares the file
 * system the box already fills). */
static int copy_room(fk_box *b, uint64_t *need, fk_err *err)
{
	struct statvfs sv;
	*need = 0;
	if (b->disk_fd < 0 || fstatvfs(b->disk_fd, &sv) < 0)
		return 0;
	*need = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	return *need > fk__ns_state_free(b->rt) ? fk__ns_no_room(b->rt, COPY_WHAT, *need, err) : 0;
}

/* After a failed copy into `layer_dir`: removes it, and says ENOSPC when the copy ran out of
 * space (another writer took it meanwhile: less than a MiB is left), else `fallback`. */
static int copy_failed(fk_box *b, const char *layer_dir, uint64_t need, int fallback_errno,
                       const char *fallback, fk_err *err)
{
	bool full = need && fk__ns_state_free(b->rt) < (1u << 20);
	fk_tree_remove(AT_FDCWD, layer_dir);
	if (full)
		return fk__ns_no_room(b->rt, COPY_WHAT, need, err);
	return fk__fail(err, FK_EIO, fallback_errno, "%s", fallback);
}

/* The box's files (root, /etc upper layer) into a new `layer_dir`: moved (commit: the box is
 * done with them; from its disk, another file system, that is a copy) or copied (snapshot). */
static int box_to_layer(fk_box *b, const char *layer_dir, bool move, fk_err *err)
{
	uint64_t need;
	int rc = copy_room(b, &need, err);
	if (rc < 0)
		return rc;
	if (mkdir(layer_dir, 0700) < 0)
		return fk__fail(err, errno == EEXIST ? FK_EEXIST : FK_EIO, errno, "mkdir %s: %s",
		                layer_dir, fk_strerror(errno));
	static const char *const parts[] = {"root", "etc-upper"};
	for (size_t i = 0; i < 2; i++) {
		char src[4200], dst[4200];
		snprintf(src, sizeof(src), "%s/%s", b->hdir, parts[i]);
		snprintf(dst, sizeof(dst), "%s/%s", layer_dir, parts[i]);
		bool failed;
		if (move && b->disk_fd < 0)
			failed = rename(src, dst) < 0 && errno != ENOENT;
		else
			failed = access(src, F_OK) == 0 &&
			         fk_tree_copy(AT_FDCWD, src, AT_FDCWD, dst) < 0;
		if (failed) {
			int e = errno;
			char why[160];
			snprintf(why, sizeof(why), "%s the sandbox's files: %s",
			         move ? "moving" : "copying", fk_strerror(e));
			return copy_failed(b, layer_dir, need, e, why, err);
		}
	}
	return 0;
}

int fk__backend_box_commit(fk_box *b, const char *layer_dir, fk_err *err)
{
	return box_to_layer(b, layer_dir, true, err);
}

int fk__backend_box_copy(fk_box *b, const char *layer_dir, fk_err *err)
{
	return box_to_layer(b, layer_dir, false, err);
}

/* ------------------------------------------------------------ keeping boxes */

/* The id range (index k) owning `path`, FK_IDS_RANGES when none does. */
static uint32_t owner_range(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0 || st.st_uid < FK_IDS_FIRST)
		return FK_IDS_RANGES;
	uint32_t k = (st.st_uid - FK_IDS_FIRST) / FK_IDS_SIZE;
	return k < FK_IDS_RANGES ? k : FK_IDS_RANGES;
}

int fk__backend_box_adopt(fk_box *b, fk_err *err)
{
	fk_rt *rt = b->rt;
	struct stat st;
	if (lstat(b->dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fk__fail(err, FK_ENOTFOUND, errno ? errno : ENOTDIR,
		                "sandbox %s has no files here", b->id);
	/* live restore: its PID 1 still runs, and the box with it */
	int live = fk__live_adopt(b, err);
	if (live != 0)
		return live < 0 ? live : 0;
	if (rt->disks) {
		int rc = fk__ns_box_disk(b, true, err);
		if (rc < 0)
			return rc == FK_EIO && errno == ENOENT
			           ? fk__fail(err, FK_ENOTFOUND, ENOENT, "sandbox %s has no disk",
			                      b->id)
			           : rc;
	}
	if (lstat(b->hroot, &st) < 0 || !S_ISDIR(st.st_mode))
		return fk__fail(err, FK_ENOTFOUND, ENOENT, "sandbox %s has no root", b->id);
	if (rt->userns) {
		/* its files' own range when it is free (nothing to change), else another */
		uint32_t k = owner_range(b->hroot);
		if (k < FK_IDS_RANGES) {
			pthread_mutex_lock(&rt->lock);
			rt->idrange_cursor = k;
			pthread_mutex_unlock(&rt->lock);
		}
		int rc = box_userns(b, err);
		if (rc < 0)
			return rc;
		if (k != (b->id_base - FK_IDS_FIRST) / FK_IDS_SIZE) {
			char p[4200];
			snprintf(p, sizeof(p), "%s/etc-upper", b->hdir);
			if (shift_ids(b->hroot, b->id_base) < 0 ||
			    (access(p, F_OK) == 0 && shift_ids(p, b->id_base) < 0))
				return fk__fail(err, FK_EIO, errno,
				                "giving the sandbox's files its new ids: %s",
				                fk_strerror(errno));
		}
	}
	fk__ns_box_prepare_fs(b);
	return 0;
}
