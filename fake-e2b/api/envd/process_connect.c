/*
 * fake-e2b/api/envd/process_connect.c: process.Process/Connect (docs/internals/wire.md
 * "Other process RPCs"): the output stream of a running process, by pid or tag.
 */
#include <stdio.h>

#include "envd.h"

enum MHD_Result fk_envd_process_connect(fk_call *c)
{
	json_t *req = fk_connect_request(c->req, 1);
	uint32_t pid = 0;
	fk_proc *proc = NULL;
	fk_sub *sub = NULL;
	int rc = fk_envd_selector_pid(c, json_object_get(req, "process"), &pid, &proc);
	json_decref(req);
	if (rc == 0 && fk_sub_new(proc, &sub, NULL) < 0)
		rc = FK_EIO;
	if (rc < 0) {
		fk_proc_unref(proc);
		if (rc == FK_EINVAL)
			return fk_connect_stream_error(c->req, "invalid_argument",
			                               "invalid process selector");
		char msg[96];
		snprintf(msg, sizeof(msg), "process with pid %u not found", pid);
		return fk_connect_stream_error(c->req,
		                               rc == FK_ENOTFOUND ? "not_found" : "internal", msg);
	}
	return fk_envd_open_stream(c, proc, sub, 0);
}
