/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_routes.c: the route table and the resource hooks as data, then
 * the router on a live server. Every entry of the table is well formed (an
 * admins-only route has its 403 message, JSON schemas parse, no method and
 * path twice); every resource with a hook that the OpenAPI document
 * describes says what it adds. The router reads {id} with the strict path-id
 * parser (a leading zero, a sign or a letter is no route), refuses a
 * non-admin on an admins-only route with that route's message before the
 * handler runs, and answers a method a sub-route lacks with 405 and Allow.
 */
#include "base/common.h"

#include <setjmp.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "api/api-int.h"
#include "support/testsrv.h"

static void test_table_well_formed(void **state)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
    (void)state;

    assert_true(routes_n > 0);
    for (size_t i = 0; i < routes_n; i++) {
        const struct route *rt = &routes[i];
        bool known = false;

        for (size_t k = 0; k < ARRAY_SIZE(methods); k++)
            known |= strcmp(rt->method, methods[k]) == 0;
        if (!known || rt->path[0] != '/' || !rt->fn || !rt->summary)
            fail_msg("route %zu (%s %s) is incomplete", i, rt->method, rt->path);
        if (rt->least == ROLE_ADMIN && !rt->denied)
            fail_msg("%s %s is for admins but has no 403 message", rt->method, rt->path);
        if (rt->op && !rt->object)
            fail_msg("%s %s has an operation id without its object", rt->method, rt->path);
        if (rt->no_token && rt->least != ROLE_NONE)
            fail_msg("%s %s needs no token but a role", rt->method, rt->path);
        for (const struct route_param *p = rt->query; p && p->name; p++) {
            json_t *j = json_loads(p->schema, 0, NULL);
            if (!json_is_object(j))
                fail_msg("%s %s: parameter %s: schema is not JSON", rt->method, rt->path, p->name);
            json_decref(j);
        }
        if (rt->body && rt->request_body)
            fail_msg("%s %s has two request bodies", rt->method, rt->path);
        if (rt->body) {
            json_t *j = json_loads(rt->body, 0, NULL);
            if (!json_is_object(j))
                fail_msg("%s %s: body schema is not JSON", rt->method, rt->path);
            json_decref(j);
        }
        for (size_t k = 0; k < i; k++) {
            if (strcmp(routes[k].method, rt->method) == 0 && strcmp(routes[k].path, rt->path) == 0)
                fail_msg("%s %s is in the table twice", rt->method, rt->path);
        }
    }
}

static void test_hooks_described(void **state)
{
    (void)state;
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        const struct resource_hooks *h = resource_hooks_of(def);

        assert_non_null(h);
        if (h->retire && (!h->retire_verb || !h->retired))
            fail_msg("%s: a retiring delete without its verb", def->name);
        if (h->same_create && !h->check_create)
            fail_msg("%s: documents a repeated create nothing answers", def->name);
        if (h->reveal.name && !h->fill)
            fail_msg("%s: documents a secret nothing reveals", def->name);
        if (h->computed.name && !h->decorate)
            fail_msg("%s: documents a computed field nothing computes", def->name);
    }
    /* resources without rules of their own get the empty table */
    assert_null(resource_hooks_of(&model_audit)->decorate);
}

struct fixture {
    struct testsrv *srv;
    int64_t workload;
    char *viewer; /* a viewer of the workload's project */
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv *s = f->srv = testsrv_start();
    const char *adm = s->admin_token;
    int64_t org, project, flavor, uid;

    org = testsrv_create(s, adm, "organizations", "{\"name\":\"acme\"}");
    project = testsrv_create(s, adm, "projects", "{\"name\":\"web\",\"org_id\":%" PRId64 "}", org);
    flavor = testsrv_create(s, adm, "flavors", "{\"name\":\"cpu.small\"}");
    f->workload =
        testsrv_create(s, adm, "workloads",
                       "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "}", project, flavor);
    uid = testsrv_create(s, adm, "users", "{\"name\":\"vic\"}");
    testsrv_create(s, adm, "role-bindings",
                   "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64 "}", uid,
                   project);
    f->viewer = testsrv_token_for(s, uid, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    testsrv_stop(f->srv);
    free(f->viewer);
    free(f);
    return 0;
}

