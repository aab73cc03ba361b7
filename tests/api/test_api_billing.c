/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_billing.c: invoices through the API. An issued invoice cannot be
 * changed through any endpoint (generic verbs, a second issue, a price
 * back-dated into its month, other roles and tenants), re-rating reproduces
 * it, and re-rating notices when the ledger under it was altered; payments
 * and credit notes; exports and who may read them.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "base/timeutil.h"
#include "billing/billing.h"
#include "support/testsrv.h"

#define OCT5 INT64_C(1791158400000) /* 2026-10-05T00:00:00Z */
#define H INT64_C(3600000)

struct fixture {
    struct testsrv *srv;
    const char *admin;
    char *viewer, *eve; /* acme's org viewer; a viewer of another organization */
    int64_t org, project, flavor, workload;
};

static void store_rows(struct fixture *f)
{
    struct store_conn *c = store_conn_get(f->srv->store);
    const struct resource_def *d = &model_allocations;
    struct error_info ei = {0};
    struct arena a;

    arena_init(&a);
    for (int rep = 0; rep < 2; rep++) {
        struct row al = model_row_new(d, &a);
        int64_t id;
        row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, f->workload);
        row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, f->project);
        row_set_int(&al, F_ALLOCATIONS_REPLICA, rep);
        row_set_int(&al, F_ALLOCATIONS_NODE_ID,
                    testsrv_create(f->srv, f->admin, "nodes",
                                   "{\"cluster_id\":%" PRId64 ",\"name\":\"n%d\"}",
                                   testsrv_create(f->srv, f->admin, "clusters",
                                                  "{\"name\":\"c%d\",\"backend\":\"sim\"}", rep),
                                   rep));
        row_set_null(&al, F_ALLOCATIONS_GPU_ID);
        row_set_null(&al, F_ALLOCATIONS_GPU_CLASS_ID);
        row_set_int(&al, F_ALLOCATIONS_MILLI, 0);
        row_set_str(&al, &a, F_ALLOCATIONS_PRIORITY_CLASS, "owned");
        row_set_int(&al, F_ALLOCATIONS_BORROWED, 0);
        row_set_int(&al, F_ALLOCATIONS_STARTED_MS, OCT5);
        row_set_int(&al, F_ALLOCATIONS_ENDED_MS, OCT5 + H + H / 2);
        row_set_str(&al, &a, F_ALLOCATIONS_END_REASON, "succeeded");
        assert_int_equal(store_insert(c, d, &al, &id, &ei), 0);
    }
    /* what the engine does when the run ends */
    assert_int_equal(store_begin(c, &ei), 0);
    assert_int_equal(billing_meter_run(c, f->workload, OCT5, 2, "owned", OCT5 + H + H / 2,
                                       OCT5 + 2 * H, &a, &ei),
                     0);
    assert_int_equal(store_commit(c, &ei), 0);
    store_conn_put(c);
    arena_release(&a);
}

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv *s = f->srv = testsrv_start();
    int64_t other, uid;

    f->admin = s->admin_token;
    f->org = testsrv_create(s, f->admin, "organizations",
                            "{\"name\":\"acme\",\"display_name\":\"Acme Corp\","
                            "\"cost_center\":\"CC-9\"}");
    other = testsrv_create(s, f->admin, "organizations", "{\"name\":\"other\"}");
    f->project = testsrv_create(s, f->admin, "projects",
                                "{\"org_id\":%" PRId64 ",\"name\":\"vision\"}", f->org);
    f->flavor = testsrv_create(s, f->admin, "flavors", "{\"name\":\"cpu.small\"}");
    /* in force since before the usage (the API takes no price that starts in the past) */
    testsrv_insert(s, &model_prices,
                   "{\"flavor_id\":%" PRId64 ",\"price_per_hour_micros\":2000000,"
                   "\"effective_from\":\"2026-01-01T00:00:00Z\"}",
                   f->flavor);
    f->workload = testsrv_create(s, f->admin, "workloads",
                                 "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                                 ",\"replicas\":2,\"priority_class\":\"owned\"}",
                                 f->project, f->flavor);
    uid = testsrv_create(s, f->admin, "users", "{\"name\":\"vic\"}");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"org_id\":%" PRId64 "}", uid,
                   f->org);
    f->viewer = testsrv_token_for(s, uid, NULL);
    uid = testsrv_create(s, f->admin, "users", "{\"name\":\"eve\"}");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"org-admin\",\"org_id\":%" PRId64 "}", uid,
                   other);
    f->eve = testsrv_token_for(s, uid, NULL);
    store_rows(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->viewer);
    free(f->eve);
    testsrv_stop(f->srv);
    free(f);
    return 0;
}

