/*
 * tests/fake/server/fkserver.h: start a private fake-e2b with any flags and
 * talk to it with libcurl (black box). For the server's own tests.
 */
#ifndef FKSERVER_H
#define FKSERVER_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct fks {
	pid_t pid;
	char dir[64];  /* a private temp dir: port file, state, output */
	char url[256]; /* http(s)://127.0.0.1:PORT */
	unsigned port;
	char key[128];    /* the API key in use (given or read from the key file) */
	char out[8192];   /* the server's stdout+stderr when it failed to start */
	int exit_status;  /* after fks_stop / a failed start: waitpid status */
	char cafile[160]; /* --tls: <state>/ca.pem, trusted by every request */
	char state[128];  /* the --state-dir it was given */
} fks;

/* Start `bin` with the flags (NULL-terminated) plus --port 0 --port-file --state-dir (a private
 * one, with --ephemeral: nothing kept).
 * 0 when listening; -1 when it exited first (s->out, s->exit_status) or did not start. */
int fks_start(fks *s, const char *bin, const char *const *flags);
/* fks_start with --state-dir `state_dir` (NULL: a private one in s->dir, --ephemeral; "": no
 * --state-dir at all), which fks_stop leaves in place: a later server can be started on it. */
int fks_start_in(fks *s, const char *bin, const char *state_dir, const char *const *flags);
/* SIGTERM, wait, remove the dir (and a private state dir). 0 when it exited 0. s->out: the
 * server's output (its last 8 KiB). */
int fks_stop(fks *s);
/* SIGKILL (a crash), wait; the dir stays for fks_stop, s->out as fks_stop's. 0 when it died of
 * that signal. */
int fks_kill(fks *s);
/* fks_start for a group setup: -1 with the server's output on stderr when it did not start. */
int fks_up(fks *s, const char *bin, const char *const *flags);
/* The fake-e2b binary a test program is given (argv[1]); NULL with the usage on stderr. */
const char *fks_bin_arg(int argc, char **argv);
/* fks_start with --api-key `key` --quiet and the flags in `extra` (NULL-terminated, at most
 * 12; NULL: none), asserting that it listens. */
void fks_start_key(fks *s, const char *bin, const char *key, const char *const *extra);

typedef struct fkr {
	long status;
	char *body;
	size_t len;
	json_t *json;
	char headers[4096]; /* raw response headers */
	int curl_rc;
} fkr;

/* One request. headers: NULL-terminated "Name: value" lines (the API key is NOT added). */
fkr *fks_req(fks *s, const char *method, const char *path, const char *const *headers,
             const void *body, size_t blen);
/* The same to https?://<host>:PORT<path>, <host> resolved to 127.0.0.1 (CURLOPT_RESOLVE). */
fkr *fks_req_host(fks *s, const char *host, const char *method, const char *path,
                  const char *const *headers, const void *body, size_t blen);
/* A request with every option: fks_req's, a host as fks_req_host's (NULL: the server's URL), a
 * multipart body (`mime` instead of `body`), a timeout (0: 60 s). */
typedef struct fks_call {
	const char *host, *method, *path;
	const char *const *headers;
	const void *body;
	size_t blen;
	curl_mime *mime;
	long timeout_ms;
} fks_call;
fkr *fks_do(fks *s, const fks_call *c);
void fkr_free(fkr *r);
/* A CURLOPT_WRITEFUNCTION appending to the body (and len) of the fkr given as its
 * CURLOPT_WRITEDATA, NUL-terminated, for a test's own handles (curl_multi). */
size_t fkr_write_body(char *p, size_t sz, size_t n, void *fkr_ptr);
/* The value of a response header (case-insensitive name), copied into buf; NULL if absent. */
const char *fkr_header(const fkr *r, const char *name, char *buf, size_t cap);

/* A sandbox made through the control plane, with the headers envd wants. */
typedef struct fks_box {
	char id[64], token[128], traffic[128];
	char hid[128], htok[200];
} fks_box;
/* POST /v2/sandboxes with `body` (NULL: {"templateID":"base"}); asserts 201. */
void fks_box_create(fks *s, const char *key, const char *body, fks_box *b);
void fks_box_delete(fks *s, const char *key, fks_box *b);
/* Run `sh -c line` as root through process.Process/Start (E2b-Sandbox-Id routing): whether it
 * exited 0 (the call itself must succeed). */
