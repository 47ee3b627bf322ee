/*
 * contract/watch.c: the public sbx_watch_* functions (sandbox/watch.h): the
 * checks every provider shares (aborted signal, NULL pointers, the path by
 * sbx_validate_path, the options' version and user), then the vtable. A
 * handle keeps the vtable that knows its state.
 */
#include <string.h>

#include "contract/provider.h"
#include "util/alloc.h"
#include "util/err.h"
#include <sandbox/validate.h>

struct sbx_watch {
	const sbx_provider_vtable *vt;
	void *impl;
};

void sbx_watch_event_dispose(sbx_watch_event *e)
{
	if (!e)
		return;
	sbx__free(e->name);
	memset(e, 0, sizeof(*e));
}

const char *sbx_watch_op_name(sbx_watch_op op)
{
	switch (op) {
	case SBX_WATCH_CREATE:
		return "create";
	case SBX_WATCH_WRITE:
		return "write";
	case SBX_WATCH_REMOVE:
		return "remove";
	case SBX_WATCH_RENAME:
		return "rename";
	case SBX_WATCH_CHMOD:
		return "chmod";
	}
	return "?";
}

int sbx_sandbox_watch_dir(sbx_watch **out, sbx_provider *p, const char *id, const char *path,
                          const sbx_watch_options *opts, sbx_signal *sig, sbx_error *err)
{
	static const sbx_watch_options defaults = SBX_WATCH_OPTIONS_INIT;
	sbx_watch_options o = opts ? *opts : defaults;
	void *impl = NULL;
	sbx_watch *w;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (!path)
		return sbx__missing(err, "path");
	if ((error = sbx_validate_path(path, strlen(path), err)) < 0)
		return error;
	if (o.version != SBX_WATCH_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_watch_options version %u",
		                      o.version);
	if (o.user != SBX_USER_SANDBOX && o.user != SBX_USER_ROOT)
		return sbx__error_set(
		    err, SBX_EINVALID,
		    "watch user must be SBX_USER_SANDBOX or SBX_USER_ROOT, not %d", (int)o.user);
	if (!sbx__provider_vt(p)->watch_dir)
		return sbx__unsupported(err, p, "watch_dir");
	if ((error = sbx__provider_vt(p)->watch_dir(sbx__provider_impl(p), &impl, id, path, &o, sig,
	                                            err)) < 0)
		return error;
	if (!(w = sbx__malloc(sizeof(*w)))) {
		sbx__provider_vt(p)->watch_free(impl);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	w->vt = sbx__provider_vt(p);
	w->impl = impl;
	*out = w;
	return 0;
}

int sbx_watch_next(sbx_watch_event *out, sbx_watch *w, uint64_t timeout_ms, sbx_signal *sig,
                   sbx_error *err)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !w)
		return sbx__error_set(err, SBX_EINVALID, "%s is NULL", !out ? "out" : "handle");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return w->vt->watch_next(w->impl, out, timeout_ms, sig, err);
}

void sbx_watch_free(sbx_watch *w)
{
	if (!w)
		return;
	w->vt->watch_free(w->impl);
	sbx__free(w);
}
