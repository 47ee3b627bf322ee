/*
 * fake-e2b/control.c: E2B's control plane (e2b-protocol.md §1) over the
 * sandbox registry: create / connect / resume / list / get / kill / pause /
 * timeout / refreshes, v2 and legacy routes, E2B error bodies, the reaper
 * (§6 timeouts) and the egress mapping (§7). Sandboxes are made real by the
 * runtime (runtime.h); this file knows no namespaces and no envd framing.
 */
#define _GNU_SOURCE
#include "control.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"

#define FK_ID_LEN        21    /* "i" + 20 */
#define FK_MAX_TIMEOUT_S 86400 /* team max instance length: 24 h (Pro) */
#define FK_MAX_IMMUNE    64
#define FK_CLIENT_ID     "6532622b"
#define FK_ENVD_VERSION  "0.6.13"
#define FK_NS            1000000000LL

enum sb_state { SB_RUNNING, SB_PAUSED };

struct fk_sandbox {
	fk_sandbox *next; /* registry list */
	int refs;         /* under control lock */
	int deleted;
	char id[FK_ID_LEN + 1];
	char token[65];
	char *template_id;
	enum sb_state state;
	int64_t started_ns, end_ns, paused_ns;
	int auto_pause, auto_pause_memory, auto_resume;
	int paused_fs_only; /* last pause without memory: resume cold-boots */
	int secured;        /* envd requires the token (v2 always; legacy with secure:true) */
	int loopback_only;
	json_t *metadata;        /* object */
	json_t *network;         /* object or NULL */
	json_t *allow_internet;  /* true/false or NULL (absent) */
	pthread_mutex_t op_lock; /* serialises lifecycle changes */
	fk_watch *watches;
	uint32_t immune[FK_MAX_IMMUNE];
	size_t n_immune;
};

/* A pending Connect-Timeout-Ms kill of a process whose stream is gone. */
typedef struct kill_timer {
	struct kill_timer *next;
	char id[FK_ID_LEN + 1];
	fk_proc *proc;
	int64_t deadline_ms;
} kill_timer;

struct fk_control {
	fk_server *srv;
	kill_timer *timers; /* under lock */
	pthread_mutex_t lock;
	fk_sandbox *list;
	pthread_t reaper;
	pthread_cond_t reaper_cond;
	int reaper_started, stopping;
};

/* ---- registry -------------------------------------------------------------------------- */

const char *fk_sandbox_id(const fk_sandbox *sb)
{
	return sb->id;
}

const char *fk_sandbox_token(const fk_sandbox *sb)
{
	return sb->secured ? sb->token : NULL;
}

static void sandbox_free(fk_sandbox *sb)
{
	free(sb->template_id);
	json_decref(sb->metadata);
	json_decref(sb->network);
	json_decref(sb->allow_internet);
	pthread_mutex_destroy(&sb->op_lock);
	free(sb);
}

fk_sandbox *fk_control_acquire(fk_control *c, const char *id)
{
	pthread_mutex_lock(&c->lock);
	fk_sandbox *sb = c->list;
	while (sb && strcmp(sb->id, id) != 0)
		sb = sb->next;
	if (sb)
		sb->refs++;
	pthread_mutex_unlock(&c->lock);
	return sb;
}

void fk_sandbox_release(fk_control *c, fk_sandbox *sb)
{
	if (!sb)
		return;
	pthread_mutex_lock(&c->lock);
	int last = --sb->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (last)
		sandbox_free(sb);
}

static int auto_resume(fk_control *c, fk_sandbox *sb);

int fk_sandbox_running(fk_control *c, fk_sandbox *sb)
{
	pthread_mutex_lock(&c->lock);
	int ok = !sb->deleted && sb->state == SB_RUNNING;
	int resume = !ok && !sb->deleted && sb->auto_resume && !sb->paused_fs_only;
	pthread_mutex_unlock(&c->lock);
	if (resume) /* autoResume.enabled: traffic resumes a paused sandbox (§6) */
		ok = auto_resume(c, sb) == 0;
	return ok;
}

/* Break every stream of sb (under c->lock). */
static void break_watches(fk_sandbox *sb)
{
	for (fk_watch *w = sb->watches; w; w = w->next) {
		w->broken = 1;
		if (w->sub)
			fk_sub_wake(w->sub);
		pthread_cond_broadcast(&w->cond);
	}
}

int fk_sandbox_watch(fk_control *c, fk_sandbox *sb, fk_watch *w)
{
	pthread_mutex_lock(&c->lock);
	if (sb->deleted || sb->state != SB_RUNNING || c->stopping) {
		pthread_mutex_unlock(&c->lock);
		return -1;
	}
	w->prev = NULL;
	w->next = sb->watches;
	if (sb->watches)
		sb->watches->prev = w;
	sb->watches = w;
	w->linked = 1;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void fk_sandbox_unwatch(fk_control *c, fk_sandbox *sb, fk_watch *w)
{
	pthread_mutex_lock(&c->lock);
	if (w->linked) {
		if (w->prev)
			w->prev->next = w->next;
		else
			sb->watches = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->linked = 0;
	}
	pthread_mutex_unlock(&c->lock);
}

void fk_watch_set_sub(fk_control *c, fk_watch *w, fk_sub *sub)
{
	pthread_mutex_lock(&c->lock);
	w->sub = sub;
	pthread_mutex_unlock(&c->lock);
}

int fk_watch_broken(fk_control *c, fk_watch *w)
{
	pthread_mutex_lock(&c->lock);
	int b = w->broken;
	pthread_mutex_unlock(&c->lock);
	return b;
}

int fk_watch_sleep(fk_control *c, fk_watch *w, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->lock);
	if (!w->broken)
		pthread_cond_timedwait(&w->cond, &c->lock, &ts);
	int b = w->broken;
	pthread_mutex_unlock(&c->lock);
	return b;
}

