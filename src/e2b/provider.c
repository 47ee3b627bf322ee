/*
 * e2b/provider.c: the sandbox@1 contract on E2B, method by method as docs/contract.md
 * "Methods" states it.
 *
 * Lifecycle (create, resume, suspend, destroy, destroy_by_name) and attach()
 * live here; running commands (exec, the kill path, the reboot fallback and
 * the file operations built on in-sandbox scripts) live in provider_exec.c.
 * Shared arguments (signal, tags, paths, env keys) were already checked by
 * contract/provider.c; the E2B-specific ones (name, id, limits) are checked
 * here, before any request.
 *
 * The provider is read-only after creation; the HTTP pool is the only shared
 * mutable state and has its own mutex, so every method is thread-safe.
 */
#include "e2b/provider_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "contract/provider.h"
#include "e2b/names.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"
#include <sandbox/validate.h>

#define MAX_TIMEOUT_SECONDS      86400        /* MAX_TIMEOUT_SECONDS: connect never asks for more */
#define CONNECT_CONFLICT_RETRIES 5            /* CONNECT_CONFLICT_RETRIES */
#define CONNECT_CONFLICT_WAIT_MS 500          /* CONNECT_CONFLICT_WAIT_MS */
#define MAX_TOKEN_BYTES          1024         /* an envdAccessToken longer than this is not E2B's */
#define NAMED_STACK              (256 * 1024) /* the same-name list's thread */

static const char OPEN_EGRESS_REFUSED[] =
    "Sandbox egress \"open\" (sandbox.limits.egress) is refused: the sandbox-e2b plugin setting "
    "allowOpenEgress is false. Set extensionConfig.\"sandbox-e2b\".allowOpenEgress to true "
    "(trusted environments only), or set sandbox.limits.egress to \"allowlist\" or \"none\".";

void sbx__e2b_log(const sbx__e2b_provider *p, sbx_log_level level, const char *msg,
                  const sbx_log_field *fields, size_t n)
{
	if (p->logger.fn)
		p->logger.fn(level, msg, fields, n, p->logger.payload);
}

void sbx__e2b_pass_error(sbx_error *err, const sbx_error *local)
{
	if (err && err->code == 0 && local->code != 0)
		*err = *local;
}

void sbx__e2b_upload_failed(sbx_error *err, int error, const sbx_error *local)
{
	if (error == SBX_ETIMEOUT || error == SBX_EABORTED)
		sbx__error_set(err, error,
		               error == SBX_ETIMEOUT ? "E2B file upload timed out" : "aborted");
	else
		sbx__e2b_pass_error(err, local);
}

int sbx__e2b_aborted(sbx_signal *sig, sbx_error *err)
{
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return 0;
}

/* "/<prefix>/<id><suffix>"; ids are validated, so encodeURIComponent changes nothing. */
static int id_path(char *out, size_t outlen, const char *prefix, const char *id, const char *suffix,
                   sbx_error *err)
{
	int n = snprintf(out, outlen, "%s%s%s", prefix, id, suffix);
	if (n < 0 || (size_t)n >= outlen)
		return sbx__error_set(err, SBX_EINVALID, "sandbox id too long");
	return 0;
}

/* The envd target from a Sandbox object (docs/protocol.md "Reaching envd"). */
/*
 * A sandbox id the server sent: an invalid one is the server's fault
 * (PROTOCOL), not the caller's (INVALID). It is quoted only after the
 * secrets (and any token-like hex run) are scrubbed out of it.
 */
static int server_sandbox_id(const char *sid, const char *what, const char *secret1,
                             const char *secret2, sbx_error *err)
{
	char clean[4 * SBX_E2B_ERROR_MESSAGE_MAX + 16], q[SBX_QUOTE_SIZE];

	if (sbx__e2b_validate_sandbox_id(sid, NULL) == 0)
		return 0;
	sbx__e2b_clean_text(clean, sizeof(clean), sid, strlen(sid), secret1, secret2);
	return sbx__error_set(err, SBX_EPROTOCOL, "%s returned an invalid sandbox id: \"%s\"", what,
	                      sbx__quote(q, sizeof(q), clean, strlen(clean)));
}

/*
 * JSON.stringify(v).slice(0, 100), quoted. (json_dumpb() into a 100-byte
 * array left it undefined when the text did not fit: stack bytes quoted.)
 */
static const char *quote_json(char *q, size_t qlen, const json_t *v, const char *secret1,
                              const char *secret2)
{
	sbx_buf text = SBX_BUF_INIT(SBX_HTTP_MAX_BODY * 2);
	char clean[4 * SBX_E2B_ERROR_MESSAGE_MAX + 16];
	size_t n;

	if (!v)
		return sbx__quote(q, qlen, "undefined", 9);
	if (sbx__json_dump(&text, v) < 0) {
		sbx__quote(q, qlen, "?", 1);
	} else {
		/* secrets scrubbed from the whole text before it is cut */
		sbx__e2b_clean_text(clean, sizeof(clean), (const char *)text.ptr, text.len, secret1,
		                    secret2);
		n = strlen(clean);
		sbx__quote(q, qlen, clean, n > 100 ? 100 : n);
	}
	sbx_buf_dispose(&text);
	return q;
}

/*
 * The envd token goes verbatim into an X-Access-Token header: a CR or LF in
 * it would let the server inject headers into our requests (curl sends
 * custom headers as given). E2B's are 64 hex digits; allow any visible ASCII.
 */
static bool header_safe(const char *v, size_t len)
{
	if (len > MAX_TOKEN_BYTES || strlen(v) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f)
			return false;
	return true;
}

