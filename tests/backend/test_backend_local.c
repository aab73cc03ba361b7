/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the local backend (src/backend/local.c) with real processes and
 * short shell commands, no GPU needed: exit codes, the device variables and
 * log capture, stop with a grace (exit on SIGTERM, or killed at the grace),
 * max runtime, a gang reported once, process groups, running as another
 * user, and adoption after a restart (found again, or lost). Time is the
 * wall clock, passed as now_ms; every wait gives up after a few seconds.
 */
#include "base/common.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "backend/backend.h"
#include "backend/cgroup.h"
#include "backend/spawner-proto.h"
#include "base/alloc.h"
#include "base/parse.h"

#define WAIT_LIMIT_MS 5000

static char g_dir[256];  /* the test's temporary directory */
static char g_logs[300]; /* the backend's log_dir, inside it */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(void)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static struct backend *local(int64_t timeout_grace_ms)
{
    struct local_options o = {.log_dir = g_logs,
                              .cgroup_root = NULL,
                              .run_uid = -1,
                              .run_gid = -1,
                              .timeout_grace_ms = timeout_grace_ms,
                              .podman = ""}; /* none, whatever this machine has */
    struct error_info ei = {0};
    struct backend *b = backend_local_new(3, &o, &ei);
    if (!b)
        fail_msg("backend_local_new: %s", ei.message);
    assert_string_equal(b->ops->name, "local");
    assert_int_equal(b->cluster_id, 3);
    assert_false(backend_local_cgroups(b, NULL));
    return b;
}

static const struct backend_device two_gpus[] = {
    {.gpu_id = 1, .uuid = "GPU-0a1b", .index = 0, .milli = 1000},
    {.gpu_id = 2, .uuid = NULL, .index = 5, .milli = 1000},
};
static const struct backend_replica gang[] = {
    {.replica = 0, .node_id = 1, .node_name = "here", .devices = two_gpus, .n_devices = 1},
    {.replica = 1, .node_id = 1, .node_name = "here", .devices = two_gpus + 1, .n_devices = 1},
    {.replica = 2, .node_id = 1, .node_name = "here", .devices = two_gpus, .n_devices = 2},
};
static const struct backend_replica pair = {
    .replica = 0, .node_id = 1, .node_name = "here", .devices = two_gpus, .n_devices = 2};

static struct backend_launch work(int64_t id, const char *command, int64_t max_runtime_ms)
{
    return (struct backend_launch){.workload_id = id,
                                   .project_id = 1,
                                   .command = command,
                                   .image = "",
                                   .cpu_milli = 1000,
                                   .mem_mib = 256,
                                   .duration_ms = -1,
                                   .max_runtime_ms = max_runtime_ms,
                                   .replicas = &pair,
                                   .n_replicas = 1};
}

static void launch_work(struct backend *b, const struct backend_launch *l, int64_t at_ms)
{
    struct error_info ei = {0};
    int rc = b->ops->launch(b, l, at_ms, &ei);
    if (rc != 0)
        fail_msg("launch %" PRId64 ": %d %s", l->workload_id, rc, ei.message);
}

static void launch(struct backend *b, int64_t id, const char *command, int64_t max_runtime_ms,
                   int64_t at_ms)
{
    struct backend_launch l = work(id, command, max_runtime_ms);
    launch_work(b, &l, at_ms);
}

/* Polls until one event comes (failing after WAIT_LIMIT_MS); asserts it is the only one. */
static struct backend_event wait_event(struct backend *b)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    struct backend_event ev[4];
    size_t n;

    while ((n = b->ops->poll(b, now_ms(), ev, 4)) == 0) {
        if (now_ms() > give_up)
            fail_msg("no event within %d ms", WAIT_LIMIT_MS);
        nap();
    }
    assert_int_equal(n, 1);
    return ev[0];
}

static void assert_nothing(struct backend *b)
{
    struct backend_event ev[1];
    assert_int_equal(b->ops->poll(b, now_ms(), ev, 1), 0);
}

/* A file read whole (at most 64 KiB), "" while it does not exist (its keeper makes it). */
static char *read_file(const char *path)
{
    char *buf = xcalloc(1, 65536);
    int fd = open(path, O_RDONLY);
    ssize_t n = 0, got;
    if (fd < 0 && errno == ENOENT)
        return buf;
    assert_true(fd >= 0);
    while ((got = read(fd, buf + n, 65535 - (size_t)n)) > 0)
        n += got;
    close(fd);
    return buf;
}

