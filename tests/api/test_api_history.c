/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_history.c: POST /v1/history, finished work of the past imported
 * through the API. The imported month is metered into the ledger (which
 * still verifies) and invoiced with the ordinary routes to the right total;
 * only admins may import; every refusal (bad input, GPUs already held then,
 * a price that would re-rate metered usage, a period already invoiced)
 * names what is wrong and writes nothing.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "base/timeutil.h"
#include "billing/billing.h"
#include "support/testsrv.h"

#define H INT64_C(3600000)

struct fixture {
    struct testsrv *srv;
    const char *admin;
    char *orgadmin, *member; /* of acme */
    int64_t org, project, other_project, flavor, cpu_flavor, gpu[3];
    int64_t month_ms; /* start of last month */
    char period[16];  /* last month, "YYYY-MM" */
    char month[40];   /* its start, RFC 3339 */
};

static void at(struct fixture *f, int64_t offset_ms, char out[40])
{
    time_format_rfc3339((f->month_ms + offset_ms) / 1000, out, 40);
}

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv *s = f->srv = testsrv_start();
    int64_t this_start, end, cls, cluster, node, node2, uid;

    f->admin = s->admin_token;
    assert_int_equal(meter_period_of(NULL, time_now_ms(), &this_start, &end), 0);
    assert_int_equal(meter_period_of(NULL, this_start - 1, &f->month_ms, &end), 0);
    billing_format_period(f->month_ms, f->period);
    at(f, 0, f->month);
    f->org = testsrv_create(s, f->admin, "organizations",
                            "{\"name\":\"acme\",\"display_name\":\"Acme Corp\"}");
    f->project = testsrv_create(s, f->admin, "projects",
                                "{\"org_id\":%" PRId64 ",\"name\":\"vision\"}", f->org);
    f->other_project =
        testsrv_create(s, f->admin, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"speech\"}",
                       testsrv_create(s, f->admin, "organizations", "{\"name\":\"other\"}"));
    cls = testsrv_create(s, f->admin, "gpu-classes", "{\"name\":\"h100-80gb\"}");
    cluster = testsrv_create(s, f->admin, "clusters", "{\"name\":\"c1\",\"backend\":\"sim\"}");
    node = testsrv_create(s, f->admin, "nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"n1\"}",
                          cluster);
    node2 = testsrv_create(s, f->admin, "nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"n2\"}",
                           cluster);
    for (int i = 0; i < 3; i++)
        f->gpu[i] =
            testsrv_create(s, f->admin, "gpus",
                           "{\"node_id\":%" PRId64 ",\"index\":%d,\"gpu_class_id\":%" PRId64 "}",
                           i < 2 ? node : node2, i, cls);
    f->flavor = testsrv_create(
        s, f->admin, "flavors",
        "{\"name\":\"h100.1x\",\"gpu_class_id\":%" PRId64 ",\"gpu_milli\":1000}", cls);
    f->cpu_flavor = testsrv_create(s, f->admin, "flavors", "{\"name\":\"cpu.small\"}");
    uid = testsrv_create(s, f->admin, "users", "{\"name\":\"maria\"}");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"org-admin\",\"org_id\":%" PRId64 "}", uid,
                   f->org);
    f->orgadmin = testsrv_token_for(s, uid, NULL);
    uid = testsrv_create(s, f->admin, "users", "{\"name\":\"alice\"}");
    testsrv_create(s, f->admin, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}", uid,
                   f->project);
    f->member = testsrv_token_for(s, uid, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->orgadmin);
    free(f->member);
    testsrv_stop(f->srv);
    free(f);
    return 0;
}

/* The price version of last month, 2.50 EUR per replica-hour, as a "prices" list. */
static char *prices(struct fixture *f, int64_t flavor)
{
    return xasprintf("[{\"flavor_id\":%" PRId64 ",\"currency\":\"EUR\","
                     "\"price_per_hour_micros\":2500000,\"effective_from\":\"%s\"}]",
                     flavor, f->month);
}

/* One workload of the history: `from_h` hours into last month, for `hours`. */
static char *item(struct fixture *f, int64_t project, int64_t from_h, int64_t hours,
                  const char *extra)
{
    char s[40], e[40];
    at(f, from_h * H, s);
    at(f, (from_h + hours) * H, e);
    return xasprintf("{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                     ",\"name\":\"history\",\"started_at\":\"%s\",\"finished_at\":\"%s\"%s}",
                     project, f->flavor, s, e, extra ? extra : "");
}

