/*
 * fake-e2b/registry/sblogs.c: a sandbox's logs, what GET /sandboxes/{id}/logs and
 * /v2/sandboxes/{id}/logs answer (infra handlers/sandbox_logs.go): what the server records
 * about it (started, paused, resumed) and what envd records of its processes (started,
 * ended), the last FK_SBLOGS_KEPT entries, kept across pause and resume, gone with it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "registry_int.h"

void fk_sandbox_log(fk_registry *g, fk_sandbox *sb, enum fk_sblog_level level, json_t *fields,
                    const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *f = json_is_object(fields) ? fields : json_object();
	json_t *e =
	    f ? json_pack("{s:I,s:i,s:s,s:s,s:o}", "ns", (json_int_t)fk_now_ns(), "level",
	                  (int)level, "levelName", names[level], "message", msg, "fields", f)
	      : NULL;
	if (!e)
		return;
	fk_registry_lock(g);
	if (!sb->logs)
		sb->logs = json_array();
	if (sb->logs && json_array_size(sb->logs) >= FK_SBLOGS_KEPT)
		json_array_remove(sb->logs, 0);
	if (sb->logs)
		json_array_append(sb->logs, e);
	fk_registry_unlock(g);
	json_decref(e);
}

/* SandboxLogEntry of a kept entry; the v1 SandboxLog's line is the entry as one JSON line. */
static json_t *entry_json(json_t *e, int line)
{
	char ts[48];
	fk_format_time(ts, sizeof(ts), (int64_t)json_integer_value(json_object_get(e, "ns")));
	json_t *j = json_pack(
	    "{s:s,s:O,s:O,s:O}", "timestamp", ts, "level", json_object_get(e, "levelName"),
	    "message", json_object_get(e, "message"), "fields", json_object_get(e, "fields"));
	if (!j || !line)
		return j;
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	j = s ? json_pack("{s:s,s:s}", "timestamp", ts, "line", s) : NULL;
	free(s);
	return j;
}

int fk_sandbox_logs(fk_registry *g, fk_sandbox *sb, const fk_sblog_query *q, json_t **logs,
                    json_t **lines)
{
	*logs = json_array();
	if (lines)
		*lines = json_array();
	fk_registry_lock(g);
	size_t n = sb && !sb->deleted ? json_array_size(sb->logs) : 0;
	for (size_t k = 0; *logs && k < n && json_array_size(*logs) < q->limit; k++) {
		json_t *e = json_array_get(sb->logs, q->backward ? n - 1 - k : k);
		int64_t ms = (int64_t)json_integer_value(json_object_get(e, "ns")) / 1000000;
		if (json_integer_value(json_object_get(e, "level")) < q->min_level ||
		    ms < q->start_ms || ms > q->end_ms)
			continue;
		if (q->search &&
		    !strstr(json_string_value(json_object_get(e, "message")), q->search))
			continue;
		json_array_append_new(*logs, entry_json(e, 0));
		if (lines && *lines)
			json_array_append_new(*lines, entry_json(e, 1));
	}
	fk_registry_unlock(g);
	if (!*logs || (lines && !*lines)) {
		json_decref(*logs);
		if (lines)
			json_decref(*lines);
		return -1;
	}
	return 0;
}
