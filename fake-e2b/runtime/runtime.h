/*
 * fake-e2b/runtime/runtime.h — the sandbox runtime of fake-e2b (fake-e2b/README.md "Source map";
 * docs/internals/architecture.md "fake-e2b: `fake-e2b/`").
 *
 * Owns: making sandboxes ("boxes") real on this Linux machine — one PID + mount + network
 * namespace per box with a tiny PID-1 (egress allowlist/open: reaching out only through the
 * runtime's egress proxy, egress.h), a freezer cgroup per box for pause, the
 * processes started inside (envd `process.Process`, docs/internals/wire.md "Process start" and
 * "Other process RPCs") and the files API (envd `/files` and `filesystem.Filesystem`, wire.md
 * "envd's HTTP routes" and "Filesystem RPCs").
 * Must not know: HTTP, Connect framing, JSON, tokens, timeouts of the control plane. fake-e2b's
 * HTTP side (fakesrv) maps wire requests onto these calls.
 *
 * Addressing: boxes are named by the sandbox id string the server chose; processes by
 * (box id, pid as seen inside the box). Every call looks the box up under a lock, so a box
 * destroyed concurrently just yields FK_ENOTFOUND. All functions are thread-safe unless said
 * otherwise.
 *
 * Errors: functions return 0 or a negative `fk_code`; the optional last parameter `fk_err *err`
 * (may be NULL) receives the code, the errno if any and a message meant for the wire
 * (e.g. "cwd '/nope' does not exist", "path '/x' is a directory"). Messages never hold secrets.
 *
 * Without root or namespaces the runtime degrades (processes run as the server's user in the
 * box's directory on the host, `/x` paths of the files API map to <box dir>/x, freeze uses
 * SIGSTOP/SIGCONT on the started processes) and says so on stderr once; without the freezer
 * cgroup only pause degrades. `fk_rt_isolated()` tells tests whether to skip.
 *
 * What the host process must respect: processes are children of this process (reaped through
 * pidfds by the runtime's threads), so never reap with waitpid(-1)/wait() and never set SIGCHLD
 * to SIG_IGN. Ignore SIGPIPE (fk_proc_write_stdin copes either way). TSan builds only: the
 * runtime makes the process a child subreaper. If the process dies without fk_rt_free, every
 * box's PID 1 sees its life pipe close and exits, which ends every process of every box; the
 * state dir and empty cgroups stay (the cgroups are swept by the next runtime).
 *
 * Implementation map (floors: each file uses only those below it): lifecycle.c (runtime, create,
 * freeze, thaw, reboot, destroy) -> proc.c (the processes' table), proc_spawn.c (starts) ->
 * proc_pump.c (output pumps, subscribers), files_read.c, files_write.c, files_list.c,
 * files_change.c (the files API) -> files.c (its context and entries) -> boxfs.c (root fd,
 * path resolution, users) -> box.c + runtime_int.h (box table, errors); lifecycle.c and the proc
 * files reach the mechanism only through backend.h, implemented by backend_ns.c over
 * backend_boot.c, backend_init.c, backend_files.c, backend_sweep.c, backend_disk.c (namespaces,
 * PID 1, cgroups) over linux/
 * (primitives that know no box).
 */
#ifndef FAKE_E2B_RUNTIME_H
#define FAKE_E2B_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- errors */

typedef enum fk_code {
	FK_OK = 0,
	FK_EINVAL = -1, /* bad argument (empty path, bad signal, ...) -> invalid_argument / 400 */
	FK_ENOTFOUND = -2, /* box, pid, tag or path does not exist -> not_found / 404 */
	FK_ENOCWD =
	    -3, /* Start: cwd does not exist -> invalid_argument "cwd '<p>' does not exist" */
	FK_EISDIR =
	    -4, /* path is a directory where a file is needed -> 400 "path is a directory" */
	FK_ENOTDIR = -5,   /* a path component (or MakeDir/ListDir target) is not a directory */
	FK_EEXIST = -6,    /* MakeDir: a directory already exists -> already_exists; box id taken */
	FK_ENOUSER = -7,   /* unknown user name -> unauthenticated / 401 */
	FK_ESTATE = -8,    /* box is in the wrong state (e.g. start on a frozen box) */
	FK_ENOSPC = -9,    /* ENOSPC / EDQUOT -> 507 */
	FK_ETIMEOUT = -10, /* fk_sub_next: no event within the timeout (send a keepalive) */
	FK_EIO = -11,      /* any other system failure (errno in fk_err.errnum) -> internal / 500 */
	FK_ENOMEM = -12,   /* out of memory */
	FK_ESPAWN = -13,   /* Start: execve or setup in the child failed -> invalid_argument
	                      "error starting process ..." */
	FK_ECLOSED = -14,  /* stdin already closed / not a pipe; subscription already ended */
} fk_code;

