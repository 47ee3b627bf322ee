/*
 * fake-e2b/registry/sblogs.c: a sandbox's logs, what GET /sandboxes/{id}/logs and
 * /v2/sandboxes/{id}/logs answer (infra handlers/sandbox_logs.go). In E2B they are the lines
 * its log store holds under the sandbox's id: what envd writes (zerolog JSON, sent through
 * the orchestrator, which sets instanceID, envID and teamID) and what the API and the
 * orchestrator log about the sandbox for its user (zap JSON, shared/pkg/logger/sandbox), each
 * line as the logs collector stores it (iac job-logs-collector vector.toml: sandboxID,
 * teamID, templateID... normalised, category "default", buildID "unknown", service "envd"
 * when unset, source_type "http_server" (Vector's source), the timestamp taken out, keys
 * sorted). Reading one back
 * (shared/pkg/logs/loki ResponseMapper, logs.FlatJsonLogLineParser): `message` and `level`
 * are its message and level, the other keys whose values are strings, numbers (Go's
 * FormatFloat 'G' -1) or booleans its fields, objects and arrays dropped; the v1 SandboxLog's
 * `line` is the line itself.
 *
 * Each sandbox keeps its last FK_SBLOGS_KEPT lines within FK_SBLOGS_BYTES, across pause and
 * resume, in its record when the server is kept (records.c); a deleted sandbox's stay readable
 * by id (E2B reads them from its store for 7 days) among the last FK_SBLOGS_GONE deleted.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "registry_int.h"

static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* A deleted sandbox's logs (fk_registry.gone, oldest first, under the registry lock). */
struct fk_gone_logs {
	struct fk_gone_logs *next;
	char id[FK_ID_LEN + 1];
	json_t *logs;
};
typedef struct fk_gone_logs gone_logs;

static size_t entry_bytes(json_t *e)
{
	return strlen(json_string_value(json_object_get(e, "line")));
}

/* Under the lock: the entry (stolen) at the end of `sb`'s logs, the oldest dropped beyond the
 * bounds. */
static void keep(fk_sandbox *sb, json_t *e)
{
	size_t len = entry_bytes(e);
	if (!sb->logs)
		sb->logs = json_array();
	if (!sb->logs || len > FK_SBLOGS_BYTES) {
		json_decref(e);
		return;
	}
	while (json_array_size(sb->logs) && (json_array_size(sb->logs) >= FK_SBLOGS_KEPT ||
	                                     sb->logs_bytes + len > FK_SBLOGS_BYTES)) {
		sb->logs_bytes -= entry_bytes(json_array_get(sb->logs, 0));
		json_array_remove(sb->logs, 0);
	}
	if (json_array_append_new(sb->logs, e) == 0)
		sb->logs_bytes += len;
}

