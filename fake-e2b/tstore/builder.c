/*
 * fake-e2b/tstore/builder.c: runs one template build (builds.h) in a sandbox of the runtime
 * with no network, as E2B's template manager runs its phases: base (FROM a template), the steps
 * (RUN, COPY, ENV, WORKDIR, USER) with a context of user, working directory and environment that
 * USER, WORKDIR and ENV change, then finalize (the start command, the ready command until it
 * succeeds), then the sandbox's files are committed as the build's layer. Commands run as envd
 * runs them for E2B's builder: `/bin/bash -l -c <command>`, their output lines go to the build
 * log. This file holds the phases and the build's end; the steps are builder_steps.c, the
 * commands builder_run.c (which also starts a built template's start command in a new sandbox,
 * fk_tboot_start).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder_int.h"
#include "clock.h"

#define DEFAULT_READY_CMD "sleep 20" /* E2B's when a start command has no ready command */

/* The base phase: the template or image the build starts FROM, resolved into *base (*ref the
 * template it names); its user, working directory and environment become the build's. */
static int build_base(fk_bwork *w, fk_tboot *base, char **ref)
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
				fk__bctx_setenv(&w->c, k, eq + 1);
			free(k);
		}
	}
	return 0;
}

/* The build sandbox ("build-" and the build id without dashes), made from *base with no
 * network; *made once it exists (the caller destroys it on failure). */
static int build_box(fk_bwork *w, const fk_tboot *base, bool *made)
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
static int build_steps(fk_bwork *w)
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
		fk__bstep_log(w, step);
		if (fk__bstep_run(w, step) < 0) {
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
static int build_finalize(fk_bwork *w, fk_tboot *base, fk_tboot *done, bool *box_made)
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
	if (fk__bcmd_start_ready(s, b, s->rt, w->box, st_cmd, rd_cmd, &w->c, w->why,
	                         sizeof(w->why)) < 0)
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
	fk_bwork w = {.s = s, .b = b};
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
	fk__bctx_clear(&w.c);
	free(ref);
}
