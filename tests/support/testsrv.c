/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testsrv.c: the in-process API server the integration tests drive (see
 * testsrv.h): a temporary SQLite store, the bootstrap admin, the API on a
 * free loopback port, and a libcurl client that keeps one connection open.
 */
#include "base/common.h"

#include <setjmp.h>
#include <strings.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "api/api.h"
#include "engine/engine.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/store.h"
#include "support/testsrv.h"
#include "support/teststore.h"

#define MAX_RESPONSE (64u << 20)

/* ---- start and stop ---- */

struct testsrv *testsrv_start(void)
{
    struct testsrv_options opt = {0};
    return testsrv_start_with(&opt);
}

struct testsrv *testsrv_start_with(const struct testsrv_options *opt)
{
    struct testsrv *srv = xcalloc(1, sizeof(*srv));
    struct store_options sopt = {.n_conns = 5, .busy_timeout_ms = 5000, .sqlite_sync_full = false};
    struct engine_options eopt;
    struct api_options aopt;
    struct error_info ei = {0};
    const char *tmp = getenv("TMPDIR");
    char db[320];

    /* 4xx replies are logged at info level: thousands of lines would bury a failure. */
    log_set_level(LOG_WARN);
    snprintf(srv->dir, sizeof(srv->dir), "%s/gpuaas-apitest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(srv->dir))
        fail_msg("could not make a temporary directory '%s': %s", srv->dir, strerror(errno));
    snprintf(db, sizeof(db), "%s/gpuaas.db", srv->dir);
    if (store_open(db, &sopt, &srv->store, &ei) < 0) {
        teststore_remove_dir(srv->dir);
        fail_msg("could not open the store: %s", ei.message);
    }
    if (api_bootstrap(srv->store, &srv->admin_token, &ei) < 0 || !srv->admin_token) {
        store_close(srv->store);
        teststore_remove_dir(srv->dir);
        fail_msg("bootstrap failed: %s", ei.code ? ei.message : "no token on a fresh store");
    }
    /* The real scheduler engine: submitted work is scheduled (on no fleet, it stays queued). */
    engine_options_init(&eopt);
    if (engine_start(srv->store, &eopt, &srv->engine, &ei) < 0) {
        store_close(srv->store);
        teststore_remove_dir(srv->dir);
        fail_msg("could not start the engine: %s", ei.message);
    }
    api_options_init(&aopt);
    aopt.engine = srv->engine;
    aopt.bind_addr = "127.0.0.1";
    aopt.port = 0;
    aopt.threads = opt->threads > 0 ? opt->threads : 2;
    if (opt->max_body_bytes)
        aopt.max_body_bytes = opt->max_body_bytes;
    aopt.conn_timeout_s = 30;
    if (api_start(srv->store, &aopt, &srv->api, &ei) < 0) {
        engine_stop(srv->engine);
        store_close(srv->store);
        teststore_remove_dir(srv->dir);
        fail_msg("could not start the API: %s", ei.message);
    }
    snprintf(srv->base_url, sizeof(srv->base_url), "http://127.0.0.1:%d", api_port(srv->api));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    srv->curl = curl_easy_init();
    assert_non_null(srv->curl);
    return srv;
}

void testsrv_stop(struct testsrv *srv)
{
    if (!srv)
        return;
    if (srv->curl) {
        curl_easy_cleanup(srv->curl);
        curl_global_cleanup();
    }
    api_stop(srv->api);
    engine_stop(srv->engine);
    store_close(srv->store);
    teststore_remove_dir(srv->dir);
    free(srv->admin_token);
    free(srv->body);
    free(srv);
}

/* ---- requests ---- */

struct sink {
    struct testsrv *srv;
    char *data;
    size_t len, cap;
    bool overflow;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct sink *s = userdata;
    size_t n = size * nmemb;

