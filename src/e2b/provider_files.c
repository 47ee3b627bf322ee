/*
 * e2b/provider_files.c: file operations in a sandbox — the contract's
 * read_file, write_file and stat (docs/contract.md "Files"), and the
 * directory listing of sandbox/files.h (docs/files.md).
 *
 * Each runs an in-sandbox script (e2b/scripts/) as a file operation
 * (provider_fileop.c) as the sandbox user, so permissions and symlinks resolve
 * as that user; only a write's staging step touches root-owned files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/envd_files.h"
#include "e2b/provider_int.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define UPLOAD_DEADLINE_MS 600000      /* one upload (the seed has none; we bound it) */
#define LIST_OUTPUT_MAX    (32u << 20) /* a listing's output: 100 000 entries of 255 bytes */
#define RAW_THRESHOLD      (4u << 20)  /* larger files are read raw (GET /files) */
#define FILE_OP_MIN_SECONDS                                                                        \
	240 /* the 120 s file operation + the 120 s margin: attach covers it                       \
	     */

static bool exited_with(const sbx__file_op *r, int code)
{
	return r->has_exit_code && r->exit_code == code;
}

static const char *stderr_of(const sbx__file_op *r, char *buf, size_t buflen)
{
	return sbx__e2b_stderr_text(&r->err, buf, buflen);
}

/*
 * A file over RAW_THRESHOLD: raw through a staging file into f (the seed's shape of result).
 * The download's own buffer becomes f->data: the bytes are copied once, from curl's buffer.
 */
static int read_raw(sbx__e2b_provider *p, sbx_file **out, const char *id, const char *path,
                    size_t max_bytes, sbx_signal *sig, sbx_error *err)
{
	sbx_buf b = SBX_BUF_INIT(max_bytes + 1);
	sbx_read_result rr;
	sbx_file *f = NULL;
	int error;

	error = sbx__e2b_staged_read(p, id, path, max_bytes, 0, 0, NULL, &b, &rr, sig, err);
	if (error < 0 || !rr.found)
		goto done;
	if (!(f = sbx__calloc(1, sizeof(*f))) || sbx_buf_put(&b, "", 0) < 0 ||
	    sbx_buf_detach(&b, &f->data, &f->len) < 0) {
		sbx__free(f);
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	f->truncated = rr.truncated;
	*out = f;
done:
	sbx_buf_dispose(&b);
	return error;
}

int sbx__e2b_read_file(void *impl, sbx_file **out, const char *id, const char *path,
                       size_t max_bytes, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	char want[32], limit[32], se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	const char *args[6] = {"-c", sbx__e2b_read_script, "capybara-read", path, want, limit};
	size_t nargs = 5;
	sbx_file *f = NULL;
	int error;

	*out = NULL;
	if (max_bytes > SBX_E2B_MAX_OUTPUT_CAP - SBX_E2B_STDERR_ROOM - 1)
		max_bytes = SBX_E2B_MAX_OUTPUT_CAP - SBX_E2B_STDERR_ROOM - 1;
	snprintf(want, sizeof(want), "%zu", max_bytes + 1);
	if (max_bytes > RAW_THRESHOLD) {
		/* a large file may come raw (docs/files.md "Moving bytes"): the script
		 * says so with exit 5 */
		args[1] = sbx__e2b_read_sized_script;
		snprintf(limit, sizeof(limit), "%u", RAW_THRESHOLD);
		nargs = 6;
	}
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attached_file_op(p, &t, id, SBX_E2B_SANDBOX_USER, args, nargs,
	                                       max_bytes + 1 + SBX_E2B_STDERR_ROOM, 0, sig, &r,
	                                       err)) < 0)
		goto done;
	if (exited_with(&r, 3) || exited_with(&r, 4))
		goto done; /* missing, or a directory: NULL */
	if (nargs == 6 && exited_with(&r, 5)) {
		error = read_raw(p, out, id, path, max_bytes, sig, err);
		goto done;
	}
	if (!exited_with(&r, 0)) {
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot read %s: %s", path,
		                       stderr_of(&r, se, sizeof(se)));
		goto done;
	}
	if (!(f = sbx__calloc(1, sizeof(*f)))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	f->truncated = r.out.len > max_bytes;
	if ((error = sbx_buf_detach(&r.out, &f->data, &f->len)) < 0) {
		sbx__free(f);
		error = sbx__error_set(err, error, "out of memory");
		goto done;
	}
	if (f->truncated) {
		f->len = max_bytes;
		f->data[max_bytes] = '\0';
	}
	*out = f;
done:
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	return error;
}

