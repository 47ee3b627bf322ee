/*
 * cli/rpc/dispatch.c: the JSON-RPC server of `serve`: reads requests,
 * starts a worker thread per call, matches $/cancelRequest to the call's
 * abort signal, and shuts down on EOF or SIGINT/SIGTERM.
 *
 * Calls never wait for one another (the contract's concurrentExec); each
 * worker sends its own response, so responses come in completion order,
 * matched by id. `initialize` runs on the reader thread, only while no call is
 * in flight, so a call's provider never changes under it. At shutdown every
 * call in flight is aborted (an exec's remote command is killed by the
 * library) and awaited; then the process exits 0.
 *
 * The top floor of serve/: it calls into methods.c (the method table),
 * processes.c (the check before initialize, the kill at shutdown), server.c,
 * wire.c and fail.c, and nothing below calls back up into it.
 */
#include "cli.h"
#include "rpc.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct flight flight;

/* The calls of one serve process: the in-flight table and the count of workers. */
typedef struct dispatcher {
	serve_server *srv;
	serve_writer *w;
	pthread_mutex_t mu;
	pthread_cond_t idle;
	flight *calls; /* in flight, by id */
	size_t ncalls; /* workers not yet finished (some may have left `calls`) */
	size_t burst;  /* the most workers at once since the server was last idle */
} dispatcher;

/* A call in flight: what its handler sees, and the table's bookkeeping. */
struct flight {
	serve_call call;
	dispatcher *d;
	json_t *msg; /* the whole request, owned by the call (its threads alone touch it) */
	flight *next;
};

/*
 * When the last call of a burst of at least this many ends, the freed heap
 * goes back to the kernel (malloc_trim): each call in flight holds about
 * 34 KiB in libcurl (its transfer's 16 KiB receive buffer, two easy handles,
 * a connection) spread over glibc's per-thread arenas, which glibc keeps
 * mapped after free(). The bridge lives as long as its Node or Python host;
 * without the trim a burst of 256 execs left it 9 MiB larger for good.
 */
#define SERVE_TRIM_BURST 16
/* The most malloc arenas of the serve process (see serve_run). */
#define SERVE_ARENAS 4

/* ---- responses ---------------------------------------------------------------------- */

static json_t *response_error(json_t *id, json_t *error)
{
	if (!error)
		return NULL;
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
	                 error);
}

static json_t *response_errorf(json_t *id, int code, const char *msg)
{
	return response_error(id, json_pack("{s:i,s:s}", "code", code, "message", msg));
}

/* ---- requests ------------------------------------------------------------------------ */

