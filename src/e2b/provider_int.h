/*
 * e2b/provider_int.h: what provider.c (lifecycle), provider_attach.c (attach,
 * the attach cache, the attach-and-retry), provider_list.c (named lists), provider_run.c
 * (one command's run, the kill path, reboot), provider_exec.c (exec), provider_fileop.c (file
 * operations) and provider_kill.c (the kill scripts) share.
 * Internal to the E2B provider.
 */
#ifndef SBX_E2B_PROVIDER_INT_H
#define SBX_E2B_PROVIDER_INT_H

#include <pthread.h>
#include <sandbox/e2b.h>
#include <sandbox/files.h>
#include <sandbox/info.h>
#include <sandbox/lifetime.h>
#include <sandbox/metrics.h>
#include <sandbox/paths.h>
#include <sandbox/ports.h>
#include <sandbox/process.h>
#include <sandbox/pty.h>
#include <sandbox/sandbox.h>
#include <sandbox/watch.h>
#include <stdatomic.h>

#include "e2b/api.h"
#include "e2b/envd.h"
#include "e2b/http.h"

/*
 * One sandbox this provider connected to: its envd target and until when
 * (monotonic ms) the last connect keeps it running. Guarded by attach_mu.
 */
typedef struct sbx__e2b_attached {
	struct sbx__e2b_attached *next;
	char *id;
	sbx_envd_target t; /* valid when t.url is set */
	uint64_t until_ms; /* connect sent + its timeout; 0 = unknown (connect first) */
	bool inflight;     /* a connect for this id is on the wire: wait for it */
	/* the exec helper: 1 ran here as envd's command, -1 did not (not there, or too old for
	 * --mark), 0 unknown (docs/exec.md "How a command runs"); kept across reconnects */
	signed char exec_helper;
} sbx__e2b_attached;

/*
 * The provider's state: read-only after sbx_e2b_provider_new(), except the
 * attach cache (attach_mu) and the HTTP pool (locks itself).
 */
typedef struct sbx__e2b_provider {
	sbx_http *http;
	sbx_e2b_api api;
	char *domain;
	char *template_id;
	int64_t timeout_seconds;
	bool domain_allowlist;
	bool allow_open_egress;
	char *envd_url; /* options.envd_url without trailing "/", or NULL */
	sbx_logger logger;
	pthread_mutex_t attach_mu;
	pthread_cond_t attach_cv; /* an in-flight connect ended */
	sbx__e2b_attached *attached;
	size_t nattached;
	bool attach_ready; /* attach_mu and attach_cv were initialised */
	/*
	 * The one thing learnt after creation: this control plane has no /v2
	 * create and connect routes (an older self-hosted E2B), so the legacy
	 * POST /sandboxes and POST /sandboxes/{id}/connect are used from then on.
	 */
	_Atomic bool legacy_routes;
	_Atomic bool legacy_list; /* no GET /v2/sandboxes either: GET /sandboxes (running only) */
} sbx__e2b_provider;

void sbx__e2b_log(const sbx__e2b_provider *p, sbx_log_level level, const char *msg,
                  const sbx_log_field *fields, size_t n);
/* Copy `local` into `err` unless err is NULL or already holds a failure. */
void sbx__e2b_pass_error(sbx_error *err, const sbx_error *local);
/*
 * The failure of a staging upload: "E2B file upload timed out" or "aborted"
 * (the upload leaves these two unworded), else `local` passed on.
 */
void sbx__e2b_upload_failed(sbx_error *err, int error, const sbx_error *local);
/* signal.throwIfAborted(): SBX_EABORTED "aborted" when `sig` is aborted. */
int sbx__e2b_aborted(sbx_signal *sig, sbx_error *err);
/* The envd user a call of `user` runs as: "root" for SBX_USER_ROOT, else "sandbox". */
const char *sbx__e2b_user_name(sbx_user user);

