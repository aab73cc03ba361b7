/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.c: resource words, flag names and flag values, all derived from the
 * model's resource and field tables. Only the extra aliases below are
 * written by hand; a resource's plural and singular work without them.
 */
#include "base/common.h"

#include <strings.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "cli/args.h"
#include "cli/units.h"

/* Words beyond each resource's plural and singular. */
static const struct {
    const char *alias;
    const char *name;
} resource_aliases[] = {
    {"org", "organizations"},      {"orgs", "organizations"}, {"binding", "role-bindings"},
    {"bindings", "role-bindings"}, {"class", "gpu-classes"},  {"classes", "gpu-classes"},
    {"org-quota", "org-quotas"},
};

/* a == b, taking '_' and '-' as the same character; compares n bytes of b. */
static bool word_eq_n(const char *a, const char *b, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        char ca = a[i] == '_' ? '-' : a[i];
        char cb = b[i] == '_' ? '-' : b[i];
        if (ca == '\0' || cb == '\0' || ca != cb)
            return false;
    }
    return a[i] == '\0';
}

static bool word_eq(const char *a, const char *b)
{
    return word_eq_n(a, b, strlen(b));
}

/* The singular of def as a word: "role binding" -> "role-binding" (caller frees). */
static char *singular_word(const struct resource_def *def)
{
    char *s = xstrdup(def->singular);
    for (char *p = s; *p; p++) {
        if (*p == ' ')
            *p = '-';
    }
    return s;
}

const struct resource_def *args_find_resource(const char *word)
{
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        char *singular;
        bool match;

        if (word_eq(word, def->name))
            return def;
        singular = singular_word(def);
        match = word_eq(word, singular);
        free(singular);
        if (match)
            return def;
    }
    for (size_t i = 0; i < ARRAY_SIZE(resource_aliases); i++) {
        if (word_eq(word, resource_aliases[i].alias))
            return model_find(resource_aliases[i].name);
    }
    return NULL;
}

const char *args_resource_short(const struct resource_def *def)
{
    const char *best = def->name;

    for (size_t i = 0; i < ARRAY_SIZE(resource_aliases); i++) {
        if (strcmp(resource_aliases[i].name, def->name) == 0 &&
            strlen(resource_aliases[i].alias) < strlen(best))
            best = resource_aliases[i].alias;
    }
    /* The singular is shorter than the plural but may contain spaces. */
    if (strlen(def->singular) < strlen(best) && !strchr(def->singular, ' '))
        best = def->singular;
    return best;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int args_field_for_flag(const struct resource_def *def, const char *flag)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        if (word_eq(flag, def->fields[i].name))
            return (int)i;
    }
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        size_t n = strlen(f->name);

        if (f->type == FT_REF && ends_with(f->name, "_id") && word_eq_n(flag, f->name, n - 3))
            return (int)i;
        if (f->type == FT_REFLIST && ends_with(f->name, "_ids")) {
            /* gpu_ids -> gpus: the flag is the stem plus "s" */
            size_t fl = strlen(flag);
            if (fl == n - 3 && flag[fl - 1] == 's') {
                char *stem = xstrndup(flag, fl - 1);
                bool match = word_eq_n(stem, f->name, n - 4);
                free(stem);
                if (match)
                    return (int)i;
            }
        }
    }
    return -1;
}

int args_field_for_unit_flag(const struct resource_def *def, const char *flag)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        size_t stem = units_stem_len(f->name);
        if (f->type == FT_INT && stem > 0 && word_eq_n(flag, f->name, stem))
            return (int)i;
    }
    return -1;
}

char *args_flag_name(const struct field_def *f)
{
    char *s = xstrdup(f->name);
    for (char *p = s; *p; p++) {
        if (*p == '_')
            *p = '-';
    }
    return s;
}

int args_parse_bool(const char *s, int *ret_value)
{
    static const char *const yes[] = {"true", "yes", "1", "y", "on"};
    static const char *const no[] = {"false", "no", "0", "n", "off"};

    for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *ret_value = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *ret_value = 0;
            return 0;
        }
    }
    return -1;
}

/* A positive id written as digits; returns 1 when s is one, 0 when s is no number. */
static int parse_id(const char *s, int64_t *ret_id, char *err, size_t err_size)
{
    int64_t v;

    if (*s < '0' || *s > '9')
        return 0;
    if (parse_int64(s, 1, INT64_MAX, &v) < 0) {
        snprintf(err, err_size, "'%s' is not a valid id", s);
        return ERR_INVALID;
    }
    *ret_id = v;
    return 1;
}

static int convert_ref(const struct field_def *f, const char *s, const struct resolver *r,
                       int64_t *ret_id, char *err, size_t err_size)
{
    const struct resource_def *target;
    int rc = parse_id(s, ret_id, err, err_size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    target = model_find(f->ref);
    if (!target) {
        snprintf(err, err_size, "field '%s' refers to unknown resource '%s'", f->name, f->ref);
        return ERR_INTERNAL;
    }
    if (!r || !r->lookup) {
        snprintf(err, err_size, "'%s' is not an id", s);
        return ERR_INVALID;
    }
    return r->lookup(r->ctx, target, s, ret_id, err, err_size);
}

static int convert_labels(const char *s, json_t **ret, char *err, size_t err_size)
{
    json_t *obj;
    char *copy, *item, *next;

    if (*s == '{') {
        json_error_t jerr;
        const char *k;
        json_t *v;

        obj = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj || !json_is_object(obj)) {
            snprintf(err, err_size, "'%s' is not a JSON object: %s", s,
                     obj ? "not an object" : jerr.text);
            json_decref(obj);
            return ERR_INVALID;
        }
        json_object_foreach(obj, k, v)
        {
            if (!json_is_string(v)) {
                snprintf(err, err_size, "label '%s' must have a string value", k);
                json_decref(obj);
                return ERR_INVALID;
            }
        }
        *ret = obj;
        return 0;
    }
    obj = json_object();
    copy = xstrdup(s);
    for (item = copy; item && *copy; item = next) {
        char *eq;
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        eq = strchr(item, '=');
        if (!eq || eq == item) {
            snprintf(err, err_size, "'%s' is not a list of key=value pairs such as 'site=a,rack=b'",
                     s);
            free(copy);
            json_decref(obj);
            return ERR_INVALID;
        }
        *eq = '\0';
        if (json_object_set_new(obj, item, json_string(eq + 1)) < 0) {
            snprintf(err, err_size, "label '%s' is not valid UTF-8", item);
            free(copy);
            json_decref(obj);
            return ERR_INVALID;
        }
    }
    free(copy);
    *ret = obj;
    return 0;
}