typedef struct fk_err {
	int code;          /* an fk_code */
	int errnum;        /* errno behind the failure, 0 if none */
	char message[256]; /* NUL-terminated, for the wire */
} fk_err;

/* Static name of a code ("FK_ENOTFOUND"); never NULL. */
const char *fk_code_name(int code);

/* ---------------------------------------------------------------- runtime */

typedef struct fk_rt fk_rt;

typedef struct fk_rt_options {
	/* Directory holding one state dir per box (<state_dir>/<box id>/{root,upper...}); created
	 * if missing. NULL: a fresh mkdtemp("$TMPDIR/fake-e2b-XXXXXX") when TMPDIR is an absolute
	 * path of at most 1,024 bytes (longer: FK_EINVAL), else "/var/tmp/fake-e2b-XXXXXX" (on
	 * disk, never in RAM; /tmp/fake-e2b-XXXXXX without /var/tmp), write-locked (<dir>/.lock)
	 * then marked
	 * (<dir>/.ephemeral), removed by fk_rt_free (or by a later runtime's fk_rt_sweep once the
	 * lock is free). */
	const char *state_dir;
	/* Force the degraded, non-isolated mode even as root (tests of the fallback). */
	bool no_isolation;
	/* Without BPF sk_lookup (Linux < 5.9, or bpf() refused) a box with egress allowlist or
	 * open cannot have a network of its own behind the egress proxy. false (the default):
	 * such boxes are refused (fk_box_create: FK_ESTATE), since sharing the host's network
	 * would let them reach the host, the server and other boxes. true (fake-e2b
	 * --unsafe-shared-network): they share the host's network and nothing is enforced. */
	bool unsafe_shared_network;
	/* Act as if the kernel had no BPF sk_lookup (tests of the refusal above). */
	bool no_sk_lookup;
	/* Act as if the kernel refused clone3(CLONE_INTO_CGROUP) (Linux < 5.7, or a container's
	 * seccomp): every start moves its task into the box's cgroup v2 by a cgroup.procs write
	 * (tests of that fallback; fk_rt_cgroup_moves). */
	bool no_clone_into_cgroup;
	/* Host names the boxes' egress proxy resolves without DNS, "NAME=IP[,IP...]" (IPv4; like
	 * /etc/hosts for the proxy alone: tests point names at a local upstream). Copied. */
	const char *const *egress_hosts;
	size_t n_egress_hosts;
	/* When a process's output events end (envd has two behaviours). false (envd 0.6.13): once
	 * both pipes reach EOF, i.e. when every holder closed them, so a background child holding
	 * the output (`sleep 30 & echo started`) holds the end. true (envd's reap-then-drain
	 * handler): once the process exited and its pipes are drained (quiet 50 ms, at most 1 s). A
	 * PTY process ends the same way. */
	bool end_on_exit;
	/* Disk of a box whose fk_box_options leave disk_mb 0, in MiB (fake-e2b --sandbox-disk-mb);
	 * 0: 1024, E2B's default sandbox. */
	unsigned default_disk_mb;
	/* Live restore (fake-e2b with a kept --state-dir; ignored without state_dir): a box's PID 1
	 * and its processes do not depend on this process for their lives (Docker's live-restore):
	 * when it dies, or fk_rt_free leaves them (below), they run on, and a later runtime on the
	 * same state dir adopts them in fk_box_restore. false: a box's PID 1 ends with the process
	 * that started it. */
	bool live_restore;
} fk_rt_options;

/* Creates the runtime. Probes root, namespaces and the freezer (/sys/fs/cgroup/freezer/fake-e2b)
 * and prints once on stderr what is unavailable. Call before starting threads that fork.
 * `opts` may be NULL (defaults). Caller frees with fk_rt_free(). */
int fk_rt_new(fk_rt **out, const fk_rt_options *opts, fk_err *err);

/* Destroys every box (processes killed, mounts gone, state dirs removed), joins the runtime's
 * threads and frees. A live-restore runtime (fk_rt_live) leaves its boxes running instead, for
 * the next runtime on its state dir to adopt, and frees nothing (call it only at exit).
 * Subscriptions and process refs still held become inert (their next() returns FK_ECLOSED) but must
 * still be freed by their owners; do that before fk_rt_free when possible. Accepts NULL. */
void fk_rt_free(fk_rt *rt);

/* The directory holding the boxes' state dirs (fk_rt_options.state_dir or the one made). Other
 * layers keep their own files there under names starting with '.', which no box id has. */
const char *fk_rt_state_dir(const fk_rt *rt);

/* True when boxes get real namespaces + freezer; false in the degraded mode. */
bool fk_rt_isolated(const fk_rt *rt);

