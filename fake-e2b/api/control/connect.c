/*
 * fake-e2b/api/control/connect.c: POST /v2/sandboxes/{id}/connect, legacy
 * POST /sandboxes/{id}/connect and /resume (docs/protocol.md "Connect (resume)";
 * docs/internals/wire.md "Control plane").
 */
#include "control.h"

static enum MHD_Result connect_sandbox(fk_call *c, int v2, int resume)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	json_t *body = fk_body_json(r, 1);
	long timeout = 0;
	const char *why = json_is_object(body) ? NULL : "validation error: body must be an object";
	if (!why)
		why = fk_control_timeout_field(body, "timeout", resume ? 15 : 300, !v2 && !resume,
		                               &timeout);
	json_t *mem = json_object_get(body, "memory");
	if (!why && mem && !json_is_boolean(mem))
		why = "validation error: memory must be a boolean";
	int reboot = json_is_false(mem);
	json_decref(body);
	if (why)
		return fk_reply_error(r, 400, "%s", why);
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb)
		return fk_control_not_found(c);
	fk_err err = {0};
	enum MHD_Result ret;
	int with_token = c->fault.kind != FK_FAULT_CONNECT_NO_TOKEN;
	json_t *j;
	enum fk_connect_outcome out = fk_registry_connect(g, sb, timeout, resume, reboot, &err);
	switch (out) {
	case FK_CONNECT_GONE:
		ret = fk_control_not_found(c);
		break;
	case FK_CONNECT_CONFLICT:
		ret = fk_reply_error(r, 409, "Sandbox %s is already running", c->id);
		break;
	case FK_CONNECT_FAILED:
		ret = fk_reply_error(r, 500, "cannot resume sandbox: %s", err.message);
		break;
	case FK_CONNECT_RUNNING:
	case FK_CONNECT_RESUMED:
	default:
		fk_registry_lock(g);
		j = fk_sandbox_json(sb, with_token);
		fk_registry_unlock(g);
		ret = fk_reply_json(r, out == FK_CONNECT_RESUMED ? 201 : 200, j);
		break;
	}
	fk_sandbox_release(g, sb);
	return ret;
}

enum MHD_Result fk_control_connect_v2(fk_call *c)
{
	return connect_sandbox(c, 1, 0);
}

enum MHD_Result fk_control_connect_legacy(fk_call *c)
{
	return connect_sandbox(c, 0, 0);
}

enum MHD_Result fk_control_resume(fk_call *c)
{
	return connect_sandbox(c, 0, 1);
}
