/*
 * fake-e2b/runtime/private/procs.h — what the lifecycle asks of a box's processes (proc.c,
 * proc_pump.c) when the box stops: stop forwarding, signal them all, release them; and, adopting a
 * box, take its processes back.
 */
#ifndef FAKE_E2B_PROCS_H
#define FAKE_E2B_PROCS_H

#include "runtime_int.h"

void fk__box_procs_stop(fk_box *b);            /* stop forwarding output of every process */
void fk__box_procs_release(fk_box *b);         /* destroy: wait for end events, drop refs */
void fk__box_procs_signal(fk_box *b, int sig); /* every unreaped process (no-init backends) */
/* Live restore, after a box is adopted (proc_shim.c): the processes its shims still hold back
 * in its table, their readers started (Process/List, Connect, SendSignal work on them). */
void fk__procs_adopt(fk_box *b);
/* A live runtime whose server is its PID namespace's init or a child subreaper, whom exited
 * shims are reparented to: a thread (one per process) that reaps them (proc_shim.c). */
void fk__shim_reaper_start(void);

#endif /* FAKE_E2B_PROCS_H */
