/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.c: tables and detail views of the server's objects. The columns of
 * each resource's list are chosen here; a resource without a view gets
 * columns picked from its model fields, so new resources still print well.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/units.h"

#define LIST_CELL_MAX 48   /* characters; longer cells are cut at a terminal */
#define AUTO_COLUMNS_MAX 7 /* columns picked for a resource without a view */

enum col_kind {
    COL_AUTO,       /* by field type: times shortened, booleans yes/no, ... */
    COL_MILLI,      /* milli-units shown as units: 1500 -> 1.5 */
    COL_MONEY,      /* micro-units of the object's currency: 2500000 -> 2.50 USD */
    COL_MONEY_HOUR, /* the same per hour: 1800000 -> 1.80 USD/h */
    COL_MIB,        /* MiB in the largest whole unit: 81920 -> 80 GiB */
    COL_GUARANTEE,  /* a quota's guarantee in GPUs; null: derived from the project's pools */
};

struct column {
    const char *field;
    const char *header;
    enum col_kind kind;
};

/* clang-format off */
#define COL(f, h) {f, h, COL_AUTO}
#define ID_COL COL("id", "ID")
#define NAME_COL COL("name", "NAME")

static const struct column org_cols[] = {
    ID_COL, NAME_COL, COL("display_name", "DISPLAY_NAME"), COL("parent_id", "PARENT_ID"),
    COL("manager_id", "MANAGER_ID"), COL("cost_center", "COST_CENTER"),
};
static const struct column project_cols[] = {
    ID_COL, COL("org_id", "ORG_ID"), NAME_COL, COL("display_name", "DISPLAY_NAME"),
    COL("weight", "WEIGHT"),
};
static const struct column user_cols[] = {
    ID_COL, NAME_COL, COL("email", "EMAIL"), COL("display_name", "DISPLAY_NAME"),
    COL("disabled", "DISABLED"),
};
static const struct column binding_cols[] = {
    ID_COL, COL("user_id", "USER_ID"), COL("role", "ROLE"), COL("org_id", "ORG_ID"),
    COL("project_id", "PROJECT_ID"),
};
static const struct column token_cols[] = {
    ID_COL, COL("user_id", "USER_ID"), NAME_COL, COL("prefix", "PREFIX"),
    COL("expires_at", "EXPIRES"), COL("revoked_at", "REVOKED"), COL("created_at", "CREATED"),
};
static const struct column cluster_cols[] = {
    ID_COL, NAME_COL, COL("backend", "BACKEND"), COL("endpoint", "ENDPOINT"),
    COL("labels", "LABELS"),
};
static const struct column node_cols[] = {
    ID_COL, COL("cluster_id", "CLUSTER_ID"), NAME_COL, COL("state", "STATE"),
    {"cpu_milli", "CPUS", COL_MILLI}, {"memory_mib", "MEMORY", COL_MIB}, COL("labels", "LABELS"),
};
static const struct column class_cols[] = {
    ID_COL, NAME_COL, COL("vendor", "VENDOR"), {"memory_mib", "MEMORY", COL_MIB},
    COL("parent_id", "PARENT_ID"), {"milli", "SHARE", COL_MILLI},
};
static const struct column gpu_cols[] = {
    ID_COL, COL("node_id", "NODE_ID"), COL("index", "INDEX"), COL("gpu_class_id", "CLASS_ID"),
    COL("uuid", "UUID"), COL("health", "HEALTH"), COL("mig_mode", "MIG"),
};
static const struct column pool_cols[] = {
    ID_COL, NAME_COL, COL("owner_org_id", "OWNER_ORG_ID"),
    COL("owner_project_id", "OWNER_PROJECT_ID"), COL("cluster_id", "CLUSTER_ID"),
    {"cost_per_gpu_hour_micros", "COST_PER_GPU_HOUR", COL_MONEY_HOUR},
};
static const struct column flavor_cols[] = {
    ID_COL, NAME_COL, COL("gpu_class_id", "CLASS_ID"), {"gpu_milli", "GPUS", COL_MILLI},
    COL("vcpus", "VCPUS"), {"memory_mib", "MEMORY", COL_MIB},
    {"price_per_hour_micros", "PRICE_PER_HOUR", COL_MONEY_HOUR}, COL("active", "ACTIVE"),
};
static const struct column quota_cols[] = {
    ID_COL, COL("project_id", "PROJECT_ID"), COL("gpu_class_id", "CLASS_ID"),
    {"guaranteed_milli", "GUARANTEED", COL_GUARANTEE}, {"limit_milli", "LIMIT", COL_MILLI},
};
static const struct column org_quota_cols[] = {
    ID_COL, COL("org_id", "ORG_ID"), COL("gpu_class_id", "CLASS_ID"),
    {"limit_milli", "LIMIT", COL_MILLI},
};
static const struct column audit_cols[] = {
    ID_COL, COL("time", "TIME"), COL("actor", "ACTOR"), COL("action", "ACTION"),
    COL("resource", "RESOURCE"), COL("object_id", "OBJECT_ID"), COL("request_id", "REQUEST_ID"),
};

