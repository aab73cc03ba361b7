/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the process spawner (src/backend/spawner*.c), in both its forms:
 * a child forked from this process, and the gpuaas-spawner program. Real
 * processes: the wait status of what it started comes back once; the run
 * file says what ran and how it ended; a log that cannot be opened ends it
 * with 127 before the work runs; a request too large is refused; a spawner that dies says so.
 * And the local backend on top of it: work started before its spawner died
 * is still followed (through /proc and the run file) and the next launch
 * gets a new spawner.
 */
#include "base/common.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "backend/backend.h"
#include "backend/spawner.h"
#include "base/alloc.h"

#define WAIT_LIMIT_MS 5000

static char g_dir[256];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(void)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static char *path_of(const char *name)
{
    return xasprintf("%s/%s", g_dir, name);
}

static char *file_of(const char *kind, const char *name)
{
    return xasprintf("%s/%s-%s", g_dir, kind, name);
}

static char *slurp(const char *path)
{
    char *buf = xcalloc(1, 4096);
    int fd = open(path, O_RDONLY);
    ssize_t n;
    assert_true(fd >= 0);
    n = read(fd, buf, 4095);
    assert_true(n >= 0);
    close(fd);
    return buf;
}

static char *const env[] = {"PATH=/usr/bin:/bin", "GREETING=hello", NULL};

/* Starts command with logs and exit file named after kind and tag; returns its pid. */
static pid_t spawn(struct spawner *sp, const char *command, const char *kind, const char *tag)
{
    char *log = xasprintf("%s/%s-%s.log", g_dir, kind, tag),
         *ex = xasprintf("%s/%s-%s.run", g_dir, kind, tag);
    const char *const argv[] = {"sh", "-c", command, NULL};
    struct spawn_request rq = {
        .program = "/bin/sh", .argv = argv, .envp = env, .log_path = log, .run_path = ex};
    struct error_info ei = {0};
    pid_t pid = 0;
    if (spawner_spawn(sp, &rq, &pid, &ei) < 0)
        fail_msg("spawner_spawn: %s", ei.message);
    assert_true(pid > 0);
    free(log);
    free(ex);
    return pid;
}

static int wait_end(struct spawner *sp, pid_t pid)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    int status;
    for (;;) {
        assert_true(spawner_alive(sp));
        if (spawner_take_end(sp, pid, &status))
            return status;
        if (now_ms() > give_up)
            fail_msg("no end for pid %ld", (long)pid);
        nap();
    }
}

/* The helper: a child of this process named gpuaas-spawner. */
static pid_t find_helper(void)
{
    char *kids = slurp("/proc/thread-self/children"), *p = kids;
    pid_t found = 0;
    while (*p && !found) {
        long pid = strtol(p, &p, 10);
        char *comm_path = xasprintf("/proc/%ld/comm", pid), *comm = slurp(comm_path);
        if (strncmp(comm, "gpuaas-spawner", 14) == 0)
            found = (pid_t)pid;
        free(comm);
        free(comm_path);
        while (*p == ' ')
            p++;
    }
    free(kids);
    return found;
}

/*
 * Waits for it: posix_spawn returns once the child has replaced its memory,
 * a moment before exec gives it its new name.
 */
static pid_t helper_pid(void)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    pid_t h;
    while ((h = find_helper()) == 0 && now_ms() < give_up)
        nap();
    return h;
}

