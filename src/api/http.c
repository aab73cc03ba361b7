/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c: the libmicrohttpd edge. Collects each request's body up to the
 * configured cap, gives every request an id (from X-Request-Id when it is
 * sane, else random), hands complete requests to the router, and sends the
 * JSON reply with the request id and an access log line.
 */
#include "base/common.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sodium.h>

#include "api/api-int.h"
#include "base/log.h"
#include "base/timeutil.h"

void api_options_init(struct api_options *opt)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    opt->bind_addr = "127.0.0.1";
    opt->port = 8080;
    opt->threads = n > 0 && n < 64 ? (int)n : 4;
    opt->max_body_bytes = 1 << 20;
    opt->max_connections = 1024;
    opt->conn_timeout_s = 30;
    opt->engine = NULL;
    opt->issuer = "gpuaas";
    opt->collector = NULL;
}

static bool sane_request_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

static struct req *req_new(struct api *api, struct MHD_Connection *conn, const char *method,
                           const char *url)
{
    struct req *r = xcalloc(1, sizeof(*r));
    const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");

    r->api = api;
    r->conn = conn;
    arena_init(&r->arena);
    r->method = arena_strdup(&r->arena, method);
    r->path = arena_strdup(&r->arena, url);
    buf_init(&r->body, api->opt.max_body_bytes);
    r->now = time_now_s();
    r->started_ns = time_mono_ns();
    if (sane_request_id(given)) {
        snprintf(r->id, sizeof(r->id), "%s", given);
    } else {
        unsigned char raw[12];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2hex(r->id, sizeof(r->id), raw, sizeof(raw));
    }
    return r;
}

static void req_free(struct req *r)
{
    if (!r)
        return;
    if (r->db)
        store_conn_put(r->db);
    if (r->json)
        json_decref(r->json);
    buf_release(&r->body);
    arena_release(&r->arena);
    free(r);
}

struct store_conn *req_db(struct req *r)
{
    if (!r->db)
        r->db = store_conn_get(r->api->store);
    return r->db;
}

const char *req_arg(struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct arg_walk {
    int (*fn)(void *ctx, const char *key, const char *val);
    void *ctx;
    int rc;
};

static enum MHD_Result arg_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    struct arg_walk *w = cls;
    (void)kind;
    w->rc = w->fn(w->ctx, key, value ? value : "");
    return w->rc < 0 ? MHD_NO : MHD_YES;
}

int req_each_arg(struct req *r, int (*fn)(void *ctx, const char *key, const char *val), void *ctx)
{
    struct arg_walk w = {fn, ctx, 0};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, arg_iter, &w);
    return w.rc < 0 ? w.rc : 0;
}

/* "application/json", optionally with parameters ("; charset=utf-8"). */
static bool is_json_media_type(const char *ctype)
{
    size_t n = strlen("application/json");
    if (strncasecmp(ctype, "application/json", n) != 0)
        return false;
    ctype += n;
    while (*ctype == ' ' || *ctype == '\t')
        ctype++;
    return *ctype == '\0' || *ctype == ';';
}

int req_json_body(struct req *r, json_t **ret_obj, struct error_info *ei)
{
    const char *ctype = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
    json_error_t jerr;
    json_t *obj;

    if (ctype && !is_json_media_type(ctype))
        return errinfo_set(ei, ERR_MEDIA_TYPE, NULL,
                           "request body must be application/json, not '%.60s'", ctype);
    if (r->body.len == 0)
        return errinfo_set(ei, ERR_BAD_JSON, NULL, "request body is empty; send a JSON object");
    obj = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return errinfo_set(ei, ERR_BAD_JSON, NULL, "malformed JSON at line %d column %d: %s",
                           jerr.line, jerr.column, jerr.text);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return errinfo_set(ei, ERR_BAD_JSON, NULL, "request body must be a JSON object");
    }
    *ret_obj = obj;
    return 0;
}

void req_reply_json(struct req *r, int status, json_t *body)
{
    if (r->json)
        json_decref(r->json);
    r->status = status;
    r->json = body;
    r->raw = NULL;
}

void req_reply_error(struct req *r, int err, const struct error_info *ei)
{
    json_t *detail = json_object();
    const char *msg = err_str(err);

    if (ei && ei->code != 0) {
        msg = ei->message;
        if (ei->field[0])
            json_object_set_new(detail, "field", json_string(ei->field));
    }
    req_reply_json(r, err_http_status(err),
                   json_pack("{s:{s:s,s:s,s:o}}", "error", "code", err_code_name(err), "message",
                             msg, "detail", detail));
}