/* POSTs {"prices": p, "workloads": [w]} (p NULL: none); returns the reply, status in *got. */
static json_t *post(struct fixture *f, const char *token, const char *p, const char *w, long *got)
{
    char *body = p ? xasprintf("{\"prices\":%s,\"workloads\":[%s]}", p, w)
                   : xasprintf("{\"workloads\":[%s]}", w);
    json_t *j = NULL;
    testsrv_req(f->srv, "POST", "/v1/history", token, body, got, &j);
    free(body);
    return j;
}

static void expect(struct fixture *f, const char *p, const char *w, long want, const char *field,
                   const char *words)
{
    long got;
    json_t *j = post(f, f->admin, p, w, &got);
    if (got != want)
        fail_msg("history import: %ld, not %ld: %s", got, want, f->srv->body);
    if (field)
        assert_string_equal(testsrv_err_field(j), field);
    if (words && !strstr(testsrv_err_message(j), words))
        fail_msg("'%s' is not in the message: %s", words, testsrv_err_message(j));
    json_decref(j);
}

static json_t *get(struct fixture *f, const char *path)
{
    long got;
    json_t *j;
    testsrv_req(f->srv, "GET", path, f->admin, NULL, &got, &j);
    if (got != 200)
        fail_msg("GET %s: %ld %s", path, got, f->srv->body);
    return j;
}

static int64_t ledger_records(struct fixture *f)
{
    json_t *j = get(f, "/v1/ledger/verify");
    int64_t n;
    assert_true(json_is_true(json_object_get(j, "ok")));
    n = json_integer_value(json_object_get(j, "records"));
    json_decref(j);
    return n;
}

static void nothing_written(struct fixture *f)
{
    assert_int_equal(testsrv_count(f->srv, f->admin, "/v1/workloads"), 0);
    assert_int_equal(testsrv_count(f->srv, f->admin, "/v1/allocations"), 0);
    assert_int_equal(testsrv_count(f->srv, f->admin, "/v1/events"), 0);
    assert_int_equal(testsrv_count(f->srv, f->admin, "/v1/prices"), 0);
    assert_int_equal(ledger_records(f), 0);
}

/* Imports last month's work and issues its invoice: 2 replicas x 3 h x 2.50 + 1 h x 0.6. */
static void test_imported_month_is_invoiced(void **state)
{
    struct fixture *f = *state;
    char *p = prices(f, f->flavor), *w1 = item(f, f->project, 200, 3, ",\"replicas\":2");
    char *w2 = item(f, f->project, 300, 1, ",\"priority_class\":\"opportunistic\"");
    char *both = xasprintf("%s,%s", w1, w2), path[96], body[96];
    long got;
    json_t *j = post(f, f->admin, p, both, &got), *inv, *wl;
    int64_t wid, inv_id;

    if (got != 201)
        fail_msg("import: %ld %s", got, f->srv->body);
    assert_int_equal(json_array_size(json_object_get(j, "workload_ids")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "price_ids")), 1);
    wid = json_integer_value(json_array_get(json_object_get(j, "workload_ids"), 0));
    json_decref(j);
    assert_int_equal(ledger_records(f), 2);

    /* the workload says what it is; its allocations are closed, on distinct GPUs */
    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64, wid);
    wl = get(f, path);
    assert_true(json_is_true(json_object_get(wl, "imported")));
    assert_string_equal(json_string_value(json_object_get(wl, "state")), "succeeded");
    assert_non_null(strstr(json_string_value(json_object_get(wl, "reason")), "simulated"));
    json_decref(wl);
    snprintf(path, sizeof(path), "/v1/allocations?workload_id=%" PRId64, wid);
    wl = get(f, path);
    assert_int_equal(json_array_size(json_object_get(wl, "items")), 2);
    assert_int_not_equal(json_integer_value(json_object_get(
                             json_array_get(json_object_get(wl, "items"), 0), "gpu_id")),
                         json_integer_value(json_object_get(
                             json_array_get(json_object_get(wl, "items"), 1), "gpu_id")));
    assert_false(
        json_is_null(json_object_get(json_array_get(json_object_get(wl, "items"), 0), "ended_ms")));
    json_decref(wl);
    snprintf(path, sizeof(path), "/v1/events?workload_id=%" PRId64, wid);
    assert_int_equal(testsrv_count(f->srv, f->admin, path), 3);

    snprintf(body, sizeof(body), "{\"org_id\":%" PRId64 ",\"period\":\"%s\"}", f->org, f->period);
    testsrv_req(f->srv, "POST", "/v1/invoices/issue", f->admin, body, &got, &j);
    if (got != 201)
        fail_msg("issue: %ld %s", got, f->srv->body);
    inv = json_array_get(json_object_get(j, "items"), 0);
    /* 2 x 3 h x 2.50 = 15.00 owned; 1 h x 2.50 x 0.6 = 1.50 opportunistic */
    assert_int_equal(json_integer_value(json_object_get(inv, "total_micros")), 16500000);
    assert_string_equal(json_string_value(json_object_get(inv, "currency")), "EUR");
    inv_id = testsrv_id(inv);
    json_decref(j);
    snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/verify", inv_id);
    j = get(f, path);
    assert_true(json_is_true(json_object_get(j, "reproduced")));
    json_decref(j);
    assert_int_equal(ledger_records(f), 2);

    /* the invoiced month is closed to more history */
    expect(f, NULL, w2, 409, "workloads[0].started_at", "already invoiced");
    free(p);
    free(w1);
    free(w2);
    free(both);
}

