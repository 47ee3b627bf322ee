/*
 * e2b/provider_list.c: listing sandboxes by name (GET /v2/sandboxes, its pages, the
 * legacy route) and killing what such a list found: destroy_by_name, and the same-name
 * sandboxes create replaces.
 */

#include "e2b/provider_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "contract/provider.h"
#include "e2b/names.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"
#include <sandbox/validate.h>

/* kill(id): DELETE /sandboxes/{id}; an E2B-format 404 counts as success. */
int sbx__e2b_kill_sandbox(sbx__e2b_provider *p, const char *id, sbx_signal *sig, sbx_error *err)
{
	char path[256];
	sbx_e2b_reply reply;
	sbx_error local = {0};
	int error;

	if ((error = sbx__e2b_validate_sandbox_id(id, err)) < 0 ||
	    (error = sbx__e2b_id_path(path, sizeof(path), "/sandboxes/", id, "", err)) < 0)
		return error;
	error = sbx__e2b_api_call(&reply, &p->api, "DELETE", path, NULL, NULL, 0, sig, &local);
	if (error == SBX_EHTTP && reply.not_found)
		error = 0;
	if (error < 0)
		sbx__e2b_pass_error(err, &local);
	sbx__e2b_reply_dispose(&reply);
	return error;
}

int sbx__e2b_collect_page(json_t *page, const char *name, json_t *ids, sbx_error *err)
{
	json_t *s, *md, *v, *sid;
	size_t i;

	if (!page || json_is_null(page))
		return 0; /* r.data ?? [] */
	if (!json_is_array(page))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B GET /v2/sandboxes returned no array of sandboxes");
	json_array_foreach(page, i, s)
	{
		md = json_object_get(s, "metadata");
		v = json_object_get(md, SBX_E2B_METADATA_NAME);
		if (!json_is_string(v) || strcmp(json_string_value(v), name) != 0)
			continue;
		sid = json_object_get(s, "sandboxID");
		if (!json_is_string(sid))
			return sbx__error_set(err, SBX_EPROTOCOL,
			                      "E2B GET /v2/sandboxes returned a sandbox without a "
			                      "sandboxID");
		if (sbx__e2b_validate_sandbox_id(json_string_value(sid), NULL) < 0)
			return sbx__error_set(
			    err, SBX_EPROTOCOL,
			    "E2B GET /v2/sandboxes returned an invalid sandbox id "
			    "(%zu bytes)",
			    json_string_length(sid));
		if (json_array_append_new(ids, json_string(json_string_value(sid))) < 0)
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	return 0;
}

/* Append to `ids` the id of every sandbox named `name`, following the list's pages. */
/*
 * One page of a named list: GET /v2/sandboxes, or, on a control plane that
 * has no such route, the legacy GET /sandboxes with the same metadata filter
 * (running sandboxes only, one page: docs/reliability.md). `query` is the v2
 * query; the legacy call keeps only its metadata part.
 */
int sbx__e2b_list_page(sbx__e2b_provider *p, sbx_e2b_reply *reply, sbx_buf *query, sbx_signal *sig,
                       sbx_error *err)
{
	sbx_error local = {0};
	unsigned char *amp;
	int error;

	if (!atomic_load(&p->legacy_list)) {
		error = sbx__e2b_api_call(reply, &p->api, "GET", "/v2/sandboxes",
		                          (const char *)query->ptr, NULL, 0, sig, &local);
		if (!(error == SBX_EHTTP && sbx__e2b_route_missing(reply, &local))) {
			if (error < 0)
				sbx__e2b_pass_error(err, &local);
			return error;
		}
		if (!atomic_exchange(&p->legacy_list, true))
			sbx__e2b_learn_legacy_routes(p, "/v2/sandboxes");
		sbx__e2b_reply_dispose(reply);
	}
	/* metadata=<value> comes first and its value has no raw '&' (form-encoded) */
	if ((amp = memchr(query->ptr, '&', query->len))) {
		query->len = (size_t)(amp - query->ptr);
		query->ptr[query->len] = '\0';
	}
	if ((error = sbx__e2b_api_call(reply, &p->api, "GET", "/sandboxes",
	                               (const char *)query->ptr, NULL, 0, sig, err)) == 0) {
		sbx__free(reply->next_token); /* no paging on the legacy route */
		reply->next_token = NULL;
	}
	return error;
}

int sbx__e2b_list_each(sbx__e2b_provider *p, const char *name, const char *states,
                       sbx__e2b_page_fn on_page, void *payload, sbx_signal *sig, sbx_error *err)
{
	sbx_buf query = SBX_BUF_INIT(64 * 1024);
	sbx_e2b_reply reply = {0};
	char *token = NULL;
	size_t pages = 0;
	int error = 0;

	do {
		if (++pages > SBX_E2B_LIST_MAX_PAGES) {
			error = sbx__error_set(
			    err, SBX_EPROTOCOL, "E2B list of sandboxes%s%s has more than %d pages",
			    name ? " named " : "", name ? name : "", SBX_E2B_LIST_MAX_PAGES);
			goto done;
		}
		sbx_buf_clear(&query);
		if ((error = sbx__e2b_list_query_state(&query, name, states, token)) < 0) {
			error =
			    sbx__error_set(err, error,
			                   error == SBX_ETOOLARGE && token
			                       ? "E2B GET /v2/sandboxes returned an X-Next-Token "
			                         "too long to send back"
			                       : "cannot build the list query");
			goto done;
		}
		sbx__e2b_reply_dispose(&reply);
		if ((error = sbx__e2b_list_page(p, &reply, &query, sig, err)) < 0 ||
		    (error = on_page(reply.json, payload, err)) < 0)
			goto done;
		sbx__free(token);
		token = reply.next_token && reply.next_token[0] ? reply.next_token : NULL;
		if (token)
			reply.next_token = NULL; /* taken */
	} while (token);
done:
	sbx__e2b_reply_dispose(&reply);
	sbx__free(token);
	sbx_buf_dispose(&query);
	return error;
}

typedef struct named_ids {
	const char *name;
	json_t *ids;
} named_ids;

static int collect_page(json_t *page, void *payload, sbx_error *err)
{
	named_ids *n = payload;
	return sbx__e2b_collect_page(page, n->name, n->ids, err);
}

int sbx__e2b_collect_named(sbx__e2b_provider *p, const char *name, json_t *ids, sbx_signal *sig,
                           sbx_error *err)
{
	named_ids n = {name, ids};
	return sbx__e2b_list_each(p, name, "running,paused", collect_page, &n, sig, err);
}

/* Kill every sandbox in `ids` but `except` (may be NULL), in order; the first failure stops. */
int sbx__e2b_kill_all_of(sbx__e2b_provider *p, json_t *ids, const char *except, sbx_signal *sig,
                         sbx_error *err)
{
	json_t *v;
	size_t i;
	int error;

	json_array_foreach(ids, i, v)
	{
		if (except && strcmp(json_string_value(v), except) == 0)
			continue;
		sbx__e2b_attach_forget(p, json_string_value(v));
		if ((error = sbx__e2b_kill_sandbox(p, json_string_value(v), sig, err)) < 0)
			return error;
	}
	return 0;
}

int sbx__e2b_destroy_by_name(void *impl, const char *name, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	json_t *ids = json_array();
	int error;

	if (!ids)
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	/* the header promises the name pattern; create() checks it again (harmless) */
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_name(name, err)) < 0 ||
	    (error = sbx__e2b_collect_named(p, name, ids, sig, err)) < 0 ||
	    (error = sbx__e2b_kill_all_of(p, ids, NULL, sig, err)) < 0) {
		json_decref(ids);
		return error;
	}
	json_decref(ids);
	return 0;
}