/* The workload's log file, read whole. Caller frees. */
static char *read_log(int64_t id)
{
    char *path = xasprintf("%s/%" PRId64 ".log", g_logs, id), *buf = read_file(path);
    free(path);
    return buf;
}

/* Waits until the log holds needle (the command reached a point); returns the log. */
static char *wait_log(int64_t id, const char *needle)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    for (;;) {
        char *log = read_log(id);
        if (strstr(log, needle))
            return log;
        free(log);
        if (now_ms() > give_up)
            fail_msg("log of %" PRId64 " never showed '%s'", id, needle);
        nap();
    }
}

/* The number printed after key in the workload's log, once it is there. */
static pid_t log_pid(int64_t id, const char *key)
{
    char *log = wait_log(id, key), *p = strstr(log, key) + strlen(key), *nl = strchr(p, '\n');
    int64_t v = 0;
    assert_non_null(nl);
    *nl = '\0';
    assert_int_equal(parse_int64(p, 1, INT32_MAX, &v), 0);
    free(log);
    return (pid_t)v;
}

static bool proc_gone(pid_t pid)
{
    char path[64], buf[512], *p;
    int fd;
    ssize_t n;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return true;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && (p[2] == 'Z' || p[2] == 'X');
}

static void wait_gone(pid_t pid)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    while (!proc_gone(pid)) {
        if (now_ms() > give_up)
            fail_msg("process %ld still alive", (long)pid);
        nap();
    }
}

static uint64_t proc_start(pid_t pid)
{
    char path[64], buf[1024], *p;
    int fd;
    ssize_t n;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    assert_true(n > 0);
    buf[n] = '\0';
    p = strrchr(buf, ')') + 2;
    for (int field = 3; field < 22; field++)
        p = strchr(p, ' ') + 1;
    return strtoull(p, NULL, 10);
}

/* Writes replica 0's run file as a keeper would have: "<pid> <start time>\n". */
static void write_run(int64_t id, pid_t pid, uint64_t start_time)
{
    char *path = xasprintf("%s/%" PRId64 ".0.run", g_logs, id);
    char *text = xasprintf("%ld %" PRIu64 "\n", (long)pid, start_time);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(text);
    free(path);
}

/* ---- tests ---- */

static void test_exit_code(void **state)
{
    struct backend *b = local(0);
    int64_t t0 = now_ms();
    struct backend_event ev;
    (void)state;

    launch(b, 1, "exit 3", -1, t0);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    ev = wait_event(b);
    assert_int_equal(ev.workload_id, 1);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 3);
    assert_true(ev.at_ms >= t0);
    assert_nothing(b);

    /* Killed by a signal of its own: the negative signal number. */
    launch(b, 1, "kill -USR1 $$", -1, now_ms());
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, -SIGUSR1);
    b->ops->free(b);
}

