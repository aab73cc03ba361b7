/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workloads through the API: submit validation, idempotency, who may submit,
 * read and cancel (members of the project; viewers read only; other tenants
 * see nothing), live pending reasons, and the audit of a cancel.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "engine/engine.h"
#include "support/testsrv.h"

struct world {
    struct testsrv *srv;
    int64_t org, pa, pb, flavor, gpu_flavor, member_a, viewer_a, member_b;
    char *tok_member_a, *tok_viewer_a, *tok_member_b;
};

static int setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    struct testsrv *s = testsrv_start();
    const char *t = s->admin_token;
    int64_t cls;

    w->srv = s;
    w->org = testsrv_create(s, t, "organizations", "{\"name\":\"acme\"}");
    w->pa = testsrv_create(s, t, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"a\"}", w->org);
    w->pb = testsrv_create(s, t, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"b\"}", w->org);
    w->flavor = testsrv_create(s, t, "flavors", "{\"name\":\"cpu.small\",\"vcpus\":1}");
    cls = testsrv_create(s, t, "gpu-classes", "{\"name\":\"h100\"}");
    w->gpu_flavor = testsrv_create(
        s, t, "flavors", "{\"name\":\"h100.1x\",\"gpu_class_id\":%" PRId64 ",\"gpu_milli\":1000}",
        cls);
    w->member_a = testsrv_create(s, t, "users", "{\"name\":\"ma\"}");
    w->viewer_a = testsrv_create(s, t, "users", "{\"name\":\"va\"}");
    w->member_b = testsrv_create(s, t, "users", "{\"name\":\"mb\"}");
    testsrv_create(s, t, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}",
                   w->member_a, w->pa);
    testsrv_create(s, t, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64 "}",
                   w->viewer_a, w->pa);
    testsrv_create(s, t, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}",
                   w->member_b, w->pb);
    w->tok_member_a = testsrv_token_for(s, w->member_a, NULL);
    w->tok_viewer_a = testsrv_token_for(s, w->viewer_a, NULL);
    w->tok_member_b = testsrv_token_for(s, w->member_b, NULL);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    testsrv_stop(w->srv);
    free(w->tok_member_a);
    free(w->tok_viewer_a);
    free(w->tok_member_b);
    free(w);
    return 0;
}

static char *body(struct world *w, int64_t project, const char *extra)
{
    char *b = NULL;
    if (asprintf(&b, "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "%s}", project,
                 w->flavor, extra) < 0)
        abort();
    return b;
}

static void test_who_may_submit(void **state)
{
    struct world *w = *state;
    char *b = body(w, w->pa, "");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 201);
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_viewer_a, b, 403);
    /* Another tenant's project reads as one that does not exist. */
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_b, b, 400);
    free(b);
}

static void test_visibility_and_cancel(void **state)
{
    struct world *w = *state;
    char *b = body(w, w->pa, ",\"name\":\"job\"");
    char path[96];
    long got;
    json_t *j;
    int64_t id = testsrv_create(w->srv, w->tok_member_a, "workloads", "%s", b);

    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64, id);
    testsrv_expect(w->srv, "GET", path, w->tok_viewer_a, NULL, 200);
    testsrv_expect(w->srv, "GET", path, w->tok_member_b, NULL, 404);
    testsrv_req(w->srv, "GET", "/v1/workloads", w->tok_member_b, NULL, &got, &j);
    assert_int_equal(got, 200);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 0);
    json_decref(j);

    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64 "/cancel", id);
    testsrv_expect(w->srv, "POST", path, w->tok_viewer_a, NULL, 403);
    testsrv_expect(w->srv, "POST", path, w->tok_member_b, NULL, 404);
    testsrv_req(w->srv, "POST", path, w->tok_member_a, NULL, &got, &j);
    assert_int_equal(got, 202);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "cancelled");
    json_decref(j);
    testsrv_expect(w->srv, "POST", path, w->tok_member_a, NULL, 409); /* already ended */

    /* The cancel is audited with who asked, and the events tell the story. */
    snprintf(path, sizeof(path), "/v1/audit?resource=workloads&object_id=%" PRId64, id);
    testsrv_req(w->srv, "GET", path, w->srv->admin_token, NULL, &got, &j);
    assert_int_equal(got, 200);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 2); /* create, cancel */
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 1), "actor")),
        "ma");
    json_decref(j);
    snprintf(path, sizeof(path), "/v1/events?workload_id=%" PRId64, id);
    testsrv_req(w->srv, "GET", path, w->tok_viewer_a, NULL, &got, &j);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 2); /* submitted, cancelled */
    json_decref(j);
    free(b);
}

static void test_idempotent_submit(void **state)
{
    struct world *w = *state;
    char *b = body(w, w->pa, ",\"idempotency_key\":\"run-7\"");
    long got;
    json_t *first, *again;
    testsrv_req(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, &got, &first);
    assert_int_equal(got, 201);
    testsrv_req(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, &got, &again);
    assert_int_equal(got, 200);
    assert_int_equal(json_integer_value(json_object_get(first, "id")),
                     json_integer_value(json_object_get(again, "id")));
    json_decref(first);
    json_decref(again);
    free(b);
}

static void test_bad_submits(void **state)
{
    struct world *w = *state;
    char *b;
    /* Server-decided fields cannot be given. */
    b = body(w, w->pa, ",\"state\":\"running\"");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 400);
    free(b);
    b = body(w, w->pa, ",\"priority_class\":\"urgent\"");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 400);
    free(b);
    b = body(w, w->pa, ",\"replicas\":0");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 400);
    free(b);
    /* Nothing to change or delete through the generic routes. */
    testsrv_expect(w->srv, "PATCH", "/v1/workloads/1", w->tok_member_a, "{\"name\":\"x\"}", 405);
    testsrv_expect(w->srv, "DELETE", "/v1/workloads/1", w->tok_member_a, NULL, 405);
    /* A flavor that is no longer offered. */
    testsrv_expect(w->srv, "PATCH", "/v1/flavors/1", w->srv->admin_token, "{\"active\":false}",
                   200);
    b = body(w, w->pa, "");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 400);
    free(b);
    testsrv_expect(w->srv, "PATCH", "/v1/flavors/1", w->srv->admin_token, "{\"active\":true}",
                   200);
}

static void test_pending_reason_is_live(void **state)
{
    struct world *w = *state;
    char b[160];
    long got;
    json_t *j;
    int64_t id;
    /* GPU work on a fleet with no GPUs at all: it says it can never run. */
    snprintf(b, sizeof(b), "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "}", w->pa,
             w->gpu_flavor);
    id = testsrv_create(w->srv, w->tok_member_a, "workloads", "%s", b);
    engine_sync(w->srv->engine);
    {
        char path[64];
        snprintf(path, sizeof(path), "/v1/workloads/%" PRId64, id);
        testsrv_req(w->srv, "GET", path, w->tok_viewer_a, NULL, &got, &j);
    }
    assert_int_equal(got, 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "queued");
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "no node"));
    /* Behind the CPU work queued by the tests before (it has no nodes either). */
    assert_true(json_integer_value(json_object_get(j, "queue_position")) >= 1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_who_may_submit),
        cmocka_unit_test(test_visibility_and_cancel),
        cmocka_unit_test(test_idempotent_submit),
        cmocka_unit_test(test_bad_submits),
        cmocka_unit_test(test_pending_reason_is_live),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
