/*
 * fake-e2b/registry/restore.c: a kept server's start: its sandboxes' records (records.c) read
 * back, what dead servers left swept (fk_rt_sweep), every sandbox registered again, paused
 * with its files. Above sandbox.c (it registers and discards sandboxes). See registry.h
 * "Keeping sandboxes".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "registry_int.h"
#include "state.h"

/* ---- loading ------------------------------------------------------------------------------- */

static int get_bool(json_t *rec, const char *k)
{
	return json_is_true(json_object_get(rec, k));
}

static int64_t get_int(json_t *rec, const char *k)
{
	return json_integer_value(json_object_get(rec, k));
}

static json_t *get_opt(json_t *rec, const char *k, int (*is)(const json_t *))
{
	json_t *v = json_object_get(rec, k);
	return v && is(v) ? json_deep_copy(v) : NULL;
}

static int is_object(const json_t *v)
{
	return json_is_object(v);
}
static int is_boolean(const json_t *v)
{
	return json_is_boolean(v);
}

/* A string member of at most max bytes copied into out; -1 when absent or longer. */
static int get_str(json_t *rec, const char *k, char *out, size_t max)
{
	const char *s = json_string_value(json_object_get(rec, k));
	if (!s || strlen(s) >= max)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

/* The sandbox a record describes (refs 1, not registered); NULL with why. */
static fk_sandbox *sandbox_of(const char *id, json_t *rec, const char **why)
{
	fk_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		*why = "out of memory";
		return NULL;
	}
	pthread_mutex_init(&sb->op_lock, NULL);
	pthread_mutex_init(&sb->rec_lock, NULL);
	sb->refs = 1;
	const char *state = json_string_value(json_object_get(rec, "state"));
	const char *tpl = json_string_value(json_object_get(rec, "templateID"));
	const char *alias = json_string_value(json_object_get(rec, "alias"));
	if (get_str(rec, "id", sb->id, sizeof(sb->id)) < 0 || strcmp(sb->id, id) ||
	    get_str(rec, "token", sb->token, sizeof(sb->token)) < 0 || strlen(sb->token) != 64 ||
	    get_str(rec, "trafficToken", sb->traffic_token, sizeof(sb->traffic_token)) < 0 ||
	    !state || (strcmp(state, "paused") && strcmp(state, "running")) || !tpl ||
	    !json_is_object(json_object_get(rec, "box"))) {
		*why = "a field is missing or malformed";
		fk_sandbox_discard(sb);
		return NULL;
	}
	sb->template_id = strdup(tpl);
	sb->alias = strdup(alias ? alias : "");
	sb->state = strcmp(state, "paused") ? FK_SB_RUNNING : FK_SB_PAUSED;
	sb->paused_fs_only = get_bool(rec, "pausedFsOnly");
	sb->started_ns = get_int(rec, "startedNs");
	sb->end_ns = get_int(rec, "endNs");
	sb->paused_ns = get_int(rec, "pausedNs");
	sb->disk_mb = (unsigned)get_int(rec, "diskMB");
	sb->cpu_count = (unsigned)get_int(rec, "cpuCount");
	sb->memory_mb = (unsigned)get_int(rec, "memoryMB");
	sb->metadata_set = get_bool(rec, "metadataSet");
	sb->auto_pause = get_bool(rec, "autoPause");
	sb->auto_pause_memory = get_bool(rec, "autoPauseMemory");
	sb->auto_resume = get_bool(rec, "autoResume");
	sb->secured = get_bool(rec, "secured");
	sb->private_traffic = get_bool(rec, "privateTraffic");
	sb->loopback_only = get_bool(rec, "loopbackOnly");
	sb->metadata = get_opt(rec, "metadata", is_object);
	if (!sb->metadata)
		sb->metadata = json_object();
	sb->network = get_opt(rec, "network", is_object);
	sb->allow_internet = get_opt(rec, "allowInternet", is_boolean);
	sb->env_vars = get_opt(rec, "envVars", is_object);
	sb->box = json_deep_copy(json_object_get(rec, "box"));
	fk__sandbox_logs_restore(sb, json_object_get(rec, "logs")); /* bounded as they are kept */
	if (!sb->template_id || !sb->alias || !sb->metadata || !sb->box) {
		*why = "out of memory";
		fk_sandbox_discard(sb);
		return NULL;
	}
	return sb;
}

typedef struct load_ctx {
	fk_registry *g;
	fk_sandbox **sbs; /* the records that load, in order */
	size_t n, cap;
	char **ids; /* every id a record names, good or refused: its files stay */
	size_t n_ids, cap_ids;
} load_ctx;

