/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-client.c: the backend's connection to a kube-apiserver over libcurl:
 * HTTPS only, the kubeconfig's CA (file or inline PEM), a bearer token
 * (inline, or a file read again when refused: projected tokens rotate) or
 * a client certificate. Requests are bounded in time and size; watches are
 * streamed, and pod creates and deletes sent, through curl multi handles
 * that the engine's thread drives without blocking (kube_watch_pump,
 * kube_async_pump), so no thread of the backend's own.
 */
#include "base/common.h"

#include <sodium.h>
#include <sys/stat.h>

#include "backend/kube-int.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#define ANSWER_MAX (256u * 1024 * 1024) /* a list of every pod of a large cluster */
#define EVENT_MAX (16u * 1024 * 1024)   /* one watch event (one object) */
#define PUMP_ROUNDS 256                 /* reads of a watch per pump: about 4 MiB */
#define TOKEN_MAX (64 * 1024)
#define CONNECT_TIMEOUT_MS 5000L
#define REQUEST_TIMEOUT_MS 30000L
#define TOKEN_CHECK_MS 1000 /* how often a token file is looked at for a new token */

/* Frees a string that held a secret, zeroed first. */
static void wipe_free(char *s, size_t size)
{
    if (s) {
        sodium_memzero(s, size);
        free(s);
    }
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct buf *b = arg;
    return buf_append(b, p, size * n) == 0 ? size * n : 0; /* too large: CURLE_WRITE_ERROR */
}

/* The Authorization header of the config's token (its file read now); NULL when none. */
static char *auth_header(const struct kube_config *c, struct error_info *ei)
{
    if (c->token_file) {
        char *t = xmalloc(TOKEN_MAX);
        ssize_t n = file_read_small(c->token_file, t, TOKEN_MAX);
        char *h;
        if (n <= 0) {
            errinfo_set(ei, ERR_INVALID, "endpoint",
                        "cannot read the kubeconfig's token file %.100s", c->token_file);
            free(t);
            return NULL;
        }
        while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
            t[--n] = '\0';
        h = xasprintf("Authorization: Bearer %s", t);
        wipe_free(t, TOKEN_MAX);
        return h;
    }
    return c->token ? xasprintf("Authorization: Bearer %s", c->token) : NULL;
}

