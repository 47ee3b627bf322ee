/*
 * fake-e2b/envd.c: envd's HTTP and Connect surface (e2b-protocol.md §2-§5).
 *
 * Order of checks, as E2B's proxy and envd's middleware: sandbox known and
 * running (else the proxy's 502), X-Access-Token (constant time; /files also
 * takes a v1 signature), Basic user, then the route. Unary errors are Connect
 * JSON bodies with the mapped status; stream errors before the first message
 * are HTTP 200 + an end-stream error. Streams (Start/Connect) are MHD content
 * readers that block on the runtime's subscription with keepalive timeouts.
 */
#define _GNU_SOURCE
#include "envd.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin.h"
#include "control.h"
#include "runtime.h"

#define FK_DEFAULT_KEEPALIVE_S 90
#define FK_STREAM_SLICE_MS     1000 /* how often an idle stream checks its client is still there */
#define FK_MAX_FRAME_JSON      (64u * 1024u)

/* ---- small helpers ------------------------------------------------------------------------- */

static const char *connect_code_of(int fk)
{
	switch (fk) {
	case FK_EINVAL:
	case FK_ENOCWD:
	case FK_EISDIR:
	case FK_ENOTDIR:
	case FK_ESPAWN:
		return "invalid_argument";
	case FK_ENOTFOUND:
		return "not_found";
	case FK_EEXIST:
		return "already_exists";
	case FK_ENOUSER:
		return "unauthenticated";
	case FK_ESTATE:
		return "unavailable";
	case FK_ENOSPC:
	case FK_ENOMEM:
		return "resource_exhausted";
	case FK_ECLOSED:
		return "failed_precondition";
	default:
		return "internal";
	}
}

static char *b64_encode(const unsigned char *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

/* Standard or URL-safe, padded or not (protobuf-JSON bytes). -1 on bad input. */
static long b64_decode(const char *in, unsigned char **out)
{
	size_t n = strlen(in), i;
	char *tmp = malloc(n + 4);
	*out = NULL;
	if (!tmp)
		return -1;
	for (i = 0; i < n; i++)
		tmp[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
	while (i % 4)
		tmp[i++] = '=';
	tmp[i] = '\0';
	size_t pad = 0;
	while (pad < i && pad < 2 && tmp[i - 1 - pad] == '=')
		pad++;
	unsigned char *buf = malloc(i / 4 * 3 + 1);
	int m = buf ? EVP_DecodeBlock(buf, (unsigned char *)tmp, (int)i) : -1;
	free(tmp);
	if (m < 0 || (size_t)m < pad) {
		free(buf);
		return -1;
	}
	*out = buf;
	return m - (long)pad;
}

/* Username from "Authorization: Basic base64(user:pass)"; NULL when absent. */
static char *basic_user(fk_req *r, int *bad)
{
	const char *h = fk_header(r, "Authorization");
	*bad = 0;
	if (!h)
		return NULL;
	if (strncasecmp(h, "Basic ", 6) != 0) {
		*bad = 1;
		return NULL;
	}
	unsigned char *dec = NULL;
	long n = b64_decode(h + 6, &dec);
	if (n < 0) {
		*bad = 1;
		return NULL;
	}
	char *user = strndup((char *)dec, (size_t)n);
	free(dec);
	if (user)
		user[strcspn(user, ":")] = '\0';
	return user;
}

static enum MHD_Result reply_not_found_502(fk_req *r, const char *id)
{
	return fk_reply_json(r, 502,
	                     json_pack("{s:s,s:s,s:i}", "sandboxId", id ? id : "", "message",
	                               "The sandbox was not found", "code", 502));
}

static enum MHD_Result reply_unauthorized(fk_req *r)
{
	return fk_reply_error(r, 401,
	                      "unauthorized access, please provide a valid access token or "
	                      "method signing if supported");
}

static int token_ok(fk_sandbox *sb, const char *given)
{
	const char *want = fk_sandbox_token(sb);
	if (!want) /* not secured: envd without a token accepts everything (§6) */
		return 1;
	size_t n = strlen(want);
	return given && strlen(given) == n && CRYPTO_memcmp(want, given, n) == 0;
}

/* protobuf-JSON Timestamp: RFC 3339 with 0, 3, 6 or 9 fractional digits. */
static json_t *timestamp_json(int64_t sec, int32_t nsec)
{
	char base[40], buf[64];
	time_t t = (time_t)sec;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (nsec == 0)
		snprintf(buf, sizeof(buf), "%sZ", base);
	else if (nsec % 1000000 == 0)
		snprintf(buf, sizeof(buf), "%s.%03dZ", base, (int)(nsec / 1000000));
	else if (nsec % 1000 == 0)
		snprintf(buf, sizeof(buf), "%s.%06dZ", base, (int)(nsec / 1000));
	else
		snprintf(buf, sizeof(buf), "%s.%09dZ", base, (int)nsec);
	return json_string(buf);
}

/* EntryInfo (§5.5), defaults omitted. */
static json_t *entry_json(const fk_entry *e)
{
	static const char *const types[] = {NULL, "FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY",
	                                    "FILE_TYPE_SYMLINK", NULL};
	json_t *j = json_object();
	if (e->name && *e->name)
		json_object_set_new(j, "name", json_string(e->name));
	if (e->type >= 1 && e->type <= 4 && types[e->type])
		json_object_set_new(j, "type", json_string(types[e->type]));
	if (e->path && *e->path)
		json_object_set_new(j, "path", json_string(e->path));
	if (e->size) {
		char sz[32];
		snprintf(sz, sizeof(sz), "%lld", (long long)e->size);
		json_object_set_new(j, "size", json_string(sz));
	}
	if (e->mode & 07777)
		json_object_set_new(j, "mode", json_integer(e->mode & 07777));
	if (e->permissions[0])
		json_object_set_new(j, "permissions", json_string(e->permissions));
	if (e->owner && *e->owner)
		json_object_set_new(j, "owner", json_string(e->owner));
	if (e->group && *e->group)
		json_object_set_new(j, "group", json_string(e->group));
	json_object_set_new(j, "modifiedTime", timestamp_json(e->mtime_sec, e->mtime_nsec));
	if (e->symlink_target)
		json_object_set_new(j, "symlinkTarget", json_string(e->symlink_target));
	return j;
}

/* Go's ProcessState.String() signal names on Linux. */
static const char *go_signal_name(int sig)
{
	static const char *const names[] = {
	    NULL,
	    "hangup",
	    "interrupt",
	    "quit",
	    "illegal instruction",
	    "trace/breakpoint trap",
	    "aborted",
	    "bus error",
	    "floating point exception",
	    "killed",
	    "user defined signal 1",
	    "segmentation fault",
	    "user defined signal 2",
	    "broken pipe",
	    "alarm clock",
	    "terminated",
	    "stack fault",
	    "child exited",
	    "continued",
	    "stopped (signal)",
	    "stopped",
	    "stopped (tty input)",
	    "stopped (tty output)",
	    "urgent I/O condition",
	    "CPU time limit exceeded",
	    "file size limit exceeded",
	    "virtual timer expired",
	    "profiling timer expired",
	    "window changed",
	    "I/O possible",
	    "power failure",
	    "bad system call",
	};
	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])))
		return names[sig];
	return NULL;
}

