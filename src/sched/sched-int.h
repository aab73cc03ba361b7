/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sched-int.h: the scheduler core's internal state, shared by its files:
 * sched.c (fleet, tenants, workloads, events, queries), place.c (the free
 * capacity index and placement), pass.c (admission, fair share,
 * reservations) and reclaim.c (the victim search). Everything is addressed by dense int indices;
 * the caller's int64 ids map to them through idmaps.
 */
#ifndef GPUAAS_SCHED_INT_H
#define GPUAAS_SCHED_INT_H

#include "sched/sched.h"

#define NONE (-1)
#define SHARE_BUCKETS 20 /* partially used GPUs bucketed by free milli / 50 */
#define WHOLE 1000

/* ---- id -> index maps (open addressing, linear probing) ---- */

struct idmap {
    int64_t *keys; /* 0 = empty */
    int32_t *vals;
    size_t cap, n;
};

void idmap_release(struct idmap *m);
int32_t idmap_get(const struct idmap *m, int64_t key); /* NONE when absent */
void idmap_put(struct idmap *m, int64_t key, int32_t val);
void idmap_del(struct idmap *m, int64_t key);

/* Growable int32 arrays. */
struct ivec {
    int32_t *v;
    int32_t n, cap;
};
void ivec_push(struct ivec *a, int32_t x);
void ivec_remove_value(struct ivec *a, int32_t x); /* first occurrence, order kept */
void ivec_release(struct ivec *a);

/* ---- fleet ---- */

struct gpu {
    int64_t id;
    int32_t node, slot;   /* node and its class slot */
    int32_t pool;         /* NONE: in no pool */
    int32_t free;         /* milli */
    int32_t sbucket;      /* share bucket when 0 < free < WHOLE, else NONE */
    int32_t sprev, snext; /* share bucket list */
};

/*
 * A node's devices of one class in one pool (or in none), linked into the
 * bucket of its number of free whole devices in that class's bin for the pool.
 */
struct slot {
    int32_t node, cls, pool;
    struct ivec gpus;
    int32_t free_whole;
    int32_t prev, next;
    int32_t block;  /* index into its class's blocks, NONE for no block (when cached) */
    bool linked;
};

struct node {
    int64_t id, cluster_id;
    int64_t cpu_cap, cpu_free, mem_cap, mem_free;
    uint32_t labels[SCHED_MAX_LABELS];
    int n_labels;
    int64_t block_id;
    enum sched_node_state state;
    struct ivec slots;
    struct ivec running;  /* workloads with a replica here */
    int32_t reserved_for; /* workload the node is held for, or NONE */
};

/*
 * The free capacity of one class in one pool: who may use a pool is known
 * per project, so placement only ever walks the bins its workload may use.
 */
struct bin {
    int32_t whole_head[SCHED_MAX_GPUS_PER_NODE + 1]; /* slot lists by free whole GPUs */
    int32_t share_head[SHARE_BUCKETS];               /* gpu lists by free milli / 50 */
};

/*
 * What policies see of a bin (struct sched_room), kept apart from struct
 * bin so that the best-fit scans over a class's bins stay as compact.
 */
struct bin_room {
    int64_t capacity, free;                           /* milli on ready nodes */
    int32_t whole_count[SCHED_MAX_GPUS_PER_NODE + 1]; /* linked slots by free whole GPUs */
};

/* The least work waiting only for room asks per replica (room.c). */
struct room_need {
    int32_t whole, share;
    int64_t cpu, mem;
};

/* A project in a class's index of those waiting only for room, by its fair-share key. */
struct room_entry {
    double key;
    int32_t project;
};

