/*
 * fake-e2b/app.h: what a handler gets. The app: the runtime, the sandbox
 * registry, the test kit (fault rules, request log) and the server's settings.
 * The call: one request with its app, the fault rule it matched and the
 * sandbox it addresses (from the E2b-Sandbox-Id header).
 */
#ifndef FK_APP_H
#define FK_APP_H

#include "faults.h"
#include "http.h"
#include "registry.h"
#include "reqlog.h"

typedef struct fk_app {
	fk_rt *rt;
	fk_registry *reg;
	fk_tstore *templates; /* built templates, builds, tags (tstore/builds.h) */
	fk_faults *faults;
	fk_reqlog *log;
	const char *api_key; /* NULL: any key starting with e2b_ (--any-api-key, tests only) */
	/* GET /teams's access token (E2B's AccessTokenAuth, `Authorization: Bearer sk_e2b_...`);
	 * "" when none was given (every token is refused); NULL: any well-formed one (--any-api-key
	 * without a token given, tests only) */
	const char *access_token;
	uint64_t max_upload; /* most bytes of one POST /files body */
	int quiet;
	int legacy_routes;  /* serve only the pre-v2 control routes (an older self-hosted API) */
	const char *domain; /* sandbox hosts are <port>-<id>.<domain>, the API api.<domain> */
	int tls;            /* served over HTTPS (--tls): links the server hands out say https */
} fk_app;

typedef struct fk_call {
	fk_req *req;
	fk_app *app;
	fk_fault fault;         /* kind FK_FAULT_NONE when no rule matched */
	int route;              /* the router's classification */
	const char *sandbox_id; /* envd/proxy: the addressed sandbox (E2b-Sandbox-Id or Host) */
	char host_id[64];       /* the sandbox id of a <port>-<id>.<domain> Host */
	unsigned port;          /* that Host's port (49983: envd) */
	char id[128];   /* the {id} of the path (control: the short sandbox id), "" when none */
	char id2[128];  /* the {id2} of the path (a build id, a file hash), "" when none */
	fk_sandbox *sb; /* envd: the addressed running sandbox (a reference the router releases) */
	char *user;     /* envd: the Basic username, NULL when none; owned */
	fk_reqlog_entry *log_entry; /* our handle of the log entry, reserved at arrival */
	int log_ready;              /* the entry shows in GET /_fake/requests (response queued) */
	int admitted;  /* passed its surface's authentication: its body may be logged */
	int admitting; /* the router's check from the headers: dispatchers stop before handlers */
} fk_call;

typedef enum MHD_Result (*fk_handler)(fk_call *c);

#endif
