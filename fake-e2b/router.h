/*
 * fake-e2b/router.h: the hooks that the HTTP daemon calls: route table,
 * faults and the request log. See router.c.
 */
#ifndef FK_ROUTER_H
#define FK_ROUTER_H

#include "app.h"

/* The daemon hooks for `app` (cls = app). */
fk_http_hooks fk_router_hooks(fk_app *app);

#endif