static bool is_skills_path(const char *path)
{
	return strcmp(path, "/skills") == 0 || strncmp(path, "/skills/", 8) == 0;
}

/* The staging upload of write_file, as a step of sbx__e2b_with_attach. */
typedef struct upload_step {
	const char *staging;
	const void *data;
	size_t len;
	sbx_signal *sig;
} upload_step;

static int upload_step_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	upload_step *x = ctx;
	/* bytes go to a root-only staging file; the script writes the target as the user */
	return sbx__envd_upload(p->http, t, x->staging, SBX_E2B_ROOT_USER, x->data, x->len,
	                        sbx__now_ms() + UPLOAD_DEADLINE_MS, x->sig, local);
}

int sbx__e2b_write_file(void *impl, const char *id, const char *path, const void *data, size_t len,
                        sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	char uuid[37], staging[sizeof(SBX_E2B_UPLOAD_DIR) + 40], se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	bool skills = is_skills_path(path);
	upload_step x = {staging, data, len, sig};
	sbx__e2b_step step = {upload_step_run, NULL, NULL, &x};
	sbx_error local = {0};
	const char *args[5] = {"-c",
	                       skills ? sbx__e2b_skills_write_script : sbx__e2b_user_write_script,
	                       "capybara-write", path, staging};
	int error;

	sbx__uuid(uuid);
	snprintf(staging, sizeof(staging), "%s/%s", SBX_E2B_UPLOAD_DIR, uuid);
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		goto done;
	/* refused before a byte was stored (a sandbox paused behind our back): connect, again */
	error = sbx__e2b_with_attach(p, &t, id, FILE_OP_MIN_SECONDS, &step, sig, &local, err);
	if (error < 0) {
		sbx__e2b_upload_failed(err, error, &local);
		if (t.url) /* envd may have stored part of it */
			sbx__e2b_remove_staging(p, &t, staging);
		goto done;
	}
	if ((error = sbx__e2b_file_op(p, &t, SBX_E2B_ROOT_USER, args, 5, SBX_E2B_STDERR_ROOM, 0,
	                              sig, &r, err)) < 0) {
		/* the upload is in place but the script may not have run: remove it */
		sbx__e2b_remove_staging(p, &t, staging);
		goto done;
	}
	if (!exited_with(&r, 0) && sbx__e2b_runuser_no_sandbox(&r.err))
		error = sbx__e2b_template_error(p, &t, err);
	else if (!exited_with(&r, 0))
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot write %s: %s", path,
		                       stderr_of(&r, se, sizeof(se)));
done:
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	return error;
}

/* ^(\d+) (file|directory)\n?$ */
static bool parse_stat(const sbx_buf *b, uint64_t *size, bool *is_dir)
{
	const char *s = b->ptr ? (const char *)b->ptr : "", *end = s + b->len;
	uint64_t v = 0;
	size_t rest;

	if (s == end || *s < '0' || *s > '9')
		return false;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	rest = (size_t)(end - s);
	if (end > s && end[-1] == '\n')
		rest--;
	if (rest == 5 && memcmp(s, " file", 5) == 0)
		*is_dir = false;
	else if (rest == 10 && memcmp(s, " directory", 10) == 0)
		*is_dir = true;
	else
		return false;
	*size = v;
	return true;
}

