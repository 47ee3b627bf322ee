/*
 * e2b/api.c: control-plane calls and E2B error bodies (docs/protocol.md "Conventions",
 * "List"; the error's message as include/sandbox/error.h states it).
 */
#include "e2b/api.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "contract/utf8.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

/* Copy `local` into `err` unless err is NULL or already holds a failure. */
static void pass_error(sbx_error *err, const sbx_error *local)
{
	if (err && err->code == 0 && local->code != 0)
		*err = *local;
}

int sbx__e2b_api_init(sbx_e2b_api *api, sbx_http *http, const char *base_url, const char *api_key,
                      sbx_error *err)
{
	size_t n = strlen(base_url);
	sbx_buf hdr = SBX_BUF_INIT(64 * 1024);

	memset(api, 0, sizeof(*api));
	api->http = http;
	while (n > 0 && base_url[n - 1] == '/') /* base.replace(/\/+$/, "") */
		n--;
	if (!(api->base = sbx__strndup(base_url, n)) || !(api->api_key = sbx__strdup(api_key)) ||
	    sbx_buf_printf(&hdr, "X-API-KEY: %s", api_key) < 0 ||
	    sbx_buf_detach(&hdr, (unsigned char **)&api->key_header, NULL) < 0) {
		sbx_buf_dispose(&hdr);
		sbx__e2b_api_dispose(api);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	return 0;
}

static void free_secret(char *s)
{
	if (!s)
		return;
	memset(s, 0, strlen(s));
	sbx__free(s);
}

void sbx__e2b_api_dispose(sbx_e2b_api *api)
{
	sbx__free(api->base);
	free_secret(api->key_header);
	free_secret(api->api_key);
	memset(api, 0, sizeof(*api));
}

void sbx__e2b_reply_dispose(sbx_e2b_reply *r)
{
	json_decref(r->json);
	sbx__free(r->next_token);
	memset(r, 0, sizeof(*r));
}

static size_t hex_run(const char *s, size_t len)
{
	size_t n = 0;
	while (n < len && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
	                   (s[n] >= 'A' && s[n] <= 'F')))
		n++;
	return n;
}

