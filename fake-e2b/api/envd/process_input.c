/*
 * fake-e2b/api/envd/process_input.c: process.Process/SendInput and
 * /CloseStdin (docs/internals/wire.md "Other process RPCs").
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>

#include "b64.h"
#include "envd.h"

/* Whether the client of a SendInput has gone (closed or reset its connection): the write
 * waiting on a process that does not read ends then, not at its 60 s bound. */
static int client_left(void *cls)
{
	int fd = fk_req_socket(cls);
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result process_input(fk_call *c, json_t *req, int close_only)
{
	fk_req *r = c->req;
	uint32_t pid = 0;
	int rc = fk_envd_selector_pid(c, json_object_get(req, "process"), &pid, NULL);
	if (rc == FK_EINVAL)
		return fk_connect_error(r, "invalid_argument", "invalid process selector");
	if (rc < 0)
		return fk_connect_error(r, "not_found", "process with pid %u not found", pid);
	fk_err err = {0};
	if (close_only) {
		rc = fk_proc_close_stdin(c->app->rt, c->sb->id, pid, &err);
	} else {
		json_t *in = json_object_get(req, "input");
		const char *b64 = fk_json_str(in, "stdin");
		if (!b64)
			b64 = fk_json_str(in, "pty");
		unsigned char *data = NULL;
		long n = b64 ? fk_b64_decode(b64, &data) : 0;
		if (n < 0)
			return fk_connect_error(r, "invalid_argument", "invalid base64 input");
		rc = n ? fk_proc_write_stdin_until(c->app->rt, c->sb->id, pid, data, (size_t)n,
		                                   client_left, r, &err)
		       : 0;
		free(data);
	}
	if (rc == FK_ENOTFOUND)
		return fk_connect_error(r, "not_found", "process with pid %u not found", pid);
	if (rc == FK_ETIMEOUT)
		return fk_connect_error(r, "deadline_exceeded", "%s", err.message);
	if (rc < 0)
		return fk_connect_error(r, "internal", "%s",
		                        err.message[0] ? err.message : fk_code_name(rc));
	return fk_reply(r, 200, "application/json", "{}", 2);
}

enum MHD_Result fk_envd_process_send_input(fk_call *c, json_t *req)
{
	return process_input(c, req, 0);
}

enum MHD_Result fk_envd_process_close_stdin(fk_call *c, json_t *req)
{
	return process_input(c, req, 1);
}
