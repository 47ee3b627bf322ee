/*
 * fake-e2b/registry/records.c: a kept server's sandboxes as records of the state directory
 * (state.h): each sandbox as a record of what E2B keeps of it (id, template, metadata, envd
 * and traffic tokens, network rules, end time, autoPause, state, limits) and what its box boots
 * with, written at each change (sandbox.c calls in); restore.c reads them back at start. See
 * registry.h "Keeping sandboxes".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "registry_int.h"
#include "state.h"

static json_t *opt_json(json_t *v)
{
	return v ? json_deep_copy(v) : json_null();
}

/* The record of sb (under g->lock). */
static json_t *record_of(const fk_sandbox *sb)
{
	json_t *j = json_object();
	if (!j)
		return NULL;
	int bad = 0;
#define SET(k, v) (bad |= json_object_set_new(j, k, v))
	SET("id", json_string(sb->id));
	SET("token", json_string(sb->token));
	SET("trafficToken", json_string(sb->traffic_token));
	SET("templateID", json_string(sb->template_id));
	SET("alias", json_string(sb->alias ? sb->alias : ""));
	SET("state", json_string(sb->state == FK_SB_PAUSED ? "paused" : "running"));
	SET("pausedFsOnly", json_boolean(sb->paused_fs_only));
	SET("startedNs", json_integer(sb->started_ns));
	SET("endNs", json_integer(sb->end_ns));
	SET("pausedNs", json_integer(sb->paused_ns));
	SET("diskMB", json_integer(sb->disk_mb));
	SET("cpuCount", json_integer(sb->cpu_count));
	SET("memoryMB", json_integer(sb->memory_mb));
	SET("metadataSet", json_boolean(sb->metadata_set));
	SET("autoPause", json_boolean(sb->auto_pause));
	SET("autoPauseMemory", json_boolean(sb->auto_pause_memory));
	SET("autoResume", json_boolean(sb->auto_resume));
	SET("secured", json_boolean(sb->secured));
	SET("privateTraffic", json_boolean(sb->private_traffic));
	SET("loopbackOnly", json_boolean(sb->loopback_only));
	SET("metadata", opt_json(sb->metadata));
	SET("network", opt_json(sb->network));
	SET("allowInternet", opt_json(sb->allow_internet));
	SET("envVars", opt_json(sb->env_vars));
	SET("box", opt_json(sb->box));
	SET("logs", fk__sandbox_logs_record(sb)); /* at most FK_SBLOGS_BYTES of lines */
#undef SET
	if (bad) {
		json_decref(j);
		return NULL;
	}
	return j;
}

void fk__registry_persist(fk_registry *g, fk_sandbox *sb)
{
	if (!g->state)
		return;
	pthread_mutex_lock(&sb->rec_lock);
	pthread_mutex_lock(&g->lock);
	int gone = sb->deleted;
	json_t *rec = gone ? NULL : record_of(sb);
	pthread_mutex_unlock(&g->lock);
	char eb[64];
	if (!gone && (!rec || fk_state_put(g->state, FK_RECORDS_KIND, sb->id, rec) < 0))
		fprintf(stderr, "fake-e2b: state: cannot write sandbox %s's record: %s\n", sb->id,
		        rec ? strerror_r(errno, eb, sizeof(eb)) : "out of memory");
	json_decref(rec);
	pthread_mutex_unlock(&sb->rec_lock);
}

void fk__registry_forget(fk_registry *g, fk_sandbox *sb)
{
	if (!g->state)
		return;
	pthread_mutex_lock(&sb->rec_lock);
	char eb[64];
	if (fk_state_del(g->state, FK_RECORDS_KIND, sb->id) < 0)
		fprintf(stderr, "fake-e2b: state: cannot remove sandbox %s's record: %s\n", sb->id,
		        strerror_r(errno, eb, sizeof(eb)));
	pthread_mutex_unlock(&sb->rec_lock);
}

void fk_registry_keep(fk_registry *g, fk_state *st)
{
	g->state = st;
}
