/*
 * fake-e2b/tstore/store.c: the template store's core (builds_int.h): the store itself, its
 * templates and builds as data (names, ids, lookups, the boot a reference names, image
 * stand-ins) and the calls a running build makes into it (log, sandbox, slot, end). Below
 * builder.c (which runs a build) and templates.c (the API's operations, which start builds).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builds_int.h"
#include "clock.h"
#include "fstree.h"
#include "template.h"

/* ---- names --------------------------------------------------------------------------------- */

bool fk__tstore_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

bool fk__tstore_tag_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

void fk__tstore_random_id(char out[21])
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[20];
	if (RAND_bytes(r, sizeof(r)) != 1)
		memset(r, 0, sizeof(r));
	for (size_t i = 0; i < 20; i++)
		out[i] = abc[r[i] % 36];
	out[20] = '\0';
}

void fk__tstore_random_uuid(char out[37])
{
	unsigned char r[16];
	if (RAND_bytes(r, sizeof(r)) != 1)
		memset(r, 0, sizeof(r));
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
	         r[13], r[14], r[15]);
}

json_t *fk__tstore_time(int64_t ns)
{
	char buf[48];
	fk_format_time(buf, sizeof(buf), ns);
	return json_string(buf);
}

/* ---- the store ----------------------------------------------------------------------------- */

/* rm -rf (never following a symlink: a layer holds whatever a sandbox left; no recursion: it
 * is as deep as the sandbox made it). */
void fk__tstore_rm_tree(const char *dir)
{
	if (dir && *dir)
		fk_tree_remove(AT_FDCWD, dir);
}

int64_t fk__tstore_tree_mb(const char *dir)
{
	uint64_t bytes;
	if (fk_tree_bytes(dir, &bytes) < 0)
		return -1;
	return (int64_t)((bytes + (1 << 20) - 1) >> 20);
}

void fk__ttemplate_free(struct fk_ttemplate *t)
{
	while (t->builds) {
		fk_tbuild *b = t->builds;
		t->builds = b->next;
		json_decref(b->logs);
		json_decref(b->spec);
		free(b->reason);
		free(b->reason_step);
		fk_tboot_clear(&b->boot);
		free(b);
	}
	json_decref(t->tags);
	free(t->name);
	free(t->snapshot_of);
	free(t);
}

/* ---- a kept store's records read back ---- */

static char *opt_str(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? strdup(v) : NULL;
}

static int64_t get_i(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A ready build's boot from its record; false when malformed. */
static bool boot_of(json_t *j, fk_tboot *b)
{
	memset(b, 0, sizeof(*b));
	json_t *envs = json_object_get(j, "envs");
	b->template_id = opt_str(j, "templateID");
	b->base = opt_str(j, "base");
	b->layer = opt_str(j, "layer");
	b->user = opt_str(j, "user");
	b->workdir = opt_str(j, "workdir");
	b->start_cmd = opt_str(j, "startCmd");
	b->ready_cmd = opt_str(j, "readyCmd");
	b->alias = opt_str(j, "alias");
	b->cpu_count = (unsigned)get_i(j, "cpuCount");
	b->memory_mb = (unsigned)get_i(j, "memoryMB");
	size_t n = json_array_size(envs);
	b->envs = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; b->envs && i < n; i++) {
		const char *e = json_string_value(json_array_get(envs, i));
		if (e && (b->envs[b->n_envs] = strdup(e)))
			b->n_envs++;
	}
	return b->template_id && b->base && b->envs;
}

typedef struct tload {
	fk_tstore *s;
	struct fk_ttemplate **tail;
	int n;
} tload;

