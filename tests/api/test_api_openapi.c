/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_openapi.c: the OpenAPI document at /v1/openapi.json against the
 * live server it describes. It must be OpenAPI 3, name every model resource
 * with /v1/<name> and /v1/<name>/{id} and the fixed routes, and describe each
 * resource's fields as the model does. Then every path and method in it is
 * requested as the admin (an existing id for {id}, a valid body) and must
 * really be served: never 404 "no route" nor 405, and answered with a status
 * the operation documents. Conversely a method the document does not list
 * for a path is 405.
 */
#include "base/common.h"

#include <setjmp.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "store/store.h"
#include "support/testsrv.h"

#define OCT_2026_MS INT64_C(1791072000000) /* 2026-10-04T00:00:00Z */
#define GPU_UUID "GPU-00000000-aaaa-bbbb-cccc-000000000001"
#define HASH_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct fixture {
    struct testsrv *srv;
    const char *tok;
    json_t *doc;
    int64_t id[32]; /* an existing object of model_resources[i] */
    int failures;
};

static void failed(struct fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void failed(struct fixture *f, const char *fmt, ...)
{
    va_list ap;
    f->failures++;
    fprintf(stderr, "FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

static void finish(struct fixture *f)
{
    if (f->failures)
        fail_msg("%d check(s) failed (listed above)", f->failures);
}

static int res_index(const char *name)
{
    for (size_t i = 0; i < model_n_resources; i++) {
        if (strcmp(model_resources[i]->name, name) == 0)
            return (int)i;
    }
    return -1;
}

static void set_id(struct fixture *f, const char *res, int64_t id)
{
    int i = res_index(res);
    assert_true(i >= 0);
    f->id[i] = id;
}

static int64_t get_id(struct fixture *f, const char *res)
{
    int i = res_index(res);
    return i >= 0 ? f->id[i] : 0;
}

/*
 * Allocations and ledger entries are written by the scheduler, which this
 * in-process server does not run: put one of each straight into the store,
 * and take the event the submit wrote.
 */
static void add_work_rows(struct fixture *f, int64_t prj, int64_t node, int64_t gpu, int64_t cls)
{
    struct store_conn *c = store_conn_get(f->srv->store);
    struct error_info ei = {0};
    struct arena a;
    struct row al, pe;
    int64_t id;
    int64_t wid = get_id(f, "workloads");
    json_t *j;
    long got;

    arena_init(&a);
    al = model_row_new(&model_allocations, &a);
    row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, wid);
    row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, prj);
    row_set_int(&al, F_ALLOCATIONS_REPLICA, 0);
    row_set_int(&al, F_ALLOCATIONS_NODE_ID, node);
    row_set_int(&al, F_ALLOCATIONS_GPU_ID, gpu);
    row_set_int(&al, F_ALLOCATIONS_GPU_CLASS_ID, cls);
    row_set_int(&al, F_ALLOCATIONS_MILLI, 1000);
    row_set_str(&al, &a, F_ALLOCATIONS_PRIORITY_CLASS, "owned");
    row_set_int(&al, F_ALLOCATIONS_BORROWED, 0);
    row_set_int(&al, F_ALLOCATIONS_STARTED_MS, 1);
    row_set_null(&al, F_ALLOCATIONS_ENDED_MS);
    row_set_str(&al, &a, F_ALLOCATIONS_END_REASON, "");
    assert_int_equal(store_insert(c, &model_allocations, &al, &id, &ei), 0);
    set_id(f, "allocations", id);
    pe = model_row_new(&model_preemptions, &a);
    row_set_int(&pe, F_PREEMPTIONS_PREEMPTOR_ID, wid);
    row_set_int(&pe, F_PREEMPTIONS_PROJECT_ID, prj);
    row_set_str(&pe, &a, F_PREEMPTIONS_RULE, "reclaim");
    row_set_int(&pe, F_PREEMPTIONS_GPU_CLASS_ID, cls);
    row_set_str(&pe, &a, F_PREEMPTIONS_VICTIMS, "[]");
    row_set_str(&pe, &a, F_PREEMPTIONS_QUOTA_BEFORE, "[]");
    row_set_str(&pe, &a, F_PREEMPTIONS_QUOTA_AFTER, "[]");
    row_set_int(&pe, F_PREEMPTIONS_GPU_MILLI, 0);
    row_set_int(&pe, F_PREEMPTIONS_GRACE_MS, 0);
    row_set_int(&pe, F_PREEMPTIONS_DECIDED_MS, 1);
    row_set_null(&pe, F_PREEMPTIONS_RELEASED_MS);
    row_set_null(&pe, F_PREEMPTIONS_RECLAIM_MS);
    row_set_int(&pe, F_PREEMPTIONS_GPU_MS_LOST, 0);
    assert_int_equal(store_insert(c, &model_preemptions, &pe, &id, &ei), 0);
    set_id(f, "preemptions", id);
    /* The ledger, invoices and alerts are written by the server too. */
    {
        const struct resource_def *d = &model_usage;
        struct row u = model_row_new(d, &a), inv, al2;
        int64_t org = get_id(f, "organizations");
        row_set_int(&u, F_USAGE_SEQ, 1);
        row_set_int(&u, F_USAGE_WORKLOAD_ID, wid);
        row_set_int(&u, F_USAGE_ORG_ID, org);
        row_set_int(&u, F_USAGE_PROJECT_ID, prj);
        row_set_int(&u, F_USAGE_FLAVOR_ID, get_id(f, "flavors"));
        row_set_str(&u, &a, F_USAGE_PRIORITY_CLASS, "owned");
        row_set_int(&u, F_USAGE_REPLICAS, 1);
        row_set_int(&u, F_USAGE_GPU_MILLI, 0);
        row_set_int(&u, F_USAGE_RUN_STARTED_MS, OCT_2026_MS);
        row_set_int(&u, F_USAGE_STARTED_MS, OCT_2026_MS);
        row_set_int(&u, F_USAGE_ENDED_MS, OCT_2026_MS + 3600000);
        row_set_str(&u, &a, F_USAGE_PREV_HASH, HASH_A);
        row_set_str(&u, &a, F_USAGE_HASH, HASH_A);
        row_set_int(&u, F_USAGE_RECORDED_MS, 2);
        assert_int_equal(store_insert(c, d, &u, &id, &ei), 0);
        set_id(f, "usage-records", id);
        assert_int_equal(store_meta_set(c, "usage_ledger_head", "1 " HASH_A, &ei), 0);

        d = &model_invoices;
        inv = model_row_new(d, &a);
        row_set_str(&inv, &a, F_INVOICES_KIND, "invoice");
        row_set_str(&inv, &a, F_INVOICES_NUMBER, "INV-2025-000001");
        row_set_int(&inv, F_INVOICES_ORG_ID, org);
        row_set_str(&inv, &a, F_INVOICES_CUSTOMER, "org-1");
        row_set_str(&inv, &a, F_INVOICES_COST_CENTER, "");
        row_set_str(&inv, &a, F_INVOICES_PERIOD, "2026-09");
        row_set_int(&inv, F_INVOICES_PERIOD_START_MS, 0);
        row_set_int(&inv, F_INVOICES_PERIOD_END_MS, 1);
        row_set_str(&inv, &a, F_INVOICES_CURRENCY, "USD");
        row_set_int(&inv, F_INVOICES_MINOR_DIGITS, 2);
        row_set_str(&inv, &a, F_INVOICES_STATE, "issued");
        row_set_int(&inv, F_INVOICES_TOTAL_MICROS, 1000000);
        row_set_int(&inv, F_INVOICES_TOTAL_SECONDS, 0);
        row_set_str(&inv, &a, F_INVOICES_LINES, "[]");
        row_set_str(&inv, &a, F_INVOICES_CANONICAL, "");
        row_set_null(&inv, F_INVOICES_CREDITS_INVOICE_ID);
        row_set_str(&inv, &a, F_INVOICES_REASON, "");
        row_set_int(&inv, F_INVOICES_ISSUED_AT, 1);
        row_set_null(&inv, F_INVOICES_PAID_AT);
        assert_int_equal(store_insert(c, d, &inv, &id, &ei), 0);
        set_id(f, "invoices", id);

        d = &model_budget_alerts;
        al2 = model_row_new(d, &a);
        row_set_int(&al2, F_BUDGET_ALERTS_BUDGET_ID, get_id(f, "budgets"));
        row_set_null(&al2, F_BUDGET_ALERTS_ORG_ID);
        row_set_int(&al2, F_BUDGET_ALERTS_PROJECT_ID, prj);
        row_set_str(&al2, &a, F_BUDGET_ALERTS_PERIOD, "2026-11");
        row_set_str(&al2, &a, F_BUDGET_ALERTS_KIND, "money");
        row_set_int(&al2, F_BUDGET_ALERTS_PERCENT, 50);
        row_set_int(&al2, F_BUDGET_ALERTS_USED, 5);
        row_set_int(&al2, F_BUDGET_ALERTS_LIMIT, 10);
        row_set_int(&al2, F_BUDGET_ALERTS_AT_MS, 1);
        assert_int_equal(store_insert(c, d, &al2, &id, &ei), 0);
        set_id(f, "budget-alerts", id);

        d = &model_inventory_items;
        al2 = model_row_new(d, &a);
        row_set_str(&al2, &a, F_INVENTORY_ITEMS_UUID,
                      "GPU-00000000-1111-2222-3333-444444444444");
        for (size_t k = 2; k + 1 < d->n_fields; k++)
            row_set_str(&al2, &a, (int)k, "");
        row_set_int(&al2, F_INVENTORY_ITEMS_IMPORTED_AT, 1);
        assert_int_equal(store_insert(c, d, &al2, &id, &ei), 0);
        set_id(f, "inventory-items", id);
    }
    store_conn_put(c);
    arena_release(&a);

    testsrv_req(f->srv, "GET", "/v1/events?limit=1", f->tok, NULL, &got, &j);
    assert_int_equal(got, 200);
    set_id(f, "events", testsrv_id(json_array_get(json_object_get(j, "items"), 0)));
    json_decref(j);
}

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv *s;
    const char *t;
    int64_t org, prj, usr, clu, node, cls, gpu, pool;
    json_t *j;
    long got;

    assert_true(model_n_resources <= ARRAY_SIZE(f->id));
    f->srv = s = testsrv_start();
    f->tok = t = s->admin_token;
    org = testsrv_create(s, t, "organizations", "{\"name\":\"org-1\"}");
    prj = testsrv_create(s, t, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"p1\"}", org);
    usr = testsrv_create(s, t, "users", "{\"name\":\"user-1\"}");
    clu = testsrv_create(s, t, "clusters", "{\"name\":\"c1\",\"backend\":\"sim\"}");
    node = testsrv_create(s, t, "nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"n1\"}", clu);
    cls = testsrv_create(s, t, "gpu-classes", "{\"name\":\"h100\"}");
    gpu = testsrv_create(s, t, "gpus",
                         "{\"node_id\":%" PRId64 ",\"index\":0,\"gpu_class_id\":%" PRId64
                         ",\"uuid\":\"" GPU_UUID "\"}",
                         node, cls);
    pool = testsrv_create(s, t, "pools", "{\"name\":\"pool-1\",\"owner_project_id\":%" PRId64 "}",
                          prj);
    set_id(f, "organizations", org);
    set_id(f, "projects", prj);
    set_id(f, "users", usr);
    set_id(f, "clusters", clu);
    set_id(f, "nodes", node);
    set_id(f, "gpu-classes", cls);
    set_id(f, "gpus", gpu);
    set_id(f, "pools", pool);
    set_id(f, "flavors", testsrv_create(s, t, "flavors", "{\"name\":\"f1\"}"));
    set_id(f, "quotas",
           testsrv_create(s, t, "quotas",
                          "{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 "}", prj, cls));
    set_id(f, "org-quotas",
           testsrv_create(s, t, "org-quotas",
                          "{\"org_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 "}", org, cls));
    set_id(f, "role-bindings",
           testsrv_create(s, t, "role-bindings",
                          "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64
                          "}",
                          usr, prj));
    set_id(f, "tokens", testsrv_create(s, t, "tokens", "{\"user_id\":%" PRId64 "}", usr));
    /* A CPU-only flavor and a workload of it; the server (no engine here) keeps it queued. */
    set_id(f, "workloads",
           testsrv_create(s, t, "workloads",
                          "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "}", prj,
                          get_id(f, "flavors")));
    /* in force before the fixture's usage: the API takes no price that starts in the past */
    set_id(f, "prices",
           testsrv_insert(s, &model_prices,
                          "{\"flavor_id\":%" PRId64
                          ",\"price_per_hour_micros\":1000000,\"effective_from\":"
                          "\"2026-01-01T00:00:00Z\"}",
                          get_id(f, "flavors")));
    set_id(f, "budgets",
           testsrv_create(s, t, "budgets", "{\"project_id\":%" PRId64 ",\"gpu_hours\":10}", prj));
    add_work_rows(f, prj, node, gpu, cls);
    testsrv_req(s, "GET", "/v1/audit?limit=1", t, NULL, &got, &j);
    assert_int_equal(got, 200);
    set_id(f, "audit", testsrv_id(json_array_get(json_object_get(j, "items"), 0)));
    json_decref(j);

    testsrv_req(s, "GET", "/v1/openapi.json", NULL, NULL, &got, &f->doc);
    assert_int_equal(got, 200);
    assert_non_null(f->doc);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f) {
        json_decref(f->doc);
        testsrv_stop(f->srv);
        free(f);
    }
    return 0;
}

