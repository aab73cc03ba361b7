/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_whatif.c: POST /v1/whatif (docs/api.md, "What-if") against a live
 * server: bad bodies as data (each a 400 naming the field and saying why),
 * a valid what-if that answers both runs labelled simulated and writes
 * nothing (workloads, allocations, events and the audit log unchanged), a
 * trace replayed instead of the store, and who may ask (a member may not; an
 * organization admin sees its own projects only and reads another
 * organization's project as unknown).
 */
#include "base/common.h"

#include <setjmp.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "support/testsrv.h"

struct fixture {
    struct testsrv *srv;
    const char *tok;
    int64_t org, org2, project, project2, gpu_class, flavor, pool;
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    int64_t cluster, node;

    f->srv = testsrv_start();
    f->tok = f->srv->admin_token;
    f->org = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"acme\"}");
    f->org2 = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"zulu\"}");
    f->project = testsrv_create(f->srv, f->tok, "projects",
                                "{\"org_id\":%" PRId64 ",\"name\":\"vision\"}", f->org);
    f->project2 = testsrv_create(f->srv, f->tok, "projects",
                                 "{\"org_id\":%" PRId64 ",\"name\":\"zulu-team\"}", f->org2);
    cluster = testsrv_create(f->srv, f->tok, "clusters", "{\"name\":\"c1\",\"backend\":\"sim\"}");
    node = testsrv_create(f->srv, f->tok, "nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"n1\"}",
                          cluster);
    f->gpu_class = testsrv_create(f->srv, f->tok, "gpu-classes", "{\"name\":\"h100\"}");
    for (int i = 0; i < 2; i++)
        testsrv_create(f->srv, f->tok, "gpus",
                       "{\"node_id\":%" PRId64 ",\"index\":%d,\"gpu_class_id\":%" PRId64 "}", node,
                       i, f->gpu_class);
    f->flavor = testsrv_create(f->srv, f->tok, "flavors",
                               "{\"name\":\"h100.1x\",\"gpu_class_id\":%" PRId64
                               ",\"gpu_milli\":1000,\"vcpus\":1,\"memory_mib\":1024}",
                               f->gpu_class);
    f->pool =
        testsrv_create(f->srv, f->tok, "pools",
                       "{\"name\":\"zulu-pool\",\"owner_project_id\":%" PRId64 "}", f->project2);
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

/* A request that must be refused: status, the field named, words of the message. */
struct bad {
    const char *body; /* @P: the project's id, @C: the GPU class's */
    long status;
    const char *field;
    const char *says;
};