/* The error text: printable, at most 300 bytes at a UTF-8 boundary, secrets replaced. */
void sbx__e2b_clean_text(char *out, size_t outlen, const char *msg, size_t len, const char *secret1,
                         const char *secret2)
{
	const char *secrets[2] = {secret1, secret2};
	size_t o = 0, i = 0, slen, full = len;
	bool hit;

	/* Secrets are matched against the whole text, so one straddling the cut is hidden too. */
	if (len > SBX_E2B_ERROR_MESSAGE_MAX)
		len =
		    sbx__utf8_keep_len((const unsigned char *)msg, SBX_E2B_ERROR_MESSAGE_MAX, true);
	while (i < len && o + 1 < outlen) {
		hit = false;
		for (int k = 0; k < 2 && !hit; k++) {
			slen = secrets[k] ? strlen(secrets[k]) : 0;
			if (slen >= 4 && full - i >= slen &&
			    memcmp(msg + i, secrets[k], slen) == 0) {
				int w = snprintf(out + o, outlen - o, "[redacted]");
				o += w > 0 && (size_t)w < outlen - o ? (size_t)w : 0;
				i += slen;
				hit = true;
			}
		}
		if (hit)
			continue;
		/* an unknown token (another sandbox's envdAccessToken is 64 hex digits) */
		if ((slen = hex_run(msg + i, full - i)) >= SBX_E2B_HEX_SECRET_MIN) {
			int w = snprintf(out + o, outlen - o, "[redacted]");
			o += w > 0 && (size_t)w < outlen - o ? (size_t)w : 0;
			i += slen;
			continue;
		}
		unsigned char c = (unsigned char)msg[i++];
		out[o++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	out[o] = '\0';
}

int sbx__e2b_http_error(sbx_error *err, const char *what, long status, const unsigned char *body,
                        size_t len, const char *secret1, const char *secret2, bool *not_found)
{
	char msg[4 * SBX_E2B_ERROR_MESSAGE_MAX + 16], code[32] = "";
	const char *text = (const char *)body;
	size_t tlen = len;
	json_t *j = NULL, *m, *c;
	bool nf = false;

	if (len > 0 && (j = json_loadb((const char *)body, len, JSON_DECODE_ANY, NULL)) &&
	    json_is_object(j)) {
		if ((m = json_object_get(j, "message")) && json_is_string(m)) {
			text = json_string_value(m);
			tlen = json_string_length(m);
		}
		c = json_object_get(j, "code");
		if (json_is_integer(c)) {
			snprintf(code, sizeof(code), "%lld", (long long)json_integer_value(c));
			nf = json_integer_value(c) == 404;
		} else if (json_is_real(c)) {
			snprintf(code, sizeof(code), "%g", json_real_value(c));
			nf = json_real_value(c) == 404.0;
		} else if (json_is_string(c)) {
			/* server text like the message: printable, secrets scrubbed */
			char clean[4 * SBX_E2B_ERROR_MESSAGE_MAX + 16];
			sbx__e2b_clean_text(clean, sizeof(clean), json_string_value(c),
			                    json_string_length(c), secret1, secret2);
			size_t n = strlen(clean);
			if (n >= sizeof(code))
				n = sbx__utf8_keep_len((const unsigned char *)clean,
				                       sizeof(code) - 1, true);
			memcpy(code, clean, n);
			code[n] = '\0';
		}
	}
	sbx__e2b_clean_text(msg, sizeof(msg), text ? text : "", text ? tlen : 0, secret1, secret2);
	json_decref(j);
	if (not_found)
		*not_found = status == 404 && nf;
	return sbx__error_set_http(err, SBX_EHTTP, (int)status, code, "E2B %s failed: HTTP %ld%s%s",
	                           what, status, msg[0] ? ": " : "", msg);
}

/* GET, DELETE, and the POSTs that only move a sandbox to a state: safe to send twice. */
static bool idempotent(const char *method, const char *path)
{
	size_t n = strlen(path);

	if (strcmp(method, "GET") == 0 || strcmp(method, "DELETE") == 0)
		return true;
	return strcmp(method, "POST") == 0 && ((n > 6 && strcmp(path + n - 6, "/pause") == 0) ||
	                                       (n > 8 && strcmp(path + n - 8, "/connect") == 0));
}

/* A 502/503/504 from something in front of E2B: its body is not E2B's {"code":<status>,...}. */
static bool gateway_status(long status, const sbx_buf *body)
{
	json_t *j, *c;
	bool e2b;

	if (status != 502 && status != 503 && status != 504)
		return false;
	j = body->len ? json_loadb((const char *)body->ptr, body->len, JSON_DECODE_ANY, NULL)
	              : NULL;
	c = json_object_get(j, "code");
	e2b = json_is_object(j) && json_is_integer(c) && json_integer_value(c) == status;
	json_decref(j);
	return !e2b;
}

/* Backoff before retry `n` (0-based): 250 ms doubling, capped at 2 s, jittered to 50..100 %. */
static uint64_t backoff_ms(unsigned n)
{
	uint64_t d = SBX_E2B_RETRY_BASE_MS << (n < 4 ? n : 4);
	unsigned int r = 0;

	if (d > SBX_E2B_RETRY_CAP_MS)
		d = SBX_E2B_RETRY_CAP_MS;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned int)sbx__now_ms();
	return d / 2 + r % (d / 2 + 1);
}

static void log_retry(const sbx_e2b_api *api, const char *what, const char *cause, unsigned n,
                      uint64_t delay)
{
	char attempt[16], ms[24];
	sbx_log_field f[4] = {
	    {"request", what}, {"cause", cause}, {"attempt", attempt}, {"delayMs", ms}};

	if (!api->logger.fn)
		return;
	snprintf(attempt, sizeof(attempt), "%u", n + 2);
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)delay);
	api->logger.fn(SBX_LOG_WARN, "sandbox-e2b: retrying an E2B call after a gateway fault", f,
	               4, api->logger.payload);
}

/*
 * One attempt; on a transient gateway fault of an idempotent call, `cause`
 * is filled and 1 is returned (the call is freed). Else as sbx__http_perform.
 */
