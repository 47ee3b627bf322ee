/*
 * fake-e2b/runtime/private/runtime_int.h — the runtime's shared core (box.c): the runtime and box
 * structs, the box table and error helpers. Every runtime file includes it; it names no file
 * above box.c. Nothing here is for the HTTP side: it uses runtime.h only.
 */
#ifndef FAKE_E2B_RUNTIME_INT_H
#define FAKE_E2B_RUNTIME_INT_H

#include "egress.h"
#include "fstree.h"
#include "policy.h"
#include "runtime.h"
#include "template.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

/*
 * errno's description for messages. strerror() is not thread-safe (the server is
 * multithreaded) and strerror_r() is not async-signal-safe (some messages are
 * written by a child between fork and exec); glibc's static description table
 * (strerrordesc_np, glibc >= 2.32; the files define _GNU_SOURCE) is both.
 */
static inline const char *fk_strerror(int e)
{
	const char *s = strerrordesc_np(e);
	return s ? s : "unknown error";
}

#define FK_BOX_ID_MAX       64
#define FK_TEMPLATE_DEFAULT "capybara-sandbox" /* boxes created without a template */
#define FK_RETAIN_MS        30000              /* envd terminatedRetentionTTL */
#define FK_CHUNK_MAX        32768              /* envd reads stdout/stderr in chunks up to 32 KiB */
#define FK_SUB_QUEUE_CAP    (1024 * 1024) /* bytes queued per subscriber before the reader waits */
#define FK_PATH_ENV         "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Host ids of boxes (a user namespace each): systemd's range for containers, 0x80000 to
 * 0x6FFFFFFF, in blocks of 65,536 (box ids 0..65535; 65534 is nobody). */
#define FK_IDS_FIRST  0x80000u
#define FK_IDS_SIZE   65536u
#define FK_IDS_RANGES ((0x70000000u - FK_IDS_FIRST) / FK_IDS_SIZE)
#define FK_ID_NOBODY  65534u

enum { FK_CG_FREEZER = 1, FK_CG_PIDS = 2, FK_CG_MEMORY = 4, FK_CG_CPU = 8, FK_CG_CPUACCT = 16 };
#define FK_CG_MAX_FDS 6 /* a tasks file per v1 controller a process joins */

/* Where a new task of a box goes (box_cgroups.h): it is made in the box's cgroup v2 (clone3
 * CLONE_INTO_CGROUP, cg_join.h) and joins the v1 ones itself (writes "0" to their tasks files,
 * one thread: no global lock); it moves itself into the v2 one only where the kernel refused. */
typedef struct fk_cg_join {
	int tasks[FK_CG_MAX_FDS]; /* v1 tasks files (O_WRONLY) */
	int n_tasks;
	int v2;         /* the v2 cgroup it is made in (O_PATH directory), or -1: none */
	int v2_reserve; /* v2 with pids: the reserve leaf, for a birth procs refuses (EAGAIN), or -1
	                 */
	int reserve;    /* a clone of the task's at the pids limit moves it here first (v1: the pids
	                 * reserve's tasks; v2: the reserve leaf's cgroup.procs), or -1 */
	bool in_v2;     /* set by fk__cg_spawn: the task was made in its v2 cgroup */
	bool no_clone3; /* fk_rt_options.no_clone_into_cgroup */
	uint64_t *moves; /* rt->cg_moves: counts the cgroup.procs writes, or NULL */
} fk_cg_join;

struct fk_proc;
typedef struct fk_eproxy fk_eproxy;

typedef struct fk_box {
	fk_rt *rt;
	struct fk_box *next; /* rt->boxes, under rt->lock */
	int refs;            /* under rt->lock */
	char id[FK_BOX_ID_MAX + 1];
	char *dir;  /* <state>/<id>: in the init's mount namespace, where the box's disk is */
	char *root; /* <state>/<id>/root: the box's "/", in the init's mount namespace */
	/* the same two as the server reaches them: dir and root, or through the box's disk
	 * (/proc/self/fd/<disk_fd>[/root]) when it has one */
	char *hdir, *hroot;
	int disk_fd;    /* the box's disk, a detached mount (linux/loopfs.h), -1 if none */
	char *disk_img; /* its image file, <state>/<id>.disk */
	char *cg;       /* freezer cgroup dir (v2: the box's cgroup), NULL without freezer */
	fk_limits limits;
	/* Egress none: a network namespace with `lo` only (no proxy). A network update that lets
	 * the box out turns it false (fk_box_set_egress). Under the life lock. */
	bool net_none;
	/* allowOut / denyOut (egress.c): the rules its proxy applies, and the next proxy's after a
	 * reboot. Under the life lock (exclusive to change); the proxy holds its own reference. */
	fk_erules *egress;
	fk_eproxy *eproxy; /* its egress proxy while PID 1 runs, or NULL */
	char **envs;       /* "K=V" */
	size_t n_envs;
	char *default_user;
	const fk_template *tpl; /* the box's template (users, directories, workdir) */
	char *layer_dir;        /* fk_box_options.layer_dir, NULL if none */
	char *workdir;          /* fk_box_options.workdir, NULL: tpl->workdir */

	/* Lifecycle lock: spawns and file calls take it shared, freeze/thaw/reboot/destroy
	 * exclusive, so the init (and its namespaces) cannot change under a spawn. */
	pthread_rwlock_t life;
	/* user namespace: box id N is host id id_base + N (0 <= N < FK_IDS_SIZE); id_base 0: no
	 * user namespace, ids are the host's */
	uid_t id_base;
	int idrange_fd; /* the claim on the range (linux/userns.h), -1 if none */
	int userns_fd;  /* the box's user namespace, -1 if none */
	/* BPF cgroup/bind4, bind6 programs on its v2 cgroup letting its root bind ports below
	 * 1024 (linux/net.h), attached at its first boot, -1 if none (backend_boot.c) */
	int bind_links[2];
	pid_t init_pid; /* host pid of PID 1, 0 if none */
	int init_pidfd; /* -1 if none */
	/* PID 1 was adopted from a runtime that died (backend_live.c): not our child, so it is
	 * waited for through its pidfd, and its /proc entries are trusted only while it lives */
	bool adopted;
	bool frozen;
	bool dead;

	pthread_mutex_t plock; /* guards procs */
	struct fk_proc *procs; /* live and retained processes */
} fk_box;

