/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of fgd-fill, our placement policy (src/sched/policy_fgd_fill.c),
 * and of what it is built from: typical pods covering the GPU demand
 * (fgd_workload_build_cover) or given as text (fgd_workload_parse). The
 * main cases: a two-node cluster where FGD strands a GPU behind CPU that a
 * CPU-only pod took and fgd-fill does not, checked on the scores and then
 * through the scheduler core; shares where FGD opens a hole that no mix of
 * the typical pods can close and fgd-fill does not (the shape-waste
 * measure). Numbers are worked out in the comments.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "sched/policies.h"
#include "sched/sched.h"

static const int64_t no_ids[SCHED_MAX_GPUS_PER_NODE];

/* Typical pods: 80% one GPU with 10 CPUs, 20% CPU-only with 8 CPUs. */
static struct fgd_workload gpu_and_cpu_pods(void)
{
    struct fgd_workload w;
    assert_int_equal(fgd_workload_parse("1x1000/10000/0*4,0x0/8000/0*1", &w), 0);
    return w;
}

static struct sched_node_view view(int64_t id, const int32_t *free_, int n, int64_t cpu_free,
                                   int64_t cpu_cap)
{
    return (struct sched_node_view){id, cpu_free, cpu_cap, 0, 0, n, free_, no_ids, NULL};
}

/*
 * Node A: 4 free GPUs and 40 CPUs (10 per GPU, just enough for four
 * typical GPU pods); node B: 1 GPU and 40 CPUs. A CPU-only pod of 8 CPUs
 * on A leaves 32 CPUs, room for three GPU pods beside four GPUs.
 * FGD: the next typical pod still fits on either node, so both score 0
 * (a tie the core gives to A, the lower id). fgd-fill: on A balance
 * grows by 0.25 x 800 (32 CPUs hold 3.2 GPU pods: 800 of 4000 milli
 * stranded) and mix (12 CPU-milli per milli-GPU) by 0.5 x 667, 533 in all;
 * shape waste is unchanged (32 CPUs is more than a GPU pod's 10, and a free
 * device fits a 1x1000 pod exactly); on B nothing changes.
 */
static void test_cpu_only_pod_strands_nothing(void **st)
{
    (void)st;
    struct fgd_workload w = gpu_and_cpu_pods();
    struct sched_policy *fgd = sched_policy_fgd_new(&w), *fill = sched_policy_fgd_fill_new(&w);
    int32_t a[] = {1000, 1000, 1000, 1000}, b[] = {1000};
    struct sched_node_view va = view(1, a, 4, 40000, 40000), vb = view(2, b, 1, 40000, 40000);
    struct sched_replica_req cpu_pod = {0, 0, 8000, 0};
    int pick[8];

    assert_int_equal(fgd->score(fgd, &va, &cpu_pod, pick), 0);
    assert_int_equal(fgd->score(fgd, &vb, &cpu_pod, pick), 0);
    int64_t sa = fill->score(fill, &va, &cpu_pod, pick),
            sb = fill->score(fill, &vb, &cpu_pod, pick);
    assert_true(sb < sa);
    /* The growth, in thousandths of a milli-GPU, above the 16-bit tie-break. */
    assert_true(sa / 65536 > 533 * 1000 && sa / 65536 < 534 * 1000);
    assert_int_equal(sb / 65536, 0);
    sched_policy_free(fgd);
    sched_policy_free(fill);
    fgd_workload_release(&w);
}

/*
 * Typical shares 470, 320 and 650 (weights 1, 1, 4), no CPU or memory
 * counted. Each device size's shape waste (leftover: f minus the largest
 * sum of typical sizes that fits in f): 1000 -> 30 (650 + 320), 680 -> 30
 * (650), 530 -> 60 (470), 210 -> 210, 60 -> 60.
 */
static struct fgd_workload three_shares(void)
{
    struct fgd_workload w;
    assert_int_equal(fgd_workload_parse("1x470/1000/0*1,1x320/1000/0*1,1x650/1000/0*4", &w), 0);
    return w;
}