void fk_sandbox_set_immune(fk_control *c, fk_sandbox *sb, uint32_t pid)
{
	pthread_mutex_lock(&c->lock);
	if (sb->n_immune < FK_MAX_IMMUNE)
		sb->immune[sb->n_immune++] = pid;
	pthread_mutex_unlock(&c->lock);
}

int fk_sandbox_is_immune(fk_control *c, fk_sandbox *sb, uint32_t pid)
{
	int hit = 0;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < sb->n_immune; i++)
		hit |= sb->immune[i] == pid;
	pthread_mutex_unlock(&c->lock);
	return hit;
}

/* ---- ids, tokens, times ------------------------------------------------------------------- */

static int new_id(char out[FK_ID_LEN + 1])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[FK_ID_LEN];
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	out[0] = 'i';
	for (int i = 1; i < FK_ID_LEN; i++)
		out[i] = alphabet[rnd[i] % 36];
	out[FK_ID_LEN] = '\0';
	return 0;
}

static void make_token(fk_server *srv, const char *id, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	HMAC(EVP_sha256(), srv->seed, sizeof(srv->seed), (const unsigned char *)id, strlen(id), mac,
	     &len);
	for (unsigned i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	out[64] = '\0';
}

static json_t *time_json(int64_t ns)
{
	char buf[48];
	fk_format_time(buf, sizeof(buf), ns);
	return json_string(buf);
}

/* ---- JSON shapes ------------------------------------------------------------------------- */

/* Sandbox (create/connect/resume reply), §1.3. Caller holds c->lock. */
static json_t *sandbox_json(fk_sandbox *sb, int with_token)
{
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:s}", "sandboxID", sb->id, "templateID", sb->template_id,
	              "clientID", FK_CLIENT_ID, "envdVersion", FK_ENVD_VERSION);
	if (j && with_token && sb->secured)
		json_object_set_new(j, "envdAccessToken", json_string(sb->token));
	return j;
}

/* ListedSandbox, §1.6. Caller holds c->lock. */
static json_t *listed_json(fk_sandbox *sb)
{
	int64_t end = sb->state == SB_PAUSED ? sb->paused_ns : sb->end_ns;
	json_t *j = json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:i,s:i,s:s,s:s,s:o}", "sandboxID", sb->id,
	                      "templateID", sb->template_id, "clientID", FK_CLIENT_ID, "startedAt",
	                      time_json(sb->started_ns), "endAt", time_json(end), "cpuCount", 2,
	                      "memoryMB", 512, "diskSizeMB", 1024, "state",
	                      sb->state == SB_RUNNING ? "running" : "paused", "envdVersion",
	                      FK_ENVD_VERSION, "metadata", json_deep_copy(sb->metadata));
	return j;
}

/* SandboxDetail, §1.7. Caller holds c->lock. */
static json_t *detail_json(fk_sandbox *sb)
{
	json_t *j = listed_json(sb);
	if (!j)
		return NULL;
	if (sb->secured)
		json_object_set_new(j, "envdAccessToken", json_string(sb->token));
	/* copies: replies are freed by other threads than the sandbox's (jansson refcounts) */
	json_object_set_new(j, "allowInternetAccess",
	                    sb->allow_internet ? json_deep_copy(sb->allow_internet) : json_null());
	if (sb->network) {
		json_t *n = json_deep_copy(sb->network);
		json_t *proxy = json_object_get(n, "egressProxy");
		if (json_is_object(proxy))
			json_object_del(proxy, "password");
		json_object_set_new(j, "network", n);
	}
	json_object_set_new(j, "lifecycle",
	                    json_pack("{s:b,s:s}", "autoResume", sb->auto_resume, "onTimeout",
	                              sb->auto_pause ? "pause" : "kill"));
	return j;
}

json_t *fk_control_dump(fk_control *c)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&c->lock);
	for (fk_sandbox *sb = c->list; sb; sb = sb->next) {
		json_t *j = detail_json(sb);
		json_object_del(j, "envdAccessToken");
		json_object_set_new(j, "autoPause", json_boolean(sb->auto_pause));
		json_object_set_new(j, "loopbackOnly", json_boolean(sb->loopback_only));
		json_object_set_new(j, "refs", json_integer(sb->refs));
		json_array_append_new(arr, j);
	}
	pthread_mutex_unlock(&c->lock);
	return arr;
}

/* ---- validation -------------------------------------------------------------------------- */

/* ShortID (§1.2): "<id>" or legacy "<id>-<clientID>"; 0 and the short id in out, or -1. */
static int short_id(const char *in, char *out, size_t cap)
{
	const char *dash = strchr(in, '-');
	size_t n = dash ? (size_t)(dash - in) : strlen(in);
	if (dash && strchr(dash + 1, '-'))
		return -1;
	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((in[i] >= 'a' && in[i] <= 'z') || (in[i] >= '0' && in[i] <= '9')))
			return -1;
	memcpy(out, in, n);
	out[n] = '\0';
	return 0;
}

static int is_ip_or_cidr(const char *s)
{
	char buf[64];
	unsigned char addr[16];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	int v4 = inet_pton(AF_INET, buf, addr) == 1,
	    v6 = !v4 && inet_pton(AF_INET6, buf, addr) == 1;
	if (!v4 && !v6)
		return 0;
	if (slash) {
		char *end;
		long bits = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || bits < 0 || bits > (v4 ? 32 : 128))
			return 0;
	}
	return 1;
}

static int has_string(json_t *arr, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) if (json_is_string(v) &&
	                                  strcmp(json_string_value(v), s) == 0) return 1;
	return 0;
}

