/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the slurm backend (src/backend/slurm.c) against a real Slurm
 * (Debian's slurm-wlm 22.05) that with-slurm.sh stands up on 127.0.0.1: four
 * nodes with 8 fake h100 GPUs each. Nothing is mocked: jobs are submitted
 * with sbatch, run by slurmd, observed with squeue and signalled with
 * scancel. Each test uses nodes of its own so that Slurm's GPU indices are
 * predictable. Time is the wall clock, passed as now_ms; every wait gives up
 * after WAIT_LIMIT_MS.
 */
#include "base/common.h"

#include <fcntl.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "backend/backend.h"
#include "backend/slurm.h"
#include "base/alloc.h"

#define WAIT_LIMIT_MS 30000
#define MAX_SEEN 64

static char g_dir[256];  /* the test cluster's directory (SLURM_TEST_DIR) */
static char g_logs[300]; /* the backend's log_dir, inside it */
static char g_conf[300];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static struct backend *slurm_with(int64_t timeout_grace_ms, int64_t max_submits)
{
    struct slurm_options o = {.log_dir = g_logs,
                              .conf = g_conf,
                              .poll_interval_ms = 100,
                              .max_submits = max_submits,
                              .command_timeout_ms = 10000,
                              .timeout_grace_ms = timeout_grace_ms};
    struct error_info ei = {0};
    struct backend *b = backend_slurm_new(7, &o, &ei);
    if (!b)
        fail_msg("backend_slurm_new: %s", ei.message);
    assert_string_equal(b->ops->name, "slurm");
    assert_int_equal(b->cluster_id, 7);
    return b;
}

static struct backend *slurm(int64_t timeout_grace_ms)
{
    return slurm_with(timeout_grace_ms, 0);
}

static struct backend_device gpus[8];

static struct backend_replica on(const char *node, size_t n_gpus, int32_t replica)
{
    return (struct backend_replica){
        .replica = replica, .node_id = 1, .node_name = node, .devices = gpus, .n_devices = n_gpus};
}

static struct backend_launch work(int64_t id, const char *command,
                                  const struct backend_replica *reps, size_t n_reps,
                                  int64_t max_runtime_ms)
{
    return (struct backend_launch){.workload_id = id,
                                   .project_id = 1,
                                   .command = command,
                                   .image = "",
                                   .cpu_milli = 1000,
                                   .mem_mib = 256,
                                   .duration_ms = -1,
                                   .max_runtime_ms = max_runtime_ms,
                                   .replicas = reps,
                                   .n_replicas = n_reps};
}

static void launch_ok(struct backend *b, const struct backend_launch *l, int64_t now)
{
    struct error_info ei = {0};
    if (b->ops->launch(b, l, now, &ei) < 0)
        fail_msg("launch %" PRId64 ": %s", l->workload_id, ei.message);
}

/* Events polled but not yet asked for, so that tests may wait for them in any order. */
static struct backend_event g_seen[MAX_SEEN];
static size_t g_n_seen;

/* Polls until the workload's end is reported; fails after WAIT_LIMIT_MS. */
static struct backend_event wait_end(struct backend *b, int64_t id)
{
    int64_t t0 = now_ms(), give_up = t0 + WAIT_LIMIT_MS;
    for (;;) {
        struct backend_event evs[16];
        int64_t now = now_ms();
        size_t n = b->ops->poll(b, now, evs, ARRAY_SIZE(evs));
        for (size_t i = 0; i < n; i++) {
            assert_true(evs[i].at_ms <= now);
            assert_true(i == 0 || evs[i - 1].at_ms <= evs[i].at_ms);
            assert_true(g_n_seen < MAX_SEEN);
            g_seen[g_n_seen++] = evs[i];
        }
        for (size_t i = 0; i < g_n_seen; i++) {
            if (g_seen[i].workload_id == id) {
                struct backend_event ev = g_seen[i];
                memmove(&g_seen[i], &g_seen[i + 1], (g_n_seen - i - 1) * sizeof(*g_seen));
                g_n_seen--;
                print_message("workload %" PRId64 " ended (how %d, exit %d) after %" PRId64
                              " ms of waiting\n",
                              id, ev.how, ev.exit_code, now_ms() - t0);
                return ev;
            }
        }
        if (now > give_up)
            fail_msg("workload %" PRId64 " did not end within %d ms", id, WAIT_LIMIT_MS);
        nap(20);
    }
}

/* Polls until Slurm runs the workload's job; returns the job as last seen. */
static struct slurm_job_info wait_running(struct backend *b, int64_t id)
{
    int64_t t0 = now_ms(), give_up = t0 + WAIT_LIMIT_MS;
    for (;;) {
        struct backend_event evs[16];
        struct slurm_job_info info;
        size_t n = b->ops->poll(b, now_ms(), evs, ARRAY_SIZE(evs));
        for (size_t i = 0; i < n; i++) {
            assert_true(g_n_seen < MAX_SEEN);
            g_seen[g_n_seen++] = evs[i];
        }
        assert_int_equal(backend_slurm_job(b, id, &info), 0);
        if (strcmp(info.state, "RUNNING") == 0) {
            print_message("workload %" PRId64 " running after %" PRId64 " ms of waiting\n", id,
                          now_ms() - t0);
            return info;
        }
        if (now_ms() > give_up)
            fail_msg("workload %" PRId64 " not running within %d ms (state '%s')", id,
                     WAIT_LIMIT_MS, info.state);
        nap(20);
    }
}

/* Polls until sbatch has answered for the workload (its job id is known); returns the id. */
static int64_t wait_submitted(struct backend *b, int64_t id)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    for (;;) {
        struct backend_event evs[16];
        struct slurm_job_info info;
        size_t n = b->ops->poll(b, now_ms(), evs, ARRAY_SIZE(evs));
        for (size_t i = 0; i < n; i++) {
            assert_true(g_n_seen < MAX_SEEN);
            g_seen[g_n_seen++] = evs[i];
        }
        assert_int_equal(backend_slurm_job(b, id, &info), 0);
        if (info.job_id > 0)
            return info.job_id;
        if (now_ms() > give_up)
            fail_msg("workload %" PRId64 " not submitted within %d ms", id, WAIT_LIMIT_MS);
        nap(5);
    }
}

/* Waits until a file exists (a job's sign of life); fails after WAIT_LIMIT_MS. */
static void wait_file(const char *path)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    while (access(path, F_OK) != 0) {
        if (now_ms() > give_up)
            fail_msg("'%s' did not appear within %d ms", path, WAIT_LIMIT_MS);
        nap(20);
    }
}

/* The workload's log file, NUL-terminated (caller frees). */
static char *read_log(int64_t id)
{
    char path[400], *buf = xcalloc(1, 65536);
    int fd;
    ssize_t n;
    snprintf(path, sizeof(path), "%s/%" PRId64 ".log", g_logs, id);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        fail_msg("no log file '%s'", path);
    n = read(fd, buf, 65535);
    close(fd);
    assert_true(n >= 0);
    return buf;
}