/*
 * attach (docs/contract.md "Lifecycle", "Connect before use"): connect with timeout
 * min(86400, max(timeoutSeconds, min_seconds)), retrying a 409 five times
 * 500 ms apart (abortable); an E2B-format 404 or a missing envd token is
 * SBX_EGONE. On success `t` is filled; dispose it with sbx__envd_target_dispose()
 * (also safe after a failure).
 *
 * It always connects (resume, background commands) and records the answer
 * for sbx__e2b_attach_cached().
 */
int sbx__e2b_attach(sbx__e2b_provider *p, sbx_envd_target *t, const char *id, uint64_t min_seconds,
                    sbx_signal *sig, sbx_error *err);
/*
 * attach, but the connect is skipped (docs/contract.md "Lifecycle", "Connect
 * before use") when an earlier connect of
 * this provider to `id` still keeps the sandbox running for min_seconds from
 * now: then `t` is a copy of that connect's target and *cached is true (the
 * caller retries once after sbx__e2b_attach_forget() when envd answers that
 * the sandbox is not running). Only one connect per id is on the wire at a
 * time; concurrent callers wait for it (abortably) and use its result when
 * it covers them.
 */
int sbx__e2b_attach_cached(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                           uint64_t min_seconds, bool *cached, sbx_signal *sig, sbx_error *err);
/*
 * Forget what attach remembers of `id`: the next attach connects. Called when
 * envd answered that the sandbox is not running, and by pause, kill, reboot.
 */
void sbx__e2b_attach_forget(sbx__e2b_provider *p, const char *id);
/* What the provider learnt of sandbox `id`'s exec helper: 1, -1 or 0 (sbx__e2b_attached). Both
 * lock attach_mu; learnt() keeps nothing when out of memory (0 stays: only a retry lost). */
int sbx__e2b_exec_helper_known(sbx__e2b_provider *p, const char *id);
void sbx__e2b_exec_helper_learnt(sbx__e2b_provider *p, const char *id, int there);
/* Remember a connect-like answer (create): `t` moved in, running until until_ms. */
void sbx__e2b_attach_remember(sbx__e2b_provider *p, const char *id, sbx_envd_target *t,
                              uint64_t until_ms);
/* Free one attach-cache entry (provider_attach.c), for sbx__e2b_provider_free. */
void sbx__e2b_attached_free(sbx__e2b_attached *a);
/*
 * The connect and route helpers of provider_attach.c that lifecycle (reconnect,
 * pause, set_timeout, create) and listing share: "/<prefix>/<id><suffix>", a
 * sandboxID checked before it is used, the connect body and path, a route the
 * control plane does not have, and the switch to the legacy routes.
 */
int sbx__e2b_id_path(char *out, size_t outlen, const char *prefix, const char *id,
                     const char *suffix, sbx_error *err);
int sbx__e2b_server_sandbox_id(const char *sid, const char *what, const char *secret1,
                               const char *secret2, sbx_error *err);
json_t *sbx__e2b_connect_body(int64_t timeout, bool reboot);
int sbx__e2b_connect_path(char *out, size_t outlen, sbx__e2b_provider *p, const char *id,
                          sbx_error *err);
bool sbx__e2b_route_missing(const sbx_e2b_reply *r, const sbx_error *e);
void sbx__e2b_learn_legacy_routes(sbx__e2b_provider *p, const char *route);
/*
 * The envd target from a connect reply's Sandbox object (docs/protocol.md "Connect (resume)")
 * (sandboxID, domain, envdAccessToken), every field checked: SBX_EPROTOCOL
 * for a bad id or domain, SBX_EGONE for no token. `id` is used when the
 * reply has no sandboxID. Dispose `t` with sbx__envd_target_dispose().
 */
int sbx__e2b_target_of(const sbx__e2b_provider *p, sbx_envd_target *t, json_t *info, const char *id,
                       sbx_error *err);
/*
 * Append to `ids` (a JSON array) the sandboxID of each item of a list page
 * whose metadata name is `name`. A page that is null counts as empty; one
 * that is not an array, or a matching item without a valid sandboxID, is
 * SBX_EPROTOCOL.
 */