/* The end event (§4.2) from a waitpid status. */
static json_t *end_event_json(int ws)
{
	char status[96];
	json_t *end = json_object();
	if (WIFEXITED(ws)) {
		int code = WEXITSTATUS(ws);
		snprintf(status, sizeof(status), "exit status %d", code);
		if (code)
			json_object_set_new(end, "exitCode", json_integer(code));
		json_object_set_new(end, "exited", json_true());
		json_object_set_new(end, "status", json_string(status));
		if (code)
			json_object_set_new(end, "error", json_string(status));
	} else {
		int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
		const char *name = go_signal_name(sig);
		char num[32];
		if (!name) {
			snprintf(num, sizeof(num), "signal %d", sig);
			name = num;
		}
		snprintf(status, sizeof(status), "signal: %s%s", name,
		         WIFSIGNALED(ws) && WCOREDUMP(ws) ? " (core dumped)" : "");
		json_object_set_new(end, "exitCode", json_integer(-1));
		json_object_set_new(end, "status", json_string(status));
		json_object_set_new(end, "error", json_string(status));
	}
	return json_pack("{s:{s:o}}", "event", "end", end);
}

/* ---- Connect framing --------------------------------------------------------------------- */

/* Append one envelope (flags, BE32 length, payload) to a growable buffer. */
typedef struct obuf {
	unsigned char *ptr;
	size_t len, off, cap;
} obuf;

static int obuf_put(obuf *b, const void *data, size_t len)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + len)
			cap *= 2;
		unsigned char *p = realloc(b->ptr, cap);
		if (!p)
			return -1;
		b->ptr = p;
		b->cap = cap;
	}
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	return 0;
}

static int obuf_frame_raw(obuf *b, unsigned flags, const void *payload, size_t len)
{
	unsigned char hdr[5] = {(unsigned char)flags, (unsigned char)(len >> 24),
	                        (unsigned char)(len >> 16), (unsigned char)(len >> 8),
	                        (unsigned char)len};
	if (obuf_put(b, hdr, 5) < 0)
		return -1;
	return obuf_put(b, payload, len);
}

/* Frame a message (steals msg). */
static int obuf_frame(obuf *b, unsigned flags, json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (!s)
		return -1;
	int rc = obuf_frame_raw(b, flags, s, strlen(s));
	free(s);
	return rc;
}

static json_t *end_stream_error(const char *code, const char *message)
{
	return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
}

/* A stream that fails before its first message: HTTP 200 + one end-stream error frame. */
static enum MHD_Result reply_stream_error(fk_req *r, const char *code, const char *message)
{
	obuf b = {0};
	obuf_frame(&b, 2, end_stream_error(code, message));
	enum MHD_Result ret = fk_reply(r, 200, "application/connect+json", b.ptr, b.len);
	free(b.ptr);
	return ret;
}

/* The request message of a Connect call: an envelope for streams, plain JSON for unary. */
static json_t *request_message(fk_req *r, int stream)
{
	if (!stream)
		return fk_body_json(r, 1);
	if (r->body_len < 5)
		return NULL;
	size_t n = ((size_t)r->body[1] << 24) | ((size_t)r->body[2] << 16) |
	           ((size_t)r->body[3] << 8) | r->body[4];
	if (r->body[0] != 0 || n != r->body_len - 5)
		return NULL;
	return json_loadb((const char *)r->body + 5, n, 0, NULL);
}

/* ---- process streams --------------------------------------------------------------------- */

enum st_phase { ST_EVENTS, ST_IDLE, ST_FINISH, ST_ABORT };

typedef struct fk_stream {
	fk_server *srv;
	fk_sandbox *sb;
	fk_watch watch;
	fk_proc *proc;
	fk_sub *sub;
	uint32_t pid;
	enum fk_fault_kind fault;
	int immune;
	int kill_on_deadline; /* Start: Connect-Timeout-Ms bounds the process */
	enum st_phase phase;
	obuf out;
	int keepalive_ms;
	int64_t deadline_ms; /* monotonic; 0 = none (Connect-Timeout-Ms) */
	int64_t last_send_ms;
	int sock;
} fk_stream;

static void stream_free(void *cls)
{
	fk_stream *s = cls;
	/* the client left before Connect-Timeout-Ms: the process is still bounded by it (§4.2) */
	if (s->sb && s->proc && s->kill_on_deadline && s->deadline_ms && !s->immune &&
	    s->phase != ST_FINISH && !fk_proc_ended(s->proc, NULL))
		fk_control_kill_at(s->srv->control, fk_sandbox_id(s->sb), s->proc, s->deadline_ms);
	if (s->sb)
		fk_sandbox_unwatch(s->srv->control, s->sb, &s->watch);
	fk_sub_free(s->sub);
	fk_proc_unref(s->proc);
	pthread_cond_destroy(&s->watch.cond);
	fk_sandbox_release(s->srv->control, s->sb);
	free(s->out.ptr);
	free(s);
}