static void test_env_and_log(void **state)
{
    struct backend *b = local(0);
    struct backend_event ev;
    struct stat st;
    char *log, *path;
    (void)state;

    launch(b, 2,
           "echo \"C=$CUDA_VISIBLE_DEVICES.\"; echo \"N=$NVIDIA_VISIBLE_DEVICES.\"; "
           "echo \"W=$GPUAAS_WORKLOAD_ID R=$GPUAAS_REPLICA.\"; echo to-stderr >&2; "
           "ls /proc/self/fd | wc -l | sed 's/^/fds=/'",
           -1, now_ms());
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    log = read_log(2);
    assert_non_null(strstr(log, "C=GPU-0a1b,5.\n"));
    assert_non_null(strstr(log, "N=GPU-0a1b,5.\n"));
    assert_non_null(strstr(log, "W=2 R=0.\n"));
    assert_non_null(strstr(log, "to-stderr\n"));
    /* 0, 1, 2, and the one ls opens for /proc/self/fd: nothing inherited. */
    assert_non_null(strstr(log, "fds=4\n"));
    free(log);

    path = xasprintf("%s/2.log", g_logs);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    free(path);
    assert_int_equal(stat(g_logs, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* The run file stays beside the log, the record of what ran and how it ended. */
    path = xasprintf("%s/2.0.run", g_logs);
    log = read_file(path);
    assert_true(strtol(log, NULL, 10) > 0);                        /* the keeper's pid */
    assert_int_equal(strncmp(log + SPAWN_RUN_END_AT, "0 ", 2), 0); /* exit 0 */
    free(log);
    free(path);

    /* Launched again after it was reported: the log is appended to. */
    launch(b, 2, "echo second", -1, now_ms());
    ev = wait_event(b);
    log = read_log(2);
    assert_non_null(strstr(log, "to-stderr\n"));
    assert_non_null(strstr(log, "second\n"));
    free(log);
    b->ops->free(b);
}

static void test_invalid(void **state)
{
    struct backend *b = local(0);
    struct backend_launch l = work(4, "sleep 30", -1);
    struct error_info ei = {0};
    struct local_options bad = {.log_dir = NULL};
    int64_t t = now_ms();
    (void)state;

    assert_null(backend_local_new(1, &bad, &ei));
    assert_int_equal(ei.code, ERR_INVALID);

    l.command = "";
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(b->ops->launch(b, &l, t, &ei), ERR_INVALID);
    l.command = "true";
    l.image = "ubuntu:22.04"; /* and no podman */
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(b->ops->launch(b, &l, t, &ei), ERR_INVALID);
    assert_non_null(strstr(ei.message, "podman is not installed"));
    l.image = "";
    l.n_replicas = 0;
    assert_int_equal(b->ops->launch(b, &l, t, NULL), ERR_INVALID);
    l = work(0, "true", -1);
    assert_int_equal(b->ops->launch(b, &l, t, NULL), ERR_INVALID);

    launch(b, 4, "sleep 30", -1, t);
    l = work(4, "true", -1);
    assert_int_equal(b->ops->launch(b, &l, t, NULL), ERR_CONFLICT);
    assert_int_equal(b->ops->stop(b, 999, 0, t), 0); /* unknown: no-op */
    assert_int_equal(b->ops->stop(b, 4, 0, t), 0);
    assert_int_equal(b->ops->next_event_ms(b), t);
    assert_int_equal(wait_event(b).how, BACKEND_STOPPED);
    assert_int_equal(b->ops->stop(b, 4, 0, now_ms()), 0); /* ended: no-op */
    assert_nothing(b);
    b->ops->free(b);
}

static void test_stop_within_grace(void **state)
{
    struct backend *b = local(0);
    struct backend_event ev;
    int64_t t;
    (void)state;

    /* Short sleeps: a SIGTERM that lands while the shell forks one (the
     * child still holding the shell's handler until it execs) is lost for
     * that sleep, and the shell's trap runs when the sleep ends. */
    launch(b, 5, "trap 'exit 0' TERM; echo ready; while :; do sleep 0.1; done", -1, now_ms());
    free(wait_log(5, "ready\n"));
    t = now_ms();
    assert_int_equal(b->ops->stop(b, 5, 3000, t), 0);
    assert_int_equal(b->ops->next_event_ms(b), t + 3000);
    ev = wait_event(b);
    assert_int_equal(ev.workload_id, 5);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, 0);
    assert_true(ev.at_ms < t + 3000);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    b->ops->free(b);
}

static void test_stop_killed_at_grace(void **state)
{
    struct backend *b = local(0);
    struct backend_event ev;
    int64_t t;
    (void)state;

    launch(b, 6, "trap '' TERM; echo ready; sleep 30", -1, now_ms());
    free(wait_log(6, "ready\n"));
    t = now_ms();
    assert_int_equal(b->ops->stop(b, 6, 300, t), 0);
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -SIGKILL);
    assert_true(ev.at_ms >= t + 300);
    b->ops->free(b);
}

