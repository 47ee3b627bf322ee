/*
 * cli/demo/narrate.c: the demo's narration (demo.h): one line per step with its time in ms, or
 * with --json one entry of the steps array; the failed step named on stderr with a hint; the
 * test hook that holds the demo at a step boundary.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"

uint64_t demo_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void demo_hold(demo *d, const char *name)
{
	const char *after = getenv("SANDBOX_E2B_DEMO_HOLD_AFTER");
	const char *gate = getenv("SANDBOX_E2B_DEMO_GATE");
	struct pollfd pfd = {.fd = sbx_signal_fd(d->c->sig), .events = POLLIN};

	if (!after || !gate || strcmp(after, name) != 0)
		return;
	while (!sbx_signal_aborted(d->c->sig) && access(gate, F_OK) != 0)
		poll(&pfd, pfd.fd >= 0 ? 1 : 0, 20);
}

void demo_step_begin(demo *d)
{
	d->step++;
	d->t_step = demo_now_ms();
}

void demo_step_ok(demo *d, const char *name, const char *fmt, ...)
{
	uint64_t ms = demo_now_ms() - d->t_step;
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

int demo_step_fail(demo *d, const char *name, int code, const sbx_error *err, const char *fmt, ...)
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
		              "ms", (json_int_t)(demo_now_ms() - d->t_step), "error", msg, "code",
		              code < 0 ? sbx_error_code_name(code) : "demo"));
	else
		printf("[%2d] %-20s %6" PRIu64 " ms  %s\n", d->step, name,
		       demo_now_ms() - d->t_step, code == SBX_EABORTED ? "INTERRUPTED" : "FAILED");
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

int demo_check_abort(demo *d, const char *next)
{
	if (!sbx_signal_aborted(d->c->sig))
		return 0;
	demo_step_begin(d);
	return demo_step_fail(d, next, SBX_EABORTED, NULL, "interrupted");
}

void demo_print_indented(const demo *d, const unsigned char *p, size_t len)
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