static void exercise(const char *program)
{
    const char *kind = program ? "program" : "forked";
    struct spawner *sp = NULL;
    struct error_info ei = {0};
    char *text, *path, *big;
    pid_t a, b;
    int status;

    assert_int_equal(spawner_start(program, &sp, &ei), 0);
    /* Two at once; each end is told once, with the work's own status. */
    a = spawn(sp, "echo $GREETING; exit 3", kind, "a");
    b = spawn(sp, "kill -TERM $$", kind, "b");
    status = wait_end(sp, a);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    status = wait_end(sp, b);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGTERM);
    assert_false(spawner_take_end(sp, a, &status));
    path = file_of(kind, "a.log");
    text = slurp(path);
    assert_string_equal(text, "hello\n");
    free(text);
    free(path);
    /* The run file: the keeper's pid and start time, then how the work ended. */
    path = file_of(kind, "a.run");
    text = slurp(path);
    assert_int_equal(strtol(text, NULL, 10), a);
    assert_int_equal(strncmp(text + SPAWN_RUN_END_AT, "3 ", 2), 0);
    free(text);
    free(path);
    path = file_of(kind, "b.run");
    text = slurp(path);
    assert_int_equal(strncmp(text + SPAWN_RUN_END_AT, "-15 ", 4), 0);
    free(text);
    free(path);

    /* A log that cannot be opened: the keeper says so and ends with 127, the work never runs. */
    {
        char *marker = file_of(kind, "ran"), *cmd = xasprintf("touch %s", marker);
        const char *const argv[] = {"sh", "-c", cmd, NULL};
        struct spawn_request rq = {.program = "/bin/sh",
                                   .argv = argv,
                                   .envp = env,
                                   .log_path = "/nonexistent/dir/x.log",
                                   .run_path = "/nonexistent/dir/x.run"};
        pid_t pid = 0;
        memset(&ei, 0, sizeof(ei));
        assert_int_equal(spawner_spawn(sp, &rq, &pid, &ei), 0);
        status = wait_end(sp, pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 127);
        assert_int_not_equal(access(marker, F_OK), 0);
        free(cmd);
        free(marker);
    }
    /* Too large for one message: refused before it is sent. */
    big = xcalloc(1, 70000);
    memset(big, 'x', 69999);
    {
        const char *const big_argv[] = {"sh", "-c", big, NULL};
        struct spawn_request rq = {.program = "/bin/sh",
                                   .argv = big_argv,
                                   .envp = env,
                                   .log_path = "/dev/null",
                                   .run_path = "/dev/null"};
        pid_t pid = 0;
        memset(&ei, 0, sizeof(ei));
        assert_int_equal(spawner_spawn(sp, &rq, &pid, &ei), ERR_INVALID);
    }
    free(big);
    /* Still serving after both. */
    a = spawn(sp, "exit 0", kind, "c");
    assert_int_equal(wait_end(sp, a), 0);

    /* A dead helper says so; spawning then fails at once. */
    {
        pid_t h = helper_pid();
        const char *const true_argv[] = {"true", NULL};
        struct spawn_request rq = {.program = "/bin/true",
                                   .argv = true_argv,
                                   .envp = env,
                                   .log_path = "/dev/null",
                                   .run_path = "/dev/null"};
        pid_t pid = 0;
        int64_t give_up = now_ms() + WAIT_LIMIT_MS;
        assert_true(h > 0);
        assert_int_equal(kill(h, SIGKILL), 0);
        while (spawner_alive(sp) && now_ms() < give_up)
            nap();
        assert_false(spawner_alive(sp));
        memset(&ei, 0, sizeof(ei));
        assert_int_equal(spawner_spawn(sp, &rq, &pid, &ei), ERR_UNAVAILABLE);
    }
    spawner_stop(sp);
}

static void test_forked(void **state)
{
    (void)state;
    exercise(NULL);
}

static void test_program(void **state)
{
    (void)state;
    exercise(GPUAAS_SPAWNER_PROGRAM);
}

/* A helper that stops answering (here: stopped) is given up on, killed, and said gone. */
static void test_wedged_helper(void **state)
{
    struct spawner *sp = NULL;
    struct error_info ei = {0};
    const char *const argv[] = {"true", NULL};
    struct spawn_request rq = {.program = "/bin/true",
                               .argv = argv,
                               .envp = env,
                               .log_path = "/dev/null",
                               .run_path = "/dev/null"};
    pid_t pid = 0, h;
    (void)state;

    assert_int_equal(spawner_start(GPUAAS_SPAWNER_PROGRAM, &sp, &ei), 0);
    h = helper_pid();
    assert_true(h > 0);
    assert_int_equal(kill(h, SIGSTOP), 0);
    assert_int_equal(spawner_spawn(sp, &rq, &pid, &ei), ERR_UNAVAILABLE);
    assert_non_null(strstr(ei.message, "stopped answering"));
    assert_false(spawner_alive(sp));
    spawner_stop(sp); /* reaps the helper it killed */
    assert_true(kill(h, 0) < 0);
}

