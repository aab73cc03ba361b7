/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c: HTTP requests to gpuaasd with libcurl's easy interface, where the
 * server and token come from, and how failures are reported: what failed,
 * why, and what to do next, without ever showing the token.
 */
#include "base/common.h"

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/config.h"

static void set_error(struct client *c, enum client_error_kind kind, const char *hint,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void set_error(struct client *c, enum client_error_kind kind, const char *hint,
                      const char *fmt, ...)
{
    va_list ap;

    c->err_kind = kind;
    va_start(ap, fmt);
    vsnprintf(c->err_message, sizeof(c->err_message), fmt, ap);
    va_end(ap);
    snprintf(c->err_hint, sizeof(c->err_hint), "%s", hint ? hint : "");
}

static void clear_error(struct client *c)
{
    c->err_kind = CLIENT_OK;
    c->status = 0;
    c->err_code[0] = c->err_message[0] = c->err_hint[0] = '\0';
}

/* Checks the URL's shape; credentials in it would end up in messages. */
static int check_server(struct client *c, const char *server)
{
    const char *authority, *end;

    if (strncmp(server, "http://", 7) == 0)
        authority = server + 7;
    else if (strncmp(server, "https://", 8) == 0)
        authority = server + 8;
    else {
        set_error(c, CLIENT_ERR_CONFIG, "give it as http://HOST:PORT or https://HOST",
                  "server URL '%.200s' must start with http:// or https://", server);
        return -1;
    }
    end = authority + strcspn(authority, "/?#");
    if (end == authority) {
        set_error(c, CLIENT_ERR_CONFIG, NULL, "server URL '%.200s' has no host", server);
        return -1;
    }
    if (memchr(authority, '@', (size_t)(end - authority))) {
        set_error(c, CLIENT_ERR_CONFIG, "give the token with --token or GPUAAS_TOKEN instead",
                  "the server URL may not contain a user name or password");
        return -1;
    }
    for (const char *p = server; *p; p++) {
        if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
            set_error(c, CLIENT_ERR_CONFIG, NULL,
                      "the server URL contains spaces or control characters");
            return -1;
        }
    }
    return 0;
}

static bool valid_token(const char *t)
{
    if (!*t)
        return false;
    for (; *t; t++) {
        if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
            return false;
    }
    return true;
}

int client_init(struct client *c, const char *server, const char *token)
{
    size_t n;

    memset(c, 0, sizeof(*c));
    if (check_server(c, server) < 0)
        return -1;
    if (token && !valid_token(token)) {
        set_error(c, CLIENT_ERR_CONFIG, "copy the token again, without quotes or spaces",
                  "the token contains spaces or control characters");
        return -1;
    }
    c->server = xstrdup(server);
    n = strlen(c->server);
    while (n > 0 && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    c->token = token ? xstrdup(token) : NULL;
    return 0;
}

void client_release(struct client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->server);
    if (c->token) {
        explicit_bzero(c->token, strlen(c->token));
        free(c->token);
    }
    c->curl = NULL;
    c->server = c->token = NULL;
}

int client_open(struct client *c)
{
    struct cli_config cfg = {0};
    const char *server = cli_opts.server, *token = cli_opts.token;
    char *path = config_default_path();
    char err[512];
    int rc;

    memset(c, 0, sizeof(*c));
    if (!server)
        server = getenv("GPUAAS_SERVER");
    if (!token)
        token = getenv("GPUAAS_TOKEN");
    if ((!server || !*server || !token || !*token) && path) {
        if (config_load(path, &cfg, err, sizeof(err)) < 0) {
            set_error(c, CLIENT_ERR_CONFIG, "fix or remove the file, then run 'gpuaas login'", "%s",
                      err);
            free(path);
            return -1;
        }
        if (!server || !*server)
            server = cfg.server;
        if (!token || !*token) {
            token = cfg.token;
            if (token && cfg.loose_mode)
                cli_warn("config file '%s' can be read by others; run 'chmod 600 %s'", path, path);
        }
    }
    if (!server || !*server) {
        set_error(c, CLIENT_ERR_CONFIG,
                  "run 'gpuaas login --server URL --token TOKEN', or give --server or "
                  "GPUAAS_SERVER",
                  "no server is set");
        rc = -1;
    } else {
        rc = client_init(c, server, token && *token ? token : NULL);
    }
    config_release(&cfg);
    free(path);
    return rc;
}

