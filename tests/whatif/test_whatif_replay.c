/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The what-if replay (src/whatif/whatif.h, issue 17): a replay without
 * changes reproduces recorded starts to the second, and hand-checked cases
 * move the waits the right way (more guarantee, more nodes, a shorter grace,
 * a pool lent to all), with cost rated as invoices rate it. The record's own
 * changes (quotas, caps, pools, nodes) apply at their time, under the
 * what-if's, and a history with them is reproduced only with them.
 *
 * Times are T0 + seconds; one GPU class (1); milli-GPU everywhere.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "base/err.h"
#include "whatif/whatif-int.h"

#define T0 INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define S(x) (T0 + (int64_t)(x)*1000)
#define DAY INT64_C(86400000)

/* A small world the tests fill in. */
struct fx {
    int64_t classes[1];
    struct whatif_project projects[4];
    struct sched_pool_spec pools[2];
    struct whatif_node nodes[8];
    struct whatif_gpu gpus[64];
    struct whatif_quota quotas[4];
    struct whatif_org_cap caps[2];
    struct whatif_recorded_change history[8];
    struct meter_price prices[1];
    struct whatif_workload wls[256];
    struct whatif_world w;
};

static void fx_init(struct fx *f, int n_nodes, int gpus_per_node)
{
    memset(f, 0, sizeof(*f));
    f->classes[0] = 1;
    for (int p = 0; p < 3; p++)
        f->projects[p] = (struct whatif_project){p + 1, 1, 1};
    for (int n = 0; n < n_nodes; n++) {
        f->nodes[n].spec.id = n + 1;
        f->nodes[n].spec.cluster_id = 1;
        f->nodes[n].state = SCHED_NODE_READY;
        for (int g = 0; g < gpus_per_node; g++)
            f->gpus[f->w.n_gpus++] = (struct whatif_gpu){(n + 1) * 100 + g + 1, n + 1, 1, 0};
    }
    f->w.classes = f->classes;
    f->w.n_classes = 1;
    f->w.projects = f->projects;
    f->w.n_projects = 3;
    f->w.pools = f->pools;
    f->w.nodes = f->nodes;
    f->w.n_nodes = (size_t)n_nodes;
    f->w.gpus = f->gpus;
    f->w.quotas = f->quotas;
    f->w.org_caps = f->caps;
    f->w.recorded = f->history;
    f->w.prices = f->prices;
    f->w.workloads = f->wls;
    sched_config_init(&f->w.cfg);
    f->w.cfg.default_grace_ms = 30000;
    f->w.cfg.reserve_after_ms = 600000;
    f->w.from_ms = T0;
    f->w.to_ms = T0 + DAY;
}

static struct whatif_workload *fx_add(struct fx *f, int64_t project, int64_t at_s, int gpus,
                                      int64_t run_s)
{
    struct whatif_workload *wl = &f->wls[f->w.n_workloads];
    memset(wl, 0, sizeof(*wl));
    wl->spec.id = (int64_t)f->w.n_workloads + 1;
    wl->spec.project_id = project;
    wl->spec.pclass = SCHED_AUTO;
    wl->spec.submit_ms = S(at_s);
    wl->spec.replicas = 1;
    wl->spec.class_id = 1;
    wl->spec.gpu_milli = gpus * 1000;
    wl->spec.grace_ms = -1;
    wl->spec.requeue = true;
    wl->org_id = 1;
    wl->flavor_id = 1;
    wl->run_ms = run_s * 1000;
    f->w.n_workloads++;
    return wl;
}

static const struct whatif_stats *project(const struct whatif_run *r, int64_t id)
{
    for (size_t i = 0; i < r->n_projects; i++) {
        if (r->projects[i].id == id)
            return &r->projects[i];
    }
    fail_msg("project %" PRId64 " not in the run", id);
    return NULL;
}

static void replay(const struct fx *f, const struct whatif_change *c, size_t n,
                   struct whatif_run *r)
{
    struct error_info ei = {0};
    int rc = whatif_replay(&f->w, c, n, NULL, r, &ei);
    if (rc != 0)
        fail_msg("whatif_replay: %s", ei.message);
}

/* B borrows both GPUs for 1000 s from 0; A wants one at 100 s for 100 s. */
static void quota_case(struct fx *f)
{
    fx_init(f, 1, 2);
    fx_add(f, 2, 0, 2, 1000);  /* b1 */
    fx_add(f, 1, 100, 1, 100); /* a1 */
}

