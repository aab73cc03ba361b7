/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand-checked scenarios of the scheduler core (src/sched/sched.h, DESIGN.md
 * section 3). Each test builds a tiny fleet, submits a few workloads, runs
 * passes at chosen times and asserts the exact decisions: which GPUs, which
 * victims, which pending reasons. The numbers in each test can be checked by
 * hand from its comment.
 *
 * Conventions: node n has GPUs n*100+1 .. n*100+k; times are ms from 0;
 * milli-GPU everywhere (1000 = one GPU).
 *
 * Readings of sched.h this file relies on (where the header leaves room):
 * - sched_project_usage() counts running and preempting work (what is held).
 * - A workload gone from the scheduler (cancelled, finished, preempted
 *   without requeue) is unknown to sched_workload_info (SCHED_ENOENT); the
 *   helpers below report that as the pseudo-state GONE.
 * - A whole-GPU replica gets one sched_assign per device, milli 1000; a share
 *   gets one assign with its milli.
 * - SCHED_WAIT_CAPACITY: cap is the largest free amount a single replica
 *   could get (the enum's comment); "need" is not asserted because the enum
 *   says per replica and the struct says all replicas.
 * - The preemption's quota snapshot "used" is P1 + P2 held in the class.
 * - When a pool-restricted workload can never be placed, either
 *   SCHED_WAIT_CAPACITY or SCHED_WAIT_NO_NODES is accepted.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "sched/sched.h"

enum { C1 = 1, C2 = 2, C3 = 3 };

/* Not a state of sched.h: what info() reports for a workload that left (SCHED_ENOENT). */
#define GONE ((enum sched_state)0)

struct fx {
    struct sched *s;
    struct sched_decisions d;
    struct sched_config cfg;
};

static void fx_init_cfg(struct fx *f, const struct sched_config *cfg)
{
    f->cfg = *cfg;
    f->s = sched_new(cfg);
    assert_non_null(f->s);
    sched_decisions_init(&f->d);
    assert_int_equal(sched_add_class(f->s, C1), 0);
    assert_int_equal(sched_add_class(f->s, C2), 0);
    assert_int_equal(sched_add_class(f->s, C3), 0);
}

static void fx_init(struct fx *f)
{
    struct sched_config cfg;
    sched_config_init(&cfg);
    cfg.default_grace_ms = 30000;
    cfg.reserve_after_ms = 60000;
    if (cfg.lookahead < 4)
        cfg.lookahead = 4;
    fx_init_cfg(f, &cfg);
}

static void fx_release(struct fx *f)
{
    sched_decisions_release(&f->d);
    sched_free(f->s);
}

/* A node with n GPUs of a class, all in one pool (0: none), with labels. */
static void add_node_l(struct fx *f, int64_t node, int n, int64_t cls, int64_t pool,
                       const uint32_t *labels, int n_labels)
{
    struct sched_node_spec ns;
    memset(&ns, 0, sizeof ns);
    ns.id = node;
    ns.cluster_id = 1;
    for (int i = 0; i < n_labels; i++)
        ns.labels[i] = labels[i];
    ns.n_labels = n_labels;
    assert_int_equal(sched_add_node(f->s, &ns), 0);
    for (int i = 1; i <= n; i++)
        assert_int_equal(sched_add_gpu(f->s, node, node * 100 + i, cls, pool), 0);
}

static void add_node(struct fx *f, int64_t node, int n, int64_t cls, int64_t pool)
{
    add_node_l(f, node, n, cls, pool, NULL, 0);
}

static void project(struct fx *f, int64_t id, int64_t org, int weight)
{
    assert_int_equal(sched_set_project(f->s, id, org, weight), 0);
}

static void pool_owned(struct fx *f, int64_t pool, int64_t owner_project, const int64_t *access,
                       size_t n_access)
{
    struct sched_pool_spec ps;
    memset(&ps, 0, sizeof ps);
    ps.id = pool;
    ps.owner_project_id = owner_project;
    ps.access_project_ids = access;
    ps.n_access_projects = n_access;
    assert_int_equal(sched_set_pool(f->s, &ps), 0);
}

static struct sched_workload_spec wl(int64_t id, int64_t proj, enum sched_class pc, int replicas,
                                     int64_t cls, int32_t milli, int64_t submit_ms)
{
    struct sched_workload_spec w;
    memset(&w, 0, sizeof w);
    w.id = id;
    w.project_id = proj;
    w.pclass = pc;
    w.replicas = replicas;
    w.class_id = cls;
    w.gpu_milli = milli;
    w.submit_ms = submit_ms;
    w.grace_ms = -1;
    w.requeue = true;
    return w;
}

static void submit(struct fx *f, const struct sched_workload_spec *w, int64_t now)
{
    assert_int_equal(sched_submit(f->s, w, now), 0);
}

/* Shorthand: one replica, submitted at now. */
static void submit1(struct fx *f, int64_t id, int64_t proj, enum sched_class pc, int64_t cls,
                    int32_t milli, int64_t now)
{
    struct sched_workload_spec w = wl(id, proj, pc, 1, cls, milli, now);
    submit(f, &w, now);
}

static int pass(struct fx *f, int64_t now)
{
    sched_decisions_reset(&f->d);
    int rc = sched_pass(f->s, now, &f->d);
    assert_true(rc >= 0);
    return rc;
}

static const struct sched_admit *find_admit(const struct fx *f, int64_t wid)
{
    for (size_t i = 0; i < f->d.n_admits; i++)
        if (f->d.admits[i].workload_id == wid)
            return &f->d.admits[i];
    return NULL;
}

static const struct sched_admit *must_admit(const struct fx *f, int64_t wid)
{
    const struct sched_admit *a = find_admit(f, wid);
    if (!a)
        fail_msg("workload %" PRId64 " was not admitted", wid);
    return a;
}

static const struct sched_assign *asg(const struct fx *f, const struct sched_admit *a, size_t i)
{
    assert_true(i < a->n_assigns);
    assert_true(a->first_assign + a->n_assigns <= f->d.n_assigns);
    return &f->d.assigns[a->first_assign + i];
}

/* The node all assigns of an admit are on (and that they are on one node). */
static int64_t admit_node(const struct fx *f, const struct sched_admit *a)
{
    int64_t node = asg(f, a, 0)->node_id;
    for (size_t i = 1; i < a->n_assigns; i++)
        assert_int_equal(asg(f, a, i)->node_id, node);
    return node;
}

/* The node of one replica of an admit (asserting the replica is on one node). */
static int64_t replica_node(const struct fx *f, const struct sched_admit *a, int replica)
{
    int64_t node = 0;
    for (size_t i = 0; i < a->n_assigns; i++) {
        const struct sched_assign *x = asg(f, a, i);
        if (x->replica != replica)
            continue;
        if (node == 0)
            node = x->node_id;
        assert_int_equal(x->node_id, node);
    }
    assert_true(node != 0);
    return node;
}

/* Sum of milli over the assigns of an admit (for one replica, or -1 for all). */
static int64_t admit_milli(const struct fx *f, const struct sched_admit *a, int replica)
{
    int64_t sum = 0;
    for (size_t i = 0; i < a->n_assigns; i++)
        if (replica < 0 || asg(f, a, i)->replica == replica)
            sum += asg(f, a, i)->milli;
    return sum;
}

static struct sched_workload_info info(const struct fx *f, int64_t wid)
{
    struct sched_workload_info wi;
    memset(&wi, 0, sizeof wi);
    int rc = sched_workload_info(f->s, wid, &wi);
    if (rc == SCHED_ENOENT) {
        wi.state = GONE;
        return wi;
    }
    assert_int_equal(rc, 0);
    return wi;
}

static void assert_state(const struct fx *f, int64_t wid, enum sched_state st)
{
    struct sched_workload_info wi = info(f, wid);
    if (wi.state != st)
        fail_msg("workload %" PRId64 ": state %d, expected %d", wid, (int)wi.state, (int)st);
}

static void assert_reason(const struct fx *f, int64_t wid, enum sched_reason_code code)
{
    struct sched_workload_info wi = info(f, wid);
    assert_int_equal(wi.state, SCHED_QUEUED);
    if (wi.reason.code != code)
        fail_msg("workload %" PRId64 ": reason %d, expected %d", wid, (int)wi.reason.code,
                 (int)code);
}

static struct sched_usage usage(const struct fx *f, int64_t proj, int64_t cls)
{
    struct sched_usage u;
    memset(&u, 0, sizeof u);
    assert_int_equal(sched_project_usage(f->s, proj, cls, &u), 0);
    return u;
}

static int64_t class_free(const struct fx *f, int64_t cls)
{
    int64_t cap = -1, fr = -1;
    assert_int_equal(sched_class_capacity(f->s, cls, &cap, &fr), 0);
    return fr;
}

/* Restores a running workload holding whole GPUs gpus[0..n) as one replica. */
static void restore_whole(struct fx *f, struct sched_workload_spec *w, const int64_t *gpus, int n,
                          int64_t started, bool preempting)
{
    int32_t milli[SCHED_MAX_GPUS_PER_NODE];
    int32_t rep[SCHED_MAX_GPUS_PER_NODE];
    for (int i = 0; i < n; i++) {
        milli[i] = 1000;
        rep[i] = 0;
    }
    w->replicas = 1;
    w->gpu_milli = 1000 * n;
    assert_int_equal(
        sched_restore_running(f->s, w, 0, gpus, milli, rep, (size_t)n, started, preempting), 0);
}

static bool gpu_in(int64_t g, const int64_t *set, int n)
{
    for (int i = 0; i < n; i++)
        if (set[i] == g)
            return true;
    return false;
}

/* ---- placement ---- */

/*
 * Two nodes of 8 GPUs; a 5-GPU job lands on one of them (3 left there, 8 on
 * the other). A 2-GPU job then goes to the node with 3 free: best fit.
 */
static void test_best_fit_whole_gpus(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    add_node(&f, 1, 8, C1, 0);
    add_node(&f, 2, 8, C1, 0);
    project(&f, 10, 1, 1);

    submit1(&f, 1, 10, SCHED_P2, C1, 5000, 0);
    pass(&f, 100);
    const struct sched_admit *a = must_admit(&f, 1);
    assert_int_equal(a->n_assigns, 5);
    int64_t n5 = admit_node(&f, a);
    assert_true(a->borrowed); /* guarantee 0: everything is borrowed */
    assert_int_equal(admit_milli(&f, a, 0), 5000);
    struct sched_workload_info wi = info(&f, 1);
    assert_int_equal(wi.state, SCHED_RUNNING);
    assert_int_equal(wi.started_ms, 100);
    int64_t used5[5];
    for (int i = 0; i < 5; i++) {
        used5[i] = asg(&f, a, (size_t)i)->gpu_id;
        assert_int_equal(asg(&f, a, (size_t)i)->milli, 1000);
        assert_int_equal(asg(&f, a, (size_t)i)->replica, 0);
        assert_int_equal(used5[i] / 100, n5);
    }

    submit1(&f, 2, 10, SCHED_P2, C1, 2000, 200);
    pass(&f, 300);
    a = must_admit(&f, 2);
    assert_int_equal(a->n_assigns, 2);
    assert_int_equal(admit_node(&f, a), n5);
    int64_t g0 = asg(&f, a, 0)->gpu_id, g1 = asg(&f, a, 1)->gpu_id;
    assert_true(g0 != g1);
    assert_false(gpu_in(g0, used5, 5));
    assert_false(gpu_in(g1, used5, 5));

    struct sched_usage u = usage(&f, 10, C1);
    assert_int_equal(u.p1, 0);
    assert_int_equal(u.p2, 7000);
    assert_int_equal(u.guaranteed, 0);
    assert_true(u.limit < 0);
    assert_int_equal(class_free(&f, C1), 9000);
    fx_release(&f);
}

/*
 * Four nodes of 4 GPUs with 2 busy each (restored): 8 GPUs free in all but
 * never 4 on one node. A 4-GPU replica cannot be split, so it waits; a gang
 * of two 2-GPU replicas fits, each replica on one node.
 */
static void test_multi_gpu_replica_stays_on_one_node(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    for (int n = 1; n <= 4; n++) {
        add_node(&f, n, 4, C1, 0);
        int64_t g[2] = {n * 100 + 1, n * 100 + 2};
        struct sched_workload_spec r = wl(100 + n, 20, SCHED_P2, 1, C1, 2000, 0);
        restore_whole(&f, &r, g, 2, 0, false);
    }
    assert_int_equal(class_free(&f, C1), 8000);

    submit1(&f, 1, 10, SCHED_P2, C1, 4000, 10);
    pass(&f, 20);
    assert_null(find_admit(&f, 1));
    assert_reason(&f, 1, SCHED_WAIT_CAPACITY);
    assert_int_equal(info(&f, 1).reason.cap, 2000);

    struct sched_workload_spec g2 = wl(2, 20, SCHED_P2, 2, C1, 2000, 30);
    submit(&f, &g2, 30);
    pass(&f, 40);
    const struct sched_admit *a = must_admit(&f, 2);
    assert_int_equal(a->n_assigns, 4);
    for (size_t i = 0; i < a->n_assigns; i++) {
        const struct sched_assign *x = asg(&f, a, i);
        assert_true(x->replica == 0 || x->replica == 1);
        assert_int_equal(x->milli, 1000);
        assert_int_equal(x->gpu_id / 100, x->node_id);
        /* only the free GPUs (3 and 4 of each node) */
        assert_true(x->gpu_id % 100 == 3 || x->gpu_id % 100 == 4);
    }
    assert_true(replica_node(&f, a, 0) != replica_node(&f, a, 1));
    assert_int_equal(admit_milli(&f, a, 0), 2000);
    assert_int_equal(admit_milli(&f, a, 1), 2000);
    assert_state(&f, 1, SCHED_QUEUED);
    fx_release(&f);
}

/*
 * Three nodes of 8 GPUs, one of them with a GPU busy: a gang of three 8-GPU
 * replicas has room for two replicas only, so nothing is placed and nothing
 * is held. A two-replica 8-GPU gang fits on the two whole nodes.
 */
static void test_gang_all_or_nothing(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    add_node(&f, 1, 8, C1, 0);
    add_node(&f, 2, 8, C1, 0);
    add_node(&f, 3, 8, C1, 0);
    int64_t g[1] = {301};
    struct sched_workload_spec r = wl(100, 30, SCHED_P2, 1, C1, 1000, 0);
    restore_whole(&f, &r, g, 1, 0, false);

    struct sched_workload_spec gang = wl(1, 10, SCHED_P2, 3, C1, 8000, 10);
    submit(&f, &gang, 10);
    pass(&f, 20);
    assert_int_equal(f.d.n_admits, 0);
    assert_reason(&f, 1, SCHED_WAIT_CAPACITY);
    assert_int_equal(class_free(&f, C1), 23000);
    assert_int_equal(usage(&f, 10, C1).p2, 0);

    struct sched_workload_spec two = wl(2, 20, SCHED_P2, 2, C1, 8000, 30);
    submit(&f, &two, 30);
    pass(&f, 40);
    assert_null(find_admit(&f, 1));
    const struct sched_admit *a = must_admit(&f, 2);
    assert_int_equal(a->n_assigns, 16);
    for (size_t i = 0; i < a->n_assigns; i++)
        assert_true(asg(&f, a, i)->node_id != 3);
    assert_int_equal(admit_milli(&f, a, 0), 8000);
    assert_int_equal(admit_milli(&f, a, 1), 8000);
    int64_t r0 = replica_node(&f, a, 0), r1 = replica_node(&f, a, 1);
    assert_true(r0 != r1);
    assert_state(&f, 1, SCHED_QUEUED);
    assert_int_equal(class_free(&f, C1), 7000);
    fx_release(&f);
}

/*
 * Milli shares pack: 300 lands on some GPU g; 500 joins it (700 free there,
 * best fit); 300 does not fit in the 200 left, so it takes another GPU g2;
 * 200 fills g exactly rather than g2 (700 free).
 */
static void test_milli_shares_best_fit(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 4, C1, 0);

    submit1(&f, 1, 10, SCHED_P2, C1, 300, 0);
    pass(&f, 10);
    const struct sched_admit *a = must_admit(&f, 1);
    assert_int_equal(a->n_assigns, 1);
    assert_int_equal(asg(&f, a, 0)->milli, 300);
    int64_t g = asg(&f, a, 0)->gpu_id;

    submit1(&f, 2, 10, SCHED_P2, C1, 500, 20);
    pass(&f, 30);
    a = must_admit(&f, 2);
    assert_int_equal(a->n_assigns, 1);
    assert_int_equal(asg(&f, a, 0)->gpu_id, g);
    assert_int_equal(asg(&f, a, 0)->milli, 500);

    submit1(&f, 3, 10, SCHED_P2, C1, 300, 40);
    pass(&f, 50);
    a = must_admit(&f, 3);
    int64_t g2 = asg(&f, a, 0)->gpu_id;
    assert_true(g2 != g);

    submit1(&f, 4, 10, SCHED_P2, C1, 200, 60);
    pass(&f, 70);
    a = must_admit(&f, 4);
    assert_int_equal(asg(&f, a, 0)->gpu_id, g);
    assert_int_equal(asg(&f, a, 0)->milli, 200);

    assert_int_equal(usage(&f, 10, C1).p2, 1300);
    assert_int_equal(class_free(&f, C1), 4000 - 1300);
    /* A whole GPU still fits (two are untouched), and goes to neither g nor g2. */
    submit1(&f, 5, 10, SCHED_P2, C1, 1000, 80);
    pass(&f, 90);
    a = must_admit(&f, 5);
    assert_true(asg(&f, a, 0)->gpu_id != g && asg(&f, a, 0)->gpu_id != g2);
    fx_release(&f);
}

