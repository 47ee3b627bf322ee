/*
 * cli/demo.c: `sandbox-e2b demo`, an agent-like session end to end.
 *
 * Without E2B credentials it starts the local fake-e2b (port 0) and stops it
 * afterwards; with them it uses E2B. It then creates a sandbox, writes the
 * wordfreq example (a multi-file C program and its Makefile, embedded at build
 * time) into /workspace, builds and runs it with make and gcc, reads and stats
 * the report the program wrote, kills a tagged background command, pauses and
 * resumes the sandbox, checks the files are still there, and destroys it. One
 * narrated line per step with its time in ms; the first failing step is named
 * and the exit code is 1.
 */
#include "command.h"
#include "shapes.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define DEMO_DIR           "/workspace/wordfreq"
#define DEMO_REPORT        DEMO_DIR "/report.txt"
#define DEMO_FAKE_START_MS 30000
#define DEMO_FAKE_STOP_MS  15000
#define DEMO_BUILD_MS      180000
#define DEMO_BG_WAIT_MS    30000
#define DEMO_BG_RETURN_MS  60000

/* ---- narration -------------------------------------------------------------------- */

typedef struct demo {
	cli *c;
	const char *fake_path;
	bool local, keep;
	const char *name;
	char name_buf[64];
	char *id;
	int step;
	uint64_t t0, t_step;
	/* the local server */
	pid_t fake_pid;
	int fake_fd;
	pthread_t drain;
	bool drain_started;
	char url[64];
	char key[48]; /* the local fake-e2b's API key: random per run */
	/* the file fake-e2b reads it from (--api-key-file), in a directory of its own; "" once
	 * removed */
	char key_dir[PATH_MAX], key_file[PATH_MAX + 16];
	/* the report as first read, to compare after resume */
	unsigned char *report;
	size_t report_len;
	/* --json: the steps, printed as one object at the end */
	json_t *steps;
	const char *failed;
} demo;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The test hook of tests/cli (docs/cli.md "Tests"): with SANDBOX_E2B_DEMO_HOLD_AFTER=NAME
 * and SANDBOX_E2B_DEMO_GATE=FILE, the demo waits after the line of step NAME (or the
 * opening line, NAME "local fake-e2b") until FILE exists or the run is aborted, so a
 * test can send Ctrl-C at exactly that step boundary. Unset: nothing happens.
 */
static void demo_hold(demo *d, const char *name)
{
	const char *after = getenv("SANDBOX_E2B_DEMO_HOLD_AFTER");
	const char *gate = getenv("SANDBOX_E2B_DEMO_GATE");
	struct pollfd pfd = {.fd = sbx_signal_fd(d->c->sig), .events = POLLIN};

	if (!after || !gate || strcmp(after, name) != 0)
		return;
	while (!sbx_signal_aborted(d->c->sig) && access(gate, F_OK) != 0)
		poll(&pfd, pfd.fd >= 0 ? 1 : 0, 20);
}

static void step_begin(demo *d)
{
	d->step++;
	d->t_step = now_ms();
}

