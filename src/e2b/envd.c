/*
 * e2b/envd.c: envd over Connect and HTTP (docs/protocol.md "Reaching envd" to
 * "Files"; docs/internals/wire.md "Process start").
 *
 * The Start stream is decoded as it arrives: curl chunks → envelope state
 * machine → one JSON message at a time → start/data/end events. Output is
 * base64-decoded into one reused scratch buffer and handed to the caller, so
 * memory stays bounded by the largest frame whatever the command prints.
 */
#include "e2b/envd.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <sandbox/e2b.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/api.h"
#include "e2b/envelope.h"
#include "util/alloc.h"
#include "util/base64.h"
#include "util/err.h"

#define ENVD_MAX_HEADERS 10
#define START_TEXT_ENVS  64 /* env vars the Start request writes straight out, at most */

typedef struct envd_headers {
	char *line[ENVD_MAX_HEADERS];
	size_t n;
} envd_headers;

struct sbx_envd_stream {
	sbx_http_call *call;
	const sbx_envd_target *t;
	envd_headers hdrs;
	sbx_buf url;
	sbx_buf body;
	sbx_envelope env;
	sbx_buf scratch;
	sbx_envd_handler handler;
	const char *what;     /* "E2B process stream" or "E2B process connect stream" */
	const char *rpc_what; /* for HTTP errors: "process start" or "process connect" */
	uint64_t timeout_ms;  /* Connect-Timeout-Ms, 0 = none */
	const char *service;  /* "process.Process" or "filesystem.Filesystem" */
	const char *end_what; /* an end-stream error: "<end_what> failed: <code>: <message>" */
	bool no_shortcut;     /* every message through jansson (a test's) */
	bool ended;           /* the end-stream message arrived */
	int end_code;         /* its error, 0 for none */
	sbx_error end_err;
};

void sbx__envd_target_dispose(sbx_envd_target *t)
{
	sbx__free(t->url);
	sbx__free(t->sandbox_id);
	if (t->token) {
		memset(t->token, 0, strlen(t->token));
		sbx__free(t->token);
	}
	sbx__free(t->domain);
	if (t->traffic_token) {
		memset(t->traffic_token, 0, strlen(t->traffic_token));
		sbx__free(t->traffic_token);
	}
	memset(t, 0, sizeof(*t));
}

static void headers_dispose(envd_headers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		memset(h->line[i], 0, strlen(h->line[i])); /* X-Access-Token is secret */
		sbx__free(h->line[i]);
	}
	h->n = 0;
}