int sbx__e2b_collect_page(json_t *page, const char *name, json_t *ids, sbx_error *err);
/* POST /sandboxes/{id}/pause {}: a 409 is success, and an E2B-format 404 too when gone_ok. */
int sbx__e2b_pause(sbx__e2b_provider *p, const char *id, bool gone_ok, uint64_t timeout_ms,
                   sbx_signal *sig, sbx_error *err);
/* POST /v2/sandboxes/{id}/connect {timeout, memory:false}: the reboot's cold start. */
int sbx__e2b_reconnect_cold(sbx__e2b_provider *p, const char *id, uint64_t timeout_ms,
                            sbx_error *err);

/* A file operation's output budget keeps this much room for its stderr beyond what it reads. */
#define SBX_E2B_STDERR_ROOM (64 * 1024)
/* A larger output budget (exec's, a file operation's) is clamped to this. */
#define SBX_E2B_MAX_OUTPUT_CAP (SIZE_MAX / 4)
/* SendSignal's deadline (the kill of a command, a background process, a terminal), ms. */
#define SBX_E2B_SIGNAL_DEADLINE_MS 15000
/* After a kill, how long a command's or a terminal's stream may take to end, ms. */
#define SBX_E2B_KILL_GRACE_MS 3000
/* A failed operation's message quotes at most this many bytes of its stderr, trimmed (cut at a
 * character boundary). */
#define SBX_E2B_STDERR_MESSAGE_MAX 500

/* What an in-sandbox file operation collected. Dispose with sbx__e2b_file_op_dispose(). */
typedef struct sbx__file_op {
	sbx_buf out;    /* stdout; stdout and stderr share the max_output budget */
	sbx_buf err;    /* stderr */
	bool truncated; /* bytes past the budget were dropped */
	bool has_exit_code;
	int exit_code;
} sbx__file_op;

/*
 * provider_fileop.c (with the stderr text below; the template checks are provider_run.c's,
 * not_running provider_attach.c's). A file operation: `/bin/sh ARGS...` as `user` in "/",
 * collecting output in `res` (always filled, also on failure: dispose it). timeout_ms 0 means 120
 * s. A timeout is SBX_ETIMEOUT "sandbox file operation timed out", an abort SBX_EABORTED; the
 * process is stopped on both.
 */
int sbx__e2b_file_op(sbx__e2b_provider *p, const sbx_envd_target *t, const char *user,
                     const char *const *args, size_t nargs, size_t max_output, uint64_t timeout_ms,
                     sbx_signal *sig, sbx__file_op *res, sbx_error *err);
void sbx__e2b_file_op_dispose(sbx__file_op *res);
/*
 * attach (covering timeout_ms + 120 s) + sbx__e2b_file_op; when the target
 * came from the attach cache and envd answered that the sandbox is not
 * running (nothing ran), connect and run it once more. Fills `t` (dispose it).
 */
int sbx__e2b_attached_file_op(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                              const char *user, const char *const *args, size_t nargs,
                              size_t max_output, uint64_t timeout_ms, sbx_signal *sig,
                              sbx__file_op *res, sbx_error *err);
/* envd's answer to a Start as "sandbox" in a template without that user (a stock one). */
bool sbx__e2b_no_sandbox_user(int error, const sbx_error *e);
/* A root step's stderr when runuser found no user sandbox (the same template problem). */
bool sbx__e2b_runuser_no_sandbox(const sbx_buf *err);
/*
 * SBX_ESANDBOX "template T lacks what sandbox-e2b needs (...)": what the template
 * lacks of templates/capybara-sandbox's conventions, found by a check run as root.
 */
int sbx__e2b_template_error(sbx__e2b_provider *p, const sbx_envd_target *t, sbx_error *err);
/* envd's 502 (E2B's proxy: the sandbox is paused or missing): the request did not run. */
bool sbx__e2b_not_running(int error, const sbx_error *e);
/* A script's stderr `err` as message text, whitespace-trimmed, at most 500 bytes at a UTF-8
 * boundary. */