char *client_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    struct buf b;

    buf_init(&b, SIZE_MAX / 4);
    buf_puts(&b, "");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            buf_append(&b, s, 1);
        } else {
            char enc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            buf_append(&b, enc, 3);
        }
    }
    return buf_detach(&b, NULL);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    size_t n = size * nmemb;

    if (buf_append(b, data, n) < 0)
        return 0; /* over the cap: curl stops with CURLE_WRITE_ERROR */
    return n;
}

/* Keeps the API's error, {"error":{"code","message","detail"}}, or says what came instead. */
static void set_http_error(struct client *c, const char *method, const char *path,
                           const struct buf *body)
{
    json_t *root = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    json_t *e = json_object_get(root, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *hint = NULL;

    switch (c->status) {
    case 401:
        hint = c->token ? "the token is wrong, expired or revoked; run 'gpuaas login' with a valid "
                          "token"
                        : "no token is set; run 'gpuaas login --server URL --token TOKEN'";
        break;
    case 403:
        hint = "your roles do not allow this; 'gpuaas whoami' shows them";
        break;
    default:
        if (c->status >= 300 && c->status < 400)
            hint = "redirects are not followed; check the server URL";
        else if (c->status >= 500)
            hint = "the server failed; its log has the details";
    }
    if (msg)
        set_error(c, CLIENT_ERR_HTTP, hint, "%s (HTTP %ld, %s %s)", msg, c->status, method, path);
    else
        set_error(c, CLIENT_ERR_HTTP, hint, "the server answered HTTP %ld to %s %s", c->status,
                  method, path);
    snprintf(c->err_code, sizeof(c->err_code), "%s", code ? code : "");
    json_decref(root);
}

static void set_curl_error(struct client *c, CURL *h, CURLcode cc, const char *errbuf,
                           const struct buf *body)
{
    long os_errno = 0;
    char hint[256];

    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
    snprintf(hint, sizeof(hint), "is gpuaasd running at %s?", c->server);
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
        set_error(c, CLIENT_ERR_NETWORK, hint, "could not connect to %s: %s", c->server,
                  os_errno ? strerror((int)os_errno) : (*errbuf ? errbuf : "connection failed"));
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        set_error(c, CLIENT_ERR_NETWORK, "check the server URL", "could not resolve the host of %s",
                  c->server);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        set_error(c, CLIENT_ERR_NETWORK, hint, "no answer from %s in time (%s)", c->server,
                  *errbuf ? errbuf : curl_easy_strerror(cc));
        break;
    case CURLE_WRITE_ERROR:
    case CURLE_FILESIZE_EXCEEDED:
        if (cc == CURLE_FILESIZE_EXCEEDED || body->len + CURL_MAX_WRITE_SIZE > body->max) {
            set_error(c, CLIENT_ERR_NETWORK, NULL, "the answer from %s is larger than %u MiB",
                      c->server, CLIENT_MAX_RESPONSE >> 20);
            break;
        }
        /* fall through */
    default:
        set_error(c, CLIENT_ERR_NETWORK, NULL, "request to %s failed: %s", c->server,
                  *errbuf ? errbuf : curl_easy_strerror(cc));
    }
}

static struct curl_slist *make_headers(const struct client *c, const char *body_type,
                                       const char *accept)
{
    struct curl_slist *h = NULL;
    char line[64];

    snprintf(line, sizeof(line), "Accept: %s", accept);
    h = curl_slist_append(h, line);
    h = curl_slist_append(h, "Expect:");
    if (body_type) {
        char ct[96];
        snprintf(ct, sizeof(ct), "Content-Type: %s", body_type);
        h = curl_slist_append(h, ct);
    }
    if (c->token) {
        char *auth = xasprintf("Authorization: Bearer %s", c->token);
        h = curl_slist_append(h, auth);
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    if (!h) {
        fprintf(stderr, "gpuaas: out of memory\n");
        abort();
    }
    return h;
}

static CURL *handle(struct client *c)
{
    static bool global_done;

    if (!global_done) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        global_done = true;
    }
    if (!c->curl)
        c->curl = curl_easy_init();
    else
        curl_easy_reset(c->curl);
    return c->curl;
}

