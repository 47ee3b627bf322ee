/*
 * cli/rpc/processes.c: the background commands `serve` started
 * (`exec {"background": true}`), kept by (sandbox id, pid) so that `wait`,
 * `send_stdin`, `close_stdin` and `kill_process` reach the same handle, and
 * killed at shutdown, so no command started through serve outlives it.
 */
#include "command_fields.h"
#include "rpc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct serve_proc {
	serve_server *srv;
	char *id;      /* sandbox id */
	json_t *rq_id; /* the exec request's id, for output notifications */
	/* the reader thread may deliver output before sbx_process_start() has returned: on_output
	 * waits for `published` (under `mu`), which the starter sets once `pid` is known */
	pthread_mutex_t mu;
	pthread_cond_t published_cv;
	bool published;
	uint32_t pid;
	sbx_process *h;
	int refs;       /* holders; the table's own reference counts one */
	bool forgotten; /* out of the table */
	bool broken;    /* its stream broke before the end (a pause): waits attach anew */
	struct serve_proc *next;
};

static int on_output(sbx_stream stream, const unsigned char *data, size_t len, void *payload)
{
	serve_proc *p = payload;
	uint32_t pid;

	pthread_mutex_lock(&p->mu);
	while (!p->published)
		pthread_cond_wait(&p->published_cv, &p->mu);
	pid = p->pid;
	pthread_mutex_unlock(&p->mu);
	serve_notify_output(serve_writer_of(p->srv), p->rq_id, pid,
	                    stream == SBX_STREAM_STDERR ? "stderr" : "stdout", data, len);
	return 0;
}

static void proc_free(serve_proc *p)
{
	sbx_process_free(p->h); /* joins the reader thread: no on_output after this */
	pthread_cond_destroy(&p->published_cv);
	pthread_mutex_destroy(&p->mu);
	json_decref(p->rq_id);
	free(p->id);
	free(p);
}

int serve_proc_start(serve_proc **out, serve_call *c, const serve_args *a, sbx_error *err)
{
	sbx_process_options o;
	serve_proc *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p || !(p->id = strdup(a->id))) {
		free(p);
		return SBX_ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->published_cv, NULL);
	p->srv = c->srv;
	/* A copy of its own: the handle's reader thread uses it after the call is gone. */
	if (!(p->rq_id = json_deep_copy(c->id))) {
		proc_free(p);
		return SBX_ENOMEM;
	}
	o = cli_process_options_of(&a->cmd);
	o.stdin_open = a->stdin_open;
	if (a->stream) {
		o.on_output = on_output;
		o.output_payload = p;
	}
	rc = sbx_process_start(&p->h, c->prov, a->id, a->command, &o, c->sig, err);
	pthread_mutex_lock(&p->mu);
	p->pid = rc < 0 ? 0 : sbx_process_pid(p->h);
	p->published = true;
	pthread_cond_broadcast(&p->published_cv);
	pthread_mutex_unlock(&p->mu);
	if (rc < 0) {
		proc_free(p);
		return rc;
	}
	p->refs = 2; /* the table's and the caller's */
	pthread_mutex_lock(serve_lock_of(c->srv));
	p->next = *serve_procs_of(c->srv);
	*serve_procs_of(c->srv) = p;
	pthread_mutex_unlock(serve_lock_of(c->srv));
	*out = p;
	return 0;
}

serve_proc *serve_proc_get(serve_server *s, const char *id, uint32_t pid)
{
	serve_proc *p;

	pthread_mutex_lock(serve_lock_of(s));
	for (p = *serve_procs_of(s); p; p = p->next)
		if (p->pid == pid && strcmp(p->id, id) == 0) {
			p->refs++;
			break;
		}
	pthread_mutex_unlock(serve_lock_of(s));
	return p;
}

void serve_proc_put(serve_proc *p)
{
	int left;

	if (!p)
		return;
	pthread_mutex_lock(serve_lock_of(p->srv));
	left = --p->refs;
	pthread_mutex_unlock(serve_lock_of(p->srv));
	if (left == 0)
		proc_free(p);
}

void serve_proc_forget(serve_proc *p)
{
	bool drop = false;

	pthread_mutex_lock(serve_lock_of(p->srv));
	if (!p->forgotten) {
		for (serve_proc **pp = serve_procs_of(p->srv); *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		p->forgotten = true;
		drop = true;
	}
	pthread_mutex_unlock(serve_lock_of(p->srv));
	if (drop)
		serve_proc_put(p); /* the table's reference */
}

bool serve_proc_any(serve_server *s)
{
	bool any;

	pthread_mutex_lock(serve_lock_of(s));
	any = *serve_procs_of(s) != NULL;
	pthread_mutex_unlock(serve_lock_of(s));
	return any;
}

sbx_process *serve_proc_handle(serve_proc *p)
{
	return p->h;
}

void serve_proc_set_broken(serve_proc *p)
{
	pthread_mutex_lock(serve_lock_of(p->srv));
	p->broken = true;
	pthread_mutex_unlock(serve_lock_of(p->srv));
}

bool serve_proc_broken(serve_proc *p)
{
	bool b;

	pthread_mutex_lock(serve_lock_of(p->srv));
	b = p->broken;
	pthread_mutex_unlock(serve_lock_of(p->srv));
	return b;
}

void serve_proc_shutdown(serve_server *s)
{
	serve_proc *p;

	for (;;) {
		pthread_mutex_lock(serve_lock_of(s));
		p = *serve_procs_of(s);
		if (p)
			p->refs++;
		pthread_mutex_unlock(serve_lock_of(s));
		if (!p)
			return;
		/* a broken handle takes its command for ended: by pid then (the tree too) */
		if (serve_proc_broken(p))
			sbx_process_kill_pid(serve_provider_of(s), p->id, p->pid, NULL, NULL);
		else
			sbx_process_kill(p->h, NULL, NULL);
		serve_proc_forget(p);
		serve_proc_put(p);
	}
}
