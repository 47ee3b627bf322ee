/*
 * contract/info.c: the public calls of sandbox/info.h (list, get_info) and
 * their free functions. Shared checks first (aborted signal, NULL pointers,
 * options version and state), then the provider's vtable.
 */
#include "contract/provider.h"

#include <stddef.h>
#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

static void info_dispose(sbx_sandbox_info *i)
{
	sbx__free(i->id);
	sbx__free(i->name);
	sbx__free(i->template_id);
	memset(i, 0, sizeof(*i));
}

void sbx_sandbox_info_free(sbx_sandbox_info *info)
{
	if (!info)
		return;
	info_dispose(info);
	sbx__free(info);
}

void sbx_info_list_free(sbx_info_list *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->count; i++)
		info_dispose(&list->items[i]);
	sbx__free(list->items);
	sbx__free(list);
}

int sbx_sandbox_list(sbx_info_list **out, sbx_provider *p, const sbx_list_options *opts,
                     sbx_signal *sig, sbx_error *err)
{
	static const sbx_list_options defaults = SBX_LIST_OPTIONS_INIT;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT, out, NULL, err)) < 0)
		return error;
	sbx_list_options o = defaults;
	if (opts && opts->version == 1) /* ends at `state`: `all` is not read */
		memcpy(&o, opts, offsetof(sbx_list_options, all));
	else if (opts)
		o = *opts;
	if (o.version != 1 && o.version != SBX_LIST_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_list_options version %u",
		                      o.version);
	o.version = SBX_LIST_OPTIONS_VERSION;
	opts = &o;
	if (opts->state != SBX_STATE_ANY && opts->state != SBX_STATE_RUNNING &&
	    opts->state != SBX_STATE_PAUSED)
		return sbx__error_set(err, SBX_EINVALID, "unknown sandbox state filter %d",
		                      (int)opts->state);
	if (!p->vt->list)
		return sbx__unsupported(err, p, "list");
	if ((error = p->vt->list(p->impl, out, opts, sig, err)) < 0) {
		sbx_info_list_free(*out);
		*out = NULL;
	}
	return error;
}

int sbx_sandbox_get_info(sbx_sandbox_info **out, sbx_provider *p, const char *id, sbx_signal *sig,
                         sbx_error *err)
{
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (!p->vt->get_info)
		return sbx__unsupported(err, p, "get_info");
	if ((error = p->vt->get_info(p->impl, out, id, sig, err)) < 0) {
		sbx_sandbox_info_free(*out);
		*out = NULL;
	}
	return error;
}
