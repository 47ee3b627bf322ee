/*
 * sandbox/ports.h: reaching a server that runs in a sandbox (E2B's
 * sbx.getHost(port)); docs/ports.md.
 *
 * E2B's edge proxy routes https://<port>-<id>.<domain> to that port inside
 * the sandbox. A sandbox made with private traffic (E2B's
 * network.allowPublicTraffic false) also has a traffic access token, which a
 * client sends as the header "e2b-traffic-access-token"; sandboxes this
 * library creates have public traffic, so theirs is NULL.
 *
 * Thread-safety: as every provider call. Common parameters as in sandbox/sandbox.h.
 */
#ifndef SANDBOX_PORTS_H
#define SANDBOX_PORTS_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** Where a port of a sandbox is reached; free with sbx_host_free(). */
typedef struct sbx_host {
	char *hostname; /**< "<port>-<id>.<domain>" */
	char *url;      /**< "https://" + hostname (no trailing "/") */
	/**
	 * The traffic access token (a secret: never log it), or NULL when the
	 * sandbox takes public traffic. Send it as "e2b-traffic-access-token".
	 */
	char *traffic_token;
} sbx_host;

/** The header that carries sbx_host.traffic_token. */
#define SBX_TRAFFIC_TOKEN_HEADER "e2b-traffic-access-token"

/**
 * Where `port` of sandbox `id` is reached. Connects first, as every call
 * that uses a sandbox (a paused sandbox is resumed, so the port answers), or
 * reuses the last connect within its window; sends nothing to the sandbox
 * itself, so whether anything listens on `port` is not checked.
 * @param[out] out  caller frees with sbx_host_free().
 * @param port      1..65535 (SBX_EINVALID otherwise, before any request).
 * @return 0, SBX_EINVALID, SBX_EGONE, SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP,
 *         SBX_ENETWORK, SBX_EPROTOCOL, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_sandbox_host(sbx_host **out, sbx_provider *p, const char *id, unsigned int port,
                                sbx_signal *sig, sbx_error *err);

/** Free a host (its token is wiped first). Accepts NULL. */
SBX_EXTERN void sbx_host_free(sbx_host *h);

SBX_END_DECLS

#endif
