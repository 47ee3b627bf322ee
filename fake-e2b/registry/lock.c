/*
 * fake-e2b/registry/lock.c: the registry's lock and what it is read under (registry.h). The
 * lowest floor of the sandbox table: pwatch.c, sblogs.c and sandbox.c take the lock through
 * these, and this file calls nothing of theirs.
 */
#include "registry_int.h"

void fk_registry_lock(fk_registry *g)
{
	pthread_mutex_lock(&g->lock);
}

void fk_registry_unlock(fk_registry *g)
{
	pthread_mutex_unlock(&g->lock);
}

int fk_registry_stopping(fk_registry *g)
{
	pthread_mutex_lock(&g->lock);
	int s = g->stopping;
	pthread_mutex_unlock(&g->lock);
	return s;
}

fk_rt *fk_registry_rt(fk_registry *g)
{
	return g->rt;
}