/*
 * A 470 share on one device, scored by hand (thousandths of a milli-GPU,
 * above the 16-bit tie-break; balance and mix are 0 without CPU or memory):
 * - 680 free (a 320 there): FGD +210 (210 is too small for every typical
 *   pod), shape 16 x (210 - 30) = 2880: 3090 milli.
 * - 530 free (a 470 there): FGD 60 - 530 x 4/6 (only the 650 does not fit
 *   530) = -293.333, shape 16 x (60 - 60) = 0.
 * - 1000 free: FGD 530 x 4/6 = +353.333, shape 16 x (60 - 30) = 480:
 *   833.333.
 */
static void test_shape_waste_scores(void **st)
{
    (void)st;
    struct fgd_workload w = three_shares();
    struct sched_policy *p = sched_policy_fgd_fill_new(&w);
    int32_t d680[] = {680}, d530[] = {530}, d1000[] = {1000};
    struct sched_node_view v680 = view(1, d680, 1, 0, 0), v530 = view(2, d530, 1, 0, 0),
                           v1000 = view(3, d1000, 1, 0, 0);
    struct sched_replica_req share = {1, 470, 1000, 0};
    int pick[8];

    assert_int_equal(p->score(p, &v680, &share, pick), 3090000LL * 65536 + 210);
    assert_int_equal(pick[0], 0);
    assert_int_equal(p->score(p, &v530, &share, pick), -293333LL * 65536 + 60);
    assert_int_equal(p->score(p, &v1000, &share, pick), 833333LL * 65536 + 530);
    sched_policy_free(p);
    fgd_workload_release(&w);
}

/*
 * The same 470 share on a node with a 680 device (a 320 there) and a free
 * device. FGD takes the 680 device: +210 against +353.333 on the free one,
 * because it only asks whether the next pod (mostly a 650) would fit. That
 * leaves 210 that no typical pod can use. fgd-fill takes the free device
 * (833.333 against 3090, above): the 530 left is closed by another 470.
 */
static void test_share_avoids_dead_hole(void **st)
{
    (void)st;
    struct fgd_workload w = three_shares();
    struct sched_policy *fgd = sched_policy_fgd_new(&w), *fill = sched_policy_fgd_fill_new(&w);
    int32_t g[] = {680, 1000};
    struct sched_node_view v = view(1, g, 2, 0, 0);
    struct sched_replica_req share = {1, 470, 1000, 0};
    int pick[8];

    assert_int_equal(fgd->score(fgd, &v, &share, pick), 210000);
    assert_int_equal(pick[0], 0);
    assert_int_equal(fill->score(fill, &v, &share, pick), 833333LL * 65536 + 1210);
    assert_int_equal(pick[0], 1);
    sched_policy_free(fgd);
    sched_policy_free(fill);
    fgd_workload_release(&w);
}

/*
 * Shape waste counts all of a node's free GPU once its CPU is below the
 * least a typical GPU pod asks for. Typical pods: 1x810 with 3 CPUs, 1x160
 * with 4 (weights 1, 1); per-device sizes 810 and 160, so leftover[1000] =
 * 1000 - 970 = 30. A CPU-only pod of 3 CPUs on a node with one free GPU and
 * 5 CPUs leaves 2: shape 16 x (1000 - 30) = 15520. FGD's part: neither pod
 * fits after, so the frag of each grows from 0 to 1000: +1000. Balance
 * (weight 1/4, each pod 1/2): 810 pods: 5/3 copies hold 1350 >= 1000
 * before, 2/3 copies hold 540 after: +460; 160 pods: 5/4 x 160 = 200
 * before (800 stranded), 2/4 x 160 = 80 after (920): +120; (460 + 120) / 2
 * x 0.25 = 72.5. Mix: 3.5 CPUs per 485 milli, 5000 CPU-milli hold 692.857
 * milli before and 2000 hold 277.143 after: 0.5 x 415.714 = 207.857. In
 * all 16800.357. With 8 CPUs the pod leaves 5: nothing changes but balance
 * (160 pods: 2 x 160 -> 5/4 x 160, 0.5 x 0.25 x 120 = 15) and mix (0.5 x
 * (1000 - 692.857)).
 */