static void load_template(const char *id, json_t *rec, void *ud)
{
	tload *c = ud;
	if (!rec)
		return; /* refused (logged); its layers go with the sweep below */
	const char *name = json_string_value(json_object_get(rec, "name"));
	json_t *builds = json_object_get(rec, "builds");
	fk_ttemplate *t = calloc(1, sizeof(*t));
	if (!t || strlen(id) != 20 || !name || !json_is_array(builds)) {
		fprintf(stderr, "fake-e2b: state: template %s not loaded: a field is missing\n",
		        id);
		free(t);
		return;
	}
	memcpy(t->id, id, 21);
	t->name = strdup(name);
	json_t *tags = json_object_get(rec, "tags");
	t->tags = json_is_object(tags) ? json_deep_copy(tags) : json_object();
	t->created_ns = get_i(rec, "createdNs");
	t->updated_ns = get_i(rec, "updatedNs");
	t->last_spawned_ns = get_i(rec, "lastSpawnedNs");
	t->spawn_count = get_i(rec, "spawnCount");
	t->build_count = (unsigned)get_i(rec, "buildCount");
	t->is_public = json_is_true(json_object_get(rec, "public"));
	t->snapshot_of = opt_str(rec, "snapshotOf");
	t->named = json_is_true(json_object_get(rec, "named"));
	fk_tbuild **bt = &t->builds;
	size_t i;
	json_t *j;
	json_array_foreach(builds, i, j)
	{
		const char *bid = json_string_value(json_object_get(j, "id"));
		fk_tbuild *b = bid && strlen(bid) == 36 ? calloc(1, sizeof(*b)) : NULL;
		if (!b)
			continue;
		memcpy(b->id, bid, 37);
		memcpy(b->template_id, t->id, 21);
		b->tmpl = t;
		b->status = (int)get_i(j, "status");
		json_t *logs = json_object_get(j, "logs");
		b->logs = json_is_array(logs) ? json_deep_copy(logs) : json_array();
		b->reason = opt_str(j, "reason");
		b->reason_step = opt_str(j, "reasonStep");
		b->created_ns = get_i(j, "createdNs");
		b->updated_ns = get_i(j, "updatedNs");
		b->finished_ns = get_i(j, "finishedNs");
		b->cpu_count = (unsigned)get_i(j, "cpuCount");
		b->memory_mb = (unsigned)get_i(j, "memoryMB");
		b->disk_mb = get_i(j, "diskMB");
		const char *lost = NULL;
		if (b->status == FK_TB_READY &&
		    (!boot_of(json_object_get(j, "boot"), &b->boot) ||
		     (b->boot.layer && access(b->boot.layer, F_OK) < 0)))
			lost = "its files are gone";
		else if (b->status == FK_TB_WAITING || b->status == FK_TB_BUILDING)
			lost = "the server stopped during this build";
		if (lost) {
			fk_tboot_clear(&b->boot);
			b->status = FK_TB_ERROR;
			free(b->reason);
			b->reason = strdup(lost);
			b->disk_mb = -1;
		}
		*bt = b;
		bt = &b->next;
	}
	*c->tail = t;
	c->tail = &t->next;
	c->n++;
}

/* Is `name` (an entry of the layers directory) the layer of a ready build? (under no lock:
 * before serving) */
static bool layer_used(fk_tstore *s, const char *path)
{
	for (fk_ttemplate *t = s->list; t; t = t->next)
		for (fk_tbuild *b = t->builds; b; b = b->next)
			if (b->status == FK_TB_READY && b->boot.layer &&
			    !strcmp(b->boot.layer, path))
				return true;
	return false;
}

static void load_store(fk_tstore *s)
{
	tload c = {.s = s, .tail = &s->list};
	fk_state_load(s->state, "templates", load_template, &c);
	/* every template whose build ended meanwhile says so in its record */
	for (fk_ttemplate *t = s->list; t; t = t->next)
		fk__tstore_persist(s, t->id);
	DIR *d = opendir(s->layers_dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", s->layers_dir, e->d_name);
		if (layer_used(s, path))
			continue;
		fk__tstore_rm_tree(path);
		fprintf(stderr, "fake-e2b: sweep: removed %s (no build of this server's)\n", path);
	}
	if (d)
		closedir(d);
	if (c.n)
		fprintf(stderr, "fake-e2b: state: %d template(s) kept\n", c.n);
}

int fk_tstore_new(fk_tstore **out, fk_rt *rt, const unsigned char seed[32], fk_state *state)
{
	*out = NULL;
	fk_tstore *s = calloc(1, sizeof(*s));
	if (!s)
		return FK_T_FAILED;
	s->rt = rt;
	s->state = state;
	memcpy(s->seed, seed, sizeof(s->seed));
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->rec_lock, NULL);
	pthread_cond_init(&s->slot_free, NULL);
	const char *st = fk_rt_state_dir(rt);
	if (asprintf(&s->layers_dir, "%s/.templates", st) < 0)
		s->layers_dir = NULL;
	if (asprintf(&s->files_dir, "%s/.template-files", st) < 0)
		s->files_dir = NULL;
	if (!state) {
		/* templates live as long as the server: what an earlier run left is no one's */
		fk__tstore_rm_tree(s->layers_dir);
		fk__tstore_rm_tree(s->files_dir);
	}
	if (!s->layers_dir || !s->files_dir ||
	    (mkdir(s->layers_dir, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(s->files_dir, 0700) < 0 && errno != EEXIST)) {
		fk_tstore_free(s);
		return FK_T_FAILED;
	}
	if (state)
		load_store(s);
	*out = s;
	return FK_T_OK;
}

