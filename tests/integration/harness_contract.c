/*
 * tests/integration/harness_contract.c: the harness's (harness.h) helpers over the contract:
 * limits, create, exec, group setups with a sandbox, and aborting calls while they wait.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "harness_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

/* ---- contract helpers ---- */

sbx_limits h_limits(sbx_egress egress)
{
	sbx_limits l = {1, 2048, 10240, egress, NULL, 0};
	return l;
}

char *h_create(h_ctx *h, sbx_provider *p, const char *name)
{
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	sbx_error err = {0};
	char *id = NULL;
	int rc = sbx_sandbox_create(&id, p ? p : h->p, name, &l, NULL, &err);
	h_note_err(h, &err);
	if (rc != 0)
		fail_msg("create %s: %s (%s)", name, sbx_error_code_name(rc), err.message);
	assert_non_null(id);
	h_learn_token(h, id);
	return id;
}

int h_exec_opts(h_ctx *h, sbx_exec_result *out, const char *id, const char *cmd,
                const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err)
{
	sbx_exec_options def = SBX_EXEC_OPTIONS_INIT;
	int rc = sbx_sandbox_exec(out, h->p, id, cmd, opts ? opts : &def, sig, err);
	h_note_err(h, err);
	return rc;
}

void h_exec(h_ctx *h, sbx_exec_result *out, const char *id, const char *cmd)
{
	sbx_error err = {0};
	int rc = h_exec_opts(h, out, id, cmd, NULL, NULL, &err);
	if (rc != 0)
		fail_msg("exec %s: %s (%s)", cmd, sbx_error_code_name(rc), err.message);
}

char *h_sh(h_ctx *h, const char *id, const char *cmd)
{
	sbx_exec_result r;
	h_exec(h, &r, id, cmd);
	if (!r.has_exit_code || r.exit_code != 0)
		fail_msg("exec %s: exit %d (has %d) stderr %.*s", cmd, r.exit_code, r.has_exit_code,
		         (int)r.stderr_len, (const char *)r.stderr_data);
	char *s = strndup((const char *)r.stdout_data, r.stdout_len);
	sbx_exec_result_free(&r);
	return s;
}

int h_group_setup_sandbox(void **state, const char *prefix, char **id_out)
{
	char name[64];
	sbx_error err = {0};
	h_ctx *h;

	if (h_group_setup(state) < 0)
		return -1;
	h = *state;
	h_name(name, sizeof(name), prefix);
	sbx_limits l = h_limits(SBX_EGRESS_NONE);
	if (sbx_sandbox_create(id_out, h->p, name, &l, NULL, &err) < 0) {
		fprintf(stderr, "create failed: %s\n", err.message);
		return -1;
	}
	h_learn_token(h, *id_out);
	return 0;
}

int h_group_teardown_sandbox(void **state, char **id)
{
	h_ctx *h = *state;

	if (h && *id)
		sbx_sandbox_destroy(h->p, *id, NULL, NULL);
	sbx_free(*id);
	*id = NULL;
	return h_group_teardown(state);
}

void *h_abort_later(void *h_aborter_arg)
{
	h_aborter *a = h_aborter_arg;
	usleep(a->delay_ms * 1000u);
	a->at = h_now_ms();
	sbx_signal_abort(a->sig);
	return NULL;
}

typedef struct resume_call {
	h_ctx *h;
	const char *id;
	sbx_signal *sig;
	int rc;
	uint64_t done; /* when resume returned */
	sbx_error err;
} resume_call;

static void *resume_call_run(void *arg)
{
	resume_call *c = arg;
	sbx_resume_status rs;
	c->rc = sbx_sandbox_resume(&rs, c->h->p, c->id, c->sig, &c->err);
	c->done = h_now_ms();
	return NULL;
}

void h_assert_resume_aborts_promptly(h_ctx *h, const char *id, void (*arm)(h_ctx *),
                                     void (*wait_in)(h_ctx *), const char *what)
{
	uint64_t best = UINT64_MAX, plain = UINT64_MAX;
	int rcs[3];

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = h_now_ms();
		free(h_sh(h, id, "true"));
		uint64_t took = h_now_ms() - t0;
		plain = took < plain ? took : plain;
		h_reset(h);
		arm(h);
		resume_call c = {h, id, NULL, 0, 0, {0}};
		assert_int_equal(sbx_signal_new(&c.sig), 0);
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, resume_call_run, &c), 0);
		wait_in(h);
		uint64_t at = h_now_ms();
		sbx_signal_abort(c.sig);
		pthread_join(t, NULL);
		sbx_signal_free(c.sig);
		h_note_err(h, &c.err);
		h_faults_clear(h);
		rcs[i] = c.rc;
		best = c.done - at < best ? c.done - at : best;
		print_message("%s returned %llu ms after the abort (plain exec %llu ms)\n", what,
		              (unsigned long long)(c.done - at), (unsigned long long)took);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(rcs[i], SBX_EABORTED);
	uint64_t bound = 3 * plain > 250 ? 3 * plain : 250;
	print_message("best abort %llu ms, bound %llu ms\n", (unsigned long long)best,
	              (unsigned long long)bound);
	assert_true(best < bound);
}
