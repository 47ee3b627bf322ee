/*
 * fake-e2b/runtime/private/boxfs.h — a box seen from the host (boxfs.c): its root fd, paths
 * resolved inside it, its users. Used by the files API (files*.c) and proc_spawn.c; uses only the
 * core (runtime_int.h).
 */
#ifndef FAKE_E2B_BOXFS_H
#define FAKE_E2B_BOXFS_H

#include "runtime_int.h"

#include <stdio.h>

typedef struct fk_user {
	uid_t uid;
	gid_t gid;
	char name[64];
	char home[256];
	char shell[128];
	gid_t groups[64];
	int n_groups;
} fk_user;

/* openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) of `path` under `rootfd`; O_CLOEXEC added. */
int fk__open_in(int rootfd, const char *path, int flags, mode_t mode);
/* Why the files API does not go into what `fd` is open on (the box's /proc and /sys, which
 * answer the server as the host's root: /proc/1 is a copy of the server, its map_files its memory
 * layout, its exe and fd links host paths): "leads into /proc, ...", or NULL. Decided by the
 * file system an open resolved to, never by the path's text. */
const char *fk__fd_refused(int fd);
/* fk__open_in() of a file's contents, as the server (the host's root) reads and writes them for
 * the box: only a regular file outside /proc. Opens without blocking (a FIFO the box put there
 * would hold the thread, and the box's lock, forever), then checks what it opened. -1 with errno
 * when the open fails (EISDIR for a directory); -1 with *why set (errno EINVAL) for a FIFO,
 * socket or device ("is not a regular file") or a file of procfs ("leads into /proc, ..."). */
int fk__open_file_in(int rootfd, const char *path, int flags, mode_t mode, const char **why);
/* The largest /etc/passwd or /etc/group of a box the server reads: every files call and every
 * start looks the user up in them, and the box's root decides their size. */
#define FK_ETC_FILE_MAX (1024 * 1024)
/* fk__open_file_in() read-only, as a stdio stream, of a file of at most FK_ETC_FILE_MAX bytes;
 * NULL with errno (EFBIG: larger). */
FILE *fk__fopen_in(int rootfd, const char *path);
int fk__box_rootfd(fk_box *b, fk_err *err); /* O_PATH fd of the box's "/", caller closes */
/* `name` NULL: the box's default user. FK_ENOUSER if /etc/passwd has no such user, or if it or
 * /etc/group is larger than FK_ETC_FILE_MAX (then only root resolves: uid 0, /root, group 0). */
int fk__user_lookup(fk_box *b, int rootfd, const char *name, fk_user *out, fk_err *err);
char *fk__path_resolve(const char *path, const char *home); /* absolute, normalised; malloc */

#endif /* FAKE_E2B_BOXFS_H */
