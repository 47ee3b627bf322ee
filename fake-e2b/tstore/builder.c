/*
 * fake-e2b/tstore/builder.c: runs one template build (builds.h) in a sandbox of the runtime
 * with no network, as E2B's template manager runs its phases: base (FROM a template), the steps
 * (RUN, COPY, ENV, WORKDIR, USER) with a context of user, working directory and environment that
 * USER, WORKDIR and ENV change, then finalize (the start command, the ready command until it
 * succeeds), then the sandbox's files are committed as the build's layer. Commands run as envd
 * runs them for E2B's builder: `/bin/bash -l -c <command>`, their output lines go to the build
 * log. Also starts a built template's start command in a new sandbox (fk_tboot_start).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "builds_int.h"
#include "clock.h"

#define STEP_TIMEOUT_MS   (30 * 60 * 1000) /* one RUN, COPY... at most */
#define READY_TIMEOUT_MS  (120 * 1000)     /* the ready command must succeed within */
#define READY_INTERVAL_MS 200
#define DEFAULT_READY_CMD "sleep 20" /* E2B's when a start command has no ready command */

/* ---- strings ------------------------------------------------------------------------------- */

/* `s` quoted for the shell: '...' with each ' as '\''. Caller frees. */
static char *sq(const char *s)
{
	size_t n = 2;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

typedef struct ctx {
	char *user, *workdir;
	char **envs; /* "K=V" */
	size_t n_envs;
} ctx;

static void ctx_clear(ctx *c)
{
	free(c->user);
	free(c->workdir);
	for (size_t i = 0; i < c->n_envs; i++)
		free(c->envs[i]);
	free(c->envs);
	memset(c, 0, sizeof(*c));
}

/* Sets K=V (replacing an earlier K). */
static int ctx_setenv(ctx *c, const char *k, const char *v)
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

/* ---- running commands ---------------------------------------------------------------------- */

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
static int run(fk_tstore *s, fk_tbuild *b, const char *box, const char *command, const char *user,
               const char *cwd, const ctx *c, const char *prefix, char **capture, char *why,
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

/* ---- steps --------------------------------------------------------------------------------- */

typedef struct build {
	fk_tstore *s;
	fk_tbuild *b;
	char box[65];
	ctx c;
	char prefix[64];
	char why[1024]; /* the error, when a step failed */
} build;

static const char *arg(json_t *args, size_t i)
{
	json_t *a = json_array_get(args, i);
	return json_is_string(a) ? json_string_value(a) : NULL;
}

/* The user's home directory inside the box (for a context without a working directory). */
static const char *cwd_of(build *w)
{
	return w->c.workdir; /* NULL: envd's default (the template's workdir) */
}

static int step_run(build *w, json_t *args)
{
	const char *cmd = arg(args, 0), *user = arg(args, 1);
	if (!cmd)
		return snprintf(w->why, sizeof(w->why), "RUN requires command argument"), -1;
	char why[900];
	if (run(w->s, w->b, w->box, cmd, user && *user ? user : w->c.user, cwd_of(w), &w->c,
	        w->prefix, NULL, why, sizeof(why)) < 0) {
		snprintf(w->why, sizeof(w->why), "failed to run command '%.400s': %.500s", cmd,
		         why);
		return -1;
	}
	return 0;
}

/* A script run as root; on failure why = "<what>: <status>". */
static int run_root(build *w, const char *script, const char *what, bool log)
{
	char why[900];
	if (run(w->s, log ? w->b : NULL, w->box, script, "root", "/", &w->c, w->prefix, NULL, why,
	        sizeof(why)) < 0) {
		snprintf(w->why, sizeof(w->why), "%s: %s", what, why);
		return -1;
	}
	return 0;
}

static int step_workdir(build *w, json_t *args)
{
	const char *dir = arg(args, 0);
	if (!dir || !*dir)
		return snprintf(w->why, sizeof(w->why), "WORKDIR requires a path argument"), -1;
	char *abs;
	if (dir[0] == '/')
		abs = strdup(dir);
	else if (asprintf(&abs, "%s/%s", w->c.workdir ? w->c.workdir : "", dir) < 0)
		abs = NULL;
	char *q = abs ? sq(abs) : NULL, *u = sq(w->c.user), *script = NULL;
	int rc = -1;
	if (q && u &&
	    asprintf(
	        &script,
	        "target=%s\n"
	        "[ -d \"$target\" ] && exit 0\n"
	        "top=\"$target\"\n"
	        "while [ ! -d \"$(dirname \"$top\")\" ]; do top=\"$(dirname \"$top\")\"; done\n"
	        "mkdir -p \"$target\" && chown -R %s:%s \"$top\"\n",
	        q, u, u) >= 0) {
		rc = run_root(w, script, "failed to create workdir", true);
		if (rc == 0) {
			free(w->c.workdir);
			w->c.workdir = abs;
			abs = NULL;
		}
	} else {
		snprintf(w->why, sizeof(w->why), "out of memory");
	}
	free(script);
	free(q);
	free(u);
	free(abs);
	return rc;
}

static int step_user(build *w, json_t *args)
{
	const char *name = arg(args, 0), *sudo = arg(args, 1);
	if (!name || !*name)
		return snprintf(w->why, sizeof(w->why), "USER requires a username argument"), -1;
	char *q = sq(name), *script = NULL;
	int rc = -1;
	if (q && asprintf(&script,
	                  "id -u %s >/dev/null 2>&1 || useradd --create-home --shell /bin/bash %s",
	                  q, q) >= 0)
		rc = run_root(w, script, "failed to create user", true);
	free(script);
	script = NULL;
	if (rc == 0 && sudo && !strcmp(sudo, "true")) {
		if (asprintf(&script,
		             "usermod -aG sudo %s && passwd -d %s >/dev/null && "
		             "{ grep -qx %s' ALL=(ALL:ALL) NOPASSWD: ALL' /etc/sudoers || "
		             "echo %s' ALL=(ALL:ALL) NOPASSWD: ALL' >>/etc/sudoers; }",
		             q, q, q, q) >= 0)
			rc = run_root(w, script, "failed to add user to sudoers", true);
		else
			rc = -1;
	}
	if (rc == 0) {
		char *u = strdup(name);
		if (u) {
			free(w->c.user);
			w->c.user = u;
		} else {
			rc = -1;
		}
	}
	free(script);
	free(q);
	return rc;
}

static int step_env(build *w, json_t *args)
{
	size_t n = json_array_size(args);
	if (n == 0 || n % 2)
		return snprintf(w->why, sizeof(w->why),
		                "ENV requires both a key and value arguments"),
		       -1;
	for (size_t i = 0; i + 1 < n; i += 2) {
		const char *k = arg(args, i), *v = arg(args, i + 1);
		if (!k || !*k || !v || strchr(k, '='))
			return snprintf(w->why, sizeof(w->why), "invalid ENV argument"), -1;
		/* the value as the shell expands it ($VAR), nothing executed: E2B escapes \ " `
		 * and $( and prints it with printf */
		size_t m = 0;
		for (const char *p = v; *p; p++)
			m += 2;
		char *esc = malloc(m + 1), *o = esc;
		if (!esc)
			return snprintf(w->why, sizeof(w->why), "out of memory"), -1;
		for (const char *p = v; *p; p++) {
			if (*p == '\\' || *p == '"' || *p == '`' || (*p == '$' && p[1] == '('))
				*o++ = '\\';
			*o++ = *p;
		}
		*o = '\0';
		char *cmd = NULL, *val = NULL, why[900];
		int rc = asprintf(&cmd, "printf '%%s' \"%s\"", esc) < 0 ? -1 : 0;
		free(esc);
		ctx none = {0}; /* E2B evaluates as root without the build's environment */
		if (rc == 0)
			rc = run(w->s, NULL, w->box, cmd, "root", "/", &none, w->prefix, &val, why,
			         sizeof(why));
		free(cmd);
		if (rc < 0) {
			snprintf(w->why, sizeof(w->why),
			         "failed to evaluate environment variable %.100s: %.800s", k, why);
			free(val);
			return -1;
		}
		rc = ctx_setenv(&w->c, k, val ? val : "");
		free(val);
		if (rc < 0)
			return snprintf(w->why, sizeof(w->why), "out of memory"), -1;
	}
	return 0;
}

/* Everything of `src` up to the last '/' before its first glob character, with a '/' added at
 * the end first: "folder/<glob>" -> "folder", "a/b.txt" -> "a/b.txt" (E2B's COPY source). */
static char *copy_source(const char *src)
{
	size_t meta = strcspn(src, "*?[{");
	size_t n = strlen(src);
	char *s = malloc(n + 2);
	if (!s)
		return NULL;
	memcpy(s, src, n);
	s[n] = '/';
	s[n + 1] = '\0';
	size_t cut = 0;
	for (size_t i = 0; i <= n && i <= meta; i++)
		if (s[i] == '/')
			cut = i;
	if (meta > n)
		cut = n;
	s[cut] = '\0';
	return s;
}

/* COPY's uploaded tar (the store's files object `hash`, for source `src`) into the build
 * sandbox at in_box, as root. */
static int copy_tar_in(build *w, const char *src, const char *hash, const char *in_box)
{
	char host[4200];
	snprintf(host, sizeof(host), "%s/%s", w->s->files_dir, hash);
	int fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return snprintf(w->why, sizeof(w->why),
		                "failed to open files object from storage: the files of '%.300s' "
		                "were not uploaded",
		                src),
		       -1;
	fk_writer *wr = NULL;
	fk_err err = {0};
	int rc = fk_file_write_open(w->s->rt, w->box, in_box, "root", &wr, NULL, &err);
	char buf[65536];
	ssize_t n = 0;
	while (rc == 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		rc = fk_writer_write(wr, buf, (size_t)n, &err);
	if (n < 0)
		rc = FK_EIO;
	close(fd);
	int rc2 = fk_writer_close(wr, rc == 0 ? &err : NULL);
	if (rc == 0)
		rc = rc2;
	if (rc < 0)
		return snprintf(w->why, sizeof(w->why),
		                "failed to copy layer tar data to sandbox: %s", err.message),
		       -1;
	return 0;
}

static int step_copy(build *w, json_t *step, json_t *args)
{
	const char *src = arg(args, 0), *dest = arg(args, 1), *owner = arg(args, 2),
	           *mode = arg(args, 3);
	json_t *h = json_object_get(step, "filesHash");
	const char *hash = json_is_string(h) ? json_string_value(h) : NULL;
	if (!src || !dest)
		return snprintf(w->why, sizeof(w->why),
		                "COPY requires a local path and a container path argument"),
		       -1;
	if (!hash || strlen(hash) != 64 || strspn(hash, "0123456789abcdef") != 64)
		return snprintf(w->why, sizeof(w->why), "COPY requires files hash to be set"), -1;
	if (mode && *mode && strspn(mode, "01234567") != strlen(mode))
		return snprintf(w->why, sizeof(w->why), "invalid COPY mode '%.20s'", mode), -1;
	char in_box[128];
	snprintf(in_box, sizeof(in_box), "/tmp/.e2b-copy-%s.tar", hash);
	if (copy_tar_in(w, src, hash, in_box) < 0)
		return -1;

	char owner_buf[300];
	int rc;
	if (owner && *owner)
		snprintf(owner_buf, sizeof(owner_buf), strchr(owner, ':') ? "%s" : "%s:%s", owner,
		         owner);
	else
		snprintf(owner_buf, sizeof(owner_buf), "%s:%s", w->c.user, w->c.user);
	char *source = copy_source(src);
	char *q_src = source ? sq(source) : NULL, *q_dest = sq(dest), *q_owner = sq(owner_buf),
	     *q_mode = sq(mode ? mode : ""), *q_wd = sq(w->c.workdir ? w->c.workdir : ""),
	     *q_user = sq(w->c.user), *script = NULL;
	rc = -1;
	if (q_src && q_dest && q_owner && q_mode && q_wd && q_user &&
	    asprintf(
	        &script,
	        "set -o pipefail\n"
	        "unpack=/tmp/.e2b-copy-%s\n"
	        "mkdir -p \"$unpack\" && tar -xf %s -C \"$unpack\" && rm -f %s || exit 1\n"
	        "src=\"$unpack\"/%s dest=%s owner=%s mode=%s wd=%s\n"
	        "[ -n \"$wd\" ] || wd=\"$(getent passwd %s | cut -d: -f6)\"\n"
	        "cd \"$wd\" || exit 1\n"
	        "case \"$dest\" in /*) ;; *) dest=\"$PWD/$dest\" ;; esac\n"
	        "if [ -L \"$src\" ] || [ -f \"$src\" ]; then\n"
	        "  if [ -L \"$src\" ]; then chown -h \"$owner\" \"$src\"; else\n"
	        "    chown \"$owner\" \"$src\" && { [ -z \"$mode\" ] || chmod \"$mode\" \"$src\"; "
	        "}; fi\n"
	        "  case \"$dest\" in */) mkdir -p \"$dest\" ;; *) mkdir -p \"$(dirname "
	        "\"$dest\")\" ;; esac\n"
	        "  mv -f \"$src\" \"$dest\" || exit 1\n"
	        "elif [ -d \"$src\" ]; then\n"
	        "  chown -R \"$owner\" \"$src\" && { [ -z \"$mode\" ] || chmod -R \"$mode\" "
	        "\"$src\"; }\n"
	        "  mkdir -p \"$dest\" && (cd \"$src\" && tar -cf - .) | "
	        "tar -xf - -C \"$dest\" --keep-directory-symlink --no-overwrite-dir || exit 1\n"
	        "else\n"
	        "  echo \"Error: source path does not exist: $src\" >&2; exit 1\n"
	        "fi\n"
	        "rm -rf \"$unpack\"\n",
	        hash, in_box, in_box, q_src, q_dest, q_owner, q_mode, q_wd, q_user) >= 0)
		rc = run_root(w, script, "failed to move files in sandbox", true);
	else
		snprintf(w->why, sizeof(w->why), "out of memory");
	free(script);
	free(source);
	free(q_src);
	free(q_dest);
	free(q_owner);
	free(q_mode);
	free(q_wd);
	free(q_user);
	return rc;
}

/* ---- finalize ------------------------------------------------------------------------------ */

/* Starts the start command and runs the ready command until it succeeds. b NULL: no build log
 * (a sandbox's boot). 0, or -1 with why. The start command keeps running. */
static int start_and_ready(fk_tstore *s, fk_tbuild *b, fk_rt *rt, const char *box,
                           const char *start, const char *ready, const ctx *c, char *why,
                           size_t cap)
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
	ctx c = {.user = boot->user,
	         .workdir = boot->workdir,
	         .envs = boot->envs,
	         .n_envs = boot->n_envs};
	char why[512];
	if (start_and_ready(NULL, NULL, rt, box_id, boot->start_cmd, boot->ready_cmd, &c, why,
	                    sizeof(why)) < 0) {
		if (err) {
			err->code = FK_EIO;
			snprintf(err->message, sizeof(err->message), "%.250s", why);
		}
		return FK_EIO;
	}
	return 0;
}

/* ---- the build ----------------------------------------------------------------------------- */

static const char *step_type(json_t *step)
{
	json_t *t = json_object_get(step, "type");
	return json_is_string(t) ? json_string_value(t) : "";
}

static void log_step(build *w, json_t *step)
{
	json_t *args = json_object_get(step, "args");
	char line[600];
	size_t n = (size_t)snprintf(line, sizeof(line), "%s", step_type(step));
	for (size_t i = 0; i < json_array_size(args) && n < sizeof(line); i++) {
		const char *a = arg(args, i);
		if (a && *a)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", a);
	}
	fk__build_log(w->s, w->b, "info", "[%s] %s", w->prefix, line);
}

static int run_step(build *w, json_t *step)
{
	const char *type = step_type(step);
	json_t *args = json_object_get(step, "args");
	if (!strcasecmp(type, "RUN"))
		return step_run(w, args);
	if (!strcasecmp(type, "COPY"))
		return step_copy(w, step, args);
	if (!strcasecmp(type, "ENV") || !strcasecmp(type, "ARG"))
		return step_env(w, args);
	if (!strcasecmp(type, "WORKDIR"))
		return step_workdir(w, args);
	if (!strcasecmp(type, "USER"))
		return step_user(w, args);
	snprintf(w->why, sizeof(w->why), "unsupported step type '%.64s'", type);
	return -1;
}

/* The base phase: the template or image the build starts FROM, resolved into *base (*ref the
 * template it names); its user, working directory and environment become the build's. */
static int build_base(build *w, fk_tboot *base, char **ref)
{
	fk_tstore *s = w->s;
	fk_tbuild *b = w->b;
	json_t *from_t = json_object_get(b->spec, "fromTemplate"),
	       *from_i = json_object_get(b->spec, "fromImage");

	fk__build_step(s, b, "base"); /* E2B's base phase (phases/base/builder.go) */
	if (json_is_string(from_t)) {
		*ref = strdup(json_string_value(from_t));
		fk__build_log(s, b, "info", "[base] FROM TEMPLATE %s", *ref);
	} else if (json_is_string(from_i)) {
		fk__build_log(s, b, "info", "[base] FROM %s", json_string_value(from_i));
		*ref = fk_tstore_image(s, json_string_value(from_i));
		if (!*ref) {
			snprintf(
			    w->why, sizeof(w->why),
			    "image '%.200s' is not available: fake-e2b builds offline, FROM one of "
			    "its templates (fromTemplate, or an image named as the template), "
			    "E2B's "
			    "base image e2bdev/base (fromBaseImage) or an image given a stand-in "
			    "with --image",
			    json_string_value(from_i));
			return -1;
		}
	} else {
		snprintf(w->why, sizeof(w->why), "fromImage or fromTemplate is required");
		return -1;
	}
	if (fk_tstore_resolve(s, *ref, base) < 0) {
		snprintf(w->why, sizeof(w->why), "template '%.200s' not found", *ref);
		return -1;
	}
	w->c.user = strdup(base->user);
	w->c.workdir = base->workdir ? strdup(base->workdir) : NULL;
	for (size_t i = 0; i < base->n_envs; i++) {
		const char *eq = strchr(base->envs[i], '=');
		if (eq) {
			char *k = strndup(base->envs[i], (size_t)(eq - base->envs[i]));
			if (k)
				ctx_setenv(&w->c, k, eq + 1);
			free(k);
		}
	}
	return 0;
}

/* The build sandbox ("build-" and the build id without dashes), made from *base with no
 * network; *made once it exists (the caller destroys it on failure). */
static int build_box(build *w, const fk_tboot *base, bool *made)
{
	fk_tstore *s = w->s;
	fk_tbuild *b = w->b;
	size_t bl = (size_t)snprintf(w->box, sizeof(w->box), "build-");
	for (const char *p = b->id; *p && bl + 1 < sizeof(w->box); p++)
		if (*p != '-')
			w->box[bl++] = *p;
	w->box[bl] = '\0';
	fk_box_options bo = {.net_none = true,
	                     .default_user = w->c.user,
	                     .memory_mb = b->memory_mb,
	                     .cpu_count = b->cpu_count,
	                     .template_id = base->base,
	                     .layer_dir = base->layer,
	                     .workdir = w->c.workdir};
	fk_err err = {0};
	if (!w->c.user) {
		snprintf(w->why, sizeof(w->why), "out of memory");
		return -1;
	}
	if (fk_box_create(s->rt, w->box, &bo, &err) < 0) {
		snprintf(w->why, sizeof(w->why), "cannot create the build sandbox: %s",
		         err.message);
		return -1;
	}
	*made = true;
	if (!fk__build_set_box(s, b, w->box)) {
		snprintf(w->why, sizeof(w->why), "server shutting down");
		return -1;
	}
	return 0;
}

/* The steps, in order, each numbered from 1 (phases/steps/factory.go). A failed step ends the
 * build here (its sandbox destroyed, the build finished as failed at that step): -1. */
static int build_steps(build *w)
{
	fk_tstore *s = w->s;
	fk_tbuild *b = w->b;
	json_t *steps = json_object_get(b->spec, "steps");
	size_t n = json_array_size(steps);

	for (size_t i = 0; i < n; i++) {
		json_t *step = json_array_get(steps, i);
		char sn[24];
		snprintf(sn, sizeof(sn), "%zu", i + 1);
		snprintf(w->prefix, sizeof(w->prefix), "builder %zu/%zu", i + 1, n);
		fk__build_step(s, b, sn);
		log_step(w, step);
		if (run_step(w, step) < 0) {
			fk__build_log(s, b, "error", "[%s] %s", w->prefix, w->why);
			fk__build_step(s, b, NULL);
			fk__build_log(s, b, "error", "Build failed: %s", w->why);
			fk_box_destroy(s->rt, w->box, NULL);
			fk__build_set_box(s, b, "");
			fk__build_finish(s, b, NULL, w->why, sn);
			return -1;
		}
	}
	return 0;
}

/* E2B's words (orchestrator template/build/builder.go): the time since the build started,
 * truncated to the second, as Go prints a time.Duration ("0s", "42s", "1m5s", "1h0m3s"). */
static void log_took(fk_tstore *s, fk_tbuild *b, int64_t started_ns)
{
	int64_t took = (fk_now_ns() - started_ns) / 1000000000;
	char dur[48];
	if (took >= 3600)
		snprintf(dur, sizeof(dur), "%lldh%lldm%llds", (long long)(took / 3600),
		         (long long)(took / 60 % 60), (long long)(took % 60));
	else if (took >= 60)
		snprintf(dur, sizeof(dur), "%lldm%llds", (long long)(took / 60),
		         (long long)(took % 60));
	else
		snprintf(dur, sizeof(dur), "%llds", (long long)took);
	fk__build_log(s, b, "info", "Build finished, took %s", dur);
}

/* The finalize phase: the start and ready commands run, the sandbox's files committed as the
 * template's layer, and what it boots with in *done (the build's user, directory and
 * environment taken over from w->c). The build sandbox is gone either way (*box_made false). */
static int build_finalize(build *w, fk_tboot *base, fk_tboot *done, bool *box_made)
{
	fk_tstore *s = w->s;
	fk_tbuild *b = w->b;
	const char *start = json_string_value(json_object_get(b->spec, "startCmd"));
	const char *ready = json_string_value(json_object_get(b->spec, "readyCmd"));
	char layer[4200];
	fk_err err = {0};

	snprintf(w->prefix, sizeof(w->prefix), "finalize");
	fk__build_step(s, b, "finalize");
	/* E2B keeps the start metadata of the template it builds on unless this build sets one */
	const char *st_cmd = start || ready ? start : base->start_cmd;
	const char *rd_cmd = start || ready ? ready : base->ready_cmd;
	if (st_cmd && !rd_cmd)
		rd_cmd = DEFAULT_READY_CMD;
	if (start_and_ready(s, b, s->rt, w->box, st_cmd, rd_cmd, &w->c, w->why, sizeof(w->why)) < 0)
		return -1;

	snprintf(layer, sizeof(layer), "%s/%s", s->layers_dir, b->id);
	fk__build_set_box(s, b, "");
	*box_made = false;
	if (fk_box_commit(s->rt, w->box, layer, &err) < 0) {
		snprintf(w->why, sizeof(w->why), "cannot save the template's files: %s",
		         err.message);
		return -1;
	}
	done->template_id = strdup(b->template_id);
	done->base = base->base;
	base->base = NULL;
	done->layer = strdup(layer);
	done->user = w->c.user;
	done->workdir = w->c.workdir;
	done->envs = w->c.envs;
	done->n_envs = w->c.n_envs;
	memset(&w->c, 0, sizeof(w->c));
	done->start_cmd = st_cmd ? strdup(st_cmd) : NULL;
	done->ready_cmd = st_cmd && rd_cmd ? strdup(rd_cmd) : NULL;
	if (!done->template_id || !done->layer) {
		snprintf(w->why, sizeof(w->why), "out of memory");
		return -1;
	}
	return 0;
}

void fk__build_run(fk_tstore *s, fk_tbuild *b)
{
	build w = {.s = s, .b = b};
	fk_tboot base = {0}, done = {0};
	const char *fail_step = "base";
	char *ref = NULL;
	bool box_made = false;

	if (!fk__build_wait_slot(s, b)) {
		fk__build_finish(s, b, NULL, "server shutting down", "base");
		return;
	}
	int64_t started_ns = fk_now_ns(); /* its start: it has a build slot */
	if (build_base(&w, &base, &ref) < 0 || build_box(&w, &base, &box_made) < 0)
		goto fail;
	if (build_steps(&w) < 0)
		goto out; /* finished as failed at its step */
	fail_step = "finalize";
	if (build_finalize(&w, &base, &done, &box_made) < 0)
		goto fail;
	fk__build_step(s, b, NULL); /* the build's own lines have no step (E2B's builder.go) */
	log_took(s, b, started_ns);
	fk__build_finish(s, b, &done, NULL, NULL);
	goto out;

fail:
	fk__build_log(s, b, "error", "[%s] %s", fail_step, w.why);
	fk__build_step(s, b, NULL);
	fk__build_log(s, b, "error", "Build failed: %s", w.why);
	if (box_made) {
		fk_box_destroy(s->rt, w.box, NULL);
		fk__build_set_box(s, b, "");
	}
	fk__build_finish(s, b, NULL, w.why, fail_step);
out:
	fk_tboot_clear(&done);
	fk_tboot_clear(&base);
	ctx_clear(&w.c);
	free(ref);
}
