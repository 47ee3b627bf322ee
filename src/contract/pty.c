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
#include "contract/provider.h"
#include "util/alloc.h"
#include "util/err.h"

struct sbx_pty {
	const sbx_provider_vtable *vt;
	void *impl; /* the provider's handle state */
	uint32_t pid;
};

static int check_provider(const sbx_provider *p, const sbx_signal *sig, const char *method,
                          bool has, sbx_error *err)
{
	int error;
	if ((error = sbx__provider_check(p, sig, err)) < 0)
		return error;
	return has ? 0 : sbx__unsupported(err, p, method);
}

static int check_options(sbx_pty_options *o, const sbx_pty_options *in, bool start, sbx_error *err)
{
	static const sbx_pty_options defaults = SBX_PTY_OPTIONS_INIT;
	sbx__command c;
	int error;

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
	if ((error = sbx__command_check(&c, false, err)) < 0)
		return error;
	return sbx__command_check_user(&c, err);
}

static int wrap(sbx_pty **out, const sbx_provider_vtable *vt, void *impl, uint32_t pid,
                sbx_error *err)
{
	sbx_pty *h = sbx__malloc(sizeof(*h));

	if (!h) {
		vt->pty_free(impl);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	h->vt = vt;
	h->impl = impl;
	h->pid = pid;
	*out = h;
	return 0;
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
	if ((error =
	         check_provider(p, sig, "pty_start", p && sbx__provider_vt(p)->pty_start, err)) < 0)
		return error;
	if (!out || !id)
		return sbx__error_set(err, SBX_EINVALID, "%s is NULL", !out ? "out" : "id");
	if ((error = check_options(&o, opts, true, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->pty_start(sbx__provider_impl(p), &impl, &pid, id, command,
	                                            &o, sig, err)) < 0)
		return error;
	return wrap(out, sbx__provider_vt(p), impl, pid, err);
}

int sbx_pty_attach(sbx_pty **out, sbx_provider *p, const char *id, uint32_t pid,
                   const sbx_pty_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_pty_options o;
	void *impl = NULL;
	int error;

	if (out)
		*out = NULL;
	if ((error = check_provider(p, sig, "pty_attach", p && sbx__provider_vt(p)->pty_attach,
	                            err)) < 0)
		return error;
	if (!out || !id)
		return sbx__error_set(err, SBX_EINVALID, "%s is NULL", !out ? "out" : "id");
	if (pid == 0)
		return sbx__error_set(err, SBX_EINVALID, "pid must be positive");
	if ((error = check_options(&o, opts, false, err)) < 0)
		return error;
	if ((error = sbx__provider_vt(p)->pty_attach(sbx__provider_impl(p), &impl, id, pid, &o, sig,
	                                             err)) < 0)
		return error;
	return wrap(out, sbx__provider_vt(p), impl, pid, err);
}

uint32_t sbx_pty_pid(const sbx_pty *h)
{
	return h ? h->pid : 0;
}

int sbx_pty_send_input(sbx_pty *h, const void *data, size_t len, sbx_signal *sig, sbx_error *err)
{
	if (!h)
		return sbx__error_set(err, SBX_EINVALID, "handle is NULL");
	if (len > 0 && !data)
		return sbx__error_set(err, SBX_EINVALID, "data is NULL");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	if (len == 0)
		return 0;
	return h->vt->pty_send_input(h->impl, data, len, sig, err);
}

int sbx_pty_resize(sbx_pty *h, uint16_t cols, uint16_t rows, sbx_signal *sig, sbx_error *err)
{
	if (!h)
		return sbx__error_set(err, SBX_EINVALID, "handle is NULL");
	if (cols == 0 || rows == 0)
		return sbx__error_set(err, SBX_EINVALID,
		                      "terminal size must be at least 1 x 1, not %u x %u",
		                      (unsigned)cols, (unsigned)rows);
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return h->vt->pty_resize(h->impl, cols, rows, sig, err);
}

int sbx_pty_kill(sbx_pty *h, sbx_signal *sig, sbx_error *err)
{
	if (!h)
		return sbx__error_set(err, SBX_EINVALID, "handle is NULL");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return h->vt->pty_kill(h->impl, sig, err);
}

int sbx_pty_wait(sbx_pty_result *out, sbx_pty *h, sbx_signal *sig, sbx_error *err)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !h)
		return sbx__error_set(err, SBX_EINVALID, "%s is NULL", !out ? "out" : "handle");
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return h->vt->pty_wait(h->impl, out, sig, err);
}

void sbx_pty_free(sbx_pty *h)
{
	if (!h)
		return;
	h->vt->pty_free(h->impl);
	sbx__free(h);
}