bool fks_box_run(fks *s, fks_box *b, const char *line);
/* fks_box_run that must exit 0. */
void fks_box_sh(fks *s, fks_box *b, const char *line);
/* A suite whose tests make sandboxes, which needs root. main fills fks_root_suite (the binary,
 * the API key, its server and, when box is not NULL, a sandbox to make in it) and runs the
 * tests with fks_root_setup and fks_root_teardown as cmocka's group (or per-test) setup and
 * teardown. When this process is root they start the server (fks_up with --api-key KEY
 * --quiet) and make the sandbox (fks_box_create), then delete it and stop the server; when not,
 * they do nothing, and each test begins with fks_need_root (which skips it). */
typedef struct fks_root_suite {
	const char *bin, *key;
	fks *srv;
	fks_box *box;
} fks_root_suite;
extern fks_root_suite fks_root;
/* main's first call: fks_root from argv[1] (the binary, as fks_bin_arg), key, srv and box;
 * -1 with the usage on stderr. */
int fks_root_init(int argc, char **argv, const char *key, fks *srv, fks_box *box);
int fks_root_setup(void **state);
int fks_root_teardown(void **state);
/* Skip the test (cmocka's skip(), "SKIP: sandboxes need root" on stderr) unless root. */
void fks_need_root(void);
/* POST /filesystem.Filesystem/<rpc> with the JSON `body` in b, as root (envd's Basic user). */
fkr *fks_fs_call(fks *s, const fks_box *b, const char *rpc, const char *body);

/* A fake-e2b as the init of a PID namespace of its own (with its own /proc), as in a container:
 * started through <tmp>/pid1.sh, `exec unshare --pid --fork --mount-proc BIN "$@"`. */
typedef struct fks_pid1 {
	char tmp[64];     /* a directory of the test's in /var/tmp: the wrapper, a state dir */
	char wrapper[96]; /* <tmp>/pid1.sh */
	pid_t server;     /* the server (the namespace's PID 1) while it runs, else 0 */
} fks_pid1;
/* Make p's directory and wrapper for `bin`; false (the test skips) when this process cannot
 * (not root, or no unshare --pid). */
bool fks_pid1_prepare(fks_pid1 *p, const char *bin);
/* fks_start_in(s, p->wrapper, state_dir, flags), then p->server (unshare's child); asserts
 * both. */
void fks_pid1_start(fks_pid1 *p, fks *s, const char *state_dir, const char *const *flags);
/* SIGTERM to p->server, its end awaited (30 s at most), then fks_stop(s). */
void fks_pid1_stop(fks_pid1 *p, fks *s);
/* SIGKILL to p->server (its namespace dies with it), its end awaited; for a test's teardown
 * and a crash. Nothing when p->server is 0. */
void fks_pid1_kill(fks_pid1 *p);
/* rm -rf p->tmp. */
void fks_pid1_remove(fks_pid1 *p);

/* Raw connections, for the tests of floods and limits. */
/* A TCP connection to 127.0.0.1:port from loopback address 127.0.0.`src` (0: the kernel's
 * choice), non-blocking when asked (then the connect may still be in progress); -1 when it
 * could not be made. */
int fks_tcp_connect(unsigned port, bool nonblock, unsigned src);
/* ms until the server closes fd (EOF or reset, whatever it answered first), -1 after max_ms. */
long fks_ms_until_closed(int fd, long max_ms);
/* An HTTP answer's status line read from fd (up to max_ms): the status, 0 when the connection
 * closed (or reset) without one, -1 on timeout. */
int fks_read_status(int fd, long max_ms);
/* The threads of process pid (/proc/<pid>/status "Threads:"), -1 when it cannot be read. */
long fks_threads(pid_t pid);
/* Raise this process's open-file limit to its hard limit; skip the test when that is below n. */
void fks_need_fds(unsigned long n);
/* n bytes of ch, NUL-terminated (malloc: the caller frees it). */
char *fks_repeat(char ch, size_t n);

#endif