static int push(void ***v, size_t *n, size_t *cap, void *x)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		void **nv = realloc(*v, c * sizeof(void *));
		if (!nv)
			return -1;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static void read_one(const char *id, json_t *rec, void *ud)
{
	load_ctx *c = ud;
	char *copy = strdup(id);
	if (!copy || push((void ***)&c->ids, &c->n_ids, &c->cap_ids, copy) < 0) {
		free(copy);
		fprintf(stderr, "fake-e2b: state: out of memory reading sandbox %s\n", id);
		return;
	}
	if (!rec)
		return; /* refused (logged): its files stay for whoever looks */
	const char *why = NULL;
	fk_sandbox *sb = sandbox_of(id, rec, &why);
	if (!sb) {
		fprintf(stderr, "fake-e2b: state: sandbox %s not loaded: %s\n", id, why);
		return;
	}
	if (push((void ***)&c->sbs, &c->n, &c->cap, sb) < 0) {
		fprintf(stderr, "fake-e2b: state: out of memory reading sandbox %s\n", id);
		fk_sandbox_discard(sb);
	}
}

/* A recorded sandbox back in the table, or gone (logged either way): 1 when kept. */
static int restore_one(fk_registry *g, fk_sandbox *sb)
{
	int was_running = sb->state == FK_SB_RUNNING;
	int64_t now = fk_now_ns();
	fk_err err = {0};
	int rc = fk__registry_restore_box(g, sb, &err);
	if (rc == 0 && was_running && sb->end_ns <= now && !sb->auto_pause) {
		/* its timeout came while no server ran: what the reaper would have done
		 * (docs/protocol.md "Lifecycle") */
		fprintf(stderr, "fake-e2b: state: sandbox %s deleted: its timeout passed\n",
		        sb->id);
		fk_state_del(g->state, FK_RECORDS_KIND, sb->id);
		fk_box_destroy(g->rt, sb->id, NULL);
		fk_sandbox_discard(sb);
		return 0;
	}
	if (rc == FK_ENOTFOUND) {
		fprintf(stderr, "fake-e2b: state: sandbox %s deleted: %s\n", sb->id, err.message);
		fk_state_del(g->state, FK_RECORDS_KIND, sb->id);
		fk_sandbox_discard(sb);
		return 0;
	}
	if (rc < 0) {
		/* never "gone" while its disk exists: the record and files wait for a later start
		 */
		fprintf(
		    stderr,
		    "fake-e2b: state: sandbox %s not loaded: %s; its record and files are kept\n",
		    sb->id, err.message);
		fk_sandbox_discard(sb);
		return 0;
	}
	bool frozen = false;
	if (fk_box_live(g->rt, sb->id, &frozen)) {
		/* adopted (live restore): its PID 1 and processes ran on without a server. Running
		 * as it was (an end time that passed meanwhile is the reaper's at its next round,
		 * as if it had run all along), or paused with its memory when its box is frozen (a
		 * crash between a pause's freeze and its record says running) */
		if (frozen && sb->state == FK_SB_RUNNING) {
			sb->state = FK_SB_PAUSED;
			sb->paused_ns = now;
			sb->paused_fs_only = 0;
		} else if (!frozen) {
			sb->state = FK_SB_RUNNING; /* a resume's thaw came before its record */
		}
		sb->next_sample_ns = now;
		fk_registry_add(g, sb);
		fprintf(stderr, "fake-e2b: state: sandbox %s kept: %s, %s (adopted)\n", sb->id,
		        was_running ? "was running" : "was paused",
		        sb->state == FK_SB_RUNNING ? "running with its processes"
		        : sb->paused_fs_only       ? "paused with its files"
		                                   : "paused with its memory");
		return 1;
	}
	if (was_running) {
		/* its processes ended with the server that ran them: paused with its files; the
		 * next resume boots it cold from its disk (connect with memory: false) */
		sb->state = FK_SB_PAUSED;
		sb->paused_ns = sb->end_ns <= now ? sb->end_ns : now;
	}
	sb->paused_fs_only = 1;
	sb->next_sample_ns = now;
	fk_registry_add(g, sb); /* its record says paused from now on */
	fprintf(stderr, "fake-e2b: state: sandbox %s kept: %s, paused with its files\n", sb->id,
	        was_running ? "was running" : "was paused");
	return 1;
}

int fk_registry_load(fk_registry *g)
{
	if (!g->state) {
		fk_rt_sweep(g->rt, NULL, 0); /* ephemeral: nothing an earlier server left stays */
		return 0;
	}
	load_ctx c = {.g = g};
	fk_state_load(g->state, FK_RECORDS_KIND, read_one, &c);
	/* what dead servers left goes first (their boxes hold the disks), and the files of
	 * sandboxes no record names */
	fk_rt_sweep(g->rt, (const char *const *)c.ids, c.n_ids);
	int kept = 0;
	for (size_t i = 0; i < c.n; i++)
		kept += restore_one(g, c.sbs[i]);
	fk_rt_sweep_unadopted(g->rt); /* live restore: nothing runs on unmanaged */
	if (c.n_ids)
		fprintf(stderr, "fake-e2b: state: %d sandbox(es) kept, %zu gone or refused\n", kept,
		        c.n_ids - (size_t)kept);
	for (size_t i = 0; i < c.n_ids; i++)
		free(c.ids[i]);
	free(c.ids);
	free(c.sbs);
	return kept;
}