/* How many tasks this runtime's process starts, shims and box boots moved into a cgroup by
 * writing its cgroup.procs, which takes the kernel's global cgroup lock (docs/internals/
 * exec-cost.md, "Joining the box's cgroups"), instead of being made there: 0 where clone3
 * CLONE_INTO_CGROUP works, but for a start at its box's pids cap (its clone moves to the
 * reserve). For tests. */
uint64_t fk_rt_cgroup_moves(const fk_rt *rt);

/* The disk a box gets when its options leave disk_mb 0, in MiB (fk_rt_options.default_disk_mb,
 * else 1024): the diskSizeMB the API reports. */
unsigned fk_rt_default_disk_mb(const fk_rt *rt);

/* True when boxes with egress allowlist or open get their own network namespace behind the
 * egress proxy (isolated, and the kernel has BPF sk_lookup); false: they are refused, or share
 * the host's network with unsafe_shared_network (or without isolation). */
bool fk_rt_egress_isolated(const fk_rt *rt);

/* May boxes with egress allowlist or open be created? True unless the runtime is isolated,
 * has no egress proxy (no BPF sk_lookup) and unsafe_shared_network is off. */
bool fk_rt_egress_allowed(const fk_rt *rt);

/* Why fk_rt_egress_allowed() is false, for the wire (a static string). */
#define FK_EGRESS_REFUSED_MSG                                                                      \
	"egress allowlist and open need a network of the sandbox's own behind its egress proxy, "  \
	"and this kernel has no BPF sk_lookup (Linux >= 5.9, bpf() allowed): refused rather than " \
	"sharing the host's network (fake-e2b --unsafe-shared-network allows that)"

/* ---------------------------------------------------------------- boxes */

/* A box's limits when fk_box_options leaves them 0 (E2B's default sandbox: 2 vCPUs, 512 MiB). */
#define FK_BOX_DEFAULT_MEMORY_MB 512
#define FK_BOX_DEFAULT_CPUS      2

typedef struct fk_box_options {
	/* Egress none: the box gets its own network namespace with only `lo` up. */
	bool net_none;
	/* Otherwise (isolated runtime with BPF sk_lookup) its own network namespace too, whose
	 * only way out is the runtime's egress proxy, under E2B's rules (network.allowOut /
	 * denyOut): allow_out entries are IPv4 addresses, CIDRs or host names ("example.com",
	 * "*.example.com", "*"), deny_out entries IPv4 addresses or CIDRs; both empty: open.
	 * Allowed: an allowed CIDR, or on ports 80/443 an allowed HTTP Host / TLS SNI name whose
	 * addresses include the one connected to; else a denied CIDR blocks; else allowed. Never:
	 * the host's own addresses, 127/8, 10/8, 100.64/10, 169.254/16, 172.16/12, 192.168/16.
	 * IPv6 entries are dropped (no IPv6 in a box); a deny_out entry that is no address:
	 * FK_EINVAL. Copied. */
	const char *const *allow_out;
	size_t n_allow_out;
	const char *const *deny_out;
	size_t n_deny_out;
	/* Default environment of every process ("KEY=VALUE", e.g. "E2B_SANDBOX=true",
	 * "E2B_SANDBOX_ID=<id>", create-time envVars), applied after PATH/HOME/USER/LOGNAME and
	 * before request envs. Copied. May be NULL with n_envs 0. */
	const char *const *envs;
	size_t n_envs;
	/* User for calls passing user NULL; NULL means "root". Copied. */
	const char *default_user;
	/* Limits (0 = default): memory in MiB (memory cgroup; default 512, E2B's default
	 * sandbox; an allocation beyond it OOM-kills a process inside the box, which ends with
	 * SIGKILL), CPUs (CFS quota; default 2), processes + threads (pids cgroup; default 1024;
	 * envd starts keep 64 more slots so a fork bomb cannot lock the API out). Without the
	 * cgroup controller (degraded) the limit is not enforced. Disk in MiB (default the
	 * runtime's, fk_rt_default_disk_mb: the diskSizeMB the API reports): the box's files live
	 * in an ext4 image of that size under the state dir, so a write beyond it fails inside with
	 * ENOSPC; without loop devices (degraded) the box's files share the state dir's file
	 * system. */
	unsigned memory_mb;
	unsigned cpu_count;
	unsigned pids_max;
	unsigned disk_mb;
	/* The box's template (template.h: its user, home, workdir, directories); NULL means
	 * "capybara-sandbox". Unknown -> FK_EINVAL. */
	const char *template_id;
	/* A layer made by fk_box_commit (a built template, fk_box_commit): the box starts with a
	 * copy of its files (root/, and etc-upper/ over the template's /etc) instead of an empty
	 * root. template_id names the template the layer was built on. NULL: none. */
	const char *layer_dir;
	/* Default working directory of every process (a built template's WORKDIR); NULL: the
	 * template's. Copied. */
	const char *workdir;
} fk_box_options;