/* body with @P and @C replaced by the ids. */
static void fill(char *out, size_t size, const char *tmpl, int64_t project, int64_t cls)
{
    size_t n = 0;
    for (const char *p = tmpl; *p && n + 24 < size; p++) {
        if (p[0] == '@' && (p[1] == 'P' || p[1] == 'C')) {
            n += (size_t)snprintf(out + n, size - n, "%" PRId64, p[1] == 'P' ? project : cls);
            p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

static void test_bad_bodies(void **state)
{
    struct fixture *f = *state;
    char many[4096];
    size_t len = (size_t)snprintf(many, sizeof(many), "{\"period\":\"2026-11\",\"changes\":[");
    int failures = 0;
    for (int i = 0; i < 33; i++)
        len += (size_t)snprintf(many + len, sizeof(many) - len, "%s{\"kind\":\"grace\"}",
                                i ? "," : "");
    snprintf(many + len, sizeof(many) - len, "]}");
    const struct bad cases[] = {
        {"{}", 400, "period", "say which period"},
        {"{\"period\":\"2026-13\"}", 400, "period", "2026-13"},
        {"{\"period\":\"2026-11\",\"from\":\"2026-11-01T00:00:00Z\",\"to\":\"2026-11-02T00:00:"
         "00Z\"}",
         400, "period", "either period or from and to"},
        {"{\"from\":\"2026-11-01T00:00:00Z\",\"to\":\"2026-12-15T00:00:00Z\"}", 400, "to",
         "31 days"},
        {"{\"from\":\"2026-11-02T00:00:00Z\",\"to\":\"2026-11-01T00:00:00Z\"}", 400, "to",
         "end after it starts"},
        {"{\"period\":\"2026-11\",\"extra\":1}", 400, "extra", "extra"},
        {"{\"period\":\"2026-11\",\"changes\":{}}", 400, "changes", "must be an array"},
        {many, 400, "changes", "at most 32 changes"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"warp\"}]}", 400, "changes[0].kind",
         "changes[0]"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"quota\",\"project_id\":999,"
         "\"gpu_class_id\":@C,\"gpus\":1}]}",
         400, "changes[0]", "no project with id 999"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"quota\",\"project_id\":@P,"
         "\"gpu_class_id\":@C,\"gpus\":0}]}",
         400, "changes[0]", "non-zero"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"add_nodes\",\"gpu_class_id\":@C,"
         "\"count\":1001}]}",
         400, "changes[0].count", "changes[0]"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"add_nodes\",\"gpu_class_id\":77,"
         "\"count\":1}]}",
         400, "changes[0]", "no GPU class with id 77"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"policy\",\"policy\":\"nope\"}]}", 400,
         "changes[0]", "unknown placement policy 'nope'"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"grace\",\"grace_s\":-1}]}", 400,
         "changes[0].grace_s", "changes[0]"},
        {"{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"lend_to_all\",\"pool_id\":999}]}", 400,
         "changes[0]", "no pool with id 999"},
        {"{\"period\":\"2026-11\",\"trace\":\"submitted_at,project\\n2026-11-02T00:00:00Z,"
         "vision\\n\"}",
         400, "trace", "run_s"},
        {"{\"period\":\"2026-11\",\"trace\":\"submitted_at,project,flavor,run_s\\n"
         "2026-11-02T00:00:00Z,nobody,h100.1x,60\\n\"}",
         400, "trace", "trace line 2: project 'nobody' names no project"},
        {"{\"period\":\"2026-11\",\"trace\":\"submitted_at,project,flavor,run_s\\n"
         "2026-11-02T00:00:00Z,vision,h100.1x,0\\n\"}",
         400, "trace", "run_s '0' must be 1 to 2678400 seconds"},
        {"{\"period\":\"2026-11\",\"trace\":\"submitted_at,project,flavor,run_s\\n"
         "2026-12-02T00:00:00Z,vision,h100.1x,60\\n\"}",
         400, "trace", "outside the period"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char body[4096];
        long status = 0;
        json_t *j = NULL;
        fill(body, sizeof(body), cases[i].body, f->project, f->gpu_class);
        assert_int_equal(testsrv_req(f->srv, "POST", "/v1/whatif", f->tok, body, &status, &j), 0);
        if (status != cases[i].status || strcmp(testsrv_err_field(j), cases[i].field) != 0 ||
            !strstr(testsrv_err_message(j), cases[i].says)) {
            fprintf(stderr, "case %zu: %s\n  got %ld field '%s' message '%s'\n", i, body, status,
                    testsrv_err_field(j), testsrv_err_message(j));
            failures++;
        }
        json_decref(j);
    }
    assert_int_equal(failures, 0);
}

static void test_answers_and_writes_nothing(void **state)
{
    struct fixture *f = *state;
    size_t audit = testsrv_count(f->srv, f->tok, "/v1/audit");
    size_t workloads = testsrv_count(f->srv, f->tok, "/v1/workloads");
    char body[1024];
    long status = 0;
    json_t *j = NULL;

    snprintf(
        body, sizeof(body),
        "{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"add_nodes\",\"gpu_class_id\":%" PRId64
        ",\"count\":2},{\"kind\":\"quota\",\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64
        ",\"gpus\":1},{\"kind\":\"policy\",\"policy\":\"fgd-fill\"},{\"kind\":\"grace\","
        "\"grace_s\":0}],\"trace\":\"submitted_at,project,flavor,run_s,priority_class\\n"
        "2026-11-02T00:00:00Z,vision,h100.1x,3600,opportunistic\\n"
        "2026-11-02T00:00:00Z,vision,%" PRId64 ",3600,auto\\n"
        "2026-11-02T00:00:00Z,zulu-team,h100.1x,3600,auto\\n\"}",
        f->gpu_class, f->project, f->gpu_class, f->flavor);
    assert_int_equal(testsrv_req(f->srv, "POST", "/v1/whatif", f->tok, body, &status, &j), 0);
    assert_int_equal(status, 200);
    assert_true(json_is_true(json_object_get(j, "simulated")));
    assert_non_null(strstr(json_string_value(json_object_get(j, "label")), "simulated"));
    assert_string_equal(json_string_value(json_object_get(j, "source")), "trace");
    assert_int_equal(json_integer_value(json_object_get(j, "workloads")), 3);
    {
        json_t *b = json_object_get(j, "baseline"), *c = json_object_get(j, "changed");
        /* two GPUs: the third job waits an hour; two more nodes like the first: nobody waits */
        assert_int_equal(json_integer_value(json_object_get(b, "capacity_gpus")), 2);
        assert_int_equal(json_integer_value(json_object_get(c, "capacity_gpus")), 6);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(b, "overall"), "wait_max_s")), 3600);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(c, "overall"), "wait_max_s")), 0);
        assert_int_equal(json_array_size(json_object_get(b, "projects")), 2);
        assert_true(json_is_true(json_object_get(b, "simulated")));
    }
    json_decref(j);
    /* the store's month: empty here, and fine */
    testsrv_expect(f->srv, "POST", "/v1/whatif", f->tok, "{\"period\":\"2026-11\"}", 200);
    assert_int_equal(testsrv_count(f->srv, f->tok, "/v1/audit"), audit);
    assert_int_equal(testsrv_count(f->srv, f->tok, "/v1/workloads"), workloads);
    assert_int_equal(testsrv_count(f->srv, f->tok, "/v1/allocations"), 0);
    assert_int_equal(testsrv_count(f->srv, f->tok, "/v1/events"), 0);
}

