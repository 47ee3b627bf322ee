/*
 * fake-e2b/registry/registry.h: the E2B view of every sandbox (id, token,
 * metadata, state, end time, open streams, immune pids) and its lifecycle
 * steps (boot, pause, resume, reboot, delete), the reaper (timeouts, docs/protocol.md
 * "Lifecycle") and Connect-Timeout-Ms kill timers. Sandboxes are made real by the runtime
 * (runtime.h). Knows no HTTP.
 *
 * A sandbox is refcounted: the registry holds one reference until it is
 * deleted; a request takes one (fk_registry_acquire). Lifecycle changes are
 * serialised per sandbox (op_lock). Fields marked "lock" are read and written
 * under the registry lock (fk_registry_lock); the others are fixed at creation.
 * Open envd streams register an fk_watch so a pause or delete breaks them
 * promptly, as E2B's proxy drops client connections of a paused sandbox.
 */
#ifndef FK_REGISTRY_H
#define FK_REGISTRY_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "builds.h"
#include "runtime.h"

#define FK_ID_LEN        21    /* "i" + 20 */
#define FK_MAX_TIMEOUT_S 86400 /* team max instance length: 24 h (Pro) */
#define FK_MAX_IMMUNE    64
#define FK_CLIENT_ID     "6532622b"

typedef struct fk_registry fk_registry;

/* One sample of a sandbox's use (metrics.c), E2B's SandboxMetric. */
typedef struct fk_metric {
	int64_t ts_ns; /* when it was taken (CLOCK_REALTIME) */
	unsigned cpu_count;
	double cpu_pct; /* CPU time used since the previous sample / (wall time * cpu_count) */
	uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total;
} fk_metric;
#define FK_METRICS_INTERVAL_S 5    /* E2B's collection interval (orchestrator flush: 5 s) */
#define FK_METRICS_KEPT       1440 /* samples kept per sandbox: 2 h at 5 s */
typedef struct fk_watch fk_watch;

enum fk_sb_state { FK_SB_RUNNING, FK_SB_PAUSED };

typedef struct fk_sandbox {
	struct fk_sandbox *next; /* lock: registry list */
	int refs;                /* lock */
	int deleted;             /* lock */
	char id[FK_ID_LEN + 1];
	char token[65];
	char *template_id;
	enum fk_sb_state state;                /* lock */
	int64_t started_ns, end_ns, paused_ns; /* lock */
	unsigned disk_mb; /* its disk (diskSizeMB), set at its first boot; 0: not booted yet */
	unsigned cpu_count, memory_mb; /* its limits (cpuCount, memoryMB), set at its first boot */
	char *alias;      /* its template's first alias ("" none), set at its first boot */
	int metadata_set; /* the create gave metadata (E2B omits `metadata` of one that did not) */
	int auto_pause, auto_pause_memory, auto_resume;
	int paused_fs_only;  /* lock: last pause without memory: resume cold-boots */
	int secured;         /* envd requires the token (v2 always; legacy with secure:true) */
	int private_traffic; /* network.allowPublicTraffic:false: its ports need traffic_token */
	char traffic_token[65];
	int loopback_only;
	json_t *metadata;       /* object */
	json_t *network;        /* lock: object or NULL (PUT /network replaces it) */
	json_t *allow_internet; /* lock: true/false or NULL (absent) */
	json_t *env_vars;       /* the create's envVars (object or NULL): a fork boots with them */
	json_t *box; /* what its box boots with (envs, user, template, workdir), set at boot */
	pthread_mutex_t op_lock;  /* serialises lifecycle changes */
	pthread_mutex_t rec_lock; /* serialises writes of its record (kept servers) */
	fk_watch *watches;        /* lock */
	uint32_t immune[FK_MAX_IMMUNE];
	size_t n_immune;         /* lock */
	fk_metric *metrics;      /* lock: ring of FK_METRICS_KEPT samples (metrics.c), or NULL */
	size_t n_metrics;        /* lock: samples in the ring */
	size_t metrics_next;     /* lock: the slot the next sample takes */
	uint64_t cpu_ns_seen;    /* lock: the box's CPU time at the last sample */
	int64_t cpu_seen_ns;     /* lock: when that was (0: none yet, the sandbox's start counts) */
	int64_t next_sample_ns;  /* lock: when the sampler takes the next one */
	json_t *logs;            /* lock: its log lines {ns, level, line} (sblogs.c), or NULL */
	size_t logs_bytes;       /* lock: their lines' bytes */
	uint64_t oom_kills_seen; /* lock: its box's OOM kills its logs told */
	struct fk_pwatch *pwatches; /* lock: its polling directory watchers (pwatch.c) */
} fk_sandbox;

