/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ui.c: serves the web dashboard. Its files (src/web/) are compiled into the
 * binary by cmake/embed.cmake, so gpuaasd needs nothing on disk and nothing
 * from the internet to show it. GET /ui/<file> answers the file with its
 * media type, an ETag (304 when the browser has it already) and a strict
 * Content-Security-Policy: scripts and styles only from here, no inline
 * script, the API as the only thing to connect to. / and /ui redirect to
 * /ui/. The files need no token: they hold no data; every call they make
 * goes to the authenticated API, so what a user sees follows their role.
 */
#include "base/common.h"

#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>

#include "api/api-int.h"
#include "billing/billing.h"

static const struct {
    const char *ext;
    const char *type;
} media_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
};

/*
 * The policy allows one inline thing: the <style> of an invoice's printable
 * HTML export, which the dashboard shows in a sandboxed frame that inherits
 * this policy; it is allowed by the hash of exactly that text.
 */
static char csp[600];
static pthread_once_t csp_once = PTHREAD_ONCE_INIT;

static void csp_build(void)
{
    const char *style = billing_export_html_style();
    unsigned char h[crypto_hash_sha256_BYTES];
    char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES, sodium_base64_VARIANT_ORIGINAL)];

    crypto_hash_sha256(h, (const unsigned char *)style, strlen(style));
    sodium_bin2base64(b64, sizeof(b64), h, sizeof(h), sodium_base64_VARIANT_ORIGINAL);
    snprintf(csp, sizeof(csp),
             "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-%s'; "
             "img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; "
             "form-action 'self'; frame-ancestors 'none'",
             b64);
}

static const char *media_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < ARRAY_SIZE(media_types); i++) {
        if (strcmp(dot, media_types[i].ext) == 0)
            return media_types[i].type;
    }
    return "application/octet-stream";
}

static const struct ui_asset *find_asset(const char *name)
{
    for (size_t i = 0; i < ui_n_assets; i++) {
        if (strcmp(ui_assets[i].name, name) == 0)
            return &ui_assets[i];
    }
    return NULL;
}

/* Whether an If-None-Match value names etag (a list, or "*"); weak tags compare equal. */
static bool etag_matches(const char *inm, const char *etag)
{
    size_t n = strlen(etag);

    if (!inm)
        return false;
    while (*inm) {
        while (*inm == ' ' || *inm == ',')
            inm++;
        if (strncmp(inm, "W/", 2) == 0)
            inm += 2;
        if (*inm == '*' ||
            (strncmp(inm, etag, n) == 0 && (inm[n] == ',' || inm[n] == ' ' || inm[n] == '\0')))
            return true;
        while (*inm && *inm != ',')
            inm++;
    }
    return false;
}

static void redirect(struct req *r, const char *to)
{
    const char **h = arena_calloc(&r->arena, 3, sizeof(*h));

    h[0] = "Location";
    h[1] = to;
    r->headers = h;
    r->status = 302;
    r->content_type = "text/plain; charset=utf-8";
    r->raw = "see /ui/\n";
    r->raw_len = strlen(r->raw);
}

static void reply_asset(struct req *r, const struct ui_asset *a)
{
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "If-None-Match");
    const char **h = arena_calloc(&r->arena, 9, sizeof(*h));

    pthread_once(&csp_once, csp_build);
    h[0] = "ETag";
    h[1] = a->etag;
    h[2] = "Content-Security-Policy";
    h[3] = csp;
    h[4] = "Referrer-Policy";
    h[5] = "no-referrer";
    h[6] = "Cross-Origin-Opener-Policy";
    h[7] = "same-origin";
    r->headers = h;
    /* Names are not versioned, so the browser asks again each time; the ETag makes that cheap. */
    r->cache_control = "no-cache";
    r->content_type = media_type(a->name);
    if (etag_matches(inm, a->etag)) {
        r->status = 304;
        r->raw = NULL;
        r->raw_len = 0;
        return;
    }
    r->status = 200;
    r->raw = (const char *)a->data;
    r->raw_len = a->size;
}

bool ui_serve(struct req *r)
{
    struct error_info ei = {0};
    const char *path = r->path;
    const struct ui_asset *a;

    if (strcmp(path, "/") != 0 && strcmp(path, "/ui") != 0 && strncmp(path, "/ui/", 4) != 0)
        return false;
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) {
        static const char *const allow[] = {"Allow", "GET, HEAD", NULL};
        errinfo_set(&ei, ERR_METHOD, NULL, "method %s is not allowed on %s; use GET", r->method,
                    path);
        req_reply_error(r, ERR_METHOD, &ei);
        r->headers = allow;
        return true;
    }
    if (strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0) {
        redirect(r, "/ui/");
        return true;
    }
    a = find_asset(path[4] ? path + 4 : "index.html");
    if (!a) {
        errinfo_set(&ei, ERR_NOT_FOUND, NULL, "the dashboard has no file '%.100s'", path + 4);
        req_reply_error(r, ERR_NOT_FOUND, &ei);
        return true;
    }
    reply_asset(r, a);
    return true;
}
