/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c: the libmicrohttpd edge. Collects each request's body up to the
 * configured cap, gives every request an id (from X-Request-Id when it is
 * sane, else random), hands complete requests to the router, and sends the
 * JSON reply with the request id and an access log line.
 *
 * Slow and idle clients: libmicrohttpd closes a connection silent for
 * conn_timeout_s and caps connections in all and per address, but it has no
 * deadline for a request's headers, so a client that trickles a header line
 * every few seconds would hold its connection for ever. The guard here keeps
 * one deadline per connection and shuts down (never closes: the fd stays
 * libmicrohttpd's) those past it; libmicrohttpd then sees the end and closes
 * them itself. The server's own complaints are logged at most a few a window.
 *
 * Accepting: libmicrohttpd's pool threads would each accept from the
 * listening socket themselves, but at most ten connections per turn of
 * their loop, and a turn serves every ready connection first. A thousand
 * clients connecting at once were then accepted over seconds (each turn
 * longer as more were served) while the kernel's queue held the rest. So
 * the socket is ours: one thread accepts whatever is queued at once and
 * hands each connection to the server (MHD_add_connection), stopping at
 * max-connections, as the server would, until one closes.
 */
#include "base/common.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sodium.h>
#include <sys/socket.h>

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
    opt->max_connections = 4096;
    opt->per_ip_connections = 2048;
    opt->conn_timeout_s = 30;
    opt->header_timeout_s = 10;
    opt->engine = NULL;
    opt->issuer = "gpuaas";
    opt->collector = NULL;
    opt->max_min_runtime_s = API_DEFAULT_MAX_MIN_RUNTIME_S;
    opt->max_grace_s = API_DEFAULT_MAX_GRACE_S;
}

/* ---- the guard: header deadlines, and a rate limit on the server's complaints ---- */

#define LOG_BURST 5                       /* server log lines per window ... */
#define LOG_WINDOW_NS (10 * 1000000000LL) /* ... of 10 s; the rest are counted */
#define SWEEP_EVERY_NS (250 * 1000000LL)  /* how late a deadline may be enforced */
#define STALL_NS (1000 * 1000000LL)       /* a handed-over connection not started by then is lost */
#define BUSY_PAUSE_MS 100                 /* after accept fails for want of descriptors */

struct conn_slot {
    struct conn_slot *prev, *next;
    int fd;              /* libmicrohttpd's socket: only ever shut down here */
    int64_t deadline_ns; /* monotonic; 0 while a request is being served */
};

struct http_guard {
    pthread_mutex_t mu; /* the list, deadlines and counts; held while shutting a socket down */
    pthread_cond_t cv;
    pthread_t sweeper;
    bool sweeping, stop;
    struct conn_slot *head;
    int64_t header_ns; /* 0: no header deadline */
    int64_t idle_ns;

    /* Admission: the listening socket and the thread that accepts from it. */
    struct MHD_Daemon *mhd;
    int listen_fd; /* -1: none */
    int wake[2];   /* written to stop the acceptor's poll */
    pthread_t acceptor;
    bool accepting;
    pthread_cond_t room; /* signalled as connections start and close */
    size_t max_conns;
    size_t live;   /* started and not yet closed (the server's notices) */
    size_t queued; /* handed to the server, not started yet */

    pthread_mutex_t log_mu;
    int64_t log_window_ns;
    int log_lines;
    uint64_t log_suppressed;
};

/*
 * Whether a server complaint may be logged now. When it may, *ret_dropped
 * gets how many were left out since the last one logged.
 */
static bool guard_may_log(struct http_guard *g, uint64_t *ret_dropped)
{
    int64_t now = time_mono_ns();
    bool ok;

    pthread_mutex_lock(&g->log_mu);
    if (now - g->log_window_ns >= LOG_WINDOW_NS) {
        g->log_window_ns = now;
        g->log_lines = 0;
    }
    ok = g->log_lines < LOG_BURST;
    if (ok) {
        g->log_lines++;
        *ret_dropped = g->log_suppressed;
        g->log_suppressed = 0;
    } else {
        g->log_suppressed++;
    }
    pthread_mutex_unlock(&g->log_mu);
    return ok;
}

