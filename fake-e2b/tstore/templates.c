/*
 * fake-e2b/tstore/templates.c: the template store's operations for the API (builds.h): build
 * requests and starts (each build on its own thread, builder.c), build status, aliases, tags and
 * uploads of COPY archives. The store's data and lookups are store.c's, below this and below
 * builder.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builds_int.h"
#include "clock.h"
#include "template.h"

/* ---- requests and builds ------------------------------------------------------------------- */

/* Points `tag` of template t at build b (under the lock). */
static int set_tag(fk_ttemplate *t, const char *tag, const fk_tbuild *b)
{
	json_t *v =
	    json_pack("{s:s,s:o}", "buildID", b->id, "createdAt", fk__tstore_time(fk_now_ns()));
	return v && json_object_set_new(t->tags, tag, v) == 0 ? FK_T_OK : FK_T_FAILED;
}

/* A build request's name "alias[:tag]" and its tags: alias filled, FK_T_OK; FK_T_INVALID with
 * the message for a missing or bad name or tag, or a name of a template fake-e2b serves. */
static int request_check(const char *name, json_t *tags, char alias[129], char *msg, size_t cap)
{
	if (!name)
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "name is required");
	const char *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);
	if (!fk__tstore_name_ok(name, n))
		return fk__tstore_fail(
		    msg, cap, FK_T_INVALID,
		    "invalid template name '%.*s': use 1 to 128 lower-case letters, "
		    "digits, '-', '_' or '.'",
		    (int)(n > 200 ? 200 : n), name);
	if (colon && !fk__tstore_tag_ok(colon + 1))
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "invalid tag '%.200s'", colon + 1);
	memcpy(alias, name, n);
	alias[n] = '\0';
	if (fk_template_find(alias))
		return fk__tstore_fail(msg, cap, FK_T_INVALID,
		                       "template name '%s' is taken by a template fake-e2b serves",
		                       alias);
	size_t n_tags = json_is_array(tags) ? json_array_size(tags) : 0;
	if (tags && !json_is_null(tags) && !json_is_array(tags))
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "tags must be an array of strings");
	for (size_t i = 0; i < n_tags; i++)
		if (!fk__tstore_tag_ok(json_string_value(json_array_get(tags, i))))
			return fk__tstore_fail(msg, cap, FK_T_INVALID, "invalid tag in tags");
	return FK_T_OK;
}

/* Under s->lock: the template named alias (its first n bytes), made when there is none; NULL
 * when out of memory. */
static fk_ttemplate *request_template(fk_tstore *s, const char *alias, size_t n, int64_t now_ns)
{
	fk_ttemplate *t = fk__tstore_find_template(s, alias, n);
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (t && (t->name = strdup(alias)) && (t->tags = json_object())) {
		fk__tstore_random_id(t->id);
		t->created_ns = now_ns;
		t->next = s->list;
		s->list = t;
		return t;
	}
	if (t)
		free(t->name);
	free(t);
	return NULL;
}

