/*
 * cli/shapes.c: library results as the JSON of --json and serve (shapes.h).
 */
#include "shapes.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_shape_bytes(json_t *obj, const char *key, const unsigned char *data, size_t len)
{
	char b64key[64];
	unsigned char *enc;
	json_t *s;

	if (!obj)
		return -1;
	/* json_stringn() accepts any valid UTF-8, NUL bytes included (sent as \u0000). */
	if ((s = json_stringn((const char *)data, len)))
		return json_object_set_new(obj, key, s);
	if (len > (size_t)INT32_MAX / 4 * 3)
		return -1;
	if (!(enc = malloc(4 * ((len + 2) / 3) + 1)))
		return -1;
	EVP_EncodeBlock(enc, data, (int)len);
	snprintf(b64key, sizeof(b64key), "%s_b64", key);
	s = json_string((const char *)enc);
	free(enc);
	if (!s || json_object_set_new(obj, key, json_null()) < 0 ||
	    json_object_set_new(obj, b64key, s) < 0)
		return -1;
	return 0;
}

/* The library's message without the leading "sandbox-e2b: ". */
static const char *lib_message(const char *msg)
{
	static const char prefix[] = "sandbox-e2b: ";

	if (msg && strncmp(msg, prefix, sizeof(prefix) - 1) == 0)
		return msg + sizeof(prefix) - 1;
	return msg;
}

json_t *cli_shape_error(int code, const sbx_error *err, const char *message, const char *hint)
{
	json_t *e;

	if (!message)
		message =
		    err && err->message[0] ? lib_message(err->message) : sbx_error_code_name(code);
	e = json_pack("{s:s,s:s}", "code", sbx_error_code_name(code), "message", message);
	if (!e)
		return NULL;
	if (hint)
		json_object_set_new(e, "hint", json_string(hint));
	if (err && err->http_status)
		json_object_set_new(e, "http_status", json_integer(err->http_status));
	if (err && err->e2b_code[0])
		json_object_set_new(e, "e2b_code", json_string(err->e2b_code));
	return e;
}

json_t *cli_shape_exec_result(const sbx_exec_result *r)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "exit_code",
	                    r->has_exit_code ? json_integer(r->exit_code) : json_null());
	if (cli_shape_bytes(o, "stdout", r->stdout_data, r->stdout_len) < 0 ||
	    cli_shape_bytes(o, "stderr", r->stderr_data, r->stderr_len) < 0) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "truncated", json_boolean(r->truncated));
	json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
	json_object_set_new(o, "aborted", json_boolean(r->aborted));
	return o;
}

json_t *cli_shape_created(const char *id, const char *name)
{
	return json_pack("{s:s,s:s}", "id", id, "name", name);
}

json_t *cli_shape_resume(const char *id, sbx_resume_status st)
{
	return json_pack("{s:s,s:s}", "id", id, "status", st == SBX_RESUMED ? "resumed" : "gone");
}

