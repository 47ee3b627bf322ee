/*
 * fake-e2b/proxy/proxy.h: the port proxy, E2B's getHost(port): an HTTP request
 * to <port>-<id>.<domain> is forwarded to 127.0.0.1:<port> inside the
 * sandbox's network (the runtime's fk_box_connect) and the answer relayed.
 */
#ifndef FK_PROXY_H
#define FK_PROXY_H

#include "app.h"

/* c->sandbox_id and c->port are set (router). 502 for an unknown or paused sandbox or a
 * closed port, 403 without the traffic token of a sandbox with allowPublicTraffic:false. */
enum MHD_Result fk_proxy_forward(fk_call *c);

#endif
