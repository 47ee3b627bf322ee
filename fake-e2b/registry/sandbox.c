/*
 * fake-e2b/registry/sandbox.c: the sandbox table, references, stream watches,
 * immune pids and the lifecycle steps. See registry.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "clock.h"
#include "dirwatch.h"
#include "go_status.h"
#include "registry_int.h"
#include "template.h"

/* ---- the table ----------------------------------------------------------------------------- */

/* The runtime's end hook (fk_rt_set_proc_end_hook): envd's `process_end` line (infra envd
 * services/process/handler Wait: the EndEvent as `process_result`, an object, so not among the
 * entry's fields; the bytes of output), after the OOM kills its end shows. */
static void proc_ended(void *ctx, const char *box_id, const fk_proc_end *end)
{
	fk_registry *g = ctx;
	fk_sandbox *sb = fk_registry_acquire(g, box_id);
	if (!sb)
		return; /* a build's box, or a sandbox being deleted: E2B logs no end then */
	if (end->oom_known)
		fk_sandbox_note_oom(g, sb, end->oom_kills);
	char status[96];
	int code;
	fk_go_process_status(end->wait_status, status, sizeof(status), &code);
	/* the EndEvent's Go JSON (protobuf struct tags, omitempty): error is cmd.Wait's */
	json_t *result = json_object();
	if (result && code)
		json_object_set_new(result, "exit_code", json_integer(code));
	if (result && WIFEXITED(end->wait_status))
		json_object_set_new(result, "exited", json_true());
	if (result)
		json_object_set_new(result, "status", json_string(status));
	if (result && code)
		json_object_set_new(result, "error", json_string(status));
	json_t *fields =
	    result
	        ? json_pack("{s:s,s:o,s:I,s:I,s:I}", "event_type", "process_end", "process_result",
	                    result, "stdout_bytes", (json_int_t)end->stdout_bytes, "stderr_bytes",
	                    (json_int_t)end->stderr_bytes, "pty_bytes", (json_int_t)end->pty_bytes)
	        : NULL;
	if (fields)
		fk_sandbox_log(g, sb, FK_SBLOG_ENVD, FK_SBLOG_INFO, fields,
		               "Process with pid %u ended", (unsigned)end->pid);
	fk_sandbox_release(g, sb);
}

static void logs_hook(fk_registry *g, int on)
{
	fk_rt_set_proc_end_hook(g->rt, on ? proc_ended : NULL, on ? g : NULL);
}

int fk_registry_new(fk_registry **out, fk_rt *rt, const unsigned char seed[32])
{
	fk_registry *g = calloc(1, sizeof(*g));
	if (!g)
		return -1;
	g->rt = rt;
	memcpy(g->seed, seed, sizeof(g->seed));
	pthread_mutex_init(&g->lock, NULL);
	logs_hook(g, 1); /* envd's process ends into the sandboxes' logs */
	*out = g;
	return 0;
}

static void break_watches(fk_sandbox *sb);

/* Shutdown of a kept registry: sb recorded as it is and its box left running (live restore: the
 * next server adopts it); without live restore, recorded paused with its files (a running one
 * as autoPause without memory would leave it) and its box closed (processes end, files stay).
 * Out of the table but not deleted. */
static void keep_one(fk_registry *g, fk_sandbox *sb)
{
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&g->lock);
	int gone = sb->deleted, was_running = sb->state == FK_SB_RUNNING;
	int live = fk_rt_live(g->rt);
	if (!gone) {
		/* live restore: the box runs on as it is, for the next server to adopt */
		if (sb->state == FK_SB_RUNNING && !live) {
			sb->state = FK_SB_PAUSED;
			sb->paused_ns = fk_now_ns();
		}
		if (!live)
			sb->paused_fs_only = 1;
		break_watches(sb);
	}
	pthread_mutex_unlock(&g->lock);
	if (!gone) {
		if (was_running && !live)
			fk_sandbox_log_stop(g, sb, NULL); /* paused as it is kept, in its record */
		fk__registry_persist(g, sb);
		if (!live)
			fk_box_close(g->rt, sb->id, NULL);
		pthread_mutex_lock(&g->lock);
		sb->deleted = 1; /* out of this server's table; its record stays */
		for (fk_sandbox **pp = &g->list; *pp; pp = &(*pp)->next) {
			if (*pp == sb) {
				*pp = sb->next;
				break;
			}
		}
		pthread_mutex_unlock(&g->lock);
	}
	pthread_mutex_unlock(&sb->op_lock);
	if (!gone)
		fk_sandbox_release(g, sb); /* the registry's reference */
}