struct cls {
    int64_t id;
    struct bin *bins;   /* bins[0]: devices in no pool; bins[p + 1]: in pool p */
    struct bin_room *rooms; /* one per bin, indexed as bins */
    int32_t n_bins, cap_bins, cap_rooms;
    /* How many slots / partial devices sit at each level over all bins: a quick "nothing fits". */
    int32_t whole_count[SCHED_MAX_GPUS_PER_NODE + 1];
    int32_t share_count[SHARE_BUCKETS];
    int64_t largest_free;     /* for reasons: computed once per pass */
    uint32_t largest_pass;
    int64_t *blocks;          /* topology blocks of its nodes, valid at fleet generation */
    int32_t n_blocks;
    uint32_t blocks_gen;
    int32_t *block_free;      /* free whole devices per block (ready nodes), kept current */
    int32_t *block_start;     /* the slots of block i: block_slots[block_start[i] .. [i + 1]) */
    int32_t *block_slots;
    struct ivec slots;  /* every slot of this class */
    /* Its slots on nodes not ready (in no bin), where the victim search finds an owner's. */
    struct ivec unready;
    int32_t max_gpus_per_node;
    int64_t capacity, free; /* over ready nodes */
    struct ivec waiting;    /* projects with queued work in this class (may hold stale ones) */
    /*
     * Projects whose work here waits only for room, by share key, and the
     * least any of them asks; those waiting for room whose needs are not
     * known (room.c). Kept only where room__indexing().
     */
    struct room_entry *room_idx;
    int32_t n_room_idx, cap_room_idx;
    struct room_need room_min;
    int32_t room_removed; /* entries removed since room_min was counted */
    struct ivec room_full;
    bool room_woke; /* room__wake ran since the walks last started: its entries are due a look */
    /*
     * Room was freed within a pass (a held node let go at an admission):
     * the pass it is for (room_defer, the next), whose walk takes the
     * entries the pass under way did not look at; in that pass, room_skip
     * is the pass whose looks at the class are not due again (0: every
     * entry is).
     */
    uint32_t room_defer, room_skip;
    /*
     * Wakes within passes so far (room__wake_within, room__hol_wake), and
     * their count when this pass began: an entry the last pass's walk went
     * by after its last wake is not due again (room__due).
     */
    uint32_t wake_seq, skip_seq;
    /*
     * The pass a reservation's end of the class marked its waiting
     * projects for (room__hol_wake): in it, the walk takes the entries due
     * for the reservation while it is free.
     */
    uint32_t hol_end;
    /* pass scratch (room.c): the walk of the index */
    bool room_active, room_open_ended;
    int32_t room_cursor, room_grown_seen;
    /*
     * Nodes whose devices of this class were freed since the last pass began
     * (grown), and those of the pass under way (grown_pass): where work that
     * only waited for room may fit now.
     */
    struct ivec grown, grown_pass;
    bool room_everywhere;   /* in the pass under way, room may have grown on any node */
    int32_t hol_reserver;   /* workload holding a head-of-line reservation, or NONE */
    /* pass scratch (share.c): the project that last took borrowed capacity here, and its key */
    int32_t took_project;
    uint32_t took_pass;
    double took_key;
};

struct pool {
    int64_t id;
    int64_t owner_project_id, owner_org_id;
    int64_t *access_projects, *access_orgs;
    size_t n_access_projects, n_access_orgs;
    bool lend_to_all;
    int64_t lending_limit; /* milli; < 0: none */
    int64_t lent;          /* milli held by projects that do not own it */
    /*
     * Milli of its lending limit held for preemptors whose victims are still
     * stopping (sched.promises): what their plans' replicas will take of it.
     */
    int64_t promised;
};

/* ---- tenants ---- */