/* GPU class and label selectors decide the node, before best fit. */
static void test_class_and_labels(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    uint32_t l10[1] = {10}, l20[1] = {20}, l1020[2] = {20, 10};
    add_node_l(&f, 1, 4, C1, 0, l10, 1);
    add_node_l(&f, 2, 4, C2, 0, l20, 1);
    add_node_l(&f, 3, 8, C1, 0, l20, 1);
    add_node_l(&f, 4, 8, C1, 0, l1020, 2);

    submit1(&f, 1, 10, SCHED_P2, C2, 1000, 0);
    pass(&f, 10);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 2);

    /* Without a selector the 4-GPU node 1 is the best fit... */
    submit1(&f, 2, 10, SCHED_P2, C1, 1000, 20);
    pass(&f, 30);
    assert_int_equal(admit_node(&f, must_admit(&f, 2)), 1);

    /* ...with label 20 required only nodes 3 and 4 qualify (equal: 8 free). */
    struct sched_workload_spec w = wl(3, 10, SCHED_P2, 1, C1, 1000, 40);
    w.selector[0] = 20;
    w.n_selector = 1;
    submit(&f, &w, 40);
    pass(&f, 50);
    int64_t n3 = admit_node(&f, must_admit(&f, 3));
    assert_true(n3 == 3 || n3 == 4);

    /* Both labels: node 4 only, though node 1 has 3 free and fits best. */
    w = wl(4, 10, SCHED_P2, 1, C1, 1000, 60);
    w.selector[0] = 10;
    w.selector[1] = 20;
    w.n_selector = 2;
    submit(&f, &w, 60);
    pass(&f, 70);
    assert_int_equal(admit_node(&f, must_admit(&f, 4)), 4);

    /* A label no node has, and a class with no GPUs: never placeable. */
    w = wl(5, 10, SCHED_P2, 1, C1, 1000, 80);
    w.selector[0] = 30;
    w.n_selector = 1;
    submit(&f, &w, 80);
    submit1(&f, 6, 10, SCHED_P2, C3, 1000, 80);
    /* Wider than any node of its class. */
    submit1(&f, 7, 10, SCHED_P2, C2, 8000, 80);
    pass(&f, 90);
    assert_int_equal(f.d.n_admits, 0);
    assert_reason(&f, 5, SCHED_WAIT_NO_NODES);
    assert_reason(&f, 6, SCHED_WAIT_NO_NODES);
    assert_reason(&f, 7, SCHED_WAIT_NO_NODES);
    fx_release(&f);
}

/*
 * Pool access: node 1 (4 GPUs) is pool 7 of project A (10), open to project
 * C (30) and to organization 9 (project D, 40); node 2 (2 GPUs) is in no
 * pool. B (20) may only use node 2.
 */
static void test_pool_access(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    project(&f, 40, 9, 1);
    int64_t acc_p[1] = {30}, acc_o[1] = {9};
    struct sched_pool_spec ps;
    memset(&ps, 0, sizeof ps);
    ps.id = 7;
    ps.owner_project_id = 10;
    ps.access_project_ids = acc_p;
    ps.n_access_projects = 1;
    ps.access_org_ids = acc_o;
    ps.n_access_orgs = 1;
    assert_int_equal(sched_set_pool(f.s, &ps), 0);
    acc_p[0] = 0; /* specs are copied */
    acc_o[0] = 0;
    add_node(&f, 1, 4, C1, 7);
    add_node(&f, 2, 2, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);

    /* B: 2 GPUs fit only the open node. */
    submit1(&f, 1, 20, SCHED_P2, C1, 2000, 0);
    pass(&f, 10);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 2);
    /* B again: node 1 has 4 free GPUs, none of them B's to use. */
    submit1(&f, 2, 20, SCHED_P2, C1, 1000, 20);
    pass(&f, 30);
    assert_null(find_admit(&f, 2));
    struct sched_workload_info wi = info(&f, 2);
    assert_int_equal(wi.state, SCHED_QUEUED);
    assert_true(wi.reason.code == SCHED_WAIT_CAPACITY || wi.reason.code == SCHED_WAIT_NO_NODES);
    /* C by the project access list, D by its organization, A as the owner. */
    submit1(&f, 3, 30, SCHED_P2, C1, 1000, 40);
    submit1(&f, 4, 40, SCHED_P2, C1, 1000, 40);
    submit1(&f, 5, 10, SCHED_P1, C1, 1000, 40);
    pass(&f, 50);
    assert_int_equal(admit_node(&f, must_admit(&f, 3)), 1);
    assert_int_equal(admit_node(&f, must_admit(&f, 4)), 1);
    assert_int_equal(admit_node(&f, must_admit(&f, 5)), 1);
    assert_false(must_admit(&f, 5)->borrowed);
    assert_null(find_admit(&f, 2));
    assert_int_equal(usage(&f, 10, C1).guaranteed, 4000);
    assert_int_equal(usage(&f, 10, C1).p1, 1000);
    /* A workload restricted to pool 7 by a project with access. */
    struct sched_workload_spec w = wl(6, 30, SCHED_P2, 1, C1, 1000, 60);
    w.pool_ids[0] = 7;
    w.n_pools = 1;
    submit(&f, &w, 60);
    pass(&f, 70);
    assert_int_equal(admit_node(&f, must_admit(&f, 6)), 1);
    fx_release(&f);
}

/* P1 is preferred on its owner's pool even when an open node fits tighter. */
static void test_p1_prefers_owner_pool(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    pool_owned(&f, 7, 10, NULL, 0);
    add_node(&f, 1, 8, C1, 7);
    add_node(&f, 2, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    int64_t g[7] = {201, 202, 203, 204, 205, 206, 207};
    struct sched_workload_spec r = wl(100, 20, SCHED_P2, 1, C1, 7000, 0);
    restore_whole(&f, &r, g, 7, 0, false);

    submit1(&f, 1, 10, SCHED_P1, C1, 1000, 10);
    pass(&f, 20);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 1);
    fx_release(&f);
}

/* Drained and down nodes take no new work. */
static void test_drain_takes_no_work(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 4, C1, 0);
    add_node(&f, 2, 8, C1, 0);
    assert_int_equal(sched_set_node_state(f.s, 1, SCHED_NODE_DRAIN), 0);
    assert_int_equal(sched_set_node_state(f.s, 2, SCHED_NODE_DOWN), 0);
    submit1(&f, 1, 10, SCHED_P2, C1, 1000, 0);
    pass(&f, 10);
    assert_int_equal(f.d.n_admits, 0);
    assert_state(&f, 1, SCHED_QUEUED);
    assert_int_equal(class_free(&f, C1), 0);
    assert_int_equal(sched_set_node_state(f.s, 1, SCHED_NODE_READY), 0);
    pass(&f, 20);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 1);
    assert_int_equal(class_free(&f, C1), 3000);
    fx_release(&f);
}

/* ---- quotas ---- */

/* P1 beyond the guarantee waits with a reason that says so; within it runs. */
static void test_p1_beyond_guarantee_waits(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 2000, -1), 0);

    submit1(&f, 1, 10, SCHED_P1, C1, 4000, 0);
    submit1(&f, 2, 10, SCHED_P1, C1, 2000, 1);
    submit1(&f, 3, 20, SCHED_P1, C1, 1000, 2); /* no quota: guarantee 0 */
    pass(&f, 10);
    assert_null(find_admit(&f, 1));
    assert_null(find_admit(&f, 3));
    const struct sched_admit *a = must_admit(&f, 2);
    assert_false(a->borrowed);
    assert_reason(&f, 1, SCHED_WAIT_GUARANTEE);
    assert_int_equal(info(&f, 1).reason.cap, 2000);
    assert_int_equal(info(&f, 1).reason.class_id, C1);
    assert_reason(&f, 3, SCHED_WAIT_GUARANTEE);
    assert_int_equal(info(&f, 3).reason.cap, 0);
    assert_int_equal(f.d.n_preemptions, 0);

    submit1(&f, 4, 10, SCHED_P1, C1, 1000, 20);
    pass(&f, 30);
    assert_null(find_admit(&f, 4));
    assert_reason(&f, 4, SCHED_WAIT_GUARANTEE);
    assert_int_equal(info(&f, 4).reason.used, 2000);
    assert_int_equal(info(&f, 4).reason.cap, 2000);
    struct sched_usage u = usage(&f, 10, C1);
    assert_int_equal(u.p1, 2000);
    assert_int_equal(u.guaranteed, 2000);
    fx_release(&f);
}

/* P2 at the project's limit waits with SCHED_WAIT_LIMIT (used/cap). */
static void test_p2_at_limit_waits(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 0, 2000), 0);
    submit1(&f, 1, 10, SCHED_P2, C1, 2000, 0);
    submit1(&f, 2, 10, SCHED_P2, C1, 1000, 1);
    pass(&f, 10);
    must_admit(&f, 1);
    assert_null(find_admit(&f, 2));
    assert_reason(&f, 2, SCHED_WAIT_LIMIT);
    struct sched_workload_info wi = info(&f, 2);
    assert_int_equal(wi.reason.used, 2000);
    assert_int_equal(wi.reason.cap, 2000);
    assert_int_equal(wi.reason.class_id, C1);
    assert_int_equal(usage(&f, 10, C1).limit, 2000);
    /* Freeing the capacity lets it in. */
    assert_int_equal(sched_released(f.s, 1, 20), 0);
    assert_state(&f, 1, GONE);
    pass(&f, 30);
    must_admit(&f, 2);
    fx_release(&f);
}

