/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_request.c: a harness over the whole request path. One input is one
 * HTTP request (method, path and query, headers, body, and which caller
 * sends it); it goes over a real loopback socket to the API server running
 * in this process (libmicrohttpd, the router, RBAC, the handlers) against a
 * store seeded once through the same API. Any request must get a response
 * that is not a 5xx, and the server must not crash or trip a sanitizer.
 *
 * Input format, readable so the seed corpus can be written by hand:
 *   line 1:   "<caller> <METHOD> <target>"   caller: admin, member, viewer,
 *             other (a member of the other organization) or none
 *   lines:    "Name: value" headers, up to an empty line
 *   the rest: the body
 * Bytes that HTTP does not allow where they fall are dropped from the method
 * and header names and percent-encoded in the target, so the fuzzer spends
 * its time on the handlers rather than on being refused by the parser. An
 * input that brings its own Content-Length or Transfer-Encoding header gets
 * its framing sent as written and need not get a response.
 *
 * Built twice: with libFuzzer (fuzz_request, scripts/fuzz.sh), and with
 * fuzz_replay.c's main, which runs each file named on its command line once
 * (ctest fuzz.replay_request: the corpus replayed in every build).
 */
#include "base/common.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <jansson.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "engine/engine.h"
#include "store/store.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_request_shutdown(void);

#define MAX_RESPONSE (8u << 20)

enum caller { C_ADMIN, C_MEMBER, C_VIEWER, C_OTHER, C_NONE, N_CALLERS };
static const char *const caller_name[N_CALLERS] = {"admin", "member", "viewer", "other", "none"};

static struct {
    char dir[256];
    struct store *store;
    struct engine *engine;
    struct api *api;
    int port;
    char *token[N_CALLERS];
} srv;

struct response {
    int status; /* 0: none came */
    struct buf raw;
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz_request: %s\n", what);
    abort();
}

/* The three digits of a status line's code; 0 when they are not digits. */
static int status_code(const char *p)
{
    int code = 0;
    for (int i = 0; i < 3; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        code = code * 10 + (p[i] - '0');
    }
    return code;
}

/*
 * Sends len bytes of a complete request and reads the response until the
 * server closes (every request says Connection: close), or until the headers
 * of an event stream, which never ends. half_close: shut the writing side
 * after the request, for inputs whose framing claims more than they send.
 */
static void exchange(const char *req, size_t len, bool half_close, struct response *ret)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    struct timeval tv = {.tv_sec = 5};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char chunk[16384];
    size_t off = 0;

    ret->status = 0;
    buf_init(&ret->raw, MAX_RESPONSE);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die("could not connect to the server in this process");
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    while (off < len) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the server may answer (413, 400) before reading it all */
        off += (size_t)n;
    }
    if (half_close)
        shutdown(fd, SHUT_WR);
    for (;;) {
        ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
        const char *end;
        if (n <= 0 || buf_append(&ret->raw, chunk, (size_t)n) < 0)
            break;
        end = memmem(ret->raw.data, ret->raw.len, "\r\n\r\n", 4);
        if (end && memmem(ret->raw.data, (size_t)(end - ret->raw.data), "text/event-stream", 17))
            break;
    }
    close(fd);
    if (ret->raw.len >= 12 && memcmp(ret->raw.data, "HTTP/1.", 7) == 0)
        ret->status = status_code(ret->raw.data + 9);
}

/* A request as the seeding does it: JSON in, JSON out (caller decrefs). */
static int call(const char *token, const char *method, const char *path, const char *body,
                json_t **ret_json)
{
    struct buf req;
    struct response resp;
    const char *start;
    size_t blen = body ? strlen(body) : 0;

    buf_init(&req, 1u << 20);
    buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method, path);
    if (token)
        buf_printf(&req, "Authorization: Bearer %s\r\n", token);
    if (body)
        buf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n", blen);
    buf_puts(&req, "\r\n");
    if (body)
        buf_append(&req, body, blen);
    exchange(req.data, req.len, false, &resp);
    buf_release(&req);
    *ret_json = NULL;
    start = resp.raw.data ? strstr(resp.raw.data, "\r\n\r\n") : NULL;
    if (start)
        *ret_json = json_loads(start + 4, JSON_DECODE_ANY, NULL);
    buf_release(&resp.raw);
    return resp.status;
}

