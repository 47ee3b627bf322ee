/*
 * fake-e2b/runtime/box_cgroups.c — a box's cgroups (see box_cgroups.h). Layout per controller:
 *   /sys/fs/cgroup/<ctl>/fake-e2b/rt-<pid>-<n>/<box id>/          freezer, memory, cpu, cpuacct;
 *                                                                 pids reserve (max = cap + 64)
 *   /sys/fs/cgroup/pids/fake-e2b/rt-<pid>-<n>/<box id>/procs/     pids (max = cap)
 * and, when the machine has the unified (v2) hierarchy, at /sys/fs/cgroup/unified (hybrid) or
 * /sys/fs/cgroup (v2 only), no controller, for the box's BPF bind programs:
 *   <v2>/fake-e2b/rt-<pid>-<n>/<box id>/
 */
#define _GNU_SOURCE
#include "box_cgroups.h"
#include "linux/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
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

void fk__cg_rt_init(fk_rt *rt)
{
	static int seq;
	int n = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
	if (asprintf(&rt->cg_rel, "fake-e2b/rt-%d-%d", (int)getpid(), n) < 0) {
		rt->cg_rel = NULL;
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
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
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
		if ((mkdir(dir, 0755) == 0 || errno == EEXIST) && !(rt->cg2_dir = strdup(dir)))
			break;
	}
}

void fk__cg_rt_fini(fk_rt *rt)
{
	for (size_t i = 0; rt->cg_rel && i < N_CTLS; i++) {
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
	free(rt->cg2_dir);
	free(rt->cg_rel);
	free(rt->cg_root);
	rt->cg_rel = rt->cg_root = rt->cg2_dir = NULL;
	rt->cg_ctl = 0;
}

static void box_dir(const fk_box *b, const char *ctl, const char *sub, char *out, size_t size)
{
	snprintf(out, size, CG_BASE "/%s/%s/%s%s", ctl, b->rt->cg_rel, b->id, sub);
}

static int set_u64(const char *dir, const char *file, uint64_t v)
{
	char p[700], s[32];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	snprintf(s, sizeof(s), "%" PRIu64, v);
	return fk_lx_write_str(p, s);
}

int fk__cg_box_setup(fk_box *b, fk_err *err)
{
	const fk_limits *l = &b->limits;
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
			rc = rc ? rc : set_u64(dir, "pids.max", l->pids_max + l->pids_reserve);
			rc = rc ? rc : set_u64(sub, "pids.max", l->pids_max);
			break;
		case FK_CG_MEMORY:
			if (l->memory_bytes)
				rc = set_u64(dir, "memory.limit_in_bytes", l->memory_bytes);
			break;
		case FK_CG_CPU:
			if (l->cpu_count) {
				rc = set_u64(dir, "cpu.cfs_period_us", 100000);
				rc =
				    rc ? rc
				       : set_u64(dir, "cpu.cfs_quota_us", l->cpu_count * 100000ull);
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

static bool pids_nearly_full(const char *dir)
{
	char p[700], buf[32];
	uint64_t cur = 0, max = UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, i == 0 ? "pids.current" : "pids.max");
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return false;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return false;
		buf[n] = 0;
		if (buf[0] == 'm') /* "max" */
			return false;
		*(i == 0 ? &cur : &max) = strtoull(buf, NULL, 10);
	}
	return cur + PIDS_HEADROOM >= max;
}

int fk__cg_box_open_tasks(fk_box *b, int fds[FK_CG_MAX_FDS], int *n, int *reserve_fd, fk_err *err)
{
	*n = 0;
	if (reserve_fd) {
		*reserve_fd = -1;
		if (b->rt->cg_ctl & FK_CG_PIDS) {
			char tasks[700];
			box_dir(b, "pids", "/tasks", tasks, sizeof(tasks));
			*reserve_fd = open(tasks, O_WRONLY | O_CLOEXEC);
		}
	}
	for (size_t i = 0; i < N_CTLS; i++) {
		if (!(b->rt->cg_ctl & ctls[i].bit))
			continue;
		char dir[600], tasks[700];
		box_dir(b, ctls[i].name, ctls[i].bit == FK_CG_PIDS ? "/procs" : "", dir,
		        sizeof(dir));
		if (ctls[i].bit == FK_CG_PIDS && pids_nearly_full(dir))
			box_dir(b, ctls[i].name, "", dir, sizeof(dir));
		snprintf(tasks, sizeof(tasks), "%s/tasks", dir);
		int fd = open(tasks, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			for (int j = 0; j < *n; j++)
				close(fds[j]);
			*n = 0;
			return fk__fail(err, FK_EIO, e, "cgroup %s: %s", ctls[i].name,
			                fk_strerror(e));
		}
		fds[(*n)++] = fd;
	}
	if (b->rt->cg2_dir) {
		char procs[700];
		snprintf(procs, sizeof(procs), "%s/%s/cgroup.procs", b->rt->cg2_dir, b->id);
		int fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			for (int j = 0; j < *n; j++)
				close(fds[j]);
			*n = 0;
			return fk__fail(err, FK_EIO, e, "cgroup v2: %s", fk_strerror(e));
		}
		fds[(*n)++] = fd;
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
		snprintf(dir, sizeof(dir), "%s/%s", b->rt->cg2_dir, b->id);
		if (rmdir(dir) < 0 && errno != ENOENT)
			fprintf(stderr, "fake-e2b: rmdir %s: %s\n", dir, fk_strerror(errno));
	}
	for (size_t i = 0; b->rt->cg_rel && i < N_CTLS; i++) {
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

/* The first number in <dir>/<file> (or, with key, on the line "<key> N"); 0 when unreadable. */
static uint64_t read_u64(const char *dir, const char *file, const char *key)
{
	char path[700], line[256];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "re");
	uint64_t v = 0;
	size_t kn = key ? strlen(key) : 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (key && (strncmp(line, key, kn) || line[kn] != ' '))
			continue;
		v = strtoull(line + kn, NULL, 10);
		break;
	}
	if (f)
		fclose(f);
	return v;
}

void fk__cg_box_usage(fk_box *b, uint64_t *cpu_ns, uint64_t *mem_used, uint64_t *mem_cache,
                      uint64_t *mem_limit)
{
	char dir[600];
	*cpu_ns = *mem_used = *mem_cache = *mem_limit = 0;
	if (b->rt->cg_rel && (b->rt->cg_ctl & FK_CG_CPUACCT)) {
		box_dir(b, "cpuacct", "", dir, sizeof(dir));
		*cpu_ns = read_u64(dir, "cpuacct.usage", NULL);
	}
	if (b->rt->cg_rel && (b->rt->cg_ctl & FK_CG_MEMORY)) {
		box_dir(b, "memory", "", dir, sizeof(dir));
		uint64_t usage = read_u64(dir, "memory.usage_in_bytes", NULL);
		*mem_cache = read_u64(dir, "memory.stat", "total_cache");
		*mem_used = usage > *mem_cache ? usage - *mem_cache : 0;
		*mem_limit = read_u64(dir, "memory.limit_in_bytes", NULL);
	}
}