/* Creates and boots box `id` (1..64 chars of [A-Za-z0-9_-]): builds its root (host /usr, /bin,
 * /lib... read-only; private /etc with the template's user, e.g. `sandbox` 1000:1000 HOME
 * /workspace for capybara-sandbox; the template's directories, e.g. /workspace, /skills 0755
 * root, /opt/capybara 0700 root; /tmp 1777), starts its init. FK_EEXIST if the id is taken,
 * FK_EINVAL for an unknown template, FK_ENOSPC when its disk (disk_mb, whose whole size is
 * reserved on the state dir's file system when the box is made) does not fit that file
 * system's free space ("not enough disk space for the sandbox's disk: it needs N MiB, ...").
 * `opts` may be NULL. */
int fk_box_create(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err);

/* Pause: every process of the box stops making progress (freezer cgroup FROZEN). Idempotent. */
int fk_box_freeze(fk_rt *rt, const char *id, fk_err *err);

/* Resume after fk_box_freeze. Idempotent. */
int fk_box_thaw(fk_rt *rt, const char *id, fk_err *err);

/* Cold boot (connect memory:false): every process ends (subscribers get their end event with
 * "signal: killed"), files are kept, a new init starts; the box is running (thawed) afterwards.
 * Works on a frozen or running box. */
int fk_box_reboot(fk_rt *rt, const char *id, fk_err *err);

/* Everything ends, mounts are gone, the state dir is removed; works on a frozen box. Subscribers
 * get their end event. FK_ENOTFOUND if no such box. */
int fk_box_destroy(fk_rt *rt, const char *id, fk_err *err);

/* Keeping boxes across runtimes (fake-e2b with a kept --state-dir: README "What survives
 * what"). Without live restore a box's processes and memory live and die with the runtime that
 * started them (its PID 1 ends when the runtime's process does); with it they outlive it, for
 * the next runtime's fk_box_restore to adopt. Its files live in the state dir
 * (<state>/<id>.disk, or <state>/<id>/ without per-box disks) and outlast it. */
/* Close: as destroy, every process ends (subscribers get their end event) and the runtime lets
 * go of the box, but its files stay for fk_box_restore. FK_ENOTFOUND. */
int fk_box_close(fk_rt *rt, const char *id, fk_err *err);
/* Restore: box `id` known again from the files a closed box, or a runtime that died, left in
 * the state dir, with the options it was created with (layer_dir ignored: its files are
 * there). A live-restore runtime first ADOPTS the box when its PID 1 still runs (the one its
 * last runtime recorded: same pid, start time and boot): running or frozen as it was, with its
 * processes and memory, its disk, cgroups, id range and egress proxy taken over
 * (fk_box_live tells). Otherwise it is not booted: nothing runs in it until fk_box_reboot
 * boots it cold (thaw and process calls see a box without processes). FK_ENOTFOUND (no
 * files), FK_EEXIST, FK_EIO (its disk would not mount or check). Call fk_rt_sweep first: a
 * dead runtime's process may still hold the disk. */
int fk_box_restore(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err);
/* At start, before fk_box_restore: what runtimes that died left for this state dir, and only
 * for it (a live-restore runtime keeps the boxes of `keep` whose recorded PID 1 still runs,
 * for fk_box_restore to adopt) (other servers' boxes, cgroups and disks are never touched): every
 * process of a box whose files are in this state dir is killed (a crashed server's boxes, its
 * frozen ones too, which hold their disks), their cgroups and loop devices go; then the files of
 * boxes whose id is not in `keep` are removed. A runtime on a temporary state dir also removes the
 * marked temporary dirs beside it whose lock is free (dead runtimes', kill -9), their boxes'
 * processes and cgroups first. Each step is logged on stderr. */
void fk_rt_sweep(fk_rt *rt, const char *const *keep, size_t n_keep);
/* After every fk_box_restore (live restore): the boxes a dead runtime left running that none
 * adopted (a refused record, a failed restore) are killed, each logged. */
void fk_rt_sweep_unadopted(fk_rt *rt);

/* Commit (a template build's last step): every process of the box ends, then its files (the
 * writable root and its /etc layer) move to `layer_dir` (created; must not exist) as a layer
 * other boxes start from (fk_box_options.layer_dir), and the box is destroyed. Nothing runs in
 * the box while its files move, so what the layer holds is what the box left. FK_ENOTFOUND,
 * FK_EEXIST (layer_dir exists), FK_ENOSPC (a copy of what the box's disk holds does not fit the
 * state dir's file system, where layer_dir is meant to be; nothing left in layer_dir), FK_EIO.
 * On failure the box is destroyed too. */