/*
 * Waits until the workload's log holds needle: the job's shell has reached
 * that point (squeue says RUNNING before slurmstepd has started the shell).
 */
static void wait_log(int64_t id, const char *needle)
{
    char path[400];
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    snprintf(path, sizeof(path), "%s/%" PRId64 ".log", g_logs, id);
    for (;;) {
        if (access(path, F_OK) == 0) {
            char *log = read_log(id);
            bool found = strstr(log, needle) != NULL;
            free(log);
            if (found)
                return;
        }
        if (now_ms() > give_up)
            fail_msg("the log of %" PRId64 " never showed '%s'", id, needle);
        nap(20);
    }
}

/* Whether the backend keeps <log_dir>/<id>.<ext>. */
static bool file_exists(int64_t id, const char *ext)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/%" PRId64 ".%s", g_logs, id, ext);
    return access(path, F_OK) == 0;
}

/* The workload's command never printed text (it has no log when it never ran). */
static void assert_never_printed(int64_t id, const char *text)
{
    char *log;
    if (!file_exists(id, "log"))
        return;
    log = read_log(id);
    assert_null(strstr(log, text));
    free(log);
}

/* Runs a shell command (a Slurm admin command in these tests); fails unless it exits 0. */
static void sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("'%s' failed (%d)", cmd, rc);
}

/*
 * Waits up to seconds until a shell condition (printf-formatted) holds,
 * looking every 0.1 s; fails unless it does.
 */
__attribute__((format(printf, 2, 3))) static void sh_until(int seconds, const char *fmt, ...)
{
    va_list ap;
    char *cond, *cmd;
    va_start(ap, fmt);
    if (vasprintf(&cond, fmt, ap) < 0)
        fail_msg("out of memory");
    va_end(ap);
    cmd = xasprintf("timeout %d sh -c 'until %s; do sleep 0.1; done'", seconds, cond);
    sh(cmd);
    free(cmd);
    free(cond);
}

/* slurmctld again, with a clean state (-c): it knows no job any more, as after MinJobAge. */
static void reset_controller(void)
{
    char *cmd = xasprintf("kill $(cat %s/run/slurmctld.pid) && "
                          "while scontrol ping >/dev/null 2>&1; do sleep 0.1; done && "
                          "%s/bin/slurmctld -c -i -f %s && "
                          "until scontrol ping 2>/dev/null | grep -q UP; do sleep 0.1; done && "
                          "test -z \"$(squeue -h -t all -o %%i)\"",
                          g_dir, g_dir, g_conf);
    sh(cmd);
    free(cmd);
}

/* Creates an empty file (what a job waits for). */
static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- tests ---- */

/* A job on a chosen node with 2 GPUs runs, sees Slurm's devices, and exits with its code. */
static void test_launch_exit_code(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica r = on("node1", 2, 0);
    struct backend_launch l = work(101,
                                   "echo \"cvd=$CUDA_VISIBLE_DEVICES nvd=$NVIDIA_VISIBLE_DEVICES"
                                   " wid=$GPUAAS_WORKLOAD_ID rep=$GPUAAS_REPLICA"
                                   " node=$SLURMD_NODENAME\"; echo 'quote'\\''s ok'; exit 3",
                                   &r, 1, -1);
    struct backend_event ev;
    int64_t t0 = now_ms(), t1;
    char *log;
    (void)state;

    launch_ok(b, &l, t0);
    /* launch() does not wait for sbatch: the state file comes with its answer. */
    assert_true(b->ops->next_event_ms(b) <= t0 + 100);
    wait_submitted(b, 101);
    assert_true(file_exists(101, "slurm"));
    ev = wait_end(b, 101);
    t1 = now_ms();
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 3);
    assert_true(ev.at_ms >= t0 && ev.at_ms <= t1);
    log = read_log(101);
    assert_non_null(strstr(log, "cvd=0,1 nvd=0,1 wid=101 rep=0 node=node1\n"));
    assert_non_null(strstr(log, "quote's ok\n"));
    free(log);
    /* Reported once and forgotten: the state and script files are gone. */
    assert_false(file_exists(101, "slurm"));
    assert_false(file_exists(101, "sbatch"));
    assert_int_equal(backend_slurm_job(b, 101, &(struct slurm_job_info){0}), ERR_NOT_FOUND);
    b->ops->free(b);
}

/*
 * With a run user (the daemon is root here), the job runs as that user and
 * group, and writes its log in the daemon's log directory through a file
 * made for it. A log directory the user cannot reach is refused up front.
 */
static void test_run_as_user(void **state)
{
    struct slurm_options o = {.log_dir = g_logs,
                              .conf = g_conf,
                              .poll_interval_ms = 100,
                              .run_uid = 65534,
                              .run_gid = 65534,
                              .command_timeout_ms = 10000};
    struct error_info ei = {0};
    struct backend_replica r = on("node1", 1, 0);
    struct backend_launch l =
        work(111, "echo \"ids=$(id -u):$(id -g)\"; touch ../escaped; exit 4", &r, 1, -1);
    struct backend_event ev;
    struct backend *b;
    struct stat st;
    char path[400];
    char *log;
    (void)state;

    /* The test cluster's directory is root's 0700: the user cannot pass it. */
    assert_int_equal(chmod(g_dir, 0700), 0);
    assert_null(backend_slurm_new(7, &o, &ei));
    assert_int_equal(ei.code, ERR_INVALID);
    assert_non_null(strstr(ei.message, "user id 65534 cannot reach"));
    assert_non_null(strstr(ei.message, g_dir));

    assert_int_equal(chmod(g_dir, 0711), 0);
    ei = (struct error_info){0};
    b = backend_slurm_new(7, &o, &ei);
    if (!b)
        fail_msg("backend_slurm_new: %s", ei.message);
    /* The log directory the backend made: passable, not listable or writable. */
    assert_int_equal(stat(g_logs, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0711);

    launch_ok(b, &l, now_ms());
    ev = wait_end(b, 111);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 4);
    log = read_log(111);
    assert_non_null(strstr(log, "ids=65534:65534\n"));
    /* Its working directory is the log directory, which it cannot write. */
    assert_non_null(strstr(log, "Permission denied"));
    free(log);
    snprintf(path, sizeof(path), "%s/111.log", g_logs);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(path, sizeof(path), "%s/escaped", g_dir);
    assert_int_not_equal(access(path, F_OK), 0);
    b->ops->free(b);
}