static const struct view {
    const char *resource;
    const struct column *cols;
    size_t n_cols;
} views[] = {
#define VIEW(name, cols) {name, cols, ARRAY_SIZE(cols)}
    VIEW("organizations", org_cols), VIEW("projects", project_cols),
    VIEW("users", user_cols),        VIEW("role-bindings", binding_cols),
    VIEW("tokens", token_cols),      VIEW("clusters", cluster_cols),
    VIEW("nodes", node_cols),        VIEW("gpu-classes", class_cols),
    VIEW("gpus", gpu_cols),          VIEW("pools", pool_cols),
    VIEW("flavors", flavor_cols),    VIEW("quotas", quota_cols),
    VIEW("org-quotas", org_quota_cols), VIEW("audit", audit_cols),
#undef VIEW
};
/* clang-format on */

static char *fixed_point(int64_t v, int64_t scale, int digits, int min_digits)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t whole = u / (uint64_t)scale, frac = u % (uint64_t)scale;
    char fbuf[16];
    int n = digits;

    snprintf(fbuf, sizeof(fbuf), "%0*" PRIu64, digits, frac);
    while (n > min_digits && fbuf[n - 1] == '0')
        n--;
    fbuf[n] = '\0';
    return xasprintf("%s%" PRIu64 "%s%s", v < 0 ? "-" : "", whole, n ? "." : "", fbuf);
}

char *render_milli(int64_t v)
{
    return fixed_point(v, 1000, 3, 0);
}

char *render_micros(int64_t v)
{
    return fixed_point(v, 1000000, 6, 2);
}

char *render_short_time(const char *s)
{
    /* YYYY-MM-DDTHH:MM... */
    if (strlen(s) >= 16 && s[4] == '-' && s[10] == 'T' && s[13] == ':')
        return xasprintf("%.10s %.5s", s, s + 11);
    return xstrdup(s);
}

char *render_cell(json_t *v)
{
    struct buf b;

    if (!v || json_is_null(v))
        return xstrdup("-");
    if (json_is_boolean(v))
        return xstrdup(json_is_true(v) ? "yes" : "no");
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    buf_init(&b, 1 << 20);
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        bool all_strings = true;

        json_object_foreach(v, k, m) all_strings = all_strings && json_is_string(m);
        if (all_strings) {
            bool first = true;
            json_object_foreach(v, k, m)
            {
                buf_printf(&b, "%s%s=%s", first ? "" : ",", k, json_string_value(m));
                first = false;
            }
            return buf_detach(&b, NULL);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *m;
        bool all_ints = true;

        json_array_foreach(v, i, m) all_ints = all_ints && json_is_integer(m);
        if (all_ints) {
            json_array_foreach(v, i, m)
            {
                buf_printf(&b, "%s%" JSON_INTEGER_FORMAT, i ? "," : "", json_integer_value(m));
            }
            return buf_detach(&b, NULL);
        }
    }
    buf_release(&b);
    {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        char *copy = xstrdup(s ? s : "?");
        free(s);
        return copy;
    }
}

static const struct field_def *find_field(const struct resource_def *def, const char *name)
{
    int idx = def ? model_field_index(def, name) : -1;
    return idx >= 0 ? &def->fields[idx] : NULL;
}

/* The resource a column names objects of, when names are shown for it; else NULL. */
static const struct resource_def *named_ref(const struct resource_def *def,
                                            const struct column *col,
                                            const struct render_names *names)
{
    const struct field_def *f = find_field(def, col->field);
    const struct resource_def *ref;
    int idx;

    if (!names || !f || f->type != FT_REF || !f->ref || !(ref = model_find(f->ref)))
        return NULL;
    idx = model_field_index(ref, "name");
    return idx >= 0 ? ref : NULL;
}

static char *format_column(const struct resource_def *def, const struct column *col, json_t *obj,
                           const struct render_names *names)
{
    json_t *v = json_object_get(obj, col->field);
    const struct field_def *f = find_field(def, col->field);
    const struct resource_def *ref = named_ref(def, col, names);

    if (col->kind == COL_GUARANTEE && json_is_null(v)) {
        /* Derived from the project's pools: the server says how much that is now. */
        json_t *eff = json_object_get(obj, "effective_guaranteed_milli");
        char *gpus, *text;
        if (!json_is_integer(eff))
            return xstrdup("from pools");
        gpus = render_milli(json_integer_value(eff));
        text = xasprintf("%s (from pools)", gpus);
        free(gpus);
        return text;
    }
    if (!v || json_is_null(v))
        return xstrdup("-");
    if (ref && json_is_integer(v)) {
        char *name = names->name(names->ctx, ref, json_integer_value(v));
        if (name)
            return name;
    }
    if ((col->kind == COL_MILLI || col->kind == COL_GUARANTEE) && json_is_integer(v))
        return render_milli(json_integer_value(v));
    if (col->kind == COL_MIB && json_is_integer(v))
        return units_format_mib(json_integer_value(v));
    if ((col->kind == COL_MONEY || col->kind == COL_MONEY_HOUR) && json_is_integer(v)) {
        char *amount = render_micros(json_integer_value(v));
        const char *cur = json_string_value(json_object_get(obj, "currency"));
        const char *per = col->kind == COL_MONEY_HOUR ? "/h" : "";
        char *s = cur ? xasprintf("%s %s%s", amount, cur, per) : xasprintf("%s%s", amount, per);
        free(amount);
        return s;
    }
    if (f && f->type == FT_TIME && json_is_string(v))
        return render_short_time(json_string_value(v));
    return render_cell(v);
}