static int client_gone(fk_stream *s)
{
	if (s->sock < 0)
		return 0;
	struct pollfd p = {.fd = s->sock, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int queue_data(fk_stream *s, const fk_event *ev)
{
	char *b64 = b64_encode(ev->data, ev->len);
	if (!b64)
		return -1;
	json_t *m = json_pack("{s:{s:{s:s}}}", "event", "data",
	                      ev->type == FK_EV_STDOUT ? "stdout" : "stderr", b64);
	free(b64);
	return obuf_frame(&s->out, 0, m);
}

static void queue_keepalive(fk_stream *s)
{
	obuf_frame(&s->out, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
}

/* After the end event: immune/keepalive-only streams idle; no_end stops; else end-stream {}. */
static void on_end(fk_stream *s, int ws)
{
	int forward = s->fault != FK_FAULT_STREAM_KEEPALIVE_ONLY;
	if (s->immune || s->fault == FK_FAULT_STREAM_KEEPALIVE_ONLY) {
		fk_watch_set_sub(s->srv->control, &s->watch, NULL);
		fk_sub_free(s->sub); /* nothing more to read; keep the stream open */
		s->sub = NULL;
		s->phase = ST_IDLE;
		return;
	}
	if (forward)
		obuf_frame(&s->out, 0, end_event_json(ws));
	if (s->fault != FK_FAULT_STREAM_NO_END)
		obuf_frame(&s->out, 2, json_object());
	s->phase = ST_FINISH;
}

/* Produce the next bytes into s->out, blocking until something is due. */
static void stream_step(fk_stream *s)
{
	fk_control *c = s->srv->control;
	for (;;) {
		int64_t now = fk_mono_ms();
		if (fk_watch_broken(c, &s->watch) || client_gone(s)) {
			s->phase = ST_ABORT;
			return;
		}
		if (s->deadline_ms && now >= s->deadline_ms) {
			/* envd: the context ends, the pid is SIGKILLed, the stream ends with
			 * deadline_exceeded, usually without an end event (§4.2) */
			if (!s->immune && s->kill_on_deadline)
				fk_proc_signal(s->srv->rt, fk_sandbox_id(s->sb), s->pid, SIGKILL,
				               NULL);
			obuf_frame(
			    &s->out, 2,
			    end_stream_error("deadline_exceeded", "context deadline exceeded"));
			s->phase = ST_FINISH;
			return;
		}
		int64_t due = s->last_send_ms + s->keepalive_ms;
		if (now >= due) {
			queue_keepalive(s);
			s->last_send_ms = now;
			return;
		}
		int64_t wait = due - now;
		if (s->deadline_ms && s->deadline_ms - now < wait)
			wait = s->deadline_ms - now;
		if (wait > FK_STREAM_SLICE_MS)
			wait = FK_STREAM_SLICE_MS;
		if (!s->sub) {
			fk_watch_sleep(c, &s->watch, (int)wait);
			continue;
		}
		fk_event ev = {0};
		int rc = fk_sub_next(s->sub, &ev, (int)wait);
		if (rc == FK_ETIMEOUT)
			continue;
		if (rc < 0) { /* runtime gone (box destroyed): drop the connection */
			s->phase = ST_ABORT;
			return;
		}
		if (ev.type == FK_EV_END) {
			on_end(s, ev.wait_status);
			fk_event_clear(&ev);
			if (s->phase == ST_IDLE)
				continue;
			return;
		}
		if (s->fault != FK_FAULT_STREAM_KEEPALIVE_ONLY) {
			queue_data(s, &ev);
			s->last_send_ms = fk_mono_ms();
			fk_event_clear(&ev);
			return;
		}
		fk_event_clear(&ev);
	}
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	fk_stream *s = cls;
	for (;;) {
		if (s->out.off < s->out.len) {
			size_t n = s->out.len - s->out.off;
			if (n > max)
				n = max;
			memcpy(buf, s->out.ptr + s->out.off, n);
			s->out.off += n;
			return (ssize_t)n;
		}
		switch (s->phase) {
		case ST_FINISH:
			return s->fault == FK_FAULT_STREAM_GARBAGE ||
			               s->fault == FK_FAULT_STREAM_OVERSIZE
			           ? MHD_CONTENT_READER_END_WITH_ERROR
			           : MHD_CONTENT_READER_END_OF_STREAM;
		case ST_ABORT:
			return MHD_CONTENT_READER_END_WITH_ERROR;
		default:
			stream_step(s);
		}
	}
}

/* Takes over sb's reference, proc and sub (all freed on failure too). */
static enum MHD_Result open_stream(fk_req *r, fk_sandbox *sb, fk_proc *proc, fk_sub *sub,
                                   int kill_on_deadline)
{
	fk_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		fk_sub_free(sub);
		fk_proc_unref(proc);
		fk_sandbox_release(r->srv->control, sb);
		return reply_stream_error(r, "resource_exhausted", "out of memory");
	}
	s->srv = r->srv;
	s->sb = sb;
	s->proc = proc;
	s->sub = sub;
	s->kill_on_deadline = kill_on_deadline;
	s->pid = fk_proc_pid(proc);
	s->fault = r->fault.kind;
	s->immune =
	    s->fault == FK_FAULT_KILL_IGNORED || fk_sandbox_is_immune(r->srv->control, sb, s->pid);
	pthread_cond_init(&s->watch.cond, NULL);
	s->watch.sub = sub;
	const char *ka = fk_header(r, "Keepalive-Ping-Interval");
	char *end = NULL;
	long secs = ka ? strtol(ka, &end, 10) : 0;
	s->keepalive_ms =
	    1000 *
	    (ka && *ka && !*end && secs > 0 && secs < 86400 ? (int)secs : FK_DEFAULT_KEEPALIVE_S);
	const char *to = fk_header(r, "Connect-Timeout-Ms");
	long long ms = to ? strtoll(to, &end, 10) : 0;
	if (to && *to && !*end && ms > 0)
		s->deadline_ms = fk_mono_ms() + ms;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	s->sock = ci ? ci->connect_fd : -1;
	if (fk_sandbox_watch(r->srv->control, sb, &s->watch) < 0) {
		const char *id = fk_sandbox_id(sb);
		enum MHD_Result ret = reply_not_found_502(r, id);
		s->sb = NULL; /* not watched */
		fk_sandbox_release(r->srv->control, sb);
		stream_free(s);
		return ret;
	}
	obuf_frame(&s->out, 0,
	           json_pack("{s:{s:{s:I}}}", "event", "start", "pid", (json_int_t)s->pid));
	if (s->fault == FK_FAULT_STREAM_GARBAGE) {
		obuf_frame_raw(&s->out, 0, "garb!", 5);
		s->phase = ST_FINISH;
	} else if (s->fault == FK_FAULT_STREAM_OVERSIZE) {
		static const unsigned char hdr[5] = {0, 0x80, 0, 0, 0};
		obuf_put(&s->out, hdr, 5);
		s->phase = ST_FINISH;
	}
	s->last_send_ms = fk_mono_ms();
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
	                                                              stream_read, s, stream_free);
	if (!resp) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
	return fk_reply_response(r, 200, resp);
}

static const char *str_field(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A StartRequest (§4.1) as a runtime spec; the strings are borrowed from `req`. */
typedef struct start_args {
	fk_proc_spec spec;
	const char **argv, **keys, **vals;
} start_args;

static void start_args_dispose(start_args *a)
{
	free(a->argv);
	free(a->keys);
	free(a->vals);
}

/* 0, or -1 when the request is malformed (or OOM). */
static int start_args_parse(start_args *a, json_t *req, const char *user)
{
	json_t *p = json_object_get(req, "process"), *v;
	json_t *args = json_object_get(p, "args"), *envs = json_object_get(p, "envs");
	size_t nargs = json_array_size(args), nenv = json_object_size(envs), i = 0;
	const char *k;
	memset(a, 0, sizeof(*a));
	a->argv = calloc(nargs + 1, sizeof(char *));
	a->keys = calloc(nenv + 1, sizeof(char *));
	a->vals = calloc(nenv + 1, sizeof(char *));
	int bad = !json_is_object(p) || !str_field(p, "cmd") || !a->argv || !a->keys || !a->vals;
	json_array_foreach(args, i, v)
	{
		bad |= !json_is_string(v);
		if (!bad)
			a->argv[i] = json_string_value(v);
	}
	i = 0;
	json_object_foreach(envs, k, v)
	{
		bad |= !json_is_string(v);
		a->keys[i] = k;
		a->vals[i++] = json_is_string(v) ? json_string_value(v) : "";
	}
	a->spec = (fk_proc_spec){.cmd = str_field(p, "cmd"),
	                         .args = a->argv,
	                         .n_args = nargs,
	                         .env_keys = a->keys,
	                         .env_values = a->vals,
	                         .n_envs = nenv,
	                         .cwd = str_field(p, "cwd"),
	                         .user = user,
	                         .tag = str_field(req, "tag"),
	                         /* stdin absent means true (§4.1) */
	                         .stdin_pipe = !json_is_false(json_object_get(req, "stdin"))};
	return bad ? -1 : 0;
}

/* A failed fk_proc_start as envd answers it: 200 + end-stream error, or the proxy's 502. */
static enum MHD_Result start_error(fk_req *r, fk_sandbox *sb, int rc, const fk_err *err,
                                   const char *user)
{
	char msg[300];
	if (rc == FK_ESTATE || rc == FK_ENOTFOUND) /* paused or deleted meanwhile */
		return reply_not_found_502(r, fk_sandbox_id(sb));
	if (rc == FK_ENOUSER)
		snprintf(msg, sizeof(msg), "invalid username: '%s'", user ? user : "");
	else
		snprintf(msg, sizeof(msg), "%s", err->message[0] ? err->message : fk_code_name(rc));
	return reply_stream_error(r, connect_code_of(rc), msg);
}

/* process.Process/Start (§4.2). Takes over sb's reference. */
static enum MHD_Result process_start(fk_req *r, fk_sandbox *sb, const char *user)
{
	json_t *req = request_message(r, 1);
	start_args a;
	fk_proc *proc = NULL;
	fk_sub *sub = NULL;
	fk_err err = {0};
	enum MHD_Result ret;
	int rc = start_args_parse(&a, req, user) < 0
	             ? FK_EINVAL
	             : fk_proc_start(r->srv->rt, fk_sandbox_id(sb), &a.spec, &proc, &sub, &err);
	if (rc == FK_EINVAL && !err.message[0])
		snprintf(err.message, sizeof(err.message), "invalid StartRequest");
	if (rc < 0) {
		ret = start_error(r, sb, rc, &err, user);
		fk_sandbox_release(r->srv->control, sb);
	} else {
		if (r->fault.kind == FK_FAULT_KILL_IGNORED)
			fk_sandbox_set_immune(r->srv->control, sb, fk_proc_pid(proc));
		ret = open_stream(r, sb, proc, sub, 1);
	}
	start_args_dispose(&a);
	json_decref(req);
	return ret;
}

/* Resolve a ProcessSelector ({pid} | {tag}) to a pid. 0, or a runtime code. */
static int selector_pid(fk_req *r, fk_sandbox *sb, json_t *sel, uint32_t *pid, fk_proc **proc_out)
{
	json_t *jp = json_object_get(sel, "pid");
	const char *tag = str_field(sel, "tag");
	fk_proc *proc = NULL;
	int rc;
	if (json_is_integer(jp)) {
		*pid = (uint32_t)json_integer_value(jp);
		rc = proc_out ? fk_proc_find(r->srv->rt, fk_sandbox_id(sb), *pid, &proc, NULL) : 0;
	} else if (tag) {
		*pid = 0;
		rc = fk_proc_find_tag(r->srv->rt, fk_sandbox_id(sb), tag, &proc, NULL);
		if (rc == 0)
			*pid = fk_proc_pid(proc);
	} else {
		return FK_EINVAL;
	}
	if (proc_out)
		*proc_out = proc;
	else
		fk_proc_unref(proc);
	return rc;
}

/* process.Process/Connect (§4.3). Takes over sb's reference. */
static enum MHD_Result process_connect(fk_req *r, fk_sandbox *sb)
{
	json_t *req = request_message(r, 1);
	uint32_t pid = 0;
	fk_proc *proc = NULL;
	fk_sub *sub = NULL;
	int rc = selector_pid(r, sb, json_object_get(req, "process"), &pid, &proc);
	json_decref(req);
	if (rc == 0 && fk_sub_new(proc, &sub, NULL) < 0)
		rc = FK_EIO;
	if (rc < 0) {
		fk_proc_unref(proc);
		fk_sandbox_release(r->srv->control, sb);
		if (rc == FK_EINVAL)
			return reply_stream_error(r, "invalid_argument",
			                          "invalid process selector");
		char msg[96];
		snprintf(msg, sizeof(msg), "process with pid %u not found", pid);
		return reply_stream_error(r, rc == FK_ENOTFOUND ? "not_found" : "internal", msg);
	}
	return open_stream(r, sb, proc, sub, 0);
}

static enum MHD_Result runtime_error(fk_req *r, int rc, const fk_err *err)
{
	return fk_reply_connect_error(r, connect_code_of(rc), "%s",
	                              err->message[0] ? err->message : fk_code_name(rc));
}

static enum MHD_Result process_signal(fk_req *r, fk_sandbox *sb, json_t *req)
{
	json_t *sig = json_object_get(req, "signal");
	int signo = 0;
	if (json_is_string(sig))
		signo = !strcmp(json_string_value(sig), "SIGNAL_SIGKILL")   ? SIGKILL
		        : !strcmp(json_string_value(sig), "SIGNAL_SIGTERM") ? SIGTERM
		                                                            : 0;
	else if (json_is_integer(sig))
		signo = json_integer_value(sig) == 9    ? SIGKILL
		        : json_integer_value(sig) == 15 ? SIGTERM
		                                        : 0;
	uint32_t pid = 0;
	int rc = selector_pid(r, sb, json_object_get(req, "process"), &pid, NULL);
	if (rc == FK_EINVAL)
		return fk_reply_connect_error(r, "invalid_argument", "invalid process selector");
	if (rc < 0)
		return fk_reply_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (!signo)
		return fk_reply_connect_error(r, "unimplemented", "invalid signal");
	if (fk_sandbox_is_immune(r->srv->control, sb, pid)) /* fault kill_ignored */
		return fk_reply(r, 200, "application/json", "{}", 2);
	fk_err err = {0};
	rc = fk_proc_signal(r->srv->rt, fk_sandbox_id(sb), pid, signo, &err);
	if (rc == FK_ENOTFOUND)
		return fk_reply_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (rc < 0)
		return runtime_error(r, rc, &err);
	return fk_reply(r, 200, "application/json", "{}", 2);
}

static json_t *strings_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static enum MHD_Result process_list(fk_req *r, fk_sandbox *sb)
{
	fk_proc_info *infos = NULL;
	size_t n = 0;
	fk_err err = {0};
	int rc = fk_proc_list(r->srv->rt, fk_sandbox_id(sb), &infos, &n, &err);
	if (rc < 0)
		return runtime_error(r, rc, &err);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *cfg = json_pack("{s:s}", "cmd", infos[i].cmd ? infos[i].cmd : "");
		if (infos[i].n_args)
			json_object_set_new(cfg, "args",
			                    strings_json(infos[i].args, infos[i].n_args));
		if (infos[i].n_envs) {
			json_t *e = json_object();
			for (size_t j = 0; j < infos[i].n_envs; j++)
				json_object_set_new(e, infos[i].env_keys[j],
				                    json_string(infos[i].env_values[j]));
			json_object_set_new(cfg, "envs", e);
		}
		if (infos[i].cwd)
			json_object_set_new(cfg, "cwd", json_string(infos[i].cwd));
		json_t *pj = json_pack("{s:I,s:o}", "pid", (json_int_t)infos[i].pid, "config", cfg);
		if (infos[i].tag)
			json_object_set_new(pj, "tag", json_string(infos[i].tag));
		json_array_append_new(arr, pj);
	}
	fk_proc_info_free(infos, n);
	json_t *out = json_object();
	if (json_array_size(arr))
		json_object_set_new(out, "processes", arr);
	else
		json_decref(arr);
	return fk_reply_json(r, 200, out);
}

static enum MHD_Result process_input(fk_req *r, fk_sandbox *sb, json_t *req, int close_only)
{
	uint32_t pid = 0;
	int rc = selector_pid(r, sb, json_object_get(req, "process"), &pid, NULL);
	if (rc == FK_EINVAL)
		return fk_reply_connect_error(r, "invalid_argument", "invalid process selector");
	if (rc < 0)
		return fk_reply_connect_error(r, "not_found", "process with pid %u not found", pid);
	fk_err err = {0};
	if (close_only) {
		rc = fk_proc_close_stdin(r->srv->rt, fk_sandbox_id(sb), pid, &err);
	} else {
		json_t *in = json_object_get(req, "input");
		const char *b64 = str_field(in, "stdin");
		if (!b64)
			b64 = str_field(in, "pty");
		unsigned char *data = NULL;
		long n = b64 ? b64_decode(b64, &data) : 0;
		if (n < 0)
			return fk_reply_connect_error(r, "invalid_argument",
			                              "invalid base64 input");
		rc = n ? fk_proc_write_stdin(r->srv->rt, fk_sandbox_id(sb), pid, data, (size_t)n,
		                             &err)
		       : 0;
		free(data);
	}
	if (rc == FK_ENOTFOUND)
		return fk_reply_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (rc < 0)
		return fk_reply_connect_error(r, "internal", "%s",
		                              err.message[0] ? err.message : fk_code_name(rc));
	return fk_reply(r, 200, "application/json", "{}", 2);
}

/* filesystem.Filesystem (§5.5). */
static enum MHD_Result filesystem_call(fk_req *r, fk_sandbox *sb, const char *method, json_t *req,
                                       const char *user)
{
	const char *id = fk_sandbox_id(sb), *path = str_field(req, "path");
	fk_err err = {0};
	fk_entry e = {0};
	int rc;
	if (!strcmp(method, "Move")) {
		const char *src = str_field(req, "source"), *dst = str_field(req, "destination");
		if (!src || !dst)
			return fk_reply_connect_error(r, "invalid_argument",
			                              "source and destination required");
		rc = fk_file_move(r->srv->rt, id, src, dst, user, &e, &err);
	} else if (!path) {
		return fk_reply_connect_error(r, "invalid_argument", "path is required");
	} else if (!strcmp(method, "Stat")) {
		rc = fk_file_stat(r->srv->rt, id, path, user, &e, &err);
	} else if (!strcmp(method, "MakeDir")) {
		rc = fk_file_mkdir(r->srv->rt, id, path, user, &e, &err);
	} else if (!strcmp(method, "Remove")) {
		rc = fk_file_remove(r->srv->rt, id, path, user, &err);
		if (rc < 0)
			return runtime_error(r, rc, &err);
		return fk_reply(r, 200, "application/json", "{}", 2);
	} else if (!strcmp(method, "ListDir")) {
		json_t *d = json_object_get(req, "depth");
		unsigned depth = json_is_integer(d) && json_integer_value(d) > 0
		                     ? (unsigned)json_integer_value(d)
		                     : 1;
		fk_entry *list = NULL;
		size_t n = 0;
		rc = fk_file_list(r->srv->rt, id, path, user, depth, &list, &n, &err);
		if (rc < 0)
			return runtime_error(r, rc, &err);
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, entry_json(&list[i]));
		fk_entries_free(list, n);
		json_t *out = json_object();
		if (json_array_size(arr))
			json_object_set_new(out, "entries", arr);
		else
			json_decref(arr);
		return fk_reply_json(r, 200, out);
	} else {
		return fk_reply_connect_error(r, "unimplemented",
		                              "filesystem.Filesystem/%s is not "
		                              "implemented",
		                              method);
	}
	if (rc < 0)
		return runtime_error(r, rc, &err);
	json_t *out = json_pack("{s:o}", "entry", entry_json(&e));
	fk_entry_clear(&e);
	return fk_reply_json(r, 200, out);
}

