/*
 * fake-e2b/admin/reqlog.c: see reqlog.h.
 */
#define _GNU_SOURCE
#include "reqlog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fk_reqlog_entry {
	fk_reqlog_entry *prev, *next; /* in arrival order while in the log */
	int in_log, held;             /* the log's and the caller's reference */
	char *text;                   /* compact JSON object; NULL while pending */
	size_t len;
	long duration_ms;
};

struct fk_reqlog {
	pthread_mutex_t lock;
	fk_reqlog_entry *head, *tail;
	size_t n, bytes, max_bytes;
};

fk_reqlog *fk_reqlog_new(size_t max_bytes)
{
	fk_reqlog *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	l->max_bytes = max_bytes ? max_bytes : FK_LOG_BYTES_DEFAULT;
	if (l->max_bytes < FK_LOG_ENTRY_MAX)
		l->max_bytes = FK_LOG_ENTRY_MAX; /* room for the largest entry */
	return l;
}

static void entry_put(fk_reqlog_entry *e)
{
	if (!e->in_log && !e->held) {
		free(e->text);
		free(e);
	}
}

/* Take e out of the log (l->lock held). */
static void unlink_entry(fk_reqlog *l, fk_reqlog_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
	e->in_log = 0;
	l->n--;
	l->bytes -= e->len;
	entry_put(e);
}

static void clear_locked(fk_reqlog *l)
{
	while (l->head)
		unlink_entry(l, l->head);
}

void fk_reqlog_free(fk_reqlog *l)
{
	if (!l)
		return;
	clear_locked(l);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

fk_reqlog_entry *fk_reqlog_begin(fk_reqlog *l)
{
	fk_reqlog_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->in_log = e->held = 1;
	pthread_mutex_lock(&l->lock);
	if (l->n >= FK_MAX_LOG)
		unlink_entry(l, l->head);
	e->prev = l->tail;
	if (l->tail)
		l->tail->next = e;
	else
		l->head = e;
	l->tail = e;
	l->n++;
	pthread_mutex_unlock(&l->lock);
	return e;
}

/* fields as text within FK_LOG_ENTRY_MAX: the body goes first, then the query and headers,
 * then the path, each named in "truncated". */
static char *entry_text(json_t *fields)
{
	static const char *const drop[] = {"body", "query", "headers", "path"};
	char *text = json_dumps(fields, JSON_COMPACT);
	json_t *gone = NULL;
	for (size_t i = 0; text && strlen(text) > FK_LOG_ENTRY_MAX && i < 4; i++) {
		if (!json_object_get(fields, drop[i]))
			continue;
		if (!gone)
			gone = json_array();
		json_object_del(fields, drop[i]);
		json_array_append_new(gone, json_string(drop[i]));
		json_object_set(fields, "truncated", gone);
		free(text);
		text = json_dumps(fields, JSON_COMPACT);
	}
	json_decref(gone);
	if (text && strlen(text) > FK_LOG_ENTRY_MAX) { /* the method and status alone: not ours */
		free(text);
		text = strdup("{\"truncated\":[\"*\"]}");
	}
	return text;
}

void fk_reqlog_ready(fk_reqlog *l, fk_reqlog_entry *e, json_t *fields)
{
	long ms = (long)json_integer_value(json_object_get(fields, "duration_ms"));
	json_object_del(fields, "duration_ms"); /* listed last, from e->duration_ms */
	char *text = fields ? entry_text(fields) : NULL;
	json_decref(fields);
	if (!e) {
		free(text);
		return;
	}
	pthread_mutex_lock(&l->lock);
	if (!e->in_log || e->text || !text) { /* dropped or cleared meanwhile: nothing to show */
		free(text);
		if (e->in_log && !e->text)
			unlink_entry(l, e); /* out of memory: the entry would never show */
		pthread_mutex_unlock(&l->lock);
		return;
	}
	e->text = text;
	e->len = strlen(text);
	e->duration_ms = ms;
	l->bytes += e->len;
	while (l->bytes > l->max_bytes && l->head)
		unlink_entry(l, l->head);
	pthread_mutex_unlock(&l->lock);
}

void fk_reqlog_finish(fk_reqlog *l, fk_reqlog_entry *e, long ms)
{
	if (!e)
		return;
	pthread_mutex_lock(&l->lock);
	e->duration_ms = ms;
	e->held = 0;
	entry_put(e);
	pthread_mutex_unlock(&l->lock);
}

char *fk_reqlog_list_text(fk_reqlog *l, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return NULL;
	int first = 1;
	fputc('[', f);
	pthread_mutex_lock(&l->lock);
	for (fk_reqlog_entry *e = l->head; e; e = e->next) {
		if (!e->text)
			continue;
		if (!first)
			fputc(',', f);
		first = 0;
		/* the text less its closing brace, then duration_ms */
		fwrite(e->text, 1, e->len - 1, f);
		fprintf(f, "%s\"duration_ms\":%ld}", e->len > 2 ? "," : "", e->duration_ms);
	}
	pthread_mutex_unlock(&l->lock);
	fputc(']', f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

void fk_reqlog_clear(fk_reqlog *l)
{
	pthread_mutex_lock(&l->lock);
	clear_locked(l);
	pthread_mutex_unlock(&l->lock);
}
