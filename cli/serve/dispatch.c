/*
 * cli/serve/dispatch.c: the JSON-RPC server of `serve`: reads requests,
 * starts a worker thread per call, matches $/cancelRequest to the call's
 * abort signal, and shuts down on EOF or SIGINT/SIGTERM.
 *
 * Calls never wait for one another (the contract's concurrentExec); each
 * worker sends its own response, so responses come in completion order,
 * matched by id. `initialize` runs on the reader thread, only while no call is
 * in flight, so a call's provider never changes under it. At shutdown every
 * call in flight is aborted (an exec's remote command is killed by the
 * library) and awaited; then the process exits 0.
 */
#include "cli.h"
#include "serve.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct serve_server {
	serve_writer w;
	const serve_options *opts;
	sbx_provider *prov;
	sbx_e2b_config *cfg;
	char *envd_url;
	char config_error[640]; /* why the CLI's config was refused, for -32001 */
	bool log_notify;
	int log_min; /* lines below this level are dropped (-v: debug; else warn) */
	pthread_mutex_t mu;
	pthread_cond_t idle;
	serve_call *calls; /* in flight, by id */
	serve_proc *procs; /* background commands (processes.c) */
	size_t ncalls;     /* workers not yet finished (some may have left `calls`) */
	size_t burst;      /* the most workers at once since the server was last idle */
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

/* ---- failures ----------------------------------------------------------------------- */

int serve_failf(serve_fail *f, int rpc_code, const char *fmt, ...)
{
	va_list ap;

	memset(&f->lib, 0, sizeof(f->lib));
	f->rpc_code = rpc_code;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return -1;
}

const char *serve_code_name(int code)
{
	switch (code) {
	case SBX_EINVALID:
		return "invalid";
	case SBX_EGONE:
		return "gone";
	case SBX_EABORTED:
		return "aborted";
	case SBX_ETIMEOUT:
		return "timeout";
	case SBX_ETOOLARGE:
		return "too_large";
	case SBX_ENOMEM:
		return "no_memory";
	case SBX_EPROTOCOL:
		return "protocol";
	case SBX_EHTTP:
		return "http";
	case SBX_ENETWORK:
		return "network";
	case SBX_EUSER:
		return "user";
	case SBX_ESANDBOX:
		return "sandbox";
	default:
		return "internal";
	}
}

json_t *serve_error_object(const serve_fail *f)
{
	json_t *e = json_pack("{s:i,s:s}", "code", f->rpc_code, "message", f->message), *d;

	if (!e || !f->lib.code) {
		if (e && f->rpc_code == RPC_NOT_CONFIGURED)
			json_object_set_new(e, "data",
			                    json_pack("{s:s}", "code", "not_configured"));
		return e;
	}
	if (!(d = json_pack("{s:s}", "code", serve_code_name(f->lib.code)))) {
		json_decref(e);
		return NULL;
	}
	if (f->lib.http_status)
		json_object_set_new(d, "http_status", json_integer(f->lib.http_status));
	if (f->lib.e2b_code[0])
		json_object_set_new(d, "e2b_code", json_string(f->lib.e2b_code));
	json_object_set_new(e, "data", d);
	return e;
}

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

/* ---- the server -------------------------------------------------------------------------- */

serve_writer *serve_writer_of(serve_server *s)
{
	return &s->w;
}

serve_proc **serve_procs_of(serve_server *s)
{
	return &s->procs;
}

pthread_mutex_t *serve_lock_of(serve_server *s)
{
	return &s->mu;
}

