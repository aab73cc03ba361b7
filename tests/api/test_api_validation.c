/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_validation.c: bad input against a live server (docs/api.md,
 * "Bodies" and "Errors"). Every create endpoint gets malformed JSON, a
 * non-object body, duplicate keys, unknown and read-only fields, wrong types,
 * nulls, out-of-range numbers, too-long strings, bad names and references to
 * nothing, each expected to be 400 naming the field; then media types (415),
 * bodies over the server's max-body-bytes (413), unknown routes (404), wrong
 * methods (405), bad ids in paths (404) and bad query parameters (400). After
 * each rejected request the store must be unchanged: every list's ids and
 * the audit log are compared with a snapshot.
 *
 * Also: unique conflicts and deleting what is still referenced (409), cycles
 * in the organization tree (400), pagination over 250 objects, and the audit
 * entries written for create, update and delete (before/after, request id
 * equal to the X-Request-Id response header).
 */
#include "base/common.h"

#include <setjmp.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "model/model.h"
#include "support/testsrv.h"

#define MAX_BODY 4096

struct fixture {
    struct testsrv *srv;
    const char *tok; /* the admin's */
    int64_t org, org2, project, user, cluster, node, gpu_class, gpu_class2, gpu, pool;
    int failures; /* checks that failed; each is printed */
    /*
     * docs/api.md wants messages that name the field for bad values; other
     * 400s (a cycle in the tree) need only set detail.field.
     */
    bool loose_message;
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct testsrv_options opt = {.max_body_bytes = MAX_BODY};

    f->srv = testsrv_start_with(&opt);
    f->tok = f->srv->admin_token;
    f->org = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"org-1\"}");
    f->org2 = testsrv_create(f->srv, f->tok, "organizations",
                             "{\"name\":\"org-2\",\"parent_id\":%" PRId64 "}", f->org);
    f->project = testsrv_create(f->srv, f->tok, "projects",
                                "{\"org_id\":%" PRId64 ",\"name\":\"prj-1\"}", f->org);
    f->user = testsrv_create(f->srv, f->tok, "users", "{\"name\":\"user-1\"}");
    f->cluster =
        testsrv_create(f->srv, f->tok, "clusters", "{\"name\":\"c1\",\"backend\":\"sim\"}");
    f->node = testsrv_create(f->srv, f->tok, "nodes",
                             "{\"cluster_id\":%" PRId64 ",\"name\":\"node-1\"}", f->cluster);
    f->gpu_class = testsrv_create(f->srv, f->tok, "gpu-classes", "{\"name\":\"h100-80gb\"}");
    f->gpu_class2 = testsrv_create(f->srv, f->tok, "gpu-classes", "{\"name\":\"a100-40gb\"}");
    f->gpu = testsrv_create(f->srv, f->tok, "gpus",
                            "{\"node_id\":%" PRId64 ",\"index\":0,\"gpu_class_id\":%" PRId64 "}",
                            f->node, f->gpu_class);
    f->pool = testsrv_create(f->srv, f->tok, "pools",
                             "{\"name\":\"pool-1\",\"owner_project_id\":%" PRId64 "}", f->project);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f) {
        testsrv_stop(f->srv);
        free(f);
    }
    return 0;
}

