/*
 * fake-e2b/api/control/teams.c: GET /teams (E2B's "List teams", OpenAPI tag auth), the route
 * the CLI's login calls with the user's access token (the router checked it: AccessTokenAuth,
 * never the X-API-Key).
 */
#include <openssl/rand.h>
#include <stdio.h>

#include "control.h"

/* E2B (infra packages/api/internal/handlers/teams.go GetTeams): one Team {teamID, name,
 * apiKey, isDefault} per team of the user, apiKey a key minted for it ("CLI login/configure").
 * fake-e2b has one user with one team, the default; its key is the server's one API key (the
 * only one it accepts), or under --any-api-key a fresh e2b_ key, which it accepts as E2B
 * accepts the key it just minted. */
enum MHD_Result fk_control_teams(fk_call *c)
{
	char minted[45];
	const char *key = c->app->api_key;
	if (!key) {
		unsigned char rnd[20];
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return fk_reply_error(c->req, 500, "Error when creating team API key");
		snprintf(minted, sizeof(minted), "e2b_");
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(minted + 4 + 2 * i, 3, "%02x", rnd[i]);
		key = minted;
	}
	json_t *teams = json_pack("[{s:s,s:s,s:s,s:b}]", "teamID", FK_TEAM_ID, "name", FK_TEAM_NAME,
	                          "apiKey", key, "isDefault", 1);
	if (!teams)
		return fk_reply_error(c->req, 500, "out of memory");
	return fk_reply_json(c->req, 200, teams);
}