static void test_shape_waste_behind_cpu(void **st)
{
    (void)st;
    struct fgd_workload w;
    assert_int_equal(fgd_workload_parse("1x810/3000/0,1x160/4000/0", &w), 0);
    struct sched_policy *p = sched_policy_fgd_fill_new(&w);
    int32_t g[] = {1000};
    struct sched_node_view tight = view(1, g, 1, 5000, 64000), roomy = view(2, g, 1, 8000, 64000);
    struct sched_replica_req cpu_pod = {0, 0, 3000, 0};
    int pick[8];

    assert_int_equal(p->score(p, &tight, &cpu_pod, pick), 16800357LL * 65536 + 1000);
    assert_int_equal(p->score(p, &roomy, &cpu_pod, pick), (15000LL + 153571) * 65536 + 1000);
    sched_policy_free(p);
    fgd_workload_release(&w);
}

/* Places a CPU-only pod of 8 CPUs, then five 1-GPU pods of 10 CPUs; returns how many fit. */
static int run_cluster(const struct sched_policy *p, int64_t *ret_cpu_node)
{
    struct sched_config cfg;
    struct sched_decisions d;
    struct sched *s;
    int placed = 0;

    sched_config_init(&cfg);
    cfg.policy = p;
    s = sched_new(&cfg);
    assert_non_null(s);
    assert_true(sched_add_class(s, 1) >= 0);
    assert_true(sched_set_project(s, 1, 1, 1) >= 0);
    for (int n = 1; n <= 2; n++) {
        struct sched_node_spec ns = {.id = n, .cluster_id = 1, .cpu_milli = 40000};
        assert_true(sched_add_node(s, &ns) >= 0);
    }
    for (int g = 0; g < 4; g++)
        assert_true(sched_add_gpu(s, 1, 101 + g, 1, 0) >= 0);
    assert_true(sched_add_gpu(s, 2, 201, 1, 0) >= 0);
    sched_decisions_init(&d);
    for (int i = 0; i < 6; i++) {
        struct sched_workload_spec w = {.id = i + 1,
                                        .project_id = 1,
                                        .pclass = SCHED_P2,
                                        .submit_ms = i + 1,
                                        .replicas = 1,
                                        .class_id = i == 0 ? 0 : 1,
                                        .gpu_milli = i == 0 ? 0 : 1000,
                                        .cpu_milli = i == 0 ? 8000 : 10000,
                                        .grace_ms = -1};
        assert_true(sched_submit(s, &w, i + 1) >= 0);
        sched_decisions_reset(&d);
        sched_pass(s, i + 1, &d);
        if (d.n_admits == 1) {
            placed++;
            if (i == 0)
                *ret_cpu_node = d.assigns[d.admits[0].first_assign].node_id;
        } else {
            assert_true(sched_cancel(s, i + 1, i + 1) >= 0);
        }
    }
    sched_decisions_release(&d);
    sched_free(s);
    return placed;
}

/* The same cluster through the core: FGD places 5 of the 6 pods, fgd-fill all 6. */
static void test_through_core_beats_fgd(void **st)
{
    (void)st;
    struct fgd_workload w = gpu_and_cpu_pods();
    struct sched_policy *fgd = sched_policy_fgd_new(&w), *fill = sched_policy_fgd_fill_new(&w);
    int64_t node = 0;

    /* FGD: the CPU-only pod on A; A then holds 3 GPU pods (32 CPUs), B one: 5 of 6. */
    assert_int_equal(run_cluster(fgd, &node), 5);
    assert_int_equal(node, 1);
    /* fgd-fill: the CPU-only pod on B (32 CPUs left beside its 1 GPU), A holds 4: all 6. */
    assert_int_equal(run_cluster(fill, &node), 6);
    assert_int_equal(node, 2);
    sched_policy_free(fgd);
    sched_policy_free(fill);
    fgd_workload_release(&w);
}

/*
 * Shares, typical pods only 1x500 (3 CPUs). On node A (devices 1000 and 500
 * free) a 500 share leaves room for two more shares on either device, so
 * every measure is unchanged; the device tie-break takes the fuller device.
 * Idle node B scores the same growth (0) but has more GPU left: A wins.
 */