/* ---- /files (§5.1-§5.3) ------------------------------------------------------------------- */

/* v1 signature: "v1_" + base64 nopad(SHA256("<path>:<op>:<user>:<token>[:<exp>]")). */
static int signature_ok(fk_req *r, fk_sandbox *sb, const char *op, const char *path,
                        const char *user)
{
	char *sig = fk_query(r, "signature"), *exp = fk_query(r, "signature_expiration");
	int ok = 0;
	if (!sig)
		goto done;
	if (exp) {
		char *end;
		long long e = strtoll(exp, &end, 10);
		if (!*exp || *end || e < (long long)(fk_now_ns() / 1000000000))
			goto done;
	}
	char *plain = NULL;
	int n = exp ? asprintf(&plain, "%s:%s:%s:%s:%s", path ? path : "", op, user ? user : "",
	                       fk_sandbox_token(sb), exp)
	            : asprintf(&plain, "%s:%s:%s:%s", path ? path : "", op, user ? user : "",
	                       fk_sandbox_token(sb));
	if (n < 0)
		goto done;
	unsigned char md[32];
	unsigned mdlen = 0;
	EVP_Digest(plain, (size_t)n, md, &mdlen, EVP_sha256(), NULL);
	free(plain);
	char *b64 = b64_encode(md, mdlen);
	if (b64) {
		size_t bl = strlen(b64);
		while (bl && b64[bl - 1] == '=')
			b64[--bl] = '\0';
		ok = strncmp(sig, "v1_", 3) == 0 && strlen(sig + 3) == bl &&
		     CRYPTO_memcmp(sig + 3, b64, bl) == 0;
	}
	free(b64);
done:
	free(sig);
	free(exp);
	return ok;
}

