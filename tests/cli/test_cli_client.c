/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_client.c: the CLI's HTTP client and name resolution against a
 * scripted fake server: what goes on the wire (method, path, headers, body),
 * how answers and errors come back, and that the token never shows up in a
 * message.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli/client.h"
#include "cli/resolve.h"
#include "cli_harness.h"

static void assert_lacks(const char *text, const char *part)
{
    if (strstr(text, part))
        fail_msg("'%s' contains '%s'", text, part);
}

static void test_init_checks_url_and_token(void **state)
{
    struct client c;
    (void)state;

    assert_int_equal(client_init(&c, "http://127.0.0.1:8080///", TOKEN), 0);
    assert_string_equal(c.server, "http://127.0.0.1:8080");
    client_release(&c);
    assert_int_equal(client_init(&c, "https://gpu.example.com/base", NULL), 0);
    assert_string_equal(c.server, "https://gpu.example.com/base");
    assert_null(c.token);
    client_release(&c);

    assert_int_equal(client_init(&c, "127.0.0.1:8080", TOKEN), -1);
    assert_contains(c.err_message, "must start with http:// or https://");
    client_release(&c);
    assert_int_equal(client_init(&c, "ftp://h", TOKEN), -1);
    client_release(&c);
    assert_int_equal(client_init(&c, "http://", TOKEN), -1);
    assert_contains(c.err_message, "has no host");
    client_release(&c);
    assert_int_equal(client_init(&c, "http://u:pw@h:1", TOKEN), -1);
    assert_contains(c.err_message, "user name or password");
    assert_lacks(c.err_message, "pw");
    client_release(&c);
    assert_int_equal(client_init(&c, "http://h:1", "gpa_x y"), -1);
    assert_contains(c.err_message, "token contains spaces");
    assert_lacks(c.err_message, "gpa_x");
    client_release(&c);
    assert_int_equal(client_init(&c, "http://h:1", "gpa_x\r\nX-Evil: 1"), -1);
    client_release(&c);
}

static void test_escape(void **state)
{
    char *s = client_escape("a b/c&d=e?f%g~h.i_j-k\xc3\xa9");
    (void)state;
    assert_string_equal(s, "a%20b%2Fc%26d%3De%3Ff%25g~h.i_j-k%C3%A9");
    free(s);
}

static void test_get(void **state)
{
    static const struct fake_reply replies[] = {{200, "{\"status\":\"ok\",\"n\":[1,2]}"}};
    struct fake_http f;
    struct client c;
    json_t *j = NULL;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    assert_int_equal(client_init(&c, f.url, TOKEN), 0);
    assert_int_equal(client_request(&c, "GET", "/v1/whoami", NULL, &j), 200);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
    json_decref(j);
    client_release(&c);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 1);
    assert_true(strncmp(req(&f, 0), "GET /v1/whoami HTTP/1.1\r\n", 25) == 0);
    assert_contains(req(&f, 0), "\r\nAuthorization: Bearer " TOKEN "\r\n");
    assert_contains(req(&f, 0), "\r\nAccept: application/json\r\n");
    assert_contains(req(&f, 0), "\r\nUser-Agent: gpuaas/");
    assert_lacks(req(&f, 0), "Content-Type");
    fake_free(&f);
}

static void test_methods_and_bodies(void **state)
{
    static const struct fake_reply replies[] = {
        {201, "{\"id\":5,\"name\":\"ml\"}"},
        {200, "{\"id\":5,\"weight\":3}"},
        {204, NULL},
    };
    struct fake_http f;
    struct client c;
    json_t *body = json_pack("{s:s,s:i}", "name", "ml", "org_id", 2);
    json_t *patch = json_pack("{s:i}", "weight", 3);
    json_t *j = NULL;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    assert_int_equal(client_init(&c, f.url, NULL), 0);
    assert_int_equal(client_request(&c, "POST", "/v1/projects", body, &j), 201);
    assert_int_equal(json_integer_value(json_object_get(j, "id")), 5);
    json_decref(j);
    j = NULL;
    assert_int_equal(client_request(&c, "PATCH", "/v1/projects/5", patch, &j), 200);
    json_decref(j);
    j = (json_t *)1; /* must be set to NULL for an empty answer */
    assert_int_equal(client_request(&c, "DELETE", "/v1/projects/5", NULL, &j), 204);
    assert_null(j);
    client_release(&c);
    fake_wait(&f);

    assert_int_equal(f.n_requests, 3);
    assert_true(strncmp(req(&f, 0), "POST /v1/projects HTTP/1.1\r\n", 28) == 0);
    assert_contains(req(&f, 0), "\r\nContent-Type: application/json\r\n");
    assert_contains(req(&f, 0), "\r\n\r\n{\"name\":\"ml\",\"org_id\":2}");
    assert_lacks(req(&f, 0), "Authorization"); /* no token, no header */
    assert_lacks(req(&f, 0), "Expect:");
    assert_true(strncmp(req(&f, 1), "PATCH /v1/projects/5 HTTP/1.1\r\n", 31) == 0);
    assert_contains(req(&f, 1), "\r\n\r\n{\"weight\":3}");
    assert_true(strncmp(req(&f, 2), "DELETE /v1/projects/5 HTTP/1.1\r\n", 32) == 0);
    fake_free(&f);
    json_decref(body);
    json_decref(patch);
}

