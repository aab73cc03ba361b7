/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collector.h: the daemon's GPU telemetry. One thread runs the configured
 * sources on their schedules (NVML, nvidia-smi, dcgm-exporter endpoints;
 * src/inventory has the parsers and the schedule/backoff rules), feeds every
 * reading into the bounded telemetry store, and answers what a GPU is doing:
 * its state over the classification window (busy, idle-allocated, free,
 * down) and its history. A failing source turns stale and keeps what it
 * last reported; a GPU that stops being reported turns down, never deleted.
 */
#ifndef GPUAAS_COLLECTOR_H
#define GPUAAS_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "inventory/inventory.h"

struct collector_options {
    const char *nvml;       /* NVML library path, "auto" for libnvidia-ml.so.1; NULL/"": off */
    const char *nvidia_smi; /* nvidia-smi program (on PATH when no '/'); NULL/"": off */
    const char *dcgm_urls;  /* comma-separated dcgm-exporter URLs; NULL/"": none */
    int64_t interval_ms;    /* between runs of a source; default 10 s */
    int64_t timeout_ms;     /* for one run; default 5 s */
    int64_t window_ms;      /* classification window; default 30 min (inv_class_config) */
};

void collector_options_init(struct collector_options *opt);

struct collector;

/*
 * Starts the thread when at least one source is configured; *ret is NULL
 * (and 0 returned) when none is. ERR_INVALID with ei for a bad option.
 */
int collector_start(const struct collector_options *opt, struct collector **ret,
                    struct error_info *ei);
void collector_stop(struct collector *c); /* NULL is fine */

/* What the collectors say of one GPU now; false when no source has reported it. */
struct collector_gpu {
    int state;            /* enum inv_state */
    const char *reason;   /* static */
    double activity;      /* average over the window, 0..1; NaN when unknown */
    double mem_used_mib;  /* last value; NaN when unknown */
    int64_t last_seen_ms; /* 0: never */
};
bool collector_gpu(struct collector *c, const char *uuid, bool allocated, int64_t now_ms,
                   struct collector_gpu *ret);

/*
 * The GPUs allocations hold now (their UUIDs; copied). Samples of these GPUs
 * count as allocated time, so history can say busy / allocated (efficiency).
 */
void collector_set_allocated(struct collector *c, const char *const *uuids, size_t n);

/* Health of each source, for the API. */
struct collector_source {
    char name[160]; /* "nvml", "nvidia-smi", "dcgm http://..." */
    bool stale;
    int64_t last_ok_ms; /* 0: never */
    int failures;       /* in a row */
    char error[256];    /* the last failure, "" when healthy */
    size_t gpus;        /* readings in its last good run */
};
size_t collector_sources(struct collector *c, struct collector_source *out, size_t max);

/*
 * This machine's GPUs as the NVML and nvidia-smi sources last saw them, for
 * the local backend's discovery: the whole GPUs and the MIG instances with a
 * UUID of their own (mig_uuid) of the
 * last good run of the first such source that reported any, copied into out
 * (reset first; the caller owns it). *ret_runs counts the good runs of those
 * sources so far: 0 means nothing is known yet, and a caller that saw the
 * same count has seen these readings. dcgm-exporter sources are left out:
 * they may describe other hosts. Returns how many readings out holds; 0
 * (and *ret_runs 0) when c is NULL.
 */
size_t collector_local_gpus(struct collector *c, struct inv_readings *out, uint64_t *ret_runs);

/*
 * The GPUs dcgm-exporter sources said a pod holds (readings with a pod
 * label: pod, namespace, index, host) in their last good runs, for a
 * backend that follows which GPU a pod got. *ret_runs counts the good runs
 * of those sources so far; when it equals seen_runs nothing is new: 0 is
 * returned and out is untouched. Else out is reset and filled (the
 * caller's), and its size returned. 0 when c is NULL.
 */
size_t collector_pod_gpus(struct collector *c, uint64_t seen_runs, struct inv_readings *out,
                          uint64_t *ret_runs);
/* History of GPUs (uuids) over [from, to): inv_tstore_query under the collector's lock. */
int collector_history(struct collector *c, const char *const *uuids, size_t n, int64_t from_ms,
                      int64_t to_ms, struct inv_series_query *ret);

#endif
