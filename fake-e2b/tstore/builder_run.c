/*
 * fake-e2b/tstore/builder_run.c: commands in a build's sandbox (builder_int.h), as envd runs
 * them for E2B's builder: `/bin/bash -l -c <command>` as a user, in a directory, with the build's
 * environment, to its end; each output line goes to the build log as
 * `[<prefix>] [stdout|stderr]: line`, and a failure is said in E2B's words (fake-e2b/README.md
 * "Template builds"). Also a template's start command, with its ready command run until it
 * succeeds: for a build's finalize phase and for each new sandbox of a built template
 * (fk_tboot_start, builds.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "builder_int.h"
#include "clock.h"

#define STEP_TIMEOUT_MS   (30 * 60 * 1000) /* one RUN, COPY... at most */
#define READY_TIMEOUT_MS  (120 * 1000)     /* the ready command must succeed within */
#define READY_INTERVAL_MS 200

void fk__bctx_clear(fk_bctx *c)
{
	free(c->user);
	free(c->workdir);
	for (size_t i = 0; i < c->n_envs; i++)
		free(c->envs[i]);
	free(c->envs);
	memset(c, 0, sizeof(*c));
}

/* Sets K=V (replacing an earlier K). */
int fk__bctx_setenv(fk_bctx *c, const char *k, const char *v)
{
	char *kv;
	if (asprintf(&kv, "%s=%s", k, v) < 0)
		return -1;
	size_t kl = strlen(k);
	for (size_t i = 0; i < c->n_envs; i++) {
		if (!strncmp(c->envs[i], k, kl) && c->envs[i][kl] == '=') {
			free(c->envs[i]);
			c->envs[i] = kv;
			return 0;
		}
	}
	char **v2 = realloc(c->envs, (c->n_envs + 1) * sizeof(char *));
	if (!v2) {
		free(kv);
		return -1;
	}
	c->envs = v2;
	c->envs[c->n_envs++] = kv;
	return 0;
}

/* A command's output: lines to the build log (b non-NULL) and/or kept (capture non-NULL). */
typedef struct out {
	fk_tstore *s;
	fk_tbuild *b;
	const char *prefix;
	char *line[2];
	size_t len[2];
	char *capture;
	size_t cap_len;
} out;

static void out_line(out *o, int which, const char *p, size_t n)
{
	while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (o->b && n)
		fk__build_log(o->s, o->b, "info", "[%s] [%s]: %.*s", o->prefix,
		              which ? "stderr" : "stdout", (int)n, p);
}

static void out_feed(out *o, int which, const unsigned char *data, size_t len)
{
	if (o->capture && which == 0 && o->cap_len + len < 65536) {
		char *c = realloc(o->capture, o->cap_len + len + 1);
		if (c) {
			memcpy(c + o->cap_len, data, len);
			o->cap_len += len;
			c[o->cap_len] = '\0';
			o->capture = c;
		}
	}
	if (!o->b)
		return;
	for (size_t i = 0; i < len; i++) {
		if (data[i] == '\n') {
			out_line(o, which, o->line[which] ? o->line[which] : "", o->len[which]);
			o->len[which] = 0;
			continue;
		}
		if (o->len[which] >= 4096)
			continue; /* a very long line is cut */
		char *l = realloc(o->line[which], o->len[which] + 2);
		if (!l)
			continue;
		l[o->len[which]++] = (char)data[i];
		o->line[which] = l;
	}
}

static void out_flush(out *o)
{
	for (int w = 0; w < 2; w++) {
		if (o->len[w])
			out_line(o, w, o->line[w], o->len[w]);
		free(o->line[w]);
		o->line[w] = NULL;
		o->len[w] = 0;
	}
}

/* The request envs of a process: the context's "K=V" split. */
typedef struct envs {
	char **keys, **values;
	size_t n;
} envs;

