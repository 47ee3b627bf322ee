/*
 * fake-e2b/util/fstree.h: directory trees a sandbox filled, walked, measured, copied and removed
 * without recursion. No MHD, no JSON. Thread-safe.
 *
 * A sandbox decides how deep its trees go (a shell loop of mkdir makes 10,000 levels in
 * seconds): every walk here keeps its levels on the heap and one directory open at a time,
 * works relative to directory fds (no path is ever handed to the kernel whole, so a tree deeper
 * than PATH_MAX is walked like any other), never follows a symlink and never crosses into
 * another file system. To climb back it opens "..", and goes on only when that is the very
 * directory (device, inode) it came down from: a directory moved meanwhile stops the walk
 * (ESTALE) instead of leading it out of the tree.
 */
#ifndef FK_UTIL_FSTREE_H
#define FK_UTIL_FSTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* One entry of a walk, as the walk's callback sees it. */
typedef struct fk_tree_ent {
	int dirfd;             /* the directory holding it (the top's parent for the top) */
	const char *name;      /* its name in dirfd */
	const char *path;      /* its path below the top ("" for the top), any length */
	const struct stat *st; /* its lstat */
	size_t depth;          /* 0: the top */
	bool post;             /* a directory after everything in it (else: before) */
} fk_tree_ent;

/* The callback's answer: go on (for a directory before its entries: walk into it), do not walk
 * into this directory (it gets no post call), or stop the walk (-1, errno set). */
#define FK_TREE_GO   0
#define FK_TREE_SKIP 1

typedef int (*fk_tree_fn)(const fk_tree_ent *e, void *ud);

/* Walks `name` under directory fd `parent` (AT_FDCWD and a path do too) and everything below
 * it, parents before their entries, each directory walked into also after them (post). Entries
 * on another file system than the top are left out (nftw's FTW_MOUNT). A directory that is
 * gone or no longer a directory when the walk opens it counts as empty. 0; -1 with errno when
 * the walk or the callback failed (what was walked before stays walked). */
int fk_tree_walk(int parent, const char *name, fk_tree_fn fn, void *ud);

/* Adds up the blocks (st_blocks * 512) of `dir` and everything under it, never following a
 * symlink nor crossing a mount, into *bytes. 0, or -1 with errno when the walk failed (*bytes
 * then holds what was counted before: a tree changing meanwhile gives a partial count). */
int fk_tree_bytes(const char *dir, uint64_t *bytes);

/* rm -rf of `name` under `parent`, never following a symlink. 0 when it is gone (or was not
 * there); -1 with errno when an entry could not be removed or a directory moved meanwhile. */
int fk_tree_remove(int parent, const char *name);

/* cp -a of `src_name` under `src_parent` to `dst_name` under `dst_parent`, which must not exist:
 * file types (directories, regular files with their holes, symlinks, devices, FIFOs, sockets),
 * modes with their setuid bits, owners, times, extended attributes (ACLs, file capabilities,
 * overlayfs' own) and hard links within the tree (a link whose path below the top is longer
 * than PATH_MAX is copied as a file of its own). 0; -1 with errno (the partial copy is left for
 * the caller to remove). */
int fk_tree_copy(int src_parent, const char *src_name, int dst_parent, const char *dst_name);

#endif
