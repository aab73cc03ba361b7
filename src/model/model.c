/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.c: rows, and the JSON edge of the domain: decoding requests into rows
 * with precise validation errors, cross-field checks, and encoding rows.
 */
#include "base/common.h"

#include <jansson.h>

#include "base/timeutil.h"
#include "model/model.h"

static const char *const role_names[] = {
    [ROLE_NONE] = "none",
    [ROLE_VIEWER] = "viewer",
    [ROLE_MEMBER] = "member",
    [ROLE_PROJECT_ADMIN] = "project-admin",
    [ROLE_ORG_ADMIN] = "org-admin",
    [ROLE_ADMIN] = "admin",
    [ROLE_NOBODY] = "nobody",
};

const char *role_name(enum role r)
{
    return (size_t)r < ARRAY_SIZE(role_names) ? role_names[r] : "unknown";
}

int role_parse(const char *s, enum role *ret_role)
{
    for (int r = ROLE_VIEWER; r <= ROLE_ADMIN; r++) {
        if (strcmp(s, role_names[r]) == 0) {
            *ret_role = (enum role)r;
            return 0;
        }
    }
    return ERR_INVALID;
}

const struct resource_def *model_find(const char *name)
{
    for (size_t i = 0; i < model_n_resources; i++) {
        if (strcmp(model_resources[i]->name, name) == 0)
            return model_resources[i];
    }
    return NULL;
}

int model_field_index(const struct resource_def *def, const char *name)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        if (strcmp(def->fields[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

const char *model_column(const struct field_def *f)
{
    return f->column ? f->column : f->name;
}

struct row model_row_new(const struct resource_def *def, struct arena *a)
{
    struct row r = {arena_calloc(a, def->n_fields, sizeof(struct value))};
    return r;
}

void model_set_int(struct row *r, int idx, int64_t i)
{
    row_set_int(r, idx, i);
}

void model_set_str(struct row *r, struct arena *a, int idx, const char *s)
{
    row_set_str(r, a, idx, s);
}

void model_set_null(struct row *r, int idx)
{
    row_set_null(r, idx);
}

const struct value *model_get(const struct resource_def *def, const struct row *r,
                              const char *name)
{
    int idx = model_field_index(def, name);
    assert(idx >= 0);
    return &r->v[idx];
}

int64_t model_get_int(const struct resource_def *def, const struct row *r, const char *name)
{
    return model_get(def, r, name)->i;
}

int64_t model_row_id(const struct row *r)
{
    return r->v[0].i;
}

/* ---- validation of single values ---- */

static bool is_name_char(char c, bool first)
{
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        return true;
    return !first && (c == '-' || c == '_' || c == '.');
}

bool model_valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_name_char(s[i], i == 0))
            return false;
    }
    return true;
}

bool model_valid_ident(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || !strchr("._:/-", c)))
            return false;
    }
    return true;
}

static bool valid_utf8_text(const char *s)
{
    /* jansson guarantees UTF-8; refuse control characters other than tab/newline. */
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 && c != '\t' && c != '\n')
            return false;
    }
    return true;
}

const char *model_json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

static char *dump_compact(struct arena *a, json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    char *copy = arena_strdup(a, text ? text : "null");
    free(text);
    return copy;
}

#define MAX_LABELS 64
#define MAX_LABEL_LEN 253

static int decode_value(const struct field_def *f, json_t *j, struct arena *a, struct value *out,
                        struct error_info *ei)
{
    const char *n = f->name;