int sbx__e2b_target_of(const sbx__e2b_provider *p, sbx_envd_target *t, json_t *info, const char *id,
                       sbx_error *err)
{
	json_t *jid = json_object_get(info, "sandboxID"), *jdom = json_object_get(info, "domain");
	json_t *jtok = json_object_get(info, "envdAccessToken"), *jtraffic;
	const char *traffic = NULL;
	const char *sid = json_is_string(jid) ? json_string_value(jid) : id;
	const char *domain = p->domain;
	char q[SBX_QUOTE_SIZE];
	sbx_buf url = SBX_BUF_INIT(64 * 1024);
	int error;

	memset(t, 0, sizeof(*t));
	if (jid && !json_is_string(jid) && !json_is_null(jid))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B connect returned a sandboxID that is not a string");
	if ((error =
	         server_sandbox_id(sid, "E2B connect", p->api.api_key,
	                           json_is_string(jtok) ? json_string_value(jtok) : NULL, err)) < 0)
		return error;
	/* envd requests would go to the sandbox named here: it must be the one asked for (or the
	 * short form E2B makes of a legacy "<id>-<clientID>": its ShortID) */
	if (strcmp(sid, id) != 0 && !(strncmp(id, sid, strlen(sid)) == 0 && id[strlen(sid)] == '-'))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B connect for sandbox %s answered for another sandbox, %s",
		                      id, sid);
	if (json_is_string(jdom) && json_string_length(jdom) > 0)
		domain = json_string_value(jdom);
	else if (jdom && !json_is_null(jdom) && !json_is_false(jdom) && !json_is_string(jdom))
		domain = NULL; /* a truthy non-string: never a hostname */
	if (!domain || !sbx__is_hostname(domain, strlen(domain))) {
		return sbx__error_set(
		    err, SBX_EPROTOCOL, "E2B returned an invalid sandbox domain: %s",
		    quote_json(q, sizeof(q), jdom, p->api.api_key,
		               json_is_string(jtok) ? json_string_value(jtok) : NULL));
	}
	if (!json_is_string(jtok) || json_string_length(jtok) == 0)
		return sbx__error_set(
		    err, SBX_EGONE,
		    "E2B returned no envd access token for sandbox %s; refusing to use "
		    "an unauthenticated sandbox (it will be recreated)",
		    sid);
	if (!header_safe(json_string_value(jtok), json_string_length(jtok)))
		return sbx__error_set(
		    err, SBX_EPROTOCOL,
		    "E2B returned an envd access token for sandbox %s that cannot "
		    "be sent in a header (control characters, or over %d bytes)",
		    sid, MAX_TOKEN_BYTES);
	/* a traffic token goes into a header of the caller's: one that cannot is not taken */
	jtraffic = json_object_get(info, "trafficAccessToken");
	if (json_is_string(jtraffic) && json_string_length(jtraffic) > 0 &&
	    header_safe(json_string_value(jtraffic), json_string_length(jtraffic)))
		traffic = json_string_value(jtraffic);
	t->api_key = p->api.api_key;
	if (p->envd_url)
		error = sbx_buf_puts(&url, p->envd_url);
	else
		error = sbx_buf_printf(&url, "https://%d-%s.%s", SBX_ENVD_PORT, sid, domain);
	if (error < 0 || !(t->sandbox_id = sbx__strdup(sid)) ||
	    !(t->token = sbx__strdup(json_string_value(jtok))) ||
	    !(t->domain = sbx__strdup(domain)) ||
	    (traffic && !(t->traffic_token = sbx__strdup(traffic))) ||
	    sbx_buf_detach(&url, (unsigned char **)&t->url, NULL) < 0) {
		sbx_buf_dispose(&url);
		sbx__envd_target_dispose(t);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	return 0;
}

static json_t *connect_body(int64_t timeout, bool reboot)
{
	json_t *b = json_object();
	if (!b || json_object_set_new(b, "timeout", json_integer(timeout)) < 0 ||
	    (reboot && json_object_set_new(b, "memory", json_false()) < 0)) {
		json_decref(b);
		return NULL;
	}
	return b;
}

/*
 * An older self-hosted E2B API (before the /v2 create and connect routes)
 * rejects a route it does not have in its OpenAPI validator, with an
 * E2B-format error whose message says "no matching operation was found" (or
 * "method not allowed" for a known path): a missing route, not a missing
 * sandbox (docs/reliability.md).
 */
static bool route_missing(const sbx_e2b_reply *r, const sbx_error *e)
{
	return (r->status == 400 || r->status == 404 || r->status == 405) &&
	       (strstr(e->message, "no matching operation") ||
	        strstr(e->message, "method not allowed"));
}

/* From now on this provider uses the legacy routes (logged once per provider). */
static void learn_legacy_routes(sbx__e2b_provider *p, const char *route)
{
	sbx_log_field f[1] = {{"route", route}};

	if (!atomic_exchange(&p->legacy_routes, true))
		sbx__e2b_log(
		    p, SBX_LOG_WARN,
		    "sandbox-e2b: the E2B API has no /v2 routes (an older self-hosted "
		    "version); using the legacy POST /sandboxes and /sandboxes/{id}/connect",
		    f, 1);
}

/* "/v2/sandboxes/<id>/connect", or the legacy "/sandboxes/<id>/connect". */
static int connect_path(char *out, size_t outlen, sbx__e2b_provider *p, const char *id,
                        sbx_error *err)
{
	return id_path(out, outlen,
	               atomic_load(&p->legacy_routes) ? "/sandboxes/" : "/v2/sandboxes/", id,
	               "/connect", err);
}

/* The attach (docs/contract.md "Lifecycle"): one connect (409s retried); *until_ms = when it
 * was sent + its timeout. */