/* §7 validateEgressRules; NULL when valid, else the 400 message. */
static const char *validate_network(json_t *net)
{
	if (!net || json_is_null(net))
		return NULL;
	if (!json_is_object(net))
		return "network must be an object";
	json_t *allow = json_object_get(net, "allowOut"), *deny = json_object_get(net, "denyOut");
	if ((allow && !json_is_array(allow)) || (deny && !json_is_array(deny)))
		return "network.allowOut and network.denyOut must be arrays";
	size_t i;
	json_t *v;
	int domains = 0;
	json_array_foreach(deny, i, v)
	{
		if (!json_is_string(v) || !is_ip_or_cidr(json_string_value(v)))
			return "network.denyOut entries must be IP addresses or CIDR blocks";
		if (strcmp(json_string_value(v), "0.0.0.0") == 0)
			return "invalid denied CIDR 0.0.0.0";
	}
	json_array_foreach(allow, i, v)
	{
		if (!json_is_string(v) || !*json_string_value(v))
			return "network.allowOut entries must be non-empty strings";
		if (!is_ip_or_cidr(json_string_value(v)))
			domains = 1;
	}
	if (domains && !has_string(deny, "0.0.0.0/0"))
		return "When specifying allowed domains in allow out, you must include "
		       "'ALL_TRAFFIC' in deny out (0.0.0.0/0)";
	return NULL;
}

/* Egress none (§7): no internet at all, so the runtime gives a loopback-only netns. */
static int egress_none(json_t *allow_internet, json_t *net)
{
	json_t *allow = json_object_get(net, "allowOut"), *deny = json_object_get(net, "denyOut");
	if (json_is_false(allow_internet))
		return json_array_size(allow) == 0;
	return has_string(deny, "0.0.0.0/0") && json_array_size(allow) == 0;
}

/* Timeout field: 0 ok (*out set), else the 400 message. */
static const char *timeout_field(json_t *body, const char *key, long dflt, int required, long *out)
{
	json_t *t = json_object_get(body, key);
	if (!t || json_is_null(t)) {
		if (required)
			return "validation error: timeout is required";
		*out = dflt;
		return NULL;
	}
	if (!json_is_integer(t))
		return "validation error: timeout must be an integer";
	json_int_t v = json_integer_value(t);
	if (v <= 0)
		return "Timeout must be greater than 0";
	if (v > FK_MAX_TIMEOUT_S)
		return "Timeout cannot be greater than 24 hours";
	*out = (long)v;
	return NULL;
}

/* ---- handlers ---------------------------------------------------------------------------- */

static enum MHD_Result not_found(fk_req *r, const char *id)
{
	return fk_reply_error(r, 404, "Sandbox \"%s\" doesn't exist or you don't have access to it",
	                      id);
}

static int check_string_map(json_t *m)
{
	const char *k;
	json_t *v;
	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return -1;
	json_object_foreach(m, k, v) if (!json_is_string(v)) return -1;
	return 0;
}

static int boot_box(fk_control *c, fk_sandbox *sb, json_t *env_vars, fk_err *err)
{
	size_t n = 3 + json_object_size(env_vars), i = 0;
	char **envs = calloc(n, sizeof(char *));
	if (!envs)
		return FK_ENOMEM;
	if (asprintf(&envs[i++], "E2B_SANDBOX=true") < 0 ||
	    asprintf(&envs[i++], "E2B_SANDBOX_ID=%s", sb->id) < 0 ||
	    asprintf(&envs[i++], "E2B_TEMPLATE_ID=%s", sb->template_id) < 0)
		envs[--i] = NULL;
	const char *k;
	json_t *v;
	json_object_foreach(env_vars, k, v)
	{
		if (i < n && asprintf(&envs[i], "%s=%s", k, json_string_value(v)) >= 0)
			i++;
	}
	fk_box_options opts = {.net_none = sb->loopback_only,
	                       .envs = (const char *const *)envs,
	                       .n_envs = i,
	                       .default_user = "sandbox"};
	int rc = fk_box_create(c->srv->rt, sb->id, &opts, err);
	for (size_t j = 0; j < i; j++)
		free(envs[j]);
	free(envs);
	return rc;
}

/* NewSandbox / NewSandboxV2 checks (§1.4, §7): NULL when valid, else the 400 message. */
static const char *create_validate(json_t *body, int v2, long *timeout)
{
	json_t *tpl = json_object_get(body, "templateID");
	json_t *ap = json_object_get(body, "autoPause"),
	       *apm = json_object_get(body, "autoPauseMemory");
	json_t *ar = json_object_get(body, "autoResume");
	json_t *aia = json_object_get(body, "allow_internet_access");
	const char *why;
	if (!json_is_string(tpl) || !*json_string_value(tpl))
		return "validation error: templateID is required";
	if ((why = timeout_field(body, "timeout", v2 ? 300 : 15, 0, timeout)))
		return why;
	if ((ap && !json_is_boolean(ap)) || (apm && !json_is_boolean(apm)) ||
	    (aia && !json_is_boolean(aia) && !json_is_null(aia)))
		return "validation error: autoPause, autoPauseMemory and allow_internet_access "
		       "must "
		       "be booleans";
	if (check_string_map(json_object_get(body, "metadata")) < 0 ||
	    check_string_map(json_object_get(body, "envVars")) < 0)
		return "validation error: metadata and envVars must map strings to strings";
	int auto_pause = json_is_true(ap), auto_pause_mem = apm ? json_is_true(apm) : 1;
	int auto_resume = json_is_object(ar) && json_is_true(json_object_get(ar, "enabled"));
	if (!auto_pause_mem && !auto_pause)
		return "autoPauseMemory=false requires autoPause=true";
	if (!auto_pause_mem && auto_resume)
		return "autoResume cannot be used with autoPauseMemory=false";
	return validate_network(json_object_get(body, "network"));
}

