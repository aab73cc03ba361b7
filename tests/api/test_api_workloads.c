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
#include <curl/curl.h>

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

#define RACERS 16
#define RACE_ROUNDS 25

struct racer {
    CURL *easy;
    struct curl_slist *headers;
    char *auth;
    char reply[4096];
    size_t reply_len;
};

static size_t racer_write(char *data, size_t size, size_t n, void *cls)
{
    struct racer *rc = cls;
    size_t len = size * n, room = sizeof(rc->reply) - 1 - rc->reply_len;
    memcpy(rc->reply + rc->reply_len, data, len < room ? len : room);
    rc->reply_len += len < room ? len : room;
    rc->reply[rc->reply_len] = '\0';
    return len;
}

/*
 * RACERS identical submits on parallel connections, all in flight at once
 * (curl multi); each one's status in ret_status and workload id in ret_id.
 */
static void submit_together(struct testsrv *s, const char *token, const char *b,
                            long ret_status[RACERS], int64_t ret_id[RACERS])
{
    struct racer racers[RACERS] = {{0}};
    char url[128];
    CURLM *multi = curl_multi_init();
    int running = 1;

    snprintf(url, sizeof(url), "%s/v1/workloads", s->base_url);
    for (int i = 0; i < RACERS; i++) {
        struct racer *rc = &racers[i];
        rc->easy = curl_easy_init();
        assert_true(asprintf(&rc->auth, "Authorization: Bearer %s", token) > 0);
        rc->headers = curl_slist_append(NULL, rc->auth);
        rc->headers = curl_slist_append(rc->headers, "Content-Type: application/json");
        curl_easy_setopt(rc->easy, CURLOPT_URL, url);
        curl_easy_setopt(rc->easy, CURLOPT_HTTPHEADER, rc->headers);
        curl_easy_setopt(rc->easy, CURLOPT_POSTFIELDS, b);
        curl_easy_setopt(rc->easy, CURLOPT_WRITEFUNCTION, racer_write);
        curl_easy_setopt(rc->easy, CURLOPT_WRITEDATA, rc);
        curl_easy_setopt(rc->easy, CURLOPT_FORBID_REUSE, 1L);
        curl_multi_add_handle(multi, rc->easy);
    }
    while (running) {
        assert_int_equal(curl_multi_perform(multi, &running), CURLM_OK);
        if (running)
            curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    for (int i = 0; i < RACERS; i++) {
        struct racer *rc = &racers[i];
        json_t *j = json_loads(rc->reply, 0, NULL);
        curl_easy_getinfo(rc->easy, CURLINFO_RESPONSE_CODE, &ret_status[i]);
        ret_id[i] = testsrv_id(j);
        if (ret_status[i] != 200 && ret_status[i] != 201)
            print_message("racer %d: %ld %s\n", i, ret_status[i], rc->reply);
        json_decref(j);
        curl_multi_remove_handle(multi, rc->easy);
        curl_easy_cleanup(rc->easy);
        curl_slist_free_all(rc->headers);
        free(rc->auth);
    }
    curl_multi_cleanup(multi);
}

/* Racing submits with one key make one workload: one 201, and 200 with it for all the others. */
static void test_idempotent_submit_race(void **state)
{
    struct world *w = *state;
    struct testsrv_options opt = {.threads = RACERS};
    struct testsrv *s = testsrv_start_with(&opt);
    const char *t = s->admin_token;
    int64_t org = testsrv_create(s, t, "organizations", "{\"name\":\"race\"}");
    int64_t prj = testsrv_create(s, t, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"r\"}", org);
    int64_t flavor = testsrv_create(s, t, "flavors", "{\"name\":\"cpu.race\"}");
    (void)w;

    for (int round = 0; round < RACE_ROUNDS; round++) {
        long status[RACERS];
        int64_t id[RACERS];
        int created = 0;
        char b[200], path[96];
        snprintf(b, sizeof(b),
                 "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
                 ",\"idempotency_key\":\"race-%d\"}",
                 prj, flavor, round);
        submit_together(s, t, b, status, id);
        for (int i = 0; i < RACERS; i++) {
            if (status[i] != 200)
                assert_int_equal(status[i], 201);
            created += status[i] == 201;
            assert_int_equal(id[i], id[0]);
        }
        assert_int_equal(created, 1);
        snprintf(path, sizeof(path), "/v1/workloads?idempotency_key=race-%d", round);
        assert_int_equal(testsrv_count(s, t, path), 1);
    }
    testsrv_stop(s);
}

/* The submit's error message and field, for a request that must fail with 400. */
static void expect_400_on(struct world *w, const char *extra, const char *field,
                          const char *in_message)
{
    char *b = body(w, w->pa, extra);
    long got;
    json_t *j;
    testsrv_req(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, &got, &j);
    assert_int_equal(got, 400);
    assert_string_equal(testsrv_err_field(j), field);
    if (!strstr(testsrv_err_message(j), in_message))
        fail_msg("message '%s' does not say '%s'", testsrv_err_message(j), in_message);
    json_decref(j);
    free(b);
}

/* Times that hold GPUs against a reclaim are bounded (defaults: 1 h, 10 min), so borrowers cannot
 * make themselves unpreemptible. */
static void test_user_times_bounded(void **state)
{
    struct world *w = *state;
    char *b;
    expect_400_on(w, ",\"min_runtime_s\":1099511627776", "min_runtime_s", "max-min-runtime-s");
    expect_400_on(w, ",\"min_runtime_s\":3601", "min_runtime_s", "bound of 3600 s");
    expect_400_on(w, ",\"grace_s\":601", "grace_s", "bound of 600 s (setting max-grace-s)");
    expect_400_on(w, ",\"grace_s\":86400", "grace_s", "max-grace-s");
    expect_400_on(w, ",\"min_runtime_s\":120,\"max_runtime_s\":60", "min_runtime_s",
                  "above max_runtime_s 60");
    b = body(w, w->pa, ",\"min_runtime_s\":3600,\"grace_s\":600,\"max_runtime_s\":3600");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 201);
    free(b);
    b = body(w, w->pa, ",\"grace_s\":null");
    testsrv_expect(w->srv, "POST", "/v1/workloads", w->tok_member_a, b, 201);
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
        cmocka_unit_test(test_idempotent_submit_race),
        cmocka_unit_test(test_bad_submits),
        cmocka_unit_test(test_user_times_bounded),
        cmocka_unit_test(test_pending_reason_is_live),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
