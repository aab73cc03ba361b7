/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of src/base/run.c (a child process within a deadline) and of
 * timeutil's monotonic clock and saturating sum: exit codes, signals, the
 * deadline kill, output bounds, a missing program, standard input, the
 * environment, and looking at a child without waiting.
 */
#include "base/common.h"

#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "base/err.h"
#include "base/run.h"
#include "base/timeutil.h"

/* Runs /bin/sh -c script with spec's other fields. */
static int sh(const char *script, struct run_spec *spec, struct run_result *r,
              struct error_info *ei)
{
    const char *argv[] = {"sh", "-c", script, NULL};
    spec->path = "/bin/sh";
    spec->argv = argv;
    if (!spec->out_max)
        spec->out_max = 1 << 20;
    if (!spec->timeout_ms)
        spec->timeout_ms = 30000;
    return run_command(spec, r, ei);
}

static void test_exit_code_and_output(void **state)
{
    struct run_spec spec = {.err_max = 1024};
    struct run_result r;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(sh("echo out; echo err >&2; exit 3", &spec, &r, &ei), 0);
    assert_int_equal(r.status, 3);
    assert_string_equal(r.out.data, "out\n");
    assert_string_equal(r.err.data, "err\n");
    run_result_release(&r);

    memset(&spec, 0, sizeof(spec));
    assert_int_equal(sh("true", &spec, &r, &ei), 0);
    assert_int_equal(r.status, 0);
    assert_null(r.out.data); /* nothing written */
    assert_null(r.err.data);
    run_result_release(&r);
    assert_int_equal(ei.code, 0);
}

static void test_signal(void **state)
{
    struct run_spec spec = {0};
    struct run_result r;
    (void)state;

    assert_int_equal(sh("kill -TERM $$", &spec, &r, NULL), 0);
    assert_int_equal(r.status, -SIGTERM);
    run_result_release(&r);
}

/* Whether pid is gone (or a zombie waiting for whoever inherited it). */
static bool gone(long pid)
{
    char path[64], buf[512];
    FILE *f;
    const char *p;
    bool dead = true;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return true;
    if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) != NULL && p[1] == ' ')
        dead = p[2] == 'Z' || p[2] == 'X';
    fclose(f);
    return dead;
}