static void test_baseline_waits(void **state)
{
    struct fx f;
    struct whatif_run r;
    (void)state;
    quota_case(&f);
    replay(&f, NULL, 0, &r);
    /* Nothing is guaranteed: a1 waits for b1's end at 1000 s. */
    assert_int_equal(r.start_ms[0], S(0));
    assert_int_equal(r.start_ms[1], S(1000));
    assert_int_equal(project(&r, 1)->wait_p50_ms, 900000);
    assert_int_equal(project(&r, 2)->wait_p50_ms, 0);
    assert_int_equal(r.overall.preemptions, 0);
    assert_int_equal(r.capacity_milli, 2000);
    /* b1: 2 GPUs x 1000 s; a1: 1 GPU x 100 s */
    assert_int_equal(r.overall.gpu_milli_ms, 2000 * 1000000LL + 1000 * 100000LL);
    assert_int_equal(r.allocated_milli_ms, r.overall.gpu_milli_ms);
    assert_int_equal(r.idle_milli_ms, 2000 * DAY - r.overall.gpu_milli_ms);
    whatif_run_release(&r);
}

static void test_more_guarantee_moves_waits(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c = {.kind = WHATIF_QUOTA, .project_id = 1, .class_id = 1, .milli = 1000};
    (void)state;
    quota_case(&f);
    replay(&f, &c, 1, &r);
    /*
     * a1 is owned now: it reclaims b1 at 100 s, b1 releases after its 30 s
     * grace, a1 runs 130..230 s, b1 (requeued) starts again at 230 s.
     */
    assert_int_equal(r.start_ms[1], S(130));
    assert_int_equal(project(&r, 1)->wait_p50_ms, 30000);
    assert_int_equal(project(&r, 2)->wait_p50_ms, 100000);
    assert_int_equal(project(&r, 2)->preemptions, 1);
    assert_int_equal(project(&r, 2)->lost_milli_ms, 2000 * 130000LL);
    /* b1 held 2 GPUs 0..130 s and again for its whole 1000 s */
    assert_int_equal(project(&r, 2)->gpu_milli_ms, 2000 * 130000LL + 2000 * 1000000LL);
    assert_int_equal(r.overall.preemptions, 1);
    whatif_run_release(&r);
}

static void test_shorter_grace(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c[2] = {
        {.kind = WHATIF_QUOTA, .project_id = 1, .class_id = 1, .milli = 1000},
        {.kind = WHATIF_GRACE, .grace_ms = 0}};
    (void)state;
    quota_case(&f);
    replay(&f, c, 2, &r);
    assert_int_equal(r.start_ms[1], S(100));
    assert_int_equal(project(&r, 1)->wait_p50_ms, 0);
    whatif_run_release(&r);
}

static void test_added_nodes_lower_waits(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c = {.kind = WHATIF_ADD_NODES, .class_id = 1, .count = 1};
    (void)state;
    quota_case(&f);
    replay(&f, &c, 1, &r);
    assert_int_equal(r.capacity_milli, 4000); /* like the class's first node: 2 GPUs */
    assert_int_equal(r.start_ms[1], S(100));
    assert_int_equal(project(&r, 1)->wait_p50_ms, 0);
    assert_int_equal(r.overall.preemptions, 0);
    whatif_run_release(&r);
}

static void test_removed_nodes_raise_waits(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c = {.kind = WHATIF_REMOVE_NODES, .class_id = 1, .count = 1};
    (void)state;
    fx_init(&f, 2, 2);
    fx_add(&f, 1, 0, 2, 600);
    fx_add(&f, 2, 0, 2, 600);
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.overall.wait_max_ms, 0);
    whatif_run_release(&r);
    replay(&f, &c, 1, &r);
    assert_int_equal(r.capacity_milli, 2000);
    assert_int_equal(r.overall.wait_max_ms, 600000);
    whatif_run_release(&r);
}