static int attempt(sbx_http_call **call, const sbx_e2b_api *api, sbx_http_req *req, bool retry,
                   uint64_t deadline, sbx_signal *sig, char *cause, size_t causelen, sbx_error *err)
{
	sbx_error local = {0};
	bool reset = false;
	long status;
	int error;

	req->reset_out = &reset;
	error = sbx__http_perform(call, api->http, req, deadline, sig, &local);
	if (error == 0) {
		status = sbx__http_call_status(*call);
		if (!retry || !gateway_status(status, sbx__http_call_body(*call)))
			return 0;
		snprintf(cause, causelen, "HTTP %ld", status);
		return 1; /* the call stays: the last attempt's answer is the caller's */
	}
	if (retry && error == SBX_ENETWORK && reset) {
		snprintf(cause, causelen, "connection reset before an answer");
		sbx__error_set(err, SBX_ENETWORK, "%s",
		               local.message); /* kept if it was the last */
		return 1;
	}
	pass_error(err, &local);
	return error;
}

int sbx__e2b_api_call(sbx_e2b_reply *reply, const sbx_e2b_api *api, const char *method,
                      const char *path, const char *query, json_t *body, uint64_t timeout_ms,
                      sbx_signal *sig, sbx_error *err)
{
	sbx_buf url = SBX_BUF_INIT(64 * 1024), what = SBX_BUF_INIT(1024);
	const char *headers[2] = {api->key_header, "Content-Type: application/json"};
	sbx_http_call *call = NULL;
	sbx_http_req req = {0};
	json_error_t jerr;
	sbx_buf text = SBX_BUF_INIT(SBX_HTTP_MAX_BODY);
	const sbx_buf *rb;
	uint64_t deadline = sbx__now_ms() + (timeout_ms ? timeout_ms : SBX_E2B_API_TIMEOUT_MS), d;
	bool retry = idempotent(method, path);
	char cause[64];
	sbx_error last;
	int error;

	memset(reply, 0, sizeof(*reply));
	if (sbx_buf_printf(&url, "%s%s%s%s", api->base, path, query ? "?" : "",
	                   query ? query : "") < 0 ||
	    sbx_buf_printf(&what, "E2B %s %s", method, path) < 0) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	if (body && (error = sbx__json_dump(&text, body)) < 0) {
		error = sbx__error_set(err, error, "cannot serialise the request body");
		goto done;
	}
	req.what = (const char *)what.ptr;
	req.method = method;
	req.url = (const char *)url.ptr;
	req.headers = headers;
	req.nheaders = body ? 2 : 1;
	req.body = text.ptr;
	req.body_len = text.len;
	req.max_body = SBX_HTTP_MAX_BODY;
	req.unsent_out = &reply->unsent; /* the last attempt's */
	for (unsigned n = 0;; n++) {
		memset(&last, 0, sizeof(last));
		error =
		    attempt(&call, api, &req, retry, deadline, sig, cause, sizeof(cause), &last);
		if (error != 1)
			break;
		d = backoff_ms(n);
		if (n + 1 >= SBX_E2B_RETRY_ATTEMPTS || sbx__now_ms() + d >= deadline) {
			error = call ? 0 : SBX_ENETWORK; /* out of tries: the last outcome stands */
			break;
		}
		log_retry(api, (const char *)what.ptr, cause, n, d);
		sbx__http_call_free(call);
		call = NULL;
		if ((error = sbx__http_sleep(d, sig, err)) < 0)
			goto done;
	}
	if (error < 0) {
		pass_error(err, &last);
		goto done;
	}
	reply->status = sbx__http_call_status(call);
	rb = sbx__http_call_body(call);
	if (reply->status < 200 || reply->status >= 300) {
		error = sbx__e2b_http_error(err, (const char *)what.ptr + 4, reply->status, rb->ptr,
		                            rb->len, api->api_key, NULL, &reply->not_found);
		goto done;
	}
	if (rb->len > 0 &&
	    !(reply->json = json_loadb((const char *)rb->ptr, rb->len, JSON_DECODE_ANY, &jerr))) {
		error = sbx__error_set(err, SBX_EPROTOCOL, "%s returned invalid JSON (at byte %d)",
		                       (const char *)what.ptr, jerr.position);
		goto done;
	}
	reply->next_token = sbx__http_call_header(call, "X-Next-Token");
	error = 0;
done:
	sbx__http_call_free(call);
	sbx_buf_dispose(&text);
	sbx_buf_dispose(&url);
	sbx_buf_dispose(&what);
	return error;
}