/* The TLS and identity options every handle of k gets. */
static void setup(struct kube_client *k, CURL *c)
{
    const struct kube_config *cfg = k->cfg;

    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (cfg->ca_data) {
        struct curl_blob blob = {cfg->ca_data, cfg->ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    } else if (cfg->ca_file) {
        curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
    }
    if (cfg->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (cfg->cert_data) {
        struct curl_blob cert = {cfg->cert_data, cfg->cert_len, CURL_BLOB_COPY};
        struct curl_blob key = {cfg->key_data, cfg->key_len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    } else if (cfg->cert_file) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, cfg->cert_file);
        curl_easy_setopt(c, CURLOPT_SSLKEY, cfg->key_file);
    }
}

/*
 * After a 401: the token file read again (projected tokens rotate). Whether
 * there is a token from a file to try again with.
 */
static bool reread_token(struct kube_client *k)
{
    char *auth = k->cfg->token_file ? auth_header(k->cfg, NULL) : NULL;
    if (!auth)
        return false;
    if (k->auth)
        wipe_free(k->auth, strlen(k->auth));
    k->auth = auth;
    return true;
}

/* What the token file is now, to see it replaced (file_id_same). */
static void file_id(const char *path, struct kube_file_id *ret)
{
    struct stat st;

    memset(ret, 0, sizeof(*ret));
    if (stat(path, &st) == 0) {
        ret->ino = st.st_ino;
        ret->size = st.st_size;
        ret->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
}

/*
 * A token file written again (a projected token is replaced well before it
 * expires, the kubelet swapping a symlink) is read again before the next
 * request, not only after a 401: a watch refused with 401 reads nothing
 * again by itself, and every request sent with the old token would be
 * refused once it is revoked. Looked at once a second at most.
 */
static void token_refresh(struct kube_client *k)
{
    struct kube_file_id now;
    int64_t t = time_mono_ms();

    if (!k->cfg->token_file || t - k->token_checked_ms < TOKEN_CHECK_MS)
        return;
    k->token_checked_ms = t;
    file_id(k->cfg->token_file, &now);
    if (now.ino == k->token_id.ino && now.size == k->token_id.size &&
        now.mtime_ns == k->token_id.mtime_ns)
        return;
    if (reread_token(k))
        k->token_id = now;
}

int kube_client_new(const char *kubeconfig, struct kube_client **ret, struct error_info *ei)
{
    struct kube_config *cfg;
    struct kube_client *k;
    int rc = kube_config_load(kubeconfig, &cfg, ei);

    *ret = NULL;
    if (rc < 0)
        return rc;
    k = xcalloc(1, sizeof(*k));
    k->cfg = cfg;
    if (cfg->token_file) {
        file_id(cfg->token_file, &k->token_id);
        k->token_checked_ms = time_mono_ms();
    }
    k->auth = auth_header(cfg, ei);
    if ((cfg->token || cfg->token_file) && !k->auth) {
        kube_client_free(k);
        return ERR_INVALID;
    }
    k->easy = curl_easy_init();
    if (!k->easy) {
        kube_client_free(k);
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not create a curl handle");
    }
    *ret = k;
    return 0;
}

void kube_client_free(struct kube_client *k)
{
    if (!k)
        return;
    if (k->easy)
        curl_easy_cleanup(k->easy);
    if (k->auth)
        wipe_free(k->auth, strlen(k->auth));
    kube_config_free(k->cfg);
    free(k);
}

/* curl's failure said for people: where, and what kind of trouble. */
static int transport_error(const struct kube_client *k, CURLcode cc, const char *detail,
                           struct error_info *ei)
{
    const char *what = "cannot reach the apiserver";
    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
        what = "TLS with the apiserver failed (is the kubeconfig's CA the cluster's?)";
        break;
    case CURLE_OPERATION_TIMEDOUT:
        what = "the apiserver did not answer in time";
        break;
    default:
        break;
    }
    return errinfo_set(ei, ERR_UNAVAILABLE, "endpoint", "%s at %.100s: %.120s", what,
                       k->cfg->server, detail[0] ? detail : curl_easy_strerror(cc));
}

/*
 * Sets c up for one request of k (its TLS and identity, the method, the URL,
 * a body or NULL sent as content_type, JSON by default), its answer into
 * answer and curl's words into errbuf. Returns the header list, the
 * caller's to free once the request is done.
 */
static struct curl_slist *request_setup(struct kube_client *k, CURL *c, const char *method,
                                        const char *url, const char *content_type, const char *body,
                                        struct buf *answer, char *errbuf)
{
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    char ct[128];

    token_refresh(k);
    setup(k, c);
    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type ? content_type : "application/json");
    if (body)
        h = curl_slist_append(h, ct);
    if (k->auth)
        h = curl_slist_append(h, k->auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    return h;
}

/* One request, its answer's bytes into answer (bounded by its maximum). */
static int call_raw(struct kube_client *k, const char *method, const char *path,
                    const char *content_type, const char *body, long *ret_status,
                    struct buf *answer, struct error_info *ei)
{
    CURL *c = k->easy;
    struct curl_slist *h;
    char *url = xasprintf("%s%s", k->cfg->server, path), errbuf[CURL_ERROR_SIZE] = "";
    CURLcode cc;
    int rc = 0;

    curl_easy_reset(c);
    h = request_setup(k, c, method, url, content_type, body, answer, errbuf);
    cc = curl_easy_perform(c);
    if (cc != CURLE_OK)
        rc = transport_error(k, cc, errbuf, ei);
    else
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_status);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    free(url);
    return rc;
}