static void test_share_packs(void **st)
{
    (void)st;
    struct fgd_workload w;
    assert_int_equal(fgd_workload_parse("1x500/3000/1000", &w), 0);
    struct sched_policy *p = sched_policy_fgd_fill_new(&w);
    int32_t a[] = {1000, 500}, b[] = {1000, 1000};
    struct sched_node_view va = view(1, a, 2, 30000, 30000), vb = view(2, b, 2, 30000, 30000);
    struct sched_replica_req share = {1, 500, 3000, 0};
    int pa[8], pb[8];
    int64_t sa = p->score(p, &va, &share, pa), sb = p->score(p, &vb, &share, pb);
    assert_int_equal(pa[0], 1);
    assert_true(sa < sb);
    /* A 700 share on a: only the 1000 device fits; 300 left that no 500 share can use. */
    struct sched_replica_req big = {1, 700, 3000, 0};
    assert_true(p->score(p, &va, &big, pa) != INT64_MAX);
    assert_int_equal(pa[0], 0);
    /* Not enough CPU: does not fit. */
    struct sched_replica_req hungry = {1, 500, 31000, 0};
    assert_true(p->score(p, &va, &hungry, pa) == INT64_MAX);
    sched_policy_free(p);
    fgd_workload_release(&w);
}

/*
 * 96 pods of 1x1000, 3 of 1x500, 1 of 8x1000: 95% of the pods is the first
 * shape alone, which asks for 96000 of 105500 milli (91%); adding the
 * heaviest remaining shape, 8x1000 (8000), reaches 98.6%.
 */
static void test_build_cover(void **st)
{
    (void)st;
    struct fgd_pod pods[100];
    struct fgd_workload w;
    for (int i = 0; i < 100; i++)
        pods[i] = (struct fgd_pod){1, 1000, 8000, 1024, 0};
    for (int i = 96; i < 99; i++)
        pods[i] = (struct fgd_pod){1, 500, 4000, 512, 0};
    pods[99] = (struct fgd_pod){8, 1000, 64000, 8192, 0};

    assert_int_equal(fgd_workload_build_cover(pods, 100, 0.95, 0.0, &w), 0);
    assert_int_equal(w.n_pods, 1);
    fgd_workload_release(&w);
    assert_int_equal(fgd_workload_build_cover(pods, 100, 0.95, 0.95, &w), 0);
    assert_int_equal(w.n_pods, 2);
    assert_int_equal(w.pods[1].num_gpu, 8);
    assert_int_equal(w.pods[1].cpu_milli, 64000);
    assert_float_equal(w.pods[0].freq, 96.0 / 97.0, 1e-9);
    assert_float_equal(w.pods[1].freq, 1.0 / 97.0, 1e-9);
    fgd_workload_release(&w);
    assert_int_equal(fgd_workload_build_cover(pods, 100, 0.95, 1.5, &w), SCHED_EINVAL);
}

static void test_parse(void **st)
{
    (void)st;
    struct fgd_workload w;
    static const char *bad[] = {
        "",
        "1x1000/12000",
        "2x500/1/1",
        "0x100/1/1",
        "1x0/1/1",
        "1x1000/1/1*0",
        "1x1000/1/1,,",
        "99x1000/1/1/1",
        " 1x1000/1/1",
        "1x1001/1/1",
        "1x1000/-1/1",
        "1x1000/1/1*",
        "1x1000/1/1;2x1000/1/1",
    };

    assert_int_equal(fgd_workload_parse("0x0/16000/65536,1x1000/12000/49152*3", &w), 0);
    assert_int_equal(w.n_pods, 2);
    assert_int_equal(w.pods[0].num_gpu, 1); /* most frequent first */
    assert_int_equal(w.pods[0].gpu_milli, 1000);
    assert_int_equal(w.pods[0].cpu_milli, 12000);
    assert_int_equal(w.pods[0].mem_mib, 49152);
    assert_float_equal(w.pods[0].freq, 0.75, 1e-12);
    assert_int_equal(w.pods[1].num_gpu, 0);
    assert_float_equal(w.pods[1].freq, 0.25, 1e-12);
    fgd_workload_release(&w);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        w.n_pods = 12345;
        assert_int_equal(fgd_workload_parse(bad[i], &w), SCHED_EINVAL);
        assert_int_equal(w.n_pods, 12345); /* untouched */
    }
    assert_int_equal(fgd_workload_parse(SCHED_POLICY_DEFAULT_PODS, &w), 0);
    assert_int_equal(w.n_pods, 7);
    fgd_workload_release(&w);
}

/*
 * Pinned demand in placement-pods: "@ID|ID[xNUM]*PERCENT" entries beside the
 * typical pods. A set is one pin whatever its order; the same set and size
 * add up.
 */
