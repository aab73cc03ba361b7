/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local collectors: nvidia-smi's CSV output (fixtures with [N/A], [Not
 * Supported], MIG on and off, malformed lines), running it as a child with a
 * deadline (fake nvidia-smi scripts written into a temporary directory put
 * first on PATH: good output, a hang that must be killed, a failing exit,
 * too much output), and NVML through dlopen: a missing library, and a fake
 * libnvidia-ml.so.1 whose values must come back as readings.
 */
#include "base/common.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "collect/collector.h"
#include "inventory/inventory.h"
#include "inv_test.h"

static char tmpdir[256];

static void write_script(const char *name, const char *body)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static int setup(void **state)
{
    char path[4096];
    const char *old = getenv("PATH");
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/gpuaas-inv-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(path, sizeof(path), "%s:%s", tmpdir, old ? old : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_smi_parse(void **state)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, "smi-3gpus.csv", &len);
    struct inv_readings rs;
    struct error_info ei = {0};
    struct inv_reading *r;
    (void)state;

    inv_readings_init(&rs, 0);
    assert_int_equal(inv_smi_parse(data, len, &rs, &ei), 3);
    r = inv_readings_find(&rs, "GPU-3f1c9a52-7d2e-4b8a-9c41-0e6f2d8b5a17", -1);
    assert_non_null(r);
    assert_int_equal(r->source, INV_SRC_SMI);
    assert_int_equal(r->index, 0);
    assert_string_equal(r->model, "NVIDIA H200");
    assert_string_equal(r->pci_bus_id, "00000000:1A:00.0");
    assert_true(r->fb_total_mib == 143771 && r->fb_used_mib == 130286);
    assert_true(r->fb_free_mib == 143771 - 130286);
    assert_true(r->util_pct == 97 && r->temp_c == 61);
    assert_true(fabs(r->power_w - 612.38) < 1e-9);
    assert_int_equal(r->mig_mode, 0);

    r = &rs.v[1];
    assert_int_equal(r->mig_mode, 1);
    assert_false(inv_has(r->util_pct)); /* [N/A] with MIG on */
    assert_false(inv_has(inv_reading_activity(r)));

    r = &rs.v[2];
    assert_int_equal(r->index, 2); /* leading spaces */
    assert_string_equal(r->model, "Tesla V100-SXM2-16GB");
    assert_false(inv_has(r->power_w)); /* [Not Supported] */
    assert_int_equal(r->mig_mode, -1);
    assert_true(r->util_pct == 0);
    inv_readings_release(&rs);
    free(data);
}

static void expect_smi_error(const char *fixture, const char *message)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, fixture, &len);
    struct inv_readings rs;
    struct error_info ei = {0};
    int rc;
    inv_readings_init(&rs, 0);
    rc = inv_smi_parse(data, len, &rs, &ei);
    if (rc != ERR_INVALID || strcmp(ei.message, message) != 0)
        fail_msg("%s: %d '%s'", fixture, rc, ei.message);
    inv_readings_release(&rs);
    free(data);
}

