/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_billing_ledger.c: metering on a real SQLite store: the ledger's
 * chain, idempotence and tamper detection, cuts at month boundaries, issuing
 * an invoice and re-rating it byte for byte, payments, credit notes,
 * exports, and budgets (alerts and refusing P2 work).
 */
#include "base/common.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <cmocka.h>
#include <jansson.h>

#include "billing/billing.h"
#include "support/teststore.h"

#define H INT64_C(3600000)
#define OCT31_23H INT64_C(1793487600000) /* 2026-10-31T23:00:00Z */
#define NOV1 INT64_C(1793491200000)      /* 2026-11-01T00:00:00Z */
#define DEC1 INT64_C(1796083200000)      /* 2026-12-01T00:00:00Z */

struct env {
    struct teststore db;
    struct arena a;
    int64_t org, project, flavor, workload;
};

static void add_allocations(struct env *e, int64_t started_ms)
{
    const struct resource_def *d = &model_allocations;
    for (int rep = 0; rep < 2; rep++) {
        for (int g = 0; g < 2; g++) {
            struct row al = teststore_row(d, &e->a);
            row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, e->workload);
            row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, e->project);
            row_set_int(&al, F_ALLOCATIONS_REPLICA, rep);
            row_set_int(&al, F_ALLOCATIONS_NODE_ID, 1);
            row_set_null(&al, F_ALLOCATIONS_GPU_ID);
            row_set_int(&al, F_ALLOCATIONS_MILLI, 1000);
            row_set_int(&al, F_ALLOCATIONS_STARTED_MS, started_ms);
            row_set_null(&al, F_ALLOCATIONS_ENDED_MS);
            teststore_insert(&e->db, d, &al);
        }
    }
}

static int setup(void **state)
{
    struct env *e = xcalloc(1, sizeof(*e));
    struct row r;

    teststore_open(&e->db, "billing", NULL);
    arena_init(&e->a);

    r = teststore_row(&model_organizations, &e->a);
    row_set_str(&r, &e->a, F_ORGANIZATIONS_NAME, "acme");
    row_set_str(&r, &e->a, F_ORGANIZATIONS_DISPLAY_NAME, "Acme <Research> & Co");
    row_set_str(&r, &e->a, F_ORGANIZATIONS_COST_CENTER, "CC-4711");
    e->org = teststore_insert(&e->db, &model_organizations, &r);
    r = teststore_row(&model_projects, &e->a);
    row_set_int(&r, F_PROJECTS_ORG_ID, e->org);
    row_set_str(&r, &e->a, F_PROJECTS_NAME, "vision");
    e->project = teststore_insert(&e->db, &model_projects, &r);
    /* a node for the allocations */
    r = teststore_row(&model_clusters, &e->a);
    row_set_str(&r, &e->a, F_CLUSTERS_NAME, "c1");
    row_set_str(&r, &e->a, F_CLUSTERS_BACKEND, "sim");
    {
        int64_t clu = teststore_insert(&e->db, &model_clusters, &r);
        r = teststore_row(&model_nodes, &e->a);
        row_set_int(&r, F_NODES_CLUSTER_ID, clu);
        row_set_str(&r, &e->a, F_NODES_NAME, "n1");
        teststore_insert(&e->db, &model_nodes, &r);
    }
    r = teststore_row(&model_gpu_classes, &e->a);
    row_set_str(&r, &e->a, F_GPU_CLASSES_NAME, "h100");
    {
        int64_t cls = teststore_insert(&e->db, &model_gpu_classes, &r);
        r = teststore_row(&model_flavors, &e->a);
        row_set_str(&r, &e->a, F_FLAVORS_NAME, "h100.2x");
        row_set_int(&r, F_FLAVORS_GPU_CLASS_ID, cls);
        row_set_int(&r, F_FLAVORS_GPU_MILLI, 2000);
        e->flavor = teststore_insert(&e->db, &model_flavors, &r);
    }
    r = teststore_row(&model_prices, &e->a);
    row_set_int(&r, F_PRICES_FLAVOR_ID, e->flavor);
    row_set_str(&r, &e->a, F_PRICES_CURRENCY, "EUR");
    row_set_int(&r, F_PRICES_PRICE_PER_HOUR_MICROS, 3600000); /* 3.60 EUR per replica-hour */
    row_set_int(&r, F_PRICES_OPPORTUNISTIC_MULT_PPM, 500000);
    row_set_int(&r, F_PRICES_EFFECTIVE_FROM, OCT31_23H / 1000 - 86400 * 30);
    teststore_insert(&e->db, &model_prices, &r);
    r = teststore_row(&model_workloads, &e->a);
    row_set_int(&r, F_WORKLOADS_PROJECT_ID, e->project);
    row_set_int(&r, F_WORKLOADS_FLAVOR_ID, e->flavor);
    row_set_int(&r, F_WORKLOADS_REPLICAS, 2);
    row_set_str(&r, &e->a, F_WORKLOADS_PRIORITY_CLASS, "owned");
    row_set_str(&r, &e->a, F_WORKLOADS_STATE, "running");
    e->workload = teststore_insert(&e->db, &model_workloads, &r);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    teststore_close(&e->db);
    arena_release(&e->a);
    free(e);
    return 0;
}