/* Work cancelled while it waited in the record leaves the queue then, unless it has started. */
static void test_cancelled_while_queued(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c = {.kind = WHATIF_ADD_NODES, .class_id = 1, .count = 1};
    (void)state;
    quota_case(&f);
    f.wls[1].cancel_ms = S(300); /* a1 gave up after 200 s */
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[1], 0);
    assert_int_equal(project(&r, 1)->cancelled, 1);
    assert_int_equal(project(&r, 1)->not_started, 1);
    assert_int_equal(project(&r, 1)->wait_max_ms, 200000);
    assert_int_equal(project(&r, 1)->gpu_milli_ms, 0);
    whatif_run_release(&r);
    /* with room it starts on arrival and runs its run time */
    replay(&f, &c, 1, &r);
    assert_int_equal(r.start_ms[1], S(100));
    assert_int_equal(project(&r, 1)->cancelled, 0);
    assert_int_equal(project(&r, 1)->gpu_milli_ms, 1000 * 100000LL);
    whatif_run_release(&r);
}

static void test_lend_to_all(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c = {.kind = WHATIF_LEND_TO_ALL, .pool_id = 7};
    (void)state;
    fx_init(&f, 1, 2);
    f.pools[0] = (struct sched_pool_spec){.id = 7, .owner_project_id = 2};
    f.w.n_pools = 1;
    for (size_t i = 0; i < f.w.n_gpus; i++)
        f.gpus[i].pool_id = 7;
    fx_add(&f, 1, 0, 1, 60);
    replay(&f, NULL, 0, &r);
    /* the only GPUs are project 2's and closed to project 1 */
    assert_int_equal(r.start_ms[0], 0);
    assert_int_equal(r.overall.not_started, 1);
    assert_int_equal(r.overall.wait_max_ms, DAY + WHATIF_DRAIN_MS);
    whatif_run_release(&r);
    replay(&f, &c, 1, &r);
    assert_int_equal(r.start_ms[0], S(0));
    assert_int_equal(r.overall.not_started, 0);
    whatif_run_release(&r);
}

static void test_cost_rated(void **state)
{
    struct fx f;
    struct whatif_run r;
    (void)state;
    fx_init(&f, 1, 2);
    f.prices[0] = (struct meter_price){.id = 1,
                                       .flavor_id = 1,
                                       .currency = "EUR",
                                       .minor_digits = 2,
                                       .price_per_hour_micro = 2000000,
                                       .mult_ppm = {1000000, 500000},
                                       .effective_from_ms = T0 - DAY};
    f.w.n_prices = 1;
    f.quotas[0] = (struct whatif_quota){1, 1, 1000, -1};
    f.w.n_quotas = 1;
    fx_add(&f, 1, 0, 1, 3600);                   /* owned: 2.00 */
    fx_add(&f, 2, 0, 1, 3600)->flavor_id = 1;    /* opportunistic: 1.00 */
    fx_add(&f, 2, 7200, 1, 1800)->flavor_id = 2; /* no price: counted, not rated */
    replay(&f, NULL, 0, &r);
    assert_string_equal(r.currency, "EUR");
    assert_int_equal(project(&r, 1)->cost_micros, 2000000);
    assert_int_equal(project(&r, 2)->cost_micros, 1000000);
    assert_int_equal(r.overall.cost_micros, 3000000);
    assert_int_equal(r.unpriced, 1);
    whatif_run_release(&r);
}

static void test_scope_limits_figures(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct error_info ei = {0};
    int64_t only = 1;
    struct whatif_options opt = {&only, 1};
    (void)state;
    quota_case(&f);
    assert_int_equal(whatif_replay(&f.w, NULL, 0, &opt, &r, &ei), 0);
    assert_int_equal(r.n_projects, 1);
    assert_int_equal(r.projects[0].id, 1);
    assert_int_equal(r.overall.workloads, 1);
    assert_int_equal(r.overall.gpu_milli_ms, 1000 * 100000LL);
    assert_int_equal(r.allocated_milli_ms, 1000 * 100000LL);
    /* the replay itself is whole: a1 still waits for b1 */
    assert_int_equal(r.start_ms[1], S(1000));
    whatif_run_release(&r);
}