static void test_max_runtime(void **state)
{
    struct backend *b = local(100);
    struct backend_event ev;
    int64_t t = now_ms();
    (void)state;

    launch(b, 7, "echo ready; sleep 30", 200, t);
    assert_int_equal(b->ops->next_event_ms(b), t + 200);
    /* Running before the deadline passes (it only acts in poll()): a stop
     * before its exec would kill the keeper or be lost, not end the work. */
    free(wait_log(7, "ready\n"));
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_TIMEOUT);
    assert_int_equal(ev.exit_code, -SIGTERM);
    assert_true(ev.at_ms >= t + 200);

    /* Ignoring SIGTERM: killed after the timeout grace. */
    t = now_ms();
    launch(b, 8, "trap '' TERM; echo ready; sleep 30", 100, t);
    free(wait_log(8, "ready\n"));
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_TIMEOUT);
    assert_int_equal(ev.exit_code, -SIGKILL);
    assert_true(ev.at_ms >= t + 200);
    b->ops->free(b);
}

static void test_gang_reported_once(void **state)
{
    struct backend *b = local(0);
    struct backend_launch l = work(9,
                                   "sleep 0.$((GPUAAS_REPLICA * 3 + 1)); "
                                   "echo \"r$GPUAAS_REPLICA=$CUDA_VISIBLE_DEVICES\"; "
                                   "exit $GPUAAS_REPLICA",
                                   -1);
    struct backend_event ev[4];
    int64_t t = now_ms(), give_up = t + WAIT_LIMIT_MS;
    size_t n = 0;
    char *log;
    (void)state;

    l.replicas = gang;
    l.n_replicas = ARRAY_SIZE(gang);
    launch_work(b, &l, t);
    while (n == 0 && now_ms() < give_up) {
        n = b->ops->poll(b, now_ms(), ev, 4);
        if (n == 0)
            nap();
    }
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].how, BACKEND_EXITED);
    assert_int_equal(ev[0].exit_code, 1); /* the lowest replica that failed */
    assert_true(ev[0].at_ms >= t + 700);
    log = read_log(9);
    assert_non_null(strstr(log, "r0=GPU-0a1b\n"));
    assert_non_null(strstr(log, "r1=5\n"));
    assert_non_null(strstr(log, "r2=GPU-0a1b,5\n"));
    free(log);
    nap();
    assert_nothing(b);
    b->ops->free(b);
}

static void test_process_group(void **state)
{
    struct backend *b = local(0);
    struct backend_event ev;
    pid_t bg;
    (void)state;

    launch(b, 10, "sleep 30 & echo bg=$!; wait", -1, now_ms());
    bg = log_pid(10, "bg=");
    assert_false(proc_gone(bg));
    assert_int_equal(b->ops->stop(b, 10, 2000, now_ms()), 0);
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    wait_gone(bg);

    /* What a replica leaves behind when it exits goes with it. */
    launch(b, 11, "sleep 30 & echo bg=$!", -1, now_ms());
    bg = log_pid(11, "bg=");
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    wait_gone(bg);
    b->ops->free(b);
}

/*
 * The --ulimit flags a container is expected to get: this process's hard
 * open-file and process limits, the process limit at most kernel.pid_max
 * (what podman itself can set without CAP_SYS_RESOURCE). Caller frees.
 */
static char *expected_ulimits(void)
{
    struct rlimit nofile, nproc;
    char *pid_max_text = read_file("/proc/sys/kernel/pid_max");
    int64_t pid_max;
    char *ret;

    assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile), 0);
    assert_int_equal(getrlimit(RLIMIT_NPROC, &nproc), 0);
    pid_max_text[strcspn(pid_max_text, "\n")] = '\0';
    assert_int_equal(parse_int64(pid_max_text, 1, INT64_MAX, &pid_max), 0);
    if (nproc.rlim_max == RLIM_INFINITY || nproc.rlim_max > (rlim_t)pid_max)
        nproc.rlim_max = (rlim_t)pid_max;
    assert_true(nofile.rlim_max != RLIM_INFINITY);
    ret = xasprintf("--ulimit=nofile=%llu:%llu\n--ulimit=nproc=%llu:%llu\n",
                    (unsigned long long)nofile.rlim_max, (unsigned long long)nofile.rlim_max,
                    (unsigned long long)nproc.rlim_max, (unsigned long long)nproc.rlim_max);
    free(pid_max_text);
    return ret;
}

/*
 * Work that names an image runs through podman: a stand-in that records its
 * arguments and runs the command after the image, as podman would inside
 * the container; killing a stopped container is asked of it by name.
 */