void serve_request_parse(serve_request *rq, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *v;
	char msg[300];

	memset(rq, 0, sizeof(*rq));
	rq->kind = -1;
	if (!(rq->msg = json_loadb(line, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr))) {
		snprintf(msg, sizeof(msg), "parse error: %s (line 1, column %d)", jerr.text,
		         jerr.column);
		rq->error = response_errorf(NULL, RPC_PARSE_ERROR, msg);
		return;
	}
	if (!json_is_object(rq->msg)) {
		rq->error = response_errorf(NULL, RPC_INVALID_REQUEST,
		                            json_is_array(rq->msg)
		                                ? "invalid request: batches are not supported"
		                                : "invalid request: not a JSON object");
		return;
	}
	v = json_object_get(rq->msg, "id");
	if (v && !json_is_string(v) && !json_is_integer(v) && !json_is_null(v)) {
		rq->error = response_errorf(NULL, RPC_INVALID_REQUEST,
		                            "invalid request: id must be a string or an integer");
		return;
	}
	rq->id = v && !json_is_null(v) ? json_incref(v) : NULL;
	v = json_object_get(rq->msg, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0) {
		rq->error = response_errorf(rq->id, RPC_INVALID_REQUEST,
		                            "invalid request: \"jsonrpc\" must be \"2.0\"");
		return;
	}
	v = json_object_get(rq->msg, "method");
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		rq->error = response_errorf(rq->id, RPC_INVALID_REQUEST,
		                            "invalid request: \"method\" must be a string");
		return;
	}
	rq->method_name = json_string_value(v);
	v = json_object_get(rq->msg, "params");
	if (v && !json_is_null(v) && !json_is_object(v)) {
		rq->error =
		    response_errorf(rq->id, RPC_INVALID_PARAMS,
		                    "invalid params: params must be an object of named fields");
		return;
	}
	rq->params = v && json_is_object(v) ? json_incref(v) : json_object();
	if (!rq->params) {
		rq->error = response_errorf(rq->id, RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	if (!rq->id) {
		rq->kind = 1;
		return;
	}
	if (!(rq->method = serve_method_find(rq->method_name))) {
		snprintf(msg, sizeof(msg), "method not found: %.200s", rq->method_name);
		rq->error = response_errorf(rq->id, RPC_METHOD_NOT_FOUND, msg);
		return;
	}
	rq->kind = 0;
}

void serve_request_free(serve_request *rq)
{
	json_decref(rq->msg);
	json_decref(rq->id);
	json_decref(rq->params);
	json_decref(rq->error);
	memset(rq, 0, sizeof(*rq));
}

/* ---- calls ------------------------------------------------------------------------------ */

static flight *find_call(dispatcher *d, json_t *id)
{
	for (flight *fl = d->calls; fl; fl = fl->next)
		if (json_equal(fl->call.id, id))
			return fl;
	return NULL;
}

static void call_free(flight *fl)
{
	serve_args_free(&fl->call.args);
	json_decref(fl->call.id);
	json_decref(fl->call.params);
	json_decref(fl->msg);
	sbx_signal_free(fl->call.sig);
	free(fl);
}

static void *worker(void *arg)
{
	flight *fl = arg;
	serve_call *c = &fl->call;
	dispatcher *d = fl->d;
	serve_fail f = {0};
	json_t *result = NULL, *msg;

	if (c->method->run(c, &c->args, &result, &f) == 0)
		msg = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", c->id, "result", result);
	else
		msg = response_error(c->id, serve_error_object(&f));
	/* Leave the table first: the peer may reuse the id as soon as it reads the response. */
	pthread_mutex_lock(&d->mu);
	for (flight **pp = &d->calls; *pp; pp = &(*pp)->next)
		if (*pp == fl) {
			*pp = fl->next;
			break;
		}
	pthread_mutex_unlock(&d->mu);
	if (!msg)
		msg = response_errorf(c->id, RPC_INTERNAL_ERROR, "out of memory");
	wire_send(d->w, msg);
	call_free(fl);
	bool trim = false;
	pthread_mutex_lock(&d->mu);
	d->ncalls--;
	if (d->ncalls == 0) {
		trim = d->burst >= SERVE_TRIM_BURST;
		d->burst = 0;
	}
	pthread_cond_broadcast(&d->idle);
	pthread_mutex_unlock(&d->mu);
	if (trim)
		(void)malloc_trim(0); /* every arena; a call starting meanwhile is safe */
	return NULL;
}

static void cancel(dispatcher *d, json_t *params)
{
	json_t *id = json_object_get(params, "id");
	flight *fl;

	if (!id)
		return;
	pthread_mutex_lock(&d->mu);
	if ((fl = find_call(d, id)))
		sbx_signal_abort(fl->call.sig);
	pthread_mutex_unlock(&d->mu);
}

/*
 * initialize, on the reader thread: only while no call is in flight and no
 * background command started here is remembered (their handles use the
 * provider and the logger it replaces).
 */
static void run_initialize_now(dispatcher *d, serve_call *c)
{
	serve_fail f = {0};
	json_t *result = NULL;
	size_t busy = 0;

	pthread_mutex_lock(&d->mu);
	/* Calls still in the table: one that has answered no longer counts. */
	for (flight *o = d->calls; o; o = o->next)
		busy++;
	pthread_mutex_unlock(&d->mu);
	if (busy)
		serve_failf(&f, RPC_INVALID_REQUEST,
		            "initialize while %zu call(s) are in flight: wait for them", busy);
	else if (serve_proc_any(d->srv) || serve_pty_any(d->srv))
		serve_failf(&f, RPC_INVALID_REQUEST,
		            "initialize while background commands or terminals started here are "
		            "not waited for: wait for or kill them first");
	else if (c->method->run(c, &c->args, &result, &f) == 0) {
		wire_send(d->w, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", c->id, "result",
		                          result));
		return;
	}
	f.named = true; /* the client learns the names from initialize's answer, so not here */
	wire_send(d->w, response_error(c->id, serve_error_object(&f)));
}

