/*
 * fake-e2b/registry/pwatch.c: a sandbox's polling directory watchers (envd's CreateWatcher,
 * GetWatcherEvents, RemoveWatcher, api/envd/filesystem_watch.c): each a runtime directory
 * watch (dirwatch.h, whose per-box and per-server budgets bound them) with envd's id, held by
 * the sandbox until removed or the sandbox goes (kept across pause, as envd's are).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dirwatch.h"
#include "registry_int.h"

static void pwatch_free(fk_pwatch *pw)
{
	if (!pw)
		return;
	for (size_t i = 0; i < pw->n_ahead; i++)
		fk_dirwatch_event_clear(&pw->ahead[i]);
	free(pw->ahead);
	pthread_mutex_destroy(&pw->dlock);
	fk_dirwatch_free(pw->dw);
	free(pw->user);
	free(pw);
}

int fk_sandbox_pwatch_add(fk_registry *g, fk_sandbox *sb, fk_dirwatch *dw, const char *user,
                          bool include_entry, char id_out[FK_PWATCH_ID_LEN + 1])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[FK_PWATCH_ID_LEN - 1];
	fk_pwatch *pw = calloc(1, sizeof(*pw));
	if (!pw || getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd) ||
	    (user && !(pw->user = strdup(user)))) {
		free(pw ? pw->user : NULL);
		free(pw);
		return -1;
	}
	pthread_mutex_init(&pw->dlock, NULL);
	pw->id[0] = 'w'; /* envd: "w" + a generated id */
	for (size_t i = 0; i < sizeof(rnd); i++)
		pw->id[1 + i] = alphabet[rnd[i] % 36];
	pw->dw = dw;
	pw->include_entry = include_entry;
	fk_registry_lock(g);
	int ok = !sb->deleted;
	if (ok) {
		pw->next = sb->pwatches;
		sb->pwatches = pw;
		memcpy(id_out, pw->id, FK_PWATCH_ID_LEN + 1);
	}
	fk_registry_unlock(g);
	if (!ok) {
		pw->dw = NULL; /* the caller's still */
		pwatch_free(pw);
	}
	return ok ? 0 : -1;
}

fk_pwatch *fk_sandbox_pwatch_take(fk_registry *g, fk_sandbox *sb, const char *id, int *busy)
{
	*busy = 0;
	fk_registry_lock(g);
	fk_pwatch *pw = sb->pwatches;
	while (pw && strcmp(pw->id, id))
		pw = pw->next;
	if (pw && pw->busy) {
		*busy = 1;
		pw = NULL;
	} else if (pw) {
		pw->busy = 1;
	}
	fk_registry_unlock(g);
	return pw;
}

void fk_sandbox_pwatch_put(fk_registry *g, fk_pwatch *pw)
{
	fk_registry_lock(g);
	pw->busy = 0;
	int gone = pw->removed && !pw->catching;
	fk_registry_unlock(g);
	if (gone)
		pwatch_free(pw);
}

int fk_sandbox_pwatch_next(fk_pwatch *pw, fk_dirwatch_event *ev)
{
	pthread_mutex_lock(&pw->dlock);
	int rc = 0;
	if (pw->n_ahead) {
		*ev = pw->ahead[0];
		pw->ahead_bytes -= strlen(ev->name) + strlen(ev->path);
		memmove(pw->ahead, pw->ahead + 1, --pw->n_ahead * sizeof(*pw->ahead));
	} else {
		rc = fk_dirwatch_next(pw->dw, ev, 0);
	}
	pthread_mutex_unlock(&pw->dlock);
	return rc;
}

/* Reads `pw`'s watch into its read-ahead queue until nothing is left or the queue is full. */
static void read_ahead(fk_pwatch *pw)
{
	pthread_mutex_lock(&pw->dlock);
	while (pw->ahead_bytes < FK_PWATCH_AHEAD_BYTES) {
		if (pw->n_ahead == pw->cap_ahead) {
			size_t cap = pw->cap_ahead ? pw->cap_ahead * 2 : 16;
			fk_dirwatch_event *a = realloc(pw->ahead, cap * sizeof(*a));
			if (!a)
				break;
			pw->ahead = a;
			pw->cap_ahead = cap;
		}
		fk_dirwatch_event ev;
		if (fk_dirwatch_next(pw->dw, &ev, 0) < 0)
			break;
		pw->ahead_bytes += strlen(ev.name) + strlen(ev.path);
		pw->ahead[pw->n_ahead++] = ev;
	}
	pthread_mutex_unlock(&pw->dlock);
}

void fk_sandbox_pwatches_catch_up(fk_registry *g, fk_sandbox *sb)
{
	fk_pwatch *held[FK_DIRWATCH_BOX_MAX];
	size_t n = 0;
	fk_registry_lock(g);
	for (fk_pwatch *pw = sb->pwatches; pw && n < FK_DIRWATCH_BOX_MAX; pw = pw->next) {
		pw->catching++;
		held[n++] = pw;
	}
	fk_registry_unlock(g);
	for (size_t i = 0; i < n; i++)
		read_ahead(held[i]);
	fk_pwatch *free_now[FK_DIRWATCH_BOX_MAX];
	size_t n_free = 0;
	fk_registry_lock(g);
	for (size_t i = 0; i < n; i++)
		if (--held[i]->catching == 0 && held[i]->removed && !held[i]->busy)
			free_now[n_free++] = held[i];
	fk_registry_unlock(g);
	for (size_t i = 0; i < n_free; i++)
		pwatch_free(free_now[i]);
}

int fk_sandbox_pwatch_remove(fk_registry *g, fk_sandbox *sb, const char *id)
{
	fk_registry_lock(g);
	fk_pwatch **pp = &sb->pwatches;
	while (*pp && strcmp((*pp)->id, id))
		pp = &(*pp)->next;
	fk_pwatch *pw = *pp;
	int now = 0;
	if (pw) {
		*pp = pw->next;
		pw->removed = 1;
		now = !pw->busy && !pw->catching; /* else its last holder frees it */
	}
	fk_registry_unlock(g);
	if (now)
		pwatch_free(pw);
	return pw ? 0 : -1;
}

void fk__sandbox_pwatches_drop(fk_registry *g, fk_sandbox *sb)
{
	fk_pwatch *free_now = NULL;
	fk_registry_lock(g);
	while (sb->pwatches) {
		fk_pwatch *pw = sb->pwatches;
		sb->pwatches = pw->next;
		pw->removed = 1;
		if (!pw->busy && !pw->catching) {
			pw->next = free_now;
			free_now = pw;
		}
	}
	fk_registry_unlock(g);
	while (free_now) {
		fk_pwatch *pw = free_now;
		free_now = pw->next;
		pwatch_free(pw);
	}
}
