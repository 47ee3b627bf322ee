/*
 * fake-e2b/api/control/control.h: E2B's control plane (e2b-protocol.md §1, §6,
 * §7), one handler per operation, over the registry. The router matches the
 * route, checks the API key and the sandbox id
 * (fk_control_short_id, into c->id) before calling a handler.
 */
#ifndef FK_API_CONTROL_H
#define FK_API_CONTROL_H

#include "app.h"

/* auth.c */
/* ShortID (§1.2): "<id>" or legacy "<id>-<clientID>"; 0 and the short id in out, or -1. */
int fk_control_short_id(const char *in, char *out, size_t cap);

/* checks.c: shared validation and errors. */
enum MHD_Result fk_control_not_found(fk_call *c);
/* Timeout field: NULL when fine (*out set), else the 400 message. */
const char *fk_control_timeout_field(json_t *body, const char *key, long dflt, int required,
                                     long *out);
/* §7 validateEgressRules; NULL when valid, else the 400 message. */
const char *fk_control_validate_network(json_t *net);
/* Egress none (§7): no internet at all, so the runtime gives a loopback-only netns. */
int fk_control_egress_none(json_t *allow_internet, json_t *net);
/* NULL/null or an object of strings: 0; else -1. */
int fk_control_string_map_ok(json_t *m);

/* create.c; NewSandbox / NewSandboxV2 checks of a JSON object: NULL when valid (*timeout
 * set), else the 400 message. */
const char *fk_control_create_validate(json_t *body, int v2, long *timeout);
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
/* network.c */
enum MHD_Result fk_control_network_update(fk_call *c);

#endif
