/*
 * fake-e2b/api/envd/envd.h: envd's API (docs/protocol.md "Reaching envd" to "Files";
 * docs/internals/wire.md "Routing to envd" to "Filesystem RPCs"), one file per
 * route as envd lays them out: Connect framing (connect.c), auth (auth.c), the
 * process output stream (stream.c), process.Process RPCs (process_*.c),
 * filesystem.Filesystem RPCs (filesystem_*.c), /files (files_*.c), /health.
 *
 * The router runs envd's middleware in envd's order (sandbox known and running,
 * else the proxy's 502; X-Access-Token; Basic user) and calls a handler with
 * c->sb and c->user set. Process and file work goes through runtime.h.
 */
#ifndef FK_API_ENVD_H
#define FK_API_ENVD_H

#include "app.h"

/* ---- connect.c: Connect framing and errors ---- */
/* A growable output buffer of envelopes (flags, BE32 length, payload). */
typedef struct fk_obuf {
	unsigned char *ptr;
	size_t len, off, cap;
} fk_obuf;
int fk_obuf_put(fk_obuf *b, const void *data, size_t len);
int fk_obuf_frame_raw(fk_obuf *b, unsigned flags, const void *payload, size_t len);
/* Frame a message (steals msg). */
int fk_obuf_frame(fk_obuf *b, unsigned flags, json_t *msg);
/* {"error":{"code":..,"message":..}}: an end-stream error message. */
json_t *fk_connect_end_error(const char *code, const char *message);
/* A stream that fails before its first message: HTTP 200 + one end-stream error frame. */
enum MHD_Result fk_connect_stream_error(fk_req *r, const char *code, const char *message);
/* Connect unary error: {"code":"<code>","message":...} with the mapped HTTP status. */
enum MHD_Result fk_connect_error(fk_req *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
unsigned fk_connect_code_status(const char *code);
/* A runtime error code (FK_E*) as a Connect code. */
const char *fk_connect_code_of(int fk);
/* The runtime's code as envd would report it (a symlink loop is not_found). */
int fk_envd_code(int rc, const fk_err *err);
/* A runtime error as a Connect unary error. */
enum MHD_Result fk_connect_runtime_error(fk_req *r, int rc, const fk_err *err);
/* The request message: one envelope for streams, plain JSON for unary. New ref or NULL. */
json_t *fk_connect_request(fk_req *r, int stream);
/* A decoded Connect envelope header: 0 with *flags and *len, -1 when shorter than 5 bytes. */
int fk_connect_envelope(const unsigned char *p, size_t n, unsigned *flags, size_t *len);

/* ---- auth.c ---- */
/* The proxy's answer for an unknown or paused sandbox. */
enum MHD_Result fk_envd_not_found_502(fk_req *r, const char *id);
enum MHD_Result fk_envd_unauthorized(fk_req *r);
/* X-Access-Token against the sandbox's token (constant time); unsecured: always 1. */
int fk_envd_token_ok(const fk_sandbox *sb, const char *given);
/* Username of "Authorization: Basic base64(user:pass)"; NULL when absent (*bad when
 * malformed). Caller frees. */
char *fk_envd_basic_user(const char *header, int *bad);
/* A /files request with a v1 signature and no sandbox named (E2B_SANDBOX_URL points the SDK at
 * one envd, and a signed URL carries no header): the sandbox whose token signed it, its id in
 * out. 0, or -1 when none (or no valid signature). */
int fk_envd_signed_sandbox(fk_call *c, char *out, size_t cap);
/* /files auth (envd's validateSigning): the token header, or a v1 signature of (op, path, user)
 * not expired. NULL when allowed, else envd's 401 message ("invalid signature", "signature is
 * already expired", "missing signature query parameter", ...). */
const char *fk_envd_files_auth(fk_call *c, const char *op, const char *path, const char *user);
/* Does the user exist in the sandbox (NULL: the default user)? */
int fk_envd_user_exists(fk_call *c, const char *user);

/* ---- stream.c: the output stream of Start and Connect ---- */
/* Takes over proc and sub (freed on failure too); takes its own reference on c->sb. */
enum MHD_Result fk_envd_open_stream(fk_call *c, fk_proc *proc, fk_sub *sub, int kill_on_deadline);

/* ---- process.c: shared by the process RPCs ---- */
const char *fk_json_str(json_t *o, const char *k);
/* Resolve a ProcessSelector ({pid} | {tag}) to a pid. 0, or a runtime code. */
int fk_envd_selector_pid(fk_call *c, json_t *sel, uint32_t *pid, fk_proc **proc_out);
/* A uint32 field as protobuf JSON (envd's Connect codec) reads it: a JSON number or a string
 * holding one (no space around it), whose value is a whole number in range (80, 80.0, 8e1,
 * "80"); absent or null is 0. -1 for anything else (80.5, "80x", " 80", -1, true), which envd
 * answers invalid_argument. */
int fk_envd_pb_uint32(json_t *v, uint32_t *out);
/* A PtySize {cols, rows}: each a uint32 as above and at most 65535. 0, or -1. */
int fk_envd_pty_size(json_t *size, uint16_t *cols, uint16_t *rows);

/* ---- handlers (streams parse their own envelope; unary ones get the JSON object) ---- */
enum MHD_Result fk_envd_process_start(fk_call *c);
enum MHD_Result fk_envd_process_connect(fk_call *c);
enum MHD_Result fk_envd_process_signal(fk_call *c, json_t *req);
enum MHD_Result fk_envd_process_list(fk_call *c, json_t *req);
enum MHD_Result fk_envd_process_send_input(fk_call *c, json_t *req);
enum MHD_Result fk_envd_process_close_stdin(fk_call *c, json_t *req);
enum MHD_Result fk_envd_process_update(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_stat(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_make_dir(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_list_dir(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_move(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_remove(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_watch_dir(fk_call *c);
enum MHD_Result fk_envd_fs_create_watcher(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_get_watcher_events(fk_call *c, json_t *req);
enum MHD_Result fk_envd_fs_remove_watcher(fk_call *c, json_t *req);
/* filesystem.c: EntryInfo (docs/internals/wire.md "Filesystem RPCs"), defaults omitted. */
json_t *fk_envd_entry_json(const fk_entry *e);
/* A single-entry reply {"entry":...} or the runtime error. */
enum MHD_Result fk_envd_entry_reply(fk_call *c, int rc, fk_entry *e, const fk_err *err);

/* files_get.c, files_post.c, health.c */
/* A runtime error of /files as an HTTP status. */
unsigned fk_envd_file_error_status(int rc);
enum MHD_Result fk_envd_files_get(fk_call *c);
/* POST /files: `begin` (headers known) sets the body sink; `finish` answers. */
void fk_envd_files_post_begin(fk_call *c);
/* After _begin: refused from the headers (no sandbox, bad path, user or token, too large,
 * unsupported type); `finish` then answers at once and the body is never read. */
int fk_envd_files_post_refused(fk_call *c);
enum MHD_Result fk_envd_files_post_finish(fk_call *c);
enum MHD_Result fk_envd_health(fk_call *c);

/* encoding.c: gzip on /files (envd's encoding.go) */
/* Content-Encoding of an upload: 0 (*gzip set: identity or gzip), -1 unsupported. */
int fk_envd_content_encoding(const char *header, int *gzip);
/* Inflates a gzip body as it arrives (one member or several in a row), handing what comes out
 * to `out` (which returns <0 to stop). */
typedef struct fk_gunzip fk_gunzip;
fk_gunzip *fk_gunzip_new(void); /* NULL on OOM */
void fk_gunzip_free(fk_gunzip *g);
/* 0; -1 corrupt data; -2 `out` refused. */
int fk_gunzip_feed(fk_gunzip *g, const void *data, size_t len,
                   int (*out)(void *ud, const char *data, size_t len), void *ud);
/* At the end of the body: 0 when it ended with a whole member, else -1 (cut short/empty). */
int fk_gunzip_finish(fk_gunzip *g);
/* Accept-Encoding of a download: 0 (*gzip: send gzip, else identity), -1 nothing acceptable
 * (406). */
int fk_envd_accept_gzip(const char *header, int *gzip);
/* A response streaming fd's bytes deflated into gzip (takes fd); NULL on OOM (fd not closed). */
struct MHD_Response *fk_envd_gzip_response(int fd);
/* The Content-Type envd gives a gzip download: by extension, application/octet-stream else. */
const char *fk_envd_mime_type(const char *path);

#endif
