/*
 * fake-e2b/api/control/create.c: POST /v2/sandboxes and legacy POST
 * /sandboxes (docs/protocol.md "Create", "Egress"; docs/internals/wire.md "Control plane").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "control.h"

/* bytes of an unknown templateID its 404 echoes (an id is 20 characters, an alias with its
 * namespace and tag well under 128) */
#define FK_TEMPLATE_ECHO_MAX 128

const char *fk_control_create_validate(json_t *body, int v2, long *timeout, char *why_buf,
                                       size_t cap)
{
	json_t *tpl = json_object_get(body, "templateID");
	json_t *ap = json_object_get(body, "autoPause"),
	       *apm = json_object_get(body, "autoPauseMemory");
	json_t *ar = json_object_get(body, "autoResume");
	json_t *aia = json_object_get(body, "allow_internet_access");
	const char *why;
	if (!json_is_string(tpl) || !*json_string_value(tpl))
		return "validation error: templateID is required";
	if ((why = fk_control_timeout_field(body, "timeout", v2 ? 300 : 15, 0, timeout)))
		return why;
	if ((ap && !json_is_boolean(ap)) || (apm && !json_is_boolean(apm)) ||
	    (aia && !json_is_boolean(aia) && !json_is_null(aia)))
		return "validation error: autoPause, autoPauseMemory and allow_internet_access "
		       "must "
		       "be booleans";
	if ((why = fk_control_string_map_check(json_object_get(body, "metadata"), "metadata",
	                                       why_buf, cap)) ||
	    (why = fk_control_string_map_check(json_object_get(body, "envVars"), "envVars", why_buf,
	                                       cap)))
		return why;
	int auto_pause = json_is_true(ap), auto_pause_mem = apm ? json_is_true(apm) : 1;
	int auto_resume = json_is_object(ar) && json_is_true(json_object_get(ar, "enabled"));
	if (!auto_pause_mem && !auto_pause)
		return "autoPauseMemory=false requires autoPause=true";
	if (!auto_pause_mem && auto_resume)
		return "autoResume cannot be used with autoPauseMemory=false";
	return fk_control_validate_network(json_object_get(body, "network"));
}

/* A new, not yet registered sandbox from a validated create body; NULL on OOM. */
static fk_sandbox *sandbox_from_body(fk_registry *g, json_t *body, int v2, long timeout)
{
	json_t *meta = json_object_get(body, "metadata"), *net = json_object_get(body, "network");
	json_t *aia = json_object_get(body, "allow_internet_access");
	json_t *apm = json_object_get(body, "autoPauseMemory"),
	       *ar = json_object_get(body, "autoResume");
	fk_sandbox *sb = fk_sandbox_new(g);
	if (!sb)
		return NULL;
	/* legacy issues a token only with secure:true; v2 always (docs/protocol.md "Create") */
	sb->secured = v2 || json_is_true(json_object_get(body, "secure"));
	sb->template_id = strdup(json_string_value(json_object_get(body, "templateID")));
	sb->metadata = json_is_object(meta) ? json_deep_copy(meta) : json_object();
	sb->metadata_set = json_is_object(meta);
	sb->network = json_is_object(net) ? json_deep_copy(net) : NULL;
	json_t *envv = json_object_get(body, "envVars");
	sb->env_vars = json_object_size(envv) ? json_deep_copy(envv) : NULL;
	sb->allow_internet = json_is_boolean(aia) ? json_boolean(json_is_true(aia)) : NULL;
	sb->auto_pause = json_is_true(json_object_get(body, "autoPause"));
	sb->auto_pause_memory = apm ? json_is_true(apm) : 1;
	sb->auto_resume = json_is_object(ar) && json_is_true(json_object_get(ar, "enabled"));
	sb->loopback_only = fk_control_egress_none(aia, net);
	sb->private_traffic = json_is_false(json_object_get(net, "allowPublicTraffic"));
	sb->started_ns = fk_now_ns();
	sb->end_ns = sb->started_ns + (int64_t)timeout * FK_NS;
	if (!sb->template_id || !sb->metadata) {
		fk_sandbox_discard(sb);
		return NULL;
	}
	return sb;
}

/* envVars as "K=V" strings (caller frees each and the array); NULL on OOM or none. */
static char **env_list(json_t *env_vars, size_t *n)
{
	size_t cap = json_object_size(env_vars), i = 0;
	*n = 0;
	char **envs = cap ? calloc(cap, sizeof(char *)) : NULL;
	const char *k;
	json_t *v;
	if (!envs)
		return NULL;
	json_object_foreach(env_vars, k, v)
	{
		if (i < cap && asprintf(&envs[i], "%s=%s", k, json_string_value(v)) >= 0)
			i++;
	}
	*n = i;
	return envs;
}

