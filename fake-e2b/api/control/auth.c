/*
 * fake-e2b/api/control/auth.c: the control plane's sandbox id check (ShortID).
 */
#include <string.h>

#include "control.h"

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