/* ---- the document itself ---- */

static void test_document_shape(void **state)
{
    struct fixture *f = *state;
    json_t *paths = json_object_get(f->doc, "paths");
    json_t *schemas = json_object_get(json_object_get(f->doc, "components"), "schemas");
    const char *ver = json_string_value(json_object_get(f->doc, "openapi"));
    static const char *const fixed[] = {"/healthz", "/v1/whoami", "/v1/openapi.json"};

    if (!ver || strncmp(ver, "3.", 2) != 0)
        failed(f, "\"openapi\" is '%s', not 3.x", ver ? ver : "(missing)");
    if (!json_is_string(json_object_get(json_object_get(f->doc, "info"), "title")) ||
        !json_is_string(json_object_get(json_object_get(f->doc, "info"), "version")))
        failed(f, "info.title and info.version are required");
    assert_true(json_is_object(paths));
    assert_true(json_is_object(schemas));
    if (!strstr(f->srv->content_type, "application/json"))
        failed(f, "served as '%s'", f->srv->content_type);

    for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
        if (!json_is_object(json_object_get(json_object_get(paths, fixed[i]), "get")))
            failed(f, "GET %s is not in the document", fixed[i]);
    }
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        char coll[96], item[96];
        snprintf(coll, sizeof(coll), "/v1/%s", def->name);
        snprintf(item, sizeof(item), "/v1/%s/{id}", def->name);
        if (!json_is_object(json_object_get(json_object_get(paths, coll), "get")))
            failed(f, "GET %s is not in the document", coll);
        if (!json_is_object(json_object_get(json_object_get(paths, item), "get")))
            failed(f, "GET %s is not in the document", item);
    }
    finish(f);
}