/*
 * sbx__json_dump's writer: the bytes json_dumpb(j, JSON_COMPACT | JSON_ENCODE_ANY) makes, in one
 * pass. json_dumpb sized the text with a first dump and wrote it with a second, and checks
 * every object and array for a cycle through a hash of pointers printed as text: about 90,000
 * instructions of every exec's Start request (docs/internals/exec-cost.md "The client's CPU per
 * exec"). Our trees have no cycles (they are built here or parsed, which caps their depth at
 * JSON_PARSER_MAX_DEPTH); DUMP_MAX_DEPTH stands for jansson's cycle check. A string that is not
 * UTF-8 fails as it fails jansson's dump.
 */
#define DUMP_MAX_DEPTH 4096

/* The length of the UTF-8 sequence at p (n > 0 bytes left, p[0] >= 0x80), as jansson's
 * utf8_iterate accepts it (RFC 3629: no overlong form, no surrogate, at most U+10FFFF); 0 when
 * it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
	uint32_t v;

	if (p[0] < 0xc2 || p[0] > 0xf4 || len > n)
		return 0;
	v = p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) || (len == 3 && v < 0x800) ||
	    (len == 4 && v < 0x10000))
		return 0;
	return len;
}

/* A JSON string as jansson writes it: '"', '\\' and control characters escaped, the rest kept. */
int sbx__json_dump_string(sbx_buf *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0, n;
	const char *e;
	char esc[8];
	int error;

	if ((error = sbx_buf_put(out, "\"", 1)) < 0)
		return error;
	while (i < len) {
		unsigned char c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0x80) {
			if (!(n = utf8_seq(s + i, len - i)))
				return SBX_ENOMEM; /* as a failed json_dumpb */
			i += n;
			continue;
		}
		if ((error = sbx_buf_put(out, s + run, i - run)) < 0)
			return error;
		switch (c) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)c);
			e = esc;
		}
		if ((error = sbx_buf_puts(out, e)) < 0)
			return error;
		run = ++i;
	}
	if ((error = sbx_buf_put(out, s + run, i - run)) < 0)
		return error;
	return sbx_buf_put(out, "\"", 1);
}

/* A real, written by jansson itself (its precision rules); the rest of a tree never is. */
static int dump_real(sbx_buf *out, const json_t *j)
{
	char text[64];
	size_t n = json_dumpb(j, text, sizeof(text), JSON_COMPACT | JSON_ENCODE_ANY);
	unsigned char *tail;
	int error;

	if (n == 0)
		return SBX_ENOMEM;
	if (n <= sizeof(text))
		return sbx_buf_put(out, text, n);
	if ((error = sbx_buf_reserve(out, n, &tail)) < 0)
		return error;
	if (json_dumpb(j, (char *)tail, n, JSON_COMPACT | JSON_ENCODE_ANY) != n)
		return SBX_ENOMEM;
	sbx_buf_commit(out, n);
	return 0;
}

static int dump_value(sbx_buf *out, const json_t *j, int depth)
{
	char text[32];
	int error = 0;
	bool first = true;

	if (!j || depth > DUMP_MAX_DEPTH)
		return SBX_ENOMEM;
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		if ((error = sbx_buf_put(out, "{", 1)) < 0)
			return error;
		for (void *it = json_object_iter((json_t *)j); it && error == 0;
		     it = json_object_iter_next((json_t *)j, it), first = false) {
			if ((!first && (error = sbx_buf_put(out, ",", 1)) < 0) ||
			    (error = sbx__json_dump_string(out, json_object_iter_key(it),
			                                   json_object_iter_key_len(it))) < 0 ||
			    (error = sbx_buf_put(out, ":", 1)) < 0)
				return error;
			error = dump_value(out, json_object_iter_value(it), depth + 1);
		}
		return error < 0 ? error : sbx_buf_put(out, "}", 1);
	case JSON_ARRAY:
		if ((error = sbx_buf_put(out, "[", 1)) < 0)
			return error;
		for (size_t i = 0; i < json_array_size(j) && error == 0; i++) {
			if (i > 0 && (error = sbx_buf_put(out, ",", 1)) < 0)
				return error;
			error = dump_value(out, json_array_get(j, i), depth + 1);
		}
		return error < 0 ? error : sbx_buf_put(out, "]", 1);
	case JSON_STRING:
		return sbx__json_dump_string(out, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return sbx_buf_puts(out, text);
	case JSON_REAL:
		return dump_real(out, j);
	case JSON_TRUE:
		return sbx_buf_put(out, "true", 4);
	case JSON_FALSE:
		return sbx_buf_put(out, "false", 5);
	case JSON_NULL:
		return sbx_buf_put(out, "null", 4);
	}
	return SBX_ENOMEM;
}

