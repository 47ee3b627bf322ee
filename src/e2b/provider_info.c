/*
 * e2b/provider_info.c: sandbox/info.h on E2B — the deployment's sandboxes
 * from GET /v2/sandboxes (all pages, X-Next-Token) and one sandbox from
 * GET /sandboxes/{id} (docs/sandboxes.md).
 *
 * Every field E2B sends is checked before it is handed out: a sandboxID
 * must be a valid id, state "running" or "paused" ("pausing" counts as
 * paused), times RFC 3339 (an unparsable time is 0, "unknown").
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "e2b/names.h"
#include "e2b/provider_int.h"
#include "util/alloc.h"
#include "util/err.h"

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, int n, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (unsigned)(s[i] - '0');
	}
	return true;
}

/*
 * RFC 3339 date-time ("2025-01-02T03:04:05.123456789Z", "...+02:00") to ms
 * since the Unix epoch. False when it is not one.
 */
bool sbx__e2b_parse_time(const char *s, int64_t *ms)
{
	unsigned Y, M, D, h, m, sec, oh = 0, om = 0, frac = 0, scale = 1000;
	size_t n = strlen(s), i = 19;
	int sign = 0;

	if (n < 20 || !digits(s, 4, &Y) || s[4] != '-' || !digits(s + 5, 2, &M) || s[7] != '-' ||
	    !digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &m) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return false;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return false;
	if (s[i] == '.') {
		if (++i >= n || s[i] < '0' || s[i] > '9')
			return false;
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			if (scale > 1) {
				scale /= 10;
				frac += (unsigned)(s[i] - '0') * scale;
			}
		}
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < n && (s[i] == '+' || s[i] == '-')) {
		sign = s[i] == '+' ? 1 : -1;
		if (n - i != 6 || !digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
		    !digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
			return false;
		i += 6;
	} else {
		return false;
	}
	if (i != n)
		return false;
	int64_t secs = days_from_civil(Y, M, D) * 86400 + (int64_t)h * 3600 + (int64_t)m * 60 +
	               (int64_t)(sec > 59 ? 59 : sec) - sign * ((int64_t)oh * 3600 + om * 60);
	*ms = secs * 1000 + frac;
	return true;
}

static int64_t time_field(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	int64_t ms;
	return json_is_string(v) && sbx__e2b_parse_time(json_string_value(v), &ms) ? ms : 0;
}

/* One ListedSandbox / SandboxDetail object into `info` (zeroed first). */
static int fill_info(sbx_sandbox_info *info, json_t *s, const char *what, sbx_error *err)
{
	json_t *sid = json_object_get(s, "sandboxID"), *st = json_object_get(s, "state");
	json_t *tpl = json_object_get(s, "templateID");
	json_t *name = json_object_get(json_object_get(s, "metadata"), SBX_E2B_METADATA_NAME);
	const char *state = json_is_string(st) ? json_string_value(st) : "";

	memset(info, 0, sizeof(*info));
	if (!json_is_object(s))
		return sbx__error_set(err, SBX_EPROTOCOL, "%s returned a sandbox that is no object",
		                      what);
	if (!json_is_string(sid))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "%s returned a sandbox without a sandboxID", what);
	if (sbx__e2b_validate_sandbox_id(json_string_value(sid), NULL) < 0)
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "%s returned an invalid sandbox id (%zu bytes)", what,
		                      json_string_length(sid));
	if (strcmp(state, "running") == 0)
		info->state = SBX_STATE_RUNNING;
	else if (strcmp(state, "paused") == 0 || strcmp(state, "pausing") == 0)
		info->state = SBX_STATE_PAUSED;
	else
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "%s returned sandbox %s in an unknown state", what,
		                      json_string_value(sid));
	info->started_at_ms = time_field(s, "startedAt");
	info->end_at_ms = time_field(s, "endAt");
	if (!(info->id = sbx__strdup(json_string_value(sid))) ||
	    !(info->template_id = sbx__strdup(json_is_string(tpl) ? json_string_value(tpl) : "")) ||
	    (json_is_string(name) && !(info->name = sbx__strdup(json_string_value(name))))) {
		sbx__free(info->id);
		sbx__free(info->template_id);
		memset(info, 0, sizeof(*info));
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	return 0;
}