int fk_box_commit(fk_rt *rt, const char *id, const char *layer_dir, fk_err *err);

/* Snapshot (E2B's snapshots and forks): a copy of the box's files (as fk_box_commit lays them
 * out) in `layer_dir` (created; must not exist), taken while the box is frozen so its processes
 * change nothing meanwhile; the box then runs on (a paused one stays paused). Only files: a box
 * made from the layer boots its processes anew. FK_ENOTFOUND, FK_EEXIST, FK_ENOSPC (as
 * fk_box_commit's), FK_EIO (nothing left in layer_dir). */
int fk_box_snapshot(fk_rt *rt, const char *id, const char *layer_dir, fk_err *err);

/* Network update (E2B's PUT /sandboxes/{id}/network): box `id`'s egress rules become
 * allow_out / deny_out (as in fk_box_options; both empty: open; deny 0.0.0.0/0 without allow:
 * nothing out), live. Connections and DNS queries its egress proxy accepts from now on get the
 * new rules; those accepted before keep the rules they were accepted under until they end. A
 * box created with egress none that the update lets out gets its egress proxy now (the AnyIP
 * route and own address an allowlist box has from the start); a later update to deny-all keeps
 * the proxy, which then refuses everything. The rules stay through freeze, thaw and reboot.
 * Without the egress proxy (a box sharing the host's network, or no isolation) they are
 * recorded, not enforced. FK_ENOTFOUND, FK_EINVAL (a deny_out entry that is no address),
 * FK_ENOMEM, FK_ESTATE (a box of egress none cannot be let out: no BPF sk_lookup), FK_EIO. */
int fk_box_set_egress(fk_rt *rt, const char *id, const char *const *allow_out, size_t n_allow_out,
                      const char *const *deny_out, size_t n_deny_out, fk_err *err);

/* What a box uses now (E2B's sandbox metrics): cpu_ns cumulative CPU time of its processes
 * (cpuacct cgroup), mem_used its memory without page cache, mem_cache its page cache,
 * mem_total its memory limit (memory cgroup), cpu_count its CPU limit, disk_used and
 * disk_total its disk: the filesystem of its root when that is its own (statvfs), else (its
 * files on the state dir's filesystem, shared with the host) the blocks of its own files and,
 * as the total, those plus the filesystem's free space for it; oom_kills how many of its
 * processes the OOM killer has killed (memory cgroup's oom_kill count). Without a cgroup
 * controller its fields are 0 (mem_total: the configured limit). FK_ENOTFOUND for an unknown
 * box. */
typedef struct fk_box_usage {
	uint64_t cpu_ns;
	unsigned cpu_count;
	uint64_t mem_used, mem_cache, mem_total;
	uint64_t disk_used, disk_total;
	uint64_t oom_kills;
} fk_box_usage;
int fk_box_usage_read(fk_rt *rt, const char *id, fk_box_usage *out, fk_err *err);

/* True if box `id` exists; *frozen_out (may be NULL) tells whether it is frozen. */
bool fk_box_exists(fk_rt *rt, const char *id, bool *frozen_out);

/* Whether fs.suid_dumpable (`value`: the text of /proc/sys/fs/suid_dumpable, NULL if unreadable)
 * lets an isolated runtime host sandboxes: 0 or 2 yes (0). 1 ("debug") no: a process that
 * changes its ids stays dumpable, so a sandbox's process could trace a start between its
 * clone and its execve, while it still shares the server's memory. fk_rt_new of an isolated
 * runtime refuses to start then (FK_EINVAL, saying how to fix it) rather than changing the
 * machine's setting itself; unreadable: FK_EIO. */
int fk_rt_check_suid_dumpable(const char *value, fk_err *err);

/* True if box `id` had a PID 1 and it has exited (killed from the host, or by the kernel): every
 * process of the box is gone with it, as when E2B's VM is gone. False for an unknown box, one
 * without a PID 1 (degraded, paused to its filesystem) or a live one, and for one busy in a
 * lifecycle operation (it never waits: ask again later). */
bool fk_box_init_gone(fk_rt *rt, const char *id);

/* Does box `id` have a PID 1 (booted, or adopted by fk_box_restore)? *frozen_out (may be
 * NULL) tells whether it is frozen. */
bool fk_box_live(fk_rt *rt, const char *id, bool *frozen_out);
/* True for a live-restore runtime (fk_rt_options.live_restore with a state dir). */
bool fk_rt_live(const fk_rt *rt);

/* Host pid of the box's init (for tests: /proc/<pid>/ns/...), 0 if none / degraded. */
pid_t fk_box_init_pid(fk_rt *rt, const char *id);