static struct row *records(struct env *e, size_t *ret_n)
{
    struct store_filter f;
    struct row *rows;
    struct error_info ei = {0};
    store_filter_init(&f);
    f.limit = 1000;
    assert_int_equal(store_list(e->db.c, &model_usage, &f, &e->a, &rows, ret_n, &ei), 0);
    return rows;
}

static void test_meter_run_chains_and_is_idempotent(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct billing_verify v;
    struct row *rows;
    size_t n;

    assert_int_equal(
        billing_meter_run(e->db.c, e->workload, NOV1, 2, "owned", NOV1 + H, NOV1, &e->a, &ei), 0);
    assert_int_equal(
        billing_meter_run(e->db.c, e->workload, NOV1, 2, "owned", NOV1 + H, NOV1, &e->a, &ei), 0);
    rows = records(e, &n);
    assert_int_equal(n, 1);
    assert_int_equal(
        billing_meter_run(e->db.c, e->workload, NOV1, 2, "owned", NOV1 + 3 * H, NOV1, &e->a, &ei),
        0);
    rows = records(e, &n);
    assert_int_equal(n, 2);
    assert_int_equal(row_int(&rows[1], F_USAGE_STARTED_MS), NOV1 + H);
    assert_int_equal(row_int(&rows[1], F_USAGE_ENDED_MS), NOV1 + 3 * H);
    assert_int_equal(row_int(&rows[1], F_USAGE_SEQ), 2);
    assert_int_equal(row_int(&rows[1], F_USAGE_GPU_MILLI), 2000);
    assert_int_equal(row_int(&rows[1], F_USAGE_ORG_ID), e->org);
    assert_string_equal(row_get(&rows[1], F_USAGE_PREV_HASH)->s,
                        row_get(&rows[0], F_USAGE_HASH)->s);
    assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
    assert_true(v.ok);
    assert_int_equal(v.records, 2);
    assert_string_equal(v.head, row_get(&rows[1], F_USAGE_HASH)->s);
}

static void test_verify_detects_changes_and_truncation(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct billing_verify v;
    struct row *rows;
    size_t n;

    for (int k = 1; k <= 3; k++)
        assert_int_equal(billing_meter_run(e->db.c, e->workload, NOV1, 2, "owned", NOV1 + k * H,
                                           NOV1, &e->a, &ei),
                         0);
    rows = records(e, &n);
    assert_int_equal(n, 3);
    /* one second less on record 2 */
    row_set_int(&rows[1], F_USAGE_ENDED_MS, NOV1 + 2 * H - 1000);
    assert_int_equal(store_update(e->db.c, &model_usage, model_row_id(&rows[1]), &rows[1], &ei), 0);
    assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
    assert_false(v.ok);
    assert_int_equal(v.bad_seq, 2);
    assert_non_null(strstr(v.problem, "altered"));
    /* put it back: whole again */
    row_set_int(&rows[1], F_USAGE_ENDED_MS, NOV1 + 2 * H);
    assert_int_equal(store_update(e->db.c, &model_usage, model_row_id(&rows[1]), &rows[1], &ei), 0);
    assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
    assert_true(v.ok);
    /* the last record removed */
    assert_int_equal(store_delete(e->db.c, &model_usage, model_row_id(&rows[2]), &ei), 0);
    assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
    assert_false(v.ok);
    assert_non_null(strstr(v.problem, "head says 3"));
    /* a middle one removed */
    assert_int_equal(store_delete(e->db.c, &model_usage, model_row_id(&rows[0]), &ei), 0);
    assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
    assert_false(v.ok);
    assert_int_equal(v.bad_seq, 1);
}

/* The meter appends while the ledger is verified (as the engine does while an operator runs
 * `usage verify`): a record committed between reading the head and reading the records is a
 * newer append, never a fault. Found by bench/reliability/crash_bench.py: "the ledger ends at
 * record 36701 but its head says 36445". */
