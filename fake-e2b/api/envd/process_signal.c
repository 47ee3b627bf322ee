/*
 * fake-e2b/api/envd/process_signal.c: process.Process/SendSignal (docs/internals/wire.md "Other
 * process RPCs").
 */
#include <signal.h>
#include <string.h>

#include "envd.h"

enum MHD_Result fk_envd_process_signal(fk_call *c, json_t *req)
{
	fk_req *r = c->req;
	json_t *sig = json_object_get(req, "signal");
	int signo = 0;
	if (json_is_string(sig))
		signo = !strcmp(json_string_value(sig), "SIGNAL_SIGKILL")   ? SIGKILL
		        : !strcmp(json_string_value(sig), "SIGNAL_SIGTERM") ? SIGTERM
		                                                            : 0;
	else if (json_is_integer(sig))
		signo = json_integer_value(sig) == 9    ? SIGKILL
		        : json_integer_value(sig) == 15 ? SIGTERM
		                                        : 0;
	uint32_t pid = 0;
	int rc = fk_envd_selector_pid(c, json_object_get(req, "process"), &pid, NULL);
	if (rc == FK_EINVAL)
		return fk_connect_error(r, "invalid_argument", "invalid process selector");
	if (rc < 0)
		return fk_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (!signo)
		return fk_connect_error(r, "unimplemented", "invalid signal");
	if (fk_sandbox_is_immune(c->app->reg, c->sb, pid)) /* fault kill_ignored */
		return fk_reply(r, 200, "application/json", "{}", 2);
	fk_err err = {0};
	rc = fk_proc_signal(c->app->rt, c->sb->id, pid, signo, &err);
	if (rc == FK_ENOTFOUND)
		return fk_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (rc < 0)
		return fk_connect_runtime_error(r, rc, &err);
	return fk_reply(r, 200, "application/json", "{}", 2);
}