/* A TCP connection to port `port` of box `id`: to 127.0.0.1:`port` inside the box's network
 * namespace (its own; a box with egress allowlist/open shares the host's only when
 * fk_rt_egress_isolated() is false), made
 * by a short-lived thread that enters that namespace, so the socket belongs to the box's
 * network while the caller's threads never change namespace. For the HTTP side's port proxy
 * (E2B getHost(port), `<port>-<id>.<domain>`): relay bytes between the client and *fd_out.
 * Waits at most `timeout_ms` for the handshake. *fd_out: connected, blocking, O_CLOEXEC;
 * caller closes. FK_ENOTFOUND (no box, or nothing listens on the port: errnum
 * ECONNREFUSED), FK_ESTATE (paused), FK_EINVAL (port 0), FK_EIO (errnum ETIMEDOUT...). */
int fk_box_connect(fk_rt *rt, const char *id, uint16_t port, int timeout_ms, int *fd_out,
                   fk_err *err);

/* ---------------------------------------------------------------- processes */

typedef struct fk_proc fk_proc; /* refcounted handle on one process (live or retained exit) */
typedef struct fk_sub fk_sub;   /* one subscriber's queue of events of one process */

typedef struct fk_proc_spec {
	const char *cmd;         /* required; run via /bin/sh -c 'exec "$@"' like envd */
	const char *const *args; /* argv[1..], may be NULL when n_args is 0 */
	size_t n_args;
	const char *const *env_keys; /* request envs, parallel arrays, applied last */
	const char *const *env_values;
	size_t n_envs;
	const char *cwd;  /* NULL/"" = default (/workspace for sandbox, home for others); "~" and
	                     relative paths resolve against the user's home */
	const char *user; /* NULL = box default user; unknown -> FK_ENOUSER */
	const char *tag;  /* optional, for List and Connect-by-tag */
	bool stdin_pipe;  /* true: stdin is a pipe (SendInput/CloseStdin); false: /dev/null */
	/* true: stdin, stdout and stderr are a terminal (a pseudo-terminal of the box's devpts;
	 * the process leads a new session with it as controlling tty); output comes as FK_EV_PTY,
	 * fk_proc_write_stdin types into it, fk_proc_resize sets its size. stdin_pipe is ignored.
	 */
	bool pty;
	uint16_t pty_cols, pty_rows; /* the terminal's size; 0 -> 80 x 24 */
} fk_proc_spec;

/* What the runtime tells of a process that ended (fk_rt_set_proc_end_hook): its pid in the box,
 * its waitpid() status, whether it ran on a terminal, the bytes of output read from it (a
 * PTY process's in pty_bytes), and the box's OOM kill count read once it was reaped
 * (oom_known false without the memory controller). */
typedef struct fk_proc_end {
	uint32_t pid;
	int wait_status;
	bool pty;
	uint64_t stdout_bytes, stderr_bytes, pty_bytes;
	bool oom_known;
	uint64_t oom_kills;
} fk_proc_end;

/* `fn(ctx, box_id, end)` is called for every process of every box that ends from now on
 * (NULL: no more; returns once no call is running), on the process's own thread, once it was
 * reaped and before its end event is queued: a subscriber that sees the end sees what `fn`
 * did first. `fn` must not call the runtime about that box (destroy and reboot wait for the
 * thread while they hold the box). */
void fk_rt_set_proc_end_hook(fk_rt *rt,
                             void (*fn)(void *ctx, const char *box_id, const fk_proc_end *end),
                             void *ctx);

/* Starts a process in box `box_id` as `spec->user` (uid, gid, supplementary groups), env not
 * inherited (PATH, HOME, USER, LOGNAME, then box envs, then request envs). Returns only once the
 * exec succeeded (status pipe): FK_ENOCWD, FK_ENOUSER, FK_ESPAWN, FK_ESTATE (box frozen),
 * FK_ENOTFOUND (no box). If `sub_out` is non-NULL a subscription is attached before the process
 * can produce output (so a Start stream misses nothing); caller frees it with fk_sub_free().
 * `proc_out` (may be NULL) receives a reference; caller drops it with fk_proc_unref(). */
int fk_proc_start(fk_rt *rt, const char *box_id, const fk_proc_spec *spec, fk_proc **proc_out,
                  fk_sub **sub_out, fk_err *err);

/* Finds a live process, or one that exited less than 30 s ago (Connect), by in-box pid / by tag.
 * New reference in *out. FK_ENOTFOUND otherwise. */
int fk_proc_find(fk_rt *rt, const char *box_id, uint32_t pid, fk_proc **out, fk_err *err);
int fk_proc_find_tag(fk_rt *rt, const char *box_id, const char *tag, fk_proc **out, fk_err *err);