static int header_add(envd_headers *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int header_add(envd_headers *h, const char *fmt, ...)
{
	sbx_buf b = SBX_BUF_INIT(64 * 1024);
	va_list ap;
	int error;

	if (h->n >= ENVD_MAX_HEADERS)
		return SBX_EINTERNAL;
	va_start(ap, fmt);
	error = sbx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (error == 0)
		error = sbx_buf_detach(&b, (unsigned char **)&h->line[h->n], NULL);
	if (error < 0) {
		sbx_buf_dispose(&b);
		return error;
	}
	h->n++;
	return 0;
}

/* Routing by sandbox id plus the access token (docs/protocol.md "Reaching envd"). */
static int headers_envd(envd_headers *h, const sbx_envd_target *t)
{
	int error;
	if ((error = header_add(h, "E2b-Sandbox-Id: %s", t->sandbox_id)) < 0 ||
	    (error = header_add(h, "E2b-Sandbox-Port: %d", SBX_ENVD_PORT)) < 0 ||
	    (error = header_add(h, "X-Access-Token: %s", t->token)) < 0)
		return error;
	return 0;
}

/*
 * One data event's base64 text to the handler: its length only when wants_output says no room
 * is left, else decoded onto the handler's sink or into the scratch buffer. With `refused`
 * (the shortcut below) a text that is not base64 sets it and reaches no callback: jansson
 * decides what such a message means.
 */
static int output_text(sbx_envd_stream *s, int which, const char *b64, size_t len, bool *refused,
                       sbx_error *err)
{
	const sbx_envd_handler *h = &s->handler;
	sbx_buf *sink;
	size_t n;
	int error;

	if (len == 0)
		return 0;
	n = sbx__base64_len(b64, len);
	if (h->wants_output && !h->wants_output(h->payload)) {
		if (refused && !sbx__base64_valid(b64, len)) {
			*refused = true;
			return 0;
		}
		if (h->on_output)
			h->on_output(which, NULL, n, h->payload);
		return 0;
	}
	if (h->sink && h->stored && (sink = h->sink(which, n, h->payload))) {
		/* straight into the bytes the handler keeps: no copy from the scratch buffer */
		if ((error = sbx__base64_decode(sink, b64, len)) == 0) {
			h->stored(which, n, h->payload);
			return 0;
		}
		if (error == SBX_EPROTOCOL)
			goto refuse;
		/* the sink cannot grow: on_output meets the same and says so its own way */
	}
	sbx_buf_clear(&s->scratch);
	if ((error = sbx__base64_decode(&s->scratch, b64, len)) == SBX_EPROTOCOL)
		goto refuse;
	if (error < 0)
		return sbx__error_set(err, error, "E2B process stream: cannot decode a data event");
	if (h->on_output)
		h->on_output(which, s->scratch.ptr, s->scratch.len, h->payload);
	return 0;
refuse:
	if (refused) {
		*refused = true;
		return 0;
	}
	return sbx__error_set(err, SBX_EPROTOCOL,
	                      "E2B process stream: invalid base64 in a data event");
}

static int output_event(sbx_envd_stream *s, int which, json_t *v, sbx_error *err)
{
	if (!json_is_string(v))
		return 0;
	return output_text(s, which, json_string_value(v), json_string_length(v), NULL, err);
}

/*
 * Shortcut for the frame that makes up nearly all of a big output: exactly
 * {"event":{"data":{"stdout":"<base64>"}}} (or stderr, or pty), as envd's protobuf-JSON
 * encoder writes it, decoded straight from the envelope's bytes with no jansson tree. The
 * text between the quotes is taken only when it is all base64 (no quote, backslash, control
 * or non-ASCII byte can be among it), so jansson would read the same one string from the
 * same message; anything else (an escape, other keys or order, whitespace, bad base64) goes
 * through jansson, which decides, so the outcome is the same either way (unit.envd_stream
 * compares them). Returns 1 when handled.
 */
static int data_fast_path(sbx_envd_stream *s, const char *p, size_t n, sbx_error *err)
{
	static const char out_prefix[] = "{\"event\":{\"data\":{\"stdout\":\"";
	static const char err_prefix[] = "{\"event\":{\"data\":{\"stderr\":\"";
	static const char pty_prefix[] = "{\"event\":{\"data\":{\"pty\":\"";
	static const char suffix[] = "\"}}}";
	size_t pl = sizeof(out_prefix) - 1;
	const size_t sl = sizeof(suffix) - 1;
	bool refused = false;
	int which, error;

	if (s->no_shortcut || n < sizeof(pty_prefix) - 1 + sl ||
	    memcmp(p + n - sl, suffix, sl) != 0)
		return 0;
	if (n >= pl + sl && memcmp(p, out_prefix, pl) == 0)
		which = 1;
	else if (n >= pl + sl && memcmp(p, err_prefix, pl) == 0)
		which = 2;
	else if (memcmp(p, pty_prefix, sizeof(pty_prefix) - 1) == 0) {
		which = 3;
		pl = sizeof(pty_prefix) - 1;
	} else
		return 0;
	if ((error = output_text(s, which, p + pl, n - pl - sl, &refused, err)) < 0)
		return error;
	return refused ? 0 : 1;
}

/*
 * ProcessEvent.start.pid is a uint32 (protobuf-JSON: a number, or a decimal
 * string). Anything else, 0 included, is "no pid": a backstop SendSignal to a
 * made-up pid (2^40 would wrap to 0) must never be sent.
 */
static bool json_int_in(json_t *v, json_int_t lo, json_int_t hi, json_int_t *out)
{
	const char *p;
	char *end;
	long long n;

	if (json_is_integer(v)) {
		n = json_integer_value(v);
	} else if (json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) < 24) {
		p = json_string_value(v);
		if (!((p[0] >= '0' && p[0] <= '9') || p[0] == '-'))
			return false;
		errno = 0;
		n = strtoll(p, &end, 10);
		if (errno != 0 || *end != '\0')
			return false;
	} else {
		return false;
	}
	if (n < lo || n > hi)
		return false;
	*out = n;
	return true;
}