static void guard_warn(struct http_guard *g, const char *msg, const char *key, const char *val)
{
    uint64_t dropped = 0;
    char n[24];

    if (!guard_may_log(g, &dropped))
        return;
    snprintf(n, sizeof(n), "%" PRIu64, dropped);
    if (dropped)
        log_warn(msg, key, val, "suppressed", n);
    else
        log_warn(msg, key, val);
}

/*
 * Says how many complaints went unlogged once their window is over (or now,
 * when the server stops), so none vanish silently.
 */
static void guard_flush_log(struct http_guard *g, bool now)
{
    uint64_t dropped = 0;
    char n[24];

    pthread_mutex_lock(&g->log_mu);
    if (g->log_suppressed && (now || time_mono_ns() - g->log_window_ns >= LOG_WINDOW_NS)) {
        dropped = g->log_suppressed;
        g->log_suppressed = 0;
        g->log_window_ns = time_mono_ns();
        g->log_lines = 1;
    }
    pthread_mutex_unlock(&g->log_mu);
    if (dropped) {
        snprintf(n, sizeof(n), "%" PRIu64, dropped);
        log_warn("http server: similar messages suppressed", "suppressed", n);
    }
}

/* Shuts down every connection past its deadline; returns how many. Called with g->mu held. */
static size_t guard_sweep_locked(struct http_guard *g)
{
    int64_t now = time_mono_ns();
    size_t n = 0;

    for (struct conn_slot *c = g->head; c; c = c->next) {
        if (c->deadline_ns && now >= c->deadline_ns && c->fd >= 0) {
            /* The fd is still libmicrohttpd's: the CLOSED notice waits for g->mu. */
            shutdown(c->fd, SHUT_RDWR);
            c->deadline_ns = 0;
            n++;
        }
    }
    return n;
}

