/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openapi.c: the OpenAPI 3.0 document, generated from the same tables the
 * server runs on (the fixed routes and the model's resources), so it cannot
 * drift from what is served. A test walks it against the live server.
 */
#include "base/common.h"

#include "api/api-int.h"

static json_t *field_schema(const struct field_def *f)
{
    json_t *s = json_object();
    switch (f->type) {
    case FT_INT:
    case FT_REF:
        json_object_set_new(s, "type", json_string("integer"));
        json_object_set_new(s, "format", json_string("int64"));
        if (f->type == FT_INT) {
            json_object_set_new(s, "minimum", json_integer(f->min));
            json_object_set_new(s, "maximum", json_integer(f->max));
        } else {
            json_object_set_new(s, "minimum", json_integer(1)); /* ids are positive */
        }
        break;
    case FT_BOOL:
        json_object_set_new(s, "type", json_string("boolean"));
        break;
    case FT_TIME:
        json_object_set_new(s, "type", json_string("string"));
        json_object_set_new(s, "format", json_string("date-time"));
        break;
    case FT_ENUM: {
        json_t *e = json_array();
        for (const char *const *v = f->enum_values; *v; v++)
            json_array_append_new(e, json_string(*v));
        json_object_set_new(s, "type", json_string("string"));
        json_object_set_new(s, "enum", e);
        break;
    }
    case FT_LABELS:
        json_object_set_new(s, "type", json_string("object"));
        json_object_set_new(s, "additionalProperties", json_pack("{s:s}", "type", "string"));
        break;
    case FT_REFLIST:
        json_object_set_new(s, "type", json_string("array"));
        json_object_set_new(s, "items", json_pack("{s:s,s:i}", "type", "integer", "minimum", 1));
        break;
    case FT_JSON:
        break;
    default:
        /* The patterns are model.c's checks: names, identifiers, and text free
         * of control characters but tab and newline. */
        json_object_set_new(s, "type", json_string("string"));
        json_object_set_new(s, "maxLength", json_integer(f->max));
        if (f->min > 0)
            json_object_set_new(s, "minLength", json_integer(f->min));
        if (f->type == FT_NAME)
            json_object_set_new(s, "pattern", json_string("^[a-z0-9][a-z0-9._-]*$"));
        else if (f->type == FT_IDENT)
            json_object_set_new(s, "pattern", json_string("^[A-Za-z0-9][A-Za-z0-9._:/-]*$"));
        else
            json_object_set_new(s, "pattern", json_string("^[^\\u0000-\\u0008\\u000b-\\u001f]*$"));
    }
    if (f->flags & FF_NULLABLE)
        json_object_set_new(s, "nullable", json_true());
    if (f->flags & FF_READONLY)
        json_object_set_new(s, "readOnly", json_true());
    if (f->type == FT_REF || f->type == FT_REFLIST)
        json_object_set_new(s, "description", json_sprintf("%s (ids of %s)", f->help, f->ref));
    else
        json_object_set_new(s, "description", json_string(f->help));
    return s;
}

/*
 * The object as read and created; for_patch: what a PATCH may carry (no
 * read-only or immutable field, none required).
 */
/*
 * A list filter's value: the field's type, without its bounds or pattern. A
 * value no row can have (an id 0, an empty name) is no error: it matches none.
 */
static json_t *filter_schema(const struct field_def *f)
{
    json_t *s = field_schema(f);
    static const char *const bounds[] = {"minimum", "maximum", "minLength", "maxLength", "pattern"};
    for (size_t i = 0; i < ARRAY_SIZE(bounds); i++)
        json_object_del(s, bounds[i]);
    return s;
}

static json_t *resource_schema(const struct resource_def *def, bool for_patch)
{
    json_t *props = json_object(), *required = json_array();
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        if (f->flags & FF_SECRET)
            continue;
        if (for_patch && (f->flags & (FF_READONLY | FF_IMMUTABLE)))
            continue;
        json_object_set_new(props, f->name, field_schema(f));
        if ((f->flags & FF_REQUIRED) && !for_patch)
            json_array_append_new(required, json_string(f->name));
    }
    if (for_patch) {
        json_decref(required);
        /* a PATCH names at least one field to change */
        return json_pack("{s:s,s:s,s:o,s:i,s:b}", "type", "object", "description", def->help,
                         "properties", props, "minProperties", 1, "additionalProperties", 0);
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:b}", "type", "object", "description", def->help,
                     "properties", props, "required", required, "additionalProperties", 0);
}