/* Every "$ref" in the document resolves. */
static void check_refs(struct fixture *f, json_t *node, const char *where)
{
    if (json_is_object(node)) {
        const char *k;
        json_t *v;
        json_object_foreach(node, k, v)
        {
            if (strcmp(k, "$ref") == 0) {
                const char *ref = json_string_value(v);
                const char *prefix = "#/components/schemas/";
                json_t *schemas = json_object_get(json_object_get(f->doc, "components"), "schemas");
                if (!ref || strncmp(ref, prefix, strlen(prefix)) != 0 ||
                    !json_object_get(schemas, ref + strlen(prefix)))
                    failed(f, "%s: $ref '%s' does not resolve", where, ref ? ref : "?");
            } else {
                check_refs(f, v, where);
            }
        }
    } else if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v)
        {
            check_refs(f, v, where);
        }
    }
}

/* The schema of each resource: the model's fields, its required ones, read-only flags. */
static void test_schemas_match_model(void **state)
{
    struct fixture *f = *state;
    json_t *paths = json_object_get(f->doc, "paths");

    check_refs(f, f->doc, "document");
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        char coll[96];
        json_t *get, *schema = NULL, *props, *req;
        const char *ref;

        snprintf(coll, sizeof(coll), "/v1/%s/{id}", def->name);
        get = json_object_get(json_object_get(paths, coll), "get");
        ref = json_string_value(json_object_get(
            json_object_get(
                json_object_get(
                    json_object_get(json_object_get(json_object_get(get, "responses"), "200"),
                                    "content"),
                    "application/json"),
                "schema"),
            "$ref"));
        if (ref && strrchr(ref, '/'))
            schema =
                json_object_get(json_object_get(json_object_get(f->doc, "components"), "schemas"),
                                strrchr(ref, '/') + 1);
        if (!json_is_object(schema)) {
            failed(f, "GET %s: no schema for the 200 response", coll);
            continue;
        }
        props = json_object_get(schema, "properties");
        req = json_object_get(schema, "required");
        for (size_t k = 0; k < def->n_fields; k++) {
            const struct field_def *fd = &def->fields[k];
            json_t *p = json_object_get(props, fd->name);
            bool in_required = false;
            size_t r;
            json_t *v;

            json_array_foreach(req, r, v)
            {
                if (strcmp(json_string_value(v) ?: "", fd->name) == 0)
                    in_required = true;
            }
            if (fd->flags & FF_SECRET) {
                if (p)
                    failed(f, "%s: the secret field '%s' is in the schema", def->name, fd->name);
                continue;
            }
            if (!p) {
                failed(f, "%s: field '%s' is missing from the schema", def->name, fd->name);
                continue;
            }
            if (in_required != !!(fd->flags & FF_REQUIRED))
                failed(f, "%s.%s: required is %d in the document, %d in the model", def->name,
                       fd->name, in_required, !!(fd->flags & FF_REQUIRED));
            if (json_is_true(json_object_get(p, "readOnly")) != !!(fd->flags & FF_READONLY))
                failed(f, "%s.%s: readOnly disagrees with the model", def->name, fd->name);
            if (json_is_true(json_object_get(p, "nullable")) != !!(fd->flags & FF_NULLABLE))
                failed(f, "%s.%s: nullable disagrees with the model", def->name, fd->name);
        }
        {
            /* members the server computes when it answers (x-computed) are no model field */
            size_t n_props = 0;
            const char *key;
            json_t *p;
            json_object_foreach(props, key, p)
            {
                if (!json_is_true(json_object_get(p, "x-computed")))
                    n_props++;
            }
            if (n_props > def->n_fields)
                failed(f, "%s: the schema has fields the model does not", def->name);
        }
    }
    finish(f);
}