json_t *fk_control_start_sandbox(fk_call *c, json_t *body, int v2, long timeout,
                                 const fk_tboot *boot, unsigned *status, char *msg, size_t cap)
{
	fk_registry *g = c->app->reg;
	int stopping = fk_registry_stopping(g);
	fk_sandbox *sb = stopping ? NULL : sandbox_from_body(g, body, v2, timeout);
	char *canonical = sb ? strdup(boot->template_id) : NULL;
	if (!sb || !canonical) {
		free(canonical);
		if (sb)
			fk_sandbox_discard(sb);
		*status = stopping ? 503 : 500;
		snprintf(msg, cap, "cannot allocate a sandbox");
		return NULL;
	}
	if (!sb->loopback_only && !fk_rt_egress_allowed(c->app->rt)) {
		/* E2B's 403 for a network feature not enabled (egressProxy) */
		free(canonical);
		fk_sandbox_discard(sb);
		*status = 403;
		snprintf(msg, cap, "%s", FK_EGRESS_REFUSED_MSG);
		return NULL;
	}
	free(sb->template_id); /* E2B answers with the templateID, whatever name was asked for */
	sb->template_id = canonical;
	fk_err err = {0};
	json_t *envv = json_object_get(body, "envVars");
	size_t n_envs = 0;
	char **envs = env_list(json_is_object(envv) ? envv : NULL, &n_envs);
	int rc = fk_registry_boot(g, sb, boot, (const char *const *)envs, n_envs, &err);
	for (size_t i = 0; i < n_envs; i++)
		free(envs[i]);
	free(envs);
	if (rc < 0) {
		fk_sandbox_discard(sb);
		/* a disk that does not fit the state dir's file system: E2B's 507 shape (envd's) */
		*status = err.code == FK_ENOSPC ? 507 : 500;
		snprintf(msg, cap, "cannot start sandbox: %s", err.message);
		return NULL;
	}
	/* its first metrics sample is taken here, at once (then every 5 s): not also by the
	 * sampler's thread, which would see it due from the moment it is listed */
	sb->next_sample_ns = fk_now_ns() + (int64_t)FK_METRICS_INTERVAL_S * FK_NS;
	fk_sandbox_log_created(g, sb, "Started creating sandbox");
	fk_registry_add(g, sb);
	fk_registry_sample(g, sb);
	fk_registry_lock(g);
	json_t *reply = fk_sandbox_json(sb, c->fault.kind != FK_FAULT_CONNECT_NO_TOKEN);
	fk_registry_unlock(g);
	if (!reply) {
		*status = 500;
		snprintf(msg, cap, "out of memory");
	}
	return reply;
}

static enum MHD_Result create_sandbox(fk_call *c, int v2)
{
	fk_req *r = c->req;
	json_t *body = fk_body_json(r, 0);
	long timeout = 0;
	char why_buf[160];
	const char *why =
	    json_is_object(body)
	        ? fk_control_create_validate(body, v2, &timeout, why_buf, sizeof(why_buf))
	        : "validation error: request body must be a JSON object";
	if (why) {
		json_decref(body);
		return fk_reply_error(r, 400, "%s", why);
	}
	const char *tpl = json_string_value(json_object_get(body, "templateID"));
	fk_tboot boot;
	if (fk_tstore_resolve(c->app->templates, tpl, &boot) < 0) {
		/* the id is the client's, any length: echo a prefix of it, cut on a UTF-8
		 * character's start */
		size_t n = strlen(tpl), cut = n;
		if (n > FK_TEMPLATE_ECHO_MAX) {
			cut = FK_TEMPLATE_ECHO_MAX;
			while (cut > 0 && ((unsigned char)tpl[cut] & 0xc0) == 0x80)
				cut--;
		}
		enum MHD_Result ret = fk_reply_error(r, 404, "template '%.*s%s' not found",
		                                     (int)cut, tpl, cut < n ? "..." : "");
		json_decref(body);
		return ret;
	}
	unsigned status = 0;
	char msg[300];
	json_t *reply =
	    fk_control_start_sandbox(c, body, v2, timeout, &boot, &status, msg, sizeof(msg));
	if (reply) /* the template's spawn count and last spawn (GET /templates) */
		fk_tstore_spawned(c->app->templates, boot.template_id);
	fk_tboot_clear(&boot);
	json_decref(body);
	if (!reply)
		return fk_reply_error(r, status, "%s", msg);
	return fk_reply_json(r, 201, reply);
}

enum MHD_Result fk_control_create_v2(fk_call *c)
{
	return create_sandbox(c, 1);
}

enum MHD_Result fk_control_create_legacy(fk_call *c)
{
	return create_sandbox(c, 0);
}