/* Polls until the backend hands out the GPUs Slurm gave the workload's job (one node). */
static struct slurm_job_devices wait_devices(struct backend *b, int64_t id)
{
    int64_t t0 = now_ms(), give_up = t0 + WAIT_LIMIT_MS;
    for (;;) {
        struct backend_event evs[16];
        struct slurm_job_devices devs[8];
        size_t n = b->ops->poll(b, now_ms(), evs, ARRAY_SIZE(evs)), n_devs;
        for (size_t i = 0; i < n; i++) {
            assert_true(g_n_seen < MAX_SEEN);
            g_seen[g_n_seen++] = evs[i];
        }
        n_devs = backend_slurm_take_devices(b, devs, ARRAY_SIZE(devs));
        for (size_t i = 0; i < n_devs; i++) {
            if (devs[i].workload_id == id) {
                print_message("workload %" PRId64 " devices after %" PRId64 " ms\n", id,
                              now_ms() - t0);
                return devs[i];
            }
        }
        if (now_ms() > give_up)
            fail_msg("no devices for workload %" PRId64 " within %d ms", id, WAIT_LIMIT_MS);
        nap(20);
    }
}

/*
 * CUDA_VISIBLE_DEVICES is what Slurm assigned: the next job on a node whose
 * GPUs 0-1 are taken gets 2,3,4, and the backend records it. Also measures
 * submit -> running as this backend sees it.
 */
static void test_devices_from_slurm(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica r2 = on("node2", 2, 0), r3 = on("node2", 3, 0);
    char hold[400], cmd[600];
    struct backend_launch first, second;
    struct slurm_job_info info;
    struct slurm_job_devices devs;
    struct backend_event ev;
    int64_t t0;
    char *log;
    (void)state;

    snprintf(hold, sizeof(hold), "%s/hold-201", g_dir);
    snprintf(cmd, sizeof(cmd), "while [ ! -e %s ]; do sleep 0.05; done", hold);
    first = work(201, cmd, &r2, 1, -1);
    t0 = now_ms();
    launch_ok(b, &first, t0);
    info = wait_running(b, 201);
    print_message("submit -> running (seen by poll): %" PRId64 " ms\n", now_ms() - t0);
    assert_string_equal(info.nodes, "node2");
    assert_string_equal(info.gres, "gpu:h100:2(IDX:0-1)");
    assert_true(info.job_id > 0);
    /* Which GPUs, per node, for the engine: once the job has run a second. */
    devs = wait_devices(b, 201);
    assert_true(now_ms() - t0 >= 1000);
    assert_string_equal(devs.node, "node2");
    assert_int_equal(devs.job_id, info.job_id);
    assert_int_equal(devs.n_indices, 2);
    assert_int_equal(devs.indices[0], 0);
    assert_int_equal(devs.indices[1], 1);

    second = work(202, "echo cvd=$CUDA_VISIBLE_DEVICES; sleep 1", &r3, 1, -1);
    launch_ok(b, &second, now_ms());
    info = wait_running(b, 202);
    assert_string_equal(info.gres, "gpu:h100:3(IDX:2-4)");
    ev = wait_end(b, 202);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    log = read_log(202);
    assert_string_equal(log, "cvd=2,3,4\n");
    free(log);

    touch(hold);
    ev = wait_end(b, 201);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    /* Each job once: 201's are not handed out again (202's may come: it ran a second). */
    {
        struct slurm_job_devices more[8];
        size_t n_more = backend_slurm_take_devices(b, more, ARRAY_SIZE(more));
        for (size_t i = 0; i < n_more; i++) {
            assert_int_equal(more[i].workload_id, 202);
            assert_int_equal(more[i].n_indices, 3);
            assert_int_equal(more[i].indices[0], 2);
        }
    }
    b->ops->free(b);
}

/*
 * stop: a job that exits on SIGTERM ends within the grace with its own
 * status; one that ignores SIGTERM is killed when the grace is over.
 */
static void test_stop_grace(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica r = on("node3", 1, 0);
    struct backend_launch polite = work(
        301, "trap 'echo term; exit 5' TERM; echo up; while :; do sleep 0.05; done", &r, 1, -1);
    struct backend_launch stubborn =
        work(302, "trap 'echo ignored' TERM; echo up; while :; do sleep 0.05; done", &r, 1, -1);
    struct backend_event ev;
    int64_t stop_at;
    char *log;
    (void)state;

    launch_ok(b, &polite, now_ms());
    launch_ok(b, &stubborn, now_ms());
    wait_running(b, 301);
    wait_running(b, 302);
    wait_log(301, "up\n"); /* their traps are set */
    wait_log(302, "up\n");

    stop_at = now_ms();
    assert_int_equal(b->ops->stop(b, 301, 10000, stop_at), 0);
    ev = wait_end(b, 301);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, 5);
    assert_true(now_ms() - stop_at < 5000); /* well within the grace */
    log = read_log(301);
    assert_non_null(strstr(log, "term\n"));
    free(log);

    stop_at = now_ms();
    assert_int_equal(b->ops->stop(b, 302, 1500, stop_at), 0);
    assert_true(b->ops->next_event_ms(b) <= stop_at + 1500);
    ev = wait_end(b, 302);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -9);
    /* Killed at the grace: Slurm's end time (whole seconds) or when it was last seen alive. */
    assert_true(ev.at_ms >= stop_at + 500);
    log = read_log(302);
    assert_non_null(strstr(log, "ignored\n"));
    free(log);

    /* Stopping what has ended, or what was never known, is a no-op. */
    assert_int_equal(b->ops->stop(b, 302, 0, now_ms()), 0);
    assert_int_equal(b->ops->stop(b, 399, 0, now_ms()), 0);
    b->ops->free(b);
}

/* A job still pending when it is stopped is cancelled at once (scancel --signal would wait). */
static void test_stop_pending(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica r = on("node3", 8, 0);
    struct backend_launch l = work(311, "sleep 30", &r, 1, -1),
                          l2 = work(312, "sleep 30", &r, 1, -1);
    struct backend_event ev;
    int64_t t0;
    (void)state;

    launch_ok(b, &l, now_ms());
    wait_running(b, 311);
    launch_ok(b, &l2, now_ms()); /* all 8 GPUs of node3 are taken: it waits */
    t0 = now_ms();
    assert_int_equal(b->ops->stop(b, 312, 60000, t0), 0);
    assert_true(now_ms() - t0 < 3000);
    ev = wait_end(b, 312);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -1); /* cancelled before it ran: no exit status */
    assert_int_equal(b->ops->stop(b, 311, 0, now_ms()), 0);
    ev = wait_end(b, 311);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_true(ev.exit_code < 0);
    b->ops->free(b);
}

