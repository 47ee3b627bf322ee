/*
 * fake-e2b/runtime/proc_int.h — processes' insides, shared by the files of processes, each
 * using only those below it: proc.c (the table: lookup by pid or tag, signals, stdin, the
 * listing, box-wide stops) and proc_spawn.c (a process started in its box) over proc_pump.c
 * (references, subscribers and the output pump: envd's multiplexer).
 */
#ifndef FAKE_E2B_PROC_INT_H
#define FAKE_E2B_PROC_INT_H

#include "backend.h"
#include "procs.h"

#include <pthread.h>
#include <stdbool.h>

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
	pthread_mutex_t in_lock;
	int in_fd;        /* stdin's pipe, or the terminal's master for a PTY process */
	bool pty;         /* a PTY process: output and input go through the terminal */
	bool end_on_exit; /* the runtime's fk_rt_options.end_on_exit */
	bool stop;        /* stop forwarding (SendSignal kill, reboot, destroy) */
	bool ended;       /* end event exists */
	bool reaped;
	int wait_status;
	int64_t end_ms;
	fk_sub *subs;
	pthread_t thread;
	bool thread_started;
	bool joined;

	fk_proc_info info;

	/* for the end hook (fk_rt_set_proc_end_hook), set at the start */
	fk_rt *rt;
	char box_id[FK_BOX_ID_MAX + 1];
	char oom_dir[600];     /* the box's memory cgroup (fk__cg_box_oom_file); "" none */
	const char *oom_file;  /* static */
	uint64_t out_bytes[2]; /* stdout (a PTY's terminal output), stderr: read by the pump */
};

/* ---- proc_pump.c ---- */
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
/* Closes *fd if open and sets it to -1. */
void fk__proc_close_fd(int *fd);
/* Under b->plock: unlinks the box's retained exits whose 30 s are over into *dead, for
 * fk__proc_unref_list once the lock is dropped. */
void fk__proc_purge_retained(fk_box *b, fk_proc **dead);
void fk__proc_unref_list(fk_proc *l);

#endif /* FAKE_E2B_PROC_INT_H */