json_t *cli_shape_file(const char *path, const sbx_file *f)
{
	json_t *o;

	if (!f)
		return json_pack("{s:s,s:b}", "path", path, "exists", 0);
	o = json_pack("{s:s,s:b,s:I,s:b}", "path", path, "exists", 1, "size", (json_int_t)f->len,
	              "truncated", f->truncated);
	if (o && cli_shape_bytes(o, "content", f->data, f->len) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_shape_stat(const char *path, const sbx_stat *st)
{
	return json_pack("{s:s,s:b,s:I,s:b}", "path", path, "exists", st->exists, "size",
	                 (json_int_t)st->size, "is_dir", st->is_dir);
}

const char *cli_shape_state_name(sbx_sandbox_state st)
{
	switch (st) {
	case SBX_STATE_RUNNING:
		return "running";
	case SBX_STATE_PAUSED:
		return "paused";
	default:
		return "any";
	}
}

/* ms since the epoch as RFC 3339 UTC with milliseconds, or null when 0 (unknown). */
static json_t *time_or_null(int64_t ms)
{
	char buf[40];
	struct tm tm;
	time_t t;

	if (ms <= 0)
		return json_null();
	t = (time_t)(ms / 1000);
	if (!gmtime_r(&t, &tm))
		return json_null();
	size_t n;

	n = strftime(buf, sizeof(buf) - 8, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(ms % 1000));
	return json_string(buf);
}

json_t *cli_shape_sandbox_info(const sbx_sandbox_info *info)
{
	json_t *o = json_pack("{s:s,s:s?,s:s,s:s}", "id", info->id, "name", info->name, "state",
	                      cli_shape_state_name(info->state), "template_id",
	                      info->template_id ? info->template_id : "");

	if (!o)
		return NULL;
	if (json_object_set_new(o, "started_at", time_or_null(info->started_at_ms)) < 0 ||
	    json_object_set_new(o, "end_at", time_or_null(info->end_at_ms)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_shape_info_list(const sbx_info_list *list)
{
	json_t *a = json_array();

	for (size_t i = 0; a && list && i < list->count; i++)
		if (json_array_append_new(a, cli_shape_sandbox_info(&list->items[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

const char *cli_shape_entry_type_name(sbx_entry_type t)
{
	switch (t) {
	case SBX_ENTRY_FILE:
		return "file";
	case SBX_ENTRY_DIR:
		return "dir";
	case SBX_ENTRY_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

/* protobuf-JSON Timestamp text: RFC 3339 UTC with 0, 3, 6 or 9 fraction digits. */
static json_t *timestamp(int64_t sec, uint32_t nsec)
{
	char base[40], buf[64];
	time_t t = (time_t)sec;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm))
		return json_null();
	if (nsec == 0)
		snprintf(buf, sizeof(buf), "%sZ", base);
	else if (nsec % 1000000 == 0)
		snprintf(buf, sizeof(buf), "%s.%03uZ", base, nsec / 1000000);
	else if (nsec % 1000 == 0)
		snprintf(buf, sizeof(buf), "%s.%06uZ", base, nsec / 1000);
	else
		snprintf(buf, sizeof(buf), "%s.%09uZ", base, nsec);
	return json_string(buf);
}

json_t *cli_shape_entry_info(const sbx_entry_info *e)
{
	json_t *o = json_object();
	const char *tgt = e->symlink_target;

	if (!o || cli_shape_bytes(o, "path", (const unsigned char *)e->path, strlen(e->path)) < 0 ||
	    cli_shape_bytes(o, "name", (const unsigned char *)e->name, strlen(e->name)) < 0 ||
	    json_object_set_new(o, "type", json_string(cli_shape_entry_type_name(e->type))) < 0 ||
	    json_object_set_new(o, "size", json_integer((json_int_t)e->size)) < 0 ||
	    json_object_set_new(o, "mode", json_integer((json_int_t)e->mode)) < 0 ||
	    json_object_set_new(o, "permissions", json_string(e->permissions)) < 0 ||
	    json_object_set_new(o, "owner", json_string(e->owner)) < 0 ||
	    json_object_set_new(o, "group", json_string(e->group)) < 0 ||
	    json_object_set_new(o, "mtime", timestamp(e->mtime_sec, e->mtime_nsec)) < 0 ||
	    (tgt ? cli_shape_bytes(o, "symlink_target", (const unsigned char *)tgt, strlen(tgt))
	         : json_object_set_new(o, "symlink_target", json_null())) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_shape_dir(const char *path, const sbx_dir *dir)
{
	json_t *o =
	    json_pack("{s:s,s:[],s:b}", "path", path, "entries", "truncated", dir->truncated);
	json_t *entries = o ? json_object_get(o, "entries") : NULL;

	for (size_t i = 0; entries && i < dir->count; i++) {
		const sbx_dir_entry *e = &dir->entries[i];
		json_t *je = json_object();
		if (!je ||
		    cli_shape_bytes(je, "name", (const unsigned char *)e->name, strlen(e->name)) <
		        0 ||
		    json_object_set_new(je, "type",
		                        json_string(cli_shape_entry_type_name(e->type))) < 0 ||
		    json_object_set_new(je, "size", json_integer((json_int_t)e->size)) < 0 ||
		    json_array_append_new(entries, je) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return entries ? o : (json_decref(o), NULL);
}

json_t *cli_shape_process_list(const char *id, const sbx_process_info_list *list)
{
	json_t *o = json_pack("{s:s,s:[]}", "id", id, "processes");
	json_t *procs = o ? json_object_get(o, "processes") : NULL;

	for (size_t i = 0; procs && list && i < list->count; i++) {
		const sbx_process_info *p = &list->items[i];
		json_t *args = json_array(), *jp;
		for (size_t k = 0; args && k < p->nargs; k++)
			if (json_array_append_new(args, json_string(p->args[k])) < 0)
				break;
		jp = args ? json_pack("{s:I,s:s?,s:s?,s:s,s:o,s:s?}", "pid", (json_int_t)p->pid,
		                      "tag", p->tag, "command", p->command, "cmd",
		                      p->cmd ? p->cmd : "", "args", args, "cwd", p->cwd)
		          : NULL;
		if (!jp || json_array_append_new(procs, jp) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return procs ? o : (json_decref(o), NULL);
}

json_t *cli_shape_process_started(const char *id, uint32_t pid)
{
	return json_pack("{s:s,s:I}", "id", id, "pid", (json_int_t)pid);
}

/* seconds since the epoch as RFC 3339 UTC ("2026-12-01T21:00:05Z") */
static const char *metric_time(char *buf, size_t len, int64_t unix_s)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%lld", (long long)unix_s);
	return buf;
}

json_t *cli_shape_metrics(const char *id, const sbx_metrics *m)
{
	json_t *o = json_pack("{s:s,s:[]}", "id", id, "metrics"),
	       *a = json_object_get(o, "metrics");
	char ts[40];

	for (size_t i = 0; a && i < m->count; i++) {
		const sbx_metric *x = &m->items[i];
		if (json_array_append_new(
		        a,
		        json_pack("{s:I,s:s,s:I,s:f,s:I,s:I,s:I,s:I,s:I}", "timestamp_unix",
		                  (json_int_t)x->timestamp_unix, "timestamp",
		                  metric_time(ts, sizeof(ts), x->timestamp_unix), "cpu_count",
		                  (json_int_t)x->cpu_count, "cpu_used_pct", x->cpu_used_pct,
		                  "mem_used", (json_int_t)x->mem_used, "mem_total",
		                  (json_int_t)x->mem_total, "mem_cache", (json_int_t)x->mem_cache,
		                  "disk_used", (json_int_t)x->disk_used, "disk_total",
		                  (json_int_t)x->disk_total)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return a ? o : (json_decref(o), NULL);
}
