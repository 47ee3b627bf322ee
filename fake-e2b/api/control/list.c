/*
 * fake-e2b/api/control/list.c: GET /v2/sandboxes (filters: metadata, state, startedAfter,
 * template; order by start time; paging) and legacy GET /sandboxes (docs/protocol.md "List"),
 * as E2B's API does them (infra packages/api/internal/handlers/sandboxes_list.go).
 */
#define _GNU_SOURCE
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "control.h"

/* metadata filter (docs/protocol.md "List"): the query value (decoded once) is unescaped again as a
 * whole, split on '&' and '=', and each part unescaped a third time. New object, or NULL when
 * malformed. */
static json_t *parse_metadata_filter(const char *raw)
{
	char *s = strdup(raw);
	json_t *out = json_object();
	if (!s || !out || fk_url_decode(s, 1) < 0)
		goto fail;
	for (char *save = NULL, *pair = strtok_r(s, "&", &save); pair;
	     pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		if (!eq)
			goto fail;
		*eq = '\0';
		if (fk_url_decode(pair, 1) < 0 || fk_url_decode(eq + 1, 1) < 0)
			goto fail;
		json_object_set_new(out, pair, json_string(eq + 1));
	}
	free(s);
	return out;
fail:
	free(s);
	json_decref(out);
	return NULL;
}

static int metadata_matches(json_t *filter, json_t *meta)
{
	const char *k;
	json_t *v;
	json_object_foreach(filter, k, v)
	{
		json_t *have = json_object_get(meta, k);
		if (!json_is_string(have) || strcmp(json_string_value(have), json_string_value(v)))
			return 0;
	}
	return 1;
}

typedef struct list_item {
	int64_t started;
	int running;
	char id[FK_ID_LEN + 1];
	json_t *json;
} list_item;

/* Newest first (desc, E2B's default); ties by id. */
static int item_cmp(const void *a, const void *b)
{
	const list_item *x = a, *y = b;
	if (x->started != y->started)
		return x->started > y->started ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int item_cmp_asc(const void *a, const void *b)
{
	return item_cmp(b, a);
}

/* RFC 3339 date-time ("2026-01-02T03:04:05.123456789Z", or an offset "+01:00"): 0 and ns
 * since the epoch, or -1. */
static int parse_date_time(const char *s, int64_t *out)
{
	struct tm tm = {0};
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	int64_t frac = 0, scale = 1000000000;
	if (*p == '.') {
		int digits = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 9) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
		if (!digits)
			return -1;
	}
	long off = 0;
	if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int h, m;
		if (sscanf(p + 1, "%2d:%2d", &h, &m) != 2 || h > 23 || m > 59)
			return -1;
		off = (*p == '-' ? -1 : 1) * (h * 3600L + m * 60L);
	} else if (strcmp(p, "Z") != 0 && strcmp(p, "z") != 0) {
		return -1;
	}
	*out = ((int64_t)timegm(&tm) - off) * FK_NS + frac;
	return 0;
}

typedef struct list_query {
	json_t *filter; /* NULL = no metadata filter */
	int want_running, want_paused, limit, have_cursor, asc;
	int64_t started_after; /* ns, on E2B's microsecond grid; 0 = no bound */
	char *template_id;     /* NULL = any template */
	list_item cursor;
} list_query;

/* Query of GET /v2/sandboxes (docs/protocol.md "List"); legacy GET /sandboxes takes only metadata.
 */
