/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_ledger.c: who reads the preemption ledger, and what of it. An
 * entry is read by viewers of the preemptor's project and of every victim's
 * project, each with the other tenants' parts redacted (their workloads,
 * projects and quotas); a tenant that is neither does not see it; lists of
 * what a tenant may see page correctly.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "model/model.h"
#include "store/store.h"
#include "support/testsrv.h"

struct fixture {
    struct testsrv *srv;
    int64_t pa, pb, pc;       /* projects of three organizations */
    int64_t wa, wb1, wb2, wc; /* workloads: the preemptor (pa) and victims */
    int64_t e1, e2, e3;       /* e1, e3: pa preempts pb; e2: pa preempts pc */
    char *va, *vb, *vc;       /* viewers of pa, pb and pc */
};

/* A ledger entry as the engine writes it: pa's workload wa took 1000 milli from victim. */
static int64_t store_entry(struct fixture *f, int64_t victim, int64_t victim_project)
{
    const struct resource_def *d = &model_preemptions;
    struct store_conn *c = store_conn_get(f->srv->store);
    struct error_info ei = {0};
    struct arena a;
    struct row e;
    int64_t id;

    arena_init(&a);
    e = model_row_new(d, &a);
    row_set_int(&e, F_PREEMPTIONS_PREEMPTOR_ID, f->wa);
    row_set_int(&e, F_PREEMPTIONS_PROJECT_ID, f->pa);
    row_set_str(&e, &a, F_PREEMPTIONS_RULE, "reclaim");
    row_set_null(&e, F_PREEMPTIONS_GPU_CLASS_ID);
    row_set_str(&e, &a, F_PREEMPTIONS_VICTIMS,
                arena_printf(&a,
                             "[{\"workload_id\":%" PRId64 ",\"project_id\":%" PRId64
                             ",\"gpu_milli\":1000,\"lost_ms\":5000}]",
                             victim, victim_project));
    row_set_str(
        &e, &a, F_PREEMPTIONS_QUOTA_BEFORE,
        arena_printf(&a,
                     "[{\"project_id\":%" PRId64 ",\"used\":0,\"guaranteed\":1000,\"limit\":1000},"
                     "{\"project_id\":%" PRId64 ",\"used\":1000,\"guaranteed\":0,\"limit\":8000}]",
                     f->pa, victim_project));
    row_set_str(&e, &a, F_PREEMPTIONS_QUOTA_AFTER,
                arena_printf(&a,
                             "[{\"project_id\":%" PRId64
                             ",\"used\":1000,\"guaranteed\":1000,\"limit\":1000},"
                             "{\"project_id\":%" PRId64
                             ",\"used\":0,\"guaranteed\":0,\"limit\":8000}]",
                             f->pa, victim_project));
    row_set_int(&e, F_PREEMPTIONS_GPU_MILLI, 1000);
    row_set_int(&e, F_PREEMPTIONS_GRACE_MS, 30000);
    row_set_int(&e, F_PREEMPTIONS_DECIDED_MS, INT64_C(1796000000000));
    row_set_null(&e, F_PREEMPTIONS_RELEASED_MS);
    row_set_null(&e, F_PREEMPTIONS_RECLAIM_MS);
    row_set_int(&e, F_PREEMPTIONS_GPU_MS_LOST, 5000);
    assert_int_equal(store_insert(c, d, &e, &id, &ei), 0);
    store_conn_put(c);
    arena_release(&a);
    return id;
}

static char *viewer_of(struct testsrv *s, const char *name, int64_t project)
{
    int64_t uid = testsrv_create(s, s->admin_token, "users", "{\"name\":\"%s\"}", name);
    testsrv_create(s, s->admin_token, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64 "}", uid,
                   project);
    return testsrv_token_for(s, uid, NULL);
}

static int64_t project_in_new_org(struct testsrv *s, const char *name)
{
    int64_t org = testsrv_create(s, s->admin_token, "organizations", "{\"name\":\"%s\"}", name);
    return testsrv_create(s, s->admin_token, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"%s\"}",
                          org, name);
}

static int64_t workload_in(struct testsrv *s, int64_t project, int64_t flavor)
{
    return testsrv_create(s, s->admin_token, "workloads",
                          "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "}", project,
                          flavor);
}

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv *s = f->srv = testsrv_start();
    int64_t flavor = testsrv_create(s, s->admin_token, "flavors", "{\"name\":\"cpu.small\"}");

    f->pa = project_in_new_org(s, "owner");
    f->pb = project_in_new_org(s, "borrower");
    f->pc = project_in_new_org(s, "third");
    f->wa = workload_in(s, f->pa, flavor);
    f->wb1 = workload_in(s, f->pb, flavor);
    f->wb2 = workload_in(s, f->pb, flavor);
    f->wc = workload_in(s, f->pc, flavor);
    f->e1 = store_entry(f, f->wb1, f->pb);
    f->e2 = store_entry(f, f->wc, f->pc);
    f->e3 = store_entry(f, f->wb2, f->pb);
    f->va = viewer_of(s, "va", f->pa);
    f->vb = viewer_of(s, "vb", f->pb);
    f->vc = viewer_of(s, "vc", f->pc);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->va);
    free(f->vb);
    free(f->vc);
    testsrv_stop(f->srv);
    free(f);
    return 0;
}

static json_t *get_entry(struct fixture *f, const char *token, int64_t id, long want)
{
    char path[64];
    long got;
    json_t *j;
    snprintf(path, sizeof(path), "/v1/preemptions/%" PRId64, id);
    testsrv_req(f->srv, "GET", path, token, NULL, &got, &j);
    if (got != want)
        fail_msg("GET %s: %ld, not %ld: %s", path, got, want, f->srv->body);
    return j;
}