const char *sbx__e2b_stderr_text(const sbx_buf *err, char *buf, size_t buflen);

/* provider.c: the lifecycle entries of the vtable (provider_new.c), and the provider's setup. */
int sbx__e2b_create(void *impl, char **id_out, const char *name, const sbx_limits *limits,
                    sbx_signal *sig, sbx_error *err);
int sbx__e2b_create_with(void *impl, char **id_out, const char *name, const sbx_limits *limits,
                         const sbx_create_options *opts, sbx_signal *sig, sbx_error *err);
int sbx__e2b_set_timeout(void *impl, const char *id, uint64_t seconds, sbx_signal *sig,
                         sbx_error *err);
int sbx__e2b_resume(void *impl, sbx_resume_status *out, const char *id, sbx_signal *sig,
                    sbx_error *err);
int sbx__e2b_suspend(void *impl, const char *id, sbx_signal *sig, sbx_error *err);
int sbx__e2b_destroy(void *impl, const char *id, sbx_signal *sig, sbx_error *err);
int sbx__e2b_destroy_by_name(void *impl, const char *name, sbx_signal *sig, sbx_error *err);
/*
 * provider_list.c: kill(id) (an E2B-format 404 counts as success), the ids of
 * every sandbox named `name`, and the kill of each id but `except` (NULL: none).
 */
int sbx__e2b_kill_sandbox(sbx__e2b_provider *p, const char *id, sbx_signal *sig, sbx_error *err);
int sbx__e2b_collect_named(sbx__e2b_provider *p, const char *name, json_t *ids, sbx_signal *sig,
                           sbx_error *err);
int sbx__e2b_kill_all_of(sbx__e2b_provider *p, json_t *ids, const char *except, sbx_signal *sig,
                         sbx_error *err);
/* Free a provider's state (attach cache, API, HTTP pool). Accepts NULL. */
void sbx__e2b_provider_free(void *impl);
/* attach_mu and attach_cv (monotonic clock) of a new provider. 0 or SBX_EINTERNAL. */
int sbx__e2b_attach_init(sbx__e2b_provider *p, sbx_error *err);

/* provider_exec.c (exec) and provider_kill.c (kill_all, kill_tagged): the vtable entries that
 * run commands in the sandbox. */
int sbx__e2b_exec(void *impl, sbx_exec_result *out, const char *id, const char *command,
                  const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err);
int sbx__e2b_kill_all(void *impl, const char *id, sbx_signal *sig, sbx_error *err);
int sbx__e2b_kill_tagged(void *impl, const char *id, const char *const *tags, size_t ntags,
                         sbx_signal *sig, sbx_error *err);
/* provider_files.c: the contract's file operations and sandbox/files.h. */
int sbx__e2b_read_file(void *impl, sbx_file **out, const char *id, const char *path,
                       size_t max_bytes, sbx_signal *sig, sbx_error *err);
int sbx__e2b_write_file(void *impl, const char *id, const char *path, const void *data, size_t len,
                        sbx_signal *sig, sbx_error *err);
int sbx__e2b_write_files(void *impl, const char *id, const sbx_write_entry *files, size_t n,
                         const sbx_path_options *o, sbx_signal *sig, sbx_error *err);
int sbx__e2b_stat(void *impl, sbx_stat *out, const char *id, const char *path, sbx_signal *sig,
                  sbx_error *err);
int sbx__e2b_list_dir(void *impl, sbx_dir **out, const char *id, const char *path, sbx_signal *sig,
                      sbx_error *err);

/* provider_metrics.c: sandbox/metrics.h (times checked by contract/metrics.c). */
int sbx__e2b_metrics(void *impl, sbx_metrics **out, const char *id, int64_t start, int64_t end,
                     sbx_signal *sig, sbx_error *err);