static int attach_connect(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                          uint64_t min_seconds, uint64_t *until_ms, sbx_signal *sig, sbx_error *err)
{
	char path[256];
	int64_t timeout = p->timeout_seconds;
	sbx_e2b_reply reply;
	sbx_error local;
	json_t *body;
	int error;

	memset(t, 0, sizeof(*t));
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_sandbox_id(id, err)) < 0 ||
	    (error = connect_path(path, sizeof(path), p, id, err)) < 0)
		return error;
	if ((uint64_t)timeout < min_seconds)
		timeout =
		    min_seconds > MAX_TIMEOUT_SECONDS ? MAX_TIMEOUT_SECONDS : (int64_t)min_seconds;
	if (timeout > MAX_TIMEOUT_SECONDS)
		timeout = MAX_TIMEOUT_SECONDS;
	if (!(body = connect_body(timeout, false)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	for (int i = 0;; i++) {
		memset(&local, 0, sizeof(local));
		*until_ms = sbx__now_ms() + (uint64_t)timeout * 1000;
		error =
		    sbx__e2b_api_call(&reply, &p->api, "POST", path, NULL, body, 0, sig, &local);
		if (error == 0) {
			error = sbx__e2b_target_of(p, t, reply.json, id, err);
			break;
		}
		if (error == SBX_EHTTP && strncmp(path, "/v2/", 4) == 0 &&
		    route_missing(&reply, &local)) {
			/* not "gone": this API only has the legacy route; once per provider */
			learn_legacy_routes(p, path);
			sbx__e2b_reply_dispose(&reply);
			if ((error = connect_path(path, sizeof(path), p, id, err)) < 0)
				break;
			i--;
			continue;
		}
		if (error == SBX_EHTTP && reply.not_found) {
			error = sbx__error_set_http(err, SBX_EGONE, 404, "404",
			                            "E2B sandbox %s no longer exists", id);
			break;
		}
		if (error != SBX_EHTTP || reply.status != 409 || i >= CONNECT_CONFLICT_RETRIES) {
			sbx__e2b_pass_error(err, &local);
			break;
		}
		sbx__e2b_reply_dispose(&reply);
		/* a resume in flight elsewhere: retry briefly, abortably */
		if ((error = sbx__http_sleep(CONNECT_CONFLICT_WAIT_MS, sig, err)) < 0)
			break;
	}
	sbx__e2b_reply_dispose(&reply);
	json_decref(body);
	return error;
}

/* ---- the attach cache (docs/contract.md "Lifecycle"): no connect while the last one covers the
 * call */

#define ATTACH_MAX     4096 /* remembered sandboxes per provider; the oldest go first */
#define ATTACH_WAIT_MS 50   /* a waiter checks its abort signal this often */

static int target_copy(sbx_envd_target *dst, const sbx_envd_target *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->api_key = src->api_key;
	if (!(dst->url = sbx__strdup(src->url)) ||
	    !(dst->sandbox_id = sbx__strdup(src->sandbox_id)) ||
	    !(dst->token = sbx__strdup(src->token)) ||
	    (src->domain && !(dst->domain = sbx__strdup(src->domain))) ||
	    (src->traffic_token && !(dst->traffic_token = sbx__strdup(src->traffic_token)))) {
		sbx__envd_target_dispose(dst);
		return SBX_ENOMEM;
	}
	return 0;
}

static void attached_free(sbx__e2b_attached *a)
{
	sbx__envd_target_dispose(&a->t);
	sbx__free(a->id);
	sbx__free(a);
}

/* Under attach_mu. The entry of `id`, created (not in flight, nothing known) when `make`. */
static sbx__e2b_attached *attached_get(sbx__e2b_provider *p, const char *id, bool make)
{
	sbx__e2b_attached *a, **pp, **last = NULL;

	for (a = p->attached; a; a = a->next)
		if (strcmp(a->id, id) == 0)
			return a;
	if (!make)
		return NULL;
	if (p->nattached >= ATTACH_MAX) { /* drop the oldest idle entry (list tail side) */
		for (pp = &p->attached; *pp; pp = &(*pp)->next)
			if (!(*pp)->inflight)
				last = pp;
		if (last) {
			a = *last;
			*last = a->next;
			attached_free(a);
			p->nattached--;
		}
	}
	if (!(a = sbx__calloc(1, sizeof(*a))) || !(a->id = sbx__strdup(id))) {
		sbx__free(a);
		return NULL;
	}
	a->next = p->attached;
	p->attached = a;
	p->nattached++;
	return a;
}

/* Under attach_mu: forget the target, keep an in-flight marker. */
static void attached_clear(sbx__e2b_attached *a)
{
	sbx__envd_target_dispose(&a->t);
	a->until_ms = 0;
}

void sbx__e2b_attach_forget(sbx__e2b_provider *p, const char *id)
{
	sbx__e2b_attached *a;

	pthread_mutex_lock(&p->attach_mu);
	if ((a = attached_get(p, id, false)))
		attached_clear(a);
	pthread_mutex_unlock(&p->attach_mu);
}

void sbx__e2b_attach_remember(sbx__e2b_provider *p, const char *id, sbx_envd_target *t,
                              uint64_t until_ms)
{
	sbx__e2b_attached *a;

	pthread_mutex_lock(&p->attach_mu);
	if ((a = attached_get(p, id, true)) && !a->inflight) {
		attached_clear(a);
		a->t = *t;
		a->until_ms = until_ms;
		memset(t, 0, sizeof(*t));
	}
	pthread_mutex_unlock(&p->attach_mu);
	sbx__envd_target_dispose(t); /* not taken (no memory, or a connect in flight) */
}

/* Wait for another caller's connect to `a` to end, abortably. Under attach_mu. */
static int attach_wait(sbx__e2b_provider *p, sbx_signal *sig, sbx_error *err)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += ATTACH_WAIT_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	(void)pthread_cond_timedwait(&p->attach_cv, &p->attach_mu, &ts);
	return sbx__e2b_aborted(sig, err);
}