/* An organization's cap binds all its projects together. */
static void test_org_cap(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 5, 1);
    project(&f, 20, 5, 1);
    project(&f, 30, 6, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_org_cap(f.s, 5, C1, 3000), 0);

    submit1(&f, 1, 10, SCHED_P2, C1, 2000, 0);
    pass(&f, 10);
    must_admit(&f, 1);
    submit1(&f, 2, 20, SCHED_P2, C1, 2000, 20);
    pass(&f, 30);
    assert_null(find_admit(&f, 2));
    assert_reason(&f, 2, SCHED_WAIT_ORG_CAP);
    assert_int_equal(info(&f, 2).reason.used, 2000);
    assert_int_equal(info(&f, 2).reason.cap, 3000);
    submit1(&f, 3, 20, SCHED_P2, C1, 1000, 40);
    submit1(&f, 4, 30, SCHED_P2, C1, 4000, 40);
    pass(&f, 50);
    must_admit(&f, 3);
    must_admit(&f, 4);
    submit1(&f, 5, 10, SCHED_P2, C1, 1000, 60);
    pass(&f, 70);
    assert_null(find_admit(&f, 5));
    assert_reason(&f, 5, SCHED_WAIT_ORG_CAP);
    /* Removing the cap releases them. */
    assert_int_equal(sched_set_org_cap(f.s, 5, C1, -1), 0);
    pass(&f, 80);
    must_admit(&f, 5);
    fx_release(&f);
}

/* ---- preemption ---- */

/*
 * The reclaim scenario. Project A (10) owns pool 7: node 1, 8 GPUs, open to
 * B (20). B borrows all 8 with P2: b1 (4 GPUs) at t=1000, then b2..b5 (one
 * GPU each) at t=2000. At t=10000 A submits P1 for 4 GPUs. Freeing 4 GPUs
 * takes either b1 alone or all of b2..b5 (each cheaper: 8000 ms lost against
 * 9000, and newer); the fewest victims win: b1. After b1 releases, the next
 * pass gives A exactly b1's GPUs, and b1 (requeued) keeps its place ahead of
 * B's later work.
 */
static void test_reclaim_fewest_victims(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    int64_t acc[1] = {20};
    pool_owned(&f, 7, 10, acc, 1);
    add_node(&f, 1, 8, C1, 7);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    assert_int_equal(sched_class_guaranteed(f.s, C1), 8000);

    submit1(&f, 1, 20, SCHED_P2, C1, 4000, 500);
    pass(&f, 1000);
    const struct sched_admit *a = must_admit(&f, 1);
    int64_t b1_gpus[4];
    for (int i = 0; i < 4; i++)
        b1_gpus[i] = asg(&f, a, (size_t)i)->gpu_id;
    for (int64_t id = 2; id <= 5; id++)
        submit1(&f, id, 20, SCHED_P2, C1, 1000, 1500 + id);
    pass(&f, 2000);
    assert_int_equal(f.d.n_admits, 4);
    assert_int_equal(usage(&f, 20, C1).p2, 8000);
    assert_int_equal(class_free(&f, C1), 0);
    /* B's later work, queued behind. */
    submit1(&f, 6, 20, SCHED_P2, C1, 1000, 5000);
    pass(&f, 5000);
    assert_int_equal(f.d.n_admits, 0);

    submit1(&f, 100, 10, SCHED_P1, C1, 4000, 10000);
    pass(&f, 10000);
    assert_int_equal(f.d.n_admits, 0);
    assert_int_equal(f.d.n_preemptions, 1);
    const struct sched_preemption *p = &f.d.preemptions[0];
    assert_int_equal(p->preemptor_id, 100);
    assert_int_equal(p->rule, SCHED_RULE_RECLAIM);
    assert_int_equal(p->n_victims, 1);
    assert_int_equal(p->decided_ms, 10000);
    assert_int_equal(p->grace_ms, 30000);
    assert_int_equal(p->gpu_milli_reclaimed, 4000);
    const struct sched_victim *v = &f.d.victims[p->first_victim];
    assert_int_equal(v->workload_id, 1);
    assert_int_equal(v->project_id, 20);
    assert_int_equal(v->gpu_milli, 4000);
    assert_int_equal(v->lost_ms, 9000);
    /* Quota snapshots, before the decision: A and B. */
    assert_int_equal(p->n_quotas, 2);
    assert_true(p->first_quota + p->n_quotas <= f.d.n_quotas);
    bool seen_a = false, seen_b = false;
    for (size_t i = 0; i < p->n_quotas; i++) {
        const struct sched_quota_snapshot *q = &f.d.quotas[p->first_quota + i];
        assert_int_equal(q->class_id, C1);
        if (q->project_id == 10) {
            seen_a = true;
            assert_int_equal(q->used, 0);
            assert_int_equal(q->guaranteed, 8000);
            assert_true(q->limit < 0);
        } else if (q->project_id == 20) {
            seen_b = true;
            assert_int_equal(q->used, 8000);
            assert_int_equal(q->guaranteed, 0);
            assert_true(q->limit < 0);
        }
    }
    assert_true(seen_a && seen_b);

    assert_state(&f, 1, SCHED_PREEMPTING);
    for (int64_t id = 2; id <= 5; id++)
        assert_state(&f, id, SCHED_RUNNING);
    assert_reason(&f, 100, SCHED_WAIT_RECLAIM);
    assert_int_equal(info(&f, 100).reason.count, 1);
    /* Victims hold their GPUs until released. */
    assert_int_equal(usage(&f, 20, C1).p2, 8000);

    /* A second pass decides nothing new: no second set of victims. */
    pass(&f, 11000);
    assert_int_equal(f.d.n_preemptions, 0);
    assert_int_equal(f.d.n_admits, 0);
    assert_reason(&f, 100, SCHED_WAIT_RECLAIM);

    assert_int_equal(sched_released(f.s, 1, 20000), 0);
    assert_state(&f, 1, SCHED_QUEUED); /* requeued */
    pass(&f, 20000);
    a = must_admit(&f, 100);
    assert_false(a->borrowed);
    assert_int_equal(a->n_assigns, 4);
    for (size_t i = 0; i < 4; i++)
        assert_true(gpu_in(asg(&f, a, i)->gpu_id, b1_gpus, 4));
    assert_null(find_admit(&f, 1));
    assert_null(find_admit(&f, 6));
    assert_int_equal(usage(&f, 10, C1).p1, 4000);
    assert_int_equal(usage(&f, 20, C1).p2, 4000);
    /* b1 (submitted at 500) is ahead of b6 (5000) in B's queue. */
    struct sched_workload_info w1 = info(&f, 1), w6 = info(&f, 6);
    assert_int_equal(w1.state, SCHED_QUEUED);
    assert_int_equal(w6.state, SCHED_QUEUED);
    assert_int_equal(w1.queue_position, 1);
    assert_int_equal(w6.queue_position, 2);
    assert_true(w1.reason.code != SCHED_WAIT_NONE);
    fx_release(&f);
}

/* Shared setup: A (10) owns node 1 (8 GPUs, pool 7, open to B (20)). */
static void setup_owner_and_borrower(struct fx *f)
{
    fx_init(f);
    project(f, 10, 1, 1);
    project(f, 20, 2, 1);
    int64_t acc[1] = {20};
    pool_owned(f, 7, 10, acc, 1);
    add_node(f, 1, 8, C1, 7);
    assert_int_equal(sched_set_quota(f->s, 10, C1, -1, -1), 0);
}

/* Admits B's workload w in a pass at time t (asserting it is admitted). */
static void run_b(struct fx *f, struct sched_workload_spec *w, int64_t t)
{
    submit(f, w, t);
    pass(f, t);
    must_admit(f, w->id);
}

/* A submits P1 for 4 GPUs at t; returns the single victim's id. */
static int64_t reclaim_one(struct fx *f, int64_t t)
{
    submit1(f, 100, 10, SCHED_P1, C1, 4000, t);
    pass(f, t);
    assert_int_equal(f->d.n_preemptions, 1);
    const struct sched_preemption *p = &f->d.preemptions[0];
    assert_int_equal(p->preemptor_id, 100);
    assert_int_equal(p->n_victims, 1);
    return f->d.victims[p->first_victim].workload_id;
}

/* Victim order: lowest priority first, whatever its age or lost work. */
static void test_victim_lowest_priority(void **state)
{
    struct fx f;
    (void)state;
    setup_owner_and_borrower(&f);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 1000);
    b1.priority = 1;
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 2000);
    b2.priority = 5;
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 2000);
    assert_int_equal(reclaim_one(&f, 10000), 1);
    assert_int_equal(f.d.victims[0].lost_ms, 9000);
    assert_state(&f, 2, SCHED_RUNNING);
    fx_release(&f);
}

/* Equal priority: least work lost (a checkpoint counts) beats newest. */
static void test_victim_least_work_lost(void **state)
{
    struct fx f;
    (void)state;
    setup_owner_and_borrower(&f);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 1000);
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 2000);
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 2000);
    assert_int_equal(sched_checkpoint(f.s, 1, 9000), 0);
    assert_int_equal(reclaim_one(&f, 10000), 1);
    assert_int_equal(f.d.victims[0].lost_ms, 1000);
    fx_release(&f);
}

/* Equal priority and equal work lost: the newest goes. */
static void test_victim_newest(void **state)
{
    struct fx f;
    (void)state;
    setup_owner_and_borrower(&f);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 1000);
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 6000);
    run_b(&f, &b1, 1000);
    assert_int_equal(sched_checkpoint(f.s, 1, 6000), 0);
    run_b(&f, &b2, 6000);
    assert_int_equal(reclaim_one(&f, 10000), 2);
    assert_int_equal(f.d.victims[0].lost_ms, 4000);
    fx_release(&f);
}

/*
 * Minimum runtime protects a P2 victim: b1 (priority 0) would go first but
 * has 100 s to run; b2 (priority 5) goes instead. With both protected,
 * nothing is preempted until the minimum runtime has passed.
 */
static void test_min_runtime_protects(void **state)
{
    struct fx f;
    (void)state;
    setup_owner_and_borrower(&f);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 1000);
    b1.min_runtime_ms = 100000;
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 1000);
    b2.priority = 5;
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 1000);
    assert_int_equal(reclaim_one(&f, 10000), 2);
    assert_state(&f, 1, SCHED_RUNNING);
    fx_release(&f);

    setup_owner_and_borrower(&f);
    b2.min_runtime_ms = 100000;
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 1000);
    submit1(&f, 100, 10, SCHED_P1, C1, 4000, 10000);
    pass(&f, 10000);
    assert_int_equal(f.d.n_preemptions, 0);
    assert_int_equal(f.d.n_admits, 0);
    assert_state(&f, 1, SCHED_RUNNING);
    assert_state(&f, 2, SCHED_RUNNING);
    assert_state(&f, 100, SCHED_QUEUED);
    assert_true(info(&f, 100).reason.code != SCHED_WAIT_NONE);
    /* Time alone (no other event) makes them preemptible. */
    pass(&f, 101001);
    assert_int_equal(f.d.n_preemptions, 1);
    assert_int_equal(f.d.preemptions[0].preemptor_id, 100);
    assert_int_equal(f.d.preemptions[0].n_victims, 1);
    fx_release(&f);
}

/*
 * P1 work is never a victim off the preemptor's own pools: node 1 is in no
 * pool; A (guarantee 8) and B (guarantee 4) share it. B runs P1 on 4 GPUs
 * and P2 on the other 4. A's P1 for 8 cannot be served by preempting B's P2
 * alone, so nothing is preempted; A's P1 for 4 takes B's P2. (Before owned
 * meant owned there, this test had B's P1 on A's pool: see
 * test_owner_reclaims_p1_on_its_pool.)
 */
static void test_p1_never_victim(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 8000, -1), 0);
    assert_int_equal(sched_set_quota(f.s, 20, C1, 4000, -1), 0);
    assert_int_equal(sched_class_guaranteed(f.s, C1), 12000);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P1, 1, C1, 4000, 1000);
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 2000);
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 2000);

    submit1(&f, 99, 10, SCHED_P1, C1, 8000, 5000);
    pass(&f, 5000);
    assert_int_equal(f.d.n_preemptions, 0);
    assert_state(&f, 1, SCHED_RUNNING);
    assert_state(&f, 2, SCHED_RUNNING);
    assert_int_equal(sched_cancel(f.s, 99, 6000), 0);
    assert_state(&f, 99, GONE);

    assert_int_equal(reclaim_one(&f, 10000), 2);
    assert_state(&f, 1, SCHED_RUNNING);
    fx_release(&f);
}

/*
 * A project at its guarantee never causes a preemption: A (guarantee 4)
 * runs P1 on 4 GPUs, B borrows the other 4; A's next P1 waits for its
 * guarantee and A's P2 waits for capacity, and nobody is preempted.
 */
static void test_at_guarantee_no_preemption(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 4000, -1), 0);
    submit1(&f, 1, 10, SCHED_P1, C1, 4000, 0);
    submit1(&f, 2, 20, SCHED_P2, C1, 4000, 0);
    pass(&f, 10);
    must_admit(&f, 1);
    must_admit(&f, 2);
    submit1(&f, 3, 10, SCHED_P1, C1, 1000, 20);
    submit1(&f, 4, 10, SCHED_P2, C1, 1000, 20);
    pass(&f, 30);
    assert_int_equal(f.d.n_preemptions, 0);
    assert_int_equal(f.d.n_admits, 0);
    assert_reason(&f, 3, SCHED_WAIT_GUARANTEE);
    assert_state(&f, 4, SCHED_QUEUED);
    assert_state(&f, 2, SCHED_RUNNING);
    /* A later pass does not change its mind. */
    pass(&f, 100000);
    assert_int_equal(f.d.n_preemptions, 0);
    fx_release(&f);
}

/*
 * At its guarantee through its own P2 work, a project takes nothing from
 * others: A (guarantee 4) runs P2 on 4 GPUs, B borrows the other 4 (lower
 * priority, so the cheaper victim). A's P1 for 2 may make its own P2 work
 * go (DESIGN 3.4), or wait, but B's work is not A's to take.
 */
static void test_at_guarantee_by_p2_takes_nothing_from_others(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 4000, -1), 0);
    struct sched_workload_spec a1 = wl(1, 10, SCHED_P2, 1, C1, 4000, 1000);
    a1.priority = 5;
    struct sched_workload_spec b1 = wl(2, 20, SCHED_P2, 1, C1, 4000, 2000);
    run_b(&f, &a1, 1000);
    run_b(&f, &b1, 2000);
    submit1(&f, 3, 10, SCHED_P1, C1, 2000, 10000);
    pass(&f, 10000);
    for (size_t i = 0; i < f.d.n_victims; i++)
        assert_int_equal(f.d.victims[i].project_id, 10);
    assert_state(&f, 2, SCHED_RUNNING);
    fx_release(&f);
}