static void test_parse_pins(void **st)
{
    (void)st;
    struct fgd_workload w;
    static const char *bad[] = {
        "@3*5",                /* pins alone: no typical pods */
        "1x1000/1/1,@3*0",     /* nothing pinned */
        "1x1000/1/1,@3*100.5", /* more than all */
        "1x1000/1/1,@*5",
        "1x1000/1/1,@3x0*5",
        "1x1000/1/1,@3",
        "1x1000/1/1,@3*1.234",
        "1x1000/1/1,@0*5",
        "1x1000/1/1,@3|*5",
    };

    assert_int_equal(fgd_workload_parse("1x1000/1/1,@3|2x8*4.5,@5*10,@2|3x8*0.5,8x1000/8/8", &w),
                     0);
    assert_int_equal(w.n_pods, 2);
    assert_int_equal(w.n_pins, 2);
    assert_int_equal(w.pins[0].n_pools, 2);
    assert_int_equal(w.pins[0].pool_ids[0], 2);
    assert_int_equal(w.pins[0].pool_ids[1], 3);
    assert_int_equal(w.pins[0].num_gpu, 8);
    assert_float_equal(w.pins[0].gpu_share, 0.05, 1e-12);
    assert_int_equal(w.pins[1].pool_ids[0], 5);
    assert_int_equal(w.pins[1].num_gpu, 1);
    assert_float_equal(w.pins[1].gpu_share, 0.10, 1e-12);
    fgd_workload_release(&w);
    assert_null(w.pins);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        w.n_pods = 12345;
        assert_int_equal(fgd_workload_parse(bad[i], &w), SCHED_EINVAL);
        assert_int_equal(w.n_pods, 12345); /* untouched */
    }
}

/*
 * Pool pressure: half of the GPU demand can only run on pool 1. Two idle
 * 2-GPU nodes, A in pool 1 and B in pool 2, the class 4000 free of which
 * pool 1 has 2000: pressure 0.5 x 4000 / 2000 = 1, so a pod that may go
 * anywhere pays 1 x 1^2 x 1000 on A and nothing on B. Without the pin (or
 * without the core's room, as in a test of one node) the two tie.
 */
static void test_pinned_pool_is_left_to_its_pods(void **st)
{
    (void)st;
    struct fgd_workload w;
    int32_t g[] = {1000, 1000}, slots[SCHED_MAX_GPUS_PER_NODE + 1] = {[2] = 2},
            pool_slots[SCHED_MAX_GPUS_PER_NODE + 1] = {[2] = 1};
    struct sched_room ra = {1, 2000, 2000, 4000, 4000, slots, pool_slots},
                      rb = {2, 2000, 2000, 4000, 4000, slots, pool_slots};
    struct sched_node_view va = view(1, g, 2, 0, 0), vb = view(2, g, 2, 0, 0);
    struct sched_replica_req r = {1, 1000, 0, 0};
    int pick[8];

    assert_int_equal(fgd_workload_parse("1x1000/0/0,@1*50", &w), 0);
    struct sched_policy *fill = sched_policy_fgd_fill_new(&w);
    int64_t plain = fill->score(fill, &va, &r, pick);
    va.room = &ra;
    vb.room = &rb;
    int64_t sa = fill->score(fill, &va, &r, pick), sb = fill->score(fill, &vb, &r, pick);
    assert_int_equal(sb, plain);
    assert_int_equal(sa - sb, (int64_t)1000 * 1000 * 65536);
    sched_policy_free(fill);
    fgd_workload_release(&w);
}

/*
 * The hold on idle 8-GPU nodes follows the demand still to come. Typical
 * pods: 1x1000 and 8x1000 alike often, so 8-GPU pods ask for 8/9 of the
 * GPU. A 1-GPU pod on an idle 8-GPU node leaves 7000 milli that they cannot
 * use. With 88,000 milli free in the class and 10 idle 8-GPU nodes (80,000
 * of places) the hold is 8/9 x 88,000 / 80,000 = 0.978, and the break costs
 * W_HOLD 0.1 x 0.978 x 7000 = 684.4; with 1,000 idle nodes the hold is
 * 0.00978 and it costs 6.8. Without the core's room the frequency (0.5)
 * weighs, as before: 3500.
 */
