/*
 * contract/files.c: the public calls of sandbox/files.h (directory listings,
 * streamed reads and writes) and their free functions. Shared checks first
 * (aborted signal, NULL pointers, the path), then the provider's vtable.
 */
#include "contract/provider.h"

#include <sandbox/validate.h>
#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

static int unsupported(sbx_error *err, const sbx_provider *p, const char *method)
{
	return sbx__error_set(err, SBX_EINTERNAL, "provider %s does not implement %s",
	                      p->vt->name ? p->vt->name : "?", method);
}

/* aborted signal, provider, id, path: in the order of the contract's file calls */
static int check_file_call(const sbx_provider *p, const char *id, const char *path,
                           const sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__provider_check(p, sig, err)) < 0)
		return error;
	if (!id)
		return sbx__error_set(err, SBX_EINVALID, "id is NULL");
	if (!path)
		return sbx__error_set(err, SBX_EINVALID, "path is NULL");
	return sbx_validate_path(path, strlen(path), err);
}

void sbx_dir_free(sbx_dir *dir)
{
	if (!dir)
		return;
	for (size_t i = 0; i < dir->count; i++)
		sbx__free(dir->entries[i].name);
	sbx__free(dir->entries);
	sbx__free(dir);
}

int sbx_sandbox_list_dir(sbx_dir **out, sbx_provider *p, const char *id, const char *path,
                         sbx_signal *sig, sbx_error *err)
{
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__provider_check(p, sig, err)) < 0)
		return error;
	if (!out)
		return sbx__error_set(err, SBX_EINVALID, "out is NULL");
	if ((error = check_file_call(p, id, path, sig, err)) < 0)
		return error;
	if (!p->vt->list_dir)
		return unsupported(err, p, "list_dir");
	if ((error = p->vt->list_dir(p->impl, out, id, path, sig, err)) < 0) {
		sbx_dir_free(*out);
		*out = NULL;
	}
	return error;
}
