/*
 * fake-e2b/admin/faults.h: the fault rules of the admin API (README.md
 * "Admin API"): (method, path glob) patterns with what to do. Plain data under
 * a mutex; knows no MHD and no E2B route. The router asks for a match once per
 * request and hands the copy to the handler.
 */
#ifndef FK_ADMIN_FAULTS_H
#define FK_ADMIN_FAULTS_H

#include <jansson.h>

enum fk_fault_kind {
	FK_FAULT_NONE = 0,
	FK_FAULT_RESPOND,
	FK_FAULT_DELAY,
	FK_FAULT_STREAM_NO_END,
	FK_FAULT_STREAM_KEEPALIVE_ONLY,
	FK_FAULT_STREAM_GARBAGE,
	FK_FAULT_STREAM_OVERSIZE,
	FK_FAULT_CONNECT_NO_TOKEN,
	FK_FAULT_KILL_IGNORED,
};

/* A matched fault rule, copied (the rule may expire meanwhile). */
typedef struct fk_fault {
	enum fk_fault_kind kind;
	unsigned status;
	long delay_ms;
	char *body; /* owned; NULL = default E2B error body */
} fk_fault;

typedef struct fk_faults fk_faults;

fk_faults *fk_faults_new(void);
void fk_faults_free(fk_faults *f);

/* Add a rule from its JSON (README format). Its id (> 0), or 0 with *why set. */
long fk_faults_add(fk_faults *f, json_t *rule, const char **why);
/* Every rule as JSON (new reference). */
json_t *fk_faults_list(fk_faults *f);
void fk_faults_clear(fk_faults *f);
/*
 * Find the first live rule matching (method, path), use up one of its `times`, and copy
 * it to *out (free with fk_fault_dispose). 1 when a rule matched, else 0 (out zeroed).
 */
int fk_faults_match(fk_faults *f, const char *method, const char *path, fk_fault *out);
void fk_fault_dispose(fk_fault *f);

#endif