/* Max runtime: SIGTERM at the deadline, SIGKILL after the backend's timeout grace. */
static void test_max_runtime(void **state)
{
    struct backend *b = slurm(2000);
    struct backend_replica r = on("node4", 1, 0);
    struct backend_launch l =
        work(401, "trap 'echo timed out' TERM; echo up; while :; do sleep 0.05; done", &r, 1, 2500);
    struct slurm_job_info info;
    struct backend_event ev;
    int64_t t0 = now_ms();
    char *log;
    (void)state;

    launch_ok(b, &l, t0);
    info = wait_running(b, 401);
    wait_log(401, "up\n"); /* its trap is set; the deadline only acts in poll() */
    /* It counts from Slurm's start (whole seconds), not from the queue. */
    assert_true(info.start_ms > 0);
    assert_true(b->ops->next_event_ms(b) <= (info.start_ms > t0 ? info.start_ms : t0) + 2500);
    ev = wait_end(b, 401);
    assert_int_equal(ev.how, BACKEND_TIMEOUT);
    assert_int_equal(ev.exit_code, -9);
    assert_true(ev.at_ms >= info.start_ms + 2500); /* TERM at 2.5 s, KILL 2 s later */
    log = read_log(401);
    assert_non_null(strstr(log, "timed out\n"));
    free(log);
    b->ops->free(b);
}

/*
 * A restarted daemon (a new backend reading the state files) finds a job
 * still running, and learns that one ended meanwhile, with Slurm's end time
 * and exit code. Work it has no state file for is lost.
 */
static void test_adopt(void **state)
{
    struct backend *b = slurm(0), *b2;
    struct backend_replica r = on("node1", 1, 0);
    char hold[400], done[400], run_cmd[600], end_cmd[600];
    struct backend_launch running, ended, unknown;
    struct error_info ei = {0};
    struct slurm_job_info info;
    struct backend_event ev;
    int64_t t0 = now_ms(), ended_seen, adopt_at, job_501;
    (void)state;

    snprintf(hold, sizeof(hold), "%s/hold-501", g_dir);
    snprintf(done, sizeof(done), "%s/done-502", g_dir);
    snprintf(run_cmd, sizeof(run_cmd), "while [ ! -e %s ]; do sleep 0.05; done; exit 6", hold);
    snprintf(end_cmd, sizeof(end_cmd), "sleep 1; touch %s; exit 4", done);
    running = work(501, run_cmd, &r, 1, -1);
    ended = work(502, end_cmd, &r, 1, -1);
    unknown = work(503, "true", &r, 1, -1);
    launch_ok(b, &running, t0);
    launch_ok(b, &ended, t0);
    job_501 = wait_running(b, 501).job_id;
    wait_running(b, 502);
    b->ops->free(b); /* the daemon goes away; its jobs run on */

    wait_file(done);
    ended_seen = now_ms();
    nap(2000); /* down a while longer: the end must not be dated at the adopt */

    b2 = slurm(0);
    adopt_at = now_ms();
    assert_int_equal(b2->ops->adopt(b2, &running, t0, adopt_at, &ei), 0);
    assert_int_equal(b2->ops->adopt(b2, &ended, t0, adopt_at, &ei), 0);
    assert_int_equal(b2->ops->adopt(b2, &unknown, t0, adopt_at, &ei), 0);
    assert_int_equal(b2->ops->adopt(b2, &running, t0, adopt_at, &ei), ERR_CONFLICT);

    ev = wait_end(b2, 503);
    assert_int_equal(ev.how, BACKEND_LOST);
    assert_int_equal(ev.at_ms, adopt_at);
    ev = wait_end(b2, 502);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 4);
    /* Slurm's end time (whole seconds): when the job touched the file, not the adopt. */
    if (ev.at_ms < ended_seen - 2000 || ev.at_ms > ended_seen + 1500 || ev.at_ms > adopt_at - 400)
        fail_msg("ended at %" PRId64 ": the job was seen to end at %" PRId64
                 ", adopted at %" PRId64,
                 ev.at_ms, ended_seen, adopt_at);

    info = wait_running(b2, 501);
    assert_string_equal(info.nodes, "node1");

    /*
     * A daemon that died between sbatch's answer and the state file: the
     * job is found again by its name (gpuaas-<id>).
     */
    b2->ops->free(b2);
    snprintf(run_cmd, sizeof(run_cmd), "%s/501.slurm", g_logs);
    assert_int_equal(unlink(run_cmd), 0);
    b2 = slurm(0);
    adopt_at = now_ms();
    assert_int_equal(b2->ops->adopt(b2, &running, t0, adopt_at, &ei), 0);
    info = wait_running(b2, 501);
    assert_int_equal(info.job_id, job_501);
    assert_true(file_exists(501, "slurm")); /* written again */
    touch(hold);
    ev = wait_end(b2, 501);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 6);
    b2->ops->free(b2);
}

/* Two replicas on two nodes: one srun task each, with its replica number and devices. */
static void test_gang(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica reps[2] = {on("node4", 2, 0), on("node2", 2, 1)};
    struct backend_launch l = work(601,
                                   "echo \"rep=$GPUAAS_REPLICA node=$SLURMD_NODENAME n=$(echo "
                                   "$CUDA_VISIBLE_DEVICES | tr , ' ' | wc -w)\"",
                                   reps, 2, -1);
    struct backend_event ev;
    char *log;
    (void)state;

    launch_ok(b, &l, now_ms());
    ev = wait_end(b, 601);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    log = read_log(601);
    assert_non_null(strstr(log, "rep=0 node=node4 n=2\n"));
    assert_non_null(strstr(log, "rep=1 node=node2 n=2\n"));
    free(log);
    b->ops->free(b);
}

/*
 * Replicas the scheduler put on one node share that node's task: node1 holds
 * replicas 0 and 1 (a GPU each), node2 replica 2 (two GPUs), so each node
 * gives two. Each replica sees only its own GPUs; the first failure is the
 * job's exit; a replica that traps SIGTERM keeps running through a stop's
 * grace. Nodes with different totals are refused.
 */