static uint32_t start_pid(json_t *v)
{
	json_int_t n = 0;
	return json_int_in(v, 1, UINT32_MAX, &n) ? (uint32_t)n : 0;
}

/* ProcessEvent.end.exitCode: an int32, absent meaning 0 (protobuf-JSON default). */
static bool end_exit_code(json_t *v, int *out)
{
	json_int_t n = 0;

	if (!v || json_is_null(v)) {
		*out = 0;
		return true;
	}
	if (!json_int_in(v, INT32_MIN, INT32_MAX, &n))
		return false;
	*out = (int)n;
	return true;
}

static int event_message(sbx_envd_stream *s, json_t *root, sbx_error *err)
{
	json_t *ev = json_object_get(root, "event"), *x;
	int error;

	if (!json_is_object(ev))
		return 0;
	if ((x = json_object_get(ev, "start"))) {
		if (s->handler.on_start)
			s->handler.on_start(start_pid(json_object_get(x, "pid")),
			                    s->handler.payload);
	} else if ((x = json_object_get(ev, "data"))) {
		if ((error = output_event(s, 1, json_object_get(x, "stdout"), err)) < 0 ||
		    (error = output_event(s, 2, json_object_get(x, "stderr"), err)) < 0 ||
		    (error = output_event(s, 3, json_object_get(x, "pty"), err)) < 0)
			return error;
	} else if ((x = json_object_get(ev, "end"))) {
		json_t *st = json_object_get(x, "status");
		int code = 0;
		/* an exitCode that is no int32 leaves the exit status unknown, never 0 */
		bool ok = end_exit_code(json_object_get(x, "exitCode"), &code);
		if (s->handler.on_end)
			s->handler.on_end(ok && json_is_true(json_object_get(x, "exited")), code,
			                  ok && json_is_string(st) ? json_string_value(st) : NULL,
			                  s->handler.payload);
	}
	return 0;
}

/* The end-stream message: {} or {"error":{"code","message"},"metadata":{...}}. */
static void end_message(sbx_envd_stream *s, json_t *root)
{
	json_t *e = root ? json_object_get(root, "error") : NULL, *c, *m;
	char msg[4 * SBX_E2B_ERROR_MESSAGE_MAX + 16], code[64];

	s->ended = true;
	if (!e || json_is_null(e) || json_is_false(e))
		return;
	c = json_object_get(e, "code");
	m = json_object_get(e, "message");
	sbx__e2b_clean_text(
	    code, sizeof(code), json_is_string(c) ? json_string_value(c) : "unknown",
	    json_is_string(c) ? json_string_length(c) : 7, s->t->token, s->t->api_key);
	sbx__e2b_clean_text(msg, sizeof(msg), json_is_string(m) ? json_string_value(m) : "",
	                    json_is_string(m) ? json_string_length(m) : 0, s->t->token,
	                    s->t->api_key);
	s->end_code = sbx__error_set_http(&s->end_err, SBX_EHTTP, 200, code, "%s failed: %s: %s",
	                                  s->end_what, code, msg);
}

static int handle_message(sbx_envd_stream *s, sbx_error *err)
{
	const sbx_buf *p = &s->env.payload;
	json_error_t jerr;
	json_t *root = NULL;
	int error = 0;

	if (!(s->env.flags & SBX_ENVELOPE_FLAG_END_STREAM) && !s->handler.on_message &&
	    (error = data_fast_path(s, (const char *)p->ptr, p->len, err)) != 0)
		return error < 0 ? error : 0;
	if (p->len > 0 && !(root = json_loadb((const char *)p->ptr, p->len, 0, &jerr)))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B process stream: invalid JSON in a message (at byte %d)",
		                      jerr.position);
	if (s->env.flags & SBX_ENVELOPE_FLAG_END_STREAM)
		end_message(s, root);
	else if (root && s->handler.on_message)
		error = s->handler.on_message(root, s->handler.payload, err);
	else if (root)
		error = event_message(s, root, err);
	else
		error = sbx__error_set(err, SBX_EPROTOCOL, "E2B process stream: empty message");
	json_decref(root);
	return error;
}