struct appender {
    struct env *e;
    int runs;
    atomic_bool done;
};

static void *append_runs(void *arg)
{
    struct appender *ap = arg;
    struct store_conn *c = store_conn_get(ap->e->db.s);
    struct error_info ei = {0};
    struct arena a;

    arena_init(&a);
    for (int k = 1; k <= ap->runs; k++) {
        int rc = store_begin(c, &ei);
        if (rc >= 0)
            rc = billing_meter_run(c, ap->e->workload, NOV1, 1, "owned", NOV1 + k * 1000, NOV1, &a,
                                   &ei);
        if (rc >= 0)
            rc = store_commit(c, &ei);
        else
            store_rollback(c);
        if (rc < 0)
            break;
        if (k % 64 == 0) {
            arena_release(&a);
            arena_init(&a);
        }
    }
    arena_release(&a);
    store_conn_put(c);
    atomic_store(&ap->done, true);
    return NULL;
}

static void test_verify_while_appending(void **state)
{
    struct env *e = *state;
    struct appender ap = {.e = e, .runs = 1000};
    pthread_t t;
    int verified = 0, bad = 0;
    char problem[sizeof(((struct billing_verify *)0)->problem)] = "";

    atomic_init(&ap.done, false);
    assert_int_equal(pthread_create(&t, NULL, append_runs, &ap), 0);
    while (!atomic_load(&ap.done)) {
        struct error_info ei = {0};
        struct billing_verify v;
        assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
        verified++;
        if (!v.ok && bad++ == 0)
            memcpy(problem, v.problem, sizeof(problem));
    }
    pthread_join(t, NULL);
    if (bad)
        print_message("%d of %d verifies failed, first: %s\n", bad, verified, problem);
    assert_int_equal(bad, 0);
    {
        struct error_info ei = {0};
        struct billing_verify v;
        assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
        assert_true(v.ok);
        assert_int_equal(v.records, ap.runs);
    }
}

/* A head set back behind records it does not cover is still found, now by the records past it. */
static void test_verify_detects_records_past_the_head(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct billing_verify v;
    struct row *rows;
    size_t n;
    char head[BILLING_HASH_HEX + 32];

    for (int k = 1; k <= 3; k++)
        assert_int_equal(billing_meter_run(e->db.c, e->workload, NOV1, 2, "owned", NOV1 + k * H,
                                           NOV1, &e->a, &ei),
                         0);
    rows = records(e, &n);
    assert_int_equal(n, 3);
    snprintf(head, sizeof(head), "2 %s", row_get(&rows[1], F_USAGE_HASH)->s);
    assert_int_equal(store_meta_set(e->db.c, "usage_ledger_head", head, &ei), 0);
    assert_int_equal(billing_ledger_verify(e->db.c, &v, &ei), 0);
    assert_false(v.ok);
    assert_int_equal(v.bad_seq, 3);
    assert_non_null(strstr(v.problem, "past the ledger's head"));
}

/* Sum of the ledger's intervals in ms x replicas. */
static int64_t ledger_replica_ms(struct env *e)
{
    size_t n;
    int64_t sum = 0;
    struct row *rows = records(e, &n);
    for (size_t i = 0; i < n; i++)
        sum += (row_int(&rows[i], F_USAGE_ENDED_MS) - row_int(&rows[i], F_USAGE_STARTED_MS)) *
               row_int(&rows[i], F_USAGE_REPLICAS);
    return sum;
}