static void test_gang_shared_node(void **state)
{
    struct backend *b = slurm(2000);
    struct backend_replica reps[3] = {on("node1", 1, 0), on("node1", 1, 1), on("node2", 2, 2)};
    struct backend_replica uneven[2] = {on("node3", 2, 0), on("node4", 1, 1)};
    struct backend_launch l = work(611,
                                   "echo \"rep=$GPUAAS_REPLICA node=$SLURMD_NODENAME"
                                   " cvd=$CUDA_VISIBLE_DEVICES nvd=$NVIDIA_VISIBLE_DEVICES\";"
                                   " [ \"$GPUAAS_REPLICA\" != 1 ] || exit 7",
                                   reps, 3, -1);
    struct backend_event ev;
    struct error_info ei = {0};
    char path[400];
    char *log;
    (void)state;

    launch_ok(b, &l, now_ms());
    ev = wait_end(b, 611);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 7);
    log = read_log(611);
    assert_non_null(strstr(log, "rep=0 node=node1 cvd=0 nvd=0\n"));
    assert_non_null(strstr(log, "rep=1 node=node1 cvd=1 nvd=1\n"));
    assert_non_null(strstr(log, "rep=2 node=node2 cvd=0,1 nvd=0,1\n"));
    free(log);

    /*
     * Stopped: both replicas on node1 get SIGTERM and trap it, replica 1
     * ending last with 5: the node's task waits for both (it outlives the
     * signal too) and the job ends with 5, within the grace.
     */
    snprintf(path, sizeof(path), "%s/612.up", g_logs);
    l = work(612, "", reps, 2, -1);
    l.command = xasprintf("r=$GPUAAS_REPLICA; trap 'echo r$r-term; sleep 0.$((r * 3 + 2));"
                          " echo r$r-done; exit $((r * 5))' TERM; touch %s.$r;"
                          " while :; do sleep 0.05; done",
                          path);
    launch_ok(b, &l, now_ms());
    {
        char p0[420], p1[420];
        snprintf(p0, sizeof(p0), "%s.0", path);
        snprintf(p1, sizeof(p1), "%s.1", path);
        wait_file(p0);
        wait_file(p1);
    }
    assert_int_equal(b->ops->stop(b, 612, 5000, now_ms()), 0);
    ev = wait_end(b, 612);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, 5);
    log = read_log(612);
    assert_non_null(strstr(log, "r0-done\n"));
    assert_non_null(strstr(log, "r1-done\n"));
    free(log);
    free((char *)l.command);

    l = work(613, "true", uneven, 2, -1);
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), ERR_INVALID);
    assert_non_null(strstr(ei.message, "different numbers of GPUs (2 on node3, 1 on node4)"));
    assert_false(file_exists(613, "slurm"));
    b->ops->free(b);
}

/*
 * A preemption of work with work queued ahead behind it (the engine takes
 * the follower back, then signals the running one): the follower's cancel
 * reaches Slurm before the running job's signal, so Slurm never starts it
 * when the running job ends on that signal, even with no poll() between.
 */
static void test_stop_follower_first(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica r = on("node2", 8, 0);
    struct backend_launch head =
                              work(801, "trap 'exit 0' TERM; echo up; while :; do sleep 0.05; done",
                                   &r, 1, -1),
                          next = work(802, "echo follower-ran", &r, 1, -1);
    struct error_info ei = {0};
    struct backend_event ev;
    int64_t head_job, next_job;
    char cmd[300];
    (void)state;

    launch_ok(b, &head, now_ms());
    head_job = wait_running(b, 801).job_id;
    wait_log(801, "up\n");
    if (backend_slurm_launch_after(b, &next, 801, now_ms(), &ei) < 0)
        fail_msg("launch_after: %s", ei.message);
    next_job = wait_submitted(b, 802);

    assert_int_equal(b->ops->stop(b, 802, 0, now_ms()), 0);
    assert_int_equal(b->ops->stop(b, 801, 10000, now_ms()), 0);
    /* The head ends on its TERM; then its follower must already be cancelled. */
    sh_until(20, "squeue -h -t all -j %" PRId64 " -o %%T | grep -qE \"COMPLETED|CANCELLED|FAILED\"",
             head_job);
    snprintf(cmd, sizeof(cmd), "test \"$(squeue -h -t all -j %" PRId64 " -o %%T)\" = CANCELLED",
             next_job);
    sh(cmd);

    ev = wait_end(b, 801);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, 0);
    ev = wait_end(b, 802);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -1); /* cancelled before it ran */
    assert_never_printed(802, "follower-ran");
    b->ops->free(b);
}

/*
 * A stop of a pending job while the controller is down: the scancel that
 * did not reach Slurm is kept, tried again at the query's pace (no busy
 * loop), and cancels the job once slurmctld is back, before it can start.
 */
static void test_cancel_retried(void **state)
{
    /* Slurm's commands retry for 10 s without a controller: give up sooner. */
    struct slurm_options o = {
        .log_dir = g_logs, .conf = g_conf, .poll_interval_ms = 100, .command_timeout_ms = 2500};
    struct backend *b = backend_slurm_new(7, &o, NULL);
    struct backend_replica r = on("node2", 8, 0);
    struct backend_launch holder = work(921, "sleep 60", &r, 1, -1),
                          waiting = work(922, "echo waiting-ran", &r, 1, -1);
    struct backend_event ev;
    struct slurm_job_info info;
    int64_t t, job;
    char cmd[1200];
    (void)state;

    assert_non_null(b);
    launch_ok(b, &holder, now_ms());
    wait_running(b, 921);
    launch_ok(b, &waiting, now_ms()); /* node2's 8 GPUs are taken: it waits */
    job = wait_submitted(b, 922);
    snprintf(cmd, sizeof(cmd),
             "kill $(cat %s/run/slurmctld.pid) && "
             "while scontrol ping >/dev/null 2>&1; do sleep 0.1; done",
             g_dir);
    sh(cmd);
    t = now_ms();
    assert_int_equal(b->ops->stop(b, 922, 0, t), 0);
    /* its scancel fails, twice (the second from the kill at the grace's end) */
    assert_int_equal(b->ops->poll(b, now_ms(), &ev, 1), 0);
    assert_int_equal(b->ops->poll(b, now_ms(), &ev, 1), 0);
    print_message("two polls with slurmctld down took %" PRId64 " ms\n", now_ms() - t);
    assert_true(b->ops->next_event_ms(b) > 0); /* kept, but not tried again at once */
    assert_int_equal(backend_slurm_job(b, 922, &info), 0);

    /* slurmctld again, with its state: the job is still pending, then cancelled */
    snprintf(cmd, sizeof(cmd),
             "%s/bin/slurmctld -i -f %s && "
             "until scontrol ping 2>/dev/null | grep -q UP; do sleep 0.1; done",
             g_dir, g_conf);
    sh(cmd);
    ev = wait_end(b, 922);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -1); /* cancelled before it ran */
    snprintf(cmd, sizeof(cmd), "test \"$(squeue -h -t all -j %" PRId64 " -o %%T)\" = CANCELLED",
             job);
    sh(cmd);
    assert_never_printed(922, "waiting-ran");
    assert_int_equal(b->ops->stop(b, 921, 0, now_ms()), 0);
    wait_end(b, 921);
    b->ops->free(b);
}

/*
 * The start-up sweep: jobs named as this daemon names them that no workload
 * claims (a crash between a submission and its record) are cancelled,
 * pending or running; the job of work it follows, a job of another daemon
 * and a job of a name it never gives are left alone.
 */
