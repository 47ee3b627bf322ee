/*
 * fake-e2b/runtime/private/files.h — the insides of envd's files API over a box's view,
 * shared by its files, each using only those below it: files_read.c (downloads), files_write.c
 * (uploads), files_list.c (Stat, ListDir) and files_change.c (MakeDir, Remove, Move) over files.c
 * (the per-call context, an entry as envd reports it, the parent and `mkdir -p` steps) over
 * boxfs.c. The routes and RPCs are docs/internals/wire.md "envd's HTTP routes" and
 * "Filesystem RPCs".
 */
#ifndef FAKE_E2B_FILES_H
#define FAKE_E2B_FILES_H

#include "boxfs.h"

#include <stdbool.h>
#include <sys/types.h>

/* The box's user and group names by id, sorted by id (the first line of a repeated id first):
 * each entry of a listing looks its owner up by binary search, not by a scan of up to 1 MiB of
 * names. */
typedef struct fk_idname {
	unsigned id;
	size_t ord; /* line number: the first of a repeated id wins, as getpwuid */
	char *name;
} fk_idname;

typedef struct fk_names {
	fk_idname *u;
	size_t n_u;
	fk_idname *g;
	size_t n_g;
} fk_names;

typedef struct fk_fctx {
	fk_box *b;
	int rootfd;
	fk_user user;
	char *abs; /* resolved target path */
	fk_names nm;
	bool nm_loaded;
} fk_fctx;

/* One files call: the box taken (a reference and its life lock, read), its root fd, the user
 * looked up and, when `path` is not NULL, `path` resolved against the user's home into c->abs.
 * FK_ENOTFOUND for a missing or dead box, FK_EINVAL for a path over 4,096 bytes. Whatever it
 * returns, fk__fctx_close() ends the call. */
int fk__fctx_open(fk_fctx *c, fk_rt *rt, const char *box_id, const char *path, const char *user,
                  fk_err *err);
void fk__fctx_close(fk_fctx *c);

/* The last component of absolute `abs` ("/" for "/"); points into abs. */
const char *fk__base_of(const char *abs);
/* Fills `e` for `abs`, lstat'ed as `name` under `dirfd` ("" for dirfd itself), as envd's
 * EntryInfo: type, mode, permissions, owner and group by name, the resolved symlink target and
 * the type it leads to, user.e2b.* metadata. */
int fk__entry_fill(fk_fctx *c, int dirfd, const char *name, const char *abs, fk_entry *e,
                   fk_err *err);
/* Removes every user.e2b.* extended attribute of `fd` (an upload replaces the whole set). */
void fk__meta_clear(int fd);

/* O_PATH fd of the parent directory of `abs` inside the box, *base_out its last component ("."
 * for "/"); -1 with errno. */
int fk__open_parent(fk_fctx *c, const char *abs, const char **base_out);
/* 0, or FK_EINVAL when `fd` (reached for `abs`) is in the box's /proc or /sys
 * (fk__fd_refused). */
int fk__refuse_proc(int fd, const char *abs, fk_err *err);
/* mkdir -p of `abs` (of its parent), each directory made given to the user; an O_PATH fd of
 * the directory, or a negative FK_E* code. */
int fk__mkdir_parents(fk_fctx *c, const char *abs, fk_err *err);
int fk__mkdir_parent_of(fk_fctx *c, const char *abs, fk_err *err);
/* The entry of `abs` (not following a final symlink), as Stat answers it. */
int fk__stat_abs(fk_fctx *c, const char *abs, fk_entry *out, fk_err *err);

#endif /* FAKE_E2B_FILES_H */