static int call_once(struct kube_client *k, const char *method, const char *path,
                     const char *content_type, const char *body, long *ret_status, json_t **ret,
                     struct error_info *ei)
{
    struct buf answer;
    int rc;

    buf_init(&answer, ANSWER_MAX);
    rc = call_raw(k, method, path, content_type, body, ret_status, &answer, ei);
    if (rc == 0)
        *ret = answer.data ? json_loadb(answer.data, answer.len, 0, NULL) : NULL;
    buf_release(&answer);
    return rc;
}

int kube_call(struct kube_client *k, const char *method, const char *path, const char *content_type,
              json_t *body, long *ret_status, json_t **ret, struct error_info *ei)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int rc;

    *ret = NULL;
    *ret_status = 0;
    rc = call_once(k, method, path, content_type, text, ret_status, ret, ei);
    if (rc == 0 && *ret_status == 401 && reread_token(k)) {
        /* a rotated token: its file read again, the request sent once more */
        json_decref(*ret);
        *ret = NULL;
        rc = call_once(k, method, path, content_type, text, ret_status, ret, ei);
    }
    free(text);
    return rc;
}

int kube_get_text(struct kube_client *k, const char *path, long *ret_status, struct buf *out,
                  struct error_info *ei)
{
    int rc;

    *ret_status = 0;
    rc = call_raw(k, "GET", path, NULL, NULL, ret_status, out, ei);
    if (rc == 0 && *ret_status == 401 && reread_token(k)) {
        out->len = 0;
        rc = call_raw(k, "GET", path, NULL, NULL, ret_status, out, ei);
    }
    return rc;
}

void kube_answer_message(long status, json_t *ans, char *out, size_t size)
{
    const char *msg = json_string_value(json_object_get(ans, "message"));
    const char *why = status == 401   ? " (the apiserver refused the credentials: "
                                        "expired or wrong token or certificate)"
                      : status == 403 ? " (RBAC: the kubeconfig's user may not do this)"
                                      : "";
    snprintf(out, size, "HTTP %ld%s%s%.120s", status, why, msg ? ": " : "", msg ? msg : "");
}

/* ---- watches ---- */

void kube_watch_stop(struct kube_watch *w)
{
    if (w->multi && w->easy)
        curl_multi_remove_handle(w->multi, w->easy);
    if (w->easy)
        curl_easy_cleanup(w->easy);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    curl_slist_free_all(w->headers);
    buf_release(&w->data);
    memset(w, 0, sizeof(*w));
}

int kube_watch_start(struct kube_client *k, struct kube_watch *w, const char *path,
                     struct error_info *ei)
{
    char *url = xasprintf("%s%s", k->cfg->server, path);

    kube_watch_stop(w);
    buf_init(&w->data, EVENT_MAX);
    w->multi = curl_multi_init();
    w->easy = curl_easy_init();
    if (!w->multi || !w->easy) {
        free(url);
        kube_watch_stop(w);
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not create a curl handle");
    }
    token_refresh(k);
    setup(k, w->easy);
    w->headers = curl_slist_append(w->headers, "Accept: application/json");
    if (k->auth)
        w->headers = curl_slist_append(w->headers, k->auth);
    curl_easy_setopt(w->easy, CURLOPT_URL, url);
    curl_easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->headers);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, &w->data);
    /* a silent stream for this long is dead (the server sends bookmarks about every minute) */
    curl_easy_setopt(w->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(w->easy, CURLOPT_LOW_SPEED_TIME, 150L);
    free(url);
    curl_multi_add_handle(w->multi, w->easy);
    w->open = true;
    return 0;
}

/* Hands each complete line of w's data to fn, keeping an unfinished last line. */
static void split_events(struct kube_watch *w, void (*fn)(void *arg, json_t *event), void *arg)
{
    size_t start = 0;

    for (size_t i = 0; i < w->data.len; i++) {
        json_t *ev;
        if (w->data.data[i] != '\n')
            continue;
        ev = json_loadb(w->data.data + start, i - start, 0, NULL);
        if (ev)
            fn(arg, ev);
        json_decref(ev);
        start = i + 1;
    }
    if (start > 0) {
        memmove(w->data.data, w->data.data + start, w->data.len - start);
        w->data.len -= start;
        w->data.data[w->data.len] = '\0';
    }
}