/* What every request sets: where, how long, who we are; no redirects, HTTP(S) only. */
static void set_request(CURL *h, const char *url, struct curl_slist *headers, char *errbuf,
                        long timeout_s)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CLIENT_CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CLIENT_MAX_RESPONSE);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuaas/" CLI_VERSION);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
}

/* A request body: bytes and their media type. */
struct payload {
    const char *data;
    size_t len;
    const char *type;
};

static int perform(struct client *c, const char *method, const char *path,
                   const struct payload *payload, json_t **ret_json, struct buf *ret_raw)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    char *url = NULL;
    struct buf resp;
    CURLcode cc;
    CURL *h;
    int rc = -1;

    clear_error(c);
    h = handle(c);
    if (!h) {
        set_error(c, CLIENT_ERR_NETWORK, NULL, "could not set up an HTTP request");
        return -1;
    }
    buf_init(&resp, CLIENT_MAX_RESPONSE);
    url = xasprintf("%s%s", c->server, path);
    headers = make_headers(c, payload ? payload->type : NULL, "application/json");

    set_request(h, url, headers, errbuf, CLIENT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (payload) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload->data);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)payload->len);
        } else if (strcmp(method, "POST") == 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        }
    }

    cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        set_curl_error(c, h, cc, errbuf, &resp);
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    if (c->status < 200 || c->status >= 300) {
        set_http_error(c, method, path, &resp);
        goto out;
    }
    if (ret_raw) {
        *ret_raw = resp;
        buf_init(&resp, CLIENT_MAX_RESPONSE);
    } else if (resp.len == 0) {
        *ret_json = NULL;
    } else {
        json_error_t jerr;
        json_t *j = json_loadb(resp.data, resp.len, 0, &jerr);
        if (!j) {
            set_error(c, CLIENT_ERR_PROTOCOL, "is --server the address of gpuaasd?",
                      "the answer to %s %s is not JSON: %s", method, path, jerr.text);
            goto out;
        }
        *ret_json = j;
    }
    rc = (int)c->status;
out:
    /* The handle keeps pointers to these; drop them before freeing. */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    free(url);
    buf_release(&resp);
    return rc;
}

int client_request(struct client *c, const char *method, const char *path, json_t *body,
                   json_t **ret_json)
{
    struct payload p = {NULL, 0, "application/json"};
    char *text = NULL;
    int rc;

    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text) {
            clear_error(c);
            set_error(c, CLIENT_ERR_PROTOCOL, NULL, "could not encode the request as JSON");
            return -1;
        }
        p.data = text;
        p.len = strlen(text);
    }
    rc = perform(c, method, path, body ? &p : NULL, ret_json, NULL);
    free(text);
    return rc;
}

int client_request_raw(struct client *c, const char *path, struct buf *ret_body)
{
    return perform(c, "GET", path, NULL, NULL, ret_body);
}

int client_post_file(struct client *c, const char *path, const char *type, const char *data,
                     size_t len, json_t **ret_json)
{
    struct payload p = {data, len, type};
    return perform(c, "POST", path, &p, ret_json, NULL);
}

/* ---- server-sent events ---- */

struct sse_read {
    struct client *c;
    CURL *h;
    struct buf pending; /* bytes of a frame not yet complete */
    struct buf error;   /* the body of a refusal */
    int (*on_event)(void *ctx, const char *id, const char *type, const char *data);
    void *ctx;
    bool stopped;
    bool not_a_stream; /* the server answered something else */
};

