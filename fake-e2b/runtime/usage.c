/*
 * fake-e2b/runtime/usage.c: what a box uses now (fk_box_usage_read, runtime.h): its cgroups'
 * counters (box_cgroups.c: cgroup v1 or v2) and the filesystem of its root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "box_cgroups.h"
#include "boxfs.h"
#include "fstree.h"
#include "runtime_int.h"

/* The disk of a box whose "/" is `rootfd` (as its init sees it) and whose files are under
 * `dir` (the host's view): its own filesystem's use when its "/" is one (fstatvfs); when its "/"
 * is on the state dir's filesystem, shared with the host, what its own files under `dir` take
 * (their blocks, no mount crossed) and, as the total, that plus what the filesystem has free for
 * it. Runs without the box's lock (a walk can take a while; a box gone meanwhile gives a partial
 * count, never a crash). */
static void disk_usage(int rootfd, const char *dir, const char *state_dir, uint64_t *used,
                       uint64_t *total)
{
	struct statvfs sv;
	struct stat rs, ss;
	if (rootfd < 0 || fstatvfs(rootfd, &sv) < 0 || fstat(rootfd, &rs) < 0)
		return;
	if (!dir || !state_dir || stat(state_dir, &ss) < 0 || rs.st_dev != ss.st_dev) {
		*total = (uint64_t)sv.f_blocks * sv.f_frsize;
		*used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
		return;
	}
	uint64_t bytes;
	fk_tree_bytes(dir, &bytes); /* a partial count when the walk fails */
	*used = bytes;
	*total = bytes + (uint64_t)sv.f_bavail * sv.f_frsize;
}

int fk_box_usage_read(fk_rt *rt, const char *id, fk_box_usage *out, fk_err *err)
{
	memset(out, 0, sizeof(*out));
	fk_box *b = fk__box_get(rt, id);
	if (!b)
		return fk__fail(err, FK_ENOTFOUND, 0, "no box '%s'", id);
	pthread_rwlock_rdlock(&b->life);
	uint64_t limit = 0;
	fk__cg_box_usage(b, &out->cpu_ns, &out->mem_used, &out->mem_cache, &limit, &out->oom_kills);
	/* "no limit" reads as a huge number: then the configured one */
	out->mem_total = limit && limit < (1ull << 50) ? limit : b->limits.memory_bytes;
	out->cpu_count = b->limits.cpu_count;
	int rootfd = fk__box_rootfd(b, NULL);
	char *dir = b->dir ? strdup(b->dir) : NULL;
	pthread_rwlock_unlock(&b->life);
	disk_usage(rootfd, dir, b->rt->state_dir, &out->disk_used, &out->disk_total);
	if (rootfd >= 0)
		close(rootfd);
	free(dir);
	fk__box_put(b);
	return 0;
}
