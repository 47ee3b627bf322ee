/*
 * fake-e2b/registry/reaper.c: the reaper thread, on top of the table: a running sandbox past its
 * end time is paused (autoPause) or deleted (docs/protocol.md "Lifecycle"), and due
 * Connect-Timeout-Ms kill timers fire; and beside it the metrics sampler's thread (metrics.c). See
 * registry.h.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "registry_int.h"

void fk_registry_kill_at(fk_registry *g, const char *id, fk_proc *proc, int64_t deadline_ms)
{
	fk_kill_timer *t = calloc(1, sizeof(*t));
	if (!t)
		return;
	snprintf(t->id, sizeof(t->id), "%s", id);
	fk_proc_ref(proc);
	t->proc = proc;
	t->deadline_ms = deadline_ms;
	pthread_mutex_lock(&g->lock);
	t->next = g->timers;
	g->timers = t;
	pthread_mutex_unlock(&g->lock);
}

/* Fire the due kill timers (all of them when `all`, without killing: shutdown). */
static void run_timers(fk_registry *g, int all)
{
	fk_kill_timer *due = NULL;
	int64_t now = fk_mono_ms();
	pthread_mutex_lock(&g->lock);
	for (fk_kill_timer **pp = &g->timers; *pp;) {
		fk_kill_timer *t = *pp;
		if (all || t->deadline_ms <= now || fk_proc_ended(t->proc, NULL)) {
			*pp = t->next;
			t->next = due;
			due = t;
		} else {
			pp = &t->next;
		}
	}
	pthread_mutex_unlock(&g->lock);
	while (due) {
		fk_kill_timer *n = due->next;
		if (!all && !fk_proc_ended(due->proc, NULL))
			fk_proc_signal(g->rt, due->id, fk_proc_pid(due->proc), SIGKILL, NULL);
		fk_proc_unref(due->proc);
		free(due);
		due = n;
	}
}

/* Running sandboxes whose box's PID 1 died (killed from the host, or by the kernel): E2B forgets
 * a sandbox whose VM is gone; its resources are released. At most 64 a round. */
static void reap_dead(fk_registry *g)
{
	fk_sandbox *run[64];
	size_t n = 0;
	pthread_mutex_lock(&g->lock);
	for (fk_sandbox *sb = g->list; sb && n < 64; sb = sb->next) {
		if (!sb->deleted && sb->state == FK_SB_RUNNING) {
			sb->refs++;
			run[n++] = sb;
		}
	}
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < n; i++) {
		if (fk_box_init_gone(g->rt, run[i]->id))
			fk_registry_delete(g, run[i], FK_DEL_IF_DEAD);
		fk_sandbox_release(g, run[i]);
	}
}

static void reap_once(fk_registry *g)
{
	fk_sandbox *due[64];
	size_t n = 0;
	int64_t now = fk_now_ns();
	reap_dead(g);
	pthread_mutex_lock(&g->lock);
	for (fk_sandbox *sb = g->list; sb && n < 64; sb = sb->next) {
		if (!sb->deleted && sb->state == FK_SB_RUNNING && sb->end_ns <= now) {
			sb->refs++;
			due[n++] = sb;
		}
	}
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < n; i++) {
		if (due[i]->auto_pause)
			fk_registry_pause(g, due[i], !due[i]->auto_pause_memory, 1, NULL);
		else
			fk_registry_delete(g, due[i], 1);
		fk_sandbox_release(g, due[i]);
	}
}

struct fk_reaper {
	fk_registry *g;
	pthread_t thread;
	pthread_t sampler; /* the metrics sampler: a disk walk never delays an expiry */
	int has_sampler;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
};

/* Calls tick(g) every 200 ms until the reaper stops; the wait is the reaper's condition, so
 * fk_reaper_stop wakes every loop at once. */
static void every_200ms(fk_reaper *r, void (*tick)(fk_registry *))
{
	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
		if (r->stopping)
			break;
		pthread_mutex_unlock(&r->lock);
		tick(r->g);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
}

static void reap_tick(fk_registry *g)
{
	reap_once(g);
	run_timers(g, 0);
}

static void *reaper_main(void *arg)
{
	every_200ms(arg, reap_tick);
	return NULL;
}

/* Every 200 ms: the sandboxes whose metrics sample is due (metrics.c). */
static void *sampler_main(void *arg)
{
	every_200ms(arg, fk_registry_sample_due);
	return NULL;
}

fk_reaper *fk_reaper_start(fk_registry *g)
{
	fk_reaper *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->g = g;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	if (pthread_create(&r->thread, NULL, reaper_main, r) != 0) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	/* without it metrics keep only each sandbox's first sample; expiry still works */
	r->has_sampler = pthread_create(&r->sampler, NULL, sampler_main, r) == 0;
	return r;
}

void fk_reaper_stop(fk_reaper *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	if (r->has_sampler)
		pthread_join(r->sampler, NULL);
	run_timers(r->g, 1);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