/* ---- every operation, served ---- */

/* A valid body to create one more of each resource (JSON text, caller frees). */
static char *create_body(struct fixture *f, const char *res, int n)
{
    int64_t org = get_id(f, "organizations"), prj = get_id(f, "projects");
    int64_t cls = get_id(f, "gpu-classes");

    if (strcmp(res, "organizations") == 0)
        return xasprintf("{\"name\":\"org-new-%d\",\"parent_id\":%" PRId64 "}", n, org);
    if (strcmp(res, "projects") == 0)
        return xasprintf("{\"org_id\":%" PRId64 ",\"name\":\"p-new-%d\"}", org, n);
    if (strcmp(res, "users") == 0)
        return xasprintf("{\"name\":\"user-new-%d\"}", n);
    if (strcmp(res, "role-bindings") == 0) {
        int64_t u2 = testsrv_create(f->srv, f->tok, "users", "{\"name\":\"bound-%d\"}", n);
        return xasprintf("{\"user_id\":%" PRId64 ",\"role\":\"member\",\"org_id\":%" PRId64 "}", u2,
                         org);
    }
    if (strcmp(res, "tokens") == 0)
        return xasprintf("{\"name\":\"new-%d\"}", n);
    if (strcmp(res, "clusters") == 0)
        return xasprintf("{\"name\":\"c-new-%d\",\"backend\":\"local\"}", n);
    if (strcmp(res, "nodes") == 0)
        return xasprintf("{\"cluster_id\":%" PRId64 ",\"name\":\"n-new-%d\"}",
                         get_id(f, "clusters"), n);
    if (strcmp(res, "gpu-classes") == 0)
        return xasprintf("{\"name\":\"class-new-%d\"}", n);
    if (strcmp(res, "gpus") == 0)
        return xasprintf("{\"node_id\":%" PRId64 ",\"index\":%d,\"gpu_class_id\":%" PRId64 "}",
                         get_id(f, "nodes"), 1 + n % 1000, cls);
    if (strcmp(res, "pools") == 0)
        return xasprintf("{\"name\":\"pool-new-%d\",\"owner_org_id\":%" PRId64 "}", n, org);
    if (strcmp(res, "flavors") == 0)
        return xasprintf("{\"name\":\"f-new-%d\"}", n);
    if (strcmp(res, "quotas") == 0) {
        int64_t p2 = testsrv_create(f->srv, f->tok, "projects",
                                    "{\"org_id\":%" PRId64 ",\"name\":\"qp-%d\"}", org, n);
        return xasprintf("{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 "}", p2, cls);
    }
    if (strcmp(res, "org-quotas") == 0) {
        int64_t o2 = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"qo-%d\"}", n);
        return xasprintf("{\"org_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 "}", o2, cls);
    }
    if (strcmp(res, "workloads") == 0)
        return xasprintf("{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                         ",\"name\":\"w-%d\"}",
                         prj, get_id(f, "flavors"), n);
    if (strcmp(res, "prices") == 0) { /* from tomorrow on, a day apart */
        char from[40];
        time_format_rfc3339(time_now_s() + 86400 * (1 + n), from, sizeof(from));
        return xasprintf("{\"flavor_id\":%" PRId64 ",\"price_per_hour_micros\":%d,"
                         "\"effective_from\":\"%s\"}",
                         get_id(f, "flavors"), 1000 + n, from);
    }
    if (strcmp(res, "budgets") == 0)
        return xasprintf("{\"project_id\":%" PRId64 ",\"gpu_hours\":%d}", prj, 1 + n);
    if (strcmp(res, "invoices/issue") == 0) /* the fixture usage is in 2026-10 */
        return xasprintf("{\"org_id\":%" PRId64 ",\"period\":\"2026-10\"}", org);
    if (strcmp(res, "inventory/import") == 0)
        return xstrdup("GPU,Model\nGPU-00000000-1111-2222-3333-555555555555,NVIDIA H100\n");
    if (strcmp(res, "history") == 0) { /* an hour of CPU-only work, three days ago */
        char from[40], to[40];
        time_format_rfc3339(time_now_s() - 3 * 86400, from, sizeof(from));
        time_format_rfc3339(time_now_s() - 3 * 86400 + 3600, to, sizeof(to));
        return xasprintf("{\"workloads\":[{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                         ",\"started_at\":\"%s\",\"finished_at\":\"%s\"}]}",
                         prj, get_id(f, "flavors"), from, to);
    }
    if (strcmp(res, "invoices/credit") == 0)
        return xstrdup("{\"reason\":\"goodwill\",\"amount_micros\":10000}");
    if (strcmp(res, "whatif") == 0) /* the fixture's month, with a shorter grace */
        return xstrdup("{\"period\":\"2026-10\",\"changes\":[{\"kind\":\"grace\","
                       "\"grace_s\":0}]}");
    return xstrdup("{}");
}

