/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_engine_loop.c: the real engine on a temporary SQLite store, driven
 * through a fake backend (fake_backend.h) with every optional entry: a
 * workload's life (submit, launch, end, allocations closed), queue-ahead
 * (staged behind running work, handed its GPUs, taken back), device
 * reports moving allocations, and a restart (running work adopted, work
 * ended meanwhile closed with its real end, the sweep once between the
 * adoption and any launch), and a reclaim's first try kept across a
 * rebuild from the store, and nodes discovery finds or loses audited and
 * read back by the what-if. Neither Slurm nor root is needed.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "engine/engine-int.h" /* the engine's lock, held as a round holds it */
#include "engine/engine.h"
#include "fake_backend.h"
#include "support/teststore.h"

struct env {
    struct teststore db;
    struct arena a;
    struct fake_world w;
    struct engine *e;
    int64_t project, flavor, node, cls, gpus[2];
};

static struct row get_row(struct env *t, const struct resource_def *d, int64_t id)
{
    struct error_info ei = {0};
    struct row r;
    if (store_get(t->db.c, d, id, &t->a, &r, &ei) < 0)
        fail_msg("get %s %" PRId64 ": %s", d->name, id, ei.message);
    return r;
}

static int64_t get_int(const struct resource_def *d, const struct row *r, const char *f)
{
    const struct value *v = model_get(d, r, f);
    return v->null ? -1 : v->i;
}

/* A workload's allocation rows (all, or only the open ones). */
static size_t allocations(struct env *t, int64_t wid, bool open_only, struct row **ret)
{
    struct store_filter f;
    struct error_info ei = {0};
    size_t n = 0;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ALLOCATIONS_WORKLOAD_ID, wid);
    if (open_only)
        store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    if (store_list_all(t->db.c, &model_allocations, &f, &t->a, ret, &n, &ei) < 0)
        fail_msg("allocations: %s", ei.message);
    return n;
}

/* How many events of that type a workload has. */
static size_t count_events(struct env *t, int64_t wid, const char *type)
{
    struct store_filter f;
    struct error_info ei = {0};
    struct row *rows;
    size_t n = 0, k = 0;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_EVENTS_WORKLOAD_ID, wid);
    if (store_list_all(t->db.c, &model_events, &f, &t->a, &rows, &n, &ei) < 0)
        fail_msg("events: %s", ei.message);
    for (size_t i = 0; i < n; i++)
        k += strcmp(row_str(&rows[i], F_EVENTS_TYPE), type) == 0;
    return k;
}