static int attach(sbx__e2b_provider *p, sbx_envd_target *t, const char *id, uint64_t min_seconds,
                  bool force, bool *cached, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_attached *a;
	sbx_envd_target fresh;
	uint64_t need_ms, until = 0;
	int error = 0;

	memset(t, 0, sizeof(*t));
	if (cached)
		*cached = false;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_sandbox_id(id, err)) < 0)
		return error;
	need_ms = (min_seconds > MAX_TIMEOUT_SECONDS ? MAX_TIMEOUT_SECONDS : min_seconds) * 1000;
	pthread_mutex_lock(&p->attach_mu);
	for (;;) {
		if (!(a = attached_get(p, id, true))) {
			pthread_mutex_unlock(&p->attach_mu);
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
		}
		if (a->inflight) {
			if ((error = attach_wait(p, sig, err)) < 0) {
				pthread_mutex_unlock(&p->attach_mu);
				return error;
			}
			continue;
		}
		if (!force && a->t.url && sbx__now_ms() + need_ms <= a->until_ms) {
			error = target_copy(t, &a->t);
			pthread_mutex_unlock(&p->attach_mu);
			if (error < 0)
				return sbx__error_set(err, SBX_ENOMEM, "out of memory");
			if (cached)
				*cached = true;
			return 0;
		}
		a->inflight = true;
		break;
	}
	pthread_mutex_unlock(&p->attach_mu);

	error = attach_connect(p, &fresh, id, min_seconds, &until, sig, err);
	if (error == 0 && target_copy(t, &fresh) < 0)
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");

	pthread_mutex_lock(&p->attach_mu);
	a = attached_get(p, id, false); /* still there: in-flight entries are never dropped */
	attached_clear(a);
	if (error == 0) {
		a->t = fresh;
		a->until_ms = until;
		memset(&fresh, 0, sizeof(fresh));
	}
	a->inflight = false;
	pthread_cond_broadcast(&p->attach_cv);
	pthread_mutex_unlock(&p->attach_mu);
	sbx__envd_target_dispose(&fresh);
	if (error < 0)
		sbx__envd_target_dispose(t);
	return error;
}

int sbx__e2b_attach(sbx__e2b_provider *p, sbx_envd_target *t, const char *id, uint64_t min_seconds,
                    sbx_signal *sig, sbx_error *err)
{
	return attach(p, t, id, min_seconds, true, NULL, sig, err);
}

int sbx__e2b_attach_cached(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                           uint64_t min_seconds, bool *cached, sbx_signal *sig, sbx_error *err)
{
	return attach(p, t, id, min_seconds, false, cached, sig, err);
}

/* kill(id): DELETE /sandboxes/{id}; an E2B-format 404 counts as success. */
static int kill_sandbox(sbx__e2b_provider *p, const char *id, sbx_signal *sig, sbx_error *err)
{
	char path[256];
	sbx_e2b_reply reply;
	sbx_error local = {0};
	int error;

	if ((error = sbx__e2b_validate_sandbox_id(id, err)) < 0 ||
	    (error = id_path(path, sizeof(path), "/sandboxes/", id, "", err)) < 0)
		return error;
	error = sbx__e2b_api_call(&reply, &p->api, "DELETE", path, NULL, NULL, 0, sig, &local);
	if (error == SBX_EHTTP && reply.not_found)
		error = 0;
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	sbx__e2b_reply_dispose(&reply);
	return error;
}