int kube_watch_pump(struct kube_watch *w, void (*fn)(void *arg, json_t *event), void *arg,
                    struct error_info *ei)
{
    int running = 0, left;
    CURLMsg *m;

    if (!w->open)
        return 0;
    /*
     * One curl_multi_perform() moves about one socket read (16 KiB, a few
     * pod events); under load the stream then falls behind by minutes.
     * Read until nothing more has arrived, a bounded number of times.
     */
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        size_t before = w->data.len;
        curl_multi_perform(w->multi, &running);
        if (w->data.len == before)
            break;
        split_events(w, fn, arg);
    }
    while ((m = curl_multi_info_read(w->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->status);
        if (m->data.result != CURLE_OK)
            errinfo_set(ei, ERR_UNAVAILABLE, NULL, "the watch broke: %s",
                        curl_easy_strerror(m->data.result));
        else if (w->status != 200)
            errinfo_set(ei, ERR_UNAVAILABLE, NULL, "the watch was refused: HTTP %ld", w->status);
        w->open = false;
    }
    return w->open ? 1 : 0;
}

/* ---- requests that do not wait ---- */

struct kube_request {
    CURL *easy;
    struct curl_slist *headers;
    char *url, *body, *method;
    struct buf answer;
    char errbuf[CURL_ERROR_SIZE];
    int64_t tag;
    int sub;
    bool retried; /* sent again once after a 401, with the token file read again */
};

struct kube_async {
    struct kube_client *k;
    CURLM *multi;
    struct kube_request **queue; /* not started yet, oldest first */
    size_t n_queue, cap_queue, head;
    struct kube_request *live[KUBE_ASYNC_MAX]; /* started, not answered */
    size_t running;
};

struct kube_async *kube_async_new(struct kube_client *k)
{
    struct kube_async *a = xcalloc(1, sizeof(*a));

    a->k = k;
    a->multi = curl_multi_init(); /* NULL only without memory: requests then fail one by one */
    /* HTTP/2 where the apiserver offers it: the requests share one connection */
    curl_multi_setopt(a->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(a->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 8L);
    return a;
}

static void request_free(struct kube_request *q)
{
    if (!q)
        return;
    if (q->easy)
        curl_easy_cleanup(q->easy);
    curl_slist_free_all(q->headers);
    buf_release(&q->answer);
    free(q->url);
    free(q->body);
    free(q->method);
    free(q);
}

void kube_async_free(struct kube_async *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->running; i++) {
        curl_multi_remove_handle(a->multi, a->live[i]->easy);
        request_free(a->live[i]);
    }
    for (size_t i = a->head; i < a->n_queue; i++)
        request_free(a->queue[i]);
    free(a->queue);
    if (a->multi)
        curl_multi_cleanup(a->multi);
    free(a);
}

void kube_async_send(struct kube_async *a, const char *method, const char *path, json_t *body,
                     int64_t tag, int sub)
{
    struct kube_request *q = xcalloc(1, sizeof(*q));

    q->url = xasprintf("%s%s", a->k->cfg->server, path);
    q->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    q->method = xstrdup(method);
    q->tag = tag;
    q->sub = sub;
    buf_init(&q->answer, ANSWER_MAX);
    if (a->head > 0 && a->head == a->n_queue)
        a->head = a->n_queue = 0;
    ALLOC_GROW(a->queue, a->n_queue + 1, a->cap_queue);
    a->queue[a->n_queue++] = q;
}

size_t kube_async_pending(const struct kube_async *a)
{
    return a->running + (a->n_queue - a->head);
}

void kube_async_wait(struct kube_async *a, int ms)
{
    if (a->multi && a->running > 0)
        curl_multi_poll(a->multi, NULL, 0, ms, NULL);
    else if (ms > 0)
        usleep((useconds_t)ms * 1000);
}