/* The fleet: one cluster, one node "n1" with two GPUs; one project and a one-GPU flavor. */
static void seed(struct env *t)
{
    struct row r;
    int64_t org, cluster, cls;

    r = teststore_row(&model_organizations, &t->a);
    row_set_str(&r, &t->a, F_ORGANIZATIONS_NAME, "acme");
    org = teststore_insert(&t->db, &model_organizations, &r);
    r = teststore_row(&model_projects, &t->a);
    row_set_int(&r, F_PROJECTS_ORG_ID, org);
    row_set_str(&r, &t->a, F_PROJECTS_NAME, "vision");
    row_set_int(&r, F_PROJECTS_WEIGHT, 1);
    t->project = teststore_insert(&t->db, &model_projects, &r);
    r = teststore_row(&model_gpu_classes, &t->a);
    row_set_str(&r, &t->a, F_GPU_CLASSES_NAME, "h100");
    cls = teststore_insert(&t->db, &model_gpu_classes, &r);
    t->cls = cls;
    r = teststore_row(&model_clusters, &t->a);
    row_set_str(&r, &t->a, F_CLUSTERS_NAME, "c1");
    row_set_str(&r, &t->a, F_CLUSTERS_BACKEND, "sim"); /* the fake takes every cluster */
    cluster = teststore_insert(&t->db, &model_clusters, &r);
    r = teststore_row(&model_nodes, &t->a);
    row_set_int(&r, F_NODES_CLUSTER_ID, cluster);
    row_set_str(&r, &t->a, F_NODES_NAME, "n1");
    row_set_str(&r, &t->a, F_NODES_STATE, "ready");
    row_set_int(&r, F_NODES_CPU_MILLI, 64000);
    row_set_int(&r, F_NODES_MEMORY_MIB, 512000);
    t->node = teststore_insert(&t->db, &model_nodes, &r);
    for (int i = 0; i < 2; i++) {
        r = teststore_row(&model_gpus, &t->a);
        row_set_int(&r, F_GPUS_NODE_ID, t->node);
        row_set_int(&r, F_GPUS_INDEX, i);
        row_set_int(&r, F_GPUS_GPU_CLASS_ID, cls);
        row_set_str(&r, &t->a, F_GPUS_HEALTH, "ok");
        t->gpus[i] = teststore_insert(&t->db, &model_gpus, &r);
    }
    r = teststore_row(&model_flavors, &t->a);
    row_set_str(&r, &t->a, F_FLAVORS_NAME, "h100.1x");
    row_set_int(&r, F_FLAVORS_GPU_CLASS_ID, cls);
    row_set_int(&r, F_FLAVORS_GPU_MILLI, 1000);
    row_set_int(&r, F_FLAVORS_VCPUS, 1);
    row_set_int(&r, F_FLAVORS_MEMORY_MIB, 1024);
    row_set_int(&r, F_FLAVORS_ACTIVE, 1);
    t->flavor = teststore_insert(&t->db, &model_flavors, &r);
}

/* A queued workload of that class, committed, then handed to the engine when one runs. */
static int64_t submit_as(struct env *t, const char *pclass, int priority)
{
    struct row r = teststore_row(&model_workloads, &t->a);
    int64_t id, now = time_now_ms();
    row_set_int(&r, F_WORKLOADS_PROJECT_ID, t->project);
    row_set_int(&r, F_WORKLOADS_FLAVOR_ID, t->flavor);
    row_set_int(&r, F_WORKLOADS_REPLICAS, 1);
    row_set_str(&r, &t->a, F_WORKLOADS_COMMAND, "true");
    row_set_str(&r, &t->a, F_WORKLOADS_PRIORITY_CLASS, pclass);
    row_set_int(&r, F_WORKLOADS_PRIORITY, priority);
    row_set_str(&r, &t->a, F_WORKLOADS_STATE, "queued");
    row_set_str(&r, &t->a, F_WORKLOADS_REASON, "queued");
    row_set_int(&r, F_WORKLOADS_SUBMITTED_MS, now);
    row_set_int(&r, F_WORKLOADS_CREATED_AT, now / 1000);
    row_set_int(&r, F_WORKLOADS_UPDATED_AT, now / 1000);
    id = teststore_insert(&t->db, &model_workloads, &r);
    if (t->e)
        engine_submitted(t->e, id);
    return id;
}

static int64_t submit(struct env *t, int priority)
{
    return submit_as(t, "opportunistic", priority);
}

static void start(struct env *t)
{
    struct engine_options opt;
    struct error_info ei = {0};
    engine_options_init(&opt);
    opt.tick_ms = 20;
    fake_settings(&opt.backends, &t->w);
    if (engine_start(t->db.s, &opt, &t->e, &ei) < 0)
        fail_msg("engine_start: %s", ei.message);
}

static void stop(struct env *t)
{
    engine_stop(t->e);
    t->e = NULL;
}

static const char *state_of(struct env *t, int64_t id)
{
    struct row w = get_row(t, &model_workloads, id);
    return row_str(&w, F_WORKLOADS_STATE);
}

/* Runs passes until workload id is in state (5 s at most). */
static void wait_state(struct env *t, int64_t id, const char *state)
{
    for (int i = 0; i < 500; i++) {
        if (strcmp(state_of(t, id), state) == 0)
            return;
        engine_sync(t->e);
    }
    fail_msg("workload %" PRId64 " is %s, not %s", id, state_of(t, id), state);
}