/* A new, not yet registered sandbox from a validated create body; NULL on OOM. */
static fk_sandbox *sandbox_from_body(fk_server *srv, json_t *body, int v2, long timeout)
{
	json_t *meta = json_object_get(body, "metadata"), *net = json_object_get(body, "network");
	json_t *aia = json_object_get(body, "allow_internet_access");
	json_t *apm = json_object_get(body, "autoPauseMemory"),
	       *ar = json_object_get(body, "autoResume");
	fk_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb || new_id(sb->id) < 0) {
		free(sb);
		return NULL;
	}
	pthread_mutex_init(&sb->op_lock, NULL);
	make_token(srv, sb->id, sb->token);
	/* legacy issues a token only with secure:true; v2 always (§1.4) */
	sb->secured = v2 || json_is_true(json_object_get(body, "secure"));
	sb->template_id = strdup(json_string_value(json_object_get(body, "templateID")));
	sb->metadata = json_is_object(meta) ? json_deep_copy(meta) : json_object();
	sb->network = json_is_object(net) ? json_deep_copy(net) : NULL;
	sb->allow_internet = json_is_boolean(aia) ? json_boolean(json_is_true(aia)) : NULL;
	sb->auto_pause = json_is_true(json_object_get(body, "autoPause"));
	sb->auto_pause_memory = apm ? json_is_true(apm) : 1;
	sb->auto_resume = json_is_object(ar) && json_is_true(json_object_get(ar, "enabled"));
	sb->loopback_only = egress_none(aia, net);
	sb->started_ns = fk_now_ns();
	sb->end_ns = sb->started_ns + (int64_t)timeout * FK_NS;
	sb->refs = 1;
	if (!sb->template_id || !sb->metadata) {
		sandbox_free(sb);
		return NULL;
	}
	return sb;
}

static enum MHD_Result create_sandbox(fk_req *r, int v2)
{
	fk_control *c = r->srv->control;
	json_t *body = fk_body_json(r, 0);
	long timeout = 0;
	const char *why = json_is_object(body)
	                      ? create_validate(body, v2, &timeout)
	                      : "validation error: request body must be a JSON object";
	if (why) {
		json_decref(body);
		return fk_reply_error(r, 400, "%s", why);
	}
	pthread_mutex_lock(&c->lock);
	int stopping = c->stopping;
	pthread_mutex_unlock(&c->lock);
	fk_sandbox *sb = stopping ? NULL : sandbox_from_body(r->srv, body, v2, timeout);
	if (!sb) {
		json_decref(body);
		return fk_reply_error(r, stopping ? 503 : 500, "cannot allocate a sandbox");
	}
	fk_err err = {0};
	json_t *envv = json_object_get(body, "envVars");
	int rc = boot_box(c, sb, json_is_object(envv) ? envv : NULL, &err);
	json_decref(body);
	if (rc < 0) {
		sandbox_free(sb);
		return fk_reply_error(r, 500, "cannot start sandbox: %s", err.message);
	}
	pthread_mutex_lock(&c->lock);
	sb->next = c->list;
	c->list = sb;
	json_t *reply = sandbox_json(sb, r->fault.kind != FK_FAULT_CONNECT_NO_TOKEN);
	pthread_mutex_unlock(&c->lock);
	return fk_reply_json(r, 201, reply);
}

/* Lifecycle steps shared by the handlers and the reaper. Each takes the sandbox's op_lock. */
enum { LC_OK = 0, LC_GONE = -1, LC_CONFLICT = -2, LC_FAILED = -3, LC_SKIPPED = -4 };

static int do_pause(fk_control *c, fk_sandbox *sb, int fs_only, int only_if_expired, fk_err *err)
{
	int rc = LC_OK;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&c->lock);
	if (sb->deleted)
		rc = LC_GONE;
	else if (sb->state == SB_PAUSED)
		rc = only_if_expired ? LC_SKIPPED : LC_CONFLICT;
	else if (only_if_expired && sb->end_ns > fk_now_ns())
		rc = LC_SKIPPED;
	if (rc == LC_OK) {
		sb->state = SB_PAUSED;
		sb->paused_ns = fk_now_ns();
		sb->paused_fs_only = fs_only;
		break_watches(sb); /* E2B's proxy drops a paused sandbox's streams (§6) */
	}
	pthread_mutex_unlock(&c->lock);
	if (rc == LC_OK && fk_box_freeze(c->srv->rt, sb->id, err) < 0)
		rc = LC_FAILED;
	pthread_mutex_unlock(&sb->op_lock);
	return rc;
}

static int do_delete(fk_control *c, fk_sandbox *sb, int only_if_expired)
{
	int rc = LC_OK;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&c->lock);
	if (sb->deleted)
		rc = LC_GONE;
	else if (only_if_expired && (sb->state != SB_RUNNING || sb->end_ns > fk_now_ns()))
		rc = LC_SKIPPED;
	if (rc == LC_OK) {
		sb->deleted = 1;
		for (fk_sandbox **pp = &c->list; *pp; pp = &(*pp)->next) {
			if (*pp == sb) {
				*pp = sb->next;
				break;
			}
		}
		break_watches(sb);
	}
	pthread_mutex_unlock(&c->lock);
	if (rc == LC_OK)
		fk_box_destroy(c->srv->rt, sb->id, NULL);
	pthread_mutex_unlock(&sb->op_lock);
	if (rc == LC_OK)
		fk_sandbox_release(c, sb); /* the registry's reference */
	return rc;
}

static int64_t capped_end(fk_sandbox *sb, int64_t want)
{
	int64_t max = sb->started_ns + (int64_t)FK_MAX_TIMEOUT_S * FK_NS;
	return want > max ? max : want;
}

/* Resume a paused sandbox for envd traffic (autoResume), with the v2 default timeout. */
static int auto_resume(fk_control *c, fk_sandbox *sb)
{
	int rc = -1;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&c->lock);
	int paused = !sb->deleted && sb->state == SB_PAUSED, running = !sb->deleted && !paused;
	pthread_mutex_unlock(&c->lock);
	if (running)
		rc = 0;
	else if (paused && fk_box_thaw(c->srv->rt, sb->id, NULL) == 0) {
		pthread_mutex_lock(&c->lock);
		sb->state = SB_RUNNING;
		sb->started_ns = fk_now_ns();
		sb->end_ns = capped_end(sb, sb->started_ns + 300 * FK_NS);
		pthread_mutex_unlock(&c->lock);
		rc = 0;
	}
	pthread_mutex_unlock(&sb->op_lock);
	return rc;
}