static int envs_split(char *const *kv, size_t n, envs *e)
{
	memset(e, 0, sizeof(*e));
	e->keys = calloc(n ? n : 1, sizeof(char *));
	e->values = calloc(n ? n : 1, sizeof(char *));
	if (!e->keys || !e->values)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');
		if (!eq)
			continue;
		if (!(e->keys[e->n] = strndup(kv[i], (size_t)(eq - kv[i])))) {
			return -1;
		}
		if (!(e->values[e->n] = strdup(eq + 1))) {
			free(e->keys[e->n]);
			return -1;
		}
		e->n++;
	}
	return 0;
}

static void envs_free(envs *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->keys[i]);
		free(e->values[i]);
	}
	free(e->keys);
	free(e->values);
}

/* Starts `bash -l -c command` in the box as `user` in `cwd` with the context's environment. */
static int start_cmd(fk_rt *rt, const char *box, const char *command, const char *user,
                     const char *cwd, char *const *kv, size_t n_kv, fk_proc **proc, fk_sub **sub,
                     fk_err *err)
{
	envs e;
	if (envs_split(kv, n_kv, &e) < 0) {
		envs_free(&e);
		err->code = FK_ENOMEM;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return FK_ENOMEM;
	}
	const char *args[] = {"-l", "-c", command};
	fk_proc_spec spec = {.cmd = "/bin/bash",
	                     .args = args,
	                     .n_args = 3,
	                     .env_keys = (const char *const *)e.keys,
	                     .env_values = (const char *const *)e.values,
	                     .n_envs = e.n,
	                     .cwd = cwd,
	                     .user = user};
	int rc = fk_proc_start(rt, box, &spec, proc, sub, err);
	envs_free(&e);
	return rc;
}

/* Waits for the end of a started command (SIGKILL after timeout_ms), feeding its output to o.
 * 0 and *status (waitpid status), or -1 when the subscription ended without an end. */
static int wait_cmd(fk_rt *rt, const char *box, fk_proc *p, fk_sub *sub, out *o, int timeout_ms,
                    int *status)
{
	int64_t deadline = fk_now_ns() / 1000000 + timeout_ms;
	bool killed = false;
	for (;;) {
		fk_event ev = {0};
		int rc = fk_sub_next(sub, &ev, 1000);
		if (rc == FK_ETIMEOUT) {
			if (!killed && fk_now_ns() / 1000000 > deadline) {
				fk_proc_signal(rt, box, fk_proc_pid(p), SIGKILL, NULL);
				killed = true;
			}
			continue;
		}
		if (rc < 0)
			return -1;
		if (ev.type == FK_EV_END) {
			*status = ev.wait_status;
			fk_event_clear(&ev);
			return 0;
		}
		out_feed(o, ev.type == FK_EV_STDERR ? 1 : 0, ev.data, ev.len);
		fk_event_clear(&ev);
	}
}