/* Runs passes until the fake has seen call (5 s at most). */
static void wait_call(struct env *t, const char *c)
{
    for (int i = 0; i < 500 && fake_call(&t->w, c) < 0; i++)
        engine_sync(t->e);
    if (fake_call(&t->w, c) < 0)
        fail_msg("the backend was never asked '%s'", c);
}

static int setup(void **state)
{
    struct env *t = xcalloc(1, sizeof(*t));
    struct store_options so = {.n_conns = 4, .busy_timeout_ms = 5000, .sqlite_sync_full = false};

    log_set_level(LOG_ERROR);
    teststore_open(&t->db, "engine", &so);
    arena_init(&t->a);
    fake_world_init(&t->w);
    seed(t);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct env *t = *state;
    stop(t);
    teststore_close(&t->db);
    arena_release(&t->a);
    fake_world_release(&t->w);
    free(t);
    return 0;
}

/* Submitted work is launched, and its end closes it: succeeded, allocations ended there. */
static void test_life(void **state)
{
    struct env *t = *state;
    struct row *al, w;
    int64_t id, end;
    char call[32];

    start(t);
    id = submit(t, 0);
    snprintf(call, sizeof(call), "launch %" PRId64, id);
    wait_call(t, call);
    wait_state(t, id, "running");
    assert_int_equal(allocations(t, id, true, &al), 1);
    end = time_now_ms();
    fake_end(&t->w, id, BACKEND_EXITED, 0, end);
    wait_state(t, id, "succeeded");
    w = get_row(t, &model_workloads, id);
    assert_int_equal(get_int(&model_workloads, &w, "exit_code"), 0);
    assert_int_equal(allocations(t, id, true, &al), 0);
    assert_int_equal(allocations(t, id, false, &al), 1);
    assert_int_equal(get_int(&model_allocations, &al[0], "ended_ms"), end);
    assert_string_equal(row_str(&al[0], F_ALLOCATIONS_END_REASON), "succeeded");
}

/* Occupies both GPUs with running work; returns the first one's id (the second in *ret_b). */
static int64_t fill(struct env *t, int64_t *ret_b)
{
    int64_t a = submit(t, 0), b = submit(t, 0);
    wait_state(t, a, "running");
    wait_state(t, b, "running");
    *ret_b = b;
    return a;
}

/*
 * Queue-ahead: with both GPUs busy, the next workload is staged in the
 * backend behind running work (launch_after, queued_after in the store);
 * when that work ends the staged one runs on its GPU from that moment, with
 * no launch of its own.
 */
static void test_queue_ahead(void **state)
{
    struct env *t = *state;
    struct row w, *al, *held;
    int64_t a, b, c, after, end;
    char call[48];

    t->w.queue_ahead = true;
    start(t);
    a = fill(t, &b);
    c = submit(t, 0);
    for (int i = 0; i < 500 && fake_count(&t->w, "after ") == 0; i++)
        engine_sync(t->e);
    assert_int_equal(fake_count(&t->w, "after "), 1);
    w = get_row(t, &model_workloads, c);
    after = get_int(&model_workloads, &w, "queued_after");
    assert_true(after == a || after == b);
    assert_string_equal(row_str(&w, F_WORKLOADS_STATE), "queued");
    snprintf(call, sizeof(call), "after %" PRId64 " %" PRId64, c, after);
    assert_true(fake_call(&t->w, call) >= 0);
    assert_int_equal(allocations(t, after, true, &held), 1);

    end = time_now_ms();
    fake_end(&t->w, after, BACKEND_EXITED, 0, end);
    wait_state(t, c, "running");
    w = get_row(t, &model_workloads, c);
    assert_int_equal(get_int(&model_workloads, &w, "queued_after"), -1);
    assert_int_equal(allocations(t, c, true, &al), 1);
    assert_int_equal(get_int(&model_allocations, &al[0], "gpu_id"),
                     get_int(&model_allocations, &held[0], "gpu_id"));
    assert_int_equal(get_int(&model_allocations, &al[0], "started_ms"), end);
    snprintf(call, sizeof(call), "launch %" PRId64, c);
    assert_int_equal(fake_call(&t->w, call), -1); /* its backend started it, not a launch */
}

