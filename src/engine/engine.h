/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h: runs the scheduler for real. The engine owns the scheduler core
 * (src/sched) and the backends (src/backend), feeds the core from the store
 * (fleet, tenants, quotas, workloads) and from backend events, and carries
 * out its decisions: each pass's decisions are written to the store in one
 * transaction first, then acted on (launch, stop). On start it rebuilds its
 * state from the store, so a restart loses, duplicates and double-counts
 * nothing: queued work is queued again, running work is re-adopted by its
 * backend, and work that ended while the daemon was down is closed with its
 * real end time.
 *
 * One engine thread does all scheduling and backend work; API threads only
 * hand it work (engine_submitted, engine_cancel) and read from it.
 */
#ifndef GPUAAS_ENGINE_H
#define GPUAAS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/err.h"
#include "model/model.h"
#include "store/store.h"
#include "whatif/whatif.h"

struct engine;
struct collector;
struct sched_policy;

struct engine_options {
    int64_t reserve_after_ms;          /* head-of-line reservation delay */
    int64_t default_grace_ms;          /* preemption grace when a workload gives none */
    int64_t tick_ms;                   /* longest sleep between passes */
    struct collector *collector;       /* GPU telemetry for the idle policies; NULL: none */
    int64_t idle_notify_ms;            /* an "idle" event once work is idle this long; 0: off */
    int64_t idle_stop_p2_ms;           /* opportunistic work idle this long is stopped; 0: off */
    const struct sched_policy *policy; /* placement; NULL: the built-in best-fit. Not owned */
    /*
     * How projects share borrowed capacity (sched.h: enum sched_fair_share,
     * 0 the current share, 1 decayed past usage) and the half-life of the
     * latter. Past usage is rebuilt from the usage ledger on start.
     */
    int fair_share;
    int64_t fair_share_half_life_ms;
    /* What each cluster's backend is made with (backend_open); pointers in it are not owned. */
    struct backend_settings backends;
};

void engine_options_init(struct engine_options *opt);

/* Loads everything from the store and starts the engine thread. */
int engine_start(struct store *store, const struct engine_options *opt, struct engine **ret,
                 struct error_info *ei);
/* Stops the thread and frees; work keeps running in its backends. NULL is fine. */
void engine_stop(struct engine *e);

/* A workload was committed in state queued: schedule it. */
void engine_submitted(struct engine *e, int64_t workload_id);
/*
 * Cancels a workload: queued work is cancelled at once (state written before
 * this returns), running work is stopped (signal, grace, kill) and becomes
 * cancelled when it has ended. ERR_CONFLICT when it has already ended.
 */
int engine_cancel(struct engine *e, int64_t workload_id, struct error_info *ei);
/*
 * A committed change to something the scheduler works with. Projects,
 * quotas, organization quotas and flavors are applied as they are (row is
 * the object after the change; deleted: it is gone); anything else (the
 * fleet, pools) makes the engine rebuild itself from the store.
 */
void engine_config_changed(struct engine *e, const struct resource_def *def, const struct row *row,
                           bool deleted);

/* What the API shows of a queued workload: position in its project queue and why it waits. */
struct engine_pending {
    bool queued;
    int position;
    char reason[512];
    /*
     * Waiting for room (never: no node it may use can ever run it): pools its
     * project may not borrow that have the room (lending is explicit).
     */
    bool never;
    int64_t closed_pools[4];
    size_t n_closed_pools;
    /*
     * Opportunistic work the decayed fair share put behind another project
     * (0: none): that project, and the reason without its name for callers
     * who may not see it.
     */
    int64_t ahead_project_id;
    char reason_anon[512];
};
int engine_pending(struct engine *e, int64_t workload_id, struct engine_pending *ret);

/* Capacity of a GPU class against the guarantees promised on it (milli-GPU). */
struct engine_capacity {
    int64_t class_id;
    int64_t capacity, free, guaranteed;
};
/*
 * One entry per GPU class the engine knows, every one: *ret (in a, freed with it) holds the
 * returned count.
 */
size_t engine_capacity(struct engine *e, struct arena *a, struct engine_capacity **ret);