int sbx__e2b_stat(void *impl, sbx_stat *out, const char *id, const char *path, sbx_signal *sig,
                  sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	const char *args[4] = {"-c", sbx__e2b_stat_script, "capybara-stat", path};
	char se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	uint64_t size;
	bool is_dir;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attached_file_op(p, &t, id, SBX_E2B_SANDBOX_USER, args, 4,
	                                       SBX_E2B_STDERR_ROOM, 0, sig, &r, err)) < 0)
		goto done;
	if (exited_with(&r, 3))
		goto done; /* exists = false */
	if (!exited_with(&r, 0) || !parse_stat(&r.out, &size, &is_dir)) {
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot stat %s: %s", path,
		                       stderr_of(&r, se, sizeof(se)));
		goto done;
	}
	out->exists = true;
	out->size = size;
	out->is_dir = is_dir;
done:
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	return error;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const sbx_dir_entry *)a)->name, ((const sbx_dir_entry *)b)->name);
}

/*
 * The LIST_SCRIPT output: records "<%y> <size> <name>\0" (find -printf). A
 * cut-off last record (truncated output) is dropped; any other malformed
 * record is SBX_EPROTOCOL.
 */
static int parse_listing(sbx_dir *d, const sbx_buf *b, bool cut, sbx_error *err)
{
	const char *s = b->ptr ? (const char *)b->ptr : "", *end = s + b->len, *rec, *nul, *sp;
	size_t cap = 0;
	uint64_t size;

	for (rec = s; rec < end; rec = nul + 1) {
		if (!(nul = memchr(rec, '\0', (size_t)(end - rec)))) {
			if (cut)
				break;
			return sbx__error_set(err, SBX_EPROTOCOL,
			                      "directory listing ended inside an entry");
		}
		if (d->count >= SBX_DIR_MAX_ENTRIES) {
			d->truncated = true;
			break;
		}
		/* "<t> <digits> <name>" */
		if (nul - rec < 5 || rec[1] != ' ' || rec[2] < '0' || rec[2] > '9')
			return sbx__error_set(err, SBX_EPROTOCOL, "malformed directory listing");
		size = 0;
		for (sp = rec + 2; sp < nul && *sp >= '0' && *sp <= '9'; sp++) {
			if (size > (UINT64_MAX - 9) / 10)
				return sbx__error_set(err, SBX_EPROTOCOL,
				                      "malformed directory listing");
			size = size * 10 + (uint64_t)(*sp - '0');
		}
		if (sp + 1 >= nul || *sp != ' ' || memchr(sp + 1, '/', (size_t)(nul - sp - 1)))
			return sbx__error_set(err, SBX_EPROTOCOL, "malformed directory listing");
		if (d->count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			sbx_dir_entry *ne = sbx__realloc(d->entries, ncap * sizeof(*ne));
			if (!ne)
				return sbx__error_set(err, SBX_ENOMEM, "out of memory");
			d->entries = ne;
			cap = ncap;
		}
		sbx_dir_entry *e = &d->entries[d->count];
		e->type = rec[0] == 'f'   ? SBX_ENTRY_FILE
		          : rec[0] == 'd' ? SBX_ENTRY_DIR
		          : rec[0] == 'l' ? SBX_ENTRY_SYMLINK
		                          : SBX_ENTRY_OTHER;
		e->size = size;
		if (!(e->name = sbx__strndup(sp + 1, (size_t)(nul - sp - 1))))
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
		d->count++;
	}
	if (cut)
		d->truncated = true;
	if (d->count > 1)
		qsort(d->entries, d->count, sizeof(*d->entries), entry_cmp);
	return 0;
}

int sbx__e2b_list_dir(void *impl, sbx_dir **out, const char *id, const char *path, sbx_signal *sig,
                      sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	const char *args[4] = {"-c", sbx__e2b_list_script, "capybara-list", path};
	char se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	sbx_dir *d = NULL;
	int error;

	*out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attached_file_op(p, &t, id, SBX_E2B_SANDBOX_USER, args, 4,
	                                       LIST_OUTPUT_MAX, 0, sig, &r, err)) < 0)
		goto done;
	if (exited_with(&r, 3))
		goto done; /* missing: NULL */
	if (exited_with(&r, 4)) {
		/* envd's ListDir code for a file, as data (docs/files.md) */
		error = sbx__error_set_http(err, SBX_ESANDBOX, 0, "invalid_argument",
		                            "cannot list %s: it is a file, not a directory", path);
		goto done;
	}
	if (!exited_with(&r, 0)) {
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot list %s: %s", path,
		                       stderr_of(&r, se, sizeof(se)));
		goto done;
	}
	if (!(d = sbx__calloc(1, sizeof(*d)))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	if ((error = parse_listing(d, &r.out, r.truncated, err)) < 0)
		goto done;
	*out = d;
	d = NULL;
done:
	sbx_dir_free(d);
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	return error;
}

