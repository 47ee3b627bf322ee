/*
 * fake-e2b/api/control/network.c: PUT /sandboxes/{id}/network, the egress rules of a running
 * sandbox (E2B's SandboxNetworkUpdateConfig; infra handlers/sandbox_network_update.go).
 *
 * As E2B: the update replaces the egress part whole (allowOut, denyOut, rules, egressProxy;
 * a field left out is cleared), allow_internet_access changes only when given, the rules are
 * validated as at create (400), a sandbox that is not running is a 404, success is a 204. The
 * new rules show in GET /sandboxes/{id} (`network`, `allowInternetAccess`). What a box may
 * reach is set when it is created (runtime: egress none, or its egress rules); the update is
 * recorded, not applied to a running box.
 */
#include "control.h"

/* The keys of `network` an update replaces; the others (allowPublicTraffic,
 * maskRequestHost) are the ingress side and stay. */
static const char *const egress_keys[] = {"allowOut", "denyOut", "rules", "egressProxy"};

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
	int found = 0, oom = 0;
	fk_registry_lock(g);
	if (!sb->deleted && sb->state == FK_SB_RUNNING) {
		found = 1;
		json_t *net = sb->network ? json_deep_copy(sb->network) : json_object();
		for (size_t i = 0; net && i < sizeof(egress_keys) / sizeof(*egress_keys); i++) {
			json_t *v = json_object_get(body, egress_keys[i]);
			if (v && !json_is_null(v))
				json_object_set_new(net, egress_keys[i], json_deep_copy(v));
			else
				json_object_del(net, egress_keys[i]);
		}
		if (net) {
			json_decref(sb->network);
			sb->network = json_object_size(net) ? net : NULL;
			if (!sb->network)
				json_decref(net);
			if (aia) {
				json_decref(sb->allow_internet);
				sb->allow_internet = json_boolean(json_is_true(aia));
			}
		} else {
			oom = 1;
		}
	}
	fk_registry_unlock(g);
	fk_sandbox_release(g, sb);
	json_decref(body);
	if (oom)
		return fk_reply_error(r, 500, "Error updating sandbox network config");
	if (!found)
		return fk_control_not_found(c);
	return fk_reply(r, 204, NULL, NULL, 0);
}