/* An empty ext4 image of one size, which boxes' disks of that size are copied from. */
typedef struct fk_disk_tpl {
	uint64_t bytes;
	char *path; /* <state>/.disk-template-<MiB> */
	struct fk_disk_tpl *next;
} fk_disk_tpl;

struct fk_rt {
	pthread_mutex_t lock;
	fk_box *boxes;
	char *state_dir;
	bool state_is_tmp;
	int tmp_lock_fd; /* state_is_tmp: <state_dir>/.lock, write-locked for the runtime's life */
	bool isolated;
	unsigned default_disk_mb; /* a box's disk when its options leave it 0 */
	bool end_on_exit;         /* fk_rt_options.end_on_exit */
	int procs_running;        /* started processes holding a slot (fk__proc_slot_take) */
	/* fk_rt_set_proc_end_hook: read-locked around each call, write-locked to change */
	pthread_rwlock_t hook_lock;
	void (*proc_end_hook)(void *ctx, const char *box_id, const fk_proc_end *end);
	void *proc_end_ctx;
	bool live; /* fk_rt_options.live_restore, with a state dir of its own */
	bool freezer;
	char *cg_root; /* the freezer's fake-e2b/rt-<pid>-<n>-<ns> (v1), or cg2_dir (v2 only) */
	char *cg_rel;  /* fake-e2b/rt-<pid>-<n>-<ns>: this runtime's dir in every controller */
	char *cg2_dir; /* <cgroup2>/fake-e2b/rt-<pid>-<n>-<ns> (hybrid: no controller), or NULL */
	bool cg_v2; /* the unified hierarchy only: cg2_dir has every controller (box_cgroups.c) */
	unsigned cg_ctl; /* FK_CG_* controllers available */
	/* how many tasks the runtime's starts and boots moved into a cgroup by a cgroup.procs
	 * write (fk_rt_cgroup_moves): a shared page, which the helpers and shims it forks count in
	 * too; NULL when it could not be mapped */
	uint64_t *cg_moves;
	bool no_clone3; /* fk_rt_options.no_clone_into_cgroup */
	/* fds of its rt- directories, each holding their flock for the runtime's life: a
	 * sweeper in any PID namespace leaves them alone (fk_lx_cg_rt_claim) */
	int cg_locks[8];
	unsigned n_cg_locks;
	/* policy.c compiled once: the seccomp filter and capabilities of every box process */
	struct sock_fprog seccomp; /* .filter NULL: no filter (degraded) */
	uint64_t caps_keep;
	int last_cap;
	int life_pipe[2]; /* inits read EOF from [0] when the server dies ([1] is only ours) */
	/* <state>/.etc-<template>: each template's /etc (host copy + the template's user), made
	 * once, in fk_templates() order; a box mounts its template's as the lower layer of an
	 * overlay on its /etc (upper: <box dir>/etc-upper). NULL: every box gets its own copy
	 * (degraded mode, or no overlayfs). */
	char **etc_templates;
	/* Boxes with egress allowlist/open get their own network namespace and an egress proxy
	 * (egress.h); false (no BPF sk_lookup, or degraded): refused, or sharing the host's
	 * network with unsafe_shared_network (fk_rt_egress_allowed). */
	bool egress_ns;
	bool unsafe_shared_network; /* fk_rt_options.unsafe_shared_network */
	fk_ehost *egress_hosts;     /* fk_rt_options.egress_hosts */
	size_t n_egress_hosts;
	/* a user namespace per box (backend_files.c): where ranges are claimed, next range to try
	 */
	bool userns;
	char *idrange_dir;
	uint32_t idrange_cursor;
	bool disks;                /* a file system image per box (loop devices work) */
	bool disk_reserve;         /* each image's whole size is allocated (fallocate works) */
	pthread_mutex_t disk_lock; /* guards disk_tpls */
	fk_disk_tpl *disk_tpls;    /* the empty images boxes' disks are copied from, by size */
};

/* box.c */
int fk__fail(fk_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int fk__errno_code(int errnum);
fk_box *fk__box_get(fk_rt *rt, const char *id); /* new ref or NULL */
void fk__box_put(fk_box *b);
bool fk__valid_id(const char *id); /* [A-Za-z0-9_-]{1,64} */
fk_box *fk__box_new(fk_rt *rt, const char *id, const fk_box_options *opts); /* refs 1, unlinked */
void fk__box_free(fk_box *b); /* only for a box never linked into the table */
int64_t fk__now_ms(void);
/* A box id (uid or gid) as the host stores it, and back; ids without a mapping are nobody. */
uid_t fk__host_id(const fk_box *b, uid_t box_id);
uid_t fk__box_id(const fk_box *b, uid_t host_id);
/* /proc/<PID 1>/`what` of a box with a PID 1 (ns/net, root) opened with `flags`; for an adopted
 * PID 1 only while it still runs, so a reused pid is never followed. -1 with errno. */
int fk__box_init_open(fk_box *b, const char *what, int flags);

#endif /* FAKE_E2B_RUNTIME_INT_H */
