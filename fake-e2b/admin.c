/*
 * fake-e2b/admin.c: fault rules and the request log behind /_fake/ (README.md
 * "Admin API"). Knows nothing of E2B routes: rules are (method, path glob)
 * patterns; the server asks for a match once per request and applies it.
 */
#include "admin.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "control.h"

/* Most entries kept in the request log; older ones are dropped first. */
#define FK_MAX_LOG 20000

typedef struct fk_rule {
	struct fk_rule *next;
	long id;
	char *method; /* NULL = any */
	char *path;
	long times; /* 0 = unlimited */
	fk_fault fault;
} fk_rule;

struct fk_admin {
	pthread_mutex_t lock;
	fk_rule *rules; /* in the order added */
	long next_id;
	json_t *log; /* array */
};

fk_admin *fk_admin_new(void)
{
	fk_admin *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	a->log = json_array();
	a->next_id = 1;
	if (!a->log) {
		free(a);
		return NULL;
	}
	return a;
}

static void rule_free(fk_rule *r)
{
	free(r->method);
	free(r->path);
	fk_fault_dispose(&r->fault);
	free(r);
}

static void rules_clear(fk_admin *a)
{
	while (a->rules) {
		fk_rule *n = a->rules->next;
		rule_free(a->rules);
		a->rules = n;
	}
}

void fk_admin_free(fk_admin *a)
{
	if (!a)
		return;
	rules_clear(a);
	json_decref(a->log);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void fk_fault_dispose(fk_fault *f)
{
	free(f->body);
	memset(f, 0, sizeof(*f));
}

int fk_admin_match_fault(fk_admin *a, const char *method, const char *path, fk_fault *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->lock);
	fk_rule **pp = &a->rules;
	for (fk_rule *r = *pp; r; pp = &r->next, r = r->next) {
		if (r->method && strcasecmp(r->method, method) != 0)
			continue;
		if (fnmatch(r->path, path, 0) != 0)
			continue;
		*out = r->fault;
		out->body = r->fault.body ? strdup(r->fault.body) : NULL;
		if (r->times > 0 && --r->times == 0) {
			*pp = r->next;
			rule_free(r);
		}
		pthread_mutex_unlock(&a->lock);
		return 1;
	}
	pthread_mutex_unlock(&a->lock);
	return 0;
}

#define PENDING_KEY "_fk_pending" /* never shown: GET skips entries that have it */

json_t *fk_admin_log_begin(fk_admin *a, json_t *entry)
{
	if (!entry)
		return NULL;
	json_object_set_new(entry, PENDING_KEY, json_true());
	pthread_mutex_lock(&a->lock);
	if (json_array_size(a->log) >= FK_MAX_LOG)
		json_array_remove(a->log, 0);
	json_array_append(a->log, entry);
	pthread_mutex_unlock(&a->lock);
	return entry; /* the caller's reference */
}

void fk_admin_log_ready(fk_admin *a, json_t *entry, json_t *fields)
{
	pthread_mutex_lock(&a->lock);
	json_object_update(entry, fields);
	json_object_del(entry, PENDING_KEY);
	pthread_mutex_unlock(&a->lock);
	json_decref(fields);
}

static json_t *log_visible(fk_admin *a)
{
	json_t *out = json_array(), *e;
	size_t i;
	json_array_foreach(a->log, i, e)
	{
		if (!json_object_get(e, PENDING_KEY))
			json_array_append_new(out, json_deep_copy(e));
	}
	return out;
}

void fk_admin_finish(fk_admin *a, json_t *entry, long ms)
{
	/* under the lock: the log may be cleared (and the entry freed) by another thread */
	pthread_mutex_lock(&a->lock);
	json_object_set_new(entry, "duration_ms", json_integer(ms));
	json_decref(entry);
	pthread_mutex_unlock(&a->lock);
}

static const struct {
	const char *name;
	enum fk_fault_kind kind;
} kinds[] = {
    {"respond", FK_FAULT_RESPOND},
    {"delay", FK_FAULT_DELAY},
    {"stream_no_end", FK_FAULT_STREAM_NO_END},
    {"stream_keepalive_only", FK_FAULT_STREAM_KEEPALIVE_ONLY},
    {"stream_garbage", FK_FAULT_STREAM_GARBAGE},
    {"stream_oversize", FK_FAULT_STREAM_OVERSIZE},
    {"connect_no_token", FK_FAULT_CONNECT_NO_TOKEN},
    {"kill_ignored", FK_FAULT_KILL_IGNORED},
};

static int parse_kind(const char *s, enum fk_fault_kind *out)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(kinds[i].name, s) == 0) {
			*out = kinds[i].kind;
			return 0;
		}
	}
	return -1;
}

