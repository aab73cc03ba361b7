/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.c: looking objects up by name so users can write `--org acme`
 * instead of `--org-id 7`. Uses only the generic list endpoint and the
 * model's FF_FILTER flags, so it works for any resource with a name filter.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/resolve.h"

static const struct field_def *name_field(const struct resource_def *def)
{
    int idx = model_field_index(def, "name");
    if (idx < 0 || !(def->fields[idx].flags & FF_FILTER))
        return NULL;
    return &def->fields[idx];
}

/* The reference that scopes a name (org_id of projects, cluster_id of nodes), or NULL. */
static const struct field_def *scope_field(const struct resource_def *def)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        unsigned need = FF_REQUIRED | FF_IMMUTABLE | FF_FILTER;
        if (f->type == FT_REF && (f->flags & need) == need)
            return f;
    }
    return NULL;
}

/*
 * Lists up to two objects of def named name (within scope_id of scope when
 * scope is not NULL). Sets *ret_count and, for one match, *ret_id.
 */
static int lookup(struct client *c, const struct resource_def *def, const char *name,
                  const struct field_def *scope, int64_t scope_id, size_t *ret_count,
                  int64_t *ret_id, char *err, size_t err_size)
{
    char *esc = client_escape(name), *path;
    json_t *res = NULL, *items, *id;
    int rc;

    if (scope)
        path = xasprintf("/v1/%s?name=%s&%s=%" PRId64 "&limit=2", def->name, esc, scope->name,
                         scope_id);
    else
        path = xasprintf("/v1/%s?name=%s&limit=2", def->name, esc);
    free(esc);
    rc = client_request(c, "GET", path, NULL, &res);
    free(path);
    if (rc < 0) {
        snprintf(err, err_size, "%s", c->err_message);
        return ERR_IO;
    }
    items = json_object_get(res, "items");
    if (!json_is_array(items)) {
        c->err_kind = CLIENT_ERR_PROTOCOL;
        snprintf(c->err_message, sizeof(c->err_message),
                 "the server's list of %s has no \"items\" array", def->name);
        c->err_hint[0] = '\0';
        snprintf(err, err_size, "%s", c->err_message);
        json_decref(res);
        return ERR_IO;
    }
    *ret_count = json_array_size(items);
    if (*ret_count == 1) {
        id = json_object_get(json_array_get(items, 0), "id");
        if (!json_is_integer(id) || json_integer_value(id) <= 0) {
            snprintf(err, err_size, "the server sent a %s without an id", def->singular);
            json_decref(res);
            return ERR_INVALID;
        }
        *ret_id = json_integer_value(id);
    }
    json_decref(res);
    return 0;
}

static char *upper(const char *s)
{
    char *u = xstrdup(s);
    for (char *p = u; *p; p++) {
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    }
    return u;
}

static int ambiguous(const struct resource_def *def, const struct field_def *scope,
                     const char *name, char *err, size_t err_size)
{
    const struct resource_def *scope_def = scope ? model_find(scope->ref) : NULL;

    if (scope_def) {
        char *u = upper(args_resource_short(scope_def));
        snprintf(err, err_size, "%s '%s' is ambiguous; give its id, or write it as %s/%s",
                 def->singular, name, u, name);
        free(u);
    } else {
        snprintf(err, err_size, "%s '%s' is ambiguous; give its id", def->singular, name);
    }
    return ERR_CONFLICT;
}

/* "acme/ml": the object named after the slash within the scope named before it. */
static int resolve_scoped(struct client *c, const struct resource_def *def,
                          const struct field_def *scope, const struct resource_def *scope_def,
                          const char *name, size_t prefix_len, int64_t *ret_id, char *err,
                          size_t err_size)
{
    char *prefix = xstrndup(name, prefix_len);
    const char *rest = name + prefix_len + 1;
    size_t count = 0;
    int64_t scope_id = 0, id = 0;
    int rc = resolve_name(c, scope_def, prefix, &scope_id, err, err_size);

    if (rc == 0)
        rc = lookup(c, def, rest, scope, scope_id, &count, &id, err, err_size);
    if (rc == 0 && count != 1) {
        snprintf(err, err_size, "%s '%s' has %s %s named '%s'", scope_def->singular, prefix,
                 count ? "more than one" : "no", def->singular, rest);
        rc = count ? ERR_CONFLICT : ERR_NOT_FOUND;
    }
    free(prefix);
    if (rc == 0)
        *ret_id = id;
    return rc;
}

int resolve_name(struct client *c, const struct resource_def *def, const char *name,
                 int64_t *ret_id, char *err, size_t err_size)
{
    const struct field_def *nf = name_field(def), *scope = scope_field(def);
    const struct resource_def *scope_def = scope ? model_find(scope->ref) : NULL;
    const char *slash = strchr(name, '/');
    bool scoped = slash && scope_def;
    size_t count = 0;
    int64_t id = 0;
    int rc;

    if (!nf) {
        snprintf(err, err_size, "%s are known by id only, and '%s' is not an id", def->name, name);
        return ERR_INVALID;
    }
    /* A slug cannot hold '/', so "acme/ml" can only mean project ml of org acme. */
    if (!scoped || nf->type != FT_NAME) {
        rc = lookup(c, def, name, NULL, 0, &count, &id, err, err_size);
        if (rc < 0)
            return rc;
        if (count == 1) {
            *ret_id = id;
            return 0;
        }
        if (count > 1)
            return ambiguous(def, scope, name, err, err_size);
        if (!scoped) {
            snprintf(err, err_size, "no %s named '%s'", def->singular, name);
            return ERR_NOT_FOUND;
        }
    }
    return resolve_scoped(c, def, scope, scope_def, name, (size_t)(strchr(name, '/') - name),
                          ret_id, err, err_size);
}

int resolve_id(struct client *c, const struct resource_def *def, const char *word, int64_t *ret_id,
               char *err, size_t err_size)
{
    if (*word >= '0' && *word <= '9') {
        if (parse_int64(word, 1, INT64_MAX, ret_id) < 0) {
            snprintf(err, err_size, "'%s' is not a valid id", word);
            return ERR_INVALID;
        }
        return 0;
    }
    if (*word == '\0') {
        snprintf(err, err_size, "the %s's id or name is empty", def->singular);
        return ERR_INVALID;
    }
    return resolve_name(c, def, word, ret_id, err, err_size);
}

static int lookup_cb(void *ctx, const struct resource_def *def, const char *name, int64_t *ret_id,
                     char *err, size_t err_size)
{
    return resolve_name(ctx, def, name, ret_id, err, err_size);
}

struct resolver resolve_with(struct client *c)
{
    struct resolver r = {lookup_cb, c};
    return r;
}
