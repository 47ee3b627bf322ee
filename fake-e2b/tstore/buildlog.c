/*
 * fake-e2b/tstore/buildlog.c: what a build's log keeps (builds_int.h). Each
 * entry counts its message's bytes and 64 more; a build keeps at most
 * FK_BUILD_LOG_BYTES of them and FK_BUILD_LOG_MAX entries, every build
 * together FK_BUILD_LOGS_BYTES. Past a cap the oldest lines go first (the
 * end of a log holds what failed): a first entry, level warn, then says how
 * many went, and the status route's logsOffset keeps counting them, so a
 * client polling with the offset it reached neither misses nor repeats a line.
 * It is the store's lowest floor (builds_int.h): it calls nothing of the store.
 */
#include <stdio.h>
#include <string.h>

#include "builds_int.h"

static size_t entry_cost(json_t *e)
{
	const char *m = json_string_value(json_object_get(e, "message"));
	return (m ? strlen(m) : 0) + 64;
}

/* E2B's log levels in order; an unknown name counts as info, as E2B's StringToLevel. */
int fk_tstore_level(const char *name)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; name && i < 4; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

int fk__build_log_level(json_t *e)
{
	int l = fk_tstore_level(json_string_value(json_object_get(e, "level")));
	return l < 0 ? 1 : l;
}

size_t fk__build_log_dropped(const fk_tbuild *b, int min_level)
{
	size_t n = 0;
	for (int l = min_level < 0 ? 0 : min_level; l < 4; l++)
		n += b->log_dropped[l];
	return n;
}

/* b->log_bytes from its entries, once (a build loaded from the state directory). */
static void known(fk_tstore *s, fk_tbuild *b)
{
	if (b->log_bytes_known)
		return;
	size_t i, n = 0;
	json_t *e;
	json_array_foreach(b->logs, i, e) n += entry_cost(e);
	b->log_bytes = n;
	b->log_bytes_known = true;
	s->log_bytes += n;
}

/* Drop b's oldest line (never its newest); false when there is none to drop. */
static bool drop_oldest(fk_tstore *s, fk_tbuild *b)
{
	size_t first = fk__build_log_dropped(b, 0) ? 1 : 0;
	if (json_array_size(b->logs) <= first + 1)
		return false;
	json_t *e = json_array_get(b->logs, first);
	size_t cost = entry_cost(e);
	b->log_dropped[fk__build_log_level(e)]++;
	json_t *ts = json_incref(json_object_get(e, "timestamp"));
	json_array_remove(b->logs, first);
	b->log_bytes -= cost;
	s->log_bytes -= cost;
	char msg[200];
	snprintf(msg, sizeof(msg),
	         "%zu earlier lines of this build were dropped (a build's log keeps %u bytes, all "
	         "builds' %u)",
	         fk__build_log_dropped(b, 0), FK_BUILD_LOG_BYTES, FK_BUILD_LOGS_BYTES);
	json_t *m = json_pack("{s:o,s:s,s:s}", "timestamp", ts, "level", "warn", "message", msg);
	if (m && first)
		json_array_set_new(b->logs, 0, m);
	else if (m)
		json_array_insert_new(b->logs, 0, m);
	return true;
}

/* Every build's log within FK_BUILD_LOGS_BYTES: the oldest build's oldest lines go first. */
static void trim_total(fk_tstore *s)
{
	s->log_bytes = 0; /* counted again: deleted builds took theirs along */
	for (struct fk_ttemplate *t = s->list; t; t = t->next)
		for (fk_tbuild *b = t->builds; b; b = b->next) {
			b->log_bytes_known = false;
			known(s, b);
		}
	while (s->log_bytes > FK_BUILD_LOGS_BYTES) {
		fk_tbuild *oldest = NULL;
		size_t first;
		for (struct fk_ttemplate *t = s->list; t; t = t->next)
			for (fk_tbuild *b = t->builds; b; b = b->next) {
				first = fk__build_log_dropped(b, 0) ? 1 : 0;
				if (json_array_size(b->logs) > first + 1 &&
				    (!oldest || b->created_ns < oldest->created_ns))
					oldest = b;
			}
		if (!oldest || !drop_oldest(s, oldest))
			break;
	}
}

void fk__build_log_append(fk_tstore *s, fk_tbuild *b, json_t *e)
{
	known(s, b);
	size_t cost = entry_cost(e);
	if (json_array_append_new(b->logs, e) < 0)
		return;
	b->log_bytes += cost;
	s->log_bytes += cost;
	while (
	    (b->log_bytes > FK_BUILD_LOG_BYTES ||
	     json_array_size(b->logs) - (fk__build_log_dropped(b, 0) ? 1 : 0) > FK_BUILD_LOG_MAX) &&
	    drop_oldest(s, b))
		;
	if (s->log_bytes > FK_BUILD_LOGS_BYTES)
		trim_total(s);
}
