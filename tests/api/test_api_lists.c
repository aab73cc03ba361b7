/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_lists.c: what the API reads from the store in one go is read to the end, never
 * cut at the store's largest page (10,000 rows): a user's role bindings (whoami, and the
 * roles a request is checked against) and the allocations behind a workload's GPU history.
 * The rows past the first page are written straight into the store, one transaction each.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "store/store.h"
#include "support/testsrv.h"

#define PAGE 10000 /* the largest page store_list returns */

struct fixture {
    struct testsrv *srv;
    const char *admin;
    int64_t org, flavor, cluster, node, gpu_class;
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv *s = f->srv = testsrv_start();

    f->admin = s->admin_token;
    f->org = testsrv_create(s, f->admin, "organizations", "{\"name\":\"many\"}");
    f->flavor = testsrv_create(s, f->admin, "flavors", "{\"name\":\"gpu.one\"}");
    f->cluster = testsrv_create(s, f->admin, "clusters", "{\"name\":\"c\",\"backend\":\"sim\"}");
    f->node = testsrv_create(s, f->admin, "nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"n\"}",
                             f->cluster);
    f->gpu_class = testsrv_create(s, f->admin, "gpu-classes", "{\"name\":\"h100\"}");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    testsrv_stop(f->srv);
    free(f);
    return 0;
}

/* n projects of the organization and a viewer binding of user on each, in one transaction. */
static void bind_on_new_projects(struct fixture *f, int64_t user, int n, const char *prefix)
{
    struct store_conn *c = store_conn_get(f->srv->store);
    const struct resource_def *pd = &model_projects, *bd = &model_role_bindings;
    struct error_info ei = {0};
    struct arena a;

    arena_init(&a);
    assert_int_equal(store_begin(c, &ei), 0);
    for (int i = 0; i < n; i++) {
        struct row p = model_row_new(pd, &a), b = model_row_new(bd, &a);
        int64_t project, id;
        char name[32];
        snprintf(name, sizeof(name), "%s%d", prefix, i);
        row_set_int(&p, F_PROJECTS_ORG_ID, f->org);
        row_set_str(&p, &a, F_PROJECTS_NAME, name);
        row_set_str(&p, &a, F_PROJECTS_DISPLAY_NAME, "");
        row_set_str(&p, &a, F_PROJECTS_DESCRIPTION, "");
        row_set_int(&p, F_PROJECTS_WEIGHT, 1);
        row_set_int(&p, F_PROJECTS_CREATED_AT, time(NULL));
        row_set_int(&p, F_PROJECTS_UPDATED_AT, time(NULL));
        if (store_insert(c, pd, &p, &project, &ei) < 0)
            fail_msg("project: %s", ei.message);
        row_set_int(&b, F_ROLE_BINDINGS_USER_ID, user);
        row_set_str(&b, &a, F_ROLE_BINDINGS_ROLE, "viewer");
        row_set_null(&b, F_ROLE_BINDINGS_ORG_ID);
        row_set_int(&b, F_ROLE_BINDINGS_PROJECT_ID, project);
        row_set_int(&b, F_ROLE_BINDINGS_CREATED_AT, time(NULL));
        if (store_insert(c, bd, &b, &id, &ei) < 0)
            fail_msg("role binding: %s", ei.message);
        if (i % 1000 == 999) /* keep the arena small */
            arena_release(&a);
    }
    assert_int_equal(store_commit(c, &ei), 0);
    store_conn_put(c);
    arena_release(&a);
}

/*
 * A user with more role bindings than one page: whoami lists every one, and the last one
 * (the highest id, past the first page) still grants its role.
 */
static void test_every_role_binding_counts(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    int64_t user = testsrv_create(s, f->admin, "users", "{\"name\":\"many-roles\"}");
    int64_t last = testsrv_create(s, f->admin, "projects",
                                  "{\"org_id\":%" PRId64 ",\"name\":\"the-last\"}", f->org);
    char *token, path[64];
    json_t *who = NULL;
    long status = 0;

    bind_on_new_projects(f, user, PAGE, "p");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64 "}", user,
                   last);
    token = testsrv_token_for(s, user, NULL);

    assert_int_equal(testsrv_req(s, "GET", "/v1/whoami", token, NULL, &status, &who), 0);
    assert_int_equal(status, 200);
    assert_int_equal(json_array_size(json_object_get(who, "bindings")), PAGE + 1);
    json_decref(who);

    snprintf(path, sizeof(path), "/v1/projects/%" PRId64, last);
    testsrv_expect(s, "GET", path, token, NULL, 200);
    free(token);
}

/*
 * A workload with more allocations than one page: its history covers the GPU of the last
 * one too.
 */
