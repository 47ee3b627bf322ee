/*
 * e2b/provider_process.c: background commands on E2B (sandbox/process.h,
 * docs/exec.md "Background commands").
 *
 * A handle runs the very same sbx__e2b_run() as exec, on a reader thread of
 * its own: the wrapper, the backstop, the budget, the timeout and the kill
 * tree are exec's. The handle's internal stop signal plays exec's abort
 * signal: sbx_process_kill() aborts it (the reader then kills the tree as
 * exec does on abort), sbx_process_free() aborts it with `detach` set (the
 * reader only disconnects; the in-sandbox backstop bounds the command).
 * Start waits on the calling thread until the reader saw the pid.
 *
 * Locking: `mu` guards have_pid, done, error, err, res and killing. The
 * reader writes the run result alone; others read it only after `done`.
 * Two eventfds (pid_fd, done_fd) become readable once and stay so, so that
 * waiters can poll them together with the caller's abort signal.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "e2b/run.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"

typedef struct bg {
	sbx__e2b_provider *p;
	sbx__exec_cmd c; /* start: exec's prepared command; attach: only c.t and c.o */
	sbx__run_result r;
	sbx_signal *stop; /* kill and free abort the reader through it */
	char *ctl;        /* attach: the control path of a command we started, or NULL */
	bool stdin_open;  /* start: false refuses send/close (the command has /dev/null) */
	pthread_t thread;
	bool thread_started;
	int pid_fd, done_fd;
	pthread_mutex_t mu;
	bool have_pid, done, killing;
	int error;
	sbx_error err;
	sbx_exec_result res;
} bg;