int sbx__e2b_collect_page(json_t *page, const char *name, json_t *ids, sbx_error *err)
{
	json_t *s, *md, *v, *sid;
	size_t i;

	if (!page || json_is_null(page))
		return 0; /* r.data ?? [] */
	if (!json_is_array(page))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B GET /v2/sandboxes returned no array of sandboxes");
	json_array_foreach(page, i, s)
	{
		md = json_object_get(s, "metadata");
		v = json_object_get(md, SBX_E2B_METADATA_NAME);
		if (!json_is_string(v) || strcmp(json_string_value(v), name) != 0)
			continue;
		sid = json_object_get(s, "sandboxID");
		if (!json_is_string(sid))
			return sbx__error_set(err, SBX_EPROTOCOL,
			                      "E2B GET /v2/sandboxes returned a sandbox without a "
			                      "sandboxID");
		if (sbx__e2b_validate_sandbox_id(json_string_value(sid), NULL) < 0)
			return sbx__error_set(
			    err, SBX_EPROTOCOL,
			    "E2B GET /v2/sandboxes returned an invalid sandbox id "
			    "(%zu bytes)",
			    json_string_length(sid));
		if (json_array_append_new(ids, json_string(json_string_value(sid))) < 0)
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	return 0;
}

/* Append to `ids` the id of every sandbox named `name`, following the list's pages. */
/*
 * One page of a named list: GET /v2/sandboxes, or, on a control plane that
 * has no such route, the legacy GET /sandboxes with the same metadata filter
 * (running sandboxes only, one page: docs/reliability.md). `query` is the v2
 * query; the legacy call keeps only its metadata part.
 */
int sbx__e2b_list_page(sbx__e2b_provider *p, sbx_e2b_reply *reply, sbx_buf *query, sbx_signal *sig,
                       sbx_error *err)
{
	sbx_error local = {0};
	unsigned char *amp;
	int error;

	if (!atomic_load(&p->legacy_list)) {
		error = sbx__e2b_api_call(reply, &p->api, "GET", "/v2/sandboxes",
		                          (const char *)query->ptr, NULL, 0, sig, &local);
		if (!(error == SBX_EHTTP && route_missing(reply, &local))) {
			if (error < 0)
				sbx__e2b_pass_error(err, &local);
			return error;
		}
		if (!atomic_exchange(&p->legacy_list, true))
			learn_legacy_routes(p, "/v2/sandboxes");
		sbx__e2b_reply_dispose(reply);
	}
	/* metadata=<value> comes first and its value has no raw '&' (form-encoded) */
	if ((amp = memchr(query->ptr, '&', query->len))) {
		query->len = (size_t)(amp - query->ptr);
		query->ptr[query->len] = '\0';
	}
	if ((error = sbx__e2b_api_call(reply, &p->api, "GET", "/sandboxes",
	                               (const char *)query->ptr, NULL, 0, sig, err)) == 0) {
		sbx__free(reply->next_token); /* no paging on the legacy route */
		reply->next_token = NULL;
	}
	return error;
}

int sbx__e2b_list_each(sbx__e2b_provider *p, const char *name, const char *states,
                       sbx__e2b_page_fn on_page, void *payload, sbx_signal *sig, sbx_error *err)
{
	sbx_buf query = SBX_BUF_INIT(64 * 1024);
	sbx_e2b_reply reply = {0};
	char *token = NULL;
	size_t pages = 0;
	int error = 0;

	do {
		if (++pages > SBX_E2B_LIST_MAX_PAGES) {
			error = sbx__error_set(
			    err, SBX_EPROTOCOL, "E2B list of sandboxes%s%s has more than %d pages",
			    name ? " named " : "", name ? name : "", SBX_E2B_LIST_MAX_PAGES);
			goto done;
		}
		sbx_buf_clear(&query);
		if ((error = sbx__e2b_list_query_state(&query, name, states, token)) < 0) {
			error =
			    sbx__error_set(err, error,
			                   error == SBX_ETOOLARGE && token
			                       ? "E2B GET /v2/sandboxes returned an X-Next-Token "
			                         "too long to send back"
			                       : "cannot build the list query");
			goto done;
		}
		sbx__e2b_reply_dispose(&reply);
		if ((error = sbx__e2b_list_page(p, &reply, &query, sig, err)) < 0 ||
		    (error = on_page(reply.json, payload, err)) < 0)
			goto done;
		sbx__free(token);
		token = reply.next_token && reply.next_token[0] ? reply.next_token : NULL;
		if (token)
			reply.next_token = NULL; /* taken */
	} while (token);
done:
	sbx__e2b_reply_dispose(&reply);
	sbx__free(token);
	sbx_buf_dispose(&query);
	return error;
}

typedef struct named_ids {
	const char *name;
	json_t *ids;
} named_ids;

static int collect_page(json_t *page, void *payload, sbx_error *err)
{
	named_ids *n = payload;
	return sbx__e2b_collect_page(page, n->name, n->ids, err);
}

static int collect_named(sbx__e2b_provider *p, const char *name, json_t *ids, sbx_signal *sig,
                         sbx_error *err)
{
	named_ids n = {name, ids};
	return sbx__e2b_list_each(p, name, "running,paused", collect_page, &n, sig, err);
}

/* Kill every sandbox in `ids` but `except` (may be NULL), in order; the first failure stops. */
static int kill_all_of(sbx__e2b_provider *p, json_t *ids, const char *except, sbx_signal *sig,
                       sbx_error *err)
{
	json_t *v;
	size_t i;
	int error;

	json_array_foreach(ids, i, v)
	{
		if (except && strcmp(json_string_value(v), except) == 0)
			continue;
		sbx__e2b_attach_forget(p, json_string_value(v));
		if ((error = kill_sandbox(p, json_string_value(v), sig, err)) < 0)
			return error;
	}
	return 0;
}

int sbx__e2b_destroy_by_name(void *impl, const char *name, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	json_t *ids = json_array();
	int error;

	if (!ids)
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	/* the header promises the name pattern; create() checks it again (harmless) */
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_name(name, err)) < 0 ||
	    (error = collect_named(p, name, ids, sig, err)) < 0 ||
	    (error = kill_all_of(p, ids, NULL, sig, err)) < 0) {
		json_decref(ids);
		return error;
	}
	json_decref(ids);
	return 0;
}

/* The list of same-name sandboxes, run on its own thread beside the create request. */
typedef struct named_job {
	sbx__e2b_provider *p;
	const char *name;
	json_t *ids;
	sbx_signal *sig;
	sbx_error err;
	int error;
} named_job;

static void *named_main(void *arg)
{
	named_job *j = arg;
	j->error = collect_named(j->p, j->name, j->ids, j->sig, &j->err);
	return NULL;
}

/*
 * The create body: template, metadata (the caller's pairs, then the name
 * tag), timeout, envVars (sandbox/lifetime.h), autoPause, secure, egress mapping.
 */
static json_t *create_body(const sbx__e2b_provider *p, const char *name, const sbx_limits *l,
                           sbx_egress egress, const sbx_create_options *o, int64_t timeout)
{
	json_t *b = json_object(), *md = json_object(), *net = NULL, *allow, *deny, *envs;
	bool ok = b && md;

	ok = ok && json_object_set_new(b, "templateID", json_string(p->template_id)) == 0;
	for (size_t i = 0; ok && o && i < o->metadata_count; i++)
		ok = json_object_set_new(md, o->metadata[i].key,
		                         json_string(o->metadata[i].value)) == 0;
	ok = ok && json_object_set_new(md, SBX_E2B_METADATA_NAME, json_string(name)) == 0;
	ok = ok && json_object_set(b, "metadata", md) == 0;
	ok = ok && json_object_set_new(b, "timeout", json_integer(timeout)) == 0;
	if (ok && o && o->env_count > 0) {
		ok = (envs = json_object()) && json_object_set_new(b, "envVars", envs) == 0;
		for (size_t i = 0; ok && i < o->env_count; i++) /* later keys win, as exec's */
			ok = json_object_set_new(envs, o->env[i].key,
			                         json_string(o->env[i].value)) == 0;
	}
	ok = ok && json_object_set_new(b, "autoPause", json_true()) == 0;
	ok = ok && json_object_set_new(b, "secure", json_true()) == 0;
	if (ok && egress == SBX_EGRESS_ALLOWLIST && l->allow_hosts_count > 0) {
		ok = (net = json_object()) && (allow = json_array()) &&
		     json_object_set_new(net, "allowOut", allow) == 0 && (deny = json_array()) &&
		     json_object_set_new(net, "denyOut", deny) == 0 &&
		     json_array_append_new(deny, json_string("0.0.0.0/0")) == 0;
		for (size_t i = 0; ok && i < l->allow_hosts_count; i++)
			ok = json_array_append_new(allow, json_string(l->allow_hosts[i])) == 0;
		ok = ok && json_object_set(b, "network", net) == 0;
	} else if (ok) {
		ok = json_object_set_new(b, "allow_internet_access",
		                         json_boolean(egress == SBX_EGRESS_OPEN)) == 0;
	}
	json_decref(net);
	json_decref(md);
	if (!ok) {
		json_decref(b);
		return NULL;
	}
	return b;
}

