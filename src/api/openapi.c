/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openapi.c: the OpenAPI 3.0 document, generated from the same tables the
 * server runs on (the route table, the model's resources and their hooks),
 * so it cannot drift from what is served. A test walks it against the live
 * server.
 */
#include "base/common.h"

#include "api/api-int.h"

json_t *openapi_field_schema(const struct field_def *f)
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
        json_object_set_new(s, "maxItems", json_integer(f->max));
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
    json_t *s = openapi_field_schema(f);
    static const char *const bounds[] = {"minimum", "maximum", "minLength", "maxLength", "pattern"};
    for (size_t i = 0; i < ARRAY_SIZE(bounds); i++)
        json_object_del(s, bounds[i]);
    return s;
}

json_t *openapi_object_schema(const struct field_def *fields, size_t n, const char *help)
{
    json_t *props = json_object(), *required = json_array(), *s = json_object();
    for (size_t i = 0; i < n; i++) {
        const struct field_def *f = &fields[i];
        if (f->flags & FF_SECRET)
            continue;
        json_object_set_new(props, f->name, openapi_field_schema(f));
        if (f->flags & FF_REQUIRED)
            json_array_append_new(required, json_string(f->name));
    }
    json_object_set_new(s, "type", json_string("object"));
    if (help)
        json_object_set_new(s, "description", json_string(help));
    json_object_set_new(s, "properties", props);
    json_object_set_new(s, "required", required);
    json_object_set_new(s, "additionalProperties", json_false());
    return s;
}

static json_t *resource_schema(const struct resource_def *def, bool for_patch)
{
    json_t *props;
    if (!for_patch)
        return openapi_object_schema(def->fields, def->n_fields, def->help);
    props = json_object();
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        if (!(f->flags & (FF_SECRET | FF_READONLY | FF_IMMUTABLE)))
            json_object_set_new(props, f->name, openapi_field_schema(f));
    }
    /* a PATCH names at least one field to change */
    return json_pack("{s:s,s:s,s:o,s:i,s:b}", "type", "object", "description", def->help,
                     "properties", props, "minProperties", 1, "additionalProperties", 0);
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
    const struct resource_hooks *h = resource_hooks_of(def);
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
    if (h->stream) /* with Accept: text/event-stream, the same list as server-sent events */
        json_object_set_new(json_object_get(json_object_get(rs, "200"), "content"),
                            "text/event-stream",
                            json_pack("{s:{s:s}}", "schema", "type", "string"));
    json_object_set_new(coll, "get", list);
    if (def->need[ACT_CREATE] != ROLE_NOBODY) {
        json_t *create;
        rs = error_responses(WITH_BODY | MAY_CONFLICT);
        if (h->same_create)
            json_object_set_new(rs, "200", response(h->same_create, ref_to(schema)));
        if (h->reveal.name) {
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
    const struct resource_hooks *h = resource_hooks_of(def);
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
        bool retire = h->retire != NULL;
        rs = error_responses(MAY_CONFLICT);
        json_object_set_new(rs, "204", response(retire ? h->retired : "deleted", NULL));
        json_object_set_new(item, "delete",
                            op(retire ? h->retire_verb : "delete", "delete", schema, rs));
    }
    return item;
}

static void add_resource_paths(json_t *paths, json_t *schemas, const struct resource_def *def)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    char schema[64], path[96];

    schema_name_of(def, schema, sizeof(schema));
    json_object_set_new(schemas, schema, resource_schema(def, false));
    if (def->need[ACT_UPDATE] != ROLE_NOBODY) {
        char patch[80];
        snprintf(patch, sizeof(patch), "%s_patch", schema);
        json_object_set_new(schemas, patch, resource_schema(def, true));
    }
    for (size_t k = 0; k <= ARRAY_SIZE(h->computed_also); k++) {
        /* computed when it is read (the decorate hook) */
        const struct hook_field *hf = k == 0 ? &h->computed : &h->computed_also[k - 1];
        json_t *props = json_object_get(json_object_get(schemas, schema), "properties");
        if (hf->name)
            json_object_set_new(props, hf->name,
                                json_pack("{s:s,s:b,s:b,s:s}", "type", hf->type, "readOnly", 1,
                                          "x-computed", 1, "description", hf->doc));
    }
    if (h->reveal.name) {
        json_t *created = resource_schema(def, false);
        char name[80];
        json_object_set_new(json_object_get(created, "properties"), h->reveal.name,
                            json_pack("{s:s,s:b,s:s}", "type", h->reveal.type, "readOnly", 1,
                                      "description", h->reveal.doc));
        snprintf(name, sizeof(name), "%s_created", schema);
        json_object_set_new(schemas, name, created);
    }
    snprintf(path, sizeof(path), "/v1/%s", def->name);
    json_object_set_new(paths, path, collection_path(def, schema));
    snprintf(path, sizeof(path), "/v1/%s/{id}", def->name);
    json_object_set_new(paths, path, item_path(def, schema));
}

/* ---- the route table's routes ---- */

static json_t *parse_schema(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert(j); /* the route table's JSON is constant */
    return j;
}

