/*
 * contract/ports.c: the public calls of sandbox/ports.h: argument checks,
 * then the provider's vtable; sbx_host_free().
 */
#include "contract/provider.h"

#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

void sbx_host_free(sbx_host *h)
{
	if (!h)
		return;
	sbx__free(h->hostname);
	sbx__free(h->url);
	if (h->traffic_token) {
		memset(h->traffic_token, 0, strlen(h->traffic_token));
		sbx__free(h->traffic_token);
	}
	sbx__free(h);
}

int sbx_sandbox_host(sbx_host **out, sbx_provider *p, const char *id, unsigned int port,
                     sbx_signal *sig, sbx_error *err)
{
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (port < 1 || port > 65535)
		return sbx__error_set(err, SBX_EINVALID, "port must be 1..65535, not %u", port);
	if (!p->vt->host)
		return sbx__unsupported(err, p, "host");
	if ((error = p->vt->host(p->impl, out, id, port, sig, err)) < 0) {
		sbx_host_free(*out);
		*out = NULL;
	}
	return error;
}