static void test_hold_follows_demand(void **st)
{
    (void)st;
    struct fgd_workload w;
    int32_t g[8] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    int32_t few[SCHED_MAX_GPUS_PER_NODE + 1] = {[8] = 10},
                                          many[SCHED_MAX_GPUS_PER_NODE + 1] = {[8] = 1000};
    struct sched_room scarce = {0, 0, 0, 88000, 8000000, few, NULL},
                      plenty = {0, 0, 0, 88000, 8000000, many, NULL};
    struct sched_node_view v = view(1, g, 8, 0, 0);
    struct sched_replica_req r = {1, 1000, 0, 0};
    int pick[8];

    assert_int_equal(fgd_workload_parse("1x1000/0/0,8x1000/0/0", &w), 0);
    struct sched_policy *fill = sched_policy_fgd_fill_new(&w);
    int64_t fixed = fill->score(fill, &v, &r, pick);
    v.room = &scarce;
    int64_t s_scarce = fill->score(fill, &v, &r, pick);
    v.room = &plenty;
    int64_t s_plenty = fill->score(fill, &v, &r, pick);
    assert_true(s_plenty < s_scarce && s_scarce < fixed);
    /* Scores are thousandths of a milli-GPU shifted by 16 bits (plus the same tie-break). */
    assert_true(llabs((s_scarce >> 16) - (s_plenty >> 16) - 677600) < 200);
    assert_true(llabs((fixed >> 16) - (s_scarce >> 16) - 2815600) < 200);
    sched_policy_free(fill);
    fgd_workload_release(&w);
}

/* A policy that records the room the core shows with each node, and takes the lowest node id. */
struct seen_room {
    struct sched_room room;
    int32_t slots[SCHED_MAX_GPUS_PER_NODE + 1], pool_slots[SCHED_MAX_GPUS_PER_NODE + 1];
};
static struct seen_room seen[4]; /* by node id */

static int64_t record_score(const struct sched_policy *p, const struct sched_node_view *v,
                            const struct sched_replica_req *r, int *ret_gpus)
{
    (void)p;
    assert_non_null(v->room);
    seen[v->node_id].room = *v->room;
    memcpy(seen[v->node_id].slots, v->room->slots_by_whole, sizeof(seen[0].slots));
    memcpy(seen[v->node_id].pool_slots, v->room->pool_slots_by_whole, sizeof(seen[0].pool_slots));
    for (int g = 0, k = 0; g < v->n_gpus && k < (r->gpu_milli + 999) / 1000; g++) {
        if (v->gpu_free[g] >= (r->gpu_milli < 1000 ? r->gpu_milli : 1000))
            ret_gpus[k++] = g;
    }
    return v->node_id;
}

static void submit_one(struct sched *s, struct sched_decisions *d, int64_t id, int32_t milli)
{
    struct sched_workload_spec w = {.id = id,
                                    .project_id = 1,
                                    .pclass = SCHED_P2,
                                    .submit_ms = id,
                                    .replicas = 1,
                                    .class_id = 1,
                                    .gpu_milli = milli,
                                    .grace_ms = -1};
    assert_true(sched_submit(s, &w, id) >= 0);
    sched_decisions_reset(d);
    sched_pass(s, id, d);
    assert_int_equal(d->n_admits, 1);
}

/*
 * The room through the core: node 1 (2 GPUs) in pool 10, nodes 2 and 3 (4
 * GPUs each) in pool 20. After a 2-GPU pod on node 1 and a 300 share on
 * node 2, the next decision sees class 10000 - 2300 free of 10000, pool 10
 * 0 of 2000, pool 20 7700 of 8000; slots by free devices: node 1 at 0,
 * node 2 at 3, node 3 at 4. With node 3 drained the class is 3700 of
 * 6000 and node 3's slot no longer counts.
 */