/* A call for a request, taking the request's JSON whole; NULL (answered) when out of memory. */
static flight *call_new(dispatcher *d, serve_request *rq)
{
	flight *fl;

	if (!(fl = calloc(1, sizeof(*fl))) || sbx_signal_new(&fl->call.sig) < 0) {
		free(fl);
		wire_send(d->w, response_errorf(rq->id, RPC_INTERNAL_ERROR, "out of memory"));
		return NULL;
	}
	fl->d = d;
	fl->call.srv = d->srv;
	/*
	 * The call takes the request's JSON whole (jansson's reference counts are
	 * not atomic): from here only the call's own threads touch it.
	 */
	fl->msg = rq->msg;
	fl->call.id = rq->id;
	fl->call.params = rq->params;
	rq->msg = rq->id = rq->params = NULL;
	fl->call.method = rq->method;
	return fl;
}

/* 0 when the call's method has what it needs; -1 (answered) for a method that needs the
 * provider before a deployment config is set. */
static int check_configured(dispatcher *d, serve_call *c)
{
	serve_fail f = {0};
	json_t *e;

	if (!c->method->needs_provider || serve_provider_of(d->srv))
		return 0;
	const char *why = serve_config_error(d->srv);
	serve_failf(&f, RPC_NOT_CONFIGURED,
	            "no deployment config%s%s: send initialize "
	            "{\"config\": {...}} first, or start serve with E2B_API_KEY / "
	            "SANDBOX_E2B_CONFIG / --config",
	            why[0] ? "; " : "", why);
	e = serve_error_object(&f);
	/* why the CLI's config was refused, its reason and the variables behind it, as data: the
	 * packages say what their user sets without parsing, nor a rule of their own */
	json_t *data = e ? json_object_get(e, "data") : NULL;
	const char *reason = serve_config_reason(d->srv);
	json_t *vars = serve_config_vars(d->srv);
	if (data && why[0])
		json_object_set_new(data, "config_error", json_string(why));
	if (data && why[0] && reason[0])
		json_object_set_new(data, "config_reason", json_string(reason));
	if (data && vars)
		json_object_set_new(data, "config_vars", json_deep_copy(vars));
	wire_send(d->w, response_error(c->id, e));
	return -1;
}

/* Under d->mu: put the call in the table and start its worker. 0, or -1 with the refusal in
 * *answer (the caller sends it once the lock is released, and frees the call). */
static int call_enter(dispatcher *d, flight *fl, json_t **answer)
{
	serve_call *c = &fl->call;
	pthread_attr_t attr;
	pthread_t t;
	char msg[300];
	int rc;

	if (find_call(d, c->id)) {
		*answer = response_errorf(c->id, RPC_INVALID_REQUEST,
		                          "invalid request: this id is already used by a "
		                          "call in flight");
		return -1;
	}
	if (d->ncalls >= SERVE_MAX_CALLS) {
		snprintf(msg, sizeof(msg), "too many calls in flight (at most %d)",
		         SERVE_MAX_CALLS);
		*answer = response_errorf(c->id, RPC_INTERNAL_ERROR, msg);
		return -1;
	}
	fl->next = d->calls;
	d->calls = fl;
	d->ncalls++;
	if (d->ncalls > d->burst)
		d->burst = d->ncalls;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, worker, fl);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		d->calls = fl->next;
		d->ncalls--;
		*answer = response_errorf(c->id, RPC_INTERNAL_ERROR,
		                          "cannot start a thread for the call");
		return -1;
	}
	return 0;
}