static json_t *ref_to(const char *name)
{
    return json_pack("{s:s++}", "$ref", "#/components/schemas/", name, "");
}

static json_t *json_content(json_t *schema)
{
    return json_pack("{s:{s:o}}", "application/json", "schema", schema);
}

static json_t *response(const char *desc, json_t *schema)
{
    json_t *r = json_pack("{s:s}", "description", desc);
    if (schema)
        json_object_set_new(r, "content", json_content(schema));
    return r;
}

enum { WITH_BODY = 1, MAY_CONFLICT = 2 };

static json_t *error_responses(int what)
{
    json_t *r = json_object();
    json_object_set_new(r, "400", response("invalid request", ref_to("Error")));
    json_object_set_new(r, "401", response("missing, invalid or expired token", ref_to("Error")));
    json_object_set_new(r, "403", response("role does not allow it", ref_to("Error")));
    json_object_set_new(r, "404", response("no such object (or not yours)", ref_to("Error")));
    if (what & MAY_CONFLICT)
        json_object_set_new(r, "409",
                            response("a unique key is taken, the object is still referenced, or "
                                     "the last admin would go",
                                     ref_to("Error")));
    if (what & WITH_BODY) {
        json_object_set_new(r, "413", response("body too large", ref_to("Error")));
        json_object_set_new(r, "415", response("body is not application/json", ref_to("Error")));
    }
    json_object_set_new(r, "503", response("store busy; retry", ref_to("Error")));
    return r;
}

static json_t *op(const char *summary, const char *verb, const char *schema_name,
                  json_t *responses)
{
    return json_pack("{s:s,s:s++,s:o}", "summary", summary, "operationId", verb, "_",
                     schema_name, "responses", responses);
}

static json_t *body_of(const char *schema_name)
{
    return json_pack("{s:b,s:o}", "required", 1, "content", json_content(ref_to(schema_name)));
}

/* "role-bindings" -> "role_bindings": schema names and operation ids avoid '-'. */
static void schema_name_of(const struct resource_def *def, char *out, size_t size)
{
    snprintf(out, size, "%s", def->name);
    for (char *p = out; *p; p++) {
        if (*p == '-')
            *p = '_';
    }
}

static json_t *collection_path(const struct resource_def *def, const char *schema)
{
    json_t *coll = json_object(), *params = json_array(), *rs, *list;

    json_array_append_new(params,
                          json_pack("{s:s,s:s,s:{s:s,s:i,s:i}}", "name", "limit", "in", "query",
                                    "schema", "type", "integer", "minimum", 1, "maximum", 1000));
    json_array_append_new(params, json_pack("{s:s,s:s,s:{s:s,s:s,s:i,s:I}}", "name", "after", "in",
                                            "query", "schema", "type", "integer", "format", "int64",
                                            "minimum", 0, "maximum", (json_int_t)INT64_MAX));
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        if ((f->flags & FF_FILTER) && !(f->flags & FF_SECRET))
            json_array_append_new(params, json_pack("{s:s,s:s,s:o}", "name", f->name, "in", "query",
                                                    "schema", filter_schema(f)));
    }
    rs = error_responses(0);
    json_object_set_new(
        rs, "200",
        response("a page of objects",
                 json_pack("{s:s,s:{s:{s:s,s:o},s:{s:s,s:b}}}", "type", "object", "properties",
                           "items", "type", "array", "items", ref_to(schema), "next_after", "type",
                           "integer", "nullable", 1)));
    list = op("list", "list", schema, rs);
    json_object_set_new(list, "parameters", params);
    json_object_set_new(coll, "get", list);
    if (def->need[ACT_CREATE] != ROLE_NOBODY) {
        json_t *create;
        rs = error_responses(WITH_BODY | MAY_CONFLICT);
        if (def == &model_workloads)
            json_object_set_new(rs, "200",
                                response("the earlier workload: the idempotency key was used "
                                         "before in the project",
                                         ref_to(schema)));
        if (def == &model_tokens) {
            /* the one answer that carries the secret */
            char created[80];
            snprintf(created, sizeof(created), "%s_created", schema);
            json_object_set_new(rs, "201", response("created, with its secret", ref_to(created)));
        } else {
            json_object_set_new(rs, "201", response("created", ref_to(schema)));
        }
        create = op("create", "create", schema, rs);
        json_object_set_new(create, "requestBody", body_of(schema));
        json_object_set_new(coll, "post", create);
    }
    return coll;
}