static void test_smi_malformed(void **state)
{
    (void)state;
    expect_smi_error("smi-bad-columns.csv", "line 2: 8 fields, expected 10 (" INV_SMI_QUERY ")");
    expect_smi_error("smi-bad-number.csv", "line 2: memory.used 'ten' is not a number");
    expect_smi_error("smi-bad-mig.csv",
                     "line 1: mig.mode.current 'Maybe' is not Enabled or Disabled");
    struct inv_readings rs;
    struct error_info ei = {0};
    inv_readings_init(&rs, 0);
    const char *no_uuid = "0, [N/A], x, y, 1, 1, 1, 1, 1, Disabled\n";
    assert_int_equal(inv_smi_parse(no_uuid, strlen(no_uuid), &rs, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "line 1: no usable uuid");
    memset(&ei, 0, sizeof(ei));
    const char *eleven = "0, GPU-a, x, y, 1, 1, 1, 1, 1, Disabled, extra\n";
    assert_int_equal(inv_smi_parse(eleven, strlen(eleven), &rs, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "line 1: more than 10 fields");
    assert_int_equal(inv_smi_parse("\n\n", 2, &rs, &ei), 0);
    inv_readings_release(&rs);
}

static void test_smi_collect_fake_program(void **state)
{
    char script[2048];
    struct inv_readings rs;
    struct error_info ei = {0};
    (void)state;

    /* The fake checks it got the query and prints the fixture; -L (MIG on): no instances. */
    snprintf(script, sizeof(script),
             "[ \"$1\" = -L ] && exit 0\n"
             "[ \"$1\" = '--query-gpu=%s' ] || exit 3\n"
             "[ \"$2\" = '--format=csv,noheader,nounits' ] || exit 4\n"
             "cat '%s/smi-3gpus.csv'\n",
             INV_SMI_QUERY, INV_FIXTURES);
    write_script("nvidia-smi", script);
    inv_readings_init(&rs, 0);
    assert_int_equal(inv_smi_collect(NULL, 10000, &rs, &ei), 3);
    assert_non_null(inv_readings_find(&rs, "GPU-5c0ffee0-1111-2222-3333-444455556666", -1));
    inv_readings_release(&rs);
}

/*
 * The collector thread's account of a source (GET /v1/inventory's sources)
 * counts the GPUs of its last good run, the same readings local discovery gets.
 */
static void test_collector_source_counts_last_run(void **state)
{
    char script[2048], prog[512];
    struct collector_options opt;
    struct collector *c = NULL;
    struct collector_source src[4];
    struct inv_readings rs;
    struct error_info ei = {0};
    uint64_t runs = 0;
    int64_t deadline = time_now_ms() + 10000;
    size_t n;
    (void)state;

    snprintf(script, sizeof(script), "[ \"$1\" = -L ] && exit 0\ncat '%s/smi-3gpus.csv'\n",
             INV_FIXTURES);
    write_script("smi-for-thread", script);
    snprintf(prog, sizeof(prog), "%s/smi-for-thread", tmpdir);
    collector_options_init(&opt);
    opt.nvidia_smi = prog;
    /* Shorter than the telemetry store's one-second grain: refused, nothing started. */
    opt.interval_ms = 200;
    assert_int_equal(collector_start(&opt, &c, &ei), ERR_INVALID);
    assert_null(c);
    assert_non_null(strstr(ei.message, "at least 1 s"));
    opt.interval_ms = 60000; /* one run in this test */
    assert_int_equal(collector_start(&opt, &c, &ei), 0);
    assert_non_null(c);
    inv_readings_init(&rs, 0);
    while ((n = collector_local_gpus(c, &rs, &runs)) == 0 && time_now_ms() < deadline)
        usleep(20000);
    assert_int_equal(n, 3);
    assert_int_equal(runs, 1);
    assert_int_equal(collector_sources(c, src, 4), 1);
    assert_string_equal(src[0].name, "nvidia-smi");
    assert_int_equal(src[0].gpus, 3);
    assert_false(src[0].stale);
    assert_string_equal(src[0].error, "");
    inv_readings_release(&rs);
    collector_stop(c);
}

static void test_run_command_failures(void **state)
{
    struct inv_readings rs;
    struct error_info ei = {0};
    char *out = NULL;
    size_t len = 0;
    (void)state;

    write_script("fake-hang", "echo partial\nexec sleep 60\n");
    write_script("fake-fail", "echo 'NVIDIA-SMI has failed' >&2\nexit 9\n");
    write_script("fake-flood", "yes 0123456789abcdef\n");
    write_script("fake-garbage", "echo 'not, csv'\n");
    inv_readings_init(&rs, 0);

    assert_int_equal(inv_smi_collect("fake-hang", 300, &rs, &ei), ERR_UNAVAILABLE);
    assert_string_equal(ei.message, "'fake-hang' timed out after 300 ms");
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_smi_collect("fake-fail", 10000, &rs, &ei), ERR_UNAVAILABLE);
    assert_string_equal(ei.message, "'fake-fail' exited with status 9");
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_smi_collect("fake-flood", 10000, &rs, &ei), ERR_TOO_LARGE);
    assert_string_equal(ei.message, "'fake-flood' wrote more than 1048576 bytes");
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_smi_collect("fake-garbage", 10000, &rs, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "line 1: 2 fields, expected 10 (" INV_SMI_QUERY ")");
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_smi_collect("no-such-nvidia-smi", 10000, &rs, &ei), ERR_UNAVAILABLE);
    assert_string_equal(ei.message,
                        "could not run 'no-such-nvidia-smi': No such file or directory");
    assert_int_equal(rs.n, 0);
    inv_readings_release(&rs);

    /* plain output, and an empty one */
    char echo[] = "echo", word[] = "hello";
    char *argv[] = {echo, word, NULL};
    assert_int_equal(inv_run_command(argv, 10000, 100, &out, &len, NULL), 0);
    assert_string_equal(out, "hello\n");
    assert_int_equal(len, 6);
    free(out);
    char tru[] = "true";
    char *argv2[] = {tru, NULL};
    assert_int_equal(inv_run_command(argv2, 10000, 100, &out, &len, NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(len, 0);
    free(out);
}

static void test_nvml_absent(void **state)
{
    struct inv_readings rs;
    struct error_info ei = {0};
    char path[600];
    (void)state;

    inv_readings_init(&rs, 0);
    snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", tmpdir);
    assert_int_equal(inv_nvml_collect(path, &rs, &ei), ERR_UNAVAILABLE);
    assert_true(strncmp(ei.message, "NVML not available: ", 20) == 0);
    assert_non_null(strstr(ei.message, "libnvidia-ml.so.1"));
    /* a library without the NVML symbols */
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_nvml_collect("libm.so.6", &rs, &ei), ERR_UNAVAILABLE);
    assert_true(strncmp(ei.message, "NVML not available: ", 20) == 0);
    assert_non_null(strstr(ei.message, "nvmlInit_v2"));
    assert_int_equal(rs.n, 0);
    inv_readings_release(&rs);
}