static void test_missing_program(void **state)
{
    struct spawner *sp = NULL;
    struct error_info ei = {0};
    (void)state;
    assert_int_equal(spawner_start("/nonexistent/gpuaas-spawner", &sp, &ei), ERR_UNAVAILABLE);
    assert_null(sp);
    assert_non_null(strstr(ei.message, "/nonexistent/gpuaas-spawner"));
}

static struct backend_event next_event(struct backend *b, const char *what)
{
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    struct backend_event ev;
    while (b->ops->poll(b, now_ms(), &ev, 1) == 0) {
        if (now_ms() > give_up)
            fail_msg("%s was not reported", what);
        nap();
    }
    return ev;
}

/* Waits until the local backend's workload id has printed "up" to its log. */
static void wait_started(const char *logs, int64_t id)
{
    char *path = xasprintf("%s/%" PRId64 ".log", logs, id);
    int64_t give_up = now_ms() + WAIT_LIMIT_MS;
    for (;;) {
        char *log = access(path, F_OK) == 0 ? slurp(path) : NULL;
        bool up = log && strstr(log, "up\n");
        free(log);
        if (up)
            break;
        if (now_ms() > give_up)
            fail_msg("workload %" PRId64 " never started", id);
        nap();
    }
    free(path);
}

/* The local backend outlives its spawner: what runs is still followed, the next launch works. */
static void test_local_outlives_spawner(void **state)
{
    char *logs = path_of("logs");
    struct local_options o = {.log_dir = logs, .run_uid = -1, .run_gid = -1};
    struct backend_device dev = {.gpu_id = 1, .uuid = "GPU-1", .index = 0, .milli = 1000};
    struct backend_replica rep = {
        .replica = 0, .node_id = 1, .node_name = "n", .devices = &dev, .n_devices = 1};
    struct backend_launch l = {.workload_id = 7,
                               .project_id = 1,
                               .command = "echo up; exec sleep 30",
                               .image = "",
                               .max_runtime_ms = -1,
                               .duration_ms = -1,
                               .replicas = &rep,
                               .n_replicas = 1};
    struct backend_event ev;
    struct error_info ei = {0};
    struct backend *b = backend_local_new(1, &o, &ei);
    pid_t h;
    (void)state;

    assert_non_null(b);
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), 0);
    h = helper_pid();
    assert_true(h > 0);
    assert_int_equal(kill(h, SIGKILL), 0);
    assert_int_equal(waitpid(h, NULL, 0) == h || errno == ECHILD, 1);
    wait_started(logs, 7); /* a stop before the work's exec would reach the keeper only */
    assert_int_equal(b->ops->poll(b, now_ms(), &ev, 1), 0); /* still running */
    assert_int_equal(b->ops->stop(b, 7, 2000, now_ms()), 0);
    ev = next_event(b, "the stopped work");
    assert_int_equal(ev.workload_id, 7);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    /* Not our child any more: its keeper's run file says how it ended. */
    assert_int_equal(ev.exit_code, -SIGTERM);

    l.workload_id = 8;
    l.command = "exit 4";
    assert_int_equal(b->ops->launch(b, &l, now_ms(), &ei), 0);
    ev = next_event(b, "work launched by the new spawner");
    assert_int_equal(ev.workload_id, 8);
    assert_int_equal(ev.exit_code, 4);
    b->ops->free(b);
    free(logs);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/gpuaas-spawner-test.XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char *cmd = xasprintf("rm -rf '%s'", g_dir);
    (void)state;
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    free(cmd);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forked),
        cmocka_unit_test(test_program),
        cmocka_unit_test(test_missing_program),
        cmocka_unit_test(test_wedged_helper),
        cmocka_unit_test(test_local_outlives_spawner),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, setup, teardown);
}
