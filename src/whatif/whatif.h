/* SPDX-License-Identifier: Apache-2.0 */
/*
 * whatif.h: what-if on real history (issue 17), a pure library like the
 * scheduler core it drives: no I/O, no clock, no globals. A world (the
 * fleet, tenants, quotas, pools and price list) and the recorded workloads
 * of a period (arrival, shape, project, priority class, real run time) go
 * in as data; the period is replayed through the scheduler core in event
 * time (arrivals, ends after each run's real run time, preemption graces
 * and requeues, the core's own timers), once as it is and once with
 * changes (quotas, nodes added or removed, a pool lent to all, placement
 * policy, grace), and both runs come back as figures per project and
 * overall: waits, GPUs allocated and idle over time, preemptions and GPU
 * time lost, GPU-hours and cost (rated by the metering core with the price
 * list, as invoices are). Nothing here touches live state: the core built
 * for a replay is the replay's own. Results are simulated and every view
 * says so.
 *
 * Times are ms since the epoch; GPU amounts milli-GPU (sched.h); money
 * micro-units (meter.h).
 */
#ifndef GPUAAS_WHATIF_H
#define GPUAAS_WHATIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meter/meter.h"
#include "sched/sched.h"

struct error_info;

/* Bounds of one replay (the API's bounds are these or tighter). */
#define WHATIF_MAX_CHANGES 32
#define WHATIF_MAX_RECORDED 100000 /* changes of quotas, caps, pools, nodes, weights in a period */
#define WHATIF_MAX_ADD_NODES 1000                     /* nodes one change adds */
#define WHATIF_MAX_PERIOD_MS (INT64_C(31) * 86400000) /* a month */
#define WHATIF_MAX_RUN_MS (INT64_C(31) * 86400000)    /* one run */
/* Work still queued this long after the period's end is reported as not started. */
#define WHATIF_DRAIN_MS (INT64_C(31) * 86400000)
#define WHATIF_SERIES_MAX 240 /* points of the allocated-over-time series */
/* The daemon's tick: a pass that leaves queues to look at is followed by one this much later. */
#define WHATIF_TICK_MS 1000
/* A replayed start within this of the recorded one reproduces it "to the second". */
#define WHATIF_SAME_START_MS 1000

/* ---- the world ---- */

struct whatif_node {
    struct sched_node_spec spec;
    enum sched_node_state state;
};

struct whatif_gpu {
    int64_t id, node_id, class_id, pool_id; /* pool 0: none */
};

struct whatif_project {
    int64_t id, org_id;
    int weight;
};

/* As sched_set_quota: guaranteed < 0 derives it from owned pools; limit < 0 is none. */
struct whatif_quota {
    int64_t project_id, class_id, guaranteed, limit;
};

struct whatif_org_cap {
    int64_t org_id, class_id, limit;
};

/*
 * A quota, an organization's cap, a pool, a node or a project's weight as it was set at at_ms
 * (the audit trail keeps every change): the world's quotas, org_caps, pools
 * and nodes are as they stood at from_ms, and the replay applies these at
 * their time, before the arrivals of that instant, as the daemon rebuilt its
 * core when they were made. A removed quota comes as guarantee 0 and no
 * limit, a removed cap as no limit: what having none means. A pool's change
 * is of its owner, access and lending (which GPUs it holds is as the world
 * says); a node's, of its state (one made during the period is down until
 * then; work on a node that goes down runs on; one the what-if removes
 * stays down); a project's, of its weight (its organization is as the world
 * says).
 */
enum whatif_recorded_kind {
    WHATIF_REC_QUOTA = 0,
    WHATIF_REC_CAP,
    WHATIF_REC_POOL,
    WHATIF_REC_NODE,
    WHATIF_REC_PROJECT
};

struct whatif_recorded_change {
    int64_t at_ms;
    enum whatif_recorded_kind kind;
    struct whatif_quota quota;
    struct whatif_org_cap cap;
    struct sched_pool_spec pool; /* its lists are the caller's */
    struct {                     /* a node of the world set ready, drained or down */
        int64_t id;
        enum sched_node_state state;
    } node;
    struct whatif_project project; /* a project of the world (its organization as the world
                                      says) given this weight */
};

/* One recorded workload. */
struct whatif_workload {
    struct sched_workload_spec spec; /* id, project, class, shape, submit_ms = arrival */
    int64_t org_id, flavor_id;       /* for rating */
    int64_t run_ms;                  /* its real run time, 1..WHATIF_MAX_RUN_MS */
    int64_t recorded_start_ms;       /* its first start in the record; 0 when none */
    /* When it was cancelled while still queued in the record (0: never): it leaves the queue
     * then if it has not started by that time here either. */
    int64_t cancel_ms;
};

/*
 * Everything a replay reads. The arrays are the caller's and are only read.
 * cfg is the scheduler's configuration (its policy is ignored: policy names
 * the placement policy, NULL or "" for the built-in best-fit, else one of
 * SCHED_POLICY_NAMES, made afresh for each run with the typical pods
 * SCHED_POLICY_DEFAULT_PODS). [from_ms, to_ms) is the period: workloads
 * arrive in it; the series and idle time cover it. Quotas and caps are as
 * they were at from_ms, pools, nodes and projects' weights too, and change as
 * recorded says.
 */
