/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the simulated backend (src/backend/sim.c): durations and speed,
 * stop with a grace shorter and longer than the exit delay, max runtime,
 * poll order and exactly-once delivery, adoption after a restart, a
 * randomized comparison with a naive model, and a run of 200,000 workloads.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "backend/backend.h"
#include "base/alloc.h"

static const struct backend_device one_gpu = {
    .gpu_id = 1, .uuid = "SIM-c-n-0", .index = 0, .milli = 1000};
static const struct backend_replica one_replica = {
    .replica = 0, .node_id = 1, .node_name = "n", .devices = &one_gpu, .n_devices = 1};

static struct backend_launch work(int64_t id, int64_t duration_ms, int64_t max_runtime_ms)
{
    return (struct backend_launch){.workload_id = id,
                                   .project_id = 1,
                                   .command = "",
                                   .image = "",
                                   .duration_ms = duration_ms,
                                   .max_runtime_ms = max_runtime_ms,
                                   .replicas = &one_replica,
                                   .n_replicas = 1};
}

static struct backend *sim(int64_t speed, int64_t exit_after_signal_ms)
{
    struct sim_options o = {.speed = speed, .exit_after_signal_ms = exit_after_signal_ms};
    struct backend *b = backend_sim_new(7, &o);
    assert_non_null(b);
    assert_string_equal(b->ops->name, "sim");
    assert_int_equal(b->cluster_id, 7);
    return b;
}

static void launch(struct backend *b, int64_t id, int64_t duration_ms, int64_t max_runtime_ms,
                   int64_t now_ms)
{
    struct backend_launch l = work(id, duration_ms, max_runtime_ms);
    struct error_info ei = {0};
    int rc = b->ops->launch(b, &l, now_ms, &ei);
    if (rc != 0)
        fail_msg("launch %" PRId64 ": %d %s", id, rc, ei.message);
}

/* Polls at now_ms expecting exactly one event, and returns it. */
static struct backend_event poll_one(struct backend *b, int64_t now_ms)
{
    struct backend_event ev[4];
    size_t n = b->ops->poll(b, now_ms, ev, 4);
    assert_int_equal(n, 1);
    return ev[0];
}

static void assert_event(struct backend_event ev, int64_t id, int64_t at_ms, enum backend_end how,
                         int exit_code)
{
    assert_int_equal(ev.workload_id, id);
    assert_int_equal(ev.at_ms, at_ms);
    assert_int_equal(ev.how, how);
    assert_int_equal(ev.exit_code, exit_code);
}

static void assert_nothing(struct backend *b, int64_t now_ms)
{
    struct backend_event ev[1];
    assert_int_equal(b->ops->poll(b, now_ms, ev, 1), 0);
}

static void test_durations_and_speed(void **state)
{
    struct backend *b = sim(1, 0);
    (void)state;

    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    launch(b, 1, 1000, -1, 0);
    launch(b, 2, 500, -1, 100);
    assert_int_equal(b->ops->next_event_ms(b), 600);
    assert_nothing(b, 599);
    assert_event(poll_one(b, 600), 2, 600, BACKEND_EXITED, 0);
    assert_int_equal(b->ops->next_event_ms(b), 1000);
    /* Polled late: reported with the time it really ended. */
    assert_event(poll_one(b, 5000), 1, 1000, BACKEND_EXITED, 0);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    /* Zero duration ends at once. */
    launch(b, 3, 0, -1, 6000);
    assert_event(poll_one(b, 6000), 3, 6000, BACKEND_EXITED, 0);
    b->ops->free(b);

    /* A minute of work in a second at speed 60; a positive span never rounds to 0. */
    b = sim(60, 0);
    launch(b, 1, 60000, -1, 1000);
    launch(b, 2, 1, -1, 1000);
    assert_event(poll_one(b, 1001), 2, 1001, BACKEND_EXITED, 0);
    assert_event(poll_one(b, 2000), 1, 2000, BACKEND_EXITED, 0);
    b->ops->free(b);

    /* Speeds below 1 count as 1; NULL options are real time without exit delay. */
    b = sim(0, 0);
    launch(b, 1, 300, -1, 0);
    assert_int_equal(b->ops->next_event_ms(b), 300);
    b->ops->free(b);
    b = sim(-5, 0);
    launch(b, 1, 300, -1, 0);
    assert_int_equal(b->ops->next_event_ms(b), 300);
    b->ops->free(b);
    b = backend_sim_new(1, NULL);
    launch(b, 1, 300, -1, 0);
    assert_int_equal(b->ops->next_event_ms(b), 300);
    b->ops->free(b);
}

