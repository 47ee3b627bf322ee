/*
 * e2b/provider_transfer.c: files at wire speed with the contract's
 * permissions (docs/files.md "Moving bytes"): streamed reads and writes of
 * sandbox/files.h, the raw path of large read_file calls, and the removal of
 * staging files.
 *
 * envd's /files routes move raw bytes but act as root and follow symlinks,
 * so they only ever touch a root-only staging file under
 * /opt/capybara/upload. The step between that file and the caller's path
 * runs in the sandbox as the sandbox user (a read: STAGE_READ_SCRIPT; a
 * write: the seed's USER_WRITE_SCRIPT), under the file-op wrapper and its
 * kill path. A staging file is removed on every path out, success or not.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "e2b/envd_files.h"
#include "e2b/provider_int.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

#define TRANSFER_DEADLINE_MS 600000                    /* one upload or download, by default */
#define CLEANUP_TIMEOUT_MS   15000                     /* removing a staging file */
#define MAX_WANT             ((uint64_t)INT64_MAX - 1) /* head -c takes an intmax_t */
#define REPLAY_MAX           (4u << 20) /* source bytes kept to resend a refused upload */

static bool exited_with(const sbx__file_op *r, int code)
{
	return r->has_exit_code && r->exit_code == code;
}

static void staging_path(char out[sizeof(SBX_E2B_UPLOAD_DIR) + 40])
{
	char uuid[37];
	sbx__uuid(uuid);
	snprintf(out, sizeof(SBX_E2B_UPLOAD_DIR) + 40, "%s/%s", SBX_E2B_UPLOAD_DIR, uuid);
}

void sbx__e2b_remove_staging(sbx__e2b_provider *p, const sbx_envd_target *t, const char *staging)
{
	const char *args[4] = {"-c", sbx__e2b_remove_script, "capybara-rm", staging};
	sbx_log_field f[2] = {{"path", staging}, {"err", NULL}};
	sbx__file_op r = {0};
	sbx_error e = {0};

	/* no abort signal: this runs after one, and is short */
	if (sbx__e2b_file_op(p, t, SBX_E2B_ROOT_USER, args, 4, SBX_E2B_STDERR_ROOM,
	                     CLEANUP_TIMEOUT_MS, NULL, &r, &e) == 0 &&
	    exited_with(&r, 0)) {
		sbx__e2b_file_op_dispose(&r);
		return;
	}
	f[1].value = e.code ? e.message : "rm failed";
	sbx__e2b_log(p, SBX_LOG_WARN, "sandbox-e2b: could not remove a staging file", f, 2);
	sbx__e2b_file_op_dispose(&r);
}

/* ---- reads ---- */

typedef struct sink_state {
	sbx_sink_fn sink;
	void *payload;
	uint64_t max;
	uint64_t got;
	bool truncated;
} sink_state;

static int on_download(const unsigned char *p, size_t n, void *payload, sbx_error *err)
{
	sink_state *s = payload;
	size_t take = n;
	int rc;

	if (n > s->max - s->got) {
		take = (size_t)(s->max - s->got);
		s->truncated = true;
	}
	if (take > 0 && (rc = s->sink(p, take, s->payload)) != 0)
		return sbx__error_set(err, SBX_EUSER, "read stopped: the sink returned %d", rc);
	s->got += take;
	return s->truncated ? 1 : 0; /* the rest is not needed */
}

