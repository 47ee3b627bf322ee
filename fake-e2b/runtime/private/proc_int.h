/*
 * fake-e2b/runtime/private/proc_int.h — processes' insides, shared by the files of processes, each
 * using only those below it: proc.c (the table: lookup by pid or tag, signals, stdin, the
 * listing, box-wide stops) and proc_spawn.c (a process started in its box) over proc_shim.c
 * (live restore: a kept server's per-process shims, and the processes they hold adopted) over
 * proc_pump.c (references, subscribers and the output pump: envd's multiplexer).
 */
#ifndef FAKE_E2B_PROC_INT_H
#define FAKE_E2B_PROC_INT_H

#include "backend.h"
#include "procs.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/wait.h>

typedef struct chunk {
	struct chunk *next;
	fk_event_type type;
	size_t len;
	unsigned char data[];
} chunk;

struct fk_sub {
	struct fk_proc *p;
	struct fk_sub *next;
	chunk *head, *tail;
	size_t bytes;
	bool end_queued;
	bool end_taken;
	bool wake;
};

struct fk_proc {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* events queued, space freed, stop requested */
	int refs;
	struct fk_proc *next; /* box->procs, under box->plock */
	fk_box *box;          /* weak: only for unlinking, under box->plock */

	uint32_t pid;
	pid_t host_pid;
	int pidfd;
	int out_fd, err_fd, wake_fd;
	pthread_mutex_t in_lock; /* in_fd; never held while a write waits for room */
	pthread_mutex_t wr_lock; /* one SendInput's writes at a time (proc.c) */
	int in_fd;               /* stdin's pipe, or the terminal's master for a PTY process */
	bool pty;                /* a PTY process: output and input go through the terminal */
	bool end_on_exit;        /* the runtime's fk_rt_options.end_on_exit */
	bool stop;               /* stop forwarding (SendSignal kill, reboot, destroy) */
	bool ended;              /* end event exists */
	bool reaped;
	int wait_status;
	int64_t end_ms;
	fk_sub *subs;
	pthread_t thread;
	bool thread_started;
	bool joined;
	bool slot; /* holds one of the runtime's process slots (fk__proc_slot_take) */

	fk_proc_info info;

	/* for the end hook (fk_rt_set_proc_end_hook), set at the start */
	fk_rt *rt;
	char box_id[FK_BOX_ID_MAX + 1];
	char oom_dir[600];     /* the box's memory cgroup (fk__cg_box_oom_file); "" none */
	const char *oom_file;  /* static */
	uint64_t out_bytes[2]; /* stdout (a PTY's terminal output), stderr: read by the pump */

	/* live restore (proc_shim.c): the connection to the process's shim, its parent, which
	 * reports its exit; an adopted process's exit its hello already told */
	int shim_fd;
	bool shim_exited;
	int shim_status;
};

/* ---- proc_shim.c: a live-restore runtime's process shims ---- */
/* waitid()'s idtype for a pidfd (Linux 5.4), for a libc whose <sys/wait.h> lacks it. */
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define SHIM_MAGIC    0x666b5348u /* "fkSH" */
#define SHIM_VERSION  1u
#define SHIM_INFO_MAX (64 * 1024) /* what Process/List shows of it, at most */
#define SHIM_HELLO_MS 2000        /* a live shim answers at once */

enum { MSG_HELLO = 1, MSG_EXIT = 2, MSG_SETPID = 3 };
enum { FD_PIDFD = 1, FD_OUT = 2, FD_ERR = 4 };

/* Every message, both ways: fixed size, then `len` bytes of info for a hello. */
typedef struct shim_msg {
	uint32_t magic, type;
	int32_t pid;      /* in-box pid (hello, setpid) */
	int32_t host_pid; /* hello */
	int32_t exited;   /* hello: the process has exited, its status in `status` */
	int32_t status;   /* hello, exit: wait status */
	uint32_t pty;     /* hello */
	uint32_t fds;     /* hello: FD_* sent, in that order */
	uint32_t len;     /* hello: info bytes that follow */
} shim_msg;

typedef struct fk_shim {
	int conn;      /* after fk__shim_fork: the server's end of its connection */
	int listen_fd; /* its socket, <state>/.live/<id>.p/<name> */
	int dirfd;     /* that directory (O_PATH) */
	char name[64];
	int out, err; /* the process's output pipes' reading ends (a terminal's master) */
	bool pty;
	int helper_r, helper_w; /* the spawn helper reports the process's host pid here too */
	fk_cg_join cg; /* <cgroup v2 of the runtime>/.shims, where the shim goes (v2 -1: none) */
	unsigned char *info; /* Process/List's view of it, handed back to a later server */
	size_t info_len;
} fk_shim;
/* Before the start: its socket made and bound, its info encoded. 0 or FK_EIO. */
int fk__shim_prepare(fk_box *b, fk_proc *p, fk_shim *sh, fk_err *err);
void fk__shim_done(fk_shim *sh);
/* Forks the shim (twice: it is no child of ours), which keeps the fds of `keep` for the start,
 * runs spawn(arg) (the helper that clones the process, as the shim's child) and then holds the
 * process. 0 (sh->conn set) or -1 with errno. */
int fk__shim_fork(fk_shim *sh, const int *keep, int n_keep, pid_t (*spawn)(void *), void *arg);
/* Once the start succeeded: the process's pidfd from the shim, its in-box pid told to it. */
int fk__shim_started(fk_proc *p, fk_shim *sh);

/* ---- proc_pump.c ---- */
fk_proc *fk__proc_alloc(void); /* refs 1, no fds but its wake-up eventfd */
/* Starts p's reader thread (or, failing that, kills it and reads it to its end). */
int fk__proc_run_reader(fk_proc *p);
/* The end hook's fields of p (box b's process). */
void fk__proc_set_box(fk_proc *p, fk_box *b);
/* Live restore: the process's wait status, as its shim reports it (blocks until it exits). */
int fk__shim_wait_exit(fk_proc *p);
/* The output pump of a process (its own thread): reads its pipes, hands each chunk to its
 * subscribers, reaps it, queues its end event. */
void *fk__proc_reader_main(void *arg);
/* Stop forwarding (the end event comes right after reaping), and SIGKILL/other signals to the
 * process (0, or -1 with errno). */
void fk__proc_stop(fk_proc *p);
int fk__proc_kill(fk_proc *p, int sig);
/* A process's listing entry: filled from a spec (0, -1 out of memory), freed. */
int fk__proc_info_fill(fk_proc_info *in, const fk_proc_spec *spec);
void fk__proc_info_clear(fk_proc_info *in);
/* A slot of the runtime's started processes, each of which holds server fds (its pipes,
 * pidfd, wake-up, a shim's socket) and a thread while it runs: at most the fd limit / 16 run
 * at once, so that Starts cannot take the fds every connection needs. 0, or FK_ENOMEM
 * (resource_exhausted) past it. The reader gives it back at the process's end. */
int fk__proc_slot_take(fk_rt *rt, fk_err *err);
void fk__proc_slot_give(fk_rt *rt);
/* Closes *fd if open and sets it to -1. */
void fk__proc_close_fd(int *fd);
/* Under b->plock: unlinks the box's retained exits whose 30 s are over into *dead, for
 * fk__proc_unref_list once the lock is dropped. */
void fk__proc_purge_retained(fk_box *b, fk_proc **dead);
void fk__proc_unref_list(fk_proc *l);

#endif /* FAKE_E2B_PROC_INT_H */