static void test_free_null_and_unused(void **state)
{
    struct backend *b = backend_sim_new(1, NULL);
    (void)state;
    b->ops->free(NULL);
    b->ops->free(b);
}

static void test_work_without_end_runs_until_stopped(void **state)
{
    struct backend *b = sim(1, 1000);
    (void)state;
    launch(b, 1, -1, -1, 0);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    assert_nothing(b, INT64_MAX - 1);
    assert_int_equal(b->ops->stop(b, 1, 30000, 50000), 0);
    assert_int_equal(b->ops->next_event_ms(b), 51000);
    assert_event(poll_one(b, 60000), 1, 51000, BACKEND_STOPPED, -15);
    /* Durations near the end of time never overflow: they end never. */
    launch(b, 2, INT64_MAX, -1, INT64_MAX - 10);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);
    b->ops->free(b);
}

static void test_max_runtime(void **state)
{
    struct backend *b = sim(1, 0);
    (void)state;
    launch(b, 1, 1000, 400, 0); /* times out first */
    launch(b, 2, -1, 500, 0);   /* would never end */
    launch(b, 3, 450, 450, 0);  /* as long as its limit: ends by itself */
    launch(b, 4, 100, 0, 0);    /* a zero limit ends it at once */
    assert_event(poll_one(b, 0), 4, 0, BACKEND_TIMEOUT, -9);
    assert_event(poll_one(b, 400), 1, 400, BACKEND_TIMEOUT, -9);
    assert_event(poll_one(b, 450), 3, 450, BACKEND_EXITED, 0);
    assert_event(poll_one(b, 500), 2, 500, BACKEND_TIMEOUT, -9);
    b->ops->free(b);

    b = sim(10, 0);
    launch(b, 1, 100000, 4000, 0);
    assert_event(poll_one(b, 1000), 1, 400, BACKEND_TIMEOUT, -9);
    b->ops->free(b);
}

static void test_stop_grace_longer_than_exit(void **state)
{
    struct backend *b = sim(1, 2000);
    (void)state;
    launch(b, 1, -1, -1, 0);
    assert_int_equal(b->ops->stop(b, 1, 30000, 100), 0);
    assert_int_equal(b->ops->next_event_ms(b), 2100);
    assert_nothing(b, 2099);
    assert_event(poll_one(b, 2100), 1, 2100, BACKEND_STOPPED, -15);
    /* Equal grace: it exits on the signal, just in time. */
    launch(b, 2, -1, -1, 0);
    b->ops->stop(b, 2, 2000, 3000);
    assert_event(poll_one(b, 5000), 2, 5000, BACKEND_STOPPED, -15);
    b->ops->free(b);

    /* Speed divides the exit delay too. */
    b = sim(10, 2000);
    launch(b, 1, -1, -1, 0);
    b->ops->stop(b, 1, 30000, 100);
    assert_event(poll_one(b, 1000), 1, 300, BACKEND_STOPPED, -15);
    b->ops->free(b);
}

static void test_stop_grace_shorter_than_exit_kills(void **state)
{
    struct backend *b = sim(1, 2000);
    (void)state;
    launch(b, 1, -1, -1, 0);
    launch(b, 2, -1, -1, 0);
    b->ops->stop(b, 1, 500, 100);
    b->ops->stop(b, 2, 0, 100); /* no grace: killed, at least 1 ms later */
    assert_int_equal(b->ops->next_event_ms(b), 101);
    assert_event(poll_one(b, 101), 2, 101, BACKEND_STOPPED, -9);
    assert_event(poll_one(b, 600), 1, 600, BACKEND_STOPPED, -9);
    b->ops->free(b);

    /* Without an exit delay the signal ends it 1 ms later. */
    b = sim(1, 0);
    launch(b, 1, -1, -1, 0);
    b->ops->stop(b, 1, 0, 100);
    assert_event(poll_one(b, 101), 1, 101, BACKEND_STOPPED, -15);
    b->ops->free(b);
}

