/*
 * fake-e2b/runtime/backend_int.h — the namespace backend's insides (backend.h is its face),
 * shared by its files, each using only those below it: backend_ns.c (the runtime's probes,
 * the box verbs, entering a box) and backend_init.c (a box's PID 1: its arguments made on the
 * host, its named stages inside, its end) over backend_files.c (a box's files on the host: root,
 * /etc, layers, id ranges, prepare, commit, copy, restore, the start-up sweep) over backend_disk.c
 * (a box's disk image: make, reserve, check, mount).
 */
#ifndef FAKE_E2B_BACKEND_INT_H
#define FAKE_E2B_BACKEND_INT_H

#include "backend.h"

extern char **environ;

/* Host top-level entries the box gets from the host: a symlink is copied as a symlink
 * (merged /usr), a directory is bind-mounted read-only. */
static const char *const host_dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
#define N_HOST_DIRS (sizeof(host_dirs) / sizeof(host_dirs[0]))

/* ---- backend_disk.c ---- */
/* The box's disk: <state>/<id>.disk made (or, `existing`, the one a closed box left checked
 * and mounted again), b->disk_fd and its paths set. A no-op without per-box disks. */
int fk__ns_box_disk(fk_box *b, bool existing, fk_err *err);
/* Probes per-box disks (rt->disks, rt->disk_reserve), saying at start what is missing. */
void fk__ns_rt_disks(fk_rt *rt);
/* The state dir's free space (bytes), and FK_ENOSPC for `what` needing `need` of it. */
uint64_t fk__ns_state_free(const fk_rt *rt);
int fk__ns_no_room(const fk_rt *rt, const char *what, uint64_t need, fk_err *err);

/* ---- backend_files.c ---- */
/* The template's directories and the mount points a box's root needs (idempotent). */
void fk__ns_box_prepare_fs(fk_box *b);
/* The /etc templates of the runtime's templates, and whether a user namespace per box works. */
void fk__ns_rt_etc_templates(fk_rt *rt);
void fk__ns_rt_userns(fk_rt *rt);
/* The box's /etc template on the host (overlay lower layer), NULL when it gets a copy. */
const char *fk__ns_box_etc_template(const fk_box *b);

/* Does the box get a network namespace of its own (egress none, or behind its proxy)? */
static inline bool box_own_net(const fk_box *b)
{
	return b->net_none || b->rt->egress_ns;
}

#endif /* FAKE_E2B_BACKEND_INT_H */