static void test_bad_changes(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct error_info ei = {0};
    struct whatif_change c = {.kind = WHATIF_QUOTA, .project_id = 99, .class_id = 1, .milli = 1};
    (void)state;
    quota_case(&f);
    assert_int_equal(whatif_replay(&f.w, &c, 1, NULL, &r, &ei), ERR_INVALID);
    assert_string_equal(ei.field, "changes[0]");
    c = (struct whatif_change){.kind = WHATIF_POLICY};
    snprintf(c.policy, sizeof(c.policy), "nope");
    assert_int_equal(whatif_replay(&f.w, &c, 1, NULL, &r, &ei), ERR_INVALID);
    c = (struct whatif_change){.kind = WHATIF_ADD_NODES, .class_id = 1, .count = 0};
    assert_int_equal(whatif_replay(&f.w, &c, 1, NULL, &r, &ei), ERR_INVALID);
    c = (struct whatif_change){.kind = WHATIF_LEND_TO_ALL, .pool_id = 5};
    assert_int_equal(whatif_replay(&f.w, &c, 1, NULL, &r, &ei), ERR_INVALID);
    f.w.to_ms = f.w.from_ms + 40 * DAY;
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(whatif_replay(&f.w, NULL, 0, NULL, &r, &ei), ERR_INVALID);
    assert_string_equal(ei.field, "period");
}

static void test_policy_change_runs(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change c = {.kind = WHATIF_POLICY};
    (void)state;
    quota_case(&f);
    snprintf(c.policy, sizeof(c.policy), "fgd-fill");
    replay(&f, &c, 1, &r);
    assert_int_equal(r.start_ms[1], S(1000));
    whatif_run_release(&r);
}

/* ---- a recorded history, reproduced ---- */

static uint64_t rng = 42;

static int64_t rnd(int64_t lo, int64_t hi)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (int64_t)(z % (uint64_t)(hi - lo + 1));
}

/* The workload whose end or release is due by t and earliest, ties in the order decided; n: none.
 */
static size_t next_due(const int64_t *end, const int64_t *end_seq, const int64_t *release,
                       const int64_t *release_seq, size_t n, int64_t t)
{
    size_t best = n;
    int64_t best_at = 0, best_seq = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t at = 0, sq = 0;
        if (end[i] && end[i] <= t) {
            at = end[i];
            sq = end_seq[i];
        }
        if (release[i] && release[i] <= t &&
            (!at || release[i] < at || (release[i] == at && release_seq[i] < sq))) {
            at = release[i];
            sq = release_seq[i];
        }
        if (at && (best == n || at < best_at || (at == best_at && sq < best_seq))) {
            best = i;
            best_at = at;
            best_seq = sq;
        }
    }
    return best;
}

/*
 * Records a history the way the daemon makes one: a pass every second of
 * wall time (the engine's tick), ends and preemption releases told to the
 * core at their second, arrivals submitted at theirs, starts recorded when
 * a pass admits. Arrivals and run times are whole seconds.
 */
static void record(struct fx *f)
{
    struct whatif_core core;
    struct error_info ei = {0};
    struct sched_decisions d;
    int64_t end[256] = {0}, release[256] = {0}, end_seq[256] = {0}, release_seq[256] = {0};
    int64_t seq = 0;
    size_t n = f->w.n_workloads, left = n, next_tc = 0;

    assert_int_equal(whatif__core_new(&f->w, NULL, 0, &core, &ei), 0);
    sched_decisions_init(&d);
    /* until all is done or the day is over (P1 work beyond its guarantee never runs) */
    for (int64_t t = f->w.from_ms; left > 0 && t < f->w.to_ms; t += 1000) {
        for (;;) { /* what is due, in the order it was decided (as the replay's event heap) */
            size_t i = next_due(end, end_seq, release, release_seq, n, t);
            if (i == n)
                break;
            assert_int_equal(sched_released(core.s, f->wls[i].spec.id, t), 0);
            /* a victim not requeued has left */
            left -= (end[i] && end[i] <= t) || !f->wls[i].spec.requeue;
            end[i] = release[i] = 0;
        }
        for (; next_tc < f->w.n_recorded && f->history[next_tc].at_ms <= t; next_tc++)
            assert_int_equal(whatif__recorded_change(&core, &f->history[next_tc], NULL, 0), 0);
        for (size_t i = 0; i < n; i++) {
            if (f->wls[i].spec.submit_ms == t)
                assert_int_equal(sched_submit(core.s, &f->wls[i].spec, t), 0);
        }
        sched_decisions_reset(&d);
        sched_pass(core.s, t, &d);
        for (size_t k = 0; k < d.n_admits; k++) {
            size_t i = (size_t)d.admits[k].workload_id - 1;
            if (!f->wls[i].recorded_start_ms)
                f->wls[i].recorded_start_ms = t;
            end[i] = t + f->wls[i].run_ms;
            end_seq[i] = seq++;
        }
        for (size_t v = 0; v < d.n_victims; v++) {
            size_t i = (size_t)d.victims[v].workload_id - 1;
            release_seq[i] = seq++;
            release[i] = d.preemptions[0].decided_ms + d.preemptions[0].grace_ms;
            if (d.n_preemptions > 1) { /* find the victim's own preemption */
                for (size_t k = 0; k < d.n_preemptions; k++) {
                    const struct sched_preemption *p = &d.preemptions[k];
                    if (v >= p->first_victim && v < p->first_victim + p->n_victims)
                        release[i] = p->decided_ms + p->grace_ms;
                }
            }
        }
    }
    sched_decisions_release(&d);
    whatif__core_release(&core);
}

