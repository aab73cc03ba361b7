/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/backend/work.c: the table of a backend's workloads and their pending ends. */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "backend/work.h"

struct rec {
    int64_t id; /* first, as work.h wants */
    int tag;
};

static void test_find_take_keep_order(void **state)
{
    struct backend_work t = {0};
    struct rec r[40];
    size_t pos = 99;
    (void)state;

    for (int i = 0; i < 40; i++) {
        r[i] = (struct rec){.id = 100 + i, .tag = i};
        backend_work_add(&t, &r[i]); /* past the first growth */
    }
    assert_int_equal(t.n, 40);
    assert_ptr_equal(backend_work_find(&t, 117, &pos), &r[17]);
    assert_int_equal(pos, 17);
    assert_ptr_equal(backend_work_find(&t, 100, NULL), &r[0]);
    assert_null(backend_work_find(&t, 99, &pos));
    assert_int_equal(pos, 17); /* untouched when not found */

    assert_ptr_equal(backend_work_take(&t, 17), &r[17]);
    assert_int_equal(t.n, 39);
    assert_null(backend_work_find(&t, 117, NULL));
    for (size_t i = 0; i < t.n; i++) /* launch order kept */
        assert_int_equal(((struct rec *)t.items[i])->tag, i < 17 ? (int)i : (int)i + 1);
    assert_ptr_equal(backend_work_take(&t, t.n - 1), &r[39]);
    assert_ptr_equal(backend_work_take(&t, 0), &r[0]);
    assert_int_equal(t.n, 37);
    backend_work_release(&t);
    assert_int_equal(t.n, 0);
    assert_null(t.items);
}

static void test_known_counts_pending_ends(void **state)
{
    struct backend_work t = {0};
    struct rec a = {.id = 7};
    struct backend_event ev = {.workload_id = 8, .how = BACKEND_EXITED};
    struct backend_event out[4];
    (void)state;

    backend_work_add(&t, &a);
    backend_ends_push(&t.done, &ev);
    assert_true(backend_work_known(&t, 7));  /* running */
    assert_true(backend_work_known(&t, 8));  /* ended, not yet handed out */
    assert_false(backend_work_known(&t, 9)); /* never seen */
    assert_int_equal(backend_ends_take(&t.done, out, 4), 1);
    assert_false(backend_work_known(&t, 8)); /* handed out: may be launched again */
    backend_ends_push(&t.done, &ev);
    backend_work_release(&t); /* frees pending ends too (ASan checks) */
    assert_int_equal(t.done.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_take_keep_order),
        cmocka_unit_test(test_known_counts_pending_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