static void test_image_through_podman(void **state)
{
    char *fake = xasprintf("%s/podman", g_dir), *args_path = xasprintf("%s/podman.args", g_dir),
         *kills_path = xasprintf("%s/podman.kills", g_dir), *script, *args, *kills, *ulimits,
         *expected, *name;
    struct local_options o = {.log_dir = g_logs, .run_uid = -1, .run_gid = -1, .podman = fake};
    struct backend *b;
    struct backend_launch l = work(31, "echo in-container $CUDA_VISIBLE_DEVICES", -1);
    struct backend_event ev;
    FILE *f;
    int64_t give_up;
    (void)state;

    script = xasprintf("#!/bin/sh\n"
                       "if [ \"$1\" = kill ]; then echo \"$*\" >> %s; exit 0; fi\n"
                       "printf '%%s\\n' \"$@\" > %s.$GPUAAS_WORKLOAD_ID\n"
                       "shift\n"
                       "while [ $# -gt 0 ]; do case $1 in --*) shift ;; *) break ;; esac; done\n"
                       "shift\n" /* the image */
                       "exec \"$@\"\n",
                       kills_path, args_path);
    f = fopen(fake, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    assert_int_equal(chmod(fake, 0755), 0);
    b = backend_local_new(3, &o, NULL);
    assert_non_null(b);

    l.image = "localhost/trainer:1";
    launch_work(b, &l, now_ms());
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    args = read_log(31);
    assert_non_null(strstr(args, "in-container GPU-0a1b,5\n"));
    free(args);
    free(script);
    script = xasprintf("%s.31", args_path);
    args = read_file(script);
    ulimits = expected_ulimits();
    /* named gpuaas-<this daemon: 8 hex digits>-<id>-<replica> */
    name = strstr(args, "\n--name=gpuaas-");
    assert_non_null(name);
    name = xstrndup(name + 8, strcspn(name + 8, "\n"));
    assert_int_equal(strlen(name), strlen("gpuaas-01234567-31-0"));
    assert_int_equal(strspn(name + 7, "0123456789abcdef"), 8);
    assert_string_equal(name + 15, "-31-0");
    expected = xasprintf("run\n--rm\n--replace\n--name=%s\n--init\n%s--cpus=1.000\n"
                         "--memory=256m\n--device=nvidia.com/gpu=GPU-0a1b\n"
                         "--device=nvidia.com/gpu=5\n"
                         "--env=CUDA_VISIBLE_DEVICES=GPU-0a1b,5\n"
                         "--env=NVIDIA_VISIBLE_DEVICES=GPU-0a1b,5\n"
                         "--env=GPUAAS_WORKLOAD_ID=31\n--env=GPUAAS_REPLICA=0\n"
                         "localhost/trainer:1\n/bin/sh\n-c\n"
                         "echo in-container $CUDA_VISIBLE_DEVICES\n",
                         name, ulimits);
    assert_string_equal(args, expected);
    free(args);
    free(expected);
    free(ulimits);

    /* Stopped, it outlives the grace: the group is killed, and the container by name. */
    l = work(32, "trap '' TERM; echo ready; sleep 30", -1);
    l.image = "localhost/trainer:1";
    launch_work(b, &l, now_ms());
    free(wait_log(32, "ready\n"));
    assert_int_equal(b->ops->stop(b, 32, 0, now_ms()), 0);
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    give_up = now_ms() + WAIT_LIMIT_MS;
    memcpy(name + 15, "-32-0", 5); /* the same daemon's name for workload 32 */
    while (!strstr((kills = read_file(kills_path)), name)) {
        free(kills);
        if (now_ms() > give_up)
            fail_msg("podman was not asked to kill the container");
        nap();
    }
    free(kills);
    free(name);
    b->ops->free(b);
    free(script);
    free(fake);
    free(args_path);
    free(kills_path);
}

static void test_run_as_user(void **state)
{
    struct local_options o = {.log_dir = g_logs, .run_uid = 65534, .run_gid = 65534};
    struct backend *b;
    char *log;
    (void)state;

    if (geteuid() != 0)
        skip();
    b = backend_local_new(3, &o, NULL);
    assert_non_null(b);
    launch(b, 12, "echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G)\"", -1, now_ms());
    assert_int_equal(wait_event(b).exit_code, 0);
    log = read_log(12);
    assert_non_null(strstr(log, "uid=65534 gid=65534 groups=65534\n"));
    free(log);
    b->ops->free(b);
}

static void test_adopt_after_restart(void **state)
{
    struct backend *b = local(0);
    struct backend_launch l = work(13, "echo pid=$$; exec sleep 30", -1);
    struct backend_event ev;
    int64_t t = now_ms();
    pid_t pid;
    (void)state;

    launch_work(b, &l, t);
    pid = log_pid(13, "pid=");
    b->ops->free(b); /* the daemon goes; its work stays */
    assert_int_equal(kill(pid, 0), 0);

    b = local(0);
    assert_int_equal(b->ops->adopt(b, &l, t, now_ms(), NULL), 0);
    assert_int_equal(b->ops->adopt(b, &l, t, now_ms(), NULL), ERR_CONFLICT);
    assert_nothing(b);
    assert_int_equal(kill(pid, SIGKILL), 0);
    ev = wait_event(b);
    assert_int_equal(ev.workload_id, 13);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_true(ev.exit_code == -SIGKILL || ev.exit_code == -1);
    assert_true(proc_gone(pid));
    b->ops->free(b);
}

static void test_adopt_not_our_child(void **state)
{
    struct backend *b = local(0);
    struct backend_launch l = work(14, "sleep 30", 5000);
    struct backend_event ev;
    int fds[2];
    pid_t mid, g = 0;
    int64_t t = now_ms();
    (void)state;

    /* A process the test does not parent, as after a real restart. */
    assert_int_equal(pipe(fds), 0);
    mid = fork();
    assert_true(mid >= 0);
    if (mid == 0) {
        pid_t grand;
        setsid();
        grand = fork();
        if (grand == 0) {
            close(fds[0]);
            close(fds[1]);
            execl("/bin/sleep", "sleep", "30", (char *)NULL);
            _exit(127);
        }
        if (write(fds[1], &grand, sizeof(grand)) != (ssize_t)sizeof(grand))
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &g, sizeof(g)), (ssize_t)sizeof(g));
    close(fds[0]);
    assert_int_equal(waitpid(mid, NULL, 0), mid);

    write_run(14, g, proc_start(g));
    assert_int_equal(b->ops->adopt(b, &l, t - 1000, now_ms(), NULL), 0);
    assert_int_equal(b->ops->next_event_ms(b), t + 4000);
    assert_nothing(b);
    assert_int_equal(b->ops->stop(b, 14, 2000, now_ms()), 0);
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    assert_int_equal(ev.exit_code, -1); /* not ours to wait for: unknown */
    b->ops->free(b);
}

