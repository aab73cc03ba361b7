/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine-int.h: what only the engine's files share: its state (struct
 * engine), the lists it keeps beside the scheduler, and the steps of its
 * loop, one file each:
 *   engine.c  the thread, the inbox, the loop, start and stop
 *   load.c    rebuilding the scheduler from the store (and adopting work)
 *   decide.c  a pass's decisions: persisted in one transaction, then acted on
 *   ends.c    ends reported by backends: recorded, then told the scheduler
 *   ahead.c   queue-ahead: work staged in a backend behind running work
 *   cancel.c  cancels and stops asked for
 *   chores.c  metering and idle policies
 *   fleet.c   the fleet from backends' discovery and device reports, the sweep
 *   query.c   the read side: reasons, capacity, metrics
 * Backends are spoken to only through their table (backend.h); the engine
 * never names one.
 */
#ifndef GPUAAS_ENGINE_INT_H
#define GPUAAS_ENGINE_INT_H

#include "base/common.h"

#include <pthread.h>

#include "backend/backend.h"
#include "base/metrics.h"
#include "engine/engine.h"
#include "model/model.h"
#include "sched/sched.h"

struct node_info {
    int64_t id, cluster_id;
    char *name;
    bool ready; /* state "ready": not drained or down */
};

struct gpu_info {
    int64_t id, node_id, class_id;
    int32_t index;
    char *uuid;
};

struct flavor_info {
    int64_t id, class_id;
    int32_t gpu_milli;
    int64_t cpu_milli, mem_mib;
    int64_t pools[SCHED_MAX_POOLS];
    int n_pools;
    uint32_t selector[SCHED_MAX_SELECTOR];
    int n_selector;
    bool active;
};

struct named {
    int64_t id;
    char *name;
};

/* A victim still releasing, and the ledger entry it belongs to. */
struct pending_victim {
    int64_t victim_id, ledger_id, preemptor_id;
};

struct cluster_backend {
    int64_t cluster_id;
    struct backend *b;
    int64_t discovered_ms; /* when its discovery last ran */
};

/*
 * Queue-ahead: a queued workload its backend holds behind a running one, or
 * behind one so held (a chain of QUEUE_AHEAD_DEPTH at most).
 */
struct staged {
    int64_t id, after_id;
    struct backend *b;
    struct sched_workload_spec spec; /* to find its own successor */
};

/* Taken back from its backend: its end is awaited, then (requeue) it is queued here again. */
struct unstaging {
    int64_t id;
    bool requeue;
};

/* Outcomes counted on /metrics, in this order (engine__outcomes). */
enum { OUTCOME_SUCCEEDED, OUTCOME_FAILED, OUTCOME_CANCELLED, OUTCOME_PREEMPTED, N_OUTCOMES };
extern const char *const engine__outcomes[N_OUTCOMES];

/* What /metrics reads of the engine; written by the engine thread after each commit. */
struct engine_metrics {
    struct metrics_histogram queue_wait; /* first admission: admitted - submitted */
    struct metrics_histogram reclaim;    /* decided -> the last victim released */
    uint64_t preemptions_reclaim;        /* ledger entries with rule "reclaim" */
    uint64_t outcomes[N_OUTCOMES];
};

/* A run whose every GPU the telemetry calls idle-allocated, since when, what was done. */
struct idle_track {
    int64_t workload_id;
    int64_t since_ms;
    bool opportunistic, notified, stopped, seen;
};

struct engine {
    struct store *store;
    struct store_conn *db;
    struct engine_options opt;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping, started, reload;
    uint64_t iterations;
    int64_t metered_through; /* month start up to which open runs are cut in the ledger */
    int64_t budgets_checked; /* when budgets were last checked, ms */
    struct idle_track *idle; /* running work whose GPUs are all idle-allocated */
    size_t n_idle, cap_idle;
    int64_t idle_checked;
    bool fleet_loaded; /* since the last discovery round: backends' discover() is told */
    struct engine_metrics metrics;

    struct sched *sched;
    struct cluster_backend *backends;
    size_t n_backends, cap_backends;
    struct node_info *nodes;
    size_t n_nodes;
    struct gpu_info *gpus;
    size_t n_gpus;
    struct flavor_info *flavors;
    size_t n_flavors, cap_flavors;
    struct named *classes, *projects;
    size_t n_classes, n_projects, cap_classes, cap_projects;
    struct label_table labels;