static void failed(struct fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void failed(struct fixture *f, const char *fmt, ...)
{
    va_list ap;
    f->failures++;
    fprintf(stderr, "FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

static void finish(struct fixture *f)
{
    if (f->failures)
        fail_msg("%d check(s) failed (listed above)", f->failures);
}

/* ---- the store snapshot: every list's ids, and the audit log's ---- */

static const char *const all_resources[] = {
    "organizations", "projects", "users", "role-bindings", "tokens", "clusters",   "nodes",
    "gpu-classes",   "gpus",     "pools", "flavors",       "quotas", "org-quotas", "audit",
};

struct snapshot {
    size_t n[ARRAY_SIZE(all_resources)];
    int64_t sum[ARRAY_SIZE(all_resources)]; /* of ids: a swap of one object for another shows */
};

static void snap(struct fixture *f, struct snapshot *s)
{
    char path[64];
    for (size_t r = 0; r < ARRAY_SIZE(all_resources); r++) {
        int64_t *ids;
        snprintf(path, sizeof(path), "/v1/%s", all_resources[r]);
        s->n[r] = testsrv_list_ids(f->srv, f->tok, path, &ids);
        s->sum[r] = 0;
        for (size_t i = 0; i < s->n[r]; i++)
            s->sum[r] += ids[i];
        free(ids);
    }
}

/* Fails the check when anything was added or removed since `before`. */
static void expect_unchanged(struct fixture *f, const struct snapshot *before, const char *what)
{
    struct snapshot now;
    snap(f, &now);
    for (size_t r = 0; r < ARRAY_SIZE(all_resources); r++) {
        if (now.n[r] != before->n[r] || now.sum[r] != before->sum[r])
            failed(f, "%s: a rejected request changed %s (%zu objects before, %zu after)", what,
                   all_resources[r], before->n[r], now.n[r]);
    }
}

/*
 * Sends one request that must be rejected with `want` (and, when not NULL,
 * error code `code` and detail.field `field`), then checks that the store is
 * as it was.
 */
static void reject_raw(struct fixture *f, const struct testsrv_raw *req, long want,
                       const char *code, const char *field, const char *what)
{
    struct snapshot before;
    long got;
    json_t *j;

    snap(f, &before);
    testsrv_req_raw(f->srv, req, &got);
    j = f->srv->body_len ? json_loadb(f->srv->body, f->srv->body_len, 0, NULL) : NULL;
    if (got != want) {
        failed(f, "%s: %s %s: want %ld, got %ld: %.300s", what, req->method, req->path, want, got,
               f->srv->body);
    } else if (!j || !json_is_object(json_object_get(j, "error"))) {
        failed(f, "%s: %s %s: %ld without an error object: %.200s", what, req->method, req->path,
               got, f->srv->body);
    } else {
        if (code && strcmp(testsrv_err_code(j), code) != 0)
            failed(f, "%s: want code '%s', got: %.300s", what, code, f->srv->body);
        if (field && strcmp(testsrv_err_field(j), field) != 0)
            failed(f, "%s: want detail.field '%s', got: %.300s", what, field, f->srv->body);
        if (field && !f->loose_message && !strstr(testsrv_err_message(j), field))
            failed(f, "%s: the message does not name '%s': %.300s", what, field, f->srv->body);
        if (!*testsrv_err_message(j))
            failed(f, "%s: empty error message: %.300s", what, f->srv->body);
    }
    json_decref(j);
    expect_unchanged(f, &before, what);
}

static void reject(struct fixture *f, const char *method, const char *path, const char *body,
                   long want, const char *code, const char *field, const char *what)
{
    struct testsrv_raw req = {.method = method,
                              .path = path,
                              .token = f->tok,
                              .body = body,
                              .body_len = body ? strlen(body) : 0};
    reject_raw(f, &req, want, code, field, what);
}

/* ---- every create endpoint ---- */

/* A valid body for creating one of each resource. */
static char *valid_body(struct fixture *f, const char *res)
{
    if (strcmp(res, "organizations") == 0)
        return xasprintf("{\"name\":\"org-x\",\"display_name\":\"X\",\"parent_id\":%" PRId64
                         ",\"manager_id\":%" PRId64 ",\"cost_center\":\"cc-1\"}",
                         f->org, f->user);
    if (strcmp(res, "projects") == 0)
        return xasprintf("{\"org_id\":%" PRId64 ",\"name\":\"prj-x\",\"display_name\":\"X\","
                         "\"description\":\"d\",\"weight\":5}",
                         f->org);
    if (strcmp(res, "users") == 0)
        return xasprintf("{\"name\":\"user-x\",\"email\":\"x@example.com\",\"display_name\":\"X\","
                         "\"disabled\":false}");
    if (strcmp(res, "role-bindings") == 0)
        return xasprintf("{\"user_id\":%" PRId64 ",\"role\":\"member\",\"project_id\":%" PRId64 "}",
                         f->user, f->project);
    if (strcmp(res, "tokens") == 0)
        return xasprintf("{\"user_id\":%" PRId64 ",\"name\":\"ci\","
                         "\"expires_at\":\"2099-01-01T00:00:00Z\"}",
                         f->user);
    if (strcmp(res, "clusters") == 0)
        return xasprintf("{\"name\":\"c-x\",\"backend\":\"slurm\",\"endpoint\":\"slurm:6817\","
                         "\"labels\":{\"site\":\"x\"},\"description\":\"d\"}");
    if (strcmp(res, "nodes") == 0)
        return xasprintf("{\"cluster_id\":%" PRId64 ",\"name\":\"node-x\",\"cpu_milli\":1000,"
                         "\"memory_mib\":1024,\"labels\":{\"rack\":\"r1\"},\"state\":\"drain\"}",
                         f->cluster);
    if (strcmp(res, "gpu-classes") == 0)
        return xasprintf("{\"name\":\"h100-80gb/1g.10gb\",\"model\":\"H100\",\"vendor\":"
                         "\"nvidia\",\"memory_mib\":10240,\"parent_id\":%" PRId64 ",\"milli\":142}",
                         f->gpu_class);
    if (strcmp(res, "gpus") == 0)
        return xasprintf("{\"node_id\":%" PRId64 ",\"index\":1,\"uuid\":\"GPU-x\",\"gpu_class_id\":"
                         "%" PRId64 ",\"memory_mib\":81920,\"mig_mode\":false,\"health\":\"ok\"}",
                         f->node, f->gpu_class);
    if (strcmp(res, "pools") == 0)
        return xasprintf("{\"name\":\"pool-x\",\"owner_project_id\":%" PRId64
                         ",\"cost_per_gpu_hour_micros\":1000000,\"currency\":\"EUR\","
                         "\"cluster_id\":%" PRId64
                         ",\"node_selector\":{\"a\":\"b\"},\"gpu_ids\":[%" PRId64
                         "],\"access_project_ids\":[%" PRId64 "],\"access_org_ids\":[%" PRId64 "]}",
                         f->project, f->cluster, f->gpu, f->project, f->org);
    if (strcmp(res, "flavors") == 0)
        return xasprintf(
            "{\"name\":\"h100.1x\",\"description\":\"d\",\"gpu_class_id\":%" PRId64
            ",\"gpu_milli\":1000,\"vcpus\":8,\"memory_mib\":65536,"
            "\"price_per_hour_micros\":2500000,\"currency\":\"USD\",\"pool_ids\":[%" PRId64
            "],\"node_selector\":{},\"active\":true}",
            f->gpu_class, f->pool);
    if (strcmp(res, "quotas") == 0)
        return xasprintf("{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64
                         ",\"guaranteed_milli\":1000,\"limit_milli\":2000}",
                         f->project, f->gpu_class);
    if (strcmp(res, "org-quotas") == 0)
        return xasprintf("{\"org_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64
                         ",\"limit_milli\":2000}",
                         f->org, f->gpu_class);
    fail_msg("no valid body for '%s'", res);
    return NULL;
}

static const char *const creatable[] = {
    "organizations", "projects", "users", "role-bindings", "tokens", "clusters",   "nodes",
    "gpu-classes",   "gpus",     "pools", "flavors",       "quotas", "org-quotas",
};

/* The body with member `name` set to the JSON text `val` (NULL: removed). */
static char *with_member(const char *body, const char *name, const char *val)
{
    json_t *j = json_loads(body, 0, NULL);
    char *out, *copy;
    assert_non_null(j);
    if (val) {
        json_t *v = json_loads(val, JSON_DECODE_ANY, NULL);
        if (!v)
            fail_msg("bad test value %s", val);
        json_object_set_new(j, name, v);
    } else {
        json_object_del(j, name);
    }
    out = json_dumps(j, JSON_COMPACT);
    copy = xstrdup(out);
    free(out);
    json_decref(j);
    return copy;
}

static char *repeat(char c, size_t n)
{
    char *s = xmalloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* Each wrong-type value for a field type (JSON texts). */
static const char *const *wrong_types(enum field_type t)
{
    static const char *const ints[] = {"\"12\"", "1.5", "true", "[]", "{}", NULL};
    static const char *const bools[] = {"1", "\"true\"", "0", NULL};
    static const char *const strings[] = {"12", "true", "[]", "{}", NULL};
    static const char *const times[] = {"12", "\"yesterday\"", "\"2026-13-45T00:00:00Z\"", NULL};
    static const char *const labels[] = {"[]", "\"a=b\"", "{\"k\":1}", "{\"bad key\":\"v\"}", NULL};
    static const char *const reflists[] = {"{}", "[\"1\"]", "[0]", "[-1]", "5", "[1.5]", NULL};
    static const char *const none[] = {NULL};
    switch (t) {
    case FT_INT:
    case FT_REF:
        return ints;
    case FT_BOOL:
        return bools;
    case FT_STRING:
    case FT_NAME:
    case FT_IDENT:
    case FT_ENUM:
        return strings;
    case FT_TIME:
        return times;
    case FT_LABELS:
        return labels;
    case FT_REFLIST:
        return reflists;
    case FT_JSON:
        return none;
    }
    return none;
}

/*
 * Fields that exclude each other (a binding's or a pool's two scopes): when
 * one is under test the other leaves the body, so that the only thing wrong
 * is the value under test.
 */
static const char *partner_of(const char *res, const char *field)
{
    static const char *const pairs[][3] = {
        {"role-bindings", "org_id", "project_id"},
        {"pools", "owner_org_id", "owner_project_id"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
        if (strcmp(res, pairs[i][0]) != 0)
            continue;
        if (strcmp(field, pairs[i][1]) == 0)
            return pairs[i][2];
        if (strcmp(field, pairs[i][2]) == 0)
            return pairs[i][1];
    }
    return NULL;
}

static void check_field(struct fixture *f, const char *res, const char *path, const char *full_base,
                        const struct field_def *fd)
{
    char what[256], val[64];
    char *body;
    const char *partner = partner_of(res, fd->name);
    char *base = partner ? with_member(full_base, partner, NULL) : xstrdup(full_base);

#define TRY(json_val, label)                                                                       \
    do {                                                                                           \
        body = with_member(base, fd->name, (json_val));                                            \
        snprintf(what, sizeof(what), "%s.%s %s", res, fd->name, (label));                          \
        reject(f, "POST", path, body, 400, "invalid_argument", fd->name, what);                    \
        free(body);                                                                                \
    } while (0)

    if (fd->flags & FF_READONLY) {
        /* given by the client: always an error, whatever the value */
        TRY(fd->type == FT_TIME  ? "\"2026-01-01T00:00:00Z\""
            : fd->type == FT_INT ? "5"
                                 : "\"x\"",
            "read-only");
        free(base);
        return;
    }
    for (const char *const *v = wrong_types(fd->type); *v; v++) {
        char label[96];
        snprintf(label, sizeof(label), "wrong type %s", *v);
        TRY(*v, label);
    }
    if (!(fd->flags & FF_NULLABLE) && fd->type != FT_JSON)
        TRY("null", "null");
    if (fd->flags & FF_REQUIRED)
        TRY(NULL, "missing");
    if (fd->type == FT_INT) {
        if (fd->min > INT64_MIN) {
            snprintf(val, sizeof(val), "%" PRId64, fd->min - 1);
            TRY(val, "below minimum");
        }
        if (fd->max < INT64_MAX) {
            snprintf(val, sizeof(val), "%" PRId64, fd->max + 1);
            TRY(val, "above maximum");
        }
    }
    if (fd->type == FT_REF) {
        TRY("0", "id 0");
        TRY("-3", "negative id");
        TRY("999999", "nonexistent reference");
    }
    if (fd->type == FT_REFLIST)
        TRY("[999999]", "nonexistent reference in list");
    if (fd->type == FT_ENUM)
        TRY("\"no-such-value\"", "unknown enum value");
    if ((fd->type == FT_STRING || fd->type == FT_NAME || fd->type == FT_IDENT) && fd->max > 0 &&
        fd->max < MAX_BODY - 200) {
        char *s = repeat(fd->type == FT_STRING && fd->min == 3 ? 'A' : 'a', (size_t)fd->max + 1);
        char *q = xasprintf("\"%s\"", s);
        TRY(q, "too long");
        free(q);
        free(s);
    }
    if (fd->type == FT_STRING && fd->min > 0) {
        char *s = repeat('A', (size_t)fd->min - 1);
        char *q = xasprintf("\"%s\"", s);
        TRY(q, "too short");
        free(q);
        free(s);
    }
    if (fd->type == FT_STRING)
        TRY("\"bell\\u0007\"", "control character");
    if (fd->type == FT_NAME) {
        TRY("\"Upper\"", "upper case");
        TRY("\"with space\"", "space");
        TRY("\"-leading\"", "leading dash");
        TRY("\"a/b\"", "slash");
        TRY("\"\"", "empty");
        TRY("\"caf\\u00e9\"", "non-ASCII");
    }
    if (fd->type == FT_IDENT) {
        TRY("\"with space\"", "space");
        TRY("\"-leading\"", "leading dash");
        TRY("\"\"", "empty");
    }
#undef TRY
    free(base);
}

static void test_create_bodies(void **state)
{
    struct fixture *f = *state;

    for (size_t r = 0; r < ARRAY_SIZE(creatable); r++) {
        const char *res = creatable[r];
        const struct resource_def *def = model_find(res);
        char path[64], what[128];
        char *base = valid_body(f, res), *body;
        json_t *made;
        long got;

        assert_non_null(def);
        snprintf(path, sizeof(path), "/v1/%s", res);

        /* The base body really is valid: made, then removed again. */
        testsrv_req(f->srv, "POST", path, f->tok, base, &got, &made);
        if (got != 201) {
            failed(f, "%s: the valid body %s was refused: %ld %s", res, base, got, f->srv->body);
        } else {
            char item[96];
            snprintf(item, sizeof(item), "%s/%" PRId64, path, testsrv_id(made));
            testsrv_expect(f->srv, "DELETE", item, f->tok, NULL, 204);
        }
        json_decref(made);

        snprintf(what, sizeof(what), "%s malformed JSON", res);
        reject(f, "POST", path, "{\"name\":", 400, "malformed_json", NULL, what);
        reject(f, "POST", path, "{\"name\":\"x\",}", 400, "malformed_json", NULL, what);
        reject(f, "POST", path, "not json", 400, "malformed_json", NULL, what);
        {
            /* a NUL byte inside the body */
            struct testsrv_raw req = {.method = "POST",
                                      .path = path,
                                      .token = f->tok,
                                      .body = "{\"name\":\"a\"}\0{}",
                                      .body_len = 15};
            reject_raw(f, &req, 400, "malformed_json", NULL, what);
        }
        snprintf(what, sizeof(what), "%s empty body", res);
        reject(f, "POST", path, "", 400, NULL, NULL, what);
        snprintf(what, sizeof(what), "%s two objects", res);
        reject(f, "POST", path, "{} {}", 400, "malformed_json", NULL, what);
        snprintf(what, sizeof(what), "%s array body", res);
        reject(f, "POST", path, "[1,2]", 400, NULL, NULL, what);
        reject(f, "POST", path, "[]", 400, NULL, NULL, what);
        snprintf(what, sizeof(what), "%s scalar body", res);
        reject(f, "POST", path, "\"x\"", 400, NULL, NULL, what);
        reject(f, "POST", path, "null", 400, NULL, NULL, what);
        reject(f, "POST", path, "17", 400, NULL, NULL, what);

        /* duplicate keys: the message names the field */
        {
            /* base names every field already: the first again makes a duplicate */
            const char *first = def->fields[1].name;
            char *dup = xasprintf("{\"%s\":1,%s", first, base + 1);
            snprintf(what, sizeof(what), "%s duplicate key '%s'", res, first);
            {
                struct snapshot before;
                long st;
                json_t *resp;
                snap(f, &before);
                testsrv_req(f->srv, "POST", path, f->tok, dup, &st, &resp);
                if (st != 400)
                    failed(f, "%s: want 400, got %ld: %s", what, st, f->srv->body);
                else if (!strstr(testsrv_err_message(resp), first))
                    failed(f, "%s: the message does not name the field: %s", what, f->srv->body);
                json_decref(resp);
                expect_unchanged(f, &before, what);
            }
            free(dup);
        }

        /* unknown field */
        body = with_member(base, "bogus_field", "1");
        snprintf(what, sizeof(what), "%s unknown field", res);
        reject(f, "POST", path, body, 400, "invalid_argument", "bogus_field", what);
        free(body);
        body = with_member(base, "Name", "\"x\"");
        snprintf(what, sizeof(what), "%s unknown field (case)", res);
        reject(f, "POST", path, body, 400, "invalid_argument", "Name", what);
        free(body);

        /* read-only fields every resource has */
        body = with_member(base, "id", "5");
        snprintf(what, sizeof(what), "%s read-only id", res);
        reject(f, "POST", path, body, 400, "invalid_argument", "id", what);
        free(body);
        if (model_field_index(def, "created_at") >= 0) {
            body = with_member(base, "created_at", "\"2026-01-01T00:00:00Z\"");
            snprintf(what, sizeof(what), "%s read-only created_at", res);
            reject(f, "POST", path, body, 400, "invalid_argument", "created_at", what);
            free(body);
        }

        /* every field, by its type */
        for (size_t i = 1; i < def->n_fields; i++) {
            if (def->fields[i].flags & FF_SECRET) {
                /* never accepted from a client */
                body = with_member(base, def->fields[i].name, "\"x\"");
                snprintf(what, sizeof(what), "%s secret field %s", res, def->fields[i].name);
                reject(f, "POST", path, body, 400, "invalid_argument", NULL, what);
                free(body);
                continue;
            }
            check_field(f, res, path, base, &def->fields[i]);
        }
        free(base);
    }
    finish(f);
}

/* Cross-field rules and the semantic checks that docs/api.md names. */
static void test_create_rules(void **state)
{
    struct fixture *f = *state;
    char body[512];

    snprintf(body, sizeof(body),
             "{\"name\":\"p2\",\"owner_project_id\":%" PRId64 ",\"owner_org_id\":%" PRId64 "}",
             f->project, f->org);
    reject(f, "POST", "/v1/pools", body, 400, "invalid_argument", NULL, "pool with two owners");
    reject(f, "POST", "/v1/pools", "{\"name\":\"p2\"}", 400, "invalid_argument", NULL,
           "pool with no owner");
    snprintf(body, sizeof(body),
             "{\"name\":\"p2\",\"owner_org_id\":%" PRId64 ",\"currency\":\"usd\"}", f->org);
    reject(f, "POST", "/v1/pools", body, 400, "invalid_argument", "currency",
           "lower-case currency");
    snprintf(body, sizeof(body),
             "{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64
             ",\"guaranteed_milli\":3000,\"limit_milli\":2000}",
             f->project, f->gpu_class);
    reject(f, "POST", "/v1/quotas", body, 400, "invalid_argument", "guaranteed_milli",
           "guaranteed above limit");
    snprintf(body, sizeof(body),
             "{\"name\":\"fx\",\"gpu_class_id\":%" PRId64 ",\"gpu_milli\":1500}", f->gpu_class);
    reject(f, "POST", "/v1/flavors", body, 400, "invalid_argument", "gpu_milli",
           "1.5 GPUs is not a share nor whole GPUs");
    reject(f, "POST", "/v1/flavors", "{\"name\":\"fx\",\"gpu_milli\":1000}", 400,
           "invalid_argument", "gpu_class_id", "GPUs without a class");
    snprintf(body, sizeof(body),
             "{\"user_id\":%" PRId64 ",\"role\":\"admin\",\"org_id\":%" PRId64 "}", f->user,
             f->org);
    reject(f, "POST", "/v1/role-bindings", body, 400, "invalid_argument", NULL,
           "admin binding with a scope");
    snprintf(body, sizeof(body),
             "{\"user_id\":%" PRId64 ",\"role\":\"org-admin\",\"project_id\":%" PRId64 "}", f->user,
             f->project);
    reject(f, "POST", "/v1/role-bindings", body, 400, "invalid_argument", NULL,
           "org-admin on a project");
    snprintf(body, sizeof(body),
             "{\"user_id\":%" PRId64 ",\"role\":\"project-admin\",\"org_id\":%" PRId64 "}", f->user,
             f->org);
    reject(f, "POST", "/v1/role-bindings", body, 400, "invalid_argument", NULL,
           "project-admin on an organization");
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"role\":\"member\"}", f->user);
    reject(f, "POST", "/v1/role-bindings", body, 400, "invalid_argument", NULL,
           "member with no scope");
    snprintf(body, sizeof(body),
             "{\"user_id\":%" PRId64 ",\"role\":\"member\",\"org_id\":%" PRId64
             ",\"project_id\":%" PRId64 "}",
             f->user, f->org, f->project);
    reject(f, "POST", "/v1/role-bindings", body, 400, "invalid_argument", NULL,
           "binding with two scopes");
    reject(f, "POST", "/v1/tokens", "{\"expires_at\":\"2001-01-01T00:00:00Z\"}", 400,
           "invalid_argument", "expires_at", "token expiring in the past");
    finish(f);
}

/* PATCH: the same field rules, plus immutable fields and empty patches; the object is unchanged. */
static void test_patch_bodies(void **state)
{
    struct fixture *f = *state;
    char path[64], before_s[1024];
    long got;
    json_t *j;
    static const struct {
        const char *body;
        long want;
        const char *code;
        const char *field;
    } cases[] = {
        {"{\"name\":", 400, "malformed_json", NULL},
        {"[]", 400, NULL, NULL},
        {"{}", 400, "invalid_argument", NULL},
        {"{\"bogus\":1}", 400, "invalid_argument", "bogus"},
        {"{\"id\":9}", 400, "invalid_argument", "id"},
        {"{\"created_at\":\"2026-01-01T00:00:00Z\"}", 400, "invalid_argument", "created_at"},
        {"{\"updated_at\":\"2026-01-01T00:00:00Z\"}", 400, "invalid_argument", "updated_at"},
        {"{\"org_id\":1}", 400, "invalid_argument", "org_id"}, /* immutable */
        {"{\"weight\":0}", 400, "invalid_argument", "weight"},
        {"{\"weight\":1001}", 400, "invalid_argument", "weight"},
        {"{\"weight\":\"5\"}", 400, "invalid_argument", "weight"},
        {"{\"name\":\"Bad Name\"}", 400, "invalid_argument", "name"},
        {"{\"name\":null}", 400, "invalid_argument", "name"},
        {"{\"description\":\"ok\",\"name\":7}", 400, "invalid_argument", "name"},
        {"{\"name\":\"a\",\"name\":\"b\"}", 400, NULL, NULL},
    };

    snprintf(path, sizeof(path), "/v1/projects/%" PRId64, f->project);
    testsrv_req(f->srv, "GET", path, f->tok, NULL, &got, NULL);
    assert_int_equal(got, 200);
    snprintf(before_s, sizeof(before_s), "%s", f->srv->body);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char what[128];
        snprintf(what, sizeof(what), "PATCH project %s", cases[i].body);
        reject(f, "PATCH", path, cases[i].body, cases[i].want, cases[i].code, cases[i].field, what);
        testsrv_req(f->srv, "GET", path, f->tok, NULL, &got, NULL);
        if (strcmp(f->srv->body, before_s) != 0)
            failed(f, "%s changed the project: %s -> %s", what, before_s, f->srv->body);
    }
    {
        /* a wrong media type on PATCH */
        const char *const hdr[] = {"Content-Type: text/plain", NULL};
        struct testsrv_raw req = {.method = "PATCH",
                                  .path = path,
                                  .token = f->tok,
                                  .headers = hdr,
                                  .body = "{\"weight\":2}",
                                  .body_len = 12};
        reject_raw(f, &req, 415, "unsupported_media_type", NULL, "PATCH as text/plain");
    }
    /* guaranteed above limit through a merged update */
    {
        int64_t q = testsrv_create(f->srv, f->tok, "quotas",
                                   "{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64
                                   ",\"guaranteed_milli\":1000,\"limit_milli\":2000}",
                                   f->project, f->gpu_class2);
        snprintf(path, sizeof(path), "/v1/quotas/%" PRId64, q);
        reject(f, "PATCH", path, "{\"guaranteed_milli\":3000}", 400, "invalid_argument",
               "guaranteed_milli", "PATCH guaranteed above limit");
        reject(f, "PATCH", path, "{\"project_id\":1}", 400, "invalid_argument", "project_id",
               "PATCH immutable project_id");
    }
    /* a reference to nothing on PATCH */
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, f->org2);
    reject(f, "PATCH", path, "{\"parent_id\":999999}", 400, "invalid_argument", "parent_id",
           "PATCH parent to nothing");
    reject(f, "PATCH", path, "{\"manager_id\":999999}", 400, "invalid_argument", "manager_id",
           "PATCH manager to nothing");
    testsrv_req(f->srv, "PATCH", path, f->tok, "{\"display_name\":\"fine\"}", &got, &j);
    assert_int_equal(got, 200);
    assert_string_equal(json_string_value(json_object_get(j, "display_name")), "fine");
    json_decref(j);
    finish(f);
}

/* ---- media type and size ---- */

static void test_media_type_and_size(void **state)
{
    struct fixture *f = *state;
    const char *ok = "{\"name\":\"media-ok\"}";
    static const char *const bad_types[] = {
        "Content-Type: text/plain",
        "Content-Type: application/x-www-form-urlencoded",
        "Content-Type: multipart/form-data; boundary=x",
        "Content-Type: application/xml",
        "Content-Type: application/json-patch+json",
        "Content-Type: text/json",
    };
    char *big, *body;
    long got;

    for (size_t i = 0; i < ARRAY_SIZE(bad_types); i++) {
        const char *const hdr[] = {bad_types[i], NULL};
        struct testsrv_raw req = {.method = "POST",
                                  .path = "/v1/users",
                                  .token = f->tok,
                                  .headers = hdr,
                                  .body = ok,
                                  .body_len = strlen(ok)};
        reject_raw(f, &req, 415, "unsupported_media_type", NULL, bad_types[i]);
    }
    /* parameters and case do not matter */
    {
        const char *const hdr[] = {"Content-Type: Application/JSON; charset=utf-8", NULL};
        const char *ok2 = "{\"name\":\"media-charset\"}";
        struct testsrv_raw req = {.method = "POST",
                                  .path = "/v1/users",
                                  .token = f->tok,
                                  .headers = hdr,
                                  .body = ok2,
                                  .body_len = strlen(ok2)};
        testsrv_req_raw(f->srv, &req, &got);
        if (got != 201)
            failed(f, "application/json with charset: want 201, got %ld: %s", got, f->srv->body);
    }

    /* over max-body-bytes: with a Content-Length, and chunked without one */
    big = repeat('x', MAX_BODY + 100);
    body = xasprintf("{\"name\":\"big\",\"display_name\":\"%s\"}", big);
    {
        struct testsrv_raw req = {.method = "POST",
                                  .path = "/v1/users",
                                  .token = f->tok,
                                  .body = body,
                                  .body_len = strlen(body)};
        reject_raw(f, &req, 413, "too_large", NULL, "body over the limit");
        req.chunked = true;
        reject_raw(f, &req, 413, "too_large", NULL, "chunked body over the limit");
        req.method = "PATCH";
        req.path = "/v1/users/1";
        req.chunked = false;
        reject_raw(f, &req, 413, "too_large", NULL, "PATCH body over the limit");
    }
    free(body);
    free(big);
    /* a body of exactly the limit is fine (413 only above it) */
    {
        size_t fixed = strlen("{\"name\":\"exact\",\"email\":\"\"}");
        char *pad = repeat(' ', MAX_BODY - fixed);
        body = xasprintf("{\"name\":\"exact\",\"email\":\"\"}%s", pad);
        assert_int_equal(strlen(body), MAX_BODY);
        testsrv_req(f->srv, "POST", "/v1/users", f->tok, body, &got, NULL);
        if (got != 201)
            failed(f, "a body of exactly max-body-bytes: want 201, got %ld: %s", got, f->srv->body);
        free(pad);
        free(body);
    }
    /* the server still answers on the same connection afterwards */
    testsrv_expect(f->srv, "GET", "/v1/whoami", f->tok, NULL, 200);
    finish(f);
}

/* ---- routes, methods, ids and query parameters ---- */

static void test_routes(void **state)
{
    struct fixture *f = *state;
    char path[128];
    static const char *const unknown[] = {
        "/index.html", /* "/" redirects to the dashboard: test_api_ui.c */
        "/v1",
        "/v1/",
        "/v2/projects",
        "/v1/nonexistent",
        "/v1/nonexistent/1",
        "/v1/projects/1/extra",
        "/v1/projects/",
        "/v1/Projects",
        "/healthz/x",
        "/v1/role_bindings",
        "/v1/projects//1",
    };
    static const char *const bad_ids[] = {
        "abc", "0",  "-1",  "1.5",    "1e3", "0x10", "99999999999999999999",
        "%20", "+1", "01x", "999999",
    };
    static const struct {
        const char *method;
        const char *path;
    } wrong_method[] = {
        {"PUT", "/v1/projects"},   {"DELETE", "/v1/projects"},   {"PATCH", "/v1/projects"},
        {"PUT", "/v1/projects/1"}, {"POST", "/v1/projects/1"},   {"POST", "/v1/whoami"},
        {"DELETE", "/v1/whoami"},  {"POST", "/v1/openapi.json"}, {"POST", "/healthz"},
        {"PUT", "/v1/users/1"},    {"DELETE", "/v1/audit"},      {"OPTIONS", "/v1/projects"},
    };
    static const char *const bad_queries[] = {
        "/v1/projects?bogus=1",
        "/v1/projects?description=x", /* not a filter */
        "/v1/projects?org_id=abc",
        "/v1/projects?limit=0",
        "/v1/projects?limit=1001",
        "/v1/projects?limit=-1",
        "/v1/projects?limit=abc",
        "/v1/projects?limit=",
        "/v1/projects?limit=99999999999999999999",
        "/v1/projects?after=abc",
        "/v1/projects?after=-5",
        "/v1/tokens?hash=abc", /* secret: never a filter */
        "/v1/flavors?active=maybe",
        "/v1/audit?before=x",
        "/v1/organizations?parent_id=x",
    };

    for (size_t i = 0; i < ARRAY_SIZE(unknown); i++) {
        char what[160];
        snprintf(what, sizeof(what), "unknown route %s", unknown[i]);
        reject(f, "GET", unknown[i], NULL, 404, "not_found", NULL, what);
    }
    for (size_t i = 0; i < ARRAY_SIZE(bad_ids); i++) {
        static const char *const methods[] = {"GET", "PATCH", "DELETE"};
        for (size_t m = 0; m < ARRAY_SIZE(methods); m++) {
            char what[160];
            snprintf(path, sizeof(path), "/v1/projects/%s", bad_ids[i]);
            snprintf(what, sizeof(what), "%s bad id '%s'", methods[m], bad_ids[i]);
            reject(f, methods[m], path, m == 1 ? "{\"description\":\"x\"}" : NULL, 404, "not_found",
                   NULL, what);
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(wrong_method); i++) {
        char what[160];
        snprintf(what, sizeof(what), "%s %s", wrong_method[i].method, wrong_method[i].path);
        reject(f, wrong_method[i].method, wrong_method[i].path, NULL, 405, "method_not_allowed",
               NULL, what);
    }
    for (size_t i = 0; i < ARRAY_SIZE(bad_queries); i++) {
        char what[160];
        snprintf(what, sizeof(what), "query %s", bad_queries[i]);
        reject(f, "GET", bad_queries[i], NULL, 400, "invalid_argument", NULL, what);
    }
    /* the unknown parameter is named */
    reject(f, "GET", "/v1/projects?bogus=1", NULL, 400, "invalid_argument", "bogus",
           "unknown query parameter named");
    reject(f, "GET", "/v1/projects?limit=0", NULL, 400, "invalid_argument", "limit",
           "limit out of range named");
    /* the edges of the range are fine, and filters work */
    testsrv_expect(f->srv, "GET", "/v1/projects?limit=1", f->tok, NULL, 200);
    testsrv_expect(f->srv, "GET", "/v1/projects?limit=1000", f->tok, NULL, 200);
    testsrv_expect(f->srv, "GET", "/v1/organizations?parent_id=null", f->tok, NULL, 200);
    testsrv_expect(f->srv, "GET", "/v1/flavors?active=true", f->tok, NULL, 200);
    snprintf(path, sizeof(path), "/v1/organizations?parent_id=%" PRId64, f->org);
    {
        int64_t *ids;
        size_t n = testsrv_list_ids(f->srv, f->tok, path, &ids);
        if (n != 1 || ids[0] != f->org2)
            failed(f, "GET %s: want exactly org %" PRId64 ", got %zu ids", path, f->org2, n);
        free(ids);
    }
    finish(f);
}

/* ---- conflicts ---- */

static void test_conflicts(void **state)
{
    struct fixture *f = *state;
    char body[512], path[64];
    int64_t other, oid;

    /* each unique key, taken */
    reject(f, "POST", "/v1/organizations", "{\"name\":\"org-1\"}", 409, "conflict", NULL,
           "organization name taken");
    snprintf(body, sizeof(body), "{\"org_id\":%" PRId64 ",\"name\":\"prj-1\"}", f->org);
    reject(f, "POST", "/v1/projects", body, 409, "conflict", NULL, "project name taken in org");
    reject(f, "POST", "/v1/users", "{\"name\":\"user-1\"}", 409, "conflict", NULL, "user name");
    reject(f, "POST", "/v1/clusters", "{\"name\":\"c1\",\"backend\":\"local\"}", 409, "conflict",
           NULL, "cluster name");
    snprintf(body, sizeof(body), "{\"cluster_id\":%" PRId64 ",\"name\":\"node-1\"}", f->cluster);
    reject(f, "POST", "/v1/nodes", body, 409, "conflict", NULL, "node name in cluster");
    reject(f, "POST", "/v1/gpu-classes", "{\"name\":\"h100-80gb\"}", 409, "conflict", NULL,
           "gpu class name");
    snprintf(body, sizeof(body),
             "{\"node_id\":%" PRId64 ",\"index\":0,\"gpu_class_id\":%" PRId64 "}", f->node,
             f->gpu_class);
    reject(f, "POST", "/v1/gpus", body, 409, "conflict", NULL, "gpu index on node");
    snprintf(body, sizeof(body), "{\"name\":\"pool-1\",\"owner_org_id\":%" PRId64 "}", f->org);
    reject(f, "POST", "/v1/pools", body, 409, "conflict", NULL, "pool name");
    testsrv_create(f->srv, f->tok, "flavors", "{\"name\":\"cpu.small\",\"vcpus\":2}");
    reject(f, "POST", "/v1/flavors", "{\"name\":\"cpu.small\"}", 409, "conflict", NULL,
           "flavor name");
    snprintf(body, sizeof(body),
             "{\"project_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 ",\"limit_milli\":1}",
             f->project, f->gpu_class);
    testsrv_create(f->srv, f->tok, "quotas", "%s", body);
    reject(f, "POST", "/v1/quotas", body, 409, "conflict", NULL, "quota per project and class");
    snprintf(body, sizeof(body),
             "{\"org_id\":%" PRId64 ",\"gpu_class_id\":%" PRId64 ",\"limit_milli\":1}", f->org,
             f->gpu_class);
    testsrv_create(f->srv, f->tok, "org-quotas", "%s", body);
    reject(f, "POST", "/v1/org-quotas", body, 409, "conflict", NULL, "org quota per org and class");
    snprintf(body, sizeof(body),
             "{\"user_id\":%" PRId64 ",\"role\":\"viewer\",\"org_id\":%" PRId64 "}", f->user,
             f->org);
    testsrv_create(f->srv, f->tok, "role-bindings", "%s", body);
    reject(f, "POST", "/v1/role-bindings", body, 409, "conflict", NULL, "same binding twice");
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"role\":\"admin\"}", f->user);
    testsrv_create(f->srv, f->tok, "role-bindings", "%s", body);
    reject(f, "POST", "/v1/role-bindings", body, 409, "conflict", NULL, "same admin binding twice");
    /* gpu uuid */
    snprintf(body, sizeof(body),
             "{\"node_id\":%" PRId64 ",\"index\":5,\"uuid\":\"GPU-dup\",\"gpu_class_id\":%" PRId64
             "}",
             f->node, f->gpu_class);
    testsrv_create(f->srv, f->tok, "gpus", "%s", body);
    snprintf(body, sizeof(body),
             "{\"node_id\":%" PRId64 ",\"index\":6,\"uuid\":\"GPU-dup\",\"gpu_class_id\":%" PRId64
             "}",
             f->node, f->gpu_class);
    reject(f, "POST", "/v1/gpus", body, 409, "conflict", NULL, "gpu uuid");

    /* the same project name in another organization is fine */
    testsrv_create(f->srv, f->tok, "projects", "{\"org_id\":%" PRId64 ",\"name\":\"prj-1\"}",
                   f->org2);
    /* renaming onto a taken name */
    other = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"org-3\"}");
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, other);
    reject(f, "PATCH", path, "{\"name\":\"org-1\"}", 409, "conflict", NULL, "rename onto taken");

    /* deleting what others still refer to */
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, f->org);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "organization with projects and child");
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, f->org2);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "organization with a project");
    oid = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"org-4\"}");
    testsrv_create(f->srv, f->tok, "organizations",
                   "{\"name\":\"org-5\",\"parent_id\":%" PRId64 "}", oid);
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, oid);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "organization with a child only");
    snprintf(path, sizeof(path), "/v1/projects/%" PRId64, f->project);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "project owning a pool");
    snprintf(path, sizeof(path), "/v1/clusters/%" PRId64, f->cluster);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "cluster with a node");
    snprintf(path, sizeof(path), "/v1/nodes/%" PRId64, f->node);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "node with a gpu");
    snprintf(path, sizeof(path), "/v1/gpu-classes/%" PRId64, f->gpu_class);
    reject(f, "DELETE", path, NULL, 409, "conflict", NULL, "gpu class in use");
    /* deleting twice: the second is 404 */
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, other);
    testsrv_expect(f->srv, "DELETE", path, f->tok, NULL, 204);
    reject(f, "DELETE", path, NULL, 404, "not_found", NULL, "deleted twice");
    reject(f, "GET", path, NULL, 404, "not_found", NULL, "get after delete");
    reject(f, "PATCH", path, "{\"display_name\":\"x\"}", 404, "not_found", NULL,
           "patch after delete");
    finish(f);
}

