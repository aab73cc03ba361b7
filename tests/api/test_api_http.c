/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP edge: request framing that a proxy could read differently
 * (duplicate Content-Length, Content-Length with Transfer-Encoding) is 400
 * and changes nothing; path ids are read strictly; and a store failure (a
 * full disk) is a 500 store_error that is logged at level error.
 */
#include "base/common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <cmocka.h>

#include "store/store-int.h"
#include "support/testsrv.h"

static int setup(void **state)
{
    *state = testsrv_start();
    return 0;
}

static int teardown(void **state)
{
    testsrv_stop(*state);
    return 0;
}

/*
 * Sends text as it is on a new connection and reads the reply until the
 * server closes; returns the status of its first line (-1 when none). The
 * whole reply is left in reply.
 */
static int raw_exchange(struct testsrv *srv, const char *text, char *reply, size_t size)
{
    const char *colon = strrchr(srv->base_url, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct timeval tv = {.tv_sec = 20};
    size_t got = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;

    assert_true(fd >= 0);
    sa.sin_port = htons((uint16_t)strtol(colon + 1, NULL, 10));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
    for (;;) {
        ssize_t n = recv(fd, reply + got, size - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    reply[got] = '\0';
    close(fd);
    sscanf(reply, "HTTP/1.1 %d", &status);
    return status;
}

static size_t count_orgs(struct testsrv *srv)
{
    return testsrv_count(srv, srv->admin_token, "/v1/organizations");
}

static void test_ambiguous_framing(void **state)
{
    struct testsrv *srv = *state;
    char req[1024], reply[4096];
    const char *body = "{\"name\":\"smuggled\"}";
    size_t before = count_orgs(srv);

    snprintf(req, sizeof(req),
             "POST /v1/organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\nContent-Length: %zu\r\n"
             "\r\n%s",
             srv->admin_token, strlen(body), strlen(body), body);
    assert_int_equal(raw_exchange(srv, req, reply, sizeof(reply)), 400);
    assert_non_null(strstr(reply, "more than one Content-Length"));

    snprintf(req, sizeof(req),
             "POST /v1/organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n"
             "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%s\r\n0\r\n\r\n",
             srv->admin_token, strlen(body), strlen(body), body);
    assert_int_equal(raw_exchange(srv, req, reply, sizeof(reply)), 400);
    assert_non_null(strstr(reply, "both Content-Length and Transfer-Encoding"));
    assert_int_equal(count_orgs(srv), before);

    /* The same request with one Content-Length is served. */
    snprintf(req, sizeof(req),
             "POST /v1/organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n"
             "\r\n%s",
             srv->admin_token, strlen(body), body);
    assert_int_equal(raw_exchange(srv, req, reply, sizeof(reply)), 201);
    assert_int_equal(count_orgs(srv), before + 1);
}

static const char *workload_state(struct testsrv *srv, int64_t id, json_t **ret_j)
{
    char path[64];
    long status;

    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64, id);
    assert_int_equal(testsrv_req(srv, "GET", path, srv->admin_token, NULL, &status, ret_j), 0);
    assert_int_equal(status, 200);
    return json_string_value(json_object_get(*ret_j, "state"));
}

/* "21%20" arrives as "21 ": not workload 21, nor is "+21", "021", "21x" or a huge number. */
static void test_path_ids_are_strict(void **state)
{
    struct testsrv *srv = *state;
    const char *t = srv->admin_token;
    int64_t org = testsrv_create(srv, t, "organizations", "{\"name\":\"ids\"}");
    int64_t prj =
        testsrv_create(srv, t, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"p\"}", org);
    int64_t flv = testsrv_create(srv, t, "flavors", "{\"name\":\"cpu.ids\",\"vcpus\":1}");
    int64_t wl = testsrv_create(srv, t, "workloads",
                                "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64 "}", prj, flv);
    char id[8][32], path[320];
    json_t *j;
    long status;

    snprintf(id[0], sizeof(id[0]), "%" PRId64 "%%20", wl);
    snprintf(id[1], sizeof(id[1]), "+%" PRId64, wl);
    snprintf(id[2], sizeof(id[2]), "0%" PRId64, wl);
    snprintf(id[3], sizeof(id[3]), "%" PRId64 "x", wl);
    snprintf(id[4], sizeof(id[4]), "%%20%" PRId64, wl);
    snprintf(id[5], sizeof(id[5]), "-%" PRId64, wl);
    snprintf(id[6], sizeof(id[6]), "%" PRId64 "%%09", wl);
    for (size_t i = 0; i < 7; i++) {
        snprintf(path, sizeof(path), "/v1/workloads/%s/cancel", id[i]);
        assert_int_equal(testsrv_status(srv, "POST", path, t, NULL), 404);
        snprintf(path, sizeof(path), "/v1/workloads/%s", id[i]);
        assert_int_equal(testsrv_status(srv, "GET", path, t, NULL), 404);
        snprintf(path, sizeof(path), "/v1/organizations/%s", id[i]);
        assert_int_equal(testsrv_status(srv, "GET", path, t, NULL), 404);
    }
    assert_int_equal(
        testsrv_status(srv, "POST", "/v1/workloads/99999999999999999999/cancel", t, NULL), 404);
    assert_int_equal(testsrv_status(srv, "GET", "/v1/invoices/1%20/verify", t, NULL), 404);
    assert_string_not_equal(workload_state(srv, wl, &j), "cancelled");
    json_decref(j);
    /* nothing but its creation was audited: no request above reached the workload */
    snprintf(path, sizeof(path), "/v1/audit?resource=workloads&object_id=%" PRId64, wl);
    assert_int_equal(testsrv_count(srv, t, path), 1);

    /* The well-formed id reaches the workload (202, or 409 if the engine ended it already). */
    snprintf(path, sizeof(path), "/v1/workloads/%" PRId64 "/cancel", wl);
    status = testsrv_status(srv, "POST", path, t, NULL);
    assert_true(status == 202 || status == 409);
}

/* Runs fn with stderr (where the log goes) in a file, and returns what was written (caller frees).
 */
static char *capture_log(struct testsrv *srv, long (*fn)(struct testsrv *))
{
    char path[300], *text;
    int saved = dup(2), fd;
    long size;
    FILE *f;

    snprintf(path, sizeof(path), "%s/captured.log", srv->dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
    assert_int_equal(fn(srv), 500);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)size + 1);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return text;
}

/* Creates organizations until the store answers other than 201; returns that status. */
static long fill_store(struct testsrv *srv)
{
    char body[256];
    long status = 201;

    for (int i = 0; i < 10000 && status == 201; i++) {
        snprintf(body, sizeof(body), "{\"name\":\"filler-%d\",\"cost_center\":\"%0100d\"}", i, i);
        status = testsrv_status(srv, "POST", "/v1/organizations", srv->admin_token, body);
    }
    return status;
}

/*
 * A full disk, as SQLite's max_page_count makes one: 500 store_error with
 * SQLite's reason, logged at level error so an operator sees it.
 */
static void test_store_full_is_logged_as_error(void **state)
{
    struct testsrv *srv = *state;
    struct store_conn *conns[16];
    size_t n = 0;
    struct store__params none = {.n = 0};
    char *log;
    json_t *j;
    long status;

    /* Every pooled connection the API may use, the engine's one aside. */
    for (n = 0; n < 4; n++) {
        int64_t pages = 0;
        char sql[64];
        conns[n] = store_conn_get(srv->store);
        assert_int_equal(store__run(conns[n], "PRAGMA page_count", &none, &pages, NULL), 0);
        snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %" PRId64, pages + 2);
        assert_int_equal(store__exec(conns[n], sql, NULL), 0);
    }
    while (n > 0)
        store_conn_put(conns[--n]);

    log = capture_log(srv, fill_store);
    assert_non_null(strstr(log, "level=error msg=\"request failed\""));
    assert_non_null(strstr(log, "status=500"));
    assert_non_null(strstr(log, "full"));
    free(log);
    assert_int_equal(
        testsrv_req(srv, "POST", "/v1/organizations", srv->admin_token,
                    "{\"name\":\"one-more\",\"cost_center\":\""
                    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
                    &status, &j),
        0);
    assert_int_equal(status, 500);
    assert_string_equal(testsrv_err_code(j), "store_error");
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ambiguous_framing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_ids_are_strict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_full_is_logged_as_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