int fk_tstore_request(fk_tstore *s, const char *name, json_t *tags, unsigned cpu_count,
                      unsigned memory_mb, json_t **reply, char *msg, size_t cap)
{
	*reply = NULL;
	char alias[129];
	int rc = request_check(name, tags, alias, msg, cap);
	if (rc != FK_T_OK)
		return rc;
	const char *colon = strchr(name, ':');
	size_t n = strlen(alias);
	size_t n_tags = json_is_array(tags) ? json_array_size(tags) : 0;

	fk_tbuild *b = calloc(1, sizeof(*b));
	json_t *tag_list = json_array();
	if (!b || !tag_list || !(b->logs = json_array())) {
		free(b);
		json_decref(tag_list);
		return fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
	}
	fk__tstore_random_uuid(b->id);
	b->created_ns = b->updated_ns = fk_now_ns();
	b->disk_mb = -1;
	b->cpu_count = cpu_count;
	b->memory_mb = memory_mb;
	if (colon)
		json_array_append_new(tag_list, json_string(colon + 1));
	for (size_t i = 0; i < n_tags; i++)
		json_array_append(tag_list, json_array_get(tags, i));
	if (json_array_size(tag_list) == 0)
		json_array_append_new(tag_list, json_string("default"));

	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = request_template(s, alias, n, b->created_ns);
	if (!t) {
		pthread_mutex_unlock(&s->lock);
		json_decref(b->logs);
		free(b);
		json_decref(tag_list);
		return fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
	}
	b->tmpl = t;
	memcpy(b->template_id, t->id, sizeof(b->template_id));
	b->next = t->builds;
	t->builds = b;
	t->build_count++;
	t->updated_ns = b->created_ns;
	size_t i;
	json_t *tg;
	json_array_foreach(tag_list, i, tg) set_tag(t, json_string_value(tg), b);
	*reply = json_pack("{s:s,s:s,s:b,s:[s],s:[s],s:o}", "templateID", t->id, "buildID", b->id,
	                   "public", 0, "names", t->name, "aliases", t->name, "tags", tag_list);
	char id[21];
	memcpy(id, t->id, sizeof(id));
	pthread_mutex_unlock(&s->lock);
	fk__tstore_persist(s, id);
	return *reply ? FK_T_OK : fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
}

static void *build_thread(void *arg)
{
	void **a = arg;
	fk_tstore *s = a[0];
	fk_tbuild *b = a[1];
	free(a);
	fk__build_run(s, b);
	return NULL;
}

int fk_tstore_build_start(fk_tstore *s, const char *template_id, const char *build_id, json_t *spec,
                          char *msg, size_t cap)
{
	if (!json_is_object(spec))
		return fk__tstore_fail(msg, cap, FK_T_INVALID,
		                       "request body must be a JSON object");
	json_t *steps = json_object_get(spec, "steps");
	if (steps && !json_is_array(steps) && !json_is_null(steps))
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "steps must be an array");
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	fk_tbuild *b = t && !strcmp(t->id, template_id) ? fk__tstore_find_build(t, build_id) : NULL;
	int rc = FK_T_OK;
	if (!b)
		rc = fk__tstore_fail(msg, cap, FK_T_NOTFOUND,
		                     "build '%.64s' of template '%.64s' not found", build_id,
		                     template_id);
	else if (b->status != FK_TB_WAITING || b->has_thread)
		rc = fk__tstore_fail(msg, cap, FK_T_CONFLICT, "build '%s' was already started",
		                     b->id);
	else if (s->stopping)
		rc = fk__tstore_fail(msg, cap, FK_T_FAILED, "server shutting down");
	void **arg = rc == FK_T_OK ? malloc(2 * sizeof(void *)) : NULL;
	if (rc == FK_T_OK && arg) {
		b->spec = json_deep_copy(spec);
		/* building at once when a slot is free (a status call right after sees it), else
		 * waiting for one on its thread */
		b->has_slot = s->running < FK_BUILDS_RUNNING;
		if (b->has_slot)
			s->running++;
		b->status = b->has_slot ? FK_TB_BUILDING : FK_TB_WAITING;
		/* E2B's builder's first line, when the build starts: here, so a status call right
		 * after this one already shows it; a waiting build logs it once it has a slot */
		if (b->has_slot)
			json_array_append_new(b->logs,
			                      json_pack("{s:o,s:s,s:s+++}", "timestamp",
			                                fk__tstore_time(fk_now_ns()), "level",
			                                "info", "message", "Building template ",
			                                b->template_id, "/", b->id));
		b->updated_ns = fk_now_ns();
		arg[0] = s;
		arg[1] = b;
		if (b->spec && pthread_create(&b->thread, NULL, build_thread, arg) == 0) {
			b->has_thread = true;
		} else {
			json_decref(b->spec);
			b->spec = NULL;
			b->status = FK_TB_WAITING;
			if (b->has_slot)
				s->running--;
			b->has_slot = false;
			free(arg);
			rc = fk__tstore_fail(msg, cap, FK_T_FAILED, "cannot start the build");
		}
	} else if (rc == FK_T_OK) {
		rc = fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
	}
	pthread_mutex_unlock(&s->lock);
	if (rc == FK_T_OK)
		fk__tstore_persist(s, template_id);
	return rc;
}

