/*
 * contract/paths.c: the public calls of sandbox/paths.h (path info, remove,
 * make a directory, rename) and sbx_entry_info_free(). Shared checks first, in
 * the order of the contract's file calls (aborted signal, provider, NULL
 * pointers, id, paths, options), then the provider's vtable.
 */
#include "contract/provider.h"

#include <sandbox/validate.h>
#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

void sbx_entry_info_free(sbx_entry_info *e)
{
	if (!e)
		return;
	sbx__free(e->name);
	sbx__free(e->path);
	sbx__free(e->owner);
	sbx__free(e->group);
	sbx__free(e->symlink_target);
	sbx__free(e);
}

static int check_path(const char *path, const char *what, bool not_root, sbx_error *err)
{
	int error;
	if (!path)
		return sbx__missing(err, what);
	if ((error = sbx_validate_path(path, strlen(path), err)) < 0)
		return error;
	if (not_root && strcmp(path, "/") == 0)
		return sbx__error_set(err, SBX_EINVALID, "%s must not be \"/\"", what);
	return 0;
}

/* `opts` (NULL = defaults) into `o`, checked. */
static int take_options(sbx_path_options *o, const sbx_path_options *opts, sbx_error *err)
{
	static const sbx_path_options defaults = SBX_PATH_OPTIONS_INIT;
	*o = opts ? *opts : defaults;
	if (o->version != SBX_PATH_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_path_options version %u",
		                      o->version);
	if (o->user != SBX_USER_SANDBOX && o->user != SBX_USER_ROOT)
		return sbx__error_set(err, SBX_EINVALID,
		                      "sbx_path_options.user must be SBX_USER_SANDBOX or "
		                      "SBX_USER_ROOT, not %d",
		                      (int)o->user);
	return 0;
}

int sbx_sandbox_path_info(sbx_entry_info **out, sbx_provider *p, const char *id, const char *path,
                          const sbx_path_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_path_options o;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0 ||
	    (error = check_path(path, "path", false, err)) < 0 ||
	    (error = take_options(&o, opts, err)) < 0)
		return error;
	if (!p->vt->path_info)
		return sbx__unsupported(err, p, "path_info");
	if ((error = p->vt->path_info(p->impl, out, id, path, &o, sig, err)) < 0) {
		sbx_entry_info_free(*out);
		*out = NULL;
	}
	return error;
}

int sbx_sandbox_remove(sbx_provider *p, const char *id, const char *path,
                       const sbx_path_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_path_options o;
	int error;

	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0 ||
	    (error = check_path(path, "path", true, err)) < 0 ||
	    (error = take_options(&o, opts, err)) < 0)
		return error;
	if (!p->vt->remove)
		return sbx__unsupported(err, p, "remove");
	return p->vt->remove(p->impl, id, path, &o, sig, err);
}

int sbx_sandbox_make_dir(bool *created, sbx_provider *p, const char *id, const char *path,
                         const sbx_path_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_path_options o;
	bool made = false;
	int error;

	if (created)
		*created = false;
	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0 ||
	    (error = check_path(path, "path", false, err)) < 0 ||
	    (error = take_options(&o, opts, err)) < 0)
		return error;
	if (!p->vt->make_dir)
		return sbx__unsupported(err, p, "make_dir");
	if ((error = p->vt->make_dir(p->impl, &made, id, path, &o, sig, err)) == 0 && created)
		*created = made;
	return error;
}

int sbx_sandbox_rename(sbx_entry_info **out, sbx_provider *p, const char *id, const char *from,
                       const char *to, const sbx_path_options *opts, sbx_signal *sig,
                       sbx_error *err)
{
	sbx_path_options o;
	int error;

	if (out)
		*out = NULL;
	if ((error = sbx__call_check(p, sig, SBX__NEED_OUT | SBX__NEED_ID, out, id, err)) < 0 ||
	    (error = check_path(from, "from", true, err)) < 0 ||
	    (error = check_path(to, "to", true, err)) < 0 ||
	    (error = take_options(&o, opts, err)) < 0)
		return error;
	if (!p->vt->rename)
		return sbx__unsupported(err, p, "rename");
	if ((error = p->vt->rename(p->impl, out, id, from, to, &o, sig, err)) < 0) {
		sbx_entry_info_free(*out);
		*out = NULL;
	}
	return error;
}

int sbx_sandbox_write_files(sbx_provider *p, const char *id, const sbx_write_entry *files, size_t n,
                            const sbx_path_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_path_options o;
	size_t total = 0;
	int error;

	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0 ||
	    (error = take_options(&o, opts, err)) < 0)
		return error;
	if (n == 0 || n > SBX_WRITE_FILES_MAX)
		return sbx__error_set(err, SBX_EINVALID, "write_files takes 1..%d files, not %zu",
		                      SBX_WRITE_FILES_MAX, n);
	if (!files)
		return sbx__missing(err, "files");
	for (size_t i = 0; i < n; i++) {
		if ((error = check_path(files[i].path, "path", true, err)) < 0)
			return error;
		if (files[i].len > 0 && !files[i].data)
			return sbx__error_set(err, SBX_EINVALID, "data of %s is NULL",
			                      files[i].path);
		if (files[i].len > SBX_WRITE_FILES_MAX_BYTES - total)
			return sbx__error_set(err, SBX_EINVALID,
			                      "write_files takes at most %u bytes in all",
			                      SBX_WRITE_FILES_MAX_BYTES);
		total += files[i].len;
		for (size_t j = 0; j < i; j++)
			if (strcmp(files[i].path, files[j].path) == 0)
				return sbx__error_set(err, SBX_EINVALID, "%s is given twice",
				                      files[i].path);
	}
	if (!p->vt->write_files)
		return sbx__unsupported(err, p, "write_files");
	return p->vt->write_files(p->impl, id, files, n, &o, sig, err);
}