static void log_line(sbx_log_level level, const char *message, const sbx_log_field *fields,
                     size_t nfields, void *payload)
{
	serve_server *s = payload;

	if ((int)level < s->log_min)
		return;
	if (s->log_notify) {
		serve_notify_log(&s->w, level, message, fields, nfields);
		return;
	}
	flockfile(stderr);
	fprintf(stderr, "sandbox-e2b serve: %s: %s", sbx_log_level_name(level),
	        cli_lib_message(message));
	for (size_t i = 0; i < nfields; i++)
		fprintf(stderr, " %s=%s", fields[i].key, fields[i].value ? fields[i].value : "");
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* Make the provider from a config JSON text; on failure f says why (secret-free). */
static int make_provider(serve_server *s, const char *json, size_t len, const char *envd_url,
                         serve_fail *f)
{
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_e2b_config *cfg = NULL;
	sbx_provider *prov = NULL;
	sbx_error err = {0};
	int rc;

	if ((rc = sbx_e2b_config_parse(&cfg, json, len, &err)) < 0) {
		serve_failf(f, RPC_INVALID_PARAMS, "invalid deployment config: %s",
		            cli_lib_message(err.message));
		f->lib = err;
		f->lib.code = rc;
		return -1;
	}
	opts.envd_url = envd_url;
	opts.logger.fn = log_line;
	opts.logger.payload = s;
	if ((rc = sbx_e2b_provider_new(&prov, cfg, &opts, &err)) < 0) {
		sbx_e2b_config_free(cfg);
		serve_failf(f, RPC_INVALID_PARAMS, "%s", cli_lib_message(err.message));
		f->lib = err;
		f->lib.code = rc;
		return -1;
	}
	sbx_provider_free(s->prov);
	sbx_e2b_config_free(s->cfg);
	s->prov = prov;
	s->cfg = cfg;
	return 0;
}

int serve_configure(serve_server *s, json_t *config, const char *envd_url, const char *log_mode,
                    int log_min, json_t **result, serve_fail *f)
{
	char *text = NULL, *redacted = NULL;
	json_t *r;

	if (log_mode)
		s->log_notify = strcmp(log_mode, "notify") == 0;
	if (log_min >= 0)
		s->log_min = log_min;
	if (envd_url) {
		char *copy = strdup(envd_url);
		if (!copy)
			return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
		free(s->envd_url);
		s->envd_url = copy;
	}
	if (config) {
		if (!(text = json_dumps(config, JSON_COMPACT)))
			return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
		int rc = make_provider(s, text, strlen(text), s->envd_url, f);
		memset(text, 0, strlen(text)); /* holds the API key */
		free(text);
		if (rc < 0)
			return -1;
	}
	if (s->cfg && sbx_e2b_config_to_json(&redacted, s->cfg, NULL) < 0)
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	r = json_pack("{s:s,s:s,s:i,s:o,s:b,s:I,s:b}", "server", "sandbox-e2b", "version",
	              sbx_version(), "protocol", SERVE_PROTOCOL_VERSION, "methods",
	              serve_method_names(), "concurrent_exec",
	              s->prov ? sbx_provider_concurrent_exec(s->prov) : true, "max_line_bytes",
	              (json_int_t)s->opts->max_line, "configured", s->prov != NULL);
	if (r && redacted)
		json_object_set_new(r, "config", json_loads(redacted, 0, NULL));
	sbx_free(redacted);
	if (!r)
		return serve_failf(f, RPC_INTERNAL_ERROR, "out of memory");
	*result = r;
	return 0;
}

static serve_call *find_call(serve_server *s, json_t *id)
{
	for (serve_call *c = s->calls; c; c = c->next)
		if (json_equal(c->id, id))
			return c;
	return NULL;
}

static void call_free(serve_call *c)
{
	serve_args_free(&c->args);
	json_decref(c->id);
	json_decref(c->params);
	json_decref(c->msg);
	sbx_signal_free(c->sig);
	free(c);
}

static void *worker(void *arg)
{
	serve_call *c = arg;
	serve_server *s = c->srv;
	serve_fail f = {0};
	json_t *result = NULL, *msg;

	if (c->method->run(c, &c->args, &result, &f) == 0)
		msg = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", c->id, "result", result);
	else
		msg = response_error(c->id, serve_error_object(&f));
	/* Leave the table first: the peer may reuse the id as soon as it reads the response. */
	pthread_mutex_lock(&s->mu);
	for (serve_call **pp = &s->calls; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&s->mu);
	if (!msg)
		msg = response_errorf(c->id, RPC_INTERNAL_ERROR, "out of memory");
	wire_send(&s->w, msg);
	call_free(c);
	bool trim = false;
	pthread_mutex_lock(&s->mu);
	s->ncalls--;
	if (s->ncalls == 0) {
		trim = s->burst >= SERVE_TRIM_BURST;
		s->burst = 0;
	}
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	if (trim)
		(void)malloc_trim(0); /* every arena; a call starting meanwhile is safe */
	return NULL;
}

static void cancel(serve_server *s, json_t *params)
{
	json_t *id = json_object_get(params, "id");
	serve_call *c;

	if (!id)
		return;
	pthread_mutex_lock(&s->mu);
	if ((c = find_call(s, id)))
		sbx_signal_abort(c->sig);
	pthread_mutex_unlock(&s->mu);
}

/* Start a call (the reader thread). Answers itself on every failure. */
static void start_call(serve_server *s, serve_request *rq)
{
	serve_fail f = {0};
	serve_call *c;
	pthread_attr_t attr;
	pthread_t t;
	char msg[300];

	if (!(c = calloc(1, sizeof(*c))) || sbx_signal_new(&c->sig) < 0) {
		free(c);
		wire_send(&s->w, response_errorf(rq->id, RPC_INTERNAL_ERROR, "out of memory"));
		return;
	}
	c->srv = s;
	/*
	 * The call takes the request's JSON whole (jansson's reference counts are
	 * not atomic): from here only the call's own threads touch it.
	 */
	c->msg = rq->msg;
	c->id = rq->id;
	c->params = rq->params;
	rq->msg = rq->id = rq->params = NULL;
	c->method = rq->method;
	if (c->method->parse(c->params, &c->args, &f) < 0) {
		wire_send(&s->w, response_error(c->id, serve_error_object(&f)));
		call_free(c);
		return;
	}
	if (strcmp(c->method->name, "initialize") == 0) {
		json_t *result = NULL;
		size_t busy = 0;
		pthread_mutex_lock(&s->mu);
		/* Calls still in the table: one that has answered no longer counts. */
		for (serve_call *o = s->calls; o; o = o->next)
			busy++;
		bool procs = s->procs != NULL; /* their handles use the provider and the logger */
		pthread_mutex_unlock(&s->mu);
		if (busy)
			serve_failf(&f, RPC_INVALID_REQUEST,
			            "initialize while %zu call(s) are in flight: wait for them",
			            busy);
		else if (procs)
			serve_failf(&f, RPC_INVALID_REQUEST,
			            "initialize while background commands started here are not "
			            "waited for: wait for or kill them first");
		busy = busy || procs;
		if (!busy && c->method->run(c, &c->args, &result, &f) == 0)
			wire_send(&s->w, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", c->id,
			                           "result", result));
		else
			wire_send(&s->w, response_error(c->id, serve_error_object(&f)));
		call_free(c);
		return;
	}
	if (c->method->needs_provider && !s->prov) {
		serve_failf(&f, RPC_NOT_CONFIGURED,
		            "no deployment config%s%s: send initialize "
		            "{\"config\": {...}} first, or start serve with E2B_API_KEY / "
		            "SANDBOX_E2B_CONFIG / --config",
		            s->config_error[0] ? "; " : "", s->config_error);
		wire_send(&s->w, response_error(c->id, serve_error_object(&f)));
		call_free(c);
		return;
	}
	c->prov = s->prov;
	pthread_mutex_lock(&s->mu);
	if (find_call(s, c->id)) {
		pthread_mutex_unlock(&s->mu);
		wire_send(&s->w, response_errorf(c->id, RPC_INVALID_REQUEST,
		                                 "invalid request: this id is already used by a "
		                                 "call in flight"));
		call_free(c);
		return;
	}
	if (s->ncalls >= SERVE_MAX_CALLS) {
		pthread_mutex_unlock(&s->mu);
		snprintf(msg, sizeof(msg), "too many calls in flight (at most %d)",
		         SERVE_MAX_CALLS);
		wire_send(&s->w, response_errorf(c->id, RPC_INTERNAL_ERROR, msg));
		call_free(c);
		return;
	}
	c->next = s->calls;
	s->calls = c;
	s->ncalls++;
	if (s->ncalls > s->burst)
		s->burst = s->ncalls;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, worker, c) != 0) {
		s->calls = c->next;
		s->ncalls--;
		pthread_mutex_unlock(&s->mu);
		pthread_attr_destroy(&attr);
		wire_send(&s->w, response_errorf(c->id, RPC_INTERNAL_ERROR,
		                                 "cannot start a thread for the call"));
		call_free(c);
		return;
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&s->mu);
}