/* ---- write_files: E2B's files.write([...]) ---- */

/* The staging upload of every file in one multipart POST, as a step of sbx__e2b_with_attach. */
typedef struct upload_many_step {
	const sbx_http_part *parts;
	size_t n;
	sbx_signal *sig;
} upload_many_step;

static int upload_many_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	upload_many_step *x = ctx;
	return sbx__envd_upload_many(p->http, t, SBX_E2B_ROOT_USER, x->parts, x->n,
	                             sbx__now_ms() + UPLOAD_DEADLINE_MS, x->sig, local);
}

/* Best effort, as root: the staging files of a failed upload (envd may have stored some). */
static void remove_stagings(sbx__e2b_provider *p, const sbx_envd_target *t, char (*staging)[96],
                            size_t n)
{
	for (size_t i = 0; i < n; i++)
		sbx__e2b_remove_staging(p, t, staging[i]);
}

int sbx__e2b_write_files(void *impl, const char *id, const sbx_write_entry *files, size_t n,
                         const sbx_path_options *o, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	char(*staging)[96] = NULL, uuid[37], se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	const char **args = NULL;
	sbx_http_part *parts = NULL;
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	sbx_error local = {0};
	upload_many_step x;
	sbx__e2b_step step = {upload_many_run, NULL, NULL, &x};
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if (!(staging = sbx__calloc(n, sizeof(*staging))) ||
	    !(parts = sbx__calloc(n, sizeof(*parts))) ||
	    !(args = sbx__calloc(2 * n + 4, sizeof(*args)))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	sbx__uuid(uuid);
	args[0] = "-c";
	args[1] = sbx__e2b_write_many_script;
	args[2] = "capybara-write";
	args[3] = o->user == SBX_USER_ROOT ? "root" : "sandbox";
	for (size_t i = 0; i < n; i++) {
		snprintf(staging[i], sizeof(staging[i]), "%s/%s-%zu", SBX_E2B_UPLOAD_DIR, uuid, i);
		parts[i] = (sbx_http_part){staging[i], files[i].data, files[i].len};
		args[4 + 2 * i] = files[i].path;
		args[5 + 2 * i] = staging[i];
	}
	x = (upload_many_step){parts, n, sig};
	/* one upload of every file to root-only staging files, then one step as the user */
	error = sbx__e2b_with_attach(p, &t, id, FILE_OP_MIN_SECONDS, &step, sig, &local, err);
	if (error < 0) {
		sbx__e2b_upload_failed(err, error, &local);
		if (t.url)
			remove_stagings(p, &t, staging, n);
		goto done;
	}
	if ((error = sbx__e2b_file_op(p, &t, SBX_E2B_ROOT_USER, args, 2 * n + 4,
	                              SBX_E2B_STDERR_ROOM, o->timeout_ms, sig, &r, err)) < 0) {
		remove_stagings(p, &t, staging, n); /* the step may not have run */
		goto done;
	}
	if (!exited_with(&r, 0) && sbx__e2b_runuser_no_sandbox(&r.err)) {
		error = sbx__e2b_template_error(p, &t, err);
	} else if (!exited_with(&r, 0)) {
		char failed[SBX_E2B_STDERR_MESSAGE_MAX + 1];
		size_t k = r.out.len < sizeof(failed) - 1 ? r.out.len : sizeof(failed) - 1;
		memcpy(failed, r.out.ptr ? (const char *)r.out.ptr : "", k);
		failed[k] = '\0';
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot write %s: %s",
		                       k ? failed : "the files", stderr_of(&r, se, sizeof(se)));
	}
done:
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	sbx__free(args);
	sbx__free(parts);
	sbx__free(staging);
	return error;
}
