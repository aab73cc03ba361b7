/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of gpuaasd's settings (src/daemon/config.c) for the placement
 * policy: the default, the flag, the environment variable, the config
 * file, and the errors for an unknown policy and malformed typical pods;
 * the declared local GPUs (local-gpus), kept or refused; and the Slurm poll
 * interval's default and range.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "daemon/config.h"

static int load(int argc, char **argv, struct config *cfg, struct error_info *ei)
{
    memset(ei, 0, sizeof(*ei));
    return config_load(argc, argv, cfg, ei);
}

static void test_placement_default_and_flag(void **st)
{
    (void)st;
    struct config cfg;
    struct error_info ei;
    char *none[] = {"gpuaasd"};
    char *flag[] = {"gpuaasd", "--placement", "fgd-fill"};
    char *eq[] = {"gpuaasd", "--placement=bestfit", "--placement-pods=1x1000/8000/32768*3"};

    unsetenv("GPUAASD_CONFIG");
    unsetenv("GPUAAS_PLACEMENT");
    unsetenv("GPUAAS_PLACEMENT_PODS");
    assert_int_equal(load(1, none, &cfg, &ei), 0);
    assert_string_equal(cfg.placement, ""); /* the built-in best-fit */
    assert_string_equal(cfg.placement_pods, "");
    assert_int_equal(load(3, flag, &cfg, &ei), 0);
    assert_string_equal(cfg.placement, "fgd-fill");
    assert_int_equal(load(3, eq, &cfg, &ei), 0);
    assert_string_equal(cfg.placement, "bestfit");
    assert_string_equal(cfg.placement_pods, "1x1000/8000/32768*3");
}

static void test_placement_env_and_file(void **st)
{
    (void)st;
    struct config cfg;
    struct error_info ei;
    char path[] = "/tmp/gpuaas-test-config-XXXXXX";
    char *none[] = {"gpuaasd"};
    char *flag[] = {"gpuaasd", "--placement", "packing"};
    int fd = mkstemp(path);
    FILE *f;

    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("# placement for the test\nplacement = fgd\nplacement_pods = 1x500/4000/16384*2\n", f);
    fclose(f);
    unsetenv("GPUAAS_PLACEMENT");
    unsetenv("GPUAAS_PLACEMENT_PODS");
    setenv("GPUAASD_CONFIG", path, 1);
    assert_int_equal(load(1, none, &cfg, &ei), 0);
    assert_string_equal(cfg.placement, "fgd");
    assert_string_equal(cfg.placement_pods, "1x500/4000/16384*2");
    /* The environment beats the file, the flag beats both. */
    setenv("GPUAAS_PLACEMENT", "dotprod", 1);
    assert_int_equal(load(1, none, &cfg, &ei), 0);
    assert_string_equal(cfg.placement, "dotprod");
    assert_int_equal(load(3, flag, &cfg, &ei), 0);
    assert_string_equal(cfg.placement, "packing");
    unsetenv("GPUAAS_PLACEMENT");
    unsetenv("GPUAASD_CONFIG");
    unlink(path);
}

static void test_placement_errors(void **st)
{
    (void)st;
    struct config cfg;
    struct error_info ei;
    char *unknown[] = {"gpuaasd", "--placement", "tetris"};
    char *bad_pods[] = {"gpuaasd", "--placement", "fgd", "--placement-pods", "1x1500/8000/1"};
    char *cpu_share[] = {"gpuaasd", "--placement-pods", "0x500/8000/1"};

    unsetenv("GPUAASD_CONFIG");
    unsetenv("GPUAAS_PLACEMENT");
    unsetenv("GPUAAS_PLACEMENT_PODS");
    assert_true(load(3, unknown, &cfg, &ei) < 0);
    assert_int_equal(ei.code, ERR_INVALID);
    assert_non_null(strstr(ei.message, "unknown policy 'tetris'"));
    assert_non_null(strstr(ei.message, "fgd-fill")); /* says what is known */
    assert_true(load(5, bad_pods, &cfg, &ei) < 0);
    assert_non_null(strstr(ei.message, "placement-pods"));
    /* Malformed typical pods are an error even without a policy that uses them. */
    assert_true(load(3, cpu_share, &cfg, &ei) < 0);
    assert_non_null(strstr(ei.message, "placement-pods"));
}

/* The declared local GPUs: a good list is kept as written, a bad one names its entry. */
static void test_local_gpus(void **st)
{
    (void)st;
    struct config cfg;
    struct error_info ei;
    char *good[] = {"gpuaasd", "--local-gpus", "0:h100:GPU-aaaa,1:h100:GPU-bbbb"};
    char *bad[] = {"gpuaasd", "--local-gpus=h100:8,l4"};

    unsetenv("GPUAASD_CONFIG");
    unsetenv("GPUAAS_LOCAL_GPUS");
    assert_int_equal(load(1, good, &cfg, &ei), 0);
    assert_string_equal(cfg.local_gpus, "");
    assert_int_equal(load(3, good, &cfg, &ei), 0);
    assert_string_equal(cfg.local_gpus, "0:h100:GPU-aaaa,1:h100:GPU-bbbb");
    assert_true(load(2, bad, &cfg, &ei) < 0);
    assert_int_equal(ei.code, ERR_INVALID);
    assert_string_equal(ei.field, "local-gpus");
    assert_non_null(strstr(ei.message, "local-gpus: entry 2 ('l4'): expected CLASS:COUNT"));
    setenv("GPUAAS_LOCAL_GPUS", "h100:0", 1);
    assert_true(load(1, good, &cfg, &ei) < 0);
    assert_non_null(strstr(ei.message, "the count must be a number from 1 to 1024"));
    unsetenv("GPUAAS_LOCAL_GPUS");
}

/* slurm-poll-ms: 200 by default, 20..60000. */
static void test_slurm_poll(void **st)
{
    (void)st;
    struct config cfg;
    struct error_info ei;
    char *none[] = {"gpuaasd"};
    char *fast[] = {"gpuaasd", "--slurm-poll-ms", "50"};
    char *too_fast[] = {"gpuaasd", "--slurm-poll-ms", "5"};
    char *word[] = {"gpuaasd", "--slurm-poll-ms", "soon"};

    unsetenv("GPUAASD_CONFIG");
    assert_int_equal(load(1, none, &cfg, &ei), 0);
    assert_int_equal(cfg.slurm_poll_ms, 200);
    assert_int_equal(load(3, fast, &cfg, &ei), 0);
    assert_int_equal(cfg.slurm_poll_ms, 50);
    assert_true(load(3, too_fast, &cfg, &ei) < 0);
    assert_non_null(strstr(ei.message, "slurm-poll-ms"));
    assert_true(load(3, word, &cfg, &ei) < 0);
    assert_non_null(strstr(ei.message, "slurm-poll-ms"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_default_and_flag),
        cmocka_unit_test(test_placement_env_and_file),
        cmocka_unit_test(test_placement_errors),
        cmocka_unit_test(test_local_gpus),
        cmocka_unit_test(test_slurm_poll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