static int64_t issue(struct fixture *f)
{
    char body[128];
    long got;
    json_t *j, *inv;
    int64_t id;

    snprintf(body, sizeof(body), "{\"org_id\":%" PRId64 ",\"period\":\"2026-10\"}", f->org);
    testsrv_req(f->srv, "POST", "/v1/invoices/issue", f->admin, body, &got, &j);
    assert_int_equal(got, 201);
    inv = json_array_get(json_object_get(j, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(inv, "number")), "INV-2026-000001");
    /* 2 replicas x 1.5 h x 2.00 */
    assert_int_equal(json_integer_value(json_object_get(inv, "total_micros")), 6000000);
    assert_string_equal(json_string_value(json_object_get(inv, "customer")), "Acme Corp");
    id = testsrv_id(inv);
    json_decref(j);
    return id;
}

static char *invoice_text(struct fixture *f, int64_t id)
{
    char path[64];
    long got;
    json_t *j;
    char *text;
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64, id);
    testsrv_req(f->srv, "GET", path, f->admin, NULL, &got, &j);
    assert_int_equal(got, 200);
    text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(j);
    return text;
}

static bool reproduced(struct fixture *f, int64_t id)
{
    char path[64];
    long got;
    json_t *j;
    bool same;
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/verify", id);
    testsrv_req(f->srv, "GET", path, f->admin, NULL, &got, &j);
    assert_int_equal(got, 200);
    same = json_is_true(json_object_get(j, "reproduced"));
    json_decref(j);
    return same;
}

/* POST /v1/prices for f->flavor starting `offset_s` from now; asserts the status. */
static json_t *price_from(struct fixture *f, int64_t offset_s, int64_t micros, long want)
{
    char body[200], from[40];
    long got;
    json_t *j;
    time_format_rfc3339(time_now_s() + offset_s, from, sizeof(from));
    snprintf(body, sizeof(body),
             "{\"flavor_id\":%" PRId64 ",\"price_per_hour_micros\":%" PRId64
             ",\"effective_from\":\"%s\"}",
             f->flavor, micros, from);
    testsrv_req(f->srv, "POST", "/v1/prices", f->admin, body, &got, &j);
    if (got != want)
        fail_msg("price from %s: %ld, not %ld: %s", from, got, want, f->srv->body);
    return j;
}

/* The amount /v1/usage rates for the fixture's project in a period. */
static int64_t usage_amount(struct fixture *f, const char *period)
{
    char path[96];
    long got;
    json_t *j;
    int64_t sum = 0;
    size_t i;
    json_t *item;
    snprintf(path, sizeof(path), "/v1/usage?project_id=%" PRId64 "&period=%s", f->project, period);
    testsrv_req(f->srv, "GET", path, f->admin, NULL, &got, &j);
    assert_int_equal(got, 200);
    json_array_foreach(json_object_get(j, "items"), i, item)
    {
        sum += json_integer_value(json_object_get(item, "amount_micros"));
    }
    json_decref(j);
    return sum;
}

/*
 * A price may not start in the past: one starting earlier in the running
 * month would re-rate usage already metered (it re-rated it to 0.00).
 */