static int files_auth(fk_req *r, fk_sandbox *sb, const char *op, const char *path, const char *user)
{
	if (!fk_sandbox_token(sb)) /* not secured */
		return 1;
	const char *tok = fk_header(r, "X-Access-Token");
	if (tok)
		return token_ok(sb, tok);
	return signature_ok(r, sb, op, path, user);
}

static unsigned file_error_status(int rc)
{
	switch (rc) {
	case FK_ENOTFOUND:
		return 404;
	case FK_EISDIR:
	case FK_EINVAL:
		return 400;
	case FK_ENOUSER:
		return 401;
	case FK_ENOSPC:
		return 507;
	default:
		return 500;
	}
}

static enum MHD_Result files_get(fk_req *r, fk_sandbox *sb)
{
	char *path = fk_query(r, "path"), *user = fk_query(r, "username");
	enum MHD_Result ret;
	int fd = -1;
	uint64_t size = 0;
	fk_err err = {0};
	if (!files_auth(r, sb, "read", path, user)) {
		ret = reply_unauthorized(r);
		goto done;
	}
	if (!path || !*path) {
		ret = fk_reply_error(r, 400, "path is required");
		goto done;
	}
	int rc = fk_file_read_open(r->srv->rt, fk_sandbox_id(sb), path, user && *user ? user : NULL,
	                           &fd, &size, &err);
	if (rc < 0) {
		if (rc == FK_ENOUSER)
			ret = fk_reply_error(r, 401, "invalid username: '%s'", user ? user : "");
		else
			ret = fk_reply_error(r, file_error_status(rc), "%s",
			                     err.message[0] ? err.message : fk_code_name(rc));
		goto done;
	}
	struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
	if (!resp) {
		close(fd);
		ret = MHD_NO;
		goto done;
	}
	const char *base = strrchr(path, '/');
	char disp[512];
	snprintf(disp, sizeof(disp), "inline; filename=\"%s\"", base ? base + 1 : path);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", disp);
	ret = fk_reply_response(r, 200, resp);
done:
	free(path);
	free(user);
	return ret;
}

