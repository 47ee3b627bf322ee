/*
 * contract/provider.c: the public sbx_sandbox_* functions.
 *
 * Each one zeroes its outputs, then runs the checks every provider shares in
 * the seed's order (docs/contract.md "Methods": the abort signal first, then the
 * argument checks), and only then calls the provider's vtable, so a bad
 * argument or an aborted signal never reaches the network. Checks that depend
 * on the provider (sandbox ids, names, limits on create) are the provider's.
 */
#include "contract/provider.h"
#include "contract/command.h"

#include <sandbox/validate.h>
#include <stddef.h>
#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

int sbx__provider_new(sbx_provider **out, const sbx_provider_vtable *vt, void *impl, sbx_error *err)
{
	sbx_provider *p;
	if (!out || !vt)
		return sbx__error_set(err, SBX_EINVALID, "provider vtable is required");
	*out = NULL;
	if (!(p = sbx__malloc(sizeof(*p))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	p->vt = vt;
	p->impl = impl;
	*out = p;
	return 0;
}

void sbx_provider_free(sbx_provider *p)
{
	if (!p)
		return;
	if (p->vt->free)
		p->vt->free(p->impl);
	sbx__free(p);
}

const sbx_provider_vtable *sbx__provider_vt(const sbx_provider *p)
{
	return p->vt;
}

void *sbx__provider_impl(const sbx_provider *p)
{
	return p->impl;
}

bool sbx_provider_concurrent_exec(const sbx_provider *p)
{
	return p && p->vt->concurrent_exec;
}

void sbx_exec_result_free(sbx_exec_result *res)
{
	if (!res)
		return;
	sbx__free(res->stdout_data);
	sbx__free(res->stderr_data);
	memset(res, 0, sizeof(*res));
}

void sbx_file_free(sbx_file *file)
{
	if (!file)
		return;
	sbx__free(file->data);
	sbx__free(file);
}

/* The checks every call starts with: aborted signal, then a provider. */
static int check_common(const sbx_provider *p, const sbx_signal *sig, sbx_error *err)
{
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	if (!p)
		return sbx__error_set(err, SBX_EINVALID, "provider is NULL");
	return 0;
}

int sbx__provider_check(const sbx_provider *p, const sbx_signal *sig, sbx_error *err)
{
	return check_common(p, sig, err);
}

int sbx__missing(sbx_error *err, const char *what)
{
	return sbx__error_set(err, SBX_EINVALID, "%s is NULL", what);
}

int sbx__unsupported(sbx_error *err, const sbx_provider *p, const char *method)
{
	return sbx__error_set(err, SBX_EINTERNAL, "provider %s does not implement %s",
	                      p->vt->name ? p->vt->name : "?", method);
}

int sbx__call_check(const sbx_provider *p, const sbx_signal *sig, unsigned need, const void *out,
                    const char *id, sbx_error *err)
{
	int error;
	if ((error = check_common(p, sig, err)) < 0)
		return error;
	if ((need & SBX__NEED_OUT) && !out)
		return sbx__missing(err, "out");
	if ((need & SBX__NEED_ID) && !id)
		return sbx__missing(err, "id");
	return 0;
}

int sbx_sandbox_create(char **id_out, sbx_provider *p, const char *name, const sbx_limits *limits,
                       sbx_signal *sig, sbx_error *err)
{
	int error;
	if (id_out)
		*id_out = NULL;
	if ((error = check_common(p, sig, err)) < 0)
		return error;
	if (!id_out)
		return sbx__missing(err, "id_out");
	if (!name)
		return sbx__missing(err, "name");
	if (!limits)
		return sbx__missing(err, "limits");
	if (!p->vt->create)
		return sbx__unsupported(err, p, "create");
	/* The provider validates the name first, then sbx_validate_limits (docs/contract.md
	 * "Lifecycle"). */
	if ((error = p->vt->create(p->impl, id_out, name, limits, sig, err)) < 0 && *id_out) {
		sbx__free(*id_out);
		*id_out = NULL;
	}
	return error;
}

int sbx_sandbox_resume(sbx_resume_status *out, sbx_provider *p, const char *id, sbx_signal *sig,
                       sbx_error *err)
{
	int error;
	if (out)
		*out = SBX_RESUMED;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if (!p->vt->resume)
		return sbx__unsupported(err, p, "resume");
	return p->vt->resume(p->impl, out, id, sig, err);
}

/* suspend, destroy, kill_all: (impl, id, sig, err) */
typedef int (*id_method)(void *impl, const char *id, sbx_signal *sig, sbx_error *err);

static int call_id_method(id_method fn, const char *method, sbx_provider *p, const char *id,
                          sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0)
		return error;
	if (!fn)
		return sbx__unsupported(err, p, method);
	return fn(p->impl, id, sig, err);
}

int sbx_sandbox_suspend(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err)
{
	return call_id_method(p ? p->vt->suspend : NULL, "suspend", p, id, sig, err);
}

int sbx_sandbox_destroy(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err)
{
	return call_id_method(p ? p->vt->destroy : NULL, "destroy", p, id, sig, err);
}

int sbx_sandbox_kill_all(sbx_provider *p, const char *id, sbx_signal *sig, sbx_error *err)
{
	return call_id_method(p ? p->vt->kill_all : NULL, "kill_all", p, id, sig, err);
}

int sbx_sandbox_destroy_by_name(sbx_provider *p, const char *name, sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = check_common(p, sig, err)) < 0)
		return error;
	if (!name)
		return sbx__missing(err, "name");
	if (!p->vt->destroy_by_name)
		return sbx__unsupported(err, p, "destroy_by_name");
	return p->vt->destroy_by_name(p->impl, name, sig, err);
}

