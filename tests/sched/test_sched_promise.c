/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The owner-reclaim promise (DESIGN.md section 3, "owned means owned there",
 * "no needless victim") as a property test of the scheduler core, from the
 * user's side: random tenancies (projects in organizations), pools owned by
 * projects or organizations with access lists, quotas explicit or derived
 * (explicit ones may exceed what a project owns, as a global admin may set),
 * arrival orders, and every user-set field (priority, replicas, shares and
 * whole GPUs, minimum runtime, grace, requeue) within the operator's bounds.
 * A small shadow model applies every decision (admits hold their devices,
 * victims are killed at the end of their grace) and checks after each pass:
 *
 * - promise: owned (P1) work of a pool's owner, on that pool, within the
 *   owner's guarantee and the pool's size, starts within the largest minimum
 *   runtime plus the largest grace plus a pass or two, whoever borrows the
 *   pool and however (P2, or P1 on an explicit guarantee);
 * - no needless victim: the victims of a one-replica preemptor all sit on
 *   one node that they, and only all of them together, make room on;
 * - classes are independent: a queued workload that was not looked at has
 *   more than the lookahead of its own class ahead of it in its project.
 *
 * Deterministic: a splitmix64 generator per seed; a failure prints its seed
 * and the event. PROMISE_SEEDS / PROMISE_SEED0 override the number of seeds
 * (120, of 200 events) and the first seed (1); PROMISE_DUMP=1 prints the workloads and
 * devices of a failing seed.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "sched/sched.h"

#define MAX_MINRT_MS 60000 /* the operator's bounds on user-set times */
#define MAX_GRACE_MS 30000
#define STEP_MAX_MS 4000
#define LOOKAHEAD 3
#define N_GPUS_MAX 64
#define N_WL_MAX 400

