/*
 * sandbox/metrics.h: a sandbox's resource usage over a time range (E2B's
 * sbx.getMetrics({start, end}); docs/sandboxes.md "Metrics").
 *
 * Thread-safety: as every provider call. Common parameters as in sandbox/sandbox.h.
 */
#ifndef SANDBOX_METRICS_H
#define SANDBOX_METRICS_H

#include "common.h"
#include "error.h"
#include "sandbox.h"
#include "signal.h"

SBX_BEGIN_DECLS

/** One sample (E2B's SandboxMetric): the largest value of each field in its interval. */
typedef struct sbx_metric {
	int64_t timestamp_unix; /**< the interval's start, seconds since the epoch (UTC) */
	uint32_t cpu_count;     /**< cores */
	double cpu_used_pct;    /**< CPU used, percent of all cores (0..100) */
	uint64_t mem_used;      /**< memory used, bytes */
	uint64_t mem_total;     /**< memory of the sandbox, bytes */
	uint64_t mem_cache;     /**< page cache, bytes (0 when E2B does not say) */
	uint64_t disk_used;     /**< disk used, bytes */
	uint64_t disk_total;    /**< disk of the sandbox, bytes */
} sbx_metric;

/** Samples, oldest first; free with sbx_metrics_free(). */
typedef struct sbx_metrics {
	sbx_metric *items; /**< count samples; NULL when count is 0 */
	size_t count;
} sbx_metrics;

/** At most this many samples are taken from one answer (more is SBX_ETOOLARGE). */
#define SBX_METRICS_MAX 100000

/**
 * The samples of sandbox `id` from `start_unix` to `end_unix` (seconds since
 * the epoch; 0 = the sandbox's start, and now). E2B keeps a sample every 5 s
 * while the sandbox runs and groups them by the range (5 s under an hour,
 * 30 s under 6 h, ...). Reads E2B's control plane only: a paused sandbox
 * stays paused.
 * @param[out] out  caller frees with sbx_metrics_free(); an empty range gives count 0.
 * @return 0, SBX_EINVALID (NULL, a negative time, start after end, a year
 *         past 9999; before any request), SBX_EGONE (no such sandbox),
 *         SBX_EABORTED, SBX_ETIMEOUT, SBX_EHTTP, SBX_ENETWORK, SBX_EPROTOCOL
 *         (not an array of samples), SBX_ETOOLARGE, SBX_ENOMEM.
 */
SBX_EXTERN int sbx_sandbox_metrics(sbx_metrics **out, sbx_provider *p, const char *id,
                                   int64_t start_unix, int64_t end_unix, sbx_signal *sig,
                                   sbx_error *err);

/** Free samples. Accepts NULL. */
SBX_EXTERN void sbx_metrics_free(sbx_metrics *m);

SBX_END_DECLS

#endif
