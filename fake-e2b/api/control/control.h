/*
 * fake-e2b/api/control/control.h: E2B's control plane (docs/protocol.md "Control plane",
 * "Lifecycle", "Egress"; docs/internals/wire.md "Control plane"), one handler per operation, over
 * the registry. The router matches the route, checks the API key and the sandbox id
 * (fk_control_short_id, into c->id) before calling a handler.
 */
#ifndef FK_API_CONTROL_H
#define FK_API_CONTROL_H

#include "app.h"

/* The one team fake-e2b has (its one API key; FK_TEAM_ID, registry.h): GET
 * /templates?teamID= must name it. */
#define FK_TEAM_NAME "fake-e2b" /* its name (GET /teams) */

/* auth.c */
/* ShortID (docs/protocol.md "Sandbox ids"): "<id>" or legacy "<id>-<clientID>"; 0 and the short id
 * in out, or -1. */
int fk_control_short_id(const char *in, char *out, size_t cap);

/* checks.c: shared validation and errors. */
enum MHD_Result fk_control_not_found(fk_call *c);
/* Timeout field: NULL when fine (*out set), else the 400 message. */
const char *fk_control_timeout_field(json_t *body, const char *key, long dflt, int required,
                                     long *out);
/* validateEgressRules (docs/protocol.md "Egress"); NULL when valid, else the 400 message. */
const char *fk_control_validate_network(json_t *net);
/* Egress none (docs/protocol.md "Egress"): no internet at all, so the runtime gives a loopback-only
 * netns. */
int fk_control_egress_none(json_t *allow_internet, json_t *net);
/* Bounds of create's `metadata` and `envVars`, each map on its own. E2B's API (its OpenAPI
 * SandboxMetadata and EnvVars: string to string) declares none; these are far past what a client
 * sends (a few labels, a few variables) and keep a sandbox's state record and every list answer
 * that carries it small. */
#define FK_CREATE_MAP_MAX_ENTRIES 1024
#define FK_CREATE_MAP_MAX_KEY     1024        /* bytes */
#define FK_CREATE_MAP_MAX_VALUE   (32 * 1024) /* bytes */
#define FK_CREATE_MAP_MAX_TOTAL   (64 * 1024) /* bytes of keys and values */
/* NULL/null, or an object of strings within the bounds above: NULL; else the 400 message
 * (static, or formatted into why[cap] naming `what` and the bound). */
const char *fk_control_string_map_check(json_t *m, const char *what, char *why, size_t cap);

/* E2B's page cursor: nextToken = base64url("<RFC3339Nano>__<id>") of a page's last item.
 * _make: NULL on OOM; _parse: 0 (*ns, id: id_len bytes + NUL), -1 malformed. */
char *fk_control_cursor_make(int64_t ns, const char *id);
int fk_control_cursor_parse(const char *tok, int64_t *ns, char *id, size_t id_len);

/* A buildID as Go's uuid.Parse takes it in a path (8-4-4-4-12 or 32 hex digits): 1, else 0. */
int fk_control_uuid_ok(const char *s);

/* create.c; NewSandbox / NewSandboxV2 checks of a JSON object: NULL when valid (*timeout
 * set), else the 400 message (static, or in why[cap]). */
const char *fk_control_create_validate(json_t *body, int v2, long *timeout, char *why, size_t cap);
/* Makes, boots and registers a sandbox from a validated create body (v2: always secured) that
 * boots as `boot` says: the Sandbox JSON of create's 201, or NULL with *status (500, 503) and
 * msg. */
json_t *fk_control_start_sandbox(fk_call *c, json_t *body, int v2, long timeout,
                                 const fk_tboot *boot, unsigned *status, char *msg, size_t cap);
enum MHD_Result fk_control_create_v2(fk_call *c);
enum MHD_Result fk_control_create_legacy(fk_call *c);
/* connect.c */
enum MHD_Result fk_control_connect_v2(fk_call *c);
enum MHD_Result fk_control_connect_legacy(fk_call *c);
enum MHD_Result fk_control_resume(fk_call *c);
/* list.c */
enum MHD_Result fk_control_list_v2(fk_call *c);
enum MHD_Result fk_control_list_legacy(fk_call *c);
/* lifecycle.c */
enum MHD_Result fk_control_pause(fk_call *c);
enum MHD_Result fk_control_delete(fk_call *c);
enum MHD_Result fk_control_timeout(fk_call *c);
enum MHD_Result fk_control_refresh(fk_call *c);
/* info.c */
enum MHD_Result fk_control_get(fk_call *c);
enum MHD_Result fk_control_metrics(fk_call *c);
enum MHD_Result fk_control_metrics_many(fk_call *c);    /* GET /sandboxes/metrics */
enum MHD_Result fk_control_sandbox_logs(fk_call *c);    /* GET /sandboxes/{id}/logs */
enum MHD_Result fk_control_sandbox_logs_v2(fk_call *c); /* GET /v2/sandboxes/{id}/logs */
/* snapshots.c */
enum MHD_Result fk_control_snapshot_create(fk_call *c);
enum MHD_Result fk_control_snapshot_list(fk_call *c);
enum MHD_Result fk_control_template_delete(fk_call *c);
enum MHD_Result fk_control_fork(fk_call *c);
/* network.c */
enum MHD_Result fk_control_network_update(fk_call *c);

/* templates.c: template builds (tstore/builds.h). {id} a templateID (or name), {id2} a
 * buildID or a file hash. */
enum MHD_Result fk_control_template_request(fk_call *c); /* POST /v3/templates */
enum MHD_Result
fk_control_template_build_start(fk_call *c); /* POST /v2/templates/{id}/builds/{id2} */
enum MHD_Result fk_control_template_build_status(fk_call *c); /* GET .../builds/{id2}/status */
enum MHD_Result fk_control_template_file_link(fk_call *c);    /* GET /templates/{id}/files/{id2} */
/* PUT to the link: the body sink is set by _begin (router's begin hook), the reply by _upload */
void fk_control_template_upload_begin(fk_call *c);
/* After _begin: the link did not check out; _upload then answers 403 at once. */
int fk_control_template_upload_refused(fk_call *c);
enum MHD_Result fk_control_template_file_upload(fk_call *c);
enum MHD_Result fk_control_template_alias(fk_call *c);       /* GET /templates/aliases/{id} */
enum MHD_Result fk_control_template_tags_assign(fk_call *c); /* POST /templates/tags */
enum MHD_Result fk_control_template_tags_remove(fk_call *c); /* DELETE /templates/tags */
enum MHD_Result fk_control_template_tags_list(fk_call *c);   /* GET /templates/{id}/tags */
/* template_info.c: the listing, one template, updates, build logs */
enum MHD_Result fk_control_template_list(fk_call *c);       /* GET /templates */
enum MHD_Result fk_control_template_get(fk_call *c);        /* GET /templates/{id} */
enum MHD_Result fk_control_template_update(fk_call *c);     /* PATCH /templates/{id} */
enum MHD_Result fk_control_template_update_v2(fk_call *c);  /* PATCH /v2/templates/{id} */
enum MHD_Result fk_control_template_build_logs(fk_call *c); /* GET .../builds/{id2}/logs */
/* teams.c */
enum MHD_Result fk_control_teams(fk_call *c); /* GET /teams (access token, not the API key) */

#endif