int fk_tstore_build_status(fk_tstore *s, const char *template_id, const char *build_id,
                           size_t offset, size_t limit, int min_level, json_t **reply)
{
	*reply = NULL;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	fk_tbuild *b = t && !strcmp(t->id, template_id) ? fk__tstore_find_build(t, build_id) : NULL;
	if (!b) {
		pthread_mutex_unlock(&s->lock);
		return FK_T_NOTFOUND;
	}
	json_t *entries = json_array();
	/* a build waiting for its start has no logs yet (E2B's status of a pending build) */
	size_t total = b->status == FK_TB_WAITING ? 0 : json_array_size(b->logs), seen = 0;
	/* the level filters first, then the offset counts what is left (E2B's query) */
	size_t dropped = fk__build_log_dropped(b, 0),
	       dropped_here = fk__build_log_dropped(b, min_level);
	for (size_t i = 0; i < total && json_array_size(entries) < limit; i++) {
		json_t *e = json_array_get(b->logs, i);
		/* the first entry stands for the dropped lines: the offset counts them */
		if (i == 0 && dropped) {
			seen += dropped_here;
			if (dropped_here && seen > offset)
				json_array_append(entries, e);
			continue;
		}
		if (fk__build_log_level(e) < min_level || seen++ < offset)
			continue;
		json_array_append(entries, e);
	}
	/* `logs` (plain lines) is for E2B's v1 builds only; a build requested through
	 * /v3/templates is v2.1.0, whose status has `logs: []` (handlers/template_build_status.go)
	 */
	*reply =
	    json_pack("{s:s,s:s,s:s,s:[],s:o}", "templateID", t->id, "buildID", b->id, "status",
	              fk__tbuild_status_name(b->status), "logs", "logEntries", entries);
	if (*reply && b->status == FK_TB_ERROR) {
		/* reason.logEntries: the entries of this page of the failed step at warn or above
		 * (E2B's filterStepLogs) */
		json_t *reason = json_pack("{s:s,s:[]}", "message",
		                           b->reason ? b->reason : "build failed", "logEntries");
		size_t i;
		json_t *e;
		json_array_foreach(entries, i, e)
		{
			const char *st = json_string_value(json_object_get(e, "step"));
			if (reason && b->reason_step && st && !strcmp(st, b->reason_step) &&
			    fk__build_log_level(e) >= fk_tstore_level("warn"))
				json_array_append(json_object_get(reason, "logEntries"), e);
		}
		if (reason && b->reason_step)
			json_object_set_new(reason, "step", json_string(b->reason_step));
		json_object_set_new(*reply, "reason", reason);
	}
	pthread_mutex_unlock(&s->lock);
	return *reply ? FK_T_OK : FK_T_FAILED;
}

int fk_tstore_alias(fk_tstore *s, const char *alias, json_t **reply)
{
	*reply = NULL;
	const fk_template *rt_tpl = fk_template_find(alias);
	if (rt_tpl) {
		*reply = json_pack("{s:s,s:b}", "templateID", rt_tpl->id, "public", 1);
		return *reply ? FK_T_OK : FK_T_FAILED;
	}
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = NULL;
	for (fk_ttemplate *x = s->list; x && !t; x = x->next)
		if (!strcmp(x->name, alias))
			t = x;
	if (t)
		*reply = json_pack("{s:s,s:b}", "templateID", t->id, "public", t->is_public);
	pthread_mutex_unlock(&s->lock);
	return t ? (*reply ? FK_T_OK : FK_T_FAILED) : FK_T_NOTFOUND;
}

/* ---- tags ---------------------------------------------------------------------------------- */