/*
 * Taking back: staged work that is no longer certain to be next (a newer
 * workload of its project with a higher priority) is stopped in its
 * backend, queued here again once that is reported, and the newer one is
 * staged in its place.
 */
static void test_queue_ahead_taken_back(void **state)
{
    struct env *t = *state;
    struct engine_pending p;
    struct row w;
    int64_t a, b, c, d;
    char call[48];

    t->w.queue_ahead = true;
    start(t);
    a = fill(t, &b);
    (void)a;
    c = submit(t, 0);
    for (int i = 0; i < 500 && fake_count(&t->w, "after ") == 0; i++)
        engine_sync(t->e);
    assert_int_equal(fake_count(&t->w, "after "), 1);
    d = submit(t, 10);
    snprintf(call, sizeof(call), "stop %" PRId64, c);
    wait_call(t, call);
    for (int i = 0; i < 500 && count_events(t, c, "unstaged") == 0; i++)
        engine_sync(t->e);
    assert_int_equal(count_events(t, c, "unstaged"), 1);
    assert_string_equal(state_of(t, c), "queued");
    /* given back, it is the scheduler's again: queued, or staged anew behind the newer one */
    for (int i = 0; i < 500; i++) {
        if (engine_pending(t->e, c, &p) == 0 && !strstr(p.reason, "taken back"))
            break;
        engine_sync(t->e);
    }
    assert_int_equal(engine_pending(t->e, c, &p), 0);
    assert_true(p.queued);
    assert_null(strstr(p.reason, "taken back"));
    /* the more urgent one is queued ahead instead */
    for (int i = 0; i < 500; i++) {
        w = get_row(t, &model_workloads, d);
        if (get_int(&model_workloads, &w, "queued_after") > 0)
            break;
        engine_sync(t->e);
    }
    assert_true(get_int(&model_workloads, &w, "queued_after") > 0);
}

/* A device report that moves a replica to other GPU indices moves its allocation. */
static void test_device_move(void **state)
{
    struct env *t = *state;
    struct row *al;
    int64_t id, want;
    int32_t other;

    start(t);
    id = submit(t, 0);
    wait_state(t, id, "running");
    assert_int_equal(allocations(t, id, true, &al), 1);
    other = get_int(&model_allocations, &al[0], "gpu_id") == t->gpus[0] ? 1 : 0;
    want = t->gpus[other];
    fake_devices(&t->w, id, "n1", &other, 1);
    for (int i = 0; i < 500; i++) {
        allocations(t, id, true, &al);
        if (get_int(&model_allocations, &al[0], "gpu_id") == want)
            break;
        engine_sync(t->e);
    }
    assert_int_equal(allocations(t, id, true, &al), 1);
    assert_int_equal(get_int(&model_allocations, &al[0], "gpu_id"), want);
    /* the scheduler follows: a new workload gets the GPU the report freed */
    {
        int64_t next = submit(t, 0);
        wait_state(t, next, "running");
        assert_int_equal(allocations(t, next, true, &al), 1);
        assert_int_equal(get_int(&model_allocations, &al[0], "gpu_id"), t->gpus[1 - other]);
    }
}

/*
 * A start report (take_started) is a "started" event at its time, beside the
 * "running" one; the workload stays running. One for ended work is dropped.
 */
static void test_started(void **state)
{
    struct env *t = *state;
    int64_t id;

    start(t);
    id = submit(t, 0);
    wait_state(t, id, "running");
    fake_started(&t->w, id, time_now_ms());
    for (int i = 0; i < 500 && count_events(t, id, "started") == 0; i++)
        engine_sync(t->e);
    assert_int_equal(count_events(t, id, "started"), 1);
    assert_int_equal(count_events(t, id, "running"), 1);
    assert_string_equal(state_of(t, id), "running");
    fake_end(&t->w, id, BACKEND_EXITED, 0, time_now_ms());
    wait_state(t, id, "succeeded");
    fake_started(&t->w, id, time_now_ms()); /* too late: dropped */
    engine_sync(t->e);
    engine_sync(t->e);
    assert_int_equal(count_events(t, id, "started"), 1);
}