struct quota {
    int32_t cls;
    int64_t guaranteed; /* explicit, or < 0: derived from owned pools */
    int64_t derived;    /* the derived guarantee, valid at fleet generation derived_gen */
    uint32_t derived_gen;
    /*
     * Within one pass capacity only shrinks: once a plain request of this
     * project and class found no room, no larger one will. Per P1 and P2
     * (they may use different reservations), valid while fail_pass is the pass.
     */
    uint32_t fail_pass;
    struct {
        int32_t milli;
        int64_t cpu, mem;
        uint64_t selector; /* which labels it asked for (a hash; 0: none) */
        int32_t replicas;
        bool same_block;
    } fail[2][4]; /* per class P1/P2: requests that found no room (milli 0: unused) */
    /* Likewise for reclaim: the smallest single replica no victims could make room for. */
    int32_t reclaim_fail_milli;
    /* The earliest minimum runtime's end that stood in the way of that reclaim (0: none). */
    int64_t reclaim_protected_until;
    int64_t limit;        /* < 0: none */
    int64_t p1, p2;       /* held: running and preempting work */
    /*
     * The decayed fair share (share.c): P2 usage (milli-GPU ms) decayed to
     * used_at, before which p2 has been counted; 0 when no time is known yet.
     */
    double used;
    int64_t used_at;
    int32_t blocked;      /* pass scratch: blocked workloads of this class seen in one phase */
    bool dirty;           /* the next pass is to look at this class's queued work */
    bool examine;         /* pass scratch: this pass looks at it */
    int32_t queued;       /* queued workloads of this class */
    int32_t queued_in[3]; /* of which P1, automatic, P2 (by sched__rank) */
    /*
     * Some queued work of this class may be waiting for room (not for quota):
     * freed capacity in the class is a reason to look at the project again.
     */
    bool wants_capacity;
    /*
     * Its queued work is to be looked at only because devices were freed on
     * the nodes in its class's grown list (room_dirty); this pass then looks
     * only if one of them could hold what the work needs (room_only: not
     * yet decided). What the work needs is learnt when it is looked at:
     * per replica, the fewest whole devices, the smallest share, the least
     * CPU and memory asked by its opportunistic work blocked for room
     * (known: nothing else of it waits for something room could change).
     */
    struct ivec p2_run; /* its work running as P2 in this class (where the search finds victims) */
    bool listed_waiting; /* in its class's waiting list */
    /* Filed in its class's room index (under idx_key) or list of unknown needs (room.c). */
    bool indexed, full_wanted, full_listed;
    double idx_key;
    bool room_dirty, room_only;
    uint32_t room_pass; /* the pass that last looked at it */
    /*
     * The pass whose walk of its class's index went by it, due, without
     * taking it (as if looked at: room__next), and how many wakes within
     * that pass its class had had by then (cls.wake_seq).
     */
    uint32_t went_pass, went_seq;
    /*
     * Overdue work of this class was found blocked behind another's
     * head-of-line reservation when it was last looked at (kept through a
     * look that went by part of its work): a look in full would have it
     * take the reservation once that is free. hol_pass: a reservation of
     * the class ended, and this is the pass (the next) that looks at the
     * project for it, in full only where it is due and the reservation free.
     */
    bool hol_due;
    uint32_t hol_pass;
    /*
     * Passed by room_decide in this pass (room_closed): how much of its
     * class's grown_pass it had seen, and how many of its queued workloads
     * the scan went by since (each would have been found blocked).
     */
    bool room_closed;
    int32_t room_seen, room_passed;
    struct {
        bool known;
        int32_t whole, share;
        int64_t cpu, mem;
    } room;
};

/*
 * A project's queue: workload indices in queue order and beside each its
 * sched__queue_key (scans skip work without reading the workload), in two
 * blocks of one layout. Both start `front` entries into their blocks: a pass
 * takes work near the head, and moving the few entries before it costs less
 * than moving the tail behind it, which can be thousands long.
 */
struct queue {
    int32_t *v, *key;
    int32_t n, front, cap; /* cap: entries a block holds, the front's included */
};

struct project {
    int64_t id, org_id;
    int32_t org;
    int weight;
    struct quota *quotas;
    int32_t n_quotas, cap_quotas;
    struct queue queue;
    int32_t queued_cpu[3]; /* queued CPU-only workloads, by sched__rank */
    struct ivec pools; /* pools it may use (NONE: no pool), valid at fleet generation pools_gen */
    uint32_t pools_gen;
    bool dirty;     /* in the next pass's list */
    bool dirty_all; /* every class is to be looked at, not only those marked */
    /* scratch for one pass */
    bool examine_cpu;        /* its CPU-only work is looked at */
    int32_t cursor, blocked; /* blocked: of its CPU-only work */
    int32_t open_classes; /* classes (CPU-only counts as one) not yet blocked past the lookahead */
    bool stopped_early;   /* a scan ended at the lookahead with work left unexamined */
    int64_t wake_at;      /* its earliest pending timer, 0 for none */
    double share_key;
    uint32_t in_pass; /* the pass that looks at it (its list, or taken from a room index) */
};

struct org_cap {
    int32_t cls;
    int64_t limit, used;
};

struct org {
    int64_t id;
    struct org_cap *caps;
    int32_t n_caps, cap_caps;
    struct ivec members; /* its projects */
};