static void test_sweep(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica r = on("node4", 1, 0);
    struct backend_launch kept = work(901, "sleep 30", &r, 1, -1);
    char *prefix = backend_instance_prefix(g_logs), cmd[1200];
    int64_t ids[4];
    size_t n = 99;
    (void)state;

    launch_ok(b, &kept, now_ms());
    wait_running(b, 901);
    /*
     * Orphans: one running, one pending (it asks for more GPUs than node4
     * has free; submitted last, so that it holds back nothing else).
     */
    snprintf(cmd, sizeof(cmd),
             "sbatch -Q -J %s902 --mem=64 -c 1 -w node4 --gres=gpu:h100:1 -o /dev/null"
             " --wrap 'sleep 30' && "
             "sbatch -Q -J gpuaas-00000000-904 --mem=64 -c 1 -w node4 --gres=gpu:h100:1"
             " -o /dev/null --wrap 'sleep 30' && "
             "sbatch -Q -J %sx905 --mem=64 -c 1 -w node4 --gres=gpu:h100:1 -o /dev/null"
             " --wrap 'sleep 30'",
             prefix, prefix);
    sh(cmd);
    sh_until(20, "[ \"$(squeue -h -t RUNNING -o %%i | wc -l)\" = 4 ]");
    snprintf(cmd, sizeof(cmd),
             "sbatch -Q -J %s903 --mem=64 -c 1 -w node4 --gres=gpu:h100:8 -o /dev/null"
             " --wrap 'sleep 30'",
             prefix);
    sh(cmd);
    sh_until(20, "[ \"$(squeue -h -n %s903 -o %%T)\" = PENDING ]", prefix);

    assert_int_equal(backend_slurm_sweep(b, ids, ARRAY_SIZE(ids), &n), 0);
    assert_int_equal(n, 2);
    sh_until(20, "[ -z \"$(squeue -h -n %s902,%s903 -t PENDING,RUNNING -o %%i)\" ]", prefix,
             prefix);
    /* the followed one, another daemon's and a foreign name run on */
    snprintf(cmd, sizeof(cmd),
             "test \"$(squeue -h -n %s901,gpuaas-00000000-904,%sx905 -t RUNNING -o %%i | wc -l)\" "
             "= 3",
             prefix, prefix);
    sh(cmd);
    assert_int_equal(b->ops->stop(b, 901, 0, now_ms()), 0);
    wait_end(b, 901);
    sh("scancel -n gpuaas-00000000-904 && scancel -u root");
    free(prefix);
    b->ops->free(b);
}

/* Requests the backend refuses, and one Slurm refuses: errors, nothing left behind. */
static void test_launch_errors(void **state)
{
    struct backend *b = slurm(0);
    struct backend_replica bad_name = on("node1;rm", 1, 0), nowhere = on("node99", 1, 0),
                           ok = on("node1", 1, 0);
    struct backend_launch l;
    struct error_info ei = {0};
    (void)state;

    l = work(701, "true", &bad_name, 1, -1);
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), ERR_INVALID);
    memset(&ei, 0, sizeof(ei));
    l = work(703, "", &ok, 1, -1);
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), ERR_INVALID);
    memset(&ei, 0, sizeof(ei));
    /* Slurm refuses it: launch() has not waited for sbatch, poll() says so. */
    l = work(704, "true", &nowhere, 1, -1);
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), 0);
    {
        struct backend_event ev = wait_end(b, 704);
        assert_int_equal(ev.how, BACKEND_NOT_STARTED);
        assert_int_equal(ev.exit_code, -1);
        assert_non_null(strstr(ev.message, "node99"));
    }
    assert_false(file_exists(704, "slurm"));
    assert_false(file_exists(704, "sbatch"));
    assert_int_equal(backend_slurm_job(b, 704, &(struct slurm_job_info){0}), ERR_NOT_FOUND);

    /* The devices' class is the GRES type asked for: the nodes have h100, not a100. */
    {
        struct backend_device typed = {.gpu_id = 1, .index = 0, .milli = 1000,
                                       .gpu_class = "a100"};
        struct backend_replica r = {
            .replica = 0, .node_id = 1, .node_name = "node1", .devices = &typed, .n_devices = 1};
        struct backend_event ev;
        l = work(706, "true", &r, 1, -1);
        launch_ok(b, &l, now_ms());
        ev = wait_end(b, 706);
        assert_int_equal(ev.how, BACKEND_NOT_STARTED);
        typed.gpu_class = "h100";
        l = work(707, "echo gpus=$CUDA_VISIBLE_DEVICES", &r, 1, -1);
        launch_ok(b, &l, now_ms());
        ev = wait_end(b, 707);
        assert_int_equal(ev.how, BACKEND_EXITED);
        assert_int_equal(ev.exit_code, 0);
    }

    l = work(705, "sleep 0.2", &ok, 1, -1);
    launch_ok(b, &l, now_ms());
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), ERR_CONFLICT);
    assert_int_equal(wait_end(b, 705).how, BACKEND_EXITED);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX); /* nothing left to watch */
    b->ops->free(b);
}

/*
 * launch() returns before sbatch answers, at most max_submits sbatch run at
 * once: work stopped while its sbatch runs is cancelled once the job id
 * comes; work stopped while its sbatch still waits for a turn never gets a
 * job. Both end STOPPED; the rest run as usual.
 */
static void test_stop_while_submitting(void **state)
{
    struct backend *b = slurm_with(0, 1);
    struct backend_replica r = on("node2", 1, 0);
    struct backend_launch first = work(801, "sleep 30", &r, 1, -1),
                          second = work(802, "sleep 30", &r, 1, -1),
                          third = work(803, "exit 7", &r, 1, -1);
    struct backend_event ev;
    int64_t t0 = now_ms();
    char *prefix, *cmd;
    (void)state;

    launch_ok(b, &first, t0);
    launch_ok(b, &second, t0); /* waits: one sbatch at a time */
    launch_ok(b, &third, t0);
    /* No poll yet: 801's sbatch has not been answered, 802's not started. */
    assert_int_equal(b->ops->stop(b, 801, 60000, t0), 0);
    assert_int_equal(b->ops->stop(b, 802, 60000, t0), 0);
    ev = wait_end(b, 802); /* reported by the next poll, no job was made */
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -1);
    assert_int_equal(ev.at_ms, t0);
    assert_false(file_exists(802, "slurm"));
    ev = wait_end(b, 801); /* cancelled once sbatch gave its id */
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_true(now_ms() - t0 < 10000); /* cancelled, not killed at the grace */
    prefix = backend_instance_prefix(g_logs); /* jobs are named <prefix><workload id> */
    cmd = xasprintf("test \"$(squeue -h -t all -n %s801 -o %%T)\" = CANCELLED", prefix);
    sh(cmd);
    free(cmd);
    ev = wait_end(b, 803);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 7);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    /* Nothing of 802 ever reached Slurm. */
    cmd = xasprintf("test -z \"$(squeue -h -t all -n %s802 -o %%i)\"", prefix);
    sh(cmd);
    free(cmd);
    free(prefix);
    b->ops->free(b);
}

/*
 * A controller that forgot its jobs (restarted with a clean state, as after
 * MinJobAge): a job that ended while the daemon was down still gets its
 * real end and exit code, from the cluster's jobcomp file, which the
 * backend found itself through `scontrol show config`.
 */
