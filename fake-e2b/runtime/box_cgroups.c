/*
 * fake-e2b/runtime/box_cgroups.c — a box's cgroups (see box_cgroups.h). The runtime picks one of
 * two layouts when it starts.
 *
 * cgroup v1 (a hybrid machine: one hierarchy per controller), per controller:
 *   /sys/fs/cgroup/<ctl>/fake-e2b/rt-<pid>-<n>-<ns>/<box id>/          freezer, memory, cpu,
 * cpuacct; pids reserve (max = cap + 64) /sys/fs/cgroup/pids/fake-e2b/rt-<pid>-<n>-<ns>/<box
 * id>/procs/     pids (max = cap) and, when the machine also has the unified (v2) hierarchy at
 * /sys/fs/cgroup/unified, no controller, for the box's BPF bind programs:
 *   <v2>/fake-e2b/rt-<pid>-<n>-<ns>/<box id>/
 *
 * cgroup v2 only (/sys/fs/cgroup is cgroup2, as a fresh Debian 12 boots), one directory with the
 * memory, pids and cpu controllers enabled down to it, whose processes live in two leaves (v2
 * lets a cgroup with controllers for its children hold no process of its own):
 *   /sys/fs/cgroup/fake-e2b/rt-<pid>-<n>-<ns>/<box id>/          memory.max, memory.swap.max 0,
 *                                                           cpu.max, pids.max = cap + 64,
 *                                                           cgroup.freeze, cgroup.kill, BPF
 *   /sys/fs/cgroup/fake-e2b/rt-<pid>-<n>-<ns>/<box id>/procs/    pids.max = cap: PID 1, every start
 *   /sys/fs/cgroup/fake-e2b/rt-<pid>-<n>-<ns>/<box id>/reserve/  starts while procs is nearly full
 *
 * <ns> is the runtime's PID namespace (the inode of /proc/self/ns/pid, hex), and the runtime
 * holds an flock on each of its rt- directories for its life: the start-up sweep of another
 * server, in whatever PID namespace, ends only a directory whose lock is free (a dead
 * runtime's), and one naming its own namespace only once that pid is gone too (linux/cgroup.c
 * fk_lx_cg_rt_dead; fake-e2b/README.md, "What survives what"). Live restore's kept-<dev>-<ino>
 * directories are never swept.
 */
#define _GNU_SOURCE
#include "box_cgroups.h"
#include "cg_join.h"
#include "linux/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define CG_BASE "/sys/fs/cgroup"

static const struct {
	unsigned bit;
	const char *name;
} ctls[] = {
    {FK_CG_FREEZER, "freezer"}, {FK_CG_PIDS, "pids"},       {FK_CG_MEMORY, "memory"},
    {FK_CG_CPU, "cpu"},         {FK_CG_CPUACCT, "cpuacct"},
};
#define N_CTLS (sizeof(ctls) / sizeof(ctls[0]))

/* v2: the controllers fake-e2b enables for its boxes, in this order (fk_lx_cg2_enable's mask) */
static const char *const v2_names[] = {"memory", "pids", "cpu"};
static const unsigned v2_bits[] = {FK_CG_MEMORY, FK_CG_PIDS, FK_CG_CPU};
#define N_V2 (sizeof(v2_names) / sizeof(v2_names[0]))

/* How long a v2 freeze or thaw may take to be reported done (v1's loop waits as long). */
#define FREEZE_TIMEOUT_MS 10000

static void v2_missing(unsigned bit, const char *where)
{
	for (size_t i = 0; i < N_CTLS; i++)
		if (ctls[i].bit == bit)
			fprintf(stderr, "fake-e2b: no %s cgroup (cgroup v2, %s): %s\n",
			        ctls[i].name, where,
			        bit == FK_CG_FREEZER ? "pause stops processes with SIGSTOP instead"
			                             : "that limit is not enforced");
}

/* The unified hierarchy only: controllers enabled from /sys/fs/cgroup down to this runtime's
 * directory, which rt->cg2_dir and rt->cg_root name. */