static void test_price_never_in_the_past(void **state)
{
    struct fixture *f = *state;
    struct store_conn *c = store_conn_get(f->srv->store);
    struct error_info ei = {0};
    struct arena a;
    char period[16];
    int64_t now_ms = time_now_ms(), before;
    json_t *j;

    /* an hour of this month already metered, ended a minute ago */
    arena_init(&a);
    assert_int_equal(store_begin(c, &ei), 0);
    assert_int_equal(billing_meter_run(c, f->workload, now_ms - 61 * 60000, 1, "owned",
                                       now_ms - 60000, now_ms, &a, &ei),
                     0);
    assert_int_equal(store_commit(c, &ei), 0);
    store_conn_put(c);
    arena_release(&a);
    billing_format_period(now_ms - 60000, period);
    before = usage_amount(f, period);
    assert_true(before > 0);

    j = price_from(f, -30 * 60, 0, 400);
    assert_string_equal(testsrv_err_field(j), "effective_from");
    assert_non_null(strstr(testsrv_err_message(j), "is in the past"));
    json_decref(j);
    json_decref(price_from(f, -86400, 0, 400));
    json_decref(price_from(f, -60, 0, 400));
    assert_int_equal(usage_amount(f, period), before);
    assert_int_equal(testsrv_count(f->srv, f->admin, "/v1/prices"), 1);

    /* now (an admin's clock a second or two behind included) and later are fine */
    json_decref(price_from(f, -2, 3000000, 201));
    json_decref(price_from(f, 86400, 1, 201));
    assert_int_equal(usage_amount(f, period), before);
}

static void test_issued_invoices_cannot_change(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    char path[96], body[160], *before, *after;
    int64_t id;

    snprintf(body, sizeof(body), "{\"org_id\":%" PRId64 ",\"period\":\"2026-10\"}", f->org);
    testsrv_expect(s, "POST", "/v1/invoices/issue", f->viewer, body, 403);
    id = issue(f);
    before = invoice_text(f, id);
    assert_true(reproduced(f, id));

    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64, id);
    testsrv_expect(s, "PATCH", path, f->admin, "{\"total_micros\":1}", 405);
    testsrv_expect(s, "PATCH", path, f->admin, "{\"state\":\"paid\"}", 405);
    testsrv_expect(s, "DELETE", path, f->admin, NULL, 405);
    testsrv_expect(s, "POST", "/v1/invoices", f->admin, "{\"org_id\":1}", 405);
    testsrv_expect(s, "POST", "/v1/invoices/issue", f->admin, body, 409);
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/pay", id);
    testsrv_expect(s, "POST", path, f->viewer, NULL, 403);
    testsrv_expect(s, "POST", path, f->eve, NULL, 403);
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/credit", id);
    testsrv_expect(s, "POST", path, f->viewer, "{\"reason\":\"x\"}", 403);
    /* a price back-dated into the invoiced month, or changed, is refused */
    snprintf(body, sizeof(body),
             "{\"flavor_id\":%" PRId64 ",\"price_per_hour_micros\":1,"
             "\"effective_from\":\"2026-10-15T00:00:00Z\"}",
             f->flavor);
    testsrv_expect(s, "POST", "/v1/prices", f->admin, body, 400);
    testsrv_expect(s, "PATCH", "/v1/prices/1", f->admin, "{\"price_per_hour_micros\":1}", 405);
    testsrv_expect(s, "DELETE", "/v1/prices/1", f->admin, NULL, 405);
    json_decref(price_from(f, 3600, 1, 201));

    after = invoice_text(f, id);
    assert_string_equal(before, after);
    assert_true(reproduced(f, id));
    free(before);
    free(after);
}

static void test_rerating_notices_an_altered_ledger(void **state)
{
    struct fixture *f = *state;
    struct store_conn *c;
    struct store_filter fl;
    struct error_info ei = {0};
    struct arena a;
    struct row *rows;
    size_t n;
    long got;
    json_t *j;
    int64_t id = issue(f);

    testsrv_req(f->srv, "GET", "/v1/ledger/verify", f->admin, NULL, &got, &j);
    assert_int_equal(got, 200);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    testsrv_expect(f->srv, "GET", "/v1/ledger/verify", f->viewer, NULL, 403);

    /* someone shortens the run by an hour behind the API's back */
    c = store_conn_get(f->srv->store);
    arena_init(&a);
    store_filter_init(&fl);
    assert_int_equal(store_list(c, &model_usage, &fl, &a, &rows, &n, &ei), 0);
    assert_int_equal(n, 1);
    row_set_int(&rows[0], F_USAGE_ENDED_MS, OCT5 + H / 2);
    assert_int_equal(store_update(c, &model_usage, model_row_id(&rows[0]), &rows[0], &ei), 0);
    store_conn_put(c);
    arena_release(&a);

    testsrv_req(f->srv, "GET", "/v1/ledger/verify", f->admin, NULL, &got, &j);
    assert_false(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "bad_seq")), 1);
    json_decref(j);
    assert_false(reproduced(f, id));
}