/* The project ids of an entry's quota rows (before and after), as "1,2" in order. */
static void quota_projects(json_t *entry, const char *which, char *out, size_t size)
{
    json_t *q;
    size_t i, len = 0;
    out[0] = '\0';
    json_array_foreach(json_object_get(entry, which), i, q)
    {
        len += (size_t)snprintf(out + len, size - len, "%s%" JSON_INTEGER_FORMAT, i ? "," : "",
                                json_integer_value(json_object_get(q, "project_id")));
    }
}

static void test_victim_reads_its_entry_redacted(void **state)
{
    struct fixture *f = *state;
    json_t *j = get_entry(f, f->vb, f->e1, 200), *v;
    char want[32], got[64];

    assert_true(json_is_null(json_object_get(j, "preemptor_id")));
    assert_true(json_is_null(json_object_get(j, "project_id")));
    v = json_array_get(json_object_get(j, "victims"), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "workload_id")), f->wb1);
    assert_int_equal(json_integer_value(json_object_get(v, "project_id")), f->pb);
    assert_null(json_object_get(v, "redacted"));
    snprintf(want, sizeof(want), "%" PRId64, f->pb);
    quota_projects(j, "quota_before", got, sizeof(got));
    assert_string_equal(got, want);
    quota_projects(j, "quota_after", got, sizeof(got));
    assert_string_equal(got, want);
    /* what is not another tenant's stays */
    assert_int_equal(json_integer_value(json_object_get(j, "gpu_milli")), 1000);
    assert_string_equal(json_string_value(json_object_get(j, "rule")), "reclaim");
    json_decref(j);
    json_decref(get_entry(f, f->vb, f->e2, 404));
}

static void test_preemptor_sees_victims_redacted(void **state)
{
    struct fixture *f = *state;
    json_t *j = get_entry(f, f->va, f->e1, 200), *v;
    char want[32], got[64];

    assert_int_equal(json_integer_value(json_object_get(j, "preemptor_id")), f->wa);
    assert_int_equal(json_integer_value(json_object_get(j, "project_id")), f->pa);
    v = json_array_get(json_object_get(j, "victims"), 0);
    assert_true(json_is_null(json_object_get(v, "workload_id")));
    assert_true(json_is_null(json_object_get(v, "project_id")));
    assert_true(json_is_true(json_object_get(v, "redacted")));
    assert_int_equal(json_integer_value(json_object_get(v, "gpu_milli")), 1000);
    assert_int_equal(json_integer_value(json_object_get(v, "lost_ms")), 5000);
    snprintf(want, sizeof(want), "%" PRId64, f->pa);
    quota_projects(j, "quota_before", got, sizeof(got));
    assert_string_equal(got, want);
    quota_projects(j, "quota_after", got, sizeof(got));
    assert_string_equal(got, want);
    json_decref(j);

    /* the admin reads it whole */
    j = get_entry(f, f->srv->admin_token, f->e1, 200);
    v = json_array_get(json_object_get(j, "victims"), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "workload_id")), f->wb1);
    snprintf(want, sizeof(want), "%" PRId64 ",%" PRId64, f->pa, f->pb);
    quota_projects(j, "quota_before", got, sizeof(got));
    assert_string_equal(got, want);
    json_decref(j);
}

/* The ids of /v1/preemptions walked one per page, as "1,3", following next_after. */
static void ids_by_pages(struct fixture *f, const char *token, char *out, size_t size)
{
    json_int_t after = 0;
    size_t len = 0;
    out[0] = '\0';
    for (int pages = 0; pages < 10; pages++) {
        char path[80];
        long got;
        json_t *j, *items, *next;
        bool last;
        snprintf(path, sizeof(path), "/v1/preemptions?limit=1&after=%" JSON_INTEGER_FORMAT, after);
        testsrv_req(f->srv, "GET", path, token, NULL, &got, &j);
        assert_int_equal(got, 200);
        items = json_object_get(j, "items");
        assert_true(json_array_size(items) <= 1);
        if (json_array_size(items) == 1)
            len += (size_t)snprintf(out + len, size - len, "%s%" PRId64, len ? "," : "",
                                    testsrv_id(json_array_get(items, 0)));
        next = json_object_get(j, "next_after");
        last = !json_is_integer(next);
        after = json_integer_value(next);
        json_decref(j);
        if (last)
            return;
    }
    fail_msg("more pages than entries");
}

static void test_lists_hold_what_each_may_see(void **state)
{
    struct fixture *f = *state;
    char want[64], got[64];

    /* page by page: the victim's two entries, not the third tenant's */
    ids_by_pages(f, f->vb, got, sizeof(got));
    snprintf(want, sizeof(want), "%" PRId64 ",%" PRId64, f->e1, f->e3);
    assert_string_equal(got, want);
    ids_by_pages(f, f->vc, got, sizeof(got));
    snprintf(want, sizeof(want), "%" PRId64, f->e2);
    assert_string_equal(got, want);
    assert_int_equal(testsrv_count(f->srv, f->va, "/v1/preemptions"), 3);
    /* filters still apply: project_id is the preemptor's */
    {
        char path[80];
        snprintf(path, sizeof(path), "/v1/preemptions?project_id=%" PRId64, f->pa);
        assert_int_equal(testsrv_count(f->srv, f->vb, path), 2);
        snprintf(path, sizeof(path), "/v1/preemptions?project_id=%" PRId64, f->pb);
        assert_int_equal(testsrv_count(f->srv, f->vb, path), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_victim_reads_its_entry_redacted),
        cmocka_unit_test(test_preemptor_sees_victims_redacted),
        cmocka_unit_test(test_lists_hold_what_each_may_see),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