    *out = (struct value){.set = true};
    if (json_is_null(j)) {
        if (!(f->flags & FF_NULLABLE))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' may not be null", n);
        out->null = true;
        return 0;
    }
    switch (f->type) {
    case FT_INT:
    case FT_REF: {
        int64_t v;
        if (!json_is_integer(j))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' must be an integer, not %s", n,
                               model_json_kind(j));
        v = json_integer_value(j);
        if (f->type == FT_REF && v <= 0)
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' must be a positive id", n);
        if (f->type == FT_INT && (v < f->min || v > f->max))
            return errinfo_set(ei, ERR_INVALID, n,
                               "field '%s' must be between %" PRId64 " and %" PRId64
                               ", not %" PRId64,
                               n, f->min, f->max, v);
        out->i = v;
        return 0;
    }
    case FT_BOOL:
        if (!json_is_boolean(j))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' must be a boolean, not %s", n,
                               model_json_kind(j));
        out->i = json_is_true(j);
        return 0;
    case FT_TIME: {
        int64_t t;
        if (!json_is_string(j) || time_parse_rfc3339(json_string_value(j), &t) < 0)
            return errinfo_set(ei, ERR_INVALID, n,
                               "field '%s' must be an RFC 3339 time such as "
                               "2026-01-31T12:00:00Z",
                               n);
        out->i = t;
        return 0;
    }
    case FT_STRING:
    case FT_NAME:
    case FT_IDENT:
    case FT_ENUM: {
        const char *s;
        size_t len;
        if (!json_is_string(j))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' must be a string, not %s", n,
                               model_json_kind(j));
        s = json_string_value(j);
        len = json_string_length(j);
        if (strlen(s) != len)
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' contains a NUL character", n);
        if (f->type == FT_ENUM) {
            for (const char *const *e = f->enum_values; *e; e++) {
                if (strcmp(*e, s) == 0) {
                    out->s = arena_strdup(a, s);
                    return 0;
                }
            }
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' has unknown value '%.40s'", n, s);
        }
        if ((int64_t)len > f->max)
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' is longer than %" PRId64 " bytes",
                               n, f->max);
        if ((int64_t)len < f->min)
            return errinfo_set(ei, ERR_INVALID, n,
                               "field '%s' is shorter than %" PRId64 " bytes", n, f->min);
        if (f->type == FT_NAME && !model_valid_name(s, (size_t)f->max))
            return errinfo_set(ei, ERR_INVALID, n,
                               "field '%s' must be lower-case letters, digits, '-', '_' or '.', "
                               "starting with a letter or digit",
                               n);
        if (f->type == FT_IDENT && !model_valid_ident(s, (size_t)f->max))
            return errinfo_set(ei, ERR_INVALID, n,
                               "field '%s' must be letters, digits, '.', '_', ':', '/' or '-', "
                               "starting with a letter or digit",
                               n);
        if (f->type == FT_STRING && !valid_utf8_text(s))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' contains control characters", n);
        out->s = arena_strdup(a, s);
        return 0;
    }
    case FT_LABELS: {
        const char *k;
        json_t *v;
        if (!json_is_object(j))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' must be an object, not %s", n,
                               model_json_kind(j));
        if (json_object_size(j) > MAX_LABELS)
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' has more than %d labels", n,
                               MAX_LABELS);
        json_object_foreach(j, k, v)
        {
            if (!model_valid_ident(k, MAX_LABEL_LEN))
                return errinfo_set(ei, ERR_INVALID, n, "field '%s' has an invalid label key", n);
            if (!json_is_string(v) || json_string_length(v) > MAX_LABEL_LEN ||
                !valid_utf8_text(json_string_value(v)))
                return errinfo_set(ei, ERR_INVALID, n,
                                   "field '%s': label '%.60s' must be a string of at most %d "
                                   "bytes",
                                   n, k, MAX_LABEL_LEN);
        }
        out->s = dump_compact(a, j);
        return 0;
    }
    case FT_REFLIST: {
        size_t i;
        json_t *v;
        if (!json_is_array(j))
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' must be an array of ids, not %s", n,
                               model_json_kind(j));
        if ((int64_t)json_array_size(j) > f->max)
            return errinfo_set(ei, ERR_INVALID, n, "field '%s' has more than %" PRId64 " ids", n,
                               f->max);
        json_array_foreach(j, i, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) <= 0)
                return errinfo_set(ei, ERR_INVALID, n,
                                   "field '%s' must be an array of positive ids", n);
        }
        out->s = dump_compact(a, j);
        return 0;
    }
    case FT_JSON:
        out->s = dump_compact(a, j);
        return 0;
    }
    return errinfo_set(ei, ERR_INTERNAL, n, "field '%s' has an unknown type", n);
}