int sbx__e2b_staged_read(sbx__e2b_provider *p, const char *id, const char *path, uint64_t max,
                         uint64_t timeout_ms, uint64_t transfer_ms, sbx_sink_fn sink, void *payload,
                         sbx_read_result *out, sbx_signal *sig, sbx_error *err)
{
	char staging[sizeof(SBX_E2B_UPLOAD_DIR) + 40], want[32], se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	const char *args[7] = {"-c", sbx__e2b_stage_read_script, "capybara-stage", path, staging,
	                       want, sbx__e2b_read_script};
	sink_state s = {sink, payload, max, 0, false};
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	sbx_buf *into;
	uint64_t deadline;
	bool staged = false;
	int error;

	memset(out, 0, sizeof(*out));
	staging_path(staging);
	snprintf(want, sizeof(want), "%" PRIu64, (max > MAX_WANT ? MAX_WANT : max) + 1);
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	error = sbx__e2b_attached_file_op(p, &t, id, SBX_E2B_ROOT_USER, args, 7,
	                                  SBX_E2B_STDERR_ROOM, timeout_ms, sig, &r, err);
	staged = t.url != NULL; /* the copy may have begun; removing it is harmless */
	if (error < 0)
		goto done;
	if (exited_with(&r, 3) || exited_with(&r, 4)) {
		staged = false; /* the script removed it */
		goto done;      /* missing, or a directory: not found */
	}
	if (!exited_with(&r, 0) && sbx__e2b_runuser_no_sandbox(&r.err)) {
		staged = false;
		error = sbx__e2b_template_error(p, &t, err);
		goto done;
	}
	if (!exited_with(&r, 0)) {
		staged = false;
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot read %s: %s", path,
		                       sbx__e2b_stderr_text(&r.err, se, sizeof(se)));
		goto done;
	}
	out->found = true;
	deadline = sbx__now_ms() + (transfer_ms ? transfer_ms : TRANSFER_DEADLINE_MS);
	if (sink) {
		error = sbx__envd_download(p->http, &t, staging, SBX_E2B_ROOT_USER, on_download, &s,
		                           deadline, sig, err);
	} else {
		/* the staging file holds at most want = max + 1 bytes: all of them, kept whole */
		error = sbx__envd_download_buf(p->http, &t, staging, SBX_E2B_ROOT_USER, payload,
		                               (size_t)(max > MAX_WANT ? MAX_WANT : max) + 1,
		                               deadline, sig, err);
		into = payload;
		if (error == 0 && into->len > max) {
			into->len = (size_t)max;
			into->ptr[into->len] = '\0';
			s.truncated = true;
		}
		s.got = into->len;
	}
	if (error == SBX_ETIMEOUT || error == SBX_EABORTED)
		sbx__error_set(err, error,
		               error == SBX_ETIMEOUT ? "E2B file download timed out" : "aborted");
	out->bytes = s.got;
	out->truncated = s.truncated;
done:
	if (staged)
		sbx__e2b_remove_staging(p, &t, staging);
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	return error;
}

int sbx__e2b_read_stream(void *impl, sbx_read_result *out, const char *id, const char *path,
                         sbx_sink_fn sink, void *payload, const sbx_file_options *opts,
                         sbx_signal *sig, sbx_error *err)
{
	return sbx__e2b_staged_read(impl, id, path, opts->max_bytes, opts->timeout_ms,
	                            opts->transfer_timeout_ms, sink, payload, out, sig, err);
}

/* ---- writes ---- */

typedef struct source_state {
	sbx_input_fn fn;
	void *payload;
	int rc;        /* the source's non-zero return */
	bool overlong; /* it claimed more bytes than the buffer holds */
	/*
	 * The first bytes taken from the source, kept so that an upload refused
	 * because the sandbox was paused behind our back can be sent again after
	 * a connect; past REPLAY_MAX bytes they are dropped (no second try).
	 */
	sbx_buf replay;
	size_t replay_pos; /* while replaying: the next byte of replay to send */
	bool replaying;
	bool replay_lost;
} source_state;

static size_t pull(unsigned char *buf, size_t cap, void *payload)
{
	source_state *s = payload;
	size_t n = 0;

	if (s->replaying) {
		n = s->replay.len - s->replay_pos;
		if (n > cap)
			n = cap;
		if (n > 0) {
			memcpy(buf, s->replay.ptr + s->replay_pos, n);
			s->replay_pos += n;
			return n;
		}
		s->replaying = false;
	}
	if ((s->rc = s->fn(&n, buf, cap, s->payload)) != 0)
		return SIZE_MAX;
	if (n > cap) {
		s->overlong = true;
		return SIZE_MAX;
	}
	if (!s->replay_lost && n > 0 && sbx_buf_put(&s->replay, buf, n) < 0) {
		s->replay_lost = true; /* too much (or no memory) to send again: free it */
		sbx_buf_dispose(&s->replay);
	}
	return n;
}

