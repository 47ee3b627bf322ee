/*
 * e2b/provider_paths.c: sandbox/paths.h for E2B (docs/paths.md): path info,
 * remove, make a directory, rename. Each is one in-sandbox script
 * (e2b/scripts/) run as a file operation (provider_fileop.c) as the call's user,
 * so permissions and symlinks resolve as that user; envd's Filesystem RPCs,
 * which run as root whatever the user, are not used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/provider_int.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/err.h"

#define ENTRY_OUTPUT_MAX (16 * 1024) /* one record: names, and a link target of <= 4095 bytes */

static const char *user_name(const sbx_path_options *o)
{
	return sbx__e2b_user_name(o->user);
}

static bool exited_with(const sbx__file_op *r, int code)
{
	return r->has_exit_code && r->exit_code == code;
}

/* Run `script NAME a1 [a2]` as the options' user; the output in r. */
static int run(sbx__e2b_provider *p, const char *id, const char *script, const char *name,
               const char *a1, const char *a2, const sbx_path_options *o, size_t max_out,
               sbx_signal *sig, sbx__file_op *r, sbx_error *err)
{
	sbx_envd_target t = {0};
	const char *args[5] = {"-c", script, name, a1, a2};
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) == 0)
		error = sbx__e2b_attached_file_op(p, &t, id, user_name(o), args, a2 ? 5 : 4,
		                                  max_out, o->timeout_ms, sig, r, err);
	sbx__envd_target_dispose(&t);
	return error;
}

static int failed(sbx_error *err, const char *verb, const char *path, const sbx__file_op *r)
{
	char se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	return sbx__error_set(err, SBX_ESANDBOX, "cannot %s %s: %s", verb, path,
	                      sbx__e2b_stderr_text(&r->err, se, sizeof(se)));
}

/* The next NUL-ended field of [*s, end) into *f (borrowed); false when there is none. */
static bool field(const char **s, const char *end, const char **f, size_t *n)
{
	const char *nul = *s < end ? memchr(*s, '\0', (size_t)(end - *s)) : NULL;
	if (!nul)
		return false;
	*f = *s;
	*n = (size_t)(nul - *s);
	*s = nul + 1;
	return true;
}