void fk_registry_shutdown(fk_registry *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_mutex_unlock(&g->lock);
	for (;;) {
		pthread_mutex_lock(&g->lock);
		fk_sandbox *sb = g->list;
		if (sb)
			sb->refs++;
		pthread_mutex_unlock(&g->lock);
		if (!sb)
			break;
		if (g->state)
			keep_one(g, sb);
		else
			fk_registry_delete(g, sb, 0);
		fk_sandbox_release(g, sb);
	}
}

void fk_registry_free(fk_registry *g)
{
	if (!g)
		return;
	fk_registry_shutdown(g);
	logs_hook(g, 0);
	fk__sandbox_logs_forget_all(g);
	while (g->timers) { /* left by a reaper that never ran */
		fk_kill_timer *t = g->timers;
		g->timers = t->next;
		fk_proc_unref(t->proc);
		free(t);
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void fk_registry_foreach(fk_registry *g, void (*fn)(fk_sandbox *sb, void *ud), void *ud)
{
	pthread_mutex_lock(&g->lock);
	for (fk_sandbox *sb = g->list; sb; sb = sb->next)
		if (!sb->deleted)
			fn(sb, ud);
	pthread_mutex_unlock(&g->lock);
}

const char *fk_sandbox_token(const fk_sandbox *sb)
{
	return sb->secured ? sb->token : NULL;
}

void fk_sandbox_discard(fk_sandbox *sb)
{
	if (!sb)
		return;
	free(sb->template_id);
	free(sb->alias);
	json_decref(sb->metadata);
	json_decref(sb->network);
	json_decref(sb->allow_internet);
	json_decref(sb->env_vars);
	json_decref(sb->box);
	free(sb->metrics);
	json_decref(sb->logs);
	while (sb->pwatches) { /* one never deleted (a shutdown's, a failed create's) */
		fk_pwatch *pw = sb->pwatches;
		sb->pwatches = pw->next;
		fk_dirwatch_free(pw->dw);
		free(pw->user);
		free(pw);
	}
	pthread_mutex_destroy(&sb->op_lock);
	pthread_mutex_destroy(&sb->rec_lock);
	free(sb);
}

fk_sandbox *fk_registry_acquire(fk_registry *g, const char *id)
{
	pthread_mutex_lock(&g->lock);
	fk_sandbox *sb = g->list;
	while (sb && strcmp(sb->id, id) != 0)
		sb = sb->next;
	if (sb)
		sb->refs++;
	pthread_mutex_unlock(&g->lock);
	return sb;
}

fk_sandbox *fk_sandbox_ref(fk_registry *g, fk_sandbox *sb)
{
	pthread_mutex_lock(&g->lock);
	sb->refs++;
	pthread_mutex_unlock(&g->lock);
	return sb;
}

void fk_sandbox_release(fk_registry *g, fk_sandbox *sb)
{
	if (!sb)
		return;
	pthread_mutex_lock(&g->lock);
	int last = --sb->refs == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		fk_sandbox_discard(sb);
}

/* ---- ids and tokens ------------------------------------------------------------------------ */

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

/* hex(HMAC-SHA256(seed, prefix + id)) */
static void make_token(const unsigned char seed[32], const char *prefix, const char *id,
                       char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	char msg[128];
	unsigned len = 0;
	int n = snprintf(msg, sizeof(msg), "%s%s", prefix, id);
	HMAC(EVP_sha256(), seed, 32, (const unsigned char *)msg, (size_t)n, mac, &len);
	for (unsigned i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	out[64] = '\0';
}

fk_sandbox *fk_sandbox_new(fk_registry *g)
{
	fk_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb || new_id(sb->id) < 0) {
		free(sb);
		return NULL;
	}
	pthread_mutex_init(&sb->op_lock, NULL);
	pthread_mutex_init(&sb->rec_lock, NULL);
	make_token(g->seed, "", sb->id, sb->token);
	make_token(g->seed, "traffic:", sb->id, sb->traffic_token);
	sb->refs = 1;
	return sb;
}

/* The strings of JSON array `arr` (borrowed; caller frees the array only). */
static const char **strings_of(json_t *arr, size_t *n)
{
	*n = 0;
	size_t cap = json_is_array(arr) ? json_array_size(arr) : 0;
	const char **v = cap ? calloc(cap, sizeof(char *)) : NULL;
	for (size_t i = 0; v && i < cap; i++)
		if (json_is_string(json_array_get(arr, i)))
			v[(*n)++] = json_string_value(json_array_get(arr, i));
	return v;
}

/* The runtime's egress lists from a sandbox's `network` and allow_internet_access (docs/protocol.md
 * "Egress": allow_internet_access false denies 0.0.0.0/0 whatever denyOut says). Strings borrowed
 * from the JSON; egress_lists_free frees the arrays. */
typedef struct egress_lists {
	const char **allow, **deny_own;
	const char *const *deny;
	size_t n_allow, n_deny;
} egress_lists;

static void egress_lists_of(json_t *net, json_t *allow_internet, egress_lists *l)
{
	static const char *const deny_all[] = {"0.0.0.0/0"};
	l->allow = strings_of(json_object_get(net, "allowOut"), &l->n_allow);
	l->deny_own = strings_of(json_object_get(net, "denyOut"), &l->n_deny);
	l->deny = l->deny_own;
	if (json_is_false(allow_internet)) {
		l->deny = deny_all;
		l->n_deny = 1;
	}
}

static void egress_lists_free(egress_lists *l)
{
	free(l->allow);
	free(l->deny_own);
}

/* Nothing out: a deny-all rule and nothing allowed (what egress none is). */
static int egress_lists_none(const egress_lists *l)
{
	int deny_all = 0;
	for (size_t i = 0; i < l->n_deny; i++)
		deny_all = deny_all || !strcmp(l->deny[i], "0.0.0.0/0");
	return deny_all && l->n_allow == 0;
}

/* What a box boots with, as its record keeps it (fk__registry_restore_box reads it back). */
static json_t *box_json(const fk_box_options *o)
{
	json_t *envs = json_array();
	for (size_t i = 0; envs && i < o->n_envs; i++)
		if (json_array_append_new(envs, json_string(o->envs[i])) < 0) {
			json_decref(envs);
			return NULL;
		}
	json_t *j = json_pack("{s:o,s:s?,s:s?,s:s?}", "envs", envs, "user", o->default_user,
	                      "template", o->template_id, "workdir", o->workdir);
	return j;
}

int fk_registry_boot(fk_registry *g, fk_sandbox *sb, const fk_tboot *boot, const char *const *extra,
                     size_t n_extra, fk_err *err)
{
	size_t n_tpl = boot ? boot->n_envs : 0;
	size_t n = n_tpl + 3 + n_extra, i = 0;
	char **envs = calloc(n, sizeof(char *));
	if (!envs)
		return FK_ENOMEM;
	for (size_t k = 0; k < n_tpl; k++)
		if ((envs[i] = strdup(boot->envs[k])))
			i++;
	if (asprintf(&envs[i++], "E2B_SANDBOX=true") < 0 ||
	    asprintf(&envs[i++], "E2B_SANDBOX_ID=%s", sb->id) < 0 ||
	    asprintf(&envs[i++], "E2B_TEMPLATE_ID=%s", sb->template_id) < 0)
		envs[--i] = NULL;
	for (size_t k = 0; k < n_extra && i < n; k++)
		if ((envs[i] = strdup(extra[k])))
			i++;
	const fk_template *t = fk_template_find(boot ? boot->base : sb->template_id);
	egress_lists el;
	egress_lists_of(sb->network, sb->allow_internet, &el);
	fk_box_options opts = {.net_none = sb->loopback_only,
	                       .envs = (const char *const *)envs,
	                       .n_envs = i,
	                       .default_user = boot ? boot->user
	                                       : t  ? t->user
	                                            : NULL,
	                       .template_id = boot ? boot->base : sb->template_id,
	                       .layer_dir = boot ? boot->layer : NULL,
	                       .workdir = boot ? boot->workdir : NULL,
	                       .allow_out = el.allow,
	                       .n_allow_out = el.n_allow,
	                       .deny_out = el.deny,
	                       .n_deny_out = el.n_deny};
	/* E2B's sandbox gets its template build's vcpu and ram_mb */
	sb->cpu_count = boot && boot->cpu_count ? boot->cpu_count : FK_BOX_DEFAULT_CPUS;
	sb->memory_mb = boot && boot->memory_mb ? boot->memory_mb : FK_BOX_DEFAULT_MEMORY_MB;
	opts.cpu_count = sb->cpu_count;
	opts.memory_mb = sb->memory_mb;
	free(sb->alias);
	sb->alias = strdup(boot && boot->alias ? boot->alias : "");
	sb->disk_mb = fk_rt_default_disk_mb(g->rt);
	json_decref(sb->box);
	sb->box = box_json(&opts);
	int rc = sb->alias && sb->box ? fk_box_create(g->rt, sb->id, &opts, err) : FK_ENOMEM;
	egress_lists_free(&el);
	for (size_t j = 0; j < i; j++)
		free(envs[j]);
	free(envs);
	if (rc == 0 && boot && boot->start_cmd) {
		rc = fk_tboot_start(g->rt, sb->id, boot, err);
		if (rc < 0)
			fk_box_destroy(g->rt, sb->id, NULL);
	}
	return rc;
}

int fk__registry_restore_box(fk_registry *g, fk_sandbox *sb, fk_err *err)
{
	json_t *box = sb->box, *envs = json_object_get(box, "envs");
	size_t n = json_array_size(envs), k = 0;
	const char **v = calloc(n ? n : 1, sizeof(char *));
	if (!v)
		return FK_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (json_is_string(json_array_get(envs, i)))
			v[k++] = json_string_value(json_array_get(envs, i));
	egress_lists el;
	egress_lists_of(sb->network, sb->allow_internet, &el);
	fk_box_options opts = {.net_none = sb->loopback_only,
	                       .envs = v,
	                       .n_envs = k,
	                       .default_user = json_string_value(json_object_get(box, "user")),
	                       .template_id = json_string_value(json_object_get(box, "template")),
	                       .workdir = json_string_value(json_object_get(box, "workdir")),
	                       .allow_out = el.allow,
	                       .n_allow_out = el.n_allow,
	                       .deny_out = el.deny,
	                       .n_deny_out = el.n_deny,
	                       .cpu_count = sb->cpu_count,
	                       .memory_mb = sb->memory_mb,
	                       .disk_mb = sb->disk_mb};
	int rc = fk_box_restore(g->rt, sb->id, &opts, err);
	egress_lists_free(&el);
	free(v);
	return rc;
}

void fk_registry_add(fk_registry *g, fk_sandbox *sb)
{
	fk__registry_persist(g, sb); /* before anyone else can see (and change) it */
	pthread_mutex_lock(&g->lock);
	sb->next = g->list;
	g->list = sb;
	pthread_mutex_unlock(&g->lock);
}

/* ---- watches ------------------------------------------------------------------------------- */

/* Break every stream of sb (under g->lock). */
static void break_watches(fk_sandbox *sb)
{
	for (fk_watch *w = sb->watches; w; w = w->next) {
		w->broken = 1;
		if (w->sub)
			fk_sub_wake(w->sub);
		pthread_cond_broadcast(&w->cond);
	}
}

int fk_sandbox_watch(fk_registry *g, fk_sandbox *sb, fk_watch *w)
{
	pthread_mutex_lock(&g->lock);
	if (sb->deleted || sb->state != FK_SB_RUNNING || g->stopping) {
		pthread_mutex_unlock(&g->lock);
		return -1;
	}
	w->prev = NULL;
	w->next = sb->watches;
	if (sb->watches)
		sb->watches->prev = w;
	sb->watches = w;
	w->linked = 1;
	pthread_mutex_unlock(&g->lock);
	return 0;
}

void fk_sandbox_unwatch(fk_registry *g, fk_sandbox *sb, fk_watch *w)
{
	pthread_mutex_lock(&g->lock);
	if (w->linked) {
		if (w->prev)
			w->prev->next = w->next;
		else
			sb->watches = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->linked = 0;
	}
	pthread_mutex_unlock(&g->lock);
}

void fk_watch_set_sub(fk_registry *g, fk_watch *w, fk_sub *sub)
{
	pthread_mutex_lock(&g->lock);
	w->sub = sub;
	pthread_mutex_unlock(&g->lock);
}

int fk_watch_broken(fk_registry *g, fk_watch *w)
{
	pthread_mutex_lock(&g->lock);
	int b = w->broken;
	pthread_mutex_unlock(&g->lock);
	return b;
}

int fk_watch_sleep(fk_registry *g, fk_watch *w, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&g->lock);
	if (!w->broken)
		pthread_cond_timedwait(&w->cond, &g->lock, &ts);
	int b = w->broken;
	pthread_mutex_unlock(&g->lock);
	return b;
}

void fk_sandbox_set_immune(fk_registry *g, fk_sandbox *sb, uint32_t pid)
{
	pthread_mutex_lock(&g->lock);
	if (sb->n_immune < FK_MAX_IMMUNE)
		sb->immune[sb->n_immune++] = pid;
	pthread_mutex_unlock(&g->lock);
}

int fk_sandbox_is_immune(fk_registry *g, fk_sandbox *sb, uint32_t pid)
{
	int hit = 0;
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < sb->n_immune; i++)
		hit |= sb->immune[i] == pid;
	pthread_mutex_unlock(&g->lock);
	return hit;
}

