/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql.c: every SQL text the store runs, built only from the resource
 * definitions' table and column names (never from request data), and the
 * parameters that go with it. Both engines share this builder; they differ
 * only in how a placeholder is written (`?` or `$n`) and in the any-of
 * clause, which reads a JSON array of ids passed as one text parameter.
 * Also the per-connection cache of prepared statements.
 */
#include "base/common.h"

#include "base/buf.h"
#include "store/store-int.h"

/* SQL of a list with every filter slot used is a few KiB; JSON id lists can be large. */
#define SQL_MAX (64u * 1024)
#define ID_LIST_MAX (4u * 1024 * 1024)

/* A statement under construction: the text, and the placeholders written so far. */
struct sql {
    struct buf b;
    enum store_engine dialect;
    int n_placeholders;
};

static void sql_init(struct sql *q, enum store_engine dialect)
{
    buf_init(&q->b, SQL_MAX);
    q->dialect = dialect;
    q->n_placeholders = 0;
}

/* Statement texts are bounded by the definitions, so running past SQL_MAX is a bug. */
static void put(struct sql *q, const char *s)
{
    int rc = buf_puts(&q->b, s);
    assert(rc == 0);
    (void)rc;
}

/* Identifiers come from the definitions; quoting keeps keywords such as "before" safe. */
static void put_ident(struct sql *q, const char *name)
{
    assert(!strchr(name, '"'));
    put(q, "\"");
    put(q, name);
    put(q, "\"");
}

static void put_placeholder(struct sql *q)
{
    char num[16];

    q->n_placeholders++;
    if (q->dialect == STORE_SQLITE) {
        put(q, "?");
        return;
    }
    snprintf(num, sizeof(num), "$%d", q->n_placeholders);
    put(q, num);
}

/* The columns of fields [from, n_fields), comma-separated. */
static void put_columns(struct sql *q, const struct resource_def *def, size_t from)
{
    for (size_t i = from; i < def->n_fields; i++) {
        if (i > from)
            put(q, ", ");
        put_ident(q, model_column(&def->fields[i]));
    }
}

static void put_where_id(struct sql *q, const struct resource_def *def)
{
    put(q, " WHERE ");
    put_ident(q, model_column(&def->fields[0]));
    put(q, " = ");
    put_placeholder(q);
}

static void build_insert(struct sql *q, const struct resource_def *def)
{
    put(q, "INSERT INTO ");
    put_ident(q, def->table);
    put(q, " (");
    put_columns(q, def, 1);
    put(q, ") VALUES (");
    for (size_t i = 1; i < def->n_fields; i++) {
        if (i > 1)
            put(q, ", ");
        put_placeholder(q);
    }
    put(q, ") RETURNING ");
    put_ident(q, model_column(&def->fields[0]));
}

static void build_select_prefix(struct sql *q, const struct resource_def *def)
{
    put(q, "SELECT ");
    put_columns(q, def, 0);
    put(q, " FROM ");
    put_ident(q, def->table);
}

static void build_update(struct sql *q, const struct resource_def *def)
{
    put(q, "UPDATE ");
    put_ident(q, def->table);
    put(q, " SET ");
    for (size_t i = 1; i < def->n_fields; i++) {
        if (i > 1)
            put(q, ", ");
        put_ident(q, model_column(&def->fields[i]));
        put(q, " = ");
        put_placeholder(q);
    }
    put_where_id(q, def);
}

static void build_delete(struct sql *q, const struct resource_def *def)
{
    put(q, "DELETE FROM ");
    put_ident(q, def->table);
    put_where_id(q, def);
}

static const char meta_get_sql[] = "SELECT value FROM meta WHERE key = ?";
static const char meta_set_sql[] = "INSERT INTO meta (key, value) VALUES (?, ?) "
                                   "ON CONFLICT (key) DO UPDATE SET value = excluded.value";