/* A valid change for each resource; "{}" where there is none to make. */
static const char *patch_body(const char *res)
{
    static const struct {
        const char *res, *body;
    } t[] = {
        {"organizations", "{\"display_name\":\"x\"}"},
        {"projects", "{\"description\":\"x\"}"},
        {"users", "{\"email\":\"x@example.com\"}"},
        {"clusters", "{\"description\":\"x\"}"},
        {"nodes", "{\"state\":\"drain\"}"},
        {"gpu-classes", "{\"vendor\":\"nvidia\"}"},
        {"gpus", "{\"health\":\"degraded\"}"},
        {"pools", "{\"currency\":\"EUR\"}"},
        {"flavors", "{\"description\":\"x\"}"},
        {"quotas", "{\"limit_milli\":4000}"},
        {"org-quotas", "{\"limit_milli\":4000}"},
        {"budgets", "{\"gpu_hours\":20}"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        if (strcmp(t[i].res, res) == 0)
            return t[i].body;
    }
    return "{}";
}

/* "/v1/<res>/{id}" -> res (in out); false for other shapes. */
static bool resource_of(const char *path, char *out, size_t size, bool *ret_item)
{
    const char *p, *slash;
    size_t len;
    if (strncmp(path, "/v1/", 4) != 0)
        return false;
    p = path + 4;
    slash = strchr(p, '/');
    len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 0 || len >= size)
        return false;
    memcpy(out, p, len);
    out[len] = '\0';
    *ret_item = slash != NULL;
    return !slash || strcmp(slash, "/{id}") == 0;
}

