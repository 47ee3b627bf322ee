/*
 * fake-e2b/registry/shapes.c: the JSON views of a sandbox that E2B's API
 * returns (docs/protocol.md "The Sandbox object", "List", "Get") and the admin dump. See
 * registry.h.
 */
#include "clock.h"
#include "registry_int.h"

static json_t *time_json(int64_t ns)
{
	char buf[48];
	fk_format_time(buf, sizeof(buf), ns);
	return json_string(buf);
}

/* E2B's shapes (e2b-dev/infra packages/api): the create/connect reply is the sandbox's
 * ToAPISandbox (internal/sandbox/sandboxtypes/sandbox.go), whose `alias` is always given (the
 * template's first alias, "" when it has none: handlers/sandbox_create.go firstAlias); `domain`
 * is left out (nil outside a cluster of its own). */
json_t *fk_sandbox_json(const fk_sandbox *sb, int with_token)
{
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "sandboxID", sb->id, "templateID",
	                      sb->template_id, "alias", sb->alias ? sb->alias : "", "clientID",
	                      FK_CLIENT_ID, "envdVersion", FK_ENVD_VERSION);
	if (j && with_token && sb->secured)
		json_object_set_new(j, "envdAccessToken", json_string(sb->token));
	if (j && sb->private_traffic)
		json_object_set_new(j, "trafficAccessToken", json_string(sb->traffic_token));
	return j;
}

/* Was the sandbox ever paused? E2B serves a sandbox that was from its snapshot row, whose
 * metadata is never null (orchestrator/pause_instance.go buildUpsertSnapshotParams). */
static int metadata_shown(const fk_sandbox *sb)
{
	return sb->metadata_set || sb->paused_ns != 0;
}

/* ListedSandbox (handlers/sandboxes_list.go): a running sandbox's from the orchestrator
 * (instanceInfoToPaginatedSandboxes: alias always, volumeMounts always `[]` here, metadata
 * when it has any map), a paused one's from its snapshot row (snapshotsToPaginatedSandboxes:
 * alias only when the template has one, endAt the pause). cpuCount, memoryMB, diskSizeMB are
 * the sandbox's own limits (its build's vcpu, ram_mb, total disk). */
json_t *fk_sandbox_listed_json(const fk_sandbox *sb)
{
	int paused = sb->state == FK_SB_PAUSED;
	int64_t end = paused ? sb->paused_ns : sb->end_ns;
	const char *alias = sb->alias ? sb->alias : "";
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:i,s:i,s:s,s:s,s:[]}", "sandboxID", sb->id,
	              "templateID", sb->template_id, "clientID", FK_CLIENT_ID, "startedAt",
	              time_json(sb->started_ns), "endAt", time_json(end), "cpuCount",
	              (int)(sb->cpu_count ? sb->cpu_count : FK_BOX_DEFAULT_CPUS), "memoryMB",
	              (int)(sb->memory_mb ? sb->memory_mb : FK_BOX_DEFAULT_MEMORY_MB), "diskSizeMB",
	              sb->disk_mb ? (int)sb->disk_mb : 1024, "state", paused ? "paused" : "running",
	              "envdVersion", FK_ENVD_VERSION, "volumeMounts");
	if (j && (!paused || *alias))
		json_object_set_new(j, "alias", json_string(alias));
	if (j && metadata_shown(sb))
		json_object_set_new(j, "metadata", json_deep_copy(sb->metadata));
	return j;
}

/* SandboxDetail (handlers/sandbox_get.go): a running sandbox's as listed, plus the token,
 * internet access, network and lifecycle; a paused one's from its snapshot row, with `alias`
 * always and no `volumeMounts`. */
json_t *fk_sandbox_detail_json(const fk_sandbox *sb)
{
	json_t *j = fk_sandbox_listed_json(sb);
	if (!j)
		return NULL;
	if (sb->state == FK_SB_PAUSED) {
		json_object_del(j, "volumeMounts");
		json_object_set_new(j, "alias", json_string(sb->alias ? sb->alias : ""));
	}
	if (sb->secured)
		json_object_set_new(j, "envdAccessToken", json_string(sb->token));
	/* copies: replies are freed by other threads than the sandbox's (jansson refcounts) */
	if (sb->allow_internet) /* omitempty: left out when the create did not say */
		json_object_set_new(j, "allowInternetAccess", json_deep_copy(sb->allow_internet));
	if (sb->network) {
		json_t *n = json_deep_copy(sb->network);
		json_t *proxy = json_object_get(n, "egressProxy");
		if (json_is_object(proxy))
			json_object_del(proxy, "password");
		json_object_set_new(j, "network", n);
	}
	json_object_set_new(j, "lifecycle",
	                    json_pack("{s:b,s:s}", "autoResume", sb->auto_resume, "onTimeout",
	                              sb->auto_pause ? "pause" : "kill"));
	return j;
}

json_t *fk_registry_dump(fk_registry *g)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&g->lock);
	for (fk_sandbox *sb = g->list; sb; sb = sb->next) {
		json_t *j = fk_sandbox_detail_json(sb);
		json_object_del(j, "envdAccessToken");
		json_object_set_new(j, "autoPause", json_boolean(sb->auto_pause));
		json_object_set_new(j, "loopbackOnly", json_boolean(sb->loopback_only));
		json_object_set_new(j, "refs", json_integer(sb->refs));
		json_array_append_new(arr, j);
	}
	pthread_mutex_unlock(&g->lock);
	return arr;
}