static void test_pay_credit_and_exports(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    int64_t id = issue(f);
    char path[96];
    long got;
    json_t *j;

    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/pay", id);
    testsrv_req(s, "POST", path, f->admin, NULL, &got, &j);
    assert_int_equal(got, 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "paid");
    json_decref(j);
    testsrv_expect(s, "POST", path, f->admin, NULL, 409);

    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/credit", id);
    testsrv_expect(s, "POST", path, f->admin, "{\"amount_micros\":1000000}", 400);
    testsrv_expect(s, "POST", path, f->admin, "{\"reason\":\"x\",\"amount_micros\":-5}", 400);
    testsrv_expect(s, "POST", path, f->admin, "{\"reason\":\"x\",\"amount_micros\":6000001}", 400);
    testsrv_req(s, "POST", path, f->admin, "{\"reason\":\"late start\",\"amount_micros\":1000000}",
                &got, &j);
    assert_int_equal(got, 201);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "credit-note");
    assert_string_equal(json_string_value(json_object_get(j, "number")), "CN-2026-000001");
    assert_int_equal(json_integer_value(json_object_get(j, "total_micros")), -1000000);
    json_decref(j);

    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/export?format=csv", id);
    testsrv_req(s, "GET", path, f->viewer, NULL, &got, NULL);
    assert_int_equal(got, 200);
    assert_non_null(strstr(s->content_type, "text/csv"));
    assert_non_null(strstr(s->body, "INV-2026-000001,invoice,2026-10,Acme Corp,CC-9,USD,vision,"));
    assert_non_null(strstr(s->body, ",6.00\r\n"));
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/export?format=html", id);
    testsrv_req(s, "GET", path, f->viewer, NULL, &got, NULL);
    assert_int_equal(got, 200);
    assert_non_null(strstr(s->content_type, "text/html"));
    assert_non_null(strstr(s->body, "Invoice INV-2026-000001"));
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/export?format=pdf", id);
    testsrv_expect(s, "GET", path, f->viewer, NULL, 400);

    /* another tenant: the invoice does not exist */
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64, id);
    testsrv_expect(s, "GET", path, f->eve, NULL, 404);
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/export?format=html", id);
    testsrv_expect(s, "GET", path, f->eve, NULL, 404);
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/verify", id);
    testsrv_expect(s, "GET", path, f->eve, NULL, 404);
    assert_int_equal(testsrv_count(s, f->eve, "/v1/invoices"), 0);
    assert_int_equal(testsrv_count(s, f->viewer, "/v1/invoices"), 2);
    snprintf(path, sizeof(path), "/v1/invoices/draft?org_id=%" PRId64 "&period=2026-10", f->org);
    testsrv_expect(s, "GET", path, f->eve, NULL, 404);
    testsrv_expect(s, "GET", path, f->viewer, NULL, 200);
}

/* Pools' showback for callers who may see only some pools: the other tenant's
 * pool is left out, not a crash (a NULL error pointer was written through). */
static void test_cost_as_non_admins(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    const char *by[] = {"", "?by=pool", "?by=project", "?by=org", "?by=manager"};
    long got;
    json_t *j;

    testsrv_create(s, f->admin, "pools",
                   "{\"name\":\"acme-pool\",\"owner_project_id\":%" PRId64 "}", f->project);
    for (size_t i = 0; i < ARRAY_SIZE(by); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/cost%s", by[i]);
        testsrv_req(s, "GET", path, f->eve, NULL, &got, &j);
        assert_int_equal(got, 200);
        assert_null(strstr(s->body, "acme"));
        json_decref(j);
        testsrv_req(s, "GET", path, f->viewer, NULL, &got, &j);
        assert_int_equal(got, 200);
        json_decref(j);
    }
    /* the viewer of acme sees acme's pool */
    testsrv_req(s, "GET", "/v1/cost?by=pool", f->viewer, NULL, &got, &j);
    assert_non_null(strstr(s->body, "acme-pool"));
    json_decref(j);
}

