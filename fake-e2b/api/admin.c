/*
 * fake-e2b/api/admin.c: see admin.h.
 */
#include "admin.h"

#include <stdlib.h>

enum MHD_Result fk_admin_faults_add(fk_call *c)
{
	json_t *j = fk_body_json(c->req, 0);
	const char *why = NULL;
	long id = fk_faults_add(c->app->faults, j, &why);
	json_decref(j);
	if (!id)
		return fk_reply_error(c->req, 400, "%s", why ? why : "bad rule");
	return fk_reply_json(c->req, 201, json_pack("{s:I}", "id", (json_int_t)id));
}

enum MHD_Result fk_admin_faults_list(fk_call *c)
{
	return fk_reply_json(c->req, 200, fk_faults_list(c->app->faults));
}

enum MHD_Result fk_admin_faults_clear(fk_call *c)
{
	fk_faults_clear(c->app->faults);
	return fk_reply(c->req, 204, NULL, NULL, 0);
}

enum MHD_Result fk_admin_requests_list(fk_call *c)
{
	size_t len = 0;
	char *text = fk_reqlog_list_text(c->app->log, &len);
	if (!text)
		return fk_reply_error(c->req, 500, "out of memory");
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return fk_reply_response(c->req, 200, resp);
}

enum MHD_Result fk_admin_requests_clear(fk_call *c)
{
	fk_reqlog_clear(c->app->log);
	return fk_reply(c->req, 204, NULL, NULL, 0);
}

enum MHD_Result fk_admin_sandboxes(fk_call *c)
{
	return fk_reply_json(c->req, 200, fk_registry_dump(c->app->reg));
}