/* One open envd stream of a sandbox; embedded in the stream's state. */
struct fk_watch {
	struct fk_watch *prev, *next;
	fk_sub *sub; /* woken with fk_sub_wake when the sandbox pauses / goes; may be NULL */
	pthread_cond_t cond;
	int broken; /* set (under the registry lock) once the sandbox paused or was deleted */
	int linked;
};

/* seed: 32 bytes that envd access tokens are derived from (HMAC-SHA256 of the id). */
int fk_registry_new(fk_registry **out, fk_rt *rt, const unsigned char seed[32]);
/* Refuse new streams and end every sandbox, breaking every stream: a kept registry
 * (fk_registry_keep) keeps each one paused with its files and record, an ephemeral one deletes
 * them. Stop the reaper first. */
void fk_registry_shutdown(fk_registry *g);
void fk_registry_free(fk_registry *g);
int fk_registry_stopping(fk_registry *g);
fk_rt *fk_registry_rt(fk_registry *g);

void fk_registry_lock(fk_registry *g);
void fk_registry_unlock(fk_registry *g);
/* Call fn for every registered sandbox, under the lock (fn must not take it). */
void fk_registry_foreach(fk_registry *g, void (*fn)(fk_sandbox *sb, void *ud), void *ud);

/* A sandbox by id with a new reference, or NULL when unknown/deleted. */
fk_sandbox *fk_registry_acquire(fk_registry *g, const char *id);
void fk_sandbox_release(fk_registry *g, fk_sandbox *sb);
/* Another reference to a sandbox the caller holds one of. Returns sb. */
fk_sandbox *fk_sandbox_ref(fk_registry *g, fk_sandbox *sb);
/* The envd token, NULL when the sandbox is not secured. Borrowed while a reference is held. */
const char *fk_sandbox_token(const fk_sandbox *sb);
/* Running? A paused sandbox with autoResume is resumed first (docs/protocol.md "Lifecycle"). */
int fk_sandbox_ensure_running(fk_registry *g, fk_sandbox *sb);

/* A new sandbox with a fresh id and token, not registered (refs 1); NULL on OOM. The caller
 * fills the other fields, then fk_registry_boot and fk_registry_add, or fk_sandbox_discard. */
fk_sandbox *fk_sandbox_new(fk_registry *g);
void fk_sandbox_discard(fk_sandbox *sb);
/* Make the box real (runtime) from `boot` (what its template boots with, builds.h; NULL: the
 * runtime template named sb->template_id): the template's ENV first, then E2B_SANDBOX*, then
 * `envs` ("K=V", create-time envVars); a built template's start command runs and its ready
 * command succeeds before this returns. */
int fk_registry_boot(fk_registry *g, fk_sandbox *sb, const fk_tboot *boot, const char *const *envs,
                     size_t n_envs, fk_err *err);
/* Register a booted sandbox (takes over the caller's reference as the registry's). */
void fk_registry_add(fk_registry *g, fk_sandbox *sb);

/* Lifecycle results. */
enum { FK_LC_OK = 0, FK_LC_GONE = -1, FK_LC_CONFLICT = -2, FK_LC_FAILED = -3, FK_LC_SKIPPED = -4 };
/* Pause (fs_only: without memory, the next resume cold-boots). */
int fk_registry_pause(fk_registry *g, fk_sandbox *sb, int fs_only, int only_if_expired,
                      fk_err *err);
/* Delete: `when` 0 always, 1 only if expired (the reaper), FK_DEL_IF_DEAD only if it runs and its
 * box's PID 1 is gone (the reaper: E2B forgets a sandbox whose VM died; its API then answers 404,
 * its envd routes 502 "The sandbox was not found"); FK_LC_SKIPPED otherwise. */