static json_t *item_path(const struct resource_def *def, const char *schema)
{
    json_t *item = json_object(), *rs;

    json_object_set_new(item, "parameters",
                        json_pack("[{s:s,s:s,s:b,s:{s:s}}]", "name", "id", "in", "path",
                                  "required", 1, "schema", "type", "integer"));
    rs = error_responses(0);
    json_object_set_new(rs, "200", response("the object", ref_to(schema)));
    json_object_set_new(item, "get", op("read", "get", schema, rs));
    if (def->need[ACT_UPDATE] != ROLE_NOBODY) {
        char patch_schema[80];
        json_t *patch;
        rs = error_responses(WITH_BODY | MAY_CONFLICT);
        json_object_set_new(rs, "200", response("the changed object", ref_to(schema)));
        patch = op("change some fields", "update", schema, rs);
        snprintf(patch_schema, sizeof(patch_schema), "%s_patch", schema);
        json_object_set_new(patch, "requestBody", body_of(patch_schema));
        json_object_set_new(item, "patch", patch);
    }
    if (def->need[ACT_DELETE] != ROLE_NOBODY) {
        bool revoke = def == &model_tokens;
        rs = error_responses(MAY_CONFLICT);
        json_object_set_new(rs, "204", response(revoke ? "revoked" : "deleted", NULL));
        json_object_set_new(item, "delete", op(revoke ? "revoke" : "delete", "delete", schema, rs));
    }
    return item;
}

static void add_resource_paths(json_t *paths, json_t *schemas, const struct resource_def *def)
{
    char schema[64], path[96];

    schema_name_of(def, schema, sizeof(schema));
    json_object_set_new(schemas, schema, resource_schema(def, false));
    if (def->need[ACT_UPDATE] != ROLE_NOBODY) {
        char patch[80];
        snprintf(patch, sizeof(patch), "%s_patch", schema);
        json_object_set_new(schemas, patch, resource_schema(def, true));
    }
    if (def == &model_workloads) {
        /* computed for queued work when it is read (workloads.c) */
        json_t *props = json_object_get(json_object_get(schemas, schema), "properties");
        json_object_set_new(props, "queue_position",
                            json_pack("{s:s,s:b,s:b,s:s}", "type", "integer", "readOnly", 1,
                                      "x-computed", 1, "description",
                                      "place in the queue, while queued"));
    }
    if (def == &model_tokens) {
        json_t *created = resource_schema(def, false);
        char name[80];
        json_object_set_new(json_object_get(created, "properties"), "token",
                            json_pack("{s:s,s:b,s:s}", "type", "string", "readOnly", 1,
                                      "description", "the secret, shown only in this answer"));
        snprintf(name, sizeof(name), "%s_created", schema);
        json_object_set_new(schemas, name, created);
    }
    snprintf(path, sizeof(path), "/v1/%s", def->name);
    json_object_set_new(paths, path, collection_path(def, schema));
    if (def == &model_events) {
        /* with Accept: text/event-stream, the same list as server-sent events */
        json_t *ok = json_object_get(
            json_object_get(json_object_get(json_object_get(paths, path), "get"), "responses"),
            "200");
        json_object_set_new(json_object_get(ok, "content"), "text/event-stream",
                            json_pack("{s:{s:s}}", "schema", "type", "string"));
    }
    snprintf(path, sizeof(path), "/v1/%s/{id}", def->name);
    json_object_set_new(paths, path, item_path(def, schema));
}

/* The 200 of a fixed route: JSON, but for the few that answer another format. */
static json_t *fixed_route_ok(const char *path)
{
    json_t *r = response("ok", json_pack("{s:s}", "type", "object"));
    json_t *content = json_object_get(r, "content");

    if (strcmp(path, "/metrics") == 0 || strcmp(path, "/v1/inventory/export") == 0) {
        json_object_del(content, "application/json");
        json_object_set_new(content, path[1] == 'm' ? "text/plain" : "text/csv",
                            json_pack("{s:{s:s}}", "schema", "type", "string"));
    }
    return r;
}

static json_t *query_param(const char *name, bool required, json_t *schema)
{
    return json_pack("{s:s,s:s,s:b,s:o}", "name", name, "in", "query", "required", required,
                     "schema", schema);
}

static json_t *month_schema(void)
{
    return json_pack("{s:s,s:s}", "type", "string", "pattern",
                     "^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])$");
}