void fk_sandbox_log(fk_registry *g, fk_sandbox *sb, enum fk_sblog_source src,
                    enum fk_sblog_level level, json_t *fields, const char *fmt, ...)
{
	static const char *const services[] = {"envd", "orchestration-api", "orchestrator",
	                                       "fake-e2b"};
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *l = json_is_object(fields) ? fields : json_object();
	if (fields && l != fields)
		json_decref(fields);
	if (!l)
		return;
	const char *tpl = sb->template_id ? sb->template_id : "";
	int bad = json_object_set_new(l, "level", json_string(level_names[level])) |
	          json_object_set_new(l, "message", json_string(msg)) |
	          json_object_set_new(l, "service", json_string(services[src])) |
	          json_object_set_new(l, "instanceID", json_string(sb->id)) |
	          json_object_set_new(l, "sandboxID", json_string(sb->id)) |
	          json_object_set_new(l, "envID", json_string(tpl)) |
	          json_object_set_new(l, "teamID", json_string(FK_TEAM_ID)) |
	          json_object_set_new(l, "category", json_string("default")) |
	          json_object_set_new(l, "source_type", json_string("http_server")) |
	          json_object_set_new(l, "buildID", json_string("unknown"));
	if (src != FK_SBLOG_ENVD) /* zap's logger name and fields of the sandbox logger */
		bad |= json_object_set_new(l, "logger", json_string(services[src])) |
		       json_object_set_new(l, "templateID", json_string(tpl)) |
		       json_object_set_new(l, "pid", json_integer(getpid()));
	char *line = bad ? NULL : json_dumps(l, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(l);
	json_t *e = line ? json_pack("{s:I,s:i,s:s}", "ns", (json_int_t)fk_now_ns(), "level",
	                             (int)level, "line", line)
	                 : NULL;
	free(line);
	if (!e)
		return;
	fk_registry_lock(g);
	if (!sb->deleted)
		keep(sb, e);
	else
		json_decref(e);
	fk_registry_unlock(g);
}

void fk_sandbox_log_created(fk_registry *g, fk_sandbox *sb, const char *started)
{
	fk_registry_lock(g);
	time_t end = (time_t)(sb->end_ns / FK_NS);
	fk_registry_unlock(g);
	struct tm tm;
	char when[40];
	gmtime_r(&end, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S +00:00", &tm);
	fk_sandbox_log(g, sb, FK_SBLOG_API, FK_SBLOG_DEBUG, NULL, "%s", started);
	fk_sandbox_log(g, sb, FK_SBLOG_API, FK_SBLOG_INFO, json_pack("{s:s}", "end_time", when),
	               "Sandbox created");
}

void fk_sandbox_log_stop(fk_registry *g, fk_sandbox *sb, const char *kill_reason)
{
	if (kill_reason)
		fk_sandbox_log(g, sb, FK_SBLOG_ORCH, FK_SBLOG_INFO,
		               json_pack("{s:s}", "kill_reason", kill_reason), "Killing sandbox");
	else
		fk_sandbox_log(g, sb, FK_SBLOG_ORCH, FK_SBLOG_INFO, NULL, "Pausing sandbox");
	fk_sandbox_log(g, sb, FK_SBLOG_ORCH, FK_SBLOG_INFO, NULL, "Sandbox stopped");
}

void fk_sandbox_note_oom(fk_registry *g, fk_sandbox *sb, uint64_t oom_kills)
{
	/* the box's cgroup, and so its count, lasts as long as the box in this server (a cold
	 * boot keeps it; a restarted server's box counts from 0, as oom_kills_seen, not kept): a
	 * lower count is an older reading (the sampler's, raced by a process's end), never told */
	fk_registry_lock(g);
	uint64_t seen = sb->oom_kills_seen;
	if (oom_kills > seen)
		sb->oom_kills_seen = oom_kills;
	fk_registry_unlock(g);
	if (oom_kills <= seen)
		return;
	fk_sandbox_log(g, sb, FK_SBLOG_FAKE, FK_SBLOG_WARN,
	               json_pack("{s:I,s:I}", "oom_kills", (json_int_t)(oom_kills - seen),
	                         "memory_mb", (json_int_t)sb->memory_mb),
	               "Out of memory: the kernel killed %llu process%s of the sandbox (memory "
	               "limit %u MiB)",
	               (unsigned long long)(oom_kills - seen), oom_kills - seen > 1 ? "es" : "",
	               sb->memory_mb);
}

void fk__sandbox_logs_bury(fk_registry *g, fk_sandbox *sb)
{
	gone_logs *d = calloc(1, sizeof(*d));
	fk_registry_lock(g);
	if (d && sb->logs) {
		snprintf(d->id, sizeof(d->id), "%s", sb->id);
		d->logs = sb->logs;
		sb->logs = NULL;
		sb->logs_bytes = 0;
		gone_logs **pp = &g->gone;
		while (*pp)
			pp = &(*pp)->next;
		*pp = d;
		d = NULL;
		if (++g->n_gone > FK_SBLOGS_GONE) {
			d = g->gone;
			g->gone = d->next;
			g->n_gone--;
		}
	}
	fk_registry_unlock(g);
	if (d)
		json_decref(d->logs);
	free(d);
}

void fk__sandbox_logs_forget_all(fk_registry *g)
{
	while (g->gone) {
		gone_logs *d = g->gone;
		g->gone = d->next;
		json_decref(d->logs);
		free(d);
	}
	g->n_gone = 0;
}

json_t *fk__sandbox_logs_record(const fk_sandbox *sb)
{
	return sb->logs ? json_deep_copy(sb->logs) : json_array();
}

void fk__sandbox_logs_restore(fk_sandbox *sb, json_t *logs)
{
	size_t i;
	json_t *e;
	json_array_foreach(logs, i, e)
	{
		json_t *ns = json_object_get(e, "ns"), *lv = json_object_get(e, "level"),
		       *line = json_object_get(e, "line");
		if (!json_is_integer(ns) || !json_is_integer(lv) || json_integer_value(lv) < 0 ||
		    json_integer_value(lv) > FK_SBLOG_ERROR || !json_is_string(line))
			continue;
		keep(sb, json_pack("{s:O,s:O,s:O}", "ns", ns, "level", lv, "line", line));
	}
}

/* Go's strconv.FormatFloat(v, 'G', -1, 64): the shortest digits that read back as v, in %E
 * form when the exponent is below -4 or at least 6 (shortest 'G' decides with precision 6),
 * else plain. */
static void go_format_g(double v, char *out, size_t cap)
{
	if (v == 0 || !isfinite(v)) { /* JSON holds no NaN or infinity */
		snprintf(out, cap, "0");
		return;
	}
	char e[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	/* e: [-]d[.ddd]e±XX */
	const char *s = e;
	int neg = *s == '-';
	s += neg;
	char digits[24];
	size_t nd = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && nd < sizeof(digits) - 1)
			digits[nd++] = *s;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	int exp = *s == 'e' ? (int)strtol(s + 1, NULL, 10) : 0;
	size_t o = 0;
#define PUT(...) (o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, __VA_ARGS__))
	if (neg)
		PUT("-");
	if (exp < -4 || exp >= 6) {
		PUT("%c", digits[0]);
		if (nd > 1)
			PUT(".%s", digits + 1);
		PUT("E%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	} else if (exp < 0) {
		PUT("0.");
		for (int i = -1; i > exp; i--)
			PUT("0");
		PUT("%s", digits);
	} else {
		for (int i = 0; i <= exp; i++)
			PUT("%c", (size_t)i < nd ? digits[i] : '0');
		if (nd > (size_t)exp + 1)
			PUT(".%s", digits + exp + 1);
	}
#undef PUT
}

/* A stored line as E2B reads it back: SandboxLogEntry {timestamp, level, message, fields};
 * with v1 the SandboxLog {timestamp, line} in *line_out. */
static json_t *entry_json(json_t *e, json_t **line_out)
{
	char ts[48];
	fk_format_time(ts, sizeof(ts), (int64_t)json_integer_value(json_object_get(e, "ns")));
	const char *line = json_string_value(json_object_get(e, "line"));
	json_t *parsed = json_loads(line, 0, NULL), *fields = json_object();
	const char *key, *message = "", *level = "info";
	json_t *v;
	json_object_foreach(parsed, key, v)
	{
		char num[40];
		if (json_is_string(v) && !strcmp(key, "message"))
			message = json_string_value(v);
		else if (json_is_string(v) && !strcmp(key, "level"))
			level = json_string_value(v);
		else if (!strcmp(key, "message") || !strcmp(key, "level"))
			continue;
		else if (json_is_string(v))
			json_object_set(fields, key, v);
		else if (json_is_number(v)) {
			go_format_g(json_number_value(v), num, sizeof(num));
			json_object_set_new(fields, key, json_string(num));
		} else if (json_is_boolean(v))
			json_object_set_new(fields, key,
			                    json_string(json_is_true(v) ? "true" : "false"));
	}
	/* E2B's level of an entry: a known name, else info */
	int known = 0;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(*level_names); i++)
		known |= !strcmp(level, level_names[i]);
	json_t *j = fields ? json_pack("{s:s,s:s,s:s,s:o}", "timestamp", ts, "level",
	                               known ? level : "info", "message", message, "fields", fields)
	                   : NULL;
	json_decref(parsed);
	if (line_out)
		*line_out = json_pack("{s:s,s:s}", "timestamp", ts, "line", line);
	return j;
}

/* Under the lock: the kept lines of sandbox `id`, running or deleted. */
static json_t *logs_of(fk_registry *g, const char *id)
{
	for (fk_sandbox *sb = g->list; sb; sb = sb->next)
		if (!strcmp(sb->id, id))
			return sb->logs;
	for (gone_logs *d = g->gone; d; d = d->next)
		if (!strcmp(d->id, id))
			return d->logs;
	return NULL;
}

int fk_sandbox_logs(fk_registry *g, const char *id, const fk_sblog_query *q, json_t **logs,
                    json_t **lines)
{
	*logs = json_array();
	if (lines)
		*lines = json_array();
	/* copies of the candidates (in the window, at the level), read outside the lock */
	json_t *sel = json_array();
	fk_registry_lock(g);
	json_t *all = logs_of(g, id);
	size_t n = json_array_size(all);
	for (size_t k = 0; sel && k < n; k++) {
		json_t *e = json_array_get(all, q->backward ? n - 1 - k : k);
		int64_t ns = (int64_t)json_integer_value(json_object_get(e, "ns"));
		if (json_integer_value(json_object_get(e, "level")) < q->min_level ||
		    ns / 1000000 < q->start_ms || ns / 1000000 > q->end_ms)
			continue;
		json_array_append_new(sel,
		                      json_pack("{s:I,s:s}", "ns", (json_int_t)ns, "line",
		                                json_string_value(json_object_get(e, "line"))));
	}
	fk_registry_unlock(g);
	int rc = sel && *logs && (!lines || *lines) ? 0 : -1;
	size_t i;
	json_t *e;
	json_array_foreach(sel, i, e)
	{
		if (rc < 0 || json_array_size(*logs) >= q->limit)
			break;
		json_t *line = NULL, *j = entry_json(e, lines ? &line : NULL);
		/* search: a substring of the message (E2B's LogQL `message =~ .*<quoted>.*`) */
		if (j && q->search &&
		    !strstr(json_string_value(json_object_get(j, "message")), q->search)) {
			json_decref(j);
			json_decref(line);
			continue;
		}
		if (!j || (lines && !line) || json_array_append_new(*logs, j) < 0 ||
		    (lines && json_array_append_new(*lines, line) < 0))
			rc = -1;
	}
	json_decref(sel);
	if (rc < 0) {
		json_decref(*logs);
		if (lines)
			json_decref(*lines);
	}
	return rc;
}