/* ---- lifecycle (each step takes the sandbox's op_lock) ------------------------------------- */

int fk_registry_snapshot(fk_registry *g, fk_sandbox *sb, const char *layer_dir, fk_err *err)
{
	int rc = FK_LC_OK;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&g->lock);
	if (sb->deleted || sb->state != FK_SB_RUNNING)
		rc = FK_LC_GONE;
	pthread_mutex_unlock(&g->lock);
	if (rc == FK_LC_OK && fk_box_snapshot(g->rt, sb->id, layer_dir, err) < 0)
		rc = FK_LC_FAILED;
	pthread_mutex_unlock(&sb->op_lock);
	return rc;
}

int fk_registry_pause(fk_registry *g, fk_sandbox *sb, int fs_only, int only_if_expired, fk_err *err)
{
	int rc = FK_LC_OK;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&g->lock);
	if (sb->deleted)
		rc = FK_LC_GONE;
	else if (sb->state == FK_SB_PAUSED)
		rc = only_if_expired ? FK_LC_SKIPPED : FK_LC_CONFLICT;
	else if (only_if_expired && sb->end_ns > fk_now_ns())
		rc = FK_LC_SKIPPED;
	if (rc == FK_LC_OK) {
		sb->state = FK_SB_PAUSED;
		sb->paused_ns = fk_now_ns();
		sb->paused_fs_only = fs_only;
		break_watches(sb); /* E2B's proxy drops a paused sandbox's streams (docs/protocol.md
		                      "Lifecycle") */
	}
	pthread_mutex_unlock(&g->lock);
	if (rc == FK_LC_OK && fk_box_freeze(g->rt, sb->id, err) < 0)
		rc = FK_LC_FAILED;
	if (rc == FK_LC_OK) {
		fk_sandbox_log_stop(g, sb, NULL); /* before the record, which keeps the logs */
		fk__registry_persist(g, sb);
	}
	pthread_mutex_unlock(&sb->op_lock);
	return rc;
}