static int on_stream_data(const unsigned char *p, size_t n, void *payload, sbx_error *err)
{
	sbx_envd_stream *s = payload;
	size_t used;
	int error;

	while (n > 0 && !s->ended) {
		if ((error = sbx__envelope_feed(&s->env, p, n, &used, err)) < 0)
			return error;
		p += used;
		n -= used;
		if (s->env.state == SBX_ENV_READY) {
			if ((error = handle_message(s, err)) < 0)
				return error;
			sbx__envelope_next(&s->env);
		}
	}
	if (s->ended)
		return 1; /* after end-stream nothing more is read */
	/* the whole chunk is taken first: curl cannot hand back part of one */
	return s->handler.yield && s->handler.yield(s->handler.payload) ? 2 : 0;
}

int sbx__envd_stream_feed(sbx_envd_stream *s, const unsigned char *p, size_t n, sbx_error *err)
{
	return on_stream_data(p, n, s, err);
}

/* The Start request as a jansson tree, dumped: the envs object keeps a key where it first came
 * with the value it last had. */
static int start_tree(sbx_buf *text, const sbx_envd_process *proc, bool stdin_open)
{
	json_t *root = json_object(), *pr = json_object(), *args = json_array(), *envs = NULL;
	int error = SBX_ENOMEM;

	if (!root || !pr || !args)
		goto done;
	for (size_t i = 0; i < proc->nargs; i++)
		if (json_array_append_new(args, json_string(proc->args[i])) < 0)
			goto done;
	if (json_object_set_new(pr, "cmd", json_string(proc->cmd)) < 0 ||
	    json_object_set(pr, "args", args) < 0)
		goto done;
	if (proc->env) {
		if (!(envs = json_object()) || json_object_set_new(pr, "envs", envs) < 0)
			goto done;
		for (size_t i = 0; i < proc->nenv; i++)
			if (json_object_set_new(envs, proc->env[i].key,
			                        json_string(proc->env[i].value)) < 0)
				goto done;
	}
	if (proc->cwd && json_object_set_new(pr, "cwd", json_string(proc->cwd)) < 0)
		goto done;
	if (json_object_set(root, "process", pr) < 0)
		goto done;
	if (proc->pty_cols && proc->pty_rows) {
		/* the terminal is stdin, stdout and stderr: no "stdin", as E2B's SDK sends it */
		if (json_object_set_new(root, "pty",
		                        json_pack("{s:{s:i,s:i}}", "size", "cols",
		                                  (int)proc->pty_cols, "rows",
		                                  (int)proc->pty_rows)) < 0)
			goto done;
	} else if (json_object_set_new(root, "stdin", json_boolean(stdin_open)) < 0) {
		goto done;
	}
	error = sbx__json_dump(text, root);
done:
	json_decref(args);
	json_decref(pr);
	json_decref(root);
	return error;
}

/* A string of the request, escaped as jansson's dump escapes it. */
static int put_str(sbx_buf *b, const char *s)
{
	return s ? sbx__json_dump_string(b, s, strlen(s)) : SBX_ENOMEM;
}

/* Env var i's key as the tree keeps it: its first place, with the value of its last one. NULL
 * when an earlier variable had the key (it is written there). */
static const char *env_last_value(const sbx_envd_process *proc, size_t i)
{
	const char *key = proc->env[i].key, *value = proc->env[i].value;

	for (size_t j = 0; j < i; j++)
		if (strcmp(proc->env[j].key, key) == 0)
			return NULL;
	for (size_t j = i + 1; j < proc->nenv; j++)
		if (strcmp(proc->env[j].key, key) == 0)
			value = proc->env[j].value;
	return value;
}