/* connect (v2 / legacy) and legacy resume (§1.5, §1.11). */
static enum MHD_Result connect_sandbox(fk_req *r, const char *id, int v2, int resume)
{
	fk_control *c = r->srv->control;
	json_t *body = fk_body_json(r, 1);
	long timeout = 0;
	const char *why = json_is_object(body) ? NULL : "validation error: body must be an object";
	if (!why)
		why = timeout_field(body, "timeout", resume ? 15 : 300, !v2 && !resume, &timeout);
	json_t *mem = json_object_get(body, "memory");
	if (!why && mem && !json_is_boolean(mem))
		why = "validation error: memory must be a boolean";
	int reboot = json_is_false(mem);
	json_decref(body);
	if (why)
		return fk_reply_error(r, 400, "%s", why);
	fk_sandbox *sb = fk_control_acquire(c, id);
	if (!sb)
		return not_found(r, id);
	enum MHD_Result ret;
	fk_err err = {0};
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&c->lock);
	int deleted = sb->deleted, paused = sb->state == SB_PAUSED;
	int64_t now = fk_now_ns();
	if (!deleted && !paused && !resume) {
		int64_t want = capped_end(sb, now + (int64_t)timeout * FK_NS);
		if (want > sb->end_ns)
			sb->end_ns = want; /* connect only extends */
	}
	pthread_mutex_unlock(&c->lock);
	if (deleted) {
		ret = not_found(r, id);
	} else if (!paused && resume) {
		ret = fk_reply_error(r, 409, "Sandbox %s is already running", id);
	} else if (!paused) {
		pthread_mutex_lock(&c->lock);
		json_t *j = sandbox_json(sb, r->fault.kind != FK_FAULT_CONNECT_NO_TOKEN);
		pthread_mutex_unlock(&c->lock);
		ret = fk_reply_json(r, 200, j);
	} else {
		int cold = reboot || sb->paused_fs_only;
		int rc = cold ? fk_box_reboot(r->srv->rt, sb->id, &err)
		              : fk_box_thaw(r->srv->rt, sb->id, &err);
		if (rc < 0) {
			ret = fk_reply_error(r, 500, "cannot resume sandbox: %s", err.message);
		} else {
			pthread_mutex_lock(&c->lock);
			sb->state = SB_RUNNING;
			sb->started_ns = fk_now_ns(); /* a new run starts at every resume (§6) */
			sb->end_ns = capped_end(sb, sb->started_ns + (int64_t)timeout * FK_NS);
			if (cold)
				sb->n_immune = 0;
			json_t *j = sandbox_json(sb, r->fault.kind != FK_FAULT_CONNECT_NO_TOKEN);
			pthread_mutex_unlock(&c->lock);
			ret = fk_reply_json(r, 201, j);
		}
	}
	pthread_mutex_unlock(&sb->op_lock);
	fk_sandbox_release(c, sb);
	return ret;
}

static enum MHD_Result pause_sandbox(fk_req *r, const char *id)
{
	fk_control *c = r->srv->control;
	json_t *body = fk_body_json(r, 1);
	json_t *mem = json_object_get(body, "memory");
	int bad = !json_is_object(body) || (mem && !json_is_boolean(mem));
	int fs_only = json_is_false(mem);
	json_decref(body);
	if (bad)
		return fk_reply_error(r, 400, "validation error: body must be {\"memory\"?: bool}");
	fk_sandbox *sb = fk_control_acquire(c, id);
	if (!sb)
		return not_found(r, id);
	fk_err err = {0};
	int rc = do_pause(c, sb, fs_only, 0, &err);
	fk_sandbox_release(c, sb);
	switch (rc) {
	case LC_OK:
		return fk_reply(r, 204, NULL, NULL, 0);
	case LC_CONFLICT:
		return fk_reply_error(r, 409,
		                      "Error pausing sandbox - sandbox '%s' is already paused", id);
	case LC_GONE:
		return not_found(r, id);
	default:
		return fk_reply_error(r, 500, "Error pausing sandbox: %s", err.message);
	}
}

static enum MHD_Result delete_sandbox(fk_req *r, const char *id)
{
	fk_control *c = r->srv->control;
	fk_sandbox *sb = fk_control_acquire(c, id);
	if (!sb)
		return not_found(r, id);
	int rc = do_delete(c, sb, 0);
	fk_sandbox_release(c, sb);
	if (rc == LC_GONE)
		return not_found(r, id);
	return fk_reply(r, 204, NULL, NULL, 0);
}

/* /timeout sets exactly (may shorten); /refreshes extends only (min 15 s) (§1.10). */
static enum MHD_Result timeout_sandbox(fk_req *r, const char *id, int refresh)
{
	fk_control *c = r->srv->control;
	json_t *body = fk_body_json(r, refresh);
	long secs = 0;
	const char *why = json_is_object(body) ? NULL : "validation error: body must be an object";
	if (!why && !refresh) {
		why = timeout_field(body, "timeout", 0, 1, &secs);
	} else if (!why) {
		json_t *d = json_object_get(body, "duration");
		if (d && (!json_is_integer(d) || json_integer_value(d) < 0 ||
		          json_integer_value(d) > 3600))
			why = "validation error: duration must be 0..3600";
		secs = d ? (long)json_integer_value(d) : 0;
		if (secs < 15)
			secs = 15;
	}
	json_decref(body);
	if (why)
		return fk_reply_error(r, 400, "%s", why);
	fk_sandbox *sb = fk_control_acquire(c, id);
	if (!sb)
		return not_found(r, id);
	pthread_mutex_lock(&c->lock);
	int ok = !sb->deleted && sb->state == SB_RUNNING;
	if (ok) {
		int64_t want = capped_end(sb, fk_now_ns() + (int64_t)secs * FK_NS);
		if (!refresh || want > sb->end_ns)
			sb->end_ns = want;
	}
	pthread_mutex_unlock(&c->lock);
	fk_sandbox_release(c, sb);
	if (!ok)
		return not_found(r, id);
	return fk_reply(r, 204, NULL, NULL, 0);
}

