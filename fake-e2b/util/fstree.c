/*
 * fake-e2b/util/fstree.c: see fstree.h.
 */
#define _GNU_SOURCE
#include "fstree.h"

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>

/* nftw's callback takes no argument of ours: the count is the calling thread's */
static __thread uint64_t tree_bytes;

static int tree_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	tree_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

int fk_tree_bytes(const char *dir, uint64_t *bytes)
{
	tree_bytes = 0;
	int rc = -1;
	if (!dir || !*dir)
		errno = EINVAL;
	else
		rc = nftw(dir, tree_entry, 16, FTW_PHYS | FTW_MOUNT) < 0 ? -1 : 0;
	*bytes = tree_bytes;
	return rc;
}