enum { FK_DEL_IF_DEAD = 2 };
int fk_registry_delete(fk_registry *g, fk_sandbox *sb, int when);

/* Snapshot (E2B's snapshots and forks): the running sandbox's files copied to `layer_dir`
 * (fk_box_snapshot) under its op_lock; FK_LC_GONE when it is not running. */
int fk_registry_snapshot(fk_registry *g, fk_sandbox *sb, const char *layer_dir, fk_err *err);

/* Network update (PUT /sandboxes/{id}/network, `body` validated): the egress keys of the
 * sandbox's `network` (allowOut, denyOut, rules, egressProxy) replaced whole by the body's (a
 * key left out is cleared), allow_internet_access changed only when given; applied to the
 * running box first (fk_box_set_egress), then recorded. Under its op_lock, so a pause or
 * resume sees the old rules or the new. FK_LC_GONE when it is not running, FK_LC_FAILED with
 * `err`. */
int fk_registry_update_network(fk_registry *g, fk_sandbox *sb, json_t *body, fk_err *err);

enum fk_connect_outcome {
	FK_CONNECT_RUNNING,  /* was running: end time extended (not for resume) */
	FK_CONNECT_RESUMED,  /* was paused, runs again */
	FK_CONNECT_GONE,     /* deleted meanwhile */
	FK_CONNECT_CONFLICT, /* resume of a running sandbox */
	FK_CONNECT_FAILED,   /* err set */
};
/* connect / resume (docs/protocol.md "Connect (resume)", "Delete, pause, timeout"): a running
 * sandbox's end extends to now + timeout_s (never shortens; resume refuses); a paused one resumes
 * (cold when `reboot` or its pause kept no memory) with end = now + timeout_s. */
enum fk_connect_outcome fk_registry_connect(fk_registry *g, fk_sandbox *sb, long timeout_s,
                                            int resume, int reboot, fk_err *err);
/* /timeout sets exactly (may shorten); extend_only (/refreshes) only extends. 0, or -1 when
 * the sandbox is not running. */
int fk_registry_set_timeout(fk_registry *g, fk_sandbox *sb, long secs, int extend_only);

/* Register a stream; -1 (not registered) when the sandbox is no longer running. */
int fk_sandbox_watch(fk_registry *g, fk_sandbox *sb, fk_watch *w);
void fk_sandbox_unwatch(fk_registry *g, fk_sandbox *sb, fk_watch *w);
/* Change the sub woken on a break (NULL before freeing it). */
void fk_watch_set_sub(fk_registry *g, fk_watch *w, fk_sub *sub);
/* Is the watch broken (sandbox paused/deleted/server stopping)? */
int fk_watch_broken(fk_registry *g, fk_watch *w);
/* Sleep up to ms or until the watch breaks; returns broken. */
int fk_watch_sleep(fk_registry *g, fk_watch *w, int ms);

/* ---- records.c, restore.c: keeping sandboxes (README "What survives what") ---- */
typedef struct fk_state fk_state;
/* Keep every sandbox in `st`'s records from now on (fake-e2b --state-dir without --ephemeral):
 * each change is written before the call that made it returns (create, pause, resume, timeout,
 * network), a delete removes the record, and shutdown keeps the sandboxes. Before serving. */
void fk_registry_keep(fk_registry *g, fk_state *st);
/* Loads the kept registry's records: every sandbox comes back paused with its files (its
 * processes ended with the server that ran them; the next resume boots it cold from its disk),
 * one that was running past its end time without autoPause is deleted, as the reaper would
 * have, and one whose files are gone is deleted. Each logged on stderr. Then the runtime
 * removes what no kept sandbox owns (fk_rt_sweep). The number kept. */
int fk_registry_load(fk_registry *g);

