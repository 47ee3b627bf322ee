/*
 * fake-e2b/admin.h: the test-only admin API under /_fake/ (fault rules, the
 * request log, internal sandbox state). See README.md "Admin API".
 * All state is per server instance and guarded by one mutex.
 */
#ifndef FK_ADMIN_H
#define FK_ADMIN_H

#include "server.h"

fk_admin *fk_admin_new(void);
void fk_admin_free(fk_admin *a);

/* Route a /_fake/ request (body complete). */
enum MHD_Result fk_admin_handle(fk_req *r);

/*
 * Find the first live rule matching (method, path), use up one of its
 * `times`, and copy it to *out (out->body is the caller's, free with
 * fk_fault_dispose). Returns 1 when a rule matched, else 0 (out zeroed).
 */
int fk_admin_match_fault(fk_admin *a, const char *method, const char *path, fk_fault *out);
void fk_fault_dispose(fk_fault *f);

/* Append one request to the log at its arrival (steals entry) and return a new reference to
 * it (NULL on failure). The entry stays hidden from GET /_fake/requests until
 * fk_admin_log_ready, so the log is in arrival order and shows only answered requests. */
json_t *fk_admin_log_begin(fk_admin *a, json_t *entry);
/* The request's response is queued: merge `fields` (stolen; status, body, duration_ms) into
 * the entry and show it. */
void fk_admin_log_ready(fk_admin *a, json_t *entry, json_t *fields);
/* Set a logged entry's duration_ms (streams: until the stream ended) and drop the caller's
 * reference to it. */
void fk_admin_finish(fk_admin *a, json_t *entry, long ms);

#endif
