/*
 * contract/process.c: the public sbx_process_* functions (sandbox/process.h).
 *
 * As contract/provider.c does for the contract: zero the outputs, check what
 * every provider shares (aborted signal, NULL pointers, options by exec's
 * rules), then call the provider's vtable. A handle is the provider's state
 * plus the vtable that knows it; it must not outlive its provider.
 */
#include <stddef.h>
#include <string.h>

#include "contract/command.h"
#include "contract/handle.h"
#include "contract/provider.h"
#include "util/alloc.h"
#include "util/err.h"

struct sbx_process {
	sbx__handle base; /* the provider's state, its vtable, the pid */
};

/* Options by exec's rules (tag, env keys and values, timeout > 0). */
static int check_options(sbx_process_options *o, const sbx_process_options *in, bool start,
                         sbx_error *err)
{
	static const sbx_process_options defaults = SBX_PROCESS_OPTIONS_INIT;
	sbx__command c;

	*o = defaults;
	if (in && in->version == 1) /* up to output_payload: no `user` */
		memcpy(o, in, offsetof(sbx_process_options, user));
	else if (in)
		*o = *in;
	if (o->version != 1 && o->version != SBX_PROCESS_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID,
		                      "unsupported sbx_process_options version %u", o->version);
	o->version = SBX_PROCESS_OPTIONS_VERSION;
	if (!start)
		return 0; /* attach uses only the budget and the callback */
	c = sbx__command_of_process(o);
	return sbx__command_check(&c, SBX__CMD_TIMEOUT | SBX__CMD_USER, err);
}

int sbx_process_start(sbx_process **out, sbx_provider *p, const char *id, const char *command,
                      const sbx_process_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_process_options o;
	void *impl = NULL;
	uint32_t pid = 0;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__provider_check_method(p, sig, "process_start",
	                                        p && sbx__provider_vt(p)->process_start,
	                                        SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (!command)
		return sbx__missing(err, "command");
	if ((error = check_options(&o, opts, true, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->process_start(sbx__provider_impl(p), &impl, &pid, id,
	                                                command, &o, sig, err)) < 0)
		return error;
	*out = sbx__handle_new(sizeof(**out), sbx__provider_vt(p), impl, pid,
	                       sbx__provider_vt(p)->process_free, err);
	return *out ? 0 : SBX_ENOMEM;
}

int sbx_process_attach(sbx_process **out, sbx_provider *p, const char *id, uint32_t pid,
                       const sbx_process_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_process_options o;
	void *impl = NULL;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__provider_check_method(p, sig, "process_attach",
	                                        p && sbx__provider_vt(p)->process_attach,
	                                        SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (pid == 0)
		return sbx__error_set(err, SBX_EINVALID, "pid must be positive");
	if ((error = check_options(&o, opts, false, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->process_attach(sbx__provider_impl(p), &impl, id, pid, &o,
	                                                 sig, err)) < 0)
		return error;
	*out = sbx__handle_new(sizeof(**out), sbx__provider_vt(p), impl, pid,
	                       sbx__provider_vt(p)->process_free, err);
	return *out ? 0 : SBX_ENOMEM;
}

uint32_t sbx_process_pid(const sbx_process *h)
{
	return h ? h->base.pid : 0;
}

int sbx_process_wait(sbx_exec_result *out, sbx_process *h, sbx_signal *sig, sbx_error *err)
{
	int error;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !h)
		return sbx__error_set(err, SBX_EINVALID, "%s is NULL", !out ? "out" : "handle");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	if ((error = h->base.vt->process_wait(h->base.impl, out, sig, err)) < 0 &&
	    error != SBX_EPROTOCOL)
		sbx_exec_result_free(out);
	return error;
}

int sbx_process_send_stdin(sbx_process *h, const void *data, size_t len, sbx_signal *sig,
                           sbx_error *err)
{
	int error;

	if (h && len > 0 && !data)
		return sbx__error_set(err, SBX_EINVALID, "data is NULL");
	if ((error = sbx__handle_check(h, sig, err)) < 0)
		return error;
	if (len == 0)
		return 0;
	return h->base.vt->process_send_stdin(h->base.impl, data, len, sig, err);
}

int sbx_process_close_stdin(sbx_process *h, sbx_signal *sig, sbx_error *err)
{
	int error;

	if ((error = sbx__handle_check(h, sig, err)) < 0)
		return error;
	return h->base.vt->process_close_stdin(h->base.impl, sig, err);
}

int sbx_process_kill(sbx_process *h, sbx_signal *sig, sbx_error *err)
{
	int error;

	if ((error = sbx__handle_check(h, sig, err)) < 0)
		return error;
	return h->base.vt->process_kill(h->base.impl, sig, err);
}

void sbx_process_free(sbx_process *h)
{
	if (!h)
		return;
	h->base.vt->process_free(h->base.impl);
	sbx__free(h);
}

int sbx_process_kill_pid(sbx_provider *p, const char *id, uint32_t pid, sbx_signal *sig,
                         sbx_error *err)
{
	int error;

	if ((error = sbx__provider_check_method(p, sig, "process_kill_pid",
	                                        p && sbx__provider_vt(p)->process_kill_pid,
	                                        SBX__NEED_ID, NULL, id, err)) < 0)
		return error;
	if (pid == 0)
		return sbx__error_set(err, SBX_EINVALID, "pid must be positive");
	return sbx__provider_vt(p)->process_kill_pid(sbx__provider_impl(p), id, pid, sig, err);
}

int sbx_process_list(sbx_process_info_list **out, sbx_provider *p, const char *id, sbx_signal *sig,
                     sbx_error *err)
{
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__provider_check_method(p, sig, "process_list",
	                                        p && sbx__provider_vt(p)->process_list,
	                                        SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->process_list(sbx__provider_impl(p), out, id, sig, err)) <
	    0) {
		sbx_process_info_list_free(*out);
		*out = NULL;
	}
	return error;
}

void sbx_process_info_list_free(sbx_process_info_list *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->count; i++) {
		sbx_process_info *it = &list->items[i];
		sbx__free(it->cmd);
		for (size_t j = 0; j < it->nargs; j++)
			sbx__free(it->args[j]);
		sbx__free(it->args);
		sbx__free(it->cwd);
		sbx__free(it->tag);
	}
	sbx__free(list->items);
	sbx__free(list);
}
