/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the placement policies (src/sched/policies.h): each policy on
 * tiny hand-made node views picks what its definition says, no policy ever
 * returns a choice that does not fit (randomized views, fixed seed), the
 * typical-pod computation of FGD on a small list, and one policy driven
 * through the scheduler core end to end. Numbers are worked out by hand in
 * the comments.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "sched/policies.h"
#include "sched/sched.h"

static struct sched_node_view view(int64_t id, const int32_t *free_, int n, int64_t cpu_free,
                                   int64_t cpu_cap)
{
    static const int64_t ids[SCHED_MAX_GPUS_PER_NODE] = {0};
    return (struct sched_node_view){id, cpu_free, cpu_cap, 0, 0, n, free_, ids, NULL};
}

static struct sched_replica_req req(int32_t milli, int64_t cpu)
{
    return (struct sched_replica_req){1, milli, cpu, 0};
}

static int64_t score(const struct sched_policy *p, const struct sched_node_view *v,
                     const struct sched_replica_req *r, int *pick)
{
    return p->score(p, v, r, pick);
}

static void test_bestfit_fullest_node(void **st)
{
    (void)st;
    struct sched_policy *p = sched_policy_bestfit_new();
    int32_t a[] = {1000, 1000}, b[] = {1000, 200};
    struct sched_node_view va = view(1, a, 2, 0, 0), vb = view(2, b, 2, 0, 0);
    struct sched_replica_req r = req(300, 0);
    int pa[8], pb[8];
    int64_t sa = score(p, &va, &r, pa), sb = score(p, &vb, &r, pb);
    /* After: a (2000-300)/2000 = 0.85, b (1200-300)/2000 = 0.45. */
    assert_true(sb < sa);
    assert_int_equal(pb[0], 0); /* 200 is too small: the only fitting device */
    /* A share goes to the fitting device with the least free. */
    int32_t c[] = {1000, 500, 400};
    struct sched_node_view vc = view(3, c, 3, 0, 0);
    assert_true(score(p, &vc, &r, pa) != INT64_MAX);
    assert_int_equal(pa[0], 2);
    /* Not enough CPU, or no device with room: INT64_MAX. */
    struct sched_node_view vd = view(4, a, 2, 100, 1000);
    struct sched_replica_req big = req(300, 200);
    assert_true(score(p, &vd, &big, pa) == INT64_MAX);
    struct sched_replica_req three = req(3000, 0);
    assert_true(score(p, &va, &three, pa) == INT64_MAX);
    sched_policy_free(p);
}

static void test_packing_prefers_partial(void **st)
{
    (void)st;
    struct sched_policy *p = sched_policy_packing_new();
    int32_t idle[] = {1000, 1000, 1000, 1000}, part[] = {1000, 600}, busy[] = {0, 1000, 1000};
    struct sched_node_view vi = view(1, idle, 4, 0, 0), vp = view(2, part, 2, 0, 0),
                           vb = view(3, busy, 3, 0, 0);
    struct sched_replica_req share = req(500, 0), whole = req(1000, 0);
    int pi[8], pp[8], pb[8];
    int64_t si = score(p, &vi, &share, pi), sp = score(p, &vp, &share, pp),
            sb = score(p, &vb, &share, pb);
    assert_int_equal(pp[0], 1); /* onto the partially used device */
    assert_true(sp < sb && sb < si);
    /* Whole GPUs: a node in use before an idle one, even with more free. */
    si = score(p, &vi, &whole, pi);
    sb = score(p, &vb, &whole, pb);
    assert_true(sb < si);
    assert_int_equal(pb[0], 1);
    sched_policy_free(p);
}

static void test_clustering_same_demand(void **st)
{
    (void)st;
    struct sched_policy *p = sched_policy_clustering_new();
    int32_t same[] = {750, 1000}, idle[] = {1000, 1000}, other[] = {600, 1000};
    struct sched_node_view vs = view(1, same, 2, 0, 0), vi = view(2, idle, 2, 0, 0),
                           vo = view(3, other, 2, 0, 0);
    struct sched_replica_req r = req(250, 0);
    int pk[8];
    int64_t ss = score(p, &vs, &r, pk), si = score(p, &vi, &r, pk), so = score(p, &vo, &r, pk);
    /* 250 used is one 250 pod: same demand first, then other busy nodes, then an idle one. */
    assert_true(ss < so && so < si);
    /* A whole GPU: a node with a fully used device is "same demand". */
    int32_t full[] = {0, 1000, 1000}, part[] = {500, 1000, 1000};
    struct sched_node_view vf = view(4, full, 3, 0, 0), vp = view(5, part, 3, 0, 0);
    struct sched_replica_req w = req(1000, 0);
    assert_true(score(p, &vf, &w, pk) < score(p, &vp, &w, pk));
    assert_int_equal(pk[0], 1);
    sched_policy_free(p);
}