static void fd_raise(int fd)
{
	uint64_t one = 1;
	ssize_t n;
	do
		n = write(fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
}

static void bg_on_pid(void *ctx)
{
	bg *b = ctx;
	pthread_mutex_lock(&b->mu);
	b->have_pid = true;
	pthread_mutex_unlock(&b->mu);
	fd_raise(b->pid_fd);
}

static void *reader(void *arg)
{
	bg *b = arg;
	sbx_exec_result res = {0};
	sbx_error e = {0};
	int error, rc;

	error = sbx__e2b_run(b->p, &b->c.t, &b->c.o, &b->r, &e);
	if ((error == 0 || b->r.partial) && (rc = sbx__e2b_result_out(&res, &b->r, &e)) < 0)
		error = rc;
	pthread_mutex_lock(&b->mu);
	b->res = res;
	b->error = error;
	b->err = e;
	b->done = true;
	pthread_mutex_unlock(&b->mu);
	fd_raise(b->done_fd);
	return NULL;
}

static void bg_free(bg *b)
{
	if (!b)
		return;
	if (b->thread_started) {
		atomic_store(&b->r.detach, true);
		sbx_signal_abort(b->stop);
		pthread_join(b->thread, NULL);
	}
	sbx_exec_result_free(&b->res);
	sbx__e2b_run_result_dispose(&b->r);
	sbx__e2b_exec_end(&b->c);
	sbx_signal_free(b->stop);
	sbx__free(b->ctl);
	if (b->pid_fd >= 0)
		close(b->pid_fd);
	if (b->done_fd >= 0)
		close(b->done_fd);
	pthread_mutex_destroy(&b->mu);
	sbx__free(b);
}

static int bg_new(bg **out, sbx__e2b_provider *p, size_t max_output, sbx_error *err)
{
	bg *b;

	*out = NULL;
	if (!(b = sbx__calloc(1, sizeof(*b))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	b->p = p;
	b->pid_fd = b->done_fd = -1;
	sbx__e2b_run_result_init(&b->r, max_output);
	b->r.on_pid = bg_on_pid;
	b->r.pid_ctx = b;
	if (pthread_mutex_init(&b->mu, NULL) != 0) {
		sbx__free(b);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create a mutex");
	}
	if (sbx_signal_new(&b->stop) < 0 ||
	    (b->pid_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    (b->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		bg_free(b);
		return sbx__error_set(err, SBX_EINTERNAL, "cannot create an eventfd");
	}
	*out = b;
	return 0;
}

/* Wait until `fd` is readable or `sig` aborts: 0 or SBX_EABORTED (err filled). */
static int wait_fd(int fd, sbx_signal *sig, sbx_error *err)
{
	struct pollfd pfd[2] = {{fd, POLLIN, 0}, {sig ? sbx_signal_fd(sig) : -1, POLLIN, 0}};

	for (;;) {
		if (sbx_signal_aborted(sig))
			return sbx__error_set(err, SBX_EABORTED, "aborted");
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return sbx__error_set(err, SBX_EINTERNAL, "poll failed");
		if (pfd[0].revents)
			return 0;
	}
}

static int launch(bg *b, sbx_error *err)
{
	if (pthread_create(&b->thread, NULL, reader, b) != 0)
		return sbx__error_set(err, SBX_EINTERNAL, "cannot start a reader thread");
	b->thread_started = true;
	return 0;
}

/*
 * After launch: wait for the pid (the command runs) or the reader's end
 * (start failed). An abort of `sig` first stops the command like exec's.
 */
static int wait_started(bg *b, sbx_signal *sig, sbx_error *err)
{
	struct pollfd pfd[3] = {{b->pid_fd, POLLIN, 0},
	                        {b->done_fd, POLLIN, 0},
	                        {sig ? sbx_signal_fd(sig) : -1, POLLIN, 0}};
	bool pid, done;
	int error;

	for (;;) {
		pthread_mutex_lock(&b->mu);
		pid = b->have_pid;
		done = b->done;
		error = b->error;
		if (done && error < 0 && err && err->code == 0)
			*err = b->err;
		pthread_mutex_unlock(&b->mu);
		if (pid)
			return 0;
		if (done)
			return error < 0 ? error
			                 : sbx__error_set(err, SBX_EPROTOCOL,
			                                  "E2B process stream ended before a pid");
		if (sbx_signal_aborted(sig)) {
			sbx_signal_abort(b->stop); /* the reader kills it, as exec on abort */
			pthread_join(b->thread, NULL);
			b->thread_started = false;
			return sbx__error_set(err, SBX_EABORTED, "aborted");
		}
		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			return sbx__error_set(err, SBX_EINTERNAL, "poll failed");
	}
}

/*
 * The run options both a start and an attach give (po's output callback; the handle's own stop
 * signal), then the reader thread, and the wait until it knows the pid. Frees b on failure.
 */
static int bg_launch(bg *b, const sbx_process_options *po, sbx_signal *sig, sbx_error *err)
{
	int error;

	b->c.o.on_output = po->on_output;
	b->c.o.output_payload = po->output_payload;
	b->c.o.sig = b->stop;
	if ((error = launch(b, err)) < 0 || (error = wait_started(b, sig, err)) < 0)
		bg_free(b);
	return error;
}

int sbx__e2b_process_start(void *impl, void **h_out, uint32_t *pid_out, const char *id,
                           const char *command, const sbx_process_options *po, sbx_signal *sig,
                           sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx__command cmd = sbx__command_of_process(po);
	bg *b;
	int error;

	if ((error = bg_new(&b, p, po->max_output_bytes, err)) < 0)
		return error;
	if ((error = sbx__e2b_exec_begin(&b->c, p, id, command, &cmd, sig, err)) < 0) {
		bg_free(b);
		return error;
	}
	b->c.o.stdin_open = b->stdin_open = po->stdin_open;
	if ((error = bg_launch(b, po, sig, err)) < 0)
		return error;
	*pid_out = b->r.pid; /* written before on_pid, read after the mutex said so */
	*h_out = b;
	return 0;
}

/* The direct form's args (scripts.h): CTL CMD S --session --mark. The index of CMD, else 0. */
static size_t ours_direct(json_t *args, const char **ctl, const char **command)
{
	json_t *c = json_array_get(args, 0), *cmd = json_array_get(args, 1);
	const char *s = json_string_value(json_array_get(args, 3)),
	           *m = json_string_value(json_array_get(args, 4));

	if (json_array_size(args) != SBX_E2B_EXEC_DIRECT_ARGC || !json_is_string(c) ||
	    strncmp(json_string_value(c), "/tmp/.capybara-exec-", 20) != 0 ||
	    !json_is_string(cmd) || !s || strcmp(s, "--session") != 0 || !m ||
	    strcmp(m, "--mark") != 0)
		return 0;
	*ctl = json_string_value(c);
	*command = json_string_value(cmd);
	return 1;
}

/*
 * One envd List entry a command of ours is: the exec helper in the direct form, /bin/sh -c
 * WRAPPER capybara-exec CTL CMD S SEED (scripts.h), or the older line setsid -w /bin/sh -c
 * WRAPPER capybara-exec CTL CMD S (of a library before the exec helper made the session, still
 * running in a long-lived sandbox). The index of CMD in args, else 0.
 */
static size_t ours(json_t *args, const char **ctl, const char **command)
{
	size_t at = json_array_size(args) == SBX_E2B_EXEC_ARGC ? 2
	            : json_array_size(args) == 8               ? 4
	                                                       : 0;
	json_t *name = json_array_get(args, at), *c = json_array_get(args, at + 1);

	if (json_array_size(args) == SBX_E2B_EXEC_DIRECT_ARGC)
		return ours_direct(args, ctl, command);
	if (!at || !json_is_string(name) || strcmp(json_string_value(name), "capybara-exec") != 0 ||
	    !json_is_string(c) || strncmp(json_string_value(c), "/tmp/.capybara-exec-", 20) != 0 ||
	    !json_is_string(json_array_get(args, at + 2)))
		return 0;
	*ctl = json_string_value(c);
	*command = json_string_value(json_array_get(args, at + 2));
	return at + 2;
}

/* The control path of running pid `pid` if we started it (NULL otherwise), through envd List. */
static int find_ctl(char **ctl_out, sbx__e2b_provider *p, const sbx_envd_target *t, uint32_t pid,
                    sbx_signal *sig, sbx_error *err)
{
	json_t *procs = NULL, *it, *cfg;
	const char *ctl, *command;
	size_t i;
	int error;

	*ctl_out = NULL;
	if ((error = sbx__envd_list(&procs, p->http, t, sbx__now_ms() + SBX_E2B_API_TIMEOUT_MS, sig,
	                            err)) < 0)
		return error;
	json_array_foreach(procs, i, it)
	{
		json_t *jpid = json_object_get(it, "pid");
		if (!json_is_integer(jpid) || json_integer_value(jpid) != (json_int_t)pid)
			continue;
		cfg = json_object_get(it, "config");
		if (ours(json_object_get(cfg, "args"), &ctl, &command) &&
		    !(*ctl_out = sbx__strdup(ctl)))
			error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		break;
	}
	json_decref(procs);
	return error;
}

int sbx__e2b_process_attach(void *impl, void **h_out, const char *id, uint32_t pid,
                            const sbx_process_options *po, sbx_signal *sig, sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx__run_opts *o;
	bg *b;
	int error;

	if ((error = bg_new(&b, p, po->max_output_bytes, err)) < 0)
		return error;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attach(p, &b->c.t, id, 0, sig, err)) < 0 ||
	    (error = find_ctl(&b->ctl, p, &b->c.t, pid, sig, err)) < 0)
		goto fail;
	o = &b->c.o;
	o->user = SBX_E2B_SANDBOX_USER;
	o->attach_pid = pid;
	o->max_output = po->max_output_bytes;
	o->timeout_ms = UINT64_MAX; /* none of its own: the command's backstop bounds it */
	o->ctl = b->ctl;
	o->sandbox_id = b->c.t.sandbox_id;
	b->stdin_open = true; /* unknown: envd says so if not */
	if ((error = bg_launch(b, po, sig, err)) < 0)
		return error;
	*h_out = b;
	return 0;
fail:
	bg_free(b);
	return error;
}

static int bg_wait_done(bg *b, sbx_signal *sig, sbx_error *err)
{
	return wait_fd(b->done_fd, sig, err);
}

static int dup_bytes(unsigned char **out, const unsigned char *p, size_t len)
{
	if (!(*out = sbx__malloc(len + 1)))
		return SBX_ENOMEM;
	if (len)
		memcpy(*out, p, len);
	(*out)[len] = '\0';
	return 0;
}

int sbx__e2b_process_wait(void *h, sbx_exec_result *out, sbx_signal *sig, sbx_error *err)
{
	bg *b = h;
	int error;

	if ((error = bg_wait_done(b, sig, err)) < 0)
		return error;
	pthread_mutex_lock(&b->mu);
	error = b->error;
	if (error < 0)
		sbx__e2b_pass_error(err, &b->err);
	if (b->res.stdout_data) { /* filled on success and on a partial failure */
		*out = b->res;
		out->stdout_data = out->stderr_data = NULL;
		if (dup_bytes(&out->stdout_data, b->res.stdout_data, b->res.stdout_len) < 0 ||
		    dup_bytes(&out->stderr_data, b->res.stderr_data, b->res.stderr_len) < 0)
			error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&b->mu);
	return error;
}

static int need_pid_and_stdin(bg *b, sbx_error *err)
{
	if (!b->stdin_open)
		return sbx__error_set(err, SBX_EINVALID,
		                      "the command was started without stdin_open");
	return 0;
}

int sbx__e2b_process_send_stdin(void *h, const void *data, size_t len, sbx_signal *sig,
                                sbx_error *err)
{
	bg *b = h;
	size_t off = 0, n;
	int error;

	if ((error = need_pid_and_stdin(b, err)) < 0)
		return error;
	while (off < len) {
		n = len - off < SBX_ENVD_MAX_INPUT_CHUNK ? len - off : SBX_ENVD_MAX_INPUT_CHUNK;
		if ((error = sbx__envd_send_input(
		         b->p->http, &b->c.t, b->r.pid, (const unsigned char *)data + off, n, NULL,
		         sbx__now_ms() + SBX_E2B_API_TIMEOUT_MS, sig, err)) < 0)
			return error;
		off += n;
	}
	return 0;
}

int sbx__e2b_process_close_stdin(void *h, sbx_signal *sig, sbx_error *err)
{
	bg *b = h;
	int error;

	if ((error = need_pid_and_stdin(b, err)) < 0)
		return error;
	return sbx__envd_close_stdin(b->p->http, &b->c.t, b->r.pid, NULL,
	                             sbx__now_ms() + SBX_E2B_API_TIMEOUT_MS, sig, err);
}

int sbx__e2b_process_kill(void *h, sbx_signal *sig, sbx_error *err)
{
	bg *b = h;
	bool done;

	pthread_mutex_lock(&b->mu);
	done = b->done;
	b->killing = true;
	pthread_mutex_unlock(&b->mu);
	if (done)
		return 0;
	if (!b->c.o.ctl) /* not ours: the pid is all we can name */
		(void)sbx__envd_kill(b->p->http, &b->c.t, b->r.pid,
		                     sbx__now_ms() + SBX_E2B_SIGNAL_DEADLINE_MS, NULL, NULL);
	sbx_signal_abort(b->stop); /* the reader runs exec's abort path: kill tree, grace, reboot */
	return bg_wait_done(b, sig, err);
}

void sbx__e2b_process_free(void *h)
{
	bg_free(h);
}

int sbx__e2b_process_kill_pid(void *impl, const char *id, uint32_t pid, sbx_signal *sig,
                              sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	char *ctl = NULL;
	int error;

	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attach(p, &t, id, 0, sig, err)) < 0 ||
	    (error = find_ctl(&ctl, p, &t, pid, sig, err)) < 0)
		goto done;
	if (ctl && !sbx__e2b_kill_script_ok(p, &t, ctl))
		error = sbx__error_set(err, SBX_ESANDBOX, "the kill script for pid %u failed",
		                       (unsigned)pid);
	/* the backstop, as exec's: a pid envd no longer knows is success */
	if (error == 0)
		error = sbx__envd_kill(p->http, &t, pid, sbx__now_ms() + SBX_E2B_SIGNAL_DEADLINE_MS,
		                       sig, err);
done:
	sbx__free(ctl);
	sbx__envd_target_dispose(&t);
	return error;
}

static char *dup_str(json_t *v)
{
	return json_is_string(v) ? sbx__strdup(json_string_value(v)) : NULL;
}

/* One List entry into `it`; only pid is required. 0, SBX_EPROTOCOL, SBX_ENOMEM. */
static int info_of(sbx_process_info *it, json_t *e)
{
	json_t *jpid = json_object_get(e, "pid"), *cfg = json_object_get(e, "config");
	json_t *args = json_object_get(cfg, "args"), *a;
	const char *ctl, *command;
	size_t i;

	if (!json_is_integer(jpid) || json_integer_value(jpid) < 1 ||
	    json_integer_value(jpid) > UINT32_MAX)
		return SBX_EPROTOCOL;
	it->pid = (uint32_t)json_integer_value(jpid);
	it->cmd = dup_str(json_object_get(cfg, "cmd"));
	it->cwd = dup_str(json_object_get(cfg, "cwd"));
	it->tag = dup_str(json_object_get(e, "tag"));
	if (!it->cmd && !(it->cmd = sbx__strdup("")))
		return SBX_ENOMEM;
	if (json_array_size(args) > 0) {
		if (!(it->args = sbx__calloc(json_array_size(args), sizeof(*it->args))))
			return SBX_ENOMEM;
		json_array_foreach(args, i, a)
		{
			if (!(it->args[i] = json_is_string(a) ? sbx__strdup(json_string_value(a))
			                                      : sbx__strdup("")))
				return SBX_ENOMEM;
			it->nargs = i + 1;
		}
	}
	if ((i = ours(args, &ctl, &command)) > 0)
		it->command = it->args[i];
	return 0;
}

int sbx__e2b_process_list(void *impl, sbx_process_info_list **out, const char *id, sbx_signal *sig,
                          sbx_error *err)
{
	sbx__e2b_provider *p = impl;
	sbx_envd_target t = {0};
	sbx_process_info_list *l = NULL;
	json_t *procs = NULL, *e;
	size_t i;
	int error;

	*out = NULL;
	if ((error = sbx__e2b_aborted(sig, err)) < 0 ||
	    (error = sbx__e2b_attach(p, &t, id, 0, sig, err)) < 0 ||
	    (error = sbx__envd_list(&procs, p->http, &t, sbx__now_ms() + SBX_E2B_API_TIMEOUT_MS,
	                            sig, err)) < 0)
		goto done;
	if (!(l = sbx__calloc(1, sizeof(*l))) ||
	    (json_array_size(procs) &&
	     !(l->items = sbx__calloc(json_array_size(procs), sizeof(*l->items))))) {
		error = sbx__error_set(err, SBX_ENOMEM, "out of memory");
		goto done;
	}
	json_array_foreach(procs, i, e)
	{
		l->count = i + 1;
		if ((error = info_of(&l->items[i], e)) < 0) {
			error = sbx__error_set(
			    err, error,
			    error == SBX_ENOMEM ? "out of memory"
			                        : "E2B process List: an entry without a valid pid");
			goto done;
		}
	}
	*out = l;
	l = NULL;
done:
	sbx_process_info_list_free(l);
	json_decref(procs);
	sbx__envd_target_dispose(&t);
	return error;
}
