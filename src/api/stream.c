/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.c: GET /v1/events with "Accept: text/event-stream": workload events
 * as server-sent events, as they are written, limited to the projects the
 * caller may see when the stream opens (and to ?project_id= / ?workload_id=).
 * Each event is "id: <event id>\nevent: <type>\ndata: <the event's JSON>\n\n";
 * a client resumes with Last-Event-ID (browsers' EventSource do this by
 * themselves) or ?after=ID; without either the stream starts with the next
 * event. A comment line every 15 s keeps proxies from closing an idle
 * stream, and a stream ends after 10 minutes.
 *
 * The caller is checked again before every batch and keepalive whenever
 * anything that can change what a token stands for has changed (the API's
 * generation), the tenancy moved, or the token's expiry passed: a token that
 * no longer authenticates (revoked, expired, its user disabled or deleted) or
 * whose roles changed ends the stream at once, before it delivers anything
 * more (a reconnect is checked like any request); otherwise what it may see
 * is computed again, so events are filtered by what the caller may see now.
 *
 * Threads: the content reader runs on libmicrohttpd's workers and must not
 * block them, so when it has nothing to send it suspends its connection; a
 * ticker thread resumes every suspended stream four times a second and each
 * one looks for new rows (one indexed query).
 */
#include "base/common.h"

#include <microhttpd.h>
#include <pthread.h>

#include "api/api-int.h"
#include "base/parse.h"
#include "base/timeutil.h"

#define TICK_MS 250
#define KEEPALIVE_MS 15000
#define LIFETIME_MS (10 * 60 * 1000)
#define BATCH 200

struct sse_stream {
    struct api *api;
    struct MHD_Connection *conn;
    bool admin;
    int64_t *projects; /* visible projects, sorted; ignored for admins */
    size_t n_projects;
    /* the caller as checked last: its token, its roles, and what they were checked against */
    char token_hash[65];
    int64_t token_expires_at; /* 0: none */
    struct binding *bindings;
    size_t n_bindings;
    uint64_t generation, tenancy_version;
    int64_t project_id, workload_id; /* filters; 0: none */
    int64_t last_id;
    int64_t opened_ms, written_ms;
    struct buf pending; /* formatted, not yet handed to the connection */
    size_t sent;
    bool suspended;
    struct sse_stream *next;
};

struct sse_hub {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t ticker;
    bool started, stopping;
    struct sse_stream *streams;
};