/* The bytes start_tree makes, written straight out (no tree to build, hash and free). */
static int start_text(sbx_buf *t, const sbx_envd_process *proc, bool stdin_open)
{
	const char *value;
	char pty[96];
	bool first = true;
	int e;

	if ((e = sbx_buf_puts(t, "{\"process\":{\"cmd\":")) < 0 ||
	    (e = put_str(t, proc->cmd)) < 0 || (e = sbx_buf_puts(t, ",\"args\":[")) < 0)
		return e;
	for (size_t i = 0; i < proc->nargs; i++)
		if ((i > 0 && (e = sbx_buf_puts(t, ",")) < 0) ||
		    (e = put_str(t, proc->args[i])) < 0)
			return e;
	if ((e = sbx_buf_puts(t, "]")) < 0 ||
	    (proc->env && (e = sbx_buf_puts(t, ",\"envs\":{")) < 0))
		return e;
	for (size_t i = 0; proc->env && i < proc->nenv; i++) {
		if (!(value = env_last_value(proc, i)))
			continue;
		if ((!first && (e = sbx_buf_puts(t, ",")) < 0) ||
		    (e = put_str(t, proc->env[i].key)) < 0 || (e = sbx_buf_puts(t, ":")) < 0 ||
		    (e = put_str(t, value)) < 0)
			return e;
		first = false;
	}
	if ((proc->env && (e = sbx_buf_puts(t, "}")) < 0) ||
	    (proc->cwd &&
	     ((e = sbx_buf_puts(t, ",\"cwd\":")) < 0 || (e = put_str(t, proc->cwd)) < 0)))
		return e;
	if (proc->pty_cols && proc->pty_rows) {
		snprintf(pty, sizeof(pty), "},\"pty\":{\"size\":{\"cols\":%d,\"rows\":%d}}}",
		         (int)proc->pty_cols, (int)proc->pty_rows);
		return sbx_buf_puts(t, pty);
	}
	return sbx_buf_puts(t, stdin_open ? "},\"stdin\":true}" : "},\"stdin\":false}");
}

int sbx__envd_start_json(sbx_buf *out, const sbx_envd_process *proc, bool stdin_open, bool via_tree)
{
	size_t len = out->len;
	int error =
	    via_tree ? start_tree(out, proc, stdin_open) : start_text(out, proc, stdin_open);

	if (error < 0 && out->ptr) { /* unchanged on failure */
		out->len = len;
		out->ptr[len] = '\0';
	}
	return error;
}

/*
 * The Start request's envelope. Its JSON is written straight out (a third of the instructions
 * of building, dumping and freeing a jansson tree: docs/internals/exec-cost.md "The client's
 * CPU per exec"); past START_TEXT_ENVS variables the envs' duplicate-key rule (quadratic there)
 * goes through the tree. unit.envd_start_json checks both make the same bytes.
 */
static int start_request(sbx_envd_stream *s, const sbx_envd_process *proc, bool stdin_open)
{
	sbx_buf text = SBX_BUF_INIT(SBX_MAX_ENVELOPE);
	int error = sbx__envd_start_json(&text, proc, stdin_open, proc->nenv > START_TEXT_ENVS);

	if (error == 0)
		error = sbx__envelope_encode(&s->body, 0, text.ptr, text.len);
	sbx_buf_dispose(&text);
	return error;
}

/* A stream object with its buffers; nothing sent yet. */
static sbx_envd_stream *stream_new(const sbx_envd_target *t, const sbx_envd_handler *h,
                                   const char *what, const char *rpc_what)
{
	sbx_envd_stream *s;

	if (!(s = sbx__calloc(1, sizeof(*s))))
		return NULL;
	s->t = t;
	s->handler = *h;
	s->what = what;
	s->rpc_what = rpc_what;
	s->service = "process.Process";
	s->end_what = "E2B process stream";
	sbx_buf_init(&s->url, 64 * 1024);
	sbx_buf_init(&s->body, SBX_MAX_ENVELOPE);
	sbx_buf_init(&s->env.payload, SBX_MAX_ENVELOPE);
	sbx_buf_init(&s->scratch, SBX_MAX_ENVELOPE);
	return s;
}

