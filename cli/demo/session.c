/*
 * cli/demo/session.c: the demo's session, a step a function (demo.h): create a sandbox, write
 * the wordfreq example into it, build and run it, read and stat its report, kill a tagged
 * background command, pause and resume, check the files, destroy and check it is gone. The
 * steps are a table in order (demo_steps[]); each narrates its own line.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"

static int demo_create(demo *d)
{
	sbx_limits lim = {1, 2048, 10240, SBX_EGRESS_NONE, NULL, 0};
	sbx_error err = {0};
	int rc;

	demo_step_begin(d);
	if ((rc = sbx_sandbox_create(&d->id, d->c->prov, d->name, &lim, d->c->sig, &err)) < 0)
		return demo_step_fail(d, "create sandbox", rc, &err, "create '%s'", d->name);
	demo_step_ok(d, "create sandbox", "id %s (name %s)", d->id, d->name);
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

	demo_step_begin(d);
	if (!jobs || !threads || !started) {
		rc = demo_step_fail(d, "write program", SBX_ENOMEM, NULL, "out of memory");
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
			rc = demo_step_fail(d, "write program", jobs[i].rc, &jobs[i].err,
			                    "write %s", jobs[i].path);
	if (rc == 0)
		demo_step_ok(d, "write program", "%zu files in parallel, %zu bytes into %s",
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
	demo_step_begin(d);
	if ((rc = sbx_sandbox_exec(&r, d->c->prov, d->id, cmd, &o, d->c->sig, &err)) < 0)
		return demo_step_fail(d, name, rc, &err, "exec '%s'", cmd);
	if (!r.has_exit_code || r.exit_code != 0) {
		demo_print_indented(d, r.stdout_data, r.stdout_len);
		demo_print_indented(d, r.stderr_data, r.stderr_len);
		if (r.has_exit_code)
			rc = demo_step_fail(
			    d, name, 0, NULL, "'%s' exited %d%s", cmd, r.exit_code,
			    strstr(cmd, "make") ? " (does the template have make and gcc?)" : "");
		else
			rc = demo_step_fail(d, name, r.aborted ? SBX_EABORTED : 0, NULL, "'%s' %s",
			                    cmd,
			                    r.timed_out ? "timed out"
			                    : r.aborted ? "was interrupted"
			                                : "was killed");
		sbx_exec_result_free(&r);
		return rc;
	}
	demo_step_ok(d, name, "$ %s -> exit 0", cmd);
	if (show) {
		demo_print_indented(d, r.stdout_data, r.stdout_len);
		demo_print_indented(d, r.stderr_data, r.stderr_len);
	}
	sbx_exec_result_free(&r);
	return 0;
}

static int demo_read(demo *d, const char *name, bool compare)
{
	sbx_file *f = NULL;
	sbx_error err = {0};
	int rc;

	demo_step_begin(d);
	if ((rc = sbx_sandbox_read_file(&f, d->c->prov, d->id, DEMO_REPORT, 1 << 20, d->c->sig,
	                                &err)) < 0)
		return demo_step_fail(d, name, rc, &err, "read %s", DEMO_REPORT);
	if (!f)
		return demo_step_fail(d, name, 0, NULL, "%s is missing", DEMO_REPORT);
	if (compare) {
		bool same = f->len == d->report_len && memcmp(f->data, d->report, f->len) == 0;
		sbx_file_free(f);
		if (!same)
			return demo_step_fail(d, name, 0, NULL, "%s changed across pause/resume",
			                      DEMO_REPORT);
		demo_step_ok(d, name, "%s still there, %zu bytes, unchanged", DEMO_REPORT,
		             d->report_len);
		return 0;
	}
	if (!(d->report = malloc(f->len + 1))) {
		sbx_file_free(f);
		return demo_step_fail(d, name, SBX_ENOMEM, NULL, "out of memory");
	}
	memcpy(d->report, f->data, f->len);
	d->report_len = f->len;
	demo_step_ok(d, name, "%s, %zu bytes:", DEMO_REPORT, f->len);
	demo_print_indented(d, f->data, f->len);
	sbx_file_free(f);
	return 0;
}

static int demo_stat(demo *d)
{
	sbx_stat st;
	sbx_error err = {0};
	int rc;

	demo_step_begin(d);
	if ((rc = sbx_sandbox_stat(&st, d->c->prov, d->id, DEMO_REPORT, d->c->sig, &err)) < 0)
		return demo_step_fail(d, "stat report", rc, &err, "stat %s", DEMO_REPORT);
	if (!st.exists || st.is_dir || st.size != d->report_len)
		return demo_step_fail(
		    d, "stat report", 0, NULL,
		    "expected a file of %zu bytes, got exists=%d is_dir=%d size=%" PRIu64,
		    d->report_len, st.exists, st.is_dir, st.size);
	demo_step_ok(d, "stat report", "file, %" PRIu64 " bytes", st.size);
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
	j->t_end = demo_now_ms();
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
	uint64_t deadline = demo_now_ms() + DEMO_BG_WAIT_MS;
	int rc;

	o.timeout_ms = 10000;
	while (demo_now_ms() < deadline && !bg_done(j)) {
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
	uint64_t deadline = demo_now_ms() + DEMO_BG_RETURN_MS;
	bool in_time = true;

	while (!bg_done(j)) {
		if (sbx_signal_aborted(d->c->sig)) {
			sbx_signal_abort(j->sig);
		} else if (demo_now_ms() >= deadline) {
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

	demo_step_begin(d);
	if (sbx_signal_new(&j.sig) < 0)
		return demo_step_fail(d, "start bg command", SBX_ENOMEM, NULL, "no abort signal");
	if (pthread_create(&t, NULL, bg_main, &j) != 0) {
		sbx_signal_free(j.sig);
		return demo_step_fail(d, "start bg command", SBX_EINTERNAL, NULL, "pthread_create");
	}
	rc = wait_bg_running(d, &j, &err);
	if (rc == 0)
		demo_step_ok(d, "start bg command", "$ sleep 300 (tag bg) is running, in a thread");
	else
		rc = demo_step_fail(d, "start bg command", rc < 0 ? rc : 0, &err,
		                    bg_done(&j) ? "the bg exec returned early"
		                                : "sleep never showed up");
	if (rc != 0)
		sbx_signal_abort(j.sig); /* do not leave the bg command running */
	if (rc == 0) {
		demo_step_begin(d);
		t_kill = demo_now_ms();
		if ((rc = sbx_sandbox_kill_tagged(d->c->prov, d->id, tags, 1, d->c->sig, &err)) < 0)
			rc = demo_step_fail(d, "kill-tagged bg", rc, &err, "kill_tagged");
	}
	in_time = bg_join(d, t, &j);
	if (rc == 0 && (!in_time || j.rc < 0 || j.r.timed_out))
		rc = demo_step_fail(d, "kill-tagged bg", j.rc < 0 ? j.rc : 0, &j.err,
		                    "the bg exec did not end by the kill (rc %d, timed_out %d)",
		                    j.rc, j.r.timed_out);
	else if (rc == 0 && j.r.has_exit_code)
		demo_step_ok(d, "kill-tagged bg",
		             "bg exec returned %" PRIu64 " ms after the kill: exit %d",
		             j.t_end - t_kill, j.r.exit_code);
	else if (rc == 0)
		demo_step_ok(d, "kill-tagged bg",
		             "bg exec returned %" PRIu64 " ms after the kill: killed",
		             j.t_end - t_kill);
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

	demo_step_begin(d);
	if ((rc = sbx_sandbox_suspend(d->c->prov, d->id, d->c->sig, &err)) < 0)
		return demo_step_fail(d, "suspend", rc, &err, "pause %s", d->id);
	demo_step_ok(d, "suspend", "paused (files and memory kept)");
	demo_step_begin(d);
	if ((rc = sbx_sandbox_resume(&st, d->c->prov, d->id, d->c->sig, &err)) < 0)
		return demo_step_fail(d, "resume", rc, &err, "resume %s", d->id);
	if (st != SBX_RESUMED)
		return demo_step_fail(d, "resume", 0, NULL, "the sandbox is gone after pause");
	demo_step_ok(d, "resume", "resumed");
	return 0;
}