int sbx_sandbox_kill_tagged(sbx_provider *p, const char *id, const char *const *tags, size_t ntags,
                            sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0)
		return error;
	if (ntags > 0 && !tags)
		return sbx__missing(err, "tags");
	for (size_t i = 0; i < ntags; i++) {
		if ((error = sbx_validate_tag(tags[i], err)) < 0)
			return error;
	}
	if (ntags == 0)
		return 0; /* an empty list sends no request (docs/contract.md "Lifecycle") */
	if (!p->vt->kill_tagged)
		return sbx__unsupported(err, p, "kill_tagged");
	return p->vt->kill_tagged(p->impl, id, tags, ntags, sig, err);
}

/* The seed's exec checks, in its order (docs/contract.md "exec"): tag, env keys; then ours
 * (timeout). */
int sbx__exec_options_check(const sbx_exec_options *o, sbx_error *err)
{
	sbx__command c = sbx__command_of_exec(o);
	int error;
	if ((error = sbx__command_check(&c, SBX__CMD_TIMEOUT, err)) < 0)
		return error;
	if (o->stdin_len > 0 && !o->stdin_data)
		return sbx__missing(err, "stdin_data");
	if (o->stdin_data && o->stdin_read)
		return sbx__error_set(err, SBX_EINVALID,
		                      "exec takes stdin_data or stdin_read, not both");
	return sbx__command_check_user(&c, err);
}

int sbx__exec_options_normalize(sbx_exec_options *o, const sbx_exec_options *in, sbx_error *err)
{
	static const sbx_exec_options defaults = SBX_EXEC_OPTIONS_INIT;

	*o = defaults;
	if (!in)
		return 0;
	/* version 1 callers have the struct only up to `tag`: read no further */
	if (in->version == 1)
		memcpy(o, in, offsetof(sbx_exec_options, on_output));
	else if (in->version == 2) /* up to stdin_payload: no `user` */
		memcpy(o, in, offsetof(sbx_exec_options, user));
	else if (in->version == SBX_EXEC_OPTIONS_VERSION)
		*o = *in;
	else
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_exec_options version %u",
		                      in->version);
	o->version = SBX_EXEC_OPTIONS_VERSION;
	return 0;
}

int sbx_sandbox_exec(sbx_exec_result *out, sbx_provider *p, const char *id, const char *command,
                     const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_exec_options o;
	int error;
	if (out)
		memset(out, 0, sizeof(*out));
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if ((error = sbx__exec_options_normalize(&o, opts, err)) < 0 ||
	    (error = sbx__exec_options_check(&o, err)) < 0)
		return error;
	if (!command)
		return sbx__missing(err, "command");
	if (!p->vt->exec)
		return sbx__unsupported(err, p, "exec");
	/* on failure out is zeroed, nothing leaks; except the output so far of a stream that
	 * ended without an exit status, which the provider leaves for the caller (SBX_EPROTOCOL) */
	if ((error = p->vt->exec(p->impl, out, id, command, &o, sig, err)) < 0 &&
	    error != SBX_EPROTOCOL)
		sbx_exec_result_free(out);
	return error;
}

static int check_path(const char *path, sbx_error *err)
{
	if (!path)
		return sbx__missing(err, "path");
	return sbx_validate_path(path, strlen(path), err);
}

int sbx_sandbox_read_file(sbx_file **out, sbx_provider *p, const char *id, const char *path,
                          size_t max_bytes, sbx_signal *sig, sbx_error *err)
{
	int error;
	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if ((error = check_path(path, err)) < 0)
		return error;
	if (!p->vt->read_file)
		return sbx__unsupported(err, p, "read_file");
	if ((error = p->vt->read_file(p->impl, out, id, path, max_bytes, sig, err)) < 0) {
		sbx_file_free(*out);
		*out = NULL;
	}
	return error;
}

int sbx_sandbox_write_file(sbx_provider *p, const char *id, const char *path, const void *data,
                           size_t len, sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0)
		return error;
	if ((error = check_path(path, err)) < 0)
		return error;
	if (len > 0 && !data)
		return sbx__missing(err, "data");
	if (!p->vt->write_file)
		return sbx__unsupported(err, p, "write_file");
	return p->vt->write_file(p->impl, id, path, data ? data : "", len, sig, err);
}

int sbx_sandbox_stat(sbx_stat *out, sbx_provider *p, const char *id, const char *path,
                     sbx_signal *sig, sbx_error *err)
{
	int error;
	if (out)
		memset(out, 0, sizeof(*out));
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0)
		return error;
	if ((error = check_path(path, err)) < 0)
		return error;
	if (!p->vt->stat)
		return sbx__unsupported(err, p, "stat");
	if ((error = p->vt->stat(p->impl, out, id, path, sig, err)) < 0)
		memset(out, 0, sizeof(*out));
	return error;
}
