/*
 * fake-e2b/envd.h: envd's API (e2b-protocol.md §2-§5): access-token and Basic
 * checks, the 502 proxy answer for unknown or paused sandboxes, Connect unary
 * and server-streaming RPCs of process.Process and filesystem.Filesystem, and
 * the /files REST routes. Process and file work goes through runtime.h.
 */
#ifndef FK_ENVD_H
#define FK_ENVD_H

#include "server.h"

/* First call of a request (headers known, no body yet): sets up streaming uploads. */
void fk_envd_begin(fk_req *r);
/* A body chunk of a request that fk_envd_begin took over (r->envd_state set). */
void fk_envd_feed(fk_req *r, const char *data, size_t len);
/* The body is complete: answer. */
enum MHD_Result fk_envd_handle(fk_req *r);

#endif
