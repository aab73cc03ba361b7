/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure decisions of the inventory module: model names to GPU classes
 * (the documented table, MIG profiles, derived names), the per-GPU state
 * with its thresholds at and around each boundary, idle policies (notify
 * once at X, stop only P2 at Y), and the collector schedule (interval,
 * doubling backoff with a cap, stale flag kept until a success).
 */
#include "base/common.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/err.h"
#include "inventory/inventory.h"

static void test_model_classes(void **state)
{
    static const struct {
        const char *model, *profile, *cls;
        int rc;
    } cases[] = {
        {"NVIDIA H200", NULL, "h200", 1},
        {"NVIDIA H100 80GB HBM3", NULL, "h100", 1},
        {"NVIDIA H100 PCIe", NULL, "h100", 1},
        {"NVIDIA H100 NVL", NULL, "h100-nvl", 1},
        {"Tesla V100-SXM2-16GB", NULL, "v100-16gb", 1},
        {"Tesla V100-SXM2-32GB", NULL, "v100-32gb", 1},
        {"Tesla V100S-PCIE-32GB", NULL, "v100s", 1},
        {"NVIDIA A100-SXM4-80GB", NULL, "a100-80gb", 1},
        {"NVIDIA A100-SXM4-40GB", NULL, "a100-40gb", 1},
        {"NVIDIA A100-PCIE-40GB", NULL, "a100-40gb", 1},
        {"NVIDIA A100 80GB PCIe", NULL, "a100-80gb", 1},
        {"A100", NULL, "a100-40gb", 1},
        {"NVIDIA GH200 480GB", NULL, "gh200", 1},
        {"NVIDIA L40S", NULL, "l40s", 1},
        {"NVIDIA L40", NULL, "l40", 1},
        {"NVIDIA L4", NULL, "l4", 1},
        {"NVIDIA A10G", NULL, "a10g", 1},
        {"NVIDIA A10", NULL, "a10", 1},
        {"Tesla T4", NULL, "t4", 1},
        {"NVIDIA RTX A6000", NULL, "rtx-a6000", 1},
        {"NVIDIA H200", "1g.18gb", "h200/1g.18gb", 1},
        {"NVIDIA H200", "3g.71gb", "h200/3g.71gb", 1},
        {"NVIDIA H100 80GB HBM3", "1g.10gb+me", "h100/1g.10gb+me", 1},
        {"NVIDIA A100-SXM4-40GB", "", "a100-40gb", 1},
        {"Quadro RTX 8000", NULL, "quadro-rtx-8000", 0},
        {"NVIDIA GeForce RTX 4090", NULL, "rtx-4090", 0},
        {"  nvidia   Some_New/GPU (rev 2) ", NULL, "some-new-gpu-rev-2", 0},
    };
    char out[64];
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int rc = inv_model_class(cases[i].model, cases[i].profile, out, sizeof(out));
        if (rc != cases[i].rc || strcmp(out, cases[i].cls) != 0)
            fail_msg("'%s': %d '%s', want %d '%s'", cases[i].model, rc, out, cases[i].rc,
                     cases[i].cls);
    }
    assert_int_equal(inv_model_class("", NULL, out, sizeof(out)), ERR_INVALID);
    assert_int_equal(inv_model_class("NVIDIA", NULL, out, sizeof(out)), ERR_INVALID);
    assert_int_equal(inv_model_class("NVIDIA H200", "one gig", out, sizeof(out)), ERR_INVALID);
    assert_int_equal(inv_model_class("NVIDIA H200", "x.18gb", out, sizeof(out)), ERR_INVALID);
    assert_int_equal(inv_model_class("NVIDIA H200", "1g.18gb", out, 8), ERR_TOO_LARGE);
}