/* provider_ports.c: sandbox/ports.h (port checked by contract/ports.c). */
int sbx__e2b_host(void *impl, sbx_host **out, const char *id, unsigned int port, sbx_signal *sig,
                  sbx_error *err);

/* provider_paths.c: sandbox/paths.h (options checked by contract/paths.c). */
int sbx__e2b_path_info(void *impl, sbx_entry_info **out, const char *id, const char *path,
                       const sbx_path_options *o, sbx_signal *sig, sbx_error *err);
int sbx__e2b_remove(void *impl, const char *id, const char *path, const sbx_path_options *o,
                    sbx_signal *sig, sbx_error *err);
int sbx__e2b_make_dir(void *impl, bool *created, const char *id, const char *path,
                      const sbx_path_options *o, sbx_signal *sig, sbx_error *err);
int sbx__e2b_rename(void *impl, sbx_entry_info **out, const char *id, const char *from,
                    const char *to, const sbx_path_options *o, sbx_signal *sig, sbx_error *err);

/* provider_transfer.c: streamed and raw file transfers (sandbox/files.h). */
int sbx__e2b_read_stream(void *impl, sbx_read_result *out, const char *id, const char *path,
                         sbx_sink_fn sink, void *payload, const sbx_file_options *opts,
                         sbx_signal *sig, sbx_error *err);
int sbx__e2b_write_stream(void *impl, const char *id, const char *path, sbx_input_fn source,
                          void *payload, const sbx_file_options *opts, sbx_signal *sig,
                          sbx_error *err);
/*
 * Read `path` as the sandbox user through a root-only staging file and a raw
 * GET /files into `sink` (at most `max` bytes; truncated when longer), or with `sink` NULL
 * whole into the sbx_buf `payload` (empty; it becomes the download's own buffer, cut to
 * `max` when longer). Does its own attach. timeout_ms / transfer_ms 0: 120 s / 600 s.
 */
int sbx__e2b_staged_read(sbx__e2b_provider *p, const char *id, const char *path, uint64_t max,
                         uint64_t timeout_ms, uint64_t transfer_ms, sbx_sink_fn sink, void *payload,
                         sbx_read_result *out, sbx_signal *sig, sbx_error *err);
/* Best effort, as root, not abortable (15 s): remove a staging file; a failure is logged. */
void sbx__e2b_remove_staging(sbx__e2b_provider *p, const sbx_envd_target *t, const char *staging);

/*
 * One page of GET /v2/sandboxes with `query` (encoded, without "?"); on a
 * control plane without that route, the legacy GET /sandboxes (running
 * sandboxes only, one page, only the metadata part of `query` kept: `query`
 * is cut). Filled as sbx__e2b_api_call() fills it.
 */
int sbx__e2b_list_page(sbx__e2b_provider *p, sbx_e2b_reply *reply, sbx_buf *query, sbx_signal *sig,
                       sbx_error *err);
/* One page of the list (its JSON array) for sbx__e2b_list_each: 0, or a failure (err filled). */
typedef int (*sbx__e2b_page_fn)(json_t *page, void *payload, sbx_error *err);
/*
 * Every page of the sandboxes in `states` ("running,paused", ...) named `name`
 * (NULL: any), in order, through sbx__e2b_list_page, each handed to on_page;
 * at most SBX_E2B_LIST_MAX_PAGES pages (SBX_EPROTOCOL past them). 0 or the
 * first failure.
 */
int sbx__e2b_list_each(sbx__e2b_provider *p, const char *name, const char *states,
                       sbx__e2b_page_fn on_page, void *payload, sbx_signal *sig, sbx_error *err);

/* provider_info.c: sandbox/info.h. */
int sbx__e2b_list(void *impl, sbx_info_list **out, const sbx_list_options *opts, sbx_signal *sig,
                  sbx_error *err);
int sbx__e2b_get_info(void *impl, sbx_sandbox_info **out, const char *id, sbx_signal *sig,
                      sbx_error *err);
/* An RFC 3339 date-time to ms since the Unix epoch; false when it is not one. */
bool sbx__e2b_parse_time(const char *s, int64_t *ms);