/* The keys of `network` a network update replaces; the others (allowPublicTraffic,
 * maskRequestHost) are the ingress side and stay. */
static const char *const egress_keys[] = {"allowOut", "denyOut", "rules", "egressProxy"};

int fk_registry_update_network(fk_registry *g, fk_sandbox *sb, json_t *body, fk_err *err)
{
	json_t *aia = json_object_get(body, "allow_internet_access");
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&g->lock);
	int rc = !sb->deleted && sb->state == FK_SB_RUNNING ? FK_LC_OK : FK_LC_GONE;
	json_t *net = NULL, *allow_internet = NULL;
	if (rc == FK_LC_OK) {
		net = sb->network ? json_deep_copy(sb->network) : json_object();
		for (size_t i = 0; net && i < sizeof(egress_keys) / sizeof(*egress_keys); i++) {
			json_t *v = json_object_get(body, egress_keys[i]);
			if (v && !json_is_null(v))
				json_object_set_new(net, egress_keys[i], json_deep_copy(v));
			else
				json_object_del(net, egress_keys[i]);
		}
		allow_internet =
		    aia ? json_boolean(json_is_true(aia)) : json_incref(sb->allow_internet);
	}
	pthread_mutex_unlock(&g->lock);
	if (rc == FK_LC_OK && !net) {
		fk_err oom = {.code = FK_ENOMEM, .errnum = ENOMEM};
		snprintf(oom.message, sizeof(oom.message), "out of memory");
		if (err)
			*err = oom;
		rc = FK_LC_FAILED;
	}
	egress_lists el = {0};
	if (rc == FK_LC_OK) {
		/* the box first: what GET shows is what the sandbox's proxy applies */
		egress_lists_of(net, allow_internet, &el);
		if (fk_box_set_egress(g->rt, sb->id, el.allow, el.n_allow, el.deny, el.n_deny,
		                      err) < 0)
			rc = FK_LC_FAILED;
	}
	if (rc == FK_LC_OK) {
		pthread_mutex_lock(&g->lock);
		json_decref(sb->network);
		sb->network = json_object_size(net) ? json_incref(net) : NULL;
		json_decref(sb->allow_internet);
		sb->allow_internet = json_incref(allow_internet);
		sb->loopback_only = sb->loopback_only && egress_lists_none(&el);
		pthread_mutex_unlock(&g->lock);
		fk__registry_persist(g, sb);
	}
	egress_lists_free(&el);
	json_decref(net);
	json_decref(allow_internet);
	pthread_mutex_unlock(&sb->op_lock);
	return rc;
}