typedef struct upload {
	fk_req *r;
	fk_sandbox *sb;
	char *user, *path_q;
	unsigned status; /* first error; 0 = fine */
	char msg[300];
	struct MHD_PostProcessor *pp;
	fk_writer *w;
	char *cur_abs;
	char *cur_name;
	size_t cur_written;
	json_t *results;
} upload;

static void upload_fail(upload *u, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void upload_fail(upload *u, unsigned status, const char *fmt, ...)
{
	if (u->status)
		return;
	u->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof(u->msg), fmt, ap);
	va_end(ap);
}

static void upload_close_part(upload *u)
{
	if (!u->w)
		return;
	fk_err err = {0};
	if (fk_writer_close(u->w, &err) < 0)
		upload_fail(u, file_error_status(err.code), "%s", err.message);
	u->w = NULL;
	free(u->cur_abs);
	free(u->cur_name);
	u->cur_abs = u->cur_name = NULL;
}

static void upload_free(void *p)
{
	upload *u = p;
	upload_close_part(u);
	if (u->pp)
		MHD_destroy_post_processor(u->pp);
	fk_sandbox_release(u->r->srv->control, u->sb);
	json_decref(u->results);
	free(u->user);
	free(u->path_q);
	free(u);
}

/* Copy X-Metadata-<key> headers to the file's user.e2b.<key> xattrs. */
static enum MHD_Result meta_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	upload *u = cls;
	if (u->w && strncasecmp(key, "X-Metadata-", 11) == 0 && key[11]) {
		char k[128];
		size_t i;
		for (i = 0; key[11 + i] && i < sizeof(k) - 1; i++)
			k[i] = (char)((key[11 + i] >= 'A' && key[11 + i] <= 'Z') ? key[11 + i] + 32
			                                                         : key[11 + i]);
		k[i] = '\0';
		fk_writer_set_meta(u->w, k, value, NULL);
	}
	return MHD_YES;
}