static enum MHD_Result get_sandbox(fk_req *r, const char *id)
{
	fk_control *c = r->srv->control;
	fk_sandbox *sb = fk_control_acquire(c, id);
	if (!sb)
		return not_found(r, id);
	pthread_mutex_lock(&c->lock);
	json_t *j = sb->deleted ? NULL : detail_json(sb);
	pthread_mutex_unlock(&c->lock);
	fk_sandbox_release(c, sb);
	if (!j)
		return not_found(r, id);
	return fk_reply_json(r, 200, j);
}

/* GET /sandboxes/{id}/metrics (§1.12): one constant sample; the fake measures nothing. */
static enum MHD_Result metrics_sandbox(fk_req *r, const char *id)
{
	fk_control *c = r->srv->control;
	fk_sandbox *sb = fk_control_acquire(c, id);
	if (!sb)
		return not_found(r, id);
	fk_sandbox_release(c, sb);
	int64_t now = fk_now_ns();
	json_t *m = json_pack("{s:I,s:o,s:i,s:f,s:I,s:I,s:I,s:I,s:I}", "timestampUnix",
	                      (json_int_t)(now / FK_NS), "timestamp", time_json(now), "cpuCount", 2,
	                      "cpuUsedPct", 0.0, "memUsed", (json_int_t)0, "memTotal",
	                      (json_int_t)512 * 1024 * 1024, "memCache", (json_int_t)0, "diskUsed",
	                      (json_int_t)0, "diskTotal", (json_int_t)1024 * 1024 * 1024);
	return fk_reply_json(r, 200, json_pack("[o]", m));
}

/* ---- list ------------------------------------------------------------------------------- */

/* metadata filter (§1.6): the query value (decoded once) is unescaped again as a whole, split
 * on '&' and '=', and each part unescaped a third time. New object, or NULL when malformed. */
static json_t *parse_metadata_filter(const char *raw)
{
	char *s = strdup(raw);
	json_t *out = json_object();
	if (!s || !out || fk_url_decode(s, 1) < 0)
		goto fail;
	for (char *save = NULL, *pair = strtok_r(s, "&", &save); pair;
	     pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		if (!eq)
			goto fail;
		*eq = '\0';
		if (fk_url_decode(pair, 1) < 0 || fk_url_decode(eq + 1, 1) < 0)
			goto fail;
		json_object_set_new(out, pair, json_string(eq + 1));
	}
	free(s);
	return out;
fail:
	free(s);
	json_decref(out);
	return NULL;
}

static int metadata_matches(json_t *filter, json_t *meta)
{
	const char *k;
	json_t *v;
	json_object_foreach(filter, k, v)
	{
		json_t *have = json_object_get(meta, k);
		if (!json_is_string(have) || strcmp(json_string_value(have), json_string_value(v)))
			return 0;
	}
	return 1;
}

typedef struct list_item {
	int64_t started;
	char id[FK_ID_LEN + 1];
	json_t *json;
} list_item;

static int item_cmp(const void *a, const void *b)
{
	const list_item *x = a, *y = b;
	if (x->started != y->started)
		return x->started > y->started ? -1 : 1; /* newest first */
	return strcmp(x->id, y->id);
}

/* nextToken = base64url("<RFC3339Nano>__<sandboxID>") of the page's last item. */
static char *make_cursor(const list_item *it)
{
	char plain[96], t[48];
	unsigned char enc[160];
	fk_format_time(t, sizeof(t), it->started);
	int n = snprintf(plain, sizeof(plain), "%s__%s", t, it->id);
	int m = EVP_EncodeBlock(enc, (const unsigned char *)plain, n);
	for (int i = 0; i < m; i++)
		enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
	while (m > 0 && enc[m - 1] == '=')
		m--;
	return strndup((const char *)enc, (size_t)m);
}

static int parse_cursor(const char *tok, int64_t *started, char id[FK_ID_LEN + 1])
{
	size_t n = strlen(tok), i;
	if (n == 0 || n > 120 || n % 4 == 1)
		return -1;
	char b64[128];
	unsigned char plain[128];
	for (i = 0; i < n; i++)
		b64[i] = tok[i] == '-' ? '+' : tok[i] == '_' ? '/' : tok[i];
	size_t pad = (4 - n % 4) % 4;
	for (size_t k = 0; k < pad; k++)
		b64[i++] = '=';
	b64[i] = '\0';
	int m = EVP_DecodeBlock(plain, (const unsigned char *)b64, (int)i);
	if (m < (int)pad)
		return -1;
	m -= (int)pad; /* EVP_DecodeBlock counts padding as zero bytes */
	plain[m] = '\0';
	char *sep = strstr((char *)plain, "__");
	if (!sep || strlen(sep + 2) != FK_ID_LEN)
		return -1;
	*sep = '\0';
	struct tm tm = {0};
	long frac = 0;
	char *rest = strptime((char *)plain, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest || sscanf(rest, ".%9ldZ", &frac) != 1)
		return -1;
	*started = (int64_t)timegm(&tm) * FK_NS + frac;
	memcpy(id, sep + 2, FK_ID_LEN + 1);
	return 0;
}

typedef struct list_query {
	json_t *filter; /* NULL = no metadata filter */
	int want_running, want_paused, limit, have_cursor;
	list_item cursor;
} list_query;

