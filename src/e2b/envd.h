/*
 * e2b/envd.h: the envd client (docs/protocol.md "Reaching envd" to "Files"): process.Process/Start
 * as a Connect server stream, process.Process/SendSignal, and the multipart POST /files upload.
 *
 * Every request carries envd's headers (docs/protocol.md "Reaching envd"): E2b-Sandbox-Id,
 * E2b-Sandbox-Port: 49983 and X-Access-Token (a secret: never logged, never in an error).
 */
#ifndef SBX_E2B_ENVD_H
#define SBX_E2B_ENVD_H

#include <jansson.h>
#include <sandbox/sandbox.h>
#include <stdbool.h>
#include <stdint.h>

#include "e2b/http.h"
#include "util/buf.h"

#define SBX_ENVD_PORT              49983
#define SBX_ENVD_KEEPALIVE_SECONDS 50

/* Where a sandbox's envd is reached; owned strings, see sbx__envd_target_dispose(). */
typedef struct sbx_envd_target {
	char *url; /* base URL without trailing "/" */
	char *sandbox_id;
	char *token;         /* envdAccessToken: secret */
	const char *api_key; /* borrowed, only to scrub it from server messages; may be NULL */
	char *domain;        /* the sandbox's domain (the reply's, else the config's) */
	char *traffic_token; /* trafficAccessToken, or NULL (public traffic): secret */
} sbx_envd_target;

void sbx__envd_target_dispose(sbx_envd_target *t);

/* A process to start (envd ProcessConfig). All borrowed for the call. */
typedef struct sbx_envd_process {
	const char *cmd;
	const char *const *args;
	size_t nargs;
	const sbx_env_var *env; /* "envs" in order (later keys win); NULL with nenv 0: no "envs" */
	size_t nenv;
	const char *cwd; /* NULL: no "cwd" */
	/* a terminal instead of pipes ("pty":{"size":{cols,rows}}, no "stdin"): both > 0 */
	uint16_t pty_cols, pty_rows;
	/* Connect-Timeout-Ms: envd kills the process when it passes (0: not sent, no limit) */
	uint64_t timeout_ms;
} sbx_envd_process;

/* Events of a Start stream (envd ProcessEvent), delivered from inside sbx__envd_stream_wait(). */
typedef struct sbx_envd_handler {
	/* pid 0: the start event had no pid, or one that is no uint32 in 1..2^32-1 */
	void (*on_start)(uint32_t pid, void *payload);
	/*
	 * stream 1 = stdout, 2 = stderr, 3 = a PTY process's terminal; decoded bytes. `p` is NULL
	 * (n still the decoded length) when wants_output said no room is left.
	 */
	void (*on_output)(int stream, const unsigned char *p, size_t n, void *payload);
	/* optional: false when output bytes would be dropped anyway (skips decoding) */
	bool (*wants_output)(void *payload);
	/*
	 * end event: fields as received (absent = false / 0 / NULL); an exitCode
	 * that is no int32 (number or decimal string) comes as exited false,
	 * status NULL: the exit status is unknown.
	 */
	void (*on_end)(bool exited, int exit_code, const char *status, void *payload);
	/*
	 * optional: asked after each chunk of the stream is taken; true makes
	 * sbx__envd_stream_wait() return SBX_HTTP_YIELD (e.g. once the pid is
	 * known, or after an output callback asked to stop).
	 */
	bool (*yield)(void *payload);
	void *payload;
	/*
	 * optional, for streams that are not a process's (WatchDir): each message
	 * but the end-stream one, parsed, instead of the process events above; a
	 * negative return (err filled) fails the stream.
	 */
	int (*on_message)(json_t *msg, void *payload, sbx_error *err);
	/* the events are needed only by the end (no output callback, no stdin, no pid watcher):
	 * the caller is woken for them at the end (sbx_http_req.wake_at_end) */
	bool wake_at_end;
	/*
	 * optional, with `stored`: the buffer that keeps all `n` decoded bytes of a data event
	 * of `stream` (NULL: it does not, on_output gets them as above). The event is decoded
	 * straight onto its end, then stored(stream, n) runs instead of on_output; when the
	 * buffer cannot grow (left unchanged) on_output gets the bytes after all.
	 */
	sbx_buf *(*sink)(int stream, size_t n, void *payload);
	void (*stored)(int stream, size_t n, void *payload);
} sbx_envd_handler;