static void upload_open_part(upload *u, const char *filename)
{
	const char *target = u->path_q && *u->path_q ? u->path_q : filename;
	fk_err err = {0};
	upload_close_part(u);
	if (!target || !*target) {
		upload_fail(u, 400, "%s", "missing path: give the path query or a part filename");
		return;
	}
	/* a path given twice is refused before the file is opened (opening truncates it) */
	char *resolved = NULL;
	int rc =
	    fk_file_resolve(u->r->srv->rt, fk_sandbox_id(u->sb), target, u->user, &resolved, &err);
	size_t i;
	json_t *v;
	json_array_foreach(u->results, i, v)
	{
		if (rc == 0 && !strcmp(json_string_value(json_object_get(v, "path")), resolved)) {
			upload_fail(u, 400, "path '%s' was given more than once", resolved);
			free(resolved);
			return;
		}
	}
	free(resolved);
	if (rc == 0)
		rc = fk_file_write_open(u->r->srv->rt, fk_sandbox_id(u->sb), target, u->user, &u->w,
		                        &u->cur_abs, &err);
	if (rc < 0) {
		if (rc == FK_ENOUSER)
			upload_fail(u, 401, "invalid username: '%s'", u->user ? u->user : "");
		else
			upload_fail(u, file_error_status(rc), "%s", err.message);
		u->w = NULL;
		return;
	}
	const char *abs = u->cur_abs ? u->cur_abs : target;
	const char *base = strrchr(abs, '/');
	json_array_append_new(u->results, json_pack("{s:s,s:s,s:s}", "path", abs, "name",
	                                            base ? base + 1 : abs, "type", "file"));
	u->cur_name = filename ? strdup(filename) : NULL;
	u->cur_written = 0;
	MHD_get_connection_values(u->r->conn, MHD_HEADER_KIND, meta_header, u);
}

static void upload_write(upload *u, const char *data, size_t len)
{
	fk_err err = {0};
	if (u->status || !u->w || !len)
		return;
	if (fk_writer_write(u->w, data, len, &err) < 0)
		upload_fail(u, file_error_status(err.code), "%s", err.message);
	u->cur_written += len;
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
	upload *u = cls;
	if (u->status || !key || strcmp(key, "file") != 0)
		return MHD_YES;
	int same = u->w && u->cur_written == 0 &&
	           ((!filename && !u->cur_name) ||
	            (filename && u->cur_name && !strcmp(filename, u->cur_name)));
	if (off == 0 && !same)
		upload_open_part(u, filename);
	upload_write(u, data, size);
	return MHD_YES;
}

/* POST /files, first call: checks, then stream the body to disk as it arrives. */
static void upload_begin(fk_req *r)
{
	upload *u = calloc(1, sizeof(*u));
	if (!u)
		return;
	u->r = r;
	u->results = json_array();
	r->envd_state = u;
	r->envd_state_free = upload_free;
	const char *id = fk_header(r, "E2b-Sandbox-Id");
	u->sb = id ? fk_control_acquire(r->srv->control, id) : NULL;
	if (!u->sb || !fk_sandbox_running(r->srv->control, u->sb)) {
		u->status = 502;
		return;
	}
	u->path_q = fk_query(r, "path");
	u->user = fk_query(r, "username");
	if (u->user && !*u->user) {
		free(u->user);
		u->user = NULL;
	}
	if (!files_auth(r, u->sb, "write", u->path_q, u->user ? u->user : "")) {
		u->status = 401;
		snprintf(u->msg, sizeof(u->msg),
		         "unauthorized access, please provide a valid access "
		         "token or method signing if supported");
		return;
	}
	if (r->fault.kind == FK_FAULT_RESPOND) {
		u->status = 1; /* answered by the server (fault); write nothing */
		return;
	}
	const char *ct = fk_header(r, "Content-Type");
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		u->pp = MHD_create_post_processor(r->conn, 64 * 1024, post_iter, u);
		if (!u->pp)
			upload_fail(u, 400, "%s", "malformed multipart body");
	} else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
		if (!u->path_q || !*u->path_q)
			upload_fail(u, 400, "%s", "path is required for application/octet-stream");
		else
			upload_open_part(u, NULL);
	} else {
		upload_fail(u, 400, "unsupported Content-Type: %.100s", ct ? ct : "(none)");
	}
}

