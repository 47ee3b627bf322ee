/*
 * contract/handle.c: making and checking the public command handles (contract/handle.h;
 * sandbox/process.h, sandbox/pty.h).
 */
#include "contract/handle.h"

#include "util/alloc.h"
#include "util/err.h"

void *sbx__handle_new(size_t size, const sbx_provider_vtable *vt, void *impl, uint32_t pid,
                      void (*free_impl)(void *impl), sbx_error *err)
{
	sbx__handle *h = size >= sizeof(*h) ? sbx__malloc(size) : NULL;

	if (!h) {
		free_impl(impl);
		sbx__error_set(err, SBX_ENOMEM, "out of memory");
		return NULL;
	}
	*h = (sbx__handle){vt, impl, pid};
	return h;
}

int sbx__handle_check(const void *h, const sbx_signal *sig, sbx_error *err)
{
	if (!h)
		return sbx__error_set(err, SBX_EINVALID, "handle is NULL");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return 0;
}

int sbx__provider_check_method(const sbx_provider *p, const sbx_signal *sig, const char *method,
                               bool has, unsigned need, const void *out, const char *id,
                               sbx_error *err)
{
	int error;
	if ((error = sbx__provider_check(p, sig, err)) < 0)
		return error;
	if (!has)
		return sbx__unsupported(err, p, method);
	if ((need & SBX__NEED_OUT) && !out)
		return sbx__missing(err, "out");
	if ((need & SBX__NEED_ID) && !id)
		return sbx__missing(err, "id");
	return 0;
}