static void test_deadline_kills_the_group(void **state)
{
    char dir[] = "/tmp/test_base_run.XXXXXX", script[512], file[256], line[64];
    struct run_spec spec = {.timeout_ms = 300, .own_group = true};
    struct run_result r;
    struct error_info ei = {0};
    long pid = 0;
    FILE *f;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/pid", dir);
    /* A grandchild that keeps the output pipe open: only the group kill ends it. */
    snprintf(script, sizeof(script), "sleep 60 & echo $! > %s; echo partial; wait", file);
    assert_int_equal(sh(script, &spec, &r, &ei), ERR_UNAVAILABLE);
    assert_string_equal(ei.message, "'sh' timed out after 300 ms");
    f = fopen(file, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    pid = strtol(line, NULL, 10);
    assert_true(pid > 0);
    for (int i = 0; i < 200 && !gone(pid); i++)
        poll(NULL, 0, 10); /* SIGKILL is delivered at once; its reaper may take a moment */
    assert_true(gone(pid));
    unlink(file);
    rmdir(dir);
}

static void test_output_bound(void **state)
{
    const char *argv[] = {"yes", NULL};
    struct run_spec spec = {.path = "yes", .argv = argv, .out_max = 1000, .timeout_ms = 30000};
    struct run_result r;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(run_command(&spec, &r, &ei), ERR_TOO_LARGE);
    assert_string_equal(ei.message, "'yes' wrote more than 1000 bytes");

    /* Standard error beyond its bound is dropped, not an error. */
    memset(&spec, 0, sizeof(spec));
    spec.err_max = 100;
    assert_int_equal(sh("head -c 100000 /dev/zero | tr '\\0' x >&2; echo ok", &spec, &r, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out.data, "ok\n");
    assert_true(r.err.len <= 100);
    run_result_release(&r);
}

static void test_missing_program(void **state)
{
    const char *argv[] = {"gpuaas-no-such-program", NULL};
    struct run_spec spec = {.path = "gpuaas-no-such-program", .argv = argv, .timeout_ms = 1000};
    struct run_result r;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(run_command(&spec, &r, &ei), ERR_UNAVAILABLE);
    assert_string_equal(ei.message,
                        "could not run 'gpuaas-no-such-program': No such file or directory");
    memset(&ei, 0, sizeof(ei));
    spec.path = "/nonexistent/gpuaas";
    assert_int_equal(run_command(&spec, &r, &ei), ERR_UNAVAILABLE);
    assert_string_equal(ei.message,
                        "could not run '/nonexistent/gpuaas': No such file or directory");
}

static void test_stdin_and_environment(void **state)
{
    static const char *const env[] = {"GREETING=hello", NULL};
    struct run_spec spec = {.envp = env, .stdin_text = "from stdin\n"};
    struct run_result r;
    char *big = malloc((1 << 20) + 1);
    (void)state;

    assert_int_equal(sh("echo \"$GREETING ${HOME-unset}\"; cat", &spec, &r, NULL), 0);
    assert_string_equal(r.out.data, "hello unset\nfrom stdin\n");
    run_result_release(&r);

    /* More than a pipe holds, to a child that reads it only at the end. */
    memset(big, 'x', 1 << 20);
    big[1 << 20] = '\0';
    memset(&spec, 0, sizeof(spec));
    spec.stdin_text = big;
    assert_int_equal(sh("sleep 0.1; wc -c", &spec, &r, NULL), 0);
    assert_int_equal(strtol(r.out.data, NULL, 10), 1 << 20);
    run_result_release(&r);
    free(big);
}

static void test_poll_without_waiting(void **state)
{
    const char *argv[] = {"sh", "-c", "read line; echo \"got $line\"; exit 7", NULL};
    struct run_spec spec = {.path = "/bin/sh",
                            .argv = argv,
                            .stdin_text = "x\n",
                            .out_max = 100,
                            .err_max = 100,
                            .timeout_ms = 30000};
    struct run_proc p;
    int status = -100, rc;
    (void)state;

    assert_int_equal(run_start(&spec, &p, NULL), 0);
    while ((rc = run_poll(&p, &status, NULL)) == 0)
        poll(NULL, 0, 1);
    assert_int_equal(rc, 1);
    assert_int_equal(status, 7);
    assert_string_equal(p.out.data, "got x\n");
    assert_int_equal(p.pid, 0);
    run_abort(&p);
    run_abort(&p); /* the second time: nothing */

    /* A child killed while it runs is reaped: nothing is left to wait for. */
    argv[2] = "sleep 60";
    assert_int_equal(run_start(&spec, &p, NULL), 0);
    assert_int_equal(run_poll(&p, &status, NULL), 0);
    {
        pid_t pid = p.pid;
        run_abort(&p);
        assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
    }
}

static void test_time_add_ms_saturates(void **state)
{
    int64_t a, b;
    (void)state;

    assert_int_equal(time_add_ms(5, 10), 15);
    assert_int_equal(time_add_ms(7, 0), 7);
    assert_int_equal(time_add_ms(7, -3), 7); /* nothing is subtracted */
    assert_true(time_add_ms(INT64_MAX - 5, 5) == INT64_MAX);
    assert_true(time_add_ms(INT64_MAX - 5, 10) == INT64_MAX);
    assert_true(time_add_ms(INT64_MAX, INT64_MAX) == INT64_MAX);
    assert_true(time_add_ms(-10, INT64_MAX) == INT64_MAX - 10);
    a = time_mono_ms();
    b = time_mono_ms();
    assert_true(a > 0 && b >= a);
    assert_true(b - time_mono_ns() / 1000000 <= 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_and_output),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_deadline_kills_the_group),
        cmocka_unit_test(test_output_bound),
        cmocka_unit_test(test_missing_program),
        cmocka_unit_test(test_stdin_and_environment),
        cmocka_unit_test(test_poll_without_waiting),
        cmocka_unit_test(test_time_add_ms_saturates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