static int demo_destroy(demo *d)
{
	sbx_error err = {0};
	int rc;

	demo_step_begin(d);
	/* Not d->c->sig: cleanup must still happen after Ctrl-C. */
	if ((rc = sbx_sandbox_destroy(d->c->prov, d->id, NULL, &err)) < 0)
		return demo_step_fail(d, "destroy", rc, &err, "destroy %s", d->id);
	demo_step_ok(d, "destroy", "deleted %s", d->id);
	sbx_free(d->id);
	d->id = NULL;
	return 0;
}

static int demo_check_gone(demo *d, const char *id)
{
	sbx_resume_status st;
	sbx_error err = {0};
	int rc;

	demo_step_begin(d);
	if ((rc = sbx_sandbox_resume(&st, d->c->prov, id, d->c->sig, &err)) < 0)
		return demo_step_fail(d, "check gone", rc, &err, "resume after destroy");
	if (st != SBX_RESUME_GONE)
		return demo_step_fail(d, "check gone", 0, NULL,
		                      "the sandbox still exists after destroy");
	demo_step_ok(d, "check gone", "resume answers gone");
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

int demo_session(demo *d)
{
	char id[160];
	int rc;

	for (size_t i = 0; i < sizeof(demo_steps) / sizeof(demo_steps[0]); i++)
		if ((rc = demo_check_abort(d, demo_steps[i].name)) || (rc = demo_steps[i].run(d)))
			return rc;
	if (d->keep) {
		printf("kept sandbox %s (destroy it with 'sandbox-e2b destroy %s')\n", d->id,
		       d->id);
		return 0;
	}
	snprintf(id, sizeof(id), "%s", d->id);
	if ((rc = demo_check_abort(d, "destroy")) || (rc = demo_destroy(d)) != 0)
		return rc;
	if ((rc = demo_check_abort(d, "check gone")))
		return rc;
	return demo_check_gone(d, id);
}