typedef struct sbx_envd_stream sbx_envd_stream;

/*
 * Prepare a Start call as `user` (Basic auth) with request
 * {"process":{"cmd","args","envs"?,"cwd"?},"stdin":<stdin_open>}. Nothing is
 * sent until sbx__envd_stream_wait(). `proc` is copied into the request body.
 * With stdin_open the command's stdin is a pipe fed by SendInput until
 * CloseStdin (docs/protocol.md "process.Process"); without it, /dev/null.
 * Returns 0, SBX_ENOMEM, SBX_EINTERNAL.
 */
int sbx__envd_start(sbx_envd_stream **out, sbx_http *http, const sbx_envd_target *t,
                    const char *user, const sbx_envd_process *proc, bool stdin_open,
                    const sbx_envd_handler *h, sbx_error *err);

/*
 * The JSON of a Start request for `proc`, appended to out (unchanged on failure): 0,
 * SBX_ENOMEM (a string not UTF-8 too), SBX_ETOOLARGE. via_tree: built as a jansson tree and
 * dumped, as sbx__envd_start does past 64 env vars (the same bytes; tests compare the two).
 */
int sbx__envd_start_json(sbx_buf *out, const sbx_envd_process *proc, bool stdin_open,
                         bool via_tree);

/*
 * Prepare a Connect call {"process":{"pid":pid}}: the same events as Start
 * (start first) for a process that is running, or ended less than 30 s ago.
 * An unknown pid ends the stream with Connect code "not_found" (SBX_EHTTP,
 * e2b_code "not_found", from sbx__envd_stream_wait()).
 */
int sbx__envd_connect(sbx_envd_stream **out, sbx_http *http, const sbx_envd_target *t, uint32_t pid,
                      const sbx_envd_handler *h, sbx_error *err);

/*
 * Prepare a filesystem.Filesystem/WatchDir call as `user` (Basic auth) with
 * {"path","recursive"}: messages {"start":{}}, {"filesystem":{name,type,...}},
 * {"keepalive":{}} go to h->on_message (required). An end-stream error is
 * SBX_EHTTP "E2B watch stream failed: <code>: <message>".
 */
int sbx__envd_watch_dir(sbx_envd_stream **out, sbx_http *http, const sbx_envd_target *t,
                        const char *user, const char *path, bool recursive,
                        const sbx_envd_handler *h, sbx_error *err);

/*
 * Drive the stream until its end-stream message (0), SBX_HTTP_YIELD (the
 * handler's yield asked for control back; call again to go on), the monotonic deadline
 * (SBX_ETIMEOUT, stream still usable) or an abort of `sig` (SBX_EABORTED,
 * stream still usable); err is not filled for these two. Errors: SBX_EHTTP
 * (non-200 answer "E2B process start failed: HTTP …", or an end-stream error
 * "E2B process stream failed: <code>: <message>"), SBX_EPROTOCOL (bad frame
 * or JSON, or "E2B process stream ended without an end-of-stream message"),
 * SBX_ETOOLARGE, SBX_ENETWORK, SBX_ENOMEM.
 */
int sbx__envd_stream_wait(sbx_envd_stream *s, uint64_t deadline_ms, sbx_signal *sig,
                          sbx_error *err);

/*
 * Test and fuzz seam: decode `n` bytes as if they had arrived on the stream
 * (handler callbacks run from inside). Returns 0 (more wanted), 1 (the
 * end-stream message arrived; sbx__envd_stream_wait() reports its error) or
 * the error of a bad frame or message (err filled).
 */
int sbx__envd_stream_feed(sbx_envd_stream *s, const unsigned char *p, size_t n, sbx_error *err);

/*
 * Test seam: decode every message with jansson, as the data events' shortcut falls back to
 * (tests compare the two on the same bytes).
 */
void sbx__envd_stream_no_shortcut(sbx_envd_stream *s);

