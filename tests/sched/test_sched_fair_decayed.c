/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand-checked scenarios of the decayed fair share (sched.h, enum
 * sched_fair_share; src/sched/share.c): who gets borrowed capacity first
 * when projects used it before, how the half-life makes old usage matter
 * less, that weights still count, the exact decay of what is held, the
 * reason of work put behind another project, and that usage carried from
 * one core to the next (a daemon's restart or rebuild) changes nothing.
 *
 * Conventions as in test_sched_scenarios.c: node n has GPUs n*100+1..;
 * milli-GPU everywhere. H is one hour here. Keys: (borrowed now + decayed
 * usage * ln 2 / H) / class capacity, dominant over classes, / weight.
 */
#include "base/common.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sched/sched.h"

enum { C1 = 1 };

#define H (INT64_C(3600) * 1000)
#define T0 (INT64_C(1800000000000)) /* a time of the epoch's order, as the daemon's */

struct fx {
    struct sched *s;
    struct sched_decisions d;
};

static void fx_init(struct fx *f, enum sched_fair_share rule, int gpus)
{
    struct sched_config cfg;
    struct sched_node_spec ns;
    sched_config_init(&cfg);
    cfg.fair_share = rule;
    cfg.half_life_ms = H;
    f->s = sched_new(&cfg);
    assert_non_null(f->s);
    sched_decisions_init(&f->d);
    assert_int_equal(sched_add_class(f->s, C1), 0);
    memset(&ns, 0, sizeof ns);
    ns.id = 1;
    ns.cluster_id = 1;
    assert_int_equal(sched_add_node(f->s, &ns), 0);
    for (int i = 1; i <= gpus; i++)
        assert_int_equal(sched_add_gpu(f->s, 1, 100 + i, C1, 0), 0);
}

static void fx_release(struct fx *f)
{
    sched_decisions_release(&f->d);
    sched_free(f->s);
}

static struct sched_workload_spec p2(int64_t id, int64_t project, int32_t milli, int64_t submit_ms)
{
    struct sched_workload_spec w;
    memset(&w, 0, sizeof w);
    w.id = id;
    w.project_id = project;
    w.pclass = SCHED_P2;
    w.replicas = 1;
    w.class_id = C1;
    w.gpu_milli = milli;
    w.submit_ms = submit_ms;
    w.grace_ms = -1;
    w.requeue = true;
    return w;
}

/* n one-GPU P2 jobs of a project, ids project*100 + 1.., submitted at now. */
static void submit_n(struct fx *f, int64_t project, int n, int64_t now)
{
    for (int i = 1; i <= n; i++) {
        struct sched_workload_spec w = p2(project * 100 + i, project, 1000, now);
        assert_int_equal(sched_submit(f->s, &w, now), 0);
    }
}

/* The projects of a pass's admissions, in order, as digits of their id / 10: "2212". */
static void admitted(const struct fx *f, char *buf, size_t size)
{
    size_t k = 0;
    for (size_t i = 0; i < f->d.n_admits && k + 1 < size; i++)
        buf[k++] = (char)('0' + f->d.admits[i].workload_id / 100 / 10);
    buf[k] = '\0';
}

static void pass(struct fx *f, int64_t now, const char *want)
{
    char got[64];
    sched_decisions_reset(&f->d);
    assert_true(sched_pass(f->s, now, &f->d) >= 0);
    admitted(f, got, sizeof got);
    assert_string_equal(got, want);
}

static double past(const struct fx *f, int64_t project, int64_t now)
{
    double u = -1;
    assert_int_equal(sched_past_usage(f->s, project, C1, now, &u), 0);
    return u;
}

static void assert_close(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1, fabs(want))) {
        fprintf(stderr, "got %.17g, want %.17g\n", got, want);
        fail();
    }
}

/* milli held for d ms, decayed to the interval's end: milli * H/ln 2 * (1 - 2^(-d/H)). */
static double held_for(int64_t milli, int64_t d)
{
    return (double)milli * (double)H / M_LN2 * (1 - exp2(-(double)d / (double)H));
}

/*
 * Two projects of equal weight and no guarantee, 4 free GPUs, 4 jobs each.
 * Project 10 held 3 GPUs for the last half-life: on average 1.5 GPUs (share
 * 0.375). Project 20 used nothing: it goes first at 0 and 0.25, 10 at 0.375,
 * 20 at 0.5 (10 now 0.625). With the current rule they alternate, 10 first.
 * Project 10's waiting work says who went first and over which period.
 */