static void test_stop_edge_cases(void **state)
{
    struct backend *b = sim(1, 2000);
    (void)state;

    /* Unknown: a no-op. */
    assert_int_equal(b->ops->stop(b, 42, 1000, 0), 0);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);

    /* Work that ends by itself before the stop takes effect keeps its own end. */
    launch(b, 1, 150, -1, 0);
    b->ops->stop(b, 1, 30000, 100);
    assert_event(poll_one(b, 5000), 1, 150, BACKEND_EXITED, 0);
    launch(b, 2, -1, 300, 0);
    b->ops->stop(b, 2, 30000, 100);
    assert_event(poll_one(b, 5000), 2, 300, BACKEND_TIMEOUT, -9);

    /* Ended but not polled yet: the stop changes nothing. */
    launch(b, 3, 100, -1, 6000);
    assert_int_equal(b->ops->stop(b, 3, 0, 6200), 0);
    assert_event(poll_one(b, 6200), 3, 6100, BACKEND_EXITED, 0);
    /* Polled already: unknown again, a no-op. */
    assert_int_equal(b->ops->stop(b, 3, 0, 6300), 0);
    assert_nothing(b, INT64_MAX - 1);

    /* A second stop with a shorter grace brings the end forward; a longer one does not. */
    launch(b, 4, -1, -1, 10000);
    b->ops->stop(b, 4, 30000, 10000); /* -15 at 12000 */
    b->ops->stop(b, 4, 60000, 10500); /* later: ignored */
    assert_int_equal(b->ops->next_event_ms(b), 12000);
    b->ops->stop(b, 4, 100, 10600); /* killed at 10700 */
    assert_int_equal(b->ops->next_event_ms(b), 10700);
    assert_event(poll_one(b, 20000), 4, 10700, BACKEND_STOPPED, -9);
    b->ops->free(b);
}

static void test_poll_order_and_exactly_once(void **state)
{
    struct backend *b = sim(1, 0);
    struct backend_event ev[10];
    size_t n;
    (void)state;

    launch(b, 5, 100, -1, 0);
    launch(b, 3, 100, -1, 0);
    launch(b, 9, 100, -1, 0);
    launch(b, 1, 100, -1, 0);
    launch(b, 2, 50, -1, 0);
    launch(b, 8, 70, -1, 30); /* ends at 100 too */
    assert_int_equal(b->ops->poll(b, 1000, ev, 0), 0);
    n = b->ops->poll(b, 1000, ev, 2);
    assert_int_equal(n, 2);
    assert_event(ev[0], 2, 50, BACKEND_EXITED, 0);
    assert_event(ev[1], 1, 100, BACKEND_EXITED, 0);
    n = b->ops->poll(b, 1000, ev, 10);
    assert_int_equal(n, 4);
    assert_int_equal(ev[0].workload_id, 3);
    assert_int_equal(ev[1].workload_id, 5);
    assert_int_equal(ev[2].workload_id, 8);
    assert_int_equal(ev[3].workload_id, 9);
    assert_int_equal(b->ops->poll(b, 1000, ev, 10), 0);
    assert_int_equal(b->ops->poll(b, INT64_MAX - 1, ev, 10), 0);
    /* A polled id is forgotten and may run again. */
    launch(b, 3, 10, -1, 2000);
    assert_event(poll_one(b, 2010), 3, 2010, BACKEND_EXITED, 0);
    b->ops->free(b);
}

static void test_launch_errors(void **state)
{
    struct backend *b = sim(1, 0);
    struct backend_launch l = work(1, 100, -1);
    struct error_info ei = {0};
    (void)state;

    l.n_replicas = 0;
    assert_int_equal(b->ops->launch(b, &l, 0, &ei), ERR_INVALID);
    assert_non_null(strstr(ei.message, "no replicas"));
    l = work(1, 100, -1);
    l.replicas = NULL;
    ei = (struct error_info){0};
    assert_int_equal(b->ops->launch(b, &l, 0, &ei), ERR_INVALID);
    l = work(0, 100, -1);
    ei = (struct error_info){0};
    assert_int_equal(b->ops->launch(b, &l, 0, &ei), ERR_INVALID);
    assert_int_equal(b->ops->launch(b, NULL, 0, NULL), ERR_INVALID);
    assert_int_equal(b->ops->next_event_ms(b), INT64_MAX);

    launch(b, 1, 100, -1, 0);
    l = work(1, 5, -1);
    ei = (struct error_info){0};
    assert_int_equal(b->ops->launch(b, &l, 10, &ei), ERR_CONFLICT);
    assert_non_null(strstr(ei.message, "already running"));
    /* Ended but not yet polled: still known, still a conflict; the first is untouched. */
    assert_int_equal(b->ops->launch(b, &l, 200, NULL), ERR_CONFLICT);
    assert_event(poll_one(b, 200), 1, 100, BACKEND_EXITED, 0);
    b->ops->free(b);
}