static void test_month_cut_and_invoices(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct meter_invoices inv;
    int64_t *ids;
    size_t n;
    bool same = false;
    struct row stored;

    add_allocations(e, OCT31_23H);
    /* The engine's chore at the boundary, twice (a restart): one record. */
    assert_int_equal(billing_cut_open_runs(e->db.c, NOV1, NOV1 + 5, &e->a, &ei), 1);
    assert_int_equal(billing_cut_open_runs(e->db.c, NOV1, NOV1 + 9, &e->a, &ei), 0);
    /* The run ends at 01:30: the rest goes in, not a ms lost or added. */
    assert_int_equal(billing_meter_run(e->db.c, e->workload, OCT31_23H, 2, "owned",
                                       NOV1 + H + H / 2, NOV1 + 2 * H, &e->a, &ei),
                     0);
    assert_int_equal(ledger_replica_ms(e), 2 * (H + H + H / 2));

    meter_invoices_init(&inv);
    assert_int_equal(
        billing_rate_period(e->db.c, e->org, OCT31_23H - 30 * 24 * H, NOV1, 0, &e->a, &inv, &ei),
        0);
    assert_int_equal(inv.n, 1);
    assert_int_equal(inv.items[0].total_micro, 7200000); /* 2 replica-hours x 3.60 */
    meter_invoices_release(&inv);

    /* November has not ended on Nov 2; October has. */
    assert_int_equal(billing_issue(e->db.c, e->org, "2026-11", NOV1 + 24 * H, &e->a, &ids, &n, &ei),
                     ERR_CONFLICT);
    assert_non_null(strstr(ei.message, "has not ended"));
    ei = (struct error_info){0};
    assert_int_equal(billing_issue(e->db.c, e->org, "2026-10", NOV1 + 24 * H, &e->a, &ids, &n, &ei),
                     0);
    assert_int_equal(n, 1);
    assert_int_equal(store_get(e->db.c, &model_invoices, ids[0], &e->a, &stored, &ei), 0);
    assert_string_equal(row_get(&stored, F_INVOICES_NUMBER)->s, "INV-2026-000001");
    assert_int_equal(row_int(&stored, F_INVOICES_TOTAL_MICROS), 7200000);
    assert_string_equal(row_get(&stored, F_INVOICES_CUSTOMER)->s, "Acme <Research> & Co");
    assert_non_null(strstr(row_get(&stored, F_INVOICES_CANONICAL)->s, "amount=7.20"));
    assert_int_equal(billing_issue(e->db.c, e->org, "2026-10", NOV1 + 25 * H, &e->a, &ids, &n, &ei),
                     ERR_CONFLICT);
    /* Re-rating the closed month reproduces the stored text byte for byte. */
    assert_int_equal(billing_rerate_matches(e->db.c, model_row_id(&stored), &e->a, &same, &ei), 0);
    assert_true(same);
}

static int64_t issue_october(struct env *e)
{
    struct error_info ei = {0};
    int64_t *ids;
    size_t n;
    add_allocations(e, OCT31_23H);
    assert_int_equal(
        billing_meter_run(e->db.c, e->workload, OCT31_23H, 2, "owned", NOV1, NOV1 + H, &e->a, &ei),
        0);
    assert_int_equal(billing_issue(e->db.c, e->org, "2026-10", NOV1 + 24 * H, &e->a, &ids, &n, &ei),
                     0);
    return ids[0];
}

static void test_pay_and_credit_notes(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    int64_t inv = issue_october(e), note;
    struct row r;

    assert_int_equal(billing_pay(e->db.c, inv, NOV1 + 48 * H, &e->a, &ei), 0);
    assert_int_equal(billing_pay(e->db.c, inv, NOV1 + 49 * H, &e->a, &ei), ERR_CONFLICT);
    ei = (struct error_info){0};
    assert_int_equal(billing_credit(e->db.c, inv, 2000000, "", NOV1, &e->a, &note, &ei),
                     ERR_INVALID); /* a reason is required */
    ei = (struct error_info){0};
    assert_int_equal(billing_credit(e->db.c, inv, 2000000, "outage", NOV1, &e->a, &note, &ei), 0);
    assert_int_equal(store_get(e->db.c, &model_invoices, note, &e->a, &r, &ei), 0);
    assert_string_equal(row_get(&r, F_INVOICES_NUMBER)->s, "CN-2026-000001");
    assert_int_equal(row_int(&r, F_INVOICES_TOTAL_MICROS), -2000000);
    assert_int_equal(row_int(&r, F_INVOICES_CREDITS_INVOICE_ID), inv);
    /* 5.20 is left: more is refused, a fraction of a cent too */
    assert_int_equal(billing_credit(e->db.c, inv, 6000000, "x", NOV1, &e->a, &note, &ei),
                     ERR_INVALID);
    ei = (struct error_info){0};
    assert_int_equal(billing_credit(e->db.c, inv, 5000, "x", NOV1, &e->a, &note, &ei), ERR_INVALID);
    ei = (struct error_info){0};
    assert_int_equal(billing_credit(e->db.c, note, 0, "x", NOV1, &e->a, &note, &ei), ERR_CONFLICT);
    ei = (struct error_info){0};
    assert_int_equal(billing_credit(e->db.c, inv, 0, "rest", NOV1, &e->a, &note, &ei), 0);
    assert_int_equal(store_get(e->db.c, &model_invoices, note, &e->a, &r, &ei), 0);
    assert_int_equal(row_int(&r, F_INVOICES_TOTAL_MICROS), -5200000);
    assert_int_equal(billing_credit(e->db.c, inv, 0, "again", NOV1, &e->a, &note, &ei),
                     ERR_CONFLICT);
}