/* A project's quota in a class as the scheduler applies it now (milli-GPU). */
struct engine_quota_usage {
    int64_t guaranteed;           /* effective: explicit, or what its pools own */
    int64_t owned, opportunistic; /* held as P1, as P2 */
    /*
     * With the decayed fair share (decayed true): the project's P2 usage of
     * the class decayed to now (milli-GPU hours), and that as the milli-GPU
     * it held on average over about the last half-life, which its key adds
     * to what it borrows now.
     */
    bool decayed;
    int64_t decayed_milli_hours, decayed_average_milli;
};
/* ERR_NOT_FOUND when the scheduler knows no such project or class. */
int engine_quota_usage(struct engine *e, int64_t project_id, int64_t class_id,
                       struct engine_quota_usage *ret);

/*
 * The engine's part of /metrics in Prometheus text format, appended to b:
 * workloads by state, outcomes, queue wait and reclaim latency histograms,
 * preemptions by rule, and quota gauges per project and class.
 */
struct buf;
int engine_metrics_write(struct engine *e, struct buf *b);

/*
 * Holds queued work (it leaves the scheduler's queue, keeping its place for
 * when it is released) or releases it; who is named in its event. Already
 * so: nothing happens. ERR_CONFLICT for work that is not queued, or that
 * waits in its backend's own queue.
 */
int engine_hold(struct engine *e, int64_t workload_id, bool hold, const char *who,
                struct error_info *ei);

/* Where a workload's log file would be (backend_log_path); false when logs are not kept. */
bool engine_log_path(const struct engine *e, int64_t workload_id, char *out, size_t size);
/*
 * A reader of running work's output where its cluster keeps it
 * (ops->log_reader of the backends that have one); the caller reads it
 * without the engine's lock and frees it with (*ret)->free. ERR_NOT_FOUND
 * when no backend follows that work with such output.
 */
int engine_log_reader(struct engine *e, int64_t workload_id, struct backend_log **ret,
                      struct error_info *ei);

/* Runs passes until the engine is idle (tests, benchmarks). */
void engine_sync(struct engine *e);

/* ---- what-if (whatif.c) ---- */

/* Interned "key=value" labels: id i + 1 is v[i] (sched_node_spec.labels, selectors). */
struct label_table {
    char **v;
    size_t n, cap;
};

struct engine_name {
    int64_t id;
    const char *name; /* in the reader's arena */
};

/*
 * The world a what-if replays (src/whatif), read from the store: the fleet,
 * tenants, quotas and prices as they are now, and the workloads that arrived
 * in [from_ms, to_ms), each with its first start and its last run's real run
 * time (runs still open count to now); work that never started with the run
 * time it asked for (duration_s, max_runtime_s, else the period's median
 * run) and, when it was cancelled while queued, that time. Names for reports.
 */
struct engine_world {
    struct whatif_world w;
    struct engine_name *classes, *projects, *pools;
    size_t n_classes, n_projects, n_pools;
    int64_t not_replayed;        /* arrived in the period, but their flavor is gone */
    int64_t never_started;       /* replayed, though they never started in the record */
    int64_t still_running;       /* replayed with their run time so far */
    struct flavor_info *flavors; /* the reader's */
    const char **flavor_names;
    size_t n_flavors;
    struct label_table labels;
};

/* The scheduler settings a replay starts from: the engine's (defaults when e is NULL). */
void engine_world_settings(const struct engine *e, struct sched_config *ret_cfg,
                           const char **ret_policy);
/*
 * Reads the world into ret (arrays in a; release with engine_world_release).
 * as_recorded: quotas, caps, pools, nodes' states and projects' weights as they were through
 * the period, from the audit trail (the store's own work is replayed);
 * else as they are now (a trace replays work that never ran here).
 * ERR_TOO_LARGE with ei when more than max_workloads arrived in the period;
 * store errors as they come. Reads only.
 */
int engine_world_read(const struct engine *e, struct store_conn *c, int64_t from_ms, int64_t to_ms,
                      bool as_recorded, size_t max_workloads, int64_t now_ms, struct arena *a,
                      struct engine_world *ret, struct error_info *ei);
/*
 * Replaces the world's workloads with those of a trace (CSV, docs/api.md):
 * a header naming submitted_at, project, flavor, run_s and optionally
 * priority_class, replicas, priority, started_at; projects and flavors by
 * name or id. ERR_INVALID naming the line, ERR_TOO_LARGE past max rows.
 */
int engine_world_trace(struct engine_world *ew, const char *csv, size_t len, size_t max,
                       struct arena *a, struct error_info *ei);
void engine_world_release(struct engine_world *w);

#endif