/* An answer's content: a JSON schema, and strings for the other types it lists. */
static json_t *answer_content(const struct route_answer *a)
{
    const char *types = a->types ? a->types : "application/json";
    json_t *content = json_object();

    while (*types) {
        size_t len = strcspn(types, " ");
        char type[64];
        snprintf(type, sizeof(type), "%.*s", (int)len, types);
        if (strcmp(type, "application/json") == 0)
            json_object_set_new(
                content, type,
                json_pack("{s:o}", "schema",
                          !a->schema          ? json_pack("{s:s}", "type", "object")
                          : a->schema[0] == '{' ? parse_schema(a->schema)
                                                : ref_to(a->schema)));
        else
            json_object_set_new(content, type, json_pack("{s:{s:s}}", "schema", "type", "string"));
        types += len;
        types += strspn(types, " ");
    }
    return content;
}

/*
 * A route's operation. Routes without a token say so (security: []) and
 * document only their answers' statuses: nothing about them can fail but
 * the server.
 */
static json_t *route_operation(const struct route *rt)
{
    static const struct route_answer ok[] = {{200, "ok", NULL, NULL}, {0}};
    const struct route_answer *a = rt->answers ? rt->answers : ok;
    json_t *o = json_pack("{s:s}", "summary", rt->summary), *rs;

    if (rt->op)
        json_object_set_new(o, "operationId", json_sprintf("%s_%s", rt->op, rt->object));
    rs = rt->no_token ? json_object()
                      : error_responses((rt->errors & ROUTE_ERR_CONFLICT ? MAY_CONFLICT : 0) |
                                        (rt->errors & ROUTE_ERR_BODY ? WITH_BODY : 0));
    for (; a->status; a++) {
        char code[8];
        json_t *resp = json_pack("{s:s}", "description", a->desc);
        snprintf(code, sizeof(code), "%d", a->status);
        if (!rt->no_token)
            json_object_set_new(resp, "content", answer_content(a));
        json_object_set_new(rs, code, resp);
    }
    json_object_set_new(o, "responses", rs);
    if (rt->no_token)
        json_object_set_new(o, "security", json_array());
    if (rt->query) {
        json_t *params = json_array();
        for (const struct route_param *p = rt->query; p->name; p++)
            json_array_append_new(params, json_pack("{s:s,s:s,s:b,s:o}", "name", p->name, "in",
                                                    "query", "required", p->required, "schema",
                                                    parse_schema(p->schema)));
        json_object_set_new(o, "parameters", params);
    }
    if (rt->request_body)
        json_object_set_new(o, "requestBody", rt->request_body());
    if (rt->body)
        json_object_set_new(o, "requestBody",
                            json_pack("{s:b,s:{s:{s:o}}}", "required", 1, "content",
                                      rt->body_type ? rt->body_type : "application/json", "schema",
                                      parse_schema(rt->body)));
    return o;
}

/* Adds the table's routes whose path does (objects) or does not name an object ({id}). */
static void add_routes(json_t *paths, bool objects)
{
    for (size_t i = 0; i < routes_n; i++) {
        const struct route *rt = &routes[i];
        json_t *item = json_object_get(paths, rt->path);
        char method[8];
        size_t k;

        if ((strstr(rt->path, "{id}") != NULL) != objects)
            continue;
        if (!item) {
            item = json_object();
            if (objects)
                json_object_set_new(item, "parameters",
                                    json_pack("[{s:s,s:s,s:b,s:{s:s}}]", "name", "id", "in", "path",
                                              "required", 1, "schema", "type", "integer"));
            json_object_set_new(paths, rt->path, item);
        }
        for (k = 0; k < sizeof(method) - 1 && rt->method[k]; k++)
            method[k] = (char)(rt->method[k] | 0x20);
        method[k] = '\0';
        json_object_set_new(item, method, route_operation(rt));
    }
}

json_t *openapi_document(void)
{
    json_t *paths = json_object(), *schemas = json_object();

    add_routes(paths, false);
    for (size_t i = 0; i < model_n_resources; i++)
        add_resource_paths(paths, schemas, model_resources[i]);
    /* an object's own routes after the resources' /v1/<name>/{id} */
    add_routes(paths, true);
    json_object_set_new(schemas, "Error",
                        json_pack("{s:s,s:{s:{s:s,s:{s:{s:s},s:{s:s},s:{s:s}}}}}", "type", "object",
                                  "properties", "error", "type", "object", "properties", "code",
                                  "type", "string", "message", "type", "string", "detail", "type",
                                  "object"));
    return json_pack("{s:s,s:{s:s,s:s,s:s},s:o,s:{s:o,s:{s:{s:s,s:s}}},s:[{s:[]}]}", "openapi",
                     "3.0.3", "info", "title", "gpuaas API", "version", "1",
                     "description",
                     "GPU-as-a-Service control plane. Errors are "
                     "{\"error\":{\"code\",\"message\",\"detail\"}}; lists are paginated with "
                     "limit and after.",
                     "paths", paths, "components", "schemas", schemas, "securitySchemes",
                     "bearer", "type", "http", "scheme", "bearer", "security", "bearer");
}