/* ---- workloads ---- */

/*
 * The table of workloads is far larger than the cache, and a pass looks at
 * thousands of rows: what it reads of each comes first, on one cache line,
 * and the spec's such fields on the next (sched_workload_spec).
 */
struct workload {
    int32_t project, cls; /* cls NONE for CPU-only */
    /*
     * The class it holds while running (what the usage, victim and hold rules
     * read): spec.pclass, or for automatic work the class the rule gave it at
     * admission; while queued, the class it was last judged as.
     */
    enum sched_class runs_as;
    enum sched_state state;
    int32_t victims_pending;  /* as a preemptor */
    uint32_t fits_generation; /* fleet generation ever_fits was computed at, 0: never */
    bool ever_fits;
    bool reclaim_ready; /* its victims have all released: first in the next pass */
    bool in_use;
    int64_t blocked_since_ms; /* 0 when not blocked on capacity */
    struct ivec reserved;     /* nodes held for it */
    struct sched_workload_spec spec __attribute__((aligned(64)));
    struct sched_reason reason;
    int64_t started_ms, checkpoint_ms;
    struct sched_assign *assigns;
    int32_t *at; /* per assign: node index, then device index (NONE: CPU only) */
    int32_t n_assigns;
    int32_t p2_pos;        /* running as P2: its index in its quota's p2_run */
    int64_t preemptor_id;  /* as a victim: who it makes room for, or 0 */
    int64_t hold_taken_by; /* who took over a node held for it (sched_workload_info) */
} __attribute__((aligned(64)));

struct sched {
    struct sched_config cfg;
    struct idmap class_ids, node_ids, gpu_ids, pool_ids, project_ids, org_ids, workload_ids;
    struct cls *classes;
    int32_t n_classes, cap_classes;
    struct node *nodes;
    int32_t n_nodes, cap_nodes;
    struct slot *slots;
    int32_t n_slots, cap_slots;
    struct gpu *gpus;
    int32_t n_gpus, cap_gpus;
    struct pool *pools;
    int32_t n_pools, cap_pools;
    struct project *projects;
    int32_t n_projects, cap_projects;
    struct org *orgs;
    int32_t n_orgs, cap_orgs;
    struct workload *wls;
    int32_t n_wls, cap_wls;
    struct ivec free_wls;
    struct ivec dirty; /* projects to look at in the next pass */
    struct ivec ready; /* preemptors whose victims have all released */
    /*
     * Lending held for preemptors, in triples (workload, pool, milli): the
     * freed nodes are held for a preemptor, and so is what its plan borrows
     * of a pool with a lending limit, which work elsewhere on the pool could
     * otherwise take before its victims have gone.
     */
    struct ivec promises;
    /* Timers: (time, project) in a min-heap; a due timer makes its project dirty. */
    struct timer {
        int64_t at;
        int32_t project;
    } *timers;
    int32_t n_timers, cap_timers;
    uint32_t cpu_cursor;
    int64_t clock_ms;          /* the latest time the core was given */
    uint32_t fleet_generation; /* bumped when nodes, GPUs, labels or pools change */
    uint32_t pass_no;          /* counts passes, from 1 */
    struct sched_stats stats;
    uint32_t dirty_for;        /* the pass that takes `dirty` (what is marked now is for it) */
    bool passing;              /* a pass is under way */
    struct ivec pass_todo;     /* the projects the pass under way looks at (empty: none) */
    uint32_t room_gen;         /* fleet generation the room indexes were built at, + 1 */
    /* scratch for placing gangs */
    struct sched_assign *gang_as;
    struct placed *gang_placed; /* per assignment: where it is and its device was (place.c) */
    int32_t *gang_nodes, *gang_bins;
    size_t scratch_as, scratch_placed, scratch_rn, scratch_bins;
    /* scratch for policies */
    int32_t *view_free;
    int64_t *view_ids;
    int32_t *view_gpus;
    int *view_pick;
    /* scratch for preemption: values valid where their stamp equals epoch */
    uint32_t epoch;
    int64_t protected_until; /* earliest end of a minimum runtime that kept a victim, 0: none */
    uint32_t *gpu_stamp, *node_stamp, *wl_stamp, *proj_stamp;
    uint32_t *node_seen, seen_epoch; /* nodes a victim search has looked at (reclaim.c) */
    int32_t *vfree;
    int64_t *vcpu, *vmem, *vused, *vguar;
    int64_t *vlent; /* per pool: what it lends in the plan (reclaim.c, vlent_of) */
    uint32_t *pool_stamp;
    size_t scratch_gpus, scratch_nodes, scratch_wls, scratch_projects, scratch_pools;
};