/*
 * A restart on the same store: running work is adopted, work that ended
 * while no engine ran is closed with its real end, and the backend's sweep
 * runs once, after every adoption and before any launch.
 */
static void test_restart(void **state)
{
    struct env *t = *state;
    struct row *al, w;
    int64_t a, b, c, gone_at;
    char call[32];
    int sweep;

    start(t);
    a = fill(t, &b);
    stop(t);
    c = submit(t, 0); /* queued while no engine runs */
    gone_at = time_now_ms() - 5000;
    fake_gone(&t->w, b, gone_at);
    fake_forget_calls(&t->w);

    start(t);
    assert_int_equal(t->w.opened, 2);
    wait_state(t, b, "succeeded");
    w = get_row(t, &model_workloads, b);
    assert_int_equal(get_int(&model_workloads, &w, "finished_at"), gone_at / 1000);
    assert_int_equal(allocations(t, b, false, &al), 1);
    assert_int_equal(get_int(&model_allocations, &al[0], "ended_ms"), gone_at);
    assert_string_equal(state_of(t, a), "running");

    snprintf(call, sizeof(call), "launch %" PRId64, c);
    wait_call(t, call);
    wait_state(t, c, "running");
    assert_int_equal(fake_count(&t->w, "sweep"), 1);
    sweep = fake_call(&t->w, "sweep");
    snprintf(call, sizeof(call), "adopt %" PRId64, a);
    assert_true(fake_call(&t->w, call) >= 0 && fake_call(&t->w, call) < sweep);
    snprintf(call, sizeof(call), "adopt %" PRId64, b);
    assert_true(fake_call(&t->w, call) >= 0 && fake_call(&t->w, call) < sweep);
    snprintf(call, sizeof(call), "launch %" PRId64, c);
    assert_true(fake_call(&t->w, call) > sweep);
}

/*
 * A rebuild of the scheduler from the store between a reclaim's last victim
 * release and the next pass (a restart's rebuild; here the one that a
 * device report moving an allocation makes in the same round as the
 * release) keeps the preemptor first: its owned work runs on the GPU the
 * release freed, not the owned work of a higher priority its project queued
 * meanwhile, and that pass records the first try in the ledger entry, so
 * that a later restart does not give it again.
 */