static void test_roles(void **state)
{
    struct fixture *f = *state;
    int64_t member = testsrv_create(f->srv, f->tok, "users", "{\"name\":\"mia\"}");
    int64_t admin = testsrv_create(f->srv, f->tok, "users", "{\"name\":\"olga\"}");
    char *mia, *olga, body[1024];
    long status = 0;
    json_t *j = NULL;
    const char *trace = "\"trace\":\"submitted_at,project,flavor,run_s\\n"
                        "2026-11-02T00:00:00Z,vision,h100.1x,60\\n"
                        "2026-11-02T00:00:00Z,zulu-team,h100.1x,60\\n\"";

    testsrv_create(f->srv, f->tok, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}",
                   member, f->project);
    testsrv_create(f->srv, f->tok, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"org-admin\",\"org_id\":%" PRId64 "}", admin,
                   f->org);
    mia = testsrv_token_for(f->srv, member, NULL);
    olga = testsrv_token_for(f->srv, admin, NULL);

    snprintf(body, sizeof(body), "{\"period\":\"2026-11\",%s}", trace);
    assert_int_equal(testsrv_req(f->srv, "POST", "/v1/whatif", mia, body, &status, &j), 0);
    assert_int_equal(status, 403);
    assert_non_null(strstr(testsrv_err_message(j), "organization admins"));
    json_decref(j);

    /* the org admin: its project only, no fleet-wide sums */
    assert_int_equal(testsrv_req(f->srv, "POST", "/v1/whatif", olga, body, &status, &j), 0);
    assert_int_equal(status, 200);
    {
        json_t *b = json_object_get(j, "baseline"), *ps = json_object_get(b, "projects");
        assert_int_equal(json_array_size(ps), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 0), "project")),
                            "vision");
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(b, "overall"), "workloads")), 1);
        assert_true(json_is_null(json_object_get(b, "idle_gpu_hours")));
        assert_null(json_object_get(j, "not_replayed"));
        char *text = json_dumps(j, 0);
        assert_null(strstr(text, "zulu"));
        free(text);
    }
    json_decref(j);

    /* another organization's project and pool read as unknown */
    snprintf(body, sizeof(body),
             "{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"quota\",\"project_id\":%" PRId64
             ",\"gpu_class_id\":%" PRId64 ",\"gpus\":1}]}",
             f->project2, f->gpu_class);
    assert_int_equal(testsrv_req(f->srv, "POST", "/v1/whatif", olga, body, &status, &j), 0);
    assert_int_equal(status, 400);
    assert_string_equal(testsrv_err_field(j), "changes[0].project_id");
    json_decref(j);
    snprintf(body, sizeof(body),
             "{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"lend_to_all\",\"pool_id\":%" PRId64
             "}]}",
             f->pool);
    assert_int_equal(testsrv_req(f->srv, "POST", "/v1/whatif", olga, body, &status, &j), 0);
    assert_int_equal(status, 400);
    assert_string_equal(testsrv_err_field(j), "changes[0].pool_id");
    json_decref(j);
    free(mia);
    free(olga);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_bodies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answers_and_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