static void test_only_admins(void **state)
{
    struct fixture *f = *state;
    char *p = prices(f, f->flavor), *w = item(f, f->project, 10, 1, NULL);
    long got;

    json_decref(post(f, f->orgadmin, p, w, &got));
    assert_int_equal(got, 403);
    json_decref(post(f, f->member, p, w, &got));
    assert_int_equal(got, 403);
    json_decref(post(f, NULL, p, w, &got));
    assert_int_equal(got, 401);
    nothing_written(f);
    free(p);
    free(w);
}

static void test_bad_input_writes_nothing(void **state)
{
    struct fixture *f = *state;
    char *p = prices(f, f->flavor), *good = item(f, f->project, 10, 1, NULL);
    char *bad, *w, past[40], future[40], *fp;
    long got;
    json_t *j;

    testsrv_req(f->srv, "POST", "/v1/history", f->admin, "{\"prices\":[]}", &got, &j);
    assert_int_equal(got, 400);
    assert_string_equal(testsrv_err_field(j), "workloads");
    json_decref(j);
    testsrv_req(f->srv, "POST", "/v1/history", f->admin, "{\"workloads\":[],\"x\":1}", &got, &j);
    assert_int_equal(got, 400);
    json_decref(j);

    /* the second workload is bad: the first, and the prices, are not written either */
    bad = item(f, f->project, 10, -1, NULL);
    w = xasprintf("%s,%s", good, bad);
    expect(f, p, w, 400, "workloads[1].finished_at", "after started_at");
    free(bad);
    free(w);
    bad = item(f, f->project, 10, 32 * 24, NULL);
    expect(f, p, bad, 400, "workloads[0].finished_at", "31 days");
    free(bad);
    time_format_rfc3339(time_now_s() - 3600, past, sizeof(past));
    time_format_rfc3339(time_now_s() + 3600, future, sizeof(future));
    bad = xasprintf("{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                    ",\"started_at\":\"%s\",\"finished_at\":\"%s\"}",
                    f->project, f->flavor, past, future);
    expect(f, p, bad, 400, "workloads[0].finished_at", "in the future");
    free(bad);
    bad = item(f, 999999, 10, 1, NULL);
    expect(f, p, bad, 400, "workloads[0].project_id", "no project");
    free(bad);
    bad = item(f, f->project, 10, 1, ",\"state\":\"running\"");
    expect(f, p, bad, 400, "workloads[0].state", NULL);
    free(bad);
    bad = item(f, f->project, 10, 1, ",\"id\":7");
    expect(f, p, bad, 400, "workloads[0].id", "unknown field");
    free(bad);
    /* a GPU of no such class, too few GPUs, GPUs of a CPU-only flavor */
    bad = item(f, f->project, 10, 1, ",\"gpu_ids\":[424242]");
    expect(f, p, bad, 400, "workloads[0].gpu_ids", NULL);
    free(bad);
    bad = item(f, f->project, 10, 1, ",\"replicas\":2,\"gpu_ids\":[1]");
    expect(f, p, bad, 400, "workloads[0].gpu_ids", "2 replicas");
    free(bad);
    /* no price in force then: neither given nor in the price list */
    expect(f, NULL, good, 400, "workloads[0].flavor_id", "no price in force");
    /* a version in "prices" that is not in the past */
    fp = xasprintf("[{\"flavor_id\":%" PRId64 ",\"price_per_hour_micros\":1,"
                   "\"effective_from\":\"%s\"}]",
                   f->flavor, future);
    expect(f, fp, good, 400, "prices[0].effective_from", "not in the past");
    free(fp);
    nothing_written(f);
    free(p);
    free(good);
}