static void test_adopt_after_controller_reset(void **state)
{
    struct backend *b = slurm(0), *b2;
    struct backend_replica r = on("node1", 1, 0);
    char done[400], cmd[600], *jobcomp;
    struct backend_launch ended;
    struct backend_event ev;
    int64_t t0 = now_ms(), ended_seen, adopt_at;
    (void)state;

    jobcomp = xasprintf("%s/jobcomp.txt", g_dir);
    assert_non_null(backend_slurm_jobcomp(b));
    assert_string_equal(backend_slurm_jobcomp(b), jobcomp);
    snprintf(done, sizeof(done), "%s/done-521", g_dir);
    snprintf(cmd, sizeof(cmd), "sleep 1; touch %s; exit 4", done);
    ended = work(521, cmd, &r, 1, -1);
    launch_ok(b, &ended, t0);
    wait_running(b, 521);
    b->ops->free(b); /* the daemon goes away; its job runs on, and ends */
    /* each adopt below needs the state file, which a reported end removes */
    snprintf(cmd, sizeof(cmd), "cp %s/521.slurm %s/521.slurm.saved", g_logs, g_dir);
    sh(cmd);
    wait_file(done);
    ended_seen = now_ms();
    /* the job's end reaches slurmctld and its jobcomp file */
    sh_until(30, "grep -qE \" Name=gpuaas-[0-9a-f]+-521( |$)\" %s", jobcomp);

    reset_controller(); /* squeue no longer knows the job */

    b2 = slurm(0);
    adopt_at = now_ms();
    assert_int_equal(b2->ops->adopt(b2, &ended, t0, adopt_at, NULL), 0);
    ev = wait_end(b2, 521);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 4);
    if (ev.at_ms < ended_seen - 2000 || ev.at_ms > ended_seen + 1500 || ev.at_ms > adopt_at)
        fail_msg("ended at %" PRId64 ": the job was seen to end at %" PRId64
                 ", adopted at %" PRId64,
                 ev.at_ms, ended_seen, adopt_at);
    b2->ops->free(b2);

    /* told to read none: the same job, found by its id, is lost when squeue does not list it */
    {
        struct slurm_options o = {.log_dir = g_logs, .conf = g_conf, .jobcomp_path = "none"};
        struct backend *b3 = backend_slurm_new(7, &o, NULL);
        assert_non_null(b3);
        assert_null(backend_slurm_jobcomp(b3));
        snprintf(cmd, sizeof(cmd), "cp %s/521.slurm.saved %s/521.slurm", g_dir, g_logs);
        sh(cmd);
        adopt_at = now_ms();
        assert_int_equal(b3->ops->adopt(b3, &ended, t0, adopt_at, NULL), 0);
        ev = wait_end(b3, 521);
        assert_int_equal(ev.how, BACKEND_LOST);
        assert_true(ev.at_ms >= adopt_at); /* at the poll that missed it */
        b3->ops->free(b3);
    }
    free(jobcomp);
}

/* Polls for ms and fails if the workload's end is reported meanwhile. */
static void no_end_for(struct backend *b, int64_t id, int ms)
{
    int64_t until = now_ms() + ms;
    while (now_ms() < until) {
        struct backend_event evs[16];
        size_t n = b->ops->poll(b, now_ms(), evs, ARRAY_SIZE(evs));
        for (size_t i = 0; i < n; i++) {
            if (evs[i].workload_id == id)
                fail_msg("workload %" PRId64 " reported ended (how %d) while sacct failed", id,
                         evs[i].how);
            assert_true(g_n_seen < MAX_SEEN);
            g_seen[g_n_seen++] = evs[i];
        }
        nap(50);
    }
}

/* Stops the test cluster's slurmdbd (slurm-up.sh, SLURM_WITH_DBD=1), or starts it again. */
static void dbd(bool up)
{
    char *cmd;
    if (up)
        cmd = xasprintf("cd %s && MYSQL_UNIX_PORT=%s/run/mysql.sock setsid %s/bin/slurmdbd -D "
                        "</dev/null >>%s/log/slurmdbd.out 2>&1 & echo $! >%s/run/slurmdbd.launcher"
                        " && timeout 30 sh -c 'until sacctmgr -n list cluster >/dev/null 2>&1; "
                        "do sleep 0.1; done'",
                        g_dir, g_dir, g_dir, g_dir, g_dir);
    else
        cmd = xasprintf("p=$(cat %s/run/slurmdbd.launcher) && kill $p && "
                        "while kill -0 $p 2>/dev/null; do sleep 0.05; done && "
                        "! sacct -n -X -j 1 >/dev/null 2>&1",
                        g_dir);
    sh(cmd);
    free(cmd);
}

/*
 * test_adopt_after_controller_reset on a cluster that keeps accounting in
 * slurmdbd and has no jobcomp file (jobcomp/none): only sacct knows how the
 * job ended. While slurmdbd is down the job waits (and is found once it is
 * back), at most sacct_patience_ms, then it is LOST; without sacct it is LOST.
 */
