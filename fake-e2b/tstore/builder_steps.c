/*
 * fake-e2b/tstore/builder_steps.c: a build's steps (builder_int.h), as E2B's template manager
 * runs them (fake-e2b/README.md "Template builds"): RUN, COPY (the uploaded archive unpacked in
 * the sandbox, given its owner and mode, moved into place), ENV and ARG (a value as the shell
 * expands it, nothing executed), WORKDIR and USER, each changing the context (user, working
 * directory, environment) the next ones run with; and the log line that names each step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "builder_int.h"

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

static const char *arg(json_t *args, size_t i)
{
	json_t *a = json_array_get(args, i);
	return json_is_string(a) ? json_string_value(a) : NULL;
}

/* The user's home directory inside the box (for a context without a working directory). */
static const char *cwd_of(fk_bwork *w)
{
	return w->c.workdir; /* NULL: envd's default (the template's workdir) */
}

static int step_run(fk_bwork *w, json_t *args)
{
	const char *cmd = arg(args, 0), *user = arg(args, 1);
	if (!cmd)
		return snprintf(w->why, sizeof(w->why), "RUN requires command argument"), -1;
	char why[900];
	if (fk__bcmd_run(w->s, w->b, w->box, cmd, user && *user ? user : w->c.user, cwd_of(w),
	                 &w->c, w->prefix, NULL, why, sizeof(why)) < 0) {
		snprintf(w->why, sizeof(w->why), "failed to run command '%.400s': %.500s", cmd,
		         why);
		return -1;
	}
	return 0;
}

/* A script run as root; on failure why = "<what>: <status>". */
static int run_root(fk_bwork *w, const char *script, const char *what, bool log)
{
	char why[900];
	if (fk__bcmd_run(w->s, log ? w->b : NULL, w->box, script, "root", "/", &w->c, w->prefix,
	                 NULL, why, sizeof(why)) < 0) {
		snprintf(w->why, sizeof(w->why), "%s: %s", what, why);
		return -1;
	}
	return 0;
}

static int step_workdir(fk_bwork *w, json_t *args)
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

static int step_user(fk_bwork *w, json_t *args)
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

static int step_env(fk_bwork *w, json_t *args)
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
		fk_bctx none = {0}; /* E2B evaluates as root without the build's environment */
		if (rc == 0)
			rc = fk__bcmd_run(w->s, NULL, w->box, cmd, "root", "/", &none, w->prefix,
			                  &val, why, sizeof(why));
		free(cmd);
		if (rc < 0) {
			snprintf(w->why, sizeof(w->why),
			         "failed to evaluate environment variable %.100s: %.800s", k, why);
			free(val);
			return -1;
		}
		rc = fk__bctx_setenv(&w->c, k, val ? val : "");
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
static int copy_tar_in(fk_bwork *w, const char *src, const char *hash, const char *in_box)
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

static int step_copy(fk_bwork *w, json_t *step, json_t *args)
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

static const char *step_type(json_t *step)
{
	json_t *t = json_object_get(step, "type");
	return json_is_string(t) ? json_string_value(t) : "";
}

void fk__bstep_log(fk_bwork *w, json_t *step)
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

int fk__bstep_run(fk_bwork *w, json_t *step)
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
