/*
 * fake-e2b/tstore/snapshots.c: E2B's snapshots in the template store (builds.h). A snapshot is
 * a template (E2B's "snapshot template"): one ready build per snapshot, whose boot is the
 * sandbox's template's with the sandbox's files as its layer (fk_box_snapshot), so
 * Sandbox.create(snapshotID) boots from it like from any template and DELETE /templates/{id}
 * removes it. Also: template deletion, and the throwaway layers of forks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builds_int.h"
#include "clock.h"
#include "template.h"

/* SnapshotInfo of (template, tag) (E2B: "<name>:<tag>", or "<templateID>:<tag>" unnamed). */
static json_t *snapshot_info(const fk_ttemplate *t, const char *tag)
{
	char *id = NULL;
	bool named = t->named || !t->snapshot_of; /* a built template's name is its own */
	if (asprintf(&id, "%s:%s", named ? t->name : t->id, tag) < 0)
		return NULL;
	json_t *j = named ? json_pack("{s:s,s:[s]}", "snapshotID", id, "names", t->name)
	                  : json_pack("{s:s,s:[]}", "snapshotID", id, "names");
	free(id);
	return j;
}

/* A snapshot's name "alias[:tag]": its parts in alias and tag (left as they are without a tag),
 * FK_T_OK; FK_T_INVALID with E2B's message for a bad name or tag, or a template fake-e2b
 * serves. */
static int snapshot_name(const char *name, char alias[129], char tag[129], char *msg, size_t cap)
{
	const char *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);
	if (!fk__tstore_name_ok(name, n))
		return fk__tstore_fail(
		    msg, cap, FK_T_INVALID,
		    "Invalid name: use 1 to 128 lower-case letters, digits, '-', '_' "
		    "or '.', then optionally ':' and a tag");
	if (colon && !fk__tstore_tag_ok(colon + 1))
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "Invalid name: invalid tag '%.128s'",
		                       colon + 1);
	memcpy(alias, name, n);
	alias[n] = '\0';
	if (colon)
		snprintf(tag, 129, "%s", colon + 1);
	if (fk_template_find(alias))
		return fk__tstore_fail(msg, cap, FK_T_INVALID,
		                       "Invalid name: '%s' is a template fake-e2b serves", alias);
	return FK_T_OK;
}

/* Under s->lock: the template a snapshot of sandbox_id goes to. E2B: a name already taken
 * gets a new build, tagged, on that template; otherwise a new template (named `alias`, or its
 * templateID without a name). NULL when out of memory. */
static fk_ttemplate *snapshot_template(fk_tstore *s, const char *sandbox_id, const char *alias,
                                       int64_t created_ns)
{
	fk_ttemplate *t = alias ? fk__tstore_find_template(s, alias, strlen(alias)) : NULL;
	if (t)
		return t;
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	fk__tstore_random_id(t->id);
	t->name = strdup(alias ? alias : t->id);
	t->tags = json_object();
	t->snapshot_of = strdup(sandbox_id);
	t->named = alias != NULL;
	t->created_ns = created_ns;
	if (t->name && t->tags && t->snapshot_of) {
		t->next = s->list;
		s->list = t;
		return t;
	}
	free(t->name);
	json_decref(t->tags);
	free(t->snapshot_of);
	free(t);
	return NULL;
}

int fk_tstore_snapshot(fk_tstore *s, const char *sandbox_id, const char *template_ref,
                       const char *name, int (*take)(void *ud, const char *layer_dir, fk_err *err),
                       void *ud, json_t **reply, char *msg, size_t cap)
{
	*reply = NULL;
	char alias[129] = "", tag[129] = "default";
	int rc;
	if (name && (rc = snapshot_name(name, alias, tag, msg, cap)) != FK_T_OK)
		return rc;
	fk_tboot boot;
	if (fk_tstore_resolve(s, template_ref, &boot) < 0)
		return fk__tstore_fail(msg, cap, FK_T_FAILED, "the sandbox's template is gone");
	fk_tbuild *b = calloc(1, sizeof(*b));
	char *layer = NULL;
	if (!b || !(b->logs = json_array()) || !s->layers_dir) {
		free(b);
		fk_tboot_clear(&boot);
		return fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
	}
	fk__tstore_random_uuid(b->id);
	if (asprintf(&layer, "%s/%s", s->layers_dir, b->id) < 0)
		layer = NULL;
	fk_err err = {0};
	int took = layer ? take(ud, layer, &err) : -2;
	if (took < 0) {
		json_decref(b->logs);
		free(b);
		free(layer);
		fk_tboot_clear(&boot);
		return took == -1
		           ? fk__tstore_fail(msg, cap, FK_T_NOTFOUND, "sandbox not running")
		           : fk__tstore_fail(msg, cap,
		                             err.code == FK_ENOSPC ? FK_T_NOSPACE : FK_T_FAILED,
		                             "Error creating snapshot template: %s", err.message);
	}
	free(boot.layer);
	boot.layer = layer;
	b->status = FK_TB_READY;
	b->created_ns = b->updated_ns = b->finished_ns = fk_now_ns();
	b->disk_mb = fk__tstore_tree_mb(layer);
	/* the snapshotted sandbox's limits (E2B's UpsertSnapshot: sbx.VCpu, sbx.RamMB), which are
	 * its template's */
	b->cpu_count = boot.cpu_count;
	b->memory_mb = boot.memory_mb;

	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = snapshot_template(s, sandbox_id, name ? alias : NULL, b->created_ns);
	free(boot.template_id);
	boot.template_id = t ? strdup(t->id) : NULL;
	json_t *tv =
	    t ? json_pack("{s:s,s:o}", "buildID", b->id, "createdAt", json_string("")) : NULL;
	if (!t || !boot.template_id || !tv) {
		pthread_mutex_unlock(&s->lock);
		json_decref(tv);
		fk__tstore_rm_tree(layer);
		fk_tboot_clear(&boot);
		json_decref(b->logs);
		free(b);
		return fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
	}
	char ts[48];
	fk_format_time(ts, sizeof(ts), b->created_ns);
	json_object_set_new(tv, "createdAt", json_string(ts));
	json_object_set_new(t->tags, tag, tv);
	b->boot = boot;
	b->tmpl = t;
	memcpy(b->template_id, t->id, sizeof(b->template_id));
	b->next = t->builds;
	t->builds = b;
	t->build_count++;
	t->updated_ns = b->created_ns;
	*reply = snapshot_info(t, tag);
	char id[21];
	memcpy(id, t->id, sizeof(id));
	pthread_mutex_unlock(&s->lock);
	fk__tstore_persist(s, id);
	return *reply ? FK_T_OK : fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
}