/* ---- pwatch.c: a sandbox's polling directory watchers (envd CreateWatcher...) ---- */
#define FK_PWATCH_ID_LEN 21 /* "w" + 20 */
typedef struct fk_pwatch {
	struct fk_pwatch *next; /* lock */
	char id[FK_PWATCH_ID_LEN + 1];
	struct fk_dirwatch *dw;
	char *user; /* whose view its entries are stat'ed in (NULL: the default user) */
	bool include_entry;
	int busy, removed; /* lock: taken by a call; unlinked (its last holder frees it) */
	int catching;      /* lock: catch-ups (fk_sandbox_pwatches_catch_up) holding it */
	/* events read ahead of the next GetWatcherEvents by a catch-up, oldest first, at most
	 * FK_PWATCH_AHEAD_BYTES of names and paths; `dlock` serialises every read of `dw` */
	pthread_mutex_t dlock;
	struct fk_dirwatch_event *ahead;
	size_t n_ahead, cap_ahead, ahead_bytes;
} fk_pwatch;
#define FK_PWATCH_AHEAD_BYTES (256 * 1024)
/* Hand watch `dw` to `sb` under a new id (id_out): 0, or -1 when `sb` is gone or out of memory
 * (`dw` stays the caller's). */
int fk_sandbox_pwatch_add(fk_registry *g, fk_sandbox *sb, struct fk_dirwatch *dw, const char *user,
                          bool include_entry, char id_out[FK_PWATCH_ID_LEN + 1]);
/* The watcher `id` of `sb`, taken for one call (fk_sandbox_pwatch_put gives it back); NULL
 * when none (*busy 1: another call has it). */
fk_pwatch *fk_sandbox_pwatch_take(fk_registry *g, fk_sandbox *sb, const char *id, int *busy);
void fk_sandbox_pwatch_put(fk_registry *g, fk_pwatch *pw);
/* Read every polling watcher of `sb` up to now, so that a directory just made or moved in is
 * watched before the caller answers (envd's watchers read their events as they come, so a
 * recursive one watches a new directory before the client's next call reaches envd; these are
 * read only when polled). Call after MakeDir and Move. Events wait for the next poll. */
void fk_sandbox_pwatches_catch_up(fk_registry *g, fk_sandbox *sb);
/* The next event of `pw` (taken): one read ahead, else from its watch, as fk_dirwatch_next
 * with timeout 0. */
int fk_sandbox_pwatch_next(fk_pwatch *pw, struct fk_dirwatch_event *ev);
/* Remove and free watcher `id`: 0, or -1 when `sb` has none of that id. */
int fk_sandbox_pwatch_remove(fk_registry *g, fk_sandbox *sb, const char *id);
/* Every watcher of `sb` (its delete, its discard). */
void fk__sandbox_pwatches_drop(fk_registry *g, fk_sandbox *sb);

/* ---- sblogs.c: a sandbox's logs (GET /sandboxes/{id}/logs, /v2/...) ---- */
#define FK_TEAM_ID      "6d9c3b4e-2a1f-4c8e-9b7a-e2b0fa4e0001" /* fake-e2b's one team */
#define FK_SBLOGS_KEPT  1000                                   /* lines kept per sandbox */
#define FK_SBLOGS_BYTES (512 * 1024) /* and their bytes, at most, per sandbox */
#define FK_SBLOGS_GONE  32           /* deleted sandboxes whose logs stay readable */
enum fk_sblog_level { FK_SBLOG_DEBUG, FK_SBLOG_INFO, FK_SBLOG_WARN, FK_SBLOG_ERROR };
/* Who writes a line, as E2B's `service`: envd, the API (orchestration-api), the orchestrator,
 * or fake-e2b itself (what E2B does not log). */
enum fk_sblog_source { FK_SBLOG_ENVD, FK_SBLOG_API, FK_SBLOG_ORCH, FK_SBLOG_FAKE };
/* Record a line of `sb`'s logs now: `fields` (stolen; NULL: none) the line's own keys, to which
 * the message, level and the keys E2B's pipeline adds are added; the oldest lines go beyond
 * FK_SBLOGS_KEPT or FK_SBLOGS_BYTES. Nothing once sb is deleted. Takes the registry lock. */
void fk_sandbox_log(fk_registry *g, fk_sandbox *sb, enum fk_sblog_source src,
                    enum fk_sblog_level level, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The API's lines of a sandbox that starts (infra api handlers sandbox_create.go / _resume.go,
 * orchestrator/analytics.go logSandboxCreated): `started` ("Started creating sandbox" or
 * "Started resuming sandbox", debug), then "Sandbox created" with its end_time (Go's
 * "2006-01-02 15:04:05 -07:00", UTC). */
