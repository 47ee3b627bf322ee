/*
 * e2b/provider.c: the sandbox@1 contract on E2B, method by method as docs/contract.md
 * "Methods" states it.
 *
 * Lifecycle (create, resume, suspend, destroy, set_timeout) lives here;
 * attach() and the attach cache in provider_attach.c, the named lists and
 * destroy_by_name in provider_list.c; running commands in provider_run.c (one command's run, the
 * kill path, the reboot fallback), provider_exec.c (exec), provider_fileop.c (the file operations
 * built on in-sandbox scripts) and provider_kill.c (kill_all, kill_tagged). Shared arguments
 * (signal, tags, paths, env keys) were already checked by contract/provider.c; the E2B-specific
 * ones (name, id, limits) are checked here, before any request.
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

#define NAMED_STACK (256 * 1024) /* the same-name list's thread */

static const char OPEN_EGRESS_REFUSED[] =
    "Sandbox egress \"open\" (sandbox.limits.egress) is refused: the sandbox-e2b plugin setting "
    "allowOpenEgress is false. Set extensionConfig.\"sandbox-e2b\".allowOpenEgress to true "
    "(trusted environments only), or set sandbox.limits.egress to \"allowlist\" or \"none\".";

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
	j->error = sbx__e2b_collect_named(j->p, j->name, j->ids, j->sig, &j->err);
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
	if (error == SBX_EHTTP && v2 && sbx__e2b_route_missing(reply, &local)) {
		sbx__e2b_learn_legacy_routes(p, "/v2/sandboxes");
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
		if ((error = sbx__e2b_collect_named(p, name, ids, sig, &e)) == 0 &&
		    (error = sbx__e2b_kill_all_of(p, ids, NULL, sig, &e)) == 0)
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
 * The seed lists and destroys same-name sandboxes, then creates (docs/contract.md
 * "Lifecycle", create). Here the list runs beside the create (one round trip less: README.md
 * "Performance"); what it finds is destroyed afterwards, except the new sandbox itself. So every
 * sandbox that had the name before create() was called is gone when it returns, as in the seed;
 * they only overlap for those kills. A create refused for the concurrency limit (429) is sent again
 * once the old ones are gone; a failed list or kill fails the create and takes back the sandbox
 * made meanwhile. On 0 `reply` holds the create's answer and *sent when it was sent.
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
	if (!threaded) /* no thread: the seed's order, list and destroy before the create */
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
		if ((kerror = sbx__e2b_kill_all_of(
		         p, job.ids, json_is_string(sid) ? json_string_value(sid) : NULL, sig,
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
			(void)sbx__e2b_kill_sandbox(p, json_string_value(sid), NULL, NULL);
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
	if ((error = sbx__e2b_server_sandbox_id(json_string_value(sid), "E2B create sandbox",
	                                        p->api.api_key, NULL, err)) < 0)
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
	    (error = sbx__e2b_id_path(path, sizeof(path), "/sandboxes/", id, "/timeout", err)) < 0)
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
	    (error = sbx__e2b_id_path(path, sizeof(path), "/sandboxes/", id, "/pause", err)) < 0)
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

	if ((error = sbx__e2b_connect_path(path, sizeof(path), p, id, err)) < 0)
		return error;
	if (!(body = sbx__e2b_connect_body(p->timeout_seconds, true)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	error =
	    sbx__e2b_api_call(&reply, &p->api, "POST", path, NULL, body, timeout_ms, NULL, &local);
	if (error == SBX_EHTTP && strncmp(path, "/v2/", 4) == 0 &&
	    sbx__e2b_route_missing(&reply, &local)) {
		sbx__e2b_learn_legacy_routes(p, path);
		sbx__e2b_reply_dispose(&reply);
		memset(&local, 0, sizeof(local));
		if ((error = sbx__e2b_connect_path(path, sizeof(path), p, id, err)) == 0)
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
	return sbx__e2b_kill_sandbox(impl, id, sig, err);
}

void sbx__e2b_provider_free(void *impl)
{
	sbx__e2b_provider *p = impl;
	if (!p)
		return;
	while (p->attached) {
		sbx__e2b_attached *a = p->attached;
		p->attached = a->next;
		sbx__e2b_attached_free(a);
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
