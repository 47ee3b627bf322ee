/*
 * e2b/provider_ports.c: sandbox/ports.h for E2B (docs/ports.md): the
 * hostname E2B's proxy routes to a sandbox's port, <port>-<id>.<domain>
 * (e2b-dev/E2B packages/js-sdk/src/sandbox/index.ts getHost), and the
 * connect reply's trafficAccessToken.
 */
#include <stdio.h>
#include <string.h>

#include "e2b/provider_int.h"
#include "util/alloc.h"
#include "util/err.h"

int sbx__e2b_host(void *impl, sbx_host **out, const char *id, unsigned int port, sbx_signal *sig,
                  sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	sbx_host *h = NULL;
	bool cached = false;
	char *name = NULL, *url = NULL;
	int error, n;

	*out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attach_cached(p, &t, id, 0, &cached, sig, err)) < 0)
		goto done;
	if (!t.domain) {
		error = sbx__error_set(err, SBX_EINTERNAL, "no domain known for sandbox %s", id);
		goto done;
	}
	n = snprintf(NULL, 0, "%u-%s.%s", port, t.sandbox_id, t.domain);
	if (n < 0 || !(name = sbx__malloc((size_t)n + 1)) ||
	    !(url = sbx__malloc((size_t)n + sizeof("https://")))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(name, (size_t)n + 1, "%u-%s.%s", port, t.sandbox_id, t.domain);
	snprintf(url, (size_t)n + sizeof("https://"), "https://%s", name);
	if (!(h = sbx__calloc(1, sizeof(*h))) ||
	    (t.traffic_token && !(h->traffic_token = sbx__strdup(t.traffic_token)))) {
		sbx_host_free(h);
		h = NULL;
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	h->hostname = name;
	h->url = url;
	name = url = NULL;
	*out = h;
done:
	sbx__free(name);
	sbx__free(url);
	sbx__envd_target_dispose(&t);
	return error;
}