static void test_path_ids_strict(void **state)
{
    struct fixture *f = *state;
    const char *adm = f->srv->admin_token;
    static const char *const bad[] = {"0", "01", "+1", "-1", "1x", "x", "99999999999999999999"};
    char path[96];
    json_t *j = NULL;
    long got;

    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64 "/logs", f->workload);
    testsrv_expect(f->srv, "GET", path, adm, NULL, 200);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        snprintf(path, sizeof(path), "/v1/workloads/%s/logs", bad[i]);
        testsrv_req(f->srv, "GET", path, adm, NULL, &got, &j);
        assert_int_equal(got, 404);
        assert_string_equal(testsrv_err_code(j), "not_found");
        json_decref(j);
        j = NULL;
    }
    /* a path the pattern does not end with is no route either */
    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64 "/logs/", f->workload);
    testsrv_expect(f->srv, "GET", path, adm, NULL, 404);
    /* an unauthenticated sub-route is 401 before anything else */
    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64 "/logs", f->workload);
    testsrv_expect(f->srv, "GET", path, NULL, NULL, 401);
}

static void test_admin_routes_refused_before_handler(void **state)
{
    struct fixture *f = *state;
    json_t *j = NULL;
    long got;

    for (size_t i = 0; i < routes_n; i++) {
        const struct route *rt = &routes[i];
        char path[128];
        const char *id = strstr(rt->path, "{id}");

        if (rt->least != ROLE_ADMIN)
            continue;
        /* an id of nothing: the 403 comes before the handler would look */
        if (id)
            snprintf(path, sizeof(path), "%.*s987654%s", (int)(id - rt->path), rt->path, id + 4);
        else
            snprintf(path, sizeof(path), "%s", rt->path);
        testsrv_req(f->srv, rt->method, path, f->viewer, strcmp(rt->method, "GET") ? "{}" : NULL,
                    &got, &j);
        if (got != 403 || strcmp(testsrv_err_message(j), rt->denied) != 0)
            fail_msg("%s %s as a viewer: want 403 '%s', got %ld: %s", rt->method, path, rt->denied,
                     got, f->srv->body);
        json_decref(j);
        j = NULL;
    }
}

static size_t on_header(char *data, size_t size, size_t n, void *p)
{
    char *allow = p;
    size_t len = size * n;

    if (len > 6 && strncasecmp(data, "Allow:", 6) == 0)
        snprintf(allow, 64, "%.*s", (int)(len - 6), data + 6);
    return len;
}

static size_t discard(char *data, size_t size, size_t n, void *p)
{
    (void)data;
    (void)p;
    return size * n;
}

/* The Allow header of a request's answer ("" when none), trimmed. */
static long allow_of(struct testsrv *srv, const char *method, const char *path, const char *token,
                     char allow[64])
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char url[256], auth[256];
    long status = -1;

    allow[0] = '\0';
    snprintf(url, sizeof(url), "%s%s", srv->base_url, path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    h = curl_slist_append(h, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, allow);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    for (size_t n = strlen(allow); n > 0 && (allow[n - 1] == '\r' || allow[n - 1] == '\n'); n--)
        allow[n - 1] = '\0';
    return status;
}

static void test_sub_route_405_has_allow(void **state)
{
    struct fixture *f = *state;
    char path[96], allow[64];

    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64 "/cancel", f->workload);
    assert_int_equal(allow_of(f->srv, "GET", path, f->srv->admin_token, allow), 405);
    assert_string_equal(allow, " POST");
    assert_int_equal(
        allow_of(f->srv, "DELETE", "/v1/invoices/5/export", f->srv->admin_token, allow), 405);
    assert_string_equal(allow, " GET");
    assert_int_equal(allow_of(f->srv, "GET", "/v1/invoices/5/pay", f->srv->admin_token, allow),
                     405);
    assert_string_equal(allow, " POST");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_well_formed),
        cmocka_unit_test(test_hooks_described),
        cmocka_unit_test_setup_teardown(test_path_ids_strict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_routes_refused_before_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sub_route_405_has_allow, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