static void test_past_usage_goes_after(void **state)
{
    struct fx f;
    char why[512];
    struct sched_workload_info wi;
    (void)state;

    fx_init(&f, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_set_project(f.s, 20, 2, 1), 0);
    assert_int_equal(sched_add_usage(f.s, 10, C1, 3000, T0 - H, T0), 0);
    assert_close(past(&f, 10, T0), held_for(3000, H));
    submit_n(&f, 10, 4, T0);
    submit_n(&f, 20, 4, T0);
    pass(&f, T0, "2212");
    assert_int_equal(sched_workload_info(f.s, 1002, &wi), 0);
    assert_int_equal(wi.state, SCHED_QUEUED);
    assert_int_equal(wi.reason.code, SCHED_WAIT_CAPACITY);
    assert_int_equal(wi.reason.ahead_project_id, 20);
    assert_int_equal(wi.reason.ahead_period_ms, H);
    sched_reason_format_named(&wi.reason, "h100", "project vision", T0, why, sizeof why);
    assert_non_null(strstr(why, "behind project vision, which used less over the last 1 hour"));
    sched_reason_format(&wi.reason, "h100", T0, why, sizeof why);
    assert_non_null(strstr(why, "behind project 20, which used less over the last 1 hour"));
    /* Project 20's waiting work was behind nobody who used less. */
    assert_int_equal(sched_workload_info(f.s, 2004, &wi), 0);
    assert_int_equal(wi.reason.ahead_project_id, 0);
    fx_release(&f);

    /* The current rule ignores the past (and accepts it, changing nothing). */
    fx_init(&f, SCHED_SHARE_CURRENT, 4);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_set_project(f.s, 20, 2, 1), 0);
    assert_int_equal(sched_add_usage(f.s, 10, C1, 3000, T0 - H, T0), 0);
    assert_close(past(&f, 10, T0), 0);
    submit_n(&f, 10, 4, T0);
    submit_n(&f, 20, 4, T0);
    pass(&f, T0, "1212");
    assert_int_equal(sched_workload_info(f.s, 1003, &wi), 0);
    assert_int_equal(wi.reason.ahead_project_id, 0);
    fx_release(&f);
}

/*
 * The same usage ten half-lives ago weighs 2^-10 as much: project 10's share
 * is 0.0004, so 20 goes first (0 < 0.0004) and then they alternate, 2 each.
 */
static void test_old_usage_matters_less(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_set_project(f.s, 20, 2, 1), 0);
    assert_int_equal(sched_add_usage(f.s, 10, C1, 3000, T0 - 11 * H, T0 - 10 * H), 0);
    assert_close(past(&f, 10, T0 - 10 * H), held_for(3000, H));
    assert_close(past(&f, 10, T0 - 9 * H), held_for(3000, H) / 2);
    assert_close(past(&f, 10, T0), held_for(3000, H) / 1024);
    submit_n(&f, 10, 4, T0);
    submit_n(&f, 20, 4, T0);
    pass(&f, T0, "2121");
    fx_release(&f);
}

/*
 * Weights still divide: both projects held 4 of 8 GPUs for 1.5 half-lives
 * (on average 2.59 GPUs, share 0.323 each). Weight 3 against 1: project 20's
 * key grows a third as fast, so it takes six turns (up to 0.316) before 10's
 * first (0.323), then one more: 7 against 1.
 */
static void test_weight_respected(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f, SCHED_SHARE_DECAYED, 8);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_set_project(f.s, 20, 2, 3), 0);
    assert_int_equal(sched_add_usage(f.s, 10, C1, 4000, T0 - 3 * H / 2, T0), 0);
    assert_int_equal(sched_add_usage(f.s, 20, C1, 4000, T0 - 3 * H / 2, T0), 0);
    submit_n(&f, 10, 8, T0);
    submit_n(&f, 20, 8, T0);
    pass(&f, T0, "22222212");
    fx_release(&f);
}

/*
 * What runs is counted exactly: 2 GPUs of P2 work for one half-life, then
 * nothing for another. Reading at any time needs no pass.
 */
static void test_held_usage_integrated(void **state)
{
    struct fx f;
    struct sched_workload_spec w = p2(1001, 10, 2000, T0);
    (void)state;
    fx_init(&f, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_submit(f.s, &w, T0), 0);
    pass(&f, T0, "1");
    assert_close(past(&f, 10, T0), 0);
    assert_close(past(&f, 10, T0 + H / 3), held_for(2000, H / 3));
    assert_int_equal(sched_released(f.s, 1001, T0 + H), 0);
    assert_close(past(&f, 10, T0 + H), held_for(2000, H));
    assert_close(past(&f, 10, T0 + 2 * H), held_for(2000, H) / 2);
    /* An interval given afterwards counts the same as one lived through. */
    assert_int_equal(sched_add_usage(f.s, 10, C1, 2000, T0 + 2 * H, T0 + 3 * H), 0);
    assert_close(past(&f, 10, T0 + 3 * H), held_for(2000, H) * 1.25);
    /* Owned work is not borrowed capacity and is not counted. */
    assert_int_equal(sched_set_quota(f.s, 10, C1, 2000, -1), 0);
    w = p2(1002, 10, 2000, T0 + 3 * H);
    w.pclass = SCHED_P1;
    assert_int_equal(sched_submit(f.s, &w, T0 + 3 * H), 0);
    pass(&f, T0 + 3 * H, "1");
    assert_close(past(&f, 10, T0 + 4 * H), held_for(2000, H) * 1.25 / 2);
    fx_release(&f);
}

/*
 * An end reported after the core went on (a backend's poll comes late): the
 * usage stops at the reported end, not when it was heard of.
 */
