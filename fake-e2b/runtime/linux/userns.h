/*
 * fake-e2b/runtime/linux/userns.h — user namespace primitives: a namespace with one id range,
 * idmapped copies of host trees, and a system-wide claim on an id range. Knows no box: ids and
 * paths in, -1 and errno out.
 */
#ifndef FAKE_E2B_LINUX_USERNS_H
#define FAKE_E2B_LINUX_USERNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A new user namespace whose ids 0..count-1 are host ids base..base+count-1 (uid and gid),
 * held by the returned fd (O_CLOEXEC); no process stays in it. setgroups stays allowed. */
int fk_lx_userns_new(uid_t base, uint32_t count);

/* At most this many ids in a map of fk_lx_userns_new_ids (the kernel takes 340 lines). */
#define FK_LX_USERNS_MAX_IDS 64

/* A new user namespace that maps only the listed ids: uid N (each of uids[]) is host uid
 * base+N, gid N (each of gids[]) host gid base+N, one id each; every other id is unmapped.
 * Each list ascending, without repeats, 1..FK_LX_USERNS_MAX_IDS long (else EINVAL). Held by
 * the returned fd (O_CLOEXEC), as fk_lx_userns_new. */
int fk_lx_userns_new_ids(uid_t base, const uint32_t *uids, size_t n_uids, const uint32_t *gids,
                         size_t n_gids);

/* A detached copy of the mount tree at `path` (with its submounts when `recursive`) whose file
 * owners are seen through `userns_fd`: an owner id N on disk appears as the host id that N is
 * mapped to in that namespace. Read-only when `rdonly`. Returns the tree's fd (O_CLOEXEC), to
 * attach with fk_lx_mount_move. Needs CAP_SYS_ADMIN and a filesystem that allows idmapping. */
int fk_lx_idmapped_tree(const char *path, int userns_fd, bool recursive, bool rdonly);

/* Attaches the detached tree `tree_fd` at `dst` (move_mount). Async-signal-safe. */
int fk_lx_mount_move(int tree_fd, const char *dst);

/* Switches the calling single-threaded task into the namespace and becomes its root (raw
 * set*id calls, no supplementary groups). Async-signal-safe. */
int fk_lx_userns_enter_as_root(int userns_fd);

/* Claims one of `count` id ranges system-wide: an flock on <dir>/<k> for the first free k,
 * starting at `*cursor` and leaving *cursor after the one taken. The range is ours while the
 * returned fd (O_CLOEXEC) is open; a dead holder's claim is gone with it. *k_out receives k. */
int fk_lx_idrange_claim(const char *dir, uint32_t count, uint32_t *cursor, uint32_t *k_out);

#endif /* FAKE_E2B_LINUX_USERNS_H */