static void test_org_cycles(void **state)
{
    struct fixture *f = *state;
    char path[64], body[64];
    int64_t a = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"cy-a\"}");
    int64_t b = testsrv_create(f->srv, f->tok, "organizations",
                               "{\"name\":\"cy-b\",\"parent_id\":%" PRId64 "}", a);
    int64_t c = testsrv_create(f->srv, f->tok, "organizations",
                               "{\"name\":\"cy-c\",\"parent_id\":%" PRId64 "}", b);
    int64_t prev = c;

    f->loose_message = true;
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, a);
    snprintf(body, sizeof(body), "{\"parent_id\":%" PRId64 "}", c);
    reject(f, "PATCH", path, body, 400, "invalid_argument", "parent_id", "a under its grandchild");
    snprintf(body, sizeof(body), "{\"parent_id\":%" PRId64 "}", b);
    reject(f, "PATCH", path, body, 400, "invalid_argument", "parent_id", "a under its child");
    snprintf(body, sizeof(body), "{\"parent_id\":%" PRId64 "}", a);
    reject(f, "PATCH", path, body, 400, "invalid_argument", "parent_id", "a under itself");
    /* b to the top, then a under b is fine */
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, b);
    testsrv_expect(f->srv, "PATCH", path, f->tok, "{\"parent_id\":null}", 200);
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, a);
    snprintf(body, sizeof(body), "{\"parent_id\":%" PRId64 "}", b);
    testsrv_expect(f->srv, "PATCH", path, f->tok, body, 200);
    /* now b under a is a cycle again */
    snprintf(path, sizeof(path), "/v1/organizations/%" PRId64, b);
    snprintf(body, sizeof(body), "{\"parent_id\":%" PRId64 "}", a);
    reject(f, "PATCH", path, body, 400, "invalid_argument", "parent_id", "b under a under b");

    /* A long chain is accepted up to some depth and then refused with 400, never a crash. */
    for (int depth = 0; depth < 80; depth++) {
        char name[32];
        long got;
        json_t *j;
        snprintf(name, sizeof(name), "deep-%d", depth);
        snprintf(body, sizeof(body), "{\"name\":\"%s\",\"parent_id\":%" PRId64 "}", name, prev);
        testsrv_req(f->srv, "POST", "/v1/organizations", f->tok, body, &got, &j);
        if (got == 400) {
            json_decref(j);
            break;
        }
        if (got != 201) {
            failed(f, "deep organization %d: want 201 or 400, got %ld: %s", depth, got,
                   f->srv->body);
            json_decref(j);
            break;
        }
        prev = testsrv_id(j);
        json_decref(j);
    }
    testsrv_expect(f->srv, "GET", "/v1/organizations?limit=1000", f->tok, NULL, 200);
    finish(f);
}

