/*
 * fake-e2b/testkit/reqlog.c: see reqlog.h.
 */
#include "reqlog.h"

#include <pthread.h>
#include <stdlib.h>

#define PENDING_KEY "_fk_pending" /* never shown: the list skips entries that have it */

struct fk_reqlog {
	pthread_mutex_t lock;
	json_t *log; /* array */
};

fk_reqlog *fk_reqlog_new(void)
{
	fk_reqlog *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	if (!(l->log = json_array())) {
		pthread_mutex_destroy(&l->lock);
		free(l);
		return NULL;
	}
	return l;
}

void fk_reqlog_free(fk_reqlog *l)
{
	if (!l)
		return;
	json_decref(l->log);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

json_t *fk_reqlog_begin(fk_reqlog *l, json_t *entry)
{
	if (!entry)
		return NULL;
	json_object_set_new(entry, PENDING_KEY, json_true());
	pthread_mutex_lock(&l->lock);
	if (json_array_size(l->log) >= FK_MAX_LOG)
		json_array_remove(l->log, 0);
	json_array_append(l->log, entry);
	pthread_mutex_unlock(&l->lock);
	return entry; /* the caller's reference */
}

void fk_reqlog_ready(fk_reqlog *l, json_t *entry, json_t *fields)
{
	pthread_mutex_lock(&l->lock);
	json_object_update(entry, fields);
	json_object_del(entry, PENDING_KEY);
	pthread_mutex_unlock(&l->lock);
	json_decref(fields);
}

void fk_reqlog_finish(fk_reqlog *l, json_t *entry, long ms)
{
	/* under the lock: the log may be cleared (and the entry freed) by another thread */
	pthread_mutex_lock(&l->lock);
	json_object_set_new(entry, "duration_ms", json_integer(ms));
	json_decref(entry);
	pthread_mutex_unlock(&l->lock);
}

json_t *fk_reqlog_list(fk_reqlog *l)
{
	json_t *out = json_array(), *e;
	size_t i;
	pthread_mutex_lock(&l->lock);
	json_array_foreach(l->log, i, e)
	{
		if (!json_object_get(e, PENDING_KEY))
			json_array_append_new(out, json_deep_copy(e));
	}
	pthread_mutex_unlock(&l->lock);
	return out;
}

void fk_reqlog_clear(fk_reqlog *l)
{
	pthread_mutex_lock(&l->lock);
	json_array_clear(l->log);
	pthread_mutex_unlock(&l->lock);
}