static void test_baseline_reproduces_record(void **state)
{
    struct fx f;
    struct whatif_run r;
    int64_t compared;
    (void)state;
    fx_init(&f, 3, 4);
    /* project 1 owns node 1's GPUs (a derived guarantee); the others borrow up to 8 */
    f.pools[0] = (struct sched_pool_spec){.id = 1, .owner_project_id = 1, .lend_to_all = true};
    f.w.n_pools = 1;
    for (size_t i = 0; i < 4; i++)
        f.gpus[i].pool_id = 1;
    f.quotas[0] = (struct whatif_quota){1, 1, -1, -1};
    f.quotas[1] = (struct whatif_quota){2, 1, 0, 8000};
    f.quotas[2] = (struct whatif_quota){3, 1, 2000, 8000};
    f.w.n_quotas = 3;
    for (int i = 0; i < 200; i++) {
        static const int sizes[] = {1, 1, 1, 2, 2, 4};
        struct whatif_workload *wl =
            fx_add(&f, rnd(1, 3), rnd(0, 7200), sizes[rnd(0, 5)], rnd(60, 1800));
        int k = (int)rnd(0, 9);
        wl->spec.pclass = k < 5 ? SCHED_AUTO : k < 8 ? SCHED_P2 : SCHED_P1;
        if (wl->spec.pclass == SCHED_P1 && wl->spec.project_id == 2)
            wl->spec.pclass = SCHED_P2;
        wl->spec.priority = (int32_t)rnd(0, 2);
        wl->spec.requeue = rnd(0, 4) > 0;
    }
    record(&f);
    replay(&f, NULL, 0, &r);
    compared = r.starts_compared;
    assert_true(compared > 150);
    for (size_t i = 0; getenv("WHATIF_DEBUG") && i < f.w.n_workloads; i++)
        if (r.start_ms[i] != f.wls[i].recorded_start_ms)
            fprintf(stderr,
                    "wl %zu p%" PRId64 " cls %d submit %" PRId64 " rec %" PRId64 " got %" PRId64
                    " gpus %d run %" PRId64 "\n",
                    i + 1, f.wls[i].spec.project_id, f.wls[i].spec.pclass,
                    (f.wls[i].spec.submit_ms - T0) / 1000, (f.wls[i].recorded_start_ms - T0) / 1000,
                    (r.start_ms[i] - T0) / 1000, f.wls[i].spec.gpu_milli, f.wls[i].run_ms / 1000);
    assert_int_equal(r.starts_same, compared);
    for (size_t i = 0; i < f.w.n_workloads; i++)
        assert_int_equal(r.start_ms[i], f.wls[i].recorded_start_ms);
    whatif_run_release(&r);
}

/* ---- quotas that changed during the period ---- */

static void quota_at(struct fx *f, int64_t at_s, int64_t project, int64_t g, int64_t l)
{
    f->history[f->w.n_recorded++] = (struct whatif_recorded_change){
        .at_ms = S(at_s),
        .quota = {.project_id = project, .class_id = 1, .guaranteed = g, .limit = l}};
}