/* envd's end status text: "exit status N" or "signal: killed". */
static void status_text(int st, char *buf, size_t cap)
{
	if (WIFEXITED(st))
		snprintf(buf, cap, "exit status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		snprintf(buf, cap, "signal: killed");
	else if (WIFSIGNALED(st))
		snprintf(buf, cap, "signal: %s", strsignal(WTERMSIG(st)));
	else
		snprintf(buf, cap, "unknown status");
}

/* Runs a command to its end. 0 when it exited 0; else -1 with why (E2B's wording: the end's
 * status, or "command failed: <envd error>" when it could not start). */
int fk__bcmd_run(fk_tstore *s, fk_tbuild *b, const char *box, const char *command, const char *user,
                 const char *cwd, const fk_bctx *c, const char *prefix, char **capture, char *why,
                 size_t cap)
{
	fk_proc *p = NULL;
	fk_sub *sub = NULL;
	fk_err err = {0};
	out o = {.s = s, .b = b, .prefix = prefix};
	if (capture)
		o.capture = calloc(1, 1);
	int rc = start_cmd(s->rt, box, command, user, cwd, c->envs, c->n_envs, &p, &sub, &err);
	if (rc < 0) {
		if (rc == FK_ENOUSER)
			snprintf(why, cap,
			         "command failed: unauthenticated: invalid username: '%s'", user);
		else
			snprintf(why, cap, "command failed: %s", err.message);
		free(o.capture);
		return -1;
	}
	int st = 0;
	rc = wait_cmd(s->rt, box, p, sub, &o, STEP_TIMEOUT_MS, &st);
	out_flush(&o);
	fk_sub_free(sub);
	fk_proc_unref(p);
	if (rc < 0) {
		snprintf(why, cap, "command failed: the sandbox is gone");
		free(o.capture);
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		status_text(st, why, cap);
		free(o.capture);
		return -1;
	}
	if (capture)
		*capture = o.capture;
	return 0;
}

int fk__bcmd_start_ready(fk_tstore *s, fk_tbuild *b, fk_rt *rt, const char *box, const char *start,
                         const char *ready, const fk_bctx *c, char *why, size_t cap)
{
	fk_proc *sp = NULL;
	fk_sub *ssub = NULL; /* the start command's output, for the build log only */
	fk_err err = {0};
	out so = {.s = s, .b = b, .prefix = "start"};
	if (start) {
		if (b)
			fk__build_log(s, b, "info", "Running start command: %s", start);
		int rc = start_cmd(rt, box, start, c->user, c->workdir, c->envs, c->n_envs, &sp,
		                   b ? &ssub : NULL, &err);
		if (rc < 0) {
			snprintf(why, cap, "error running start command: %s", err.message);
			return -1;
		}
	}
	int rc = 0;
	if (ready) {
		if (b)
			fk__build_log(s, b, "info", "Waiting for the ready command: %s", ready);
		int64_t deadline = fk_now_ns() / 1000000 + READY_TIMEOUT_MS;
		for (;;) {
			/* the start command's output so far goes to the log (never waiting) */
			fk_event ev = {0};
			while (ssub && fk_sub_next(ssub, &ev, 0) == 0) {
				if (ev.type != FK_EV_END)
					out_feed(&so, ev.type == FK_EV_STDERR, ev.data, ev.len);
				fk_event_clear(&ev);
			}
			int st = 0;
			if (sp && fk_proc_ended(sp, &st) &&
			    (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
				char t[64];
				status_text(st, t, sizeof(t));
				snprintf(why, cap, "error running start command: %s", t);
				rc = -1;
				break;
			}
			fk_proc *rp = NULL;
			fk_sub *rsub = NULL;
			out ro = {.s = s, .b = NULL, .prefix = "ready"};
			if (start_cmd(rt, box, ready, c->user, c->workdir, c->envs, c->n_envs, &rp,
			              &rsub, &err) < 0) {
				snprintf(why, cap, "error running ready command: %s", err.message);
				rc = -1;
				break;
			}
			st = -1;
			if (wait_cmd(rt, box, rp, rsub, &ro, READY_TIMEOUT_MS, &st) < 0)
				st = -1;
			out_flush(&ro);
			fk_sub_free(rsub);
			fk_proc_unref(rp);
			if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
				break;
			if (st == -1 || fk_now_ns() / 1000000 > deadline) {
				snprintf(why, cap,
				         "ready command '%.200s' did not succeed within %d s",
				         ready, READY_TIMEOUT_MS / 1000);
				rc = -1;
				break;
			}
			struct timespec ts = {0, READY_INTERVAL_MS * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	out_flush(&so);
	fk_sub_free(ssub);
	fk_proc_unref(sp);
	return rc;
}

int fk_tboot_start(fk_rt *rt, const char *box_id, const fk_tboot *boot, fk_err *err)
{
	if (!boot || !boot->start_cmd)
		return 0;
	fk_bctx c = {.user = boot->user,
	             .workdir = boot->workdir,
	             .envs = boot->envs,
	             .n_envs = boot->n_envs};
	char why[512];
	if (fk__bcmd_start_ready(NULL, NULL, rt, box_id, boot->start_cmd, boot->ready_cmd, &c, why,
	                         sizeof(why)) < 0) {
		if (err) {
			err->code = FK_EIO;
			snprintf(err->message, sizeof(err->message), "%.250s", why);
		}
		return FK_EIO;
	}
	return 0;
}
