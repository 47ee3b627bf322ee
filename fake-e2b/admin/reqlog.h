/*
 * fake-e2b/admin/reqlog.h: the request log of the admin API: entries in
 * arrival order, each shown once its response is queued. Plain data under a
 * mutex; knows no MHD.
 *
 * An entry is kept as its compact JSON text (what GET /_fake/requests shows,
 * less duration_ms), so what the log holds is counted in bytes: at most
 * FK_LOG_ENTRY_MAX bytes of text per entry (a larger one loses its body, then
 * its query and headers, and says so) and FK_MAX_LOG entries and `max_bytes`
 * of text in all (the oldest entries are dropped first).
 */
#ifndef FK_ADMIN_REQLOG_H
#define FK_ADMIN_REQLOG_H

#include <jansson.h>
#include <stddef.h>

/* Most entries kept; older ones are dropped first. */
#define FK_MAX_LOG 20000
/* Most bytes of one entry's text. */
#define FK_LOG_ENTRY_MAX (64u * 1024u)
/* Default most bytes of every entry's text together (--request-log-mb). */
#define FK_LOG_BYTES_DEFAULT (32u * 1024u * 1024u)

typedef struct fk_reqlog fk_reqlog;
typedef struct fk_reqlog_entry fk_reqlog_entry;

/* max_bytes: most bytes of text of all entries (0: FK_LOG_BYTES_DEFAULT). */
fk_reqlog *fk_reqlog_new(size_t max_bytes);
void fk_reqlog_free(fk_reqlog *l);

/* Reserve one request's place at its arrival; the caller's handle (NULL on failure) stays
 * valid until fk_reqlog_finish, even when the entry is dropped or the log cleared. The entry
 * stays hidden until fk_reqlog_ready. */
fk_reqlog_entry *fk_reqlog_begin(fk_reqlog *l);
/* The response is queued: the entry becomes `fields` (a JSON object, stolen; kept as its text,
 * within FK_LOG_ENTRY_MAX as above) and shows. */
void fk_reqlog_ready(fk_reqlog *l, fk_reqlog_entry *e, json_t *fields);
/* Set the entry's duration_ms (streams: until the stream ended) and drop the handle. */
void fk_reqlog_finish(fk_reqlog *l, fk_reqlog_entry *e, long ms);
/* The shown entries as a JSON array's text (each with its duration_ms); caller frees. NULL
 * when out of memory. */
char *fk_reqlog_list_text(fk_reqlog *l, size_t *len);
void fk_reqlog_clear(fk_reqlog *l);

#endif