/* Headers and call of a server stream whose request envelope is already in s->body. */
static int stream_call(sbx_envd_stream *s, sbx_http *http, const char *method, const char *user,
                       sbx_error *err)
{
	sbx_http_req req = {0};
	sbx_buf basic = SBX_BUF_INIT(4096);
	unsigned char b64[4 * 256 / 3 + 8];
	int error;

	if (user && strlen(user) > 128)
		return sbx__error_set(err, SBX_EINVALID, "envd user name too long");
	if ((error = sbx_buf_printf(&s->url, "%s/%s/%s", s->t->url, s->service, method)) < 0 ||
	    (error = headers_envd(&s->hdrs, s->t)) < 0 ||
	    (error = header_add(&s->hdrs, "Content-Type: application/connect+json")) < 0 ||
	    (error = header_add(&s->hdrs, "Connect-Protocol-Version: 1")) < 0 ||
	    (error = header_add(&s->hdrs, "Keepalive-Ping-Interval: %d",
	                        SBX_ENVD_KEEPALIVE_SECONDS)) < 0 ||
	    (s->timeout_ms && (error = header_add(&s->hdrs, "Connect-Timeout-Ms: %llu",
	                                          (unsigned long long)s->timeout_ms)) < 0))
		goto oom;
	if (user) {
		/* Authorization: Basic base64("<user>:") */
		if ((error = sbx_buf_printf(&basic, "%s:", user)) < 0)
			goto oom;
		EVP_EncodeBlock(b64, basic.ptr, (int)basic.len);
		if ((error = header_add(&s->hdrs, "Authorization: Basic %s", (const char *)b64)) <
		    0)
			goto oom;
	}
	sbx_buf_dispose(&basic);
	req.what = s->what;
	req.unreachable = SBX_E2B_ENVD_UNAVAILABLE;
	req.method = "POST";
	req.url = (const char *)s->url.ptr;
	req.headers = (const char *const *)s->hdrs.line;
	req.nheaders = s->hdrs.n;
	req.body = s->body.ptr;
	req.body_len = s->body.len;
	req.on_data = on_stream_data;
	req.payload = s;
	req.wake_at_end = s->handler.wake_at_end;
	return sbx__http_call_start(&s->call, http, &req, err);
oom:
	sbx_buf_dispose(&basic);
	return sbx__error_set(err, error == SBX_ETOOLARGE ? SBX_ETOOLARGE : SBX_ENOMEM,
	                      "cannot build the %s request", s->what);
}