static const char *list_query_parse(fk_req *r, int v2, list_query *q)
{
	char *meta = fk_query(r, "metadata"), *state = v2 ? fk_query_joined(r, "state") : NULL;
	char *limit = v2 ? fk_query(r, "limit") : NULL,
	     *next = v2 ? fk_query(r, "nextToken") : NULL,
	     *order = v2 ? fk_query(r, "order") : NULL,
	     *after = v2 ? fk_query(r, "startedAfter") : NULL;
	const char *why = NULL;
	*q = (list_query){.want_running = 1, .want_paused = v2, .limit = 100};
	if (meta && !(q->filter = parse_metadata_filter(meta)))
		why = "Invalid metadata filter";
	if (!why && state) {
		q->want_running = q->want_paused = 0;
		char *save = NULL;
		for (char *s = strtok_r(state, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
			if (strcmp(s, "running") == 0)
				q->want_running = 1;
			else if (strcmp(s, "paused") == 0)
				q->want_paused = 1;
			else
				why = "validation error: state must be running or paused";
		}
	}
	if (!why && limit) {
		char *end;
		long l = strtol(limit, &end, 10);
		if (!*limit || *end || l < 1 || l > 100)
			why = "validation error: limit must be between 1 and 100";
		q->limit = (int)l;
	}
	if (!why && next && *next) {
		if (fk_control_cursor_parse(next, &q->cursor.started, q->cursor.id, FK_ID_LEN) < 0)
			why = "Invalid next token";
		q->have_cursor = 1;
	}
	if (!why && order) {
		if (strcmp(order, "asc") && strcmp(order, "desc"))
			why = "Invalid order parameter: unknown order";
		q->asc = !strcmp(order, "asc");
	}
	if (!why && after) {
		if (parse_date_time(after, &q->started_after) < 0)
			why = "Invalid format for parameter startedAfter";
		q->started_after -= q->started_after % 1000; /* E2B truncates to microseconds */
	}
	q->template_id = v2 ? fk_query(r, "template") : NULL;
	if (!why && q->template_id && strchr(q->template_id, ':'))
		why = "Invalid template: tags are not supported here because sandboxes are not "
		      "tag-scoped";
	free(order);
	free(after);
	free(meta);
	free(state);
	free(limit);
	free(next);
	return why;
}

typedef struct collect {
	const list_query *q;
	list_item *items;
	size_t n, cap;
	int oom;
} collect;

static void collect_one(fk_sandbox *sb, void *ud)
{
	collect *k = ud;
	const list_query *q = k->q;
	if (k->oom || !(sb->state == FK_SB_RUNNING ? q->want_running : q->want_paused))
		return;
	if (q->filter && !metadata_matches(q->filter, sb->metadata))
		return;
	/* E2B compares microsecond-truncated start times against the bound */
	if (q->started_after && sb->started_ns - sb->started_ns % 1000 < q->started_after)
		return;
	if (q->template_id && strcmp(q->template_id, sb->template_id) != 0)
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		list_item *p = realloc(k->items, cap * sizeof(*p));
		if (!p) {
			k->oom = 1;
			return;
		}
		k->items = p;
		k->cap = cap;
	}
	list_item *it = &k->items[k->n++];
	it->started = sb->started_ns;
	it->running = sb->state == FK_SB_RUNNING;
	memcpy(it->id, sb->id, sizeof(it->id));
	it->json = fk_sandbox_listed_json(sb);
}

/* Matching sandboxes in the query's order; NULL on OOM. Caller frees items and their json. */
static list_item *list_collect(fk_registry *g, const list_query *q, size_t *n_out)
{
	collect k = {.q = q};
	fk_registry_foreach(g, collect_one, &k);
	if (!k.items)
		k.items = calloc(1, sizeof(*k.items));
	if (k.items)
		qsort(k.items, k.n, sizeof(*k.items), q->asc ? item_cmp_asc : item_cmp);
	*n_out = k.n;
	return k.items;
}

static enum MHD_Result list_sandboxes(fk_call *c, int v2)
{
	fk_req *r = c->req;
	list_query q;
	size_t n = 0;
	const char *why = list_query_parse(r, v2, &q);
	list_item *items = why ? NULL : list_collect(c->app->reg, &q, &n);
	enum MHD_Result ret;
	if (why || !items) {
		json_decref(q.filter);
		free(q.template_id);
		free(items);
		return why ? fk_reply_error(r, 400, "%s", why)
		           : fk_reply_error(r, 500, "out of memory");
	}
	size_t first = 0;
	int (*cmp)(const void *, const void *) = q.asc ? item_cmp_asc : item_cmp;
	while (q.have_cursor && first < n && cmp(&items[first], &q.cursor) <= 0)
		first++; /* the page starts after the cursor's item */
	size_t last = v2 && n - first > (size_t)q.limit ? first + (size_t)q.limit : n;
	json_t *arr = json_array();
	for (size_t i = first; i < last; i++)
		json_array_append(arr, items[i].json);
	char *body = json_dumps(arr, JSON_COMPACT);
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    body ? strlen(body) : 2, body ? body : (char *)"[]", MHD_RESPMEM_MUST_COPY);
	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		char *tok =
		    last < n ? fk_control_cursor_make(items[last - 1].started, items[last - 1].id)
		             : NULL;
		if (tok) /* only when more pages exist */
			MHD_add_response_header(resp, "X-Next-Token", tok);
		free(tok);
		if (v2 && q.want_running) { /* running ones matching every filter, all pages */
			size_t running = 0;
			char num[24];
			for (size_t i = 0; i < n; i++)
				running += (size_t)items[i].running;
			snprintf(num, sizeof(num), "%zu", running);
			MHD_add_response_header(resp, "X-Total-Running", num);
		}
	}
	ret = fk_reply_response(r, 200, resp);
	free(body);
	json_decref(arr);
	for (size_t i = 0; i < n; i++)
		json_decref(items[i].json);
	free(items);
	json_decref(q.filter);
	free(q.template_id);
	return ret;
}

enum MHD_Result fk_control_list_v2(fk_call *c)
{
	return list_sandboxes(c, 1);
}

enum MHD_Result fk_control_list_legacy(fk_call *c)
{
	return list_sandboxes(c, 0);
}