/* mkdir of this runtime's directory `dir` in one hierarchy (there already: fine), a rt- one
 * claimed too: its lock, held for the runtime's life (fk_lx_cg_rt_claim). 0, or -1 with errno
 * when not made. */
static int rt_mkdir(fk_rt *rt, const char *dir)
{
	if (strncmp(rt->cg_rel, "fake-e2b/rt-", 12) != 0)
		return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
	int fd = fk_lx_cg_rt_claim(dir);
	if (fd >= 0 && rt->n_cg_locks < sizeof(rt->cg_locks) / sizeof(rt->cg_locks[0])) {
		rt->cg_locks[rt->n_cg_locks++] = fd;
		return 0;
	}
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (access(dir, F_OK) < 0)
		return errno = e, -1;
	fprintf(stderr,
	        "fake-e2b: cannot lock %s (%s): a server in another PID namespace may take it for "
	        "a dead one's\n",
	        dir, fk_strerror(fd >= 0 ? ENOSPC : e));
	return 0;
}

/* mkdir of a directory of fake-e2b's v2 tree (there already: fine; with `rt`, that runtime's
 * own: rt_mkdir); false, said once, when not made: the runtime then has no cgroup limits. */
static bool v2_mkdir(fk_rt *rt, const char *path)
{
	if ((rt ? rt_mkdir(rt, path) : mkdir(path, 0755)) == 0 || errno == EEXIST)
		return true;
	fprintf(stderr,
	        "fake-e2b: cannot create %s (%s): no cgroup limits, pause stops processes with "
	        "SIGSTOP instead\n",
	        path, fk_strerror(errno));
	return false;
}

static void rt_init_v2(fk_rt *rt)
{
	char top[] = CG_BASE "/fake-e2b", dir[512];
	snprintf(dir, sizeof(dir), CG_BASE "/%s", rt->cg_rel);
	unsigned on = fk_lx_cg2_enable(CG_BASE, v2_names, N_V2);
	if (!v2_mkdir(NULL, top))
		return;
	fk_lx_cg_sweep(top);
	on &= fk_lx_cg2_enable(top, v2_names, N_V2);
	if (!v2_mkdir(rt, dir))
		return;
	on &= fk_lx_cg2_enable(dir, v2_names, N_V2);
	if (!(rt->cg2_dir = strdup(dir)) || !(rt->cg_root = strdup(dir))) {
		free(rt->cg2_dir);
		rt->cg2_dir = NULL;
		rmdir(dir);
		return;
	}
	rt->cg_v2 = true;
	rt->cg_ctl = FK_CG_CPUACCT; /* cpu.stat is in every v2 cgroup */
	for (size_t i = 0; i < N_V2; i++) {
		if (on & (1u << i))
			rt->cg_ctl |= v2_bits[i];
		else
			v2_missing(v2_bits[i], "not in " CG_BASE "/cgroup.controllers, or "
			                       "cannot be enabled below it");
	}
	char freeze[600];
	snprintf(freeze, sizeof(freeze), "%s/cgroup.freeze", dir);
	if (access(freeze, F_OK) == 0) {
		rt->cg_ctl |= FK_CG_FREEZER;
		rt->freezer = true;
	} else {
		v2_missing(FK_CG_FREEZER, "no cgroup.freeze: Linux < 5.2");
	}
}

/* Is fake-e2b/`rel` there in a hierarchy already (a dead runtime's of the same pid, namespace
 * and number, which a process it left may still hold locked)? */
static bool rel_taken(const char *rel)
{
	char p[512];
	for (size_t i = 0; i < N_CTLS; i++)
		if (snprintf(p, sizeof(p), CG_BASE "/%s/%s", ctls[i].name, rel) > 0 &&
		    access(p, F_OK) == 0)
			return true;
	return (snprintf(p, sizeof(p), CG_BASE "/unified/%s", rel) > 0 && access(p, F_OK) == 0) ||
	       (snprintf(p, sizeof(p), CG_BASE "/%s", rel) > 0 && access(p, F_OK) == 0);
}

