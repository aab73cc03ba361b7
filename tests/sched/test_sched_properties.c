/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Property tests of the scheduler core (src/sched/sched.h, DESIGN.md
 * section 3) over randomized event sequences. Every seed builds a random
 * fleet (1-3 GPU classes, nodes of 1-8 GPUs, labels, topology blocks, pools
 * owned by projects or organizations with access lists), random tenants
 * (weights, guarantees derived from pools or explicit, limits, org caps) and
 * then plays random events: submits of mixed shapes (shares, 1-8 GPUs,
 * multi-replica gangs, CPU-only, P1/P2/automatic, priorities, selectors, pool
 * restrictions, minimum runtimes, requeue or not), cancels, completions,
 * releases of preempting victims (after their grace or early), checkpoints,
 * node drains, restarts (a new scheduler restored from the allocations) and
 * passes at increasing times.
 *
 * The test keeps its own shadow model: it applies every decision a pass
 * returns and so knows who holds which share of which GPU. After each pass it
 * checks the invariants against the model and the scheduler's answers:
 * capacity (GPU milli, node CPU and memory), limits and org caps, P1 within
 * guarantee, the class automatic work gets (owned exactly while the
 * project's owned work plus it fits the guarantee), gang shape and placement constraints, who may
 * be a victim and who may preempt, liveness of a reclaim once its victims released, queue order
 * (requeued work keeps its submit order), a reason for every queued workload, and
 * sched_project_usage / sched_class_capacity / workload state equal to the model. Deterministic: a
 * splitmix64 generator per seed.
 *
 * Fair share: one seed in three runs the decayed rule (SCHED_SHARE_DECAYED,
 * a half-life of 20 to 180 s, so that it matters within a seed's minutes);
 * the others the current rule. Under both, the opportunistic admissions of
 * a pass come in the rule's order: when project A is admitted before
 * project B, A's key (computed from the model: borrowed now, plus with the
 * decayed rule the model's own exactly decayed P2 usage, over capacity, for
 * the weight) was at most B's at that moment. So no project with queued
 * work and a lower key is passed over, and the one ahead never keeps its
 * lead once its key is higher. The core's decayed usage (sched_past_usage)
 * equals the model's after every pass, across restarts (carried from the
 * old core to the new one as the engine does) and across ends reported
 * late (up to 3 s before the core's clock), and a waiting
 * workload that names a project ahead of it names one admitted before it
 * in that class in that pass, under the decayed rule only.
 *
 * Environment: SCHED_PROP_SEEDS, SCHED_PROP_EVENTS, SCHED_PROP_SEED0 override
 * the number of seeds (1000), events per seed (300) and the first seed (1);
 * SCHED_PROP_VERBOSE=1 prints statistics. Every check always runs: none can be
 * turned off.
 *
 * A restart rebuilds the scheduler from the model as the engine does from
 * its store: sched_restore_running for what holds GPUs, sched_submit for
 * the queue (original submit_ms), then in the order they were decided
 * sched_restore_preemption for reclaims still waiting on their victims and
 * sched_restore_reclaim_ready for those whose victims all released with no
 * pass since (the ledger entry closed, its first try not recorded), so
 * every check, liveness included, continues across it.
 *
 * Readings of sched.h this file relies on:
 * - Usage (sched_project_usage, quota snapshots, limits, org caps) counts
 *   running and preempting work.
 * - A derived guarantee counts the GPUs of the project's own pools on nodes
 *   that are not down, capped at the limit (drain does not reduce it).
 * - A workload restricted to pools (n_pools > 0) runs only on GPUs of those
 *   pools; same_block gangs have every replica on nodes of one block_id.
 * - queue_position numbers a project's queued work 1..n; within one priority
 *   class (P1/P2) and priority, order is submit_ms then id.
 * - "A project at or above its guarantee never causes a preemption" is
 *   checked as: a preemption that takes another project's work requires the
 *   preemptor's project to hold less than its guarantee before the decision,
 *   not counting its own P2 victims of that decision (DESIGN 3.4 lets a
 *   project's own P2 work make way for its P1). Preemptions by a project at
 *   or above its guarantee are counted in the statistics.
 * - CPU-only workloads cannot be restored (sched_restore_running names
 *   devices only), so seeds with restarts submit none.
 */
#include "base/common.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "sched/sched.h"

/* ---- deterministic randomness ---- */

struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int64_t rng_range(struct rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static bool rng_pct(struct rng *r, int pct)
{
    return (int)(rng_next(r) % 100) < pct;
}

/* ---- the shadow model ---- */

#define M_CLS 3
#define M_NODES 12
#define M_GPUS (M_NODES * 8)
#define M_POOLS 3
#define M_PROJ 6
#define M_ORG 3
#define M_WL 400
#define M_TRACKS 64
#define M_TRACE 48

enum m_state { M_UNUSED = 0, M_QUEUED, M_RUNNING, M_PREEMPTING, M_GONE };

struct m_gpu {
    int64_t id;
    int node, cls, pool; /* pool -1: none */
    int32_t used;
};

struct m_node {
    int64_t id, cpu_cap, mem_cap, cpu_used, mem_used, block;
    uint32_t labels[4];
    int n_labels;
    enum sched_node_state state;
};

struct m_pool {
    int64_t id;
    int owner_proj, owner_org; /* -1 for none */
    int64_t acc_proj[M_PROJ], acc_org[M_ORG];
    size_t n_acc_proj, n_acc_org;
    bool lend_to_all;
    int64_t lending_limit; /* milli; 0: none */
};

struct m_proj {
    int64_t id;
    int org, weight;
    bool qset[M_CLS];
    int64_t g_expl[M_CLS]; /* -1: derived */
    int64_t limit[M_CLS];  /* -1: none */
};

struct m_org {
    int64_t id;
    int64_t cap[M_CLS]; /* -1: none */
};

struct m_assign {
    int32_t replica;
    int node, gpu; /* gpu -1: CPU-only */
    int32_t milli;
};

struct m_wl {
    struct sched_workload_spec spec;
    enum sched_class runs_as; /* what it was admitted as (P1 or P2) */
    enum m_state state;
    int proj, cls; /* cls -1: CPU-only */
    struct m_assign *as;
    int n_as;
    int64_t started, ckpt, kill_at;
    int track; /* liveness track as a preemptor, or -1 */
    int victim_of_track;
    struct sched_reason last_reason; /* after the last pass: a reason not set again is old */
};

struct track {
    bool active;
    int wl;
    int outstanding;
    int passes_after_free;
    int drains_at_decision;
    long seq; /* decision order: the order of the engine's ledger */
    /*
     * The nodes its victims ran on, in the decision's order of victims and
     * their devices, once each: what the engine reads back from their
     * allocations to restore a reclaim whose victims all released.
     */
    int64_t nodes[M_NODES];
    int n_nodes;
};

struct world {
    uint64_t seed;
    struct rng r;
    struct sched *s;
    struct sched_decisions d;
    struct sched_config cfg;
    int n_cls;
    int64_t cls_id[M_CLS];
    int n_nodes, n_gpus, n_pools, n_proj, n_org, n_wl;
    struct m_node nodes[M_NODES];
    struct m_gpu gpus[M_GPUS];
    struct m_pool pools[M_POOLS];
    struct m_proj proj[M_PROJ];
    struct m_org org[M_ORG];
    struct m_wl wl[M_WL];
    struct track tracks[M_TRACKS];
    int64_t now;
    int event;
    bool restarts_allowed, cpu_only_allowed;
    int drains;
    /* usage at the start of the current pass, [proj][cls] */
    int64_t held_before[M_PROJ][M_CLS], p1_before[M_PROJ][M_CLS];
    /* the decayed fair share: P2 usage (milli ms) decayed to used_at */
    double used[M_PROJ][M_CLS];
    int64_t used_at;
    /* P2 admissions of the current pass: project, class and every project's key before it */
    struct {
        int proj, cls;
        double key[M_PROJ];
    } * p2_turns;
    size_t n_p2_turns, cap_p2_turns;
    /* trace of recent events, printed on failure */
    char trace[M_TRACE][200];
    int n_trace;
    uint64_t trace_hash; /* of every event and decision, to compare two runs */
    bool failed;
    char failure[600];
    /* statistics */
    long st_passes, st_admits, st_preemptions, st_victims, st_requeues, st_own_at_g;
    long st_reclaims_done, st_restarts, st_reasons[SCHED_WAIT_NO_NODES + 1];
    long st_p2_turns, st_ahead;
};

static struct {
    long seeds, failed_seeds, passes, admits, preemptions, victims, requeues, own_at_g,
        reclaims_done, restarts, reasons[SCHED_WAIT_NO_NODES + 1];
    long decayed_seeds, p2_turns, ahead;
} g_tot;

static void tr(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tr(struct world *w, const char *fmt, ...)
{
    va_list ap;
    char *line = w->trace[w->n_trace % M_TRACE];
    int n = snprintf(line, sizeof w->trace[0], "#%d t=%" PRId64 " ", w->event, w->now);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof w->trace[0])
        vsnprintf(line + n, sizeof w->trace[0] - (size_t)n, fmt, ap);
    va_end(ap);
    w->n_trace++;
    for (const char *c = line; *c; c++)
        w->trace_hash = (w->trace_hash ^ (unsigned char)*c) * 0x100000001b3ULL;
    w->trace_hash = (w->trace_hash ^ '\n') * 0x100000001b3ULL;
    /* Every event as it happens, to compare two builds' decisions line by line. */
    if (getenv("SCHED_PROP_TRACE"))
        fprintf(stderr, "%s\n", line);
}

/* Records the first failure of a seed; returns cond. */
static bool check(struct world *w, bool cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool check(struct world *w, bool cond, const char *fmt, ...)
{
    va_list ap;
    if (cond || w->failed)
        return cond;
    w->failed = true;
    int n = snprintf(w->failure, sizeof w->failure, "seed %" PRIu64 " event %d t=%" PRId64 ": ",
                     w->seed, w->event, w->now);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof w->failure)
        vsnprintf(w->failure + n, sizeof w->failure - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

static int wl_index(const struct world *w, int64_t id)
{
    return id >= 1 && id <= w->n_wl ? (int)(id - 1) : -1;
}

static int node_index(const struct world *w, int64_t id)
{
    for (int i = 0; i < w->n_nodes; i++)
        if (w->nodes[i].id == id)
            return i;
    return -1;
}

static int gpu_index(const struct world *w, int64_t id)
{
    for (int i = 0; i < w->n_gpus; i++)
        if (w->gpus[i].id == id)
            return i;
    return -1;
}

static int cls_index(const struct world *w, int64_t id)
{
    for (int i = 0; i < w->n_cls; i++)
        if (w->cls_id[i] == id)
            return i;
    return -1;
}

static int64_t need_of(const struct sched_workload_spec *sp)
{
    return (int64_t)sp->replicas * sp->gpu_milli;
}

static int64_t m_guarantee(const struct world *w, int p, int c)
{
    const struct m_proj *pr = &w->proj[p];
    if (!pr->qset[c])
        return 0;
    if (pr->g_expl[c] >= 0)
        return pr->g_expl[c];
    int64_t g = 0;
    for (int i = 0; i < w->n_gpus; i++) {
        const struct m_gpu *gp = &w->gpus[i];
        if (gp->cls == c && gp->pool >= 0 && w->pools[gp->pool].owner_proj == p &&
            w->nodes[gp->node].state != SCHED_NODE_DOWN)
            g += 1000;
    }
    if (pr->limit[c] >= 0 && g > pr->limit[c])
        g = pr->limit[c];
    return g;
}

/* Held milli of a project in a class, P1 and P2 (running and preempting). */
static void m_held(const struct world *w, int p, int c, int64_t *ret_p1, int64_t *ret_p2)
{
    int64_t p1 = 0, p2 = 0;
    for (int i = 0; i < w->n_wl; i++) {
        const struct m_wl *x = &w->wl[i];
        if (x->proj != p || x->cls != c ||
            (x->state != M_RUNNING && x->state != M_PREEMPTING))
            continue;
        if (x->runs_as == SCHED_P1)
            p1 += need_of(&x->spec);
        else
            p2 += need_of(&x->spec);
    }
    *ret_p1 = p1;
    *ret_p2 = p2;
}

static int64_t m_total(const struct world *w, int p, int c)
{
    int64_t p1, p2;
    m_held(w, p, c, &p1, &p2);
    return p1 + p2;
}

static int64_t m_org_held(const struct world *w, int o, int c)
{
    int64_t sum = 0;
    for (int p = 0; p < w->n_proj; p++)
        if (w->proj[p].org == o)
            sum += m_total(w, p, c);
    return sum;
}

static bool m_owns_pool(const struct world *w, int p, int pool)
{
    const struct m_pool *po = &w->pools[pool];
    return po->owner_proj == p || (po->owner_org >= 0 && po->owner_org == w->proj[p].org);
}

/* Whether y holds a device of a pool that project p owns and y's project does not. */
static bool m_on_pool_of(const struct world *w, const struct m_wl *y, int p)
{
    for (int i = 0; i < y->n_as; i++) {
        int g = y->as[i].gpu;
        int pool = g >= 0 ? w->gpus[g].pool : -1;
        if (pool >= 0 && m_owns_pool(w, p, pool) && !m_owns_pool(w, y->proj, pool))
            return true;
    }
    return false;
}

static bool m_on_own_pool(const struct world *w, const struct m_wl *y)
{
    for (int i = 0; i < y->n_as; i++) {
        int g = y->as[i].gpu;
        if (g >= 0 && w->gpus[g].pool >= 0 && m_owns_pool(w, y->proj, w->gpus[g].pool))
            return true;
    }
    return false;
}

static bool m_may_use_pool(const struct world *w, int p, int pool)
{
    const struct m_pool *po = &w->pools[pool];
    int org = w->proj[p].org;
    if (po->owner_proj == p || po->owner_org == org || po->lend_to_all)
        return true;
    for (size_t i = 0; i < po->n_acc_proj; i++)
        if (po->acc_proj[i] == w->proj[p].id)
            return true;
    for (size_t i = 0; i < po->n_acc_org; i++)
        if (po->acc_org[i] == w->org[org].id)
            return true;
    return false;
}

/* ---- the fair share, in the model ---- */

static bool m_decayed(const struct world *w)
{
    return w->cfg.fair_share == SCHED_SHARE_DECAYED;
}

/* Brings the model's decayed usage to now: what each project held as P2 since, exactly. */
static void m_advance(struct world *w)
{
    double h = (double)w->cfg.half_life_ms, gone;
    if (!m_decayed(w) || w->now <= w->used_at)
        return;
    gone = 1 - exp2(-(double)(w->now - w->used_at) / h);
    for (int p = 0; p < w->n_proj; p++)
        for (int c = 0; c < w->n_cls; c++) {
            int64_t p1, p2;
            m_held(w, p, c, &p1, &p2);
            w->used[p][c] = w->used[p][c] * (1 - gone) + (double)p2 * h / M_LN2 * gone;
        }
    w->used_at = w->now;
}

static int64_t m_capacity(const struct world *w, int c)
{
    int64_t cap = 0;
    for (int i = 0; i < w->n_gpus; i++)
        if (w->gpus[i].cls == c && w->nodes[w->gpus[i].node].state == SCHED_NODE_READY)
            cap += 1000;
    return cap;
}

/* A project's key for borrowed capacity now (sched.h, enum sched_fair_share), from the model. */
static double m_key(const struct world *w, int p)
{
    double most = 0;
    for (int c = 0; c < w->n_cls; c++) {
        int64_t p1, p2, cap = m_capacity(w, c);
        m_held(w, p, c, &p1, &p2);
        double amount =
            p1 + p2 > m_guarantee(w, p, c) ? (double)(p1 + p2 - m_guarantee(w, p, c)) : 0;
        if (m_decayed(w))
            amount += w->used[p][c] * M_LN2 / (double)w->cfg.half_life_ms;
        if (cap > 0 && amount / (double)cap > most)
            most = amount / (double)cap;
    }
    return most / w->proj[p].weight;
}

/* ---- building the scheduler from the model ---- */

static void configure(struct world *w)
{
    w->s = sched_new(&w->cfg);
    check(w, w->s != NULL, "sched_new failed");
    if (!w->s)
        return;
    for (int c = 0; c < w->n_cls; c++)
        check(w, sched_add_class(w->s, w->cls_id[c]) == 0, "add_class");
    for (int p = 0; p < w->n_proj; p++)
        check(w,
              sched_set_project(w->s, w->proj[p].id, w->org[w->proj[p].org].id,
                                w->proj[p].weight) == 0,
              "set_project");
    for (int i = 0; i < w->n_pools; i++) {
        const struct m_pool *po = &w->pools[i];
        struct sched_pool_spec ps;
        memset(&ps, 0, sizeof ps);
        ps.id = po->id;
        ps.owner_project_id = po->owner_proj >= 0 ? w->proj[po->owner_proj].id : 0;
        ps.owner_org_id = po->owner_org >= 0 ? w->org[po->owner_org].id : 0;
        ps.access_project_ids = po->acc_proj;
        ps.n_access_projects = po->n_acc_proj;
        ps.access_org_ids = po->acc_org;
        ps.n_access_orgs = po->n_acc_org;
        ps.lend_to_all = po->lend_to_all;
        ps.lending_limit = po->lending_limit;
        check(w, sched_set_pool(w->s, &ps) == 0, "set_pool");
    }
    for (int n = 0; n < w->n_nodes; n++) {
        const struct m_node *nd = &w->nodes[n];
        struct sched_node_spec ns;
        memset(&ns, 0, sizeof ns);
        ns.id = nd->id;
        ns.cluster_id = 1 + n % 2;
        ns.cpu_milli = nd->cpu_cap;
        ns.mem_mib = nd->mem_cap;
        for (int k = 0; k < nd->n_labels; k++)
            ns.labels[k] = nd->labels[k];
        ns.n_labels = nd->n_labels;
        ns.block_id = nd->block;
        check(w, sched_add_node(w->s, &ns) == 0, "add_node");
        if (nd->state != SCHED_NODE_READY)
            check(w, sched_set_node_state(w->s, nd->id, nd->state) == 0, "set_node_state");
    }
    for (int i = 0; i < w->n_gpus; i++) {
        const struct m_gpu *gp = &w->gpus[i];
        check(w,
              sched_add_gpu(w->s, w->nodes[gp->node].id, gp->id, w->cls_id[gp->cls],
                            gp->pool >= 0 ? w->pools[gp->pool].id : 0) == 0,
              "add_gpu");
    }
    for (int p = 0; p < w->n_proj; p++)
        for (int c = 0; c < w->n_cls; c++)
            if (w->proj[p].qset[c])
                check(w,
                      sched_set_quota(w->s, w->proj[p].id, w->cls_id[c], w->proj[p].g_expl[c],
                                      w->proj[p].limit[c]) == 0,
                      "set_quota");
    for (int o = 0; o < w->n_org; o++)
        for (int c = 0; c < w->n_cls; c++)
            if (w->org[o].cap[c] >= 0)
                check(w, sched_set_org_cap(w->s, w->org[o].id, w->cls_id[c], w->org[o].cap[c]) == 0,
                      "set_org_cap");
}

static void build_world(struct world *w, uint64_t seed, bool exhaustive)
{
    struct rng *r = &w->r;
    memset(w, 0, sizeof *w);
    w->seed = seed;
    w->trace_hash = 0xcbf29ce484222325ULL;
    w->r.s = seed * 0x2545f4914f6cdd1dULL + 17;
    w->restarts_allowed = seed % 4 == 0;
    w->cpu_only_allowed = !w->restarts_allowed;
    sched_config_init(&w->cfg);
    w->cfg.reserve_after_ms = rng_range(r, 0, 3) * 10000;
    w->cfg.default_grace_ms = rng_range(r, 0, 20000);
    w->cfg.lookahead = (int)rng_range(r, 0, 6);
    w->cfg.exhaustive = exhaustive;
    w->now = 1000000;
    /* Not drawn from r, so that each seed's world is the one it always was. */
    if (seed % 3 == 1) {
        w->cfg.fair_share = SCHED_SHARE_DECAYED;
        w->cfg.half_life_ms = 20000 + (int64_t)(seed / 3 % 5) * 40000;
    }
    w->used_at = w->now;

    w->n_cls = (int)rng_range(r, 1, M_CLS);
    for (int c = 0; c < w->n_cls; c++)
        w->cls_id[c] = 11 + c;
    w->n_org = (int)rng_range(r, 1, M_ORG);
    for (int o = 0; o < w->n_org; o++) {
        w->org[o].id = 500 + o;
        for (int c = 0; c < M_CLS; c++)
            w->org[o].cap[c] = -1;
    }
    w->n_proj = (int)rng_range(r, 2, M_PROJ);
    for (int p = 0; p < w->n_proj; p++) {
        w->proj[p].id = 1000 + p;
        w->proj[p].org = (int)rng_range(r, 0, w->n_org - 1);
        w->proj[p].weight = (int)rng_range(r, 1, 4);
        for (int c = 0; c < M_CLS; c++)
            w->proj[p].limit[c] = -1;
    }
    w->n_pools = (int)rng_range(r, 0, M_POOLS);
    for (int i = 0; i < w->n_pools; i++) {
        struct m_pool *po = &w->pools[i];
        po->id = 70 + i;
        po->owner_proj = po->owner_org = -1;
        if (rng_pct(r, 75))
            po->owner_proj = (int)rng_range(r, 0, w->n_proj - 1);
        else
            po->owner_org = (int)rng_range(r, 0, w->n_org - 1);
        for (int p = 0; p < w->n_proj; p++)
            if (rng_pct(r, 35))
                po->acc_proj[po->n_acc_proj++] = w->proj[p].id;
        for (int o = 0; o < w->n_org; o++)
            if (rng_pct(r, 20))
                po->acc_org[po->n_acc_org++] = w->org[o].id;
        po->lend_to_all = rng_pct(r, 15);
        po->lending_limit = rng_pct(r, 30) ? rng_range(r, 1, 12) * 500 : 0;
    }
    w->n_nodes = (int)rng_range(r, 2, M_NODES);
    for (int n = 0; n < w->n_nodes; n++) {
        struct m_node *nd = &w->nodes[n];
        nd->id = 1 + n;
        nd->cpu_cap = rng_pct(r, 50) ? 0 : rng_range(r, 8, 64) * 1000;
        nd->mem_cap = rng_pct(r, 50) ? 0 : rng_range(r, 32, 512) * 1024;
        nd->block = rng_range(r, 0, 2);
        for (uint32_t l = 1; l <= 4; l++)
            if (rng_pct(r, 40))
                nd->labels[nd->n_labels++] = l;
        nd->state = SCHED_NODE_READY;
        int n_g = (int)rng_range(r, 1, 8);
        int cls = (int)rng_range(r, 0, w->n_cls - 1);
        int cls2 = rng_pct(r, 15) ? (int)rng_range(r, 0, w->n_cls - 1) : cls;
        int pool = w->n_pools > 0 && rng_pct(r, 55) ? (int)rng_range(r, 0, w->n_pools - 1) : -1;
        for (int k = 0; k < n_g; k++) {
            struct m_gpu *gp = &w->gpus[w->n_gpus++];
            gp->id = nd->id * 100 + k + 1;
            gp->node = n;
            gp->cls = k < (n_g + 1) / 2 ? cls : cls2;
            gp->pool = pool;
        }
    }
    /* Quotas: guarantees never exceed a class's capacity in total. */
    for (int c = 0; c < w->n_cls; c++) {
        int64_t cap = 0, sum = 0;
        for (int i = 0; i < w->n_gpus; i++)
            if (w->gpus[i].cls == c)
                cap += 1000;
        for (int p = 0; p < w->n_proj; p++) {
            struct m_proj *pr = &w->proj[p];
            int pick = (int)rng_range(r, 0, 9);
            if (pick < 3)
                continue; /* no quota: guarantee 0, no limit */
            pr->qset[c] = true;
            pr->g_expl[c] = -1;
            sum += m_guarantee(w, p, c);
            if (pick >= 6) {
                pr->g_expl[c] = 0; /* explicit: filled below from what is left */
                sum -= m_guarantee(w, p, c);
            }
        }
        (void)sum;
        int64_t derived = 0;
        for (int p = 0; p < w->n_proj; p++)
            if (w->proj[p].qset[c] && w->proj[p].g_expl[c] < 0)
                derived += m_guarantee(w, p, c);
        int64_t left = cap - derived;
        for (int p = 0; p < w->n_proj; p++) {
            struct m_proj *pr = &w->proj[p];
            if (!pr->qset[c] || pr->g_expl[c] < 0)
                continue;
            int64_t g = left > 0 ? rng_range(r, 0, left / 500) * 500 : 0;
            if (g > left)
                g = left;
            pr->g_expl[c] = g;
            left -= g;
        }
        for (int p = 0; p < w->n_proj; p++) {
            struct m_proj *pr = &w->proj[p];
            if (pr->qset[c] && rng_pct(r, 50))
                pr->limit[c] = m_guarantee(w, p, c) + rng_range(r, 0, 8) * 1000 +
                               (rng_pct(r, 30) ? 500 : 0);
        }
    }
    for (int o = 0; o < w->n_org; o++)
        for (int c = 0; c < w->n_cls; c++)
            if (rng_pct(r, 30)) {
                int64_t g = 0;
                for (int p = 0; p < w->n_proj; p++)
                    if (w->proj[p].org == o)
                        g += m_guarantee(w, p, c);
                w->org[o].cap[c] = g + rng_range(r, 0, 6) * 1000;
            }
    for (int i = 0; i < M_TRACKS; i++)
        w->tracks[i].active = false;
    sched_decisions_init(&w->d);
    configure(w);
}

static void free_world(struct world *w)
{
    for (int i = 0; i < w->n_wl; i++)
        free(w->wl[i].as);
    sched_decisions_release(&w->d);
    sched_free(w->s);
    free(w->p2_turns);
    w->s = NULL;
}

/* ---- applying decisions to the model ---- */

static void m_take(struct world *w, struct m_wl *x, int sign)
{
    int last_replica = -1;
    for (int i = 0; i < x->n_as; i++) {
        const struct m_assign *a = &x->as[i];
        if (a->gpu >= 0)
            w->gpus[a->gpu].used += sign * a->milli;
        if (a->replica != last_replica) {
            w->nodes[a->node].cpu_used += sign * x->spec.cpu_milli;
            w->nodes[a->node].mem_used += sign * x->spec.mem_mib;
            last_replica = a->replica;
        }
    }
}

static void m_free(struct world *w, struct m_wl *x)
{
    m_take(w, x, -1);
    free(x->as);
    x->as = NULL;
    x->n_as = 0;
}

/* A victim released: the preemptor's track learns one fewer is outstanding. */
static void victim_gone(struct world *w, struct m_wl *x)
{
    if (x->victim_of_track >= 0) {
        struct track *t = &w->tracks[x->victim_of_track];
        if (t->active && t->outstanding > 0)
            t->outstanding--;
        x->victim_of_track = -1;
    }
}

static void drop_track(struct world *w, struct m_wl *x)
{
    if (x->track >= 0) {
        /* Its victims no longer count for this slot, which a later reclaim may reuse. */
        for (int i = 0; i < w->n_wl; i++) {
            if (w->wl[i].victim_of_track == x->track)
                w->wl[i].victim_of_track = -1;
        }
        w->tracks[x->track].active = false;
        x->track = -1;
    }
}

/* Checks one admit and applies it to the model. */
static void apply_admit(struct world *w, const struct sched_admit *a)
{
    int i = wl_index(w, a->workload_id);
    if (!check(w, i >= 0, "admit of unknown workload %" PRId64, a->workload_id))
        return;
    struct m_wl *x = &w->wl[i];
    const struct sched_workload_spec *sp = &x->spec;
    if (!check(w, x->state == M_QUEUED, "admitted workload %" PRId64 " was not queued (state %d)",
               sp->id, (int)x->state))
        return;
    if (!check(w, a->first_assign + a->n_assigns <= w->d.n_assigns, "admit assigns out of range"))
        return;
    size_t per = sp->class_id == 0 ? 1 : sp->gpu_milli >= 1000 ? (size_t)(sp->gpu_milli / 1000) : 1;
    if (!check(w, a->n_assigns == per * (size_t)sp->replicas,
               "workload %" PRId64 ": %zu assigns for %d replicas of %d milli", sp->id,
               a->n_assigns, sp->replicas, sp->gpu_milli))
        return;
    /* The class it runs as: its own, or for automatic work what the rule gives now. */
    check(w, a->automatic == (sp->pclass == SCHED_AUTO),
          "workload %" PRId64 ": automatic %d for class %d", sp->id, a->automatic,
          (int)sp->pclass);
    if (sp->pclass != SCHED_AUTO) {
        check(w, a->pclass == sp->pclass, "workload %" PRId64 " of class %d admitted as %d",
              sp->id, (int)sp->pclass, (int)a->pclass);
    } else if (x->cls >= 0) {
        int64_t p1, p2, g = m_guarantee(w, x->proj, x->cls);
        m_held(w, x->proj, x->cls, &p1, &p2);
        check(w, a->owned_held == p1 && a->guaranteed == g,
              "automatic workload %" PRId64 ": owned %" PRId64 " of %" PRId64
              " (model %" PRId64 " of %" PRId64 ")",
              sp->id, a->owned_held, a->guaranteed, p1, g);
        check(w, a->pclass == (p1 + need_of(sp) <= g ? SCHED_P1 : SCHED_P2),
              "automatic workload %" PRId64 " admitted as %d with owned %" PRId64 " + %" PRId64
              " against guarantee %" PRId64,
              sp->id, (int)a->pclass, p1, need_of(sp), g);
    }
    x->runs_as = a->pclass;
    x->as = xcalloc(a->n_assigns, sizeof *x->as);
    x->n_as = (int)a->n_assigns;
    int rep_node[SCHED_MAX_REPLICAS];
    int64_t rep_milli[SCHED_MAX_REPLICAS];
    for (int k = 0; k < sp->replicas; k++) {
        rep_node[k] = -1;
        rep_milli[k] = 0;
    }
    int64_t block = -1;
    for (size_t k = 0; k < a->n_assigns; k++) {
        const struct sched_assign *as = &w->d.assigns[a->first_assign + k];
        struct m_assign *ma = &x->as[k];
        if (!check(w, as->replica >= 0 && as->replica < sp->replicas,
                   "workload %" PRId64 ": replica %d out of range", sp->id, as->replica))
            return;
        int n = node_index(w, as->node_id);
        if (!check(w, n >= 0, "workload %" PRId64 ": unknown node %" PRId64, sp->id, as->node_id))
            return;
        ma->replica = as->replica;
        ma->node = n;
        ma->milli = as->milli;
        ma->gpu = -1;
        const struct m_node *nd = &w->nodes[n];
        check(w, nd->state == SCHED_NODE_READY,
              "workload %" PRId64 " placed on node %" PRId64 " in state %d", sp->id, nd->id,
              (int)nd->state);
        if (rep_node[as->replica] < 0)
            rep_node[as->replica] = n;
        check(w, rep_node[as->replica] == n,
              "workload %" PRId64 ": replica %d split over nodes %" PRId64 " and %" PRId64, sp->id,
              as->replica, w->nodes[rep_node[as->replica]].id, nd->id);
        rep_milli[as->replica] += as->milli;
        if (sp->same_block) {
            if (block < 0)
                block = nd->block;
            check(w, nd->block == block, "workload %" PRId64 ": same_block gang over blocks",
                  sp->id);
        }
        for (int l = 0; l < sp->n_selector; l++) {
            bool has = false;
            for (int m = 0; m < nd->n_labels; m++)
                has = has || nd->labels[m] == sp->selector[l];
            check(w, has, "workload %" PRId64 " on node %" PRId64 " without label %u", sp->id,
                  nd->id, sp->selector[l]);
        }
        if (sp->class_id == 0) {
            check(w, as->gpu_id == 0 && as->milli == 0,
                  "CPU-only workload %" PRId64 " got GPU %" PRId64, sp->id, as->gpu_id);
            continue;
        }
        int g = gpu_index(w, as->gpu_id);
        if (!check(w, g >= 0 && w->gpus[g].node == n,
                   "workload %" PRId64 ": GPU %" PRId64 " not on node %" PRId64, sp->id,
                   as->gpu_id, as->node_id))
            return;
        ma->gpu = g;
        const struct m_gpu *gp = &w->gpus[g];
        check(w, gp->cls == x->cls, "workload %" PRId64 ": GPU %" PRId64 " of another class",
              sp->id, gp->id);
        check(w, as->milli == (sp->gpu_milli >= 1000 ? 1000 : sp->gpu_milli),
              "workload %" PRId64 ": assign of %d milli", sp->id, as->milli);
        check(w, gp->pool < 0 || m_may_use_pool(w, x->proj, gp->pool),
              "workload %" PRId64 " of project %" PRId64 " on GPU %" PRId64
              " of pool %" PRId64 " it may not use",
              sp->id, sp->project_id, gp->id, gp->pool >= 0 ? w->pools[gp->pool].id : 0);
        if (sp->n_pools > 0) {
            bool in = false;
            for (int m = 0; m < sp->n_pools; m++)
                in = in || (gp->pool >= 0 && w->pools[gp->pool].id == sp->pool_ids[m]);
            check(w, in, "workload %" PRId64 " restricted to pools placed on GPU %" PRId64,
                  sp->id, gp->id);
        }
        /* Whole devices are never shared; replicas' shares may share a device. */
        for (size_t m = 0; m < k && sp->gpu_milli >= 1000; m++)
            check(w, w->d.assigns[a->first_assign + m].gpu_id != as->gpu_id,
                  "workload %" PRId64 ": GPU %" PRId64 " assigned twice", sp->id, as->gpu_id);
    }
    for (int k = 0; k < sp->replicas; k++)
        check(w, rep_node[k] >= 0 && rep_milli[k] == (sp->class_id ? sp->gpu_milli : 0),
              "workload %" PRId64 ": replica %d has %" PRId64 " milli of %d", sp->id, k,
              rep_milli[k], sp->gpu_milli);
    if (w->failed)
        return;
    m_take(w, x, +1);
    x->state = M_RUNNING;
    x->started = x->ckpt = w->now;
    if (x->track >= 0) {
        struct track *t = &w->tracks[x->track];
        if (t->outstanding == 0)
            w->st_reclaims_done++;
        drop_track(w, x);
    }
    w->st_admits++;
}

static const struct sched_quota_snapshot *find_snapshot(const struct world *w,
                                                        const struct sched_preemption *pe,
                                                        int64_t project_id)
{
    for (size_t i = 0; i < pe->n_quotas; i++) {
        const struct sched_quota_snapshot *q = &w->d.quotas[pe->first_quota + i];
        if (q->project_id == project_id)
            return q;
    }
    return NULL;
}

/* Checks one preemption decision and applies it to the model. */
static void apply_preemption(struct world *w, const struct sched_preemption *pe)
{
    int i = wl_index(w, pe->preemptor_id);
    if (!check(w, i >= 0, "preemption for unknown workload %" PRId64, pe->preemptor_id))
        return;
    struct m_wl *x = &w->wl[i];
    int p = x->proj, c = x->cls;
    check(w, x->spec.pclass != SCHED_P2, "P2 workload %" PRId64 " preempts", x->spec.id);
    check(w, x->state == M_QUEUED, "preemptor %" PRId64 " not queued (state %d)", x->spec.id,
          (int)x->state);
    check(w, c >= 0, "CPU-only preemptor %" PRId64, x->spec.id);
    check(w, pe->rule == SCHED_RULE_RECLAIM, "unknown rule %d", (int)pe->rule);
    check(w, pe->decided_ms == w->now, "decided_ms %" PRId64, pe->decided_ms);
    check(w, pe->n_victims > 0, "preemption without victims");
    check(w, pe->grace_ms >= 0, "negative grace");
    if (!check(w, pe->first_victim + pe->n_victims <= w->d.n_victims &&
                      pe->first_quota + pe->n_quotas <= w->d.n_quotas,
               "preemption ranges out of bounds") ||
        w->failed)
        return;
    /* The preemptor's P1 stays within its guarantee. */
    int64_t g = m_guarantee(w, p, c);
    int64_t p1_before = 0, p2_before = 0;
    m_held(w, p, c, &p1_before, &p2_before);
    /* (P1 admitted later in the same pass may have used the room since: start of pass.) */
    check(w, w->p1_before[p][c] + need_of(&x->spec) <= g,
          "preemptor %" PRId64 ": P1 %" PRId64 " + %" PRId64 " beyond guarantee %" PRId64,
          x->spec.id, w->p1_before[p][c], need_of(&x->spec), g);
    const struct sched_quota_snapshot *qp = find_snapshot(w, pe, x->spec.project_id);
    if (!check(w, qp != NULL, "preemption without the preemptor's quota snapshot"))
        return;
    check(w, qp->class_id == x->spec.class_id && qp->guaranteed == g,
          "preemptor snapshot class %" PRId64 " guaranteed %" PRId64 " (model %" PRId64 ")",
          qp->class_id, qp->guaranteed, g);
    check(w, qp->used >= w->held_before[p][c] && qp->used <= p1_before + p2_before,
          "preemptor snapshot used %" PRId64 " outside [%" PRId64 ", %" PRId64 "]", qp->used,
          w->held_before[p][c], p1_before + p2_before);
    int64_t reclaimed = 0, own = 0;
    bool others = false;
    for (size_t k = 0; k < pe->n_victims; k++) {
        const struct sched_victim *v = &w->d.victims[pe->first_victim + k];
        int vi = wl_index(w, v->workload_id);
        if (!check(w, vi >= 0, "unknown victim %" PRId64, v->workload_id))
            return;
        struct m_wl *y = &w->wl[vi];
        /* An owner takes back anything on its pools; elsewhere P1 work is never a victim. */
        bool owner_reclaim = y->proj != p && m_on_pool_of(w, y, p);
        check(w, y->runs_as == SCHED_P2 || owner_reclaim,
              "P1 workload %" PRId64 " is a victim off the preemptor's pools", y->spec.id);
        /* Within a project, automatic work never gives way to automatic work it ranks with. */
        check(w,
              y->proj != p || x->spec.pclass != SCHED_AUTO || y->spec.pclass != SCHED_AUTO ||
                  y->spec.priority < x->spec.priority,
              "automatic workload %" PRId64 " preempts automatic workload %" PRId64
              " of its project and priority %d >= %d",
              x->spec.id, y->spec.id, y->spec.priority, x->spec.priority);
        check(w, y->state == M_RUNNING, "victim %" PRId64 " was not running (state %d)",
              y->spec.id, (int)y->state);
        check(w, y->cls == c, "victim %" PRId64 " of another class", y->spec.id);
        check(w, v->project_id == y->spec.project_id, "victim project");
        check(w, v->gpu_milli == need_of(&y->spec), "victim %" PRId64 " gpu_milli %" PRId64,
              y->spec.id, v->gpu_milli);
        int64_t since = y->ckpt > y->started ? y->ckpt : y->started;
        check(w, v->lost_ms == w->now - since,
              "victim %" PRId64 " lost_ms %" PRId64 " expected %" PRId64, y->spec.id, v->lost_ms,
              w->now - since);
        check(w, w->now - y->started >= y->spec.min_runtime_ms,
              "victim %" PRId64 " preempted after %" PRId64 " ms, minimum runtime %" PRId64,
              y->spec.id, w->now - y->started, y->spec.min_runtime_ms);
        reclaimed += v->gpu_milli;
        if (y->proj == p)
            own += v->gpu_milli;
        if (y->proj != p) {
            const struct sched_quota_snapshot *qv = find_snapshot(w, pe, y->spec.project_id);
            others |= !owner_reclaim;
            check(w, owner_reclaim || !m_on_own_pool(w, y),
                  "victim %" PRId64 " taken from its own project's pool", y->spec.id);
            if (check(w, qv != NULL, "no quota snapshot of victim project %" PRId64,
                      y->spec.project_id)) {
                int64_t vg = m_guarantee(w, y->proj, c);
                check(w, qv->guaranteed == vg, "victim project snapshot guaranteed");
                check(w, owner_reclaim || qv->used > vg,
                      "victim %" PRId64 " of project %" PRId64 " not borrowing (used %" PRId64
                      ", guaranteed %" PRId64 ")",
                      y->spec.id, y->spec.project_id, qv->used, vg);
                int64_t hv = m_total(w, y->proj, c);
                check(w, qv->used >= w->held_before[y->proj][c] && qv->used <= hv,
                      "victim project snapshot used %" PRId64 " outside [%" PRId64 ", %" PRId64
                      "]",
                      qv->used, w->held_before[y->proj][c], hv);
            }
        }
    }
    check(w, reclaimed == pe->gpu_milli_reclaimed, "gpu_milli_reclaimed %" PRId64 " != %" PRId64,
          pe->gpu_milli_reclaimed, reclaimed);
    /*
     * At or above its guarantee, counting only what it keeps (its own P2
     * victims make way first), a project takes nothing from others.
     */
    if (others)
        check(w, qp->used - own < g,
              "project %" PRId64 " at or above its guarantee (used %" PRId64 " of which own victims %" PRId64
              ", guaranteed %" PRId64 ") preempts other projects' work for %" PRId64,
              x->spec.project_id, qp->used, own, g, x->spec.id);
    if (qp->used >= g)
        w->st_own_at_g++;
    if (w->failed)
        return;
    /* Apply: victims preempting, the preemptor tracked until admitted. */
    drop_track(w, x);
    int t = -1;
    for (int k = 0; k < M_TRACKS; k++)
        if (!w->tracks[k].active) {
            t = k;
            break;
        }
    if (t >= 0) {
        w->tracks[t] = (struct track){.active = true,
                                      .wl = i,
                                      .outstanding = (int)pe->n_victims,
                                      .drains_at_decision = w->drains,
                                      .seq = w->st_preemptions};
        x->track = t;
    }
    for (size_t k = 0; k < pe->n_victims; k++) {
        struct m_wl *y = &w->wl[wl_index(w, w->d.victims[pe->first_victim + k].workload_id)];
        y->state = M_PREEMPTING;
        y->kill_at = pe->decided_ms + pe->grace_ms;
        y->victim_of_track = t;
        for (int a = 0; t >= 0 && a < y->n_as; a++) {
            struct track *tk = &w->tracks[t];
            int64_t node = w->nodes[y->as[a].node].id;
            bool seen = false;
            for (int b = 0; b < tk->n_nodes; b++)
                seen |= tk->nodes[b] == node;
            if (!seen)
                tk->nodes[tk->n_nodes++] = node;
        }
    }
    w->st_preemptions++;
    w->st_victims += (long)pe->n_victims;
}

/* ---- invariants ---- */

static void check_usage(struct world *w)
{
    for (int p = 0; p < w->n_proj && !w->failed; p++)
        for (int c = 0; c < w->n_cls; c++) {
            int64_t p1, p2;
            struct sched_usage u;
            m_held(w, p, c, &p1, &p2);
            int rc = sched_project_usage(w->s, w->proj[p].id, w->cls_id[c], &u);
            if (!check(w, rc == 0, "sched_project_usage(%" PRId64 ", %" PRId64 ") = %d",
                       w->proj[p].id, w->cls_id[c], rc))
                return;
            check(w, u.p1 == p1 && u.p2 == p2,
                  "project %" PRId64 " class %" PRId64 ": usage p1 %" PRId64 " p2 %" PRId64
                  ", model %" PRId64 "/%" PRId64,
                  w->proj[p].id, w->cls_id[c], u.p1, u.p2, p1, p2);
            int64_t g = m_guarantee(w, p, c);
            check(w, u.guaranteed == g,
                  "project %" PRId64 " class %" PRId64 ": guaranteed %" PRId64 ", model %" PRId64,
                  w->proj[p].id, w->cls_id[c], u.guaranteed, g);
            int64_t lim = w->proj[p].qset[c] ? w->proj[p].limit[c] : -1;
            check(w, (u.limit < 0 && lim < 0) || u.limit == lim, "limit %" PRId64 " model %" PRId64,
                  u.limit, lim);
            if (lim >= 0)
                check(w, p1 + p2 <= lim,
                      "project %" PRId64 " class %" PRId64 " holds %" PRId64 " over limit %" PRId64,
                      w->proj[p].id, w->cls_id[c], p1 + p2, lim);
            check(w, p1 <= g,
                  "project %" PRId64 " class %" PRId64 ": P1 %" PRId64 " over guarantee %" PRId64,
                  w->proj[p].id, w->cls_id[c], p1, g);
        }
    /* A pool never lends more than its lending limit (it never changes here). */
    for (int pool = 0; pool < w->n_pools; pool++) {
        int64_t lent = 0;
        for (int i = 0; i < w->n_wl; i++) {
            const struct m_wl *x = &w->wl[i];
            if (x->state != M_RUNNING && x->state != M_PREEMPTING)
                continue;
            for (int k = 0; k < x->n_as; k++) {
                int g = x->as[k].gpu;
                if (g >= 0 && w->gpus[g].pool == pool && !m_owns_pool(w, x->proj, pool))
                    lent += x->as[k].milli;
            }
        }
        if (w->pools[pool].lending_limit > 0)
            check(w, lent <= w->pools[pool].lending_limit,
                  "pool %" PRId64 " lends %" PRId64 " over its limit %" PRId64, w->pools[pool].id,
                  lent, w->pools[pool].lending_limit);
    }
    for (int o = 0; o < w->n_org; o++)
        for (int c = 0; c < w->n_cls; c++)
            if (w->org[o].cap[c] >= 0)
                check(w, m_org_held(w, o, c) <= w->org[o].cap[c],
                      "org %" PRId64 " class %" PRId64 " holds %" PRId64 " over cap %" PRId64,
                      w->org[o].id, w->cls_id[c], m_org_held(w, o, c), w->org[o].cap[c]);
    for (int c = 0; c < w->n_cls; c++) {
        int64_t cap = 0, fr = 0, scap = -1, sfree = -1;
        for (int i = 0; i < w->n_gpus; i++) {
            const struct m_gpu *gp = &w->gpus[i];
            if (gp->cls != c || w->nodes[gp->node].state != SCHED_NODE_READY)
                continue;
            cap += 1000;
            fr += 1000 - gp->used;
        }
        check(w, sched_class_capacity(w->s, w->cls_id[c], &scap, &sfree) == 0, "class_capacity");
        check(w, scap == cap && sfree == fr,
              "class %" PRId64 ": capacity %" PRId64 " free %" PRId64 ", model %" PRId64
              " %" PRId64,
              w->cls_id[c], scap, sfree, cap, fr);
    }
}

static void check_capacity(struct world *w)
{
    for (int i = 0; i < w->n_gpus; i++)
        check(w, w->gpus[i].used >= 0 && w->gpus[i].used <= 1000,
              "GPU %" PRId64 " holds %d milli", w->gpus[i].id, w->gpus[i].used);
    for (int n = 0; n < w->n_nodes; n++) {
        const struct m_node *nd = &w->nodes[n];
        if (nd->cpu_cap)
            check(w, nd->cpu_used <= nd->cpu_cap, "node %" PRId64 " cpu %" PRId64 "/%" PRId64,
                  nd->id, nd->cpu_used, nd->cpu_cap);
        if (nd->mem_cap)
            check(w, nd->mem_used <= nd->mem_cap, "node %" PRId64 " mem %" PRId64 "/%" PRId64,
                  nd->id, nd->mem_used, nd->mem_cap);
    }
}

static bool queue_before(const struct m_wl *a, const struct m_wl *b)
{
    if (a->spec.submit_ms != b->spec.submit_ms)
        return a->spec.submit_ms < b->spec.submit_ms;
    return a->spec.id < b->spec.id;
}

/* States, reasons, start times and queue order against the scheduler. */
static void check_workloads(struct world *w, bool after_pass)
{
    static int pos[M_WL];
    int n_queued[M_PROJ] = {0};
    for (int i = 0; i < w->n_wl && !w->failed; i++) {
        struct m_wl *x = &w->wl[i];
        struct sched_workload_info wi;
        memset(&wi, 0, sizeof wi);
        int rc = sched_workload_info(w->s, x->spec.id, &wi);
        pos[i] = 0;
        if (x->state == M_GONE) {
            check(w, rc == SCHED_ENOENT, "workload %" PRId64 " gone, info says %d state %d",
                  x->spec.id, rc, (int)wi.state);
            continue;
        }
        if (!check(w, rc == 0, "workload %" PRId64 ": info %d", x->spec.id, rc))
            return;
        enum sched_state want = x->state == M_QUEUED    ? SCHED_QUEUED
                                : x->state == M_RUNNING ? SCHED_RUNNING
                                                        : SCHED_PREEMPTING;
        check(w, wi.state == want, "workload %" PRId64 ": state %d, model %d", x->spec.id,
              (int)wi.state, (int)want);
        if (x->state == M_RUNNING)
            check(w, wi.started_ms == x->started,
                  "workload %" PRId64 ": started %" PRId64 ", model %" PRId64, x->spec.id,
                  wi.started_ms, x->started);
        if (x->state != M_QUEUED)
            continue;
        pos[i] = wi.queue_position;
        n_queued[x->proj]++;
        if (after_pass) {
            check(w, wi.reason.code != SCHED_WAIT_NONE,
                  "queued workload %" PRId64 " without a reason", x->spec.id);
            if (wi.reason.code >= 0 && wi.reason.code <= SCHED_WAIT_NO_NODES)
                w->st_reasons[wi.reason.code]++;
            /*
             * Waiting for its victims, unless its quota moved meanwhile (a
             * higher-priority P1 of its project took the guarantee).
             */
            if (x->track >= 0 && w->tracks[x->track].outstanding > 0)
                check(w,
                      wi.reason.code == SCHED_WAIT_RECLAIM ||
                          wi.reason.code == SCHED_WAIT_GUARANTEE ||
                          wi.reason.code == SCHED_WAIT_LIMIT ||
                          wi.reason.code == SCHED_WAIT_ORG_CAP,
                      "preemptor %" PRId64 " waiting for victims has reason %d", x->spec.id,
                      (int)wi.reason.code);
            if (wi.reason.code == SCHED_WAIT_GUARANTEE || wi.reason.code == SCHED_WAIT_RECLAIM)
                check(w, x->spec.pclass != SCHED_P2, "P2 workload %" PRId64 " with reason %d",
                      x->spec.id, (int)wi.reason.code);
            char buf[256];
            sched_reason_format(&wi.reason, NULL, 0, buf, sizeof buf);
            check(w, buf[0] != '\0' && strchr(buf, '\n') == NULL,
                  "reason of %" PRId64 " formats to '%s'", x->spec.id, buf);
        }
    }
    if (w->failed)
        return;
    /* Positions: 1..n per project, and submit order within (class, priority). */
    for (int i = 0; i < w->n_wl; i++) {
        const struct m_wl *a = &w->wl[i];
        if (a->state != M_QUEUED)
            continue;
        check(w, pos[i] >= 1 && pos[i] <= n_queued[a->proj],
              "workload %" PRId64 ": queue position %d of %d", a->spec.id, pos[i],
              n_queued[a->proj]);
        for (int j = 0; j < w->n_wl; j++) {
            const struct m_wl *b = &w->wl[j];
            if (j == i || b->state != M_QUEUED || b->proj != a->proj)
                continue;
            check(w, pos[i] != pos[j], "workloads %" PRId64 " and %" PRId64 " share position %d",
                  a->spec.id, b->spec.id, pos[i]);
            if (a->spec.pclass == b->spec.pclass && a->spec.priority == b->spec.priority &&
                queue_before(a, b))
                check(w, pos[i] < pos[j],
                      "queue order: %" PRId64 " (submitted %" PRId64 ", position %d) behind %" PRId64
                      " (submitted %" PRId64 ", position %d)",
                      a->spec.id, a->spec.submit_ms, pos[i], b->spec.id, b->spec.submit_ms, pos[j]);
            if (a->spec.pclass == b->spec.pclass && a->spec.priority > b->spec.priority)
                check(w, pos[i] < pos[j], "queue order: priority %d behind %d", a->spec.priority,
                      b->spec.priority);
        }
    }
}

/* A reclaim whose victims all released is admitted within two passes. */
static void check_liveness(struct world *w)
{
    for (int t = 0; t < M_TRACKS; t++) {
        struct track *tk = &w->tracks[t];
        if (!tk->active || tk->outstanding > 0)
            continue;
        struct m_wl *x = &w->wl[tk->wl];
        if (x->state != M_QUEUED) {
            tk->active = false;
            continue;
        }
        if (++tk->passes_after_free < 3)
            continue;
        /* Excused: the fleet or the quotas moved under it. */
        int p = x->proj, c = x->cls;
        int64_t p1, p2;
        m_held(w, p, c, &p1, &p2);
        int64_t lim = w->proj[p].qset[c] ? w->proj[p].limit[c] : -1;
        int o = w->proj[p].org;
        bool excused = w->drains != tk->drains_at_decision ||
                       p1 + need_of(&x->spec) > m_guarantee(w, p, c) ||
                       (lim >= 0 && p1 + p2 + need_of(&x->spec) > lim) ||
                       (w->org[o].cap[c] >= 0 &&
                        m_org_held(w, o, c) + need_of(&x->spec) > w->org[o].cap[c]);
        struct sched_workload_info wi;
        memset(&wi, 0, sizeof wi);
        sched_workload_info(w->s, x->spec.id, &wi);
        /* Excused too: a pool's owner took back a node held for it (DESIGN: owners always can). */
        excused |= wi.hold_taken_by != 0;
        if (!excused) {
            char buf[256];
            sched_reason_format(&wi.reason, NULL, 0, buf, sizeof buf);
            check(w, false,
                  "P1 workload %" PRId64 " (project %" PRId64 ", %" PRId64
                  " milli) not admitted two passes after its victims released; reason %d: %s",
                  x->spec.id, x->spec.project_id, need_of(&x->spec), (int)wi.reason.code, buf);
        }
        tk->active = false;
        x->track = -1;
    }
}

/*
 * The fair share after a pass: P2 turns in key order, the decayed usage as
 * the model's, and every "behind project X" backed by X's turn.
 */
static void check_fair(struct world *w)
{
    const double eps = 1e-9;
    for (size_t i = 0; i < w->n_p2_turns && !w->failed; i++)
        for (size_t j = i + 1; j < w->n_p2_turns; j++) {
            int a = w->p2_turns[i].proj, b = w->p2_turns[j].proj;
            double ka = w->p2_turns[i].key[a], kb = w->p2_turns[i].key[b];
            if (a == b)
                continue;
            check(w, kb >= ka - eps * fmax(1, ka),
                  "project %" PRId64 " (key %.12g) had a P2 turn (admission %zu) before project "
                  "%" PRId64 " with the lower key %.12g (admission %zu)",
                  w->proj[a].id, ka, i, w->proj[b].id, kb, j);
        }
    w->st_p2_turns += (long)w->n_p2_turns;
    for (int p = 0; p < w->n_proj && !w->failed; p++)
        for (int c = 0; c < w->n_cls; c++) {
            double u = -1;
            int rc = sched_past_usage(w->s, w->proj[p].id, w->cls_id[c], w->now, &u);
            double want = m_decayed(w) ? w->used[p][c] : 0;
            /* Relative, and a thousandth of a milli-GPU ms for what decayed to nearly nothing. */
            check(w, rc == 0 && fabs(u - want) <= eps * want + 1e-3,
                  "project %" PRId64 " class %" PRId64 ": decayed usage %.17g, model %.17g (rc %d)",
                  w->proj[p].id, w->cls_id[c], u, want, rc);
        }
    for (int i = 0; i < w->n_wl && !w->failed; i++) {
        struct m_wl *x = &w->wl[i];
        struct sched_workload_info wi;
        struct sched_reason *was = &x->last_reason;
        bool backed = false, same;
        if (x->state != M_QUEUED || sched_workload_info(w->s, x->spec.id, &wi) != 0)
            continue;
        /* Only a reason this pass set: projects it did not look at keep theirs. */
        same = wi.reason.code == was->code && wi.reason.need == was->need &&
               wi.reason.cap == was->cap && wi.reason.class_id == was->class_id &&
               wi.reason.ahead_project_id == was->ahead_project_id &&
               wi.reason.auto_as == was->auto_as && wi.reason.auto_held == was->auto_held;
        *was = wi.reason;
        if (wi.reason.code != SCHED_WAIT_CAPACITY || wi.reason.ahead_project_id == 0 || same)
            continue;
        w->st_ahead++;
        /* Its project's key now is the one it had when it found no room (no turn since). */
        for (size_t k = 0; k < w->n_p2_turns; k++)
            backed |= w->proj[w->p2_turns[k].proj].id == wi.reason.ahead_project_id &&
                      w->p2_turns[k].cls == x->cls &&
                      w->p2_turns[k].key[w->p2_turns[k].proj] < m_key(w, x->proj);
        check(w,
              m_decayed(w) && wi.reason.ahead_period_ms == w->cfg.half_life_ms &&
                  wi.reason.ahead_project_id != x->spec.project_id && backed,
              "workload %" PRId64 " (project %" PRId64 ") waits behind project %" PRId64
              " (reason %d), which had no P2 turn in its class with a lower key in this pass",
              x->spec.id, x->spec.project_id, wi.reason.ahead_project_id, (int)wi.reason.code);
    }
}

/* ---- events ---- */

static void gen_spec(struct world *w, struct sched_workload_spec *sp)
{
    struct rng *r = &w->r;
    memset(sp, 0, sizeof *sp);
    sp->id = w->n_wl + 1;
    int p = (int)rng_range(r, 0, w->n_proj - 1);
    sp->project_id = w->proj[p].id;
    sp->submit_ms = w->now;
    sp->priority = (int32_t)rng_range(r, 0, 3);
    sp->grace_ms = rng_pct(r, 70) ? -1 : rng_range(r, 0, 15000);
    sp->requeue = rng_pct(r, 70);
    sp->replicas = 1;
    if (w->cpu_only_allowed && rng_pct(r, 5)) {
        sp->pclass = rng_pct(r, 50) ? SCHED_AUTO : SCHED_P2;
        sp->class_id = 0;
        sp->gpu_milli = 0;
        sp->cpu_milli = rng_range(r, 1, 8) * 1000;
        sp->mem_mib = rng_range(r, 0, 64) * 1024;
        sp->replicas = (int32_t)rng_range(r, 1, 2);
        return;
    }
    sp->pclass = rng_pct(r, 30) ? SCHED_P1 : rng_pct(r, 45) ? SCHED_AUTO : SCHED_P2;
    sp->class_id = w->cls_id[rng_range(r, 0, w->n_cls - 1)];
    static const int32_t whole[] = {1, 1, 1, 2, 2, 4, 8};
    static const int32_t share[] = {100, 250, 300, 500, 700};
    if (rng_pct(r, 25))
        sp->gpu_milli = share[rng_range(r, 0, 4)];
    else
        sp->gpu_milli = 1000 * whole[rng_range(r, 0, 6)];
    if (rng_pct(r, 20)) {
        sp->replicas = (int32_t)rng_range(r, 2, 4);
        sp->same_block = rng_pct(r, 25);
    }
    if (rng_pct(r, 40))
        sp->cpu_milli = rng_range(r, 1, 8) * 1000;
    if (rng_pct(r, 30))
        sp->mem_mib = rng_range(r, 1, 64) * 1024;
    if (rng_pct(r, 15)) {
        sp->selector[0] = (uint32_t)rng_range(r, 1, 4);
        sp->n_selector = 1;
    }
    if (w->n_pools > 0 && rng_pct(r, 10)) {
        sp->pool_ids[0] = w->pools[rng_range(r, 0, w->n_pools - 1)].id;
        sp->n_pools = 1;
    }
    if (sp->pclass != SCHED_P1 && rng_pct(r, 20))
        sp->min_runtime_ms = rng_range(r, 1, 20) * 1000;
}

static void ev_submit(struct world *w)
{
    if (w->n_wl >= M_WL)
        return;
    struct m_wl *x = &w->wl[w->n_wl];
    memset(x, 0, sizeof *x);
    gen_spec(w, &x->spec);
    x->track = x->victim_of_track = -1;
    for (int p = 0; p < w->n_proj; p++)
        if (w->proj[p].id == x->spec.project_id)
            x->proj = p;
    x->cls = x->spec.class_id ? cls_index(w, x->spec.class_id) : -1;
    w->n_wl++;
    int rc = sched_submit(w->s, &x->spec, w->now);
    tr(w, "submit %" PRId64 " proj %" PRId64 " P%d prio %d class %" PRId64 " %dx%d milli cpu %" PRId64
          " mem %" PRId64 " sel %u pool %" PRId64 " block %d minrt %" PRId64 " grace %" PRId64
          " requeue %d -> %d",
       x->spec.id, x->spec.project_id, (int)x->spec.pclass, x->spec.priority, x->spec.class_id,
       x->spec.replicas, x->spec.gpu_milli, x->spec.cpu_milli, x->spec.mem_mib,
       x->spec.n_selector ? x->spec.selector[0] : 0, x->spec.n_pools ? x->spec.pool_ids[0] : 0,
       (int)x->spec.same_block, x->spec.min_runtime_ms, x->spec.grace_ms, (int)x->spec.requeue,
       rc);
    check(w, rc == 0, "submit of workload %" PRId64 " refused: %d", x->spec.id, rc);
    x->state = M_QUEUED;
    /* A duplicate is refused and changes nothing. */
    if (x->spec.id % 50 == 0)
        check(w, sched_submit(w->s, &x->spec, w->now) == SCHED_EEXIST, "duplicate submit");
}

/* A random workload in one of the given states, or -1. */
static int pick_wl(struct world *w, enum m_state a, enum m_state b)
{
    int n = 0;
    for (int i = 0; i < w->n_wl; i++)
        if (w->wl[i].state == a || w->wl[i].state == b)
            n++;
    if (n == 0)
        return -1;
    int k = (int)rng_range(&w->r, 0, n - 1);
    for (int i = 0; i < w->n_wl; i++)
        if ((w->wl[i].state == a || w->wl[i].state == b) && k-- == 0)
            return i;
    return -1;
}

static void ev_cancel(struct world *w)
{
    int i = pick_wl(w, M_QUEUED, M_RUNNING);
    if (i < 0)
        return;
    struct m_wl *x = &w->wl[i];
    int rc = sched_cancel(w->s, x->spec.id, w->now);
    tr(w, "cancel %" PRId64 " (state %d) -> %d", x->spec.id, (int)x->state, rc);
    check(w, rc == 0, "cancel of %" PRId64 " (state %d): %d", x->spec.id, (int)x->state, rc);
    if (x->state == M_RUNNING)
        m_free(w, x);
    drop_track(w, x);
    x->state = M_GONE;
}

static void ev_complete(struct world *w)
{
    int i = pick_wl(w, M_RUNNING, M_RUNNING);
    if (i < 0)
        return;
    struct m_wl *x = &w->wl[i];
    /*
     * One end in three is reported late, as a backend's poll may: up to 3 s
     * ago, never before its start (not drawn from r, to keep each seed's world).
     */
    int64_t late = x->spec.id % 3 == 0 ? (x->spec.id * 7919 + w->now) % 3000 : 0;
    int64_t at = w->now - late < x->started ? x->started : w->now - late;
    int rc = sched_released(w->s, x->spec.id, at);
    tr(w, "complete %" PRId64 " at %" PRId64 " -> %d", x->spec.id, at, rc);
    if (m_decayed(w) && x->cls >= 0 && x->runs_as == SCHED_P2) {
        /* The model counted it up to now: not what it held after its end. */
        double h = (double)w->cfg.half_life_ms;
        w->used[x->proj][x->cls] -=
            (double)need_of(&x->spec) * h / M_LN2 * (1 - exp2(-(double)(w->now - at) / h));
    }
    check(w, rc == 0, "released of running %" PRId64 ": %d", x->spec.id, rc);
    m_free(w, x);
    x->state = M_GONE;
}

static void release_victim(struct world *w, struct m_wl *x)
{
    int rc = sched_released(w->s, x->spec.id, w->now);
    tr(w, "release victim %" PRId64 " (kill at %" PRId64 ", requeue %d) -> %d", x->spec.id,
       x->kill_at, (int)x->spec.requeue, rc);
    check(w, rc == 0, "released of preempting %" PRId64 ": %d", x->spec.id, rc);
    m_free(w, x);
    victim_gone(w, x);
    if (x->spec.requeue) {
        x->state = M_QUEUED;
        w->st_requeues++;
    } else {
        x->state = M_GONE;
    }
}

static void ev_release_victims(struct world *w)
{
    if (rng_pct(&w->r, 30)) {
        int i = pick_wl(w, M_PREEMPTING, M_PREEMPTING);
        if (i >= 0)
            release_victim(w, &w->wl[i]);
        return;
    }
    for (int i = 0; i < w->n_wl && !w->failed; i++)
        if (w->wl[i].state == M_PREEMPTING && w->wl[i].kill_at <= w->now)
            release_victim(w, &w->wl[i]);
}

static void ev_checkpoint(struct world *w)
{
    int i = pick_wl(w, M_RUNNING, M_RUNNING);
    if (i < 0)
        return;
    struct m_wl *x = &w->wl[i];
    int rc = sched_checkpoint(w->s, x->spec.id, w->now);
    tr(w, "checkpoint %" PRId64 " -> %d", x->spec.id, rc);
    check(w, rc == 0, "checkpoint of %" PRId64 ": %d", x->spec.id, rc);
    x->ckpt = w->now;
}

static void ev_node(struct world *w)
{
    int n = (int)rng_range(&w->r, 0, w->n_nodes - 1);
    struct m_node *nd = &w->nodes[n];
    enum sched_node_state st = nd->state == SCHED_NODE_READY ? SCHED_NODE_DRAIN : SCHED_NODE_READY;
    int rc = sched_set_node_state(w->s, nd->id, st);
    tr(w, "node %" PRId64 " state %d -> %d", nd->id, (int)st, rc);
    check(w, rc == 0, "set_node_state: %d", rc);
    nd->state = st;
    w->drains++;
}

/* A restart: a new scheduler, restored from the model's allocations and queue. */
static void ev_restart(struct world *w)
{
    double carried[M_PROJ][M_CLS];
    tr(w, "restart");
    /* The engine's way: the old core's decayed usage at now goes to the new one first. */
    for (int p = 0; p < w->n_proj; p++)
        for (int c = 0; c < w->n_cls; c++)
            check(w,
                  sched_past_usage(w->s, w->proj[p].id, w->cls_id[c], w->now, &carried[p][c]) == 0,
                  "past_usage");
    sched_free(w->s);
    configure(w);
    if (w->failed)
        return;
    for (int p = 0; p < w->n_proj; p++)
        for (int c = 0; c < w->n_cls; c++)
            check(w,
                  sched_add_decayed_usage(w->s, w->proj[p].id, w->cls_id[c], carried[p][c],
                                          w->now) == 0,
                  "add_decayed_usage");
    for (int i = 0; i < w->n_wl && !w->failed; i++) {
        struct m_wl *x = &w->wl[i];
        if (x->state == M_RUNNING || x->state == M_PREEMPTING) {
            int64_t gpus[SCHED_MAX_REPLICAS * 8];
            int32_t milli[SCHED_MAX_REPLICAS * 8], rep[SCHED_MAX_REPLICAS * 8];
            for (int k = 0; k < x->n_as; k++) {
                gpus[k] = x->as[k].gpu >= 0 ? w->gpus[x->as[k].gpu].id : 0;
                milli[k] = x->as[k].milli;
                rep[k] = x->as[k].replica;
            }
            int rc = sched_restore_running(w->s, &x->spec, x->runs_as, gpus, milli, rep,
                                           (size_t)x->n_as,
                                           x->started, x->state == M_PREEMPTING);
            check(w, rc == 0, "restore of %" PRId64 ": %d", x->spec.id, rc);
            x->ckpt = x->started; /* checkpoints are not restored */
        }
    }
    for (int i = 0; i < w->n_wl && !w->failed; i++) {
        struct m_wl *x = &w->wl[i];
        if (x->state == M_QUEUED)
            check(w, sched_submit(w->s, &x->spec, w->now) == 0, "resubmit of %" PRId64,
                  x->spec.id);
    }
    /*
     * Reclaims, in the order they were decided, as the engine reads its
     * ledger. Pending ones: the preemptor keeps waiting for the same
     * victims. Those whose victims all released with no pass since (the
     * ledger entry closed, its first try not yet recorded): the preemptor
     * goes first in the next pass, the victims' nodes held for it.
     */
    int order[M_TRACKS], n_order = 0;
    for (int t = 0; t < M_TRACKS; t++) {
        int k = n_order++;
        for (; k > 0 && w->tracks[order[k - 1]].seq > w->tracks[t].seq; k--)
            order[k] = order[k - 1];
        order[k] = t;
    }
    for (int o = 0; o < n_order && !w->failed; o++) {
        int t = order[o];
        struct track *tk = &w->tracks[t];
        if (!tk->active)
            continue;
        if (tk->outstanding == 0) {
            if (tk->passes_after_free > 0 || w->wl[tk->wl].state != M_QUEUED)
                continue;
            int rc = sched_restore_reclaim_ready(w->s, w->wl[tk->wl].spec.id, tk->nodes,
                                                 (size_t)tk->n_nodes);
            tr(w, "restore reclaim ready for %" PRId64 " (%d nodes) -> %d", w->wl[tk->wl].spec.id,
               tk->n_nodes, rc);
            check(w, rc == 0, "restore_reclaim_ready of %" PRId64 ": %d", w->wl[tk->wl].spec.id,
                  rc);
            continue;
        }
        int64_t victims[M_WL];
        size_t n = 0;
        for (int i = 0; i < w->n_wl; i++)
            if (w->wl[i].victim_of_track == t && w->wl[i].state == M_PREEMPTING)
                victims[n++] = w->wl[i].spec.id;
        int rc = sched_restore_preemption(w->s, w->wl[tk->wl].spec.id, victims, n);
        tr(w, "restore preemption for %" PRId64 " (%zu victims) -> %d", w->wl[tk->wl].spec.id, n,
           rc);
        check(w, rc == 0, "restore_preemption of %" PRId64 ": %d", w->wl[tk->wl].spec.id, rc);
    }
    w->st_restarts++;
    check_usage(w);
}

static void ev_pass(struct world *w)
{
    for (int p = 0; p < w->n_proj; p++)
        for (int c = 0; c < w->n_cls; c++)
        {
            int64_t p1, p2;
            m_held(w, p, c, &p1, &p2);
            w->held_before[p][c] = p1 + p2;
            w->p1_before[p][c] = p1;
        }
    sched_decisions_reset(&w->d);
    int rc = sched_pass(w->s, w->now, &w->d);
    tr(w, "pass -> %d (%zu admits, %zu preemptions)", rc, w->d.n_admits, w->d.n_preemptions);
    check(w, rc >= 0, "sched_pass: %d", rc);
    w->st_passes++;
    w->n_p2_turns = 0;
    for (size_t i = 0; i < w->d.n_admits && !w->failed; i++) {
        const struct sched_admit *a = &w->d.admits[i];
        int k = wl_index(w, a->workload_id);
        tr(w, "  admit %" PRId64 " (%zu assigns, first on node %" PRId64 " gpu %" PRId64 ")",
           a->workload_id, a->n_assigns,
           a->n_assigns ? w->d.assigns[a->first_assign].node_id : 0,
           a->n_assigns ? w->d.assigns[a->first_assign].gpu_id : 0);
        /*
         * A preemptor whose victims released goes first, before any turn
         * (automatic work may then run as P2): its capacity was its own.
         */
        if (a->pclass == SCHED_P2 && k >= 0 && w->wl[k].cls >= 0 && w->wl[k].track < 0) {
            /* Every project's key as the turn was given, before this admission counts. */
            ALLOC_GROW(w->p2_turns, w->n_p2_turns + 1, w->cap_p2_turns);
            w->p2_turns[w->n_p2_turns].proj = w->wl[k].proj;
            w->p2_turns[w->n_p2_turns].cls = w->wl[k].cls;
            for (int p = 0; p < w->n_proj; p++)
                w->p2_turns[w->n_p2_turns].key[p] = m_key(w, p);
            w->n_p2_turns++;
        }
        apply_admit(w, a);
    }
    for (size_t i = 0; i < w->d.n_preemptions && !w->failed; i++) {
        const struct sched_preemption *pe = &w->d.preemptions[i];
        char vs[120];
        int off = 0;
        for (size_t k = 0; k < pe->n_victims && off < (int)sizeof vs - 24; k++)
            off += snprintf(vs + off, sizeof vs - (size_t)off, " %" PRId64,
                            w->d.victims[pe->first_victim + k].workload_id);
        if (pe->n_victims == 0)
            vs[0] = '\0';
        tr(w, "  preempt for %" PRId64 ": victims%s", pe->preemptor_id, vs);
        apply_preemption(w, pe);
    }
    if (w->failed)
        return;
    check_capacity(w);
    check_usage(w);
    check_workloads(w, true);
    check_liveness(w);
    check_fair(w);
}

/* Runs one seed; returns the hash of its trace. */
static uint64_t run_seed(uint64_t seed, int n_events, bool exhaustive)
{
    struct world *w = xcalloc(1, sizeof *w);
    uint64_t hash;
    build_world(w, seed, exhaustive);
    for (w->event = 0; w->event < n_events && !w->failed; w->event++) {
        int k = (int)rng_range(&w->r, 0, 99);
        m_advance(w); /* what was held since the last event, before this one changes it */
        if (k < 30)
            ev_submit(w);
        else if (k < 36)
            ev_cancel(w);
        else if (k < 50)
            ev_complete(w);
        else if (k < 60)
            ev_release_victims(w);
        else if (k < 65)
            ev_checkpoint(w);
        else if (k < 67)
            ev_node(w);
        else if (k < 68 && w->restarts_allowed)
            ev_restart(w);
        else
            ev_pass(w);
        if (!w->failed && k < 68) {
            check_capacity(w);
            check_usage(w);
        }
        w->now += rng_range(&w->r, 0, 4000);
    }
    /* Drain the end: victims released, a few passes, all invariants once more. */
    for (int k = 0; k < 4 && !w->failed; k++) {
        w->now += 30000;
        m_advance(w);
        for (int i = 0; i < w->n_wl && !w->failed; i++)
            if (w->wl[i].state == M_PREEMPTING)
                release_victim(w, &w->wl[i]);
        ev_pass(w);
    }
    g_tot.seeds++;
    g_tot.passes += w->st_passes;
    g_tot.admits += w->st_admits;
    g_tot.preemptions += w->st_preemptions;
    g_tot.victims += w->st_victims;
    g_tot.requeues += w->st_requeues;
    g_tot.own_at_g += w->st_own_at_g;
    g_tot.reclaims_done += w->st_reclaims_done;
    g_tot.restarts += w->st_restarts;
    g_tot.decayed_seeds += m_decayed(w);
    g_tot.p2_turns += w->st_p2_turns;
    g_tot.ahead += w->st_ahead;
    for (int i = 0; i <= SCHED_WAIT_NO_NODES; i++)
        g_tot.reasons[i] += w->st_reasons[i];
    if (w->failed) {
        g_tot.failed_seeds++;
        fprintf(stderr, "FAIL %s\n", w->failure);
        if (g_tot.failed_seeds <= 3) {
            fprintf(stderr, "  last events:\n");
            int first = w->n_trace > M_TRACE ? w->n_trace - M_TRACE : 0;
            for (int i = first; i < w->n_trace; i++)
                fprintf(stderr, "    %s\n", w->trace[i % M_TRACE]);
        }
    }
    hash = w->trace_hash;
    free_world(w);
    free(w);
    return hash;
}

static int64_t env_int(const char *name, int64_t def, int64_t lo, int64_t hi)
{
    const char *v = getenv(name);
    int64_t x;
    if (!v || parse_int64(v, lo, hi, &x) != 0)
        return def;
    return x;
}

static const uint64_t once_failed[] = {2365, 2631, 2761, 6428, 11292, 29100, 38143};
static const uint64_t once_differed[] = {15131, 19338, 20928, 36621, 39525};

static void test_random_event_sequences(void **state)
{
    (void)state;
    int64_t seeds = env_int("SCHED_PROP_SEEDS", 1000, 1, 1000000);
    int64_t events = env_int("SCHED_PROP_EVENTS", 300, 1, 1000000);
    int64_t seed0 = env_int("SCHED_PROP_SEED0", 1, 0, INT64_MAX / 2);
    bool exhaustive = env_int("SCHED_PROP_EXHAUSTIVE", 0, 0, 1) == 1;
    memset(&g_tot, 0, sizeof g_tot);
    for (int64_t s = seed0; s < seed0 + seeds; s++)
        run_seed((uint64_t)s, (int)events, exhaustive);
    /* Seeds beyond the first thousand that once failed (docs/testing.md) run every time. */
    for (size_t i = 0; !getenv("SCHED_PROP_SEED0") && i < ARRAY_SIZE(once_failed); i++)
        run_seed(once_failed[i], (int)events, exhaustive);
    if (getenv("SCHED_PROP_VERBOSE") || g_tot.failed_seeds) {
        fprintf(stderr,
                "%ld seeds (%ld failed), %ld passes, %ld admits, %ld preemptions, %ld victims, "
                "%ld requeues, %ld reclaims admitted after release, %ld own-only preemptions at "
                "guarantee, %ld restarts\n",
                g_tot.seeds, g_tot.failed_seeds, g_tot.passes, g_tot.admits, g_tot.preemptions,
                g_tot.victims, g_tot.requeues, g_tot.reclaims_done, g_tot.own_at_g,
                g_tot.restarts);
        fprintf(stderr,
                "fair share: %ld seeds with the decayed rule, %ld P2 turns checked in key order, "
                "%ld waits behind a project that used less\n",
                g_tot.decayed_seeds, g_tot.p2_turns, g_tot.ahead);
        fprintf(stderr, "reasons seen after passes:");
        for (int i = 0; i <= SCHED_WAIT_NO_NODES; i++)
            fprintf(stderr, " %d:%ld", i, g_tot.reasons[i]);
        fprintf(stderr, "\n");
    }
    assert_int_equal(g_tot.failed_seeds, 0);
    /* The sequences must actually exercise preemption and requeue. */
    if (seeds >= 50) {
        assert_true(g_tot.preemptions > 0);
        assert_true(g_tot.requeues > 0);
        assert_true(g_tot.p2_turns > 0);
        assert_true(g_tot.ahead > 0);
    }
}

/*
 * The shortcuts of the core (a victim search that visits nodes in tier order
 * and stops early; passes that look again only where room was freed) must
 * never change a decision: every seed runs with them and with the core
 * looking at everything (cfg.exhaustive), and the two traces (every event,
 * admission and preemption, in order) must be the same. One thing can part
 * them that is not a decision: among equally good devices placement takes
 * the first in its free lists, and every placement attempt, also one undone,
 * reorders those lists; the shortcuts make fewer attempts. Of seeds
 * 1..10,000, seed 8980 parts that way (after a restart, a share lands on
 * another device of the same fullness). To see where two
 * runs part: SCHED_PROP_TRACE=1 SCHED_PROP_SEED0=N SCHED_PROP_SEEDS=1, with
 * and without SCHED_PROP_EXHAUSTIVE=1.
 */
static void test_shortcuts_change_no_decision(void **state)
{
    (void)state;
    int64_t seeds = env_int("SCHED_PROP_SEEDS", 1000, 1, 1000000);
    int64_t events = env_int("SCHED_PROP_EVENTS", 300, 1, 1000000);
    int64_t seed0 = env_int("SCHED_PROP_SEED0", 1, 0, INT64_MAX / 2);
    int64_t differ = 0;
    for (int64_t s = seed0; s < seed0 + seeds; s++) {
        uint64_t fast = run_seed((uint64_t)s, (int)events, false);
        if (fast != run_seed((uint64_t)s, (int)events, true) && ++differ <= 5)
            fprintf(stderr, "seed %" PRId64 ": decisions differ from the exhaustive core\n", s);
    }
    /* Seeds beyond the first thousand that once differed (docs/testing.md) run every time. */
    for (size_t i = 0; !getenv("SCHED_PROP_SEED0") && i < ARRAY_SIZE(once_differed); i++) {
        uint64_t fast = run_seed(once_differed[i], (int)events, false);
        if (fast != run_seed(once_differed[i], (int)events, true) && ++differ <= 5)
            fprintf(stderr, "seed %" PRIu64 ": decisions differ from the exhaustive core\n",
                    once_differed[i]);
    }
    assert_int_equal(differ, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_event_sequences),
        cmocka_unit_test(test_shortcuts_change_no_decision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