/*
 * POST /v2/sandboxes, or the legacy POST /sandboxes on an older control plane
 * (learnt here when /v2 answers that the route is missing). Never retried:
 * a second POST would make a second sandbox.
 */
static int post_create(sbx__e2b_provider *p, json_t *body, sbx_e2b_reply *reply, sbx_signal *sig,
                       sbx_error *err)
{
	sbx_error local = {0};
	bool v2 = !atomic_load(&p->legacy_routes); /* the list may learn it meanwhile */
	int error;

	error = sbx__e2b_api_call(reply, &p->api, "POST", v2 ? "/v2/sandboxes" : "/sandboxes", NULL,
	                          body, 0, sig, &local);
	if (error == SBX_EHTTP && v2 && route_missing(reply, &local)) {
		learn_legacy_routes(p, "/v2/sandboxes");
		sbx__e2b_reply_dispose(reply);
		memset(&local, 0, sizeof(local));
		error = sbx__e2b_api_call(reply, &p->api, "POST", "/sandboxes", NULL, body, 0, sig,
		                          &local);
	}
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	return error;
}

/*
 * A create whose POST may have reached E2B and failed on the way back
 * (timeout, reset, a 5xx, a reply we cannot read) may have made a sandbox
 * nobody will use. Remove it by name, best effort: E2B may still be making it
 * when our call gives up, so an empty list is asked again after 1, 2, 4 and
 * 8 s (15 s in all); when E2B did answer (an unreadable 2xx reply), it is
 * done, and one list suffices. An abort, or a list that fails, ends the
 * cleanup; a sandbox it misses is replaced by the next create of the same
 * name anyway (docs/reliability.md).
 */
static void cleanup_after_create(sbx__e2b_provider *p, const char *name, bool answered,
                                 sbx_signal *sig)
{
	static const unsigned waits_ms[] = {0, 1000, 2000, 4000, 8000};
	size_t tries = answered ? 1 : sizeof(waits_ms) / sizeof(waits_ms[0]), removed = 0;
	sbx_log_field f[2] = {{"name", name}, {"err", NULL}};
	sbx_error e = {0};
	json_t *ids = json_array();
	int error = ids ? 0 : SBX_ENOMEM;

	for (size_t i = 0; error == 0 && i < tries && removed == 0; i++) {
		if (waits_ms[i] && sbx__http_sleep(waits_ms[i], sig, NULL) < 0)
			break;
		json_array_clear(ids);
		if ((error = collect_named(p, name, ids, sig, &e)) == 0 &&
		    (error = kill_all_of(p, ids, NULL, sig, &e)) == 0)
			removed = json_array_size(ids);
	}
	json_decref(ids);
	if (error < 0) {
		f[1].value = e.message;
		sbx__e2b_log(p, SBX_LOG_WARN,
		             "sandbox-e2b: could not remove what a failed create may have made", f,
		             2);
	} else if (removed) {
		sbx__e2b_log(p, SBX_LOG_WARN,
		             "sandbox-e2b: removed the sandbox a failed create had made", f, 1);
	}
}

/*
 * The POST may have reached E2B and made a sandbox even though the call
 * failed. Not when it never left (nothing accepted the connection): then
 * there is nothing to remove, and the cleanup's list would only fail too.
 */
static bool may_have_created(int error, const sbx_e2b_reply *reply)
{
	if (reply->unsent)
		return false;
	return error == SBX_ETIMEOUT || error == SBX_ENETWORK || error == SBX_EPROTOCOL ||
	       error == SBX_ETOOLARGE || (error == SBX_EHTTP && reply->status >= 500);
}

/*
 * The seed lists and destroys same-name sandboxes, then creates. Here the
 * list runs beside the create (one round trip less: README.md "Performance"); what it finds
 * is destroyed afterwards, except the new sandbox itself. So every sandbox
 * that had the name before create() was called is gone when it returns, as
 * in the seed; they only overlap for those kills. A create refused for the
 * concurrency limit (429) is sent again once the old ones are gone; a failed
 * list or kill fails the create and takes back the sandbox made meanwhile.
 * On 0 `reply` holds the create's answer and *sent when it was sent.
 */
