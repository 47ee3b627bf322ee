/*
 * fake-e2b/registry/templates.c: the template store (builds.h): built templates, their builds,
 * tags and aliases, uploads of COPY archives, and the runtime's own templates as E2B names them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builds_int.h"
#include "clock.h"
#include "template.h"

typedef struct fk_ttemplate fk_ttemplate;

/* ---- names --------------------------------------------------------------------------------- */

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

static bool tag_ok(const char *s)
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

static void random_id(char out[21])
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[20];
	if (RAND_bytes(r, sizeof(r)) != 1)
		memset(r, 0, sizeof(r));
	for (size_t i = 0; i < 20; i++)
		out[i] = abc[r[i] % 36];
	out[20] = '\0';
}

static void random_uuid(char out[37])
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

static json_t *time_json(int64_t ns)
{
	char buf[48];
	fk_format_time(buf, sizeof(buf), ns);
	return json_string(buf);
}

/* ---- the store ----------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* rm -rf (never following a symlink: a layer holds whatever a sandbox left). */
void fk__tstore_rm_tree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
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

int fk_tstore_new(fk_tstore **out, fk_rt *rt, const unsigned char seed[32])
{
	*out = NULL;
	fk_tstore *s = calloc(1, sizeof(*s));
	if (!s)
		return FK_T_FAILED;
	s->rt = rt;
	memcpy(s->seed, seed, sizeof(s->seed));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->slot_free, NULL);
	const char *st = fk_rt_state_dir(rt);
	if (asprintf(&s->layers_dir, "%s/.templates", st) < 0)
		s->layers_dir = NULL;
	if (asprintf(&s->files_dir, "%s/.template-files", st) < 0)
		s->files_dir = NULL;
	/* templates live as long as the server: what an earlier run left is no one's */
	fk__tstore_rm_tree(s->layers_dir);
	fk__tstore_rm_tree(s->files_dir);
	if (!s->layers_dir || !s->files_dir ||
	    (mkdir(s->layers_dir, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(s->files_dir, 0700) < 0 && errno != EEXIST)) {
		fk_tstore_free(s);
		return FK_T_FAILED;
	}
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
	fk__tstore_rm_tree(s->layers_dir);
	fk__tstore_rm_tree(s->files_dir);
	for (size_t i = 0; i < 2 * s->n_images; i++)
		free(s->images[i]);
	free(s->images);
	free(s->layers_dir);
	free(s->files_dir);
	pthread_cond_destroy(&s->slot_free);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The template with this templateID or name (under the lock). */
static fk_ttemplate *find_template(fk_tstore *s, const char *id_or_name, size_t n)
{
	for (fk_ttemplate *t = s->list; t; t = t->next)
		if ((strlen(t->id) == n && !strncmp(t->id, id_or_name, n)) ||
		    (strlen(t->name) == n && !strncmp(t->name, id_or_name, n)))
			return t;
	return NULL;
}

static fk_tbuild *find_build(fk_ttemplate *t, const char *build_id)
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
static fk_tbuild *find_ref(fk_tstore *s, const char *ref, fk_ttemplate **tmpl_out)
{
	const char *colon = strchr(ref, ':');
	size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
	fk_ttemplate *t = find_template(s, ref, n);
	if (tmpl_out)
		*tmpl_out = t;
	if (!t)
		return NULL;
	const char *tag = colon ? colon + 1 : "default";
	json_t *bid = json_object_get(json_object_get(t->tags, tag), "buildID");
	if (json_is_string(bid))
		return find_build(t, json_string_value(bid));
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
	          DUP(start_cmd) && DUP(ready_cmd);
#undef DUP
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
		if (!out->template_id || !out->base || !out->user || !out->workdir || !out->envs) {
			fk_tboot_clear(out);
			return FK_T_FAILED;
		}
		return FK_T_OK;
	}
	pthread_mutex_lock(&s->lock);
	fk_tbuild *b = find_ref(s, ref, NULL);
	int rc = b && b->status == FK_TB_READY ? boot_copy(&b->boot, out) : FK_T_NOTFOUND;
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

/* ---- requests and builds ------------------------------------------------------------------- */

static int fail_msg(char *msg, size_t cap, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_msg(char *msg, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
	return rc;
}

/* Points `tag` of template t at build b (under the lock). */
static int set_tag(fk_ttemplate *t, const char *tag, const fk_tbuild *b)
{
	json_t *v = json_pack("{s:s,s:o}", "buildID", b->id, "createdAt", time_json(fk_now_ns()));
	return v && json_object_set_new(t->tags, tag, v) == 0 ? FK_T_OK : FK_T_FAILED;
}

int fk_tstore_request(fk_tstore *s, const char *name, json_t *tags, unsigned cpu_count,
                      unsigned memory_mb, json_t **reply, char *msg, size_t cap)
{
	*reply = NULL;
	if (!name)
		return fail_msg(msg, cap, FK_T_INVALID, "name is required");
	const char *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);
	if (!name_ok(name, n))
		return fail_msg(msg, cap, FK_T_INVALID,
		                "invalid template name '%.*s': use 1 to 128 lower-case letters, "
		                "digits, '-', '_' or '.'",
		                (int)(n > 200 ? 200 : n), name);
	if (colon && !tag_ok(colon + 1))
		return fail_msg(msg, cap, FK_T_INVALID, "invalid tag '%.200s'", colon + 1);
	char alias[129];
	memcpy(alias, name, n);
	alias[n] = '\0';
	if (fk_template_find(alias))
		return fail_msg(msg, cap, FK_T_INVALID,
		                "template name '%s' is taken by a template fake-e2b serves", alias);
	size_t n_tags = json_is_array(tags) ? json_array_size(tags) : 0;
	if (tags && !json_is_null(tags) && !json_is_array(tags))
		return fail_msg(msg, cap, FK_T_INVALID, "tags must be an array of strings");
	for (size_t i = 0; i < n_tags; i++)
		if (!tag_ok(json_string_value(json_array_get(tags, i))))
			return fail_msg(msg, cap, FK_T_INVALID, "invalid tag in tags");

	fk_tbuild *b = calloc(1, sizeof(*b));
	json_t *tag_list = json_array();
	if (!b || !tag_list || !(b->logs = json_array())) {
		free(b);
		json_decref(tag_list);
		return fail_msg(msg, cap, FK_T_FAILED, "out of memory");
	}
	random_uuid(b->id);
	b->created_ns = b->updated_ns = fk_now_ns();
	b->cpu_count = cpu_count;
	b->memory_mb = memory_mb;
	if (colon)
		json_array_append_new(tag_list, json_string(colon + 1));
	for (size_t i = 0; i < n_tags; i++)
		json_array_append(tag_list, json_array_get(tags, i));
	if (json_array_size(tag_list) == 0)
		json_array_append_new(tag_list, json_string("default"));

	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = find_template(s, alias, n);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (t && (t->name = strdup(alias)) && (t->tags = json_object())) {
			random_id(t->id);
			t->created_ns = b->created_ns;
			t->next = s->list;
			s->list = t;
		} else if (t) {
			free(t->name);
			free(t);
			t = NULL;
		}
	}
	if (!t) {
		pthread_mutex_unlock(&s->lock);
		json_decref(b->logs);
		free(b);
		json_decref(tag_list);
		return fail_msg(msg, cap, FK_T_FAILED, "out of memory");
	}
	b->tmpl = t;
	memcpy(b->template_id, t->id, sizeof(b->template_id));
	b->next = t->builds;
	t->builds = b;
	size_t i;
	json_t *tg;
	json_array_foreach(tag_list, i, tg) set_tag(t, json_string_value(tg), b);
	*reply = json_pack("{s:s,s:s,s:b,s:[s],s:[s],s:o}", "templateID", t->id, "buildID", b->id,
	                   "public", 0, "names", t->name, "aliases", t->name, "tags", tag_list);
	pthread_mutex_unlock(&s->lock);
	return *reply ? FK_T_OK : fail_msg(msg, cap, FK_T_FAILED, "out of memory");
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
		return fail_msg(msg, cap, FK_T_INVALID, "request body must be a JSON object");
	json_t *steps = json_object_get(spec, "steps");
	if (steps && !json_is_array(steps) && !json_is_null(steps))
		return fail_msg(msg, cap, FK_T_INVALID, "steps must be an array");
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = find_template(s, template_id, strlen(template_id));
	fk_tbuild *b = t && !strcmp(t->id, template_id) ? find_build(t, build_id) : NULL;
	int rc = FK_T_OK;
	if (!b)
		rc = fail_msg(msg, cap, FK_T_NOTFOUND,
		              "build '%.64s' of template '%.64s' not found", build_id, template_id);
	else if (b->status != FK_TB_WAITING || b->has_thread)
		rc = fail_msg(msg, cap, FK_T_CONFLICT, "build '%s' was already started", b->id);
	else if (s->stopping)
		rc = fail_msg(msg, cap, FK_T_FAILED, "server shutting down");
	void **arg = rc == FK_T_OK ? malloc(2 * sizeof(void *)) : NULL;
	if (rc == FK_T_OK && arg) {
		b->spec = json_deep_copy(spec);
		/* building at once when a slot is free (a status call right after sees it), else
		 * waiting for one on its thread */
		b->has_slot = s->running < FK_BUILDS_RUNNING;
		if (b->has_slot)
			s->running++;
		b->status = b->has_slot ? FK_TB_BUILDING : FK_TB_WAITING;
		/* logged here, so a status call right after this one already shows it */
		json_array_append_new(b->logs,
		                      json_pack("{s:o,s:s,s:s+++}", "timestamp",
		                                time_json(fk_now_ns()), "level", "info", "message",
		                                "Building template ", b->template_id, "/", b->id));
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
			rc = fail_msg(msg, cap, FK_T_FAILED, "cannot start the build");
		}
	} else if (rc == FK_T_OK) {
		rc = fail_msg(msg, cap, FK_T_FAILED, "out of memory");
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static const char *status_name(int st)
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

int fk_tstore_build_status(fk_tstore *s, const char *template_id, const char *build_id,
                           size_t offset, size_t limit, json_t **reply)
{
	*reply = NULL;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = find_template(s, template_id, strlen(template_id));
	fk_tbuild *b = t && !strcmp(t->id, template_id) ? find_build(t, build_id) : NULL;
	if (!b) {
		pthread_mutex_unlock(&s->lock);
		return FK_T_NOTFOUND;
	}
	json_t *entries = json_array(), *lines = json_array();
	size_t total = json_array_size(b->logs);
	for (size_t i = offset; i < total && i - offset < limit; i++) {
		json_t *e = json_array_get(b->logs, i);
		json_array_append(entries, e);
		json_array_append(lines, json_object_get(e, "message"));
	}
	*reply = json_pack("{s:s,s:s,s:s,s:o,s:o}", "templateID", t->id, "buildID", b->id, "status",
	                   status_name(b->status), "logs", lines, "logEntries", entries);
	if (*reply && b->status == FK_TB_ERROR) {
		json_t *reason = json_pack("{s:s,s:[]}", "message",
		                           b->reason ? b->reason : "build failed", "logEntries");
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
		*reply = json_pack("{s:s,s:b}", "templateID", t->id, "public", 0);
	pthread_mutex_unlock(&s->lock);
	return t ? (*reply ? FK_T_OK : FK_T_FAILED) : FK_T_NOTFOUND;
}

/* ---- tags ---------------------------------------------------------------------------------- */

static int check_tags(json_t *tags, char *msg, size_t cap)
{
	if (!json_is_array(tags) || json_array_size(tags) == 0)
		return fail_msg(msg, cap, FK_T_INVALID,
		                "tags must be a non-empty array of strings");
	size_t i;
	json_t *tg;
	json_array_foreach(tags, i, tg)
	{
		if (!tag_ok(json_string_value(tg)))
			return fail_msg(
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
		return fail_msg(msg, cap, FK_T_INVALID, "target is required");
	int rc = check_tags(tags, msg, cap);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = NULL;
	fk_tbuild *b = find_ref(s, target, &t);
	if (!b) {
		pthread_mutex_unlock(&s->lock);
		return fail_msg(msg, cap, FK_T_NOTFOUND, "template '%.200s' not found", target);
	}
	size_t i;
	json_t *tg;
	json_array_foreach(tags, i, tg)
	{
		if (set_tag(t, json_string_value(tg), b) < 0)
			rc = FK_T_FAILED;
	}
	*reply = json_pack("{s:O,s:s}", "tags", tags, "buildID", b->id);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0 || !*reply) {
		json_decref(*reply);
		*reply = NULL;
		return fail_msg(msg, cap, FK_T_FAILED, "out of memory");
	}
	return FK_T_OK;
}

int fk_tstore_tags_remove(fk_tstore *s, const char *name, json_t *tags, char *msg, size_t cap)
{
	if (!name || !*name)
		return fail_msg(msg, cap, FK_T_INVALID, "name is required");
	int rc = check_tags(tags, msg, cap);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = find_template(s, name, strlen(name));
	if (t) {
		size_t i;
		json_t *tg;
		json_array_foreach(tags, i, tg) json_object_del(t->tags, json_string_value(tg));
	}
	pthread_mutex_unlock(&s->lock);
	return t ? FK_T_OK : fail_msg(msg, cap, FK_T_NOTFOUND, "template '%.200s' not found", name);
}

int fk_tstore_tags_list(fk_tstore *s, const char *template_id, json_t **reply)
{
	*reply = NULL;
	pthread_mutex_lock(&s->lock);
	fk_ttemplate *t = find_template(s, template_id, strlen(template_id));
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
	fk_ttemplate *t = find_template(s, template_id, strlen(template_id));
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
	random_id(rnd);
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
			return FK_T_FAILED;
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
	json_t *e = json_pack("{s:o,s:s,s:s}", "timestamp", time_json(fk_now_ns()), "level", level,
	                      "message", text);
	free(text);
	if (!e)
		return;
	pthread_mutex_lock(&s->lock);
	size_t kept = json_array_size(b->logs);
	if (kept + 1 < FK_BUILD_LOG_MAX) {
		json_array_append_new(b->logs, e);
	} else {
		json_decref(e);
		if (kept + 1 == FK_BUILD_LOG_MAX)
			json_array_append_new(
			    b->logs,
			    json_pack("{s:o,s:s,s:s}", "timestamp", time_json(fk_now_ns()), "level",
			              "warn", "message",
			              "log limit reached: later lines of this build are not kept"));
	}
	b->updated_ns = fk_now_ns();
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
	pthread_mutex_lock(&s->lock);
	while (!b->has_slot && !s->stopping) {
		if (s->running < FK_BUILDS_RUNNING) {
			s->running++;
			b->has_slot = true;
			b->status = FK_TB_BUILDING;
			b->updated_ns = fk_now_ns();
		} else {
			pthread_cond_wait(&s->slot_free, &s->lock);
		}
	}
	bool ok = b->has_slot && !s->stopping;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void fk__build_finish(fk_tstore *s, fk_tbuild *b, fk_tboot *boot, const char *reason,
                      const char *step)
{
	pthread_mutex_lock(&s->lock);
	if (b->has_slot) {
		b->has_slot = false;
		s->running--;
		pthread_cond_signal(&s->slot_free);
	}
	b->finished_ns = b->updated_ns = fk_now_ns();
	if (boot && !reason) {
		b->boot = *boot;
		memset(boot, 0, sizeof(*boot));
		b->status = FK_TB_READY;
	} else {
		b->status = FK_TB_ERROR;
		b->reason = strdup(reason ? reason : "build failed");
		b->reason_step = step ? strdup(step) : NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- for snapshots.c (builds_int.h) -------------------------------------------------------- */

bool fk__tstore_name_ok(const char *s, size_t n)
{
	return name_ok(s, n);
}

bool fk__tstore_tag_ok(const char *s)
{
	return tag_ok(s);
}

void fk__tstore_random_id(char out[21])
{
	random_id(out);
}

void fk__tstore_random_uuid(char out[37])
{
	random_uuid(out);
}