static void test_late_end_counts_to_the_end(void **state)
{
    struct fx f;
    struct sched_workload_spec w = p2(1001, 10, 2000, T0);
    (void)state;
    fx_init(&f, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_submit(f.s, &w, T0), 0);
    pass(&f, T0, "1");
    pass(&f, T0 + H, "");
    assert_int_equal(sched_released(f.s, 1001, T0 + H / 2), 0);
    assert_close(past(&f, 10, T0 + H), held_for(2000, H / 2) * M_SQRT1_2);
    fx_release(&f);
}

/*
 * No starvation: a project that used much lately still gets what the others
 * leave. Project 10 held all 4 GPUs for ten half-lives; project 20 asks for
 * one GPU and gets it first, and 10 gets the other three in the same pass.
 */
static void test_heavy_user_gets_what_is_left(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_set_project(f.s, 20, 2, 1), 0);
    assert_int_equal(sched_add_usage(f.s, 10, C1, 4000, T0 - 10 * H, T0), 0);
    submit_n(&f, 10, 4, T0);
    submit_n(&f, 20, 1, T0);
    pass(&f, T0, "2111");
    fx_release(&f);
}

/*
 * A restart: the old core's usage at now, given to a new one before the
 * running work is restored, then both go on for a half-life: the same.
 */
static void test_usage_survives_a_rebuild(void **state)
{
    struct fx a, b;
    struct sched_workload_spec w = p2(1001, 10, 3000, T0);
    int64_t gpus[] = {101, 102, 103};
    int32_t milli[] = {1000, 1000, 1000}, rep[] = {0, 0, 0};
    (void)state;
    fx_init(&a, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(a.s, 10, 1, 1), 0);
    assert_int_equal(sched_add_usage(a.s, 10, C1, 1000, T0 - 2 * H, T0 - H), 0);
    assert_int_equal(sched_submit(a.s, &w, T0), 0);
    pass(&a, T0, "1");

    fx_init(&b, SCHED_SHARE_DECAYED, 4);
    assert_int_equal(sched_set_project(b.s, 10, 1, 1), 0);
    assert_int_equal(sched_add_decayed_usage(b.s, 10, C1, past(&a, 10, T0 + H / 2), T0 + H / 2), 0);
    assert_int_equal(sched_restore_running(b.s, &w, SCHED_P2, gpus, milli, rep, 3, T0, false), 0);
    pass(&b, T0 + H / 2, "");
    assert_close(past(&b, 10, T0 + H / 2), past(&a, 10, T0 + H / 2));
    assert_close(past(&b, 10, T0 + 3 * H / 2), past(&a, 10, T0 + 3 * H / 2));
    assert_int_equal(sched_released(a.s, 1001, T0 + 2 * H), 0);
    assert_int_equal(sched_released(b.s, 1001, T0 + 2 * H), 0);
    assert_close(past(&b, 10, T0 + 5 * H), past(&a, 10, T0 + 5 * H));
    assert_close(past(&a, 10, T0 + 2 * H),
                 held_for(1000, H) / 8 + held_for(3000, 2 * H)); /* the check of the check */
    fx_release(&a);
    fx_release(&b);
}

static void test_bad_arguments(void **state)
{
    struct fx f;
    struct sched_config cfg;
    double u;
    (void)state;
    sched_config_init(&cfg);
    assert_int_equal(cfg.fair_share, SCHED_SHARE_CURRENT);
    assert_true(cfg.half_life_ms == INT64_C(7) * 24 * 3600 * 1000);
    cfg.fair_share = SCHED_SHARE_DECAYED;
    cfg.half_life_ms = 0;
    assert_null(sched_new(&cfg));
    fx_init(&f, SCHED_SHARE_DECAYED, 1);
    assert_int_equal(sched_set_project(f.s, 10, 1, 1), 0);
    assert_int_equal(sched_add_usage(f.s, 11, C1, 1000, 0, 1), SCHED_ENOENT);
    assert_int_equal(sched_add_usage(f.s, 10, 7, 1000, 0, 1), SCHED_ENOENT);
    assert_int_equal(sched_add_usage(f.s, 10, C1, -1, 0, 1), SCHED_EINVAL);
    assert_int_equal(sched_add_usage(f.s, 10, C1, 1000, 2, 1), SCHED_EINVAL);
    assert_int_equal(sched_add_decayed_usage(f.s, 10, C1, -1.0, 1), SCHED_EINVAL);
    assert_int_equal(sched_add_decayed_usage(f.s, 10, C1, NAN, 1), SCHED_EINVAL);
    assert_int_equal(sched_past_usage(f.s, 11, C1, 0, &u), SCHED_ENOENT);
    fx_release(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_past_usage_goes_after),
        cmocka_unit_test(test_old_usage_matters_less),
        cmocka_unit_test(test_weight_respected),
        cmocka_unit_test(test_held_usage_integrated),
        cmocka_unit_test(test_late_end_counts_to_the_end),
        cmocka_unit_test(test_heavy_user_gets_what_is_left),
        cmocka_unit_test(test_usage_survives_a_rebuild),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