static bool parse_u64(const char *s, size_t n, unsigned base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (d >= base || v > (max - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

/* os.FileMode.String(): the type and mode letters Go sets, then rwxrwxrwx. */
static void permissions_text(char out[16], char type, uint32_t mode)
{
	size_t n = 0;
	if (type == 'd')
		out[n++] = 'd';
	if (type == 'l')
		out[n++] = 'L';
	if (type == 'b' || type == 'c')
		out[n++] = 'D';
	if (type == 'p')
		out[n++] = 'p';
	if (type == 's')
		out[n++] = 'S';
	if (mode & 04000)
		out[n++] = 'u';
	if (mode & 02000)
		out[n++] = 'g';
	if (type == 'c')
		out[n++] = 'c';
	if (mode & 01000)
		out[n++] = 't';
	if (n == 0)
		out[n++] = '-';
	for (int i = 0; i < 9; i++)
		out[n++] = (mode & (0400u >> i)) ? "rwxrwxrwx"[i] : '-';
	out[n] = '\0';
}

static const char *last_segment(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* The entry record (e2b/scripts/path_info_script.sh) of `path` into a new entry. SBX_EPROTOCOL when
 * malformed. */
static int parse_entry(sbx_entry_info **out, const sbx_buf *b, const char *path, sbx_error *err)
{
	const char *s = b->ptr ? (const char *)b->ptr : "", *end = s + b->len;
	const char *f[7], *dot;
	size_t n[7];
	uint64_t size, mode, sec, frac = 0;
	sbx_entry_info *e;

	for (int i = 0; i < 7; i++)
		if (!field(&s, end, &f[i], &n[i]))
			return sbx__error_set(err, SBX_EPROTOCOL, "malformed entry of %s", path);
	dot = memchr(f[5], '.', n[5]);
	if (s != end || n[0] != 1 || !strchr("fdlpscb", f[0][0]) ||
	    !parse_u64(f[1], n[1], 10, INT64_MAX, &size) ||
	    !parse_u64(f[2], n[2], 8, 07777, &mode) || n[3] == 0 || n[4] == 0 ||
	    !parse_u64(f[5], dot ? (size_t)(dot - f[5]) : n[5], 10, INT64_MAX, &sec))
		return sbx__error_set(err, SBX_EPROTOCOL, "malformed entry of %s", path);
	if (dot) { /* the first 9 fraction digits, padded: nanoseconds */
		size_t fl = n[5] - (size_t)(dot - f[5]) - 1;
		for (size_t i = 0; i < 9; i++) {
			char c = i < fl ? dot[1 + i] : '0';
			if (c < '0' || c > '9')
				return sbx__error_set(err, SBX_EPROTOCOL, "malformed entry of %s",
				                      path);
			frac = frac * 10 + (uint64_t)(c - '0');
		}
	}
	if (!(e = sbx__calloc(1, sizeof(*e))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	e->type = f[0][0] == 'f'   ? SBX_ENTRY_FILE
	          : f[0][0] == 'd' ? SBX_ENTRY_DIR
	          : f[0][0] == 'l' ? SBX_ENTRY_SYMLINK
	                           : SBX_ENTRY_OTHER;
	e->size = size;
	e->mode = (uint32_t)mode;
	permissions_text(e->permissions, f[0][0], e->mode);
	e->mtime_sec = (int64_t)sec;
	e->mtime_nsec = (uint32_t)frac;
	e->name = sbx__strdup(last_segment(path));
	e->path = sbx__strdup(path);
	e->owner = sbx__strndup(f[3], n[3]);
	e->group = sbx__strndup(f[4], n[4]);
	if (e->type == SBX_ENTRY_SYMLINK && !(e->symlink_target = sbx__strndup(f[6], n[6]))) {
		sbx_entry_info_free(e);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	if (!e->name || !e->path || !e->owner || !e->group) {
		sbx_entry_info_free(e);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	*out = e;
	return 0;
}

int sbx__e2b_path_info(void *impl, sbx_entry_info **out, const char *id, const char *path,
                       const sbx_path_options *o, sbx_signal *sig, sbx_error *err)
{
	sbx__file_op r = {0};
	int error;

	*out = NULL;
	if ((error = run(impl, id, sbx__e2b_path_info_script, "capybara-stat", path, NULL, o,
	                 ENTRY_OUTPUT_MAX + SBX_E2B_STDERR_ROOM, sig, &r, err)) < 0)
		goto done;
	if (exited_with(&r, 3))
		goto done; /* missing: NULL */
	if (!exited_with(&r, 0) || r.truncated) {
		error = failed(err, "stat", path, &r);
		goto done;
	}
	error = parse_entry(out, &r.out, path, err);
done:
	sbx__e2b_file_op_dispose(&r);
	return error;
}

int sbx__e2b_remove(void *impl, const char *id, const char *path, const sbx_path_options *o,
                    sbx_signal *sig, sbx_error *err)
{
	sbx__file_op r = {0};
	int error;

	if ((error = run(impl, id, sbx__e2b_remove_path_script, "capybara-remove", path, NULL, o,
	                 SBX_E2B_STDERR_ROOM, sig, &r, err)) == 0 &&
	    !exited_with(&r, 0))
		error = failed(err, "remove", path, &r);
	sbx__e2b_file_op_dispose(&r);
	return error;
}

int sbx__e2b_make_dir(void *impl, bool *created, const char *id, const char *path,
                      const sbx_path_options *o, sbx_signal *sig, sbx_error *err)
{
	sbx__file_op r = {0};
	int error;

	*created = false;
	if ((error = run(impl, id, sbx__e2b_make_dir_script, "capybara-mkdir", path, NULL, o,
	                 SBX_E2B_STDERR_ROOM, sig, &r, err)) < 0)
		goto done;
	if (exited_with(&r, 0))
		*created = true;
	else if (exited_with(&r, 5))
		error = sbx__error_set(err, SBX_ESANDBOX,
		                       "cannot make directory %s: a file is in the way", path);
	else if (!exited_with(&r, 4))
		error = failed(err, "make directory", path, &r);
done:
	sbx__e2b_file_op_dispose(&r);
	return error;
}

int sbx__e2b_rename(void *impl, sbx_entry_info **out, const char *id, const char *from,
                    const char *to, const sbx_path_options *o, sbx_signal *sig, sbx_error *err)
{
	sbx__file_op r = {0};
	int error;

	*out = NULL;
	if ((error = run(impl, id, sbx__e2b_rename_script, "capybara-rename", from, to, o,
	                 ENTRY_OUTPUT_MAX + SBX_E2B_STDERR_ROOM, sig, &r, err)) < 0)
		goto done;
	if (exited_with(&r, 3))
		goto done; /* `from` is missing: NULL */
	if (!exited_with(&r, 0) || r.truncated) {
		error = failed(err, "rename", from, &r);
		goto done;
	}
	error = parse_entry(out, &r.out, to, err);
done:
	sbx__e2b_file_op_dispose(&r);
	return error;
}