static void test_adopt_lost(void **state)
{
    struct backend *b = local(0);
    struct backend_launch l = work(15, "sleep 30", -1);
    struct backend_event ev[4];
    int64_t t = now_ms();
    pid_t dead;
    (void)state;

    /* No run file at all. */
    assert_int_equal(b->ops->adopt(b, &l, t - 5000, t, NULL), 0);
    assert_int_equal(b->ops->next_event_ms(b), t);
    /* A pid that is gone. */
    dead = fork();
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    write_run(16, dead, 12345);
    l.workload_id = 16;
    assert_int_equal(b->ops->adopt(b, &l, t - 5000, t, NULL), 0);
    /* A live pid, but another process than the one started (pid reuse). */
    write_run(17, getpid(), proc_start(getpid()) + 1);
    l.workload_id = 17;
    assert_int_equal(b->ops->adopt(b, &l, t - 5000, t, NULL), 0);

    assert_int_equal(b->ops->poll(b, t, ev, 4), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ev[i].workload_id, 15 + i);
        assert_int_equal(ev[i].how, BACKEND_LOST);
        assert_int_equal(ev[i].at_ms, t);
    }
    assert_nothing(b);
    b->ops->free(b);
}

static void test_cgroup_root_unusable(void **state)
{
    struct local_options o = {
        .log_dir = g_logs, .cgroup_root = "/nonexistent/cgroup", .run_uid = -1, .run_gid = -1};
    struct backend *b = backend_local_new(3, &o, NULL);
    (void)state;
    assert_non_null(b);
    assert_false(backend_local_cgroups(b, NULL));
    b->ops->free(b);
}