static int create_replacing(sbx__e2b_provider *p, const char *name, json_t *body,
                            sbx_e2b_reply *reply, uint64_t *sent, sbx_signal *sig, sbx_error *err)
{
	named_job job = {p, name, json_array(), sig, {0}, 0};
	sbx_error cerr, kerr = {0};
	pthread_attr_t ta;
	pthread_t th;
	json_t *sid = NULL;
	bool threaded, killed_any;
	int error = 0, kerror = 0;

	memset(reply, 0, sizeof(*reply));
	if (!job.ids)
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	threaded = pthread_attr_init(&ta) == 0;
	if (threaded) {
		(void)pthread_attr_setstacksize(&ta, NAMED_STACK);
		threaded = pthread_create(&th, &ta, named_main, &job) == 0;
		pthread_attr_destroy(&ta);
	}
	if (!threaded) /* no thread: the seed's order */
		named_main(&job);
	for (int attempt = 0; threaded || job.error == 0; attempt++) {
		memset(&cerr, 0, sizeof(cerr));
		sbx__e2b_reply_dispose(reply);
		*sent = sbx__now_ms();
		error = post_create(p, body, reply, sig, &cerr);
		if (threaded) {
			pthread_join(th, NULL);
			threaded = false;
		}
		if (job.error < 0)
			break;
		sid = error == 0 ? json_object_get(reply->json, "sandboxID") : NULL;
		killed_any = json_array_size(job.ids) > 0;
		if ((kerror = kill_all_of(p, job.ids,
		                          json_is_string(sid) ? json_string_value(sid) : NULL, sig,
		                          &kerr)) < 0)
			break;
		json_array_clear(job.ids);
		if (!(error == SBX_EHTTP && reply->status == 429 && attempt == 0 && killed_any))
			break;
	}
	json_decref(job.ids);
	if (job.error < 0 || kerror < 0) {
		if (error == 0 && json_is_string(sid = json_object_get(reply->json, "sandboxID")) &&
		    sbx__e2b_validate_sandbox_id(json_string_value(sid), NULL) == 0)
			(void)kill_sandbox(p, json_string_value(sid), NULL, NULL);
		sbx__e2b_pass_error(err, job.error < 0 ? &job.err : &kerr);
		return job.error < 0 ? job.error : kerror;
	}
	if (error < 0)
		sbx__e2b_pass_error(err, &cerr);
	return error;
}

