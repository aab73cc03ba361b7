/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The declared GPU list (gpuaasd's local-gpus setting): counts, explicit
 * indices with and without UUIDs, mixing both, spaces, and every way a list
 * is refused, with the entry named in the message.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "base/err.h"
#include "inventory/inventory.h"

static void test_counts(void **state)
{
    struct inv_declared_gpu *g = NULL;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(inv_declared_parse("h100:8", &g, &ei), 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(g[i].index, i);
        assert_string_equal(g[i].cls, "h100");
        assert_string_equal(g[i].uuid, "");
    }
    free(g);

    /* two classes: the second count goes on after the first */
    assert_int_equal(inv_declared_parse(" h100-80gb:2 , l4 : 1 ", &g, &ei), 3);
    assert_int_equal(g[2].index, 2);
    assert_string_equal(g[0].cls, "h100-80gb");
    assert_string_equal(g[2].cls, "l4");
    free(g);

    /* nothing declared */
    g = (void *)&ei;
    assert_int_equal(inv_declared_parse("", &g, &ei), 0);
    assert_null(g);
    assert_int_equal(inv_declared_parse("  ", &g, &ei), 0);
    assert_int_equal(inv_declared_parse(NULL, &g, &ei), 0);
}

static void test_indices(void **state)
{
    struct inv_declared_gpu *g = NULL;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(inv_declared_parse("0:h100:GPU-aaaa-0001,1:h100:GPU-aaaa-0002", &g, &ei), 2);
    assert_int_equal(g[0].index, 0);
    assert_string_equal(g[0].uuid, "GPU-aaaa-0001");
    assert_int_equal(g[1].index, 1);
    assert_string_equal(g[1].uuid, "GPU-aaaa-0002");
    free(g);

    /* an index without a UUID; indices need not start at 0 or be in order; a count follows */
    assert_int_equal(inv_declared_parse("3:a100-80gb,1:l4:GPU-Ab-9,t4:2", &g, &ei), 4);
    assert_int_equal(g[0].index, 3);
    assert_string_equal(g[0].uuid, "");
    assert_int_equal(g[1].index, 1);
    assert_int_equal(g[2].index, 4);
    assert_int_equal(g[3].index, 5);
    assert_string_equal(g[3].cls, "t4");
    free(g);

    assert_int_equal(inv_declared_parse("h100:1024", &g, &ei), 1024);
    assert_int_equal(g[1023].index, 1023);
    free(g);
}

static void test_refused(void **state)
{
    static const struct {
        const char *spec, *message;
    } cases[] = {
        {"h100", "entry 1 ('h100'): expected CLASS:COUNT, INDEX:CLASS or INDEX:CLASS:UUID"},
        {"h100:8,", "entry 2 (''): empty"},
        {",h100:8", "entry 1 (''): empty"},
        {"h100:x", "entry 1 ('h100:x'): the count must be a number from 1 to 1024"},
        {"h100:0", "the count must be a number from 1 to 1024"},
        {"h100:-1", "the count must be a number from 1 to 1024"},
        {"h100:1025", "the count must be a number from 1 to 1024"},
        {"H100:8", "entry 1 ('H100:8'): a GPU class is lower-case letters"},
        {"h 100:8", "a GPU class is lower-case"},
        {"0:", "a GPU class is lower-case"},
        {"0:h100:GPU-a:x", "too many ':'"},
        {"0:h100:gpu-aaaa", "a UUID is 'GPU-' then letters, digits and '-'"},
        {"0:h100:GPU-", "a UUID is 'GPU-'"},
        {"0:h100:GPU-a_b", "a UUID is 'GPU-'"},
        {"1024:h100", "the index must be a number from 0 to 1023"},
        {"0:h100,0:h100", "entry 2 ('0:h100'): this index is declared twice"},
        {"h100:2,1:l4", "entry 2 ('1:l4'): this index is declared twice"},
        {"0:h100:GPU-a,1:h100:GPU-a", "entry 2 ('1:h100:GPU-a'): this UUID is declared twice"},
        {"h100:1024,l4:1", "entry 2 ('l4:1'): more than 1024 GPUs"},
        {"1023:h100,l4:1", "entry 2 ('l4:1'): indices go from 0 to 1023"},
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct inv_declared_gpu *g = (void *)&cases[i];
        struct error_info ei = {0};
        int rc = inv_declared_parse(cases[i].spec, &g, &ei);
        if (rc != ERR_INVALID || !strstr(ei.message, cases[i].message))
            fail_msg("'%s': rc %d, message '%s', wanted '%s'", cases[i].spec, rc, ei.message,
                     cases[i].message);
        assert_ptr_equal(g, (void *)&cases[i]); /* untouched */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_indices),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