/* rt->cg_rel: live restore's one directory per state dir (its device and inode), the same for
 * every runtime on it, so that the boxes a dead one left are found where they run (the state
 * dir's lock makes it one runtime's at a time; no sweep of dead runtimes reads it); else
 * fake-e2b/rt-<pid>-<n>-<pid namespace>, one no hierarchy has yet. false: none. */
static bool rt_name(fk_rt *rt)
{
	static int seq;
	struct stat sd;
	if (rt->live && stat(rt->state_dir, &sd) == 0) {
		if (asprintf(&rt->cg_rel, "fake-e2b/kept-%llx-%llx", (unsigned long long)sd.st_dev,
		             (unsigned long long)sd.st_ino) >= 0)
			return true;
		rt->cg_rel = NULL;
		return false;
	}
	unsigned long long ns = fk_lx_pidns();
	for (int tries = 0; tries < 64; tries++) {
		int n = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
		if (asprintf(&rt->cg_rel, "fake-e2b/rt-%d-%d-%llx", (int)getpid(), n, ns) < 0)
			break;
		if (!rel_taken(rt->cg_rel))
			return true;
		free(rt->cg_rel);
	}
	rt->cg_rel = NULL;
	return false;
}

void fk__cg_rt_init(fk_rt *rt)
{
	rt->n_cg_locks = 0;
	if (!rt_name(rt))
		return;
	struct statfs base_fs;
	if (statfs(CG_BASE, &base_fs) == 0 && base_fs.f_type == CGROUP2_SUPER_MAGIC) {
		rt_init_v2(rt);
		return;
	}
	for (size_t i = 0; i < N_CTLS; i++) {
		char top[256], dir[512];
		snprintf(top, sizeof(top), CG_BASE "/%s/fake-e2b", ctls[i].name);
		snprintf(dir, sizeof(dir), CG_BASE "/%s/%s", ctls[i].name, rt->cg_rel);
		if (mkdir(top, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "fake-e2b: no %s cgroup at " CG_BASE "/%s (%s): %s\n",
			        ctls[i].name, ctls[i].name, fk_strerror(errno),
			        ctls[i].bit == FK_CG_FREEZER
			            ? "pause stops processes with SIGSTOP instead"
			            : "that limit is not enforced");
			continue;
		}
		fk_lx_cg_sweep(top);
		if (rt_mkdir(rt, dir) < 0) {
			fprintf(stderr, "fake-e2b: cannot create %s (%s)\n", dir,
			        fk_strerror(errno));
			continue;
		}
		rt->cg_ctl |= ctls[i].bit;
	}
	if ((rt->cg_ctl & FK_CG_FREEZER) &&
	    asprintf(&rt->cg_root, CG_BASE "/freezer/%s", rt->cg_rel) >= 0)
		rt->freezer = true;
	else
		rt->cg_root = NULL;
	static const char *const v2[] = {CG_BASE "/unified", CG_BASE};
	for (size_t i = 0; i < 2 && !rt->cg2_dir; i++) {
		struct statfs sf;
		char top[128], dir[512];
		if (statfs(v2[i], &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
			continue;
		snprintf(top, sizeof(top), "%s/fake-e2b", v2[i]);
		snprintf(dir, sizeof(dir), "%s/%s", v2[i], rt->cg_rel);
		if (mkdir(top, 0755) < 0 && errno != EEXIST)
			break;
		fk_lx_cg_sweep(top);
		if (rt_mkdir(rt, dir) == 0 && !(rt->cg2_dir = strdup(dir)))
			break;
	}
}

void fk__cg_rt_fini(fk_rt *rt)
{
	if (rt->cg2_dir) { /* the process shims' (live restore), once none is left */
		char p[600];
		snprintf(p, sizeof(p), "%s/.shims", rt->cg2_dir);
		rmdir(p);
	}
	for (size_t i = 0; rt->cg_rel && !rt->cg_v2 && i < N_CTLS; i++) {
		if (!(rt->cg_ctl & ctls[i].bit))
			continue;
		char p[512];
		snprintf(p, sizeof(p), CG_BASE "/%s/%s", ctls[i].name, rt->cg_rel);
		rmdir(p);
		snprintf(p, sizeof(p), CG_BASE "/%s/fake-e2b", ctls[i].name);
		rmdir(p); /* fails harmlessly while another runtime uses it */
	}
	if (rt->cg2_dir) {
		rmdir(rt->cg2_dir);
		char *slash = strrchr(rt->cg2_dir, '/');
		*slash = 0;
		rmdir(rt->cg2_dir); /* <v2>/fake-e2b: fails harmlessly while another uses it */
	}
	for (unsigned i = 0; i < rt->n_cg_locks; i++)
		close(
		    rt->cg_locks[i]); /* after the rmdirs: never a free lock on a live runtime's */
	rt->n_cg_locks = 0;
	free(rt->cg2_dir);
	free(rt->cg_rel);
	free(rt->cg_root);
	rt->cg_rel = rt->cg_root = rt->cg2_dir = NULL;
	rt->cg_ctl = 0;
	rt->cg_v2 = false;
}

static void box_dir(const fk_box *b, const char *ctl, const char *sub, char *out, size_t size)
{
	snprintf(out, size, CG_BASE "/%s/%s/%s%s", ctl, b->rt->cg_rel, b->id, sub);
}

/* v2: the box's directory, and with sub ("/procs", "/reserve") one of its leaves */
static void box_dir2(const fk_box *b, const char *sub, char *out, size_t size)
{
	snprintf(out, size, "%s/%s%s", b->rt->cg2_dir, b->id, sub);
}

/* v2: makes the box's directory and leaves (idempotent), writes its limits. */
static int box_setup_v2(fk_box *b, fk_err *err)
{
	const fk_limits *l = &b->limits;
	unsigned ctl = b->rt->cg_ctl;
	char dir[600], procs[620], reserve[620];
	box_dir2(b, "", dir, sizeof(dir));
	box_dir2(b, "/procs", procs, sizeof(procs));
	box_dir2(b, "/reserve", reserve, sizeof(reserve));
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fk__fail(err, FK_EIO, errno, "cgroup %s: %s", dir, fk_strerror(errno));
	static const char *const pids[] = {"pids"};
	if ((ctl & FK_CG_PIDS) && fk_lx_cg2_enable(dir, pids, 1) != 1)
		return fk__fail(err, FK_EIO, errno, "cgroup %s: cannot enable pids: %s", dir,
		                fk_strerror(errno));
	for (int i = 0; i < 2; i++) {
		const char *leaf = i == 0 ? procs : reserve;
		if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
			return fk__fail(err, FK_EIO, errno, "cgroup %s: %s", leaf,
			                fk_strerror(errno));
	}
	const char *what = NULL;
	int rc = fk_lx_cg2_set_limits(
	    dir, (ctl & FK_CG_MEMORY) ? l->memory_bytes : 0, (ctl & FK_CG_CPU) ? l->cpu_count : 0,
	    (ctl & FK_CG_PIDS) ? l->pids_max + l->pids_reserve : 0, &what);
	if (rc == 0 && (ctl & FK_CG_PIDS)) {
		what = "pids";
		rc = fk_lx_cg_write_u64(procs, "pids.max", l->pids_max);
	}
	if (rc < 0)
		return fk__fail(err, FK_EIO, errno, "cgroup %s limits: %s", what,
		                fk_strerror(errno));
	return 0;
}

int fk__cg_box_setup(fk_box *b, fk_err *err)
{
	const fk_limits *l = &b->limits;
	if (b->rt->cg_v2)
		return box_setup_v2(b, err);
	if (b->rt->cg2_dir) {
		char dir[600];
		snprintf(dir, sizeof(dir), "%s/%s", b->rt->cg2_dir, b->id);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return fk__fail(err, FK_EIO, errno, "cgroup v2: %s", fk_strerror(errno));
	}
	for (size_t i = 0; i < N_CTLS; i++) {
		if (!(b->rt->cg_ctl & ctls[i].bit))
			continue;
		char dir[600], sub[620];
		box_dir(b, ctls[i].name, "", dir, sizeof(dir));
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return fk__fail(err, FK_EIO, errno, "cgroup %s: %s", ctls[i].name,
			                fk_strerror(errno));
		int rc = 0;
		switch (ctls[i].bit) {
		case FK_CG_PIDS:
			snprintf(sub, sizeof(sub), "%s/procs", dir);
			if (mkdir(sub, 0755) < 0 && errno != EEXIST)
				rc = -1;
			rc =
			    rc ? rc
			       : fk_lx_cg_write_u64(dir, "pids.max", l->pids_max + l->pids_reserve);
			rc = rc ? rc : fk_lx_cg_write_u64(sub, "pids.max", l->pids_max);
			break;
		case FK_CG_MEMORY:
			if (l->memory_bytes)
				rc = fk_lx_cg_write_u64(dir, "memory.limit_in_bytes",
				                        l->memory_bytes);
			break;
		case FK_CG_CPU:
			if (l->cpu_count) {
				rc = fk_lx_cg_write_u64(dir, "cpu.cfs_period_us", 100000);
				rc = rc ? rc
				        : fk_lx_cg_write_u64(dir, "cpu.cfs_quota_us",
				                             l->cpu_count * 100000ull);
			}
			break;
		default:
			break;
		}
		if (rc < 0)
			return fk__fail(err, FK_EIO, errno, "cgroup %s limits: %s", ctls[i].name,
			                fk_strerror(errno));
	}
	return 0;
}

/* Slots a new start wants free below the limit before it joins the box's processes. */
#define PIDS_HEADROOM 16

/* O_PATH of cgroup directory `dir` (a new task is made in it: cg_join.h), or -1 with errno */
static int open_dir(const char *dir)
{
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* v2: the leaf a new task is made in, procs or (nearly full) reserve, the reserve for a birth
 * that finds procs full, and the reserve's cgroup.procs for a clone that loses the race for the
 * last slot. */
static int join_open_v2(fk_box *b, fk_cg_join *j, bool reserve, fk_err *err)
{
	char procs[620], reserve_dir[620], file[700];
	box_dir2(b, "/procs", procs, sizeof(procs));
	box_dir2(b, "/reserve", reserve_dir, sizeof(reserve_dir));
	bool pids = (b->rt->cg_ctl & FK_CG_PIDS) != 0;
	if (reserve && pids) {
		snprintf(file, sizeof(file), "%s/cgroup.procs", reserve_dir);
		j->reserve = open(file, O_WRONLY | O_CLOEXEC);
		j->v2_reserve = open_dir(reserve_dir);
	}
	bool full = pids && fk_lx_cg_pids_nearly_full(procs, PIDS_HEADROOM);
	const char *leaf = full ? reserve_dir : procs;
	j->v2 = open_dir(leaf);
	if (j->v2 < 0) {
		int e = errno;
		fk__cg_join_close(j);
		return fk__fail(err, FK_EIO, e, "cgroup %s: %s", leaf, fk_strerror(e));
	}
	return 0;
}

int fk__cg_box_join_open(fk_box *b, fk_cg_join *j, bool reserve, fk_err *err)
{
	fk__cg_join_init(j, b->rt);
	if (b->rt->cg_v2)
		return join_open_v2(b, j, reserve, err);
	if (reserve && (b->rt->cg_ctl & FK_CG_PIDS)) {
		char tasks[700];
		box_dir(b, "pids", "/tasks", tasks, sizeof(tasks));
		j->reserve = open(tasks, O_WRONLY | O_CLOEXEC);
	}
	for (size_t i = 0; i < N_CTLS; i++) {
		if (!(b->rt->cg_ctl & ctls[i].bit))
			continue;
		char dir[600], tasks[700];
		box_dir(b, ctls[i].name, ctls[i].bit == FK_CG_PIDS ? "/procs" : "", dir,
		        sizeof(dir));
		if (ctls[i].bit == FK_CG_PIDS && fk_lx_cg_pids_nearly_full(dir, PIDS_HEADROOM))
			box_dir(b, ctls[i].name, "", dir, sizeof(dir));
		snprintf(tasks, sizeof(tasks), "%s/tasks", dir);
		int fd = open(tasks, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			fk__cg_join_close(j);
			return fk__fail(err, FK_EIO, e, "cgroup %s: %s", ctls[i].name,
			                fk_strerror(e));
		}
		j->tasks[j->n_tasks++] = fd;
	}
	if (b->rt->cg2_dir) { /* the hybrid's unified hierarchy: no controller, the BPF programs */
		char dir[700];
		snprintf(dir, sizeof(dir), "%s/%s", b->rt->cg2_dir, b->id);
		j->v2 = open_dir(dir);
		if (j->v2 < 0) {
			int e = errno;
			fk__cg_join_close(j);
			return fk__fail(err, FK_EIO, e, "cgroup v2: %s", fk_strerror(e));
		}
	}
	return 0;
}

int fk__cg_box_v2_open(fk_box *b)
{
	if (!b->rt->cg2_dir) {
		errno = ENOENT;
		return -1;
	}
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/%s", b->rt->cg2_dir, b->id);
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

void fk__cg_box_remove(fk_box *b)
{
	if (b->rt->cg2_dir) {
		char dir[600];
		if (b->rt->cg_v2) {
			box_dir2(b, "/procs", dir, sizeof(dir));
			rmdir(dir);
			box_dir2(b, "/reserve", dir, sizeof(dir));
			rmdir(dir);
		}
		snprintf(dir, sizeof(dir), "%s/%s", b->rt->cg2_dir, b->id);
		if (rmdir(dir) < 0 && errno != ENOENT)
			fprintf(stderr, "fake-e2b: rmdir %s: %s\n", dir, fk_strerror(errno));
	}
	for (size_t i = 0; b->rt->cg_rel && !b->rt->cg_v2 && i < N_CTLS; i++) {
		if (!(b->rt->cg_ctl & ctls[i].bit))
			continue;
		char dir[600];
		if (ctls[i].bit == FK_CG_PIDS) {
			box_dir(b, ctls[i].name, "/procs", dir, sizeof(dir));
			rmdir(dir);
		}
		box_dir(b, ctls[i].name, "", dir, sizeof(dir));
		if (rmdir(dir) < 0 && errno != ENOENT)
			fprintf(stderr, "fake-e2b: rmdir %s: %s\n", dir, fk_strerror(errno));
	}
}

void fk__cg_box_usage(fk_box *b, uint64_t *cpu_ns, uint64_t *mem_used, uint64_t *mem_cache,
                      uint64_t *mem_limit, uint64_t *oom_kills)
{
	fk_lx_cg_usage u = {0};
	char cpu[600], mem[600];
	if (b->rt->cg_v2) {
		box_dir2(b, "", mem, sizeof(mem));
		fk_lx_cg2_usage(mem, &u);
		if (!(b->rt->cg_ctl & FK_CG_MEMORY))
			u.mem_used = u.mem_cache = u.mem_limit = u.oom_kills = 0;
	} else if (b->rt->cg_rel) {
		box_dir(b, "cpuacct", "", cpu, sizeof(cpu));
		box_dir(b, "memory", "", mem, sizeof(mem));
		fk_lx_cg1_usage((b->rt->cg_ctl & FK_CG_CPUACCT) ? cpu : NULL,
		                (b->rt->cg_ctl & FK_CG_MEMORY) ? mem : NULL, &u);
	}
	*cpu_ns = u.cpu_ns;
	*mem_used = u.mem_used;
	*mem_cache = u.mem_cache;
	*mem_limit = u.mem_limit;
	*oom_kills = u.oom_kills;
}

bool fk__cg_box_oom_file(const fk_box *b, char *dir, size_t cap, const char **file)
{
	if (!(b->rt->cg_ctl & FK_CG_MEMORY) || (!b->rt->cg_v2 && !b->rt->cg_rel))
		return false;
	if (b->rt->cg_v2)
		box_dir2(b, "", dir, cap);
	else
		box_dir(b, "memory", "", dir, cap);
	*file = b->rt->cg_v2 ? "memory.events" : "memory.oom_control";
	return true;
}

int fk__cg_box_freeze(fk_box *b, bool freeze)
{
	if (!b->cg)
		return 1;
	if (b->rt->cg_v2)
		return fk_lx_cg2_freeze(b->cg, freeze, FREEZE_TIMEOUT_MS);
	return fk_lx_cg_freezer_set(b->cg, freeze ? "FROZEN" : "THAWED");
}

void fk__cg_box_kill(fk_box *b)
{
	char dir[600];
	if (!b->rt->cg_v2)
		return;
	box_dir2(b, "", dir, sizeof(dir));
	/* best effort: without cgroup.kill (Linux < 5.14) PID 1's death ends them all the same */
	fk_lx_cg2_kill(dir);
}

/* ---- what dead runtimes left (fk__cg_sweep_orphans) ---- */

/* out = a "/" b; false when it does not fit (then nothing of it is used). */
__attribute__((noinline)) static bool join(char out[4096], const char *a, const char *b)
{
	int n = snprintf(out, 4096, "%s/%s", a, b);
	return n > 0 && n < 4096;
}

/* SIGKILL to every pid listed in `dir`/`file` and its subdirectories' (one level); the count. */
static int kill_listed(const char *dir, const char *file)
{
	char path[4096];
	int n = 0;
	if (!join(path, dir, file))
		return 0;
	FILE *f = fopen(path, "re");
	for (int pid; f && fscanf(f, "%d", &pid) == 1;)
		if (pid > 1 && kill(pid, SIGKILL) == 0)
			n++;
	if (f)
		fclose(f);
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char sub[4096];
		if (!join(sub, dir, de->d_name))
			continue;
		n += kill_listed(sub, file);
	}
	if (d)
		closedir(d);
	return n;
}

/* Does `dir` (or a subdirectory) still list a process in `file`? */
static bool any_listed(const char *dir, const char *file)
{
	char path[4096];
	if (!join(path, dir, file))
		return false;
	FILE *f = fopen(path, "re");
	int pid;
	bool any = f && fscanf(f, "%d", &pid) == 1;
	if (f)
		fclose(f);
	DIR *d = opendir(dir);
	for (struct dirent *de; !any && d && (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char sub[4096];
		if (!join(sub, dir, de->d_name))
			continue;
		any = any_listed(sub, file);
	}
	if (d)
		closedir(d);
	return any;
}

/* Removes a box's cgroup directory and its leaves (empty by now). */
static void rmdir_box(const char *dir)
{
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char sub[4096];
		if (!join(sub, dir, de->d_name))
			continue;
		rmdir(sub);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Kills what runs in box cgroup `dir` (of hierarchy `ctl`: "freezer", ..., or NULL for v2) and
 * waits (at most 10 s) until nothing does: the number of processes signalled. */
static int kill_box_dir(const char *dir, const char *ctl)
{
	char path[4096];
	int n;
	if (!ctl) {
		n = kill_listed(dir, "cgroup.procs");
		if (join(path, dir, "cgroup.kill"))
			fk_lx_write_str(path, "1"); /* frozen ones too (Linux 5.14) */
		if (join(path, dir, "cgroup.freeze"))
			fk_lx_write_str(path, "0");
	} else {
		n = kill_listed(dir, "tasks");
		/* a frozen task dies once thawed, its SIGKILL queued first */
		if (!strcmp(ctl, "freezer"))
			fk_lx_cg_freezer_set(dir, "THAWED");
	}
	const char *file = ctl ? "tasks" : "cgroup.procs";
	for (int i = 0; i < 1000 && any_listed(dir, file); i++) {
		if (i % 100 == 99)
			kill_listed(dir, file);
		usleep(10000);
	}
	return n;
}

/* The box directories in runtime directory `rtdir` (of runtime `pid`, 0: a kept one) whose
 * box `ours` claims: their processes killed, the directories removed. */
static void sweep_rtdir(const char *rtdir, const char *ctl, int pid,
                        bool (*ours)(const char *id, void *ud),
                        void (*ended)(const char *id, int pid, int n, void *ud), void *ud)
{
	DIR *r = opendir(rtdir);
	for (struct dirent *be; r && (be = readdir(r));) {
		if (be->d_type != DT_DIR || be->d_name[0] == '.' || !ours(be->d_name, ud))
			continue;
		char dir[4096];
		if (!join(dir, rtdir, be->d_name))
			continue;
		int n = kill_box_dir(dir, ctl);
		if (n && ended)
			ended(be->d_name, pid, n, ud);
		rmdir_box(dir);
	}
	if (r)
		closedir(r);
}

/* The box directories of dead runtimes under `top` (<hierarchy>/fake-e2b) whose box `ours`
 * claims: their processes killed, the directories removed. */
static void sweep_top(const char *top, const char *ctl, bool (*ours)(const char *id, void *ud),
                      void (*ended)(const char *id, int pid, int n, void *ud), void *ud)
{
	DIR *d = opendir(top);
	for (struct dirent *de; d && (de = readdir(d));) {
		int pid = 0, lock = fk_lx_cg_rt_dead(top, de->d_name, &pid);
		if (lock < 0)
			continue; /* a live runtime's (or not known dead): never touched */
		char rtdir[4096];
		if (join(rtdir, top, de->d_name)) {
			sweep_rtdir(rtdir, ctl, pid, ours, ended, ud);
			rmdir(rtdir); /* fails harmlessly while another box of it (not ours) is left
			               */
		}
		close(lock);
	}
	if (d)
		closedir(d);
}

void fk__cg_sweep_orphans(fk_rt *rt, bool (*ours)(const char *id, void *ud),
                          void (*ended)(const char *id, int pid, int n, void *ud), void *ud)
{
	if (rt->cg_v2) {
		sweep_top(CG_BASE "/fake-e2b", NULL, ours, ended, ud);
		return;
	}
	/* v1: the freezer first (a frozen task dies only once thawed), then the others */
	for (size_t i = 0; i < N_CTLS; i++) {
		char top[256];
		snprintf(top, sizeof(top), CG_BASE "/%s/fake-e2b", ctls[i].name);
		sweep_top(top, ctls[i].name, ours, ended, ud);
	}
	static const char *const v2[] = {CG_BASE "/unified/fake-e2b", CG_BASE "/fake-e2b"};
	for (size_t i = 0; i < 2; i++)
		sweep_top(v2[i], NULL, ours, NULL, ud);
}

void fk__cg_sweep_own(fk_rt *rt, bool (*ours)(const char *id, void *ud),
                      void (*ended)(const char *id, int pid, int n, void *ud), void *ud)
{
	char dir[4096];
	if (!rt->cg_rel)
		return;
	if (rt->cg_v2) {
		if (join(dir, CG_BASE, rt->cg_rel))
			sweep_rtdir(dir, NULL, 0, ours, ended, ud);
		return;
	}
	for (size_t i = 0; i < N_CTLS; i++) {
		char top[256];
		snprintf(top, sizeof(top), CG_BASE "/%s", ctls[i].name);
		if (join(dir, top, rt->cg_rel))
			sweep_rtdir(dir, ctls[i].name, 0, ours, i == 0 ? ended : NULL, ud);
	}
	if (rt->cg2_dir)
		sweep_rtdir(rt->cg2_dir, NULL, 0, ours, NULL, ud);
}

bool fk__cg_box_frozen(fk_box *b)
{
	if (!b->cg)
		return false;
	char p[600], v[32] = "";
	snprintf(p, sizeof(p), "%s/%s", b->cg, b->rt->cg_v2 ? "cgroup.freeze" : "freezer.state");
	FILE *f = fopen(p, "re");
	bool got = f && fgets(v, sizeof(v), f);
	if (f)
		fclose(f);
	/* v1 FREEZING: a freeze the dead runtime asked for and did not see through */
	return got && (b->rt->cg_v2 ? v[0] == '1' : strncmp(v, "THAWED", 6) != 0);
}