static void test_api_errors(void **state)
{
    static const struct fake_reply replies[] = {
        {400, "{\"error\":{\"code\":\"invalid_argument\",\"message\":\"field 'name' is "
              "required\",\"detail\":{\"field\":\"name\"}}}"},
        {401, "{\"error\":{\"code\":\"unauthenticated\",\"message\":\"missing, invalid or "
              "expired token\"}}"},
        {403, "{\"error\":{\"code\":\"forbidden\",\"message\":\"your role does not allow "
              "this\"}}"},
        {502, "<html>Bad Gateway</html>"},
        {200, "not json"},
    };
    struct fake_http f;
    struct client c;
    json_t *j = NULL;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    assert_int_equal(client_init(&c, f.url, TOKEN), 0);

    assert_int_equal(client_request(&c, "POST", "/v1/projects", NULL, &j), -1);
    assert_null(j);
    assert_int_equal(c.err_kind, CLIENT_ERR_HTTP);
    assert_int_equal(c.status, 400);
    assert_string_equal(c.err_code, "invalid_argument");
    assert_string_equal(c.err_message, "field 'name' is required (HTTP 400, POST /v1/projects)");
    assert_string_equal(c.err_hint, "");

    assert_int_equal(client_request(&c, "GET", "/v1/whoami", NULL, &j), -1);
    assert_int_equal(c.status, 401);
    assert_contains(c.err_message, "missing, invalid or expired token (HTTP 401");
    assert_contains(c.err_hint, "run 'gpuaas login'");

    assert_int_equal(client_request(&c, "DELETE", "/v1/users/1", NULL, &j), -1);
    assert_int_equal(c.status, 403);
    assert_contains(c.err_hint, "gpuaas whoami");

    assert_int_equal(client_request(&c, "GET", "/v1/x", NULL, &j), -1);
    assert_string_equal(c.err_message, "the server answered HTTP 502 to GET /v1/x");

    assert_int_equal(client_request(&c, "GET", "/v1/x", NULL, &j), -1);
    assert_int_equal(c.err_kind, CLIENT_ERR_PROTOCOL);
    assert_contains(c.err_message, "the answer to GET /v1/x is not JSON");
    assert_null(j);

    assert_lacks(c.err_message, TOKEN);
    client_release(&c);
    fake_wait(&f);
    fake_free(&f);
}

static void test_401_without_token(void **state)
{
    static const struct fake_reply replies[] = {{401, "{\"error\":{\"message\":\"no token\"}}"}};
    struct fake_http f;
    struct client c;
    json_t *j = NULL;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    assert_int_equal(client_init(&c, f.url, NULL), 0);
    assert_int_equal(client_request(&c, "GET", "/v1/whoami", NULL, &j), -1);
    assert_contains(c.err_hint, "no token is set; run 'gpuaas login --server URL --token TOKEN'");
    client_release(&c);
    fake_wait(&f);
    fake_free(&f);
}

static void test_connection_refused(void **state)
{
    struct client c;
    char url[64];
    char want[128];
    json_t *j = NULL;
    struct capture cap;
    char *err;
    (void)state;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake_dead_port());
    assert_int_equal(client_init(&c, url, TOKEN), 0);
    assert_int_equal(client_request(&c, "GET", "/v1/whoami", NULL, &j), -1);
    assert_int_equal(c.err_kind, CLIENT_ERR_NETWORK);
    snprintf(want, sizeof(want), "could not connect to %s: Connection refused", url);
    assert_string_equal(c.err_message, want);
    snprintf(want, sizeof(want), "is gpuaasd running at %s?", url);
    assert_string_equal(c.err_hint, want);

    capture_start(&cap, stderr);
    assert_int_equal(client_report(&c), 1);
    err = capture_end(&cap);
    assert_true(strncmp(err, "gpuaas: error: could not connect to ", 36) == 0);
    assert_contains(err, "\nhint: is gpuaasd running at ");
    assert_lacks(err, TOKEN);
    free(err);
    client_release(&c);
}