/* "4463.30" -> micro-units (the test's own parse, for the figures' sums). */
static int64_t micros_of(const char *s)
{
    int64_t whole = 0, frac = 0, scale = 1000000;
    for (; *s >= '0' && *s <= '9'; s++)
        whole = whole * 10 + (*s - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            frac += (*s - '0') * (scale /= 10);
    return whole * 1000000 + frac;
}

/*
 * A pool of acme's project: 3 GPUs at 2.00 an hour, there all October, one of
 * its GPUs used for 1251 s by a workload of `project` (borrowed when that is
 * not the owner). Returns the pool's id.
 */
static int64_t october_pool(struct fixture *f, int64_t project, int64_t workload)
{
    struct testsrv *s = f->srv;
    struct store_conn *c = store_conn_get(s->store);
    const struct resource_def *d = &model_allocations;
    struct error_info ei = {0};
    struct arena a;
    struct row row;
    int64_t clu, node, cls, gpu = 0, pool, id;

    clu = testsrv_create(s, f->admin, "clusters", "{\"name\":\"gpus\",\"backend\":\"sim\"}");
    node =
        testsrv_create(s, f->admin, "nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"g0\"}", clu);
    cls = testsrv_create(s, f->admin, "gpu-classes", "{\"name\":\"h100\"}");
    for (int i = 0; i < 3; i++)
        gpu = testsrv_create(s, f->admin, "gpus",
                             "{\"node_id\":%" PRId64 ",\"index\":%d,\"gpu_class_id\":%" PRId64
                             ",\"uuid\":\"GPU-0000000%d\"}",
                             node, i, cls, i);
    pool = testsrv_create(s, f->admin, "pools",
                          "{\"name\":\"p-october\",\"owner_project_id\":%" PRId64
                          ",\"cluster_id\":%" PRId64 ",\"cost_per_gpu_hour_micros\":2000000}",
                          f->project, clu);
    arena_init(&a);
    assert_int_equal(store_get(c, &model_pools, pool, &a, &row, &ei), 0);
    row_set_int(&row, F_POOLS_CREATED_AT, OCT5 / 1000 - 5 * 86400);
    assert_int_equal(store_update(c, &model_pools, pool, &row, &ei), 0);
    row = model_row_new(d, &a);
    row_set_int(&row, F_ALLOCATIONS_WORKLOAD_ID, workload);
    row_set_int(&row, F_ALLOCATIONS_PROJECT_ID, project);
    row_set_int(&row, F_ALLOCATIONS_REPLICA, 0);
    row_set_int(&row, F_ALLOCATIONS_NODE_ID, node);
    row_set_int(&row, F_ALLOCATIONS_GPU_ID, gpu);
    row_set_int(&row, F_ALLOCATIONS_GPU_CLASS_ID, cls);
    row_set_int(&row, F_ALLOCATIONS_MILLI, 1000);
    row_set_str(&row, &a, F_ALLOCATIONS_PRIORITY_CLASS,
                project == f->project ? "owned" : "opportunistic");
    row_set_int(&row, F_ALLOCATIONS_BORROWED, project != f->project);
    row_set_int(&row, F_ALLOCATIONS_STARTED_MS, OCT5);
    row_set_int(&row, F_ALLOCATIONS_ENDED_MS, OCT5 + 1251000);
    row_set_str(&row, &a, F_ALLOCATIONS_END_REASON, "succeeded");
    assert_int_equal(store_insert(c, d, &row, &id, &ei), 0);
    store_conn_put(c);
    arena_release(&a);
    return pool;
}

/*
 * Showback's money is rounded once (half-even, to cents) from exact sums, and
 * a total is the sum of its parts as shown: a pool of 3 GPUs at 2.00 an hour
 * over October (4464.00) of which one GPU was used for 1251 s (0.695) showed
 * used 0.69 + idle 4463.30 against a total of 4464.00 (truncated parts).
 */
static void test_cost_rounded_once(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    const char *by[] = {"pool", "project", "org"};
    long got;
    json_t *j, *it;
    size_t k;

    october_pool(f, f->project, f->workload);
    for (size_t i = 0; i < ARRAY_SIZE(by); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/cost?by=%s&period=2026-10", by[i]);
        testsrv_req(s, "GET", path, f->viewer, NULL, &got, &j);
        assert_int_equal(got, 200);
        assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
        json_array_foreach(json_object_get(j, "items"), k, it)
        {
            int64_t used = json_integer_value(json_object_get(it, "used_micros"));
            int64_t idle = json_integer_value(json_object_get(it, "idle_micros"));
            int64_t total = json_integer_value(json_object_get(it, "total_micros"));
            assert_int_equal(used, 700000);
            assert_int_equal(idle, 4463300000);
            assert_int_equal(total, used + idle);
            assert_string_equal(json_string_value(json_object_get(it, "used")), "0.70");
            assert_string_equal(json_string_value(json_object_get(it, "idle")), "4463.30");
            assert_string_equal(json_string_value(json_object_get(it, "total")), "4464.00");
            assert_int_equal(micros_of(json_string_value(json_object_get(it, "used"))) +
                                 micros_of(json_string_value(json_object_get(it, "idle"))),
                             micros_of(json_string_value(json_object_get(it, "total"))));
        }
        json_decref(j);
    }
}

/* The item of a /v1/cost answer with that name, or NULL. */
static json_t *cost_item(json_t *ans, const char *name)
{
    json_t *it;
    size_t k;
    json_array_foreach(json_object_get(ans, "items"), k, it)
    {
        if (strcmp(json_string_value(json_object_get(it, "name")), name) == 0)
            return it;
    }
    return NULL;
}

/*
 * A pool's org-admin sees the cost of its pool lent to a tenant it cannot
 * see exactly as the admin does (used by the borrower included), by name, and
 * never the borrower's own rows or names.
 */
static void test_cost_of_a_pool_lent_to_a_hidden_tenant(void **state)
{
    struct fixture *f = *state;
    struct testsrv *s = f->srv;
    int64_t globex, rival, wl, uid;
    char *olga;
    json_t *adm, *mine;
    long got;

    globex = testsrv_create(s, f->admin, "organizations", "{\"name\":\"globex\"}");
    rival = testsrv_create(s, f->admin, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"rival\"}",
                           globex);
    wl = testsrv_create(s, f->admin, "workloads",
                        "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                        ",\"priority_class\":\"owned\"}",
                        rival, f->flavor);
    uid = testsrv_create(s, f->admin, "users", "{\"name\":\"olga\"}");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"org-admin\",\"org_id\":%" PRId64 "}", uid,
                   f->org);
    olga = testsrv_token_for(s, uid, NULL);
    october_pool(f, rival, wl);

    testsrv_req(s, "GET", "/v1/cost?by=pool&period=2026-10", f->admin, NULL, &got, &adm);
    assert_int_equal(got, 200);
    testsrv_req(s, "GET", "/v1/cost?by=pool&period=2026-10", olga, NULL, &got, &mine);
    assert_int_equal(got, 200);
    assert_int_equal(json_array_size(json_object_get(mine, "items")), 1);
    assert_non_null(cost_item(adm, "p-october"));
    assert_true(json_equal(cost_item(adm, "p-october"), cost_item(mine, "p-october")));
    assert_string_equal(json_string_value(json_object_get(cost_item(mine, "p-october"), "used")),
                        "0.70");
    json_decref(adm);
    json_decref(mine);

    /* by project and org: the borrower's row is the admin's only; the owner's idle is its own */
    for (int i = 0; i < 2; i++) {
        const char *path =
            i ? "/v1/cost?by=org&period=2026-10" : "/v1/cost?by=project&period=2026-10";
        const char *own = i ? "acme" : "vision", *theirs = i ? "globex" : "rival";
        testsrv_req(s, "GET", path, f->admin, NULL, &got, &adm);
        assert_non_null(cost_item(adm, theirs));
        assert_string_equal(json_string_value(json_object_get(cost_item(adm, theirs), "used")),
                            "0.70");
        testsrv_req(s, "GET", path, olga, NULL, &got, &mine);
        assert_int_equal(got, 200);
        assert_null(strstr(s->body, theirs));
        assert_int_equal(json_array_size(json_object_get(mine, "items")), 1);
        assert_true(json_equal(cost_item(adm, own), cost_item(mine, own)));
        assert_string_equal(json_string_value(json_object_get(cost_item(mine, own), "idle")),
                            "4463.30");
        json_decref(adm);
        json_decref(mine);
    }
    free(olga);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_issued_invoices_cannot_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rerating_notices_an_altered_ledger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pay_credit_and_exports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_as_non_admins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_rounded_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_of_a_pool_lent_to_a_hidden_tenant, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_price_never_in_the_past, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