/* POSTs body (a printf format) to /v1/<res> as the admin; the new object's id. */
static int64_t seed(const char *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t seed(const char *res, const char *fmt, ...)
{
    char body[2048], path[128];
    json_t *j;
    int64_t id;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    snprintf(path, sizeof(path), "/v1/%s", res);
    if (call(srv.token[C_ADMIN], "POST", path, body, &j) != 201 || !j) {
        char *text = j ? json_dumps(j, 0) : NULL;
        fprintf(stderr, "fuzz_request: seeding POST %s %s failed: %s\n", path, body,
                text ? text : "(no JSON)");
        abort();
    }
    id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static char *seed_token(int64_t user_id)
{
    char body[128];
    json_t *j;
    char *secret;

    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"name\":\"fuzz\"}", user_id);
    if (call(srv.token[C_ADMIN], "POST", "/v1/tokens", body, &j) != 201 || !j)
        die("seeding a token failed");
    secret = xstrdup(json_string_value(json_object_get(j, "token")));
    json_decref(j);
    return secret;
}

/*
 * Two organizations, each with a project, users bound as member or viewer,
 * a pool, a flavor, a quota, a budget, a price and queued work, so that the
 * handlers have objects of the caller's tenant and of another to find.
 */
static void seed_world(void)
{
    int64_t a, b, pa, pb, um, uv, uo, c1, n1, gc, g1, poola, fl;

    a = seed("organizations", "{\"name\":\"alpha\"}");
    b = seed("organizations", "{\"name\":\"zulu\"}");
    pa = seed("projects", "{\"org_id\":%" PRId64 ",\"name\":\"alpha-p\"}", a);
    pb = seed("projects", "{\"org_id\":%" PRId64 ",\"name\":\"zulu-p\"}", b);
    um = seed("users", "{\"name\":\"alpha-member\"}");
    uv = seed("users", "{\"name\":\"alpha-viewer\"}");
    uo = seed("users", "{\"name\":\"zulu-member\"}");
    seed("role-bindings",
         "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}", um, pa);
    seed("role-bindings",
         "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"project_id\":%" PRId64 "}", uv, pa);
    seed("role-bindings",
         "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}", uo, pb);
    c1 = seed("clusters", "{\"name\":\"c1\",\"backend\":\"sim\"}");
    n1 = seed("nodes", "{\"cluster_id\":%" PRId64 ",\"name\":\"node-1\",\"cpu_milli\":64000}", c1);
    gc = seed("gpu-classes", "{\"name\":\"h100\",\"vendor\":\"nvidia\",\"memory_mib\":81920}");
    g1 = seed("gpus",
              "{\"node_id\":%" PRId64 ",\"index\":0,\"gpu_class_id\":%" PRId64
              ",\"uuid\":\"GPU-1\"}",
              n1, gc);
    poola = seed("pools",
                 "{\"name\":\"alpha-pool\",\"owner_project_id\":%" PRId64 ",\"cluster_id\":%" PRId64
                 ",\"gpu_ids\":[%" PRId64 "],\"cost_per_gpu_hour_micros\":2000000}",
                 pa, c1, g1);
    seed("pools", "{\"name\":\"zulu-pool\",\"owner_project_id\":%" PRId64 "}", pb);
    fl = seed("flavors",
              "{\"name\":\"h100.1x\",\"gpu_class_id\":%" PRId64
              ",\"gpu_milli\":1000,\"pool_ids\":[%" PRId64 "]}",
              gc, poola);
    seed("quotas", "{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 ",\"limit_milli\":8000}",
         pa, gc);
    seed("quotas", "{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 ",\"limit_milli\":8000}",
         pb, gc);
    seed("budgets", "{\"project_id\":%" PRId64 ",\"money_micros\":1000000,\"currency\":\"EUR\"}",
         pa);
    seed("prices",
         "{\"flavor_id\":%" PRId64 ",\"currency\":\"EUR\",\"price_per_hour_micros\":3600000,"
         "\"effective_from\":\"2030-01-01T00:00:00Z\"}",
         fl);
    seed("workloads",
         "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
         ",\"priority_class\":\"owned\",\"duration_s\":60}",
         pa, fl);
    seed("workloads",
         "{\"project_id\":%" PRId64 ",\"flavor_id\":%" PRId64
         ",\"priority_class\":\"opportunistic\",\"duration_s\":60}",
         pb, fl);
    srv.token[C_MEMBER] = seed_token(um);
    srv.token[C_VIEWER] = seed_token(uv);
    srv.token[C_OTHER] = seed_token(uo);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct store_options sopt = {.n_conns = 4, .busy_timeout_ms = 5000, .sqlite_sync_full = false};
    struct engine_options eopt;
    struct api_options aopt;
    struct error_info ei = {0};
    const char *tmp = getenv("TMPDIR");
    char db[320];

    (void)argc;
    (void)argv;
    log_set_level(LOG_ERROR);
    snprintf(srv.dir, sizeof(srv.dir), "%s/gpuaas-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(srv.dir))
        die("could not make a temporary directory");
    snprintf(db, sizeof(db), "%s/gpuaas.db", srv.dir);
    if (store_open(db, &sopt, &srv.store, &ei) < 0)
        die(ei.message);
    if (api_bootstrap(srv.store, &srv.token[C_ADMIN], &ei) < 0 || !srv.token[C_ADMIN])
        die("bootstrap failed");
    /* The real scheduler engine (on no fleet, submitted work stays queued). */
    engine_options_init(&eopt);
    if (engine_start(srv.store, &eopt, &srv.engine, &ei) < 0)
        die(ei.message);
    api_options_init(&aopt);
    aopt.engine = srv.engine;
    aopt.bind_addr = "127.0.0.1";
    aopt.port = 0;
    aopt.threads = 2;
    aopt.max_body_bytes = 1u << 20;
    aopt.conn_timeout_s = 10;
    if (api_start(srv.store, &aopt, &srv.api, &ei) < 0)
        die(ei.message);
    srv.port = api_port(srv.api);
    seed_world();
    return 0;
}

void fuzz_request_shutdown(void)
{
    char db[320];

    api_stop(srv.api);
    engine_stop(srv.engine);
    store_close(srv.store);
    for (int c = 0; c < N_CALLERS; c++)
        free(srv.token[c]);
    /* SQLite's files: the store and its journal */
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < ARRAY_SIZE(suffix); i++) {
        snprintf(db, sizeof(db), "%s/gpuaas.db%s", srv.dir, suffix[i]);
        unlink(db);
    }
    rmdir(srv.dir);
}

/* ---- one input as one request ---- */

static bool is_tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The next line of [*p, end), without its "\n" (and "\r"); false at the end. */
static bool next_line(const char **p, const char *end, const char **ret_s, size_t *ret_len)
{
    const char *nl;
    size_t len;

    if (*p >= end)
        return false;
    nl = memchr(*p, '\n', (size_t)(end - *p));
    len = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    *ret_s = *p;
    *p = nl ? nl + 1 : end;
    if (len > 0 && (*ret_s)[len - 1] == '\r')
        len--;
    *ret_len = len;
    return true;
}

/* The first line, [s, end): caller, method (token characters only) and target (percent-encoded). */
static enum caller request_line(const char *s, const char *end, struct buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *sp = memchr(s, ' ', (size_t)(end - s));
    enum caller who = C_NONE;
    size_t n_method = 0;

    if (!sp)
        sp = end;
    for (int c = 0; c < N_CALLERS; c++)
        if ((size_t)(sp - s) == strlen(caller_name[c]) &&
            memcmp(s, caller_name[c], (size_t)(sp - s)) == 0)
            who = (enum caller)c;
    s = sp < end ? sp + 1 : end;
    sp = memchr(s, ' ', (size_t)(end - s));
    if (!sp)
        sp = end;
    for (; s < sp && n_method < 16; s++)
        if (is_tchar((unsigned char)*s)) {
            buf_append(out, s, 1);
            n_method++;
        }
    if (n_method == 0)
        buf_puts(out, "GET");
    buf_puts(out, " ");
    s = sp < end ? sp + 1 : end;
    if (s == end || *s != '/')
        buf_puts(out, "/");
    for (size_t n = 0; s < end && n < 4096; s++, n++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c >= 0x7f || c == '#') {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            buf_append(out, esc, 3);
        } else {
            buf_append(out, s, 1);
        }
    }
    buf_puts(out, " HTTP/1.1\r\n");
    return who;
}