static enum MHD_Result send_reply(struct req *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;
    char *text = NULL;
    char status_s[8];

    if (r->stream) {
        resp = stream_response(r);
        r->stream = NULL;
    } else if (r->json) {
        text = json_dumps(r->json, JSON_COMPACT);
        if (!text)
            text = xstrdup("{}");
        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    } else {
        resp = MHD_create_response_from_buffer(r->raw_len, (void *)(r->raw ? r->raw : ""),
                                               MHD_RESPMEM_MUST_COPY);
    }
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    if (!MHD_get_response_header(resp, "Content-Type"))
        MHD_add_response_header(resp, "Content-Type",
                                r->content_type ? r->content_type : "application/json");
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    MHD_add_response_header(resp, "Cache-Control",
                            r->cache_control ? r->cache_control : "no-store");
    for (const char *const *h = r->headers; h && h[0] && h[1]; h += 2)
        MHD_add_response_header(resp, h[0], h[1]);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (r->status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    ret = MHD_queue_response(r->conn, (unsigned)(r->status ? r->status : 500), resp);
    MHD_destroy_response(resp);
    api_metrics_observe(r->api->metrics, r->method, r->status ? r->status : 500,
                        (time_mono_ns() - r->started_ns) / 1000);

    if (r->status >= 500 || (r->status >= 400 && r->status != 404 && r->status != 401)) {
        snprintf(status_s, sizeof(status_s), "%d", r->status);
        log_set_request_id(r->id);
        log_info("request failed", "method", r->method, "path", r->path, "status", status_s);
        log_set_request_id(NULL);
    }
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct api *api = cls;
    struct req *r = *con_cls;
    (void)version;

    if (!r) {
        const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        r = req_new(api, conn, method, url);
        *con_cls = r;
        if (clen && strtoull(clen, NULL, 10) > api->opt.max_body_bytes)
            r->too_large = true;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (!r->too_large && buf_append(&r->body, upload_data, *upload_data_size) < 0)
            r->too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    log_set_request_id(r->id);
    if (r->too_large) {
        struct error_info ei = {0};
        errinfo_set(&ei, ERR_TOO_LARGE, NULL, "request body is larger than %zu bytes",
                    api->opt.max_body_bytes);
        req_reply_error(r, ERR_TOO_LARGE, &ei);
    } else {
        routes_dispatch(r);
    }
    /* Give the store connection back before the (possibly slow) send. */
    if (r->db) {
        store_conn_put(r->db);
        r->db = NULL;
    }
    log_set_request_id(NULL);
    return send_reply(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    req_free(*con_cls);
    *con_cls = NULL;
}

/*
 * While api_start runs, the server's own complaints ("Failed to bind to port
 * 8080: Address already in use") become the one-line start error instead of
 * log lines; afterwards they are logged as warnings.
 */
static _Thread_local bool capture_start_error;
static _Thread_local char start_error[256];

/* libmicrohttpd's printf-style logger (the attribute lets clang check the vsnprintf) */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    if (capture_start_error) {
        if (!start_error[0])
            snprintf(start_error, sizeof(start_error), "%.255s", msg);
        return;
    }
    log_warn("http server", "detail", msg);
}

int api_start(struct store *store, const struct api_options *opt, struct api **ret_api,
              struct error_info *ei)
{
    struct api *api;
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (sodium_init() < 0)
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not initialise libsodium");
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)opt->port);
    if (inet_pton(AF_INET, opt->bind_addr, &sa.sin_addr) != 1)
        return errinfo_set(ei, ERR_INVALID, "listen", "'%s' is not an IPv4 address",
                           opt->bind_addr);

    api = xcalloc(1, sizeof(*api));
    api->store = store;
    api->opt = *opt;
    atomic_init(&api->generation, 1);
    tenancy_init(&api->tenancy);
    api->metrics = api_metrics_new();
    api->sse = sse_hub_new();
    pthread_mutex_init(&api->tenancy_commit_lock, NULL);
    api->auth = auth_cache_new();

    errno = 0;
    capture_start_error = true;
    start_error[0] = '\0';
    api->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
            MHD_ALLOW_SUSPEND_RESUME,
        0, NULL, NULL,
        on_request, api, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)opt->threads, MHD_OPTION_CONNECTION_LIMIT, (unsigned)opt->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt->conn_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, api, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, api,
        MHD_OPTION_END);
    if (!api->mhd) {
        int e = errno;
        char why[sizeof(start_error)];
        snprintf(why, sizeof(why), "%s", start_error[0] ? start_error : strerror(e ? e : EIO));
        start_error[0] = '\0';
        capture_start_error = false;
        api_stop(api);
        return errinfo_set(ei, ERR_IO, "listen", "could not listen on %s:%d: %s", opt->bind_addr,
                           opt->port, why);
    }
    capture_start_error = false;
    info = MHD_get_daemon_info(api->mhd, MHD_DAEMON_INFO_BIND_PORT);
    api->port = info ? info->port : opt->port;
    *ret_api = api;
    return 0;
}

int api_port(const struct api *api)
{
    return api->port;
}

void api_stop(struct api *api)
{
    if (!api)
        return;
    sse_hub_stop(api->sse); /* suspended streams must end before the server stops */
    if (api->mhd)
        MHD_stop_daemon(api->mhd);
    sse_hub_free(api->sse);
    auth_cache_free(api->auth);
    tenancy_release(&api->tenancy);
    api_metrics_free(api->metrics);
    pthread_mutex_destroy(&api->tenancy_commit_lock);
    free(api);
}