    /*
     * Submissions and wake-ups go through wake_lock, never the engine's lock,
     * so an API thread never waits for a pass or a backend's command to end.
     */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    bool woken;     /* something for the engine: it does not sleep */
    int64_t *inbox; /* submitted, not yet given to the scheduler */
    size_t n_inbox, cap_inbox;
    /*
     * Configuration the API changed (engine_config_changed), under wake_lock
     * too: changes to apply in place (copies of the rows, in change_arena),
     * or a rebuild asked for. An API thread calls it after its commit while
     * it may still hold the tenancy's commit lock, so it must never wait for
     * a round: that round may itself wait for the store's write lock, held by
     * a request that waits for the tenancy's commit lock.
     */
    struct change {
        const struct resource_def *def;
        struct row row;
        bool deleted;
    } * changes;
    size_t n_changes, cap_changes;
    struct arena change_arena;
    bool rebuild_asked;
    int64_t *cancelling;
    size_t n_cancelling, cap_cancelling;
    struct pending_victim *victims;
    size_t n_victims, cap_victims;
    /*
     * Ledger entries whose victims have all released and whose preemptor
     * has not had its first try since: the next pass gives it (first, in
     * the scheduler), and its transaction records that try in each entry
     * (first_try_ms), so that a restart before it gives it again.
     */
    int64_t *reclaims_ready;
    size_t n_reclaims_ready, cap_reclaims_ready;
    /*
     * Queue-ahead: workloads out of the scheduler's queue because
     * their backend holds them behind a running workload (the store has
     * queued_after), those being taken back, and those never to be queued
     * ahead again (their backend refused it once).
     */
    struct staged *staged;
    size_t n_staged, cap_staged;
    /* Queued work set aside: held, or its dependency not met (depend.c). */
    int64_t *blocked;
    size_t n_blocked, cap_blocked;
    bool blocked_dirty; /* something ended, or was held or released: look at them again */
    struct unstaging *unstaging;
    size_t n_unstaging, cap_unstaging;
    int64_t *no_stage;
    size_t n_no_stage, cap_no_stage;
    int64_t *follow; /* what backends say work may be queued behind, this pass (ahead.c) */
    size_t cap_follow;

    struct sched_decisions dec;
};

/* ---- small helpers ---- */

/*
 * Sorted-by-id lookup over an array of structs whose first member is their
 * int64 id: the store lists in id order and new rows get higher ids.
 */