static void test_adopt_after_restart(void **state)
{
    struct backend *b = sim(1, 0);
    struct backend_launch l;
    struct error_info ei = {0};
    (void)state;

    /* The daemon was down from 500 to 5000: work that ended meanwhile is reported with its end. */
    l = work(1, 1000, -1);
    assert_int_equal(b->ops->adopt(b, &l, 0, 5000, &ei), 0);
    l = work(2, 10000, -1);
    assert_int_equal(b->ops->adopt(b, &l, 0, 5000, &ei), 0);
    l = work(3, -1, 3000);
    assert_int_equal(b->ops->adopt(b, &l, 200, 5000, &ei), 0);
    l = work(4, -1, -1);
    assert_int_equal(b->ops->adopt(b, &l, 100, 5000, &ei), 0);
    assert_int_equal(b->ops->next_event_ms(b), 1000);
    {
        struct backend_event ev[8];
        size_t n = b->ops->poll(b, 5000, ev, 8);
        assert_int_equal(n, 2);
        assert_event(ev[0], 1, 1000, BACKEND_EXITED, 0);
        assert_event(ev[1], 3, 3200, BACKEND_TIMEOUT, -9);
    }
    assert_int_equal(b->ops->next_event_ms(b), 10000);
    /* Adopted work can be stopped like launched work. */
    b->ops->stop(b, 4, 0, 6000);
    assert_event(poll_one(b, 6001), 4, 6001, BACKEND_STOPPED, -15);
    assert_event(poll_one(b, 10000), 2, 10000, BACKEND_EXITED, 0);

    /* Errors: started in the future, a conflict, no replicas. */
    l = work(5, 100, -1);
    ei = (struct error_info){0};
    assert_int_equal(b->ops->adopt(b, &l, 20000, 10000, &ei), ERR_INVALID);
    assert_int_equal(b->ops->adopt(b, &l, 9000, 10000, NULL), 0);
    assert_int_equal(b->ops->adopt(b, &l, 9000, 10000, NULL), ERR_CONFLICT);
    l = work(6, 100, -1);
    l.n_replicas = 0;
    assert_int_equal(b->ops->adopt(b, &l, 9000, 10000, NULL), ERR_INVALID);
    b->ops->free(b);
}

/* ---- randomized comparison with a naive model ---- */

struct naive {
    int64_t end; /* INT64_MAX: none */
    enum backend_end how;
    int code;
    bool known;
};

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (rng_state >> 33) % n;
}

static void test_matches_naive_model(void **state)
{
    enum { IDS = 300, STEPS = 20000 };
    const int64_t speed = 3, exit_after = 900;
    struct backend *b = sim(speed, exit_after);
    struct naive *m = xcalloc(IDS + 1, sizeof(*m));
    int64_t now = 1000;
    (void)state;

    rng_state = 12345;
    for (int step = 0; step < STEPS; step++) {
        int64_t id = 1 + (int64_t)rnd(IDS);
        switch (rnd(4)) {
        case 0: { /* launch */
            int64_t dur = rnd(5) == 0 ? -1 : (int64_t)rnd(3000);
            int64_t max = rnd(3) == 0 ? (int64_t)rnd(3000) : -1;
            struct backend_launch l = work(id, dur, max);
            int rc = b->ops->launch(b, &l, now, NULL);
            if (m[id].known) {
                assert_int_equal(rc, ERR_CONFLICT);
                break;
            }
            assert_int_equal(rc, 0);
            {
                int64_t run = dur < 0 ? INT64_MAX : (dur > 0 && dur / speed == 0 ? 1 : dur / speed);
                int64_t lim = max < 0 ? INT64_MAX : (max > 0 && max / speed == 0 ? 1 : max / speed);
                m[id] = (struct naive){.known = true, .end = INT64_MAX};
                if (lim < run)
                    m[id] = (struct naive){now + lim, BACKEND_TIMEOUT, -9, true};
                else if (run != INT64_MAX)
                    m[id] = (struct naive){now + run, BACKEND_EXITED, 0, true};
            }
            break;
        }
        case 1: { /* stop */
            int64_t grace = (int64_t)rnd(2000);
            bool killed = grace < exit_after;
            int64_t d = (killed ? grace : exit_after) / speed;
            int64_t end = now + (d > 0 ? d : 1);
            assert_int_equal(b->ops->stop(b, id, grace, now), 0);
            if (m[id].known && m[id].end > now && end <= m[id].end)
                m[id] = (struct naive){end, BACKEND_STOPPED, killed ? -9 : -15, true};
            break;
        }
        case 2: { /* poll, in small batches */
            struct backend_event ev[7];
            size_t n = b->ops->poll(b, now, ev, 7);
            int64_t next = INT64_MAX;
            for (size_t i = 0; i < n; i++) {
                int64_t w = ev[i].workload_id;
                assert_true(m[w].known);
                assert_int_equal(ev[i].at_ms, m[w].end);
                assert_int_equal(ev[i].how, m[w].how);
                assert_int_equal(ev[i].exit_code, m[w].code);
                assert_true(ev[i].at_ms <= now);
                /* Nothing left that should have come first. */
                for (int64_t k = 1; k <= IDS; k++) {
                    if (m[k].known && k != w)
                        assert_true(m[k].end > m[w].end || (m[k].end == m[w].end && k > w));
                }
                m[w].known = false;
            }
            if (n < 7) {
                for (int64_t k = 1; k <= IDS; k++)
                    assert_false(m[k].known && m[k].end <= now);
            }
            for (int64_t k = 1; k <= IDS; k++) {
                if (m[k].known && m[k].end < next)
                    next = m[k].end;
            }
            assert_int_equal(b->ops->next_event_ms(b), next);
            break;
        }
        default:
            now += (int64_t)rnd(400);
        }
    }
    free(m);
    b->ops->free(b);
}