/*
 * Reclaim honours same_block: nodes 1 and 2 are block 1, node 3 block 2,
 * 4 GPUs each. B runs on node 1 (b1, older) and node 3 (b3, newer: less
 * work lost); node 2 is free. A's P1 gang of two 4-GPU replicas in one block
 * can only use nodes 1 and 2, so b1 must be the victim, not the cheaper b3;
 * after b1 releases, the gang runs on nodes 1 and 2.
 */
static void test_reclaim_same_block(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    for (int n = 1; n <= 3; n++) {
        struct sched_node_spec ns;
        memset(&ns, 0, sizeof ns);
        ns.id = n;
        ns.cluster_id = 1;
        ns.block_id = n == 3 ? 2 : 1;
        assert_int_equal(sched_add_node(f.s, &ns), 0);
        for (int i = 1; i <= 4; i++)
            assert_int_equal(sched_add_gpu(f.s, n, n * 100 + i, C1, 0), 0);
    }
    assert_int_equal(sched_set_quota(f.s, 10, C1, 8000, -1), 0);
    int64_t g1[4] = {101, 102, 103, 104}, g3[4] = {301, 302, 303, 304};
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 0);
    struct sched_workload_spec b3 = wl(3, 20, SCHED_P2, 1, C1, 4000, 0);
    restore_whole(&f, &b1, g1, 4, 1000, false);
    restore_whole(&f, &b3, g3, 4, 5000, false);

    struct sched_workload_spec a = wl(10, 10, SCHED_P1, 2, C1, 4000, 10000);
    a.same_block = true;
    submit(&f, &a, 10000);
    pass(&f, 10000);
    assert_int_equal(f.d.n_preemptions, 1);
    assert_int_equal(f.d.preemptions[0].n_victims, 1);
    assert_int_equal(f.d.victims[f.d.preemptions[0].first_victim].workload_id, 1);
    assert_int_equal(sched_released(f.s, 1, 11000), 0);
    pass(&f, 11000);
    const struct sched_admit *ad = must_admit(&f, 10);
    for (size_t i = 0; i < ad->n_assigns; i++)
        assert_true(asg(&f, ad, i)->node_id != 3);
    fx_release(&f);
}

/*
 * A reclaim whose victims released is admitted at the next pass, even when
 * its project's queue now starts with P1 work that cannot run (here beyond
 * the guarantee) and the lookahead is 0.
 */
static void test_reclaim_not_hidden_by_blocked_head(void **state)
{
    struct fx f;
    struct sched_config cfg;
    (void)state;
    sched_config_init(&cfg);
    cfg.default_grace_ms = 30000;
    cfg.reserve_after_ms = 60000;
    cfg.lookahead = 0;
    fx_init_cfg(&f, &cfg);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    int64_t acc[1] = {20};
    pool_owned(&f, 7, 10, acc, 1);
    add_node(&f, 1, 8, C1, 7);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 1000);
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 1000);
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 1000);
    int64_t victim = reclaim_one(&f, 10000);
    /* A's higher-priority P1 beyond its guarantee goes ahead of 100 in A's queue. */
    /* Two 8-GPU replicas: each fits a node, together they exceed the 8-GPU guarantee. */
    struct sched_workload_spec big = wl(101, 10, SCHED_P1, 2, C1, 8000, 12000);
    big.priority = 5;
    submit(&f, &big, 12000);
    pass(&f, 12000);
    assert_reason(&f, 101, SCHED_WAIT_GUARANTEE);
    assert_int_equal(sched_released(f.s, victim, 20000), 0);
    pass(&f, 20000);
    must_admit(&f, 100);
    fx_release(&f);
}

/* A victim that did not ask to be requeued is gone once released. */
static void test_victim_without_requeue(void **state)
{
    struct fx f;
    (void)state;
    setup_owner_and_borrower(&f);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 8000, 1000);
    b1.requeue = false;
    b1.grace_ms = 5000;
    run_b(&f, &b1, 1000);
    assert_int_equal(reclaim_one(&f, 10000), 1);
    assert_int_equal(f.d.preemptions[0].grace_ms, 5000);
    assert_int_equal(f.d.preemptions[0].gpu_milli_reclaimed, 8000);
    assert_int_equal(sched_released(f.s, 1, 15000), 0);
    assert_state(&f, 1, GONE);
    pass(&f, 15000);
    must_admit(&f, 100);
    assert_int_equal(usage(&f, 20, C1).p2, 0);
    assert_int_equal(class_free(&f, C1), 4000);
    fx_release(&f);
}

/* ---- fair share and queue order ---- */

/*
 * Two P2 projects with weights 1 and 3 (no guarantees) compete for 8 free
 * GPUs with 20 one-GPU jobs each: lowest borrowed/weight first ends at 2 and
 * 6 (2/1 == 6/3), whatever the submit order across projects.
 */
static void test_fair_share_by_weight(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 3);
    add_node(&f, 1, 8, C1, 0);
    for (int64_t i = 0; i < 20; i++)
        submit1(&f, 1000 + i, 10, SCHED_P2, C1, 1000, i);
    for (int64_t i = 0; i < 20; i++)
        submit1(&f, 2000 + i, 20, SCHED_P2, C1, 1000, 100 + i);
    pass(&f, 1000);
    int n10 = 0, n20 = 0;
    for (size_t i = 0; i < f.d.n_admits; i++) {
        if (f.d.admits[i].workload_id < 2000)
            n10++;
        else
            n20++;
    }
    assert_int_equal(n10, 2);
    assert_int_equal(n20, 6);
    assert_int_equal(usage(&f, 10, C1).p2, 2000);
    assert_int_equal(usage(&f, 20, C1).p2, 6000);
    /* Each project's earliest work went first. */
    must_admit(&f, 1000);
    must_admit(&f, 1001);
    must_admit(&f, 2005);
    assert_null(find_admit(&f, 2006));
    for (int64_t i = 2; i < 20; i++) {
        struct sched_workload_info wi = info(&f, 1000 + i);
        assert_int_equal(wi.state, SCHED_QUEUED);
        assert_int_equal(wi.queue_position, (int)(i - 1));
        assert_true(wi.reason.code != SCHED_WAIT_NONE);
    }
    fx_release(&f);
}

/* Within a project: priority first, then submit time. */
static void test_queue_order_priority_then_submit(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 1, C1, 0);
    struct sched_workload_spec w;
    w = wl(1, 10, SCHED_P2, 1, C1, 1000, 300);
    submit(&f, &w, 300);
    w = wl(2, 10, SCHED_P2, 1, C1, 1000, 200);
    submit(&f, &w, 300);
    w = wl(3, 10, SCHED_P2, 1, C1, 1000, 400);
    w.priority = 9;
    submit(&f, &w, 300);
    pass(&f, 400);
    must_admit(&f, 3);
    assert_int_equal(info(&f, 2).queue_position, 1);
    assert_int_equal(info(&f, 1).queue_position, 2);
    assert_int_equal(sched_released(f.s, 3, 500), 0);
    pass(&f, 500);
    must_admit(&f, 2);
    assert_int_equal(info(&f, 1).queue_position, 1);
    fx_release(&f);
}

/*
 * Best-effort FIFO with reservation (reserve_after_ms 1000): one 8-GPU node;
 * Y runs 4 GPUs. X's head h wants 8 and is blocked; X's small s1 (2) passes
 * it. Once h has waited long enough, capacity is held for it: Z's s2 (2)
 * waits with SCHED_WAIT_RESERVED naming h even while GPUs are free, and h
 * runs when Y and s1 finish.
 */
static void test_best_effort_fifo_and_reservation(void **state)
{
    struct fx f;
    struct sched_config cfg;
    (void)state;
    sched_config_init(&cfg);
    cfg.reserve_after_ms = 1000;
    cfg.default_grace_ms = 30000;
    if (cfg.lookahead < 4)
        cfg.lookahead = 4;
    fx_init_cfg(&f, &cfg);
    project(&f, 10, 1, 1); /* X */
    project(&f, 20, 2, 1); /* Y */
    project(&f, 30, 3, 1); /* Z */
    add_node(&f, 1, 8, C1, 0);
    submit1(&f, 1, 20, SCHED_P2, C1, 4000, 0);
    pass(&f, 0);
    must_admit(&f, 1);

    submit1(&f, 10, 10, SCHED_P2, C1, 8000, 10);
    submit1(&f, 11, 10, SCHED_P2, C1, 2000, 20);
    pass(&f, 100);
    must_admit(&f, 11);
    assert_null(find_admit(&f, 10));
    assert_reason(&f, 10, SCHED_WAIT_CAPACITY);
    assert_int_equal(info(&f, 10).queue_position, 1);

    /* Time passes with no other event; then a small job arrives elsewhere. */
    pass(&f, 5000);
    submit1(&f, 30, 30, SCHED_P2, C1, 2000, 5000);
    pass(&f, 5000);
    assert_null(find_admit(&f, 30));
    assert_reason(&f, 30, SCHED_WAIT_RESERVED);
    assert_int_equal(info(&f, 30).reason.other_id, 10);

    assert_int_equal(sched_released(f.s, 1, 6000), 0);
    pass(&f, 6000);
    assert_int_equal(f.d.n_admits, 0); /* 6 free, all held for h */
    assert_reason(&f, 30, SCHED_WAIT_RESERVED);

    assert_int_equal(sched_released(f.s, 11, 7000), 0);
    pass(&f, 7000);
    const struct sched_admit *a = must_admit(&f, 10);
    assert_int_equal(a->n_assigns, 8);
    assert_null(find_admit(&f, 30));
    assert_state(&f, 30, SCHED_QUEUED);
    assert_true(info(&f, 30).reason.code != SCHED_WAIT_NONE);
    fx_release(&f);
}

/* ---- cancel, restart, reasons, validation ---- */

static void test_cancel_queued_and_running(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 4, C1, 0);
    submit1(&f, 1, 10, SCHED_P2, C1, 4000, 0);
    submit1(&f, 2, 10, SCHED_P2, C1, 4000, 1);
    submit1(&f, 3, 10, SCHED_P2, C1, 2000, 2);
    pass(&f, 10);
    must_admit(&f, 1);
    assert_int_equal(info(&f, 2).queue_position, 1);
    assert_int_equal(info(&f, 3).queue_position, 2);

    assert_int_equal(sched_cancel(f.s, 2, 20), 0);
    assert_state(&f, 2, GONE);
    assert_int_equal(info(&f, 3).queue_position, 1);
    assert_true(sched_cancel(f.s, 2, 21) < 0);
    assert_int_equal(sched_cancel(f.s, 999, 21), SCHED_ENOENT);

    assert_int_equal(sched_cancel(f.s, 1, 30), 0);
    assert_state(&f, 1, GONE);
    assert_int_equal(usage(&f, 10, C1).p2, 0);
    assert_int_equal(class_free(&f, C1), 4000);
    pass(&f, 40);
    const struct sched_admit *a = must_admit(&f, 3);
    assert_int_equal(a->n_assigns, 2);
    assert_int_equal(f.d.n_admits, 1);
    /* Released and cancelled work cannot be released again. */
    assert_true(sched_released(f.s, 1, 50) < 0);
    fx_release(&f);
}

/*
 * Restart: a second scheduler restored from the first one's allocations
 * (gangs, shares, P1 and P2, one of them preempting) reports the same usage
 * and free capacity, places new work only on free devices, and still
 * requeues the restored victim when it is released.
 */
/*
 * sched_successor: who takes a running workload's GPUs when it ends, for a
 * backend that queues ahead. Node 1 has 2 GPUs of C1; project 10 runs 1 and 2
 * and queues 3 and 4, all alike: 3 follows 1; taken out of the queue (the
 * engine cancels it while it waits in the backend), 4 follows 2. Handing 1's
 * GPUs to 3 (released, restored running) changes no usage. Anything that
 * could make a pass decide otherwise gives no successor: another project
 * waiting for C1, a head of another shape, a share, a gang. What would take
 * a follower back: another project waiting (sched_others_wait), work of its
 * own project in its class that comes first (sched_ranked_before).
 */