static bool documented(json_t *op, long status)
{
    char s[16];
    json_t *rs = json_object_get(op, "responses");
    snprintf(s, sizeof(s), "%ld", status);
    return json_object_get(rs, s) || json_object_get(rs, "default") ||
           (status >= 400 && status < 500 && json_object_get(rs, "4XX")) ||
           (status >= 500 && json_object_get(rs, "5XX"));
}

static void call(struct fixture *f, const char *path_tmpl, const char *method, json_t *op, int n)
{
    char res[64], url[160], upper[16];
    bool item = false, known;
    char *body = NULL;
    long got;
    json_t *j;
    size_t k;
    bool no_auth = json_is_array(json_object_get(op, "security")) &&
                   json_array_size(json_object_get(op, "security")) == 0;

    for (k = 0; method[k] && k < sizeof(upper) - 1; k++)
        upper[k] = (char)(method[k] & ~0x20);
    upper[k] = '\0';
    known = resource_of(path_tmpl, res, sizeof(res), &item) && res_index(res) >= 0;
    if (known && item && strcmp(upper, "DELETE") == 0 && strcmp(res, "audit") != 0) {
        /* delete a fresh object: the fixtures are referenced (409) and needed elsewhere */
        char *fresh = create_body(f, res, 500 + n);
        int64_t id = testsrv_create(f->srv, f->tok, res, "%s", fresh);
        free(fresh);
        snprintf(url, sizeof(url), "/v1/%s/%" PRId64, res, id);
    } else if (known && item) {
        snprintf(url, sizeof(url), "/v1/%s/%" PRId64, res, get_id(f, res));
    } else if (strncmp(path_tmpl, "/v1/workloads/{id}/", 19) == 0) {
        /*
         * A workload action on a fresh workload: the fixture one is needed elsewhere. Hold and
         * release act on queued work: that one is submitted held, so that it stays queued.
         */
        char *fresh = create_body(f, "workloads", 700 + n);
        bool queued = strcmp(path_tmpl + 19, "hold") == 0 || strcmp(path_tmpl + 19, "release") == 0;
        json_t *fj = json_loads(fresh, 0, NULL);
        int64_t id;
        if (queued)
            json_object_set_new(fj, "held", json_true());
        free(fresh);
        fresh = json_dumps(fj, JSON_COMPACT);
        json_decref(fj);
        id = testsrv_create(f->srv, f->tok, "workloads", "%s", fresh);
        free(fresh);
        snprintf(url, sizeof(url), "/v1/workloads/%" PRId64 "/%s", id, path_tmpl + 19);
    } else if (strncmp(path_tmpl, "/v1/invoices/{id}/", 18) == 0) {
        snprintf(url, sizeof(url), "/v1/invoices/%" PRId64 "/%s", get_id(f, "invoices"),
                 path_tmpl + 18);
        if (strcmp(path_tmpl + 18, "credit") == 0)
            body = create_body(f, "invoices/credit", n);
    } else if (strcmp(path_tmpl, "/v1/inventory/history") == 0) {
        snprintf(url, sizeof(url), "%s?gpu=%s", path_tmpl, GPU_UUID);
    } else if (strcmp(path_tmpl, "/v1/invoices/draft") == 0) {
        snprintf(url, sizeof(url), "%s?org_id=%" PRId64, path_tmpl, get_id(f, "organizations"));
    } else {
        snprintf(url, sizeof(url), "%s", path_tmpl);
        if (strcmp(path_tmpl, "/v1/invoices/issue") == 0)
            body = create_body(f, "invoices/issue", n);
        if (strcmp(path_tmpl, "/v1/inventory/import") == 0)
            body = create_body(f, "inventory/import", n);
        if (strcmp(path_tmpl, "/v1/history") == 0)
            body = create_body(f, "history", n);
        if (strcmp(path_tmpl, "/v1/whatif") == 0)
            body = create_body(f, "whatif", n);
    }
    if (strchr(url, '{')) {
        failed(f, "%s %s: a path parameter this test cannot fill", upper, path_tmpl);
        return;
    }
    if (strcmp(upper, "POST") == 0 && !body)
        body = known ? create_body(f, res, n) : xstrdup("{}");
    else if (strcmp(upper, "PATCH") == 0)
        body = xstrdup(known ? patch_body(res) : "{}");
    if (json_is_object(json_object_get(op, "requestBody")) && !body)
        body = xstrdup("{}");

    testsrv_req(f->srv, upper, url, no_auth ? NULL : f->tok, body, &got, &j);
    if (got == 405 || got < 0 || (got == 404 && strstr(testsrv_err_message(j), "no route")))
        failed(f, "%s %s (documented as %s): not served: %ld %s", upper, url, path_tmpl, got,
               f->srv->body);
    else if (got == 401 || got == 403)
        failed(f, "%s %s as admin: %ld %s", upper, url, got, f->srv->body);
    else if (!documented(op, got))
        failed(f, "%s %s: status %ld is not among the documented responses: %s", upper, url, got,
               f->srv->body);
    else if (got >= 400)
        failed(f, "%s %s with a valid request: %ld %s", upper, url, got, f->srv->body);
    json_decref(j);
    free(body);
}