static int check_tags(json_t *tags, char *msg, size_t cap)
{
	if (!json_is_array(tags) || json_array_size(tags) == 0)
		return fk__tstore_fail(msg, cap, FK_T_INVALID,
		                       "tags must be a non-empty array of strings");
	size_t i;
	json_t *tg;
	json_array_foreach(tags, i, tg)
	{
		if (!fk__tstore_tag_ok(json_string_value(tg)))
			return fk__tstore_fail(
			    msg, cap, FK_T_INVALID,
			    "invalid tag '%.128s': use 1 to 128 letters, digits, '-', '_' "
			    "or '.'",
			    json_is_string(tg) ? json_string_value(tg) : "");
	}
	return FK_T_OK;
}

int fk_tstore_tags_assign(fk_tstore *s, const char *target, json_t *tags, json_t **reply, char *msg,
                          size_t cap)
{
	*reply = NULL;
	if (!target || !*target)
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "target is required");
	int rc = check_tags(tags, msg, cap);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = NULL;
	fk_tbuild *b = fk__tstore_find_ref(s, target, &t);
	if (!b) {
		pthread_mutex_unlock(&s->lock);
		return fk__tstore_fail(msg, cap, FK_T_NOTFOUND, "template '%.200s' not found",
		                       target);
	}
	size_t i;
	json_t *tg;
	json_array_foreach(tags, i, tg)
	{
		if (set_tag(t, json_string_value(tg), b) < 0)
			rc = FK_T_FAILED;
	}
	*reply = json_pack("{s:O,s:s}", "tags", tags, "buildID", b->id);
	char id[21];
	memcpy(id, t->id, sizeof(id));
	pthread_mutex_unlock(&s->lock);
	fk__tstore_persist(s, id);
	if (rc < 0 || !*reply) {
		json_decref(*reply);
		*reply = NULL;
		return fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
	}
	return FK_T_OK;
}

int fk_tstore_tags_remove(fk_tstore *s, const char *name, json_t *tags, char *msg, size_t cap)
{
	if (!name || !*name)
		return fk__tstore_fail(msg, cap, FK_T_INVALID, "name is required");
	int rc = check_tags(tags, msg, cap);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, name, strlen(name));
	if (t) {
		size_t i;
		json_t *tg;
		json_array_foreach(tags, i, tg) json_object_del(t->tags, json_string_value(tg));
	}
	pthread_mutex_unlock(&s->lock);
	if (t)
		fk__tstore_persist(s, name);
	return t ? FK_T_OK
	         : fk__tstore_fail(msg, cap, FK_T_NOTFOUND, "template '%.200s' not found", name);
}

int fk_tstore_tags_list(fk_tstore *s, const char *template_id, json_t **reply)
{
	*reply = NULL;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	if (t) {
		*reply = json_array();
		const char *tag;
		json_t *v;
		json_object_foreach(t->tags, tag, v)
		{
			json_array_append_new(*reply,
			                      json_pack("{s:s,s:O,s:O}", "tag", tag, "buildID",
			                                json_object_get(v, "buildID"), "createdAt",
			                                json_object_get(v, "createdAt")));
		}
	}
	pthread_mutex_unlock(&s->lock);
	return t ? (*reply ? FK_T_OK : FK_T_FAILED) : FK_T_NOTFOUND;
}

/* ---- uploads ------------------------------------------------------------------------------- */

static bool hash_ok(const char *h)
{
	size_t n = h ? strlen(h) : 0;
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
			return false;
	return true;
}