void fk_proc_ref(fk_proc *p);
void fk_proc_unref(fk_proc *p); /* accepts NULL */

uint32_t fk_proc_pid(const fk_proc *p); /* pid inside the box (what envd reports) */
/* True once the end event exists; then *wait_status_out (may be NULL) is the waitpid status. */
bool fk_proc_ended(fk_proc *p, int *wait_status_out);

/* Attaches a subscriber. On an ended process the queue holds just the end event. Output produced
 * while a process has no subscriber is read and discarded. Caller frees with fk_sub_free(). */
int fk_sub_new(fk_proc *p, fk_sub **out, fk_err *err);

typedef enum fk_event_type {
	FK_EV_STDOUT = 1,
	FK_EV_STDERR = 2,
	FK_EV_END = 3,
	FK_EV_PTY = 4, /* a PTY process's terminal output */
} fk_event_type;

typedef struct fk_event {
	fk_event_type type;
	unsigned char
	    *data; /* STDOUT/STDERR/PTY: 1..32768 bytes, owned; freed by fk_event_clear() */
	size_t len;
	int wait_status; /* END: waitpid() status (WIFEXITED/WIFSIGNALED/WCOREDUMP) */
} fk_event;

/* Waits up to `timeout_ms` (-1 = forever) for the next event. 0 and *ev filled; FK_ETIMEOUT when
 * nothing came (send a keepalive, call again); FK_ECLOSED after the end event was returned or the
 * runtime was freed. Backpressure: each subscriber's queue is capped (1 MiB); while a subscriber's
 * queue is full the process's pipes are not read, so a slow reader slows the process instead of
 * growing memory. One thread per fk_sub at a time. */
int fk_sub_next(fk_sub *s, fk_event *ev, int timeout_ms);

/* Wakes a thread blocked in fk_sub_next on `s` (it returns FK_ETIMEOUT). Any thread. */
void fk_sub_wake(fk_sub *s);

void fk_event_clear(fk_event *ev); /* frees ev->data; accepts a zeroed event */

/* Detaches and frees; the process keeps running. Accepts NULL. Not concurrently with
 * fk_sub_next on the same sub. */
void fk_sub_free(fk_sub *s);

/* SendSignal: `sig` is SIGKILL or SIGTERM (others: FK_EINVAL), sent to the pid only. Also stops
 * output forwarding so the end event comes right after reaping even if descendants hold the
 * pipes. FK_ENOTFOUND ("process with pid N not found") if not live. */
int fk_proc_signal(fk_rt *rt, const char *box_id, uint32_t pid, int sig, fk_err *err);

/* SendInput / CloseStdin. FK_ENOTFOUND if not live; FK_ECLOSED if stdin is not an open pipe.
 * A write waits for the child to read (pipe or terminal full), like envd, but not for ever:
 * it gives up (FK_EIO) when the server stops or `cancel(cls)` says so (checked every 200 ms;
 * NULL: never), and (FK_ETIMEOUT) when the child took no byte for 60 s. It does not hold the
 * lock fk_proc_resize and CloseStdin take while it waits. */
int fk_proc_write_stdin_until(fk_rt *rt, const char *box_id, uint32_t pid, const void *data,
                              size_t len, int (*cancel)(void *), void *cls, fk_err *err);
int fk_proc_write_stdin(fk_rt *rt, const char *box_id, uint32_t pid, const void *data, size_t len,
                        fk_err *err);
int fk_proc_close_stdin(fk_rt *rt, const char *box_id, uint32_t pid, fk_err *err);

/* Update (envd process.Process/Update): sets a PTY process's terminal size (the process gets
 * SIGWINCH). FK_ENOTFOUND if not live; FK_ECLOSED ("tty not assigned to process") without a
 * terminal. */
int fk_proc_resize(fk_rt *rt, const char *box_id, uint32_t pid, uint16_t cols, uint16_t rows,
                   fk_err *err);

typedef struct fk_proc_info {
	uint32_t pid;
	char *tag; /* NULL if none */
	char *cmd;
	char **args; /* n_args strings */
	size_t n_args;
	char **env_keys; /* the request envs, as given */
	char **env_values;
	size_t n_envs;
	char *cwd; /* as requested; NULL if none */
} fk_proc_info;

/* List: live processes of the box (not retained exits), ordered by pid. Caller frees the array
 * with fk_proc_info_free(). */
int fk_proc_list(fk_rt *rt, const char *box_id, fk_proc_info **out, size_t *n_out, fk_err *err);
void fk_proc_info_free(fk_proc_info *infos, size_t n);

/* ---------------------------------------------------------------- files */

/* Paths: absolute inside the box, or "~", "~/x" or relative — resolved against the user's home.
 * All operations run as root inside the box's view (chroot to the box root): symlinks are followed
 * inside the box and can never reach the host's files. `user` NULL = box default user; it owns
 * created parents/files; unknown -> FK_ENOUSER. */