static const char *const http_methods[] = {"get",     "put",  "post",  "delete",
                                           "options", "head", "patch", "trace"};

static bool is_method(const char *k)
{
    for (size_t i = 0; i < ARRAY_SIZE(http_methods); i++) {
        if (strcmp(k, http_methods[i]) == 0)
            return true;
    }
    return false;
}

static void test_every_operation_served(void **state)
{
    struct fixture *f = *state;
    json_t *paths = json_object_get(f->doc, "paths"), *item;
    const char *path;
    int n = 0, n_ops = 0;

    /* Reads, creates and changes first; deletes last, so {id} still exists for the rest. */
    for (int pass = 0; pass < 2; pass++) {
        json_object_foreach(paths, path, item)
        {
            const char *m;
            json_t *op;
            json_object_foreach(item, m, op)
            {
                if (!is_method(m)) {
                    if (strcmp(m, "parameters") != 0 && strcmp(m, "summary") != 0 &&
                        strcmp(m, "description") != 0 && strcmp(m, "servers") != 0)
                        failed(f, "%s: unknown path item member '%s'", path, m);
                    continue;
                }
                if ((strcmp(m, "delete") == 0) != (pass == 1))
                    continue;
                call(f, path, m, op, n++);
                n_ops++;
            }
        }
    }
    fprintf(stderr, "openapi: %d operations requested\n", n_ops);
    assert_true(n_ops >= 3 + 14 * 2);
    finish(f);
}