int sbx__e2b_create_with(void *impl, char **id_out, const char *name, const sbx_limits *limits,
                         const sbx_create_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	int64_t timeout =
	    opts && opts->timeout_seconds ? (int64_t)opts->timeout_seconds : p->timeout_seconds;
	sbx_egress egress = limits->egress;
	sbx_log_field f[1] = {{"name", name}};
	sbx_e2b_reply reply = {0};
	sbx_envd_target t;
	json_t *body = NULL, *sid;
	uint64_t sent = 0;
	int error;

	*id_out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_name(name, err)) < 0 ||
	    (error = sbx_validate_limits(limits, err)) < 0)
		return error;
	for (size_t i = 0; opts && i < opts->metadata_count; i++)
		if (strcmp(opts->metadata[i].key, SBX_E2B_METADATA_NAME) == 0)
			return sbx__error_set(err, SBX_EINVALID,
			                      "metadata key %s is reserved for the name",
			                      SBX_E2B_METADATA_NAME);
	if (egress == SBX_EGRESS_OPEN && !p->allow_open_egress)
		return sbx__error_set(err, SBX_EINVALID, "%s", OPEN_EGRESS_REFUSED);
	if (egress == SBX_EGRESS_ALLOWLIST && !p->domain_allowlist) {
		sbx__e2b_log(p, SBX_LOG_WARN,
		             "sandbox-e2b: domain allowlists are disabled for this deployment "
		             "(domainAllowlist is false); egress allowlist degraded to none",
		             f, 1);
		egress = SBX_EGRESS_NONE;
	}
	if (!(body = create_body(p, name, limits, egress, opts, timeout)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	if ((error = create_replacing(p, name, body, &reply, &sent, sig, err)) < 0)
		goto done;
	sid = json_object_get(reply.json, "sandboxID");
	if (!json_is_string(sid) || json_string_length(sid) == 0) {
		error =
		    sbx__error_set(err, SBX_EPROTOCOL, "E2B create sandbox returned no sandboxID");
		goto done;
	}
	if ((error = server_sandbox_id(json_string_value(sid), "E2B create sandbox", p->api.api_key,
	                               NULL, err)) < 0)
		goto done;
	if (!(*id_out = sbx__strdup(json_string_value(sid)))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	/* the create answer is a Sandbox like connect's: the first call needs no connect */
	if (sbx__e2b_target_of(p, &t, reply.json, *id_out, NULL) == 0)
		sbx__e2b_attach_remember(p, *id_out, &t, sent + (uint64_t)timeout * 1000);
done:
	if (may_have_created(error, &reply))
		cleanup_after_create(p, name,
		                     error == SBX_EPROTOCOL || error == SBX_ETOOLARGE ||
		                         (reply.status >= 200 && reply.status < 300),
		                     sig);
	sbx__e2b_reply_dispose(&reply);
	json_decref(body);
	return error;
}

int sbx__e2b_create(void *impl, char **id_out, const char *name, const sbx_limits *limits,
                    sbx_signal *sig, sbx_error *err)
{
	return sbx__e2b_create_with(impl, id_out, name, limits, NULL, sig, err);
}

/*
 * POST /sandboxes/{id}/timeout {"timeout": N}: end = now + N, shorter too
 * (e2b-dev/infra packages/api/internal/handlers/sandbox_timeout.go). E2B
 * keeps only running sandboxes there: a 404 may be a paused one, so connect
 * (resumes it, or tells SBX_EGONE) and send it once more. The attach cache's
 * window is dropped either way: it may now be too long.
 */
int sbx__e2b_set_timeout(void *impl, const char *id, uint64_t seconds, sbx_signal *sig,
                         sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	char path[256];
	sbx_e2b_reply reply = {0};
	sbx_error local;
	sbx_envd_target t;
	json_t *body;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_sandbox_id(id, err)) < 0 ||
	    (error = id_path(path, sizeof(path), "/sandboxes/", id, "/timeout", err)) < 0)
		return error;
	if (!(body = json_pack("{s:I}", "timeout", (json_int_t)seconds)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	for (int round = 0;; round++) {
		memset(&local, 0, sizeof(local));
		sbx__e2b_attach_forget(p, id);
		error =
		    sbx__e2b_api_call(&reply, &p->api, "POST", path, NULL, body, 0, sig, &local);
		if (error != SBX_EHTTP || !reply.not_found || round > 0)
			break;
		sbx__e2b_reply_dispose(&reply);
		memset(&reply, 0, sizeof(reply));
		if ((error = sbx__e2b_attach(p, &t, id, 0, sig, &local)) < 0)
			break; /* SBX_EGONE when there is no such sandbox */
		sbx__envd_target_dispose(&t);
	}
	sbx__e2b_attach_forget(p, id);
	if (error == SBX_EHTTP && reply.not_found)
		error = sbx__error_set(err, SBX_EGONE, "E2B sandbox %s no longer exists", id);
	else if (error < 0)
		sbx__e2b_pass_error(err, &local);
	sbx__e2b_reply_dispose(&reply);
	json_decref(body);
	return error;
}

int sbx__e2b_resume(void *impl, sbx_resume_status *out, const char *id, sbx_signal *sig,
                    sbx_error *err)
{
	sbx_envd_target t;
	sbx_error local = {0};
	int error;

	/* resume always asks E2B: that is what it is for */
	error = sbx__e2b_attach(impl, &t, id, 0, sig, &local);
	sbx__envd_target_dispose(&t);
	if (error == SBX_EGONE) {
		*out = SBX_RESUME_GONE;
		return 0;
	}
	if (error < 0) {
		sbx__e2b_pass_error(err, &local);
		return error;
	}
	*out = SBX_RESUMED;
	return 0;
}

int sbx__e2b_pause(sbx__e2b_provider *p, const char *id, bool gone_ok, uint64_t timeout_ms,
                   sbx_signal *sig, sbx_error *err)
{
	char path[256];
	sbx_e2b_reply reply;
	sbx_error local = {0};
	json_t *body;
	int error;

	if ((error = sbx__e2b_validate_sandbox_id(id, err)) < 0 ||
	    (error = id_path(path, sizeof(path), "/sandboxes/", id, "/pause", err)) < 0)
		return error;
	if (!(body = json_object()))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	error =
	    sbx__e2b_api_call(&reply, &p->api, "POST", path, NULL, body, timeout_ms, sig, &local);
	/* 409: already paused (or pausing) */
	if (error == SBX_EHTTP && (reply.status == 409 || (gone_ok && reply.not_found)))
		error = 0;
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	sbx__e2b_reply_dispose(&reply);
	json_decref(body);
	return error;
}

int sbx__e2b_reconnect_cold(sbx__e2b_provider *p, const char *id, uint64_t timeout_ms,
                            sbx_error *err)
{
	char path[256];
	sbx_e2b_reply reply;
	sbx_error local = {0};
	json_t *body;
	int error;

	if ((error = connect_path(path, sizeof(path), p, id, err)) < 0)
		return error;
	if (!(body = connect_body(p->timeout_seconds, true)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	error =
	    sbx__e2b_api_call(&reply, &p->api, "POST", path, NULL, body, timeout_ms, NULL, &local);
	if (error == SBX_EHTTP && strncmp(path, "/v2/", 4) == 0 && route_missing(&reply, &local)) {
		learn_legacy_routes(p, path);
		sbx__e2b_reply_dispose(&reply);
		memset(&local, 0, sizeof(local));
		if ((error = connect_path(path, sizeof(path), p, id, err)) == 0)
			error = sbx__e2b_api_call(&reply, &p->api, "POST", path, NULL, body,
			                          timeout_ms, NULL, &local);
	}
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	sbx__e2b_reply_dispose(&reply);
	json_decref(body);
	return error;
}

int sbx__e2b_suspend(void *impl, const char *id, sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if (sbx__e2b_validate_sandbox_id(id, NULL) == 0)
		sbx__e2b_attach_forget(impl, id);
	return sbx__e2b_pause(impl, id, true, 0, sig, err);
}

int sbx__e2b_destroy(void *impl, const char *id, sbx_signal *sig, sbx_error *err)
{
	int error;
	if ((error = sbx__e2b_aborted(sig, err)) < 0)
		return error;
	if (sbx__e2b_validate_sandbox_id(id, NULL) == 0)
		sbx__e2b_attach_forget(impl, id);
	return kill_sandbox(impl, id, sig, err);
}

void sbx__e2b_provider_free(void *impl)
{
	sbx__e2b_provider *p = impl;
	if (!p)
		return;
	while (p->attached) {
		sbx__e2b_attached *a = p->attached;
		p->attached = a->next;
		attached_free(a);
	}
	if (p->attach_ready) {
		pthread_cond_destroy(&p->attach_cv);
		pthread_mutex_destroy(&p->attach_mu);
	}
	sbx__e2b_api_dispose(&p->api);
	sbx__http_free(p->http);
	sbx__free(p->domain);
	sbx__free(p->template_id);
	sbx__free(p->envd_url);
	sbx__free(p);
}

int sbx__e2b_attach_init(sbx__e2b_provider *p, sbx_error *err)
{
	pthread_condattr_t ca;
	bool ok;

	if (pthread_condattr_init(&ca) != 0)
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a condition variable");
	ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
	     pthread_cond_init(&p->attach_cv, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (!ok)
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a condition variable");
	if (pthread_mutex_init(&p->attach_mu, NULL) != 0) {
		pthread_cond_destroy(&p->attach_cv);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a mutex");
	}
	p->attach_ready = true;
	return 0;
}
