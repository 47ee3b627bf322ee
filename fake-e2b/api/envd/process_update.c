/*
 * fake-e2b/api/envd/process_update.c: process.Process/Update (docs/internals/wire.md "Process
 * start"): a PTY process's terminal size ({process: selector, pty: {size: {cols, rows}}}).
 */
#include "envd.h"

enum MHD_Result fk_envd_process_update(fk_call *c, json_t *req)
{
	fk_req *r = c->req;
	uint32_t pid = 0;
	int rc = fk_envd_selector_pid(c, json_object_get(req, "process"), &pid, NULL);
	if (rc == FK_EINVAL)
		return fk_connect_error(r, "invalid_argument", "invalid process selector");
	if (rc < 0)
		return fk_connect_error(r, "not_found", "process with pid %u not found", pid);
	json_t *size = json_object_get(json_object_get(req, "pty"), "size");
	if (!json_is_object(size)) /* nothing to update */
		return fk_reply(r, 200, "application/json", "{}", 2);
	uint16_t cols, rows; /* 80.5 or "80x" are envd's invalid_argument (protobuf JSON) */
	if (fk_envd_pty_size(size, &cols, &rows) < 0)
		return fk_connect_error(r, "invalid_argument", "invalid pty size");
	fk_err err = {0};
	rc = fk_proc_resize(c->app->rt, c->sb->id, pid, cols, rows, &err);
	if (rc == FK_ENOTFOUND)
		return fk_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (rc < 0)
		return fk_connect_error(r, rc == FK_ECLOSED ? "failed_precondition" : "internal",
		                        "%s", err.message[0] ? err.message : fk_code_name(rc));
	return fk_reply(r, 200, "application/json", "{}", 2);
}
