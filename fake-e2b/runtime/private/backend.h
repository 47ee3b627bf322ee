/*
 * fake-e2b/runtime/private/backend.h — the seam between the box lifecycle and processes
 * (lifecycle.c, proc.c) and the mechanism that makes a box real (backend_ns.c and the files under
 * it, backend_int.h: hand-built namespaces, our own PID 1, cgroups). Like crun's entrypoint, the
 * backend never calls back up: the lifecycle does what a backend says it cannot (a box without PID
 * 1 has its processes signalled by proc.c). All box calls run under b->life held exclusively,
 * except fk__backend_enter (shared).
 */
#ifndef FAKE_E2B_BACKEND_H
#define FAKE_E2B_BACKEND_H

#include "runtime_int.h"

/* Probes what the machine allows (root, namespaces, cgroups), sets rt->isolated and friends,
 * prints once on stderr what is missing. */
int fk__backend_rt_init(fk_rt *rt, const fk_rt_options *opts, fk_err *err);
void fk__backend_rt_fini(fk_rt *rt); /* after every box is gone */
/* A live-restore runtime's exit, its boxes left running: its cgroup directories removed only
 * when no box is left in them. */
void fk__backend_rt_leave(fk_rt *rt);

/* First create: the box's files on the host (<state>/<id>/root and friends). */
int fk__backend_box_prepare(fk_box *b, fk_err *err);
/* Reboot: recreates the template's directories the box may have removed. */
void fk__backend_box_reset(fk_box *b);
/* Starts PID 1 (isolated runtimes; a no-op otherwise). */
int fk__backend_box_boot(fk_box *b, fk_err *err);
/* Kills PID 1 and with it every process of the box, and waits until all are gone. False when
 * the box has no PID 1 (degraded): then the caller signals the processes itself. */
bool fk__backend_box_kill(fk_box *b);
/* True once the box's PID 1 has exited (killed from the host, or by the kernel): the box is
 * dead, nothing in it runs. Under b->life. */
bool fk__backend_box_init_gone(fk_box *b);
/* Freeze (true) or thaw every process of the box. 0; 1 when there is no freezer (the caller
 * stops the processes with SIGSTOP/SIGCONT); -1 with errno. */
int fk__backend_box_freeze(fk_box *b, bool freeze);
/* Network update: b->egress was replaced; its proxy takes the new rules. A box of egress
 * none (b->net_none) that `lets_out` gets its way out and proxy now (b->net_none false). */
int fk__backend_box_egress(fk_box *b, bool lets_out, fk_err *err);
/* Commit: moves the files of a box whose processes are all gone (root, /etc upper layer) into
 * `layer_dir` (created), for boxes made from it (fk_box_options.layer_dir). */
int fk__backend_box_commit(fk_box *b, const char *layer_dir, fk_err *err);
/* Snapshot: copies the files of a frozen box (root, /etc upper layer) into `layer_dir`
 * (created), laid out as a commit's. */
int fk__backend_box_copy(fk_box *b, const char *layer_dir, fk_err *err);
/* Destroy: releases what the backend holds for the box on the host (cgroups, its disk's
 * mount), and its disk image unless `keep_files` (close). */
void fk__backend_box_remove(fk_box *b, bool keep_files);
/* Restore: the box's files as a closed box (or a dead server) left them in the state dir:
 * its disk mounted again (checked first), its id range claimed (its files' own when free,
 * else another, to which they are given), its template's directories made; PID 1 is not
 * started. FK_ENOTFOUND when the files are not there. */
int fk__backend_box_adopt(fk_box *b, fk_err *err);
/* At start, for this state dir only: every process of a box whose files are here and whose
 * runtime died (a crashed server's boxes, frozen ones too) is killed and its cgroups removed;
 * then the files of boxes not in `keep` are removed. Each step logged on stderr. */
void fk__backend_rt_sweep(fk_rt *rt, const char *const *keep, size_t n_keep);
/* After the restores (live restore): what runs in this runtime's own cgroups and was not adopted
 * (its record refused, its restore failed) is killed, logged. */
void fk__backend_rt_sweep_unadopted(fk_rt *rt);

/* What a process start needs to enter the box. */
typedef struct fk_enter {
	bool isolated;  /* false: run on the host, in the box's directory */
	int init_pidfd; /* setns() target */
	int ns_flags;   /* CLONE_NEW* to join */
	fk_cg_join cg;  /* its cgroups (cg_join.h), with the reserve; caller closes */
	const struct sock_fprog *seccomp; /* filter to install before exec, NULL: none */
	uint64_t caps_keep;               /* capabilities root inside keeps */
	int last_cap;
	int life_w; /* the runtime's life pipe write end: the helper closes it */
} fk_enter;
int fk__backend_enter(fk_box *b, fk_enter *e, fk_err *err);

#endif /* FAKE_E2B_BACKEND_H */
