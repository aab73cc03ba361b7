/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.c: maps method and path to a handler. Everything under /v1 but the
 * OpenAPI document needs a valid bearer token; the resource routes are the
 * same five for every resource of the model. The dashboard's files (/ and
 * /ui/...) are ui.c's.
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
    store_filter_eq_int(&f, model_field_index(&model_role_bindings, "user_id"), r->who->user_id);
    f.limit = 10000;
    if (rc >= 0)
        rc = store_list(req_db(r), &model_role_bindings, &f, &r->arena, &rows, &n, &ei);
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
    struct engine_capacity caps[256];
    size_t n = r->api->opt.engine ? engine_capacity(r->api->opt.engine, caps, ARRAY_SIZE(caps)) : 0;
    json_t *items = json_array();

    for (size_t i = 0; i < n; i++) {
        struct row cls;
        const char *name = "?";
        json_t *item;
        if (store_get(req_db(r), &model_gpu_classes, caps[i].class_id, &r->arena, &cls, NULL) >= 0)
            name = model_get(&model_gpu_classes, &cls, "name")->s;
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

const struct route routes_fixed[] = {
    {"GET", "/healthz", false, reply_health, "liveness probe"},
    {"GET", "/v1/openapi.json", false, reply_openapi, "this API described as OpenAPI 3"},
    {"GET", "/v1/whoami", true, reply_whoami, "the caller: user, role bindings, admin flag"},
    {"GET", "/metrics", true, metrics_route,
     "Prometheus text format (admins): GPUs by state, workloads, queue wait, preemptions, "
     "reclaim latency, quotas, HTTP requests and latencies"},
    {"GET", "/v1/capacity", true, reply_capacity,
     "capacity, free and guaranteed milli-GPU per GPU class, with a warning when guarantees "
     "exceed healthy capacity"},
    {"GET", "/v1/usage", true, billing_route_usage,
     "rated usage of a month (?period=YYYY-MM, org_id, project_id) per project, flavor and "
     "class; provisional while the month runs"},
    {"GET", "/v1/inventory", true, inventory_route_list,
     "every GPU you may see (?org=&manager=&cluster=&class=&state=&owner=): where, class, "
     "owner, manager, cost, who may use it, state and who uses it now"},
    {"GET", "/v1/inventory/export", true, inventory_route_export,
     "the inventory as the spreadsheet's CSV (same filters)"},
    {"GET", "/v1/inventory/history", true, inventory_route_history,
     "telemetry of GPUs over time (?gpu=UUID[,UUID]&from=&to=): activity, memory, power"},
    {"POST", "/v1/inventory/import", true, inventory_route_import,
     "imports a GPU spreadsheet as CSV (admins): every row checked before any is written"},
    {"GET", "/v1/cost", true, billing_route_cost,
     "showback (?by=pool|project|org|manager&period=YYYY-MM): the pools' cost, used and idle"},
    {"GET", "/v1/invoices/draft", true, billing_route_draft,
     "the draft invoice of an organization's month (?org_id=N&period=YYYY-MM), never stored"},
    {"POST", "/v1/invoices/issue", true, billing_route_issue,
     "issues an organization's finished month {org_id, period}: numbered and immutable (admins)"},
    {"GET", "/v1/ledger/verify", true, billing_route_ledger_verify,
     "recomputes the usage ledger's hash chain (admins)"},
    {"POST", "/v1/history", true, history_route_import,
     "imports finished work of the past, labelled simulated, and metered into the ledger (admins)"},
};
const size_t routes_n_fixed = ARRAY_SIZE(routes_fixed);

void routes_dispatch(struct req *r)
{
    struct error_info ei = {0};
    const struct resource_def *def;
    const struct route *fixed = NULL;
    const char *id_s, *tail;
    char res[64];
    int64_t id;
    int rc;

    if (ui_serve(r))
        return;
    for (size_t i = 0; i < routes_n_fixed; i++) {
        if (strcmp(r->path, routes_fixed[i].path) == 0)
            fixed = &routes_fixed[i];
    }
    if (!fixed && strncmp(r->path, "/v1/", 4) != 0) {
        not_found(r);
        return;
    }
    if (!fixed || fixed->auth) {
        rc = auth_authenticate(r, &ei);
        if (rc >= 0)
            rc = rbac_refresh(r, &ei);
        if (rc < 0) {
            req_reply_error(r, rc, &ei);
            return;
        }
    }
    if (fixed) {
        if (is(r, fixed->method))
            fixed->fn(r);
        else
            method_not_allowed(r, fixed->method);
        return;
    }
    if (strncmp(r->path, "/v1/workloads/", 14) == 0 && path_id(r->path + 14, &id, &tail)) {
        if (strcmp(tail, "/cancel") == 0) {
            is(r, "POST") ? workloads_cancel(r, id) : method_not_allowed(r, "POST");
            return;
        }
        if (strcmp(tail, "/logs") == 0) {
            is(r, "GET") ? workloads_logs(r, id) : method_not_allowed(r, "GET");
            return;
        }
    }
    if (strncmp(r->path, "/v1/invoices/", 13) == 0 && path_id(r->path + 13, &id, &tail) &&
        billing_route_invoice_action(r, id, tail))
        return;
    if (strcmp(r->path, "/v1/events") == 0 && is(r, "GET") && stream_wanted(r)) {
        stream_events(r);
        return;
    }
    if (!split_resource_path(r->path, res, sizeof(res), &id_s) || !(def = model_find(res))) {
        not_found(r);
        return;
    }
    dispatch_resource(r, def, id_s);
}