static inline void *find_by_id(const void *base, size_t n, size_t size, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *p = (const char *)base + mid * size;
        int64_t have;
        memcpy(&have, p, sizeof(have));
        if (have == id)
            return (void *)p;
        if (have < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

#define FIND_BY_ID(arr, n, want) find_by_id((arr), (n), sizeof(*(arr)), (want))

/* What to tell the scheduler about an end once it is committed. */
struct end_action {
    int64_t workload_id, at_ms;
    bool cancel, skip;
    int outcome;        /* index into outcomes */
    int64_t reclaim_ms; /* its release closed a preemption after this long; -1: it did not */
    int64_t ready_ledger; /* that preemption's ledger entry */
    /* Queue-ahead: the workload its backend starts on these GPUs now (0: none)... */
    int64_t successor_id;
    struct sched_workload_spec successor;
    enum sched_class successor_runs_as; /* the class of the work it follows */
    size_t n_held;
    int64_t gpus[SCHED_MAX_GPUS_PER_NODE];
    int32_t milli[SCHED_MAX_GPUS_PER_NODE], replica[SCHED_MAX_GPUS_PER_NODE];
    /* ...or the one queued behind it that must be taken back (0: none). */
    int64_t unstage_id;
};

/* How texts for people name a backend ("queued in Slurm behind ..."). */
static inline const char *engine__title(const struct backend *b)
{
    return b->ops->title ? b->ops->title : b->ops->name;
}

/* Whether a GPU of that health is offered to the scheduler ("mig": its instances are). */
static inline bool gpu_schedulable(const char *health)
{
    return strcmp(health, "failed") != 0 && strcmp(health, "down") != 0 &&
           strcmp(health, "mig") != 0;
}

/* build.c: what the core is told of a row (load.c and whatif.c build it alike) */
/* Interns a labels JSON object ({"rack":"r1"}) into ids; returns how many fit in max. */
int engine__intern_labels(struct label_table *t, const char *json, uint32_t *out, int max);
void engine__label_table_release(struct label_table *t);
/* A pool row as the core's spec; the access lists are in a. */
void engine__pool_spec(const struct row *p, struct arena *a, struct sched_pool_spec *ret);
void engine__node_spec(struct label_table *t, const struct row *r, struct sched_node_spec *ret,
                       enum sched_node_state *ret_state);
/* The pool of a GPU row (0: none), its node among node_rows listed in id order. */
int64_t engine__gpu_pool(const struct row *pools, size_t n_pools, const struct row *node_rows,
                         size_t n_node_rows, const struct row *gpu, int64_t cluster_id);
/* A quota row as sched_set_quota takes it (-1: derived guarantee, no limit). */
void engine__quota_of(const struct row *q, int64_t *ret_guaranteed, int64_t *ret_limit);
void engine__flavor_of(struct label_table *t, const struct row *r, struct flavor_info *f);
/* A workload row of flavor f (NULL: ERR_INVALID) as the core's spec. */
int engine__spec_from(const struct flavor_info *f, const struct row *w,
                      struct sched_workload_spec *sp);

/* A priority_class value ("owned", "opportunistic", "auto") as the scheduler's class. */
enum sched_class engine__class_of(const char *priority_class);
/* The class work runs as (P1 or P2), as its priority_class value. */
const char *engine__class_text(enum sched_class c);

/* load.c */
int engine__load(struct engine *e, bool adopt, struct error_info *ei);

/* share.c: past usage for the decayed fair share, across rebuilds of the core. */
struct engine_past_usage {
    struct past_usage_entry {
        int64_t project_id, class_id;
        double amount; /* milli-GPU ms, decayed to the time taken */
    } * v;
    size_t n;
    bool taken; /* from a core (else, with the decayed rule, it is read from the ledger) */
};
/* What the current core (if any) holds at now; nothing with the current rule. */
void engine__past_usage_take(struct engine *e, int64_t now, struct engine_past_usage *ret);
/*
 * Gives the new core its past usage, before running work is restored: what
 * was taken, else the ledger's opportunistic records and the part of open
 * runs not yet in it, up to now. Frees what was taken.
 */
int engine__past_usage_give(struct engine *e, struct engine_past_usage *past, int64_t now,
                            struct error_info *ei);
void engine__forget_fleet(struct engine *e);
struct backend *engine__backend_of(struct engine *e, int64_t cluster_id);
const char *engine__class_name(const struct engine *e, int64_t id);
const char *engine__project_name(const struct engine *e, int64_t id);
void engine__set_flavor(struct engine *e, const struct row *r);
/* The scheduler's view of a workload row; ERR_INVALID when its flavor is gone. */
int engine__spec_of(struct engine *e, const struct row *w, struct sched_workload_spec *sp);
/* What an allocation row says a replica holds, as the scheduler's assign. */
struct sched_assign engine__assign_of(const struct row *al);

/* decide.c */
/* Writes one pass's decisions in one transaction, then acts on them. */
int engine__apply_decisions(struct engine *e, int64_t now, struct error_info *ei);
/* What a backend is given to launch (or adopt) w on the assigns; memory in a. */
void engine__launch_of(struct engine *e, const struct row *w, const struct sched_assign *as,
                       size_t n_as, struct arena *a, struct backend_launch *l);
int engine__add_event(struct engine *e, struct arena *a, int64_t wid, int64_t project, int64_t at,
                      const char *type, const char *msg, struct error_info *ei);
/* A workload's allocations not yet ended. */
int engine__open_allocations(struct engine *e, int64_t wid, struct arena *a, struct row **ret,
                             size_t *ret_n, struct error_info *ei);

/* ends.c */
void engine__handle_ends(struct engine *e, const struct backend_event *evs, size_t n);
/* Records the backend's start reports (ops->take_started) as "started" events. */
void engine__take_started(struct engine *e, struct backend *b);

/* ahead.c */
struct staged *engine__staged_find(struct engine *e, int64_t id);
struct staged *engine__staged_behind(struct engine *e, int64_t after_id);
void engine__staged_remove(struct engine *e, int64_t id);
struct unstaging *engine__unstaging_find(struct engine *e, int64_t id);
int64_t engine__staged_root(struct engine *e, int64_t id, size_t *ret_depth);
bool engine__held_aside(struct engine *e, int64_t id);

/* depend.c */
/*
 * Queued work to the scheduler, or set aside while held or waiting for its
 * dependency (write_reason: its reason in the store says so), or cancelled
 * when its after-ok dependency ended otherwise.
 */
void engine__submit_or_hold(struct engine *e, struct row *w, int64_t now, bool write_reason,
                            struct arena *a);
/* Looks again at the work set aside, when blocked_dirty says something changed. */
void engine__recheck_blocked(struct engine *e, int64_t now);
bool engine__blocked_find(const struct engine *e, int64_t id);
void engine__unstage(struct engine *e, int64_t id, const char *why, int64_t now);
void engine__side_end(struct engine *e, const struct backend_event *ev);
void engine__stage_successors(struct engine *e, int64_t now);
int engine__hand_over(struct engine *e, const struct staged *st, const struct row *held,
                      size_t n_held, int64_t at, struct arena *a, struct end_action *act,
                      struct error_info *ei);
const char *engine__restore_staged(struct engine *e, bool adopt, const struct row *w,
                                   const struct row *allocs, size_t n_allocs, int64_t now,
                                   struct arena *a);

/* cancel.c */
int engine__stop_running(struct engine *e, int64_t workload_id, const char *why,
                         struct error_info *ei);

/* chores.c */
void engine__meter_chores(struct engine *e, int64_t now);
void engine__idle_chores(struct engine *e, int64_t now);

/* fleet.c */
/* Brings what backends discover (nodes, GPUs) into the store; a change rebuilds. */
void engine__discover(struct engine *e, int64_t now);
/* Takes backends' device reports and moves allocations to match; a move rebuilds. */
void engine__take_devices(struct engine *e, int64_t now);
/* At start, after adoption, before any launch: each backend's sweep. */
void engine__sweep(struct engine *e);

/* engine.c */
void engine__wake(struct engine *e);
void engine__take_inbox(struct engine *e, int64_t now);
void engine__rebuild(struct engine *e, const char *why);

#endif
