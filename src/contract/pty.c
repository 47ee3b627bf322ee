/*
 * contract/pty.c: the public sbx_pty_* functions (sandbox/pty.h).
 *
 * As contract/process.c does: zero the outputs, check what every provider
 * shares (aborted signal, NULL pointers, the options: version, size, env by
 * exec's rules, user), then call the provider's vtable. A handle is the
 * provider's state plus the vtable that knows it; it must not outlive its
 * provider.
 */
#include <stddef.h>
#include <string.h>

#include "contract/command.h"
#include "contract/handle.h"
#include "contract/provider.h"
#include "util/alloc.h"
#include "util/err.h"

struct sbx_pty {
	sbx__handle base; /* the provider's state, its vtable, the pid */
};

static int check_options(sbx_pty_options *o, const sbx_pty_options *in, bool start, sbx_error *err)
{
	static const sbx_pty_options defaults = SBX_PTY_OPTIONS_INIT;
	sbx__command c;

	*o = in ? *in : defaults;
	if (o->version != SBX_PTY_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_pty_options version %u",
		                      o->version);
	if (!start)
		return 0; /* attach uses only the callback */
	if (o->cols == 0 || o->rows == 0)
		return sbx__error_set(err, SBX_EINVALID,
		                      "terminal size must be at least 1 x 1, not %u x %u",
		                      (unsigned)o->cols, (unsigned)o->rows);
	c = sbx__command_of_pty(o); /* no tag; its timeout_ms may be 0 (none) */
	return sbx__command_check(&c, SBX__CMD_USER, err);
}

int sbx_pty_start(sbx_pty **out, sbx_provider *p, const char *id, const char *command,
                  const sbx_pty_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_pty_options o;
	void *impl = NULL;
	uint32_t pid = 0;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__provider_check_method(p, sig, "pty_start",
	                                        p && sbx__provider_vt(p)->pty_start,
	                                        SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if ((error = check_options(&o, opts, true, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->pty_start(sbx__provider_impl(p), &impl, &pid, id, command,
	                                            &o, sig, err)) < 0)
		return error;
	*out = sbx__handle_new(sizeof(**out), sbx__provider_vt(p), impl, pid,
	                       sbx__provider_vt(p)->pty_free, err);
	return *out ? 0 : SBX_ENOMEM;
}

int sbx_pty_attach(sbx_pty **out, sbx_provider *p, const char *id, uint32_t pid,
                   const sbx_pty_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_pty_options o;
	void *impl = NULL;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__provider_check_method(p, sig, "pty_attach",
	                                        p && sbx__provider_vt(p)->pty_attach,
	                                        SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (pid == 0)
		return sbx__error_set(err, SBX_EINVALID, "pid must be positive");
	if ((error = check_options(&o, opts, false, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->pty_attach(sbx__provider_impl(p), &impl, id, pid, &o, sig,
	                                             err)) < 0)
		return error;
	*out = sbx__handle_new(sizeof(**out), sbx__provider_vt(p), impl, pid,
	                       sbx__provider_vt(p)->pty_free, err);
	return *out ? 0 : SBX_ENOMEM;
}

uint32_t sbx_pty_pid(const sbx_pty *h)
{
	return h ? h->base.pid : 0;
}

int sbx_pty_send_input(sbx_pty *h, const void *data, size_t len, sbx_signal *sig, sbx_error *err)
{
	int error;

	if (h && len > 0 && !data)
		return sbx__error_set(err, SBX_EINVALID, "data is NULL");
	if ((error = sbx__handle_check(h, sig, err)) < 0)
		return error;
	if (len == 0)
		return 0;
	return h->base.vt->pty_send_input(h->base.impl, data, len, sig, err);
}

int sbx_pty_resize(sbx_pty *h, uint16_t cols, uint16_t rows, sbx_signal *sig, sbx_error *err)
{
	int error;

	if (h && (cols == 0 || rows == 0))
		return sbx__error_set(err, SBX_EINVALID,
		                      "terminal size must be at least 1 x 1, not %u x %u",
		                      (unsigned)cols, (unsigned)rows);
	if ((error = sbx__handle_check(h, sig, err)) < 0)
		return error;
	return h->base.vt->pty_resize(h->base.impl, cols, rows, sig, err);
}

int sbx_pty_kill(sbx_pty *h, sbx_signal *sig, sbx_error *err)
{
	int error;

	if ((error = sbx__handle_check(h, sig, err)) < 0)
		return error;
	return h->base.vt->pty_kill(h->base.impl, sig, err);
}

int sbx_pty_wait(sbx_pty_result *out, sbx_pty *h, sbx_signal *sig, sbx_error *err)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !h)
		return sbx__error_set(err, SBX_EINVALID, "%s is NULL", !out ? "out" : "handle");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return h->base.vt->pty_wait(h->base.impl, out, sig, err);
}

void sbx_pty_free(sbx_pty *h)
{
	if (!h)
		return;
	h->base.vt->pty_free(h->base.impl);
	sbx__free(h);
}