static void upload_token(const fk_tstore *s, const char *template_id, const char *hash,
                         char out[65])
{
	char msg[256];
	unsigned char mac[32];
	unsigned len = 0;
	int n = snprintf(msg, sizeof(msg), "upload:%s/%s", template_id, hash);
	HMAC(EVP_sha256(), s->seed, sizeof(s->seed), (const unsigned char *)msg, (size_t)n, mac,
	     &len);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

static bool template_exists(fk_tstore *s, const char *template_id)
{
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	bool ok = t && !strcmp(t->id, template_id);
	pthread_mutex_unlock(&s->lock);
	return ok;
}

int fk_tstore_file_link(fk_tstore *s, const char *template_id, const char *hash, int *present,
                        char token[65])
{
	if (!hash_ok(hash))
		return FK_T_INVALID;
	if (!template_exists(s, template_id))
		return FK_T_NOTFOUND;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", s->files_dir, hash);
	*present = access(path, F_OK) == 0;
	upload_token(s, template_id, hash, token);
	return FK_T_OK;
}

struct fk_upload {
	int fd;
	char *part, *final;
	uint64_t written, max;
	bool failed;
};

int fk_tstore_upload_begin(fk_tstore *s, const char *template_id, const char *hash,
                           const char *token, uint64_t max_bytes, fk_upload **out)
{
	*out = NULL;
	char want[65];
	if (!hash_ok(hash) || !token || strlen(token) != 64 || !template_exists(s, template_id))
		return FK_T_NOTFOUND;
	upload_token(s, template_id, hash, want);
	if (CRYPTO_memcmp(want, token, 64) != 0)
		return FK_T_NOTFOUND;
	fk_upload *u = calloc(1, sizeof(*u));
	char rnd[21];
	fk__tstore_random_id(rnd);
	if (!u || asprintf(&u->part, "%s/.%s.%s.part", s->files_dir, hash, rnd) < 0 ||
	    asprintf(&u->final, "%s/%s", s->files_dir, hash) < 0) {
		if (u)
			free(u->part);
		free(u);
		return FK_T_FAILED;
	}
	u->max = max_bytes;
	u->fd = open(u->part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (u->fd < 0) {
		free(u->part);
		free(u->final);
		free(u);
		return FK_T_FAILED;
	}
	*out = u;
	return FK_T_OK;
}

int fk_tstore_upload_write(fk_upload *u, const void *data, size_t len)
{
	if (u->failed)
		return FK_T_FAILED;
	if (u->written + len > u->max) {
		u->failed = true;
		return FK_T_FAILED;
	}
	const char *p = data;
	while (len) {
		ssize_t n = write(u->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			u->failed = true;
			return n < 0 && (errno == ENOSPC || errno == EDQUOT) ? FK_T_NOSPACE
			                                                     : FK_T_FAILED;
		}
		p += n;
		len -= (size_t)n;
		u->written += (uint64_t)n;
	}
	return FK_T_OK;
}

int fk_tstore_upload_finish(fk_upload *u, int ok)
{
	if (!u)
		return FK_T_OK;
	int rc = FK_T_OK;
	if (close(u->fd) < 0 || u->failed || !ok || rename(u->part, u->final) < 0) {
		unlink(u->part);
		rc = FK_T_FAILED;
	}
	free(u->part);
	free(u->final);
	free(u);
	return rc;
}

/* ---- the listing, one template, updates, build logs ---------------------------------------- */

/* A log entry's timestamp (fk_format_time's form) in ms since the epoch; 0 when unreadable. */
static int64_t entry_ms(json_t *e)
{
	const char *ts = json_string_value(json_object_get(e, "timestamp"));
	struct tm tm = {0};
	const char *rest = ts ? strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!rest)
		return 0;
	long ms = 0;
	if (*rest == '.') {
		int digits = 0;
		for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*rest - '0');
		for (; digits < 3; digits++)
			ms *= 10;
	}
	return (int64_t)timegm(&tm) * 1000 + ms;
}

static json_t *time_or_null(int64_t ns)
{
	return ns ? fk__tstore_time(ns) : json_null();
}

/* The template's names: [name], or [] for an unnamed snapshot (its name is its templateID). */
static json_t *names_json(const fk_ttemplate *t)
{
	return t->snapshot_of && !t->named ? json_array() : json_pack("[s]", t->name);
}

/* Template (GET /templates) of t, under the lock: the build its `default` tag names when that
 * one is ready (else a zero buildID and sizes, E2B's COALESCE), the status of the tag's
 * build (else `waiting`, E2B's `pending`). */