int fk_registry_delete(fk_registry *g, fk_sandbox *sb, int when)
{
	int rc = FK_LC_OK;
	pthread_mutex_lock(&sb->op_lock);
	/* under op_lock: no pause or resume replaces the box's PID 1 meanwhile */
	bool dead = when == FK_DEL_IF_DEAD && fk_box_init_gone(g->rt, sb->id);
	pthread_mutex_lock(&g->lock);
	if (sb->deleted)
		rc = FK_LC_GONE;
	else if (when == 1 && (sb->state != FK_SB_RUNNING || sb->end_ns > fk_now_ns()))
		rc = FK_LC_SKIPPED;
	else if (when == FK_DEL_IF_DEAD && (sb->state != FK_SB_RUNNING || !dead))
		rc = FK_LC_SKIPPED;
	pthread_mutex_unlock(&g->lock);
	/* the orchestrator's lines, while the sandbox still takes them (E2B's kill reason: the
	 * user's request, or its timeout; a box whose init died just stopped) */
	if (rc == FK_LC_OK && when == FK_DEL_IF_DEAD)
		fk_sandbox_log(g, sb, FK_SBLOG_ORCH, FK_SBLOG_INFO, NULL, "Sandbox stopped");
	else if (rc == FK_LC_OK)
		fk_sandbox_log_stop(g, sb, when == 1 ? "timeout" : "request");
	pthread_mutex_lock(&g->lock);
	if (rc == FK_LC_OK && sb->deleted)
		rc = FK_LC_GONE;
	if (rc == FK_LC_OK) {
		sb->deleted = 1;
		for (fk_sandbox **pp = &g->list; *pp; pp = &(*pp)->next) {
			if (*pp == sb) {
				*pp = sb->next;
				break;
			}
		}
		break_watches(sb);
	}
	pthread_mutex_unlock(&g->lock);
	if (rc == FK_LC_OK) {
		fk__sandbox_pwatches_drop(g, sb); /* its watches' descriptors into the box */
		fk__registry_forget(g,
		                    sb); /* first: a crash meanwhile leaves files, not a record */
		fk_box_destroy(g->rt, sb->id, NULL);
		fk__sandbox_logs_bury(g, sb); /* readable by id, as E2B's log store keeps them */
	}
	pthread_mutex_unlock(&sb->op_lock);
	if (rc == FK_LC_OK)
		fk_sandbox_release(g, sb); /* the registry's reference */
	return rc;
}