static char *export_of(struct env *e, int64_t id, enum billing_format f)
{
    struct error_info ei = {0};
    struct row r;
    struct buf b;
    json_t *j;
    assert_int_equal(store_get(e->db.c, &model_invoices, id, &e->a, &r, &ei), 0);
    j = model_encode(&model_invoices, &r);
    buf_init(&b, 1 << 20);
    assert_int_equal(billing_export(j, f, "GPU Cloud <Ops>", &b), 0);
    json_decref(j);
    return buf_detach(&b, NULL);
}

static void test_exports(void **state)
{
    struct env *e = *state;
    int64_t inv = issue_october(e);
    char *csv = export_of(e, inv, BILLING_CSV), *html = export_of(e, inv, BILLING_HTML);
    char *js = export_of(e, inv, BILLING_JSON), *again = export_of(e, inv, BILLING_HTML);
    json_t *parsed = json_loads(js, 0, NULL);

    assert_non_null(strstr(csv, "number,kind,period,customer,cost_center,currency,project,"));
    assert_non_null(strstr(csv, "INV-2026-000001,invoice,2026-10,Acme <Research> & Co,CC-4711,"
                                "EUR,vision,h100.2x,owned,"));
    assert_non_null(strstr(csv, ",7.20\r\n")); /* the line */
    assert_non_null(strstr(csv, "INV-2026-000001,total,"));
    assert_non_null(strstr(html, "Invoice INV-2026-000001"));
    assert_non_null(strstr(html, "Acme &lt;Research&gt; &amp; Co"));
    assert_non_null(strstr(html, "GPU Cloud &lt;Ops&gt;"));
    assert_non_null(strstr(html, "Cost center: CC-4711"));
    assert_non_null(strstr(html, "2026-10-01 to 2026-10-31"));
    assert_non_null(strstr(html, "7.20 EUR"));
    assert_null(strstr(html, "<Research>"));
    assert_string_equal(html, again);
    assert_non_null(parsed);
    assert_null(json_object_get(parsed, "canonical"));
    assert_string_equal(json_string_value(json_object_get(parsed, "number")), "INV-2026-000001");
    json_decref(parsed);
    free(csv);
    free(html);
    free(js);
    free(again);
}

static void test_budgets(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct store_filter f;
    struct row b, *rows;
    size_t n;

    b = teststore_row(&model_budgets, &e->a);
    row_set_int(&b, F_BUDGETS_PROJECT_ID, e->project);
    row_set_int(&b, F_BUDGETS_GPU_HOURS, 4);
    row_set_int(&b, F_BUDGETS_ENFORCE, 1);
    teststore_insert(&e->db, &model_budgets, &b);
    add_allocations(e, NOV1); /* 2 replicas x 2 GPUs: 4 GPU-hours per hour */

    assert_int_equal(billing_check_budgets(e->db.c, NOV1 + H / 2, &e->a, &ei), 1); /* 50 % */
    assert_int_equal(billing_admit_opportunistic(e->db.c, e->project, NOV1 + H / 2, &e->a, &ei), 0);
    assert_int_equal(billing_check_budgets(e->db.c, NOV1 + H / 2 + 1000, &e->a, &ei), 0);
    assert_int_equal(billing_check_budgets(e->db.c, NOV1 + H, &e->a, &ei), 2); /* 80 and 100 % */
    assert_int_equal(billing_admit_opportunistic(e->db.c, e->project, NOV1 + H, &e->a, &ei),
                     ERR_FORBIDDEN);
    assert_non_null(strstr(ei.message, "spent"));
    assert_non_null(strstr(ei.message, "4.000 GPU-hours of 4 GPU-hours"));
    store_filter_init(&f);
    assert_int_equal(store_list(e->db.c, &model_budget_alerts, &f, &e->a, &rows, &n, &ei), 0);
    assert_int_equal(n, 3);
    assert_int_equal(row_int(&rows[2], F_BUDGET_ALERTS_PERCENT), 100);
    assert_string_equal(row_get(&rows[2], F_BUDGET_ALERTS_PERIOD)->s, "2026-11");
    /* December is a new month: a quarter of an hour in, 1 of 4 GPU-hours is used. */
    ei = (struct error_info){0};
    assert_int_equal(billing_admit_opportunistic(e->db.c, e->project, DEC1 + H / 4, &e->a, &ei), 0);
    assert_int_equal(billing_admit_opportunistic(e->db.c, e->project, DEC1 + H, &e->a, &ei),
                     ERR_FORBIDDEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_meter_run_chains_and_is_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_while_appending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_detects_records_past_the_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_detects_changes_and_truncation, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_month_cut_and_invoices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pay_and_credit_notes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budgets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