static bool is_skills_path(const char *path)
{
	return strcmp(path, "/skills") == 0 || strncmp(path, "/skills/", 8) == 0;
}

/* The streamed staging upload of write_stream, as a step of sbx__e2b_with_attach. */
typedef struct stream_step {
	const char *staging;
	source_state *s;
	uint64_t deadline_ms; /* per attempt: from its start */
	bool *staged;
	sbx_signal *sig;
} stream_step;

static int stream_step_run(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local)
{
	stream_step *x = ctx;
	*x->staged = true;
	return sbx__envd_upload_stream(p->http, t, x->staging, SBX_E2B_ROOT_USER, pull, x->s,
	                               sbx__now_ms() + x->deadline_ms, x->sig, local);
}

/* Sent again only when what the source gave is all still here to replay. */
static bool stream_step_again(void *ctx)
{
	const stream_step *x = ctx;
	return !x->s->rc && !x->s->overlong && !x->s->replay_lost;
}

static void stream_step_reset(void *ctx)
{
	stream_step *x = ctx;
	x->s->replaying = true;
	x->s->replay_pos = 0;
	*x->staged = false;
}

int sbx__e2b_write_stream(void *impl, const char *id, const char *path, sbx_input_fn source,
                          void *payload, const sbx_file_options *opts, sbx_signal *sig,
                          sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	char staging[sizeof(SBX_E2B_UPLOAD_DIR) + 40], se[SBX_E2B_STDERR_MESSAGE_MAX + 1];
	const char *args[5] = {
	    "-c", is_skills_path(path) ? sbx__e2b_skills_write_script : sbx__e2b_user_write_script,
	    "capybara-write", path, staging};
	uint64_t ms = opts->timeout_ms ? opts->timeout_ms : 120000;
	source_state s = {source, payload, 0, false, SBX_BUF_INIT(REPLAY_MAX), 0, false, false};
	sbx_envd_target t = {0};
	sbx__file_op r = {0};
	sbx_error local = {0};
	bool staged = false;
	stream_step x = {staging, &s,
	                 opts->transfer_timeout_ms ? opts->transfer_timeout_ms
	                                           : TRANSFER_DEADLINE_MS,
	                 &staged, sig};
	sbx__e2b_step step = {stream_step_run, stream_step_again, stream_step_reset, &x};
	int error;

	staging_path(staging);
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	/* a sandbox paused behind our back refused the upload: connect, send it again */
	error = sbx__e2b_with_attach(p, &t, id, ms / 1000 + 1 + 120, &step, sig, &local, err);
	if (s.rc || s.overlong) {
		error = s.rc ? sbx__error_set(err, SBX_EUSER,
		                              "write stopped: the source returned %d", s.rc)
		             : sbx__error_set(err, SBX_EUSER,
		                              "write stopped: the source claimed more bytes than "
		                              "its buffer holds");
		goto done;
	}
	if (error < 0) {
		sbx__e2b_upload_failed(err, error, &local);
		goto done;
	}
	if ((error = sbx__e2b_file_op(p, &t, SBX_E2B_ROOT_USER, args, 5, SBX_E2B_STDERR_ROOM, ms,
	                              sig, &r, err)) < 0)
		goto done;
	if (!exited_with(&r, 0) && sbx__e2b_runuser_no_sandbox(&r.err)) {
		error = sbx__e2b_template_error(p, &t, err);
		goto done;
	}
	if (!exited_with(&r, 0)) {
		error = sbx__error_set(err, SBX_ESANDBOX, "cannot write %s: %s", path,
		                       sbx__e2b_stderr_text(&r.err, se, sizeof(se)));
		goto done;
	}
	staged = false; /* the script removed it */
done:
	sbx_buf_dispose(&s.replay);
	if (staged && error < 0)
		sbx__e2b_remove_staging(p, &t, staging);
	sbx__e2b_file_op_dispose(&r);
	sbx__envd_target_dispose(&t);
	return error;
}