/* CLOCK_MONOTONIC ns from now, for the guard's condition variables. */
static struct timespec mono_after(int64_t ns)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(ns / 1000000000LL);
    t.tv_nsec += (long)(ns % 1000000000LL);
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static void *guard_run(void *arg)
{
    struct http_guard *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec until;
        size_t n = guard_sweep_locked(g);
        pthread_mutex_unlock(&g->mu);
        if (n) {
            char count[24];
            snprintf(count, sizeof(count), "%zu", n);
            guard_warn(g, "http server: closed connections whose request headers were late",
                       "count", count);
        }
        guard_flush_log(g, false);
        until = mono_after(SWEEP_EVERY_NS);
        pthread_mutex_lock(&g->mu);
        if (!g->stop)
            pthread_cond_timedwait(&g->cv, &g->mu, &until);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static struct http_guard *guard_new(const struct api_options *opt)
{
    struct http_guard *g = xcalloc(1, sizeof(*g));
    pthread_condattr_t ca;

    pthread_mutex_init(&g->mu, NULL);
    pthread_mutex_init(&g->log_mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_cond_init(&g->room, &ca);
    pthread_condattr_destroy(&ca);
    g->listen_fd = g->wake[0] = g->wake[1] = -1;
    g->max_conns = (size_t)opt->max_connections;
    g->header_ns = (int64_t)opt->header_timeout_s * 1000000000LL;
    g->idle_ns = (int64_t)opt->conn_timeout_s * 1000000000LL;
    g->log_window_ns = time_mono_ns() - LOG_WINDOW_NS;
    if (g->header_ns > 0)
        g->sweeping = pthread_create(&g->sweeper, NULL, guard_run, g) == 0;
    return g;
}

/*
 * Stops the acceptor, closing the listening socket (clients still queued on
 * it are refused), and the sweeper; the connection slots are freed as
 * libmicrohttpd closes them.
 */
static void guard_stop(struct http_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_cond_signal(&g->room);
    pthread_mutex_unlock(&g->mu);
    if (g->accepting) {
        char b = 0;
        while (write(g->wake[1], &b, 1) < 0 && errno == EINTR)
            ;
        pthread_join(g->acceptor, NULL);
        g->accepting = false;
    }
    if (g->sweeping) {
        pthread_join(g->sweeper, NULL);
        g->sweeping = false;
    }
    for (int i = 0; i < 2; i++) {
        if (g->wake[i] >= 0)
            close(g->wake[i]);
        g->wake[i] = -1;
    }
    if (g->listen_fd >= 0)
        close(g->listen_fd);
    g->listen_fd = -1;
}

static void guard_free(struct http_guard *g)
{
    if (!g)
        return;
    guard_stop(g);
    guard_flush_log(g, true);
    /* The server closed every connection, freeing its slot; any left are no one's now. */
    while (g->head) {
        struct conn_slot *next = g->head->next;
        free(g->head);
        g->head = next;
    }
    pthread_cond_destroy(&g->cv);
    pthread_cond_destroy(&g->room);
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->log_mu);
    free(g);
}

/* ---- the acceptor ---- */

/*
 * Waits while max-connections are open or handed over; false when the
 * server stops. A connection handed over that never starts (the server
 * dropped it, out of memory) would hold its place for ever, so after
 * STALL_NS with none starting or closing the handed-over ones are no
 * longer counted; each pool thread still caps its own at max-connections.
 */
static bool acceptor_wait_room(struct http_guard *g)
{
    bool ok;

    pthread_mutex_lock(&g->mu);
    while (!g->stop && g->live + g->queued >= g->max_conns) {
        struct timespec until = mono_after(STALL_NS);
        if (pthread_cond_timedwait(&g->room, &g->mu, &until) == ETIMEDOUT)
            g->queued = 0;
    }
    ok = !g->stop;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static void acceptor_count(struct http_guard *g, bool handed)
{
    pthread_mutex_lock(&g->mu);
    if (handed)
        g->queued++;
    else if (g->queued)
        g->queued--;
    pthread_mutex_unlock(&g->mu);
}

/*
 * Accepts every connection the kernel has queued while there is room and
 * hands each to the server. False when accept fails for want of
 * descriptors or memory: the caller pauses rather than spin on it.
 */
static bool acceptor_take(struct http_guard *g)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        bool room;
        int fd;

        pthread_mutex_lock(&g->mu);
        room = !g->stop && g->live + g->queued < g->max_conns;
        pthread_mutex_unlock(&g->mu);
        if (!room)
            return true;
        fd = accept4(g->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return true;
            guard_warn(g, "http server: accept failed", "error", strerror(errno));
            return false;
        }
        acceptor_count(g, true);
        /* Refused (the per-address cap, or out of memory): the server closed it and logs why. */
        if (MHD_add_connection(g->mhd, fd, (struct sockaddr *)&ss, len) != MHD_YES)
            acceptor_count(g, false);
    }
}

static void *acceptor_run(void *arg)
{
    struct http_guard *g = arg;
    struct pollfd pfd[2] = {{.fd = g->listen_fd, .events = POLLIN},
                            {.fd = g->wake[0], .events = POLLIN}};

    while (acceptor_wait_room(g)) {
        bool pause = poll(pfd, 2, -1) < 0 && errno != EINTR;
        if (pfd[1].revents)
            break;
        if (!pause && (pfd[0].revents & POLLIN))
            pause = !acceptor_take(g);
        if (pause) /* let connections close before trying again */
            poll(&pfd[1], 1, BUSY_PAUSE_MS);
    }
    return NULL;
}

/* Starts accepting on fd (the guard owns it from here, even on failure) for mhd. */
static int acceptor_start(struct http_guard *g, struct MHD_Daemon *mhd, int fd)
{
    g->mhd = mhd;
    g->listen_fd = fd;
    if (pipe2(g->wake, O_CLOEXEC) < 0)
        return -errno;
    if (pthread_create(&g->acceptor, NULL, acceptor_run, g) != 0)
        return -EAGAIN;
    g->accepting = true;
    return 0;
}

