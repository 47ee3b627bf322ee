/*
 * tests/fake/support/box_run.c: run a command in a box and collect its output
 * (box_run.h).
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define BOX_RUN_GUARD_MS 120000

void box_append(char **buf, size_t *len, const void *d, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	assert_non_null(*buf);
	if (n)
		memcpy(*buf + *len, d, n);
	*len += n;
	(*buf)[*len] = 0;
}

void box_drain(fk_sub *s, box_result *r)
{
	int64_t deadline = fk_mono_ms() + BOX_RUN_GUARD_MS;

	for (;;) {
		fk_event ev;
		int rc = fk_sub_next(s, &ev, 1000);
		if (rc == FK_ETIMEOUT) {
			assert_true(fk_mono_ms() < deadline);
			continue;
		}
		assert_int_equal(rc, 0);
		if (ev.type == FK_EV_END) {
			r->status = ev.wait_status;
			fk_event_clear(&ev);
			return;
		}
		if (r->merge || ev.type == FK_EV_STDOUT)
			box_append(&r->out, &r->out_len, ev.data, ev.len);
		else
			box_append(&r->err, &r->err_len, ev.data, ev.len);
		fk_event_clear(&ev);
	}
}

int box_run_spec(fk_rt *rt, const char *box, const fk_proc_spec *spec, bool merge, box_result *r,
                 fk_err *err)
{
	fk_proc *p;
	fk_sub *s;

	memset(r, 0, sizeof(*r));
	r->merge = merge;
	int rc = fk_proc_start(rt, box, spec, &p, &s, err);
	if (rc < 0)
		return rc;
	r->pid = fk_proc_pid(p);
	box_drain(s, r);
	box_append(&r->out, &r->out_len, "", 0);
	if (!merge)
		box_append(&r->err, &r->err_len, "", 0);
	fk_sub_free(s);
	fk_proc_unref(p);
	return 0;
}

int box_bash(fk_rt *rt, const char *box, const char *user, bool merge, box_result *r,
             const char *fmt, ...)
{
	char *script;
	va_list ap;

	va_start(ap, fmt);
	assert_true(vasprintf(&script, fmt, ap) >= 0);
	va_end(ap);
	const char *args[] = {"-c", script};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = user};
	fk_err err = {0};
	int rc = box_run_spec(rt, box, &spec, merge, r, &err);
	if (rc < 0)
		fprintf(stderr, "start in %s failed: %s\n", box, err.message);
	free(script);
	return rc;
}

void box_result_clear(box_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}