static void info_clear(sbx_sandbox_info *i)
{
	sbx__free(i->id);
	sbx__free(i->name);
	sbx__free(i->template_id);
	memset(i, 0, sizeof(*i));
}

/* Append the items of one page that carry our metadata name and have the wanted state. */
static int add_page(sbx_info_list *l, size_t *cap, json_t *page, sbx_sandbox_state want, bool all,
                    sbx_error *err)
{
	json_t *s;
	size_t i;
	int error;

	if (!page || json_is_null(page))
		return 0;
	if (!json_is_array(page))
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "E2B GET /v2/sandboxes returned no array of sandboxes");
	json_array_foreach(page, i, s)
	{
		if (!all && !json_is_string(json_object_get(json_object_get(s, "metadata"),
		                                            SBX_E2B_METADATA_NAME)))
			continue; /* not made by this library */
		if (l->count == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			sbx_sandbox_info *n = sbx__realloc(l->items, ncap * sizeof(*n));
			if (!n)
				return sbx__error_set(err, SBX_ENOMEM, "out of memory");
			l->items = n;
			*cap = ncap;
		}
		if ((error = fill_info(&l->items[l->count], s, "E2B GET /v2/sandboxes", err)) < 0)
			return error;
		/* E2B filters by state; a legacy control plane lists running ones whatever asked */
		if (want != SBX_STATE_ANY && l->items[l->count].state != want) {
			info_clear(&l->items[l->count]);
			continue;
		}
		l->count++;
	}
	return 0;
}

typedef struct list_pages {
	sbx_info_list *l;
	size_t cap;
	sbx_sandbox_state want;
	bool all;
} list_pages;

static int list_page(json_t *page, void *payload, sbx_error *err)
{
	list_pages *lp = payload;
	return add_page(lp->l, &lp->cap, page, lp->want, lp->all, err);
}

int sbx__e2b_list(void *impl, sbx_info_list **out, const sbx_list_options *opts, sbx_signal *sig,
                  sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	const char *states = opts->state == SBX_STATE_RUNNING  ? "running"
	                     : opts->state == SBX_STATE_PAUSED ? "paused"
	                                                       : "running,paused";
	list_pages lp = {NULL, 0, opts->state, opts->all && !opts->name};
	int error;

	*out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (opts->name && (error = sbx__e2b_validate_name(opts->name, err)) < 0))
		return error;
	if (!(lp.l = sbx__calloc(1, sizeof(*lp.l))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	if ((error = sbx__e2b_list_each(p, opts->name, states, list_page, &lp, sig, err)) < 0)
		sbx_info_list_free(lp.l);
	else
		*out = lp.l;
	return error;
}

int sbx__e2b_get_info(void *impl, sbx_sandbox_info **out, const char *id, sbx_signal *sig,
                      sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_e2b_reply reply = {0};
	sbx_sandbox_info *info = NULL;
	sbx_error local = {0};
	char path[256];
	int error;

	*out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_validate_sandbox_id(id, err)) < 0)
		return error;
	snprintf(path, sizeof(path), "/sandboxes/%s", id); /* ids are <= 128 bytes */
	error = sbx__e2b_api_call(&reply, &p->api, "GET", path, NULL, NULL, 0, sig, &local);
	if (error == SBX_EHTTP && reply.not_found) {
		error = sbx__error_set_http(err, SBX_EGONE, 404, "404",
		                            "E2B sandbox %s does not exist", id);
		goto done;
	}
	if (error < 0) {
		sbx__e2b_pass_error(err, &local);
		goto done;
	}
	if (!(info = sbx__calloc(1, sizeof(*info)))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	if ((error = fill_info(info, reply.json, "E2B GET /sandboxes/{id}", err)) < 0)
		goto done;
	if (strcmp(info->id, id) != 0) {
		error = sbx__error_set(err, SBX_EPROTOCOL,
		                       "E2B GET /sandboxes/%s returned another sandbox (%s)", id,
		                       info->id);
		goto done;
	}
	*out = info;
	info = NULL;
done:
	sbx_sandbox_info_free(info);
	sbx__e2b_reply_dispose(&reply);
	return error;
}
