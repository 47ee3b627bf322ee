/*
 * fake-e2b/runtime/lifecycle.c — the runtime object and the box lifecycle: create, freeze, thaw,
 * reboot, destroy. Makes a box real through the backend (backend.h) and ends its processes
 * through proc.c (procs.h). Knows nothing of HTTP.
 */
#define _GNU_SOURCE
#include "backend.h"
#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* A temporary state directory is locked (<dir>/.lock, an fcntl write lock for the runtime's
 * life: the kernel drops it when the process dies, kill -9 included) and then marked
 * (<dir>/.ephemeral): a later default start removes a marked sibling whose lock is free
 * (fk__backend_rt_sweep), never one being made (no marker yet) or in use (locked). */
static int mark_ephemeral(fk_rt *rt)
{
	int dfd = open(rt->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	int fd = openat(dfd, ".lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char line[32];
	int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0 || pwrite(fd, line, (size_t)n, 0) != n) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		close(dfd);
		return errno = e, -1;
	}
	rt->tmp_lock_fd = fd;
	static const char note[] = "a default fake-e2b's temporary state directory: removed at its "
	                           "exit, or by a later default start once .lock is free\n";
	int m =
	    openat(dfd, ".ephemeral", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = m >= 0 && write(m, note, sizeof(note) - 1) == (ssize_t)(sizeof(note) - 1);
	int e = errno;
	if (m >= 0)
		close(m);
	close(dfd);
	return ok ? 0 : (errno = e, -1);
}

/* bytes: paths under the state directory are built in 4 KiB buffers */
#define TMPDIR_MAX 1024

/* The template of a default state directory, malloc'd into *out (NULL when out of memory):
 * in $TMPDIR when it is an absolute path, as mktemp(1) does; else on disk, not in RAM (/dev/shm
 * would let a box's files eat the host's memory): /var/tmp, or /tmp. -1 when $TMPDIR is longer
 * than TMPDIR_MAX. */
static int default_state_dir(char **out)
{
	const char *tmp = getenv("TMPDIR");
	if (tmp && tmp[0] != '/')
		tmp = NULL; /* only an absolute one: the server may chdir */
	if (tmp && strlen(tmp) > TMPDIR_MAX)
		return -1;
	struct stat st;
	bool var_tmp =
	    stat("/var/tmp", &st) == 0 && S_ISDIR(st.st_mode) && access("/var/tmp", W_OK) == 0;
	if (asprintf(out, "%s/fake-e2b-XXXXXX", tmp ? tmp : var_tmp ? "/var/tmp" : "/tmp") < 0)
		*out = NULL;
	return 0;
}

int fk_rt_new(fk_rt **out, const fk_rt_options *opts, fk_err *err)
{
	*out = NULL;
	fk_rt *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	pthread_mutex_init(&rt->lock, NULL);
	pthread_mutex_init(&rt->disk_lock, NULL);
	pthread_rwlock_init(&rt->hook_lock, NULL);
	rt->life_pipe[0] = rt->life_pipe[1] = -1;
	rt->tmp_lock_fd = -1;
	rt->end_on_exit = opts && opts->end_on_exit;
	rt->no_clone3 = opts && opts->no_clone_into_cgroup;
	/* shared: the helpers and shims forked from us count their moves in it too */
	void *page =
	    mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rt->cg_moves = page == MAP_FAILED ? NULL : page;
	rt->live = opts && opts->live_restore && opts->state_dir;
	if (rt->live)
		fk__shim_reaper_start();
	rt->default_disk_mb = opts && opts->default_disk_mb ? opts->default_disk_mb : 1024;
	if (opts && opts->state_dir) {
		rt->state_dir = strdup(opts->state_dir);
		if (rt->state_dir && mkdir(rt->state_dir, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			fk_rt_free(rt);
			return fk__fail(err, FK_EIO, e, "cannot create state dir: %s",
			                fk_strerror(e));
		}
	} else {
		if (default_state_dir(&rt->state_dir) < 0) {
			fk_rt_free(rt);
			return fk__fail(err, FK_EINVAL, ENAMETOOLONG,
			                "TMPDIR is longer than %d bytes", TMPDIR_MAX);
		}
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
	/* others may reach what they know the path of (ca.pem for clients) but not list the
	 * sandboxes: a box's root can leave setuid files of its own ids in its tree, which a local
	 * user who finds the tree could run to act as that box's root on its files */
	chmod(rt->state_dir, 0711);
	if (rt->state_is_tmp && mark_ephemeral(rt) < 0) {
		int e = errno;
		fk_rt_free(rt);
		return fk__fail(err, FK_EIO, e, "marking the temporary state directory: %s",
		                fk_strerror(e));
	}
	int rc = fk__backend_rt_init(rt, opts, err);
	if (rc == 0 && rt->isolated) {
		char v[16] = "";
		FILE *f = fopen("/proc/sys/fs/suid_dumpable", "re");
		bool got = f && fgets(v, sizeof(v), f);
		if (f)
			fclose(f);
		rc = fk_rt_check_suid_dumpable(got ? v : NULL, err);
	}
	if (rc < 0) {
		fk_rt_free(rt);
		return rc;
	}
	*out = rt;
	return 0;
}

int fk_rt_check_suid_dumpable(const char *value, fk_err *err)
{
	if (!value)
		return fk__fail(err, FK_EIO, EIO, "cannot read /proc/sys/fs/suid_dumpable");
	char *end;
	errno = 0;
	long v = strtol(value, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (end == value || *end || errno)
		return fk__fail(err, FK_EIO, EIO, "fs.suid_dumpable reads '%.16s', not a number",
		                value);
	if (v == 1)
		return fk__fail(
		    err, FK_EINVAL, EINVAL,
		    "fs.suid_dumpable is 1 (debug): a sandbox's process could trace a "
		    "process the server starts and reach the server's memory; set it to "
		    "0 or 2 (sysctl -w fs.suid_dumpable=2) and start again");
	return 0;
}

const char *fk_rt_state_dir(const fk_rt *rt)
{
	return rt->state_dir;
}

unsigned fk_rt_default_disk_mb(const fk_rt *rt)
{
	return rt->default_disk_mb;
}

bool fk_rt_isolated(const fk_rt *rt)
{
	return rt && rt->isolated;
}

bool fk_rt_egress_isolated(const fk_rt *rt)
{
	return rt && rt->egress_ns;
}

bool fk_rt_egress_allowed(const fk_rt *rt)
{
	return rt && (!rt->isolated || rt->egress_ns || rt->unsafe_shared_network);
}

/* Stops every process of the box and its PID 1; the PID namespace is empty afterwards. */
static void box_kill_all(fk_box *b)
{
	fk__box_procs_stop(b);
	if (!fk__backend_box_kill(b)) {
		fk__box_procs_signal(b, SIGCONT);
		fk__box_procs_signal(b, SIGKILL);
	}
	b->frozen = false;
}

static int box_end(fk_rt *rt, const char *id, const char *layer_dir, bool keep, fk_err *err);

/* What fk_box_create and fk_box_restore refuse before making anything. */
static int box_check(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err)
{
	if (!fk__valid_id(id))
		return fk__fail(err, FK_EINVAL, 0, "invalid sandbox id");
	if (opts && !opts->net_none) {
		fk_egress rules;
		if (fk__egress_parse(&rules, opts->allow_out, opts->n_allow_out, opts->deny_out,
		                     opts->n_deny_out) < 0)
			return errno == ENOMEM
			           ? fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory")
			           : fk__fail(err, FK_EINVAL, EINVAL,
			                      "egress rules: deny_out entries must be IP addresses "
			                      "or CIDR blocks");
		fk__egress_free(&rules);
	}
	if (opts && opts->template_id && !fk_template_find(opts->template_id))
		return fk__fail(err, FK_EINVAL, 0, "template '%s' not found", opts->template_id);
	if (!(opts && opts->net_none) && !fk_rt_egress_allowed(rt))
		return fk__fail(err, FK_ESTATE, EOPNOTSUPP, "%s", FK_EGRESS_REFUSED_MSG);
	return 0;
}

/* A new box in the table in *out, its life lock held (the caller unlocks it and puts the box):
 * 0, FK_ENOMEM or FK_EEXIST (the id is taken). */
static int box_register(fk_rt *rt, const char *id, const fk_box_options *opts, fk_box **out,
                        fk_err *err)
{
	fk_box *b = fk__box_new(rt, id, opts);
	if (!b)
		return fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory");
	/* the life lock before the table's: every path takes them in that order (box_userns takes
	 * rt->lock under the life lock); nobody else sees the box before it is in the table */
	pthread_rwlock_wrlock(&b->life);
	pthread_mutex_lock(&rt->lock);
	for (fk_box *o = rt->boxes; o; o = o->next) {
		if (!strcmp(o->id, id)) {
			pthread_mutex_unlock(&rt->lock);
			pthread_rwlock_unlock(&b->life);
			fk__box_free(b);
			return fk__fail(err, FK_EEXIST, 0, "sandbox %s already exists", id);
		}
	}
	b->next = rt->boxes;
	rt->boxes = b;
	b->refs++; /* the caller's until it puts it */
	pthread_mutex_unlock(&rt->lock);
	*out = b;
	return 0;
}

int fk_box_create(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err)
{
	int rc = box_check(rt, id, opts, err);
	if (rc < 0)
		return rc;
	fk_box *b = NULL;
	if ((rc = box_register(rt, id, opts, &b, err)) < 0)
		return rc;
	rc = fk__backend_box_prepare(b, err);
	if (rc == 0)
		rc = fk__backend_box_boot(b, err);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	if (rc < 0)
		fk_box_destroy(rt, id, NULL);
	return rc;
}

int fk_box_restore(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err)
{
	int rc = box_check(rt, id, opts, err);
	if (rc < 0)
		return rc;
	fk_box *b = NULL;
	if ((rc = box_register(rt, id, opts, &b, err)) < 0)
		return rc;
	rc = fk__backend_box_adopt(b, err);
	if (rc == 0 && b->init_pid > 0)
		fk__procs_adopt(b); /* live restore: the processes its shims hold */
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	if (rc < 0)
		box_end(rt, id, NULL, true, NULL); /* out of the table; its files stay */
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

static int box_set_frozen(fk_rt *rt, const char *id, bool freeze, fk_err *err)
{
	fk_box *b;
	int rc = box_op(rt, id, &b, err);
	if (rc < 0)
		return rc;
	if (b->frozen != freeze) {
		int r = fk__backend_box_freeze(b, freeze);
		if (r < 0) {
			int e = errno;
			rc = fk__fail(err, FK_EIO, e, "%s: %s", freeze ? "freeze" : "thaw",
			              fk_strerror(e));
		} else if (r > 0) {
			fk__box_procs_signal(b, freeze ? SIGSTOP : SIGCONT);
		}
		if (rc == 0)
			b->frozen = freeze;
	}
	box_op_done(b);
	return rc;
}

int fk_box_freeze(fk_rt *rt, const char *id, fk_err *err)
{
	return box_set_frozen(rt, id, true, err);
}

int fk_box_thaw(fk_rt *rt, const char *id, fk_err *err)
{
	return box_set_frozen(rt, id, false, err);
}

int fk_box_snapshot(fk_rt *rt, const char *id, const char *layer_dir, fk_err *err)
{
	if (!layer_dir || !*layer_dir)
		return fk__fail(err, FK_EINVAL, 0, "no layer directory");
	fk_box *b;
	int rc = box_op(rt, id, &b, err);
	if (rc < 0)
		return rc;
	/* frozen while copied (a box that was running runs on afterwards) */
	bool froze = false;
	if (!b->frozen) {
		int r = fk__backend_box_freeze(b, true);
		if (r < 0) {
			int e = errno;
			box_op_done(b);
			return fk__fail(err, FK_EIO, e, "freeze: %s", fk_strerror(e));
		}
		if (r > 0)
			fk__box_procs_signal(b, SIGSTOP);
		froze = true;
	}
	rc = fk__backend_box_copy(b, layer_dir, err);
	if (froze && fk__backend_box_freeze(b, false) > 0)
		fk__box_procs_signal(b, SIGCONT);
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
	fk__backend_box_reset(b);
	rc = fk__backend_box_boot(b, err);
	box_op_done(b);
	return rc;
}

/* Destroy, after moving the box's files to layer_dir when it is not NULL (commit); with `keep`
 * (close) the files stay in the state dir. */
static int box_end(fk_rt *rt, const char *id, const char *layer_dir, bool keep, fk_err *err)
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
	/* the files first: removing lets go of the box's disk */
	int rc = layer_dir ? fk__backend_box_commit(b, layer_dir, err) : 0;
	fk__backend_box_remove(b, keep);
	int dfd = keep ? -1 : open(b->rt->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fk_tree_remove(dfd, b->id);
		close(dfd);
	}
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return rc;
}

int fk_box_destroy(fk_rt *rt, const char *id, fk_err *err)
{
	return box_end(rt, id, NULL, false, err);
}

int fk_box_close(fk_rt *rt, const char *id, fk_err *err)
{
	return box_end(rt, id, NULL, true, err);
}

int fk_box_commit(fk_rt *rt, const char *id, const char *layer_dir, fk_err *err)
{
	if (!layer_dir || !*layer_dir)
		return fk__fail(err, FK_EINVAL, 0, "no layer directory");
	return box_end(rt, id, layer_dir, false, err);
}

int fk_box_set_egress(fk_rt *rt, const char *id, const char *const *allow_out, size_t n_allow_out,
                      const char *const *deny_out, size_t n_deny_out, fk_err *err)
{
	fk_erules *r = fk__erules_new(allow_out, n_allow_out, deny_out, n_deny_out);
	if (!r)
		return errno == ENOMEM ? fk__fail(err, FK_ENOMEM, ENOMEM, "out of memory")
		                       : fk__fail(err, FK_EINVAL, EINVAL,
		                                  "egress rules: deny_out entries must be IP "
		                                  "addresses or CIDR blocks");
	fk_box *b;
	int rc = box_op(rt, id, &b, err);
	if (rc < 0) {
		fk__erules_unref(r);
		return rc;
	}
	/* egress none is a deny-all rule with nothing allowed */
	bool lets_out = !r->e.deny_all || r->e.n_allow_cidrs > 0 || r->e.n_allow_names > 0;
	fk_erules *old = b->egress;
	b->egress = r;
	rc = fk__backend_box_egress(b, lets_out, err);
	if (rc < 0) {
		b->egress = old;
		fk__erules_unref(r);
	} else {
		fk__erules_unref(old);
	}
	box_op_done(b);
	return rc;
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

bool fk_box_init_gone(fk_rt *rt, const char *id)
{
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return false;
	/* never waits: a box busy in a long operation (a snapshot's copy) is asked again at the
	 * reaper's next round, which meanwhile expires the other sandboxes on time */
	if (pthread_rwlock_tryrdlock(&b->life) != 0) {
		fk__box_put(b);
		return false;
	}
	bool gone = !b->dead && b->init_pid > 0 && fk__backend_box_init_gone(b);
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return gone;
}

bool fk_box_live(fk_rt *rt, const char *id, bool *frozen_out)
{
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return false;
	pthread_rwlock_rdlock(&b->life);
	bool live = !b->dead && b->init_pid > 0;
	if (frozen_out)
		*frozen_out = b->frozen;
	pthread_rwlock_unlock(&b->life);
	fk__box_put(b);
	return live;
}

bool fk_rt_live(const fk_rt *rt)
{
	return rt && rt->live;
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

void fk_rt_sweep(fk_rt *rt, const char *const *keep, size_t n_keep)
{
	fk__backend_rt_sweep(rt, keep, n_keep);
}

void fk_rt_sweep_unadopted(fk_rt *rt)
{
	fk__backend_rt_sweep_unadopted(rt);
}

void fk_rt_free(fk_rt *rt)
{
	if (!rt)
		return;
	/* live restore: every box runs on (its PID 1 watches nothing of ours), its cgroups, /etc
	 * template and id range claim stay for the next runtime; the process is about to exit */
	if (rt->live) {
		static fk_rt *left; /* still reachable: nothing of it is a leak */
		left = rt;
		(void)left;
		fk__backend_rt_leave(rt);
		return;
	}
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
	fk__backend_rt_fini(rt);
	if (rt->state_is_tmp && rt->state_dir)
		fk_tree_remove(AT_FDCWD, rt->state_dir);
	if (rt->tmp_lock_fd >= 0)
		close(rt->tmp_lock_fd); /* after the removal: never a free lock on a marked
		                           directory */
	free(rt->state_dir);
	pthread_mutex_destroy(&rt->lock);
	pthread_mutex_destroy(&rt->disk_lock);
	pthread_rwlock_destroy(&rt->hook_lock);
	if (rt->cg_moves)
		munmap(rt->cg_moves, sizeof(uint64_t));
	free(rt);
}

uint64_t fk_rt_cgroup_moves(const fk_rt *rt)
{
	return rt->cg_moves ? __atomic_load_n(rt->cg_moves, __ATOMIC_SEQ_CST) : 0;
}

void fk_rt_set_proc_end_hook(fk_rt *rt,
                             void (*fn)(void *ctx, const char *box_id, const fk_proc_end *end),
                             void *ctx)
{
	pthread_rwlock_wrlock(&rt->hook_lock);
	rt->proc_end_hook = fn;
	rt->proc_end_ctx = ctx;
	pthread_rwlock_unlock(&rt->hook_lock);
}
