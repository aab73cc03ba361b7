/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sched.h: the scheduler core (DESIGN.md section 3), a pure library: no I/O,
 * no clock, no globals. Time is an argument (milliseconds since the epoch),
 * backend events are calls, and decisions come back as data for the caller
 * to persist and then carry out. The daemon, the simulator and the
 * benchmarks all drive this same code.
 *
 * Vocabulary:
 * - GPU amounts are milli-GPU: 1000 is one whole device. A replica asks for
 *   a share of one device (1..999) or whole devices (a multiple of 1000, all
 *   on one node). MIG instances are devices of their own class.
 * - P1 ("owned") work runs within its project's guarantee for the GPU class
 *   and is never preempted, except by a pool's owner where it runs on that
 *   owner's pool; P2 ("opportunistic") work runs on idle capacity
 *   the project may access, up to its limit, and may be preempted.
 *   Automatic work (the default a user gets) is P1 when it is admitted while
 *   its project's owned work plus its own need fits the guarantee, else P2
 *   (Kueue's "nominal quota, then borrow"); it keeps that class while it
 *   runs and is looked at afresh when requeued.
 * - A project is "borrowing" in a class while its usage there (P1 + P2) is
 *   above its guarantee, and wherever it runs on a pool that neither it nor
 *   its organization owns: work on a pool is owned only for that pool's
 *   owner, who can always take the pool's capacity back (P1 work placed on
 *   someone else's pool is preemptible by the owner).
 *
 * Ownership: struct sched owns everything it is given (specs are copied).
 * Decision buffers belong to the caller (sched_decisions_init/_release).
 * Ids are the caller's (store ids); 0 is never a valid id.
 */
#ifndef GPUAAS_SCHED_H
#define GPUAAS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sched;

#define SCHED_MAX_LABELS 16   /* labels per node */
#define SCHED_MAX_SELECTOR 8  /* labels a workload requires */
#define SCHED_MAX_POOLS 8     /* pools a workload may be restricted to */
#define SCHED_MAX_REPLICAS 256
#define SCHED_MAX_GPUS_PER_NODE 64
/* Minimum runtimes and graces above this (about 35,000 years) are taken as this: time sums never
 * overflow. */
#define SCHED_MAX_DURATION_MS (INT64_C(1) << 50)

/* ---- configuration ---- */

/*
 * The room of the requested class around a node, for policies that weigh
 * what is scarce in the fleet and not only on the node: milli on ready
 * nodes in all pools and in the pool of the devices shown, and how many of
 * the class's node slots (a node's devices of one class in one pool), in
 * all pools and in that pool, have each number of fully free devices. The
 * core keeps these counts as it places, so handing them out costs a few
 * stores per node. Policies that do not weigh the fleet ignore it.
 */
struct sched_room {
    int64_t pool_id;             /* the pool of the devices shown; 0: none */
    int64_t pool_free, pool_cap; /* milli of the class in that pool */
    int64_t class_free, class_cap;
    const int32_t *slots_by_whole; /* [n]: slots with n free devices, n = 0..MAX_GPUS_PER_NODE */
    const int32_t *pool_slots_by_whole; /* the same, of the pool's slots only */
};

/* What a placement policy sees of one node when it is asked to choose. */
struct sched_node_view {
    int64_t node_id;
    int64_t cpu_free, cpu_cap; /* cap 0: not counted */
    int64_t mem_free, mem_cap;
    int n_gpus;                /* devices of the requested class this workload may use */
    const int32_t *gpu_free;   /* free milli of each */
    const int64_t *gpu_ids;
    const struct sched_room *room; /* NULL for CPU-only work; valid during the call only */
};

/* One replica's request. */
struct sched_replica_req {
    int64_t class_id;
    int32_t gpu_milli;
    int64_t cpu_milli;
    int64_t mem_mib;
};

/*
 * A placement policy scores each node that can hold a replica; the lowest
 * score wins (ties: the lower node id). score() returns INT64_MAX when the
 * replica does not fit, else fills ret_gpus with the indices (into the
 * view's arrays) of the devices to use: one for a share, gpu_milli / 1000
 * for whole GPUs. Policies must be pure functions of their arguments and
 * their own state. Without a policy the scheduler uses its built-in
 * best-fit, which finds the same answer as a best-fit score through an
 * index instead of a scan.
 */
struct sched_policy {
    const char *name;
    int64_t (*score)(const struct sched_policy *p, const struct sched_node_view *node,
                     const struct sched_replica_req *req, int *ret_gpus);
    void *state;
};

/*
 * The order in which projects take turns at borrowed capacity (one workload
 * per turn, lowest key first, ties by the lower project id):
 * - SCHED_SHARE_CURRENT: the dominant share, over GPU classes, of what the
 *   project borrows now (held beyond its guarantee, over the class's
 *   capacity), divided by its weight.
 * - SCHED_SHARE_DECAYED: the same with the project's past opportunistic
 *   (P2) usage added in each class before taking the dominant share: its
 *   usage decayed by the half-life H (decayed(t) = decayed(t0)*2^(-(t-t0)/H)
 *   + what it held in between, weighted the same way) times ln 2 / H, the
 *   GPUs it held on average over about the last H. So a project that
 *   borrowed much lately goes after one that did not, and what it borrows
 *   now still counts, so no project takes everything in one pass.
 */
enum sched_fair_share { SCHED_SHARE_CURRENT = 0, SCHED_SHARE_DECAYED = 1 };

struct sched_config {
    /* A queue head blocked this long gets capacity reserved for it (ms). */
    int64_t reserve_after_ms;
    /* Grace between the preemption signal and the kill, unless the workload says. */
    int64_t default_grace_ms;
    /* Workloads looked at behind a blocked head, per project per pass (best-effort FIFO). */
    int lookahead;
    /* Placement policy; NULL is best-fit. Not owned. */
    const struct sched_policy *policy;
    /*
     * Look at every node and every waiting project, without the shortcuts
     * that skip what cannot change a decision (a victim search by tier
     * order, passes that look only where room was freed). For tests, which
     * check that both give the same decisions; false by default.
     */
    bool exhaustive;
    /* How borrowed capacity is shared among projects (below); SCHED_SHARE_CURRENT by default. */
    enum sched_fair_share fair_share;
    /* SCHED_SHARE_DECAYED: past usage counts half as much after each half-life (ms, > 0). */
    int64_t half_life_ms;
};

void sched_config_init(struct sched_config *cfg);

/* Returns NULL only for an invalid config (negative durations). Free with sched_free. */
struct sched *sched_new(const struct sched_config *cfg);
void sched_free(struct sched *s);

/* ---- the fleet ---- */

/* A GPU class (whole GPUs and MIG profiles alike). Classes are never removed. */
int sched_add_class(struct sched *s, int64_t class_id);

struct sched_node_spec {
    int64_t id;
    int64_t cluster_id;
    int64_t cpu_milli; /* capacity; 0 means not counted */
    int64_t mem_mib;   /* capacity; 0 means not counted */
    uint32_t labels[SCHED_MAX_LABELS]; /* interned "key=value" ids, any order */
    int n_labels;
    int64_t block_id; /* topology block (rack, NVLink domain); 0 for none */
};

enum sched_node_state { SCHED_NODE_READY, SCHED_NODE_DRAIN, SCHED_NODE_DOWN };

int sched_add_node(struct sched *s, const struct sched_node_spec *spec);
/* Drain and down nodes take no new work; what runs there is the caller's to stop. */
int sched_set_node_state(struct sched *s, int64_t node_id, enum sched_node_state state);

/* A GPU device on a node, of a class, optionally in a pool (0 for none). */
int sched_add_gpu(struct sched *s, int64_t node_id, int64_t gpu_id, int64_t class_id,
                  int64_t pool_id);

/* ---- tenants, pools, quotas ---- */

int sched_set_project(struct sched *s, int64_t project_id, int64_t org_id, int weight);

/*
 * A pool's owner (a project, or else an organization) and who may borrow it.
 * GPUs in no pool are open to every project. A project may use a pool's GPUs
 * when it owns the pool, its organization owns it, it (or its organization)
 * is on the access list, or the pool is lent to all. A lending limit caps
 * what projects that do not own the pool hold of it at once (placement
 * keeps under it; lowering it preempts nothing).
 */
struct sched_pool_spec {
    int64_t id;
    int64_t owner_project_id; /* 0 when owned by an organization */
    int64_t owner_org_id;     /* 0 when owned by a project */
    const int64_t *access_project_ids;
    size_t n_access_projects;
    const int64_t *access_org_ids;
    size_t n_access_orgs;
    bool lend_to_all;
    int64_t lending_limit; /* milli-GPU; 0 (or less): none (a pool that lends nothing is closed) */
};

int sched_set_pool(struct sched *s, const struct sched_pool_spec *spec);

/*
 * Quota of a project in a class, in milli-GPU. guaranteed < 0 derives the
 * guarantee from the GPUs of the pools the project owns in that class;
 * limit < 0 means no limit. Without a quota a project has guarantee 0 and
 * no limit in that class.
 */
int sched_set_quota(struct sched *s, int64_t project_id, int64_t class_id, int64_t guaranteed,
                    int64_t limit);
/* Cap on everything an organization's projects hold together in a class; < 0 removes it. */
int sched_set_org_cap(struct sched *s, int64_t org_id, int64_t class_id, int64_t limit);

/* ---- workloads ---- */

/* SCHED_AUTO: P1 or P2, decided at each admission (see the vocabulary above). */
enum sched_class { SCHED_P1 = 1, SCHED_P2 = 2, SCHED_AUTO = 3 };

/*
 * What a pass reads of every workload it looks at comes first, within 64
 * bytes (struct workload puts it on a cache line of its own).
 */
struct sched_workload_spec {
    int64_t id;
    enum sched_class pclass;
    int32_t priority;  /* higher first, within a project and class */
    int32_t replicas;  /* 1..SCHED_MAX_REPLICAS; all or none are placed */
    int32_t gpu_milli; /* per replica: 1..999, or a multiple of 1000 */
    int64_t cpu_milli; /* per replica */
    int64_t mem_mib;   /* per replica */
    int n_selector;
    int n_pools;
    bool same_block; /* all replicas in one topology block */
    bool requeue;    /* back to the queue (original order) when preempted */
    int64_t project_id;
    int64_t submit_ms;      /* original submit time: queue order, kept across requeues */
    int64_t class_id;       /* GPU class; 0 for CPU-only work */
    int64_t min_runtime_ms; /* not preempted before running this long (clamped, see above) */
    int64_t grace_ms;       /* < 0: the configured default (clamped, see above) */
    uint32_t selector[SCHED_MAX_SELECTOR]; /* labels every node must carry */
    int64_t pool_ids[SCHED_MAX_POOLS];     /* pools it may run on; none means any it may use */
};

/* States of a workload as the scheduler sees it. */
enum sched_state {
    SCHED_QUEUED = 1,   /* waiting; has a pending reason */
    SCHED_RUNNING,      /* placed and admitted: holds its GPUs */
    SCHED_PREEMPTING,   /* told to stop; holds its GPUs until released */
};
/* Finished, cancelled and preempted-without-requeue work leaves the scheduler: SCHED_ENOENT. */

/*
 * Adds a workload to its project's queue. Errors: invalid spec (-EINVAL
 * style negative codes are the caller's to map: SCHED_EINVAL), unknown
 * project or class, duplicate id.
 */
int sched_submit(struct sched *s, const struct sched_workload_spec *spec, int64_t now_ms);
/* Removes a queued workload, or releases a running one's GPUs at once. */
int sched_cancel(struct sched *s, int64_t workload_id, int64_t now_ms);
/*
 * The backend reports the end of a running or preempting workload (exit,
 * failure, or the end of a preemption). Its GPUs are free from now. A
 * preempted workload that asked to be requeued goes back to its queue.
 */
int sched_released(struct sched *s, int64_t workload_id, int64_t now_ms);
/* A running workload reports a checkpoint: less work is lost if it is preempted. */
int sched_checkpoint(struct sched *s, int64_t workload_id, int64_t now_ms);

/*
 * For recovery after a restart: a workload that is already running (or
 * preempting) on these GPUs. gpus[i] and milli[i] give each replica's
 * devices in replica order: replica r owns the entries with replica_of[i]
 * == r. Started_ms is when it started. runs_as is the class it was
 * admitted as (P1 or P2); 0 takes spec's class, and for automatic work the
 * class the rule gives now.
 */
int sched_restore_running(struct sched *s, const struct sched_workload_spec *spec,
                          enum sched_class runs_as, const int64_t *gpus, const int32_t *milli,
                          const int32_t *replica_of, size_t n, int64_t started_ms, bool preempting);

/*
 * For recovery: the restored (preempting) victims are making room for the
 * queued P1 workload preemptor_id, which must not choose new victims until
 * they have released.
 */
int sched_restore_preemption(struct sched *s, int64_t preemptor_id, const int64_t *victim_ids,
                             size_t n);

/*
 * For recovery: the victims of the queued workload preemptor_id have all
 * released since it was last looked at (its preemption is over but no pass
 * has run since). It goes first in the next pass, before any other work,
 * as it would have without the restart (sched_released makes a preemptor
 * whose last victim released go first), and the nodes its replicas fit on,
 * the victims' nodes (node_ids) first, are held for it meanwhile. Errors:
 * SCHED_ENOENT (not known), SCHED_ESTATE (not queued, or still waiting for
 * victims).
 */
int sched_restore_reclaim_ready(struct sched *s, int64_t preemptor_id, const int64_t *node_ids,
                                size_t n_nodes);

#define SCHED_EINVAL (-1)
#define SCHED_ENOENT (-2)
#define SCHED_EEXIST (-3)
#define SCHED_ESTATE (-4)

/* ---- decisions ---- */

/* One device (or a share of one) given to one replica. */
struct sched_assign {
    int32_t replica;
    int64_t node_id;
    int64_t gpu_id; /* 0 for a CPU-only replica */
    int32_t milli;  /* of that device */
};

struct sched_admit {
    int64_t workload_id;
    size_t first_assign; /* into sched_decisions.assigns */
    size_t n_assigns;
    bool borrowed; /* admitted beyond its project's guarantee, or on a pool it does not own */
    enum sched_class pclass; /* the class it runs as: P1 or P2 (what automatic work got) */
    bool automatic;          /* its class was chosen by the automatic rule */
    /* The rule's figures: the project's owned (P1) work before it, and its guarantee. */
    int64_t owned_held, guaranteed;
};

enum sched_rule {
    SCHED_RULE_RECLAIM = 1, /* P1 within guarantee takes back capacity from borrowing P2 */
};

/* Quota of one project in one class, in milli-GPU. limit < 0: none. */
struct sched_quota_snapshot {
    int64_t project_id;
    int64_t class_id;
    int64_t used;
    int64_t guaranteed;
    int64_t limit;
};

struct sched_preemption {
    int64_t preemptor_id;
    enum sched_rule rule;
    size_t first_victim; /* into sched_decisions.victims */
    size_t n_victims;
    int64_t decided_ms;
    int64_t grace_ms;    /* victims are to be killed at decided_ms + grace_ms */
    int64_t gpu_milli_reclaimed;
    /* The preemptor's project and each victim project, before the decision. */
    size_t first_quota; /* into sched_decisions.quotas, before; after = before - freed */
    size_t n_quotas;
};

struct sched_victim {
    int64_t workload_id;
    int64_t project_id;
    int64_t gpu_milli;      /* held, all replicas */
    int64_t lost_ms;        /* run time since start or last checkpoint */
};

struct sched_decisions {
    struct sched_admit *admits;
    size_t n_admits, cap_admits;
    struct sched_assign *assigns;
    size_t n_assigns, cap_assigns;
    struct sched_preemption *preemptions;
    size_t n_preemptions, cap_preemptions;
    struct sched_victim *victims;
    size_t n_victims, cap_victims;
    struct sched_quota_snapshot *quotas;
    size_t n_quotas, cap_quotas;
};

void sched_decisions_init(struct sched_decisions *d);
void sched_decisions_reset(struct sched_decisions *d);
void sched_decisions_release(struct sched_decisions *d);

/*
 * One scheduling pass at time now: admits and places what fits, decides
 * preemptions for P1 work that has a right to capacity, reserves capacity
 * for heads blocked too long, and updates every affected pending reason.
 * Decisions are appended to d. The scheduler's own state already reflects
 * them (admitted work holds its GPUs; victims are SCHED_PREEMPTING).
 * Only queues whose situation changed since the last pass are examined.
 * Returns the number of decisions made.
 */
int sched_pass(struct sched *s, int64_t now_ms, struct sched_decisions *d);

/*
 * What the passes have done since the scheduler was made: counts of work,
 * not time, so that how a pass's cost grows with the fleet and the queues
 * can be read on any machine (sched_bench prints them per pass).
 */
struct sched_stats {
    uint64_t passes;
    uint64_t turns;           /* turns projects were given to scan their queues */
    uint64_t examined;        /* queued workloads judged (quota, room, reasons) */
    uint64_t placements;      /* placements tried */
    uint64_t victim_searches; /* preemption plans tried */
    uint64_t victim_nodes;    /* nodes those plans judged */
};
void sched_get_stats(const struct sched *s, struct sched_stats *out);

/* ---- reading state ---- */

/* Why a queued workload waits. Numbers are milli-GPU unless said otherwise. */
enum sched_reason_code {
    SCHED_WAIT_NONE = 0,
    SCHED_WAIT_NEW,            /* not looked at yet */
    SCHED_WAIT_GUARANTEE,      /* P1 beyond the project's guarantee: used, cap = guaranteed */
    SCHED_WAIT_LIMIT,          /* project at its limit: used, cap = limit */
    SCHED_WAIT_ORG_CAP,        /* organization at its cap: used, cap */
    SCHED_WAIT_CAPACITY,       /* no room: need per replica, cap = largest free per replica */
    SCHED_WAIT_RECLAIM,        /* victims are releasing capacity for it: count = victims */
    SCHED_WAIT_BEHIND,         /* behind earlier work of its project: count = position */
    SCHED_WAIT_RESERVED,       /* capacity is being held for an earlier blocked workload */
    SCHED_WAIT_FAIR_SHARE,     /* other projects' turn for borrowed capacity */
    SCHED_WAIT_NO_NODES,       /* no node can ever fit it (class, labels, pools, size) */
};

struct sched_reason {
    enum sched_reason_code code;
    int64_t class_id;
    int64_t need;        /* what it asks, all replicas */
    int64_t per_replica; /* what one replica asks */
    int64_t used;
    int64_t cap;
    /*
     * Opportunistic work waiting for room under the decayed fair share
     * (SCHED_WAIT_CAPACITY, which uses neither count nor other_id: they share
     * their place, so that no workload grows for it): the project that took
     * the class's borrowed capacity before it in the pass because it used
     * less lately (its key was lower), and the half-life (ms) that "lately"
     * means; 0 when none.
     */
    union {
        int64_t count;
        int64_t ahead_period_ms;
    };
    union {
        int64_t other_id; /* SCHED_WAIT_RESERVED: the workload capacity is held for */
        int64_t ahead_project_id;
    };
    /*
     * P1 work waiting for room (SCHED_WAIT_CAPACITY): when the earliest
     * running work that is protected by its minimum runtime, and that it
     * could otherwise take back, becomes preemptible (ms); 0 when none.
     */
    int64_t preemptible_at_ms;
    /*
     * Automatic work: the class it waits as (P1 or P2; 0 for work of a fixed
     * class), with the figures that chose it: the project's owned work held
     * and its guarantee in the class.
     */
    enum sched_class auto_as;
    int64_t auto_held, auto_guaranteed;
};

struct sched_workload_info {
    enum sched_state state;
    struct sched_reason reason; /* when queued */
    int64_t started_ms;         /* when running */
    int queue_position;         /* 1-based within its project queue, when queued */
    enum sched_class runs_as;   /* running: the class it holds; queued: the last one judged */
    /*
     * Queued: the workload that took over a node held for it since it was
     * last admitted, by holding it or by running on it (a pool's owner
     * taking its pool back from a borrower whose victims were still
     * stopping), 0 when none.
     */
    int64_t hold_taken_by;
};

int sched_workload_info(const struct sched *s, int64_t workload_id,
                        struct sched_workload_info *ret);
/*
 * For a queued workload's reason (DESIGN "lending is explicit"): pools its
 * project may not borrow where one replica would fit, with the room free
 * now (now) or at all (!now: for work no open node can ever run). Up to max
 * ids, each once; returns how many (0 for an unknown or running workload).
 */
size_t sched_closed_pools_with_room(const struct sched *s, int64_t workload_id, bool now,
                                    int64_t *ret_pool_ids, size_t max);

/*
 * The queued workload that would take a running workload's GPUs when it
 * ends, for a backend with a queue of its own that can start it there at
 * once (Slurm: a pending job depending on the running one's). Only when
 * the answer cannot differ from what a pass would decide then: the running
 * workload is one replica of whole GPUs, not preempting, on a node held for
 * no one, in a class with no head-of-line reservation; no other project
 * has queued work of that class; and the first queued workload of that
 * class in its project's order asks for exactly the same (priority class,
 * GPUs, CPUs, memory, labels, pools) and waits for nothing else (not a
 * preemptor, holding no nodes); automatic work only where it would run
 * as the same class as the running one. Taking over the same GPUs within one
 * project then changes no quota, share or P1/P2 split. Returns 0 with
 * *ret_id set, or SCHED_ENOENT (no such running workload, or no successor).
 */
int sched_successor(const struct sched *s, int64_t running_id, int64_t *ret_id);
/*
 * The same for work the scheduler no longer holds that will run like `like`
 * (work already queued ahead, whose own successor is wanted): the queue
 * rules of sched_successor, without those of a running workload.
 */
int sched_successor_like(const struct sched *s, const struct sched_workload_spec *like,
                         int64_t *ret_id);
/*
 * Whether work of another project waits for this class (or a head-of-line
 * reservation holds some of it): work queued ahead for the project in that
 * class is no longer certain to be the next choice, and is taken back.
 */
bool sched_others_wait(const struct sched *s, int64_t project_id, int64_t class_id);
/*
 * Whether queued work of spec's own project in its class comes before spec
 * in the project's queue order (P1 first, then priority, then submit time):
 * work queued ahead as spec would no longer be the next choice (a newer
 * workload of higher priority, or a requeued one), and is taken back.
 */
bool sched_ranked_before(const struct sched *s, const struct sched_workload_spec *spec);

/*
 * When a pass next has something to do without any call in between: the
 * earliest timer (a head's reservation falling due, a victim's minimum
 * runtime ending), or 0 when none is set. A simulation that passes only at
 * its own events passes then too; the daemon ticks instead. May name a time
 * that turns out to need nothing (a timer moved earlier has fired).
 */
int64_t sched_next_timer_ms(const struct sched *s);
/*
 * Whether the next pass has queues to look at already (a pass can leave
 * some for the next one: capacity freed by its own decisions, victims
 * released). The daemon finds them at its next tick; a simulation passes
 * again one tick later.
 */
bool sched_pass_due(const struct sched *s);

/* How many workloads the scheduler holds in each state: ret[SCHED_QUEUED] ...
 * ret[SCHED_PREEMPTING]. */
void sched_count_states(const struct sched *s, int64_t ret[SCHED_PREEMPTING + 1]);

/* Usage of a project in a class (milli-GPU): P1, P2, the effective guarantee and limit. */
struct sched_usage {
    int64_t p1, p2;
    int64_t guaranteed; /* effective: explicit, or derived from owned pools */
    int64_t limit;      /* < 0: none */
};
int sched_project_usage(const struct sched *s, int64_t project_id, int64_t class_id,
                        struct sched_usage *ret);

/* Totals of a class over ready nodes: capacity and free milli-GPU. */
int sched_class_capacity(const struct sched *s, int64_t class_id, int64_t *ret_capacity,
                         int64_t *ret_free);
/* Sum of guarantees in a class; more than healthy capacity deserves a warning. */
int64_t sched_class_guaranteed(const struct sched *s, int64_t class_id);

/*
 * Past usage for the decayed fair share (SCHED_SHARE_DECAYED; with the
 * current rule these calls are accepted and change nothing). Usage is
 * milli-GPU times ms, decayed by the half-life to a time.
 *
 * The core counts what projects hold as opportunistic (P2) work from the
 * times it is given (passes and events); what was used before it existed
 * is the caller's to add, before restoring running work: each interval
 * [from_ms, to_ms) during which a project held milli of a class as P2 work
 * (sched_add_usage), or an amount already decayed to at_ms
 * (sched_add_decayed_usage, to carry usage from one core to the next).
 * Either moves the core's clock to to_ms / at_ms when later, so cover
 * restored work's time up to now. Errors: SCHED_ENOENT for an unknown
 * project or class, SCHED_EINVAL for negative amounts or from_ms > to_ms.
 */
int sched_add_usage(struct sched *s, int64_t project_id, int64_t class_id, int64_t milli,
                    int64_t from_ms, int64_t to_ms);
int sched_add_decayed_usage(struct sched *s, int64_t project_id, int64_t class_id, double amount,
                            int64_t at_ms);
/*
 * A project's decayed P2 usage of a class at now_ms (not before the last
 * time the core was given), in milli-GPU ms; 0 with the current rule.
 * SCHED_ENOENT for an unknown project or class.
 */
int sched_past_usage(const struct sched *s, int64_t project_id, int64_t class_id, int64_t now_ms,
                     double *ret);

/*
 * Writes the one-line reason people read ("waiting for 4 h100: project at
 * its limit 16/16") into buf, always terminated (src/sched/reason.c).
 * Amounts are in GPUs; class_name names r's class (NULL: "class <id>");
 * now_ms turns a time into a wait ("preemptible in 90 s").
 */
void sched_reason_format(const struct sched_reason *r, const char *class_name, int64_t now_ms,
                         char *buf, size_t size);
/*
 * The same, naming the project ahead of it (ahead_project_id) as
 * project_name says ("project vision"; NULL: "project <id>").
 */
void sched_reason_format_named(const struct sched_reason *r, const char *class_name,
                               const char *project_name, int64_t now_ms, char *buf, size_t size);

#endif
