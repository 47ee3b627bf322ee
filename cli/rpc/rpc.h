/*
 * cli/rpc/rpc.h: `sandbox-e2b serve`, the contract as JSON-RPC 2.0 over
 * stdio (bindings/protocol/methods.md), shared between its files.
 *
 * Floors, each file calling only the ones below it: dispatch.c (requests,
 * ids, the in-flight table, a worker per call, cancel, shutdown) → methods.c
 * (the method table, the lifecycle handlers) → methods_files.c and
 * methods_process.c (the file and command handlers) → methods_params.c
 * (params → typed args, results; methods_int.h) → processes.c (the
 * background commands started here) → server.c (the writer, the provider and
 * its config, the logger) → events.c (output and log notifications) → wire.c
 * (lines in, one writer out) and fail.c (a call's failure and its error
 * object) → the library and jansson. Nothing here prints human text to
 * stdout: stdout carries only JSON-RPC messages, one per line.
 */
#ifndef SBX_CLI_RPC_H
#define SBX_CLI_RPC_H

#include <jansson.h>
#include <pthread.h>
#include <sandbox.h>
#include <sandbox/files.h>
#include <sandbox/info.h>
#include <sandbox/process.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The default cap of one request line in bytes (--max-line-bytes): 64 MiB. */
#define SERVE_MAX_LINE_DEFAULT ((size_t)64 << 20)
/* The smallest cap --max-line-bytes accepts. */
#define SERVE_MAX_LINE_MIN ((size_t)1024)
/* Calls in flight at once; one more is answered with an error. */
#define SERVE_MAX_CALLS 4096
/* The protocol version in initialize's result; bumped on an incompatible change. */
#define SERVE_PROTOCOL_VERSION 1

/* JSON-RPC 2.0 error codes (the spec's, plus LSP's RequestCancelled and ours). */
#define RPC_PARSE_ERROR      (-32700)
#define RPC_INVALID_REQUEST  (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS   (-32602)
#define RPC_INTERNAL_ERROR   (-32603)
#define RPC_LIBRARY_ERROR    (-32000) /* the library failed: data.code names how */
#define RPC_NOT_CONFIGURED   (-32001) /* no deployment config yet: send initialize */
#define RPC_REQUEST_CANCELED (-32800) /* aborted by $/cancelRequest or shutdown */

/* What `sandbox-e2b serve` was started with (cmd: serve). */
typedef struct serve_options {
	const char *config_json; /* deployment config from the CLI's sources, or NULL */
	json_t *config_vars;     /* cli_config_vars: the variables behind it (borrowed), or NULL */
	const char *envd_url;    /* --envd-url / SANDBOX_E2B_ENVD_URL, or NULL */
	bool verbose;            /* -v: library debug/info logs too */
	size_t max_line;         /* request line cap in bytes (0: the default) */
	sbx_signal *stop;        /* aborted by SIGINT/SIGTERM: shut down as on EOF */
	int in_fd, out_fd;       /* 0 and 1 */
} serve_options;

/* Run the server until EOF on in_fd or `stop`; returns the process exit code (0). */
int serve_run(const serve_options *o);

/* ---- wire.c: framing ------------------------------------------------------------ */

typedef struct serve_reader {
	int fd, stop_fd;
	size_t max_line;
	char *buf;
	size_t cap, start, len; /* bytes buf[start, start+len) are unread */
	bool discarding;        /* inside a line over the cap: dropping until '\n' */
	bool eof;
} serve_reader;

enum { WIRE_LINE = 1, WIRE_EOF = 0, WIRE_TOO_LONG = -1, WIRE_ERROR = -2 };

/* Set up a reader of `fd` that also wakes when stop_fd (or -1) is readable. */
void wire_reader_init(serve_reader *r, int fd, int stop_fd, size_t max_line);
void wire_reader_free(serve_reader *r);
/*
 * The next line, without its '\n' (valid until the next call): WIRE_LINE;
 * WIRE_EOF at end of input or stop; WIRE_TOO_LONG once for a line over the cap,
 * whose bytes are dropped as they arrive (never held); WIRE_ERROR (read failed
 * or out of memory).
 */
int wire_read_line(serve_reader *r, const char **line, size_t *len);

typedef struct serve_writer {
	int fd;
	pthread_mutex_t mu;
	bool broken; /* a write failed (the peer went away): later writes are dropped */
} serve_writer;

void wire_writer_init(serve_writer *w, int fd);
void wire_writer_free(serve_writer *w);
/* Write `msg` as one line (compact JSON + '\n'), whole, under the writer's lock. Steals msg. */
int wire_send(serve_writer *w, json_t *msg);

/* ---- fail.c: the failure of one call ---------------------------------------------- */

typedef struct serve_fail {
	int rpc_code;      /* a RPC_* code */
	char message[640]; /* secret-free */
	sbx_error lib;     /* lib.code != 0: a library failure (data.code, http_status, e2b_code) */
	bool named;        /* data.code even without a library failure (initialize's errors) */
} serve_fail;