/* a1's project is given a guarantee of one GPU at 50 s, before a1 arrives at 100 s. */
static void test_quota_set_during_period(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change less = {
        .kind = WHATIF_QUOTA, .project_id = 1, .class_id = 1, .milli = -1000};
    (void)state;
    quota_case(&f);
    quota_at(&f, 50, 1, 1000, -1);
    replay(&f, NULL, 0, &r);
    /* owned from 50 s: a1 reclaims b1 at 100 s and starts after the 30 s grace */
    assert_int_equal(r.start_ms[1], S(130));
    assert_int_equal(r.recorded_applied, 1);
    assert_int_equal(project(&r, 2)->preemptions, 1);
    whatif_run_release(&r);
    /* the change applies on top of the recorded quota: back to none, a1 waits for b1 */
    replay(&f, &less, 1, &r);
    assert_int_equal(r.start_ms[1], S(1000));
    assert_int_equal(r.overall.preemptions, 0);
    whatif_run_release(&r);
    /* set at 50 s and removed at 80 s: nothing is guaranteed when a1 arrives */
    quota_at(&f, 80, 1, 0, -1);
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[1], S(1000));
    assert_int_equal(r.recorded_applied, 2);
    whatif_run_release(&r);
}

/* An organization's cap lowered at 500 s holds back B's second workload; lifted at 700 s. */
static void test_cap_changes_during_period(void **state)
{
    struct fx f;
    struct whatif_run r;
    (void)state;
    fx_init(&f, 1, 4);
    fx_add(&f, 2, 0, 2, 1000);  /* b1: 0..1000 */
    fx_add(&f, 2, 600, 2, 100); /* b2 */
    f.history[0] =
        (struct whatif_recorded_change){.at_ms = S(500),
                                        .kind = WHATIF_REC_CAP,
                                        .cap = {.org_id = 1, .class_id = 1, .limit = 2000}};
    f.history[1] = (struct whatif_recorded_change){
        .at_ms = S(700), .kind = WHATIF_REC_CAP, .cap = {.org_id = 1, .class_id = 1, .limit = -1}};
    f.w.n_recorded = 2;
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[1], S(700));
    whatif_run_release(&r);
    f.w.n_recorded = 1; /* never lifted: b2 waits for b1's end */
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[1], S(1000));
    whatif_run_release(&r);
}

/* Project 1's pool is opened to everyone at 200 s: project 2's work, there since 100 s, starts. */
static void test_pool_lent_during_period(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change lend = {.kind = WHATIF_LEND_TO_ALL, .pool_id = 1};
    (void)state;
    fx_init(&f, 1, 2);
    f.pools[0] = (struct sched_pool_spec){.id = 1, .owner_project_id = 1};
    f.w.n_pools = 1;
    f.gpus[0].pool_id = f.gpus[1].pool_id = 1;
    fx_add(&f, 2, 100, 1, 100);
    f.history[0] = (struct whatif_recorded_change){
        .at_ms = S(200), .kind = WHATIF_REC_POOL, .pool = f.pools[0]};
    f.history[0].pool.lend_to_all = true;
    f.w.n_recorded = 1;
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[0], S(200));
    assert_int_equal(r.recorded_applied, 1);
    whatif_run_release(&r);
    /* lent to all from the start: at once */
    replay(&f, &lend, 1, &r);
    assert_int_equal(r.start_ms[0], S(100));
    whatif_run_release(&r);
    /* the record's change at 200 s keeps it closed; the what-if's lends it all along */
    f.history[0].pool.lend_to_all = false;
    replay(&f, &lend, 1, &r);
    assert_int_equal(r.start_ms[0], S(100));
    whatif_run_release(&r);
    /* never lent: it never starts */
    f.w.n_recorded = 0;
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[0], 0);
    whatif_run_release(&r);
}

/*
 * Weights share borrowed GPUs: projects 1 and 2 each run one of three GPUs
 * to 1000 s; when project 3's frees the third at 100 s, a1 (waiting since
 * 10 s) and b1 (since 20 s) ask for it, and the project with the smaller
 * share of what it weighs goes first.
 */
static void test_weight_changes_during_period(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_recorded_change *c;
    (void)state;
    fx_init(&f, 1, 3);
    fx_add(&f, 1, 0, 1, 1000); /* a0 */
    fx_add(&f, 2, 0, 1, 1000); /* b0 */
    fx_add(&f, 3, 0, 1, 100);  /* x */
    fx_add(&f, 1, 10, 1, 100); /* a1 */
    fx_add(&f, 2, 20, 1, 100); /* b1 */
    replay(&f, NULL, 0, &r);
    /* equal weights, equal shares: the one waiting longest */
    assert_int_equal(r.start_ms[3], S(100));
    assert_int_equal(r.start_ms[4], S(200));
    whatif_run_release(&r);
    c = &f.history[f.w.n_recorded++];
    *c = (struct whatif_recorded_change){.at_ms = S(50), .kind = WHATIF_REC_PROJECT};
    c->project = (struct whatif_project){2, 1, 3};
    replay(&f, NULL, 0, &r);
    /* project 2 weighs three times as much from 50 s: its one GPU is the smaller share */
    assert_int_equal(r.start_ms[4], S(100));
    assert_int_equal(r.start_ms[3], S(200));
    assert_int_equal(r.recorded_applied, 1);
    whatif_run_release(&r);
    /* the same weight given at 150 s, after the GPU went: as with equal weights */
    c->at_ms = S(150);
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[3], S(100));
    assert_int_equal(r.start_ms[4], S(200));
    whatif_run_release(&r);
}