/* Starts q on the multi handle; false (with q's errbuf set) when it could not be. */
static bool request_start(struct kube_async *a, struct kube_request *q)
{
    q->easy = curl_easy_init();
    if (!q->easy) {
        snprintf(q->errbuf, sizeof(q->errbuf), "could not create a curl handle");
        return false;
    }
    q->headers =
        request_setup(a->k, q->easy, q->method, q->url, NULL, q->body, &q->answer, q->errbuf);
    curl_easy_setopt(q->easy, CURLOPT_PRIVATE, (char *)q);
    curl_easy_setopt(q->easy, CURLOPT_PIPEWAIT, 1L);
    if (!a->multi || curl_multi_add_handle(a->multi, q->easy) != CURLM_OK) {
        snprintf(q->errbuf, sizeof(q->errbuf), "could not start the request");
        return false;
    }
    a->live[a->running++] = q;
    return true;
}

/*
 * A request refused with 401 while the token comes from a file: the file is
 * read again (a rotated token) and the request goes back in the queue, once.
 */
static bool send_again(struct kube_async *a, struct kube_request *q)
{
    long status = 0;
    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 401 || q->retried || !reread_token(a->k))
        return false;
    curl_easy_cleanup(q->easy);
    q->easy = NULL;
    curl_slist_free_all(q->headers);
    q->headers = NULL;
    q->answer.len = 0;
    q->retried = true;
    if (a->head > 0 && a->head == a->n_queue)
        a->head = a->n_queue = 0;
    ALLOC_GROW(a->queue, a->n_queue + 1, a->cap_queue);
    a->queue[a->n_queue++] = q;
    return true;
}

/* Hands q's answer (or its failure, cc) to fn. */
static void hand_over(struct kube_async *a, struct kube_request *q, CURLcode cc,
                      void (*fn)(void *arg, const struct kube_reply *r), void *arg)
{
    struct kube_reply r = {.tag = q->tag, .sub = q->sub};
    struct error_info ei = {0};

    if (cc == CURLE_OK && q->easy) {
        curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &r.status);
        r.answer = q->answer.data ? json_loadb(q->answer.data, q->answer.len, 0, NULL) : NULL;
        if (r.status < 200 || r.status > 299)
            kube_answer_message(r.status, r.answer, r.message, sizeof(r.message));
    } else if (q->easy && cc != CURLE_OK) {
        transport_error(a->k, cc, q->errbuf, &ei);
        snprintf(r.message, sizeof(r.message), "%.239s", ei.message);
    } else {
        snprintf(r.message, sizeof(r.message), "%.239s", q->errbuf);
    }
    fn(arg, &r);
    json_decref(r.answer);
}

void kube_async_pump(struct kube_async *a, void (*fn)(void *arg, const struct kube_reply *r),
                     void *arg)
{
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        int still = 0, left = 0;
        bool moved = false;
        CURLMsg *m;

        while (a->running < KUBE_ASYNC_MAX && a->head < a->n_queue) {
            struct kube_request *q = a->queue[a->head++];
            if (!request_start(a, q)) {
                hand_over(a, q, CURLE_FAILED_INIT, fn, arg);
                request_free(q);
            }
        }
        if (a->multi)
            curl_multi_perform(a->multi, &still);
        while (a->multi && (m = curl_multi_info_read(a->multi, &left))) {
            struct kube_request *q = NULL;
            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
            curl_multi_remove_handle(a->multi, m->easy_handle);
            for (size_t i = 0; i < a->running; i++)
                if (a->live[i] == q) {
                    a->live[i] = a->live[--a->running];
                    break;
                }
            moved = true;
            if (m->data.result == CURLE_OK && send_again(a, q))
                continue;
            hand_over(a, q, m->data.result, fn, arg);
            request_free(q);
        }
        if (!moved && (a->head == a->n_queue || a->running >= KUBE_ASYNC_MAX))
            break;
    }
}