static void test_successor(void **state)
{
    struct fx f;
    int64_t next = 0, gpus[2];
    int32_t milli[2] = {1000, 1000}, rep[2] = {0, 0};
    const struct sched_admit *a;
    struct sched_workload_spec w3 = wl(3, 10, SCHED_P2, 1, C1, 1000, 30);
    struct sched_workload_spec w7 = wl(7, 10, SCHED_P2, 1, C1, 1000, 70);
    (void)state;

    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    add_node(&f, 1, 2, C1, 0);
    add_node(&f, 2, 4, C2, 0);
    submit1(&f, 1, 10, SCHED_P2, C1, 1000, 10);
    submit1(&f, 2, 10, SCHED_P2, C1, 1000, 20);
    submit(&f, &w3, 30);
    submit1(&f, 4, 10, SCHED_P2, C1, 1000, 40);
    pass(&f, 100);
    assert_int_equal(f.d.n_admits, 2);
    a = must_admit(&f, 1);
    gpus[0] = asg(&f, a, 0)->gpu_id;

    assert_int_equal(sched_successor(f.s, 3, &next), SCHED_ENOENT); /* queued, not running */
    assert_int_equal(sched_successor(f.s, 99, &next), SCHED_ENOENT);
    assert_int_equal(sched_successor(f.s, 1, &next), 0);
    assert_int_equal(next, 3);
    assert_int_equal(sched_cancel(f.s, 3, 110), 0);
    assert_int_equal(sched_successor(f.s, 2, &next), 0);
    assert_int_equal(next, 4);
    /* 3, out of the queue and waiting in the backend, has 4 for its own successor. */
    assert_int_equal(sched_successor_like(f.s, &w3, &next), 0);
    assert_int_equal(next, 4);

    /* 1 ends: 3 runs on its GPU from then; the project holds what it held. */
    assert_int_equal(usage(&f, 10, C1).p2, 2000);
    assert_int_equal(sched_released(f.s, 1, 500), 0);
    assert_int_equal(sched_restore_running(f.s, &w3, 0, gpus, milli, rep, 1, 500, false), 0);
    assert_state(&f, 3, SCHED_RUNNING);
    assert_int_equal(info(&f, 3).started_ms, 500);
    assert_int_equal(usage(&f, 10, C1).p2, 2000);
    assert_int_equal(class_free(&f, C1), 0);
    assert_int_equal(sched_successor(f.s, 3, &next), 0);
    assert_int_equal(next, 4);

    /* Another project waits for C1: only a pass may choose between them. */
    assert_false(sched_others_wait(f.s, 10, C1));
    submit1(&f, 5, 20, SCHED_P2, C1, 1000, 600);
    assert_true(sched_others_wait(f.s, 10, C1));
    assert_true(sched_others_wait(f.s, 20, C1)); /* 10's queued 4 */
    assert_false(sched_others_wait(f.s, 10, C2));
    assert_int_equal(sched_successor(f.s, 3, &next), SCHED_ENOENT);
    assert_int_equal(sched_cancel(f.s, 5, 610), 0);
    assert_int_equal(sched_successor(f.s, 3, &next), 0);
    /* ...but work of another class in another project does not matter. */
    submit1(&f, 6, 20, SCHED_P2, C2, 8000, 620);
    assert_int_equal(sched_successor(f.s, 3, &next), 0);
    assert_int_equal(next, 4);

    /* Nothing of project 10 in C1 comes before 3 (4 was submitted later)... */
    assert_false(sched_ranked_before(f.s, &w3));
    /* ...nor higher-priority work of another class. */
    {
        struct sched_workload_spec other_class = wl(12, 10, SCHED_P2, 1, C2, 1000, 650);
        other_class.priority = 9;
        submit(&f, &other_class, 650);
        assert_false(sched_ranked_before(f.s, &w3));
        assert_int_equal(sched_cancel(f.s, 12, 660), 0);
    }

    /*
     * A head of another shape (more CPU; first by priority) blocks the way,
     * and comes before 3 (a follower like 3 would be taken back).
     */
    w7.cpu_milli = 2000;
    w7.priority = 5;
    submit(&f, &w7, 700);
    assert_int_equal(sched_successor(f.s, 3, &next), SCHED_ENOENT);
    assert_int_equal(sched_successor_like(f.s, &w3, &next), SCHED_ENOENT);
    assert_true(sched_ranked_before(f.s, &w3));
    assert_int_equal(sched_cancel(f.s, 7, 710), 0);
    assert_false(sched_ranked_before(f.s, &w3));

    /* Shares and gangs have none. */
    assert_int_equal(sched_cancel(f.s, 2, 800), 0);
    assert_int_equal(sched_cancel(f.s, 3, 800), 0);
    assert_int_equal(sched_cancel(f.s, 4, 800), 0);
    submit1(&f, 8, 10, SCHED_P2, C1, 500, 810);
    {
        struct sched_workload_spec g = wl(9, 10, SCHED_P2, 2, C1, 500, 820);
        submit(&f, &g, 820);
    }
    pass(&f, 900);
    must_admit(&f, 8);
    must_admit(&f, 9);
    assert_int_equal(sched_successor(f.s, 8, &next), SCHED_ENOENT);
    assert_int_equal(sched_successor(f.s, 9, &next), SCHED_ENOENT);
    fx_release(&f);
}

static void test_restart_restore(void **state)
{
    struct fx f, g;
    (void)state;
    for (int k = 0; k < 2; k++) {
        struct fx *x = k == 0 ? &f : &g;
        setup_owner_and_borrower(x);
        add_node(x, 2, 8, C1, 0);
        add_node(x, 3, 8, C2, 0);
        project(x, 30, 3, 2);
    }
    struct sched_workload_spec specs[5];
    specs[0] = wl(1, 20, SCHED_P2, 1, C1, 4000, 100); /* preempting in g */
    specs[1] = wl(2, 20, SCHED_P2, 2, C1, 2000, 110);
    specs[2] = wl(3, 30, SCHED_P2, 3, C2, 500, 120);
    specs[3] = wl(4, 10, SCHED_P1, 1, C1, 2000, 130);
    specs[4] = wl(5, 30, SCHED_P2, 1, C2, 3000, 140);
    for (int i = 0; i < 5; i++)
        submit(&f, &specs[i], 200);
    pass(&f, 1000);
    assert_int_equal(f.d.n_admits, 5);

    /* Restore every admit into g; remember the devices held in C2. */
    int64_t held_c2[16];
    int n_held_c2 = 0;
    for (size_t i = 0; i < f.d.n_admits; i++) {
        const struct sched_admit *a = &f.d.admits[i];
        int64_t gpus[64];
        int32_t milli[64], rep[64];
        size_t n = a->n_assigns;
        assert_true(n <= 64);
        for (size_t j = 0; j < n; j++) {
            gpus[j] = asg(&f, a, j)->gpu_id;
            milli[j] = asg(&f, a, j)->milli;
            rep[j] = asg(&f, a, j)->replica;
            if (asg(&f, a, j)->node_id == 3 && n_held_c2 < 16)
                held_c2[n_held_c2++] = gpus[j];
        }
        const struct sched_workload_spec *sp = NULL;
        for (int k = 0; k < 5; k++)
            if (specs[k].id == a->workload_id)
                sp = &specs[k];
        assert_non_null(sp);
        assert_int_equal(sched_restore_running(g.s, sp, 0, gpus, milli, rep, n, 1000, sp->id == 1),
                         0);
    }
    assert_state(&g, 1, SCHED_PREEMPTING);
    assert_state(&g, 3, SCHED_RUNNING);
    assert_int_equal(info(&g, 3).started_ms, 1000);

    int64_t projects[3] = {10, 20, 30}, classes[2] = {C1, C2};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            struct sched_usage a = usage(&f, projects[i], classes[j]);
            struct sched_usage b = usage(&g, projects[i], classes[j]);
            assert_int_equal(a.p1, b.p1);
            assert_int_equal(a.p2, b.p2);
            assert_int_equal(a.guaranteed, b.guaranteed);
        }
    assert_int_equal(usage(&g, 10, C1).p1, 2000);
    assert_int_equal(usage(&g, 20, C1).p2, 8000);
    assert_int_equal(usage(&g, 30, C2).p2, 4500);
    for (int j = 0; j < 2; j++)
        assert_int_equal(class_free(&f, classes[j]), class_free(&g, classes[j]));
    assert_int_equal(class_free(&g, C1), 6000);
    assert_int_equal(class_free(&g, C2), 3500);

    /*
     * New work in g goes only to free devices. C2: three shares packed on two
     * devices (best fit) and three whole devices leave three whole ones.
     */
    submit1(&g, 50, 30, SCHED_P2, C2, 4000, 3000);
    submit1(&g, 51, 30, SCHED_P2, C2, 3000, 3001);
    pass(&g, 3000);
    assert_null(find_admit(&g, 50));
    const struct sched_admit *a = must_admit(&g, 51);
    assert_int_equal(a->n_assigns, 3);
    for (size_t j = 0; j < a->n_assigns; j++)
        assert_false(gpu_in(asg(&g, a, j)->gpu_id, held_c2, n_held_c2));
    assert_int_equal(class_free(&g, C2), 500);

    /* The restored victim requeues on release. */
    assert_int_equal(sched_released(g.s, 1, 4000), 0);
    assert_state(&g, 1, SCHED_QUEUED);
    assert_int_equal(usage(&g, 20, C1).p2, 4000);
    fx_release(&f);
    fx_release(&g);
}

static void test_reason_format(void **state)
{
    char buf[256];
    struct sched_reason r;
    (void)state;
    memset(&r, 0, sizeof r);
    r.code = SCHED_WAIT_LIMIT;
    r.class_id = 3;
    r.need = 4000;
    r.used = 16000;
    r.cap = 16000;
    memset(buf, 'x', sizeof buf);
    sched_reason_format(&r, NULL, 0, buf, sizeof buf);
    assert_true(strlen(buf) > 10);
    assert_true(strlen(buf) < sizeof buf);
    assert_null(strchr(buf, '\n'));
    assert_non_null(strstr(buf, "16/16"));
    assert_non_null(strstr(buf, "4 class 3"));

    for (int code = SCHED_WAIT_NONE; code <= SCHED_WAIT_NO_NODES; code++) {
        r.code = (enum sched_reason_code)code;
        r.count = 3;
        r.other_id = 77;
        buf[0] = '\0';
        sched_reason_format(&r, NULL, 0, buf, sizeof buf);
        if (code != SCHED_WAIT_NONE)
            assert_true(strlen(buf) > 0);
        assert_null(strchr(buf, '\n'));
    }
    /* Truncates safely. */
    char small[8];
    memset(small, 'x', sizeof small);
    r.code = SCHED_WAIT_CAPACITY;
    sched_reason_format(&r, NULL, 0, small, sizeof small);
    assert_true(memchr(small, '\0', sizeof small) != NULL);
    char one[1] = {'x'};
    sched_reason_format(&r, NULL, 0, one, 1);
    assert_int_equal(one[0], '\0');
}

/* A reason from a real pass formats to a line naming its numbers. */
static void test_reason_from_pass(void **state)
{
    struct fx f;
    char buf[256];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 0, 3000), 0);
    submit1(&f, 1, 10, SCHED_P2, C1, 4000, 0);
    pass(&f, 10);
    struct sched_workload_info wi = info(&f, 1);
    assert_int_equal(wi.reason.code, SCHED_WAIT_LIMIT);
    sched_reason_format(&wi.reason, NULL, 0, buf, sizeof buf);
    assert_non_null(strstr(buf, "limit of 3"));
    fx_release(&f);
}

/* ---- issue 14: owned means owned there, victims the placement needs ---- */

/* The victims of the one preemption of the last pass, as ids (asserting there is one). */
static size_t victims_of_pass(const struct fx *f, int64_t *ret, size_t max)
{
    assert_int_equal(f->d.n_preemptions, 1);
    const struct sched_preemption *p = &f->d.preemptions[0];
    assert_true(p->n_victims <= max);
    for (size_t i = 0; i < p->n_victims; i++)
        ret[i] = f->d.victims[p->first_victim + i].workload_id;
    return p->n_victims;
}

/*
 * An org-admin's guarantee does not take another tenant's pool: B (20) may
 * borrow A's (10) pool 7 (node 1, 8 GPUs) and has an explicit guarantee of
 * 8 GPUs but owns none. B's owned work runs there, but as borrowed; A's own
 * P1 work then takes its pool back from it (before: B's P1 was recorded
 * not borrowed and A waited for ever).
 */
static void test_owner_reclaims_p1_on_its_pool(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    setup_owner_and_borrower(&f);
    assert_int_equal(sched_set_quota(f.s, 20, C1, 8000, -1), 0);
    submit1(&f, 1, 20, SCHED_P1, C1, 8000, 1000);
    pass(&f, 1000);
    assert_true(must_admit(&f, 1)->borrowed);

    submit1(&f, 100, 10, SCHED_P1, C1, 4000, 2000);
    pass(&f, 2000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 1);
    assert_reason(&f, 100, SCHED_WAIT_RECLAIM);
    assert_int_equal(sched_released(f.s, 1, 3000), 0);
    pass(&f, 3000);
    assert_false(must_admit(&f, 100)->borrowed);
    fx_release(&f);
}

/*
 * The same hole without any admin: A (10) owns pool 7 (node 1, 2 GPUs), B
 * (20) owns pool 8 (node 2, 2 GPUs) and lends it to A; C (30) borrows A's
 * pool whole. A's P1 work finds its own pool full and lands on B's pool:
 * borrowing there. B's own P1 work then takes it back (before: recorded
 * not borrowed, and B waited "no room" for ever).
 */
static void test_p1_on_lent_pool_is_borrowed(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    int64_t acc_a[1] = {30}, acc_b[1] = {10};
    pool_owned(&f, 7, 10, acc_a, 1);
    pool_owned(&f, 8, 20, acc_b, 1);
    add_node(&f, 1, 2, C1, 7);
    add_node(&f, 2, 2, C1, 8);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    assert_int_equal(sched_set_quota(f.s, 20, C1, -1, -1), 0);
    submit1(&f, 1, 30, SCHED_P2, C1, 2000, 100);
    pass(&f, 100);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 1);
    submit1(&f, 2, 10, SCHED_P1, C1, 1000, 200);
    pass(&f, 200);
    const struct sched_admit *a = must_admit(&f, 2);
    assert_int_equal(admit_node(&f, a), 2);
    assert_true(a->borrowed);

    submit1(&f, 3, 20, SCHED_P1, C1, 2000, 300);
    pass(&f, 300);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 2);
    fx_release(&f);
}

/*
 * One capped class does not block the project's other classes: limit of 1
 * GPU in C1, none in C2; 20 single-GPU C1 workloads, then 5 of C2 with 16
 * C2 GPUs free. Before: the C2 work stayed "behind 19 earlier workload(s)".
 */
static void test_capped_class_does_not_block_other_class(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 8, C1, 0);
    add_node(&f, 2, 8, C2, 0);
    add_node(&f, 3, 8, C2, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 0, 1000), 0);
    for (int64_t id = 1; id <= 20; id++)
        submit1(&f, id, 10, SCHED_P2, C1, 1000, id);
    for (int64_t id = 21; id <= 25; id++)
        submit1(&f, id, 10, SCHED_P2, C2, 1000, id);
    pass(&f, 100);
    must_admit(&f, 1);
    for (int64_t id = 21; id <= 25; id++)
        must_admit(&f, id);
    assert_int_equal(f.d.n_admits, 6);
    assert_reason(&f, 2, SCHED_WAIT_LIMIT);
    fx_release(&f);
}

