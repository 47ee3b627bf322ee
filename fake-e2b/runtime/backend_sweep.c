/*
 * fake-e2b/runtime/backend_sweep.c — the start-up sweep (backend.h fk__backend_rt_sweep): what
 * dead servers left behind is ended and removed before this one serves. Their boxes' processes
 * and cgroups (those not adopted by a live restore), the boxes' files and disks in the state
 * directory that no kept record names, the records of PID 1s nothing adopts, the temporary state
 * directories of default servers killed with -9, and the loop devices still backed by a file
 * there are said (fake-e2b/README.md "What survives what"; fake-e2b/SECURITY.md "Kept state and
 * the start-up sweep").
 */
#define _GNU_SOURCE
#include "backend_int.h"
#include "box_cgroups.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sweep_ctx {
	fk_rt *rt;
	const char *dir; /* the state directory swept: the runtime's own, or a dead one's */
	const char *const *keep;
	size_t n_keep;
} sweep_ctx;

/* Is `name` a box's entry of this state dir: <id>/ (a directory) or <id>.disk? *id gets the id. */
static bool box_entry(int dfd, const char *name, char id[FK_BOX_ID_MAX + 1], bool *is_disk)
{
	size_t n = strlen(name);
	*is_disk = n > 5 && !strcmp(name + n - 5, ".disk");
	if (*is_disk)
		n -= 5;
	if (n == 0 || n > FK_BOX_ID_MAX)
		return false;
	snprintf(id, FK_BOX_ID_MAX + 1, "%.*s", (int)n, name);
	struct stat st;
	if (!fk__valid_id(id) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return *is_disk ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode);
}

/* A box whose files are in this state dir (a dead runtime's box there is ours to end). */
static bool sweep_ours(const char *id, void *ud)
{
	sweep_ctx *c = ud;
	if (!fk__valid_id(id))
		return false;
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s.disk", c->dir, id);
	if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
		return true;
	snprintf(p, sizeof(p), "%s/%s", c->dir, id);
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void sweep_ended(const char *id, int pid, int n, void *ud)
{
	(void)ud;
	fprintf(stderr,
	        "fake-e2b: sweep: sandbox %s: %d process(es) left by a dead server (pid %d) "
	        "killed, its cgroups removed\n",
	        id, n, pid);
}

static bool kept(const sweep_ctx *c, const char *id)
{
	for (size_t i = 0; i < c->n_keep; i++)
		if (!strcmp(c->keep[i], id))
			return true;
	return false;
}

/* A box of this live-restore runtime's own cgroups that is not adopted: no record names it, or
 * its PID 1 is not the one recorded (fk__live_check). */
static bool sweep_own(const char *id, void *ud)
{
	sweep_ctx *c = ud;
	return !kept(c, id) || fk__live_check(c->rt, id) <= 0;
}

static void sweep_own_ended(const char *id, int pid, int n, void *ud)
{
	(void)pid;
	(void)ud;
	fprintf(stderr,
	        "fake-e2b: sweep: sandbox %s: %d process(es) a dead server left running killed "
	        "(not adopted), its cgroups removed\n",
	        id, n);
}

/* The records of PID 1s (<state>/.live/<id>) that nothing adopts any more. */
static void sweep_live_records(sweep_ctx *c)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/.live", c->rt->state_dir);
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		if (kept(c, de->d_name) && fk__live_check(c->rt, de->d_name) > 0)
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
}

/* Loop devices still backed by a file of this state dir (autoclear ones go with their last
 * mount, which the killed boxes held): each detached, and said. */
static void sweep_loops(const sweep_ctx *c)
{
	const char *state_dir = c->dir;
	DIR *d = opendir("/sys/block");
	size_t n = strlen(state_dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (strncmp(de->d_name, "loop", 4))
			continue;
		char p[300], file[4200] = "";
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		FILE *f = fopen(p, "re");
		bool got = f && fgets(file, sizeof(file), f);
		if (f)
			fclose(f);
		if (!got || strncmp(file, state_dir, n) || file[n] != '/')
			continue;
		file[strcspn(file, "\n")] = 0;
		/* an adopted box's disk, held by its PID 1's mounts */
		char id[FK_BOX_ID_MAX + 1];
		size_t len = strlen(file + n + 1);
		if (c->rt->live && len > 5 && len - 5 <= FK_BOX_ID_MAX &&
		    !strcmp(file + n + 1 + len - 5, ".disk")) {
			snprintf(id, sizeof(id), "%.*s", (int)(len - 5), file + n + 1);
			if (kept(c, id) && fk__live_check(c->rt, id) > 0)
				continue;
		}
		fprintf(stderr, "fake-e2b: sweep: /dev/%s still holds %s\n", de->d_name, file);
	}
	if (d)
		closedir(d);
}

/* Is the ephemeral directory `name` of parent `pfd` a dead server's? Its fd, its .lock's fd
 * write-locked by this process (held until the removal is done, so no other start removes it
 * at once) and the dead server's pid; false for anything else, and then it stays untouched:
 * not a directory of this user's that only it may write (a symlink, another user's), no
 * .ephemeral marker (a kept --state-dir, or one still being made: the marker comes after the
 * lock), its lock held (a live server's). */
