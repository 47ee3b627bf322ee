/*
 * fake-e2b/util/fstree.h: what a directory tree takes on disk. No MHD, no JSON. Thread-safe.
 */
#ifndef FK_UTIL_FSTREE_H
#define FK_UTIL_FSTREE_H

#include <stdint.h>

/* Adds up the blocks (st_blocks * 512) of `dir` and everything under it, never following a
 * symlink nor crossing a mount, into *bytes. 0, or -1 with errno when the walk failed (*bytes
 * then holds what was counted before: a tree changing meanwhile gives a partial count). */
int fk_tree_bytes(const char *dir, uint64_t *bytes);

#endif