static void node_at(struct fx *f, int64_t at_s, int64_t node, enum sched_node_state st)
{
    struct whatif_recorded_change *c = &f->history[f->w.n_recorded++];
    *c = (struct whatif_recorded_change){.at_ms = S(at_s), .kind = WHATIF_REC_NODE};
    c->node.id = node;
    c->node.state = st;
}

/* A node added at 500 s (down before): a1 starts on it then; capacity counts it from then. */
static void test_node_added_during_period(void **state)
{
    struct fx f;
    struct whatif_run r;
    (void)state;
    fx_init(&f, 2, 2);
    f.nodes[1].state = SCHED_NODE_DOWN;
    fx_add(&f, 2, 0, 2, 1000);  /* b1 */
    fx_add(&f, 1, 100, 2, 100); /* a1 */
    node_at(&f, 500, 2, SCHED_NODE_READY);
    replay(&f, NULL, 0, &r);
    assert_int_equal(r.start_ms[1], S(500));
    assert_int_equal(r.recorded_applied, 1);
    assert_int_equal(r.capacity_milli, 4000); /* when the period ended */
    assert_int_equal(r.capacity_milli_ms, 2000 * 500000 + 4000 * (DAY - 500000));
    assert_int_equal(r.idle_milli_ms,
                     2000 * 500000 + 4000 * (DAY - 500000) - r.overall.gpu_milli_ms);
    whatif_run_release(&r);
}

/* A node the what-if removes stays down when the record brings it back. */
static void test_removed_node_stays_down(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct whatif_change rm = {.kind = WHATIF_REMOVE_NODES, .class_id = 1, .count = 1};
    (void)state;
    fx_init(&f, 2, 2);
    fx_add(&f, 1, 400, 2, 100);
    fx_add(&f, 1, 400, 2, 100);
    node_at(&f, 200, 2, SCHED_NODE_DOWN);
    node_at(&f, 300, 2, SCHED_NODE_READY);
    replay(&f, NULL, 0, &r);
    /* as recorded: node 2 is back by 400 s, both start at once */
    assert_int_equal(r.start_ms[0], S(400));
    assert_int_equal(r.start_ms[1], S(400));
    assert_int_equal(r.capacity_milli, 4000);
    assert_int_equal(r.capacity_milli_ms, 4000 * (DAY - 100000) + 2000 * 100000);
    whatif_run_release(&r);
    replay(&f, &rm, 1, &r);
    /* node 2 (the highest id) taken out stays out: one after the other */
    assert_int_equal(r.start_ms[0], S(400));
    assert_int_equal(r.start_ms[1], S(500));
    assert_int_equal(r.capacity_milli, 2000);
    assert_int_equal(r.capacity_milli_ms, 2000 * DAY);
    whatif_run_release(&r);
}