/* A method a path does not document is 405 (and the route exists: not 404). */
static void test_undocumented_methods_405(void **state)
{
    struct fixture *f = *state;
    json_t *paths = json_object_get(f->doc, "paths"), *item;
    const char *path;
    static const char *const methods[] = {"get", "post", "put", "patch", "delete"};

    json_object_foreach(paths, path, item)
    {
        char res[64], url[160], upper[16];
        bool is_item = false;
        bool known = resource_of(path, res, sizeof(res), &is_item) && res_index(res) >= 0;

        if (known && is_item)
            snprintf(url, sizeof(url), "/v1/%s/%" PRId64, res, get_id(f, res));
        else if (strncmp(path, "/v1/workloads/{id}/", 19) == 0)
            snprintf(url, sizeof(url), "/v1/workloads/%" PRId64 "/%s", get_id(f, "workloads"),
                     path + 19);
        else if (strncmp(path, "/v1/invoices/{id}/", 18) == 0)
            snprintf(url, sizeof(url), "/v1/invoices/%" PRId64 "/%s", get_id(f, "invoices"),
                     path + 18);
        else
            snprintf(url, sizeof(url), "%s", path);
        for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
            long got;
            size_t k;
            const char *body =
                strcmp(methods[i], "get") && strcmp(methods[i], "delete") ? "{}" : NULL;
            if (json_object_get(item, methods[i]))
                continue;
            for (k = 0; methods[i][k]; k++)
                upper[k] = (char)(methods[i][k] & ~0x20);
            upper[k] = '\0';
            testsrv_req(f->srv, upper, url, f->tok, body, &got, NULL);
            if (got != 405)
                failed(f, "%s %s is not in the document: want 405, got %ld: %s", upper, url, got,
                       f->srv->body);
        }
    }
    finish(f);
}

/* A few error statuses docs/api.md promises, checked against the operations' responses. */
static void test_documented_errors(void **state)
{
    struct fixture *f = *state;
    json_t *paths = json_object_get(f->doc, "paths");
    char url[96];
    long got;
    json_t *op;

    /* deleting an organization that still has projects: 409, which DELETE must document */
    snprintf(url, sizeof(url), "/v1/organizations/%" PRId64, get_id(f, "organizations"));
    got = testsrv_status(f->srv, "DELETE", url, f->tok, NULL);
    assert_int_equal(got, 409);
    op = json_object_get(json_object_get(paths, "/v1/organizations/{id}"), "delete");
    if (!documented(op, 409))
        failed(f, "DELETE /v1/organizations/{id} can answer 409 but does not document it");
    /* a name taken on rename: PATCH 409 */
    testsrv_create(f->srv, f->tok, "clusters", "{\"name\":\"c2\",\"backend\":\"sim\"}");
    snprintf(url, sizeof(url), "/v1/clusters/%" PRId64, get_id(f, "clusters"));
    got = testsrv_status(f->srv, "PATCH", url, f->tok, "{\"name\":\"c2\"}");
    assert_int_equal(got, 409);
    op = json_object_get(json_object_get(paths, "/v1/clusters/{id}"), "patch");
    if (!documented(op, 409))
        failed(f, "PATCH /v1/clusters/{id} can answer 409 but does not document it");
    /* the no-token routes say so */
    op = json_object_get(json_object_get(paths, "/v1/openapi.json"), "get");
    if (!json_is_array(json_object_get(op, "security")) ||
        json_array_size(json_object_get(op, "security")) != 0)
        failed(f, "GET /v1/openapi.json needs no token but does not say security: []");
    op = json_object_get(json_object_get(paths, "/v1/whoami"), "get");
    if (json_is_array(json_object_get(op, "security")) &&
        json_array_size(json_object_get(op, "security")) == 0)
        failed(f, "GET /v1/whoami needs a token but says security: []");
    finish(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_document_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schemas_match_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_operation_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undocumented_methods_405, setup, teardown),
        cmocka_unit_test_setup_teardown(test_documented_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
