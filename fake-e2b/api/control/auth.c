/*
 * fake-e2b/api/control/auth.c: the control plane's API key and sandbox id checks.
 */
#include <string.h>

#include "control.h"

int fk_control_key_ok(fk_call *c)
{
	const char *key = fk_header(c->req, "X-API-Key");
	if (!key)
		return 0;
	if (c->app->api_key)
		return strcmp(key, c->app->api_key) == 0;
	return strncmp(key, "e2b_", 4) == 0 && key[4] != '\0';
}

enum MHD_Result fk_control_key_refused(fk_call *c)
{
	return fk_reply_error(c->req, 401, "Invalid API key, it must start with 'e2b_'");
}

int fk_control_short_id(const char *in, char *out, size_t cap)
{
	const char *dash = strchr(in, '-');
	size_t n = dash ? (size_t)(dash - in) : strlen(in);
	if (dash && strchr(dash + 1, '-'))
		return -1;
	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((in[i] >= 'a' && in[i] <= 'z') || (in[i] >= '0' && in[i] <= '9')))
			return -1;
	memcpy(out, in, n);
	out[n] = '\0';
	return 0;
}