/* ---- pagination ---- */

static void walk_pages(struct fixture *f, const char *base, int limit, const int64_t *want,
                       size_t n_want)
{
    int64_t after = 0, last = 0;
    size_t seen = 0;
    int pages = 0;

    for (;;) {
        char path[256];
        long got;
        json_t *j, *items, *item, *next;
        size_t i;

        if (after)
            snprintf(path, sizeof(path), "%s%slimit=%d&after=%" PRId64, base,
                     strchr(base, '?') ? "&" : "?", limit, after);
        else
            snprintf(path, sizeof(path), "%s%slimit=%d", base, strchr(base, '?') ? "&" : "?",
                     limit);
        testsrv_req(f->srv, "GET", path, f->tok, NULL, &got, &j);
        if (got != 200) {
            failed(f, "GET %s: %ld %s", path, got, f->srv->body);
            json_decref(j);
            return;
        }
        items = json_object_get(j, "items");
        next = json_object_get(j, "next_after");
        if (json_array_size(items) > (size_t)limit)
            failed(f, "GET %s: %zu items, above the limit", path, json_array_size(items));
        json_array_foreach(items, i, item)
        {
            int64_t id = testsrv_id(item);
            if (id <= last)
                failed(f, "GET %s: id %" PRId64 " not above the previous %" PRId64, path, id, last);
            last = id;
            if (seen >= n_want || want[seen] != id)
                failed(f, "GET %s: unexpected id %" PRId64, path, id);
            seen++;
        }
        pages++;
        if (json_is_null(next)) {
            json_decref(j);
            break;
        }
        if (!json_is_integer(next)) {
            failed(f, "GET %s: next_after is neither an id nor null", path);
            json_decref(j);
            return;
        }
        if (json_array_size(items) == 0)
            failed(f, "GET %s: an empty page with next_after set", path);
        if (json_integer_value(next) != last)
            failed(f, "GET %s: next_after %" PRId64 " is not the last id %" PRId64, path,
                   (int64_t)json_integer_value(next), last);
        after = json_integer_value(next);
        json_decref(j);
        if (pages > 2000) {
            failed(f, "GET %s: more than 2000 pages", base);
            return;
        }
    }
    if (seen != n_want)
        failed(f, "%s with limit %d: saw %zu ids of %zu", base, limit, seen, n_want);
}