static void test_mig_profile(void **state)
{
    char out[32];
    (void)state;
    assert_int_equal(inv_mig_profile_of_name("NVIDIA H100 80GB HBM3 MIG 1g.10gb", out, sizeof(out)),
                     0);
    assert_string_equal(out, "1g.10gb");
    assert_int_equal(inv_mig_profile_of_name("NVIDIA A100-SXM4-40GB MIG 3g.20gb+me ", out, 32), 0);
    assert_string_equal(out, "3g.20gb+me");
    assert_int_equal(inv_mig_profile_of_name("X MIG MIG 7g.80gb", out, sizeof(out)), 0);
    assert_string_equal(out, "7g.80gb");
    /* malformed: no " MIG ", no profile after it, not a profile, too long */
    assert_int_equal(inv_mig_profile_of_name("NVIDIA H100 80GB HBM3", out, sizeof(out)),
                     ERR_INVALID);
    assert_string_equal(out, "");
    assert_int_equal(inv_mig_profile_of_name("NVIDIA H100 MIG ", out, sizeof(out)), ERR_INVALID);
    assert_int_equal(inv_mig_profile_of_name("NVIDIA H100 MIG big", out, sizeof(out)), ERR_INVALID);
    assert_int_equal(inv_mig_profile_of_name("NVIDIA H100 MIG 1g.10gb x", out, sizeof(out)),
                     ERR_INVALID);
    assert_int_equal(inv_mig_profile_of_name("NVIDIA H100 MIG 1g.10gb", out, 4), ERR_TOO_LARGE);
    assert_int_equal(inv_mig_profile_of_name(NULL, out, sizeof(out)), ERR_INVALID);

    assert_int_equal(inv_mig_profile_mib("1g.10gb"), 10240);
    assert_int_equal(inv_mig_profile_mib("3g.40gb+me"), 40960);
    assert_int_equal(inv_mig_profile_mib("7g.141gb"), 141 * 1024);
    assert_int_equal(inv_mig_profile_mib("1g"), ERR_INVALID);
    assert_int_equal(inv_mig_profile_mib("1g.gb"), ERR_INVALID);
    assert_int_equal(inv_mig_profile_mib("1g.0gb"), ERR_INVALID);
    assert_int_equal(inv_mig_profile_mib("1g.10tb"), ERR_INVALID);
    assert_int_equal(inv_mig_profile_mib("1g.10gbx"), ERR_INVALID);
    assert_int_equal(inv_mig_profile_mib("1g.99999gb"), ERR_INVALID);
    assert_int_equal(inv_mig_profile_mib(NULL), ERR_INVALID);
}

static struct inv_class_input seen(bool allocated, double avg, double max)
{
    struct inv_class_input in;
    memset(&in, 0, sizeof(in));
    in.allocated = allocated;
    in.now_ms = 10000000;
    in.last_seen_ms = 9990000;
    in.covered_ms = 30 * 60 * 1000;
    in.n_samples = 180;
    in.activity_avg = avg;
    in.activity_max = max;
    in.mem_used_mib = 0;
    in.n_procs = -1;
    return in;
}

static int state_of(const struct inv_class_input *in)
{
    struct inv_class_config cfg;
    struct inv_class_result res;
    inv_class_config_default(&cfg);
    inv_classify(&cfg, in, &res);
    assert_non_null(res.reason);
    return res.state;
}

static void test_classify(void **state)
{
    struct inv_class_input in;
    struct inv_class_config cfg;
    struct inv_class_result res;
    (void)state;

    inv_class_config_default(&cfg);
    assert_int_equal(cfg.window_ms, 1800000);
    assert_true(cfg.busy_activity == 0.05 && cfg.busy_peak == 0.30);
    assert_int_equal(cfg.down_after_missed, 3);

    /* allocated: the activity thresholds, exactly at and just below */
    in = seen(true, 0.05, 0.05);
    assert_int_equal(state_of(&in), INV_STATE_BUSY);
    in = seen(true, 0.049, 0.29);
    assert_int_equal(state_of(&in), INV_STATE_IDLE_ALLOCATED);
    in = seen(true, 0.01, 0.30); /* one burst in the window */
    assert_int_equal(state_of(&in), INV_STATE_BUSY);
    in = seen(true, 0.0, 0.0);
    in.mem_used_mib = 30000; /* memory held, nothing running: still reclaimable */
    inv_classify(&cfg, &in, &res);
    assert_int_equal(res.state, INV_STATE_IDLE_ALLOCATED);
    assert_non_null(strstr(res.reason, "holding memory"));
    /* not a whole window of evidence yet */
    in = seen(true, 0.0, 0.0);
    in.covered_ms = cfg.window_ms - 1;
    assert_int_equal(state_of(&in), INV_STATE_BUSY);

    /* no activity metric at all: processes or memory decide */
    in = seen(true, NAN, NAN);
    assert_int_equal(state_of(&in), INV_STATE_IDLE_ALLOCATED);
    in.n_procs = 2;
    assert_int_equal(state_of(&in), INV_STATE_BUSY);
    in.n_procs = 0;
    in.mem_used_mib = 1024;
    assert_int_equal(state_of(&in), INV_STATE_BUSY);
    in.mem_used_mib = 1023;
    assert_int_equal(state_of(&in), INV_STATE_IDLE_ALLOCATED);

    /* unallocated: free, whatever the activity */
    in = seen(false, 0.9, 1.0);
    inv_classify(&cfg, &in, &res);
    assert_int_equal(res.state, INV_STATE_FREE);
    assert_string_equal(res.reason, "not allocated, but in use outside gpuaas");
    in = seen(false, 0.0, 0.0);
    assert_int_equal(state_of(&in), INV_STATE_FREE);

    /* down beats everything */
    in = seen(true, 0.9, 1.0);
    in.missed_scrapes = 2;
    assert_int_equal(state_of(&in), INV_STATE_BUSY);
    in.missed_scrapes = 3;
    assert_int_equal(state_of(&in), INV_STATE_DOWN);
    in = seen(false, 0, 0);
    in.last_seen_ms = in.now_ms - cfg.down_after_ms;
    assert_int_equal(state_of(&in), INV_STATE_DOWN);
    in.last_seen_ms = in.now_ms - cfg.down_after_ms + 1;
    assert_int_equal(state_of(&in), INV_STATE_FREE);
    in.last_seen_ms = 0;
    assert_int_equal(state_of(&in), INV_STATE_DOWN);

    assert_string_equal(inv_state_name(INV_STATE_IDLE_ALLOCATED), "idle-allocated");
    assert_string_equal(inv_state_name(INV_STATE_DOWN), "down");
    assert_string_equal(inv_state_name(42), "unknown");
}

