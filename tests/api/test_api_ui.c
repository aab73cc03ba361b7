/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_ui.c: the dashboard's files as the server sends them. Every file
 * of src/web is compiled in byte for byte and served at /ui/<name> without a
 * token, with its media type, an ETag that gives 304, no-cache and a strict
 * Content-Security-Policy (scripts only from the server, no inline script,
 * the one inline style allowed being the invoice export's, by its hash);
 * / and /ui redirect to /ui/; unknown files are 404 and other methods 405;
 * the API itself still wants a token. The files refer only to files that
 * exist.
 */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <sodium.h>

#include "api/api-int.h"
#include "billing/billing.h"
#include "support/testsrv.h"

struct resp {
    long status;
    char headers[4096];
    size_t headers_len;
    char *body;
    size_t body_len;
};

static size_t on_header(char *data, size_t size, size_t n, void *p)
{
    struct resp *r = p;
    size_t len = size * n;
    size_t room = sizeof(r->headers) - 1 - r->headers_len;
    size_t take = len < room ? len : room;

    memcpy(r->headers + r->headers_len, data, take);
    r->headers_len += take;
    r->headers[r->headers_len] = '\0';
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *p)
{
    struct resp *r = p;
    size_t len = size * n;

    r->body = xreallocarray(r->body, r->body_len + len + 1, 1);
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return len;
}

/* One request with its own handle (so that no redirect is followed and headers are kept). */
static void request(struct testsrv *srv, const char *method, const char *path, const char *header,
                    struct resp *r)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
    char url[512];

    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "%s%s", srv->base_url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void resp_release(struct resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* The value of a response header (case-insensitive name), copied into out; false when absent. */
static bool header_value(const struct resp *r, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    const char *p = r->headers;

    while (p && *p) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            size_t len;
            while (*v == ' ')
                v++;
            len = strcspn(v, "\r\n");
            snprintf(out, size, "%.*s", (int)len, v);
            return true;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return false;
}

static void expect_header(const struct resp *r, const char *name, const char *want)
{
    char got[1024];
    if (!header_value(r, name, got, sizeof(got)))
        fail_msg("no %s header in:\n%s", name, r->headers);
    if (strcmp(got, want) != 0)
        fail_msg("%s: expected '%s', got '%s'", name, want, got);
}

static const struct ui_asset *asset(const char *name)
{
    for (size_t i = 0; i < ui_n_assets; i++) {
        if (strcmp(ui_assets[i].name, name) == 0)
            return &ui_assets[i];
    }
    return NULL;
}

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

static void test_index_with_policy(void **state)
{
    struct testsrv *srv = *state;
    struct resp r;
    char csp[1024], style_src[256], b64[64];
    unsigned char hash[crypto_hash_sha256_BYTES];
    const char *style = billing_export_html_style();

    request(srv, "GET", "/ui/", NULL, &r);
    assert_int_equal(r.status, 200);
    expect_header(&r, "Content-Type", "text/html; charset=utf-8");
    expect_header(&r, "Cache-Control", "no-cache");
    expect_header(&r, "X-Content-Type-Options", "nosniff");
    expect_header(&r, "Referrer-Policy", "no-referrer");
    assert_non_null(strstr(r.body, "<script type=\"module\" src=\"app.js\"></script>"));
    assert_non_null(strstr(r.body, "<main id=\"main\""));
    assert_true(header_value(&r, "Content-Security-Policy", csp, sizeof(csp)));
    assert_non_null(strstr(csp, "default-src 'none'"));
    assert_non_null(strstr(csp, "script-src 'self';"));
    assert_non_null(strstr(csp, "connect-src 'self'"));
    assert_non_null(strstr(csp, "frame-ancestors 'none'"));
    assert_null(strstr(csp, "unsafe-inline"));
    assert_null(strstr(csp, "unsafe-eval"));
    /* The one inline style allowed is the invoice export's, by its SHA-256. */
    crypto_hash_sha256(hash, (const unsigned char *)style, strlen(style));
    sodium_bin2base64(b64, sizeof(b64), hash, sizeof(hash), sodium_base64_VARIANT_ORIGINAL);
    snprintf(style_src, sizeof(style_src), "style-src 'self' 'sha256-%s';", b64);
    assert_non_null(strstr(csp, style_src));
    /* The same bytes as /ui/index.html. */
    {
        struct resp again;
        request(srv, "GET", "/ui/index.html", NULL, &again);
        assert_int_equal(again.status, 200);
        assert_int_equal(again.body_len, r.body_len);
        assert_memory_equal(again.body, r.body, r.body_len);
        resp_release(&again);
    }
    resp_release(&r);
}

static const char *expected_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return NULL;
    if (strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (strcmp(dot, ".svg") == 0)
        return "image/svg+xml";
    return NULL;
}

/* Every file of src/web is served as it is on disk, with its type and ETag, and no token. */
static void test_every_file_byte_for_byte(void **state)
{
    struct testsrv *srv = *state;
    size_t n_js = 0;

    assert_non_null(asset("index.html"));
    assert_non_null(asset("app.js"));
    assert_non_null(asset("app.css"));
    for (size_t i = 0; i < ui_n_assets; i++) {
        const struct ui_asset *a = &ui_assets[i];
        char path[300], file[1024], etag[64];
        struct resp r;
        FILE *f;
        char *disk;
        size_t got;

        snprintf(path, sizeof(path), "/ui/%s", a->name);
        request(srv, "GET", path, NULL, &r);
        assert_int_equal(r.status, 200);
        if (!expected_type(a->name))
            fail_msg("no expected media type for '%s': add it to ui.c and this test", a->name);
        expect_header(&r, "Content-Type", expected_type(a->name));
        expect_header(&r, "ETag", a->etag);
        assert_true(header_value(&r, "Content-Security-Policy", etag, sizeof(etag)));
        assert_int_equal(r.body_len, a->size);
        assert_memory_equal(r.body, a->data, a->size);
        n_js += strstr(a->name, ".js") != NULL;

        snprintf(file, sizeof(file), "%s/src/web/%s", GPUAAS_SOURCE_DIR, a->name);
        f = fopen(file, "rb");
        assert_non_null(f);
        disk = xmalloc(a->size + 1);
        got = fread(disk, 1, a->size + 1, f);
        fclose(f);
        assert_int_equal(got, a->size);
        assert_memory_equal(disk, a->data, a->size);
        assert_int_equal(a->data[a->size], 0);
        free(disk);

        /* HEAD: the headers, no body. */
        resp_release(&r);
        request(srv, "HEAD", path, NULL, &r);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.body_len, 0);
        expect_header(&r, "ETag", a->etag);
        resp_release(&r);
    }
    assert_true(n_js >= 2);
}

static void test_etag_gives_not_modified(void **state)
{
    struct testsrv *srv = *state;
    const struct ui_asset *a = asset("app.js");
    char header[128];
    struct resp r;

    snprintf(header, sizeof(header), "If-None-Match: W/\"x\", %s", a->etag);
    request(srv, "GET", "/ui/app.js", header, &r);
    assert_int_equal(r.status, 304);
    assert_int_equal(r.body_len, 0);
    expect_header(&r, "ETag", a->etag);
    resp_release(&r);

    request(srv, "GET", "/ui/app.js", "If-None-Match: \"0000000000000000\"", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, a->size);
    resp_release(&r);
}

static void test_redirects_unknown_and_methods(void **state)
{
    struct testsrv *srv = *state;
    struct resp r;

    request(srv, "GET", "/", NULL, &r);
    assert_int_equal(r.status, 302);
    expect_header(&r, "Location", "/ui/");
    resp_release(&r);
    request(srv, "GET", "/ui", NULL, &r);
    assert_int_equal(r.status, 302);
    expect_header(&r, "Location", "/ui/");
    resp_release(&r);

    const char *missing[] = {"/ui/nope.js",  "/ui/app.js/", "/ui/..%2Fapp.js",
                             "/ui/%2e%2e/x", "/uix",        "/ui.js"};
    for (size_t i = 0; i < ARRAY_SIZE(missing); i++) {
        request(srv, "GET", missing[i], NULL, &r);
        if (r.status != 404)
            fail_msg("%s: expected 404, got %ld", missing[i], r.status);
        expect_header(&r, "Content-Type", "application/json");
        assert_non_null(strstr(r.body, "\"code\":\"not_found\""));
        resp_release(&r);
    }

    request(srv, "POST", "/ui/app.js", NULL, &r);
    assert_int_equal(r.status, 405);
    expect_header(&r, "Allow", "GET, HEAD");
    assert_non_null(strstr(r.body, "\"code\":\"method_not_allowed\""));
    resp_release(&r);
    request(srv, "DELETE", "/", NULL, &r);
    assert_int_equal(r.status, 405);
    resp_release(&r);

    /* The files need no token; the API still does, and keeps its own headers. */
    request(srv, "GET", "/v1/whoami", NULL, &r);
    assert_int_equal(r.status, 401);
    expect_header(&r, "Cache-Control", "no-store");
    assert_false(header_value(&r, "Content-Security-Policy", (char[8]){0}, 8));
    resp_release(&r);
}

/* Each name after src= / href= / from '...' in the files: it must be a file of the dashboard. */
static void check_refs(const struct ui_asset *a, const char *marker, char quote_open)
{
    const char *text = (const char *)a->data;
    const char *p = text;

    while ((p = strstr(p, marker)) != NULL) {
        const char *start = p + strlen(marker), *end;
        char name[128];

        p = start;
        if (quote_open && *start != quote_open)
            continue;
        if (quote_open)
            start++;
        if (strncmp(start, "./", 2) == 0)
            start += 2;
        end = start + strcspn(start, "\"'?#");
        if (end == start || start[0] == '#' || strncmp(start, "data:", 5) == 0 ||
            memchr(start, '/', (size_t)(end - start)) || (size_t)(end - start) >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(end - start), start);
        if (!strchr(name, '.'))
            continue;
        if (!asset(name))
            fail_msg("%s refers to '%s', which the dashboard does not have", a->name, name);
    }
}

static void test_files_refer_to_files_that_exist(void **state)
{
    (void)state;
    for (size_t i = 0; i < ui_n_assets; i++) {
        check_refs(&ui_assets[i], "src=", '"');
        check_refs(&ui_assets[i], "href=", '"');
        check_refs(&ui_assets[i], "from ", '\'');
        /* No inline script or handler attribute would pass the policy anyway; keep them out. */
        if (strstr(ui_assets[i].name, ".html")) {
            assert_null(strstr((const char *)ui_assets[i].data, "<script>"));
            assert_null(strstr((const char *)ui_assets[i].data, "onclick="));
            assert_null(strstr((const char *)ui_assets[i].data, "style="));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_index_with_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_file_byte_for_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_etag_gives_not_modified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirects_unknown_and_methods, setup, teardown),
        cmocka_unit_test(test_files_refer_to_files_that_exist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