/* One frame: "id: ..", "event: ..", "data: .." lines; comments (":") ignored. */
static int sse_frame(struct sse_read *rd, char *frame)
{
    char *id = NULL, *type = NULL, *save = NULL;
    struct buf data;
    int rc = 0;

    buf_init(&data, CLIENT_MAX_RESPONSE);
    for (char *line = strtok_r(frame, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(line, ':');
        char *value = colon ? colon + 1 : line + strlen(line);
        if (line[0] == ':')
            continue;
        if (*value == ' ')
            value++;
        if (colon)
            *colon = '\0';
        if (strcmp(line, "id") == 0)
            id = value;
        else if (strcmp(line, "event") == 0)
            type = value;
        else if (strcmp(line, "data") == 0)
            buf_printf(&data, "%s%s", data.len ? "\n" : "", value);
    }
    if (data.len)
        rc = rd->on_event(rd->ctx, id ? id : "", type ? type : "message", data.data);
    buf_release(&data);
    return rc;
}

static size_t on_stream(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct sse_read *rd = userdata;
    size_t n = size * nmemb;
    long status = 0;
    char *end;

    const char *ctype = NULL;

    curl_easy_getinfo(rd->h, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300)
        return buf_append(&rd->error, data, n) < 0 ? 0 : n;
    curl_easy_getinfo(rd->h, CURLINFO_CONTENT_TYPE, &ctype);
    if (!ctype || strncmp(ctype, "text/event-stream", 17) != 0) {
        rd->not_a_stream = true;
        return 0;
    }
    if (buf_append(&rd->pending, data, n) < 0)
        return 0;
    while (rd->pending.data && (end = strstr(rd->pending.data, "\n\n"))) {
        size_t len = (size_t)(end - rd->pending.data) + 2;
        char *frame = xstrndup(rd->pending.data, len);
        int rc = sse_frame(rd, frame);
        free(frame);
        memmove(rd->pending.data, rd->pending.data + len, rd->pending.len - len + 1);
        rd->pending.len -= len;
        if (rc < 0) {
            rd->stopped = true;
            return 0; /* the caller is done: curl stops */
        }
    }
    return n;
}

int client_stream(struct client *c, const char *path,
                  int (*on_event)(void *ctx, const char *id, const char *type, const char *data),
                  void *ctx)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct sse_read rd = {.c = c, .on_event = on_event, .ctx = ctx};
    struct curl_slist *headers;
    char *url;
    CURLcode cc;
    CURL *h;
    int rc = -1;

    clear_error(c);
    h = handle(c);
    if (!h) {
        set_error(c, CLIENT_ERR_NETWORK, NULL, "could not set up an HTTP request");
        return -1;
    }
    rd.h = h;
    buf_init(&rd.pending, CLIENT_MAX_RESPONSE);
    buf_init(&rd.error, 64 * 1024);
    url = xasprintf("%s%s", c->server, path);
    headers = make_headers(c, NULL, "text/event-stream");
    set_request(h, url, headers, errbuf, 0L); /* a stream has no end to wait for, */
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)0); /* nor a size: frames are */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &rd);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    if (rd.stopped) {
        rc = 0;
    } else if (rd.not_a_stream) {
        set_error(c, CLIENT_ERR_PROTOCOL, "is --server the address of gpuaasd?",
                  "the answer to GET %s is not an event stream", path);
    } else if (cc != CURLE_OK) {
        set_curl_error(c, h, cc, errbuf, &rd.error);
    } else if (c->status < 200 || c->status >= 300) {
        set_http_error(c, "GET", path, &rd.error);
    } else {
        rc = 0; /* the server ended the stream */
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    free(url);
    buf_release(&rd.pending);
    buf_release(&rd.error);
    return rc;
}

/* What the server said, made safe for a terminal. */
static void print_safe(FILE *f, const char *prefix, const char *s)
{
    fputs(prefix, f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
    }
    fputc('\n', f);
}

int client_report(const struct client *c)
{
    print_safe(stderr,
               "gpuaas: error: ", c->err_message[0] ? c->err_message : "the request failed");
    if (c->err_hint[0])
        print_safe(stderr, "hint: ", c->err_hint);
    return CLI_ERROR;
}
