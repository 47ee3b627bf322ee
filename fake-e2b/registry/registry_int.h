/*
 * fake-e2b/registry/registry_int.h: the registry's insides, shared by
 * sandbox.c, reaper.c and shapes.c only.
 */
#ifndef FK_REGISTRY_INT_H
#define FK_REGISTRY_INT_H

#include "registry.h"

/* A pending Connect-Timeout-Ms kill of a process whose stream is gone. */
typedef struct fk_kill_timer {
	struct fk_kill_timer *next;
	char id[FK_ID_LEN + 1];
	fk_proc *proc;
	int64_t deadline_ms;
} fk_kill_timer;

struct fk_registry {
	fk_rt *rt;
	unsigned char seed[32];
	fk_kill_timer *timers; /* under lock */
	pthread_mutex_t lock;
	fk_sandbox *list;
	int stopping;
};

#endif