static void test_pagination(void **state)
{
    struct fixture *f = *state;
    int64_t ids[250], org;
    char base[128];
    json_t *j;
    long got;

    org = testsrv_create(f->srv, f->tok, "organizations", "{\"name\":\"many\"}");
    for (int i = 0; i < 250; i++) {
        ids[i] = testsrv_create(f->srv, f->tok, "projects",
                                "{\"org_id\":%" PRId64 ",\"name\":\"p-%03d\"}", org, i);
        /* projects elsewhere, between them in id order, must not show through the filter */
        if (i % 100 == 50)
            testsrv_create(f->srv, f->tok, "projects",
                           "{\"org_id\":%" PRId64 ",\"name\":\"other-%d\"}", f->org, i);
    }
    snprintf(base, sizeof(base), "/v1/projects?org_id=%" PRId64, org);
    {
        static const int limits[] = {1, 7, 50, 100, 125, 249, 250, 251, 1000};
        for (size_t i = 0; i < ARRAY_SIZE(limits); i++)
            walk_pages(f, base, limits[i], ids, 250);
    }
    /* the default limit is 100 */
    testsrv_req(f->srv, "GET", base, f->tok, NULL, &got, &j);
    assert_int_equal(got, 200);
    if (json_array_size(json_object_get(j, "items")) != 100 ||
        json_integer_value(json_object_get(j, "next_after")) != ids[99])
        failed(f, "GET %s: want the first 100 and next_after %" PRId64, base, ids[99]);
    json_decref(j);
    /* after the last id: an empty page, next_after null */
    {
        char path[160];
        snprintf(path, sizeof(path), "%s&after=%" PRId64, base, ids[249]);
        testsrv_req(f->srv, "GET", path, f->tok, NULL, &got, &j);
        assert_int_equal(got, 200);
        if (json_array_size(json_object_get(j, "items")) != 0 ||
            !json_is_null(json_object_get(j, "next_after")))
            failed(f, "GET %s: want an empty last page", path);
        json_decref(j);
    }
    /* after an id in the middle that is not in the filter's set */
    {
        char path[160];
        snprintf(path, sizeof(path), "%s&after=%" PRId64 "&limit=1000", base, ids[124]);
        testsrv_req(f->srv, "GET", path, f->tok, NULL, &got, &j);
        assert_int_equal(got, 200);
        if (json_array_size(json_object_get(j, "items")) != 125)
            failed(f, "GET %s: want 125 items, got %zu", path,
                   json_array_size(json_object_get(j, "items")));
        json_decref(j);
    }
    finish(f);
}