char *store__sql_stmt(enum store_engine dialect, const struct resource_def *def, enum store__stmt k)
{
    struct sql q;

    if (k == STORE_STMT_META_GET)
        return store__sql_dialect(dialect, meta_get_sql);
    if (k == STORE_STMT_META_SET)
        return store__sql_dialect(dialect, meta_set_sql);
    sql_init(&q, dialect);
    switch (k) {
    case STORE_STMT_INSERT:
        build_insert(&q, def);
        break;
    case STORE_STMT_GET:
        build_select_prefix(&q, def);
        put_where_id(&q, def);
        break;
    case STORE_STMT_UPDATE:
        build_update(&q, def);
        break;
    case STORE_STMT_DELETE:
        build_delete(&q, def);
        break;
    default:
        assert(!"not a resource statement");
    }
    return buf_detach(&q.b, NULL);
}

char *store__sql_dialect(enum store_engine dialect, const char *sql)
{
    struct sql q;
    char one[2] = {0, 0};

    sql_init(&q, dialect);
    for (const char *p = sql; *p; p++) {
        if (*p == '?') {
            put_placeholder(&q);
            continue;
        }
        one[0] = *p;
        put(&q, one);
    }
    return buf_detach(&q.b, NULL);
}

/* ---- parameters ---- */

bool store__field_is_int(const struct field_def *f)
{
    switch (f->type) {
    case FT_INT:
    case FT_BOOL:
    case FT_REF:
    case FT_TIME:
        return true;
    default:
        return false;
    }
}

static struct store__param *param_next(struct store__params *p)
{
    assert(p->n < STORE__MAX_PARAMS);
    return &p->p[p->n++];
}

void store__params_add_int(struct store__params *p, int64_t i)
{
    *param_next(p) = (struct store__param){.kind = STORE_P_INT, .i = i};
}

void store__params_add_text(struct store__params *p, const char *s)
{
    *param_next(p) = (struct store__param){.kind = s ? STORE_P_TEXT : STORE_P_NULL, .s = s};
}

/* A row value as a parameter: unset and null are NULL, booleans are 0 or 1. */
static void params_add_value(struct store__params *p, const struct field_def *f,
                             const struct value *v)
{
    if (!v->set || v->null) {
        *param_next(p) = (struct store__param){.kind = STORE_P_NULL};
        return;
    }
    if (f->type == FT_BOOL)
        store__params_add_int(p, v->i != 0);
    else if (store__field_is_int(f))
        store__params_add_int(p, v->i);
    else
        store__params_add_text(p, v->s);
}

void store__params_row(const struct resource_def *def, const struct row *r, struct store__params *p)
{
    for (size_t i = 1; i < def->n_fields; i++)
        params_add_value(p, &def->fields[i], &r->v[i]);
}

void store__params_id(int64_t id, struct store__params *p)
{
    store__params_add_int(p, id);
}

/* ---- list queries ---- */

/* The placeholder and its parameter are always written together. */
static void put_param(struct sql *q, struct store__params *p, struct store__param v)
{
    put_placeholder(q);
    *param_next(p) = v;
}

static void put_eq(struct sql *q, struct store__query *qq, const struct resource_def *def,
                   int field, const struct value *v)
{
    const struct field_def *f = &def->fields[field];

    put(q, " AND ");
    put_ident(q, model_column(f));
    if (v->null) {
        put(q, " IS NULL");
        return;
    }
    put(q, " = ");
    if (store__field_is_int(f))
        put_param(q, &qq->params, (struct store__param){.kind = STORE_P_INT, .i = v->i});
    else
        put_param(q, &qq->params, (struct store__param){.kind = STORE_P_TEXT, .s = v->s});
}

/* "[1,2,3]": both engines read the ids of an any-of clause from one JSON text. */
static int id_list_json(const int64_t *ids, size_t n_ids, char **ret_json, struct error_info *ei)
{
    struct buf b;
    int rc;

    buf_init(&b, ID_LIST_MAX);
    rc = buf_puts(&b, "[");
    for (size_t i = 0; rc == 0 && i < n_ids; i++)
        rc = buf_printf(&b, "%s%" PRId64, i ? "," : "", ids[i]);
    if (rc == 0)
        rc = buf_puts(&b, "]");
    if (rc < 0) {
        buf_release(&b);
        return errinfo_set(ei, ERR_TOO_LARGE, NULL, "too many ids in a list filter (%zu)", n_ids);
    }
    *ret_json = buf_detach(&b, NULL);
    return 0;
}