/* Query of GET /v2/sandboxes (§1.6); legacy GET /sandboxes takes only metadata. */
static const char *list_query_parse(fk_req *r, int v2, list_query *q)
{
	char *meta = fk_query(r, "metadata"), *state = v2 ? fk_query_joined(r, "state") : NULL;
	char *limit = v2 ? fk_query(r, "limit") : NULL,
	     *next = v2 ? fk_query(r, "nextToken") : NULL;
	const char *why = NULL;
	*q = (list_query){.want_running = 1, .want_paused = v2, .limit = 100};
	if (meta && !(q->filter = parse_metadata_filter(meta)))
		why = "Invalid metadata filter";
	if (!why && state) {
		q->want_running = q->want_paused = 0;
		char *save = NULL;
		for (char *s = strtok_r(state, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
			if (strcmp(s, "running") == 0)
				q->want_running = 1;
			else if (strcmp(s, "paused") == 0)
				q->want_paused = 1;
			else
				why = "validation error: state must be running or paused";
		}
	}
	if (!why && limit) {
		char *end;
		long l = strtol(limit, &end, 10);
		if (!*limit || *end || l < 1 || l > 100)
			why = "validation error: limit must be between 1 and 100";
		q->limit = (int)l;
	}
	if (!why && next && *next) {
		if (parse_cursor(next, &q->cursor.started, q->cursor.id) < 0)
			why = "Invalid next token";
		q->have_cursor = 1;
	}
	free(meta);
	free(state);
	free(limit);
	free(next);
	return why;
}

/* Matching sandboxes, newest first; NULL on OOM. Caller frees items and their json. */
static list_item *list_collect(fk_control *c, const list_query *q, size_t *n_out)
{
	size_t n = 0, cap = 16;
	list_item *items = calloc(cap, sizeof(*items));
	pthread_mutex_lock(&c->lock);
	for (fk_sandbox *sb = c->list; sb && items; sb = sb->next) {
		if (sb->deleted || !(sb->state == SB_RUNNING ? q->want_running : q->want_paused))
			continue;
		if (q->filter && !metadata_matches(q->filter, sb->metadata))
			continue;
		if (n == cap) {
			list_item *p = realloc(items, 2 * cap * sizeof(*items));
			if (!p)
				break;
			items = p;
			cap *= 2;
		}
		items[n].started = sb->started_ns;
		memcpy(items[n].id, sb->id, sizeof(items[n].id));
		items[n].json = listed_json(sb);
		n++;
	}
	pthread_mutex_unlock(&c->lock);
	if (items)
		qsort(items, n, sizeof(*items), item_cmp);
	*n_out = n;
	return items;
}

static enum MHD_Result list_sandboxes(fk_req *r, int v2)
{
	list_query q;
	size_t n = 0;
	const char *why = list_query_parse(r, v2, &q);
	list_item *items = why ? NULL : list_collect(r->srv->control, &q, &n);
	enum MHD_Result ret;
	if (why || !items) {
		json_decref(q.filter);
		free(items);
		return why ? fk_reply_error(r, 400, "%s", why)
		           : fk_reply_error(r, 500, "out of memory");
	}
	size_t first = 0;
	while (q.have_cursor && first < n && item_cmp(&items[first], &q.cursor) <= 0)
		first++; /* the page starts after the cursor's item */
	size_t last = v2 && n - first > (size_t)q.limit ? first + (size_t)q.limit : n;
	json_t *arr = json_array();
	for (size_t i = first; i < last; i++)
		json_array_append(arr, items[i].json);
	char *body = json_dumps(arr, JSON_COMPACT);
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    body ? strlen(body) : 2, body ? body : (char *)"[]", MHD_RESPMEM_MUST_COPY);
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		char *tok = last < n ? make_cursor(&items[last - 1]) : NULL;
		if (tok) /* only when more pages exist */
			MHD_add_response_header(resp, "X-Next-Token", tok);
		free(tok);
	}
	ret = fk_reply_response(r, 200, resp);
	free(body);
	json_decref(arr);
	for (size_t i = 0; i < n; i++)
		json_decref(items[i].json);
	free(items);
	json_decref(q.filter);
	return ret;
}

/* ---- routing ---------------------------------------------------------------------------- */

enum op {
	OP_NONE,
	OP_CREATE,
	OP_CREATE_LEGACY,
	OP_LIST,
	OP_LIST_LEGACY,
	OP_CONNECT,
	OP_CONNECT_LEGACY,
	OP_RESUME,
	OP_GET,
	OP_DELETE,
	OP_PAUSE,
	OP_TIMEOUT,
	OP_REFRESH,
	OP_METRICS,
	OP_WRONG_METHOD,
};

/* Match (method, path) to an operation; *id points into path (NUL-cut copy in idbuf). */
static enum op match_route(const char *method, const char *path, char *idbuf, size_t cap)
{
	char segs[5][128];
	int n = 0;
	const char *p = path;
	while (*p == '/')
		p++;
	while (*p && n < 5) {
		size_t len = strcspn(p, "/");
		if (len >= sizeof(segs[0]))
			return OP_NONE;
		memcpy(segs[n], p, len);
		segs[n++][len] = '\0';
		p += len;
		while (*p == '/')
			p++;
	}
	if (*p)
		return OP_NONE;
	int post = !strcmp(method, "POST"), get = !strcmp(method, "GET");
	int del = !strcmp(method, "DELETE");
	int v2 = n >= 2 && !strcmp(segs[0], "v2");
	int base = v2 ? 1 : 0;
	if (n <= base || strcmp(segs[base], "sandboxes") != 0)
		return OP_NONE;
	int rest = n - base - 1;
	if (rest == 0)
		return post  ? (v2 ? OP_CREATE : OP_CREATE_LEGACY)
		       : get ? (v2 ? OP_LIST : OP_LIST_LEGACY)
		             : OP_WRONG_METHOD;
	snprintf(idbuf, cap, "%s", segs[base + 1]);
	if (rest == 1 && !v2)
		return get ? OP_GET : del ? OP_DELETE : OP_WRONG_METHOD;
	if (rest != 2)
		return OP_NONE;
	const char *verb = segs[base + 2];
	enum op op = OP_NONE;
	if (!strcmp(verb, "connect"))
		op = v2 ? OP_CONNECT : OP_CONNECT_LEGACY;
	else if (!v2 && !strcmp(verb, "resume"))
		op = OP_RESUME;
	else if (!v2 && !strcmp(verb, "pause"))
		op = OP_PAUSE;
	else if (!v2 && !strcmp(verb, "timeout"))
		op = OP_TIMEOUT;
	else if (!v2 && !strcmp(verb, "refreshes"))
		op = OP_REFRESH;
	else if (!v2 && !strcmp(verb, "metrics"))
		return get ? OP_METRICS : OP_WRONG_METHOD;
	if (op == OP_NONE)
		return OP_NONE;
	return post ? op : OP_WRONG_METHOD;
}