/* provider_process.c: background commands (sandbox/process.h). */
int sbx__e2b_process_start(void *impl, void **h_out, uint32_t *pid_out, const char *id,
                           const char *command, const sbx_process_options *po, sbx_signal *sig,
                           sbx_error *err);
int sbx__e2b_process_attach(void *impl, void **h_out, const char *id, uint32_t pid,
                            const sbx_process_options *po, sbx_signal *sig, sbx_error *err);
int sbx__e2b_process_wait(void *h, sbx_exec_result *out, sbx_signal *sig, sbx_error *err);
int sbx__e2b_process_send_stdin(void *h, const void *data, size_t len, sbx_signal *sig,
                                sbx_error *err);
int sbx__e2b_process_close_stdin(void *h, sbx_signal *sig, sbx_error *err);
int sbx__e2b_process_kill(void *h, sbx_signal *sig, sbx_error *err);
void sbx__e2b_process_free(void *h);
int sbx__e2b_process_kill_pid(void *impl, const char *id, uint32_t pid, sbx_signal *sig,
                              sbx_error *err);
int sbx__e2b_process_list(void *impl, sbx_process_info_list **out, const char *id, sbx_signal *sig,
                          sbx_error *err);

/* provider_pty.c: terminals (sandbox/pty.h). */
int sbx__e2b_pty_start(void *impl, void **h_out, uint32_t *pid_out, const char *id,
                       const char *command, const sbx_pty_options *o, sbx_signal *sig,
                       sbx_error *err);
int sbx__e2b_pty_attach(void *impl, void **h_out, const char *id, uint32_t pid,
                        const sbx_pty_options *o, sbx_signal *sig, sbx_error *err);
int sbx__e2b_pty_send_input(void *h, const void *data, size_t len, sbx_signal *sig, sbx_error *err);
int sbx__e2b_pty_resize(void *h, uint16_t cols, uint16_t rows, sbx_signal *sig, sbx_error *err);
int sbx__e2b_pty_kill(void *h, sbx_signal *sig, sbx_error *err);
int sbx__e2b_pty_wait(void *h, sbx_pty_result *out, sbx_signal *sig, sbx_error *err);
void sbx__e2b_pty_free(void *h);

/* provider_watch.c: directory watches (sandbox/watch.h). */
int sbx__e2b_watch_dir(void *impl, void **h_out, const char *id, const char *path,
                       const sbx_watch_options *o, sbx_signal *sig, sbx_error *err);
int sbx__e2b_watch_next(void *h, sbx_watch_event *out, uint64_t timeout_ms, sbx_signal *sig,
                        sbx_error *err);
void sbx__e2b_watch_free(void *h);

/*
 * One step that needs a connected sandbox (sbx__e2b_with_attach): `run` against
 * target `t`, its failure in `local`. When the target came from the attach
 * cache and envd answered that the sandbox is not running, nothing ran: the
 * sandbox is connected again and the step run once more, unless `again`
 * (may be NULL) says the refused run already did something that must not be
 * repeated (output handed out, a source read). `reset` (may be NULL) clears
 * what the refused run left in `ctx` first.
 */
typedef struct sbx__e2b_step {
	int (*run)(sbx__e2b_provider *p, sbx_envd_target *t, void *ctx, sbx_error *local);
	bool (*again)(void *ctx);
	void (*reset)(void *ctx);
	void *ctx;
} sbx__e2b_step;
/*
 * attach_cached (covering min_seconds) + step, retried once as said above.
 * Fills `t` (dispose it, also after a failure). Returns 0 or the failure: an
 * attach failure is in `err`, the step's in `local` (which the caller passes
 * on in its own words: sbx__e2b_pass_error, sbx__e2b_upload_failed).
 */
int sbx__e2b_with_attach(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                         uint64_t min_seconds, const sbx__e2b_step *step, sbx_signal *sig,
                         sbx_error *local, sbx_error *err);

#endif
