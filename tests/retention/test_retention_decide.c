/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the retention's pure part (src/retention/decide.c): which
 * names in log-dir are ours, and which of them go, from plain data and a
 * given time: no clock, no directory, no store.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "model/model.h"
#include "retention/retention.h"

#define DAY INT64_C(86400000)
#define NOW (INT64_C(1798675200000)) /* 2027-01-01T00:00:00Z */

static void test_names_that_are_ours(void **state)
{
    static const struct {
        const char *name;
        int64_t id; /* 0: not ours */
    } cases[] = {
        {"12.log", 12},
        {"12.0.run", 12},
        {"12.255.run", 12},
        {"7.slurm", 7},
        {"9223372036854775807.log", INT64_MAX},
        {"1.2147483647.run", 1},
        /* anything else is not ours */
        {"0.log", 0},
        {"012.log", 0},
        {"-3.log", 0},
        {"+3.log", 0},
        {"12.log.bak", 0},
        {"12.log~", 0},
        {".12.log", 0},
        {"12.LOG", 0},
        {"12.", 0},
        {"12", 0},
        {".log", 0},
        {"a12.log", 0},
        {"12.run", 0},
        {"12.01.run", 0},
        {"12.-1.run", 0},
        {"12.2147483648.run", 0},
        {"12.0.run.tmp", 0},
        {"12.0.0.run", 0},
        {"9223372036854775808.log", 0},
        {"99999999999999999999.log", 0},
        {"12.x.run", 0},
        {"12.slurm.log", 0},
        {"notes.txt", 0},
        {".", 0},
        {"..", 0},
        {"", 0},
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int64_t id = -42;
        bool ours = retention_parse_name(cases[i].name, &id);
        if (ours != (cases[i].id != 0))
            fail_msg("'%s': expected %s", cases[i].name, cases[i].id ? "ours" : "not ours");
        assert_int_equal(id, ours ? cases[i].id : -42); /* untouched when not ours */
    }
}

/* The store's view: sorted by id. */
static const struct retention_workload ws[] = {
    {1, "succeeded", NOW - 31 * DAY},  /* ended 31 days ago */
    {2, "failed", NOW - 30 * DAY},     /* exactly the retention ago */
    {3, "cancelled", NOW - 29 * DAY},  /* not yet */
    {4, "preempted", NOW - 400 * DAY}, /* preempted, not requeued: ended */
    {5, "running", NOW - 90 * DAY},    /* an old end time but running again: kept */
    {6, "queued", NOW - 90 * DAY},     /* requeued after a preemption: its old run files stay */
    {7, "preempting", -1},
    {8, "admitted", -1},
    {9, "succeeded", -1},      /* ended without an end time recorded: kept */
    {10, "failed", NOW + DAY}, /* an end in the future (clock went back): kept */
};

static const char *const names[] = {
    "1.log",   "1.0.run", "1.1.run",  "1.slurm",    "2.log",   "2.0.run",  "3.log",
    "3.0.run", "4.log",   "4.3.run",  "5.log",      "5.0.run", "6.log",    "6.0.run",
    "7.0.run", "8.0.run", "9.log",    "10.log",     "11.log",  "11.0.run", "notes.txt",
    "01.log",  "1.log.1", "1.0.run~", "lost+found",
};

static void test_only_files_of_work_ended_long_enough_ago_go(void **state)
{
    bool remove[ARRAY_SIZE(names)];
    /* 11 is not in the store (another store's, or unknown): kept. */
    static const char *const gone[] = {"1.log", "1.0.run", "1.1.run", "1.slurm",
                                       "2.log", "2.0.run", "4.log",   "4.3.run"};
    size_t n;
    (void)state;

    n = retention_decide(names, ARRAY_SIZE(names), ws, ARRAY_SIZE(ws), NOW, 30 * DAY, remove);
    assert_int_equal(n, ARRAY_SIZE(gone));
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        bool want = false;
        for (size_t j = 0; j < ARRAY_SIZE(gone); j++)
            want = want || strcmp(names[i], gone[j]) == 0;
        if (remove[i] != want)
            fail_msg("'%s': expected it %s", names[i], want ? "removed" : "kept");
    }
}

static void test_time_decides_not_the_order(void **state)
{
    bool remove[ARRAY_SIZE(names)];
    (void)state;
    /* A day later, 3 (cancelled 29 days ago) is due too. */
    assert_int_equal(
        retention_decide(names, ARRAY_SIZE(names), ws, ARRAY_SIZE(ws), NOW + DAY, 30 * DAY, remove),
        10);
    assert_true(remove[6] && remove[7]); /* 3.log, 3.0.run */
    /* One millisecond before 2 is due: 2 stays. */
    retention_decide(names, ARRAY_SIZE(names), ws, ARRAY_SIZE(ws), NOW - 1, 30 * DAY, remove);
    assert_false(remove[4] || remove[5]);
    assert_true(remove[0]);
    /* A longer retention keeps more; none at all keeps everything. */
    assert_int_equal(
        retention_decide(names, ARRAY_SIZE(names), ws, ARRAY_SIZE(ws), NOW, 365 * DAY, remove), 2);
    assert_true(remove[8] && remove[9]); /* 4: ended 400 days ago */
    assert_int_equal(retention_decide(names, ARRAY_SIZE(names), ws, ARRAY_SIZE(ws), NOW, 0, remove),
                     0);
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        assert_false(remove[i]);
    /* Nothing known about any workload: nothing goes. */
    assert_int_equal(retention_decide(names, ARRAY_SIZE(names), NULL, 0, NOW, DAY, remove), 0);
}

static void test_states_that_are_ends(void **state)
{
    size_t n_ended = 0;
    (void)state;
    for (size_t i = 0; model_workload_states[i]; i++)
        n_ended += model_workload_state_ended(model_workload_states[i]);
    assert_int_equal(n_ended, 4);
    assert_true(model_workload_state_ended("preempted"));
    assert_false(model_workload_state_ended("preempting"));
    assert_false(model_workload_state_ended("queued"));
    assert_false(model_workload_state_ended(NULL));
    assert_false(model_workload_state_ended(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_that_are_ours),
        cmocka_unit_test(test_only_files_of_work_ended_long_enough_ago_go),
        cmocka_unit_test(test_time_decides_not_the_order),
        cmocka_unit_test(test_states_that_are_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