static void test_dotprod_smallest(void **st)
{
    (void)st;
    struct sched_policy *p = sched_policy_dotprod_new();
    int32_t g[] = {1000, 1000};
    struct sched_node_view v1 = view(1, g, 2, 8000, 16000), v2 = view(2, g, 2, 16000, 16000);
    struct sched_replica_req r = req(1000, 4000);
    int pk[8];
    /* Same GPUs; v1 has half its CPU free: 0.5*0.25 < 1*0.25. */
    assert_true(score(p, &v1, &r, pk) < score(p, &v2, &r, pk));
    sched_policy_free(p);
}

static void test_random_deterministic(void **st)
{
    (void)st;
    struct sched_policy *a = sched_policy_random_new(7), *b = sched_policy_random_new(7);
    int32_t g[] = {1000, 300, 1000, 0};
    struct sched_node_view v = view(5, g, 4, 0, 0);
    struct sched_replica_req r = req(500, 0);
    bool differ = false;
    int64_t prev = 0;
    for (int i = 0; i < 100; i++) {
        int pa[8], pb[8];
        int64_t sa = score(a, &v, &r, pa), sb = score(b, &v, &r, pb);
        assert_true(sa == sb && sa != INT64_MAX);
        assert_int_equal(pa[0], pb[0]);
        assert_true(pa[0] == 0 || pa[0] == 2);
        differ |= i > 0 && sa != prev;
        prev = sa;
    }
    assert_true(differ); /* the per-call counter changes the draw */
    sched_policy_free(a);
    sched_policy_free(b);
}

/*
 * Typical pods B = 1x1000 and C = 1x300, half each; the pod is 1x400.
 * Node 1 [700, 0]: before, B cannot fit (all 700 counts), C fits (0):
 * 350. Putting 400 on device 0 leaves [300, 0]: B 300, C 0: 150; delta -200.
 * Node 2 [500]: before B 500, C 0: 250; after [100]: B 100, C 100: 100;
 * delta -150. FGD picks node 1, device 0 (score -200 * 1000); best-fit would
 * pick node 2 (100/1000 free after, against 300/2000).
 */
static void test_fgd_hand_example(void **st)
{
    (void)st;
    struct fgd_pod tp[] = {{1, 1000, 0, 0, 0.5}, {1, 300, 0, 0, 0.5}};
    struct fgd_workload w = {tp, 2, NULL, 0, 0};
    struct sched_policy *p = sched_policy_fgd_new(&w), *bf = sched_policy_bestfit_new();
    int32_t n1[] = {700, 0}, n2[] = {500};
    struct sched_node_view v1 = view(1, n1, 2, 0, 0), v2 = view(2, n2, 1, 0, 0);
    struct sched_replica_req r = req(400, 0);
    int p1[8], p2[8];
    assert_true(fgd_node_frag(&w, 0, 0, n1, 2) == 350.0);
    assert_true(fgd_node_frag(&w, 0, 0, n2, 1) == 250.0);
    assert_true(score(p, &v1, &r, p1) == -200000);
    assert_int_equal(p1[0], 0);
    assert_true(score(p, &v2, &r, p2) == -150000);
    assert_true(score(bf, &v2, &r, p2) < score(bf, &v1, &r, p1));
    /* CPU counts: a node without room for the typical pods' CPU is all fragment. */
    struct fgd_pod cp[] = {{1, 300, 4000, 0, 1.0}};
    struct fgd_workload wc = {cp, 1, NULL, 0, 0};
    assert_true(fgd_node_frag(&wc, 3000, 0, n1, 2) == 700.0);
    assert_true(fgd_node_frag(&wc, 5000, 0, n1, 2) == 0.0);
    sched_policy_free(p);
    sched_policy_free(bf);
}

static void test_fgd_typical_pods(void **st)
{
    (void)st;
    /* 4 x 1x1000, 3 CPU-only, 2 x 1x500, 1 x 8x1000: 90% is the first three shapes. */
    struct fgd_pod in[] = {
        {1, 1000, 4000, 10, 0}, {0, 0, 2000, 10, 0},     {1, 500, 1000, 10, 0},
        {1, 1000, 8000, 30, 0}, {8, 1000, 64000, 10, 0}, {0, 0, 4000, 20, 0},
        {1, 1000, 2000, 20, 0}, {1, 500, 3000, 10, 0},   {0, 0, 6000, 30, 0},
        {1, 1000, 6000, 40, 0},
    };
    struct fgd_workload w;
    assert_int_equal(fgd_workload_build(in, ARRAY_SIZE(in), 0.9, &w), 0);
    assert_int_equal(w.n_pods, 3);
    assert_int_equal(w.pods[0].num_gpu, 1);
    assert_int_equal(w.pods[0].gpu_milli, 1000);
    assert_true(w.pods[0].freq > 4.0 / 9 - 1e-9 && w.pods[0].freq < 4.0 / 9 + 1e-9);
    assert_int_equal(w.pods[0].cpu_milli, 6000); /* median of 2000,4000,6000,8000: upper */
    assert_int_equal(w.pods[1].num_gpu, 0);
    assert_int_equal(w.pods[1].cpu_milli, 4000);
    assert_int_equal(w.pods[1].mem_mib, 20);
    assert_int_equal(w.pods[2].gpu_milli, 500);
    fgd_workload_release(&w);
    assert_int_equal(fgd_workload_build(in, ARRAY_SIZE(in), 1.0, &w), 0);
    assert_int_equal(w.n_pods, 4);
    fgd_workload_release(&w);
    assert_int_equal(fgd_workload_build(in, 0, 0.95, &w), SCHED_EINVAL);
}