static json_t *id_schema(void)
{
    return json_pack("{s:s,s:i}", "type", "integer", "minimum", 1);
}

/* The query arguments of the fixed routes that take some (docs/api.md). */
static void fixed_route_params(const char *path, json_t *op_obj)
{
    json_t *p = json_array();

    if (strcmp(path, "/v1/invoices/draft") == 0) {
        json_array_append_new(p, query_param("org_id", true, id_schema()));
        json_array_append_new(p, query_param("period", false, month_schema()));
    } else if (strcmp(path, "/v1/usage") == 0) {
        json_array_append_new(p, query_param("period", false, month_schema()));
        json_array_append_new(p, query_param("org_id", false, id_schema()));
        json_array_append_new(p, query_param("project_id", false, id_schema()));
    } else if (strcmp(path, "/v1/cost") == 0) {
        json_array_append_new(p, query_param("by", false,
                                             json_pack("{s:s,s:[ssss]}", "type", "string", "enum",
                                                       "pool", "project", "org", "manager")));
        json_array_append_new(p, query_param("period", false, month_schema()));
    } else if (strcmp(path, "/v1/inventory/history") == 0) {
        /* exactly one of gpu, node, pool, workload and project */
        static const char *const what[] = {"gpu", "node", "pool", "workload", "project"};
        for (size_t i = 0; i < ARRAY_SIZE(what); i++)
            json_array_append_new(
                p, query_param(what[i], false, json_pack("{s:s}", "type", "string")));
        json_array_append_new(
            p, query_param("from", false,
                           json_pack("{s:s,s:s}", "type", "string", "format", "date-time")));
        json_array_append_new(
            p, query_param("to", false,
                           json_pack("{s:s,s:s}", "type", "string", "format", "date-time")));
    }
    if (json_array_size(p) > 0)
        json_object_set_new(op_obj, "parameters", p);
    else
        json_decref(p);
}

/* The bodies the fixed POST routes take. */
static void fixed_route_body(const char *path, json_t *op_obj)
{
    json_t *body = NULL;

    if (strcmp(path, "/v1/invoices/issue") == 0)
        body = json_pack("{s:b,s:{s:{s:{s:s,s:[ss],s:b,s:{s:{s:s,s:i},s:{s:s,s:s}}}}}}", "required",
                         1, "content", "application/json", "schema", "type", "object", "required",
                         "org_id", "period", "additionalProperties", 0, "properties", "org_id",
                         "type", "integer", "minimum", 1, "period", "type", "string", "pattern",
                         "^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])$");
    else if (strcmp(path, "/v1/inventory/import") == 0)
        body = json_pack("{s:b,s:{s:{s:{s:s,s:s}}}}", "required", 1, "content", "text/csv",
                         "schema", "type", "string", "description",
                         "a header row naming the columns, then one row per GPU");
    else if (strcmp(path, "/v1/history") == 0)
        body = history_openapi_body();
    if (body)
        json_object_set_new(op_obj, "requestBody", body);
    fixed_route_params(path, op_obj);
}