/* ---- audit ---- */

/* The newest audit entry for resource/object_id, or NULL (caller decrefs). */
static json_t *last_audit(struct fixture *f, const char *res, int64_t id, size_t *ret_n)
{
    char path[160];
    long got;
    json_t *j, *e;
    size_t n;

    snprintf(path, sizeof(path), "/v1/audit?resource=%s&object_id=%" PRId64 "&limit=1000", res, id);
    testsrv_req(f->srv, "GET", path, f->tok, NULL, &got, &j);
    assert_int_equal(got, 200);
    n = json_array_size(json_object_get(j, "items"));
    e = n ? json_incref(json_array_get(json_object_get(j, "items"), n - 1)) : NULL;
    json_decref(j);
    if (ret_n)
        *ret_n = n;
    return e;
}

static void expect_entry(struct fixture *f, json_t *e, const char *action, const char *req_id,
                         bool before, bool after, const char *what)
{
    if (!e) {
        failed(f, "%s: no audit entry", what);
        return;
    }
    if (strcmp(json_string_value(json_object_get(e, "action")) ?: "", action) != 0)
        failed(f, "%s: action '%s', want '%s'", what,
               json_string_value(json_object_get(e, "action")), action);
    if (strcmp(json_string_value(json_object_get(e, "request_id")) ?: "", req_id) != 0)
        failed(f, "%s: request_id '%s', want the X-Request-Id '%s'", what,
               json_string_value(json_object_get(e, "request_id")), req_id);
    if (before != json_is_object(json_object_get(e, "before")))
        failed(f, "%s: before is %s", what, before ? "missing" : "set");
    if (!before && !json_is_null(json_object_get(e, "before")))
        failed(f, "%s: before should be null", what);
    if (after != json_is_object(json_object_get(e, "after")))
        failed(f, "%s: after is %s", what, after ? "missing" : "set");
    if (!after && !json_is_null(json_object_get(e, "after")))
        failed(f, "%s: after should be null", what);
    if (strcmp(json_string_value(json_object_get(e, "actor")) ?: "", "admin") != 0)
        failed(f, "%s: actor is not admin", what);
    if (!json_is_string(json_object_get(e, "time")))
        failed(f, "%s: no time", what);
}