static void test_idle_policy(void **state)
{
    const int64_t min = 60000;
    struct inv_idle_policy pol = {.notify_after_ms = 30 * min, .stop_p2_after_ms = 120 * min};
    struct inv_idle_alloc a[] = {
        {1, false, 29 * min, false}, /* not yet */
        {2, false, 30 * min, false}, /* notify */
        {3, false, 500 * min, true}, /* P1: notified already, never stopped */
        {4, true, 119 * min, false}, /* P2: notify only */
        {5, true, 120 * min, true},  /* P2: stop */
        {6, true, 121 * min, false}, /* P2: notify and stop */
    };
    int act[ARRAY_SIZE(a)];
    (void)state;

    assert_int_equal(inv_idle_apply(&pol, a, ARRAY_SIZE(a), act), 4);
    assert_int_equal(act[0], INV_IDLE_NONE);
    assert_int_equal(act[1], INV_IDLE_NOTIFY);
    assert_int_equal(act[2], INV_IDLE_NONE);
    assert_int_equal(act[3], INV_IDLE_NOTIFY);
    assert_int_equal(act[4], INV_IDLE_STOP);
    assert_int_equal(act[5], INV_IDLE_NOTIFY | INV_IDLE_STOP);

    /* Y off: nothing is ever stopped; X off: no events */
    pol.stop_p2_after_ms = 0;
    assert_int_equal(inv_idle_apply(&pol, a, ARRAY_SIZE(a), act), 3);
    assert_int_equal(act[5], INV_IDLE_NOTIFY);
    pol.notify_after_ms = 0;
    assert_int_equal(inv_idle_apply(&pol, a, ARRAY_SIZE(a), act), 0);
}

static void test_schedule(void **state)
{
    struct inv_sched s;
    const int64_t t0 = 1000000;
    (void)state;

    inv_sched_init(&s, 10000, 5000, 80000, t0);
    assert_true(inv_sched_due(&s, t0));
    assert_true(s.stale); /* nothing collected yet */
    inv_sched_ok(&s, t0);
    assert_false(s.stale);
    assert_int_equal(s.last_ok_ms, t0);
    assert_false(inv_sched_due(&s, t0 + 9999));
    assert_true(inv_sched_due(&s, t0 + 10000));

    /* failures: 10, 20, 40, 80, 80 s; stale at once, last_ok kept */
    int64_t t = t0 + 10000, want[] = {10000, 20000, 40000, 80000, 80000};
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        inv_sched_failed(&s, t);
        assert_true(s.stale);
        assert_int_equal(s.failures, (int)i + 1);
        assert_int_equal(s.delay_ms, want[i]);
        assert_int_equal(s.next_due_ms, t + want[i]);
        assert_int_equal(s.last_ok_ms, t0);
        assert_false(inv_sched_due(&s, t + want[i] - 1));
        t += want[i];
        assert_true(inv_sched_due(&s, t));
    }
    inv_sched_ok(&s, t);
    assert_false(s.stale);
    assert_int_equal(s.failures, 0);
    assert_int_equal(s.delay_ms, 0);
    assert_int_equal(s.next_due_ms, t + 10000);

    /* no run for 3 intervals (a hung caller): stale without a failure */
    assert_false(inv_sched_due(&s, t + 29999) && s.stale);
    assert_false(s.stale);
    assert_true(inv_sched_due(&s, t + 30000));
    assert_true(s.stale);

    /* a cap that is not a power-of-two multiple */
    inv_sched_init(&s, 10000, 5000, 30000, t0);
    inv_sched_failed(&s, t0);
    inv_sched_failed(&s, t0);
    inv_sched_failed(&s, t0);
    assert_int_equal(s.delay_ms, 30000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_classes), cmocka_unit_test(test_mig_profile),
        cmocka_unit_test(test_classify),      cmocka_unit_test(test_idle_policy),
        cmocka_unit_test(test_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