json_t *openapi_document(void)
{
    json_t *paths = json_object(), *schemas = json_object();

    for (size_t i = 0; i < routes_n_fixed; i++) {
        const struct route *rt = &routes_fixed[i];
        char method[8];
        json_t *o;
        size_t k;
        for (k = 0; k < sizeof(method) - 1 && rt->method[k]; k++)
            method[k] = (char)(rt->method[k] | 0x20);
        method[k] = '\0';
        o = json_pack("{s:s,s:{s:{s:s}}}", "summary", rt->summary, "responses", "200",
                      "description", "ok");
        if (!rt->auth) {
            json_object_set_new(o, "security", json_array());
        } else {
            bool post = strcmp(rt->method, "POST") == 0;
            json_t *rs = error_responses(MAY_CONFLICT | (post ? WITH_BODY : 0));
            json_object_set_new(rs, "200", fixed_route_ok(rt->path));
            if (post)
                json_object_set_new(rs, "201",
                                    response("created", json_pack("{s:s}", "type", "object")));
            json_object_set_new(o, "responses", rs);
        }
        fixed_route_body(rt->path, o);
        json_object_set_new(paths, rt->path, json_pack("{s:o}", method, o));
    }
    for (size_t i = 0; i < model_n_resources; i++)
        add_resource_paths(paths, schemas, model_resources[i]);
    {
        json_t *rs = error_responses(MAY_CONFLICT);
        json_object_set_new(rs, "202", response("cancel accepted: queued work is cancelled, "
                                                "running work is being stopped",
                                                ref_to("workloads")));
        json_t *lrs = error_responses(0);
        json_object_set_new(lrs, "200",
                            response("the workload's output: {log, offset, next_offset, size}",
                                     json_pack("{s:s}", "type", "object")));
        json_object_set_new(lrs, "410",
                            response("the workload ended more than log-retention-days ago and "
                                     "its log was removed; the message says when",
                                     ref_to("Error")));
        json_object_set_new(
            paths, "/v1/workloads/{id}/logs",
            json_pack("{s:[{s:s,s:s,s:b,s:{s:s}},{s:s,s:s,s:{s:s}},{s:s,s:s,s:{s:s}}],s:o}",
                      "parameters", "name", "id", "in", "path", "required", 1, "schema", "type",
                      "integer", "name", "offset", "in", "query", "schema", "type", "integer",
                      "name", "tail", "in", "query", "schema", "type", "integer", "get",
                      op("read a workload's output", "logs", "workloads", lrs)));
        json_object_set_new(
            paths, "/v1/workloads/{id}/cancel",
            json_pack("{s:[{s:s,s:s,s:b,s:{s:s}}],s:o}", "parameters", "name", "id", "in", "path",
                      "required", 1, "schema", "type", "integer", "post",
                      op("cancel a workload", "cancel", "workloads", rs)));
    }
    {
        /* Invoice actions: the invoice stays immutable; these are its only transitions. */
        static const struct {
            const char *tail, *method, *summary;
            int status;
        } acts[] = {
            {"pay", "post", "mark an issued invoice paid (admins)", 200},
            {"credit", "post",
             "issue a credit note {reason, amount_micros (absent: all that is left)} (admins)",
             201},
            {"export", "get", "the invoice as ?format=json|csv|html (a printable page)", 200},
            {"verify", "get", "re-rate the period and compare byte for byte: {reproduced}", 200},
        };
        for (size_t i = 0; i < ARRAY_SIZE(acts); i++) {
            json_t *rs = error_responses(MAY_CONFLICT | (acts[i].status == 201 ? WITH_BODY : 0));
            char path[64], code[8];
            snprintf(path, sizeof(path), "/v1/invoices/{id}/%s", acts[i].tail);
            snprintf(code, sizeof(code), "%d", acts[i].status);
            /* verify answers {invoice_id, number, reproduced}; the others an invoice */
            json_t *ok = strcmp(acts[i].tail, "verify") != 0
                             ? ref_to("invoices")
                             : json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:s}}}", "type", "object",
                                         "properties", "invoice_id", "type", "integer", "number",
                                         "type", "string", "reproduced", "type", "boolean");
            json_object_set_new(rs, code, response("ok", ok));
            if (strcmp(acts[i].tail, "export") == 0) {
                json_t *content = json_object_get(json_object_get(rs, code), "content");
                json_object_set_new(content, "text/csv",
                                    json_pack("{s:{s:s}}", "schema", "type", "string"));
                json_object_set_new(content, "text/html",
                                    json_pack("{s:{s:s}}", "schema", "type", "string"));
            }
            json_object_set_new(
                paths, path,
                json_pack("{s:[{s:s,s:s,s:b,s:{s:s}}],s:o}", "parameters", "name", "id", "in",
                          "path", "required", 1, "schema", "type", "integer", acts[i].method,
                          op(acts[i].summary, acts[i].tail, "invoices", rs)));
        }
    }
    json_object_set_new(
        schemas, "Error",
        json_pack("{s:s,s:{s:{s:s,s:{s:{s:s},s:{s:s},s:{s:s}}}}}", "type", "object", "properties",
                  "error", "type", "object", "properties", "code", "type", "string", "message",
                  "type", "string", "detail", "type", "object"));
    return json_pack("{s:s,s:{s:s,s:s,s:s},s:o,s:{s:o,s:{s:{s:s,s:s}}},s:[{s:[]}]}", "openapi",
                     "3.0.3", "info", "title", "gpuaas API", "version", "1",
                     "description",
                     "GPU-as-a-Service control plane. Errors are "
                     "{\"error\":{\"code\",\"message\",\"detail\"}}; lists are paginated with "
                     "limit and after.",
                     "paths", paths, "components", "schemas", schemas, "securitySchemes",
                     "bearer", "type", "http", "scheme", "bearer", "security", "bearer");
}
