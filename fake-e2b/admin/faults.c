/*
 * fake-e2b/admin/faults.c: see faults.h.
 */
#include "faults.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct fk_rule {
	struct fk_rule *next;
	long id;
	char *method; /* NULL = any */
	char *path;
	long times; /* 0 = unlimited */
	fk_fault fault;
} fk_rule;

struct fk_faults {
	pthread_mutex_t lock;
	fk_rule *rules; /* in the order added */
	long next_id;
};

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

fk_faults *fk_faults_new(void)
{
	fk_faults *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	f->next_id = 1;
	return f;
}

void fk_fault_dispose(fk_fault *f)
{
	free(f->body);
	memset(f, 0, sizeof(*f));
}

static void rule_free(fk_rule *r)
{
	free(r->method);
	free(r->path);
	fk_fault_dispose(&r->fault);
	free(r);
}

static void rules_clear(fk_faults *f)
{
	while (f->rules) {
		fk_rule *n = f->rules->next;
		rule_free(f->rules);
		f->rules = n;
	}
}

void fk_faults_free(fk_faults *f)
{
	if (!f)
		return;
	rules_clear(f);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void fk_faults_clear(fk_faults *f)
{
	pthread_mutex_lock(&f->lock);
	rules_clear(f);
	pthread_mutex_unlock(&f->lock);
}

int fk_faults_match(fk_faults *f, const char *method, const char *path, fk_fault *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->lock);
	fk_rule **pp = &f->rules;
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
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

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
	if (!json_is_object(j))
		return *why = "body must be a JSON object", NULL;
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

long fk_faults_add(fk_faults *f, json_t *j, const char **why)
{
	fk_rule *rule = rule_from_json(j, why);
	if (!rule)
		return 0;
	pthread_mutex_lock(&f->lock);
	rule->id = f->next_id++;
	fk_rule **pp = &f->rules;
	while (*pp)
		pp = &(*pp)->next;
	*pp = rule;
	long id = rule->id;
	pthread_mutex_unlock(&f->lock);
	return id;
}

json_t *fk_faults_list(fk_faults *f)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&f->lock);
	for (fk_rule *x = f->rules; x; x = x->next) {
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
	pthread_mutex_unlock(&f->lock);
	return arr;
}
