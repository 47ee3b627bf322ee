/*
 * tests/integration/harness.h: the integration tests' harness.
 *
 * Starts a private fake-e2b (fork/exec on a free port, waits for its
 * "listening" line), makes E2B providers pointed at it with a log collector,
 * reads and clears fake-e2b's request log and faults through its admin API
 * (libcurl), and stops the server (SIGTERM, waitpid). Every test executable
 * starts its own server, so ctest -j can run them side by side.
 *
 * Secrets: every log line the providers emit and every error message a test
 * hands to h_note_err() is kept; h_ctx_free() (and h_assert_secret_free())
 * fails the test if the API key or any envd access token shows up in them.
 */
#ifndef ITEST_HARNESS_H
#define ITEST_HARNESS_H

#include <jansson.h>
#include <pthread.h>
#include <sandbox.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The API key every test uses: distinctive, so a leak is found by a plain substring search. */
#define H_API_KEY "e2b_itest0secret0key0d41d8cd98f00b204e9800998ecf8427e"

typedef struct h_server {
	pid_t pid;
	int port;
	char url[64];  /* http://127.0.0.1:PORT (https with $ITEST_TLS) */
	char dir[256]; /* temp dir: state dir, port file, server output */
	int tls;       /* $ITEST_TLS set: fake-e2b --tls; providers take E2B's production path */
	char ca[320];  /* with tls: the fake's CA (<state>/ca.pem) */
} h_server;

/*
 * Start fake-e2b ($FAKE_E2B_BIN) with --port 0 and the test API key, plus one
 * extra flag from $ITEST_FAKE_E2B_ARG when set (e.g. "--legacy-routes").
 * $ITEST_TLS=1: with --tls, and h_provider_new(h, extra, NULL) then gives a provider on E2B's
 * production address path: domain e2b.localhost, no apiUrl and no envd override (https to
 * api.e2b.localhost and 49983-<id>.e2b.localhost), trusting the fake's CA, every connection
 * sent to the fake's port (the test options tls_ca_file and connect_to).
 * 0 or -1 (message on stderr).
 */
int h_server_start(h_server *s);
/* SIGTERM and waitpid (SIGKILL after 10 s); removes the temp dir. Idempotent. */
void h_server_stop(h_server *s);

/* One collected log line. */
typedef struct h_line {
	sbx_log_level level;
	char *text; /* "message k=v k=v" */
} h_line;

typedef struct h_ctx {
	h_server srv;
	sbx_provider *p; /* the default provider (h_provider_new(h, NULL, NULL)) */
	pthread_mutex_t mu;
	h_line *lines; /* log lines and noted error messages */
	size_t nlines, caplines;
	char **secrets; /* envd tokens seen (besides H_API_KEY) */
	size_t nsecrets;
} h_ctx;

/* New context: server started, default provider made. NULL on failure. */
h_ctx *h_ctx_new(void);
/* Checks secrets (fails the test on a leak), frees providers' context, stops the server. */
void h_ctx_free(h_ctx *h);

/* cmocka group setup/teardown wrapping h_ctx_new/h_ctx_free (*state = h_ctx *). */
int h_group_setup(void **state);
int h_group_teardown(void **state);

/*
 * A group fixture with one sandbox for the whole file: h_group_setup(), then
 * create a sandbox named h_name(prefix) with egress none into *id_out and
 * learn its envd token for the secret scan. The teardown destroys it (if it
 * was made), frees *id_out and calls h_group_teardown().
 */
/* Aborts `sig` after `delay_ms` (run it with pthread_create); `at` is when it fired (h_now_ms). */
typedef struct h_aborter {
	sbx_signal *sig;
	unsigned delay_ms;
	uint64_t at;
} h_aborter;
void *h_abort_later(void *h_aborter_arg);

int h_group_setup_sandbox(void **state, const char *prefix, char **id_out);
int h_group_teardown_sandbox(void **state, char **id);

/*
 * A provider on h's server. `extra_cfg` is extra JSON members for the config
 * object (e.g. "\"domainAllowlist\":false"), or NULL; `url` overrides both
 * the API and envd URL (NULL = h's server). Logs go to h's collector.
 */
sbx_provider *h_provider_new(h_ctx *h, const char *extra_cfg, const char *url);

/* Keep an error message for the secret scan. Accepts NULL. */
void h_note_err(h_ctx *h, const sbx_error *err);
/* Number of collected log lines at `level` whose text contains `needle`. */
size_t h_log_count(h_ctx *h, sbx_log_level level, const char *needle);
/* The number of lines collected so far: a mark for h_log_max_field. */
size_t h_log_mark(h_ctx *h);
/* The largest integer value of field `key` in the debug lines with message `message` collected
 * since mark `since`; -1 when there is none. */
long long h_log_max_field(h_ctx *h, size_t since, const char *message, const char *key);
/* Fail if any collected text contains H_API_KEY or a known envd token. */
void h_assert_secret_free(h_ctx *h);
/* Learn the envd tokens of every sandbox fake-e2b knows, for the secret scan. */
void h_learn_tokens(h_ctx *h);