static void *ticker_main(void *arg)
{
    struct sse_hub *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        struct timespec ts;
        int64_t due = time_now_ms() + TICK_MS;
        ts.tv_sec = (time_t)(due / 1000);
        ts.tv_nsec = (long)(due % 1000) * 1000000;
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
        for (struct sse_stream *s = h->streams; s; s = s->next) {
            if (s->suspended) {
                s->suspended = false;
                MHD_resume_connection(s->conn);
            }
        }
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

struct sse_hub *sse_hub_new(void)
{
    struct sse_hub *h = xcalloc(1, sizeof(*h));
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    h->started = pthread_create(&h->ticker, NULL, ticker_main, h) == 0;
    return h;
}

void sse_hub_stop(struct sse_hub *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    for (struct sse_stream *s = h->streams; s; s = s->next) {
        if (s->suspended) {
            s->suspended = false;
            MHD_resume_connection(s->conn);
        }
    }
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
    if (h->started)
        pthread_join(h->ticker, NULL);
    h->started = false;
}

void sse_hub_free(struct sse_hub *h)
{
    if (!h)
        return;
    sse_hub_stop(h);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->wake);
    free(h);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t tenancy_version(struct api *api)
{
    uint64_t v;
    pthread_rwlock_rdlock(&api->tenancy.lock);
    v = api->tenancy.version;
    pthread_rwlock_unlock(&api->tenancy.lock);
    return v;
}

/* Remembers who the stream serves and what it may see, as r's caller is now. */
static void take_principal(struct sse_stream *s, struct req *r)
{
    int64_t *ids = NULL;
    size_t n = 0;

    s->admin = r->who->admin;
    snprintf(s->token_hash, sizeof(s->token_hash), "%s", r->who->token_hash);
    s->token_expires_at = r->who->token_expires_at;
    free(s->bindings);
    s->bindings = xcalloc(r->who->n_bindings + 1, sizeof(struct binding));
    if (r->who->n_bindings)
        memcpy(s->bindings, r->who->bindings, r->who->n_bindings * sizeof(struct binding));
    s->n_bindings = r->who->n_bindings;
    free(s->projects);
    s->projects = NULL;
    s->n_projects = 0;
    if (!s->admin) {
        rbac_visible_projects(r, &ids, &n);
        s->projects = xcalloc(n + 1, sizeof(int64_t));
        if (n)
            memcpy(s->projects, ids, n * sizeof(int64_t));
        qsort(s->projects, n, sizeof(int64_t), cmp_id);
        s->n_projects = n;
    }
}

static bool same_roles(const struct sse_stream *s, const struct principal *who)
{
    if (s->admin != who->admin || s->n_bindings != who->n_bindings)
        return false;
    for (size_t i = 0; i < s->n_bindings; i++) {
        bool found = false;
        const struct binding *b = &s->bindings[i];
        for (size_t k = 0; k < who->n_bindings && !found; k++) {
            const struct binding *c = &who->bindings[k];
            found = b->role == c->role && b->org_id == c->org_id && b->project_id == c->project_id;
        }
        if (!found)
            return false;
    }
    return true;
}

/*
 * Checks the stream's caller again when something it depends on may have
 * changed. false: the stream must end (the token no longer authenticates, or
 * its roles changed); true: go on, with what it may see brought up to date.
 */
static bool caller_still_valid(struct sse_stream *s, int64_t now_ms)
{
    uint64_t gen = atomic_load(&s->api->generation), tv = tenancy_version(s->api);
    struct error_info ei = {0};
    struct req q = {0};
    bool ok;

    if (gen == s->generation && tv == s->tenancy_version &&
        (s->token_expires_at == 0 || s->token_expires_at > now_ms / 1000))
        return true;
    q.api = s->api;
    q.now = now_ms / 1000;
    arena_init(&q.arena);
    ok = auth_by_hash(&q, s->token_hash, &ei) >= 0 && rbac_refresh(&q, &ei) >= 0 &&
         same_roles(s, q.who);
    if (ok && s->project_id && !s->admin && rbac_role_on_project(&q, s->project_id) < ROLE_VIEWER)
        ok = false;
    if (ok) {
        take_principal(s, &q);
        s->generation = gen;
        s->tenancy_version = tv;
    }
    if (q.db)
        store_conn_put(q.db);
    arena_release(&q.arena);
    return ok;
}

/* Reads the next events after last_id into pending; returns how many. */
static int fetch(struct sse_stream *s)
{
    const struct resource_def *d = &model_events;
    struct store_conn *c;
    struct store_filter f;
    struct error_info ei = {0};
    struct arena a;
    struct row *rows;
    size_t n = 0;
    int rc;

    if (!s->admin && s->n_projects == 0)
        return 0;
    store_filter_init(&f);
    f.limit = BATCH;
    f.after_id = s->last_id;
    if (s->project_id)
        store_filter_eq_int(&f, F_EVENTS_PROJECT_ID, s->project_id);
    if (s->workload_id)
        store_filter_eq_int(&f, F_EVENTS_WORKLOAD_ID, s->workload_id);
    if (!s->admin)
        store_filter_any(&f, F_EVENTS_PROJECT_ID, s->projects, s->n_projects);
    arena_init(&a);
    c = store_conn_get(s->api->store);
    rc = store_list(c, d, &f, &a, &rows, &n, &ei);
    store_conn_put(c);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        json_t *j = model_encode(d, &rows[i]);
        char *text = json_dumps(j, JSON_COMPACT);
        s->last_id = model_row_id(&rows[i]);
        buf_printf(&s->pending, "id: %" PRId64 "\nevent: %s\ndata: %s\n\n", s->last_id,
                   row_get(&rows[i], F_EVENTS_TYPE)->s, text ? text : "{}");
        free(text);
        json_decref(j);
    }
    arena_release(&a);
    return rc < 0 ? 0 : (int)n;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *out, size_t max)
{
    struct sse_stream *s = cls;
    int64_t now = time_now_ms();
    (void)pos;

    if (s->sent == s->pending.len) {
        buf_reset(&s->pending);
        s->sent = 0;
        if (now - s->opened_ms >= LIFETIME_MS || !caller_still_valid(s, now))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (fetch(s) == 0 && now - s->written_ms >= KEEPALIVE_MS)
            buf_puts(&s->pending, ": keepalive\n\n");
    }
    if (s->sent < s->pending.len) {
        size_t n = s->pending.len - s->sent;
        if (n > max)
            n = max;
        memcpy(out, s->pending.data + s->sent, n);
        s->sent += n;
        s->written_ms = now;
        return (ssize_t)n;
    }
    /* Nothing to say: park the connection until the ticker wakes it. */
    {
        struct sse_hub *h = s->api->sse;
        bool stop;
        pthread_mutex_lock(&h->lock);
        stop = h->stopping;
        if (!stop) {
            s->suspended = true;
            MHD_suspend_connection(s->conn);
        }
        pthread_mutex_unlock(&h->lock);
        return stop ? MHD_CONTENT_READER_END_OF_STREAM : 0;
    }
}