/* A new connection must bring its first request's headers within header_ns. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_guard *g = ((struct api *)cls)->guard;
    struct conn_slot *c = *socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c = xcalloc(1, sizeof(*c));
        c->fd = info ? info->connect_fd : -1;
        pthread_mutex_lock(&g->mu);
        c->deadline_ns = g->header_ns ? time_mono_ns() + g->header_ns : 0;
        c->next = g->head;
        if (g->head)
            g->head->prev = c;
        g->head = c;
        g->live++;
        if (g->queued)
            g->queued--;
        pthread_cond_signal(&g->room);
        pthread_mutex_unlock(&g->mu);
        *socket_context = c;
        return;
    }
    if (!c)
        return;
    pthread_mutex_lock(&g->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    g->live--;
    pthread_cond_signal(&g->room);
    pthread_mutex_unlock(&g->mu);
    free(c);
    *socket_context = NULL;
}

/*
 * Headers complete: no deadline while the request is served (its body is
 * bounded by max-body-bytes and the idle timeout). After the reply the next
 * request may wait for the idle timeout, and then has header_ns for its headers.
 */
static void guard_set(struct api *api, struct MHD_Connection *conn, bool serving)
{
    struct http_guard *g = api->guard;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_slot *c = info ? info->socket_context : NULL;

    if (!c || !g->header_ns)
        return;
    pthread_mutex_lock(&g->mu);
    c->deadline_ns = serving ? 0 : time_mono_ns() + g->idle_ns + g->header_ns;
    pthread_mutex_unlock(&g->mu);
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

/* The message of an error reply, for the log; "" when the reply is no error. */
static const char *reply_error_message(const struct req *r)
{
    const char *m = NULL;

    if (r->json)
        m = json_string_value(json_object_get(json_object_get(r->json, "error"), "message"));
    return m ? m : "";
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
        /* A 5xx is the server's fault (a full disk, a lost store): an operator must see it. */
        if (r->status >= 500)
            log_error("request failed", "method", r->method, "path", r->path, "status", status_s,
                      "error", reply_error_message(r));
        else
            log_info("request failed", "method", r->method, "path", r->path, "status", status_s);
        log_set_request_id(NULL);
    }
    return ret;
}

struct framing_headers {
    int content_length, transfer_encoding;
    bool chunked; /* every Transfer-Encoding is exactly "chunked" */
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct framing_headers *f = cls;
    (void)kind;
    if (strcasecmp(key, "Content-Length") == 0) {
        f->content_length++;
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        f->transfer_encoding++;
        f->chunked = f->transfer_encoding == 1 && value && strcasecmp(value, "chunked") == 0;
    }
    return MHD_YES;
}

/*
 * Why the request's body framing is ambiguous, or NULL when it is not. A
 * proxy in front may pick another of two Content-Lengths, or Content-Length
 * over Transfer-Encoding, and read the rest as a second request (smuggling).
 */
static const char *ambiguous_framing(struct MHD_Connection *conn)
{
    struct framing_headers f = {0, 0, false};

    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
    if (f.content_length > 1)
        return "the request has more than one Content-Length header";
    if (f.content_length && f.transfer_encoding)
        return "the request has both Content-Length and Transfer-Encoding headers";
    if (f.transfer_encoding && !f.chunked)
        return "the request's Transfer-Encoding must be one 'chunked'";
    return NULL;
}

/* Answers 400 before reading any body, and closes the connection after the reply. */
static enum MHD_Result refuse_framing(struct req *r, const char *why)
{
    static const char *const close_header[] = {"Connection", "close", NULL};
    struct error_info ei = {0};

