/*
 * fake-e2b/testkit/reqlog.h: the request log of the admin API: entries in
 * arrival order, each shown once its response is queued. Plain data under a
 * mutex; knows no MHD.
 */
#ifndef FK_TESTKIT_REQLOG_H
#define FK_TESTKIT_REQLOG_H

#include <jansson.h>

/* Most entries kept; older ones are dropped first. */
#define FK_MAX_LOG 20000

typedef struct fk_reqlog fk_reqlog;

fk_reqlog *fk_reqlog_new(void);
void fk_reqlog_free(fk_reqlog *l);

/* Append one request at its arrival (steals entry) and return a new reference to it (NULL on
 * failure). The entry stays hidden until fk_reqlog_ready. */
json_t *fk_reqlog_begin(fk_reqlog *l, json_t *entry);
/* The response is queued: merge `fields` (stolen) into the entry and show it. */
void fk_reqlog_ready(fk_reqlog *l, json_t *entry, json_t *fields);
/* Set the entry's duration_ms (streams: until the stream ended) and drop the caller's
 * reference. */
void fk_reqlog_finish(fk_reqlog *l, json_t *entry, long ms);
/* The shown entries, copied (new reference). */
json_t *fk_reqlog_list(fk_reqlog *l);
void fk_reqlog_clear(fk_reqlog *l);

#endif