/* Build a rule from its JSON; NULL with *why set when invalid. */
static fk_rule *rule_from_json(json_t *j, const char **why)
{
	json_t *path = json_object_get(j, "path"), *method = json_object_get(j, "method");
	json_t *status = json_object_get(j, "status"), *body = json_object_get(j, "body");
	json_t *delay = json_object_get(j, "delayMs"), *times = json_object_get(j, "times");
	json_t *kind = json_object_get(j, "kind");
	*why = NULL;
	if (!json_is_string(path))
		return *why = "path (string) is required", NULL;
	if ((method && !json_is_string(method)) || (status && !json_is_integer(status)) ||
	    (delay && !json_is_integer(delay)) || (times && !json_is_integer(times)) ||
	    (kind && !json_is_string(kind)))
		return *why = "bad field type", NULL;
	if (status && (json_integer_value(status) < 100 || json_integer_value(status) > 599))
		return *why = "status must be 100..599", NULL;
	fk_rule *r = calloc(1, sizeof(*r));
	if (!r)
		return *why = "out of memory", NULL;
	r->path = strdup(json_string_value(path));
	if (method && strcmp(json_string_value(method), "*") != 0)
		r->method = strdup(json_string_value(method));
	r->times = times ? (long)json_integer_value(times) : 0;
	if (r->times < 0)
		r->times = 0;
	r->fault.status = status ? (unsigned)json_integer_value(status) : 0;
	r->fault.delay_ms = delay ? (long)json_integer_value(delay) : 0;
	if (json_is_string(body))
		r->fault.body = strdup(json_string_value(body));
	else if (body && !json_is_null(body))
		r->fault.body = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
	if (kind) {
		if (parse_kind(json_string_value(kind), &r->fault.kind) < 0) {
			rule_free(r);
			return *why = "unknown kind", NULL;
		}
	} else {
		r->fault.kind = status ? FK_FAULT_RESPOND : FK_FAULT_DELAY;
	}
	if (r->fault.kind == FK_FAULT_RESPOND && !r->fault.status) {
		rule_free(r);
		return *why = "kind respond needs status", NULL;
	}
	return r;
}

static enum MHD_Result faults_post(fk_req *r)
{
	fk_admin *a = r->srv->admin;
	json_t *j = fk_body_json(r, 0);
	const char *why = "body must be a JSON object";
	fk_rule *rule = json_is_object(j) ? rule_from_json(j, &why) : NULL;
	json_decref(j);
	if (!rule)
		return fk_reply_error(r, 400, "%s", why);
	pthread_mutex_lock(&a->lock);
	rule->id = a->next_id++;
	fk_rule **pp = &a->rules;
	while (*pp)
		pp = &(*pp)->next;
	*pp = rule;
	long id = rule->id;
	pthread_mutex_unlock(&a->lock);
	return fk_reply_json(r, 201, json_pack("{s:I}", "id", (json_int_t)id));
}

static enum MHD_Result faults_get(fk_req *r)
{
	fk_admin *a = r->srv->admin;
	json_t *arr = json_array();
	pthread_mutex_lock(&a->lock);
	for (fk_rule *x = a->rules; x; x = x->next) {
		const char *kname = "?";
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (kinds[i].kind == x->fault.kind)
				kname = kinds[i].name;
		json_array_append_new(
		    arr, json_pack("{s:I,s:s,s:s,s:s,s:i,s:I,s:I}", "id", (json_int_t)x->id,
		                   "method", x->method ? x->method : "*", "path", x->path, "kind",
		                   kname, "status", (int)x->fault.status, "delayMs",
		                   (json_int_t)x->fault.delay_ms, "times", (json_int_t)x->times));
	}
	pthread_mutex_unlock(&a->lock);
	return fk_reply_json(r, 200, arr);
}

enum MHD_Result fk_admin_handle(fk_req *r)
{
	fk_admin *a = r->srv->admin;
	const char *m = r->method, *p = r->path;
	if (strcmp(p, "/_fake/faults") == 0) {
		if (strcmp(m, "POST") == 0)
			return faults_post(r);
		if (strcmp(m, "GET") == 0)
			return faults_get(r);
		if (strcmp(m, "DELETE") == 0) {
			pthread_mutex_lock(&a->lock);
			rules_clear(a);
			pthread_mutex_unlock(&a->lock);
			return fk_reply(r, 204, NULL, NULL, 0);
		}
		return fk_reply_error(r, 405, "method not allowed");
	}
	if (strcmp(p, "/_fake/requests") == 0) {
		if (strcmp(m, "GET") == 0) {
			pthread_mutex_lock(&a->lock);
			json_t *copy = log_visible(a);
			pthread_mutex_unlock(&a->lock);
			return fk_reply_json(r, 200, copy);
		}
		if (strcmp(m, "DELETE") == 0) {
			pthread_mutex_lock(&a->lock);
			json_array_clear(a->log);
			pthread_mutex_unlock(&a->lock);
			return fk_reply(r, 204, NULL, NULL, 0);
		}
		return fk_reply_error(r, 405, "method not allowed");
	}
	if (strcmp(p, "/_fake/sandboxes") == 0) {
		if (strcmp(m, "GET") == 0)
			return fk_reply_json(r, 200, fk_control_dump(r->srv->control));
		return fk_reply_error(r, 405, "method not allowed");
	}
	return fk_reply_error(r, 404, "no such admin route");
}