static void test_recorded_out_of_order(void **state)
{
    struct fx f;
    struct whatif_run r;
    struct error_info ei = {0};
    (void)state;
    quota_case(&f);
    quota_at(&f, 80, 1, 1000, -1);
    quota_at(&f, 50, 1, 0, -1);
    assert_int_equal(whatif_replay(&f.w, NULL, 0, NULL, &r, &ei), ERR_INVALID);
    assert_string_equal(ei.field, "recorded");
    f.w.n_recorded = 0;
    quota_at(&f, -10, 1, 1000, -1); /* before the period */
    assert_int_equal(whatif_replay(&f.w, NULL, 0, NULL, &r, &ei), ERR_INVALID);
    {
        struct whatif_recorded_change *many =
            xcalloc(WHATIF_MAX_RECORDED + 1, sizeof(*many)); /* all at the start: in order */
        struct error_info ei2 = {0};
        for (size_t i = 0; i <= WHATIF_MAX_RECORDED; i++)
            many[i] = (struct whatif_recorded_change){
                .at_ms = S(0), .quota = {.project_id = 1, .class_id = 1, .limit = -1}};
        f.w.recorded = many;
        f.w.n_recorded = WHATIF_MAX_RECORDED + 1;
        assert_int_equal(whatif_replay(&f.w, NULL, 0, NULL, &r, &ei2), ERR_TOO_LARGE);
        assert_non_null(strstr(ei2.message, "10000"));
        f.w.n_recorded = WHATIF_MAX_RECORDED; /* the bound itself is fine */
        assert_int_equal(whatif_replay(&f.w, NULL, 0, NULL, &r, &ei2), 0);
        assert_int_equal(r.recorded_applied, WHATIF_MAX_RECORDED);
        whatif_run_release(&r);
        free(many);
    }
}

/*
 * A day whose quotas changed three times is reproduced to the second with
 * its changes, and not with the quotas as they stand at its end (what a
 * replay without the record's changes would use).
 */
static void test_baseline_reproduces_changed_quotas(void **state)
{
    struct fx f;
    struct whatif_run r;
    int64_t compared;
    (void)state;
    rng = 7;
    fx_init(&f, 3, 4);
    f.quotas[0] = (struct whatif_quota){1, 1, 4000, 12000};
    f.quotas[1] = (struct whatif_quota){2, 1, 0, 12000};
    f.quotas[2] = (struct whatif_quota){3, 1, 2000, 12000};
    f.w.n_quotas = 3;
    quota_at(&f, 1800, 2, 4000, 12000); /* project 2 is given owned GPUs */
    quota_at(&f, 3600, 1, 0, 4000);     /* project 1 loses them and is capped */
    quota_at(&f, 5400, 3, 6000, 12000);
    for (int i = 0; i < 200; i++) {
        static const int sizes[] = {1, 1, 1, 2, 2, 4};
        struct whatif_workload *wl =
            fx_add(&f, rnd(1, 3), rnd(0, 7200), sizes[rnd(0, 5)], rnd(60, 1800));
        int k = (int)rnd(0, 9);
        wl->spec.pclass = k < 6 ? SCHED_AUTO : SCHED_P2;
        wl->spec.priority = (int32_t)rnd(0, 2);
    }
    record(&f);
    replay(&f, NULL, 0, &r);
    compared = r.starts_compared;
    assert_true(compared > 150);
    assert_int_equal(r.recorded_applied, 3);
    assert_int_equal(r.starts_same, compared);
    for (size_t i = 0; i < f.w.n_workloads; i++)
        assert_int_equal(r.start_ms[i], f.wls[i].recorded_start_ms);
    whatif_run_release(&r);

    f.quotas[0] = (struct whatif_quota){1, 1, 0, 4000}; /* the day's end, all along */
    f.quotas[1] = (struct whatif_quota){2, 1, 4000, 12000};
    f.quotas[2] = (struct whatif_quota){3, 1, 6000, 12000};
    f.w.n_recorded = 0;
    replay(&f, NULL, 0, &r);
    assert_true(r.starts_same < compared - 10);
    whatif_run_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_baseline_waits),
        cmocka_unit_test(test_more_guarantee_moves_waits),
        cmocka_unit_test(test_shorter_grace),
        cmocka_unit_test(test_added_nodes_lower_waits),
        cmocka_unit_test(test_removed_nodes_raise_waits),
        cmocka_unit_test(test_cancelled_while_queued),
        cmocka_unit_test(test_lend_to_all),
        cmocka_unit_test(test_cost_rated),
        cmocka_unit_test(test_scope_limits_figures),
        cmocka_unit_test(test_bad_changes),
        cmocka_unit_test(test_policy_change_runs),
        cmocka_unit_test(test_baseline_reproduces_record),
        cmocka_unit_test(test_quota_set_during_period),
        cmocka_unit_test(test_cap_changes_during_period),
        cmocka_unit_test(test_pool_lent_during_period),
        cmocka_unit_test(test_weight_changes_during_period),
        cmocka_unit_test(test_node_added_during_period),
        cmocka_unit_test(test_removed_node_stays_down),
        cmocka_unit_test(test_recorded_out_of_order),
        cmocka_unit_test(test_baseline_reproduces_changed_quotas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