/* ---- volume ---- */

static void test_many_workloads(void **state)
{
    enum { N = 200000 };
    struct backend *b = sim(60, 30000);
    bool *seen = xcalloc(N + 1, sizeof(*seen));
    struct backend_event *ev = xcalloc(1000, sizeof(*ev));
    size_t total = 0;
    int64_t now = 0, last_at = INT64_MIN, last_id = 0;
    (void)state;

    rng_state = 99;
    for (int64_t id = 1; id <= N; id++) {
        launch(b, id, rnd(10) == 0 ? -1 : (int64_t)rnd(86400000), rnd(4) == 0 ? 3600000 : -1, now);
        now += (int64_t)rnd(3);
    }
    for (int64_t id = 3; id <= N; id += 3)
        assert_int_equal(b->ops->stop(b, id, (int64_t)rnd(60000), now), 0);
    for (;;) {
        int64_t next = b->ops->next_event_ms(b);
        size_t n;
        if (next == INT64_MAX)
            break;
        if (next > now)
            now = next;
        n = b->ops->poll(b, now + 1000, ev, 1000);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
            int64_t id = ev[i].workload_id;
            assert_true(id >= 1 && id <= N);
            assert_false(seen[id]);
            seen[id] = true;
            assert_true(ev[i].at_ms > last_at || (ev[i].at_ms == last_at && id > last_id));
            last_at = ev[i].at_ms;
            last_id = id;
        }
        total += n;
    }
    /* Whatever never ends by itself was not stopped: stop it now, and all are accounted for. */
    for (int64_t id = 1; id <= N; id++) {
        if (!seen[id])
            b->ops->stop(b, id, 0, now + 1000);
    }
    while (b->ops->next_event_ms(b) != INT64_MAX) {
        size_t n = b->ops->poll(b, INT64_MAX - 1, ev, 1000);
        for (size_t i = 0; i < n; i++) {
            assert_false(seen[ev[i].workload_id]);
            seen[ev[i].workload_id] = true;
        }
        total += n;
    }
    assert_int_equal(total, N);
    free(ev);
    free(seen);
    b->ops->free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations_and_speed),
        cmocka_unit_test(test_free_null_and_unused),
        cmocka_unit_test(test_work_without_end_runs_until_stopped),
        cmocka_unit_test(test_max_runtime),
        cmocka_unit_test(test_stop_grace_longer_than_exit),
        cmocka_unit_test(test_stop_grace_shorter_than_exit_kills),
        cmocka_unit_test(test_stop_edge_cases),
        cmocka_unit_test(test_poll_order_and_exactly_once),
        cmocka_unit_test(test_launch_errors),
        cmocka_unit_test(test_adopt_after_restart),
        cmocka_unit_test(test_matches_naive_model),
        cmocka_unit_test(test_many_workloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