int sbx__envd_start(sbx_envd_stream **out, sbx_http *http, const sbx_envd_target *t,
                    const char *user, const sbx_envd_process *proc, bool stdin_open,
                    const sbx_envd_handler *h, sbx_error *err)
{
	sbx_envd_stream *s;
	int error;

	*out = NULL;
	if (!(s = stream_new(t, h, "E2B process stream", "process start")))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	s->timeout_ms = proc->timeout_ms;
	if ((error = start_request(s, proc, stdin_open)) < 0) {
		error = sbx__error_set(err, error == SBX_ETOOLARGE ? SBX_ETOOLARGE : SBX_ENOMEM,
		                       "cannot build the process start request");
		goto fail;
	}
	if ((error = stream_call(s, http, "Start", user, err)) < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	sbx__envd_stream_free(s);
	return error;
}

int sbx__envd_connect(sbx_envd_stream **out, sbx_http *http, const sbx_envd_target *t, uint32_t pid,
                      const sbx_envd_handler *h, sbx_error *err)
{
	sbx_envd_stream *s;
	char text[64];
	int n, error;

	*out = NULL;
	if (!(s = stream_new(t, h, "E2B process connect stream", "process connect")))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	n = snprintf(text, sizeof(text), "{\"process\":{\"pid\":%u}}", (unsigned)pid);
	if ((error = sbx__envelope_encode(&s->body, 0, (const unsigned char *)text, (size_t)n)) <
	    0) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto fail;
	}
	if ((error = stream_call(s, http, "Connect", NULL, err)) < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	sbx__envd_stream_free(s);
	return error;
}

int sbx__envd_watch_dir(sbx_envd_stream **out, sbx_http *http, const sbx_envd_target *t,
                        const char *user, const char *path, bool recursive,
                        const sbx_envd_handler *h, sbx_error *err)
{
	sbx_buf text = SBX_BUF_INIT(SBX_MAX_ENVELOPE);
	sbx_envd_stream *s;
	json_t *req;
	int error;

	*out = NULL;
	if (!(s = stream_new(t, h, "E2B watch stream", "filesystem watch")))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	s->service = "filesystem.Filesystem";
	s->end_what = "E2B watch stream";
	req = json_pack("{s:s,s:b}", "path", path, "recursive", recursive);
	error = req ? sbx__json_dump(&text, req) : SBX_ENOMEM;
	if (error == 0)
		error = sbx__envelope_encode(&s->body, 0, text.ptr, text.len);
	json_decref(req);
	sbx_buf_dispose(&text);
	if (error < 0) {
		error = sbx__error_set(err, error == SBX_ETOOLARGE ? SBX_ETOOLARGE : SBX_ENOMEM,
		                       "cannot build the watch request");
		goto fail;
	}
	if ((error = stream_call(s, http, "WatchDir", user, err)) < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	sbx__envd_stream_free(s);
	return error;
}

int sbx__envd_stream_wait(sbx_envd_stream *s, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	const sbx_buf *b;
	long status;
	int error;

	if (!s->ended) {
		error = sbx__http_call_wait(s->call, deadline_ms, sig, err);
		if (error < 0 || error == SBX_HTTP_YIELD)
			return error;
	}
	if (s->ended) {
		if (s->end_code < 0 && err && err->code == 0)
			*err = s->end_err;
		return s->end_code;
	}
	status = sbx__http_call_status(s->call);
	if (status != 200) {
		b = sbx__http_call_body(s->call);
		return sbx__e2b_http_error(err, s->rpc_what, status, b->ptr, b->len, s->t->token,
		                           s->t->api_key, NULL);
	}
	return sbx__error_set(err, SBX_EPROTOCOL, "%s ended without an end-of-stream message",
	                      s->what);
}

void sbx__envd_stream_no_shortcut(sbx_envd_stream *s)
{
	s->no_shortcut = true;
}

bool sbx__envd_stream_ended(const sbx_envd_stream *s)
{
	return s->ended;
}

void sbx__envd_stream_free(sbx_envd_stream *s)
{
	if (!s)
		return;
	sbx__http_call_free(s->call);
	headers_dispose(&s->hdrs);
	sbx_buf_dispose(&s->url);
	sbx_buf_dispose(&s->body);
	sbx__envelope_dispose(&s->env);
	sbx_buf_dispose(&s->scratch);
	sbx__free(s);
}

int sbx__envd_unary(sbx_http *http, const sbx_envd_target *t, sbx_http_req *req, const char *what,
                    uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	sbx_http_call *call = NULL;
	const sbx_buf *b;
	long status;
	int error;

	if ((error = sbx__http_perform(&call, http, req, deadline_ms, sig, err)) < 0)
		return error;
	status = sbx__http_call_status(call);
	if (status < 200 || status >= 300) {
		b = sbx__http_call_body(call);
		error = sbx__e2b_http_error(err, what, status, b->ptr, b->len, t->token, t->api_key,
		                            NULL);
	}
	sbx__http_call_free(call);
	return error;
}

int sbx__envd_rpc(json_t **reply, sbx_http *http, const sbx_envd_target *t, const char *method,
                  const char *body, size_t len, sbx_envd_stream *host, uint64_t deadline_ms,
                  sbx_signal *sig, sbx_error *err)
{
	envd_headers h = {0};
	sbx_buf url = SBX_BUF_INIT(64 * 1024), what = SBX_BUF_INIT(128);
	sbx_http_req req = {0};
	sbx_http_call *call = NULL;
	const sbx_buf *b;
	json_error_t jerr;
	long status;
	int error;

	if (reply)
		*reply = NULL;
	if ((error = sbx_buf_printf(&url, "%s/process.Process/%s", t->url, method)) < 0 ||
	    (error = sbx_buf_printf(&what, "E2B process %s", method)) < 0 ||
	    (error = headers_envd(&h, t)) < 0 ||
	    (error = header_add(&h, "Content-Type: application/json")) < 0 ||
	    (error = header_add(&h, "Connect-Protocol-Version: 1")) < 0) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	req.what = (const char *)what.ptr;
	req.unreachable = SBX_E2B_ENVD_UNAVAILABLE;
	req.method = "POST";
	req.url = (const char *)url.ptr;
	req.headers = (const char *const *)h.line;
	req.nheaders = h.n;
	req.body = body;
	req.body_len = len;
	if (!host) {
		if ((error = sbx__http_perform(&call, http, &req, deadline_ms, sig, err)) < 0)
			goto done;
	} else {
		/* joined to the stream: waiting here keeps the command's output flowing */
		if ((error = sbx__http_call_join(&call, host->call, &req, err)) < 0)
			goto done;
		while ((error = sbx__http_call_wait(call, deadline_ms, sig, err)) == SBX_HTTP_YIELD)
			;
		if (error == SBX_ETIMEOUT || error == SBX_EABORTED)
			goto done; /* the caller words these, as for the stream */
		if (error < 0)
			goto done;
	}
	status = sbx__http_call_status(call);
	b = sbx__http_call_body(call);
	if (status < 200 || status >= 300) {
		sbx_buf_clear(&what);
		error = sbx_buf_printf(&what, "process %s", method);
		error =
		    sbx__e2b_http_error(err, error < 0 ? "process call" : (const char *)what.ptr,
		                        status, b->ptr, b->len, t->token, t->api_key, NULL);
		goto done;
	}
	if (reply && b->len > 0 &&
	    !(*reply = json_loadb((const char *)b->ptr, b->len, JSON_DECODE_ANY, &jerr)))
		error = sbx__error_set(err, SBX_EPROTOCOL,
		                       "E2B process %s: invalid JSON in the reply (at byte %d)",
		                       method, jerr.position);
done:
	sbx__http_call_free(call);
	headers_dispose(&h);
	sbx_buf_dispose(&url);
	sbx_buf_dispose(&what);
	return error;
}

int sbx__envd_kill(sbx_http *http, const sbx_envd_target *t, uint32_t pid, uint64_t deadline_ms,
                   sbx_signal *sig, sbx_error *err)
{
	envd_headers h = {0};
	sbx_buf url = SBX_BUF_INIT(64 * 1024), body = SBX_BUF_INIT(256);
	sbx_http_req req = {0};
	sbx_error local = {0};
	int error;

	if ((error = sbx_buf_printf(&url, "%s/process.Process/SendSignal", t->url)) < 0 ||
	    (error =
	         sbx_buf_printf(&body, "{\"process\":{\"pid\":%u},\"signal\":\"SIGNAL_SIGKILL\"}",
	                        (unsigned)pid)) < 0 ||
	    (error = headers_envd(&h, t)) < 0 ||
	    (error = header_add(&h, "Content-Type: application/json")) < 0 ||
	    (error = header_add(&h, "Connect-Protocol-Version: 1")) < 0) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	req.what = "E2B process signal";
	req.unreachable = SBX_E2B_ENVD_UNAVAILABLE;
	req.method = "POST";
	req.url = (const char *)url.ptr;
	req.headers = (const char *const *)h.line;
	req.nheaders = h.n;
	req.body = body.ptr;
	req.body_len = body.len;
	error = sbx__envd_unary(http, t, &req, "process signal", deadline_ms, sig, &local);
	/* the process is already gone: what the kill wanted */
	if (error == SBX_EHTTP && local.http_status == 404 &&
	    strcmp(local.e2b_code, "not_found") == 0)
		error = 0;
	if (error < 0 && err && err->code == 0)
		*err = local;
done:
	headers_dispose(&h);
	sbx_buf_dispose(&url);
	sbx_buf_dispose(&body);
	return error;
}