void fk_tboot_clear(fk_tboot *b)
{
	if (!b)
		return;
	free(b->template_id);
	free(b->base);
	free(b->layer);
	free(b->user);
	free(b->workdir);
	for (size_t i = 0; i < b->n_envs; i++)
		free(b->envs[i]);
	free(b->envs);
	free(b->start_cmd);
	free(b->ready_cmd);
	free(b->alias);
	memset(b, 0, sizeof(*b));
}

void fk_tstore_free(fk_tstore *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->slot_free); /* queued builds give up */
	pthread_mutex_unlock(&s->lock);
	/* every build sandbox goes, so the builds' commands end; then join them */
	for (fk_ttemplate *t = s->list; t; t = t->next) {
		for (fk_tbuild *b = t->builds; b; b = b->next) {
			char box[sizeof(b->box_id)];
			pthread_mutex_lock(&s->lock);
			memcpy(box, b->box_id, sizeof(box));
			pthread_mutex_unlock(&s->lock);
			if (*box)
				fk_box_destroy(s->rt, box, NULL);
			if (b->has_thread)
				pthread_join(b->thread, NULL);
		}
	}
	while (s->list) {
		fk_ttemplate *t = s->list;
		s->list = t->next;
		fk__ttemplate_free(t);
	}
	if (!s->state) { /* a kept store's layers and archives stay for the next start */
		fk__tstore_rm_tree(s->layers_dir);
		fk__tstore_rm_tree(s->files_dir);
	}
	for (size_t i = 0; i < 2 * s->n_images; i++)
		free(s->images[i]);
	free(s->images);
	free(s->layers_dir);
	free(s->files_dir);
	pthread_cond_destroy(&s->slot_free);
	pthread_mutex_destroy(&s->rec_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int fk__tstore_fail(char *msg, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msg && cap)
		vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
	return rc;
}

int fk__tstore_ref_ident(const char *ref, char ident[129], char *msg, size_t cap)
{
	size_t n = strcspn(ref, ":");
	if (n == 0 || n > 128)
		return fk__tstore_fail(msg, cap, FK_T_NOTFOUND, "template '%.128s' not found", ref);
	memcpy(ident, ref, n);
	ident[n] = '\0';
	if (fk_template_find(ident)) /* E2B: another team's template */
		return fk__tstore_fail(msg, cap, FK_T_FORBIDDEN,
		                       "You don't have access to template '%s'", ident);
	return FK_T_OK;
}

/* The template with this templateID or name (under the lock). */
fk_ttemplate *fk__tstore_find_template(fk_tstore *s, const char *id_or_name, size_t n)
{
	for (fk_ttemplate *t = s->list; t; t = t->next)
		if ((strlen(t->id) == n && !strncmp(t->id, id_or_name, n)) ||
		    (strlen(t->name) == n && !strncmp(t->name, id_or_name, n)))
			return t;
	return NULL;
}

fk_tbuild *fk__tstore_find_build(fk_ttemplate *t, const char *build_id)
{
	for (fk_tbuild *b = t ? t->builds : NULL; b; b = b->next)
		if (!strcmp(b->id, build_id))
			return b;
	return NULL;
}

static fk_tbuild *newest_ready(fk_ttemplate *t)
{
	for (fk_tbuild *b = t->builds; b; b = b->next)
		if (b->status == FK_TB_READY)
			return b;
	return NULL;
}

/* The build a reference "name[:tag]" (or templateID[:tag]) names (under the lock): the tag's
 * build, or without a tag the `default` tag's, else the newest ready build. */
fk_tbuild *fk__tstore_find_ref(fk_tstore *s, const char *ref, fk_ttemplate **tmpl_out)
{
	const char *colon = strchr(ref, ':');
	size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
	fk_ttemplate *t = fk__tstore_find_template(s, ref, n);
	if (tmpl_out)
		*tmpl_out = t;
	if (!t)
		return NULL;
	const char *tag = colon ? colon + 1 : "default";
	json_t *bid = json_object_get(json_object_get(t->tags, tag), "buildID");
	if (json_is_string(bid))
		return fk__tstore_find_build(t, json_string_value(bid));
	return colon ? NULL : newest_ready(t);
}