/* ---- sched.c ---- */

struct quota *sched__quota(struct project *p, int32_t cls, bool create);
int64_t sched__guaranteed(const struct sched *s, const struct project *p, const struct quota *q);
struct org_cap *sched__org_cap(struct sched *s, int32_t org, int32_t cls, bool create);
/* The next pass looks at the project's work of every class. */
void sched__mark_dirty(struct sched *s, int32_t project);
/* The next pass looks at the project's work of one class (and of those marked otherwise). */
void sched__mark_class_dirty(struct sched *s, int32_t project, int32_t cls);
/* Devices of a class were freed: projects waiting for room in it are looked at again. */
void sched__class_freed(struct sched *s, int32_t cls);
/*
 * The class's head-of-line reservation ended: projects waiting for room in
 * it are looked at again, each in full only if its overdue work may take the
 * reservation (struct quota's hol_due), else for the room freed.
 */
void sched__hol_freed(struct sched *s, int32_t cls);
/* Whether this pass looks at q in full for its class's free reservation (room.c). */
bool sched__hol_look(const struct sched *s, const struct quota *q);
/*
 * Likewise, where the devices freed are on these nodes only (every other
 * node has as little room as before): they join the class's grown list.
 */
void sched__nodes_freed(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n);
/* Looks at project again at when_ms (a reservation falls due, a victim's minimum runtime ends). */
void sched__wake_at(struct sched *s, int64_t when_ms, int32_t project);
/* Marks dirty every project whose timer is due at now_ms. */
void sched__fire_timers(struct sched *s, int64_t now_ms);
/* Whether p (or its organization) owns the pool: work there is owned only for its owner. */
bool sched__owns_pool(const struct sched *s, const struct project *p, int32_t pool);
bool sched__project_may_use_pool(const struct sched *s, const struct project *p, int32_t pool);
void sched__queue_remove(struct sched *s, int32_t w);
/* Queue order of the priority classes: P1, then automatic (it may be either), then P2. */
enum { RANK_P1, RANK_AUTO, RANK_P2 };
static inline int32_t sched__rank(enum sched_class c)
{
    return c == SCHED_P1 ? RANK_P1 : c == SCHED_AUTO ? RANK_AUTO : RANK_P2;
}
/* A queued workload's GPU class and rank in one int: (cls + 1) * 4 + rank. */
static inline int32_t sched__queue_key(const struct workload *wl)
{
    return (wl->cls + 1) * 4 + sched__rank(wl->spec.pclass);
}
void sched__queue_insert(struct sched *s, int32_t w);
void sched__unreserve(struct sched *s, int32_t w);
/* Gives back the lending held for w (pass.c); wakes whoever it may let borrow. */
void sched__unpromise(struct sched *s, int32_t w);
/* Usage bookkeeping when a workload starts or stops holding its GPUs. */
void sched__charge(struct sched *s, int32_t w, int sign);
/* The same at a time that may be before the core's clock (an end a backend reports late). */
void sched__charge_at(struct sched *s, int32_t w, int sign, int64_t at_ms);
/* The class the automatic rule gives w now: P1 while the project's owned work plus w fits. */
enum sched_class sched__auto_class(const struct sched *s, int32_t w);

/* ---- place.c ---- */

void place__gpu_take(struct sched *s, int32_t g, int32_t milli);
void place__gpu_give(struct sched *s, int32_t g, int32_t milli);
struct bin *place__bin(const struct sched *s, int32_t cls, int32_t pool);
struct bin_room *place__room(const struct sched *s, int32_t cls, int32_t pool);
void place__slot_link(struct sched *s, int32_t slot);
void place__slot_unlink(struct sched *s, int32_t slot);
void place__gpu_link(struct sched *s, int32_t g);
void place__gpu_unlink(struct sched *s, int32_t g);
bool place__node_fits_labels(const struct node *n, const struct sched_workload_spec *spec);
/* What w holds of device g (milli) counts against its pool's lending (sign +1) or stops (-1). */
void place__lend(struct sched *s, int32_t w, int32_t g, int32_t milli, int sign);
/*
 * Whether pool (NONE: none) may lend milli more to w's project (always, to
 * its owner), what it holds for other preemptors counted as lent.
 */