/* True once the end-stream message arrived. */
bool sbx__envd_stream_ended(const sbx_envd_stream *s);

/*
 * One unary process.Process RPC (`method`, e.g. "SendInput") with a JSON
 * body of `len` bytes. With `host`, the call is joined to that stream's
 * transfer (sbx__http_call_join) so the stream keeps flowing, and its
 * callbacks run, while this call waits. `reply` (may be NULL) gets the parsed
 * 2xx body (NULL when empty). Returns 0, SBX_EHTTP ("process <method>: ...",
 * worded as include/sandbox/error.h says; e2b_code holds the Connect code), SBX_ETIMEOUT /
 * SBX_EABORTED (worded "... timed out"/"aborted" only without host), SBX_ENETWORK, SBX_EPROTOCOL,
 * SBX_ENOMEM.
 */
int sbx__envd_rpc(json_t **reply, sbx_http *http, const sbx_envd_target *t, const char *method,
                  const char *body, size_t len, sbx_envd_stream *host, uint64_t deadline_ms,
                  sbx_signal *sig, sbx_error *err);

/* Disconnect (the process keeps running in the sandbox) and free. Accepts NULL. */
void sbx__envd_stream_free(sbx_envd_stream *s);

/* ---- envd_process.c ---- */

#define SBX_ENVD_MAX_INPUT_CHUNK (192 * 1024) /* stdin bytes per SendInput request */

/*
 * SendInput {"process":{"pid"},"input":{"stdin":<base64>}} of at most
 * SBX_ENVD_MAX_INPUT_CHUNK bytes, joined to `host` when not NULL. As sbx__envd_rpc().
 */
int sbx__envd_send_input(sbx_http *http, const sbx_envd_target *t, uint32_t pid, const void *data,
                         size_t len, sbx_envd_stream *host, uint64_t deadline_ms, sbx_signal *sig,
                         sbx_error *err);
/* SendInput {"process":{"pid"},"input":{"pty":<base64>}}: bytes typed into a PTY process's
 * terminal, at most SBX_ENVD_MAX_INPUT_CHUNK, never joined. As sbx__envd_rpc(). */
int sbx__envd_send_pty(sbx_http *http, const sbx_envd_target *t, uint32_t pid, const void *data,
                       size_t len, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);
/* Update {"process":{"pid"},"pty":{"size":{"cols","rows"}}}: a PTY process's terminal size. */
int sbx__envd_resize(sbx_http *http, const sbx_envd_target *t, uint32_t pid, uint16_t cols,
                     uint16_t rows, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);
/* CloseStdin {"process":{"pid"}}: the command reads EOF. As sbx__envd_rpc(). */
int sbx__envd_close_stdin(sbx_http *http, const sbx_envd_target *t, uint32_t pid,
                          sbx_envd_stream *host, uint64_t deadline_ms, sbx_signal *sig,
                          sbx_error *err);
/*
 * List {}: `out` gets the "processes" array (new reference; empty when the
 * reply omits it). SBX_EPROTOCOL when the reply has another shape.
 */
int sbx__envd_list(json_t **out, sbx_http *http, const sbx_envd_target *t, uint64_t deadline_ms,
                   sbx_signal *sig, sbx_error *err);

/*
 * SendSignal SIGKILL to `pid`. A 404 with Connect code "not_found" (the
 * process is gone) is success. 0, SBX_EHTTP, SBX_ETIMEOUT, SBX_EABORTED, ...
 */
int sbx__envd_kill(sbx_http *http, const sbx_envd_target *t, uint32_t pid, uint64_t deadline_ms,
                   sbx_signal *sig, sbx_error *err);

/*
 * One envd call (req, with t's headers) whose 2xx body is ignored; a non-2xx
 * answer is sbx__e2b_http_error(what) (t's token and API key kept out). 0 or as sbx__http_perform /
 * sbx__e2b_http_error.
 */
int sbx__envd_unary(sbx_http *http, const sbx_envd_target *t, sbx_http_req *req, const char *what,
                    uint64_t deadline_ms, sbx_signal *sig, sbx_error *err);

#endif