static void test_audit(void **state)
{
    struct fixture *f = *state;
    char path[64], rid[64];
    const char *const hdr_create[] = {"X-Request-Id: create-req_1", NULL};
    const char *const hdr_update[] = {"X-Request-Id: UPDATE-2", NULL};
    char body[128], bad_body[128], org_path[64];
    struct testsrv_raw req = {.method = "POST",
                              .path = "/v1/projects",
                              .token = f->tok,
                              .headers = hdr_create,
                              .body = body};
    json_t *j, *e;
    long got;
    int64_t id;
    size_t n, n_audit;

    snprintf(body, sizeof(body),
             "{\"org_id\":%" PRId64 ",\"name\":\"audited\",\"description\":\"v1\"}", f->org);
    snprintf(bad_body, sizeof(bad_body), "{\"org_id\":%" PRId64 ",\"name\":\"BAD\"}", f->org);
    snprintf(org_path, sizeof(org_path), "/v1/organizations/%" PRId64, f->org);
    req.body_len = strlen(body);

    /* create, with a request id given */
    testsrv_req_raw(f->srv, &req, &got);
    assert_int_equal(got, 201);
    assert_string_equal(f->srv->request_id, "create-req_1");
    j = json_loads(f->srv->body, 0, NULL);
    id = testsrv_id(j);
    json_decref(j);
    e = last_audit(f, "projects", id, &n);
    assert_int_equal(n, 1);
    expect_entry(f, e, "create", "create-req_1", false, true, "create");
    if (e &&
        strcmp(json_string_value(json_object_get(json_object_get(e, "after"), "description")) ?: "",
               "v1") != 0)
        failed(f, "create: after is not the new object");
    if (e && json_integer_value(json_object_get(e, "object_id")) != id)
        failed(f, "create: object_id is not the new id");
    json_decref(e);

    /* update */
    snprintf(path, sizeof(path), "/v1/projects/%" PRId64, id);
    req.method = "PATCH";
    req.path = path;
    req.headers = hdr_update;
    req.body = "{\"description\":\"v2\"}";
    req.body_len = strlen(req.body);
    testsrv_req_raw(f->srv, &req, &got);
    assert_int_equal(got, 200);
    assert_string_equal(f->srv->request_id, "UPDATE-2");
    e = last_audit(f, "projects", id, &n);
    assert_int_equal(n, 2);
    expect_entry(f, e, "update", "UPDATE-2", true, true, "update");
    if (e && (strcmp(json_string_value(json_object_get(json_object_get(e, "before"), "description"))
                         ?: "",
                     "v1") != 0 ||
              strcmp(json_string_value(json_object_get(json_object_get(e, "after"), "description"))
                         ?: "",
                     "v2") != 0))
        failed(f, "update: before/after do not show v1 -> v2");
    json_decref(e);

    /* delete, without a request id: the generated one is in the header and the entry */
    testsrv_req(f->srv, "DELETE", path, f->tok, NULL, &got, NULL);
    assert_int_equal(got, 204);
    snprintf(rid, sizeof(rid), "%s", f->srv->request_id);
    assert_true(strlen(rid) > 0);
    e = last_audit(f, "projects", id, &n);
    assert_int_equal(n, 3);
    expect_entry(f, e, "delete", rid, true, false, "delete");
    if (e && strcmp(json_string_value(json_object_get(json_object_get(e, "before"), "description"))
                        ?: "",
                    "v2") != 0)
        failed(f, "delete: before is not the last state");
    json_decref(e);

    /* an unusable X-Request-Id is replaced, and the replacement is what gets recorded */
    {
        static const char *const bad[] = {
            "X-Request-Id: has space",
            "X-Request-Id: 0123456789012345678901234567890123456789", /* 40 > 36 */
            "X-Request-Id: semi;colon",
            "X-Request-Id: \"quoted\"",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
            const char *const hdr[] = {bad[i], NULL};
            char ubody[64];
            snprintf(ubody, sizeof(ubody), "{\"name\":\"rid-%zu\"}", i);
            req.method = "POST";
            req.path = "/v1/users";
            req.headers = hdr;
            req.body = ubody;
            req.body_len = strlen(ubody);
            testsrv_req_raw(f->srv, &req, &got);
            assert_int_equal(got, 201);
            snprintf(rid, sizeof(rid), "%s", f->srv->request_id);
            if (!rid[0] || strstr(bad[i], rid))
                failed(f, "%s: response X-Request-Id '%s' was not replaced", bad[i], rid);
            j = json_loads(f->srv->body, 0, NULL);
            e = last_audit(f, "users", testsrv_id(j), NULL);
            json_decref(j);
            expect_entry(f, e, "create", rid, false, true, bad[i]);
            json_decref(e);
        }
        /* exactly 36 characters is kept */
        {
            const char *const hdr[] = {"X-Request-Id: 012345678901234567890123456789abcdef", NULL};
            req.method = "GET";
            req.path = "/v1/whoami";
            req.headers = hdr;
            req.body = NULL;
            req.body_len = 0;
            testsrv_req_raw(f->srv, &req, &got);
            assert_string_equal(f->srv->request_id, "012345678901234567890123456789abcdef");
        }
    }
    /* every response carries a request id, errors included */
    testsrv_req(f->srv, "GET", "/v1/nonexistent", f->tok, NULL, &got, NULL);
    assert_true(f->srv->request_id[0] != '\0');
    testsrv_req(f->srv, "GET", "/v1/projects", NULL, NULL, &got, NULL);
    assert_true(f->srv->request_id[0] != '\0');

    /* tokens: the audit entries never carry the secret or its hash */
    {
        json_t *t = testsrv_create_json(f->srv, f->tok, "tokens", "{\"name\":\"audited\"}");
        const char *secret = json_string_value(json_object_get(t, "token"));
        char tpath[64];
        assert_non_null(secret);
        snprintf(tpath, sizeof(tpath), "/v1/tokens/%" PRId64, testsrv_id(t));
        testsrv_expect(f->srv, "DELETE", tpath, f->tok, NULL, 204);
        snprintf(tpath, sizeof(tpath), "/v1/audit?resource=tokens&object_id=%" PRId64,
                 testsrv_id(t));
        testsrv_req(f->srv, "GET", tpath, f->tok, NULL, &got, &j);
        assert_int_equal(got, 200);
        if (json_array_size(json_object_get(j, "items")) != 2)
            failed(f, "token: want a create and a revoke entry, got %zu",
                   json_array_size(json_object_get(j, "items")));
        if (strstr(f->srv->body, secret + 4) || strstr(f->srv->body, "\"hash\""))
            failed(f, "token audit entries carry the secret or its hash: %s", f->srv->body);
        e = json_array_get(json_object_get(j, "items"), 1);
        if (strcmp(json_string_value(json_object_get(e, "action")) ?: "", "revoke") != 0)
            failed(f, "token: second entry is not a revoke");
        json_decref(j);
        json_decref(t);
    }

    /* a failed request writes no entry */
    n_audit = testsrv_count(f->srv, f->tok, "/v1/audit");
    testsrv_expect(f->srv, "POST", "/v1/projects", f->tok, bad_body, 400);
    testsrv_expect(f->srv, "DELETE", org_path, f->tok, NULL, 409);
    if (testsrv_count(f->srv, f->tok, "/v1/audit") != n_audit)
        failed(f, "failed requests wrote audit entries");
    /* the audit log is read-only, even for admins */
    testsrv_expect(f->srv, "DELETE", "/v1/audit/1", f->tok, NULL, 405);
    finish(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_bodies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_bodies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_media_type_and_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_org_cycles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pagination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