static void test_reclaim_first_across_rebuild(void **state)
{
    struct env *t = *state;
    struct row q = teststore_row(&model_quotas, &t->a), *al, *led;
    struct store_filter f;
    struct error_info ei = {0};
    int64_t w1, w2, pre, urgent, victim, other;
    size_t n_led = 0;
    int32_t idx;
    char call[32];

    row_set_int(&q, F_QUOTAS_PROJECT_ID, t->project);
    row_set_int(&q, F_QUOTAS_GPU_CLASS_ID, t->cls);
    row_set_int(&q, F_QUOTAS_GUARANTEED_MILLI, 2000);
    row_set_null(&q, F_QUOTAS_LIMIT_MILLI);
    teststore_insert(&t->db, &model_quotas, &q);
    start(t);
    w1 = fill(t, &w2); /* both GPUs, opportunistic: the project's own work may make way */
    pre = submit_as(t, "owned", 0);
    for (int i = 0; i < 500 && fake_count(&t->w, "stop ") == 0; i++)
        engine_sync(t->e);
    assert_int_equal(fake_count(&t->w, "stop "), 1);
    snprintf(call, sizeof(call), "stop %" PRId64, w1);
    victim = fake_call(&t->w, call) >= 0 ? w1 : w2;
    other = victim == w1 ? w2 : w1;
    wait_state(t, victim, "preempting");
    /* Owned work of a higher priority: first in the queue, but the node is held for pre. */
    urgent = submit_as(t, "owned", 10);
    engine_sync(t->e);
    engine_sync(t->e);
    assert_string_equal(state_of(t, urgent), "queued");
    assert_int_equal(allocations(t, victim, true, &al), 1);
    idx = get_int(&model_allocations, &al[0], "gpu_id") == t->gpus[0] ? 0 : 1;

    /* One round: the victim's end, then a report that moves the other onto its GPU. */
    fake_pause(&t->w, true);
    fake_end(&t->w, victim, BACKEND_STOPPED, -15, time_now_ms());
    fake_devices(&t->w, other, "n1", &idx, 1);
    fake_pause(&t->w, false);
    for (int i = 0; i < 500 && strcmp(state_of(t, pre), "running") != 0 &&
                    strcmp(state_of(t, urgent), "running") != 0;
         i++)
        engine_sync(t->e);
    assert_int_equal(count_events(t, other, "devices"), 1); /* moved: the core was rebuilt */
    assert_string_equal(state_of(t, pre), "running");
    assert_string_equal(state_of(t, urgent), "queued");
    assert_int_equal(allocations(t, pre, true, &al), 1);
    assert_int_equal(get_int(&model_allocations, &al[0], "gpu_id"), t->gpus[1 - idx]);

    /* (urgent may have reclaimed the other GPU since: its own entry, still open) */
    store_filter_init(&f);
    store_filter_eq_int(&f, F_PREEMPTIONS_PREEMPTOR_ID, pre);
    if (store_list_all(t->db.c, &model_preemptions, &f, &t->a, &led, &n_led, &ei) < 0)
        fail_msg("preemptions: %s", ei.message);
    assert_int_equal(n_led, 1);
    assert_true(get_int(&model_preemptions, &led[0], "released_ms") > 0);
    assert_true(get_int(&model_preemptions, &led[0], "first_try_ms") >=
                get_int(&model_preemptions, &led[0], "released_ms"));
}

/* The audit entries of node id, oldest first. */
static size_t node_audit(struct env *t, int64_t id, struct row **ret)
{
    struct store_filter f;
    struct error_info ei = {0};
    size_t n = 0;
    store_filter_init(&f);
    store_filter_eq_str(&f, F_AUDIT_RESOURCE, "nodes");
    store_filter_eq_int(&f, F_AUDIT_OBJECT_ID, id);
    if (store_list_all(t->db.c, &model_audit, &f, &t->a, ret, &n, &ei) < 0)
        fail_msg("audit: %s", ei.message);
    return n;
}

/* The id of the node called name, once discovery has recorded it (5 s at most). */
static int64_t wait_node(struct env *t, const char *name, const char *state)
{
    for (int i = 0; i < 500; i++) {
        struct store_filter f;
        struct error_info ei = {0};
        struct row *rows;
        size_t n = 0;
        store_filter_init(&f);
        store_filter_eq_str(&f, F_NODES_NAME, name);
        if (store_list_all(t->db.c, &model_nodes, &f, &t->a, &rows, &n, &ei) < 0)
            fail_msg("nodes: %s", ei.message);
        if (n == 1 && strcmp(row_str(&rows[0], F_NODES_STATE), state) == 0)
            return model_row_id(&rows[0]);
        engine_sync(t->e);
    }
    fail_msg("node %s never became %s", name, state);
    return 0;
}

/* Whether the audit entry's object (before or after) says "state":state. */
static bool audited_state(const struct row *r, int field, const char *state)
{
    char want[32];
    snprintf(want, sizeof(want), "\"state\":\"%s\"", state);
    return !row_is_null(r, field) && strstr(row_str(r, field), want) != NULL;
}

/*
 * Nodes a backend finds or loses are audited as the daemon's own changes
 * (actor "system", request id "discovery"), and the what-if's world reads
 * them back: a node found during the period was down before it, ready from
 * when it was found, and down again from when the backend lost it.
 */
