/*
 * fake-e2b/registry/metrics.c: samples of each running sandbox's use, as E2B's orchestrator
 * collects them every 5 s (CPU from the box's cgroup CPU time, memory without page cache, page
 * cache, the memory limit, the disk of its root; runtime.h fk_box_usage_read), kept per sandbox
 * in a ring of FK_METRICS_KEPT. See registry.h.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "registry_int.h"

int fk_registry_sample(fk_registry *g, fk_sandbox *sb)
{
	fk_box_usage u;
	fk_err err = {0};
	/* read outside the registry lock: files of the box's cgroups and a statvfs */
	if (fk_box_usage_read(g->rt, sb->id, &u, &err) < 0)
		return -1;
	/* OOM kills of processes whose end envd does not see (a command's children) */
	fk_sandbox_note_oom(g, sb, u.oom_kills);
	int64_t now = fk_now_ns();
	pthread_mutex_lock(&g->lock);
	if (!sb->metrics)
		sb->metrics = calloc(FK_METRICS_KEPT, sizeof(fk_metric));
	if (!sb->metrics) {
		pthread_mutex_unlock(&g->lock);
		return -1;
	}
	int64_t since = sb->cpu_seen_ns ? sb->cpu_seen_ns : sb->started_ns;
	/* a cold boot's new box counts from 0 again */
	uint64_t used = u.cpu_ns >= sb->cpu_ns_seen ? u.cpu_ns - sb->cpu_ns_seen : u.cpu_ns;
	double wall = (double)(now - since) * (u.cpu_count ? u.cpu_count : 1);
	double pct = wall > 0 ? 100.0 * (double)used / wall : 0;
	fk_metric m = {
	    .ts_ns = now,
	    .cpu_count = u.cpu_count,
	    .cpu_pct = pct > 100 ? 100 : pct,
	    .mem_used = u.mem_used,
	    .mem_total = u.mem_total,
	    .mem_cache = u.mem_cache,
	    .disk_used = u.disk_used,
	    .disk_total = u.disk_total,
	};
	sb->metrics[sb->metrics_next] = m;
	sb->metrics_next = (sb->metrics_next + 1) % FK_METRICS_KEPT;
	if (sb->n_metrics < FK_METRICS_KEPT)
		sb->n_metrics++;
	sb->cpu_ns_seen = u.cpu_ns;
	sb->cpu_seen_ns = now;
	sb->next_sample_ns = now + (int64_t)FK_METRICS_INTERVAL_S * FK_NS;
	pthread_mutex_unlock(&g->lock);
	return 0;
}

void fk_registry_sample_due(fk_registry *g)
{
	fk_sandbox *due[64];
	size_t n = 0;
	int64_t now = fk_now_ns();
	pthread_mutex_lock(&g->lock);
	for (fk_sandbox *sb = g->list; sb && n < 64; sb = sb->next) {
		if (!sb->deleted && sb->state == FK_SB_RUNNING && sb->next_sample_ns <= now) {
			sb->refs++;
			due[n++] = sb;
		}
	}
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < n; i++) {
		if (fk_registry_sample(g, due[i]) < 0) {
			pthread_mutex_lock(&g->lock); /* not readable now (mid-pause...): later */
			due[i]->next_sample_ns = now + (int64_t)FK_METRICS_INTERVAL_S * FK_NS;
			pthread_mutex_unlock(&g->lock);
		}
		fk_sandbox_release(g, due[i]);
	}
}

long fk_sandbox_metrics(fk_registry *g, fk_sandbox *sb, int64_t from_ns, int64_t to_ns,
                        fk_metric **out)
{
	pthread_mutex_lock(&g->lock);
	size_t n = sb->n_metrics;
	*out = calloc(n ? n : 1, sizeof(fk_metric));
	long k = 0;
	for (size_t i = 0; *out && i < n; i++) {
		/* oldest first: the ring's oldest slot is metrics_next once it is full */
		size_t slot = (sb->metrics_next + FK_METRICS_KEPT - n + i) % FK_METRICS_KEPT;
		const fk_metric *m = &sb->metrics[slot];
		if (m->ts_ns >= from_ns && m->ts_ns <= to_ns)
			(*out)[k++] = *m;
	}
	pthread_mutex_unlock(&g->lock);
	return *out ? k : -1;
}
