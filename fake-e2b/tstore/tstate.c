/*
 * fake-e2b/tstore/tstate.c: a kept server's templates as records of the state directory
 * (state.h, kind "templates"): each built template or snapshot with its names, tags, counts and
 * builds (status, limits, logs, and for a ready one what its sandboxes boot with: its layer
 * under <state>/.templates/<buildID>), written after each change; store.c reads them back at
 * start. Below store.c: it reads the store's structs (builds_int.h) and calls nothing of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builds_int.h"
#include "state.h"

#define KIND "templates"

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

json_t *fk__tboot_json(const fk_tboot *b)
{
	json_t *envs = json_array();
	for (size_t i = 0; envs && i < b->n_envs; i++)
		json_array_append_new(envs, json_string(b->envs[i]));
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I}", "templateID",
	                 str_or_null(b->template_id), "base", str_or_null(b->base), "layer",
	                 str_or_null(b->layer), "user", str_or_null(b->user), "workdir",
	                 str_or_null(b->workdir), "envs", envs ? envs : json_array(), "startCmd",
	                 str_or_null(b->start_cmd), "readyCmd", str_or_null(b->ready_cmd), "alias",
	                 str_or_null(b->alias), "cpuCount", (json_int_t)b->cpu_count, "memoryMB",
	                 (json_int_t)b->memory_mb);
}

/* The record of t (under s->lock). */
static json_t *template_record(const struct fk_ttemplate *t)
{
	json_t *builds = json_array();
	for (const fk_tbuild *b = t->builds; builds && b; b = b->next) {
		json_t *j = json_pack(
		    "{s:s,s:i,s:O,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "id", b->id, "status",
		    b->status, "logs", b->logs ? b->logs : json_array(), "reason",
		    str_or_null(b->reason), "reasonStep", str_or_null(b->reason_step), "createdNs",
		    (json_int_t)b->created_ns, "updatedNs", (json_int_t)b->updated_ns, "finishedNs",
		    (json_int_t)b->finished_ns, "cpuCount", (json_int_t)b->cpu_count, "memoryMB",
		    (json_int_t)b->memory_mb, "diskMB", (json_int_t)b->disk_mb);
		if (j && b->status == FK_TB_READY)
			json_object_set_new(j, "boot", fk__tboot_json(&b->boot));
		if (!j || json_array_append_new(builds, j) < 0) {
			json_decref(builds);
			return NULL;
		}
	}
	if (!builds)
		return NULL;
	return json_pack("{s:s,s:s,s:o,s:O,s:I,s:I,s:I,s:I,s:i,s:b,s:o,s:b}", "id", t->id, "name",
	                 t->name, "builds", builds, "tags", t->tags ? t->tags : json_object(),
	                 "createdNs", (json_int_t)t->created_ns, "updatedNs",
	                 (json_int_t)t->updated_ns, "lastSpawnedNs", (json_int_t)t->last_spawned_ns,
	                 "spawnCount", (json_int_t)t->spawn_count, "buildCount",
	                 (int)t->build_count, "public", t->is_public, "snapshotOf",
	                 str_or_null(t->snapshot_of), "named", t->named);
}

void fk__tstore_persist(fk_tstore *s, const char *ref)
{
	if (!s->state || !ref)
		return;
	char ident[129];
	size_t n = strcspn(ref, ":");
	if (n == 0 || n >= sizeof(ident))
		return;
	memcpy(ident, ref, n);
	ident[n] = '\0';
	pthread_mutex_lock(&s->rec_lock);
	pthread_mutex_lock(&s->lock);
	struct fk_ttemplate *t = s->list;
	while (t && !((strlen(t->id) == n && !strncmp(t->id, ident, n)) ||
	              (strlen(t->name) == n && !strncmp(t->name, ident, n))))
		t = t->next;
	char id[21] = "";
	json_t *rec = NULL;
	if (t) {
		memcpy(id, t->id, sizeof(id));
		rec = template_record(t);
	}
	pthread_mutex_unlock(&s->lock);
	char eb[64];
	if (t && (!rec || fk_state_put(s->state, KIND, id, rec) < 0))
		fprintf(stderr, "fake-e2b: state: cannot write template %s's record: %s\n", id,
		        rec ? strerror_r(errno, eb, sizeof(eb)) : "out of memory");
	json_decref(rec);
	pthread_mutex_unlock(&s->rec_lock);
}

void fk__tstore_forget(fk_tstore *s, const char *template_id)
{
	if (!s->state)
		return;
	pthread_mutex_lock(&s->rec_lock);
	char eb[64];
	if (fk_state_del(s->state, KIND, template_id) < 0)
		fprintf(stderr, "fake-e2b: state: cannot remove template %s's record: %s\n",
		        template_id, strerror_r(errno, eb, sizeof(eb)));
	pthread_mutex_unlock(&s->rec_lock);
}