static void test_dbd_adopt_after_controller_reset(void **state)
{
    struct backend *b = slurm(0), *b2;
    struct backend_replica r = on("node1", 1, 0);
    char done[400], cmd[600], saved[700], *reset;
    struct backend_launch ended;
    struct backend_event ev;
    struct slurm_job_info info;
    int64_t t0 = now_ms(), ended_seen, adopt_at;
    (void)state;

    assert_null(backend_slurm_jobcomp(b));
    assert_true(backend_slurm_sacct(b));
    snprintf(done, sizeof(done), "%s/done-522", g_dir);
    snprintf(cmd, sizeof(cmd), "sleep 1; touch %s; exit 5", done);
    ended = work(522, cmd, &r, 1, -1);
    launch_ok(b, &ended, t0);
    info = wait_running(b, 522);
    b->ops->free(b); /* the daemon goes away; its job runs on, and ends */
    /* Each adopt below needs the state file, which a reported end removes. */
    snprintf(saved, sizeof(saved), "cp %s/522.slurm %s/522.slurm.saved", g_logs, g_dir);
    sh(saved);
    snprintf(saved, sizeof(saved), "cp %s/522.slurm.saved %s/522.slurm", g_dir, g_logs);
    wait_file(done);
    ended_seen = now_ms();
    /* the job's end reaches slurmdbd */
    sh_until(30, "sacct -n -P -X -j %" PRId64 " -o State | grep -q FAILED", info.job_id);

    reset_controller(); /* squeue no longer knows the job */

    /* sacct answers: the real end and exit code */
    b2 = slurm(0);
    sh(saved);
    adopt_at = now_ms();
    assert_int_equal(b2->ops->adopt(b2, &ended, t0, adopt_at, NULL), 0);
    ev = wait_end(b2, 522);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 5);
    if (ev.at_ms < ended_seen - 2000 || ev.at_ms > ended_seen + 1500 || ev.at_ms > adopt_at)
        fail_msg("ended at %" PRId64 ": the job was seen to end at %" PRId64
                 ", adopted at %" PRId64,
                 ev.at_ms, ended_seen, adopt_at);
    b2->ops->free(b2);

    /* no sacct in bin_dir: lost, at the adopt */
    {
        char bin[400];
        struct slurm_options o = {.log_dir = g_logs, .conf = g_conf, .bin_dir = bin};
        snprintf(bin, sizeof(bin), "%s/nosacct", g_dir);
        reset = xasprintf("mkdir %s && for t in sbatch squeue scancel sinfo scontrol; do "
                          "ln -s \"$(command -v $t)\" %s/$t; done",
                          bin, bin);
        sh(reset);
        free(reset);
        b2 = backend_slurm_new(7, &o, NULL);
        assert_non_null(b2);
        assert_false(backend_slurm_sacct(b2));
        assert_null(backend_slurm_jobcomp(b2));
        sh(saved);
        adopt_at = now_ms();
        assert_int_equal(b2->ops->adopt(b2, &ended, t0, adopt_at, NULL), 0);
        ev = wait_end(b2, 522);
        assert_int_equal(ev.how, BACKEND_LOST);
        assert_true(ev.at_ms >= adopt_at); /* when squeue did not list it */
        b2->ops->free(b2);
    }

    /* slurmdbd down: nothing concluded; back, sacct answers */
    dbd(false);
    b2 = slurm(0);
    assert_true(backend_slurm_sacct(b2)); /* from slurm.conf, not asked of slurmdbd */
    sh(saved);
    adopt_at = now_ms();
    assert_int_equal(b2->ops->adopt(b2, &ended, t0, adopt_at, NULL), 0);
    no_end_for(b2, 522, 1500);
    dbd(true);
    ev = wait_end(b2, 522);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 5);
    assert_true(ev.at_ms <= adopt_at);
    b2->ops->free(b2);

    /* slurmdbd down longer than sacct_patience_ms: lost after it */
    dbd(false);
    {
        struct slurm_options o = {
            .log_dir = g_logs, .conf = g_conf, .poll_interval_ms = 100, .sacct_patience_ms = 2000};
        b2 = backend_slurm_new(7, &o, NULL);
        assert_non_null(b2);
        sh(saved);
        adopt_at = now_ms();
        assert_int_equal(b2->ops->adopt(b2, &ended, t0, adopt_at, NULL), 0);
        no_end_for(b2, 522, 1500);
        ev = wait_end(b2, 522);
        assert_int_equal(ev.how, BACKEND_LOST);
        assert_true(ev.at_ms >= adopt_at + 2000);
        b2->ops->free(b2);
    }
}

static const struct slurm_node *node_named(const struct slurm_node *n, size_t count,
                                           const char *name)
{
    for (size_t i = 0; i < count; i++) {
        if (strcmp(n[i].name, name) == 0)
            return &n[i];
    }
    fail_msg("node '%s' not reported", name);
    return NULL;
}

/* Nodes, their GPUs and Slurm's drain state, from sinfo --json. */
static void test_nodes(void **state)
{
    struct backend *b = slurm(0);
    struct slurm_node *nodes = NULL;
    struct error_info ei = {0};
    const struct slurm_node *n;
    size_t count = 0;
    int64_t give_up;
    (void)state;

    if (backend_slurm_nodes(b, &nodes, &count, &ei) < 0)
        fail_msg("backend_slurm_nodes: %s", ei.message);
    assert_int_equal(count, 4);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(nodes[i].state, "ready") != 0)
            fail_msg("node '%s' is %s (%s)", nodes[i].name, nodes[i].state, nodes[i].reason);
        assert_string_equal(nodes[i].gpu_type, "h100");
        assert_int_equal(nodes[i].n_gpus, 8);
        assert_int_equal(nodes[i].cpu_milli, 8000);
        assert_int_equal(nodes[i].mem_mib, 65536);
    }
    node_named(nodes, count, "node3");
    slurm_nodes_free(nodes, count);

    sh("scontrol update nodename=node3 state=drain reason=test");
    assert_int_equal(backend_slurm_nodes(b, &nodes, &count, &ei), 0);
    n = node_named(nodes, count, "node3");
    assert_string_equal(n->state, "drain");
    assert_string_equal(n->reason, "test");
    assert_string_equal(node_named(nodes, count, "node2")->state, "ready");
    slurm_nodes_free(nodes, count);

    /* Resumed, Slurm calls it NOT_RESPONDING (down) until it has pinged it again. */
    sh("scontrol update nodename=node3 state=resume");
    give_up = now_ms() + WAIT_LIMIT_MS;
    for (;;) {
        bool ready;
        assert_int_equal(backend_slurm_nodes(b, &nodes, &count, &ei), 0);
        ready = strcmp(node_named(nodes, count, "node3")->state, "ready") == 0;
        slurm_nodes_free(nodes, count);
        if (ready)
            break;
        if (now_ms() > give_up)
            fail_msg("node3 not ready again within %d ms", WAIT_LIMIT_MS);
        nap(50);
    }
    b->ops->free(b);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("SLURM_TEST_DIR");
    const struct CMUnitTest tests[] = {

        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_launch_exit_code),
        cmocka_unit_test(test_run_as_user),
        cmocka_unit_test(test_devices_from_slurm),
        cmocka_unit_test(test_stop_grace),
        cmocka_unit_test(test_stop_pending),
        cmocka_unit_test(test_max_runtime),
        cmocka_unit_test(test_adopt),
        cmocka_unit_test(test_gang),
        cmocka_unit_test(test_gang_shared_node),
        cmocka_unit_test(test_stop_follower_first),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_cancel_retried),
        cmocka_unit_test(test_launch_errors),
        cmocka_unit_test(test_stop_while_submitting),
        cmocka_unit_test(test_adopt_after_controller_reset),
        /* Only on a cluster with slurmdbd (tests/slurm/CMakeLists.txt sets SLURM_WITH_DBD=1). */
        cmocka_unit_test(test_dbd_adopt_after_controller_reset),
    };

    if (!dir || !dir[0]) {
        fprintf(stderr, "test_slurm_backend: run through tests/slurm/with-slurm.sh\n");
        return 1;
    }
    snprintf(g_dir, sizeof(g_dir), "%s", dir);
    snprintf(g_logs, sizeof(g_logs), "%s/logs", g_dir);
    snprintf(g_conf, sizeof(g_conf), "%s/slurm.conf", g_dir);
    for (size_t i = 0; i < ARRAY_SIZE(gpus); i++)
        gpus[i] =
            (struct backend_device){.gpu_id = (int64_t)i + 1, .index = (int32_t)i, .milli = 1000};
    if (argc > 1)
        cmocka_set_test_filter(argv[1]); /* e.g. test_stop_grace, or test_stop_* */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