static void put_any(struct sql *q, struct store__query *qq, const char *column, const char *json)
{
    struct store__param v = {.kind = STORE_P_TEXT, .s = json};

    put_ident(q, column);
    if (q->dialect == STORE_SQLITE) {
        put(q, " IN (SELECT value FROM json_each(");
        put_param(q, &qq->params, v);
        put(q, "))");
        return;
    }
    put(q, " = ANY(SELECT json_array_elements_text(");
    put_param(q, &qq->params, v);
    put(q, "::json)::bigint)");
}

static int put_any_group(struct sql *q, struct store__query *qq, const struct resource_def *def,
                         const struct store_filter *f, struct error_info *ei)
{
    put(q, " AND (");
    for (int i = 0; i < f->n_any; i++) {
        char *json = NULL;
        int rc = id_list_json(f->any[i].ids, f->any[i].n_ids, &json, ei);
        if (rc < 0)
            return rc;
        qq->owned[qq->n_owned++] = json;
        if (i > 0)
            put(q, " OR ");
        put_any(q, qq, model_column(&def->fields[f->any[i].field]), json);
    }
    put(q, ")");
    return 0;
}

int store__sql_list(enum store_engine dialect, const struct resource_def *def,
                    const struct store_filter *f, struct store__query *qq, struct error_info *ei)
{
    struct sql q;
    int rc;

    memset(qq, 0, sizeof(*qq));
    sql_init(&q, dialect);
    build_select_prefix(&q, def);
    put(&q, " WHERE ");
    put_ident(&q, model_column(&def->fields[0]));
    put(&q, " > ");
    put_param(&q, &qq->params, (struct store__param){.kind = STORE_P_INT, .i = f->after_id});
    for (int i = 0; i < f->n_eq; i++)
        put_eq(&q, qq, def, f->eq[i].field, &f->eq[i].val);
    if (f->n_range == 1) {
        const char *col = model_column(&def->fields[f->range.field]);
        put(&q, " AND ");
        put_ident(&q, col);
        put(&q, " >= ");
        put_param(&q, &qq->params, (struct store__param){.kind = STORE_P_INT, .i = f->range.lo});
        put(&q, " AND ");
        put_ident(&q, col);
        put(&q, " < ");
        put_param(&q, &qq->params, (struct store__param){.kind = STORE_P_INT, .i = f->range.hi});
    }
    if (f->n_any > 0) {
        rc = put_any_group(&q, qq, def, f, ei);
        if (rc < 0) {
            buf_release(&q.b);
            store__query_release(qq);
            return rc;
        }
    }
    put(&q, " ORDER BY ");
    put_ident(&q, model_column(&def->fields[0]));
    put(&q, " LIMIT ");
    put_param(&q, &qq->params, (struct store__param){.kind = STORE_P_INT, .i = f->limit});
    qq->sql = q.b;
    return 0;
}

void store__query_release(struct store__query *q)
{
    buf_release(&q->sql);
    for (int i = 0; i < q->n_owned; i++)
        free(q->owned[i]);
    q->n_owned = 0;
    q->params.n = 0;
}

/* ---- statement cache ---- */

void **store__stmt_slot(struct store__stmt_cache *sc, const struct resource_def *def,
                        enum store__stmt k)
{
    struct store__stmt_entry *e;

    /* A handful of resources: a linear scan beats hashing here. */
    for (size_t i = 0; i < sc->n; i++) {
        if (sc->e[i].def == def)
            return &sc->e[i].h[k];
    }
    ALLOC_GROW(sc->e, sc->n + 1, sc->cap);
    e = &sc->e[sc->n++];
    memset(e, 0, sizeof(*e));
    e->def = def;
    return &e->h[k];
}

void store__stmt_cache_release(struct store__stmt_cache *sc, void (*free_handle)(void *h))
{
    for (size_t i = 0; i < sc->n; i++) {
        for (int k = 0; k < STORE_STMT_N_; k++) {
            if (sc->e[i].h[k])
                free_handle(sc->e[i].h[k]);
        }
    }
    free(sc->e);
    memset(sc, 0, sizeof(*sc));
}