static enum MHD_Result upload_finish(fk_req *r)
{
	upload *u = r->envd_state;
	if (!u)
		return fk_reply_error(r, 500, "out of memory");
	if (u->status == 502)
		return reply_not_found_502(r, fk_header(r, "E2b-Sandbox-Id"));
	if (!u->status && u->pp && json_array_size(u->results) == 0 && u->path_q && *u->path_q)
		upload_open_part(u, NULL); /* a multipart body whose file part was empty */
	upload_close_part(u);
	if (!u->status && json_array_size(u->results) == 0)
		upload_fail(u, 400, "%s", "no file part in the request");
	if (u->status)
		return fk_reply_error(r, u->status, "%s", u->msg);
	return fk_reply_json(r, 200, json_incref(u->results));
}

void fk_envd_begin(fk_req *r)
{
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/files"))
		upload_begin(r);
}

void fk_envd_feed(fk_req *r, const char *data, size_t len)
{
	upload *u = r->envd_state;
	if (!u || u->status)
		return;
	if (u->pp) {
		if (MHD_post_process(u->pp, data, len) != MHD_YES)
			upload_fail(u, 400, "%s", "malformed multipart body");
	} else {
		upload_write(u, data, len);
	}
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static enum MHD_Result health(fk_req *r)
{
	const char *id = fk_header(r, "E2b-Sandbox-Id");
	if (id) {
		fk_sandbox *sb = fk_control_acquire(r->srv->control, id);
		int ok = sb && fk_sandbox_running(r->srv->control, sb);
		fk_sandbox_release(r->srv->control, sb);
		if (!ok)
			return reply_not_found_502(r, id);
	}
	return fk_reply(r, 204, NULL, NULL, 0);
}

/* Unknown Basic user: Connect unauthenticated (§2). 0 when fine. */
static int user_exists(fk_req *r, fk_sandbox *sb, const char *user)
{
	if (!user)
		return 1;
	fk_entry e = {0};
	int rc = fk_file_stat(r->srv->rt, fk_sandbox_id(sb), "/", user, &e, NULL);
	fk_entry_clear(&e);
	return rc != FK_ENOUSER;
}

static enum MHD_Result rpc(fk_req *r, fk_sandbox *sb, const char *user)
{
	const char *p = r->path;
	int is_stream =
	    !strcmp(p, "/process.Process/Start") || !strcmp(p, "/process.Process/Connect");
	if (!strcmp(p, "/filesystem.Filesystem/WatchDir")) { /* a stream the fake does not serve */
		fk_sandbox_release(r->srv->control, sb);
		return reply_stream_error(r, "unimplemented",
		                          "filesystem.Filesystem/WatchDir is not implemented");
	}
	if (is_stream) {
		if (!user_exists(r, sb, user)) {
			fk_sandbox_release(r->srv->control, sb);
			char msg[300];
			snprintf(msg, sizeof(msg), "invalid username: '%s'", user);
			return reply_stream_error(r, "unauthenticated", msg);
		}
		return !strcmp(p, "/process.Process/Start") ? process_start(r, sb, user)
		                                            : process_connect(r, sb);
	}
	enum MHD_Result ret;
	json_t *req = request_message(r, 0);
	if (!json_is_object(req)) {
		ret = fk_reply_connect_error(r, "invalid_argument",
		                             "request body is not a JSON "
		                             "object");
	} else if (!user_exists(r, sb, user)) {
		ret = fk_reply_connect_error(r, "unauthenticated", "invalid username: '%s'", user);
	} else if (!strcmp(p, "/process.Process/SendSignal")) {
		ret = process_signal(r, sb, req);
	} else if (!strcmp(p, "/process.Process/List")) {
		ret = process_list(r, sb);
	} else if (!strcmp(p, "/process.Process/SendInput")) {
		ret = process_input(r, sb, req, 0);
	} else if (!strcmp(p, "/process.Process/CloseStdin")) {
		ret = process_input(r, sb, req, 1);
	} else if (!strncmp(p, "/filesystem.Filesystem/", 23)) {
		ret = filesystem_call(r, sb, p + 23, req, user);
	} else if (!strncmp(p, "/process.Process/", 17)) {
		ret = fk_reply_connect_error(r, "unimplemented", "%s is not implemented", p + 1);
	} else {
		ret = fk_reply_json(r, 404,
		                    json_pack("{s:s,s:s}", "code", "unimplemented", "message",
		                              "no such procedure"));
	}
	json_decref(req);
	fk_sandbox_release(r->srv->control, sb);
	return ret;
}

enum MHD_Result fk_envd_handle(fk_req *r)
{
	int is_post = !strcmp(r->method, "POST"), is_get = !strcmp(r->method, "GET");
	if (!strcmp(r->path, "/health"))
		return is_get ? health(r) : fk_reply_error(r, 405, "method not allowed");
	if (!strcmp(r->path, "/files") && is_post)
		return upload_finish(r);
	const char *id = fk_header(r, "E2b-Sandbox-Id");
	fk_sandbox *sb = id ? fk_control_acquire(r->srv->control, id) : NULL;
	if (!sb || !fk_sandbox_running(r->srv->control, sb)) {
		fk_sandbox_release(r->srv->control, sb);
		return reply_not_found_502(r, id);
	}
	enum MHD_Result ret;
	if (!strcmp(r->path, "/files")) {
		ret = is_get ? files_get(r, sb) : fk_reply_error(r, 405, "method not allowed");
		fk_sandbox_release(r->srv->control, sb);
		return ret;
	}
	if (!token_ok(sb, fk_header(r, "X-Access-Token"))) {
		fk_sandbox_release(r->srv->control, sb);
		return reply_unauthorized(r);
	}
	if (!is_post) {
		fk_sandbox_release(r->srv->control, sb);
		return fk_reply_error(r, 405, "method not allowed");
	}
	int bad = 0;
	char *user = basic_user(r, &bad);
	if (bad) {
		fk_sandbox_release(r->srv->control, sb);
		return fk_reply_connect_error(r, "unauthenticated", "invalid Authorization header");
	}
	ret = rpc(r, sb, user); /* takes over sb */
	free(user);
	return ret;
}