/* ---- admin API of fake-e2b ---- */

/*
 * HTTP request to the fake (admin or any route) with the test API key.
 * `extra_header`: NULL, or header lines separated by '\n'. Returns the parsed
 * JSON body (or NULL); the status in *status (-1 on a transport error).
 */
json_t *h_http(h_ctx *h, const char *method, const char *path, const char *body, long *status,
               const char *extra_header);
/* The request log as a JSON array of entries (new ref). */
json_t *h_reqlog(h_ctx *h);
void h_reqlog_clear(h_ctx *h);
/* Install a fault (JSON object text, fake-e2b README format). */
void h_fault(h_ctx *h, const char *fault_json);
void h_faults_clear(h_ctx *h);
/* Clear faults and the request log. */
void h_reset(h_ctx *h);
/* A `respond` fault: `status` with `body` (NULL = fake's E2B body) `times` times (0 = always). */
void h_fault_status(h_ctx *h, const char *method, const char *path, int status, const char *body,
                    int times);
/* A fault of another kind (stream_no_end, kill_ignored, connect_no_token, ...). */
void h_fault_kind(h_ctx *h, const char *method, const char *path, const char *kind, int times);
/* envd token of a sandbox (GET /sandboxes/{id}, through libcurl), strdup'ed, or NULL. */
char *h_token_of(h_ctx *h, const char *id);
void h_add_secret(h_ctx *h, const char *tok);
/* Learn the envd token of sandbox `id` for the secret scan. */
void h_learn_token(h_ctx *h, const char *id);
/* Number of envd requests (/process., /filesystem., /files, /health) in a log. */
size_t h_count_envd(json_t *log);

/* Accessors of one request log entry. */
const char *h_entry_method(json_t *e);
const char *h_entry_path(json_t *e); /* path without the query */
/* A decoded query argument, or NULL. */
const char *h_entry_query(json_t *e, const char *key);
int h_entry_status(json_t *e);
/* The logged JSON body (for Connect streams the first envelope's JSON), new ref or NULL. */
json_t *h_entry_json(json_t *e);
/*
 * Count entries with method (NULL = any) whose path starts with prefix (NULL =
 * any); a prefix ending in '$' must match the whole path.
 */
size_t h_count(json_t *log, const char *method, const char *prefix);
/* The n-th (0-based) such entry, borrowed, or NULL. */
json_t *h_find(json_t *log, const char *method, const char *prefix, size_t n);
/*
 * Wait until the fake has answered at least n requests that h_count(method, prefix) counts
 * (the log shows a request once its response is queued): for a test that acts once a call
 * has had its first answer. Asserts they come within guard_ms.
 */
void h_wait_requests(h_ctx *h, const char *method, const char *prefix, size_t n, uint64_t guard_ms);

/* ---- fake-e2b state ---- */

/* Create a sandbox behind the provider's back (libcurl), metadata name `name`; strdup'ed id. */
char *h_raw_create(h_ctx *h, const char *name);
/* State of a sandbox in fake-e2b ("running", "paused"), strdup'ed, or NULL when it is gone. */
char *h_fake_state(h_ctx *h, const char *id);
/* Number of sandboxes fake-e2b holds with metadata capybara-sandbox-name = name. */
size_t h_fake_count_named(h_ctx *h, const char *name);

/* ---- contract helpers ---- */

/* Limits with egress none (cpu 1, memory 2048, disk 10240). */
sbx_limits h_limits(sbx_egress egress);
/* Create a sandbox on p (NULL = h->p) with egress none; asserts success; caller sbx_free()s. */
char *h_create(h_ctx *h, sbx_provider *p, const char *name);
/* Exec with defaults; asserts the call succeeds. */
void h_exec(h_ctx *h, sbx_exec_result *out, const char *id, const char *cmd);
/* Exec returning the code; `opts` may be NULL. */
int h_exec_opts(h_ctx *h, sbx_exec_result *out, const char *id, const char *cmd,
                const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err);
/* stdout of a command as a NUL-terminated string (caller free()s); asserts exit 0. */
char *h_sh(h_ctx *h, const char *id, const char *cmd);

/*
 * The contract's prompt abort of a resume, measured robustly: three times, `arm` installs the
 * faults (after h_reset), a resume of `id` starts on a thread, `wait_in` returns once the call is
 * where it is to be aborted, and the abort must make it return SBX_EABORTED; the best of the
 * three must return within 250 ms of its abort or, on a machine so loaded that a plain `true`
 * exec takes over 80 ms, three times the best such exec measured in the same run. `what` names
 * the case in the printed times.
 */
void h_assert_resume_aborts_promptly(h_ctx *h, const char *id, void (*arm)(h_ctx *),
                                     void (*wait_in)(h_ctx *), const char *what);

/* Milliseconds since an arbitrary point (CLOCK_MONOTONIC). */
uint64_t h_now_ms(void);
/* A unique sandbox name for this process: prefix-PID-N. Static buffer per call site not needed:
 * writes out. */
void h_name(char *out, size_t outlen, const char *prefix);

#endif
