/*
 * fake-e2b/api/envd/health.c: GET /health (204). With E2b-Sandbox-Id, the
 * proxy's 502 when that sandbox is not running, and the same 502 when it is
 * secured and X-Access-Token is not its token: without the token nobody learns
 * whether a sandbox id exists (the SDK sends the token on /health).
 */
#include "envd.h"

enum MHD_Result fk_envd_health(fk_call *c)
{
	const char *id = c->sandbox_id;
	if (id) {
		fk_sandbox *sb = fk_registry_acquire(c->app->reg, id);
		int ok = sb && fk_envd_token_ok(sb, fk_header(c->req, "X-Access-Token")) &&
		         fk_sandbox_ensure_running(c->app->reg, sb);
		fk_sandbox_release(c->app->reg, sb);
		if (!ok)
			return fk_envd_not_found_502(c->req, id);
	}
	return fk_reply(c->req, 204, NULL, NULL, 0);
}