static int convert_reflist(const struct field_def *f, const char *s, const struct resolver *r,
                           json_t **ret, char *err, size_t err_size)
{
    json_t *arr;
    char *copy, *item, *next;
    int rc = 0;

    if (*s == '[') {
        json_error_t jerr;
        size_t i;
        json_t *v;

        arr = json_loads(s, 0, &jerr);
        if (!arr || !json_is_array(arr)) {
            snprintf(err, err_size, "'%s' is not a JSON array of ids", s);
            json_decref(arr);
            return ERR_INVALID;
        }
        json_array_foreach(arr, i, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) <= 0) {
                snprintf(err, err_size, "'%s' is not a JSON array of ids", s);
                json_decref(arr);
                return ERR_INVALID;
            }
        }
        *ret = arr;
        return 0;
    }
    arr = json_array();
    copy = xstrdup(s);
    for (item = copy; item && *copy; item = next) {
        int64_t id;
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        if (*item == '\0') {
            snprintf(err, err_size, "'%s' has an empty item; write ids or names as a,b,c", s);
            rc = ERR_INVALID;
            break;
        }
        rc = convert_ref(f, item, r, &id, err, err_size);
        if (rc < 0)
            break;
        json_array_append_new(arr, json_integer(id));
    }
    free(copy);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *ret = arr;
    return 0;
}

static bool is_string_type(enum field_type t)
{
    return t == FT_STRING || t == FT_NAME || t == FT_IDENT || t == FT_ENUM;
}

int args_convert(const struct field_def *f, const char *s, const struct resolver *r, json_t **ret,
                 char *err, size_t err_size)
{
    int64_t v;
    int b, rc;

    if ((f->flags & FF_NULLABLE) && (*s == '\0' || strcmp(s, "null") == 0)) {
        *ret = json_null();
        return 0;
    }
    if (!is_string_type(f->type) && strcmp(s, "null") == 0) {
        snprintf(err, err_size, "this field may not be null");
        return ERR_INVALID;
    }
    switch (f->type) {
    case FT_INT:
        rc = parse_int64(s, f->min, f->max, &v);
        if (rc == ERR_TOO_LARGE) {
            snprintf(err, err_size, "'%s' is out of range (%" PRId64 " to %" PRId64 ")", s, f->min,
                     f->max);
            return ERR_INVALID;
        }
        if (rc < 0) {
            snprintf(err, err_size, "'%s' is not an integer", s);
            return ERR_INVALID;
        }
        *ret = json_integer(v);
        return 0;
    case FT_BOOL:
        if (args_parse_bool(s, &b) < 0) {
            snprintf(err, err_size, "'%s' is not a boolean; use true or false", s);
            return ERR_INVALID;
        }
        *ret = json_boolean(b);
        return 0;
    case FT_TIME:
        if (time_parse_rfc3339(s, &v) < 0) {
            snprintf(err, err_size, "'%s' is not an RFC 3339 time such as 2027-01-01T00:00:00Z", s);
            return ERR_INVALID;
        }
        *ret = json_string(s);
        return 0;
    case FT_ENUM:
        for (const char *const *e = f->enum_values; e && *e; e++) {
            if (strcmp(*e, s) == 0) {
                *ret = json_string(s);
                return 0;
            }
        }
        {
            int n = snprintf(err, err_size, "'%s' is not one of:", s);
            for (const char *const *e = f->enum_values; e && *e && n >= 0 && (size_t)n < err_size;
                 e++)
                n += snprintf(err + n, err_size - (size_t)n, " %s", *e);
        }
        return ERR_INVALID;
    case FT_REF:
        rc = convert_ref(f, s, r, &v, err, err_size);
        if (rc < 0)
            return rc;
        *ret = json_integer(v);
        return 0;
    case FT_LABELS:
        return convert_labels(s, ret, err, err_size);
    case FT_REFLIST:
        return convert_reflist(f, s, r, ret, err, err_size);
    case FT_JSON: {
        json_error_t jerr;
        json_t *j = json_loads(s, JSON_DECODE_ANY, &jerr);
        if (!j) {
            snprintf(err, err_size, "'%s' is not JSON: %s", s, jerr.text);
            return ERR_INVALID;
        }
        *ret = j;
        return 0;
    }
    case FT_STRING:
    case FT_NAME:
    case FT_IDENT:
        *ret = json_string(s);
        if (!*ret) {
            snprintf(err, err_size, "the value is not valid UTF-8");
            return ERR_INVALID;
        }
        return 0;
    }
    snprintf(err, err_size, "field '%s' has an unknown type", f->name);
    return ERR_INTERNAL;
}