static json_t *template_json(const fk_ttemplate *t)
{
	json_t *bid = json_object_get(json_object_get(t->tags, "default"), "buildID");
	fk_tbuild *tagged = json_is_string(bid)
	                        ? fk__tstore_find_build((fk_ttemplate *)t, json_string_value(bid))
	                        : NULL;
	fk_tbuild *ready = tagged && tagged->status == FK_TB_READY ? tagged : NULL;
	json_t *j = json_pack(
	    "{s:s,s:s,s:I,s:I,s:I,s:b,s:o,s:o,s:o,s:o,s:n,s:o,s:I,s:I,s:s,s:s}", "templateID",
	    t->id, "buildID", ready ? ready->id : "00000000-0000-0000-0000-000000000000",
	    "cpuCount", (json_int_t)(ready ? ready->cpu_count : 0), "memoryMB",
	    (json_int_t)(ready ? ready->memory_mb : 0), "diskSizeMB",
	    (json_int_t)(ready && ready->disk_mb > 0 ? ready->disk_mb : 0), "public", t->is_public,
	    "aliases", names_json(t), "names", names_json(t), "createdAt",
	    fk__tstore_time(t->created_ns), "updatedAt", fk__tstore_time(t->updated_ns),
	    "createdBy", "lastSpawnedAt", time_or_null(t->last_spawned_ns), "spawnCount",
	    (json_int_t)t->spawn_count, "buildCount", (json_int_t)t->build_count, "envdVersion",
	    ready ? FK_ENVD_VERSION : "", "buildStatus",
	    tagged ? fk__tbuild_status_name(tagged->status) : "waiting");
	return j;
}

int fk_tstore_list(fk_tstore *s, json_t **reply)
{
	*reply = json_array();
	if (!*reply)
		return FK_T_FAILED;
	pthread_mutex_lock(&s->lock);
	size_t n = 0;
	for (fk_ttemplate *t = s->list; t; t = t->next)
		n++;
	fk_ttemplate **v = calloc(n ? n : 1, sizeof(*v));
	size_t k = 0;
	for (fk_ttemplate *t = s->list; v && t; t = t->next)
		if (!t->snapshot_of) /* E2B lists source 'template' only */
			v[k++] = t;
	/* the list is newest first; E2B orders by creation, oldest first */
	int rc = v ? FK_T_OK : FK_T_FAILED;
	while (v && k > 0) {
		json_t *j = template_json(v[--k]);
		if (!j || json_array_append_new(*reply, j) < 0)
			rc = FK_T_FAILED;
	}
	pthread_mutex_unlock(&s->lock);
	free(v);
	if (rc < 0) {
		json_decref(*reply);
		*reply = NULL;
	}
	return rc;
}

int fk_tstore_get(fk_tstore *s, const char *template_id, const fk_tcursor *after, size_t limit,
                  json_t **reply, fk_tcursor *next)
{
	*reply = NULL;
	next->id[0] = '\0';
	if (fk_template_find(template_id))
		return FK_T_FORBIDDEN;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	if (!t || strcmp(t->id, template_id)) { /* E2B looks it up by templateID only */
		pthread_mutex_unlock(&s->lock);
		return FK_T_NOTFOUND;
	}
	json_t *builds = json_array();
	size_t taken = 0;
	/* builds are newest first (created, then buildID, both descending) */
	for (fk_tbuild *b = t->builds; builds && b; b = b->next) {
		if (after && (b->created_ns > after->ns ||
		              (b->created_ns == after->ns && strcmp(b->id, after->id) >= 0)))
			continue;
		if (taken == limit)
			break;
		json_t *j = json_pack(
		    "{s:s,s:s,s:o,s:o,s:I,s:I}", "buildID", b->id, "status",
		    fk__tbuild_status_name(b->status), "createdAt", fk__tstore_time(b->created_ns),
		    "updatedAt", fk__tstore_time(b->updated_ns), "cpuCount",
		    (json_int_t)b->cpu_count, "memoryMB", (json_int_t)b->memory_mb);
		if (j && (b->status == FK_TB_READY || b->status == FK_TB_ERROR))
			json_object_set_new(j, "finishedAt", fk__tstore_time(b->finished_ns));
		if (j && b->status == FK_TB_READY) {
			if (b->disk_mb >= 0)
				json_object_set_new(j, "diskSizeMB", json_integer(b->disk_mb));
			json_object_set_new(j, "envdVersion", json_string(FK_ENVD_VERSION));
		}
		json_array_append_new(builds, j);
		next->ns = b->created_ns;
		memcpy(next->id, b->id, sizeof(next->id));
		taken++;
	}
	bool more = false;
	for (fk_tbuild *b = t->builds; b && taken; b = b->next)
		if (b->created_ns < next->ns ||
		    (b->created_ns == next->ns && strcmp(b->id, next->id) < 0))
			more = true;
	if (!more)
		next->id[0] = '\0';
	if (builds)
		*reply = json_pack("{s:s,s:b,s:o,s:o,s:o,s:o,s:o,s:I,s:o}", "templateID", t->id,
		                   "public", t->is_public, "aliases", names_json(t), "names",
		                   names_json(t), "createdAt", fk__tstore_time(t->created_ns),
		                   "updatedAt", fk__tstore_time(t->updated_ns), "lastSpawnedAt",
		                   time_or_null(t->last_spawned_ns), "spawnCount",
		                   (json_int_t)t->spawn_count, "builds", builds);
	pthread_mutex_unlock(&s->lock);
	return *reply ? FK_T_OK : FK_T_FAILED;
}

