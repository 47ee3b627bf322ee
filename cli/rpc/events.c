/*
 * cli/rpc/events.c: the notifications `serve` sends besides responses.
 *
 * `output` carries a streamed exec's bytes ({"id","stream","data"} or
 * "data_b64" when the chunk is not valid UTF-8, e.g. a character cut between
 * two chunks); `log` carries the library's log lines when initialize asked
 * for them ({"level","message","fields"}). Both go through the one writer, and
 * a call's output is sent by its own worker, so it precedes its response.
 */
#include "rpc.h"

#include "shapes.h"
#include <string.h>

static json_t *notification(const char *method, json_t *params)
{
	if (!params)
		return NULL;
	return json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

void serve_notify_output(serve_writer *w, json_t *id, uint32_t pid, const char *stream,
                         const unsigned char *data, size_t len)
{
	json_t *p = json_pack("{s:O,s:s}", "id", id, "stream", stream);

	if (p && pid)
		json_object_set_new(p, "pid", json_integer(pid));
	if (p && cli_shape_bytes(p, "data", data, len) < 0) {
		json_decref(p);
		p = NULL;
	}
	wire_send(w, notification("output", p));
}

void serve_notify_attached(serve_writer *w, json_t *id, uint32_t pid)
{
	wire_send(
	    w, notification("attached", json_pack("{s:O,s:I}", "id", id, "pid", (json_int_t)pid)));
}

void serve_notify_log(serve_writer *w, sbx_log_level level, const char *message,
                      const sbx_log_field *fields, size_t nfields)
{
	json_t *f = json_object(), *p;

	for (size_t i = 0; f && i < nfields; i++)
		json_object_set_new(f, fields[i].key,
		                    json_string(fields[i].value ? fields[i].value : ""));
	p = f ? json_pack("{s:s,s:s,s:o}", "level", sbx_log_level_name(level), "message",
	                  message ? message : "", "fields", f)
	      : NULL;
	wire_send(w, notification("log", p));
}

void serve_notify_watch_started(serve_writer *w, json_t *id, const char *path)
{
	wire_send(w, notification("watch_started", json_pack("{s:O,s:s}", "id", id, "path", path)));
}

void serve_notify_watch(serve_writer *w, json_t *id, const char *op, const char *name)
{
	json_t *p = json_pack("{s:O,s:s}", "id", id, "op", op);

	if (p && cli_shape_bytes(p, "name", (const unsigned char *)name, strlen(name)) < 0) {
		json_decref(p);
		p = NULL;
	}
	wire_send(w, notification("watch_event", p));
}