/*
 * Own victims only as the placement needs: node 1 (6 GPUs) is A's pool; A
 * runs low (P2, 1 GPU, priority -1), mid (P2, 2 GPUs, priority 0) and high
 * (P1, 3 GPUs). A's P1 gang of 2 x 1 GPU needs 2 GPUs: mid alone frees them.
 * Before: low and mid both went (3 GPUs for 2).
 */
static void test_reclaim_own_victims_as_needed(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    pool_owned(&f, 7, 10, NULL, 0);
    add_node(&f, 1, 6, C1, 7);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    struct sched_workload_spec low = wl(1, 10, SCHED_P2, 1, C1, 1000, 100);
    low.priority = -1;
    struct sched_workload_spec mid = wl(2, 10, SCHED_P2, 1, C1, 2000, 100);
    struct sched_workload_spec high = wl(3, 10, SCHED_P1, 1, C1, 3000, 100);
    high.priority = 1;
    submit(&f, &low, 100);
    submit(&f, &mid, 100);
    submit(&f, &high, 100);
    pass(&f, 100);
    assert_int_equal(f.d.n_admits, 3);
    struct sched_workload_spec gang = wl(4, 10, SCHED_P1, 2, C1, 1000, 1000);
    submit(&f, &gang, 1000);
    pass(&f, 1000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 2);
    assert_int_equal(f.d.preemptions[0].gpu_milli_reclaimed, 2000);
    assert_state(&f, 1, SCHED_RUNNING);
    fx_release(&f);
}

/* Two 1-GPU nodes in A's pool 7, lent to B (20) and C (30). */
static void setup_two_borrowers(struct fx *f)
{
    fx_init(f);
    project(f, 10, 1, 1);
    project(f, 20, 2, 1);
    project(f, 30, 3, 1);
    int64_t acc[2] = {20, 30};
    pool_owned(f, 7, 10, acc, 2);
    add_node(f, 1, 1, C1, 7);
    add_node(f, 2, 1, C1, 7);
    assert_int_equal(sched_set_quota(f->s, 10, C1, -1, -1), 0);
}

/*
 * Victim priority counts across nodes: C runs P2 at priority -1000, then B
 * at priority 1000, each on one node, both borrowing 1 GPU. A's P1 for one
 * GPU takes C's. Before: B's (the newer, on the node looked at first).
 */
static void test_reclaim_priority_across_nodes(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    setup_two_borrowers(&f);
    struct sched_workload_spec c = wl(1, 30, SCHED_P2, 1, C1, 1000, 100);
    c.priority = -1000;
    struct sched_workload_spec b = wl(2, 20, SCHED_P2, 1, C1, 1000, 200);
    b.priority = 1000;
    run_b(&f, &c, 100);
    run_b(&f, &b, 200);
    submit1(&f, 100, 10, SCHED_P1, C1, 1000, 1000);
    pass(&f, 1000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 1);
    fx_release(&f);
}

/*
 * Priorities are per project: a borrower's high priority does not move the
 * reclaim onto the owner's own P2 work. B borrows one node of A's pool at
 * priority 0, then A runs P2 at priority -1 on the other; A's P1 takes B's.
 * Before: A's own P2 went (less work lost).
 */
static void test_reclaim_borrower_before_own_p2(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    setup_two_borrowers(&f);
    struct sched_workload_spec b = wl(2, 20, SCHED_P2, 1, C1, 1000, 100);
    struct sched_workload_spec own = wl(1, 10, SCHED_P2, 1, C1, 1000, 200);
    own.priority = -1;
    run_b(&f, &b, 100);
    run_b(&f, &own, 200); /* the newer, with less work lost */
    submit1(&f, 100, 10, SCHED_P1, C1, 1000, 1000);
    pass(&f, 1000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 2);
    fx_release(&f);
}

/*
 * An owner takes back what runs on its pool on a node not ready too: B's
 * gang holds A's pool 7 on node 1 (then drained) and the open node 2; A's
 * own P2 work holds node 3, beyond A's explicit guarantee of 1 GPU. A's P1
 * for one GPU takes B's gang (others' work first), which frees node 2.
 * Before: the search reached A's pools through the ready nodes only, and
 * took A's own P2 work (property seed 36621 parted from the exhaustive core
 * there).
 */
static void test_owner_reclaims_from_drained_node(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    int64_t acc[1] = {20};
    pool_owned(&f, 7, 10, acc, 1);
    add_node(&f, 1, 1, C1, 7);
    add_node(&f, 2, 1, C1, 0);
    add_node(&f, 3, 2, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 1000, -1), 0);
    struct sched_workload_spec b = wl(1, 20, SCHED_P2, 2, C1, 1000, 100);
    int64_t b_gpus[2] = {101, 201};
    int32_t b_milli[2] = {1000, 1000}, b_rep[2] = {0, 1};
    assert_int_equal(
        sched_restore_running(f.s, &b, SCHED_P2, b_gpus, b_milli, b_rep, 2, 100, false), 0);
    struct sched_workload_spec own = wl(2, 10, SCHED_P2, 1, C1, 2000, 200);
    int64_t own_gpus[2] = {301, 302};
    restore_whole(&f, &own, own_gpus, 2, 200, false);
    assert_int_equal(sched_set_node_state(f.s, 1, SCHED_NODE_DRAIN), 0);
    pass(&f, 500);
    assert_int_equal(f.d.n_admits + f.d.n_preemptions, 0);

    submit1(&f, 100, 10, SCHED_P1, C1, 1000, 1000);
    pass(&f, 1000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 1);
    assert_int_equal(sched_released(f.s, 1, 2000), 0);
    pass(&f, 2000);
    assert_int_equal(admit_node(&f, must_admit(&f, 100)), 2);
    fx_release(&f);
}

/*
 * The borrower borrowing most above its guarantee goes first: B borrows 1
 * GPU, C borrows 2 (one on each of two nodes); whatever their priorities,
 * A's P1 for one GPU takes C's work.
 */
static void test_reclaim_biggest_borrower_first(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    int64_t acc[2] = {20, 30};
    pool_owned(&f, 7, 10, acc, 2);
    add_node(&f, 1, 1, C1, 7);
    add_node(&f, 2, 1, C1, 7);
    add_node(&f, 3, 1, C1, 7);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    struct sched_workload_spec b = wl(1, 20, SCHED_P2, 1, C1, 1000, 100);
    b.priority = -5;
    struct sched_workload_spec c1 = wl(2, 30, SCHED_P2, 1, C1, 1000, 200);
    c1.priority = 5;
    struct sched_workload_spec c2 = wl(3, 30, SCHED_P2, 1, C1, 1000, 300);
    c2.priority = 7;
    run_b(&f, &b, 100);
    run_b(&f, &c1, 200);
    run_b(&f, &c2, 300);
    submit1(&f, 100, 10, SCHED_P1, C1, 1000, 1000);
    pass(&f, 1000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 2); /* C's lower priority of its two */
    fx_release(&f);
}

/*
 * No freed GPU left idle for a cheaper node preference: node 1 (4 GPUs, A's
 * pool 7) holds B's 4-GPU job at priority 9; node 2 (1 GPU, pool 8 of D,
 * open to A and B) holds B's 1-GPU job at priority 0. A (guarantee 5
 * explicit) wants 1 GPU: B's 1-GPU job goes, not the 4-GPU one.
 */
static void test_reclaim_no_idle_freed_gpus(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 40, 4, 1);
    int64_t acc7[1] = {20}, acc8[2] = {10, 20};
    pool_owned(&f, 7, 10, acc7, 1);
    pool_owned(&f, 8, 40, acc8, 2);
    add_node(&f, 1, 4, C1, 7);
    add_node(&f, 2, 1, C1, 8);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 5000, -1), 0);
    struct sched_workload_spec big = wl(1, 20, SCHED_P2, 1, C1, 4000, 100);
    big.priority = 9;
    struct sched_workload_spec small = wl(2, 20, SCHED_P2, 1, C1, 1000, 200);
    run_b(&f, &big, 100);
    run_b(&f, &small, 200);
    submit1(&f, 100, 10, SCHED_P1, C1, 1000, 1000);
    pass(&f, 1000);
    assert_int_equal(victims_of_pass(&f, v, 4), 1);
    assert_int_equal(v[0], 2);
    fx_release(&f);
}

/*
 * The wait reason says when protected work becomes preemptible, and huge
 * minimum runtimes do not overflow: B's two jobs on A's node have minimum
 * runtimes of 100 s and (near) forever; A's P1 for 8 GPUs waits for room
 * until t = 101 s, which its reason says.
 */
static void test_reason_says_when_preemptible(void **state)
{
    struct fx f;
    char buf[512];
    (void)state;
    setup_owner_and_borrower(&f);
    struct sched_workload_spec b1 = wl(1, 20, SCHED_P2, 1, C1, 4000, 1000);
    b1.min_runtime_ms = 100000;
    struct sched_workload_spec b2 = wl(2, 20, SCHED_P2, 1, C1, 4000, 1000);
    b2.min_runtime_ms = INT64_MAX;
    b2.grace_ms = INT64_MAX;
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 1000);
    submit1(&f, 100, 10, SCHED_P1, C1, 4000, 10000);
    pass(&f, 10000);
    assert_int_equal(f.d.n_preemptions, 0);
    struct sched_workload_info wi = info(&f, 100);
    assert_int_equal(wi.reason.code, SCHED_WAIT_CAPACITY);
    assert_int_equal(wi.reason.preemptible_at_ms, 101000);
    sched_reason_format(&wi.reason, NULL, 10000, buf, sizeof buf);
    assert_non_null(strstr(buf, "preemptible in 91 s"));
    pass(&f, 101000);
    assert_int_equal(f.d.n_preemptions, 1);
    assert_int_equal(f.d.victims[0].workload_id, 1);
    fx_release(&f);

    /* Near-forever minimum runtimes are clamped, never negative or wrapped. */
    setup_owner_and_borrower(&f);
    b1.min_runtime_ms = INT64_MAX;
    run_b(&f, &b1, 1000);
    run_b(&f, &b2, 1000);
    submit1(&f, 100, 10, SCHED_P1, C1, 4000, 10000);
    pass(&f, 10000);
    wi = info(&f, 100);
    assert_int_equal(wi.reason.code, SCHED_WAIT_CAPACITY);
    assert_int_equal(wi.reason.preemptible_at_ms, 1000 + SCHED_MAX_DURATION_MS);
    pass(&f, 20000);
    assert_int_equal(f.d.n_preemptions, 0);
    fx_release(&f);
}

/*
 * Reasons say what was asked: 4 replicas of one GPU that no node can hold
 * (labels) need 1 GPU per replica, not 4; a P1 request of 4 with 4 of 6 in
 * use would exceed the guarantee, it is not at it.
 */
static void test_reason_per_replica_and_guarantee(void **state)
{
    struct fx f;
    char buf[512];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 6000, -1), 0);
    struct sched_workload_spec lab = wl(1, 10, SCHED_P2, 4, C1, 1000, 0);
    lab.selector[0] = 99;
    lab.n_selector = 1;
    submit(&f, &lab, 0);
    struct sched_workload_spec p1 = wl(2, 10, SCHED_P1, 1, C1, 4000, 0);
    submit(&f, &p1, 0);
    struct sched_workload_spec p1b = wl(3, 10, SCHED_P1, 1, C1, 4000, 0);
    submit(&f, &p1b, 0);
    pass(&f, 10);
    struct sched_workload_info wi = info(&f, 1);
    assert_int_equal(wi.reason.code, SCHED_WAIT_NO_NODES);
    assert_int_equal(wi.reason.per_replica, 1000);
    sched_reason_format(&wi.reason, NULL, 0, buf, sizeof buf);
    assert_non_null(strstr(buf, ": 1 class 1 per replica"));
    wi = info(&f, 3);
    assert_int_equal(wi.reason.code, SCHED_WAIT_GUARANTEE);
    sched_reason_format(&wi.reason, NULL, 0, buf, sizeof buf);
    assert_null(strstr(buf, "at its guarantee"));
    assert_non_null(strstr(buf, "would exceed its guarantee (4 in use + 4 asked > 6)"));
    fx_release(&f);
}

/*
 * A borrower's hold does not keep an owner off its pool: A (10) owns node 1
 * (pool 7, 1 GPU, open to B), node 2 (no pool, 1 GPU) runs C's owned work.
 * B (guarantee 2) queues an owned gang of 2 x 1 GPU, which blocks long
 * enough to get both nodes held for it. A's owned work for its 1 GPU still
 * starts. Before: "capacity is held for" B's gang, for as long as it waits.
 */
static void test_owner_not_kept_off_by_borrower_hold(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    int64_t acc[1] = {20};
    pool_owned(&f, 7, 10, acc, 1);
    add_node(&f, 1, 1, C1, 7);
    add_node(&f, 2, 1, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0);
    assert_int_equal(sched_set_quota(f.s, 20, C1, 2000, -1), 0);
    assert_int_equal(sched_set_quota(f.s, 30, C1, 1000, -1), 0);
    submit1(&f, 1, 30, SCHED_P1, C1, 1000, 0);
    pass(&f, 0);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 2);
    struct sched_workload_spec gang = wl(2, 20, SCHED_P1, 2, C1, 1000, 100);
    submit(&f, &gang, 100);
    pass(&f, 100);
    pass(&f, 70000); /* blocked past reserve_after: nodes are held for it */
    assert_state(&f, 2, SCHED_QUEUED);
    submit1(&f, 3, 10, SCHED_P1, C1, 1000, 71000);
    pass(&f, 71000);
    assert_int_equal(admit_node(&f, must_admit(&f, 3)), 1);
    /* The gang is told who took the node held for it. */
    assert_int_equal(info(&f, 2).hold_taken_by, 3);
    fx_release(&f);
}