static void test_room_through_core(void **st)
{
    (void)st;
    struct sched_policy rec = {"record", record_score, NULL};
    struct sched_config cfg;
    struct sched_decisions d;
    struct sched *s;

    sched_config_init(&cfg);
    cfg.policy = &rec;
    s = sched_new(&cfg);
    assert_non_null(s);
    assert_true(sched_add_class(s, 1) >= 0);
    assert_true(sched_set_project(s, 1, 1, 1) >= 0);
    for (int64_t pool = 10; pool <= 20; pool += 10) {
        struct sched_pool_spec ps = {.id = pool, .owner_project_id = 1};
        assert_true(sched_set_pool(s, &ps) >= 0);
    }
    for (int n = 1; n <= 3; n++) {
        struct sched_node_spec ns = {.id = n, .cluster_id = 1};
        assert_true(sched_add_node(s, &ns) >= 0);
        for (int g = 0; g < (n == 1 ? 2 : 4); g++)
            assert_true(sched_add_gpu(s, n, n * 100 + g, 1, n == 1 ? 10 : 20) >= 0);
    }
    sched_decisions_init(&d);
    submit_one(s, &d, 1, 2000); /* node 1: the lowest id */
    submit_one(s, &d, 2, 300);  /* node 2: node 1 is full */
    submit_one(s, &d, 3, 100);  /* looks at nodes 2 and 3 before taking node 2 */
    assert_int_equal(seen[2].room.pool_id, 20);
    assert_int_equal(seen[2].room.class_free, 7700);
    assert_int_equal(seen[2].room.class_cap, 10000);
    assert_int_equal(seen[2].room.pool_free, 7700);
    assert_int_equal(seen[2].room.pool_cap, 8000);
    assert_int_equal(seen[2].slots[0], 1);
    assert_int_equal(seen[2].slots[3], 1);
    assert_int_equal(seen[2].slots[4], 1);
    assert_int_equal(seen[2].pool_slots[0], 0);
    assert_int_equal(seen[2].pool_slots[3], 1);
    assert_int_equal(seen[2].pool_slots[4], 1);
    assert_true(sched_set_node_state(s, 3, SCHED_NODE_DRAIN) >= 0);
    submit_one(s, &d, 4, 100);
    assert_int_equal(seen[2].room.class_free, 6000 - 2400);
    assert_int_equal(seen[2].room.class_cap, 6000);
    assert_int_equal(seen[2].room.pool_free, 4000 - 400);
    assert_int_equal(seen[2].slots[4], 0);
    assert_int_equal(seen[2].pool_slots[4], 0);
    assert_int_equal(seen[2].pool_slots[3], 1);
    sched_decisions_release(&d);
    sched_free(s);
}

/* BestFit counts GPU and CPU only: two nodes that differ only in free memory tie. */
static void test_bestfit_ignores_memory(void **st)
{
    (void)st;
    struct sched_policy *p = sched_policy_bestfit_new();
    int32_t g[] = {1000, 500};
    struct sched_node_view a = {1, 8000, 16000, 1000, 100000, 2, g, no_ids, NULL};
    struct sched_node_view b = {2, 8000, 16000, 90000, 100000, 2, g, no_ids, NULL};
    struct sched_node_view c = {3, 12000, 16000, 1000, 100000, 2, g, no_ids, NULL};
    struct sched_replica_req r = {1, 500, 2000, 500};
    int pk[8];
    int64_t sa = p->score(p, &a, &r, pk), sb = p->score(p, &b, &r, pk),
            sc = p->score(p, &c, &r, pk);
    /* a, b: GPU (1500-500)/2000 + CPU (8000-2000)/16000 = 0.875; c: 0.5 + 0.625 = 1.125. */
    assert_int_equal(sa, sb);
    assert_true(sa < sc);
    assert_int_equal(pk[0], 1); /* the fuller device that fits */
    sched_policy_free(p);
}

static void test_by_name(void **st)
{
    (void)st;
    struct fgd_workload w = gpu_and_cpu_pods();
    struct sched_policy *p = sched_policy_by_name("fgd-fill", 1, &w);
    assert_non_null(p);
    assert_string_equal(p->name, "fgd-fill");
    sched_policy_free(p);
    assert_null(sched_policy_by_name("fgd-fill", 1, NULL));
    assert_null(sched_policy_by_name("fgd-fil", 1, &w));
    fgd_workload_release(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_only_pod_strands_nothing),
        cmocka_unit_test(test_through_core_beats_fgd),
        cmocka_unit_test(test_share_packs),
        cmocka_unit_test(test_shape_waste_scores),
        cmocka_unit_test(test_share_avoids_dead_hole),
        cmocka_unit_test(test_shape_waste_behind_cpu),
        cmocka_unit_test(test_build_cover),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_pins),
        cmocka_unit_test(test_pinned_pool_is_left_to_its_pods),
        cmocka_unit_test(test_hold_follows_demand),
        cmocka_unit_test(test_room_through_core),
        cmocka_unit_test(test_bestfit_ignores_memory),
        cmocka_unit_test(test_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
