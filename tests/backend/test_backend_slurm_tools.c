/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the slurm backend's use of Slurm's tools, against fake tools
 * (shell scripts in a bin_dir of the test's own) rather than a real Slurm
 * (tests/slurm/ has those): what it runs, with which arguments, and how it
 * takes a tool that hangs. Time is the wall clock, passed as now_ms.
 */
#include "base/common.h"

#include <poll.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "backend/backend.h"
#include "backend/slurm.h"
#include "base/alloc.h"
#include "base/timeutil.h"

#define WAIT_LIMIT_MS 30000

struct fixture {
    char dir[64];
    char *bin, *logs, *prefix;
};

static void write_tool(const struct fixture *f, const char *name, const char *body)
{
    char *path = xasprintf("%s/%s", f->bin, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n%s", body);
    fclose(fp);
    assert_int_equal(chmod(path, 0755), 0);
    free(path);
}

/*
 * sbatch answers job id 1000 + the workload's id (after sleep_s seconds);
 * squeue says every job asked about is PENDING; scancel logs how many ids
 * it was given, and the ids.
 */
static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    char *squeue;

    snprintf(f->dir, sizeof(f->dir), "/tmp/test_slurm_tools.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->bin = xasprintf("%s/bin", f->dir);
    f->logs = xasprintf("%s/logs", f->dir);
    assert_int_equal(mkdir(f->bin, 0700), 0);
    f->prefix = backend_instance_prefix(f->logs);
    write_tool(f, "sbatch",
               "cat > /dev/null\n"
               "[ -f \"${0%/*}/sbatch.sleep\" ] && exec sleep \"$(cat \"${0%/*}/sbatch.sleep\")\"\n"
               "echo $((1000 + GPUAAS_WORKLOAD_ID))\n");
    squeue = xasprintf("ids=\n"
                       "while [ $# -gt 0 ]; do [ \"$1\" = --jobs ] && ids=$2; shift; done\n"
                       "for id in $(echo \"$ids\" | tr , ' '); do\n"
                       "  echo \"$id|PENDING|N/A|N/A|N/A||%s$((id - 1000))|\"\n"
                       "done\n",
                       f->prefix);
    write_tool(f, "squeue", squeue);
    free(squeue);
    write_tool(f, "scancel", "echo \"$# $*\" >> \"${0%/*}/scancel.log\"\n");
    write_tool(f, "sinfo", "echo '{\"nodes\": []}'\n");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char *cmd = xasprintf("rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f->bin);
    free(f->logs);
    free(f->prefix);
    free(f);
    return 0;
}

static struct backend *slurm_new(const struct fixture *f, int64_t command_timeout_ms)
{
    struct slurm_options o = {.log_dir = f->logs,
                              .bin_dir = f->bin,
                              .jobcomp_path = "none",
                              .poll_interval_ms = 10,
                              .command_timeout_ms = command_timeout_ms};
    struct error_info ei = {0};
    struct backend *b = backend_slurm_new(1, &o, &ei);
    if (!b)
        fail_msg("backend_slurm_new: %s", ei.message);
    return b;
}

static struct backend_device gpu = {.gpu_id = 1, .milli = 1000};
static struct backend_replica one = {
    .replica = 0, .node_id = 1, .node_name = "n1", .devices = &gpu, .n_devices = 1};

static void launch(struct backend *b, int64_t id)
{
    struct backend_launch l = {.workload_id = id,
                               .project_id = 1,
                               .command = "true",
                               .cpu_milli = 1000,
                               .duration_ms = -1,
                               .max_runtime_ms = -1,
                               .replicas = &one,
                               .n_replicas = 1};
    struct error_info ei = {0};
    if (b->ops->launch(b, &l, time_now_ms(), &ei) < 0)
        fail_msg("launch %" PRId64 ": %s", id, ei.message);
}

/* Lines of the scancel log, into lines (at most max); returns how many. */
static size_t scancel_log(const struct fixture *f, char lines[][2048], size_t max)
{
    char *path = xasprintf("%s/bin/scancel.log", f->dir);
    FILE *fp = fopen(path, "r");
    size_t n = 0;

    free(path);
    if (!fp)
        return 0;
    while (n < max && fgets(lines[n], sizeof(lines[n]), fp))
        n++;
    fclose(fp);
    return n;
}

/*
 * Stopping many jobs Slurm has not started cancels them in one scancel of
 * up to 128 ids. The old runner copied a tool's arguments into 64 slots:
 * 100 ids overran them.
 */
static void test_many_cancels_in_one_scancel(void **state)
{
    struct fixture *f = *state;
    struct backend *b = slurm_new(f, 10000);
    struct backend_event ev[8];
    char lines[4][2048];
    int64_t give_up = time_now_ms() + WAIT_LIMIT_MS;
    size_t submitted = 0;

    for (int64_t id = 1; id <= 100; id++)
        launch(b, id);
    while (submitted < 100) { /* sbatch answers, 4 at a time */
        struct slurm_job_info info;
        assert_true(time_now_ms() < give_up);
        assert_int_equal(b->ops->poll(b, time_now_ms(), ev, ARRAY_SIZE(ev)), 0);
        submitted = 0;
        for (int64_t id = 1; id <= 100; id++) {
            assert_int_equal(backend_slurm_job(b, id, &info), 0);
            submitted += info.job_id == 1000 + id;
        }
        poll(NULL, 0, 1);
    }
    for (int64_t id = 1; id <= 100; id++)
        assert_int_equal(b->ops->stop(b, id, 1000, time_now_ms()), 0);
    assert_int_equal(b->ops->next_event_ms(b), 0); /* the cancels are due at once */
    assert_int_equal(b->ops->poll(b, time_now_ms(), ev, ARRAY_SIZE(ev)), 0);

    assert_int_equal(scancel_log(f, lines, ARRAY_SIZE(lines)), 1);
    assert_int_equal(strtol(lines[0], NULL, 10), 100);
    assert_non_null(strstr(lines[0], " 1001 1002 "));
    assert_non_null(strstr(lines[0], " 1099 1100\n"));
    b->ops->free(b);
}

/* An sbatch past command_timeout_ms is killed, its job cancelled by name, the launch failed. */
static void test_sbatch_timeout(void **state)
{
    struct fixture *f = *state;
    struct backend *b;
    struct backend_event ev[2];
    char lines[4][2048], *path = xasprintf("%s/sbatch.sleep", f->bin), *name;
    int64_t give_up = time_now_ms() + WAIT_LIMIT_MS;
    FILE *fp = fopen(path, "w");
    size_t n = 0;

    assert_non_null(fp);
    fputs("30\n", fp);
    fclose(fp);
    free(path);
    b = slurm_new(f, 200);
    launch(b, 5);
    while (n == 0) {
        assert_true(time_now_ms() < give_up);
        n = b->ops->poll(b, time_now_ms(), ev, ARRAY_SIZE(ev));
        poll(NULL, 0, 5);
    }
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].workload_id, 5);
    assert_int_equal(ev[0].how, BACKEND_NOT_STARTED);
    assert_string_equal(ev[0].message, "'sbatch' timed out after 200 ms");
    assert_int_equal(scancel_log(f, lines, ARRAY_SIZE(lines)), 1);
    name = xasprintf("1 --name=%s5\n", f->prefix);
    assert_string_equal(lines[0], name);
    free(name);
    b->ops->free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_many_cancels_in_one_scancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sbatch_timeout, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