static void handle_line(serve_server *s, const char *line, size_t len)
{
	serve_request rq;

	serve_request_parse(&rq, line, len);
	if (rq.kind < 0) {
		if (rq.error)
			wire_send(&s->w, json_incref(rq.error));
	} else if (rq.kind == 1) {
		if (strcmp(rq.method_name, "$/cancelRequest") == 0)
			cancel(s, rq.params);
		/* Other notifications (and unknown ones, e.g. "$/..."): nothing to do. */
	} else {
		start_call(s, &rq);
	}
	serve_request_free(&rq);
}

int serve_run(const serve_options *o)
{
	serve_options opts = *o;
	serve_server s;
	serve_reader r;
	serve_fail f;
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
	memset(&s, 0, sizeof(s));
	s.opts = &opts;
	s.log_min = opts.verbose ? SBX_LOG_DEBUG : SBX_LOG_WARN;
	wire_writer_init(&s.w, opts.out_fd);
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.idle, NULL);
	if (opts.envd_url && !(s.envd_url = strdup(opts.envd_url)))
		return CLI_EXIT_ERROR;
	if (opts.config_json &&
	    make_provider(&s, opts.config_json, strlen(opts.config_json), s.envd_url, &f) < 0) {
		snprintf(s.config_error, sizeof(s.config_error), "%s", f.message);
		fprintf(stderr, "sandbox-e2b serve: %s; waiting for initialize\n", f.message);
	}
	wire_reader_init(&r, opts.in_fd, sbx_signal_fd(opts.stop), opts.max_line);
	while ((rc = wire_read_line(&r, &line, &len)) != WIRE_EOF) {
		if (rc == WIRE_LINE) {
			if (len > 0 && line[len - 1] == '\r')
				len--;
			if (len > 0)
				handle_line(&s, line, len);
		} else if (rc == WIRE_TOO_LONG) {
			char msg[200];
			snprintf(msg, sizeof(msg),
			         "invalid request: line over %zu bytes (the cap); not read",
			         opts.max_line);
			wire_send(&s.w, response_errorf(NULL, RPC_INVALID_REQUEST, msg));
		} else {
			fprintf(stderr,
			        "sandbox-e2b serve: cannot read the input; shutting down\n");
			break;
		}
	}
	wire_reader_free(&r);
	/* Shutdown: abort every call in flight (remote commands are killed), wait for all. */
	pthread_mutex_lock(&s.mu);
	for (serve_call *c = s.calls; c; c = c->next)
		sbx_signal_abort(c->sig);
	while (s.ncalls > 0)
		pthread_cond_wait(&s.idle, &s.mu);
	pthread_mutex_unlock(&s.mu);
	serve_proc_shutdown(&s); /* background commands are killed too */
	sbx_provider_free(s.prov);
	sbx_e2b_config_free(s.cfg);
	free(s.envd_url);
	pthread_cond_destroy(&s.idle);
	pthread_mutex_destroy(&s.mu);
	wire_writer_free(&s.w);
	return CLI_EXIT_OK;
}