static void test_report_sanitizes(void **state)
{
    static const struct fake_reply replies[] = {
        {409, "{\"error\":{\"code\":\"conflict\",\"message\":\"name \\u001b[31mtaken\\n\"}}"}};
    struct fake_http f;
    struct client c;
    struct capture cap;
    json_t *j = NULL;
    char *err;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    assert_int_equal(client_init(&c, f.url, TOKEN), 0);
    assert_int_equal(client_request(&c, "POST", "/v1/orgs", NULL, &j), -1);
    capture_start(&cap, stderr);
    client_report(&c);
    err = capture_end(&cap);
    assert_string_equal(err, "gpuaas: error: name ?[31mtaken? (HTTP 409, POST /v1/orgs)\n");
    free(err);
    client_release(&c);
    fake_wait(&f);
    fake_free(&f);
}

/* ---- resolution ---- */

static void test_resolve(void **state)
{
    static const struct fake_reply replies[] = {
        /* organizations?name=acme */
        {200, "{\"items\":[{\"id\":7,\"name\":\"acme\"}],\"next_after\":null}"},
        /* projects?name=ml: two */
        {200, "{\"items\":[{\"id\":4,\"name\":\"ml\"},{\"id\":5,\"name\":\"ml\"}],"
              "\"next_after\":5}"},
        /* acme/ml: the org, then the project within it */
        {200, "{\"items\":[{\"id\":7,\"name\":\"acme\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":4,\"name\":\"ml\"}],\"next_after\":null}"},
        /* clusters?name=nope */
        {200, "{\"items\":[],\"next_after\":null}"},
        /* users?name=a%20b: a server error */
        {500, "{\"error\":{\"code\":\"internal\",\"message\":\"boom\"}}"},
    };
    struct fake_http f;
    struct client c;
    char err[256] = "";
    int64_t id = 0;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    assert_int_equal(client_init(&c, f.url, TOKEN), 0);

    assert_int_equal(resolve_id(&c, &model_organizations, "acme", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 7);
    assert_int_equal(resolve_id(&c, &model_projects, "ml", &id, err, sizeof(err)), ERR_CONFLICT);
    assert_string_equal(err, "project 'ml' is ambiguous; give its id, or write it as ORG/ml");
    assert_int_equal(resolve_id(&c, &model_projects, "acme/ml", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 4);
    assert_int_equal(resolve_id(&c, &model_clusters, "nope", &id, err, sizeof(err)), ERR_NOT_FOUND);
    assert_string_equal(err, "no cluster named 'nope'");
    assert_int_equal(resolve_id(&c, &model_users, "a b", &id, err, sizeof(err)), ERR_IO);
    assert_int_equal(c.status, 500);

    /* no requests for these */
    assert_int_equal(resolve_id(&c, &model_gpus, "42", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 42);
    assert_int_equal(resolve_id(&c, &model_gpus, "0", &id, err, sizeof(err)), ERR_INVALID);
    assert_int_equal(resolve_id(&c, &model_tokens, "ci", &id, err, sizeof(err)), ERR_INVALID);
    assert_string_equal(err, "tokens are known by id only, and 'ci' is not an id");
    assert_int_equal(resolve_id(&c, &model_quotas, "q", &id, err, sizeof(err)), ERR_INVALID);

    client_release(&c);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 6);
    assert_contains(req(&f, 0), "GET /v1/organizations?name=acme&limit=2 ");
    assert_contains(req(&f, 1), "GET /v1/projects?name=ml&limit=2 ");
    assert_contains(req(&f, 2), "GET /v1/organizations?name=acme&limit=2 ");
    assert_contains(req(&f, 3), "GET /v1/projects?name=ml&org_id=7&limit=2 ");
    assert_contains(req(&f, 4), "GET /v1/clusters?name=nope&limit=2 ");
    assert_contains(req(&f, 5), "GET /v1/users?name=a%20b&limit=2 ");
    fake_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_checks_url_and_token),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_methods_and_bodies),
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_401_without_token),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_report_sanitizes),
        cmocka_unit_test(test_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