struct rng {
    uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t range(struct rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

enum { Q = 1, RUN, PRE, GONE };

struct m_gpu {
    int64_t id, node;
    int cls, pool; /* pool -1: none */
    int32_t used;
};

struct m_pool {
    int64_t id;
    int owner_proj, owner_org; /* -1: none */
    int64_t acc_proj[8], acc_org[4];
    size_t n_acc_proj, n_acc_org;
};

struct m_wl {
    struct sched_workload_spec spec;
    int state, proj;
    int gpu[16];
    int32_t milli[16];
    int n_as;
    int64_t started, kill_at, deadline; /* deadline: promised start, 0 for none */
};

struct world {
    uint64_t seed;
    struct rng r;
    struct sched *s;
    struct sched_decisions d;
    int64_t now;
    int n_cls, n_gpus, n_pools, n_proj, n_org, n_wl, n_nodes;
    struct m_gpu gpus[N_GPUS_MAX];
    struct m_pool pools[6];
    int64_t proj_id[8];
    int proj_org[8];
    int64_t g_expl[8][2]; /* -1: derived */
    struct m_wl wl[N_WL_MAX];
    char failure[512];
};

static bool failed(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool failed(struct world *w, const char *fmt, ...)
{
    va_list ap;
    if (w->failure[0])
        return true;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof w->failure, fmt, ap);
    va_end(ap);
    return true;
}

static int64_t cls_id(int c)
{
    return 11 + c;
}

static bool owns(const struct world *w, int p, int pool)
{
    const struct m_pool *po = &w->pools[pool];
    return po->owner_proj == p || (po->owner_org >= 0 && po->owner_org == w->proj_org[p]);
}

static bool may_use(const struct world *w, int p, int pool)
{
    const struct m_pool *po;
    if (pool < 0 || owns(w, p, pool))
        return true;
    po = &w->pools[pool];
    for (size_t i = 0; i < po->n_acc_proj; i++)
        if (po->acc_proj[i] == w->proj_id[p])
            return true;
    for (size_t i = 0; i < po->n_acc_org; i++)
        if (po->acc_org[i] == w->proj_org[p] + 1)
            return true;
    return false;
}

/* GPUs of class c in pools project p owns itself (what a derived guarantee counts). */
static int64_t owned_milli(const struct world *w, int p, int c)
{
    int64_t sum = 0;
    for (int g = 0; g < w->n_gpus; g++)
        if (w->gpus[g].cls == c && w->gpus[g].pool >= 0 &&
            w->pools[w->gpus[g].pool].owner_proj == p)
            sum += 1000;
    return sum;
}

static int64_t guarantee(const struct world *w, int p, int c)
{
    return w->g_expl[p][c] >= 0 ? w->g_expl[p][c] : owned_milli(w, p, c);
}

static int wl_index(const struct world *w, int64_t id)
{
    return id >= 1 && id <= w->n_wl ? (int)id - 1 : -1;
}

static int gpu_index(const struct world *w, int64_t id)
{
    for (int g = 0; g < w->n_gpus; g++)
        if (w->gpus[g].id == id)
            return g;
    return -1;
}

static void build(struct world *w)
{
    struct rng *r = &w->r;
    struct sched_config cfg;
    sched_config_init(&cfg);
    cfg.default_grace_ms = range(r, 0, MAX_GRACE_MS);
    cfg.reserve_after_ms = range(r, 5000, 60000);
    cfg.lookahead = LOOKAHEAD;
    w->s = sched_new(&cfg);
    assert_non_null(w->s);
    sched_decisions_init(&w->d);
    w->n_cls = (int)range(r, 1, 2);
    for (int c = 0; c < w->n_cls; c++)
        assert_int_equal(sched_add_class(w->s, cls_id(c)), 0);
    w->n_org = (int)range(r, 1, 3);
    w->n_proj = (int)range(r, 2, 6);
    for (int p = 0; p < w->n_proj; p++) {
        w->proj_id[p] = 100 + p;
        w->proj_org[p] = (int)range(r, 0, w->n_org - 1);
        assert_int_equal(
            sched_set_project(w->s, w->proj_id[p], w->proj_org[p] + 1, (int)range(r, 1, 3)), 0);
    }
    w->n_pools = (int)range(r, 1, 5);
    for (int i = 0; i < w->n_pools; i++) {
        struct m_pool *po = &w->pools[i];
        struct sched_pool_spec ps = {0};
        po->id = 500 + i;
        po->owner_proj = po->owner_org = -1;
        if (range(r, 0, 3) == 0)
            po->owner_org = (int)range(r, 0, w->n_org - 1);
        else
            po->owner_proj = (int)range(r, 0, w->n_proj - 1);
        for (int p = 0; p < w->n_proj; p++)
            if (range(r, 0, 2) == 0)
                po->acc_proj[po->n_acc_proj++] = w->proj_id[p];
        for (int o = 0; o < w->n_org; o++)
            if (range(r, 0, 3) == 0)
                po->acc_org[po->n_acc_org++] = o + 1;
        ps.id = po->id;
        ps.owner_project_id = po->owner_proj >= 0 ? w->proj_id[po->owner_proj] : 0;
        ps.owner_org_id = po->owner_org >= 0 ? po->owner_org + 1 : 0;
        ps.access_project_ids = po->acc_proj;
        ps.n_access_projects = po->n_acc_proj;
        ps.access_org_ids = po->acc_org;
        ps.n_access_orgs = po->n_acc_org;
        assert_int_equal(sched_set_pool(w->s, &ps), 0);
    }
    w->n_nodes = (int)range(r, 2, 7);
    for (int n = 0; n < w->n_nodes; n++) {
        struct sched_node_spec ns = {.id = n + 1, .cluster_id = 1};
        int k = (int)range(r, 1, 8), c = (int)range(r, 0, w->n_cls - 1);
        int pool = range(r, 0, 4) == 0 ? -1 : (int)range(r, 0, w->n_pools - 1);
        assert_int_equal(sched_add_node(w->s, &ns), 0);
        for (int i = 0; i < k && w->n_gpus < N_GPUS_MAX; i++) {
            struct m_gpu *g = &w->gpus[w->n_gpus++];
            *g = (struct m_gpu){.id = (n + 1) * 100 + i + 1, .node = n + 1, .cls = c, .pool = pool};
            assert_int_equal(
                sched_add_gpu(w->s, g->node, g->id, cls_id(c), pool >= 0 ? w->pools[pool].id : 0),
                0);
        }
    }
    /* Quotas: derived or explicit (above what is owned, as only a global admin may set). */
    for (int p = 0; p < w->n_proj; p++)
        for (int c = 0; c < w->n_cls; c++) {
            int64_t own = owned_milli(w, p, c);
            int kind = (int)range(r, 0, 3);
            w->g_expl[p][c] = kind == 0 ? -1 : kind == 1 ? range(r, 0, 8) * 1000 : own;
            if (kind == 3) {
                w->g_expl[p][c] = 0; /* no quota at all: guarantee 0 */
                continue;
            }
            assert_int_equal(sched_set_quota(w->s, w->proj_id[p], cls_id(c), w->g_expl[p][c], -1),
                             0);
        }
}

/* Owned P1 of p in class c, queued or held (ret_all), and held on pool (ret_on). */
static void p1_held(const struct world *w, int p, int c, int pool, int64_t *ret_all,
                    int64_t *ret_on)
{
    *ret_all = *ret_on = 0;
    for (int i = 0; i < w->n_wl; i++) {
        const struct m_wl *x = &w->wl[i];
        if (x->proj != p || x->spec.pclass != SCHED_P1 || x->spec.class_id != cls_id(c) ||
            x->state == GONE)
            continue;
        /* Queued P1 work of the project counts too: it may start first. */
        *ret_all += (int64_t)x->spec.replicas * x->spec.gpu_milli;
        for (int k = 0; k < x->n_as; k++)
            if (w->gpus[x->gpu[k]].pool == pool)
                *ret_on += x->milli[k];
    }
}

/* Devices of class c in pool. */
static int64_t pool_milli(const struct world *w, int pool, int c)
{
    int64_t sum = 0;
    for (int g = 0; g < w->n_gpus; g++)
        sum += w->gpus[g].cls == c && w->gpus[g].pool == pool ? 1000 : 0;
    return sum;
}

static void submit_random(struct world *w)
{
    struct rng *r = &w->r;
    struct m_wl *x;
    int p = (int)range(r, 0, w->n_proj - 1), c = (int)range(r, 0, w->n_cls - 1);
    static const int32_t shapes[] = {250, 500, 1000, 1000, 2000, 4000};
    if (w->n_wl >= N_WL_MAX)
        return;
    x = &w->wl[w->n_wl];
    memset(x, 0, sizeof *x);
    x->spec.id = w->n_wl + 1;
    x->spec.project_id = w->proj_id[p];
    x->spec.pclass = range(r, 0, 2) == 0 ? SCHED_P1 : SCHED_P2;
    x->spec.priority = (int32_t)range(r, -1000, 1000);
    x->spec.submit_ms = w->now;
    x->spec.replicas = (int32_t)range(r, 1, 3);
    x->spec.class_id = cls_id(c);
    x->spec.gpu_milli = shapes[range(r, 0, 5)];
    x->spec.min_runtime_ms = range(r, 0, 1) ? range(r, 0, MAX_MINRT_MS) : 0;
    x->spec.grace_ms = range(r, 0, 2) ? range(r, 0, MAX_GRACE_MS) : -1;
    x->spec.requeue = range(r, 0, 3) != 0;
    x->proj = p;
    /* A pool owner's owned work goes on its own pool (the promise), one at a time. */
    bool owner = false;
    for (int i = 0; i < w->n_pools; i++)
        owner |= w->pools[i].owner_proj == p;
    if (owner && x->spec.pclass == SCHED_P1) {
        int64_t all = 0, on = 0, room = 0;
        int pool = -1;
        for (int i = 0; i < w->n_wl; i++)
            if (w->wl[i].proj == p && w->wl[i].spec.pclass == SCHED_P1 && w->wl[i].state == Q &&
                w->wl[i].spec.class_id == x->spec.class_id)
                return; /* its earlier owned work waits: no other owned work now */
        /* On the pool it owns with the most room left beside its own owned work. */
        for (int i = 0; i < w->n_pools; i++) {
            int64_t a, o;
            if (w->pools[i].owner_proj != p || pool_milli(w, i, c) == 0)
                continue;
            p1_held(w, p, c, i, &a, &o);
            if (pool < 0 || pool_milli(w, i, c) - o > room) {
                pool = i;
                all = a;
                on = o;
                room = pool_milli(w, i, c) - o;
            }
        }
        if (pool < 0)
            return;
        x->spec.replicas = 1;
        x->spec.gpu_milli = 1000;
        x->spec.n_pools = 1;
        x->spec.pool_ids[0] = w->pools[pool].id;
        /* Promised when within its guarantee and the room of that pool. */
        if (all + 1000 <= guarantee(w, p, c) && on + 1000 <= pool_milli(w, pool, c))
            x->deadline = w->now + MAX_MINRT_MS + MAX_GRACE_MS + 2 * STEP_MAX_MS;
    }
    assert_int_equal(sched_submit(w->s, &x->spec, w->now), 0);
    x->state = Q;
    w->n_wl++;
}

static void release(struct world *w, struct m_wl *x)
{
    struct sched_workload_info wi;
    assert_int_equal(sched_released(w->s, x->spec.id, w->now), 0);
    for (int k = 0; k < x->n_as; k++)
        w->gpus[x->gpu[k]].used -= x->milli[k];
    x->n_as = 0;
    x->state = sched_workload_info(w->s, x->spec.id, &wi) == 0 ? Q : GONE;
}

/* Whether one replica of x fits on node (id) with the devices of set[] (but skip) freed. */
static bool fits_on(const struct world *w, const struct m_wl *x, int64_t node, const int *set,
                    int n_set, int skip)
{
    int32_t free_m[N_GPUS_MAX];
    int whole = 0;
    for (int g = 0; g < w->n_gpus; g++)
        free_m[g] = 1000 - w->gpus[g].used;
    for (int i = 0; i < n_set; i++) {
        const struct m_wl *v = &w->wl[set[i]];
        if (i == skip)
            continue;
        for (int k = 0; k < v->n_as; k++)
            free_m[v->gpu[k]] += v->milli[k];
    }
    for (int g = 0; g < w->n_gpus; g++) {
        const struct m_gpu *gp = &w->gpus[g];
        if (gp->node != node || cls_id(gp->cls) != x->spec.class_id ||
            !may_use(w, x->proj, gp->pool))
            continue;
        if (x->spec.n_pools && (gp->pool < 0 || w->pools[gp->pool].id != x->spec.pool_ids[0]))
            continue;
        if (x->spec.gpu_milli < 1000 && free_m[g] >= x->spec.gpu_milli)
            return true;
        whole += free_m[g] == 1000;
    }
    return x->spec.gpu_milli >= 1000 && whole >= x->spec.gpu_milli / 1000;
}

/* No needless victim, for a one-replica preemptor whose victims are all of other projects. */
static void check_victims(struct world *w, const struct m_wl *x, const int *vic, int n)
{
    for (int i = 0; i < n; i++)
        if (w->wl[vic[i]].proj == x->proj)
            return; /* its own work may go for its limit or guarantee: not a placement question */
    for (int i = 0; i < w->wl[vic[0]].n_as; i++) {
        int64_t node = w->gpus[w->wl[vic[0]].gpu[i]].node;
        bool all_there = true, ok;
        for (int k = 1; k < n && all_there; k++) {
            bool there = false;
            for (int j = 0; j < w->wl[vic[k]].n_as; j++)
                there |= w->gpus[w->wl[vic[k]].gpu[j]].node == node;
            all_there = there;
        }
        if (!all_there || !fits_on(w, x, node, vic, n, -1))
            continue;
        ok = true;
        for (int k = 0; k < n && ok; k++)
            ok = !fits_on(w, x, node, vic, n, k);
        if (ok)
            return;
        failed(w, "preemptor %" PRId64 ": a needless victim among %d on node %" PRId64, x->spec.id,
               n, node);
        return;
    }
    failed(w, "preemptor %" PRId64 ": its %d victims make no room on one node for it", x->spec.id,
           n);
}

static void apply(struct world *w)
{
    for (size_t i = 0; i < w->d.n_admits; i++) {
        const struct sched_admit *a = &w->d.admits[i];
        struct m_wl *x = &w->wl[wl_index(w, a->workload_id)];
        x->state = RUN;
        x->started = w->now;
        x->deadline = 0;
        for (size_t k = 0; k < a->n_assigns && x->n_as < 16; k++) {
            const struct sched_assign *as = &w->d.assigns[a->first_assign + k];
            int g = gpu_index(w, as->gpu_id);
            x->gpu[x->n_as] = g;
            x->milli[x->n_as++] = as->milli;
            w->gpus[g].used += as->milli;
        }
    }
    for (size_t i = 0; i < w->d.n_preemptions; i++) {
        const struct sched_preemption *pe = &w->d.preemptions[i];
        const struct m_wl *x = &w->wl[wl_index(w, pe->preemptor_id)];
        int vic[64], n = 0;
        for (size_t k = 0; k < pe->n_victims && n < 64; k++) {
            struct m_wl *v = &w->wl[wl_index(w, w->d.victims[pe->first_victim + k].workload_id)];
            v->state = PRE;
            v->kill_at = pe->decided_ms + pe->grace_ms; /* what the decision says */
            vic[n++] = (int)(v - w->wl);
        }
        if (x->spec.replicas == 1 && n > 0)
            check_victims(w, x, vic, n);
    }
}

/* Classes are independent: what was not looked at has its own class's lookahead ahead. */
static void check_not_blocked_by_other_class(struct world *w)
{
    for (int i = 0; i < w->n_wl; i++) {
        const struct m_wl *x = &w->wl[i];
        struct sched_workload_info wi;
        int ahead = 0;
        if (x->state != Q || sched_workload_info(w->s, x->spec.id, &wi) != 0)
            continue;
        if (wi.reason.code != SCHED_WAIT_BEHIND && wi.reason.code != SCHED_WAIT_NEW)
            continue;
        for (int k = 0; k < w->n_wl; k++) {
            const struct m_wl *y = &w->wl[k];
            struct sched_workload_info yi;
            if (k != i && y->state == Q && y->proj == x->proj &&
                y->spec.class_id == x->spec.class_id && y->spec.pclass == x->spec.pclass &&
                sched_workload_info(w->s, y->spec.id, &yi) == 0 &&
                yi.queue_position < wi.queue_position)
                ahead++;
        }
        if (ahead <= LOOKAHEAD) {
            failed(w, "workload %" PRId64 " not looked at with only %d of its class ahead",
                   x->spec.id, ahead);
            return;
        }
    }
}

static void step(struct world *w)
{
    struct rng *r = &w->r;
    w->now += range(r, 500, STEP_MAX_MS);
    for (int n = (int)range(r, 0, 2); n > 0; n--)
        submit_random(w);
    for (int i = 0; i < w->n_wl; i++) {
        struct m_wl *x = &w->wl[i];
        if (x->state == PRE && x->kill_at <= w->now)
            release(w, x); /* the backend kills at the end of the grace */
        else if (x->state == RUN && range(r, 0, 40) == 0)
            release(w, x); /* finished */
    }
    sched_decisions_reset(&w->d);
    assert_true(sched_pass(w->s, w->now, &w->d) >= 0);
    apply(w);
    check_not_blocked_by_other_class(w);
    for (int i = 0; i < w->n_wl; i++) {
        const struct m_wl *x = &w->wl[i];
        if (x->state == Q && x->deadline && w->now > x->deadline) {
            struct sched_workload_info wi;
            char why[256] = "";
            if (sched_workload_info(w->s, x->spec.id, &wi) == 0)
                sched_reason_format(&wi.reason, NULL, 0, why, sizeof why);
            failed(w, "owned work %" PRId64 " on its owner's pool not started by %" PRId64 ": %s",
                   x->spec.id, x->deadline, why);
        }
    }
}

static void run_seed(uint64_t seed, int events)
{
    static struct world w;
    memset(&w, 0, sizeof w);
    w.seed = seed;
    w.r.s = seed * 0x2545f4914f6cdd1dULL + 1;
    build(&w);
    for (int e = 0; e < events && !w.failure[0]; e++) {
        step(&w);
        if (w.failure[0] && getenv("PROMISE_DUMP"))
            for (int i = 0; i < w.n_wl; i++) {
                const struct m_wl *x = &w.wl[i];
                struct sched_workload_info wi;
                char why[256] = "";
                if (sched_workload_info(w.s, x->spec.id, &wi) == 0 && x->state == Q)
                    sched_reason_format(&wi.reason, NULL, 0, why, sizeof why);
                print_message("wl %" PRId64 " proj %d P%d cls %" PRId64 " %dx%d pool %" PRId64
                              " state %d started %" PRId64 " minrt %" PRId64 " gpus %d..%s\n",
                              x->spec.id, x->proj, x->spec.pclass, x->spec.class_id,
                              x->spec.replicas, x->spec.gpu_milli,
                              x->spec.n_pools ? x->spec.pool_ids[0] : 0, x->state, x->started,
                              x->spec.min_runtime_ms, x->n_as ? (int)w.gpus[x->gpu[0]].id : 0, why);
            }
        if (w.failure[0] && getenv("PROMISE_DUMP"))
            for (int g = 0; g < w.n_gpus; g++)
                print_message("gpu %" PRId64 " cls %d pool %d (owner proj %d org %d) used %d\n",
                              w.gpus[g].id, w.gpus[g].cls, w.gpus[g].pool,
                              w.gpus[g].pool >= 0 ? w.pools[w.gpus[g].pool].owner_proj : -9,
                              w.gpus[g].pool >= 0 ? w.pools[w.gpus[g].pool].owner_org : -9,
                              w.gpus[g].used);
        if (w.failure[0])
            fail_msg("seed %" PRIu64 " event %d t=%" PRId64 ": %s", seed, e, w.now, w.failure);
    }
    sched_decisions_release(&w.d);
    sched_free(w.s);
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? (int)strtol(v, NULL, 10) : dflt;
}

static void test_owner_reclaim_promise(void **state)
{
    int seeds = env_int("PROMISE_SEEDS", 120), seed0 = env_int("PROMISE_SEED0", 1);
    (void)state;
    for (int i = 0; i < seeds; i++)
        run_seed((uint64_t)(seed0 + i), 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_reclaim_promise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
