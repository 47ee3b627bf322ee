/*
 * fake-e2b/registry/shapes.c: the JSON views of a sandbox that E2B's API
 * returns (e2b-protocol.md §1.3, §1.6, §1.7) and the admin dump. See registry.h.
 */
#include "clock.h"
#include "registry_int.h"

static json_t *time_json(int64_t ns)
{
	char buf[48];
	fk_format_time(buf, sizeof(buf), ns);
	return json_string(buf);
}

json_t *fk_sandbox_json(const fk_sandbox *sb, int with_token)
{
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:s}", "sandboxID", sb->id, "templateID", sb->template_id,
	              "clientID", FK_CLIENT_ID, "envdVersion", FK_ENVD_VERSION);
	if (j && with_token && sb->secured)
		json_object_set_new(j, "envdAccessToken", json_string(sb->token));
	if (j && sb->private_traffic)
		json_object_set_new(j, "trafficAccessToken", json_string(sb->traffic_token));
	return j;
}

json_t *fk_sandbox_listed_json(const fk_sandbox *sb)
{
	int64_t end = sb->state == FK_SB_PAUSED ? sb->paused_ns : sb->end_ns;
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:i,s:i,s:s,s:s,s:o}", "sandboxID", sb->id,
	                 "templateID", sb->template_id, "clientID", FK_CLIENT_ID, "startedAt",
	                 time_json(sb->started_ns), "endAt", time_json(end), "cpuCount", 2,
	                 "memoryMB", 512, "diskSizeMB", sb->disk_mb ? (int)sb->disk_mb : 1024,
	                 "state", sb->state == FK_SB_RUNNING ? "running" : "paused", "envdVersion",
	                 FK_ENVD_VERSION, "metadata", json_deep_copy(sb->metadata));
}

json_t *fk_sandbox_detail_json(const fk_sandbox *sb)
{
	json_t *j = fk_sandbox_listed_json(sb);
	if (!j)
		return NULL;
	if (sb->secured)
		json_object_set_new(j, "envdAccessToken", json_string(sb->token));
	/* copies: replies are freed by other threads than the sandbox's (jansson refcounts) */
	json_object_set_new(j, "allowInternetAccess",
	                    sb->allow_internet ? json_deep_copy(sb->allow_internet) : json_null());
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