/* Start a call (the reader thread). Answers itself on every failure. */
static void start_call(dispatcher *d, serve_request *rq)
{
	serve_fail f = {0};
	flight *fl;
	serve_call *c;
	json_t *answer = NULL;
	int rc;

	if (!(fl = call_new(d, rq)))
		return;
	c = &fl->call;
	if (c->method->parse(c->params, &c->args, &f) < 0) {
		f.named = strcmp(c->method->name, "initialize") == 0; /* as run_initialize_now */
		wire_send(d->w, response_error(c->id, serve_error_object(&f)));
		call_free(fl);
		return;
	}
	if (strcmp(c->method->name, "initialize") == 0) {
		run_initialize_now(d, c);
		call_free(fl);
		return;
	}
	if (check_configured(d, c) < 0) {
		call_free(fl);
		return;
	}
	c->prov = serve_provider_of(d->srv);
	pthread_mutex_lock(&d->mu);
	rc = call_enter(d, fl, &answer);
	pthread_mutex_unlock(&d->mu);
	if (rc < 0) {
		wire_send(d->w, answer);
		call_free(fl);
	}
}

static void handle_line(dispatcher *d, const char *line, size_t len)
{
	serve_request rq;

	serve_request_parse(&rq, line, len);
	if (rq.kind < 0) {
		if (rq.error)
			wire_send(d->w, json_incref(rq.error));
	} else if (rq.kind == 1) {
		if (strcmp(rq.method_name, "$/cancelRequest") == 0)
			cancel(d, rq.params);
		/* Other notifications (and unknown ones, e.g. "$/..."): nothing to do. */
	} else {
		start_call(d, &rq);
	}
	serve_request_free(&rq);
}

int serve_run(const serve_options *o)
{
	serve_options opts = *o;
	dispatcher d;
	serve_reader r;
	const char *line;
	size_t len;
	int rc;

	if (!opts.max_line)
		opts.max_line = SERVE_MAX_LINE_DEFAULT;
	/*
	 * At most SERVE_ARENAS malloc arenas (glibc makes up to 8 per core, one per
	 * thread that first allocates while the others are busy): the same peak,
	 * but the trim after a burst gives back all but ~0.4 MiB instead of ~1.4 MiB
	 * on 2 cores (more on a big host). A call allocates mostly at its start and
	 * end; between, it waits on the network, so the arenas' locks see little
	 * contention. Best effort: MALLOC_ARENA_MAX in the environment still wins.
	 */
	if (!getenv("MALLOC_ARENA_MAX"))
		(void)mallopt(M_ARENA_MAX, SERVE_ARENAS);
	memset(&d, 0, sizeof(d));
	if (serve_server_new(&d.srv, &opts) < 0)
		return CLI_EXIT_ERROR;
	d.w = serve_writer_of(d.srv);
	pthread_mutex_init(&d.mu, NULL);
	pthread_cond_init(&d.idle, NULL);
	wire_reader_init(&r, opts.in_fd, sbx_signal_fd(opts.stop), opts.max_line);
	while ((rc = wire_read_line(&r, &line, &len)) != WIRE_EOF) {
		if (rc == WIRE_LINE) {
			if (len > 0 && line[len - 1] == '\r')
				len--;
			if (len > 0)
				handle_line(&d, line, len);
		} else if (rc == WIRE_TOO_LONG) {
			char msg[200];
			snprintf(msg, sizeof(msg),
			         "invalid request: line over %zu bytes (the cap); not read",
			         opts.max_line);
			wire_send(d.w, response_errorf(NULL, RPC_INVALID_REQUEST, msg));
		} else {
			fprintf(stderr,
			        "sandbox-e2b serve: cannot read the input; shutting down\n");
			break;
		}
	}
	wire_reader_free(&r);
	/* Shutdown: abort every call in flight (remote commands are killed), wait for all. */
	pthread_mutex_lock(&d.mu);
	for (flight *fl = d.calls; fl; fl = fl->next)
		sbx_signal_abort(fl->call.sig);
	while (d.ncalls > 0)
		pthread_cond_wait(&d.idle, &d.mu);
	pthread_mutex_unlock(&d.mu);
	serve_proc_shutdown(d.srv); /* background commands are killed too */
	serve_pty_shutdown(d.srv);  /* and terminals */
	pthread_cond_destroy(&d.idle);
	pthread_mutex_destroy(&d.mu);
	serve_server_free(d.srv);
	return CLI_EXIT_OK;
}