static void test_discovery_audited(void **state)
{
    struct env *t = *state;
    const char *names[] = {"n1", "n2"}, *ready[] = {"ready", "ready"};
    struct engine_world ew;
    struct error_info ei = {0};
    struct row *au;
    int64_t t0 = time_now_ms(), n2;
    size_t n_au, k = 0;

    start(t);
    fake_nodes(&t->w, names, ready, 2);
    n2 = wait_node(t, "n2", "ready");
    assert_int_equal(node_audit(t, t->node, &au), 0); /* n1: as the store had it */
    assert_int_equal(node_audit(t, n2, &au), 1);
    assert_string_equal(row_str(&au[0], F_AUDIT_ACTION), "create");
    assert_string_equal(row_str(&au[0], F_AUDIT_ACTOR), "system");
    assert_true(row_is_null(&au[0], F_AUDIT_ACTOR_ID));
    assert_string_equal(row_str(&au[0], F_AUDIT_REQUEST_ID), "discovery");
    assert_true(row_is_null(&au[0], F_AUDIT_BEFORE));
    assert_true(audited_state(&au[0], F_AUDIT_AFTER, "ready"));

    fake_nodes(&t->w, names, ready, 1); /* a complete report without n2 */
    wait_node(t, "n2", "down");
    n_au = node_audit(t, n2, &au);
    assert_int_equal(n_au, 2);
    assert_string_equal(row_str(&au[1], F_AUDIT_ACTION), "update");
    assert_string_equal(row_str(&au[1], F_AUDIT_REQUEST_ID), "discovery");
    assert_true(audited_state(&au[1], F_AUDIT_BEFORE, "ready"));
    assert_true(audited_state(&au[1], F_AUDIT_AFTER, "down"));

    if (engine_world_read(t->e, t->db.c, t0 - 1000, time_now_ms() + 1000, true, 100, time_now_ms(),
                          &t->a, &ew, &ei) < 0)
        fail_msg("engine_world_read: %s", ei.message);
    for (size_t i = 0; i < ew.w.n_nodes; i++) {
        if (ew.w.nodes[i].spec.id == n2)
            assert_int_equal(ew.w.nodes[i].state, SCHED_NODE_DOWN); /* not there yet */
    }
    for (size_t i = 0; i < ew.w.n_recorded; i++) {
        const struct whatif_recorded_change *c = &ew.w.recorded[i];
        if (c->kind != WHATIF_REC_NODE || c->node.id != n2)
            continue;
        assert_int_equal(c->node.state, k == 0 ? SCHED_NODE_READY : SCHED_NODE_DOWN);
        k++;
    }
    assert_int_equal(k, 2);
    engine_world_release(&ew);
}

static void *change_project(void *arg)
{
    struct env *t = arg;
    struct row r = get_row(t, &model_projects, t->project);
    engine_config_changed(t->e, &model_projects, &r, false);
    return NULL;
}

/*
 * A configuration change never waits for a round. The API calls
 * engine_config_changed after its commit, still holding the tenancy's commit
 * lock; a round may be waiting for the store's write lock, held by a request
 * that waits for that commit lock. e2e.crash once stalled 10 s so, every
 * write refused as busy. Here the test holds the engine's lock as a round
 * does: the change must be queued all the same (the 10 s are a hang's
 * detector, not a measure), and the next round applies it.
 */
static void test_config_change_does_not_wait(void **state)
{
    struct env *t = *state;
    struct timespec deadline;
    pthread_t th;
    int rc;

    start(t);
    pthread_mutex_lock(&t->e->lock);
    if (pthread_create(&th, NULL, change_project, t) != 0)
        fail_msg("pthread_create");
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    rc = pthread_timedjoin_np(th, NULL, &deadline);
    pthread_mutex_unlock(&t->e->lock);
    if (rc != 0) {
        pthread_join(th, NULL);
        fail_msg("engine_config_changed waited for the engine's lock");
    }
    engine_sync(t->e); /* and the round after it applies the change */
    wait_state(t, submit(t, 0), "running");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_life, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_ahead_taken_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_started, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim_first_across_rebuild, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discovery_audited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_change_does_not_wait, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