typedef enum fk_file_type {
	FK_FT_FILE = 1,
	FK_FT_DIR = 2,
	FK_FT_SYMLINK = 3,
	FK_FT_OTHER = 4,
} fk_file_type;

typedef struct fk_entry {
	char *name; /* base name */
	char *path; /* absolute path inside the box */
	fk_file_type type;
	int64_t size;
	uint32_t mode;        /* raw st_mode (type bits included); envd sends mode & 0777 */
	char permissions[11]; /* "-rw-r--r--", "drwxr-xr-x", "lrwxrwxrwx" */
	char *owner;          /* user name, or the uid as digits */
	char *group;          /* group name, or the gid as digits */
	int64_t mtime_sec;
	int32_t mtime_nsec;
	char *symlink_target; /* NULL unless a symlink: where it leads, absolute, every symlink on
	                         the way resolved inside the box (envd) */
	/* a symlink's: the type (FK_FT_FILE, FK_FT_DIR, FK_FT_OTHER) and st_mode of where it
	 * leads; 0 when it leads nowhere or into /proc (never looked at there) */
	fk_file_type target_type;
	uint32_t target_mode;
	/* envd's metadata: the user.e2b.<key> extended attributes (X-Metadata-<key> of uploads),
	 * n_meta parallel keys and values */
	char **meta_keys;
	char **meta_values;
	size_t n_meta;
} fk_entry;

void fk_entry_clear(fk_entry *e);            /* frees the strings; accepts zeroed */
void fk_entries_free(fk_entry *e, size_t n); /* clears each and frees the array */

typedef struct fk_writer fk_writer;

/* The absolute, normalised path inside the box that `path` names for `user` (what
 * fk_file_write_open reports in *abs_path_out), without touching the file. Caller frees.
 * FK_ENOUSER, FK_ENOTFOUND (no box). */
int fk_file_resolve(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    char **abs_path_out, fk_err *err);

/* Upload: creates missing parents (0755, chowned to user), refuses a directory (FK_EISDIR
 * "path is a directory: <p>"), a parent that is a file -> FK_ENOTDIR; chowns an existing file to
 * the user BEFORE truncating it; new files 0644 owned by the user. The final path (after
 * resolution, inside the box) goes to *abs_path_out if non-NULL (caller frees with free()).
 * Writes go straight to the opened fd (fast). Caller finishes with fk_writer_close(). */
int fk_file_write_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                       fk_writer **out, char **abs_path_out, fk_err *err);
int fk_writer_write(fk_writer *w, const void *data, size_t len, fk_err *err); /* FK_ENOSPC... */
/* Sets xattr user.e2b.<key> = value on the file (X-Metadata-*); before or after writes. Opening
 * the writer removed the file's earlier user.e2b.* attributes (an upload replaces the set). */
int fk_writer_set_meta(fk_writer *w, const char *key, const char *value, fk_err *err);
/* Flushes and closes; frees `w` whatever the result. Accepts NULL. */
int fk_writer_close(fk_writer *w, fk_err *err);

/* Download: opens the file (following symlinks inside the box) read-only; *fd_out is the caller's
 * (O_CLOEXEC; hand it to MHD_create_response_from_fd), *size_out its size. FK_ENOTFOUND
 * "path '<p>' does not exist", FK_EISDIR "path '<p>' is a directory". */
int fk_file_read_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                      int *fd_out, uint64_t *size_out, fk_err *err);

/* Stat (final component not followed, so symlinks report FK_FT_SYMLINK + target). */
int fk_file_stat(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                 fk_err *err);

/* ListDir: entries under `path` (a symlinked dir is followed) down to `depth` levels (0 -> 1),
 * sorted by path. FK_ENOTFOUND, FK_ENOTDIR. Caller frees with fk_entries_free(). */
int fk_file_list(fk_rt *rt, const char *box_id, const char *path, const char *user, unsigned depth,
                 fk_entry **out, size_t *n_out, fk_err *err);

/* MakeDir with parents (chowned to user). FK_EEXIST if a directory exists, FK_ENOTDIR if a file
 * exists there. `out` (may be NULL) receives the new entry. */
int fk_file_mkdir(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                  fk_err *err);

/* Remove recursively; a missing path is not an error. */
int fk_file_remove(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_err *err);

/* Move (rename; creates destination parents chowned to user). FK_ENOTFOUND if source missing.
 * `out` (may be NULL) receives the destination entry. */
int fk_file_move(fk_rt *rt, const char *box_id, const char *src, const char *dst, const char *user,
                 fk_entry *out, fk_err *err);

#endif /* FAKE_E2B_RUNTIME_H */