static void step_ok(demo *d, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void step_ok(demo *d, const char *name, const char *fmt, ...)
{
	uint64_t ms = now_ms() - d->t_step;
	char detail[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (d->c->json) {
		json_array_append_new(d->steps, json_pack("{s:i,s:s,s:b,s:I,s:s?}", "step", d->step,
		                                          "name", name, "ok", 1, "ms",
		                                          (json_int_t)ms, "detail", detail));
		return;
	}
	printf("[%2d] %-20s %6" PRIu64 " ms  %s\n", d->step, name, ms, detail);
	fflush(stdout);
	demo_hold(d, name);
}

/* Name the failed step and why; returns the demo's exit code. */
static int step_fail(demo *d, const char *name, int code, const sbx_error *err, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static int step_fail(demo *d, const char *name, int code, const sbx_error *err, const char *fmt,
                     ...)
{
	va_list ap;
	char msg[768];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->failed = name;
	/* Ctrl-C (or SIGTERM) ends any step the same way, whatever the step was doing. */
	if (code == SBX_EABORTED || sbx_signal_aborted(d->c->sig)) {
		code = SBX_EABORTED;
		snprintf(msg, sizeof(msg), "interrupted");
	}
	if (d->c->json)
		json_array_append_new(
		    d->steps,
		    json_pack("{s:i,s:s,s:b,s:I,s:s?,s:s}", "step", d->step, "name", name, "ok", 0,
		              "ms", (json_int_t)(now_ms() - d->t_step), "error", msg, "code",
		              code < 0 ? sbx_error_code_name(code) : "demo"));
	else
		printf("[%2d] %-20s %6" PRIu64 " ms  %s\n", d->step, name, now_ms() - d->t_step,
		       code == SBX_EABORTED ? "INTERRUPTED" : "FAILED");
	fflush(stdout);
	if (code == SBX_EABORTED) {
		fprintf(stderr, "%s demo: step %d '%s' interrupted; cleaning up\n", d->c->prog,
		        d->step, name);
		return cli_abort_exit();
	}
	fprintf(stderr, "%s demo: step %d '%s' failed: %s\n", d->c->prog, d->step, name, msg);
	if (code < 0) {
		if (err && err->message[0])
			fprintf(stderr, "%s demo: %s (%s)\n", d->c->prog,
			        cli_lib_message(err->message), sbx_error_code_name(code));
		fprintf(stderr, "%s demo: %s\n", d->c->prog, cli_hint(d->c, code, err));
	}
	return CLI_EXIT_ERROR;
}

/* Before each step: a Ctrl-C that landed between steps fails the next one. */
static int check_abort(demo *d, const char *next)
{
	if (!sbx_signal_aborted(d->c->sig))
		return 0;
	step_begin(d);
	return step_fail(d, next, SBX_EABORTED, NULL, "interrupted");
}

/* Print bytes indented by 6 spaces, for program output inside the narration. */
static void print_indented(const demo *d, const unsigned char *p, size_t len)
{
	bool bol = true;

	if (d->c->json)
		return;
	for (size_t i = 0; i < len; i++) {
		if (bol)
			fputs("      | ", stdout);
		putchar(p[i]);
		bol = p[i] == '\n';
	}
	if (!bol)
		putchar('\n');
	fflush(stdout);
}

/* ---- the local fake-e2b ----------------------------------------------------------- */

static bool executable(const char *path)
{
	return access(path, X_OK) == 0;
}

/* out = dir + suffix when it fits and names an executable. */
static bool try_path(char *out, size_t outlen, const char *dir, int dirlen, const char *suffix)
{
	int n = snprintf(out, outlen, "%.*s%s", dirlen, dir, suffix);
	return n > 0 && (size_t)n < outlen && executable(out);
}

/* Where fake-e2b is (see --help); `out` gets the path. */
static bool find_fake(demo *d, char *out, size_t outlen)
{
	char self[PATH_MAX], *slash;
	ssize_t n;
	const char *path;

	if (d->fake_path || (getenv("FAKE_E2B") && *getenv("FAKE_E2B"))) {
		snprintf(out, outlen, "%s", d->fake_path ? d->fake_path : getenv("FAKE_E2B"));
		return executable(out);
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/'))) {
			*slash = '\0';
			if (try_path(out, outlen, self, (int)strlen(self),
			             "/../fake-e2b/fake-e2b") ||
			    try_path(out, outlen, self, (int)strlen(self), "/fake-e2b"))
				return true;
		}
	}
	path = getenv("PATH");
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		if (try_path(out, outlen, len ? path : ".", len ? (int)len : 1, "/fake-e2b"))
			return true;
		path = end ? end + 1 : NULL;
	}
	return false;
}

/* Read fake-e2b's stdout until EOF so it never blocks on a full pipe. */
static void *drain_main(void *arg)
{
	demo *d = arg;
	char buf[4096];
	ssize_t n;

	while ((n = read(d->fake_fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && d->c->verbose)
			(void)!write(STDERR_FILENO, buf, (size_t)n);
	}
	return NULL;
}

/* Wait for "fake-e2b listening on http://127.0.0.1:PORT"; fills d->url. */
static int wait_listening(demo *d, char *why, size_t whylen)
{
	char line[512];
	size_t len = 0;
	uint64_t deadline = now_ms() + DEMO_FAKE_START_MS;
	const char *marker = "listening on ";

	for (;;) {
		struct pollfd pfd = {d->fake_fd, POLLIN, 0};
		uint64_t now = now_ms();
		char *nl, *url;
		ssize_t n;
		int rc;

		if (sbx_signal_aborted(d->c->sig)) {
			snprintf(why, whylen, "interrupted");
			return -1;
		}
		if (now >= deadline) {
			snprintf(why, whylen, "fake-e2b did not say it was listening within %d ms",
			         DEMO_FAKE_START_MS);
			return -1;
		}
		rc = poll(&pfd, 1, (int)(deadline - now > 200 ? 200 : deadline - now));
		if (rc <= 0)
			continue;
		n = read(d->fake_fd, line + len, sizeof(line) - 1 - len);
		if (n <= 0) {
			snprintf(why, whylen,
			         "fake-e2b exited before listening (run it by hand, "
			         "'fake-e2b --port 0', to see why)");
			return -1;
		}
		len += (size_t)n;
		line[len] = '\0';
		if (!(nl = strchr(line, '\n'))) {
			if (len == sizeof(line) - 1)
				len = 0;
			continue;
		}
		*nl = '\0';
		if ((url = strstr(line, marker)) &&
		    strncmp(url + strlen(marker), "http://", 7) == 0) {
			snprintf(d->url, sizeof(d->url), "%s", url + strlen(marker));
			return 0;
		}
		memmove(line, nl + 1, len - (size_t)(nl + 1 - line));
		len -= (size_t)(nl + 1 - line);
	}
}

/* Removes the API key's file and its directory (once fake-e2b has read it, or on failure). */
static void key_file_remove(demo *d)
{
	if (d->key_file[0])
		unlink(d->key_file);
	if (d->key_dir[0])
		rmdir(d->key_dir);
	d->key_file[0] = d->key_dir[0] = '\0';
}

static int spawn_fake(demo *d, const char *path, char *why, size_t whylen)
{
	/* fake-e2b accepts only the key it is given: a fresh random one per run */
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		snprintf(why, whylen, "no randomness for the API key");
		return -1;
	}
	memcpy(d->key, "e2b_demo", 8);
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(d->key + 8 + 2 * i, 3, "%02x", rnd[i]);
	/* the key goes in a file of a private directory (0700; the file 0600), never on the
	 * command line, which every local user sees in ps; fake-e2b reads it at start, and the
	 * file is removed once it listens (key_file_remove) */
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(d->key_dir, sizeof(d->key_dir), "%s/sandbox-e2b-demo-XXXXXX", tmp) >=
	        (int)sizeof(d->key_dir) ||
	    !mkdtemp(d->key_dir)) {
		char ebuf[128];
		d->key_dir[0] = '\0';
		snprintf(why, whylen, "cannot make a directory for the API key: %s",
		         cli_strerror(errno, ebuf, sizeof(ebuf)));
		return -1;
	}
	snprintf(d->key_file, sizeof(d->key_file), "%s/api-key", d->key_dir);
	int kfd = open(d->key_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t klen = strlen(d->key);
	bool written =
	    kfd >= 0 && write(kfd, d->key, klen) == (ssize_t)klen && write(kfd, "\n", 1) == 1;
	if (kfd < 0 || close(kfd) != 0 || !written) {
		char ebuf[128];
		int e = errno;
		key_file_remove(d);
		snprintf(why, whylen, "cannot write the API key file: %s",
		         cli_strerror(e, ebuf, sizeof(ebuf)));
		return -1;
	}
	char *argv[] = {(char *)path, "--port",
	                "0",          "--api-key-file",
	                d->key_file,  d->c->verbose ? NULL : "--quiet",
	                NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t defaults, none;
	int fds[2], rc;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		char ebuf[128];
		snprintf(why, whylen, "pipe: %s", cli_strerror(errno, ebuf, sizeof(ebuf)));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawnattr_init(&attr);
	/* Its own process group: Ctrl-C reaches us, and we stop it after cleaning up. */
	sigemptyset(&none);
	sigemptyset(&defaults);
	sigaddset(&defaults, SIGPIPE);
	sigaddset(&defaults, SIGINT);
	sigaddset(&defaults, SIGTERM);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
	                                    POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&d->fake_pid, path, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (rc != 0) {
		char ebuf[128];
		close(fds[0]);
		d->fake_pid = 0;
		if (snprintf(why, whylen, "cannot start %s: %s", path,
		             cli_strerror(rc, ebuf, sizeof(ebuf))) < 0)
			why[0] = '\0';
		return -1;
	}
	d->fake_fd = fds[0];
	return 0;
}

static void stop_fake(demo *d)
{
	uint64_t deadline = now_ms() + DEMO_FAKE_STOP_MS;
	int status;

	if (d->fake_pid <= 0)
		return;
	kill(d->fake_pid, SIGTERM);
	while (waitpid(d->fake_pid, &status, WNOHANG) == 0) {
		if (now_ms() >= deadline) {
			fprintf(stderr, "%s demo: fake-e2b did not stop within %d ms; killing it\n",
			        d->c->prog, DEMO_FAKE_STOP_MS);
			kill(d->fake_pid, SIGKILL);
			waitpid(d->fake_pid, &status, 0);
			break;
		}
		usleep(20000);
	}
	d->fake_pid = 0;
	if (d->drain_started)
		pthread_join(d->drain, NULL);
	d->drain_started = false;
	close(d->fake_fd);
}

static int start_local(demo *d)
{
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_error err = {0};
	char path[PATH_MAX], why[512], json[256];
	int rc;

	step_begin(d);
	if (!find_fake(d, path, sizeof(path)))
		return step_fail(d, "start fake-e2b", 0, NULL,
		                 "cannot find fake-e2b: build it (cmake --build BUILD --target "
		                 "fake-e2b), pass --fake-e2b PATH or set FAKE_E2B, or set "
		                 "E2B_API_KEY and E2B_TEMPLATE to use E2B");
	int started =
	    spawn_fake(d, path, why, sizeof(why)) < 0 ? -1 : wait_listening(d, why, sizeof(why));
	key_file_remove(d);
	if (started < 0)
		return step_fail(d, "start fake-e2b",
		                 sbx_signal_aborted(d->c->sig) ? SBX_EABORTED : 0, NULL, "%s", why);
	if (pthread_create(&d->drain, NULL, drain_main, d) == 0)
		d->drain_started = true;
	step_ok(d, "start fake-e2b", "%s (pid %d)", d->url, (int)d->fake_pid);

	/* The key fake-e2b was started with; the template with the seed's conventions (fake-e2b
	 * serves it from the host's own tools). */
	snprintf(json, sizeof(json),
	         "{\"apiKey\":\"%s\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"%s\"}", d->key,
	         d->url);
	if ((rc = sbx_e2b_config_parse(&d->c->cfg, json, strlen(json), &err)) < 0)
		return step_fail(d, "configure", rc, &err, "local config rejected");
	opts.envd_url = d->url;
	if ((rc = sbx_e2b_provider_new(&d->c->prov, d->c->cfg, &opts, &err)) < 0)
		return step_fail(d, "configure", rc, &err, "cannot make the provider");
	return 0;
}

/* ---- the session ------------------------------------------------------------------- */

static int demo_create(demo *d)
{
	sbx_limits lim = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	sbx_error err = {0};
	int rc;

	step_begin(d);
	if ((rc = sbx_sandbox_create(&d->id, d->c->prov, d->name, &lim, d->c->sig, &err)) < 0)
		return step_fail(d, "create sandbox", rc, &err, "create '%s'", d->name);
	step_ok(d, "create sandbox", "id %s (name %s)", d->id, d->name);
	return 0;
}

/* One file of the program, written by its own thread (the provider is thread-safe). */
typedef struct write_job {
	demo *d;
	const cli_embedded_file *f;
	char path[256];
	sbx_error err;
	int rc;
} write_job;

static void *write_main(void *arg)
{
	write_job *j = arg;

	j->rc = sbx_sandbox_write_file(j->d->c->prov, j->d->id, j->path, j->f->data, j->f->len,
	                               j->d->c->sig, &j->err);
	return NULL;
}

/* Write every file at once, as an agent's parallel tool calls would. */
static int demo_write(demo *d)
{
	write_job *jobs = calloc(cli_wordfreq_nfiles, sizeof(*jobs));
	pthread_t *threads = calloc(cli_wordfreq_nfiles, sizeof(*threads));
	bool *started = calloc(cli_wordfreq_nfiles, sizeof(*started));
	size_t total = 0;
	int rc = 0;

	step_begin(d);
	if (!jobs || !threads || !started) {
		rc = step_fail(d, "write program", SBX_ENOMEM, NULL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < cli_wordfreq_nfiles; i++) {
		jobs[i].d = d;
		jobs[i].f = &cli_wordfreq_files[i];
		snprintf(jobs[i].path, sizeof(jobs[i].path), "%s/%s", DEMO_DIR,
		         cli_wordfreq_files[i].path);
		started[i] = pthread_create(&threads[i], NULL, write_main, &jobs[i]) == 0;
		if (!started[i]) /* no thread: write it from here */
			write_main(&jobs[i]);
	}
	for (size_t i = 0; i < cli_wordfreq_nfiles; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		total += jobs[i].f->len;
	}
	for (size_t i = 0; i < cli_wordfreq_nfiles && rc == 0; i++)
		if (jobs[i].rc < 0)
			rc = step_fail(d, "write program", jobs[i].rc, &jobs[i].err, "write %s",
			               jobs[i].path);
	if (rc == 0)
		step_ok(d, "write program", "%zu files in parallel, %zu bytes into %s",
		        cli_wordfreq_nfiles, total, DEMO_DIR);
done:
	free(started);
	free(threads);
	free(jobs);
	return rc;
}

/* Run a command in DEMO_DIR; a non-zero exit fails the step and shows its output. */
static int demo_exec(demo *d, const char *name, const char *cmd, bool show)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	sbx_exec_result r = {0};
	sbx_error err = {0};
	int rc;

	o.cwd = DEMO_DIR;
	o.timeout_ms = DEMO_BUILD_MS;
	step_begin(d);
	if ((rc = sbx_sandbox_exec(&r, d->c->prov, d->id, cmd, &o, d->c->sig, &err)) < 0)
		return step_fail(d, name, rc, &err, "exec '%s'", cmd);
	if (!r.has_exit_code || r.exit_code != 0) {
		print_indented(d, r.stdout_data, r.stdout_len);
		print_indented(d, r.stderr_data, r.stderr_len);
		if (r.has_exit_code)
			rc = step_fail(
			    d, name, 0, NULL, "'%s' exited %d%s", cmd, r.exit_code,
			    strstr(cmd, "make") ? " (does the template have make and gcc?)" : "");
		else
			rc = step_fail(d, name, r.aborted ? SBX_EABORTED : 0, NULL, "'%s' %s", cmd,
			               r.timed_out ? "timed out"
			               : r.aborted ? "was interrupted"
			                           : "was killed");
		sbx_exec_result_free(&r);
		return rc;
	}
	step_ok(d, name, "$ %s -> exit 0", cmd);
	if (show) {
		print_indented(d, r.stdout_data, r.stdout_len);
		print_indented(d, r.stderr_data, r.stderr_len);
	}
	sbx_exec_result_free(&r);
	return 0;
}

static int demo_read(demo *d, const char *name, bool compare)
{
	sbx_file *f = NULL;
	sbx_error err = {0};
	int rc;

	step_begin(d);
	if ((rc = sbx_sandbox_read_file(&f, d->c->prov, d->id, DEMO_REPORT, 1 << 20, d->c->sig,
	                                &err)) < 0)
		return step_fail(d, name, rc, &err, "read %s", DEMO_REPORT);
	if (!f)
		return step_fail(d, name, 0, NULL, "%s is missing", DEMO_REPORT);
	if (compare) {
		bool same = f->len == d->report_len && memcmp(f->data, d->report, f->len) == 0;
		sbx_file_free(f);
		if (!same)
			return step_fail(d, name, 0, NULL, "%s changed across pause/resume",
			                 DEMO_REPORT);
		step_ok(d, name, "%s still there, %zu bytes, unchanged", DEMO_REPORT,
		        d->report_len);
		return 0;
	}
	if (!(d->report = malloc(f->len + 1))) {
		sbx_file_free(f);
		return step_fail(d, name, SBX_ENOMEM, NULL, "out of memory");
	}
	memcpy(d->report, f->data, f->len);
	d->report_len = f->len;
	step_ok(d, name, "%s, %zu bytes:", DEMO_REPORT, f->len);
	print_indented(d, f->data, f->len);
	sbx_file_free(f);
	return 0;
}

static int demo_stat(demo *d)
{
	sbx_stat st;
	sbx_error err = {0};
	int rc;

	step_begin(d);
	if ((rc = sbx_sandbox_stat(&st, d->c->prov, d->id, DEMO_REPORT, d->c->sig, &err)) < 0)
		return step_fail(d, "stat report", rc, &err, "stat %s", DEMO_REPORT);
	if (!st.exists || st.is_dir || st.size != d->report_len)
		return step_fail(
		    d, "stat report", 0, NULL,
		    "expected a file of %zu bytes, got exists=%d is_dir=%d size=%" PRIu64,
		    d->report_len, st.exists, st.is_dir, st.size);
	step_ok(d, "stat report", "file, %" PRIu64 " bytes", st.size);
	return 0;
}

/* ---- background command killed by tag ------------------------------------------------- */

typedef struct bg_job {
	demo *d;
	sbx_signal *sig;
	sbx_exec_result r;
	sbx_error err;
	int rc;
	uint64_t t_end;
	volatile bool done;
} bg_job;

static void *bg_main(void *arg)
{
	bg_job *j = arg;
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;

	o.tag = "bg";
	o.timeout_ms = 600000;
	j->rc = sbx_sandbox_exec(&j->r, j->d->c->prov, j->d->id, "sleep 300", &o, j->sig, &j->err);
	j->t_end = now_ms();
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static bool bg_done(bg_job *j)
{
	return __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
}

/* Poll until a `sleep` runs in the sandbox (the bg command started). */
static int wait_bg_running(demo *d, bg_job *j, sbx_error *err)
{
	sbx_exec_options o = SBX_EXEC_OPTIONS_INIT;
	uint64_t deadline = now_ms() + DEMO_BG_WAIT_MS;
	int rc;

	o.timeout_ms = 10000;
	while (now_ms() < deadline && !bg_done(j)) {
		sbx_exec_result r = {0};
		if (sbx_signal_aborted(d->c->sig))
			return SBX_EABORTED;
		if ((rc = sbx_sandbox_exec(&r, d->c->prov, d->id, "pgrep -x sleep >/dev/null", &o,
		                           d->c->sig, err)) < 0)
			return rc;
		rc = r.has_exit_code && r.exit_code == 0;
		sbx_exec_result_free(&r);
		if (rc)
			return 0;
		usleep(100000);
	}
	return 1;
}

/* Join the bg thread, aborting it when the run is interrupted or it overstays. */
static bool bg_join(demo *d, pthread_t t, bg_job *j)
{
	uint64_t deadline = now_ms() + DEMO_BG_RETURN_MS;
	bool in_time = true;

	while (!bg_done(j)) {
		if (sbx_signal_aborted(d->c->sig)) {
			sbx_signal_abort(j->sig);
		} else if (now_ms() >= deadline) {
			in_time = false;
			sbx_signal_abort(j->sig);
		}
		usleep(10000);
	}
	pthread_join(t, NULL);
	return in_time;
}

static int demo_background(demo *d)
{
	static const char *const tags[] = {"bg"};
	bg_job j = {.d = d};
	sbx_error err = {0};
	pthread_t t;
	uint64_t t_kill = 0;
	bool in_time;
	int rc;

	step_begin(d);
	if (sbx_signal_new(&j.sig) < 0)
		return step_fail(d, "start bg command", SBX_ENOMEM, NULL, "no abort signal");
	if (pthread_create(&t, NULL, bg_main, &j) != 0) {
		sbx_signal_free(j.sig);
		return step_fail(d, "start bg command", SBX_EINTERNAL, NULL, "pthread_create");
	}
	rc = wait_bg_running(d, &j, &err);
	if (rc == 0)
		step_ok(d, "start bg command", "$ sleep 300 (tag bg) is running, in a thread");
	else
		rc =
		    step_fail(d, "start bg command", rc < 0 ? rc : 0, &err,
		              bg_done(&j) ? "the bg exec returned early" : "sleep never showed up");
	if (rc != 0)
		sbx_signal_abort(j.sig); /* do not leave the bg command running */
	if (rc == 0) {
		step_begin(d);
		t_kill = now_ms();
		if ((rc = sbx_sandbox_kill_tagged(d->c->prov, d->id, tags, 1, d->c->sig, &err)) < 0)
			rc = step_fail(d, "kill-tagged bg", rc, &err, "kill_tagged");
	}
	in_time = bg_join(d, t, &j);
	if (rc == 0 && (!in_time || j.rc < 0 || j.r.timed_out))
		rc = step_fail(d, "kill-tagged bg", j.rc < 0 ? j.rc : 0, &j.err,
		               "the bg exec did not end by the kill (rc %d, timed_out %d)", j.rc,
		               j.r.timed_out);
	else if (rc == 0 && j.r.has_exit_code)
		step_ok(d, "kill-tagged bg",
		        "bg exec returned %" PRIu64 " ms after the kill: exit %d", j.t_end - t_kill,
		        j.r.exit_code);
	else if (rc == 0)
		step_ok(d, "kill-tagged bg",
		        "bg exec returned %" PRIu64 " ms after the kill: killed", j.t_end - t_kill);
	sbx_exec_result_free(&j.r);
	sbx_signal_free(j.sig);
	return rc;
}

/* ---- pause, resume, destroy -------------------------------------------------------- */

static int demo_pause_resume(demo *d)
{
	sbx_resume_status st;
	sbx_error err = {0};
	int rc;

	step_begin(d);
	if ((rc = sbx_sandbox_suspend(d->c->prov, d->id, d->c->sig, &err)) < 0)
		return step_fail(d, "suspend", rc, &err, "pause %s", d->id);
	step_ok(d, "suspend", "paused (files and memory kept)");
	step_begin(d);
	if ((rc = sbx_sandbox_resume(&st, d->c->prov, d->id, d->c->sig, &err)) < 0)
		return step_fail(d, "resume", rc, &err, "resume %s", d->id);
	if (st != SBX_RESUMED)
		return step_fail(d, "resume", 0, NULL, "the sandbox is gone after pause");
	step_ok(d, "resume", "resumed");
	return 0;
}

static int demo_destroy(demo *d)
{
	sbx_error err = {0};
	int rc;

	step_begin(d);
	/* Not d->c->sig: cleanup must still happen after Ctrl-C. */
	if ((rc = sbx_sandbox_destroy(d->c->prov, d->id, NULL, &err)) < 0)
		return step_fail(d, "destroy", rc, &err, "destroy %s", d->id);
	step_ok(d, "destroy", "deleted %s", d->id);
	sbx_free(d->id);
	d->id = NULL;
	return 0;
}

static int demo_check_gone(demo *d, const char *id)
{
	sbx_resume_status st;
	sbx_error err = {0};
	int rc;

	step_begin(d);
	if ((rc = sbx_sandbox_resume(&st, d->c->prov, id, d->c->sig, &err)) < 0)
		return step_fail(d, "check gone", rc, &err, "resume after destroy");
	if (st != SBX_RESUME_GONE)
		return step_fail(d, "check gone", 0, NULL,
		                 "the sandbox still exists after destroy");
	step_ok(d, "check gone", "resume answers gone");
	return 0;
}

static int step_make(demo *d)
{
	return demo_exec(d, "build (make)", "make", true);
}

static int step_run(demo *d)
{
	return demo_exec(d, "run program", "./wordfreq -n 8 input.txt report.txt", true);
}

static int step_read(demo *d)
{
	return demo_read(d, "read report", false);
}

static int step_read_again(demo *d)
{
	return demo_read(d, "files after resume", true);
}

static int step_run_again(demo *d)
{
	return demo_exec(d, "run after resume", "ls -l report.txt wordfreq", true);
}

/* The session, in order; `name` is the first step each function narrates. */
static const struct {
	const char *name;
	int (*run)(demo *d);
} demo_steps[] = {
    {"create sandbox", demo_create},
    {"write program", demo_write},
    {"build (make)", step_make},
    {"run program", step_run},
    {"read report", step_read},
    {"stat report", demo_stat},
    {"start bg command", demo_background},
    {"suspend", demo_pause_resume},
    {"files after resume", step_read_again},
    {"run after resume", step_run_again},
};

static int demo_session(demo *d)
{
	char id[160];
	int rc;

	for (size_t i = 0; i < sizeof(demo_steps) / sizeof(demo_steps[0]); i++)
		if ((rc = check_abort(d, demo_steps[i].name)) || (rc = demo_steps[i].run(d)))
			return rc;
	if (d->keep) {
		printf("kept sandbox %s (destroy it with 'sandbox-e2b destroy %s')\n", d->id,
		       d->id);
		return 0;
	}
	snprintf(id, sizeof(id), "%s", d->id);
	if ((rc = check_abort(d, "destroy")) || (rc = demo_destroy(d)) != 0)
		return rc;
	if ((rc = check_abort(d, "check gone")))
		return rc;
	return demo_check_gone(d, id);
}

/* ---- the command -------------------------------------------------------------------- */

enum { OPT_FAKE = 1, OPT_LOCAL, OPT_KEEP, OPT_NAME };

static const cli_option demo_options[] = {
    {"fake-e2b", 0, "PATH", "the fake-e2b binary to start", OPT_FAKE, NULL},
    {"local", 0, NULL, "use fake-e2b even when E2B credentials are set", OPT_LOCAL, NULL},
    {"keep", 0, NULL, "do not destroy the sandbox at the end (prints its id)", OPT_KEEP, NULL},
    {"name", 0, "NAME", "sandbox name (default sbx-demo-<pid>)", OPT_NAME, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void demo_opt(demo *d, int id, const char *v)
{
	switch (id) {
	case OPT_FAKE:
		d->fake_path = v;
		break;
	case OPT_LOCAL:
		d->local = true;
		break;
	case OPT_KEEP:
		d->keep = true;
		break;
	case OPT_NAME:
		d->name = v;
		break;
	}
}

/* Destroy a sandbox left by a failed step and stop the local server. */
static void demo_cleanup(demo *d, int rc)
{
	cli *c = d->c;

	if (d->id && !d->keep) {
		sbx_error err = {0};
		/* No abort signal, so Ctrl-C still cleans up. */
		if (sbx_sandbox_destroy(c->prov, d->id, NULL, &err) < 0)
			fprintf(stderr,
			        "%s demo: could not destroy sandbox %s: %s; run '%s destroy %s'\n",
			        c->prog, d->id, err.message, c->prog, d->id);
	}
	if (d->local && d->fake_pid > 0) {
		/* The provider goes first: its connections point at the server. */
		sbx_provider_free(c->prov);
		c->prov = NULL;
		step_begin(d);
		stop_fake(d);
		if (rc == 0)
			step_ok(d, "stop fake-e2b", "stopped");
	}
}

/* --json: {"passed","failed_step","total_ms","sandbox_id"?,"report"?,"steps":[...]}. */
static void demo_print_json(demo *d, int rc)
{
	json_t *o = json_pack("{s:b,s:s?,s:I,s:o}", "passed", rc == 0, "failed_step", d->failed,
	                      "total_ms", (json_int_t)(now_ms() - d->t0), "steps", d->steps);

	d->steps = NULL; /* stolen by "o" */
	if (o && d->keep && d->id)
		json_object_set_new(o, "sandbox_id", json_string(d->id));
	if (o && d->report && cli_shape_bytes(o, "report", d->report, d->report_len) < 0) {
		json_decref(o);
		o = NULL;
	}
	cli_json_print(o);
}

static int demo_run(cli *c, const cli_args *a)
{
	demo d = {.c = c, .fake_fd = -1};
	int rc;

	for (size_t i = 0; i < a->nopts; i++)
		demo_opt(&d, a->opts[i].id, a->opts[i].value);
	if (!d.name) {
		snprintf(d.name_buf, sizeof(d.name_buf), "sbx-demo-%d", (int)getpid());
		d.name = d.name_buf;
	}
	d.local = d.local || !cli_have_credentials(c);
	d.t0 = now_ms();
	if (c->json && !(d.steps = json_array()))
		return cli_oom(c);
	if (d.local) {
		if (!c->json)
			printf(
			    "sandbox-e2b demo: local fake-e2b (no E2B credentials; set E2B_API_KEY "
			    "and E2B_TEMPLATE to use E2B)\n");
		fflush(stdout);
		demo_hold(&d, "local fake-e2b");
		rc = start_local(&d);
	} else if ((rc = cli_provider(c)) == 0 && !c->json) {
		printf("sandbox-e2b demo: E2B at %s, template %s\n", c->cfg->effective_api_url,
		       c->cfg->template_id);
		fflush(stdout);
	}
	if (rc == 0)
		rc = demo_session(&d);
	demo_cleanup(&d, rc);
	/* A Ctrl-C during the last step or the cleanup still fails the run. */
	if (rc == 0)
		rc = check_abort(&d, "finish");
	if (c->json)
		demo_print_json(&d, rc);
	else if (rc == 0)
		printf("demo passed: %d steps in %" PRIu64 " ms\n", d.step, now_ms() - d.t0);
	sbx_free(d.id);
	free(d.report);
	return rc;
}

const cli_command cli_cmd_demo = {
    .name = "demo",
    .args = "[--fake-e2b PATH] [--local] [--keep] [--name NAME]",
    .summary = "an agent-like session end to end, narrated with timings",
    .description =
        "Runs an agent-like session and narrates each step with its time in ms: create a\n"
        "sandbox, write a multi-file C program (wordfreq) and its Makefile into\n"
        "/workspace, build and run it with make and gcc, read and stat the report it\n"
        "wrote, start 'sleep 300' tagged 'bg' and kill it by tag, pause and resume the\n"
        "sandbox and check the files are still there, then destroy it.\n"
        "\n"
        "Without E2B credentials (--config, SANDBOX_E2B_CONFIG or E2B_API_KEY) it starts\n"
        "the local fake-e2b server on a free port and stops it afterwards. fake-e2b is\n"
        "looked up as --fake-e2b PATH, $FAKE_E2B, ../fake-e2b/fake-e2b next to this\n"
        "program (the build tree), this program's directory, then PATH.\n"
        "\n"
        "With --json, one object: {\"passed\",\"failed_step\",\"total_ms\",\"steps\":[...],\n"
        "\"report\"}.\n"
        "\n"
        "Exit 0 when every step passed; 1 naming the failed step; 130 on Ctrl-C.\n",
    .examples = "  sandbox-e2b demo\n"
                "  E2B_API_KEY=e2b_... E2B_TEMPLATE=capybara-sandbox sandbox-e2b demo\n",
    .options = demo_options,
    .stop_after = -1,
    .min_pos = 0,
    .max_pos = 0,
    .run = demo_run,
};