/* One header line: a name of token characters, a value without control characters. */
static void header_line(const char *s, size_t len, struct buf *out, bool *has_auth,
                        bool *has_framing)
{
    const char *colon = memchr(s, ':', len);
    size_t n_name = 0;
    struct buf name;

    if (!colon)
        return;
    buf_init(&name, 256);
    for (const char *p = s; p < colon && n_name < 64; p++, n_name++)
        if (is_tchar((unsigned char)*p))
            buf_append(&name, p, 1);
    if (name.len == 0 || strcasecmp(name.data, "host") == 0 ||
        strcasecmp(name.data, "connection") == 0) {
        buf_release(&name);
        return;
    }
    if (strcasecmp(name.data, "authorization") == 0)
        *has_auth = true;
    if (strcasecmp(name.data, "content-length") == 0 ||
        strcasecmp(name.data, "transfer-encoding") == 0)
        *has_framing = true;
    buf_append(out, name.data, name.len);
    buf_puts(out, ":");
    for (const char *p = colon + 1; p < s + len && p < colon + 1 + 4096; p++)
        if ((unsigned char)*p >= 0x20 && *p != 0x7f)
            buf_append(out, p, 1);
        else if (*p == '\t')
            buf_append(out, p, 1);
    buf_puts(out, "\r\n");
    buf_release(&name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size, *line;
    bool has_auth = false, has_framing = false;
    struct response resp;
    struct buf req;
    enum caller who;
    size_t len;
    int n_headers = 0;

    if (!next_line(&p, end, &line, &len))
        return 0;
    buf_init(&req, 4u << 20);
    who = request_line(line, line + len, &req);
    buf_puts(&req, "Host: 127.0.0.1\r\nConnection: close\r\n");
    while (next_line(&p, end, &line, &len) && len > 0)
        if (n_headers++ < 32)
            header_line(line, len, &req, &has_auth, &has_framing);
    if (!has_auth && srv.token[who])
        buf_printf(&req, "Authorization: Bearer %s\r\n", srv.token[who]);
    if (!has_framing && p < end)
        buf_printf(&req, "Content-Length: %zu\r\n", (size_t)(end - p));
    buf_puts(&req, "\r\n");
    if (p < end)
        buf_append(&req, p, (size_t)(end - p));
    exchange(req.data, req.len, has_framing, &resp);
    if ((!has_framing && resp.status == 0) || resp.status >= 500) {
        fprintf(stderr, "fuzz_request: %s for the request\n%.*s\n--- response ---\n%.*s\n",
                resp.status ? "a 5xx" : "no response", (int)(req.len > 4000 ? 4000 : req.len),
                req.data, (int)(resp.raw.len > 4000 ? 4000 : resp.raw.len),
                resp.raw.data ? resp.raw.data : "");
        abort();
    }
    buf_release(&resp.raw);
    buf_release(&req);
    return 0;
}
