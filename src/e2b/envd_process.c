/*
 * e2b/envd_process.c: the unary process.Process RPCs beyond SendSignal
 * (docs/protocol.md "process.Process"): SendInput (stdin or a terminal's input),
 * CloseStdin, Update (a terminal's size) and List. Each is one JSON
 * request through sbx__envd_rpc(); SendInput and CloseStdin may be joined to
 * the command's own stream so that its output keeps flowing while they wait.
 */
#include <openssl/evp.h>
#include <stdio.h>

#include "e2b/envd.h"
#include "util/alloc.h"
#include "util/err.h"

/* SendInput with the bytes as `field` ("stdin" or "pty"). */
static int send_input(sbx_http *http, const sbx_envd_target *t, uint32_t pid, const char *field,
                      const void *data, size_t len, sbx_envd_stream *host, uint64_t deadline_ms,
                      sbx_signal *sig, sbx_error *err)
{
	sbx_buf body = SBX_BUF_INIT(SBX_ENVD_MAX_INPUT_CHUNK / 3 * 4 + 256);
	unsigned char *tail;
	int n, error;

	if (len > SBX_ENVD_MAX_INPUT_CHUNK)
		return sbx__error_set(err, SBX_EINVALID, "%s chunk over %d bytes", field,
		                      SBX_ENVD_MAX_INPUT_CHUNK);
	/* {"process":{"pid":N},"input":{"stdin":"<base64>"}} */
	if ((error = sbx_buf_printf(&body, "{\"process\":{\"pid\":%u},\"input\":{\"%s\":\"",
	                            (unsigned)pid, field)) < 0 ||
	    (error = sbx_buf_reserve(&body, (len + 2) / 3 * 4 + 1, &tail)) < 0) {
		sbx_buf_dispose(&body);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	n = EVP_EncodeBlock(tail, data, (int)len);
	sbx_buf_commit(&body, (size_t)n);
	if ((error = sbx_buf_puts(&body, "\"}}")) < 0) {
		sbx_buf_dispose(&body);
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	error = sbx__envd_rpc(NULL, http, t, "SendInput", (const char *)body.ptr, body.len, host,
	                      deadline_ms, sig, err);
	sbx_buf_dispose(&body);
	return error;
}

int sbx__envd_send_input(sbx_http *http, const sbx_envd_target *t, uint32_t pid, const void *data,
                         size_t len, sbx_envd_stream *host, uint64_t deadline_ms, sbx_signal *sig,
                         sbx_error *err)
{
	return send_input(http, t, pid, "stdin", data, len, host, deadline_ms, sig, err);
}

int sbx__envd_send_pty(sbx_http *http, const sbx_envd_target *t, uint32_t pid, const void *data,
                       size_t len, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	return send_input(http, t, pid, "pty", data, len, NULL, deadline_ms, sig, err);
}

int sbx__envd_resize(sbx_http *http, const sbx_envd_target *t, uint32_t pid, uint16_t cols,
                     uint16_t rows, uint64_t deadline_ms, sbx_signal *sig, sbx_error *err)
{
	char body[128];
	int n = snprintf(body, sizeof(body),
	                 "{\"process\":{\"pid\":%u},\"pty\":{\"size\":{\"cols\":%u,\"rows\":%u}}}",
	                 (unsigned)pid, (unsigned)cols, (unsigned)rows);

	return sbx__envd_rpc(NULL, http, t, "Update", body, (size_t)n, NULL, deadline_ms, sig, err);
}

int sbx__envd_close_stdin(sbx_http *http, const sbx_envd_target *t, uint32_t pid,
                          sbx_envd_stream *host, uint64_t deadline_ms, sbx_signal *sig,
                          sbx_error *err)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "{\"process\":{\"pid\":%u}}", (unsigned)pid);

	return sbx__envd_rpc(NULL, http, t, "CloseStdin", body, (size_t)n, host, deadline_ms, sig,
	                     err);
}

int sbx__envd_list(json_t **out, sbx_http *http, const sbx_envd_target *t, uint64_t deadline_ms,
                   sbx_signal *sig, sbx_error *err)
{
	json_t *reply = NULL, *procs;
	int error;

	*out = NULL;
	if ((error = sbx__envd_rpc(&reply, http, t, "List", "{}", 2, NULL, deadline_ms, sig, err)) <
	    0)
		return error;
	/* {"processes":[...]}; the list is omitted when empty (protobuf-JSON default) */
	procs = json_object_get(reply, "processes");
	if (reply && !json_is_object(reply)) {
		json_decref(reply);
		return sbx__error_set(err, SBX_EPROTOCOL, "E2B process List: reply is no object");
	}
	if (procs && !json_is_null(procs) && !json_is_array(procs)) {
		json_decref(reply);
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B process List: \"processes\" is no array");
	}
	*out = json_is_array(procs) ? json_incref(procs) : json_array();
	json_decref(reply);
	if (!*out)
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	return 0;
}