/*
 * Where this machine lets the daemon manage cgroups ("auto": v2, else v1's
 * cpu and memory): each replica runs in its own, with the flavor's limits;
 * memory beyond them is the kernel's OOM kill; a process that left the
 * replica's session and group still goes with it; the cgroup goes at the end.
 */
static void test_cgroup_limits(void **state)
{
    struct local_options o = {
        .log_dir = g_logs, .cgroup_root = "auto", .run_uid = -1, .run_gid = -1, .podman = ""};
    struct cgroup_place place;
    struct backend *b;
    struct backend_launch l;
    struct backend_event ev;
    const char *detail = NULL;
    char why[700], *log, *p, *name, *line;
    int in = 0;
    pid_t bg;
    (void)state;

    if (geteuid() != 0) {
        print_message("skipped: managing the machine's cgroups needs root\n");
        skip();
    }
    if (cgroup_place_open("auto", NULL, &place, why, sizeof(why)) < 0) {
        print_message("skipped: %s\n", why);
        skip();
    }
    b = backend_local_new(3, &o, NULL);
    assert_non_null(b);
    assert_true(backend_local_cgroups(b, &detail));
    assert_non_null(strstr(detail, "/gpuaas"));

    /* the keeper joined before the work started: every hierarchy names the replica's cgroup */
    launch(b, 40, "cat /proc/self/cgroup", -1, now_ms());
    ev = wait_event(b);
    assert_int_equal(ev.exit_code, 0);
    log = read_log(40);
    p = strstr(log, ":/gpuaas/gpuaas-");
    assert_non_null(p);
    name = xstrndup(p + 9, strcspn(p + 9, "\n")); /* gpuaas-<daemon>-40-0 */
    assert_int_equal(strlen(name), strlen("gpuaas-01234567-40-0"));
    assert_string_equal(name + strlen("gpuaas-01234567"), "-40-0");
    line = xasprintf(":/gpuaas/%s\n", name);
    for (p = strstr(log, line); p; p = strstr(p + 1, line))
        in++;
    assert_int_equal(in, place.kind == CGROUP_V1 ? 2 : 1);
    free(line);
    free(log);
    /* removed by the backend once the end is handed out (at once, or at a later poll) */
    p = xasprintf("%s/%s", place.kind == CGROUP_V1 ? place.mem_dir : place.dir, name);
    for (int i = 0; i < 100 && access(p, F_OK) == 0; i++) {
        assert_nothing(b);
        nap();
    }
    assert_int_equal(access(p, F_OK), -1);
    free(p);
    free(name);

    /* 64 MiB touched under a 32 MiB limit (no swap here to hide in): killed by the kernel */
    l = work(41, "dd if=/dev/zero of=/dev/null bs=64M count=1", -1);
    l.mem_mib = 32;
    launch_work(b, &l, now_ms());
    ev = wait_event(b);
    assert_int_equal(ev.how, BACKEND_EXITED);
    if (ev.exit_code != -SIGKILL && ev.exit_code != 128 + SIGKILL)
        fail_msg("exit code %d, not an OOM kill; log: %s", ev.exit_code, read_log(41));

    /* left its session and process group: the cgroup still holds it */
    launch(b, 42, "setsid sleep 300 & echo bg=$!", -1, now_ms());
    bg = log_pid(42, "bg=");
    ev = wait_event(b);
    assert_int_equal(ev.exit_code, 0);
    wait_gone(bg);

    b->ops->free(b);
    cgroup_place_close(&place);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        char *p;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        p = xasprintf("%s/%s", dir, e->d_name);
        if (unlink(p) < 0)
            remove_dir(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/gpuaas-local-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_logs, sizeof(g_logs), "%s/logs", g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_dir(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code),
        cmocka_unit_test(test_env_and_log),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_stop_within_grace),
        cmocka_unit_test(test_stop_killed_at_grace),
        cmocka_unit_test(test_max_runtime),
        cmocka_unit_test(test_gang_reported_once),
        cmocka_unit_test(test_process_group),
        cmocka_unit_test(test_image_through_podman),
        cmocka_unit_test(test_run_as_user),
        cmocka_unit_test(test_adopt_after_restart),
        cmocka_unit_test(test_adopt_not_our_child),
        cmocka_unit_test(test_adopt_lost),
        cmocka_unit_test(test_cgroup_root_unusable),
        cmocka_unit_test(test_cgroup_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