/* Fill f with a JSON-RPC failure (no library error). Returns -1. */
int serve_failf(serve_fail *f, int rpc_code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* data.code for a library code: "gone", "invalid", "aborted", ...; "internal" for any other. */
const char *serve_code_name(int code);
/* data.code for a JSON-RPC code (RPC_*): "parse_error", "invalid_params", ...; else "internal". */
const char *serve_rpc_code_name(int rpc_code);
/* Every RPC_* code and its name, {"-32700": "parse_error", ...} (initialize's "error_codes":
 * the name of an error that carries no data); NULL on OOM. */
json_t *serve_error_codes(void);
/* The error object of a JSON-RPC response for f (NULL on OOM). */
json_t *serve_error_object(const serve_fail *f);

/* ---- server.c: what every call shares ------------------------------------------------ */

typedef struct serve_server serve_server;
/*
 * A background command's handle (processes.c), kept by (sandbox id, pid) from
 * `exec {"background": true}` until a `wait` saw it end, or shutdown (which
 * kills it). Reference-counted: calls hold it while they use it.
 */
typedef struct serve_proc serve_proc;
/* A terminal's handle (ptys.c), kept by (sandbox id, pid) like a serve_proc. */
typedef struct serve_pty serve_pty;

/* The server for o (max_line set); its config refused is reported, not fatal. 0 or -1 (OOM). */
int serve_server_new(serve_server **out, const serve_options *o);
/* Free the server (no call running, no background command left). */
void serve_server_free(serve_server *s);
/* Replace the config, envd URL and log settings (initialize); 0 or -1 with f filled. */
int serve_configure(serve_server *s, json_t *config, const char *envd_url, const char *log_mode,
                    int log_min, serve_fail *f);
/* Add initialize's concurrent_exec, max_line_bytes, configured, error_codes and config to into;
 * -1 on OOM. */
int serve_server_describe(serve_server *s, json_t *into);
/* The provider (NULL: not configured yet); why the CLI's config was refused ("" if not), the
 * parser's reason (sandbox/e2b.h SBX_E2B_CONFIG_*, "" if none) and the variables behind the
 * config (cli_config_vars; borrowed, NULL when serve was given none). */
sbx_provider *serve_provider_of(serve_server *s);
const char *serve_config_error(serve_server *s);
const char *serve_config_reason(serve_server *s);
json_t *serve_config_vars(serve_server *s);
serve_writer *serve_writer_of(serve_server *s);
/* The background commands' list head and its lock, for processes.c. */
serve_proc **serve_procs_of(serve_server *s);
/* The terminals' list head (ptys.c), under the same lock. */
serve_pty **serve_ptys_of(serve_server *s);
pthread_mutex_t *serve_lock_of(serve_server *s);

/* ---- methods*.c: params, handlers, results ---------------------------------------- */

/* The typed params of any method; strings are borrowed from the request's JSON. */
typedef struct serve_args {
	const char *id, *name, *command, *path;
	const char *to;         /* rename */
	sbx_path_options popts; /* path_info, remove, make_dir, rename */
	sbx_limits limits;
	const char **hosts;
	sbx_env_var *env;
	size_t nenv;
	sbx_env_var *meta; /* create's metadata */
	size_t nmeta;
	int64_t metrics_start, metrics_end; /* metrics: unix seconds, 0 = open */
	sbx_create_options create; /* create (timeout_seconds, env, metadata); set_timeout */
	const char **tags;
	size_t ntags;
	/*
	 * exec, pty_start: the command's fields (cwd, env and env_count pointing at `env`,
	 * timeout_ms, max_output_bytes, tag, user) in one struct, exec's options; background
	 * commands (processes.c) and terminals (ptys.c) take theirs from it.
	 */
	sbx_exec_options cmd;
	size_t max_output_bytes, max_bytes; /* wait; read_file */
	unsigned char *data; /* write_file bytes (owned: data_b64 decoded, or a copy) */
	size_t data_len;
	bool stream;
	bool background, stdin_open; /* exec: start a background command */
	uint32_t pid;                /* wait, send_stdin, close_stdin, kill_process, pty_* */
	uint16_t cols, rows;         /* pty_start, pty_resize */
	bool recursive;              /* watch */
	sbx_write_entry *wfiles;     /* write_files: the entries (text borrowed, base64 decoded) */
	unsigned char **wbufs;       /* and the decoded buffers (owned, one per entry or NULL) */
	size_t nwfiles;
	sbx_sandbox_state state; /* list */
	bool list_all;           /* list: also sandboxes without a name */
	/* initialize */
	json_t *config;
	const char *envd_url;
	const char *log_mode;
	int log_min; /* initialize: the lowest level sent (sbx_log_level), -1: unchanged */
} serve_args;

/* One call as its handler sees it (dispatch.c keeps the rest). */
typedef struct serve_call {
	serve_server *srv;
	json_t *id; /* the request id (a reference) */
	json_t *params;
	const struct serve_method *method; /* its parse and run */
	serve_args args;
	sbx_signal *sig;    /* aborted by $/cancelRequest or shutdown */
	sbx_provider *prov; /* the provider when the call started (a reference) */
} serve_call;

typedef struct serve_method {
	const char *name;
	/* Check params (an object, never NULL) into args; -1 with f filled (-32602, naming the
	 * field). */
	int (*parse)(json_t *params, serve_args *a, serve_fail *f);
	/* Run the call; 0 with *result set, or -1 with f filled. */
	int (*run)(serve_call *c, const serve_args *a, json_t **result, serve_fail *f);
	bool needs_provider;
} serve_method;

/* The method called `name` (NUL-terminated), or NULL. Thread-safe (a static table). */
const serve_method *serve_method_find(const char *name);
/* The method names, in table order, as a JSON array (NULL on OOM). */
json_t *serve_method_names(void);
/* Free what parse() allocated in a (not a itself). */
void serve_args_free(serve_args *a);

/* ---- dispatch.c: the server's loop and its calls ------------------------------------ */

/*
 * A parsed request line. kind: 0 a call (method set), 1 a notification, -1 an
 * invalid line whose error response is in `error` (send it; NULL: nothing to
 * send). Owns its references; free with serve_request_free().
 */
typedef struct serve_request {
	int kind;
	json_t *msg, *id, *params;
	const char *method_name;
	const serve_method *method;
	json_t *error;
} serve_request;

/* Parse one line (no I/O, no library call): the fuzz target's entry point. */
void serve_request_parse(serve_request *rq, const char *line, size_t len);
void serve_request_free(serve_request *rq);

/* ---- processes.c: the background commands this server started ----------------------- */

/* Start `command` in the background (a->...); on 0 *out is held once (serve_proc_put). */
int serve_proc_start(serve_proc **out, serve_call *c, const serve_args *a, sbx_error *err);
/* The handle of (id, pid) held once, or NULL. */
serve_proc *serve_proc_get(serve_server *s, const char *id, uint32_t pid);
/* Release one hold (NULL: nothing). */
void serve_proc_put(serve_proc *p);
/* Forget the handle (its command ended); freed once the last holder puts it. */
void serve_proc_forget(serve_proc *p);
sbx_process *serve_proc_handle(serve_proc *p);
/* Its stream broke before the end (the sandbox was paused): waits attach by pid from then on,
 * the entry stays (killed at shutdown, by kill_process) until a wait saw the end. */
void serve_proc_set_broken(serve_proc *p);
bool serve_proc_broken(serve_proc *p);
/* Shutdown: kill and free every remembered command (no call may be running). */
void serve_proc_shutdown(serve_server *s);
/* Whether any command is remembered (initialize waits until none is). */
bool serve_proc_any(serve_server *s);

/* ---- ptys.c: the terminals this server started or attached ---------------------------- */

/*
 * sbx_pty_start (attach_pid 0: a->command, cols, rows, cwd, env, timeout_ms, user) or
 * sbx_pty_attach (attach_pid); output notified under c's id. On 0 *out is held once
 * (serve_pty_put) and in the table (a handle of the same (id, pid) is replaced).
 */
int serve_pty_open(serve_pty **out, serve_call *c, const serve_args *a, uint32_t attach_pid,
                   sbx_error *err);
/* The handle of (id, pid) held once, or NULL. */
serve_pty *serve_pty_get(serve_server *s, const char *id, uint32_t pid);
void serve_pty_put(serve_pty *t);
/* Out of the table (it ended, pty_wait saw it); freed once the last holder puts it. */
void serve_pty_forget(serve_pty *t);
sbx_pty *serve_pty_handle(serve_pty *t);
uint32_t serve_pty_pid(serve_pty *t);
bool serve_pty_any(serve_server *s);
/* Shutdown: kill and free every terminal in the table (no call may be running). */
void serve_pty_shutdown(serve_server *s);

/* ---- events.c: notifications ------------------------------------------------------- */

/*
 * `output` {"id", "pid"?, "stream": "stdout"|"stderr"|"pty", "data" | "data_b64"}: id is
 * the exec (pty_start, pty_attach) request's id; pid (> 0) names a background command or
 * a terminal.
 */
void serve_notify_output(serve_writer *w, json_t *id, uint32_t pid, const char *stream,
                         const unsigned char *data, size_t len);
/* `watch_event` {"id", "op", "name" | "name_b64"}: id is the watch request's id. */
void serve_notify_watch(serve_writer *w, json_t *id, const char *op, const char *name);
/* `watch_started` {"id","path"}: envd watches now; every change from here on is reported. */
void serve_notify_watch_started(serve_writer *w, json_t *id, const char *path);
/* `log` {"level", "message", "fields"}; used as the provider's logger when asked. */
/* A wait's attach by pid is live: output from now on is delivered (under the wait's id). */
void serve_notify_attached(serve_writer *w, json_t *id, uint32_t pid);
void serve_notify_log(serve_writer *w, sbx_log_level level, const char *message,
                      const sbx_log_field *fields, size_t nfields);

#endif