/*
 * Automatic work is owned while the project's owned work plus its need fits
 * the guarantee, opportunistic beyond: guarantee 2, four automatic 1-GPU
 * workloads on an 8-GPU node -> the first two P1, the next two P2 (borrowed).
 * A requeued one is judged afresh.
 */
static void test_auto_owned_then_opportunistic(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 8, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 2000, -1), 0);
    for (int i = 1; i <= 4; i++)
        submit1(&f, i, 10, SCHED_AUTO, C1, 1000, i);
    pass(&f, 10);
    for (int i = 1; i <= 4; i++) {
        const struct sched_admit *a = must_admit(&f, i);
        assert_true(a->automatic);
        assert_int_equal(a->pclass, i <= 2 ? SCHED_P1 : SCHED_P2);
        assert_int_equal(a->borrowed, i > 2);
        assert_int_equal(a->guaranteed, 2000);
        assert_int_equal(a->owned_held, i <= 2 ? (i - 1) * 1000 : 2000);
        assert_int_equal(info(&f, i).runs_as, i <= 2 ? SCHED_P1 : SCHED_P2);
    }
    struct sched_usage u = usage(&f, 10, C1);
    assert_int_equal(u.p1, 2000);
    assert_int_equal(u.p2, 2000);
    /* One owned ends: the next automatic work is owned again. */
    assert_int_equal(sched_released(f.s, 1, 20), 0);
    submit1(&f, 5, 10, SCHED_AUTO, C1, 1000, 21);
    pass(&f, 30);
    assert_int_equal(must_admit(&f, 5)->pclass, SCHED_P1);
    /* Fixed classes are not automatic. */
    submit1(&f, 6, 10, SCHED_P2, C1, 1000, 31);
    pass(&f, 40);
    assert_false(must_admit(&f, 6)->automatic);
    assert_int_equal(must_admit(&f, 6)->pclass, SCHED_P2);
    fx_release(&f);
}

/*
 * An owner's automatic work within its guarantee takes back its pool from a
 * borrower (whose automatic work, with no guarantee, ran opportunistic), and
 * the reason says which class the rule gave it and why.
 */
static void test_auto_reclaims_within_guarantee(void **state)
{
    struct fx f;
    char buf[512];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    int64_t acc[1] = {20};
    pool_owned(&f, 7, 10, acc, 1);
    add_node(&f, 1, 2, C1, 7);
    assert_int_equal(sched_set_quota(f.s, 10, C1, -1, -1), 0); /* 2 GPUs from its pool */
    submit1(&f, 1, 20, SCHED_AUTO, C1, 1000, 0);
    submit1(&f, 2, 20, SCHED_AUTO, C1, 1000, 1);
    pass(&f, 10);
    assert_int_equal(must_admit(&f, 1)->pclass, SCHED_P2);
    assert_int_equal(must_admit(&f, 2)->pclass, SCHED_P2);
    submit1(&f, 3, 10, SCHED_AUTO, C1, 1000, 20);
    pass(&f, 30);
    assert_int_equal(f.d.n_preemptions, 1);
    assert_int_equal(f.d.preemptions[0].preemptor_id, 3);
    assert_int_equal(f.d.preemptions[0].n_victims, 1);
    assert_reason(&f, 3, SCHED_WAIT_RECLAIM);
    struct sched_workload_info wi = info(&f, 3);
    assert_int_equal(wi.reason.auto_as, SCHED_P1);
    assert_int_equal(wi.reason.auto_held, 0);
    assert_int_equal(wi.reason.auto_guaranteed, 2000);
    sched_reason_format(&wi.reason, "h100", 30, buf, sizeof buf);
    assert_non_null(strstr(buf, "automatic class: owned (P1), within the project's guarantee "
                                "(0 owned in use + 1 <= 2)"));
    /* The victim releases: the owner's work starts, owned. */
    int64_t victim = f.d.victims[f.d.preemptions[0].first_victim].workload_id;
    assert_int_equal(sched_released(f.s, victim, 40), 0);
    pass(&f, 50);
    assert_int_equal(must_admit(&f, 3)->pclass, SCHED_P1);
    assert_false(must_admit(&f, 3)->borrowed);
    fx_release(&f);
}

/*
 * Automatic work beyond the guarantee waits as opportunistic work, and
 * within the project one automatic workload never preempts another of the
 * same priority: guarantee 1, limit 2, a 2-GPU automatic workload runs as P2;
 * a 1-GPU automatic one would be owned but is over the limit and waits (an
 * explicit owned one would take the P2 work down).
 */
static void test_auto_spares_own_auto_work(void **state)
{
    struct fx f;
    char buf[512];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 4, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 1000, 2000), 0);
    struct sched_workload_spec big = wl(1, 10, SCHED_AUTO, 1, C1, 2000, 0);
    submit(&f, &big, 0);
    pass(&f, 10);
    assert_int_equal(must_admit(&f, 1)->pclass, SCHED_P2);
    submit1(&f, 2, 10, SCHED_AUTO, C1, 1000, 20);
    pass(&f, 30);
    assert_null(find_admit(&f, 2));
    assert_int_equal(f.d.n_preemptions, 0);
    assert_reason(&f, 2, SCHED_WAIT_LIMIT);
    assert_int_equal(info(&f, 2).reason.auto_as, SCHED_P1);
    /* Beyond the guarantee: waits as P2, and says so. */
    submit1(&f, 3, 10, SCHED_AUTO, C1, 2000, 40);
    pass(&f, 50);
    assert_reason(&f, 3, SCHED_WAIT_LIMIT);
    struct sched_workload_info wi = info(&f, 3);
    assert_int_equal(wi.reason.auto_as, SCHED_P2);
    sched_reason_format(&wi.reason, "h100", 50, buf, sizeof buf);
    assert_non_null(strstr(buf, "automatic class: opportunistic (P2), beyond the project's "
                                "guarantee (0 owned in use + 2 > 1)"));
    /* An explicit owned workload does make the project's P2 work go. */
    submit1(&f, 4, 10, SCHED_P1, C1, 1000, 60);
    pass(&f, 70);
    assert_int_equal(f.d.n_preemptions, 1);
    assert_int_equal(f.d.victims[0].workload_id, 1);
    fx_release(&f);
}

/* A restored automatic workload keeps the class it was admitted as. */
static void test_auto_restore_keeps_class(void **state)
{
    struct fx f;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 4, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 10, C1, 2000, -1), 0);
    struct sched_workload_spec w = wl(1, 10, SCHED_AUTO, 1, C1, 1000, 0);
    int64_t gpus[1] = {101};
    int32_t milli[1] = {1000}, rep[1] = {0};
    /* Within the guarantee now, but it was admitted as P2: it stays P2. */
    assert_int_equal(sched_restore_running(f.s, &w, SCHED_P2, gpus, milli, rep, 1, 0, false), 0);
    assert_int_equal(info(&f, 1).runs_as, SCHED_P2);
    assert_int_equal(usage(&f, 10, C1).p2, 1000);
    /* Without a class, the rule decides; a fixed class cannot be restored as the other. */
    struct sched_workload_spec w2 = wl(2, 10, SCHED_AUTO, 1, C1, 1000, 0);
    gpus[0] = 102;
    assert_int_equal(sched_restore_running(f.s, &w2, 0, gpus, milli, rep, 1, 0, false), 0);
    assert_int_equal(info(&f, 2).runs_as, SCHED_P1);
    struct sched_workload_spec w3 = wl(3, 10, SCHED_P1, 1, C1, 1000, 0);
    gpus[0] = 103;
    assert_int_equal(sched_restore_running(f.s, &w3, SCHED_P2, gpus, milli, rep, 1, 0, false),
                     SCHED_EINVAL);
    fx_release(&f);
}

/* Pools closed to a project that could run its work, for its reason (lending is explicit). */
static void test_closed_pools_with_room(void **state)
{
    struct fx f;
    int64_t ids[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    pool_owned(&f, 7, 10, NULL, 0);
    pool_owned(&f, 8, 20, NULL, 0);
    add_node(&f, 1, 2, C1, 7);
    add_node(&f, 2, 2, C1, 8);
    submit1(&f, 1, 30, SCHED_AUTO, C1, 1000, 0);
    pass(&f, 10);
    assert_reason(&f, 1, SCHED_WAIT_NO_NODES);
    assert_int_equal(sched_closed_pools_with_room(f.s, 1, false, ids, 4), 2);
    assert_true((ids[0] == 7 && ids[1] == 8) || (ids[0] == 8 && ids[1] == 7));
    /* Pool 7 full: only pool 8 has room now; both could run it at all. */
    submit1(&f, 2, 10, SCHED_P2, C1, 2000, 20);
    pass(&f, 30);
    must_admit(&f, 2);
    assert_int_equal(sched_closed_pools_with_room(f.s, 1, true, ids, 4), 1);
    assert_int_equal(ids[0], 8);
    assert_int_equal(sched_closed_pools_with_room(f.s, 1, false, ids, 4), 2);
    assert_int_equal(sched_closed_pools_with_room(f.s, 1, true, ids, 1), 1);
    /* Not for running work, nor for unknown work. */
    assert_int_equal(sched_closed_pools_with_room(f.s, 2, true, ids, 4), 0);
    assert_int_equal(sched_closed_pools_with_room(f.s, 99, true, ids, 4), 0);
    fx_release(&f);
}

/*
 * A pool lent to all with a lending limit of 3 GPUs: two other projects
 * borrow 3 of its 8 GPUs between them and no more, whatever free GPUs it
 * has; its owner is not limited; when a borrower's work ends the next
 * borrower gets in. A 2-GPU replica that would cross the limit waits.
 */
static void test_lend_to_all_with_limit(void **state)
{
    struct fx f;
    struct sched_pool_spec ps;
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    memset(&ps, 0, sizeof ps);
    ps.id = 7;
    ps.owner_project_id = 10;
    ps.lend_to_all = true;
    ps.lending_limit = 3000;
    assert_int_equal(sched_set_pool(f.s, &ps), 0);
    add_node(&f, 1, 8, C1, 7);
    submit1(&f, 1, 20, SCHED_P2, C1, 1000, 0);
    submit1(&f, 2, 20, SCHED_P2, C1, 1000, 1);
    submit1(&f, 3, 30, SCHED_P2, C1, 1000, 2);
    submit1(&f, 4, 30, SCHED_P2, C1, 1000, 3);
    submit1(&f, 5, 30, SCHED_P2, C1, 500, 4);
    pass(&f, 10);
    assert_int_equal(f.d.n_admits, 3); /* 3 GPUs lent, 5 still free */
    assert_int_equal(class_free(&f, C1), 5000);
    assert_state(&f, 5, SCHED_QUEUED); /* even half a GPU would cross the limit */
    /* The owner is not limited. */
    submit1(&f, 6, 10, SCHED_P2, C1, 4000, 20);
    pass(&f, 30);
    must_admit(&f, 6);
    /* A borrower's work ends: the next borrower gets its share of the limit. */
    assert_int_equal(sched_released(f.s, 1, 40), 0);
    pass(&f, 50);
    assert_int_equal(f.d.n_admits, 1); /* the last 1-GPU one: 3 lent again */
    assert_state(&f, 5, SCHED_QUEUED);
    /* Without the limit the half GPU fits too: 8 - 4 (owner) - 3 - 0.5 leaves 0.5. */
    ps.lending_limit = 0;
    assert_int_equal(sched_set_pool(f.s, &ps), 0);
    pass(&f, 60);
    must_admit(&f, 5);
    assert_int_equal(class_free(&f, C1), 500);
    fx_release(&f);
}

/* A pool owned by project 10 and lent to all, at most limit milli at once. */
static void pool_lent_to_all(struct fx *f, int64_t pool, int64_t limit)
{
    struct sched_pool_spec ps;
    memset(&ps, 0, sizeof ps);
    ps.id = pool;
    ps.owner_project_id = 10;
    ps.lend_to_all = true;
    ps.lending_limit = limit;
    assert_int_equal(sched_set_pool(f->s, &ps), 0);
}

/* The victims of the one preemption of the last pass, by id, and that it is w's. */
static size_t preemption_victims(const struct fx *f, int64_t w, int64_t *ret, size_t max)
{
    assert_int_equal(f->d.n_preemptions, 1);
    assert_int_equal(f->d.preemptions[0].preemptor_id, w);
    size_t n = f->d.preemptions[0].n_victims;
    assert_true(n <= max);
    for (size_t i = 0; i < n; i++)
        ret[i] = f->d.victims[f->d.preemptions[0].first_victim + i].workload_id;
    return n;
}

/*
 * A reclaim's plan keeps a gang within a pool's lending limit over all its
 * replicas, as placement will. Pool 7 (node 1, two free GPUs) lends one GPU
 * at most; nodes 2 and 3 (one GPU each) run project 30's borrowed work.
 * Project 20's owned 3x1 gang fits one replica on node 1 and needs both
 * borrowers gone: two victims, then it runs. (Counting each replica alone
 * against the limit planned two on node 1 and took one victim for nothing.)
 */
static void test_reclaim_gang_within_lending_limit(void **state)
{
    struct fx f;
    int64_t v[4];
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    pool_lent_to_all(&f, 7, 1000);
    add_node(&f, 1, 2, C1, 7);
    add_node(&f, 2, 1, C1, 0);
    add_node(&f, 3, 1, C1, 0);
    assert_int_equal(sched_set_quota(f.s, 20, C1, 3000, -1), 0);
    submit1(&f, 1, 30, SCHED_P2, C1, 1000, 0);
    submit1(&f, 2, 30, SCHED_P2, C1, 1000, 1);
    pass(&f, 10);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)) + admit_node(&f, must_admit(&f, 2)), 5);
    struct sched_workload_spec gang = wl(3, 20, SCHED_P1, 3, C1, 1000, 100);
    submit(&f, &gang, 100);
    pass(&f, 100);
    assert_int_equal(preemption_victims(&f, 3, v, 4), 2);
    assert_int_equal(sched_released(f.s, 1, 200), 0);
    assert_int_equal(sched_released(f.s, 2, 200), 0);
    pass(&f, 300);
    const struct sched_admit *a = must_admit(&f, 3);
    int on_pool = 0;
    for (int r = 0; r < 3; r++)
        on_pool += replica_node(&f, a, r) == 1;
    assert_int_equal(on_pool, 1);
    fx_release(&f);
}

