/*
 * e2b/provider_attach.c: attach() and the attach cache (docs/contract.md "Lifecycle"):
 * connect a sandbox, read its envd target from the answer, and skip the connect while
 * the last one still covers the caller's minimum; and sbx__e2b_with_attach(), the one
 * attach-and-retry every call that needs envd goes through (docs/exec.md "How a command
 * runs": connect and start again when envd answers that the sandbox is not running).
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

#define CONNECT_CONFLICT_RETRIES 5    /* CONNECT_CONFLICT_RETRIES */
#define CONNECT_CONFLICT_WAIT_MS 500  /* CONNECT_CONFLICT_WAIT_MS */
#define MAX_TOKEN_BYTES          1024 /* an envdAccessToken longer than this is not E2B's */

/* "/<prefix>/<id><suffix>"; ids are validated, so encodeURIComponent changes nothing. */
int sbx__e2b_id_path(char *out, size_t outlen, const char *prefix, const char *id,
                     const char *suffix, sbx_error *err)
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
int sbx__e2b_server_sandbox_id(const char *sid, const char *what, const char *secret1,
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
	if ((error = sbx__e2b_server_sandbox_id(
	         sid, "E2B connect", p->api.api_key,
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

json_t *sbx__e2b_connect_body(int64_t timeout, bool reboot)
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
bool sbx__e2b_route_missing(const sbx_e2b_reply *r, const sbx_error *e)
{
	return (r->status == 400 || r->status == 404 || r->status == 405) &&
	       (strstr(e->message, "no matching operation") ||
	        strstr(e->message, "method not allowed"));
}

/* From now on this provider uses the legacy routes (logged once per provider). */
void sbx__e2b_learn_legacy_routes(sbx__e2b_provider *p, const char *route)
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
int sbx__e2b_connect_path(char *out, size_t outlen, sbx__e2b_provider *p, const char *id,
                          sbx_error *err)
{
	return sbx__e2b_id_path(out, outlen,
	                        atomic_load(&p->legacy_routes) ? "/sandboxes/" : "/v2/sandboxes/",
	                        id, "/connect", err);
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
	    (error = sbx__e2b_connect_path(path, sizeof(path), p, id, err)) < 0)
		return error;
	if ((uint64_t)timeout < min_seconds)
		timeout = min_seconds > SBX_MAX_TIMEOUT_SECONDS ? SBX_MAX_TIMEOUT_SECONDS
		                                                : (int64_t)min_seconds;
	if (timeout > SBX_MAX_TIMEOUT_SECONDS)
		timeout = SBX_MAX_TIMEOUT_SECONDS;
	if (!(body = sbx__e2b_connect_body(timeout, false)))
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
		    sbx__e2b_route_missing(&reply, &local)) {
			/* not "gone": this API only has the legacy route; once per provider */
			sbx__e2b_learn_legacy_routes(p, path);
			sbx__e2b_reply_dispose(&reply);
			if ((error = sbx__e2b_connect_path(path, sizeof(path), p, id, err)) < 0)
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

void sbx__e2b_attached_free(sbx__e2b_attached *a)
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
			sbx__e2b_attached_free(a);
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

int sbx__e2b_exec_helper_known(sbx__e2b_provider *p, const char *id)
{
	sbx__e2b_attached *a;
	int v = 0;

	pthread_mutex_lock(&p->attach_mu);
	if ((a = attached_get(p, id, false)))
		v = a->exec_helper;
	pthread_mutex_unlock(&p->attach_mu);
	return v;
}

void sbx__e2b_exec_helper_learnt(sbx__e2b_provider *p, const char *id, int there)
{
	sbx__e2b_attached *a;

	pthread_mutex_lock(&p->attach_mu);
	if ((a = attached_get(p, id, true)))
		a->exec_helper = (signed char)(there > 0 ? 1 : there < 0 ? -1 : 0);
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
	need_ms =
	    (min_seconds > SBX_MAX_TIMEOUT_SECONDS ? SBX_MAX_TIMEOUT_SECONDS : min_seconds) * 1000;
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

/*
 * envd refused the request because the sandbox is not running: E2B's proxy
 * answers 502 with its own JSON body {"code":502,"message":"The sandbox was
 * not found",...} for a paused or missing sandbox, so no process started and
 * no byte was written. A 502 with any other body comes from a gateway in
 * front of E2B, which may have passed the request on: not this case (envd
 * Start is never sent twice, docs/reliability.md).
 */
bool sbx__e2b_not_running(int error, const sbx_error *e)
{
	return error == SBX_EHTTP && e->http_status == 502 && strcmp(e->e2b_code, "502") == 0;
}

int sbx__e2b_with_attach(sbx__e2b_provider *p, sbx_envd_target *t, const char *id,
                         uint64_t min_seconds, const sbx__e2b_step *step, sbx_signal *sig,
                         sbx_error *local, sbx_error *err)
{
	bool cached = false, retried = false;
	int error;

	for (;;) {
		memset(local, 0, sizeof(*local));
		if ((error = sbx__e2b_attach_cached(p, t, id, min_seconds, &cached, sig, err)) < 0)
			return error;
		error = step->run(p, t, step->ctx, local);
		if (!cached || retried || !sbx__e2b_not_running(error, local) ||
		    (step->again && !step->again(step->ctx)))
			return error;
		retried = true; /* paused or gone behind our back: connect (resume) and go again */
		sbx__e2b_attach_forget(p, id);
		sbx__envd_target_dispose(t);
		if (step->reset)
			step->reset(step->ctx);
	}
}