bool place__may_lend(const struct sched *s, int32_t w, int32_t pool, int64_t milli);
/* What pool's lending limit holds for w (sched.promises), 0 when nothing. */
int64_t place__promised_to(const struct sched *s, int32_t w, int32_t pool);
/*
 * Places every replica of w, or none: on success its assigns are set and the
 * capacity is taken. ignore_hol tells whether head-of-line reservations of
 * other workloads may be ignored (P1 work ignores those of P2 work).
 */
bool place__gang(struct sched *s, int32_t w);
/* Releases everything w holds. */
void place__release(struct sched *s, int32_t w);
/* Fills w->at from w->assigns (the indices behind the ids, so hot paths skip the id maps). */
void place__index_assigns(struct sched *s, int32_t w);
/* Largest per-replica amount the class could give this workload now (for reasons). */
int64_t place__largest_free(const struct sched *s, int32_t w);
/*
 * Pools w's project may not use where one replica of w would fit (now: on a
 * ready node with the room free now; else: on a node not down, at all):
 * lending they could do. Up to max ids, each once; returns how many.
 */
size_t place__closed_room(const struct sched *s, int32_t w, bool now, int64_t *ret_pool_ids,
                          size_t max);
/* Whether some node could ever hold one replica of w (class, size, labels). */
bool place__ever_fits(const struct sched *s, int32_t w);
/* The index of block b among place__blocks' (its slots: block_slots[block_start[i]..]), or NONE. */
int32_t place__block_index(struct sched *s, int32_t cls, int64_t b);
/* Topology blocks holding devices of a class, each once (cached). */
const int64_t *place__blocks(struct sched *s, int32_t cls, int32_t *ret_n);
/* Whether any ready node has room for one replica of this size, ignoring who may use it. */
bool place__any_room(const struct sched *s, int32_t cls, int32_t milli);
/* Whether w may put a replica on node n now (state, labels, reservation, block). */
bool place__node_usable(const struct sched *s, int32_t w, int32_t n);
bool place__gpu_usable(const struct sched *s, int32_t w, int32_t g);

/* What w asks over all its replicas (milli-GPU). */
static inline int64_t sched__need(const struct workload *wl)
{
    return (int64_t)wl->spec.replicas * wl->spec.gpu_milli;
}

/* A project's guarantee in a class (0 without a quota there). */
static inline int64_t sched__guaranteed_in(const struct sched *s, int32_t project, int32_t cls)
{
    struct project *p = &((struct sched *)s)->projects[project];
    struct quota *q = sched__quota(p, cls, false);
    return q ? sched__guaranteed(s, p, q) : 0;
}

/* What a project holds in a class, owned and opportunistic (0 without a quota there). */
static inline int64_t sched__held_in(struct sched *s, int32_t project, int32_t cls)
{
    struct quota *q = sched__quota(&s->projects[project], cls, false);
    return q ? q->p1 + q->p2 : 0;
}

/* ---- share.c ---- */

/* The core's clock moves to now_ms when that is later. */
static inline void share__tick(struct sched *s, int64_t now_ms)
{
    if (now_ms > s->clock_ms)
        s->clock_ms = now_ms;
}
/* Counts what q's project held as P2 work up to t into its decayed usage (decayed rule only). */
void share__advance(const struct sched *s, struct quota *q, int64_t t);
/*
 * Before q's P2 holding changes by delta (milli) at at_ms: counts what was
 * held up to the clock, and corrects for the change having come at at_ms
 * when that is earlier (the usage since counted at the wrong rate).
 */