    if (s->len + n + 1 > MAX_RESPONSE) {
        s->overflow = true;
        return 0;
    }
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->data = xreallocarray(s->data, s->cap, 1);
    }
    memcpy(s->data + s->len, ptr, n);
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

/* Copies a header's value (trimmed) when the line is "name: value". */
static void grab_header(const char *line, size_t len, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    if (len <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    line += nl + 1;
    len -= nl + 1;
    while (len > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        len--;
    }
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
        len--;
    snprintf(out, size, "%.*s", (int)len, line);
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct testsrv *srv = userdata;
    size_t n = size * nmemb;
    grab_header(ptr, n, "X-Request-Id", srv->request_id, sizeof(srv->request_id));
    grab_header(ptr, n, "Content-Type", srv->content_type, sizeof(srv->content_type));
    return n;
}

struct upload {
    const char *data;
    size_t len, off;
};

static size_t on_read(char *buffer, size_t size, size_t nitems, void *userdata)
{
    struct upload *u = userdata;
    size_t n = size * nitems;
    /* Small pieces, so the server really sees several chunks. */
    if (n > 1000)
        n = 1000;
    if (n > u->len - u->off)
        n = u->len - u->off;
    memcpy(buffer, u->data + u->off, n);
    u->off += n;
    return n;
}

static bool has_header(const char *const *headers, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; headers && headers[i]; i++) {
        if (strncasecmp(headers[i], name, nl) == 0 && headers[i][nl] == ':')
            return true;
    }
    return false;
}

int testsrv_req_raw(struct testsrv *srv, const struct testsrv_raw *req, long *ret_status)
{
    CURL *c = srv->curl;
    struct curl_slist *hdrs = NULL;
    struct sink sink = {.srv = srv};
    struct upload up = {req->body, req->body_len, 0};
    char url[2048], auth[512];
    CURLcode cc;
    long status = 0;

    snprintf(url, sizeof(url), "%s%s", srv->base_url, req->path);
    srv->request_id[0] = '\0';
    srv->content_type[0] = '\0';
    free(srv->body);
    srv->body = NULL;
    srv->body_len = 0;

    /* Reset keeps the live connection, so every request reuses it. */
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, srv);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    if (strcmp(req->method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);

    if (req->authorization) {
        snprintf(auth, sizeof(auth), "Authorization: %s", req->authorization);
        hdrs = curl_slist_append(hdrs, auth);
    } else if (req->token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", req->token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    for (size_t i = 0; req->headers && req->headers[i]; i++)
        hdrs = curl_slist_append(hdrs, req->headers[i]);
    /* No "Expect: 100-continue" round trip. */
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (req->body) {
        if (!has_header(req->headers, "Content-Type"))
            hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        if (req->chunked) {
            hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
            curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(c, CURLOPT_READDATA, &up);
        } else {
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
        }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);

    cc = curl_easy_perform(c);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK || sink.overflow) {
        fprintf(stderr, "testsrv: %s %s failed: %s\n", req->method, req->path,
                sink.overflow ? "response too large" : curl_easy_strerror(cc));
        free(sink.data);
        *ret_status = -1;
        return -1;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    srv->body = sink.data ? sink.data : xstrdup("");
    srv->body_len = sink.len;
    *ret_status = status;
    return 0;
}

int testsrv_req(struct testsrv *srv, const char *method, const char *path, const char *token,
                const char *body, long *ret_status, json_t **ret_json)
{
    struct testsrv_raw req = {
        .method = method,
        .path = path,
        .token = token,
        .body = body,
        .body_len = body ? strlen(body) : 0,
    };
    int rc = testsrv_req_raw(srv, &req, ret_status);

    if (ret_json) {
        *ret_json = NULL;
        if (rc == 0 && srv->body_len > 0)
            *ret_json = json_loadb(srv->body, srv->body_len, 0, NULL);
    }
    return rc;
}

long testsrv_status(struct testsrv *srv, const char *method, const char *path, const char *token,
                    const char *body)
{
    long status;
    testsrv_req(srv, method, path, token, body, &status, NULL);
    return status;
}

void testsrv_expect(struct testsrv *srv, const char *method, const char *path, const char *token,
                    const char *body, long want)
{
    long status;
    testsrv_req(srv, method, path, token, body, &status, NULL);
    if (status != want)
        fail_msg("%s %s%s%s: want %ld, got %ld: %s", method, path, body ? " " : "",
                 body ? body : "", want, status, srv->body ? srv->body : "");
}

static json_t *vcreate(struct testsrv *srv, const char *token, const char *resource,
                       const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

static json_t *vcreate(struct testsrv *srv, const char *token, const char *resource,
                       const char *fmt, va_list ap)
{
    char path[128], body[8192];
    long status;
    json_t *j;
    int n = vsnprintf(body, sizeof(body), fmt, ap);

    assert_true(n >= 0 && (size_t)n < sizeof(body));
    snprintf(path, sizeof(path), "/v1/%s", resource);
    testsrv_req(srv, "POST", path, token, body, &status, &j);
    if (status != 201 || !json_is_object(j))
        fail_msg("POST %s %s: want 201, got %ld: %s", path, body, status,
                 srv->body ? srv->body : "");
    return j;
}

json_t *testsrv_create_json(struct testsrv *srv, const char *token, const char *resource,
                            const char *fmt, ...)
{
    va_list ap;
    json_t *j;
    va_start(ap, fmt);
    j = vcreate(srv, token, resource, fmt, ap);
    va_end(ap);
    return j;
}

int64_t testsrv_create(struct testsrv *srv, const char *token, const char *resource,
                       const char *fmt, ...)
{
    va_list ap;
    json_t *j;
    int64_t id;
    va_start(ap, fmt);
    j = vcreate(srv, token, resource, fmt, ap);
    va_end(ap);
    id = testsrv_id(j);
    json_decref(j);
    assert_true(id > 0);
    return id;
}

int64_t testsrv_insert(struct testsrv *srv, const struct resource_def *def, const char *fmt, ...)
{
    struct store_conn *c = store_conn_get(srv->store);
    struct error_info ei = {0};
    struct arena a;
    struct row row;
    char *text = NULL;
    json_t *body;
    int64_t id = 0;
    va_list ap;
    int i;

    va_start(ap, fmt);
    assert_true(vasprintf(&text, fmt, ap) >= 0);
    va_end(ap);
    body = json_loads(text, 0, NULL);
    if (!body)
        fail_msg("testsrv_insert: not JSON: %s", text);
    arena_init(&a);
    if (model_decode(def, body, DECODE_CREATE, &a, &row, &ei) < 0)
        fail_msg("testsrv_insert: %s", ei.message);
    if ((i = model_field_index(def, "created_at")) >= 0)
        row_set_int(&row, i, time_now_s());
    if ((i = model_field_index(def, "updated_at")) >= 0)
        row_set_int(&row, i, time_now_s());
    if (store_insert(c, def, &row, &id, &ei) < 0)
        fail_msg("testsrv_insert into %s: %s", def->name, ei.message);
    store_conn_put(c);
    arena_release(&a);
    json_decref(body);
    free(text);
    return id;
}

char *testsrv_token_for(struct testsrv *srv, int64_t user_id, int64_t *ret_id)
{
    json_t *j = testsrv_create_json(srv, srv->admin_token, "tokens",
                                    "{\"user_id\":%" PRId64 ",\"name\":\"test\"}", user_id);
    const char *secret = json_string_value(json_object_get(j, "token"));
    char *copy;

    if (!secret)
        fail_msg("a created token carries no 'token' member");
    copy = xstrdup(secret);
    if (ret_id)
        *ret_id = testsrv_id(j);
    json_decref(j);
    return copy;
}

size_t testsrv_list_ids(struct testsrv *srv, const char *token, const char *path, int64_t **ret_ids)
{
    int64_t *ids = NULL, after = 0;
    size_t n = 0, cap = 0;
    const char *sep = strchr(path, '?') ? "&" : "?";

    for (int page = 0; page < 100000; page++) {
        char url[1024];
        long status;
        json_t *j, *items, *next, *item;
        size_t i;

        if (after > 0)
            snprintf(url, sizeof(url), "%s%slimit=1000&after=%" PRId64, path, sep, after);
        else
            snprintf(url, sizeof(url), "%s%slimit=1000", path, sep);
        testsrv_req(srv, "GET", url, token, NULL, &status, &j);
        if (status != 200 || !json_is_object(j))
            fail_msg("GET %s: want 200, got %ld: %s", url, status, srv->body ? srv->body : "");
        items = json_object_get(j, "items");
        next = json_object_get(j, "next_after");
        assert_true(json_is_array(items));
        json_array_foreach(items, i, item)
        {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                ids = xreallocarray(ids, cap, sizeof(*ids));
            }
            ids[n++] = testsrv_id(item);
        }
        if (!json_is_integer(next)) {
            json_decref(j);
            break;
        }
        after = json_integer_value(next);
        json_decref(j);
    }
    *ret_ids = ids;
    return n;
}

size_t testsrv_count(struct testsrv *srv, const char *token, const char *path)
{
    int64_t *ids;
    size_t n = testsrv_list_ids(srv, token, path, &ids);
    free(ids);
    return n;
}

static const char *err_member(json_t *resp, const char *name)
{
    json_t *e = json_object_get(resp, "error");
    const char *s = json_string_value(json_object_get(e, name));
    return s ? s : "";
}

const char *testsrv_err_code(json_t *resp)
{
    return err_member(resp, "code");
}

const char *testsrv_err_message(json_t *resp)
{
    return err_member(resp, "message");
}

const char *testsrv_err_field(json_t *resp)
{
    json_t *detail = json_object_get(json_object_get(resp, "error"), "detail");
    const char *s = json_string_value(json_object_get(detail, "field"));
    return s ? s : "";
}

int64_t testsrv_id(json_t *obj)
{
    json_t *id = json_object_get(obj, "id");
    return json_is_integer(id) ? (int64_t)json_integer_value(id) : -1;
}