static int64_t capped_end(const fk_sandbox *sb, int64_t want)
{
	int64_t max = sb->started_ns + (int64_t)FK_MAX_TIMEOUT_S * FK_NS;
	return want > max ? max : want;
}

/* Resume a paused sandbox for envd traffic (autoResume), with the v2 default timeout. */
static int auto_resume(fk_registry *g, fk_sandbox *sb)
{
	int rc = -1;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&g->lock);
	int paused = !sb->deleted && sb->state == FK_SB_PAUSED, running = !sb->deleted && !paused;
	pthread_mutex_unlock(&g->lock);
	if (running)
		rc = 0;
	else if (paused && fk_box_thaw(g->rt, sb->id, NULL) == 0) {
		pthread_mutex_lock(&g->lock);
		sb->state = FK_SB_RUNNING;
		sb->started_ns = fk_now_ns();
		sb->end_ns = capped_end(sb, sb->started_ns + 300 * FK_NS);
		pthread_mutex_unlock(&g->lock);
		fk_sandbox_log_created(g, sb, "Started resuming sandbox");
		fk__registry_persist(g, sb);
		rc = 0;
	}
	pthread_mutex_unlock(&sb->op_lock);
	return rc;
}

int fk_sandbox_ensure_running(fk_registry *g, fk_sandbox *sb)
{
	pthread_mutex_lock(&g->lock);
	int ok = !sb->deleted && sb->state == FK_SB_RUNNING;
	int resume = !ok && !sb->deleted && sb->auto_resume && !sb->paused_fs_only;
	pthread_mutex_unlock(&g->lock);
	if (resume) /* autoResume.enabled: traffic resumes a paused sandbox (docs/protocol.md
	               "Lifecycle") */
		ok = auto_resume(g, sb) == 0;
	return ok;
}

