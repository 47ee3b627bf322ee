/*
 * contract/metrics.c: the public calls of sandbox/metrics.h: argument checks,
 * then the provider's vtable; sbx_metrics_free().
 */
#include "contract/provider.h"

#include "util/alloc.h"
#include "util/err.h"

#define YEAR_10000 253402300800LL /* 10000-01-01T00:00:00Z, seconds */

void sbx_metrics_free(sbx_metrics *m)
{
	if (!m)
		return;
	sbx__free(m->items);
	sbx__free(m);
}

int sbx_sandbox_metrics(sbx_metrics **out, sbx_provider *p, const char *id, int64_t start_unix,
                        int64_t end_unix, sbx_signal *sig, sbx_error *err)
{
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (start_unix < 0 || end_unix < 0 || start_unix >= YEAR_10000 || end_unix >= YEAR_10000)
		return sbx__error_set(err, SBX_EINVALID,
		                      "metrics times must be 0 or seconds since 1970 before 10000");
	if (start_unix && end_unix && start_unix > end_unix)
		return sbx__error_set(err, SBX_EINVALID, "metrics start is after end");
	if (!p->vt->metrics)
		return sbx__unsupported(err, p, "metrics");
	if ((error = p->vt->metrics(p->impl, out, id, start_unix, end_unix, sig, err)) < 0) {
		sbx_metrics_free(*out);
		*out = NULL;
	}
	return error;
}