void share__charge(const struct sched *s, struct quota *q, int64_t delta, int64_t at_ms);
/* The project's key for borrowed capacity at now (sched.h, enum sched_fair_share). */
double share__key(const struct sched *s, const struct project *p, int64_t now);
/*
 * The decayed rule's reasons. share__took: a project's turn admitted this
 * workload (by id) in the opportunistic phase. share__waits: w was just
 * found waiting for room; if it is P2 work and another project with a
 * lower key took capacity of its class in this pass's opportunistic phase,
 * its reason names that project.
 */
void share__took(struct sched *s, int64_t workload_id);
void share__waits(struct sched *s, int32_t w);

/* Queued work a phase looks at: P1 and automatic work first, then automatic and P2 work. */
static inline int32_t sched__in_phase(enum sched_class phase, const int32_t queued[3])
{
    return queued[RANK_AUTO] + (phase == SCHED_P1 ? queued[RANK_P1] : queued[RANK_P2]);
}

/* ---- pass.c ---- */

/* Holds node n for workload w (taking it from any other holder). */
void pass__reserve_node(struct sched *s, int32_t w, int32_t n);

/* ---- room.c ---- */

/* This pass looks at q's work: its room record is learnt afresh. */
void room__begin(struct sched *s, struct quota *q);
/* Adds what w, just found blocked, waits for to its quota's room record. */
void room__note(struct sched *s, int32_t w);
/* The scan went by a workload of a class room__decide passed. */
void room__went_by(struct sched *s, struct project *p, int32_t cls);
/*
 * When p's turn comes, for each class looked at only for room: looked at in
 * full if a node freed since could hold some of its work, else passed.
 * False when nothing of p is left to look at.
 */
bool room__decide(struct sched *s, struct project *p);
/* Whether the classes keep an index of the projects waiting only for room. */
bool room__indexing(const struct sched *s);
/* Files each quota of project pi anew: in its class's index, its list of unknown needs, or neither.
 */
void room__refile(struct sched *s, int32_t pi);
/* Builds every index again when the fleet changed since (keys move with capacity and pools). */
void room__rebuild(struct sched *s);
/* Devices of cls were freed on these nodes between passes: wakes what the index does not cover. */
void room__wake(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n);
/*
 * The same within a pass: the projects it looks at are woken by what they
 * wait for now, the index's other entries are due in the next pass.
 */
void room__wake_within(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n);
/*
 * Whether this pass's walk of q's class is due for q (after a wake within
 * the last pass: not if that pass looked at it, or its walk went by it after
 * the last such wake). The quota's pass, not its project's: a project
 * that the last pass took for another class, after the wake, did not look
 * at this one (property seeds 20928 and 39525 parted from the exhaustive
 * core there).
 */
bool room__due(const struct sched *s, const struct quota *q);
/* The class's head-of-line reservation ended: wakes its waiting projects (sched__hol_freed). */
void room__hol_wake(struct sched *s, int32_t cls);
/* A pass begins: the walks of the classes whose room grew. */
void room__pass_start(struct sched *s);
/*
 * The next project, not yet in the pass, whose turn comes before project top
 * (NONE: any) and that a freed node could serve; NONE when there is none.
 */
int32_t room__next(struct sched *s, int32_t top);

/* ---- reclaim.c ---- */

/*
 * Finds the fewest, cheapest victims that make room for every replica of the
 * P1 workload w (and bring its project under its limit, over_limit milli);
 * on success marks them preempting, holds the freed nodes for w and records
 * the decision in d.
 */
bool reclaim__plan(struct sched *s, int32_t w, int64_t over_limit, int64_t now,
                   struct sched_decisions *d);
/*
 * For recovery: holds for the preemptor w, whose victims (n of them) are
 * still stopping, the nodes its replicas fit on once they have gone, as
 * the decision did (its nodes are not stored); the victims' nodes where no
 * such nodes are found.
 */
void reclaim__hold_restored(struct sched *s, int32_t w, const int32_t *victims, int32_t n);
/*
 * For recovery: the same for a preemptor whose victims have all gone since
 * its last try, its victims' nodes (n of them) first.
 */
void reclaim__hold_ready(struct sched *s, int32_t w, const int32_t *nodes, int32_t n);
/* Whether w holds a device of a pool its project owns (want) or does not own (!want). */
bool reclaim__on_pool_owned(const struct sched *s, int32_t w, bool want);
/* Frees the search's scratch arrays. */
void reclaim__release(struct sched *s);

#endif