/*
 * What a reclaim's plan borrows of a pool with a lending limit is held for
 * it until its victims have gone, as its nodes are. Pool 7 (nodes 1 and 2,
 * one GPU each, node 1 labelled 5) lends one GPU at most; node 3 (labelled
 * 5, no pool) runs project 30's borrowed work. Project 20's owned 2x1 gang
 * asks for label 5: node 1 as it is and node 3 once the borrower goes.
 * Project 40's borrowed 1-GPU work submitted meanwhile would fit node 2 but
 * for the loan held for the gang: it waits, and the gang runs.
 */
static void test_reclaim_holds_its_loan(void **state)
{
    struct fx f;
    int64_t v[4];
    const uint32_t l5[1] = {5};
    (void)state;
    fx_init(&f);
    project(&f, 10, 1, 1);
    project(&f, 20, 2, 1);
    project(&f, 30, 3, 1);
    project(&f, 40, 4, 1);
    pool_lent_to_all(&f, 7, 1000);
    add_node_l(&f, 1, 1, C1, 7, l5, 1);
    add_node(&f, 2, 1, C1, 7);
    add_node_l(&f, 3, 1, C1, 0, l5, 1);
    assert_int_equal(sched_set_quota(f.s, 20, C1, 2000, -1), 0);
    submit1(&f, 1, 30, SCHED_P2, C1, 1000, 0);
    pass(&f, 10);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 3); /* no pool before a lent one */
    struct sched_workload_spec gang = wl(2, 20, SCHED_P1, 2, C1, 1000, 100);
    gang.selector[0] = 5;
    gang.n_selector = 1;
    submit(&f, &gang, 100);
    pass(&f, 100);
    assert_int_equal(preemption_victims(&f, 2, v, 4), 1);
    assert_int_equal(v[0], 1);
    submit1(&f, 3, 40, SCHED_P2, C1, 1000, 150);
    pass(&f, 150);
    assert_null(find_admit(&f, 3));
    assert_int_equal(sched_released(f.s, 1, 200), 0);
    pass(&f, 300);
    const struct sched_admit *a = must_admit(&f, 2);
    assert_int_equal(replica_node(&f, a, 0) + replica_node(&f, a, 1), 4);
    assert_state(&f, 3, SCHED_QUEUED);
    fx_release(&f);
}

/*
 * After a restart a preemptor is held the nodes it will go to, as the
 * decision held them, not only its victims'. Project 20 (guarantee 1, limit
 * 1.5) runs 1 GPU of opportunistic work on node 1 (label 6); its owned
 * 1-GPU work asks for label 5 (node 2, free): its own work must go for the
 * limit, and node 2 is held for it. Restored from that state, node 2 is
 * held again: project 30's work waits, and the preemptor runs on node 2.
 */
static void test_restore_holds_planned_nodes(void **state)
{
    struct fx f, g;
    int64_t v[4];
    const uint32_t l5[1] = {5}, l6[1] = {6};
    (void)state;
    for (int k = 0; k < 2; k++) {
        struct fx *x = k == 0 ? &f : &g;
        fx_init(x);
        project(x, 20, 2, 1);
        project(x, 30, 3, 1);
        add_node_l(x, 1, 1, C1, 0, l6, 1);
        add_node_l(x, 2, 1, C1, 0, l5, 1);
        assert_int_equal(sched_set_quota(x->s, 20, C1, 1000, 1500), 0);
    }
    struct sched_workload_spec own = wl(1, 20, SCHED_P2, 1, C1, 1000, 0);
    own.selector[0] = 6;
    own.n_selector = 1;
    struct sched_workload_spec pre = wl(2, 20, SCHED_P1, 1, C1, 1000, 100);
    pre.selector[0] = 5;
    pre.n_selector = 1;
    submit(&f, &own, 0);
    pass(&f, 10);
    assert_int_equal(admit_node(&f, must_admit(&f, 1)), 1);
    submit(&f, &pre, 100);
    pass(&f, 100);
    assert_int_equal(preemption_victims(&f, 2, v, 4), 1);
    assert_int_equal(v[0], 1);
    fx_release(&f);

    int64_t gpu = 101;
    restore_whole(&g, &own, &gpu, 1, 10, true);
    submit(&g, &pre, 200);
    assert_int_equal(sched_restore_preemption(g.s, 2, &own.id, 1), 0);
    submit1(&g, 3, 30, SCHED_P2, C1, 1000, 200);
    pass(&g, 200);
    assert_null(find_admit(&g, 3));
    assert_int_equal(sched_released(g.s, 1, 300), 0);
    pass(&g, 400);
    assert_int_equal(admit_node(&g, must_admit(&g, 2)), 2);
    assert_int_equal(admit_node(&g, must_admit(&g, 3)), 1);
    fx_release(&g);
}

/*
 * A preemptor whose victims all released goes first in the next pass, and
 * a restart in between keeps that. Node 1 (one GPU) runs project 30's
 * borrowed work; project 20 (guarantee 1) reclaims it for its owned work 2,
 * then queues owned work 3 of a higher priority, which waits: node 1 is
 * held for 2. The victim releases. In the core that saw it, 2 runs in the
 * next pass; in one rebuilt from the store before that pass (the queue, and
 * the reclaim restored as ready, its victim's node given), 2 runs too. Work
 * 3 comes before 2 in its project's queue: restored as plain queued work,
 * 2 would lose the GPU its victim freed to it.
 */
static void test_restore_keeps_reclaim_first(void **state)
{
    struct fx f, g;
    int64_t v[4], node = 1;
    (void)state;
    for (int k = 0; k < 2; k++) {
        struct fx *x = k == 0 ? &f : &g;
        fx_init(x);
        project(x, 20, 2, 1);
        project(x, 30, 3, 1);
        add_node(x, 1, 1, C1, 0);
        assert_int_equal(sched_set_quota(x->s, 20, C1, 1000, -1), 0);
    }
    struct sched_workload_spec borrowed = wl(1, 30, SCHED_P2, 1, C1, 1000, 0);
    borrowed.requeue = false;
    struct sched_workload_spec pre = wl(2, 20, SCHED_P1, 1, C1, 1000, 100);
    struct sched_workload_spec urgent = wl(3, 20, SCHED_P1, 1, C1, 1000, 150);
    urgent.priority = 5;
    submit(&f, &borrowed, 0);
    pass(&f, 10);
    must_admit(&f, 1);
    submit(&f, &pre, 100);
    pass(&f, 100);
    assert_int_equal(preemption_victims(&f, 2, v, 4), 1);
    assert_int_equal(v[0], 1);
    submit(&f, &urgent, 150);
    pass(&f, 150);
    assert_null(find_admit(&f, 3));
    assert_int_equal(sched_released(f.s, 1, 200), 0);
    pass(&f, 300);
    assert_int_equal(admit_node(&f, must_admit(&f, 2)), 1);
    assert_state(&f, 3, SCHED_QUEUED);
    fx_release(&f);

    /* The same state rebuilt after the release: 3 and 2 queued, nothing running. */
    submit(&g, &pre, 250);
    submit(&g, &urgent, 250);
    assert_int_equal(sched_restore_reclaim_ready(g.s, 2, &node, 1), 0);
    assert_int_equal(sched_restore_reclaim_ready(g.s, 2, &node, 1), 0); /* once is enough */
    assert_int_equal(sched_restore_reclaim_ready(g.s, 99, &node, 1), SCHED_ENOENT);
    pass(&g, 300);
    assert_int_equal(admit_node(&g, must_admit(&g, 2)), 1);
    assert_null(find_admit(&g, 3));
    assert_state(&g, 3, SCHED_QUEUED);
    /* Running, it is no reclaim waiting for its first try. */
    assert_int_equal(sched_restore_reclaim_ready(g.s, 2, &node, 1), SCHED_ESTATE);
    fx_release(&g);
}

static void test_invalid_input(void **state)
{
    struct sched_config cfg;
    struct fx f;
    (void)state;
    sched_config_init(&cfg);
    cfg.default_grace_ms = -1;
    assert_null(sched_new(&cfg));
    sched_config_init(&cfg);
    cfg.reserve_after_ms = -5;
    assert_null(sched_new(&cfg));
    sched_free(NULL);

    fx_init(&f);
    project(&f, 10, 1, 1);
    add_node(&f, 1, 8, C1, 0);
    struct sched_workload_spec w = wl(1, 99, SCHED_P2, 1, C1, 1000, 0);
    assert_true(sched_submit(f.s, &w, 0) < 0); /* unknown project */
    w = wl(1, 10, SCHED_P2, 1, 42, 1000, 0);
    assert_true(sched_submit(f.s, &w, 0) < 0); /* unknown class */
    w = wl(1, 10, SCHED_P2, 0, C1, 1000, 0);
    assert_true(sched_submit(f.s, &w, 0) < 0); /* no replicas */
    w = wl(1, 10, SCHED_P2, SCHED_MAX_REPLICAS + 1, C1, 1000, 0);
    assert_true(sched_submit(f.s, &w, 0) < 0);
    w = wl(1, 10, SCHED_P2, 1, C1, 1500, 0);
    assert_int_equal(sched_submit(f.s, &w, 0), SCHED_EINVAL); /* not a share, not whole */
    w = wl(0, 10, SCHED_P2, 1, C1, 1000, 0);
    assert_true(sched_submit(f.s, &w, 0) < 0); /* id 0 */
    w = wl(1, 10, SCHED_P2, 1, C1, 1000, 0);
    assert_int_equal(sched_submit(f.s, &w, 0), 0);
    assert_int_equal(sched_submit(f.s, &w, 0), SCHED_EEXIST);
    assert_true(sched_released(f.s, 1, 1) < 0); /* queued, not running */
    assert_int_equal(info(&f, 1).state, SCHED_QUEUED);
    assert_int_equal(sched_released(f.s, 12345, 1), SCHED_ENOENT);
    assert_int_equal(sched_checkpoint(f.s, 12345, 1), SCHED_ENOENT);
    struct sched_workload_info wi;
    assert_int_equal(sched_workload_info(f.s, 4242, &wi), SCHED_ENOENT);
    /* Nothing of the refused submits is left behind. */
    pass(&f, 10);
    assert_int_equal(f.d.n_admits, 1);
    fx_release(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_fit_whole_gpus),
        cmocka_unit_test(test_multi_gpu_replica_stays_on_one_node),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_milli_shares_best_fit),
        cmocka_unit_test(test_class_and_labels),
        cmocka_unit_test(test_pool_access),
        cmocka_unit_test(test_p1_prefers_owner_pool),
        cmocka_unit_test(test_drain_takes_no_work),
        cmocka_unit_test(test_p1_beyond_guarantee_waits),
        cmocka_unit_test(test_p2_at_limit_waits),
        cmocka_unit_test(test_org_cap),
        cmocka_unit_test(test_reclaim_fewest_victims),
        cmocka_unit_test(test_victim_lowest_priority),
        cmocka_unit_test(test_victim_least_work_lost),
        cmocka_unit_test(test_victim_newest),
        cmocka_unit_test(test_min_runtime_protects),
        cmocka_unit_test(test_p1_never_victim),
        cmocka_unit_test(test_at_guarantee_no_preemption),
        cmocka_unit_test(test_victim_without_requeue),
        cmocka_unit_test(test_at_guarantee_by_p2_takes_nothing_from_others),
        cmocka_unit_test(test_reclaim_same_block),
        cmocka_unit_test(test_reclaim_not_hidden_by_blocked_head),
        cmocka_unit_test(test_fair_share_by_weight),
        cmocka_unit_test(test_queue_order_priority_then_submit),
        cmocka_unit_test(test_best_effort_fifo_and_reservation),
        cmocka_unit_test(test_cancel_queued_and_running),
        cmocka_unit_test(test_restart_restore),
        cmocka_unit_test(test_successor),
        cmocka_unit_test(test_reason_format),
        cmocka_unit_test(test_reason_from_pass),
        cmocka_unit_test(test_invalid_input),
        cmocka_unit_test(test_owner_reclaims_p1_on_its_pool),
        cmocka_unit_test(test_p1_on_lent_pool_is_borrowed),
        cmocka_unit_test(test_capped_class_does_not_block_other_class),
        cmocka_unit_test(test_reclaim_own_victims_as_needed),
        cmocka_unit_test(test_reclaim_priority_across_nodes),
        cmocka_unit_test(test_reclaim_borrower_before_own_p2),
        cmocka_unit_test(test_reclaim_biggest_borrower_first),
        cmocka_unit_test(test_owner_reclaims_from_drained_node),
        cmocka_unit_test(test_reclaim_no_idle_freed_gpus),
        cmocka_unit_test(test_reason_says_when_preemptible),
        cmocka_unit_test(test_reason_per_replica_and_guarantee),
        cmocka_unit_test(test_owner_not_kept_off_by_borrower_hold),
        cmocka_unit_test(test_auto_owned_then_opportunistic),
        cmocka_unit_test(test_auto_reclaims_within_guarantee),
        cmocka_unit_test(test_auto_spares_own_auto_work),
        cmocka_unit_test(test_auto_restore_keeps_class),
        cmocka_unit_test(test_closed_pools_with_room),
        cmocka_unit_test(test_lend_to_all_with_limit),
        cmocka_unit_test(test_reclaim_gang_within_lending_limit),
        cmocka_unit_test(test_reclaim_holds_its_loan),
        cmocka_unit_test(test_restore_holds_planned_nodes),
        cmocka_unit_test(test_restore_keeps_reclaim_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
