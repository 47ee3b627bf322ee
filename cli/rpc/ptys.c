/*
 * cli/rpc/ptys.c: the terminals `serve` started or attached (`pty_start`,
 * `pty_attach`), kept by (sandbox id, pid) so that `pty_input`,
 * `pty_resize`, `pty_kill` and `pty_wait` reach the same handle, and killed
 * at shutdown, as the background commands of processes.c are. Their output
 * goes out as `output` notifications with "stream": "pty" under the id of the
 * request that made the handle.
 */
#include "command_fields.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct serve_pty {
	serve_server *srv;
	char *id;      /* sandbox id */
	json_t *rq_id; /* the pty_start / pty_attach request's id */
	/* output may come before sbx_pty_start() returned: it waits for `published` */
	pthread_mutex_t mu;
	pthread_cond_t published_cv;
	bool published;
	uint32_t pid;
	sbx_pty *h;
	int refs;       /* holders; the table's own reference counts one */
	bool forgotten; /* out of the table */
	struct serve_pty *next;
};

static int on_output(const unsigned char *data, size_t len, void *payload)
{
	serve_pty *t = payload;
	uint32_t pid;

	pthread_mutex_lock(&t->mu);
	while (!t->published)
		pthread_cond_wait(&t->published_cv, &t->mu);
	pid = t->pid;
	pthread_mutex_unlock(&t->mu);
	if (pid)
		serve_notify_output(serve_writer_of(t->srv), t->rq_id, pid, "pty", data, len);
	return 0;
}

static void pty_free(serve_pty *t)
{
	sbx_pty_free(t->h); /* joins the reader thread: no on_output after this */
	pthread_cond_destroy(&t->published_cv);
	pthread_mutex_destroy(&t->mu);
	json_decref(t->rq_id);
	free(t->id);
	free(t);
}

/* The handle of (id, pid) in the table, held once, or NULL; `unlink` takes it out too. */
static serve_pty *find(serve_server *s, const char *id, uint32_t pid, bool unlink)
{
	serve_pty *t, **tp;

	for (tp = serve_ptys_of(s); (t = *tp); tp = &t->next)
		if (t->pid == pid && strcmp(t->id, id) == 0) {
			t->refs++;
			if (unlink) {
				*tp = t->next;
				t->forgotten = true;
			}
			return t;
		}
	return NULL;
}

int serve_pty_open(serve_pty **out, serve_call *c, const serve_args *a, uint32_t attach_pid,
                   sbx_error *err)
{
	sbx_pty_options o;
	serve_pty *t = calloc(1, sizeof(*t)), *old;
	int rc;

	*out = NULL;
	if (!t || !(t->id = strdup(a->id))) {
		free(t);
		return SBX_ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->published_cv, NULL);
	t->srv = c->srv;
	if (!(t->rq_id = json_deep_copy(c->id))) { /* used after the call is gone */
		pty_free(t);
		return SBX_ENOMEM;
	}
	o = cli_pty_options_of(&a->cmd);
	o.cols = a->cols;
	o.rows = a->rows;
	o.on_output = on_output;
	o.output_payload = t;
	rc = attach_pid ? sbx_pty_attach(&t->h, c->prov, a->id, attach_pid, &o, c->sig, err)
	                : sbx_pty_start(&t->h, c->prov, a->id, a->command, &o, c->sig, err);
	pthread_mutex_lock(&t->mu);
	t->pid = rc < 0 ? 0 : sbx_pty_pid(t->h);
	t->published = true;
	pthread_cond_broadcast(&t->published_cv);
	pthread_mutex_unlock(&t->mu);
	if (rc < 0) {
		pty_free(t);
		return rc;
	}
	t->refs = 2; /* the table's and the caller's */
	pthread_mutex_lock(serve_lock_of(c->srv));
	old = find(c->srv, t->id, t->pid, true); /* attached again: the new handle follows it */
	t->next = *serve_ptys_of(c->srv);
	*serve_ptys_of(c->srv) = t;
	pthread_mutex_unlock(serve_lock_of(c->srv));
	if (old) {
		serve_pty_put(old); /* the table's */
		serve_pty_put(old); /* find's */
	}
	*out = t;
	return 0;
}

serve_pty *serve_pty_get(serve_server *s, const char *id, uint32_t pid)
{
	serve_pty *t;

	pthread_mutex_lock(serve_lock_of(s));
	t = find(s, id, pid, false);
	pthread_mutex_unlock(serve_lock_of(s));
	return t;
}

void serve_pty_put(serve_pty *t)
{
	int left;

	if (!t)
		return;
	pthread_mutex_lock(serve_lock_of(t->srv));
	left = --t->refs;
	pthread_mutex_unlock(serve_lock_of(t->srv));
	if (left == 0)
		pty_free(t);
}

void serve_pty_forget(serve_pty *t)
{
	bool drop = false;

	pthread_mutex_lock(serve_lock_of(t->srv));
	if (!t->forgotten) {
		for (serve_pty **tp = serve_ptys_of(t->srv); *tp; tp = &(*tp)->next)
			if (*tp == t) {
				*tp = t->next;
				break;
			}
		t->forgotten = true;
		drop = true;
	}
	pthread_mutex_unlock(serve_lock_of(t->srv));
	if (drop)
		serve_pty_put(t); /* the table's reference */
}

sbx_pty *serve_pty_handle(serve_pty *t)
{
	return t->h;
}

uint32_t serve_pty_pid(serve_pty *t)
{
	return t->pid;
}

bool serve_pty_any(serve_server *s)
{
	bool any;

	pthread_mutex_lock(serve_lock_of(s));
	any = *serve_ptys_of(s) != NULL;
	pthread_mutex_unlock(serve_lock_of(s));
	return any;
}

void serve_pty_shutdown(serve_server *s)
{
	serve_pty *t;

	for (;;) {
		pthread_mutex_lock(serve_lock_of(s));
		t = *serve_ptys_of(s);
		if (t)
			t->refs++;
		pthread_mutex_unlock(serve_lock_of(s));
		if (!t)
			return;
		sbx_pty_kill(t->h, NULL, NULL);
		serve_pty_forget(t);
		serve_pty_put(t);
	}
}
