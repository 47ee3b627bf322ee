/*
 * fake-e2b/api/control/network.c: PUT /sandboxes/{id}/network, the egress rules of a running
 * sandbox (E2B's SandboxNetworkUpdateConfig; infra handlers/sandbox_network_update.go).
 *
 * As E2B: the update replaces the egress part whole (allowOut, denyOut, rules, egressProxy;
 * a field left out is cleared), allow_internet_access changes only when given, the rules are
 * validated as at create (400), a sandbox that is not running is a 404, success is a 204. The
 * new rules show in GET /sandboxes/{id} (`network`, `allowInternetAccess`) and are applied live
 * to the sandbox's egress proxy (fk_registry_update_network): new connections get them, open
 * ones keep the rules they were accepted under.
 */
#include "control.h"

enum MHD_Result fk_control_network_update(fk_call *c)
{
	fk_req *r = c->req;
	fk_registry *g = c->app->reg;
	json_t *body = fk_body_json(r, 0);
	const char *why = NULL;
	if (!json_is_object(body))
		why = "Error when parsing request: the body must be a JSON object";
	json_t *aia = json_object_get(body, "allow_internet_access");
	if (!why && aia && !json_is_boolean(aia))
		why = "Error when parsing request: allow_internet_access must be a boolean";
	json_t *rules = json_object_get(body, "rules"),
	       *proxy = json_object_get(body, "egressProxy");
	if (!why && ((rules && !json_is_object(rules)) || (proxy && !json_is_object(proxy))))
		why = "Error when parsing request: rules and egressProxy must be objects";
	if (!why && json_object_get(body, "allowPublicTraffic"))
		why = "Error when parsing request: allowPublicTraffic cannot be updated";
	if (!why)
		why = fk_control_validate_network(body);
	if (why) {
		json_decref(body);
		return fk_reply_error(r, 400, "%s", why);
	}
	fk_sandbox *sb = fk_registry_acquire(g, c->id);
	if (!sb) {
		json_decref(body);
		return fk_control_not_found(c);
	}
	fk_err err = {0};
	int rc = fk_registry_update_network(g, sb, body, &err);
	fk_sandbox_release(g, sb);
	json_decref(body);
	if (rc == FK_LC_GONE)
		return fk_control_not_found(c);
	if (rc < 0 && err.code == FK_ESTATE) /* cannot be let out here: as at create */
		return fk_reply_error(r, 403, "%s", err.message);
	if (rc < 0)
		return fk_reply_error(r, 500, "Error updating sandbox network config: %s",
		                      err.message);
	return fk_reply(r, 204, NULL, NULL, 0);
}