/* Columns for a resource without a view: short, identifying fields first. */
static size_t auto_columns(const struct resource_def *def, struct column *cols, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < def->n_fields && n < max; i++) {
        const struct field_def *f = &def->fields[i];
        if (f->type == FT_JSON || (f->flags & FF_SECRET) ||
            (f->type == FT_STRING && f->max > 200) || strcmp(f->name, "created_at") == 0 ||
            strcmp(f->name, "updated_at") == 0)
            continue;
        cols[n].field = f->name;
        cols[n].header = NULL;
        cols[n].kind = COL_AUTO;
        n++;
    }
    return n;
}

static char *upper_header(const char *field)
{
    char *h = xstrdup(field);
    for (char *p = h; *p; p++) {
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
        else if (*p == '-')
            *p = '_';
    }
    return h;
}

/* A column's header: its own, else the field's name in capitals; "_ID" dropped when named. */
static char *column_header(const struct resource_def *def, const struct column *col,
                           const struct render_names *names)
{
    char *h = col->header ? xstrdup(col->header) : upper_header(col->field);
    size_t n = strlen(h);

    if (named_ref(def, col, names) && n > 3 && strcmp(h + n - 3, "_ID") == 0)
        h[n - 3] = '\0';
    return h;
}

int render_list(const struct resource_def *def, json_t *items, struct buf *out)
{
    return render_list_named(def, items, NULL, out);
}

int render_list_named(const struct resource_def *def, json_t *items,
                      const struct render_names *names, struct buf *out)
{
    struct column auto_cols[AUTO_COLUMNS_MAX];
    const struct column *cols = NULL;
    size_t n_cols = 0, i;
    struct table t;
    const char **cells;
    json_t *obj;
    int rc;

    for (size_t v = 0; v < ARRAY_SIZE(views); v++) {
        if (strcmp(views[v].resource, def->name) == 0) {
            cols = views[v].cols;
            n_cols = views[v].n_cols;
        }
    }
    if (!cols) {
        n_cols = auto_columns(def, auto_cols, ARRAY_SIZE(auto_cols));
        cols = auto_cols;
    }
    table_init(&t, n_cols);
    t.max_width = cli_cut_cells() ? LIST_CELL_MAX : 0;
    cells = xcalloc(n_cols, sizeof(char *));
    for (size_t c = 0; c < n_cols; c++)
        cells[c] = column_header(def, &cols[c], names);
    table_add_row(&t, cells);
    for (size_t c = 0; c < n_cols; c++)
        free((char *)cells[c]);
    json_array_foreach(items, i, obj)
    {
        for (size_t c = 0; c < n_cols; c++)
            cells[c] = format_column(def, &cols[c], obj, names);
        table_add_row(&t, cells);
        for (size_t c = 0; c < n_cols; c++)
            free((char *)cells[c]);
    }
    free(cells);
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static void add_pair(struct table *t, const char *key, char *value)
{
    char *label = xasprintf("%s:", key);
    const char *cells[2] = {label, value};
    table_add_row(t, cells);
    free(label);
    free(value);
}

int render_object(const struct resource_def *def, json_t *obj, struct buf *out)
{
    struct table t;
    const char *key;
    json_t *v;
    int rc;

    table_init(&t, 2);
    for (size_t i = 0; def && i < def->n_fields; i++) {
        v = json_object_get(obj, def->fields[i].name);
        if (v)
            add_pair(&t, def->fields[i].name, render_cell(v));
    }
    json_object_foreach(obj, key, v)
    {
        if (!find_field(def, key))
            add_pair(&t, key, render_cell(v));
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

int render_json(json_t *v, struct buf *out)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
    int rc;

    if (!s)
        return ERR_INTERNAL;
    rc = buf_puts(out, s);
    if (rc == 0)
        rc = buf_puts(out, "\n");
    free(s);
    return rc;
}

int render_flush(struct buf *b)
{
    if ((b->len && fwrite(b->data, 1, b->len, stdout) != b->len) || fflush(stdout) != 0) {
        cli_error("could not write the output: %s", strerror(errno));
        return CLI_ERROR;
    }
    return CLI_OK;
}
