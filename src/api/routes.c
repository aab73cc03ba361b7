/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.c: maps method and path to a handler. The route table below lists
 * every route but the five each model resource has (list, create, read,
 * change, delete: resource.c); each entry says who may call it and what it
 * takes and answers, and the OpenAPI document is written from the same
 * entries (openapi.c). Everything under /v1 but the OpenAPI document needs a
 * valid bearer token. The dashboard's files (/ and /ui/...) are ui.c's.
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/parse.h"
#include "engine/engine.h"

static void reply_health(struct req *r)
{
    req_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static void reply_openapi(struct req *r)
{
    req_reply_json(r, 200, openapi_document());
}

static void reply_whoami(struct req *r)
{
    struct error_info ei = {0};
    struct row user, *rows;
    struct store_filter f;
    size_t n;
    json_t *bindings;
    int rc = store_get(req_db(r), &model_users, r->who->user_id, &r->arena, &user, &ei);

    store_filter_init(&f);
    store_filter_eq_int(&f, F_ROLE_BINDINGS_USER_ID, r->who->user_id);
    if (rc >= 0)
        rc = store_list_all(req_db(r), &model_role_bindings, &f, &r->arena, &rows, &n, &ei);
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    bindings = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(bindings, model_encode(&model_role_bindings, &rows[i]));
    req_reply_json(r, 200,
                   json_pack("{s:o,s:o,s:b,s:I}", "user", model_encode(&model_users, &user),
                             "bindings", bindings, "admin", r->who->admin, "token_id",
                             (json_int_t)r->who->token_id));
}

/* Capacity per GPU class against the guarantees promised on it: overcommitment is a warning. */
static void reply_capacity(struct req *r)
{
    struct engine_capacity *caps = NULL;
    size_t n = r->api->opt.engine ? engine_capacity(r->api->opt.engine, &r->arena, &caps) : 0;
    json_t *items = json_array();

    for (size_t i = 0; i < n; i++) {
        struct row cls;
        const char *name = "?";
        json_t *item;
        if (store_get(req_db(r), &model_gpu_classes, caps[i].class_id, &r->arena, &cls, NULL) >= 0)
            name = row_get(&cls, F_GPU_CLASSES_NAME)->s;
        item = json_pack("{s:I,s:s,s:I,s:I,s:I}", "gpu_class_id", (json_int_t)caps[i].class_id,
                         "gpu_class", name, "capacity_milli", (json_int_t)caps[i].capacity,
                         "free_milli", (json_int_t)caps[i].free, "guaranteed_milli",
                         (json_int_t)caps[i].guaranteed);
        if (caps[i].guaranteed > caps[i].capacity)
            json_object_set_new(
                item, "warning",
                json_sprintf("guarantees (%" PRId64 " milli-GPU) exceed healthy capacity (%" PRId64
                             "): owned work may wait",
                             caps[i].guaranteed, caps[i].capacity));
        json_array_append_new(items, item);
    }
    req_reply_json(r, 200, json_pack("{s:o}", "items", items));
}

/*
 * 405 with the Allow header RFC 9110 requires of it; allowed is the message's
 * "GET, PATCH or DELETE", which the header spells "GET, PATCH, DELETE".
 */
static void method_not_allowed(struct req *r, const char *allowed)
{
    struct error_info ei = {0};
    const char **h = arena_calloc(&r->arena, 3, sizeof(*h));
    char *value = arena_alloc(&r->arena, strlen(allowed) + 1), *o = value;

    for (const char *p = allowed; *p;) {
        if (strncmp(p, " or ", 4) == 0) {
            memcpy(o, ", ", 2);
            o += 2;
            p += 4;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    h[0] = "Allow";
    h[1] = value;
    errinfo_set(&ei, ERR_METHOD, NULL, "method %s is not allowed on %s; use %s", r->method,
                r->path, allowed);
    req_reply_error(r, ERR_METHOD, &ei);
    r->headers = h;
}

static void not_found(struct req *r)
{
    struct error_info ei = {0};
    errinfo_set(&ei, ERR_NOT_FOUND, NULL, "no route for %.100s", r->path);
    req_reply_error(r, ERR_NOT_FOUND, &ei);
}

static bool is(const struct req *r, const char *method)
{
    return strcmp(r->method, method) == 0;
}

/* Splits "/v1/<res>[/<id>]" into its parts; false when the path has another shape. */
static bool split_resource_path(const char *path, char *res, size_t res_size, const char **ret_id)
{
    const char *p = path + strlen("/v1/");
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);

    if (len == 0 || len >= res_size)
        return false;
    memcpy(res, p, len);
    res[len] = '\0';
    *ret_id = NULL;
    if (slash) {
        if (!slash[1] || strchr(slash + 1, '/'))
            return false;
        *ret_id = slash + 1;
    }
    return true;
}

/*
 * The id that starts a path segment: 1 to 19 decimal digits, the first not
 * 0, at most INT64_MAX, ended by '/' or the end; no sign, space or other byte
 * (the path arrives percent-decoded, so "21%20" is "21 " and no id). *ret_tail
 * gets what follows the digits. Every path id is read here, and a path whose
 * id does not read is answered 404, as an id of no object is.
 */
static bool path_id(const char *s, int64_t *ret_id, const char **ret_tail)
{
    char digits[20];
    size_t n = 0;

    while (s[n] >= '0' && s[n] <= '9')
        n++;
    if (n == 0 || n >= sizeof(digits) || s[0] == '0' || (s[n] != '\0' && s[n] != '/'))
        return false;
    memcpy(digits, s, n);
    digits[n] = '\0';
    if (parse_int64(digits, 1, INT64_MAX, ret_id) < 0)
        return false;
    *ret_tail = s + n;
    return true;
}

/* What an object's path offers, as method_not_allowed's message says it. */
static const char *item_methods(const struct resource_def *def)
{
    bool patch = def->need[ACT_UPDATE] != ROLE_NOBODY, del = def->need[ACT_DELETE] != ROLE_NOBODY;
    return patch && del ? "GET, PATCH or DELETE"
           : patch      ? "GET or PATCH"
           : del        ? "GET or DELETE"
                        : "GET";
}

static void dispatch_resource(struct req *r, const struct resource_def *def, const char *id_s)
{
    const char *tail;
    int64_t id;

    if (!id_s) {
        if (is(r, "GET"))
            resource_list(r, def);
        else if (is(r, "POST"))
            resource_create(r, def);
        else
            method_not_allowed(r, def->need[ACT_CREATE] != ROLE_NOBODY ? "GET or POST" : "GET");
        return;
    }
    if (!path_id(id_s, &id, &tail) || *tail) {
        struct error_info ei = {0};
        errinfo_set(&ei, ERR_NOT_FOUND, NULL, "'%.40s' is not a %s id", id_s, def->singular);
        req_reply_error(r, ERR_NOT_FOUND, &ei);
        return;
    }
    if (is(r, "GET"))
        resource_get(r, def, id);
    else if (is(r, "PATCH"))
        resource_update(r, def, id);
    else if (is(r, "DELETE"))
        resource_delete(r, def, id);
    else
        method_not_allowed(r, item_methods(def));
}

/* ---- the route table ---- */

/* Schemas of query parameters and bodies (JSON text), for the OpenAPI document. */
#define S_ID "{\"type\":\"integer\",\"minimum\":1}"
#define S_INT "{\"type\":\"integer\"}"
#define S_STR "{\"type\":\"string\"}"
#define S_TIME "{\"type\":\"string\",\"format\":\"date-time\"}"
#define S_MONTH_RE "^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])$"
#define S_MONTH "{\"type\":\"string\",\"pattern\":\"" S_MONTH_RE "\"}"

#define BILLING_STAFF "only admins (the operator's billing staff) may change invoices"

/* What POST routes without an object answer: 201 when they made something. */
static const struct route_answer made[] = {
    {200, "ok", NULL, NULL}, {201, "created", NULL, NULL}, {0}};

const struct route routes[] = {
    {"GET", "/healthz", reply_health, ROLE_NONE, "liveness probe", .no_token = true},
    {"GET", "/v1/openapi.json", reply_openapi, ROLE_NONE, "this API described as OpenAPI 3",
     .no_token = true},
    {"GET", "/v1/whoami", reply_whoami, ROLE_NONE, "the caller: user, role bindings, admin flag",
     .errors = ROUTE_ERR_CONFLICT},
    {"GET", "/metrics", metrics_route, ROLE_ADMIN,
     "Prometheus text format (admins): GPUs by state, workloads, queue wait, preemptions, "
     "reclaim latency, quotas, HTTP requests and latencies",
     .denied = "only admins may read /metrics: it spans every tenant",
     .answers = (const struct route_answer[]){{200, "ok", NULL, "text/plain"}, {0}},
     .errors = ROUTE_ERR_CONFLICT},
    {"GET", "/v1/capacity", reply_capacity, ROLE_NONE,
     "capacity, free and guaranteed milli-GPU per GPU class, with a warning when guarantees "
     "exceed healthy capacity",
     .errors = ROUTE_ERR_CONFLICT},
    {"GET", "/v1/usage", billing_route_usage, ROLE_NONE,
     "rated usage of a month (?period=YYYY-MM, org_id, project_id) per project, flavor and "
     "class; provisional while the month runs",
     .errors = ROUTE_ERR_CONFLICT,
     .query = (const struct route_param[]){{"period", false, S_MONTH},
                                           {"org_id", false, S_ID},
                                           {"project_id", false, S_ID},
                                           {0}}},
    {"GET", "/v1/inventory", inventory_route_list, ROLE_NONE,
     "every GPU you may see (?org=&manager=&cluster=&class=&state=&owner=): where, class, "
     "owner, manager, cost, who may use it, state and who uses it now",
     .errors = ROUTE_ERR_CONFLICT},
    {"GET", "/v1/inventory/export", inventory_route_export, ROLE_NONE,
     "the inventory as the spreadsheet's CSV (same filters)",
     .answers = (const struct route_answer[]){{200, "ok", NULL, "text/csv"}, {0}},
     .errors = ROUTE_ERR_CONFLICT},
    /* exactly one of gpu, node, pool, workload and project */
    {"GET", "/v1/inventory/history", inventory_route_history, ROLE_NONE,
     "telemetry of GPUs over time (?gpu=UUID[,UUID]&from=&to=): activity, memory, power",
     .errors = ROUTE_ERR_CONFLICT,
     .query = (const struct route_param[]){{"gpu", false, S_STR},
                                           {"node", false, S_STR},
                                           {"pool", false, S_STR},
                                           {"workload", false, S_STR},
                                           {"project", false, S_STR},
                                           {"from", false, S_TIME},
                                           {"to", false, S_TIME},
                                           {0}}},
    {"POST", "/v1/inventory/import", inventory_route_import, ROLE_ADMIN,
     "imports a GPU spreadsheet as CSV (admins): every row checked before any is written",
     .denied = "only admins may import the inventory", .answers = made,
     .errors = ROUTE_ERR_CONFLICT | ROUTE_ERR_BODY,
     .body = "{\"type\":\"string\",\"description\":"
             "\"a header row naming the columns, then one row per GPU\"}",
     .body_type = "text/csv"},
    {"GET", "/v1/cost", billing_route_cost, ROLE_NONE,
     "showback (?by=pool|project|org|manager&period=YYYY-MM): the pools' cost, used and idle",
     .errors = ROUTE_ERR_CONFLICT,
     .query =
         (const struct route_param[]){
             {"by", false,
              "{\"type\":\"string\",\"enum\":[\"pool\",\"project\",\"org\",\"manager\"]}"},
             {"period", false, S_MONTH},
             {0}}},
    {"GET", "/v1/invoices/draft", billing_route_draft, ROLE_NONE,
     "the draft invoice of an organization's month (?org_id=N&period=YYYY-MM), never stored",
     .errors = ROUTE_ERR_CONFLICT,
     .query =
         (const struct route_param[]){{"org_id", true, S_ID}, {"period", false, S_MONTH}, {0}}},
    {"POST", "/v1/invoices/issue", billing_route_issue, ROLE_ADMIN,
     "issues an organization's finished month {org_id, period}: numbered and immutable (admins)",
     .denied = BILLING_STAFF, .answers = made, .errors = ROUTE_ERR_CONFLICT | ROUTE_ERR_BODY,
     .body = "{\"type\":\"object\",\"required\":[\"org_id\",\"period\"],"
             "\"additionalProperties\":false,\"properties\":{\"org_id\":" S_ID ","
             "\"period\":" S_MONTH "}}"},
    {"GET", "/v1/ledger/verify", billing_route_ledger_verify, ROLE_ADMIN,
     "recomputes the usage ledger's hash chain (admins)",
     .denied = "only admins may verify the usage ledger", .errors = ROUTE_ERR_CONFLICT},
    /* ROLE_NONE: history.c refuses non-admins itself, with its own message */
    {"POST", "/v1/history", history_route_import, ROLE_NONE,
     "imports finished work of the past, labelled simulated, and metered into the ledger (admins)",
     .request_body = history_openapi_body, .answers = made,
     .errors = ROUTE_ERR_CONFLICT | ROUTE_ERR_BODY},
    /* ROLE_NONE: whatif.c lets in admins, organization admins and managers, with its message */
    {"POST", "/v1/whatif", whatif_route, ROLE_NONE,
     "what-if on real history, simulated: a period's recorded work (or a CSV trace) replayed "
     "through the scheduler with changes (quotas, nodes, lending, policy, grace) beside the same "
     "replay without them; waits, GPUs over time, preemptions, GPU-hours, cost",
     .request_body = whatif_openapi_body,
     .answers = (const struct route_answer[]){{200, "both runs, labelled simulated", NULL, NULL},
                                              {503, "a what-if is already running", "Error", NULL},
                                              {0}},
     .errors = ROUTE_ERR_BODY},
    /* Sub-routes of an object: {id} is the object's id. */
    {"GET", "/v1/workloads/{id}/logs", workloads_logs, ROLE_VIEWER, "read a workload's output",
     .op = "logs", .object = "workloads",
     .answers =
         (const struct route_answer[]){
             {200, "the workload's output: {log, offset, next_offset, size}", NULL, NULL},
             {410,
              "the workload ended more than log-retention-days ago and its log was removed; "
              "the message says when",
              "Error", NULL},
             {0}},
     .query = (const struct route_param[]){{"offset", false, S_INT}, {"tail", false, S_INT}, {0}}},
    {"POST", "/v1/workloads/{id}/cancel", workloads_cancel, ROLE_MEMBER, "cancel a workload",
     .op = "cancel", .object = "workloads",
     .answers =
         (const struct route_answer[]){
             {202, "cancel accepted: queued work is cancelled, running work is being stopped",
              "workloads", NULL},
             {0}},
     .errors = ROUTE_ERR_CONFLICT},
    {"POST", "/v1/workloads/{id}/hold", workloads_hold, ROLE_MEMBER,
     "hold queued work: it keeps its place but is not scheduled until released", .op = "hold",
     .object = "workloads",
     .answers = (const struct route_answer[]){{200, "held", "workloads", NULL}, {0}},
     .errors = ROUTE_ERR_CONFLICT},
    {"POST", "/v1/workloads/{id}/release", workloads_release, ROLE_MEMBER,
     "release held work: it is scheduled again in its original place", .op = "release",
     .object = "workloads",
     .answers = (const struct route_answer[]){{200, "released", "workloads", NULL}, {0}},
     .errors = ROUTE_ERR_CONFLICT},
    /* Invoice actions: the invoice stays immutable; these are its only transitions. */
    {"POST", "/v1/invoices/{id}/pay", billing_route_pay, ROLE_ADMIN,
     "mark an issued invoice paid (admins)", .denied = BILLING_STAFF, .op = "pay",
     .object = "invoices",
     .answers = (const struct route_answer[]){{200, "ok", "invoices", NULL}, {0}},
     .errors = ROUTE_ERR_CONFLICT},
    {"POST", "/v1/invoices/{id}/credit", billing_route_credit, ROLE_ADMIN,
     "issue a credit note {reason, amount_micros (absent: all that is left)} (admins)",
     .denied = BILLING_STAFF, .op = "credit", .object = "invoices",
     .answers = (const struct route_answer[]){{201, "ok", "invoices", NULL}, {0}},
     .errors = ROUTE_ERR_CONFLICT | ROUTE_ERR_BODY},
    {"GET", "/v1/invoices/{id}/export", billing_route_export, ROLE_VIEWER,
     "the invoice as ?format=json|csv|html (a printable page)", .op = "export",
     .object = "invoices",
     .answers =
         (const struct route_answer[]){
             {200, "ok", "invoices", "application/json text/csv text/html"}, {0}},
     .errors = ROUTE_ERR_CONFLICT},
    {"GET", "/v1/invoices/{id}/verify", billing_route_verify, ROLE_VIEWER,
     "re-rate the period and compare byte for byte: {reproduced}", .op = "verify",
     .object = "invoices",
     .answers =
         (const struct route_answer[]){{200, "ok",
                                        "{\"type\":\"object\",\"properties\":{\"invoice_id\":" S_INT
                                        ",\"number\":" S_STR
                                        ",\"reproduced\":{\"type\":\"boolean\"}}}",
                                        NULL},
                                       {0}},
     .errors = ROUTE_ERR_CONFLICT},
};
const size_t routes_n = ARRAY_SIZE(routes);

/* ---- dispatch ---- */

/*
 * Whether path has the shape of pattern: its literal parts, and a path id
 * (path_id) where the pattern says {id}, then stored in *ret_id.
 */
static bool path_matches(const char *pattern, const char *path, int64_t *ret_id)
{
    static const char id_segment[] = "{id}";

    while (*pattern) {
        if (strncmp(pattern, id_segment, strlen(id_segment)) == 0) {
            if (!path_id(path, ret_id, &path))
                return false;
            pattern += strlen(id_segment);
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return *path == '\0';
}

/*
 * The routes of the table whose path matches r's: the one for r's method
 * (*ret_route, or NULL), and the methods the path offers as "A or B"
 * (arena memory), for a 405.
 */
static bool find_route(struct req *r, const struct route **ret_route, const char **ret_allowed,
                       bool *ret_no_token)
{
    const char *allowed = NULL;
    bool any = false;

    *ret_route = NULL;
    *ret_no_token = true;
    for (size_t i = 0; i < routes_n; i++) {
        int64_t id = 0;
        if (!path_matches(routes[i].path, r->path, &id))
            continue;
        any = true;
        *ret_no_token &= routes[i].no_token;
        allowed = allowed ? arena_printf(&r->arena, "%s or %s", allowed, routes[i].method)
                          : routes[i].method;
        if (!*ret_route && is(r, routes[i].method)) {
            *ret_route = &routes[i];
            r->path_id = id;
        }
    }
    if (*ret_route)
        *ret_no_token = (*ret_route)->no_token;
    *ret_allowed = allowed;
    return any;
}

/* Runs a route of the table; its least role when that is global (admins). */
static void run_route(struct req *r, const struct route *rt)
{
    if (rt->least == ROLE_ADMIN && !r->who->admin) {
        struct error_info ei = {0};
        errinfo_set(&ei, ERR_FORBIDDEN, NULL, "%s", rt->denied);
        req_reply_error(r, ERR_FORBIDDEN, &ei);
        return;
    }
    rt->fn(r);
}

void routes_dispatch(struct req *r)
{
    struct error_info ei = {0};
    const struct resource_def *def;
    const struct route *rt;
    const char *id_s, *allowed;
    bool in_table, no_token;
    char res[64];
    int rc;

    if (ui_serve(r))
        return;
    in_table = find_route(r, &rt, &allowed, &no_token);
    if (!in_table && strncmp(r->path, "/v1/", 4) != 0) {
        not_found(r);
        return;
    }
    if (!in_table || !no_token) {
        rc = auth_authenticate(r, &ei);
        if (rc >= 0)
            rc = rbac_refresh(r, &ei);
        if (rc < 0) {
            req_reply_error(r, rc, &ei);
            return;
        }
    }
    if (in_table) {
        if (rt)
            run_route(r, rt);
        else
            method_not_allowed(r, allowed);
        return;
    }
    if (!split_resource_path(r->path, res, sizeof(res), &id_s) || !(def = model_find(res))) {
        not_found(r);
        return;
    }
    dispatch_resource(r, def, id_s);
}