static uint64_t rng = 12345;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Never a choice that does not fit; and (but for Random) a fitting node always gets a score. */
static void test_never_unfit(void **st)
{
    (void)st;
    static const int32_t shares[] = {0, 100, 250, 470, 810, 999, 1000, 2000, 4000, 8000};
    struct fgd_pod tp[] = {{1, 1000, 8000, 0, 0.5}, {1, 470, 4000, 0, 0.3}, {0, 0, 2000, 0, 0.2}};
    struct fgd_workload w = {tp, 3, NULL, 0, 0};
    const char *names[] = {"random", "dotprod", "clustering", "packing", "bestfit", "fgd"};
    for (size_t pi = 0; pi < ARRAY_SIZE(names); pi++) {
        struct sched_policy *p = sched_policy_by_name(names[pi], 3, &w);
        assert_non_null(p);
        for (int it = 0; it < 3000; it++) {
            int32_t g[8];
            int n = (int)(next() % 9), pick[8], k, fit = 0;
            for (int i = 0; i < n; i++)
                g[i] = (int32_t)(next() % 5 == 0 ? 1000 : next() % 1001);
            struct sched_node_view v = view(it + 1, g, n, (int64_t)(next() % 16000), 16000);
            struct sched_replica_req r =
                req(shares[next() % ARRAY_SIZE(shares)], (int64_t)(next() % 8000));
            int32_t need = r.gpu_milli < 1000 ? r.gpu_milli : 1000;
            k = r.gpu_milli == 0 ? 0 : r.gpu_milli < 1000 ? 1 : r.gpu_milli / 1000;
            for (int i = 0; i < n; i++)
                fit += g[i] >= need;
            bool fits = fit >= k && v.cpu_free >= r.cpu_milli;
            int64_t s = score(p, &v, &r, pick);
            assert_int_equal(s != INT64_MAX, fits);
            for (int a = 0; a < k && s != INT64_MAX; a++) {
                assert_true(pick[a] >= 0 && pick[a] < n && g[pick[a]] >= need);
                for (int b = 0; b < a; b++)
                    assert_true(pick[a] != pick[b]);
            }
        }
        sched_policy_free(p);
    }
    assert_null(sched_policy_by_name("nope", 0, &w));
    assert_null(sched_policy_by_name("fgd", 0, NULL));
}

/* Through the core: node 1 has two free GPUs, node 2 one; best-fit puts a whole GPU on node 2. */
static void test_through_core(void **st)
{
    (void)st;
    struct sched_policy *p = sched_policy_bestfit_new();
    struct sched_config cfg;
    struct sched_decisions d;
    sched_config_init(&cfg);
    cfg.policy = p;
    struct sched *s = sched_new(&cfg);
    assert_non_null(s);
    assert_true(sched_add_class(s, 1) >= 0);
    assert_true(sched_set_project(s, 1, 1, 1) >= 0);
    for (int n = 1; n <= 2; n++) {
        struct sched_node_spec ns = {.id = n, .cluster_id = 1, .cpu_milli = 8000, .mem_mib = 1024};
        assert_true(sched_add_node(s, &ns) >= 0);
    }
    assert_true(sched_add_gpu(s, 1, 101, 1, 0) >= 0);
    assert_true(sched_add_gpu(s, 1, 102, 1, 0) >= 0);
    assert_true(sched_add_gpu(s, 2, 201, 1, 0) >= 0);
    struct sched_workload_spec w = {.id = 1,
                                    .project_id = 1,
                                    .pclass = SCHED_P2,
                                    .submit_ms = 1,
                                    .replicas = 1,
                                    .class_id = 1,
                                    .gpu_milli = 1000,
                                    .cpu_milli = 1000,
                                    .mem_mib = 100,
                                    .grace_ms = -1};
    assert_true(sched_submit(s, &w, 1) >= 0);
    sched_decisions_init(&d);
    sched_pass(s, 1, &d);
    assert_int_equal(d.n_admits, 1);
    assert_int_equal(d.assigns[d.admits[0].first_assign].node_id, 2);
    assert_int_equal(d.assigns[d.admits[0].first_assign].gpu_id, 201);
    sched_decisions_release(&d);
    sched_free(s);
    sched_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bestfit_fullest_node),
        cmocka_unit_test(test_packing_prefers_partial),
        cmocka_unit_test(test_clustering_same_demand),
        cmocka_unit_test(test_dotprod_smallest),
        cmocka_unit_test(test_random_deterministic),
        cmocka_unit_test(test_fgd_hand_example),
        cmocka_unit_test(test_fgd_typical_pods),
        cmocka_unit_test(test_never_unfit),
        cmocka_unit_test(test_through_core),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
