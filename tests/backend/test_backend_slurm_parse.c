/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the slurm backend's pure part (src/backend/slurm.c): parsing what
 * `sinfo --json` (Slurm 22.05) says of nodes into gpuaas nodes and GPUs. The
 * backend itself is tested against a real Slurm in tests/slurm.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "backend/slurm.h"

/* The sinfo parser on Slurm's shapes: typed and untyped GRES, several kinds, down nodes. */
static void test_parse_nodes(void **state)
{
    static const char json[] =
        "{\"nodes\":["
        "{\"name\":\"a\",\"state\":\"mixed\",\"state_flags\":[],\"cpus\":64,"
        "\"real_memory\":512000,\"gres\":\"gpu:a100:4(S:0),gpu:a100:4(S:1),shard:8\","
        "\"gres_used\":\"gpu:a100:3(IDX:0-2),shard:0\",\"reason\":\"\"},"
        "{\"name\":\"b\",\"state\":\"down\",\"state_flags\":[\"NOT_RESPONDING\"],\"cpus\":8,"
        "\"real_memory\":1000,\"gres\":\"gpu:2\",\"gres_used\":\"gpu:0\",\"reason\":\"gone\"},"
        "{\"name\":\"c\",\"state\":\"idle\",\"state_flags\":[\"DRAIN\"],\"cpus\":8,"
        "\"real_memory\":1000,\"gres\":\"\",\"gres_used\":\"\"},"
        "{\"state\":\"idle\"}]}";
    struct slurm_node *n = NULL;
    size_t count = 0;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(slurm_parse_nodes(json, strlen(json), &n, &count, &ei), 0);
    assert_int_equal(count, 3);
    assert_string_equal(n[0].state, "ready");
    assert_string_equal(n[0].gpu_type, "a100");
    assert_int_equal(n[0].n_gpus, 8);
    assert_int_equal(n[0].n_gpus_used, 3);
    assert_int_equal(n[0].cpu_milli, 64000);
    assert_string_equal(n[1].state, "down");
    assert_string_equal(n[1].gpu_type, "");
    assert_int_equal(n[1].n_gpus, 2);
    assert_string_equal(n[1].reason, "gone");
    assert_string_equal(n[2].state, "drain");
    assert_int_equal(n[2].n_gpus, 0);
    slurm_nodes_free(n, count);

    assert_int_equal(slurm_parse_nodes("{\"jobs\":[]}", 11, &n, &count, &ei), ERR_INVALID);
    assert_int_equal(slurm_parse_nodes("not json", 8, &n, &count, &ei), ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