static void test_nvml_fake_library(void **state)
{
    struct inv_readings rs;
    struct error_info ei = {0};
    struct inv_reading *r;
    (void)state;

    inv_readings_init(&rs, 0);
    assert_int_equal(inv_nvml_collect(FAKE_NVML_PATH, &rs, &ei), 2);
    r = inv_readings_find(&rs, "GPU-fa0e0000-0000-4000-8000-000000000000", -1);
    assert_non_null(r);
    assert_int_equal(r->source, INV_SRC_NVML);
    assert_int_equal(r->index, 0);
    assert_string_equal(r->model, "NVIDIA H200");
    assert_true(r->fb_total_mib == 143771); /* 150754820096 bytes */
    assert_true(r->fb_used_mib == 10240);
    assert_true(r->fb_free_mib == 143771 - 10240);
    assert_true(r->util_pct == 87);
    assert_true(r->temp_c == 55);
    assert_true(fabs(r->power_w - 512.25) < 1e-9);
    assert_int_equal(r->mig_mode, 0);
    r = inv_readings_find(&rs, "GPU-fa0e0000-0000-4000-8000-000000000001", -1);
    assert_non_null(r);
    assert_string_equal(r->model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(r->mig_mode, 1);
    assert_false(inv_has(r->power_w)); /* NOT_SUPPORTED */
    /* its two MIG devices, keyed by GPU instance id (slots 0 and 2) */
    assert_int_equal(rs.n, 4);
    r = inv_readings_find(&rs, "GPU-fa0e0000-0000-4000-8000-000000000001", 1);
    assert_non_null(r);
    assert_string_equal(r->mig_uuid, "MIG-fa0e0000-0000-4000-8000-00000000a001");
    assert_string_equal(r->mig_profile, "1g.10gb");
    assert_string_equal(r->model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(r->index, 1);
    assert_int_equal(r->mig_mode, 1);
    assert_true(r->fb_total_mib == 9984); /* 10468982784 bytes */
    r = inv_readings_find(&rs, "GPU-fa0e0000-0000-4000-8000-000000000001", 2);
    assert_non_null(r);
    assert_string_equal(r->mig_uuid, "MIG-fa0e0000-0000-4000-8000-00000000a002");
    assert_string_equal(r->mig_profile, "3g.40gb");
    assert_true(r->fb_total_mib == 40608);
    assert_true(r->fb_used_mib == 1024);
    assert_null(inv_readings_find(&rs, "GPU-fa0e0000-0000-4000-8000-000000000000", 1));
    /* twice: the library is unloaded and loaded again */
    inv_readings_reset(&rs);
    assert_int_equal(inv_nvml_collect(FAKE_NVML_PATH, &rs, &ei), 2);
    assert_int_equal(rs.n, 4);
    inv_readings_release(&rs);
}

/* A driver without the MIG calls: whole GPUs only, MIG mode still read. */
static void test_nvml_without_mig_calls(void **state)
{
    struct inv_readings rs;
    struct error_info ei = {0};
    struct inv_reading *r;
    (void)state;

    inv_readings_init(&rs, 0);
    assert_int_equal(inv_nvml_collect(FAKE_NVML_OLD_PATH, &rs, &ei), 2);
    assert_int_equal(rs.n, 2);
    r = inv_readings_find(&rs, "GPU-fa0e0000-0000-4000-8000-000000000001", -1);
    assert_non_null(r);
    assert_int_equal(r->mig_mode, 1);
    inv_readings_release(&rs);
}

static const char smi_list[] =
    "GPU 0: NVIDIA H200 (UUID: GPU-5c0ffee0-1111-2222-3333-444455556666)\n"
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0d15c000-0000-4000-8000-000000000001)\r\n"
    "  MIG 1g.10gb     Device  0: (UUID: MIG-0d15c000-0000-4000-8000-00000000b001)\n"
    "\n"
    "  MIG 3g.40gb     Device  1: (UUID: MIG-0d15c000-0000-4000-8000-00000000b002)\n";

static void test_smi_list_parse(void **state)
{
    struct inv_readings rs;
    struct error_info ei = {0};
    struct inv_reading *r;
    (void)state;

    inv_readings_init(&rs, 0);
    assert_int_equal(inv_smi_list_parse(smi_list, strlen(smi_list), &rs, &ei), 2);
    assert_int_equal(rs.n, 4);
    r = inv_readings_find(&rs, "GPU-0d15c000-0000-4000-8000-000000000001", -1);
    assert_non_null(r);
    assert_int_equal(r->index, 1);
    assert_string_equal(r->model, "NVIDIA H100 80GB HBM3");
    r = inv_readings_find(&rs, "GPU-0d15c000-0000-4000-8000-000000000001", 1);
    assert_non_null(r);
    assert_string_equal(r->mig_uuid, "MIG-0d15c000-0000-4000-8000-00000000b002");
    assert_string_equal(r->mig_profile, "3g.40gb");
    assert_string_equal(r->model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(r->index, 1);
    assert_int_equal(r->mig_mode, 1);
    assert_true(r->fb_total_mib == 40960);
    assert_int_equal(r->source, INV_SRC_SMI);
    assert_int_equal(inv_smi_list_parse("", 0, &rs, &ei), 0);
    inv_readings_release(&rs);
}

static void expect_list_error(const char *text, const char *message)
{
    struct inv_readings rs;
    struct error_info ei = {0};
    inv_readings_init(&rs, 0);
    assert_int_equal(inv_smi_list_parse(text, strlen(text), &rs, &ei), ERR_INVALID);
    if (strcmp(ei.message, message) != 0)
        fail_msg("'%s': got '%s', want '%s'", text, ei.message, message);
    inv_readings_release(&rs);
}

static void test_smi_list_malformed(void **state)
{
    (void)state;
    expect_list_error("  MIG 1g.10gb Device 0: (UUID: MIG-a)\n",
                      "line 1: MIG device before any GPU");
    expect_list_error("GPU x: NVIDIA H200 (UUID: GPU-a)\n", "line 1: no GPU number");
    expect_list_error("GPU 0: NVIDIA H200\n", "line 1: no usable GPU UUID");
    expect_list_error("GPU 0: NVIDIA H200 (UUID: MIG-a)\n", "line 1: no usable GPU UUID");
    expect_list_error("GPU 0: NVIDIA H200 (UUID: GPU-a\n", "line 1: no usable GPU UUID");
    expect_list_error("GPU 0: H (UUID: GPU-a)\n  MIG big Device 0: (UUID: MIG-b)\n",
                      "line 2: bad MIG profile 'big'");
    expect_list_error("GPU 0: H (UUID: GPU-a)\n  MIG 1g.10gb Thing 0: (UUID: MIG-b)\n",
                      "line 2: no MIG device number");
    expect_list_error("GPU 0: H (UUID: GPU-a)\n  MIG 1g.10gb Device x: (UUID: MIG-b)\n",
                      "line 2: no MIG device number");
    expect_list_error("GPU 0: H (UUID: GPU-a)\n  MIG 1g.10gb Device 0: (UUID: GPU-b)\n",
                      "line 2: no usable MIG UUID");
    expect_list_error("GPU 0: H (UUID: GPU-a)\n  MIG 1g.10gb Device 0: (UUID: MIG-b c)\n",
                      "line 2: no usable MIG UUID");
    expect_list_error("GPU 0: H (UUID: GPU-a)\nNo devices were found\n",
                      "line 2: neither a GPU nor a MIG device line");
}

/* MIG on in the query: the collector lists devices (-L) too, and a failing -L fails it. */
static void test_smi_collect_mig(void **state)
{
    char script[2048];
    struct inv_readings rs;
    struct error_info ei = {0};
    const char *row = "1, GPU-0d15c000-0000-4000-8000-000000000001, NVIDIA H100 80GB HBM3, "
                      "00000000:2A:00.0, 81559, 0, [N/A], 33, 69.8, Enabled";
    (void)state;

    snprintf(script, sizeof(script),
             "if [ \"$1\" = -L ]; then printf '%%s' '%s'; exit 0; fi\n"
             "echo '%s'\n",
             smi_list, row);
    write_script("nvidia-smi-mig", script);
    inv_readings_init(&rs, 0);
    assert_int_equal(inv_smi_collect("nvidia-smi-mig", 10000, &rs, &ei), 1);
    assert_non_null(inv_readings_find(&rs, "GPU-0d15c000-0000-4000-8000-000000000001", 0));
    assert_non_null(inv_readings_find(&rs, "GPU-0d15c000-0000-4000-8000-000000000001", 1));
    assert_true(
        inv_readings_find(&rs, "GPU-0d15c000-0000-4000-8000-000000000001", -1)->fb_total_mib ==
        81559);
    inv_readings_reset(&rs);
    snprintf(script, sizeof(script), "[ \"$1\" = -L ] && exit 6\necho '%s'\n", row);
    write_script("nvidia-smi-mig", script);
    assert_int_equal(inv_smi_collect("nvidia-smi-mig", 10000, &rs, &ei), ERR_UNAVAILABLE);
    inv_readings_release(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smi_parse),
        cmocka_unit_test(test_smi_malformed),
        cmocka_unit_test(test_smi_collect_fake_program),
        cmocka_unit_test(test_run_command_failures),
        cmocka_unit_test(test_nvml_absent),
        cmocka_unit_test(test_nvml_fake_library),
        cmocka_unit_test(test_nvml_without_mig_calls),
        cmocka_unit_test(test_smi_list_parse),
        cmocka_unit_test(test_smi_list_malformed),
        cmocka_unit_test(test_smi_collect_mig),
        cmocka_unit_test(test_collector_source_counts_last_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