int sbx__json_dump(sbx_buf *out, const json_t *j)
{
	size_t len = out->len;
	int error = dump_value(out, j, 0);

	if (error < 0 && out->ptr) { /* unchanged on failure, as every sbx_buf call */
		out->len = len;
		out->ptr[len] = '\0';
	}
	return error;
}

static const char hexdig[] = "0123456789ABCDEF";

static int encode(sbx_buf *out, const char *s, size_t len, const char *keep, bool plus)
{
	unsigned char *tail, c;
	size_t o = 0;
	int error;

	if (len > (SIZE_MAX / 2) / 3)
		return SBX_ETOOLARGE;
	if ((error = sbx_buf_reserve(out, len * 3, &tail)) < 0)
		return error;
	for (size_t i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (c && strchr(keep, c))) {
			tail[o++] = c;
		} else if (plus && c == ' ') {
			tail[o++] = '+';
		} else {
			tail[o++] = '%';
			tail[o++] = (unsigned char)hexdig[c >> 4];
			tail[o++] = (unsigned char)hexdig[c & 15];
		}
	}
	sbx_buf_commit(out, o);
	return 0;
}

int sbx__uri_component_encode(sbx_buf *out, const char *s, size_t len)
{
	return encode(out, s, len, "-_.!~*'()", false);
}

int sbx__form_urlencode(sbx_buf *out, const char *s, size_t len)
{
	return encode(out, s, len, "*-._", true);
}

int sbx__e2b_list_query(sbx_buf *out, const char *name, const char *next_token)
{
	return sbx__e2b_list_query_state(out, name, "running,paused", next_token);
}

int sbx__e2b_list_query_state(sbx_buf *out, const char *name, const char *states,
                              const char *next_token)
{
	sbx_buf pair = SBX_BUF_INIT(64 * 1024);
	sbx_buf inner = SBX_BUF_INIT(64 * 1024);
	int error;

	if (!name) {
		if ((error = sbx_buf_puts(out, "state=")) == 0 &&
		    (error = sbx__form_urlencode(out, states, strlen(states))) == 0)
			error = sbx_buf_printf(out, "&limit=%d", SBX_E2B_LIST_LIMIT);
		goto token;
	}
	/* new URLSearchParams({[enc(METADATA_NAME)]: enc(name)}).toString() */
	if ((error = sbx__uri_component_encode(&pair, SBX_E2B_METADATA_NAME,
	                                       strlen(SBX_E2B_METADATA_NAME))) < 0 ||
	    (error = sbx__form_urlencode(&inner, (const char *)pair.ptr, pair.len)) < 0 ||
	    (error = sbx_buf_puts(&inner, "=")) < 0)
		goto done;
	sbx_buf_clear(&pair);
	if ((error = sbx__uri_component_encode(&pair, name, strlen(name))) < 0 ||
	    (error = sbx__form_urlencode(&inner, (const char *)pair.ptr, pair.len)) < 0)
		goto done;
	/* url.searchParams.set(k, v) for each query entry, in order */
	if ((error = sbx_buf_puts(out, "metadata=")) < 0 ||
	    (error = sbx__form_urlencode(out, (const char *)inner.ptr, inner.len)) < 0 ||
	    (error = sbx_buf_puts(out, "&state=")) < 0 ||
	    (error = sbx__form_urlencode(out, states, strlen(states))) < 0 ||
	    (error = sbx_buf_printf(out, "&limit=%d", SBX_E2B_LIST_LIMIT)) < 0)
		goto done;
token:
	if (error == 0 && next_token && (error = sbx_buf_puts(out, "&nextToken=")) == 0)
		error = sbx__form_urlencode(out, next_token, strlen(next_token));
done:
	sbx_buf_dispose(&pair);
	sbx_buf_dispose(&inner);
	return error;
}