/* GPUs held at a time are not given twice: first fit moves on, named GPUs are refused. */
static void test_overlap_refused(void **state)
{
    struct fixture *f = *state;
    char *p = prices(f, f->flavor), *w, *two, named[64], path[96];
    long got;
    json_t *j;

    /* three overlapping one-GPU runs fill the fleet's three GPUs */
    w = item(f, f->project, 100, 10, NULL);
    two = xasprintf("%s,%s,%s", w, w, w);
    json_decref(post(f, f->admin, p, two, &got));
    assert_int_equal(got, 201);
    free(two);
    snprintf(path, sizeof(path), "/v1/allocations?project_id=%" PRId64, f->project);
    assert_int_equal(testsrv_count(f->srv, f->admin, path), 3);
    /* a fourth at an overlapping time finds no GPU; nor does one naming a held GPU */
    free(w);
    w = item(f, f->project, 105, 1, NULL);
    expect(f, NULL, w, 409, "workloads[0].started_at", "free");
    free(w);
    snprintf(named, sizeof(named), ",\"gpu_ids\":[%" PRId64 "]", f->gpu[1]);
    w = item(f, f->other_project, 109, 2, named);
    expect(f, NULL, w, 409, "workloads[0].gpu_ids", "held by other work");
    free(w);
    /* one GPU named for two replicas at once */
    snprintf(named, sizeof(named), ",\"replicas\":2,\"gpu_ids\":[%" PRId64 ",%" PRId64 "]",
             f->gpu[0], f->gpu[0]);
    w = item(f, f->other_project, 200, 2, named);
    expect(f, NULL, w, 409, "workloads[0].gpu_ids", "held by other work");
    free(w);
    snprintf(named, sizeof(named), ",\"gpu_ids\":[%" PRId64 "]", f->gpu[1]);
    assert_int_equal(testsrv_count(f->srv, f->admin, "/v1/workloads"), 3);
    /* right after they ended, the same GPU is free again */
    w = item(f, f->other_project, 110, 2, named);
    j = post(f, f->admin, NULL, w, &got);
    assert_int_equal(got, 201);
    json_decref(j);
    snprintf(path, sizeof(path), "/v1/allocations?gpu_id=%" PRId64, f->gpu[1]);
    assert_int_equal(testsrv_count(f->srv, f->admin, path), 2);
    assert_int_equal(ledger_records(f), 4);
    free(w);
    free(p);
}

/* A price version of the past never governs usage already metered. */
static void test_price_never_re_rates(void **state)
{
    struct fixture *f = *state;
    char *p = prices(f, f->flavor), *w = item(f, f->project, 100, 2, NULL), *later, *cpu;
    char from[40], path[96];
    json_t *j;
    int64_t before;

    expect(f, p, w, 201, NULL, NULL);
    snprintf(path, sizeof(path), "/v1/usage?period=%s&project_id=%" PRId64, f->period, f->project);
    j = get(f, path);
    before = json_integer_value(
        json_object_get(json_array_get(json_object_get(j, "items"), 0), "amount_micros"));
    assert_int_equal(before, 5000000);
    json_decref(j);
    /* a version from an hour into the metered run would re-rate its second hour */
    at(f, 101 * H, from);
    later = xasprintf("[{\"flavor_id\":%" PRId64 ",\"currency\":\"EUR\","
                      "\"price_per_hour_micros\":1,\"effective_from\":\"%s\"}]",
                      f->flavor, from);
    free(w);
    w = item(f, f->project, 300, 1, NULL);
    expect(f, later, w, 409, "prices[0].effective_from", "re-rate");
    free(later);
    /* one after the metered run is fine: it governs only the new work */
    at(f, 102 * H, from);
    later = xasprintf("[{\"flavor_id\":%" PRId64 ",\"currency\":\"EUR\","
                      "\"price_per_hour_micros\":1000000,\"effective_from\":\"%s\"}]",
                      f->flavor, from);
    expect(f, later, w, 201, NULL, NULL);
    j = get(f, path);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
    json_decref(j);
    /* CPU-only work has no GPU and is put on a node of the fleet */
    cpu = xasprintf("[{\"flavor_id\":%" PRId64 ",\"currency\":\"EUR\","
                    "\"price_per_hour_micros\":1000000,\"effective_from\":\"%s\"}]",
                    f->cpu_flavor, f->month);
    free(w);
    w = xasprintf("{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                  ",\"started_at\":\"%s\",\"finished_at\":\"%s\",\"state\":\"failed\"}",
                  f->project, f->cpu_flavor, f->month, from);
    expect(f, cpu, w, 201, NULL, NULL);
    assert_int_equal(ledger_records(f), 3);
    free(cpu);
    free(later);
    free(w);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_imported_month_is_invoiced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_admins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_price_never_re_rates, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