struct whatif_world {
    const int64_t *classes;
    size_t n_classes;
    const struct whatif_project *projects;
    size_t n_projects;
    const struct sched_pool_spec *pools;
    size_t n_pools;
    const struct whatif_node *nodes;
    size_t n_nodes;
    const struct whatif_gpu *gpus;
    size_t n_gpus;
    const struct whatif_quota *quotas;
    size_t n_quotas;
    const struct whatif_org_cap *org_caps;
    size_t n_org_caps;
    /* Quota, cap, pool, node and weight changes made during the period, in time order, none
     * before from_ms. */
    const struct whatif_recorded_change *recorded;
    size_t n_recorded;
    const struct meter_price *prices;
    size_t n_prices;
    const struct whatif_workload *workloads;
    size_t n_workloads;
    struct sched_config cfg;
    const char *policy;
    int64_t from_ms, to_ms;
};

/* ---- changes ---- */

enum whatif_change_kind {
    WHATIF_QUOTA = 1,    /* project_id, class_id: guarantee += milli (a set limit moves too) */
    WHATIF_ADD_NODES,    /* count nodes of class_id, gpus_per_node each, in pool_id (0 none) */
    WHATIF_REMOVE_NODES, /* count ready nodes of class_id taken out (the highest ids first) */
    WHATIF_LEND_TO_ALL,  /* pool_id lent to every project */
    WHATIF_POLICY,       /* placement policy by name ("" or "default": built-in best-fit) */
    WHATIF_GRACE,        /* every preemption's grace is grace_ms */
};

struct whatif_change {
    enum whatif_change_kind kind;
    int64_t project_id;
    int64_t class_id;
    int64_t milli;         /* WHATIF_QUOTA: may be negative; the guarantee stays >= 0 */
    int64_t count;         /* nodes, 1..WHATIF_MAX_ADD_NODES */
    int32_t gpus_per_node; /* WHATIF_ADD_NODES: 0 = as the class's first node */
    int64_t pool_id;
    int64_t grace_ms;
    char policy[32];
};

/* ---- results ---- */

/* Figures of one project, or of everything in scope (id 0). */
struct whatif_stats {
    int64_t id;
    int64_t workloads;   /* replayed */
    int64_t started;     /* started at least once */
    int64_t not_started; /* never started (cancelled while queued, or still queued at the end) */
    int64_t cancelled;   /* of those, cancelled while queued (at their recorded cancel_ms) */
    /* Time queued per workload: arrival to start, plus each requeue to its next start; work
     * still queued when the replay stops counts to period end + WHATIF_DRAIN_MS. */
    int64_t wait_p50_ms, wait_p95_ms, wait_max_ms;
    int64_t preemptions;   /* times its work was a victim */
    int64_t lost_milli_ms; /* GPU time victims ran before their release (no checkpoints) */
    int64_t gpu_milli_ms;  /* GPU time held, all of the replay */
    int64_t cost_micros;   /* rated as invoices rate it */
};

struct whatif_run {
    struct whatif_stats overall;   /* over the scope (all projects, or those asked for) */
    struct whatif_stats *projects; /* every project in scope with replayed work, by id */
    size_t n_projects;
    int64_t capacity_milli;     /* GPUs of ready nodes in this run when the period ended */
    int64_t capacity_milli_ms;  /* GPUs of ready nodes over the period (nodes come and go) */
    int64_t allocated_milli_ms; /* held by the scope within the period */
    int64_t idle_milli_ms;      /* capacity over the period - all work held within it */
    int64_t series_step_ms;     /* the series' points: [from + i*step, from + (i+1)*step) */
    size_t n_series;
    int64_t series_milli[WHATIF_SERIES_MAX]; /* average milli-GPU the scope held then */
    int64_t starts_compared;                 /* in scope, with a recorded start */
    int64_t starts_same;                     /* ... started within WHATIF_SAME_START_MS of it */
    int64_t skipped;   /* workloads the core refused (unknown project or class) */
    int64_t recorded_applied; /* changes of the record (quotas, caps, pools, nodes) applied */
    int64_t unpriced;  /* runs with no price version: cost 0 */
    char currency[4];  /* of the price list; "" when none (or mixed: "*") */
    int64_t end_ms;    /* the replay's last event */
    int64_t passes;    /* scheduling passes run */
    int64_t *start_ms; /* each world workload's first start here, 0: none */
};

struct whatif_options {
    /* Projects the figures cover; NULL: all. Every run replays all work. */
    const int64_t *scope;
    size_t n_scope;
};

/*
 * Checks changes against the world: known projects, classes and pools,
 * counts and amounts in range, a known policy. Returns 0 or ERR_INVALID
 * with ei naming the change ("changes[2]") and what is wrong.
 */
int whatif_check_changes(const struct whatif_world *w, const struct whatif_change *changes,
                         size_t n, struct error_info *ei);

/*
 * Replays the world's workloads with the changes (n may be 0: the
 * baseline) into ret (zeroed by the callee; release with
 * whatif_run_release). Returns 0, or ERR_INVALID (see whatif_check_changes,
 * or a world the core refuses) with ei.
 */
int whatif_replay(const struct whatif_world *w, const struct whatif_change *changes, size_t n,
                  const struct whatif_options *opt, struct whatif_run *ret, struct error_info *ei);

void whatif_run_release(struct whatif_run *r);

#endif