static void test_history_reads_every_allocation(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    const struct resource_def *d = &model_allocations;
    int64_t project = testsrv_create(s, f->admin, "projects",
                                     "{\"org_id\":%" PRId64 ",\"name\":\"long-runner\"}", f->org);
    int64_t workload = testsrv_create(s, f->admin, "workloads",
                                      "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "}",
                                      project, f->flavor);
    int64_t gpus[2], now_ms = (int64_t)time(NULL) * 1000;
    struct store_conn *c;
    struct error_info ei = {0};
    struct arena a;
    char path[160];
    json_t *h = NULL;
    long status = 0;

    for (int i = 0; i < 2; i++)
        gpus[i] = testsrv_create(s, f->admin, "gpus",
                                 "{\"node_id\":%" PRId64 ",\"index\":%d,\"gpu_class_id\":%" PRId64
                                 ",\"uuid\":\"GPU-history-%d\"}",
                                 f->node, i, f->gpu_class, i);
    /* PAGE short runs on the first GPU, then one on the second */
    c = store_conn_get(s->store);
    arena_init(&a);
    assert_int_equal(store_begin(c, &ei), 0);
    for (int i = 0; i <= PAGE; i++) {
        struct row al = model_row_new(d, &a);
        int64_t id, start = now_ms - 600000 + i * 10;
        row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, workload);
        row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, project);
        row_set_int(&al, F_ALLOCATIONS_REPLICA, 0);
        row_set_int(&al, F_ALLOCATIONS_NODE_ID, f->node);
        row_set_int(&al, F_ALLOCATIONS_GPU_ID, gpus[i == PAGE]);
        row_set_int(&al, F_ALLOCATIONS_GPU_CLASS_ID, f->gpu_class);
        row_set_int(&al, F_ALLOCATIONS_MILLI, 1000);
        row_set_str(&al, &a, F_ALLOCATIONS_PRIORITY_CLASS, "owned");
        row_set_int(&al, F_ALLOCATIONS_BORROWED, 0);
        row_set_int(&al, F_ALLOCATIONS_STARTED_MS, start);
        row_set_int(&al, F_ALLOCATIONS_ENDED_MS, start + 5);
        row_set_str(&al, &a, F_ALLOCATIONS_END_REASON, "succeeded");
        if (store_insert(c, d, &al, &id, &ei) < 0)
            fail_msg("allocation: %s", ei.message);
        if (i % 1000 == 999)
            arena_release(&a);
    }
    assert_int_equal(store_commit(c, &ei), 0);
    store_conn_put(c);
    arena_release(&a);

    snprintf(path, sizeof(path), "/v1/inventory/history?workload=%" PRId64, workload);
    assert_int_equal(testsrv_req(s, "GET", path, f->admin, NULL, &status, &h), 0);
    assert_int_equal(status, 200);
    assert_int_equal(json_integer_value(json_object_get(h, "gpus")), 2);
    json_decref(h);
}

/*
 * More GPU classes than the engine's answer once held (256): /v1/capacity lists every one.
 * All but the last are written straight into the store; the last, made through the API,
 * has the engine read the catalog again.
 */
static void test_capacity_lists_every_class(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    const struct resource_def *d = &model_gpu_classes;
    struct store_conn *c = store_conn_get(s->store);
    struct error_info ei = {0};
    json_t *cap = NULL;
    long status = 0;
    struct arena a;
    int n_direct = 299; /* with the fixture's and the one below: 301 */

    arena_init(&a);
    assert_int_equal(store_begin(c, &ei), 0);
    for (int i = 0; i < n_direct; i++) {
        struct row r = model_row_new(d, &a);
        int64_t id;
        char name[32];
        snprintf(name, sizeof(name), "class-%d", i);
        row_set_str(&r, &a, F_GPU_CLASSES_NAME, name);
        row_set_str(&r, &a, F_GPU_CLASSES_MODEL, "");
        row_set_str(&r, &a, F_GPU_CLASSES_VENDOR, "");
        row_set_int(&r, F_GPU_CLASSES_MEMORY_MIB, 0);
        row_set_null(&r, F_GPU_CLASSES_PARENT_ID);
        row_set_int(&r, F_GPU_CLASSES_MILLI, 1000);
        row_set_int(&r, F_GPU_CLASSES_CREATED_AT, time(NULL));
        row_set_int(&r, F_GPU_CLASSES_UPDATED_AT, time(NULL));
        if (store_insert(c, d, &r, &id, &ei) < 0)
            fail_msg("gpu class: %s", ei.message);
    }
    assert_int_equal(store_commit(c, &ei), 0);
    store_conn_put(c);
    arena_release(&a);
    testsrv_create(s, f->admin, "gpu-classes", "{\"name\":\"the-last\"}");
    engine_sync(s->engine);

    assert_int_equal(testsrv_req(s, "GET", "/v1/capacity", f->admin, NULL, &status, &cap), 0);
    assert_int_equal(status, 200);
    assert_int_equal(json_array_size(json_object_get(cap, "items")), n_direct + 2);
    json_decref(cap);
}

/*
 * A user bound on more projects than one old read held (1,000): a project admin of the
 * last one still sees them.
 */
static void test_user_visible_by_last_binding(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    int64_t user = testsrv_create(s, f->admin, "users", "{\"name\":\"bound-often\"}");
    int64_t boss = testsrv_create(s, f->admin, "users", "{\"name\":\"project-boss\"}");
    int64_t last = testsrv_create(s, f->admin, "projects",
                                  "{\"org_id\":%" PRId64 ",\"name\":\"bosses\"}", f->org);
    char *token, path[64];

    bind_on_new_projects(f, user, 1000, "q");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64 "}", user,
                   last);
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"project-admin\",\"project_id\":%" PRId64
                   "}",
                   boss, last);
    token = testsrv_token_for(s, boss, NULL);
    snprintf(path, sizeof(path), "/v1/users/%" PRId64, user);
    testsrv_expect(s, "GET", path, token, NULL, 200);
    free(token);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_role_binding_counts),
        cmocka_unit_test(test_history_reads_every_allocation),
        cmocka_unit_test(test_capacity_lists_every_class),
        cmocka_unit_test(test_user_visible_by_last_binding),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