int fk_tstore_snapshots(fk_tstore *s, const char *sandbox_id, const char *name, json_t **reply)
{
	char ident[129] = "";
	const char *tag = NULL;
	if (name) {
		const char *colon = strchr(name, ':');
		size_t n = colon ? (size_t)(colon - name) : strlen(name);
		if (n >= sizeof(ident)) {
			*reply = json_array();
			return *reply ? FK_T_OK : FK_T_FAILED;
		}
		memcpy(ident, name, n);
		ident[n] = '\0';
		tag = colon ? colon + 1 : NULL;
	}
	*reply = json_array();
	if (!*reply)
		return FK_T_FAILED;
	pthread_mutex_lock(&s->lock);
	/* the list is newest first */
	for (fk_ttemplate *t = s->list; t; t = t->next) {
		if (!t->snapshot_of || (sandbox_id && strcmp(sandbox_id, t->snapshot_of)) ||
		    (name && strcmp(ident, t->name) && strcmp(ident, t->id)))
			continue;
		const char *k;
		json_t *v;
		json_object_foreach(t->tags, k, v)
		{
			if (!tag || !strcmp(tag, k))
				json_array_append_new(*reply, snapshot_info(t, k));
		}
	}
	pthread_mutex_unlock(&s->lock);
	return FK_T_OK;
}

int fk_tstore_delete(fk_tstore *s, const char *ref, char *msg, size_t cap)
{
	char ident[129];
	int rc = fk__tstore_ref_ident(ref, ident, msg, cap);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, ident, strlen(ident)), **pp = &s->list;
	while (*pp && *pp != t)
		pp = &(*pp)->next;
	int busy = 0;
	for (fk_tbuild *b = t ? t->builds : NULL; b; b = b->next)
		busy |=
		    b->has_thread && (b->status == FK_TB_WAITING || b->status == FK_TB_BUILDING);
	if (t && !busy)
		*pp = t->next;
	pthread_mutex_unlock(&s->lock);
	if (!t)
		return fk__tstore_fail(msg, cap, FK_T_NOTFOUND, "template '%s' not found", ident);
	if (busy)
		return fk__tstore_fail(msg, cap, FK_T_CONFLICT,
		                       "template '%s' has a build in progress", ident);
	/* unlinked: nobody finds it now; a sandbox made from it has its own copy of the files */
	fk__tstore_forget(s, t->id); /* first: a crash meanwhile leaves layers the sweep removes */
	for (fk_tbuild *b = t->builds; b; b = b->next) {
		if (b->has_thread)
			pthread_join(b->thread, NULL); /* finished: it set the status last */
		fk__tstore_rm_tree(b->boot.layer);
	}
	fk__ttemplate_free(t);
	return FK_T_OK;
}

int fk_tstore_fork_layer(fk_tstore *s, const char *template_ref,
                         int (*take)(void *ud, const char *layer_dir, fk_err *err), void *ud,
                         fk_tboot *out, fk_err *err)
{
	char uuid[37];
	if (fk_tstore_resolve(s, template_ref, out) < 0) {
		snprintf(err->message, sizeof(err->message), "the sandbox's template is gone");
		return -2;
	}
	fk__tstore_random_uuid(uuid);
	char *layer = NULL;
	if (!s->layers_dir || asprintf(&layer, "%s/fork-%s", s->layers_dir, uuid) < 0) {
		fk_tboot_clear(out);
		snprintf(err->message, sizeof(err->message), "out of memory");
		return -2;
	}
	int rc = take(ud, layer, err);
	if (rc < 0) {
		free(layer);
		fk_tboot_clear(out);
		return rc;
	}
	free(out->layer);
	out->layer = layer;
	return 0;
}

void fk_tstore_fork_layer_drop(fk_tboot *boot)
{
	fk__tstore_rm_tree(boot->layer);
	fk_tboot_clear(boot);
}
