/*
 * fake-e2b/api/control/lifecycle.c: pause, delete, /timeout and /refreshes
 * of a sandbox (docs/protocol.md "Delete, pause, timeout").
 */
#include "control.h"

enum MHD_Result fk_control_pause(fk_call *c)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	json_t *body = fk_body_json(r, 1);
	json_t *mem = json_object_get(body, "memory");
	int bad = !json_is_object(body) || (mem && !json_is_boolean(mem));
	int fs_only = json_is_false(mem);
	json_decref(body);
	if (bad)
		return fk_reply_error(r, 400, "validation error: body must be {\"memory\"?: bool}");
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	fk_err err = {0};
	int rc = fk_registry_pause(g, sb, fs_only, 0, &err);
	fk_sandbox_release(g, sb);
	switch (rc) {
	case FK_LC_OK:
		return fk_reply(r, 204, NULL, NULL, 0);
	case FK_LC_CONFLICT:
		return fk_reply_error(
		    r, 409, "Error pausing sandbox - sandbox '%s' is already paused", c->id);
	case FK_LC_GONE:
		return fk_control_not_found(c);
	default:
		return fk_reply_error(r, 500, "Error pausing sandbox: %s", err.message);
	}
}

enum MHD_Result fk_control_delete(fk_call *c)
{
	fk_registry *g = c->app->reg;
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	int rc = fk_registry_delete(g, sb, 0);
	fk_sandbox_release(g, sb);
	if (rc == FK_LC_GONE)
		return fk_control_not_found(c);
	return fk_reply(c->req, 204, NULL, NULL, 0);
}

/* /timeout sets exactly (may shorten, 0: now); /refreshes extends only (min 15 s) (docs/protocol.md
 * "Delete, pause, timeout"). */
static enum MHD_Result timeout_sandbox(fk_call *c, int refresh)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	json_t *body = fk_body_json(r, refresh);
	long secs = 0;
	const char *why = json_is_object(body) ? NULL : "validation error: body must be an object";
	if (!why && !refresh) {
		/* SandboxTimeoutRequest's timeout is required and `minimum: 0` (infra
		 * handlers/sandbox_timeout.go): 0 ends the sandbox at once, the reaper pausing or
		 * killing it as its lifecycle says; create, connect and fork refuse 0 */
		json_t *t = json_object_get(body, "timeout");
		if (t && json_is_integer(t) && json_integer_value(t) == 0)
			secs = 0;
		else
			why = fk_control_timeout_field(body, "timeout", 0, 1, &secs);
	} else if (!why) {
		json_t *d = json_object_get(body, "duration");
		if (d && (!json_is_integer(d) || json_integer_value(d) < 0 ||
		          json_integer_value(d) > 3600))
			why = "validation error: duration must be 0..3600";
		secs = d ? (long)json_integer_value(d) : 0;
		if (secs < 15)
			secs = 15;
	}
	json_decref(body);
	if (why)
		return fk_reply_error(r, 400, "%s", why);
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	int rc = fk_registry_set_timeout(g, sb, secs, refresh);
	fk_sandbox_release(g, sb);
	if (rc < 0)
		return fk_control_not_found(c);
	return fk_reply(r, 204, NULL, NULL, 0);
}

enum MHD_Result fk_control_timeout(fk_call *c)
{
	return timeout_sandbox(c, 0);
}

enum MHD_Result fk_control_refresh(fk_call *c)
{
	return timeout_sandbox(c, 1);
}