static void free_stream(void *cls)
{
    struct sse_stream *s = cls;
    struct sse_hub *h = s->api->sse;
    pthread_mutex_lock(&h->lock);
    for (struct sse_stream **p = &h->streams; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    buf_release(&s->pending);
    free(s->projects);
    free(s->bindings);
    free(s);
}

bool stream_wanted(struct req *r)
{
    const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
    return accept && strstr(accept, "text/event-stream") != NULL;
}

static int id_arg(struct req *r, const char *name, int64_t *ret, struct error_info *ei)
{
    const char *v = req_arg(r, name);
    *ret = 0;
    if (v && parse_int64(v, 0, INT64_MAX, ret) < 0)
        return errinfo_set(ei, ERR_INVALID, name, "parameter '%s' must be an id", name);
    return 0;
}

/* GET /v1/events as a stream: sets r->stream, or an error reply. */
static void stream_events(struct req *r)
{
    struct error_info ei = {0};
    const char *last = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Last-Event-ID");
    struct sse_stream *s = xcalloc(1, sizeof(*s));
    int64_t after = -1;
    int rc;

    s->api = r->api;
    s->conn = r->conn;
    s->admin = r->who->admin;
    /* The caller may have changed since it was authenticated: the first refill checks it. */
    s->generation = UINT64_MAX;
    rc = id_arg(r, "project_id", &s->project_id, &ei);
    if (rc >= 0)
        rc = id_arg(r, "workload_id", &s->workload_id, &ei);
    if (rc >= 0 && req_arg(r, "after"))
        rc = id_arg(r, "after", &after, &ei);
    if (rc >= 0 && last && parse_int64(last, 0, INT64_MAX, &after) < 0)
        rc = errinfo_set(&ei, ERR_INVALID, NULL, "Last-Event-ID '%.30s' is not an event id", last);
    if (rc >= 0 && s->project_id && !s->admin && rbac_role_on_project(r, s->project_id) < ROLE_VIEWER)
        rc = errinfo_set(&ei, ERR_NOT_FOUND, "project_id", "no project %" PRId64, s->project_id);
    if (rc >= 0 && after < 0)
        rc = store_max_id(req_db(r), &model_events, &after, &ei);
    if (rc < 0) {
        free(s);
        req_reply_error(r, rc, &ei);
        return;
    }
    take_principal(s, r);
    s->last_id = after;
    s->opened_ms = s->written_ms = time_now_ms();
    buf_init(&s->pending, 4u << 20);
    /* A first comment, so the client sees the stream is open at once. */
    buf_puts(&s->pending, ": events of gpuaas\n\n");
    pthread_mutex_lock(&r->api->sse->lock);
    s->next = r->api->sse->streams;
    r->api->sse->streams = s;
    pthread_mutex_unlock(&r->api->sse->lock);
    r->stream = s;
    r->status = 200;
}

struct MHD_Response *stream_response(struct req *r)
{
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 16384, read_stream, r->stream, free_stream);
    if (!resp) {
        free_stream(r->stream);
        return NULL;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return resp;
}

/* /v1/events is the generic list, or with Accept: text/event-stream this stream. */
const struct resource_hooks stream_event_hooks = {.stream = stream_events};