static bool dead_ephemeral(int pfd, const char *name, int *dfd_out, int *lock_out, int *pid)
{
	struct stat st, ds, m, ls, lname;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 022))
		return false;
	int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return false;
	int lfd = -1;
	if (fstat(dfd, &ds) < 0 || ds.st_ino != st.st_ino || ds.st_dev != st.st_dev ||
	    fstatat(dfd, ".ephemeral", &m, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(m.st_mode) ||
	    m.st_uid != geteuid() ||
	    (lfd = openat(dfd, ".lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto no;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(lfd, F_SETLK, &fl) < 0)
		goto no; /* a live server's */
	/* still the directory's own .lock (not one another start already removed) */
	if (fstat(lfd, &ls) < 0 || !S_ISREG(ls.st_mode) ||
	    fstatat(dfd, ".lock", &lname, AT_SYMLINK_NOFOLLOW) < 0 || lname.st_ino != ls.st_ino ||
	    lname.st_dev != ls.st_dev)
		goto no;
	char line[32] = "";
	ssize_t n = pread(lfd, line, sizeof(line) - 1, 0);
	*pid = n > 0 ? (int)strtol(line, NULL, 10) : 0;
	*dfd_out = dfd;
	*lock_out = lfd;
	return true;
no:
	if (lfd >= 0)
		close(lfd);
	close(dfd);
	return false;
}

/* The temporary state directories (fake-e2b-* beside this runtime's own) that default servers
 * killed with -9 left, each with its boxes' disk images reserved whole: their boxes' processes
 * and cgroups ended, their loop devices said, the directories removed, each logged. */
static void sweep_dead_tmp_dirs(fk_rt *rt)
{
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", rt->state_dir);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return;
	*slash = 0;
	const char *own = slash + 1;
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = pfd < 0 ? NULL : fdopendir(dup(pfd));
	for (struct dirent *de; d && (de = readdir(d));) {
		int dfd, lfd, pid = 0;
		if (strncmp(de->d_name, "fake-e2b-", 9) || !strcmp(de->d_name, own) ||
		    !dead_ephemeral(pfd, de->d_name, &dfd, &lfd, &pid))
			continue;
		char dir[4096 + 256 + 2];
		snprintf(dir, sizeof(dir), "%s/%s", parent, de->d_name);
		sweep_ctx c = {.rt = rt, .dir = dir};
		if (rt->isolated)
			fk__cg_sweep_orphans(rt, sweep_ours, sweep_ended, &c);
		close(dfd);
		fk_tree_remove(pfd, de->d_name);
		sweep_loops(&c);
		fprintf(stderr,
		        "fake-e2b: sweep: removed %s (the temporary state directory of a dead "
		        "server, pid %d)\n",
		        dir, pid);
		close(lfd);
	}
	if (d)
		closedir(d);
	if (pfd >= 0)
		close(pfd);
}

void fk__backend_rt_sweep(fk_rt *rt, const char *const *keep, size_t n_keep)
{
	sweep_ctx c = {.rt = rt, .dir = rt->state_dir, .keep = keep, .n_keep = n_keep};
	if (rt->state_is_tmp)
		sweep_dead_tmp_dirs(rt);
	if (rt->isolated)
		fk__cg_sweep_orphans(rt, sweep_ours, sweep_ended, &c);
	if (rt->isolated && rt->live) {
		fk__cg_sweep_own(rt, sweep_own, sweep_own_ended, &c);
		sweep_live_records(&c);
	}
	int dfd = open(rt->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
	for (struct dirent *de; d && (de = readdir(d));) {
		char id[FK_BOX_ID_MAX + 1];
		bool is_disk;
		if (de->d_name[0] == '.' || !box_entry(dfd, de->d_name, id, &is_disk) ||
		    kept(&c, id))
			continue;
		if (is_disk)
			unlinkat(dfd, de->d_name, 0);
		else
			fk_tree_remove(dfd, de->d_name);
		fprintf(stderr, "fake-e2b: sweep: removed %s/%s (no sandbox of this server's)\n",
		        rt->state_dir, de->d_name);
	}
	if (d)
		closedir(d);
	if (dfd >= 0)
		close(dfd);
	sweep_loops(&c);
}

/* A box of this runtime's own cgroups that it has not adopted (not in its table with a PID 1). */
static bool sweep_unadopted_one(const char *id, void *ud)
{
	sweep_ctx *c = ud;
	if (!fk__valid_id(id))
		return false;
	fk_box *b = fk__box_get(c->rt, id);
	if (!b)
		return true;
	pthread_rwlock_rdlock(&b->life);
	bool live = !b->dead && b->init_pid > 0;
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return !live;
}

void fk__backend_rt_sweep_unadopted(fk_rt *rt)
{
	sweep_ctx c = {.rt = rt, .dir = rt->state_dir};
	if (!rt->isolated || !rt->live)
		return;
	fk__cg_sweep_own(rt, sweep_unadopted_one, sweep_own_ended, &c);
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/.live", rt->state_dir);
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.' && sweep_unadopted_one(de->d_name, &c))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
}