static char **strv_dup(char *const *v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; out && i < n; i++) {
		if (!(out[i] = strdup(v[i]))) {
			while (i)
				free(out[--i]);
			free(out);
			return NULL;
		}
	}
	return out;
}

static int boot_copy(const fk_tboot *in, fk_tboot *out)
{
	memset(out, 0, sizeof(*out));
#define DUP(f) (!in->f || (out->f = strdup(in->f)))
	bool ok = DUP(template_id) && DUP(base) && DUP(layer) && DUP(user) && DUP(workdir) &&
	          DUP(start_cmd) && DUP(ready_cmd) && DUP(alias);
#undef DUP
	out->cpu_count = in->cpu_count;
	out->memory_mb = in->memory_mb;
	if (ok && (out->envs = strv_dup(in->envs, in->n_envs)))
		out->n_envs = in->n_envs;
	else
		ok = false;
	if (!ok) {
		fk_tboot_clear(out);
		return FK_T_FAILED;
	}
	return FK_T_OK;
}

int fk_tstore_resolve(fk_tstore *s, const char *ref, fk_tboot *out)
{
	memset(out, 0, sizeof(*out));
	if (!ref)
		return FK_T_NOTFOUND;
	const fk_template *rt_tpl = fk_template_find(ref);
	if (rt_tpl) {
		out->template_id = strdup(rt_tpl->id);
		out->base = strdup(rt_tpl->id);
		out->user = strdup(rt_tpl->user);
		out->workdir = strdup(rt_tpl->workdir);
		out->envs = calloc(1, sizeof(char *));
		out->alias = strdup(rt_tpl->id);
		out->cpu_count = FK_BOX_DEFAULT_CPUS;
		out->memory_mb = FK_BOX_DEFAULT_MEMORY_MB;
		if (!out->template_id || !out->base || !out->user || !out->workdir || !out->envs ||
		    !out->alias) {
			fk_tboot_clear(out);
			return FK_T_FAILED;
		}
		return FK_T_OK;
	}
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = NULL;
	fk_tbuild *b = fk__tstore_find_ref(s, ref, &t);
	int rc = b && b->status == FK_TB_READY ? boot_copy(&b->boot, out) : FK_T_NOTFOUND;
	if (rc == FK_T_OK) {
		/* E2B's sandbox gets its build's vcpu and ram_mb (orchestrator/create_instance.go)
		 * and its template's first alias (handlers/sandbox_create.go firstAlias) */
		out->cpu_count = b->cpu_count;
		out->memory_mb = b->memory_mb;
		free(out->alias);
		out->alias = strdup(t->snapshot_of && !t->named ? "" : t->name);
		if (!out->alias) {
			fk_tboot_clear(out);
			rc = FK_T_FAILED;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---- images ------------------------------------------------------------------------------- */

/* Docker's reference without the default registry and namespace, with ":latest" when it has
 * no tag or digest. Caller frees. */
static char *image_norm(const char *image, size_t n)
{
	if (n >= 10 && !strncmp(image, "docker.io/", 10))
		image += 10, n -= 10;
	if (n >= 8 && !strncmp(image, "library/", 8))
		image += 8, n -= 8;
	const char *slash = memrchr(image, '/', n);
	const char *last = slash ? slash + 1 : image;
	bool tagged = memchr(last, ':', n - (size_t)(last - image)) || memchr(image, '@', n);
	char *out;
	if (asprintf(&out, "%.*s%s", (int)n, image, tagged ? "" : ":latest") < 0)
		return NULL;
	return out;
}

int fk_tstore_add_images(fk_tstore *s, const char *const *images, size_t n)
{
	char **v = calloc(2 * (n + 1), sizeof(char *));
	if (!v)
		return FK_T_FAILED;
	size_t k = 0;
	int rc = FK_T_OK;
	for (size_t i = 0; i <= n && rc == FK_T_OK; i++) {
		const char *spec = i < n ? images[i] : "e2bdev/base=base";
		const char *eq = strchr(spec, '=');
		if (!eq || eq == spec || !eq[1]) {
			rc = FK_T_INVALID;
			break;
		}
		v[k] = image_norm(spec, (size_t)(eq - spec));
		v[k + 1] = strdup(eq + 1);
		if (!v[k] || !v[k + 1])
			rc = FK_T_FAILED;
		k += 2;
	}
	if (rc < 0) {
		for (size_t i = 0; i < k; i++)
			free(v[i]);
		free(v);
		return rc;
	}
	s->images = v;
	s->n_images = k / 2;
	return FK_T_OK;
}

char *fk_tstore_image(fk_tstore *s, const char *image)
{
	char *norm = image_norm(image, strlen(image));
	const char *found = NULL;
	if (norm && !strncmp(norm, "e2bdev/base:", 12))
		found = "base"; /* every tag of E2B's base image */
	for (size_t i = 0; norm && !found && i < s->n_images; i++)
		if (!strcmp(s->images[2 * i], norm))
			found = s->images[2 * i + 1];
	char *out = found ? strdup(found) : NULL;
	/* a Dockerfile's FROM naming a local template ("FROM capybara-sandbox", "FROM mine:v2"):
	 * that template (":latest", Docker's default tag, is the template's default) */
	if (!found && norm && !strchr(norm, '/') && !strchr(norm, '@')) {
		size_t n = strlen(norm);
		if (n > 7 && !strcmp(norm + n - 7, ":latest"))
			norm[n - 7] = '\0';
		fk_tboot probe;
		if (fk_tstore_resolve(s, norm, &probe) == FK_T_OK) {
			fk_tboot_clear(&probe);
			out = strdup(norm);
		}
	}
	free(norm);
	return out;
}

const char *fk__tbuild_status_name(int st)
{
	switch (st) {
	case FK_TB_BUILDING:
		return "building";
	case FK_TB_READY:
		return "ready";
	case FK_TB_ERROR:
		return "error";
	default:
		return "waiting";
	}
}

/* ---- builder.c's calls --------------------------------------------------------------------- */

void fk__build_log(fk_tstore *s, fk_tbuild *b, const char *level, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	json_t *e = json_pack("{s:o,s:s,s:s}", "timestamp", fk__tstore_time(fk_now_ns()), "level",
	                      level, "message", text);
	free(text);
	if (!e)
		return;
	pthread_mutex_lock(&s->lock);
	if (*b->step)
		json_object_set_new(e, "step", json_string(b->step));
	fk__build_log_append(s, b, e); /* within the caps (buildlog.c) */
	b->updated_ns = fk_now_ns();
	pthread_mutex_unlock(&s->lock);
}

void fk__build_step(fk_tstore *s, fk_tbuild *b, const char *step)
{
	pthread_mutex_lock(&s->lock);
	snprintf(b->step, sizeof(b->step), "%s", step ? step : "");
	pthread_mutex_unlock(&s->lock);
}

bool fk__build_set_box(fk_tstore *s, fk_tbuild *b, const char *box_id)
{
	pthread_mutex_lock(&s->lock);
	bool ok = !*box_id || !s->stopping;
	snprintf(b->box_id, sizeof(b->box_id), "%s", ok ? box_id : "");
	pthread_mutex_unlock(&s->lock);
	return ok;
}

bool fk__build_wait_slot(fk_tstore *s, fk_tbuild *b)
{
	bool waited = false;
	pthread_mutex_lock(&s->lock);
	while (!b->has_slot && !s->stopping) {
		if (s->running < FK_BUILDS_RUNNING) {
			s->running++;
			b->has_slot = true;
			b->status = FK_TB_BUILDING;
			b->updated_ns = fk_now_ns();
			waited = true;
		} else {
			pthread_cond_wait(&s->slot_free, &s->lock);
		}
	}
	bool ok = b->has_slot && !s->stopping;
	pthread_mutex_unlock(&s->lock);
	if (ok && waited) /* its start (one with a slot at once logged it when started) */
		fk__build_log(s, b, "info", "Building template %s/%s", b->template_id, b->id);
	return ok;
}

void fk__build_finish(fk_tstore *s, fk_tbuild *b, fk_tboot *boot, const char *reason,
                      const char *step)
{
	int64_t disk_mb = boot && !reason ? fk__tstore_tree_mb(boot->layer) : -1;
	pthread_mutex_lock(&s->lock);
	if (b->has_slot) {
		b->has_slot = false;
		s->running--;
		pthread_cond_signal(&s->slot_free);
	}
	b->finished_ns = b->updated_ns = b->tmpl->updated_ns = fk_now_ns();
	if (boot && !reason) {
		b->boot = *boot;
		memset(boot, 0, sizeof(*boot));
		b->status = FK_TB_READY;
		b->disk_mb = disk_mb;
	} else {
		b->status = FK_TB_ERROR;
		b->reason = strdup(reason ? reason : "build failed");
		b->reason_step = step ? strdup(step) : NULL;
	}
	pthread_mutex_unlock(&s->lock);
	fk__tstore_persist(s, b->template_id);
}