    errinfo_set(&ei, ERR_INVALID, NULL, "%s", why);
    req_reply_error(r, ERR_INVALID, &ei);
    r->headers = close_header;
    r->answered = true;
    return send_reply(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct api *api = cls;
    struct req *r = *con_cls;
    (void)version;

    if (!r) {
        const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        const char *framing = ambiguous_framing(conn);
        guard_set(api, conn, true);
        r = req_new(api, conn, method, url);
        *con_cls = r;
        if (framing)
            return refuse_framing(r, framing);
        if (clen && strtoull(clen, NULL, 10) > api->opt.max_body_bytes)
            r->too_large = true;
        return MHD_YES;
    }
    if (r->answered) { /* refused before its body: whatever follows is dropped */
        *upload_data_size = 0;
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
    (void)toe;
    req_free(*con_cls);
    *con_cls = NULL;
    guard_set(cls, conn, false);
}

/*
 * While api_start runs, the server's own complaints (that it could not make
 * its epoll set or threads) become the one-line start error instead of log
 * lines; afterwards they are logged as warnings.
 */
static _Thread_local bool capture_start_error;
static _Thread_local char start_error[256];

/* libmicrohttpd's printf-style logger (the attribute lets clang check the vsnprintf) */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct api *api = cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    if (capture_start_error) {
        if (!start_error[0])
            snprintf(start_error, sizeof(start_error), "%.255s", msg);
        return;
    }
    /* One a refused or dropped connection: a flood of them must not flood the log. */
    guard_warn(api->guard, "http server", "detail", msg);
}

/*
 * Why the server could not start, worded as our errors are: libmicrohttpd's
 * complaint when it made one, else errno's text in lower case ("address
 * already in use").
 */
static void start_error_reason(const char *captured, int e, char *buf, size_t size)
{
    snprintf(buf, size, "%s", captured[0] ? captured : strerror(e ? e : EIO));
    if (!captured[0])
        buf[0] = (char)tolower((unsigned char)buf[0]);
}

/* The listening socket, non-blocking for the acceptor; its port in *ret_port. */
static int listen_open(const struct sockaddr_in *sa, int *ret_port)
{
    struct sockaddr_in bound;
    socklen_t len = sizeof(bound);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    /* As libmicrohttpd did: a restart may bind while old connections linger in TIME_WAIT. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(fd, SOMAXCONN) < 0 ||
        getsockname(fd, (struct sockaddr *)&bound, &len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    *ret_port = ntohs(bound.sin_port);
    return fd;
}

int api_start(struct store *store, const struct api_options *opt, struct api **ret_api,
              struct error_info *ei)
{
    struct api *api;
    struct sockaddr_in sa;
    char why[sizeof(start_error)];
    int fd, rc;

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
    api->guard = guard_new(opt);

    fd = listen_open(&sa, &api->port);
    if (fd < 0) {
        start_error_reason("", -fd, why, sizeof(why));
        api_stop(api);
        return errinfo_set(ei, ERR_IO, "listen", "could not listen on %s:%d: %s", opt->bind_addr,
                           opt->port, why);
    }
    errno = 0;
    capture_start_error = true;
    start_error[0] = '\0';
    /*
     * A thread pool over epoll: a connection costs a socket and a little
     * memory, not a thread, so thousands of idle or slow ones cannot starve
     * the workers. The acceptor keeps the total to max_connections; each
     * thread may hold that many (libmicrohttpd's limit is per thread), so
     * none is refused while another thread has room. The per-address cap is
     * shared. The logger comes first, or libmicrohttpd complains about its place.
     */
    api->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
            MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
        0, NULL, NULL, on_request, api, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, api,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)opt->threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)opt->max_connections * (unsigned)opt->threads, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)opt->per_ip_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)opt->conn_timeout_s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, api,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, api, MHD_OPTION_END);
    if (!api->mhd) {
        int e = errno;
        start_error_reason(start_error, e, why, sizeof(why));
        start_error[0] = '\0';
        capture_start_error = false;
        close(fd);
        api_stop(api);
        return errinfo_set(ei, ERR_IO, "listen", "could not listen on %s:%d: %s", opt->bind_addr,
                           opt->port, why);
    }
    capture_start_error = false;
    rc = acceptor_start(api->guard, api->mhd, fd);
    if (rc < 0) {
        api_stop(api);
        return errinfo_set(ei, ERR_IO, "listen", "could not start accepting on %s:%d: %s",
                           opt->bind_addr, opt->port, strerror(-rc));
    }
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
    guard_stop(api->guard);
    if (api->mhd)
        MHD_stop_daemon(api->mhd);
    guard_free(api->guard); /* after the server: it frees each slot as it closes */
    sse_hub_free(api->sse);
    auth_cache_free(api->auth);
    tenancy_release(&api->tenancy);
    api_metrics_free(api->metrics);
    pthread_mutex_destroy(&api->tenancy_commit_lock);
    free(api);
}