int fk_tstore_update(fk_tstore *s, const char *ref, int is_public, json_t **names, char *msg,
                     size_t cap)
{
	*names = NULL;
	char ident[129];
	int rc = fk__tstore_ref_ident(ref, ident, msg, cap);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, ident, strlen(ident));
	if (t && is_public >= 0) {
		t->is_public = is_public;
		t->updated_ns = fk_now_ns();
	}
	if (t)
		*names = names_json(t);
	pthread_mutex_unlock(&s->lock);
	if (!t)
		return fk__tstore_fail(msg, cap, FK_T_NOTFOUND, "template '%s' not found", ident);
	fk__tstore_persist(s, ident);
	return *names ? FK_T_OK : fk__tstore_fail(msg, cap, FK_T_FAILED, "out of memory");
}

void fk_tstore_spawned(fk_tstore *s, const char *template_id)
{
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	if (t && !strcmp(t->id, template_id)) {
		t->spawn_count++;
		t->last_spawned_ns = fk_now_ns();
	}
	pthread_mutex_unlock(&s->lock);
}

int fk_tstore_build_logs(fk_tstore *s, const char *template_id, const char *build_id,
                         int64_t cursor_ms, bool backward, int min_level, size_t limit,
                         json_t **reply)
{
	*reply = NULL;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, template_id, strlen(template_id));
	fk_tbuild *b = t && !strcmp(t->id, template_id) ? fk__tstore_find_build(t, build_id) : NULL;
	if (!b) {
		pthread_mutex_unlock(&s->lock);
		return FK_T_NOTFOUND;
	}
	json_t *logs = json_array();
	/* E2B answers a build still waiting for its start with no logs */
	size_t total = b->status == FK_TB_WAITING ? 0 : json_array_size(b->logs);
	for (size_t k = 0; logs && k < total && json_array_size(logs) < limit; k++) {
		json_t *e = json_array_get(b->logs, backward ? total - 1 - k : k);
		if (fk__build_log_level(e) < min_level)
			continue;
		if (cursor_ms >= 0) {
			int64_t ms = entry_ms(e);
			/* E2B's window: from the cursor on forward, up to it (not at it) backward
			 */
			if (backward ? ms >= cursor_ms : ms < cursor_ms)
				continue;
		}
		json_array_append(logs, e);
	}
	if (logs)
		*reply = json_pack("{s:o}", "logs", logs);
	pthread_mutex_unlock(&s->lock);
	return *reply ? FK_T_OK : FK_T_FAILED;
}

int fk_tstore_template_id(fk_tstore *s, const char *ref, char out[21])
{
	char ident[129];
	int rc = fk__tstore_ref_ident(ref, ident, NULL, 0);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = fk__tstore_find_template(s, ident, strlen(ident));
	if (t)
		memcpy(out, t->id, 21);
	pthread_mutex_unlock(&s->lock);
	return t ? FK_T_OK : FK_T_NOTFOUND;
}