static void set_default(const struct field_def *f, struct arena *a, struct value *out)
{
    *out = (struct value){.set = true};
    switch (f->type) {
    case FT_INT:
    case FT_BOOL:
        if (f->flags & FF_NULLABLE)
            out->null = true;
        else
            out->i = f->default_int;
        break;
    case FT_STRING:
    case FT_NAME:
    case FT_IDENT:
    case FT_ENUM:
    case FT_LABELS:
    case FT_REFLIST:
        if (f->default_str)
            out->s = arena_strdup(a, f->default_str);
        else
            out->null = true;
        break;
    default:
        out->null = true;
    }
}

int model_decode(const struct resource_def *def, json_t *obj, enum decode_mode mode,
                 struct arena *a, struct row *ret_row, struct error_info *ei)
{
    struct row r = model_row_new(def, a);
    const char *key;
    json_t *val;
    int rc;

    if (!json_is_object(obj))
        return errinfo_set(ei, ERR_INVALID, NULL, "request body must be a JSON object");
    json_object_foreach(obj, key, val)
    {
        int idx = model_field_index(def, key);
        const struct field_def *f;
        if (idx < 0)
            return errinfo_set(ei, ERR_INVALID, key, "unknown field '%.60s' for a %s", key,
                               def->singular);
        f = &def->fields[idx];
        if (f->flags & FF_READONLY)
            return errinfo_set(ei, ERR_INVALID, key, "field '%s' is read-only", key);
        if (mode == DECODE_UPDATE && (f->flags & FF_IMMUTABLE))
            return errinfo_set(ei, ERR_INVALID, key,
                               "field '%s' cannot be changed after creation", key);
        rc = decode_value(f, val, a, &r.v[idx], ei);
        if (rc < 0)
            return rc;
    }
    if (mode == DECODE_CREATE) {
        for (size_t i = 0; i < def->n_fields; i++) {
            const struct field_def *f = &def->fields[i];
            if (r.v[i].set)
                continue;
            if (f->flags & FF_REQUIRED)
                return errinfo_set(ei, ERR_INVALID, f->name, "field '%s' is required", f->name);
            if (!(f->flags & FF_READONLY))
                set_default(f, a, &r.v[i]);
        }
    }
    *ret_row = r;
    return 0;
}

void model_merge(const struct resource_def *def, struct row *base, const struct row *patch)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        if (patch->v[i].set)
            base->v[i] = patch->v[i];
    }
}

bool model_has(const struct row *r, int f)
{
    const struct value *v = row_get(r, f);
    return v->set && !v->null;
}

int model_check_currency(const struct row *r, int f, struct error_info *ei)
{
    const struct value *v = row_get(r, f);
    if (!v->s || strlen(v->s) != 3)
        return errinfo_set(ei, ERR_INVALID, "currency", "field 'currency' must be 3 letters");
    for (int i = 0; i < 3; i++) {
        if (v->s[i] < 'A' || v->s[i] > 'Z')
            return errinfo_set(ei, ERR_INVALID, "currency",
                               "field 'currency' must be an upper-case ISO 4217 code such as USD");
    }
    return 0;
}

int model_check_row(const struct resource_def *def, const struct row *r, struct error_info *ei)
{
    return def->check ? def->check(r, ei) : 0;
}

/* ---- encoding ---- */

static json_t *encode_value(const struct field_def *f, const struct value *v)
{
    if (!v->set || v->null)
        return json_null();
    switch (f->type) {
    case FT_INT:
    case FT_REF:
        return json_integer(v->i);
    case FT_BOOL:
        return json_boolean(v->i);
    case FT_TIME: {
        char ts[32];
        time_format_rfc3339(v->i, ts, sizeof(ts));
        return json_string(ts);
    }
    case FT_LABELS:
    case FT_REFLIST:
    case FT_JSON: {
        json_t *j = json_loads(v->s ? v->s : "null", JSON_DECODE_ANY, NULL);
        return j ? j : json_null();
    }
    default:
        return json_string(v->s ? v->s : "");
    }
}

json_t *model_encode(const struct resource_def *def, const struct row *r)
{
    json_t *obj = json_object();
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        if (f->flags & FF_SECRET)
            continue;
        json_object_set_new(obj, f->name, encode_value(f, &r->v[i]));
    }
    return obj;
}