static int api_key_ok(fk_req *r)
{
	const char *key = fk_header(r, "X-API-Key");
	if (!key)
		return 0;
	if (r->srv->api_key)
		return strcmp(key, r->srv->api_key) == 0;
	return strncmp(key, "e2b_", 4) == 0 && key[4] != '\0';
}

enum MHD_Result fk_control_handle(fk_req *r)
{
	char raw[128] = "", id[128] = "";
	enum op op = match_route(r->method, r->path, raw, sizeof(raw));
	if (op == OP_NONE)
		return fk_reply_error(r, 404, "validation error: no matching operation was found");
	if (op == OP_WRONG_METHOD)
		return fk_reply_error(r, 405, "validation error: method not allowed");
	if (!api_key_ok(r))
		return fk_reply_error(r, 401, "Invalid API key, it must start with 'e2b_'");
	if (*raw && short_id(raw, id, sizeof(id)) < 0)
		return fk_reply_error(r, 400, "Invalid sandbox ID");
	switch (op) {
	case OP_CREATE:
		return create_sandbox(r, 1);
	case OP_CREATE_LEGACY:
		return create_sandbox(r, 0);
	case OP_LIST:
		return list_sandboxes(r, 1);
	case OP_LIST_LEGACY:
		return list_sandboxes(r, 0);
	case OP_CONNECT:
		return connect_sandbox(r, id, 1, 0);
	case OP_CONNECT_LEGACY:
		return connect_sandbox(r, id, 0, 0);
	case OP_RESUME:
		return connect_sandbox(r, id, 0, 1);
	case OP_GET:
		return get_sandbox(r, id);
	case OP_DELETE:
		return delete_sandbox(r, id);
	case OP_PAUSE:
		return pause_sandbox(r, id);
	case OP_TIMEOUT:
		return timeout_sandbox(r, id, 0);
	case OP_REFRESH:
		return timeout_sandbox(r, id, 1);
	case OP_METRICS:
		return metrics_sandbox(r, id);
	default:
		return fk_reply_error(r, 404, "validation error: no matching operation was found");
	}
}

/* ---- reaper and lifetime ---------------------------------------------------------------- */

void fk_control_kill_at(fk_control *c, const char *id, fk_proc *proc, int64_t deadline_ms)
{
	kill_timer *t = calloc(1, sizeof(*t));
	if (!t)
		return;
	snprintf(t->id, sizeof(t->id), "%s", id);
	fk_proc_ref(proc);
	t->proc = proc;
	t->deadline_ms = deadline_ms;
	pthread_mutex_lock(&c->lock);
	t->next = c->timers;
	c->timers = t;
	pthread_mutex_unlock(&c->lock);
}

/* Fire the due kill timers (all of them when `all`, without killing: shutdown). */
static void run_timers(fk_control *c, int all)
{
	kill_timer *due = NULL;
	int64_t now = fk_mono_ms();
	pthread_mutex_lock(&c->lock);
	for (kill_timer **pp = &c->timers; *pp;) {
		kill_timer *t = *pp;
		if (all || t->deadline_ms <= now || fk_proc_ended(t->proc, NULL)) {
			*pp = t->next;
			t->next = due;
			due = t;
		} else {
			pp = &t->next;
		}
	}
	pthread_mutex_unlock(&c->lock);
	while (due) {
		kill_timer *n = due->next;
		if (!all && !fk_proc_ended(due->proc, NULL))
			fk_proc_signal(c->srv->rt, due->id, fk_proc_pid(due->proc), SIGKILL, NULL);
		fk_proc_unref(due->proc);
		free(due);
		due = n;
	}
}

/* A running sandbox past its end time is paused (autoPause) or deleted (§6). */
static void reap_once(fk_control *c)
{
	fk_sandbox *due[64];
	size_t n = 0;
	int64_t now = fk_now_ns();
	pthread_mutex_lock(&c->lock);
	for (fk_sandbox *sb = c->list; sb && n < 64; sb = sb->next) {
		if (!sb->deleted && sb->state == SB_RUNNING && sb->end_ns <= now) {
			sb->refs++;
			due[n++] = sb;
		}
	}
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		if (due[i]->auto_pause)
			do_pause(c, due[i], !due[i]->auto_pause_memory, 1, NULL);
		else
			do_delete(c, due[i], 1);
		fk_sandbox_release(c, due[i]);
	}
}

static void *reaper_main(void *arg)
{
	fk_control *c = arg;
	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->reaper_cond, &c->lock, &ts);
		if (c->stopping)
			break;
		pthread_mutex_unlock(&c->lock);
		reap_once(c);
		run_timers(c, 0);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int fk_control_new(fk_control **out, fk_server *srv)
{
	fk_control *c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->srv = srv;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->reaper_cond, NULL);
	if (pthread_create(&c->reaper, NULL, reaper_main, c) != 0) {
		pthread_cond_destroy(&c->reaper_cond);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return -1;
	}
	c->reaper_started = 1;
	*out = c;
	return 0;
}

void fk_control_shutdown(fk_control *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = 1;
	pthread_cond_broadcast(&c->reaper_cond);
	pthread_mutex_unlock(&c->lock);
	if (c->reaper_started) {
		pthread_join(c->reaper, NULL);
		c->reaper_started = 0;
	}
	run_timers(c, 1);
	for (;;) {
		pthread_mutex_lock(&c->lock);
		fk_sandbox *sb = c->list;
		if (sb)
			sb->refs++;
		pthread_mutex_unlock(&c->lock);
		if (!sb)
			break;
		do_delete(c, sb, 0);
		fk_sandbox_release(c, sb);
	}
}

void fk_control_free(fk_control *c)
{
	if (!c)
		return;
	fk_control_shutdown(c);
	pthread_cond_destroy(&c->reaper_cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