void fk_sandbox_log_created(fk_registry *g, fk_sandbox *sb, const char *started);
/* The orchestrator's lines of a sandbox that stops (infra orchestrator server/sandboxes.go):
 * "Killing sandbox" with kill_reason (request, timeout; E2B's KillReason), or "Pausing sandbox"
 * when kill_reason is NULL, then "Sandbox stopped". */
void fk_sandbox_log_stop(fk_registry *g, fk_sandbox *sb, const char *kill_reason);
/* The box's OOM kill count now (runtime.h fk_box_usage.oom_kills): a warn line for the kills
 * not yet told. */
void fk_sandbox_note_oom(fk_registry *g, fk_sandbox *sb, uint64_t oom_kills);
typedef struct fk_sblog_query {
	int64_t start_ms, end_ms; /* entries stamped in [start_ms, end_ms] */
	size_t limit;
	int backward; /* newest first */
	int min_level;
	const char *search; /* a substring of the message, or NULL */
} fk_sblog_query;
/* The entries of sandbox `id` (running, paused, or among the last deleted) `q` selects: *logs
 * SandboxLogEntry objects, *lines (NULL: not wanted) the v1 SandboxLog {timestamp, line} of
 * each. 0, or -1 out of memory. */
int fk_sandbox_logs(fk_registry *g, const char *id, const fk_sblog_query *q, json_t **logs,
                    json_t **lines);

/* ---- reaper.c: the thread that ends sandboxes at their end time ---- */
/* (docs/protocol.md "Lifecycle") */
typedef struct fk_reaper fk_reaper;
/* Start the reaper thread (every 200 ms) and the metrics sampler's (fk_registry_sample_due,
 * every 200 ms). NULL on failure. */
fk_reaper *fk_reaper_start(fk_registry *g);
/* Stop and join it; pending kill timers are dropped without killing. NULL is fine. */
void fk_reaper_stop(fk_reaper *r);
/* Connect-Timeout-Ms bounds a Start'ed process even after its client left (docs/internals/wire.md
 * "Process start"): SIGKILL `proc` of sandbox `id` at `deadline_ms` (CLOCK_MONOTONIC) unless it has
 * ended by then. The reaper fires it. Takes its own reference on proc. */
void fk_registry_kill_at(fk_registry *g, const char *id, fk_proc *proc, int64_t deadline_ms);

/* Mark a pid of the sandbox as immune to SendSignal (fault kill_ignored). */
void fk_sandbox_set_immune(fk_registry *g, fk_sandbox *sb, uint32_t pid);
int fk_sandbox_is_immune(fk_registry *g, fk_sandbox *sb, uint32_t pid);

/* ---- metrics.c: samples of each running sandbox's use ---- */
/* Takes a sample of sb now (CPU, memory, disk from the runtime, fk_box_usage_read) and keeps
 * it; 0, or -1 when the box cannot be read. The control plane takes the first once a new
 * sandbox is registered; the reaper one every FK_METRICS_INTERVAL_S while it runs. */
int fk_registry_sample(fk_registry *g, fk_sandbox *sb);
/* Samples every running sandbox whose next sample is due (the reaper's call). */
void fk_registry_sample_due(fk_registry *g);
/* A copy of sb's samples taken at or after from_ns and at or before to_ns, oldest first
 * (caller frees *out); the count, or -1 on OOM. */
long fk_sandbox_metrics(fk_registry *g, fk_sandbox *sb, int64_t from_ns, int64_t to_ns,
                        fk_metric **out);

/* ---- JSON views (shapes.c); callers hold the registry lock ---- */
/* Sandbox (create/connect/resume reply, docs/protocol.md "The Sandbox object"). */
json_t *fk_sandbox_json(const fk_sandbox *sb, int with_token);
/* ListedSandbox (docs/protocol.md "List"). */
json_t *fk_sandbox_listed_json(const fk_sandbox *sb);
/* SandboxDetail (docs/protocol.md "Get"). */
json_t *fk_sandbox_detail_json(const fk_sandbox *sb);
/* Internal state of every sandbox (GET /_fake/sandboxes); takes the lock itself. */
json_t *fk_registry_dump(fk_registry *g);

#endif