enum fk_connect_outcome fk_registry_connect(fk_registry *g, fk_sandbox *sb, long timeout_s,
                                            int resume, int reboot, fk_err *err)
{
	enum fk_connect_outcome out;
	pthread_mutex_lock(&sb->op_lock);
	pthread_mutex_lock(&g->lock);
	int deleted = sb->deleted, paused = sb->state == FK_SB_PAUSED;
	int64_t now = fk_now_ns();
	if (!deleted && !paused && !resume) {
		int64_t want = capped_end(sb, now + (int64_t)timeout_s * FK_NS);
		if (want > sb->end_ns)
			sb->end_ns = want; /* connect only extends */
	}
	int cold = reboot || sb->paused_fs_only;
	pthread_mutex_unlock(&g->lock);
	if (!deleted && !paused && !resume)
		fk__registry_persist(g, sb); /* its end time */
	if (deleted) {
		out = FK_CONNECT_GONE;
	} else if (!paused) {
		out = resume ? FK_CONNECT_CONFLICT : FK_CONNECT_RUNNING;
	} else if ((cold ? fk_box_reboot(g->rt, sb->id, err) : fk_box_thaw(g->rt, sb->id, err)) <
	           0) {
		out = FK_CONNECT_FAILED;
	} else {
		pthread_mutex_lock(&g->lock);
		sb->state = FK_SB_RUNNING;
		sb->started_ns = fk_now_ns(); /* a new run starts at every resume (docs/protocol.md
		                                 "Lifecycle") */
		sb->end_ns = capped_end(sb, sb->started_ns + (int64_t)timeout_s * FK_NS);
		if (cold)
			sb->n_immune = 0;
		pthread_mutex_unlock(&g->lock);
		fk_sandbox_log_created(g, sb, "Started resuming sandbox");
		fk__registry_persist(g, sb);
		out = FK_CONNECT_RESUMED;
	}
	pthread_mutex_unlock(&sb->op_lock);
	return out;
}

int fk_registry_set_timeout(fk_registry *g, fk_sandbox *sb, long secs, int extend_only)
{
	pthread_mutex_lock(&g->lock);
	int ok = !sb->deleted && sb->state == FK_SB_RUNNING;
	if (ok) {
		int64_t want = capped_end(sb, fk_now_ns() + (int64_t)secs * FK_NS);
		if (!extend_only || want > sb->end_ns)
			sb->end_ns = want;
	}
	pthread_mutex_unlock(&g->lock);
	if (ok)
		fk__registry_persist(g, sb); /* its end time */
	return ok ? 0 : -1;
}
